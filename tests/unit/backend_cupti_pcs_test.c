/* backend_cupti_pcs_test.c -- PC sampling without a GPU: mode strings,
 * stall-reason names, the line table of a checked-in cubin (through
 * libcupti's cuptiGetSassToSourceCorrelation, which needs no GPU; skipped
 * when no libcupti loads), and sample buffers in CUPTI's documented layout
 * going sample -> line -> tree under scopes, in both attribution modes.
 * Profiles are compared with Proton's reference layout (tests/data/pcs). */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/corr.h"
#include "backend/cupti/pcs_attr.h"
#include "backend/cupti/pcs_lines.h"
#include "backend/cupti/cupti_mode.h"
#include "backend/cupti/pcs_mode.h"
#include "core/session.h"
#include "core/strtab.h"
#include "cproton/cproton.h"
#include "testutil.h"

/* ---- mode strings ---------------------------------------------------------- */

Test(pcs_mode, valid) {
  cp_pcs_options o;
  cr_assert_eq(cp_pcs_mode_parse(NULL, &o), 0);
  cr_assert_eq(o.enabled, 0);
  cr_assert_eq(cp_pcs_mode_parse("pcsampling", &o), 0);
  cr_assert(o.enabled && !o.exact);
  cr_assert_eq(o.period_log2, 10);
  cr_assert_eq(cp_pcs_mode_parse("pcsampling:interval=1000", &o), 0);
  cr_assert_eq(o.period_log2, 10); /* 1000 -> 1024 */
  cr_assert_eq(cp_pcs_mode_parse("PCSampling:interval=32,exact", &o), 0);
  cr_assert(o.exact);
  cr_assert_eq(o.period_log2, 5);
  cr_assert_eq(cp_pcs_mode_parse("pcsampling:interval=2147483648", &o), 0);
  cr_assert_eq(o.period_log2, 31);
  cr_assert_eq(cp_pcs_mode_parse("pcsampling:interval=3000:buffer=64", &o), 0);
  cr_assert_eq(o.period_log2, 11); /* 3000 is nearer 2048 than 4096 */
  cr_assert_eq(o.buffer_pcs, 64);
  cr_assert_eq(o.first, 0, "no first-launch ranges by default: serialized kernel "
                              "records sample short first launches (docs/cupti.md)");
  cr_assert_eq(cp_pcs_mode_parse("pcsampling:exact:first=0", &o), 0);
  cr_assert(o.exact && o.first == 0);
  cr_assert_eq(cp_pcs_mode_parse("pcsampling,first=1000", &o), 0);
  cr_assert_eq(o.first, 1000);
}

Test(pcs_mode, refused_with_range) {
  static const char *bad[] = {"pcsampling:interval=abc", "pcsampling:interval=31",
                              "pcsampling:interval=2147483649",
                              "pcsampling:interval=", "pcsampling:buffer=1",
                              "pcsampling:exact=1", "pcsampling:",
                              "pcsamplingx", "default", "pcsampling:interval=-5",
                              "pcsampling:drain=20" /* removed */,
                              "pcsampling:first=1001", "pcsampling:first=",
                              "pcsampling:first"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cp_pcs_options o;
    cr_assert_eq(cp_pcs_mode_parse(bad[i], &o), CPROTON_EINVAL, "%s", bad[i]);
    cr_assert(strstr(cproton_last_error(), bad[i]), "%s", cproton_last_error());
  }
  cp_pcs_options o;
  cp_pcs_mode_parse("pcsampling:interval=abc", &o);
  cr_assert(strstr(cproton_last_error(), "32..2147483648"));
  cr_assert(strstr(cproton_last_error(), "offset 20"), "%s", cproton_last_error());
}

/* Both parsed once (as the session layer does), then compared; 0 when
 * either is refused. */
static int mode_same(const char *a, const char *b) {
  cp_cupti_mode x, y;
  return !cp_cupti_mode_parse(a, &x) && !cp_cupti_mode_parse(b, &y) &&
         cp_cupti_mode_same(&x, &y);
}

/* The family table's refusal names every family's grammar, as the
 * pcsampling parser's did. */
