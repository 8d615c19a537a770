/* core_session_test.c -- sessions end to end through the public API and the
 * fake backend: trees written, read back with jansson, compared whole. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
}

static int start(const char *name, const char *data, const char *backend) {
  int sid = cpt_start_session(name, backend, data, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

/* Loads `path` and checks it equals the JSON text `expected`. */
static void assert_profile(const char *path, const char *expected) {
  json_t *got = cpt_load_json(path);
  json_t *want = cpt_parse_json(expected);
  cr_assert_not_null(got);
  cr_assert_not_null(want);
  char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
  char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
  cr_assert_str_eq(g, w);
  free(g), free(w);
  json_decref(got), json_decref(want);
}

#define KERNEL(n, c, t)                                                        \
  "{\"frame\":{\"name\":\"" n "\",\"type\":\"function\"},\"metrics\":{"        \
  "\"count\":" #c ",\"device_id\":\"0\",\"device_type\":\"CUDA\","             \
  "\"time (ns)\":" #t "},\"children\":[]}"

Test(core_session, nested_scopes_and_kernels, .init = reset) {
  const char *path = cpt_tmp_path("nested");
  int sid = start(path, NULL, "fake");
  cp_fake_add_device(0);
  uint64_t id;
  cr_assert_eq(cproton_scope_enter("fwd", &id), CPROTON_OK);
  cp_fake_launch("matmul", 100, 0, 7);
  cp_fake_launch("matmul", 50, 0, 7);
  cr_assert_eq(cproton_scope_enter("attn", NULL), CPROTON_OK);
  cp_fake_launch("softmax", 10, 0, 7);
  cr_assert_eq(cproton_metric_add_double(0, "flops", 2.5), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("attn"), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int(id, "bytes", 64), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit(NULL), CPROTON_OK);
  cp_fake_launch("top", 1, 0, 7);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  assert_profile(full,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"bytes\":0,\"count\":0,\"flops\":0,\"time (ns)\":0},"
      "\"children\":["
      "{\"frame\":{\"name\":\"fwd\",\"type\":\"function\"},"
      "\"metrics\":{\"bytes\":64},\"children\":["
      "{\"frame\":{\"name\":\"attn\",\"type\":\"function\"},"
      "\"metrics\":{\"flops\":2.5},\"children\":["
      KERNEL("softmax", 1, 10) "]},"
      KERNEL("matmul", 2, 150) "]},"
      KERNEL("top", 1, 1) "]},"
      "{\"CUDA\":{\"0\":{\"arch\":\"90\",\"bus_width\":6016,"
      "\"clock_rate\":1980000,\"memory_clock_rate\":3201000,"
      "\"num_sms\":132}}}]");
}

/* ---- threads ---------------------------------------------------------------- */

#define N_THREADS 8
#define N_ITERS 200

static void *worker(void *arg) {
  long t = (long)arg;
  char name[32];
  snprintf(name, sizeof name, "thread%ld", t % 2);
  for (int i = 0; i < N_ITERS; i++) {
    cproton_scope_enter(name, NULL);
    cproton_scope_enter("step", NULL);
    cp_fake_launch("k", 3, 0, (uint32_t)t);
    cproton_scope_exit("step");
    cproton_scope_exit(name);
  }
  return NULL;
}

Test(core_session, threads_keep_their_own_stacks, .init = reset) {
  const char *path = cpt_tmp_path("threads.hatchet");
  int sid = start(path, NULL, "fake");
  pthread_t th[N_THREADS];
  for (long t = 0; t < N_THREADS; t++)
    pthread_create(&th[t], NULL, worker, (void *)t);
  for (int t = 0; t < N_THREADS; t++)
    pthread_join(th[t], NULL);
  cr_assert_eq(cproton_session_finalize(sid, "hatchet"), CPROTON_OK);
  /* 4 threads per name, 200 iterations, 3 ns each */
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"time (ns)\":0},\"children\":["
      "{\"frame\":{\"name\":\"thread0\",\"type\":\"function\"},\"metrics\":{},"
      "\"children\":[{\"frame\":{\"name\":\"step\",\"type\":\"function\"},"
      "\"metrics\":{},\"children\":[" KERNEL("k", 800, 2400) "]}]},"
      "{\"frame\":{\"name\":\"thread1\",\"type\":\"function\"},\"metrics\":{},"
      "\"children\":[{\"frame\":{\"name\":\"step\",\"type\":\"function\"},"
      "\"metrics\":{},\"children\":[" KERNEL("k", 800, 2400) "]}]}]},{}]");
}

