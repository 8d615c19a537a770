/* core_compat_test.c -- the Proton version the library follows
 * (cproton_set_proton_compat, core/compat.c) and each difference it makes,
 * under 3.6 and 3.9: the type-mismatch message, kernel metric names as user
 * metrics, the launch-metadata state's frames, Proton 3.9's Chrome trace. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fake/fake.h"
#include "core/device.h"
#include "core/cct.h"
#include "core/compat.h"
#include "core/session.h"
#include "core/trace.h"
#include "io/chrome_trace.h"
#include "io/sink.h"
#include "cproton/cproton.h"
#include "testutil.h"

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
  cproton_set_proton_compat(CPROTON_PROTON_3_6);
}

static void fini(void) { cproton_set_proton_compat(CPROTON_PROTON_3_6); }

static int start(const char *name, const char *data, const char *backend) {
  int sid = cpt_start_session(name, backend, data, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

/* "path key=value ..." per node, metrics as written (keys in byte order),
 * children in file order (byte order of names); appended to `out`. */
static void node_lines(json_t *node, const char *prefix, char *out, size_t size) {
  char path[512];
  const char *name = json_string_value(json_object_get(json_object_get(node, "frame"), "name"));
  snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", name ? name : "?");
  size_t k = strlen(out);
  k += (size_t)snprintf(out + k, size - k, "%s", path);
  const char *key;
  json_t *v;
  json_object_foreach(json_object_get(node, "metrics"), key, v) {
    if (json_is_string(v))
      k += (size_t)snprintf(out + k, size - k, " %s=%s", key, json_string_value(v));
    else if (strcmp(key, "time (ns)") == 0) /* the fake backend's times vary */
      k += (size_t)snprintf(out + k, size - k, " %s=%s", key, json_integer_value(v) ? "T" : "0");
    else
      k += (size_t)snprintf(out + k, size - k, " %s=%lld", key, (long long)json_integer_value(v));
  }
  snprintf(out + k, size - k, "\n");
  size_t i;
  json_t *child;
  json_array_foreach(json_object_get(node, "children"), i, child)
    node_lines(child, path, out, size);
}

static char *finalize_lines(int sid, const char *path) {
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s", cproton_last_error());
  json_t *j = cpt_load_json(path);
  cr_assert_not_null(j, "%s", path);
  char *lines = calloc(1, 8192);
  cr_assert_not_null(lines);
  node_lines(json_array_get(j, 0), "", lines, 8192);
  json_decref(j);
  return lines;
}

Test(core_compat, versions, .init = reset, .fini = fini) {
  cr_assert_eq(cproton_proton_compat(), CPROTON_PROTON_3_6, "3.6 by default");
  cr_assert_eq(cproton_set_proton_compat(CPROTON_PROTON_3_9), CPROTON_OK);
  cr_assert_eq(cproton_proton_compat(), CPROTON_PROTON_3_9);
  cr_assert_eq(cproton_set_proton_compat(39), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "unknown Proton version 39"));
  cr_assert_eq(cproton_proton_compat(), CPROTON_PROTON_3_9, "a refused value changes nothing");
}

static void type_mismatch(int version, const char *want) {
  reset();
  cproton_set_proton_compat(version);
  int sid = start(cpt_tmp_path("tm.hatchet"), NULL, "none");
  uint64_t id;
  cproton_scope_enter("s", &id);
  cr_assert_eq(cproton_metric_add_double(id, "a", 1.0), CPROTON_OK);
  cr_assert_neq(cproton_metric_add_int(id, "a", 1), CPROTON_OK);
  cr_assert_str_eq(cproton_last_error(), want);
  cproton_scope_exit("s");
  cproton_session_finalize(sid, NULL);
}

Test(core_compat, integers_are_int64_under_39, .init = reset, .fini = fini) {
  type_mismatch(CPROTON_PROTON_3_6,
                "Metric value type mismatch for valueId 0 (a): current=double, new=uint64_t");
  type_mismatch(CPROTON_PROTON_3_9,
                "Metric value type mismatch for valueId 0 (a): current=double, new=int64_t");
}