Test(pcs_mode, unknown_family) {
  cp_cupti_mode m;
  cr_assert_eq(cp_cupti_mode_parse("pmsamplingx:x=1", &m), CPROTON_EINVAL);
  cr_assert_str_eq(cproton_last_error(),
                   "cupti mode 'pmsamplingx:x=1': unknown mode at offset 0 "
                   "(valid: '' or pcsampling[:interval=N][:exact][:buffer=PCS]"
                   "[:first=K] or pmsampling[:metrics=NAME,NAME...][:interval=NS]"
                   "[:exact][:ranges=N])");
  /* each family's first word ends at its own separators: pcsampling's at
   * ':' or ',', pmsampling's at ':' only (',' separates its metrics) */
  cr_assert_eq(cp_cupti_mode_parse("pmsampling,x", &m), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "unknown mode at offset 0"), "%s",
            cproton_last_error());
  cr_assert_eq(cp_cupti_mode_parse("PMSampling:interval=20000", &m), CPROTON_OK);
  cr_assert_eq(m.family, CP_CUPTI_PMSAMPLING);
  cr_assert(m.pm.enabled && !m.pcs.enabled && m.pm.interval_ns == 20000);
  cr_assert_eq(cp_cupti_mode_parse("pmsampling:exact:ranges=64", &m),
               CPROTON_OK);
  cr_assert(m.pm.exact && m.pm.ranges == 64);
  cr_assert_eq(cp_cupti_mode_parse("PCSampling:exact", &m), CPROTON_OK);
  cr_assert_eq(m.family, CP_CUPTI_PCSAMPLING);
  cr_assert(m.pcs.enabled && m.pcs.exact);
  cr_assert_eq(cp_cupti_mode_parse(NULL, &m), CPROTON_OK);
  cr_assert_eq(m.family, CP_CUPTI_KERNELS);
  cr_assert_not(m.pcs.enabled);
}

Test(pcs_mode, same) {
  cr_assert(mode_same("pcsampling", "pcsampling:interval=1000"));
  cr_assert(mode_same(NULL, ""));
  cr_assert_not(mode_same("pcsampling", ""));
  cr_assert_not(mode_same("pcsampling", "pcsampling:exact"));
  cr_assert_not(mode_same("pcsampling", "pcsampling:interval=x"));
  cr_assert(mode_same("pcsampling", "pcsampling:first=0"));
  cr_assert_not(mode_same("pcsampling", "pcsampling:first=1"));
  cr_assert(mode_same("pmsampling", "pmsampling:interval=250000"));
  cr_assert_not(mode_same("pmsampling", "pmsampling:interval=20000"));
  cr_assert_not(mode_same("pmsampling", "pcsampling"));
  cr_assert_not(mode_same("pmsampling", ""));
}

/* ---- stall reasons ---------------------------------------------------------- */

/* Names as CUPTI 13 reports them on an H100 (a subset). */
static const char *cupti_names[] = {
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
    "smsp__pcsamp_warps_issue_stalled_selected",
    "smsp__pcsamp_warps_issue_stalled_wait",
    "smsp__pcsamp_warps_issue_stalled_something_new"};
static const uint32_t cupti_idx[] = {7, 8, 12, 20, 5, 30};

Test(pcs_stalls, by_name) {
  cp_pcs_stalls s;
  cr_assert_eq(cp_pcs_stalls_build(cupti_names, cupti_idx, 6, &s), 5);
  cr_assert_str_eq(cp_pcs_metric_name(s.metric[0]), "stalled_long_scoreboard");
  cr_assert(!s.not_issued[0] && s.not_issued[1]);
  cr_assert_str_eq(cp_pcs_metric_name(s.metric[2]), "stalled_math_pipe_throttle");
  cr_assert_str_eq(cp_pcs_metric_name(s.metric[3]), "stalled_selected");
  cr_assert_eq(s.index[4], 5);
}

/* ---- the cubin's line table (real libcupti, no GPU) ---------------------------- */

static void *cupti;

static void *open_cupti(void) {
  const char *env = getenv("CPROTON_CUPTI_LIB");
  const char *tries[] = {env, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                         "/usr/local/cuda/lib64/libcupti.so",
                         "/usr/local/cuda/lib/libcupti.so", "libcupti.so"};
  for (size_t i = 0; i < 5 && !cupti; i++)
    if (tries[i])
      cupti = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
  return cupti;
}

