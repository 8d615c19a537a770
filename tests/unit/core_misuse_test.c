/* core_misuse_test.c -- the misuse suite of the C API: every public
 * function of include/cproton/ headers with NULL pointers, out-of-range ids,
 * calls in the wrong order, huge values and racing threads. A failing call
 * must return its documented status with a message; nothing may crash
 * (Criterion reports a crash as its own result) and the sanitizer builds
 * (make asan, make tsan) must stay silent. Each test prints its counts
 * ("misuse: <group>: N cases, M clear errors"); docs/guarantees.md sums
 * them. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "backend/fake/workload.h" /* the RSS reader */
#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

static int n_cases, n_errors;

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
  n_cases = n_errors = 0;
}

static void report(const char *group) {
  fprintf(stderr, "misuse: %s: %d cases, %d clear errors\n", group, n_cases, n_errors);
}

/* A call that must fail with `want` and leave a message naming the problem. */
#define FAILS(want, expr)                                                      \
  do {                                                                         \
    int rc_ = (expr);                                                          \
    n_cases++;                                                                 \
    cr_expect_eq(rc_, (want), "%s: got %s (%s)", #expr,                        \
                 cproton_error_name(rc_), cproton_last_error());               \
    cr_expect(rc_ == CPROTON_OK || cproton_last_error()[0] != '\0',            \
              "%s: no message", #expr);                                        \
    n_errors += rc_ == (want) && rc_ != CPROTON_OK;                            \
  } while (0)

/* A call that must succeed (or return a neutral value) without crashing. */
#define HOLDS(cond)                                                            \
  do {                                                                         \
    n_cases++;                                                                 \
    cr_expect(cond, "%s", #cond);                                              \
  } while (0)

static int start(const char *name, const char *backend) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = name;
  o.backend = backend;
  int sid = -1;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK, "%s", cproton_last_error());
  return sid;
}

/* ---- errors, logging, version ------------------------------------------------ */

static void count_log(void *user, cproton_log_level level, const char *message) {
  (void)level, (void)message;
  ++*(int *)user;
}

/* Saturates an integer metric, which logs one warning on every machine. */
static void warn_once(void) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = cpt_tmp_path("misuse_log");
  o.backend = "none";
  int sid;
  uint64_t id;
  if (cproton_session_start(&o, &sid) != CPROTON_OK)
    return;
  cproton_scope_enter("s", &id);
  cproton_metric_add_int(id, "m", INT64_MAX);
  cproton_metric_add_int(id, "m", 1);
  cproton_scope_exit("s");
  cproton_session_finalize(sid, NULL);
}

Test(core_misuse, error_table_and_log, .init = reset) {
  HOLDS(cproton_strerror(12345) != NULL);
  HOLDS(cproton_strerror(INT_MIN) != NULL);
  HOLDS(cproton_error_name(-999) != NULL);
  HOLDS(cproton_last_error() != NULL);
  HOLDS(cproton_version() != NULL);
  int seen = 0;
  cproton_log_set_handler(count_log, &seen, (cproton_log_level)99); /* above all */
  warn_once();
  HOLDS(seen == 0);
  cproton_log_set_handler(count_log, &seen, CPROTON_LOG_WARN);
  warn_once();
  HOLDS(seen >= 1);
  cproton_log_set_handler(NULL, NULL, CPROTON_LOG_WARN);
  report("errors");
}

/* ---- sessions -------------------------------------------------------------------- */

Test(core_misuse, session_nulls_and_ids, .init = reset) {
  cproton_session_options o;
  int sid;
  FAILS(CPROTON_EINVAL, cproton_session_options_init(NULL));
  cproton_session_options_init(&o);
  FAILS(CPROTON_EINVAL, cproton_session_start(NULL, &sid));
  FAILS(CPROTON_EINVAL, cproton_session_start(&o, NULL));
  static const int bad_ids[] = {INT_MIN, -2, 32, 33, 1000, INT_MAX};
  for (size_t i = 0; i < sizeof bad_ids / sizeof *bad_ids; i++) {
    int id = bad_ids[i];
    FAILS(CPROTON_ENOTFOUND, cproton_session_activate(id));
    FAILS(CPROTON_ENOTFOUND, cproton_session_deactivate(id));
    FAILS(CPROTON_ENOTFOUND, cproton_session_finalize(id, NULL));
    FAILS(CPROTON_ENOTFOUND, cproton_session_output_path(id, (char[8]){0}, 8));
    char *json = NULL;
    FAILS(CPROTON_ENOTFOUND, cproton_session_data_json(id, &json, NULL));
  }
  sid = start(cpt_tmp_path("misuse_ids"), "none");
  FAILS(CPROTON_EINVAL, cproton_session_data_json(sid, NULL, NULL));
  FAILS(CPROTON_OK, cproton_session_output_path(sid, NULL, 0));
  char small[4];
  FAILS(CPROTON_OK, cproton_session_output_path(sid, small, sizeof small));
  HOLDS(strlen(small) == 3);
  FAILS(CPROTON_OK, cproton_session_finalize(sid, NULL));
  cproton_free(NULL);
  HOLDS(cproton_session_count() == 0);
  report("session ids");
}