/* ---- states, metrics rules, sessions -------------------------------------------- */

Test(core_session, state_is_the_kernel_parent, .init = reset) {
  const char *path = cpt_tmp_path("state.hatchet");
  int sid = start(path, NULL, "fake");
  cproton_scope_enter("s", NULL);
  cr_assert_eq(cproton_state_enter("warmup"), CPROTON_OK);
  cp_fake_launch("k", 5, 0, 0);
  cr_assert_eq(cproton_state_exit(), CPROTON_OK);
  cr_assert_eq(cproton_state_exit(), CPROTON_ESTATE);
  cp_fake_launch("k", 7, 0, 0);
  cproton_scope_exit("s");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"time (ns)\":0},\"children\":["
      "{\"frame\":{\"name\":\"s\",\"type\":\"function\"},\"metrics\":{},"
      "\"children\":[" KERNEL("k", 1, 7) ","
      "{\"frame\":{\"name\":\"warmup\",\"type\":\"function\"},\"metrics\":{},"
      "\"children\":[" KERNEL("k", 1, 5) "]}]}]},{}]");
}

Test(core_session, metric_suffix_rules, .init = reset) {
  const char *path = cpt_tmp_path("rules.hatchet");
  int sid = start(path, NULL, "none");
  for (int i = 0; i < 3; i++) {
    uint64_t id;
    cproton_scope_enter("s", &id);
    cr_assert_eq(cproton_metric_add_int(id, "sum", 2), CPROTON_OK);
    cr_assert_eq(cproton_metric_add_double(id, "t (exc)", 0.5), CPROTON_OK);
    cr_assert_eq(cproton_metric_add_int(id, "p (pty)", 10 + i), CPROTON_OK);
    cproton_scope_exit("s");
    /* after exit, the id still names the scope (Proton's exit_scope metrics) */
    cr_assert_eq(cproton_metric_add_int(id, "late", 1), CPROTON_OK);
  }
  cr_assert_eq(cproton_metric_add_double(0, "root", 1.0), CPROTON_OK);
  cproton_scope_enter("s", NULL);
  cr_assert_eq(cproton_metric_add_double(0, "sum", 1.0), CPROTON_ESTATE);
  cr_assert(strstr(cproton_last_error(), "sum") != NULL);
  cr_assert_eq(cproton_metric_add_int(0, "count", 1), CPROTON_EINVAL);
  cr_assert_eq(cproton_metric_add_int(987654321, "x", 1), CPROTON_ENOTFOUND);
  cproton_scope_exit("s");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"late\":0,\"p\":0,\"root\":1.0,\"sum\":0},\"children\":["
      "{\"frame\":{\"name\":\"s\",\"type\":\"function\"},\"metrics\":"
      "{\"late\":3,\"p\":12,\"sum\":6,\"t\":1.5},"
      "\"children\":[]}]},{}]");
}

Test(core_session, deactivated_sessions_record_nothing, .init = reset) {
  const char *path = cpt_tmp_path("pause.hatchet");
  int sid = start(path, NULL, "fake");
  cp_fake_launch("a", 1, 0, 0);
  cr_assert_eq(cproton_session_deactivate(sid), CPROTON_OK);
  cp_fake_launch("b", 1, 0, 0);
  cproton_scope_enter("hidden", NULL);
  cproton_scope_exit("hidden");
  cr_assert_eq(cproton_session_activate(sid), CPROTON_OK);
  cp_fake_launch("c", 1, 0, 0);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"time (ns)\":0},\"children\":["
      KERNEL("a", 1, 1) "," KERNEL("c", 1, 1) "]},{}]");
}

Test(core_session, two_sessions_at_once, .init = reset) {
  const char *p1 = cpt_tmp_path("one.hatchet");
  const char *p2 = cpt_tmp_path("two.hatchet");
  int s1 = start(p1, NULL, "fake");
  cp_fake_launch("first", 1, 0, 0);
  int s2 = start(p2, NULL, "fake");
  cr_assert_neq(s1, s2);
  cp_fake_launch("both", 2, 0, 0);
  cr_assert_eq(cproton_session_count(), 2);
  cr_assert_eq(cproton_session_finalize(s1, NULL), CPROTON_OK);
  cp_fake_launch("second", 3, 0, 0);
  cr_assert_eq(cproton_session_finalize(CPROTON_ALL_SESSIONS, NULL),
               CPROTON_OK);
  cr_assert_eq(cproton_session_count(), 0);
  assert_profile(p1,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"time (ns)\":0},\"children\":["
      KERNEL("both", 1, 2) "," KERNEL("first", 1, 1) "]},{}]");
  assert_profile(p2,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"time (ns)\":0},\"children\":["
      KERNEL("both", 1, 2) "," KERNEL("second", 1, 3) "]},{}]");
}