static int real_source(const void *cubin, size_t size, const char *fn,
                       uint64_t pc, uint32_t *line, char **file, char **dir) {
  __typeof__(&cuptiGetSassToSourceCorrelation) f =
      (__typeof__(f))dlsym(cupti, "cuptiGetSassToSourceCorrelation");
  CUpti_GetSassToSourceCorrelationParams p = {
      .size = CUpti_GetSassToSourceCorrelationParamsSize, .cubin = cubin,
      .functionName = fn, .cubinSize = size, .pcOffset = pc};
  if (!f || f(&p) != CUPTI_SUCCESS)
    return -1;
  *line = p.lineNumber, *file = p.fileName, *dir = p.dirName;
  return 0;
}

/* The CRC is CUPTI's business; tests name cubins by their size. */
static int size_crc(const void *cubin, size_t size, uint64_t *crc) {
  (void)cubin;
  *crc = 0xC0B1000000ull + size;
  return 0;
}

/* A fake line table: pc / 16 + 1 in "k.py", for the attribution tests. */
static int fake_source(const void *cubin, size_t size, const char *fn,
                       uint64_t pc, uint32_t *line, char **file, char **dir) {
  *line = (uint32_t)(pc / 16 + 1);
  *file = strdup("k.py");
  *dir = strdup("/src");
  return 0;
}

#define CHASE "_Z5chasePKiPfii"

Test(pcs_lines, checked_in_cubin) {
  if (!open_cupti())
    cr_skip_test("no libcupti here");
  size_t size;
  char *cubin = cpt_read_file(CP_SOURCE_DIR "/tests/data/pcs/chase.cubin", &size);
  cr_assert_not_null(cubin);
  cp_pcs_line_hooks h = {size_crc, real_source, NULL};
  cp_pcs_lines *l = cp_pcs_lines_new(&h, 1 << 20);
  cr_assert_eq(cp_pcs_lines_add(l, cubin, size), 0);
  cr_assert_eq(cp_pcs_lines_add(l, cubin, size), 0); /* a duplicate is kept once */
  uint64_t crc = 0xC0B1000000ull + size;
  int seen[16] = {0};
  for (uint64_t pc = 0; pc < size; pc += 16) {
    uint32_t id = cp_pcs_lines_resolve(l, crc, CHASE, pc);
    if (!id)
      continue;
    const char *name = cp_strtab_str(id);
    const char *at = strstr(name, "/chase.cu:");
    cr_assert_not_null(at, "%s", name);
    cr_assert(strstr(name, "@" CHASE), "%s", name);
    int line = atoi(at + 10);
    cr_assert(line >= 3 && line <= 11, "%s", name);
    seen[line]++;
  }
  cr_assert_gt(seen[7], 0, "no PC of the load loop (line 7)");
  cr_assert_gt(seen[9], 0, "no PC of the FMA loop (line 9)");
  cr_assert_eq(cp_pcs_lines_resolve(l, crc + 1, CHASE, 0), 0); /* unknown cubin */
  cp_pcs_lines_stats st;
  cp_pcs_lines_get_stats(l, &st);
  cr_assert_eq(st.cubins, 1);
  cr_assert_eq(st.bytes, size);
  cp_pcs_lines_free(l);
  free(cubin);
}

/* A module loaded before sampling began: the store never got its cubin
 * (module_loaded ran before the subscription), so its samples had no lines
 * (nvcc kernels of the H100 advisor benchmark, issue 26). The recover hook
 * runs once per unknown CRC, without the lock, and what it adds resolves. */
static int n_recover;
static void recover_abcdef(cp_pcs_lines *l, uint64_t crc) {
  n_recover++;
  cr_assert(crc == 0xC0B1000000ull + 6 || crc == 0xC0B1000000ull + 9);
  cr_assert_eq(cp_pcs_lines_add(l, "abcdef", 6), 0, "the lock is not held");
}