Test(core_misuse, bad_options_and_formats, .init = reset) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  int sid;
  o.context = "";
  FAILS(CPROTON_EINVAL, cproton_session_start(&o, &sid));
  o.context = "python"; /* no source registered */
  FAILS(CPROTON_EINVAL, cproton_session_start(&o, &sid));
  o.context = NULL;
  o.data = "";
  FAILS(CPROTON_EINVAL, cproton_session_start(&o, &sid));
  o.data = NULL;
  o.backend = "";
  FAILS(CPROTON_EINVAL, cproton_session_start(&o, &sid));
  o.backend = "none";
  o.mode = "pcsampling:interval=abc";
  FAILS(CPROTON_EPARSE, cproton_session_start(&o, &sid));
  o.backend = "instrumentation"; /* checked though no GPU is here */
  o.mode = "default:buffer_size=abc";
  FAILS(CPROTON_EPARSE, cproton_session_start(&o, &sid));
  o.backend = "none";
  o.mode = NULL;
  char longname[5000];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  o.name = longname;
  FAILS(CPROTON_ELIMIT, cproton_session_start(&o, &sid));
  HOLDS(cproton_session_count() == 0);
  /* a second session on the same backend: its mode is checked too */
  sid = start(cpt_tmp_path("misuse_fmt"), "none");
  o.name = cpt_tmp_path("misuse_fmt2");
  o.mode = "pcsampling:interval=abc";
  FAILS(CPROTON_EPARSE, cproton_session_start(&o, &(int){0}));
  /* formats: refused before the session is touched */
  FAILS(CPROTON_EINVAL, cproton_format_check("bogus"));
  FAILS(CPROTON_OK, cproton_format_check(NULL));
  FAILS(CPROTON_OK, cproton_format_check(""));
  cproton_scope_enter("kept", NULL);
  cproton_scope_exit("kept");
  FAILS(CPROTON_EINVAL, cproton_session_finalize(sid, "bogus"));
  FAILS(CPROTON_EINVAL, cproton_session_finalize(CPROTON_ALL_SESSIONS, "HATCHET"));
  HOLDS(cproton_session_count() == 1);
  char *json = NULL;
  FAILS(CPROTON_OK, cproton_session_data_json(sid, &json, NULL));
  HOLDS(json && strstr(json, "\"kept\""));
  cproton_free(json);
  FAILS(CPROTON_OK, cproton_session_finalize(sid, "hatchet"));
  report("options and formats");
}

Test(core_misuse, wrong_order, .init = reset) {
  FAILS(CPROTON_ESTATE, cproton_scope_exit(NULL));
  FAILS(CPROTON_ESTATE, cproton_scope_exit("never"));
  FAILS(CPROTON_ESTATE, cproton_state_exit());
  FAILS(CPROTON_OK, cproton_op_exit()); /* no op: clearing is a no-op */
  FAILS(CPROTON_ENOTFOUND, cproton_metric_add_int(123456789, "m", 1));
  FAILS(CPROTON_OK, cproton_metric_add_int(0, "m", 1)); /* no session: nothing to add to */
  int sid = start(cpt_tmp_path("misuse_order"), "none");
  FAILS(CPROTON_ESTATE, cproton_metric_add_int(CPROTON_CURRENT_OP, "m", 1));
  FAILS(CPROTON_OK, cproton_session_activate(sid)); /* already active */
  FAILS(CPROTON_OK, cproton_session_deactivate(sid));
  FAILS(CPROTON_OK, cproton_session_deactivate(sid));
  FAILS(CPROTON_OK, cproton_session_finalize(sid, NULL));
  FAILS(CPROTON_ENOTFOUND, cproton_session_finalize(sid, NULL));
  FAILS(CPROTON_ENOTFOUND, cproton_session_activate(sid));
  FAILS(CPROTON_OK, cproton_session_finalize(CPROTON_ALL_SESSIONS, NULL)); /* none left */
  report("wrong order");
}