Test(core_session, data_json_renders_without_finalizing, .init = reset) {
  int sid = start(cpt_tmp_path("json"), NULL, "fake");
  cp_fake_launch("k", 4, 0, 0);
  char *json = NULL;
  size_t size = 0;
  cr_assert_eq(cproton_session_data_json(sid, &json, &size), CPROTON_OK);
  cr_assert_eq(strlen(json), size);
  json_t *j = cpt_parse_json(json);
  cr_assert_not_null(j);
  json_t *k = json_array_get(json_object_get(json_array_get(j, 0), "children"), 0);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(k, "metrics"), "time (ns)")), 4);
  json_decref(j);
  cproton_free(json);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

/* ---- bad input ---------------------------------------------------------------- */

Test(core_session, bad_ids_and_options_fail_cleanly, .init = reset) {
  cr_assert_eq(cproton_session_activate(3), CPROTON_ENOTFOUND);
  cr_assert_eq(cproton_session_finalize(31, NULL), CPROTON_ENOTFOUND);
  cr_assert_eq(cproton_session_deactivate(-7), CPROTON_ENOTFOUND);
  cr_assert(strstr(cproton_last_error(), "-7") != NULL);
  cproton_session_options o;
  cproton_session_options_init(&o);
  int sid;
  o.data = "tre";
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "tre") != NULL);
  o.data = NULL;
  o.context = "frames";
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_EINVAL);
  o.context = NULL;
  o.backend = "nope";
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "none") != NULL);
  cr_assert_eq(cproton_session_start(NULL, &sid), CPROTON_EINVAL);
  cr_assert_eq(cproton_session_count(), 0);
  cr_assert_eq(cproton_scope_exit(NULL), CPROTON_ESTATE);
  cr_assert_eq(cproton_scope_enter("", NULL), CPROTON_EINVAL);
  cr_assert_eq(cproton_scope_enter(NULL, NULL), CPROTON_EINVAL);
  cproton_scope_enter("a", NULL);
  cr_assert_eq(cproton_scope_exit("b"), CPROTON_ESTATE);
  cr_assert_eq(cproton_scope_depth(), 1);
  cr_assert_eq(cproton_scope_exit("a"), CPROTON_OK);
}

Test(core_session, unwritable_path_leaves_no_file, .init = reset) {
  int sid = start("/nonexistent-dir/x", NULL, "none");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_EIO);
  cr_assert(strstr(cproton_last_error(), "/nonexistent-dir/x.hatchet") != NULL);
  cr_assert_eq(cproton_session_count(), 0, "the session is freed even on EIO");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_ENOTFOUND);
  cr_assert_eq(cproton_session_finalize(0, "xml"), CPROTON_ENOTFOUND);
  sid = start(cpt_tmp_path("fmt"), NULL, "none");
  cr_assert_eq(cproton_session_finalize(sid, "xml"), CPROTON_EINVAL);
  cr_assert_eq(access(cpt_tmp_path("fmt.xml"), F_OK), -1);
  cr_assert_eq(cproton_session_count(), 1, "a bad format keeps the session");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

Test(core_session, name_placeholders, .init = reset) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  char want[256], got[256];
  snprintf(want, sizeof want, "%s", cpt_tmp_path("r3-l1-p"));
  snprintf(want + strlen(want), sizeof want - strlen(want), "%d", (int)getpid());
  char name[300];
  snprintf(name, sizeof name, "%s", cpt_tmp_path("r{rank}-l{local_rank}-p{pid}"));
  o.name = name;
  o.rank = 3;
  o.local_rank = 1;
  o.backend = "none";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK);
  cr_assert_eq(cproton_session_output_path(sid, got, sizeof got), CPROTON_OK);
  cr_assert_str_eq(got, want);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

/* ---- trace ---------------------------------------------------------------- */