Test(pcs_lines, recover_finds_cubins_loaded_before_sampling) {
  cp_pcs_line_hooks h = {size_crc, fake_source, recover_abcdef};
  cp_pcs_lines *l = cp_pcs_lines_new(&h, 1 << 20);
  n_recover = 0;
  uint32_t id = cp_pcs_lines_resolve(l, 0xC0B1000000ull + 6, "kern", 32);
  cr_assert_neq(id, 0, "the recovered cubin's line");
  cr_assert_str_eq(cp_strtab_str(id), "/src/k.py:3@kern");
  cr_assert_eq(n_recover, 1);
  cr_assert_neq(cp_pcs_lines_resolve(l, 0xC0B1000000ull + 6, "kern", 48), 0);
  cr_assert_eq(n_recover, 1, "a kept cubin needs no recovery");
  cr_assert_eq(cp_pcs_lines_resolve(l, 0xC0B1000000ull + 9, "kern", 0), 0);
  cr_assert_eq(cp_pcs_lines_resolve(l, 0xC0B1000000ull + 9, "kern", 16), 0);
  cr_assert_eq(n_recover, 2, "once per unknown CRC");
  cp_pcs_lines_stats st;
  cp_pcs_lines_get_stats(l, &st);
  cr_assert_eq(st.recoveries, 2);
  cp_pcs_lines_free(l);
}

Test(pcs_lines, byte_limit_counted) {
  cp_pcs_line_hooks h = {size_crc, fake_source, NULL};
  cp_pcs_lines *l = cp_pcs_lines_new(&h, 100);
  char a[60] = {0}, b[61] = {0};
  cr_assert_eq(cp_pcs_lines_add(l, a, sizeof a), 0);
  cr_assert_eq(cp_pcs_lines_add(l, b, sizeof b), CPROTON_ELIMIT);
  cp_pcs_lines_stats st;
  cp_pcs_lines_get_stats(l, &st);
  cr_assert_eq(st.refused, 1);
  cp_pcs_lines_free(l);
}

/* ---- sample buffers -> tree ----------------------------------------------------- */

/* One sample buffer in CUPTI's layout: PC records with stall reasons. */
typedef struct buf {
  CUpti_PCSamplingData d;
  CUpti_PCSamplingPCData pcs[16];
  CUpti_PCSamplingStallReason reasons[16][4];
} buf;

static void add_pc(buf *b, const char *fn, uint64_t crc, uint64_t pc,
                   uint32_t corr, uint32_t long_sb, uint32_t long_sb_not_issued,
                   uint32_t math) {
  size_t i = b->d.totalNumPcs++;
  CUpti_PCSamplingPCData *p = &b->pcs[i];
  memset(p, 0, sizeof *p);
  p->size = sizeof *p;
  p->cubinCrc = crc;
  p->pcOffset = pc;
  p->functionName = (char *)fn;
  p->correlationId = corr;
  p->stallReason = b->reasons[i];
  uint32_t v[3] = {long_sb, long_sb_not_issued, math};
  uint32_t idx[3] = {7, 8, 12};
  for (int k = 0; k < 3; k++)
    if (v[k])
      b->reasons[i][p->stallReasonCount++] =
          (CUpti_PCSamplingStallReason){idx[k], v[k]};
}

static void init_buf(buf *b) {
  memset(b, 0, sizeof *b);
  b->d.size = sizeof b->d;
  b->d.collectNumPcs = 16;
  b->d.pPcData = b->pcs;
}

static cp_pcs_lines *lines;
static cp_pcs *pcs;
static cp_corr *corr;
static cp_pcs_stalls stalls;
#define FN "kern"
#define CRC 0xC0B1000000ull + 4

static void setup(void) {
  cp_session_reset_all();
  cp_pcs_line_hooks h = {size_crc, fake_source, NULL};
  lines = cp_pcs_lines_new(&h, 1 << 20);
  cp_pcs_lines_add(lines, "abcd", 4); /* crc CRC */
  corr = cp_corr_new(1024);
  pcs = cp_pcs_new(256, 256, corr, lines);
  cp_pcs_stalls_build(cupti_names, cupti_idx, 6, &stalls);
}

static void teardown(void) {
  cp_pcs_free(pcs);
  cp_corr_free(corr);
  cp_pcs_lines_free(lines);
  cp_session_reset_all();
}

