/* backend_instr_sums_test.c -- in-kernel sums through the instrumentation
 * runtime's whole pipeline (pool, copy-back, re-arming, decoder threads,
 * delivery) on the fake CUDA driver (tests/testutil/fake_libcuda.c, found
 * through LD_LIBRARY_PATH): device memory is host memory, so each test
 * plays the kernel by writing slots between cproton_instr_alloc and
 * cproton_instr_launch. Also cp_sums_decode alone, and the slots' checks. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "backend/instrumentation/sums.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "instrument/layout.h"
#include "testutil.h"

static const char *const names[] = {"outer", "inner"};
static const int32_t parents[] = {-1, 0};
#define WORDS (CP_REDUCE_FIXED + 3 * 2)
#define SLOT_BYTES 128 /* WORDS x 8, padded to a 128-byte line */
#define STRIDE (SLOT_BYTES / 8)

static cproton_buffer_layout sums_layout(void) {
  cproton_buffer_layout l;
  memset(&l, 0, sizeof l);
  l.aggregate = 1;
  l.n_units = 4;
  l.per_cta_bytes = SLOT_BYTES;
  l.counter = CPROTON_COUNTER_CLOCK64;
  l.n_scopes = 2;
  l.scope_names = names;
  l.scope_parents = parents;
  for (int u = 0; u < 4; u++)
    l.unit_warp[u] = (uint8_t)u;
  return l;
}

/* What a kernel of `n_ctas` CTAs x 4 units adds, CTA by CTA, into its slots:
 * per unit outer 100 cycles and inner 30, once each; the clock spans 200
 * cycles in 100 ns (2 cycles/ns). `finalized` CTAs reach their exit. */
static void play_kernel(uint64_t *slots, size_t n_ctas, size_t finalized) {
  for (size_t c = 0; c < finalized; c++) {
    uint64_t *w = slots + (n_ctas >= CP_AGG_SLOTS ? c % CP_AGG_SLOTS : c) * STRIDE;
    w[CP_REDUCE_CTAS] += 1;
    for (int u = 0; u < 4; u++) {
      w[CP_REDUCE_CLOCK_CYCLES] += 200;
      w[CP_REDUCE_CLOCK_NS] += 100;
      w[CP_REDUCE_FIXED + 0] += 100, w[CP_REDUCE_FIXED + 1] += 30; /* cycles */
      w[CP_REDUCE_FIXED + 2] += 1, w[CP_REDUCE_FIXED + 3] += 1;    /* counts */
    }
  }
}

static void reset(void) { cp_session_reset_all(); }

static json_t *metrics_at(json_t *node, const char *const *path, size_t n) {
  for (size_t i = 0; i < n && node; i++) {
    json_t *found = NULL, *c;
    size_t k;
    json_array_foreach(json_object_get(node, "children"), k, c) {
      if (!strcmp(json_string_value(json_object_get(json_object_get(c, "frame"), "name")), path[i]))
        found = c;
    }
    node = found;
  }
  return node ? json_object_get(node, "metrics") : NULL;
}

/* One launch of `k` over `n_ctas` CTAs, `finalized` of them reaching their
 * exit, inside scope "step" of session `sid`; returns the session's tree. */
static json_t *launch(int sid, cproton_instr_kernel *k, size_t n_ctas, size_t finalized, int corrupt) {
  size_t size = n_ctas * SLOT_BYTES;
  uint64_t dptr = 0;
  cr_assert_eq(cproton_instr_alloc(size, 0, &dptr), CPROTON_OK, "%s", cproton_last_error());
  uint64_t *slots = (uint64_t *)(uintptr_t)dptr;
  for (size_t i = 0; i < cp_sums_n_slots(n_ctas) * STRIDE; i++)
    cr_assert_eq(slots[i], 0, "slot word %zu not zero before the launch", i);
  play_kernel(slots, n_ctas, finalized);
  if (corrupt)
    slots[CP_REDUCE_CTAS] += n_ctas; /* more CTAs than the grid has */
  cproton_scope_enter("step", NULL);
  cr_assert_eq(cproton_instr_launch(k, dptr, size, 0), CPROTON_OK, "%s", cproton_last_error());
  cproton_scope_exit("step");
  cr_assert_eq(cproton_instr_flush(), CPROTON_OK);
  for (size_t i = 0; i < cp_sums_n_slots(n_ctas) * STRIDE; i++)
    cr_assert_eq(slots[i], 0, "slot word %zu not re-armed after the launch", i);
  char *json;
  cr_assert_eq(cproton_session_data_json(sid, &json, NULL), CPROTON_OK);
  json_t *j = cpt_parse_json(json);
  cproton_free(json);
  return j;
}

static cproton_instr_kernel *sums_kernel(void) {
  cproton_buffer_layout l = sums_layout();
  cproton_instr_kernel *k;
  cr_assert_eq(cproton_instr_kernel_new("sum_kernel", &l, &k), CPROTON_OK, "%s", cproton_last_error());
  return k;
}