Test(core_session, trace_has_lanes_and_flows, .init = reset) {
  const char *path = cpt_tmp_path("tl");
  int sid = start(path, "trace", "fake");
  cproton_scope_enter("step", NULL);
  cp_fake_launch("k1", 100, 0, 7);
  cp_fake_launch("k2", 100, 1, 9);
  cproton_scope_exit("step");
  cr_assert_eq(cproton_session_finalize(sid, "chrome_timeline"), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.chrome_trace", path);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j);
  json_t *events = json_object_get(j, "traceEvents");
  size_t i;
  json_t *e;
  int kernels = 0, scopes = 0, starts = 0, ends = 0, lanes = 0;
  json_array_foreach(events, i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (!strcmp(ph, "X") && !strcmp(cat, "kernel"))
      kernels++;
    if (!strcmp(ph, "X") && !strcmp(cat, "scope"))
      scopes++;
    starts += !strcmp(ph, "s");
    ends += !strcmp(ph, "f");
    lanes += !strcmp(ph, "M") &&
             !strcmp(json_string_value(json_object_get(e, "name")), "thread_name");
  }
  cr_assert_eq(kernels, 2);
  cr_assert_eq(scopes, 1);
  cr_assert_eq(starts, 2);
  cr_assert_eq(ends, 2);
  cr_assert_eq(lanes, 3, "one CPU thread and two GPU streams");
  json_decref(j);
}

/* The "C" events of a Chrome trace file: their count, and each one's
 * "name@pid=value" joined by spaces into `out`. */
static int counter_events(const char *path, char *out, size_t size) {
  json_t *j = cpt_load_json(path);
  cr_assert_not_null(j);
  json_t *e;
  size_t i, len = 0;
  int n = 0;
  out[0] = '\0';
  json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
    if (strcmp(json_string_value(json_object_get(e, "ph")), "C"))
      continue;
    n++;
    len += (size_t)snprintf(
        out + len, size - len, "%s%s@%lld=%g", len ? " " : "",
        json_string_value(json_object_get(e, "name")),
        (long long)json_integer_value(json_object_get(e, "pid")),
        json_number_value(json_object_get(json_object_get(e, "args"), "value")));
  }
  json_decref(j);
  return n;
}

/* Hardware-counter samples (cp_session_deliver_counter) reach every active
 * trace session as Chrome counter events -- on the GPU's pid in Proton
 * 3.6's layout and the timeline, named "GPU <d> <counter>" in pid 0 in
 * Proton 3.9's -- and no tree session; bad samples are refused whole. */
Test(core_session, counter_samples_become_counter_tracks, .init = reset) {
  char p36[256], ptl[256], p39[256], full[512], got[512];
  snprintf(p36, sizeof p36, "%s", cpt_tmp_path("c36"));
  snprintf(ptl, sizeof ptl, "%s", cpt_tmp_path("ctl"));
  snprintf(p39, sizeof p39, "%s", cpt_tmp_path("c39"));
  int tree = start(cpt_tmp_path("ctree"), "tree", "fake");
  int a = start(p36, "trace", "fake"), b = start(ptl, "trace", "fake"),
      c = start(p39, "trace", "fake");
  cp_fake_launch("k1", 100, 0, 7);
  cr_assert_eq(cp_session_deliver_counter(0, 10, 20, "sm_throughput%", 55.5),
               CPROTON_OK);
  cr_assert_eq(cp_session_deliver_counter(1, 30, 40, "dram_throughput%", 7),
               CPROTON_OK);
  cr_assert_eq(cp_session_deliver_counter(0, 20, 10, "x%", 1), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "ends (10 ns) before it begins"));
  cr_assert_eq(cp_session_deliver_counter(0, 10, 20, "x%", NAN),
               CPROTON_EINVAL);
  cr_assert_eq(cp_session_deliver_counter(0, 10, 20, NULL, 1), CPROTON_EINVAL);
  cr_assert_eq(cproton_session_finalize(a, NULL), CPROTON_OK);
  snprintf(full, sizeof full, "%s.chrome_trace", p36);
  cr_assert_eq(counter_events(full, got, sizeof got), 2);
  cr_assert_str_eq(got, "sm_throughput%@1=55.5 dram_throughput%@2=7");
  cr_assert_eq(cproton_session_finalize(b, "chrome_timeline"), CPROTON_OK);
  snprintf(full, sizeof full, "%s.chrome_trace", ptl);
  cr_assert_eq(counter_events(full, got, sizeof got), 2);
  json_t *j = cpt_load_json(full);
  char *text = json_dumps(j, JSON_COMPACT);
  cr_assert(strstr(text, "\"pid\":2,\"args\":{\"name\":\"GPU 1\"}"),
            "a GPU with counters only is named: %s", text);
  free(text);
  json_decref(j);
  cproton_set_proton_compat(CPROTON_PROTON_3_9);
  int rc = cproton_session_finalize(c, NULL);
  cproton_set_proton_compat(CPROTON_PROTON_3_6);
  cr_assert_eq(rc, CPROTON_OK);
  snprintf(full, sizeof full, "%s.chrome_trace", p39);
  cr_assert_eq(counter_events(full, got, sizeof got), 2);
  cr_assert_str_eq(got,
                   "GPU 0 sm_throughput%@0=55.5 GPU 1 dram_throughput%@0=7");
  cr_assert_eq(cproton_session_finalize(tree, NULL), CPROTON_OK);
  /* with only tree sessions active a sample is checked and goes nowhere */
  tree = start(cpt_tmp_path("ctree2"), "tree", "fake");
  cr_assert_eq(cp_session_deliver_counter(0, 1, 2, "sm_throughput%", 1),
               CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(tree, NULL), CPROTON_OK);
}

