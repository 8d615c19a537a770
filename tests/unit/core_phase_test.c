/* core_phase_test.c -- phases and periodic flushing through the public API
 * and the fake backend: records land in their launch's phase however late
 * they arrive, parts get Proton 3.9's names, late records are counted, and
 * a long periodic run keeps its memory flat (the soak; bench/soak_bench.c
 * runs the same workload for ten minutes). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "backend/fake/workload.h"
#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
}

static int start(const char *name, const char *mode) {
  int sid = cpt_start_session(name, "fake", NULL, mode);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

/* Phase `phase` of session `sid` as parsed JSON. */
static json_t *phase_tree(int sid, int64_t phase) {
  char *buf;
  size_t n;
  cr_assert_eq(cproton_session_data(sid, phase, "hatchet", &buf, &n),
               CPROTON_OK, "%s", cproton_last_error());
  json_t *j = cpt_parse_json(buf);
  cproton_free(buf);
  return j;
}

static const char *first_child(json_t *tree) {
  json_t *kids = json_object_get(json_array_get(tree, 0), "children");
  json_t *c = json_array_get(kids, 0);
  return c ? json_string_value(json_object_get(json_object_get(c, "frame"),
                                               "name"))
           : NULL;
}

Test(core_phase, records_land_in_their_launch_phase, .init = reset) {
  int sid = start(cpt_tmp_path("ph"), NULL);
  cp_fake_launch("k0", 10, 0, 1); /* delivered only after the advance */
  uint32_t phase;
  cr_assert_eq(cproton_session_advance_phase(sid, &phase), CPROTON_OK);
  cr_assert_eq(phase, 1);
  cp_fake_launch("k1", 10, 0, 1);
  int done;
  cproton_session_phase_complete(sid, 0, &done);
  cr_assert_eq(done, 0, "phase 0's record has not arrived");
  cr_assert_eq(cproton_session_deactivate(sid), CPROTON_OK); /* flushes */
  cproton_session_phase_complete(sid, 0, &done);
  cr_assert_eq(done, 1);
  cproton_session_phase_complete(sid, 1, &done);
  cr_assert_eq(done, 0, "the current phase is never complete");
  json_t *p0 = phase_tree(sid, 0), *p1 = phase_tree(sid, 1);
  cr_assert_str_eq(first_child(p0), "k0");
  cr_assert_str_eq(first_child(p1), "k1");
  json_decref(p0), json_decref(p1);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

Test(core_phase, a_later_phase_record_completes_earlier_ones,
     .init = reset) {
  int sid = start(cpt_tmp_path("later"), NULL);
  cproton_session_advance_phase(sid, NULL);
  cproton_session_advance_phase(sid, NULL);
  cp_fake_launch("k", 10, 0, 1);
  char *buf;
  cr_assert_eq(cproton_session_data(sid, -1, NULL, &buf, NULL), CPROTON_OK);
  cproton_free(buf);
  int done;
  cproton_session_phase_complete(sid, 1, &done);
  cr_assert_eq(done, 1);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

Test(core_phase, records_of_a_cleared_phase_are_counted, .init = reset) {
  char name[300];
  snprintf(name, sizeof name, "%s", cpt_tmp_path("late"));
  int sid = start(name, NULL);
  cp_fake_launch("k", 10, 0, 1);
  cproton_session_advance_phase(sid, NULL);
  cr_assert_eq(cproton_session_clear(sid, 0, 0), CPROTON_OK);
  char *buf;
  cr_assert_eq(cproton_session_data(sid, 0, NULL, &buf, NULL),
               CPROTON_ENOTFOUND);
  cr_assert(strstr(cproton_last_error(), "phase 0 of session"));
  cpt_log_capture(CPROTON_LOG_WARN);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cpt_log_release();
  cr_assert(strstr(cpt_logged.last_warning, "1 records arrived after their phase"), "%s",
            cpt_logged.last_warning);
  char part[400];
  snprintf(part, sizeof part, "%s.part_1.hatchet", name);
  cr_assert_eq(access(part, F_OK), 0, "the remaining phase is a part");
}

Test(core_phase, periodic_parts_have_proton_names, .init = reset) {
  char name[300], path[400];
  snprintf(name, sizeof name, "%s", cpt_tmp_path("pp.hatchet_msgpack"));
  int sid = start(name, "periodic_flushing:format=hatchet_msgpack");
  for (int phase = 0; phase < 4; phase++) {
    cp_fake_launch("k", 10, 0, 1);
    if (phase < 3)
      cr_assert_eq(cproton_session_advance_phase(sid, NULL), CPROTON_OK);
  }
  snprintf(path, sizeof path, "%.*s.part_1.hatchet_msgpack",
           (int)(strlen(name) - strlen(".hatchet_msgpack")), name);
  cr_assert_eq(access(path, F_OK), 0, "written while the session runs: %s",
               path);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  for (int k = 0; k < 4; k++) {
    snprintf(path, sizeof path, "%.*s.part_%d.hatchet_msgpack",
             (int)(strlen(name) - strlen(".hatchet_msgpack")), name, k);
    cproton_profile *p;
    cr_assert_eq(cproton_profile_open(path, &p), CPROTON_OK, "%s",
                 cproton_last_error());
    cr_assert_str_eq(cproton_profile_node_name(p, 1), "k");
    cproton_profile_close(p);
  }
}

Test(core_phase, bad_periodic_modes, .init = reset) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.backend = "fake";
  o.mode = "periodic_flushing:fmt=hatchet";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_EPARSE);
  o.mode = "periodic_flushing:format=chrome_trace";
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "valid: hatchet, hatchet_msgpack"));
  cr_assert_eq(cproton_session_count(), 0);
}