Test(core_compat, kernel_metric_names_under_39, .init = reset, .fini = fini) {
  const char *path = cpt_tmp_path("count.hatchet");
  int sid = start(path, NULL, "fake");
  uint64_t id;
  cproton_scope_enter("s", &id);
  cr_assert_eq(cproton_metric_add_int(id, "count", 1), CPROTON_EINVAL, "reserved under 3.6");
  cproton_scope_exit("s");
  cproton_session_finalize(sid, NULL);

  cproton_set_proton_compat(CPROTON_PROTON_3_9);
  sid = start(path, NULL, "fake");
  cproton_scope_enter("s", &id);
  cr_assert_eq(cproton_metric_add_int(id, "count", 1), CPROTON_OK, "%s", cproton_last_error());
  cp_fake_launch("k", 100, 0, 0);
  cproton_scope_exit("s");
  cr_assert_eq(cproton_metric_add_int(0, "count", 7), CPROTON_OK, "on ROOT too");
  char *lines = finalize_lines(sid, path);
  /* one key per name in the file itself (a JSON reader keeps the last of
   * duplicate keys, so the tree lines alone would not tell) */
  char *text = cpt_read_file(path, NULL);
  cr_assert_not_null(text);
  int n_count = 0;
  for (const char *p = text; (p = strstr(p, "\"count\"")); p++)
    n_count++;
  free(text);
  cr_assert_eq(n_count, 3, "ROOT, s and k: one \"count\" each, not %d", n_count);
  /* one "count" per node: the user's value where there is one (ROOT's
   * zeroed kernel count is replaced, as Proton 3.9's JSON keys are) */
  cr_assert_str_eq(lines, "ROOT count=7 time (ns)=0\n"
                          "ROOT/s count=1\n"
                          "ROOT/s/k count=1 device_id=0 device_type=CUDA time (ns)=T\n",
                   "%s", lines);
  free(lines);
}

Test(core_compat, metadata_state_is_two_frames_under_39, .init = reset, .fini = fini) {
  const char *path = cpt_tmp_path("meta.hatchet");
  for (int v = 0; v < 2; v++) {
    cproton_set_proton_compat(v ? CPROTON_PROTON_3_9 : CPROTON_PROTON_3_6);
    int sid = start(path, NULL, "fake");
    cproton_scope_enter("s", NULL);
    cproton_state_enter("__proton_launch_metadata:foo");
    cp_fake_launch("helper", 100, 0, 0);
    uint64_t inner;
    cproton_scope_enter("inner", &inner); /* a scope under the state: scope/state */
    cproton_metric_add_int(inner, "x", 1);
    cproton_scope_exit("inner");
    cproton_state_exit();
    cproton_state_enter("__proton_launch_metadata:"); /* no kernel name: one frame */
    cp_fake_launch("other", 100, 0, 0);
    cproton_state_exit();
    cproton_scope_exit("s");
    char *lines = finalize_lines(sid, path);
    const char *k = " count=1 device_id=0 device_type=CUDA time (ns)=T\n";
    char want[2048];
    if (v)
      snprintf(want, sizeof want, "ROOT count=0 time (ns)=0\nROOT/s\n"
               "ROOT/s/__proton_launch_metadata\nROOT/s/__proton_launch_metadata/foo\n"
               "ROOT/s/__proton_launch_metadata/foo/helper%s"
               "ROOT/s/__proton_launch_metadata:\nROOT/s/__proton_launch_metadata:/other%s"
               "ROOT/s/inner\nROOT/s/inner/__proton_launch_metadata\n"
               "ROOT/s/inner/__proton_launch_metadata/foo x=1\n", k, k);
    else
      snprintf(want, sizeof want, "ROOT count=0 time (ns)=0 x=0\nROOT/s\n"
               "ROOT/s/__proton_launch_metadata:\nROOT/s/__proton_launch_metadata:/other%s"
               "ROOT/s/__proton_launch_metadata:foo\nROOT/s/__proton_launch_metadata:foo/helper%s"
               "ROOT/s/inner\nROOT/s/inner/__proton_launch_metadata:foo x=1\n", k, k);
    cr_assert_str_eq(lines, want, "%s", lines);
    free(lines);
  }
}