Test(core_session, trace_is_protons_layout_by_default, .init = reset) {
  const char *path = cpt_tmp_path("pl");
  int sid = start(path, "trace", "fake");
  cproton_scope_enter("step", NULL);
  cp_fake_launch("k1", 100, 0, 7);
  cproton_scope_exit("step");
  cp_fake_launch("k2", 100, 1, 9);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.chrome_trace", path);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j);
  json_t *events = json_object_get(j, "traceEvents"), *e;
  cr_assert_eq(json_array_size(events), 2, "kernel events only");
  const char *want[2][3] = {{"ROOT", "step", "k1"}, {"ROOT", "k2", NULL}};
  size_t i;
  json_array_foreach(events, i, e) {
    cr_assert_str_eq(json_string_value(json_object_get(e, "cat")), "kernel");
    json_t *stack = json_object_get(json_object_get(e, "args"), "call_stack");
    for (size_t k = 0; k < 3 && want[i][k]; k++)
      cr_assert_str_eq(json_string_value(json_array_get(stack, k)), want[i][k]);
  }
  json_decref(j);
}

Test(core_session, ops_name_kernels_and_ignore_states, .init = reset) {
  const char *path = cpt_tmp_path("ops.hatchet");
  int sid = start(path, NULL, "fake");
  cproton_scope_enter("s", NULL);
  cproton_state_enter("warm");
  cr_assert_eq(cproton_op_enter("matmul_128"), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_double(CPROTON_CURRENT_OP, "flops", 2.0),
               CPROTON_OK);
  cp_fake_launch("real_kernel_name", 9, 0, 0);
  cr_assert_eq(cproton_op_exit(), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_double(CPROTON_CURRENT_OP, "flops", 1.0),
               CPROTON_ESTATE);
  cproton_state_exit();
  cproton_scope_exit("s");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"flops\":0,\"time (ns)\":0},\"children\":["
      "{\"frame\":{\"name\":\"s\",\"type\":\"function\"},\"metrics\":{},"
      "\"children\":[{\"frame\":{\"name\":\"matmul_128\",\"type\":"
      "\"function\"},\"metrics\":{\"count\":1,\"device_id\":\"0\","
      "\"device_type\":\"CUDA\",\"flops\":2.0,\"time (ns)\":9},"
      "\"children\":[]}]}]},{}]");
}

Test(core_session, cpu_timed_scopes, .init = reset) {
  int sid = start(cpt_tmp_path("timed"), NULL, "none");
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(cproton_cpu_timed_scope_enter("work", NULL), CPROTON_OK);
    usleep(2000);
    cr_assert_eq(cproton_scope_exit("work"), CPROTON_OK);
  }
  char *json;
  cr_assert_eq(cproton_session_data_json(sid, &json, NULL), CPROTON_OK);
  json_t *j = cpt_parse_json(json);
  cproton_free(json);
  json_t *work = json_array_get(json_object_get(json_array_get(j, 0), "children"), 0);
  json_int_t t = json_integer_value(json_object_get(json_object_get(work, "metrics"), "cpu_time (ns)"));
  cr_assert(t >= 4000000 && t < 400000000, "two 2 ms sleeps, got %lld ns", (long long)t);
  json_decref(j);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