/* gcc defines __SANITIZE_ADDRESS__, clang 14 only __has_feature */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#define ASAN __has_feature(address_sanitizer)
#else
#define ASAN 0
#endif

/* Runs `phases` phases of 250 steps (2,000 launches) on a fake session
 * with `data` and `mode`; returns the RSS after phase 50 and at the end. */
static void soak(const char *data, const char *mode, int phases,
                 long *baseline, long *end) {
  if (ASAN) /* ASan keeps freed blocks in quarantine (256 MiB): RSS measures it. */
    cr_skip_test("RSS is meaningless under AddressSanitizer");
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = cpt_tmp_path(data);
  o.backend = "fake";
  o.data = data;
  o.mode = mode;
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK, "%s",
               cproton_last_error());
  for (int phase = 0; phase < phases; phase++) {
    for (int i = 0; i < 250; i++)
      cp_fake_workload_step(i);
    cr_assert_eq(cproton_session_advance_phase(sid, NULL), CPROTON_OK);
    if (phase == 50)
      *baseline = cp_fake_workload_rss_kib();
  }
  *end = cp_fake_workload_rss_kib();
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cr_log_info("soak %s %s: RSS %ld KiB after 50 phases, %ld KiB after %d",
              data, mode ? mode : "-", *baseline, *end, phases);
  cr_assert_gt(*baseline, 0);
}

Test(core_phase, soak_tree_memory_stays_flat, .init = reset, .timeout = 120) {
  long baseline, end;
  soak("tree", "periodic_flushing", 600, &baseline, &end); /* 1.2M launches */
  cr_assert_leq(end, baseline + baseline / 10, "RSS grew from %ld to %ld KiB",
                baseline, end);
}

Test(core_phase, soak_trace_memory_stays_flat, .init = reset,
     .timeout = 120) {
  long baseline, end;
  soak("trace", "periodic_flushing:format=chrome_trace", 300, &baseline,
       &end);
  cr_assert_leq(end, baseline + baseline / 10, "RSS grew from %ld to %ld KiB",
                baseline, end);
}

/* The control: the same trace run without flushing holds every event, so
 * the soak above would see growth if flushing did not release it. */
Test(core_phase, soak_trace_without_flushing_grows, .init = reset,
     .timeout = 120) {
  long baseline, end;
  soak("trace", NULL, 300, &baseline, &end);
  cr_assert_gt(end, baseline + baseline / 10, "RSS %ld -> %ld KiB", baseline,
               end);
}

Test(core_phase, periodic_and_plain_sessions_share_a_backend, .init = reset) {
  int a = start(cpt_tmp_path("pa"), "periodic_flushing");
  int b = start(cpt_tmp_path("pb"), NULL); /* the backend's mode is the same */
  cp_fake_launch("k", 10, 0, 1);
  cr_assert_eq(cproton_session_advance_phase(a, NULL), CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(b, NULL), CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(a, NULL), CPROTON_OK);
}