/* Events of `cat` in the trace at `path`. */
static size_t count_cat(json_t *events, const char *cat) {
  size_t i, n = 0;
  json_t *e;
  json_array_foreach(events, i, e) {
    const char *c = json_string_value(json_object_get(e, "cat"));
    n += c && !strcmp(c, cat);
  }
  return n;
}

static json_t *find_event(json_t *events, const char *cat, const char *name) {
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    const char *c = json_string_value(json_object_get(e, "cat"));
    const char *n = json_string_value(json_object_get(e, "name"));
    if (c && n && !strcmp(c, cat) && !strcmp(n, name))
      return e;
  }
  return NULL;
}

static void assert_stack(json_t *e, const char *const *want, size_t n) {
  json_t *stack = json_object_get(json_object_get(e, "args"), "call_stack");
  cr_assert_eq(json_array_size(stack), n);
  for (size_t k = 0; k < n; k++)
    cr_assert_str_eq(json_string_value(json_array_get(stack, k)), want[k]);
}

Test(core_compat, chrome_trace_is_protons_39_layout, .init = reset, .fini = fini) {
  cproton_set_proton_compat(CPROTON_PROTON_3_9);
  const char *path = cpt_tmp_path("t39");
  int sid = start(path, "trace", "fake");
  uint64_t id3, id1;
  cproton_scope_enter("scope_3", &id3);
  cproton_metric_add_double(id3, "m3", 3.0);
  cproton_scope_enter("scope_1", &id1);
  cproton_metric_add_int(id1, "m1", 1);
  cp_fake_launch("foo", 100, 0, 7);
  cproton_scope_exit("scope_1");
  cproton_scope_enter("scope_4", NULL);
  cp_fake_launch("foo", 100, 0, 7);
  cproton_scope_exit("scope_4");
  cproton_scope_exit("scope_3");
  cp_fake_launch("bar", 100, 0, 7); /* at ROOT: no launching scope, no flow */
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.chrome_trace", path);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j);
  cr_assert(json_integer_value(json_object_get(j, "baseTimeNanoseconds")) > 1600000000000000000,
            "an epoch time in ns");
  json_t *events = json_object_get(j, "traceEvents");
  cr_assert_eq(count_cat(events, "kernel"), 3);
  cr_assert_eq(count_cat(events, "metric"), 2);
  cr_assert_eq(count_cat(events, "scope"), 1);
  cr_assert_eq(count_cat(events, "flow"), 4, "two launches inside scopes, s and f each");
  json_t *m1 = find_event(events, "metric", "scope_1: <m1, 1>");
  json_t *m3 = find_event(events, "metric", "scope_3: <m3, 3.000000>");
  json_t *s4 = find_event(events, "scope", "scope_4");
  cr_assert(m1 && m3 && s4);
  cr_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(json_object_get(m1, "args"), "metrics"), "m1")), "1");
  assert_stack(m1, (const char *[]){"ROOT", "scope_3", "scope_1"}, 3);
  assert_stack(s4, (const char *[]){"ROOT", "scope_3", "scope_4"}, 3);
  cr_assert(json_is_integer(json_object_get(json_object_get(s4, "args"), "scope_id")));
  json_t *bar = find_event(events, "kernel", "bar");
  cr_assert_not_null(bar);
  assert_stack(bar, (const char *[]){"ROOT", "bar"}, 2);
  cr_assert_eq(json_integer_value(json_object_get(bar, "tid")), 200007, "GPU lane 200000 + stream");
  cr_assert_eq(json_integer_value(json_object_get(bar, "pid")), 0);
  json_decref(j);

  /* a CPU-only trace: its events, no lane metadata */
  sid = start(path, "trace", "none");
  cproton_scope_enter("metric_only", &id1);
  cproton_metric_add_double(id1, "foo", 1.0);
  cproton_scope_exit("metric_only");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  j = cpt_load_json(full);
  events = json_object_get(j, "traceEvents");
  cr_assert_eq(json_array_size(events), 1);
  cr_assert_not_null(find_event(events, "metric", "metric_only: <foo, 1.000000>"));
  json_decref(j);
}