static int session(const char *name) {
  int sid = cpt_start_session(cpt_tmp_path(name), "none", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

Test(instr_sums, slots_of_a_large_grid_land_under_kernel_scopes, .init = reset) {
  cproton_instr_kernel *k = sums_kernel();
  int sid = session("sums_large");
  json_t *j = launch(sid, k, 1000, 1000, 0); /* 256 slots */
  json_t *root = json_array_get(j, 0);
  const char *outer[] = {"step", "sum_kernel", "outer"}, *inner[] = {"step", "sum_kernel", "outer", "inner"};
  json_t *m = metrics_at(root, outer, 3);
  cr_assert_not_null(m);
  cr_assert_eq(json_integer_value(json_object_get(m, "cycles")), 1000 * 4 * 100);
  cr_assert_eq(json_integer_value(json_object_get(m, "count")), 1000 * 4);
  cr_assert_float_eq(json_real_value(json_object_get(m, "normalized_cycles")), 100.0, 1e-9);
  cr_assert_float_eq(json_real_value(json_object_get(m, "normalized_time (ns)")), 50.0, 1e-9,
                     "100 cycles at the measured 2 cycles/ns");
  m = metrics_at(root, inner, 4);
  cr_assert_eq(json_integer_value(json_object_get(m, "cycles")), 1000 * 4 * 30);
  cr_assert_null(json_object_get(metrics_at(root, outer, 2), "bad_ctas"));
  json_decref(j);
  cproton_instr_stats st;
  cproton_instr_get_stats(&st);
  cr_assert_eq(st.summed, 1);
  cr_assert_eq(st.decoded, 1);
  cr_assert_eq(st.reduced, 0, "nothing reduced: the kernel summed");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(k);
}

Test(instr_sums, small_grid_and_missing_ctas, .init = reset) {
  cproton_instr_kernel *k = sums_kernel();
  int sid = session("sums_small");
  json_t *j = launch(sid, k, 3, 2, 0); /* 3 slots, one CTA never finalized */
  const char *kernel[] = {"step", "sum_kernel"}, *outer[] = {"step", "sum_kernel", "outer"};
  json_t *root = json_array_get(j, 0);
  cr_assert_eq(json_integer_value(json_object_get(metrics_at(root, kernel, 2), "bad_ctas")), 1);
  cr_assert_eq(json_integer_value(json_object_get(metrics_at(root, outer, 3), "count")), 2 * 4);
  cr_assert_float_eq(json_real_value(json_object_get(metrics_at(root, outer, 3), "normalized_cycles")), 100.0,
                     1e-9, "normalised over the CTAs that finalized");
  json_decref(j);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(k);
}

Test(instr_sums, corrupt_slots_skip_that_launch_only, .init = reset) {
  cproton_instr_kernel *k = sums_kernel();
  int sid = session("sums_corrupt");
  cproton_instr_stats before;
  cproton_instr_get_stats(&before);
  json_decref(launch(sid, k, 100, 100, 1));
  json_t *j = launch(sid, k, 100, 100, 0);
  cproton_instr_stats after;
  cproton_instr_get_stats(&after);
  cr_assert_eq(after.failed - before.failed, 1, "the corrupt launch is counted as not decoded");
  cr_assert_eq(after.summed - before.summed, 1, "the next launch is read as usual");
  const char *outer[] = {"step", "sum_kernel", "outer"};
  cr_assert_eq(json_integer_value(json_object_get(metrics_at(json_array_get(j, 0), outer, 3), "count")), 400);
  json_decref(j);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(k);
}

/* A kernel of records: 2 warps, 64-byte segments, the same two scopes. */
static cproton_buffer_layout records_layout(void) {
  cproton_buffer_layout rl;
  memset(&rl, 0, sizeof rl);
  rl.n_units = 2, rl.segment_bytes = 64, rl.header_bytes = cp_layout_header_bytes(2);
  rl.per_cta_bytes = rl.header_bytes + 2 * 64, rl.counter = CPROTON_COUNTER_CLOCK64;
  rl.n_scopes = 2, rl.scope_names = names, rl.scope_parents = parents, rl.unit_warp[1] = 1;
  return rl;
}

/* A buffer that carried records (a full slice of garbage-free records and
 * headers) is re-armed so that in-kernel sums can take it next. */
Test(instr_sums, a_buffer_that_held_records_is_clean_for_sums, .init = reset) {
  cproton_buffer_layout rl = records_layout();
  cproton_instr_kernel *rk, *k = sums_kernel();
  cr_assert_eq(cproton_instr_kernel_new("rec_kernel", &rl, &rk), CPROTON_OK);
  int sid = session("sums_reuse");
  size_t n_ctas = 1000 * SLOT_BYTES / rl.per_cta_bytes + 1, size = n_ctas * rl.per_cta_bytes;
  uint64_t dptr = 0;
  cr_assert_eq(cproton_instr_alloc(size, 0, &dptr), CPROTON_OK, "%s", cproton_last_error());
  memset((void *)(uintptr_t)dptr, 0x5a, size); /* a kernel that never finalized, all bytes written */
  cr_assert_eq(cproton_instr_launch(rk, dptr, size, 0), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cproton_instr_flush(), CPROTON_OK);
  json_decref(launch(sid, k, 1000, 1000, 0)); /* takes the same buffer: checks its slots are zero */
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(rk);
  cproton_instr_kernel_free(k);
}

/* A records launch re-arms every CTA's magic word, whether the zeroed start
 * of the buffer covers it (a small buffer: one memset) or not (a large one:
 * the strided memset too). */
Test(instr_sums, records_launches_re_arm_every_magic_word, .init = reset) {
  cproton_buffer_layout rl = records_layout();
  cproton_instr_kernel *rk;
  cr_assert_eq(cproton_instr_kernel_new("rec_kernel", &rl, &rk), CPROTON_OK);
  int sid = session("records_re_arm");
  const size_t grids[] = {10, 3 * CP_AGG_MAX_BYTES / rl.per_cta_bytes}; /* 2 KiB, then 3x the zeroed start */
  for (int g = 0; g < 2; g++) {
    size_t size = grids[g] * rl.per_cta_bytes;
    uint64_t dptr = 0;
    cr_assert_eq(cproton_instr_alloc(size, 0, &dptr), CPROTON_OK, "%s", cproton_last_error());
    unsigned char *b = (unsigned char *)(uintptr_t)dptr;
    memset(b, 0x5a, size);
    cr_assert_eq(cproton_instr_launch(rk, dptr, size, 0), CPROTON_OK, "%s", cproton_last_error());
    cr_assert_eq(cproton_instr_flush(), CPROTON_OK);
    for (size_t c = 0; c < grids[g]; c++) {
      uint32_t magic;
      memcpy(&magic, b + c * rl.per_cta_bytes + CP_HDR_MAGIC, 4);
      cr_assert_eq(magic, 0, "grid %zu: CTA %zu's magic not re-armed", grids[g], c);
    }
  }
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(rk);
}

Test(instr_sums, decode_checks_the_slots) {
  cproton_buffer_layout l = sums_layout();
  uint64_t slots[3 * STRIDE] = {0};
  play_kernel(slots, 3, 3);
  cproton_decoded *d = NULL;
  cr_assert_eq(cp_sums_decode("k", &l, slots, 3, 3, &d), CPROTON_OK, "%s", cproton_last_error());
  cproton_decoded_scope s;
  cr_assert_eq(cproton_decoded_get_scope(d, 0, &s), CPROTON_OK);
  cr_assert_eq(s.cycles, 3 * 4 * 100);
  cr_assert_eq(s.count, 3 * 4);
  cproton_decoded_free(d);
  slots[CP_REDUCE_FIXED + 2 * 2] = 1; /* a per-scope unpaired count without the total */
  cr_assert_eq(cp_sums_decode("k", &l, slots, 3, 3, &d), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "kernel k"), "%s", cproton_last_error());
  slots[CP_REDUCE_UNPAIRED] = 1;
  cr_assert_eq(cp_sums_decode("k", &l, slots, 3, 3, &d), CPROTON_OK, "%s", cproton_last_error());
  cproton_decoded_free(d);
  slots[CP_REDUCE_DROPPED] = 7;
  cr_assert_eq(cp_sums_decode("k", &l, slots, 3, 3, &d), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "dropped"), "%s", cproton_last_error());
  slots[CP_REDUCE_DROPPED] = 0;
  cr_assert_eq(cp_sums_decode("k", &l, slots, 2, 3, &d), CPROTON_EINVAL, "slots must match the grid");
  l.aggregate = 0;
  cr_assert_eq(cp_sums_decode("k", &l, slots, 3, 3, &d), CPROTON_EINVAL);
}

Test(instr_sums, records_decoders_refuse_a_sums_layout) {
  cproton_buffer_layout l = sums_layout();
  unsigned char buf[SLOT_BYTES] = {0};
  cproton_decoded *d = NULL;
  cr_assert_eq(cproton_buffer_decode(buf, sizeof buf, &l, 0, &d), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "aggregate"), "%s", cproton_last_error());
  void *out = NULL;
  size_t n = 0;
  cr_assert_eq(cproton_buffer_to_proton(buf, sizeof buf, &l, 4, &out, &n), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "records"), "%s", cproton_last_error());
}

Test(instr_sums, the_driver_is_the_fake) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    h = dlopen("libcuda.so.1", RTLD_NOW);
  cr_assert_not_null(h, "LD_LIBRARY_PATH must lead to tests/fakecuda: %s", dlerror());
  cr_assert_not_null(dlsym(h, "fake_cuda_counts"), "libcuda.so.1 here is not the fake driver");
}