static int start(const char *path, const char *mode) {
  int sid = cpt_start_session(path, "fake", NULL, mode);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

static json_t *finish(int sid, const char *path) {
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  return cpt_load_json(full);
}

static json_t *child(json_t *n, const char *name) {
  json_t *c;
  size_t i;
  json_array_foreach(json_object_get(n, "children"), i, c) {
    if (!strcmp(json_string_value(json_object_get(json_object_get(c, "frame"), "name")), name))
      return c;
  }
  cr_assert_fail("no child %s", name);
  return NULL;
}

static long long m(json_t *n, const char *name) {
  json_t *v = json_object_get(json_object_get(n, "metrics"), name);
  cr_assert_not_null(v, "no metric %s", name);
  return json_integer_value(v);
}

/* The metric names of the first node named like `needle` in Proton's file. */
static json_t *proton_node(json_t *n, const char *needle) {
  const char *name = json_string_value(json_object_get(json_object_get(n, "frame"), "name"));
  if (strstr(name, needle))
    return n;
  json_t *c, *r;
  size_t i;
  json_array_foreach(json_object_get(n, "children"), i, c) {
    if ((r = proton_node(c, needle)))
      return r;
  }
  return NULL;
}

static void same_metric_names(json_t *ours, json_t *proton) {
  json_t *a = json_object_get(ours, "metrics"), *b = json_object_get(proton, "metrics");
  const char *k;
  json_t *v;
  json_object_foreach(b, k, v) {
    if (strcmp(k, "count") && strcmp(k, "time (ns)") && strcmp(k, "device_id") &&
        strcmp(k, "device_type"))
      cr_assert_not_null(json_object_get(a, k), "metric %s missing", k);
  }
  json_object_foreach(a, k, v) {
    cr_assert_not_null(json_object_get(b, k), "metric %s not in Proton's", k);
  }
}

/* Concurrent mode: two scopes ran the kernel 3:1 by time; the samples are
 * split 3:1, per line, with Proton's metrics; an unknown cubin keeps its
 * samples on the kernel node. */
Test(pcs_attr, concurrent_split_by_time, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcs_concurrent");
  int sid = start(path, "pcsampling");
  cp_launch_site a, b;
  cpt_capture_in("a", &a);
  cpt_capture_in("b", &b);
  cp_pcs_note_kernel(pcs, FN, &a, 300);
  cp_pcs_note_kernel(pcs, FN, &b, 100);
  buf x;
  init_buf(&x);
  add_pc(&x, FN, CRC, 32, 0, 400, 40, 0);   /* line 3 */
  add_pc(&x, FN, CRC, 48, 0, 0, 0, 80);     /* line 4 */
  add_pc(&x, FN, 999, 48, 0, 8, 0, 0);      /* cubin unknown: no line */
  x.d.droppedSamples = 5;
  cp_pcs_add(pcs, &x.d, &stalls, 0);
  cr_assert_eq(cp_pcs_attribute(pcs, 0), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  json_t *ka = child(child(root, "a"), FN), *kb = child(child(root, "b"), FN);
  json_t *l3 = child(ka, "/src/k.py:3@" FN);
  cr_assert_eq(m(l3, "num_samples"), 330);        /* 440 * 3/4 */
  cr_assert_eq(m(l3, "num_stalled_samples"), 300); /* not_issued: not stalled */
  cr_assert_eq(m(l3, "stalled_long_scoreboard"), 300);
  cr_assert_eq(m(child(kb, "/src/k.py:3@" FN), "num_samples"), 110);
  cr_assert_eq(m(child(ka, "/src/k.py:4@" FN), "stalled_math_pipe_throttle"), 60);
  cr_assert_eq(m(child(kb, "/src/k.py:4@" FN), "stalled_math_pipe_throttle"), 20);
  cr_assert_eq(m(ka, "num_samples"), 6); /* no line: on the kernel node */
  cr_assert_eq(m(kb, "num_samples"), 2);
  cr_assert_eq(m(root, "num_samples"), 0);
  /* Proton's layout: the same metric names on line and no-line nodes */
  json_t *ref = cpt_load_json(CP_SOURCE_DIR "/tests/data/pcs/proton_h100_pcsampling_lines.hatchet");
  same_metric_names(l3, proton_node(json_array_get(ref, 0), "@chase_kernel"));
  json_t *ref2 = cpt_load_json(
      CP_SOURCE_DIR "/tests/data/pcs/proton_h100_pcsampling_loaded_before_start.hatchet");
  json_t *pk = proton_node(json_array_get(ref2, 0), "chase_kernel");
  json_t *ours = json_deep_copy(ka);
  json_object_del(json_object_get(ours, "metrics"), "count");
  same_metric_names(ours, pk);
  cp_pcs_stats st;
  cp_pcs_get_stats(pcs, &st);
  cr_assert_eq(st.samples, 528);
  cr_assert_eq(st.with_line, 520);
  cr_assert_eq(st.dropped, 5);
  cr_assert_eq(st.apportioned, 528);
  json_decref(j), json_decref(ref), json_decref(ref2), json_decref(ours);
}

/* Samples drained before their kernel's record wait for it; at the final
 * flush a function never seen goes under ROOT, counted. */
/* The concurrent rule's weight: time x the sub-partitions a grid keeps
 * busy (4 per SM), capped at the GPU; no SM count or grid: time alone. */
Test(pcs_attr, kernel_weight) {
  cr_assert_eq(cp_pcs_kernel_weight(10, 4096, 256, 0), 10, "no SM count: time");
  cr_assert_eq(cp_pcs_kernel_weight(10, 0, 256, 132), 10, "no grid: time");
  cr_assert_eq(cp_pcs_kernel_weight(10, 4096, 256, 132), 10 * 528, "full GPU");
  cr_assert_eq(cp_pcs_kernel_weight(10, 32, 256, 132), 10 * 128, "32 blocks x 4");
  cr_assert_eq(cp_pcs_kernel_weight(10, 32, 32, 132), 10 * 32, "one warp each");
  cr_assert_eq(cp_pcs_kernel_weight(10, 200, 64, 132), 10 * 400, "2 warps each");
  cr_assert_eq(cp_pcs_kernel_weight(10, 300, 64, 132), 10 * 528, "capped");
}

Test(pcs_attr, pending_until_record, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcs_pending");
  int sid = start(path, "pcsampling");
  buf x;
  init_buf(&x);
  add_pc(&x, FN, CRC, 0, 0, 10, 0, 0);
  add_pc(&x, "other", CRC, 0, 0, 7, 0, 0);
  cp_pcs_add(pcs, &x.d, &stalls, 0);
  cr_assert_eq(cp_pcs_attribute(pcs, 0), 0); /* nothing to attribute yet */
  cp_launch_site s;
  cpt_capture_in("late", &s);
  cp_pcs_note_kernel(pcs, FN, &s, 50);
  cr_assert_eq(cp_pcs_attribute(pcs, 1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(m(child(child(child(root, "late"), FN), "/src/k.py:1@" FN), "num_samples"), 10);
  cr_assert_eq(m(child(child(root, "other"), "/src/k.py:1@other"), "num_samples"), 7);
  cp_pcs_stats st;
  cp_pcs_get_stats(pcs, &st);
  cr_assert_eq(st.unattributed, 7);
  json_decref(j);
}

/* Exact mode: each sample's correlation id names its launch. */
Test(pcs_attr, exact_by_correlation, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcs_exact");
  int sid = start(path, "pcsampling:exact");
  cp_launch_site a, b;
  cpt_capture_in("a", &a);
  cpt_capture_in("b", &b);
  cp_corr_put(corr, 11, &a, 0);
  cp_corr_put(corr, 12, &b, 0);
  buf x;
  init_buf(&x);
  add_pc(&x, FN, CRC, 16, 11, 9, 0, 0);
  add_pc(&x, FN, CRC, 16, 12, 0, 0, 4);
  add_pc(&x, FN, CRC, 16, 99, 1, 0, 0); /* unknown launch */
  cp_pcs_add(pcs, &x.d, &stalls, 0);
  cr_assert_eq(cp_pcs_attribute(pcs, 0), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(m(child(child(child(root, "a"), FN), "/src/k.py:2@" FN), "stalled_long_scoreboard"), 9);
  cr_assert_eq(m(child(child(child(root, "b"), FN), "/src/k.py:2@" FN), "stalled_math_pipe_throttle"), 4);
  cr_assert_eq(m(child(child(root, FN), "/src/k.py:2@" FN), "num_samples"), 1);
  json_decref(j);
}

/* A second session must ask for the same mode; another is refused. */
Test(pcs_attr, second_session_mode, .init = setup, .fini = teardown) {
  int s0 = start(cpt_tmp_path("pcs_m0"), "pcsampling");
  int s1 = start(cpt_tmp_path("pcs_m1"), "pcsampling");
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = cpt_tmp_path("pcs_m2");
  o.backend = "fake";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "Cannot add a session with the same "
                                          "profiler but a different mode"));
  cproton_session_finalize(s0, NULL);
  cproton_session_finalize(s1, NULL);
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK);
  cproton_session_finalize(sid, NULL);
}

#else
Test(pcs, no_cupti) { cr_skip_test("built without CUPTI headers"); }
#endif