Test(core_compat, chrome_trace_keeps_36_layout_under_36, .init = reset, .fini = fini) {
  const char *path = cpt_tmp_path("t36");
  int sid = start(path, "trace", "fake");
  cproton_scope_enter("s", NULL);
  cp_fake_launch("foo", 100, 0, 0);
  cproton_scope_exit("s");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.chrome_trace", path);
  json_t *j = cpt_load_json(full);
  cr_assert_null(json_object_get(j, "baseTimeNanoseconds"));
  cr_assert_eq(json_array_size(json_object_get(j, "traceEvents")), 1, "kernel events only");
  json_decref(j);
}

Test(core_compat, hatchet_root_and_devices_follow_the_version, .init = reset, .fini = fini) {
  const char *path = cpt_tmp_path("root.hatchet");
  cp_fake_add_device(0);
  cp_fake_add_device(1);
  for (int v = 0; v < 2; v++) {
    cproton_set_proton_compat(v ? CPROTON_PROTON_3_9 : CPROTON_PROTON_3_6);
    int sid = start(path, NULL, "fake");
    uint64_t id;
    cproton_scope_enter("s", &id);
    cproton_metric_add_int(id, "x", 1);
    cp_fake_launch("k", 100, 0, 0); /* device 0 only */
    cproton_scope_exit("s");
    cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
    json_t *j = cpt_load_json(path);
    cr_assert_not_null(j);
    json_t *root = json_object_get(json_array_get(j, 0), "metrics");
    json_t *cuda = json_object_get(json_array_get(j, 1), "CUDA");
    if (v) { /* Proton 3.9: kernel zeros only, the devices kernels ran on */
      cr_assert_null(json_object_get(root, "x"));
      cr_assert_eq(json_object_size(cuda), 1);
      cr_assert_not_null(json_object_get(cuda, "0"));
    } else { /* Proton 3.6: a zero per inclusive metric, every device seen */
      cr_assert_eq(json_integer_value(json_object_get(root, "x")), 0);
      cr_assert_not_null(json_object_get(root, "x"));
      cr_assert_eq(json_object_size(cuda), 2);
    }
    cr_assert_not_null(json_object_get(root, "count"));
    json_decref(j);
  }
}

/* A trace built by hand: a CUDA graph replayed under scope "test0", its
 * kernels under <captured_at>/a/b/c, <captured_at>/a/b, <captured_at>/a and
 * a metric copy under c's metadata state, as the CUPTI backend delivers
 * them (graph id in `group`, the graph launch's correlation shared). */