/* CPU-only sessions (backend "none") under periodic flushing: nothing is in
 * flight on a GPU, so the phase that ends is complete at its advance and its
 * part is written there, keeping one phase in memory (issue 24: no part was
 * written before finalize, so memory grew with the run). */
static void cpu_phase(int phase, int n_scopes) {
  for (int k = 0; k < n_scopes; k++) {
    char name[64];
    uint64_t id;
    snprintf(name, sizeof name, "phase_%d_scope_%d", phase, k);
    cr_assert_eq(cproton_scope_enter(name, &id), CPROTON_OK);
    cr_assert_eq(cproton_metric_add_double(id, "flops", 1.0), CPROTON_OK);
    cr_assert_eq(cproton_scope_exit(name), CPROTON_OK);
  }
}

static void part_path(char *out, size_t size, const char *name, int phase) {
  snprintf(out, size, "%s.part_%d.hatchet", name, phase);
}

Test(core_phase, cpu_only_periodic_parts_are_written_at_each_advance,
     .init = reset) {
  char name[300], path[400];
  snprintf(name, sizeof name, "%s", cpt_tmp_path("cpu_periodic"));
  int sid = cpt_start_session(name, "none", NULL, "periodic_flushing");
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  for (int phase = 0; phase < 3; phase++) {
    cpu_phase(phase, 3);
    cr_assert_eq(cproton_session_advance_phase(sid, NULL), CPROTON_OK, "%s",
                 cproton_last_error());
    part_path(path, sizeof path, name, phase);
    cr_assert_eq(access(path, F_OK), 0, "phase %d is on disk at its advance",
                 phase);
    int complete = 0;
    cr_assert_eq(cproton_session_phase_complete(sid, phase, &complete),
                 CPROTON_OK);
    cr_assert(complete);
  }
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  part_path(path, sizeof path, name, 3);
  cr_assert_eq(access(path, F_OK), 0, "the last phase at finalize");
}

/* A full disk, played by a file-size limit (SIGXFSZ ignored, so a write past
 * it fails with EFBIG): phases 2 and 5 are too large for it, the others fit.
 * Each lost part is named in its own warning, and finalize counts them and
 * names both (issue 24: parts 2 and 5 were lost without a word, and only
 * the last failure was reported). */
Test(core_phase, every_part_a_full_disk_loses_is_named, .init = reset) {
  char name[300], path[400];
  snprintf(name, sizeof name, "%s", cpt_tmp_path("full_disk"));
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = {64 << 10, 64 << 10};
  int sid = cpt_start_session(name, "none", NULL, "periodic_flushing");
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  cpt_log_capture(CPROTON_LOG_WARN);
  cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  int advance_failed = 0;
  for (int phase = 0; phase < 6; phase++) {
    cpu_phase(phase, phase == 2 || phase == 5 ? 2000 : 3);
    if (phase < 5)
      advance_failed += cproton_session_advance_phase(sid, NULL) != CPROTON_OK;
  }
  int rc = cproton_session_finalize(sid, NULL);
  char error[512];
  snprintf(error, sizeof error, "%s", cproton_last_error());
  struct rlimit none = {RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_FSIZE, &none);
  cpt_log_release();
  cr_assert_eq(advance_failed, 1, "the advance that wrote phase 2 says so");
  cr_assert_eq(rc, CPROTON_EIO, "finalize could not write phase 5");
  cr_assert(strstr(error, "2 of 6 parts were not written (phases 2, 5"), "%s",
            error);
  for (int phase = 0; phase < 6; phase++) {
    char said[64];
    snprintf(said, sizeof said, "phase %d was not written to", phase);
    part_path(path, sizeof path, name, phase);
    int lost = phase == 2 || phase == 5;
    cr_assert_eq(strstr(cpt_logged.all, said) != NULL, lost, "%s", cpt_logged.all);
    cr_assert_eq(access(path, F_OK) != 0, lost, "%s", path);
  }
  cr_assert(strstr(cpt_logged.all, "2 of 6 parts were not written (phases 2, 5); "
                               "their data is lost"), "%s", cpt_logged.all);
}