/* ---- scopes, metrics, states, frames --------------------------------------------- */

static size_t no_frames(void *user, uint32_t *ids, size_t max) {
  (void)user, (void)ids, (void)max;
  return 0;
}

Test(core_misuse, names_and_huge_values, .init = reset) {
  FAILS(CPROTON_EINVAL, cproton_scope_enter(NULL, NULL));
  FAILS(CPROTON_EINVAL, cproton_scope_enter("", NULL));
  FAILS(CPROTON_EINVAL, cproton_cpu_timed_scope_enter(NULL, NULL));
  FAILS(CPROTON_EINVAL, cproton_state_enter(NULL));
  FAILS(CPROTON_EINVAL, cproton_state_enter(""));
  FAILS(CPROTON_EINVAL, cproton_op_enter(NULL));
  FAILS(CPROTON_EINVAL, cproton_metric_add_int(0, NULL, 1));
  FAILS(CPROTON_EINVAL, cproton_metric_add_double(0, "", 1.0));
  FAILS(CPROTON_EINVAL, cproton_metric_add_int(0, "count", 1));
  FAILS(CPROTON_EINVAL, cproton_frame_intern(NULL, &(uint32_t){0}));
  FAILS(CPROTON_EINVAL, cproton_frame_intern("f", NULL));
  FAILS(CPROTON_EINVAL, cproton_context_register(NULL, no_frames, NULL));
  FAILS(CPROTON_EINVAL, cproton_context_register("shadow", no_frames, NULL));
  FAILS(CPROTON_EINVAL, cproton_context_register("nope", no_frames, NULL));
  FAILS(CPROTON_OK, cproton_context_register("python", NULL, NULL));
  char *huge = malloc(70000);
  memset(huge, 'h', 69999);
  huge[69999] = '\0';
  FAILS(CPROTON_EINVAL, cproton_scope_enter(huge, NULL));
  FAILS(CPROTON_EINVAL, cproton_state_enter(huge));
  FAILS(CPROTON_EINVAL, cproton_metric_add_int(0, huge, 1));
  free(huge);
  HOLDS(cproton_scope_depth() == 0);
  int rc = CPROTON_OK;
  size_t pushed = 0;
  for (; pushed < 1100 && (rc = cproton_scope_enter("deep", NULL)) == CPROTON_OK; pushed++)
    ;
  FAILS(CPROTON_ELIMIT, rc);
  HOLDS(pushed == 1024);
  while (cproton_scope_depth())
    cproton_scope_exit(NULL);
  rc = CPROTON_OK;
  for (pushed = 0; pushed < 100 && (rc = cproton_state_enter("st")) == CPROTON_OK; pushed++)
    ;
  FAILS(CPROTON_ELIMIT, rc);
  while (cproton_state_exit() == CPROTON_OK)
    ;
  /* integer metrics saturate instead of wrapping */
  int sid = start(cpt_tmp_path("misuse_big"), "none");
  uint64_t id;
  cproton_scope_enter("s", &id);
  FAILS(CPROTON_OK, cproton_metric_add_int(id, "big", INT64_MAX));
  FAILS(CPROTON_OK, cproton_metric_add_int(id, "big", INT64_MAX));
  FAILS(CPROTON_OK, cproton_metric_add_int(id, "small", INT64_MIN));
  FAILS(CPROTON_OK, cproton_metric_add_int(id, "small", -1));
  FAILS(CPROTON_OK, cproton_metric_add_double(id, "d", 1e308));
  FAILS(CPROTON_OK, cproton_metric_add_double(id, "d", 1e308));
  FAILS(CPROTON_ESTATE, cproton_metric_add_double(id, "big", 1.0));
  cproton_scope_exit("s");
  char *json = NULL;
  cproton_session_data_json(sid, &json, NULL);
  HOLDS(json && strstr(json, "\"big\": 9223372036854775807"));
  HOLDS(json && strstr(json, "\"small\": -9223372036854775808"));
  HOLDS(json && strstr(json, "\"d\": null")); /* inf, as Proton writes it */
  cproton_free(json);
  cproton_session_finalize(sid, NULL);
  /* more sessions than slots */
  int sids[40], n = 0;
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.backend = "none";
  o.name = cpt_tmp_path("misuse_many");
  for (rc = CPROTON_OK; n < 40 && (rc = cproton_session_start(&o, &sids[n])) == CPROTON_OK; n++)
    ;
  FAILS(CPROTON_ELIMIT, rc);
  HOLDS(n == 32);
  cproton_session_finalize(CPROTON_ALL_SESSIONS, NULL);
  report("names and huge values");
}