Test(core_compat, chrome_trace_39_graph_lanes, .init = reset, .fini = fini) {
  cp_node *t0 = cp_cct_child_str(cp_cct_root(), "test0");
  cp_node *cap = cp_cct_child_str(t0, "<captured_at>");
  cp_node *a = cp_cct_child_str(cap, "a"), *b = cp_cct_child_str(a, "b");
  cp_node *c = cp_cct_child_str(b, "c");
  cp_node *meta = cp_cct_child_str(c, "__proton_launch_metadata");
  cp_node *kernels[4] = {cp_cct_child_str(c, "foo"), cp_cct_child_str(meta, "copy"),
                         cp_cct_child_str(b, "foo"), cp_cct_child_str(a, "foo")};
  cp_trace *t = cp_trace_new();
  cr_assert_not_null(t);
  /* the CPU scope the graph was launched in (on thread 1, around 900) */
  cp_event scope = {.kind = CP_EVENT_SCOPE, .start_ns = 850, .end_ns = 2000,
                    .name = t0->name, .node = t0->id, .u.scope.thread = 1};
  cr_assert_eq(cp_trace_append(t, &scope), CPROTON_OK);
  for (int i = 0; i < 4; i++) {
    cp_event e = {.kind = CP_EVENT_KERNEL, .start_ns = 1000 + 100 * (uint64_t)i,
                  .end_ns = 1050 + 100 * (uint64_t)i,
                  .name = kernels[i]->name, .node = kernels[i]->id,
                  .u.kernel = {.launch_ns = 900, .stream = 7,
                               .launch_thread = 1, .correlation = 42,
                               .graph_id = 3}};
    cr_assert_eq(cp_trace_append(t, &e), CPROTON_OK);
  }
  cp_sink *s;
  cr_assert_eq(cp_sink_memory(&s), CPROTON_OK);
  cr_assert_eq(cp_chrome_trace39_write(s, t, NULL), CPROTON_OK);
  char *text;
  size_t size;
  cr_assert_eq(cp_sink_close(s, 0, &text, &size), CPROTON_OK);
  json_t *j = cpt_parse_json(text);
  cr_assert_not_null(j, "%s", text);
  json_t *events = json_object_get(j, "traceEvents");
  size_t i;
  json_t *e;
  int graph_lane_named = 0, flows = 0;
  json_int_t flow_ids[2] = {-1, -1};
  double flow_s_ts = -1;
  char scopes[256] = "";
  json_array_foreach(events, i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *name = json_string_value(json_object_get(e, "name"));
    const char *cat = json_string_value(json_object_get(e, "cat"));
    json_int_t tid = json_integer_value(json_object_get(e, "tid"));
    if (!strcmp(ph, "M") && !strcmp(name, "thread_name"))
      graph_lane_named += !strcmp(json_string_value(json_object_get(json_object_get(e, "args"), "name")),
                                  "Graph: Stream 7") && tid == 100007;
    if (cat && !strcmp(cat, "scope") && tid == 100007) {
      double ts = json_number_value(json_object_get(e, "ts"));
      double dur = json_number_value(json_object_get(e, "dur"));
      snprintf(scopes + strlen(scopes), sizeof scopes - strlen(scopes), "%s[%.2f,%.2f] ", name, ts,
               ts + dur);
    }
    if (cat && !strcmp(cat, "flow")) {
      int start = !strcmp(ph, "s");
      flow_ids[start] = json_integer_value(json_object_get(e, "id"));
      if (start)
        flow_s_ts = json_number_value(json_object_get(e, "ts"));
      flows++;
    }
  }
  cr_assert_eq(graph_lane_named, 1);
  /* frames close when a kernel leaves them, at the last end so far; the
   * metadata copy is left out; times are us from the earliest event (900) */
  cr_assert_str_eq(scopes, "c[0.15,0.20] b[0.15,0.40] a[0.15,0.50] <captured_at>[0.15,0.50] ", "%s",
                   scopes);
  cr_assert_eq(flows, 2, "one flow for the graph launch (s and f), not one per kernel");
  cr_assert_eq(flow_ids[0], flow_ids[1]);
  cr_assert_float_eq(flow_s_ts, 0.0, 1e-9, "the flow starts where test0 does (ts 0), not at the launch");
  json_decref(j);
  free(text);
  cp_trace_free(t);
}

/* Proton 3.9 names its metric-copy kernels' frames "<metric>" (3.9's
 * test_trace_cudagraph_graph_scope_ranges, test_tensor_metrics_cudagraph);
 * cproton's copy kernel is named so under 3.9 only, other kernels never. */
Test(core_compat, metric_kernel_frame_follows_the_version, .init = reset, .fini = fini) {
  for (int v = 0; v < 2; v++) {
    cproton_set_proton_compat(v ? CPROTON_PROTON_3_9 : CPROTON_PROTON_3_6);
    cp_launch_site site = {0};
    cp_node *copy = cp_session_kernel_node(&site, CP_CONTEXT_SHADOW, CP_COMPAT_METRIC_KERNEL);
    cp_node *other = cp_session_kernel_node(&site, CP_CONTEXT_SHADOW, "foo");
    const char *want = v ? "<metric>" : CP_COMPAT_METRIC_KERNEL;
    cr_assert_eq(copy, cp_cct_child_str(cp_cct_root(), want), "version %d", v);
    cr_assert_neq(copy, cp_cct_child_str(cp_cct_root(), v ? CP_COMPAT_METRIC_KERNEL : "<metric>"));
    cr_assert_eq(other, cp_cct_child_str(cp_cct_root(), "foo"));
  }
}