/* ---- other threads --------------------------------------------------------- */

static void *launch_once(void *name) {
  cp_fake_launch(name, 5, 0, 0);
  return NULL;
}

static void launch_in_thread(const char *name) {
  pthread_t th;
  pthread_create(&th, NULL, launch_once, (void *)name);
  pthread_join(th, NULL);
}

/* A thread without scopes follows the starting thread's live stack (not a
 * copy taken at its first use); after cp_session_threads_independent (the
 * injection mode) it launches under ROOT. */
Test(core_session, threads_follow_main_live_stack, .init = reset) {
  const char *path = cpt_tmp_path("threads_main");
  int sid = start(path, NULL, "fake");
  cproton_scope_enter("iter1", NULL);
  launch_in_thread("a");
  cproton_scope_exit("iter1");
  cproton_scope_enter("iter2", NULL);
  launch_in_thread("b");
  cp_session_threads_independent();
  launch_in_thread("c");
  cproton_scope_exit("iter2");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  assert_profile(full,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"time (ns)\":0},\"children\":["
      KERNEL("c", 1, 5) ","
      "{\"frame\":{\"name\":\"iter1\",\"type\":\"function\"},\"metrics\":{},"
      "\"children\":[" KERNEL("a", 1, 5) "]},"
      "{\"frame\":{\"name\":\"iter2\",\"type\":\"function\"},\"metrics\":{},"
      "\"children\":[" KERNEL("b", 1, 5) "]}]},{}]");
}

/* ---- the "python" source's path memo (core/context.c, issue 28) ---------- */

static uint32_t src_ids[8];
static size_t src_n;

static size_t scripted_source(void *user, uint32_t *ids, size_t max) {
  (void)user;
  size_t n = src_n < max ? src_n : max;
  memcpy(ids, src_ids, n * sizeof *ids);
  return n;
}

/* Launches kernel `k` with the source returning the path `names` (a
 * space-separated list of frame names, outermost first). */
static void launch_on_path(const char *names, const char *k) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", names);
  src_n = 0;
  for (char *p = strtok(buf, " "); p; p = strtok(NULL, " "))
    cr_assert_eq(cproton_frame_intern(p, &src_ids[src_n++]), CPROTON_OK);
  cp_fake_launch(k, 1, 0, 0);
}

static char *python_session(const char *stem, void (*body)(void)) {
  const char *path = cpt_tmp_path(stem);
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = path, o.backend = "fake", o.context = "python";
  int sid = -1;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK, "%s", cproton_last_error());
  cp_fake_add_device(0);
  body();
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j);
  char *lines = cpt_profile_lines(j, 0);
  json_decref(j);
  return lines;
}

/* Starts and ends on one path: the next session's first launch finds the
 * memo of this one's last. */
static void interleaved_paths(void) {
  for (int i = 0; i < 2; i++) {
    launch_on_path("main other fwd", "e");
    launch_on_path("main step fwd", "a");
    launch_on_path("main step bwd", "b");  /* innermost differs */
    launch_on_path("main step", "c");      /* shallower */
    launch_on_path("main step fwd mm", "d"); /* deeper */
    launch_on_path("", "f");               /* no frames: ROOT */
    launch_on_path("main other fwd", "e"); /* an outer frame differs */
  }
}

/* A repeated path reuses the thread's memo of nodes; every change of the
 * path, at any depth, lands elsewhere; the memo does not outlive the tree,
 * which the last finalize frees (the second session would read freed nodes). */
Test(core_session, python_path_memo_follows_the_path, .init = reset) {
  cr_assert_eq(cproton_context_register("python", scripted_source, NULL), CPROTON_OK);
  const char *want = "/f=2\n/main/other/fwd/e=4\n/main/step/bwd/b=2\n/main/step/c=2\n"
                     "/main/step/fwd/a=2\n/main/step/fwd/mm/d=2\n";
  for (int round = 0; round < 2; round++) {
    unsigned compactions = cp_session_compactions();
    char *got = python_session(round ? "memo_b" : "memo_a", interleaved_paths);
    cr_assert_str_eq(got, want);
    free(got);
    cr_assert_eq(cp_session_compactions(), compactions + 1); /* the tree was freed */
  }
  cproton_context_register("python", NULL, NULL);
}