/* ---- instrumentation: mode strings, the pass, the decoder, the runtime ----------- */

Test(core_misuse, mode_strings, .init = reset) {
  cproton_ptx_options o;
  static const char *const bad[] = {":", "::::", ":buffer_size=1", "default:=",
                                    "default:buffer_size", "default:buffer_size=-1",
                                    "default:buffer_size=99999999999999999999",
                                    "default:metric_type=", "default:nope=1", "pcsampling",
                                    "default:sampling_options=1,,2", "default:granularity=x",
                                    /* issue 24.18: empty options and values */
                                    "default:", "default::granularity=warp", "default:granularity=",
                                    "default:buffer_size=", "default:reduce=", "default:optimizations=clock32,",
                                    "default:optimizations=,clock32", "default:sampling_options=0,",
                                    "default:granularity=BUFFER_TYPE.WARP", "default:metric_type=globaltimer"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    FAILS(CPROTON_EINVAL, cproton_instr_mode_options(bad[i], &o));
  char longmode[2048];
  memset(longmode, 'd', sizeof longmode - 1);
  longmode[sizeof longmode - 1] = '\0';
  FAILS(CPROTON_EINVAL, cproton_instr_mode_options(longmode, &o));
  FAILS(CPROTON_EINVAL, cproton_instr_mode_options("default", NULL));
  FAILS(CPROTON_EINVAL, cproton_instr_mode_options(NULL, NULL));
  FAILS(CPROTON_OK, cproton_instr_mode_options("default:optimizations=:sampling_options=", &o));
  char canon[64];
  FAILS(CPROTON_OK, cproton_instr_mode_normalize("mma:granularity=GRANULARITY.WARPGROUP", canon, sizeof canon));
  cr_assert_str_eq(canon, "mma:granularity=warp_group");
  FAILS(CPROTON_ELIMIT, cproton_instr_mode_normalize("mma:granularity=warp", canon, 8));
  FAILS(CPROTON_EINVAL, cproton_instr_mode_normalize("mma", NULL, 8));
  FAILS(CPROTON_OK, cproton_instr_mode_options(NULL, &o));
  FAILS(CPROTON_EINVAL, cproton_instr_current_options(NULL));
  FAILS(CPROTON_OK, cproton_instr_current_options(&o));
  FAILS(CPROTON_EINVAL, cproton_instr_get_stats(NULL));
  report("mode strings");
}

#define PTX                                                                    \
  ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k(\n"       \
  "\t.param .u64 k_param_0\n)\n.reqntid 64\n{\n"                               \
  "\t// @cproton record start a\n\t// @cproton record end a\n\tret;\n}\n"

Test(core_misuse, pass_and_decoder, .init = reset) {
  cproton_ptx *p = NULL;
  cproton_ptx_options o;
  FAILS(CPROTON_EINVAL, cproton_ptx_options_init(NULL));
  cproton_ptx_options_init(&o);
  FAILS(CPROTON_EINVAL, cproton_ptx_instrument(NULL, 10, NULL, &p));
  FAILS(CPROTON_EINVAL, cproton_ptx_instrument(PTX, strlen(PTX), NULL, NULL));
  o.counter = (cproton_counter)77;
  FAILS(CPROTON_EINVAL, cproton_ptx_instrument(PTX, strlen(PTX), &o, &p));
  cproton_ptx_options_init(&o);
  o.buffer_size = UINT32_MAX;
  FAILS(CPROTON_EINVAL, cproton_ptx_instrument(PTX, strlen(PTX), &o, &p));
  o.buffer_size = 0;
  o.num_warps = UINT32_MAX;
  FAILS(CPROTON_EINVAL, cproton_ptx_instrument(PTX, strlen(PTX), &o, &p));
  FAILS(CPROTON_OK, cproton_ptx_instrument("", 0, NULL, &p)); /* nothing to do */
  cproton_ptx_free(p);
  p = NULL;
  HOLDS(cproton_ptx_text(NULL, NULL) == NULL);
  HOLDS(cproton_ptx_n_kernels(NULL) == 0);
  HOLDS(cproton_ptx_kernel_name(NULL, 0) == NULL);
  cproton_buffer_layout lay;
  cproton_ptx_stats st;
  FAILS(CPROTON_EINVAL, cproton_ptx_kernel_layout(NULL, 0, &lay));
  FAILS(CPROTON_EINVAL, cproton_ptx_kernel_stats(NULL, 0, &st));
  FAILS(CPROTON_OK, cproton_ptx_instrument(PTX, strlen(PTX), NULL, &p));
  FAILS(CPROTON_EINVAL, cproton_ptx_kernel_layout(p, 1, &lay));
  FAILS(CPROTON_EINVAL, cproton_ptx_kernel_layout(p, 0, NULL));
  FAILS(CPROTON_EINVAL, cproton_ptx_kernel_stats(p, SIZE_MAX, &st));
  HOLDS(cproton_ptx_kernel_name(p, 5) == NULL);
  FAILS(CPROTON_OK, cproton_ptx_kernel_layout(p, 0, &lay));
  cproton_ptx_free(NULL);
  /* decoder */
  cproton_decoded *d = NULL;
  char zeros[4096] = {0};
  FAILS(CPROTON_EINVAL, cproton_buffer_decode(NULL, 0, &lay, 0, &d));
  FAILS(CPROTON_EINVAL, cproton_buffer_decode(zeros, sizeof zeros, NULL, 0, &d));
  FAILS(CPROTON_EINVAL, cproton_buffer_decode(zeros, sizeof zeros, &lay, 0, NULL));
  FAILS(CPROTON_EPARSE, cproton_buffer_decode(zeros, 7, &lay, 0, &d));
  int rc = cproton_buffer_decode(zeros, lay.per_cta_bytes, &lay, 0, &d);
  n_cases++;
  cr_expect(rc == CPROTON_EPARSE || rc == CPROTON_OK, "zeroed buffer: %s", cproton_last_error());
  n_errors += rc != CPROTON_OK;
  cproton_decoded_free(d);
  HOLDS(cproton_decoded_n_scopes(NULL) == 0 && cproton_decoded_n_ctas(NULL) == 0 &&
        cproton_decoded_n_warps(NULL) == 0 && cproton_decoded_n_bad_ctas(NULL) == 0 &&
        cproton_decoded_n_dropped(NULL) == 0 && cproton_decoded_n_unpaired(NULL) == 0);
  cproton_decoded_scope sc;
  cproton_decoded_cta cta;
  cproton_decoded_warp w;
  FAILS(CPROTON_EINVAL, cproton_decoded_get_scope(NULL, 0, &sc));
  FAILS(CPROTON_EINVAL, cproton_decoded_get_cta(NULL, 0, &cta));
  FAILS(CPROTON_EINVAL, cproton_decoded_get_warp(NULL, 0, &w));
  cproton_decoded_free(NULL);
  /* runtime, without a GPU */
  cproton_instr_kernel *k = NULL;
  FAILS(CPROTON_EINVAL, cproton_instr_kernel_new(NULL, &lay, &k));
  FAILS(CPROTON_EINVAL, cproton_instr_kernel_new("k", NULL, &k));
  FAILS(CPROTON_EINVAL, cproton_instr_kernel_new("k", &lay, NULL));
  FAILS(CPROTON_OK, cproton_instr_kernel_new("k", &lay, &k));
  uint64_t dptr;
  rc = cproton_instr_alloc(0, 0, NULL);
  n_cases++, n_errors += rc != CPROTON_OK;
  cr_expect(rc != CPROTON_OK, "alloc into NULL succeeded");
  rc = cproton_instr_alloc(1 << 20, 0, &dptr); /* no GPU or no context: a clear error */
  n_cases++, n_errors += rc != CPROTON_OK;
  cr_expect(rc == CPROTON_OK || rc == CPROTON_ENODEVICE || rc == CPROTON_EBACKEND, "alloc: %s",
            cproton_error_name(rc));
  if (rc == CPROTON_OK)
    cproton_instr_release(dptr);
  FAILS(CPROTON_ENOTFOUND, cproton_instr_release(12345));
  FAILS(CPROTON_EINVAL, cproton_instr_launch(NULL, 0, 0, 0));
  rc = cproton_instr_launch(k, 12345, 64, 0); /* no driver here, or no such buffer */
  n_cases++, n_errors += rc == CPROTON_ENODEVICE || rc == CPROTON_ENOTFOUND;
  cr_expect(rc == CPROTON_ENODEVICE || rc == CPROTON_ENOTFOUND, "%s", cproton_error_name(rc));
  FAILS(CPROTON_EINVAL, cproton_instr_record_host(NULL, zeros, sizeof zeros, 0));
  FAILS(CPROTON_EINVAL, cproton_instr_record_host(k, NULL, 0, 0));
  FAILS(CPROTON_OK, cproton_instr_flush());
  cproton_instr_kernel_free(k);
  cproton_instr_kernel_free(NULL);
  cproton_ptx_free(p);
  report("pass, decoder, runtime");
}

/* ---- profile reading ---------------------------------------------------------------- */

Test(core_misuse, profile_reader, .init = reset) {
  cproton_profile *p = NULL;
  FAILS(CPROTON_EINVAL, cproton_profile_open(NULL, &p));
  FAILS(CPROTON_EINVAL, cproton_profile_open("x.hatchet", NULL));
  FAILS(CPROTON_EIO, cproton_profile_open("/nonexistent/x.hatchet", &p));
  FAILS(CPROTON_EINVAL, cproton_profile_parse(NULL, 5, NULL, &p));
  FAILS(CPROTON_EINVAL, cproton_profile_parse("[]", 2, NULL, NULL));
  FAILS(CPROTON_EPARSE, cproton_profile_parse("", 0, NULL, &p));
  FAILS(CPROTON_EPARSE, cproton_profile_parse("[{\"frame\": {\"name\": \"a\"}, \"metrics\": "
                                              "{\"count\": \"ten\"}, \"children\": []}]",
                                              82, "count.hatchet", &p));
  HOLDS(strstr(cproton_last_error(), "count.hatchet") != NULL);
  const char *ok = "[{\"frame\": {\"name\": \"ROOT\", \"type\": \"function\"}, \"metrics\": "
                   "{\"count\": 1}, \"children\": []}]";
  FAILS(CPROTON_OK, cproton_profile_parse(ok, strlen(ok), NULL, &p));
  HOLDS(cproton_profile_node_name(p, UINT32_MAX) == NULL);
  HOLDS(cproton_profile_node_type(p, 99) == NULL);
  HOLDS(cproton_profile_node_child_count(p, 99) == 0);
  HOLDS(cproton_profile_node_metric_count(p, 99) == 0);
  HOLDS(cproton_profile_metric_name(p, 99) == NULL);
  uint32_t key;
  cproton_metric_value v;
  cproton_device_info di;
  FAILS(CPROTON_EINVAL, cproton_profile_metric_find(p, NULL, &key));
  FAILS(CPROTON_ENOTFOUND, cproton_profile_metric_find(p, "nope", &key));
  FAILS(CPROTON_EINVAL, cproton_profile_metric_find(p, "count", NULL));
  FAILS(CPROTON_EINVAL, cproton_profile_node_metric(p, 99, 0, &v));
  FAILS(CPROTON_EINVAL, cproton_profile_node_metric_at(p, 0, 99, &key, &v));
  FAILS(CPROTON_EINVAL, cproton_profile_node_metric_by_name(p, 0, NULL, &v));
  FAILS(CPROTON_EINVAL, cproton_profile_device(p, 99, &di));
  cproton_profile_close(p);
  /* 19-digit integers: int64 when they fit, else a double (no overflow) */
  const char *big = "[{\"frame\": {\"name\": \"ROOT\"}, \"metrics\": {\"a\": 9223372036854775807, "
                    "\"b\": 9223372036854775808, \"c\": -9223372036854775808, \"d\": "
                    "99999999999999999999}, \"children\": []}]";
  FAILS(CPROTON_OK, cproton_profile_parse(big, strlen(big), NULL, &p));
  cproton_metric_value a, b, c, dd;
  cproton_profile_node_metric_by_name(p, 0, "a", &a);
  cproton_profile_node_metric_by_name(p, 0, "b", &b);
  cproton_profile_node_metric_by_name(p, 0, "c", &c);
  cproton_profile_node_metric_by_name(p, 0, "d", &dd);
  HOLDS(a.kind == CPROTON_METRIC_INT && a.i == INT64_MAX);
  HOLDS(b.kind == CPROTON_METRIC_DOUBLE && b.d == 9223372036854775808.0);
  HOLDS(c.kind == CPROTON_METRIC_INT && c.i == INT64_MIN);
  HOLDS(dd.kind == CPROTON_METRIC_DOUBLE && dd.d == 1e20);
  cproton_profile_close(p);
  HOLDS(cproton_profile_name(NULL) == NULL);
  HOLDS(cproton_profile_node_count(NULL) == 0);
  HOLDS(cproton_profile_node_name(NULL, 0) == NULL);
  HOLDS(cproton_profile_node_type(NULL, 0) == NULL);
  HOLDS(cproton_profile_node_parent(NULL, 0) == CPROTON_PROFILE_NO_NODE);
  HOLDS(cproton_profile_node_depth(NULL, 0) == 0);
  HOLDS(cproton_profile_node_child_count(NULL, 0) == 0);
  HOLDS(cproton_profile_node_child(NULL, 0, 0) == CPROTON_PROFILE_NO_NODE);
  HOLDS(cproton_profile_metric_count(NULL) == 0);
  HOLDS(cproton_profile_metric_name(NULL, 0) == NULL);
  HOLDS(cproton_profile_node_metric_count(NULL, 0) == 0);
  HOLDS(cproton_profile_device_count(NULL) == 0);
  FAILS(CPROTON_EINVAL, cproton_profile_metric_find(NULL, "count", &key));
  FAILS(CPROTON_EINVAL, cproton_profile_node_metric(NULL, 0, 0, &v));
  FAILS(CPROTON_EINVAL, cproton_profile_node_metric_at(NULL, 0, 0, &key, &v));
  FAILS(CPROTON_EINVAL, cproton_profile_node_metric_by_name(NULL, 0, "count", &v));
  FAILS(CPROTON_EINVAL, cproton_profile_device(NULL, 0, &di));
  cproton_profile_close(NULL);
  report("profile reader");
}

/* Racing threads: tests/concurrency/session_race.c (a plain program, so
 * that `make tsan` can run it). */

/* ---- memory: names entered while nothing records them are not kept ----------- */

static double rss_mb(void) {
  return (double)cp_fake_workload_rss_kib() * 1024.0 / 1e6;
}

Test(core_misuse, distinct_names_without_session_keep_no_memory, .init = reset) {
  char name[64];
  double before = rss_mb();
  int bad = 0;
  for (int i = 0; i < 1000000; i++) {
    snprintf(name, sizeof name, "idle%d", i);
    bad += cproton_scope_enter(name, NULL) != CPROTON_OK;
    bad += cproton_state_enter(name) != CPROTON_OK;
    bad += cproton_state_exit() != CPROTON_OK;
    bad += cproton_scope_exit(name) != CPROTON_OK;
  }
  double grown = rss_mb() - before;
  HOLDS(bad == 0);
  HOLDS(grown < 4.0);
  fprintf(stderr, "misuse: 10^6 names with no session: RSS %+.1f MB\n", grown);
  /* an unresolved frame still checks its exit name */
  FAILS(CPROTON_OK, cproton_scope_enter("outer", NULL));
  FAILS(CPROTON_ESTATE, cproton_scope_exit("other"));
  /* a session started inside it: kernels land under ROOT, as in Proton */
  int sid = start(cpt_tmp_path("misuse_unresolved"), "fake");
  FAILS(CPROTON_OK, cproton_scope_enter("inner", NULL));
  cp_fake_launch("k", 10, 0, 0);
  FAILS(CPROTON_OK, cproton_scope_exit("inner"));
  FAILS(CPROTON_OK, cproton_scope_exit("outer"));
  char *json = NULL;
  cproton_session_data_json(sid, &json, NULL);
  HOLDS(json && strstr(json, "\"inner\"") && !strstr(json, "\"outer\""));
  cproton_free(json);
  cproton_session_finalize(sid, NULL);
  report("memory");
}
