/* backend_instr_runtime_test.c -- the instrumentation runtime without a
 * GPU: Proton mode strings, and synthetic profile buffers delivered into
 * sessions (tree metrics under kernel -> scope -> child, trace regions). */
#include <criterion/criterion.h>
#include <string.h>

#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "instrument/layout.h"
#include "testutil.h"

Test(instr_mode, proton_mode_strings) {
  cproton_ptx_options o;
  cr_assert_eq(cproton_instr_mode_options(NULL, &o), CPROTON_OK);
  cr_assert_eq(o.buffer, CPROTON_BUFFER_SHARED);
  cr_assert_eq(o.counter, CPROTON_COUNTER_CLOCK64);
  cr_assert_eq(cproton_instr_mode_options(
                   "default:metric_type=cycle:sampling_strategy=selective:"
                   "sampling_options=0,2:granularity=warp_group:"
                   "buffer_strategy=circular:buffer_type=global:"
                   "buffer_size=4096:optimizations=clock32",
                   &o), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(o.buffer, CPROTON_BUFFER_GLOBAL);
  cr_assert_eq(o.granularity, CPROTON_GRANULARITY_WARPGROUP);
  cr_assert_eq(o.sample_mask, 5u);
  cr_assert_eq(o.buffer_size, 4096u);
  cr_assert_eq(o.counter, CPROTON_COUNTER_CLOCK);
  cr_assert_eq(cproton_instr_mode_options("default:granularity=warp_group_2", &o), CPROTON_OK);
  cr_assert_eq(o.granularity, CPROTON_GRANULARITY_WARPGROUP_2);
  cr_assert_eq(cproton_instr_mode_options("default:granularity=GRANULARITY.WARP_8", &o), CPROTON_OK);
  cr_assert_eq(o.granularity, CPROTON_GRANULARITY_WARP_8);
  cr_assert_eq(cproton_instr_mode_options("default:granularity=warp_group_3", &o), CPROTON_EINVAL);
  /* Python's enum spellings, as str(InstrumentationMode) may print them */
  cr_assert_eq(cproton_instr_mode_options("default:buffer_type=BUFFER_TYPE.GLOBAL", &o),
               CPROTON_OK);
  cr_assert_eq(o.buffer, CPROTON_BUFFER_GLOBAL);
  cr_assert_eq(cproton_instr_mode_options("default:buffer_type=texture", &o),
               CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "texture"));
  cr_assert_eq(cproton_instr_mode_options("fancy", &o), CPROTON_EINVAL);
  cr_assert_eq(cproton_instr_mode_options("default:oops", &o), CPROTON_EINVAL);
  cr_assert_eq(cproton_instr_mode_options("default:sampling_options=x", &o),
               CPROTON_EINVAL);
  /* optimizations: Proton's four names, comma-separated; others refused */
  unsigned f = 99;
  cr_assert_eq(cproton_instr_mode_decode_flags(
                   "default:optimizations=clock32,time_shift,sched_stores,sched_barriers", &f),
               CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(f, CPROTON_DECODE_TIME_SHIFT);
  cr_assert_eq(cproton_instr_mode_decode_flags("default:optimizations=clock32", &f), CPROTON_OK);
  cr_assert_eq(f, 0u);
  cr_assert_eq(cproton_instr_mode_options("default:optimizations=clock32,turbo", &o), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "turbo"));
  /* reduce: where tree-mode launches are decoded; the device by default */
  int dev = -1;
  cr_assert_eq(cproton_instr_mode_reduce("default", &dev), CPROTON_OK);
  cr_assert_eq(dev, 1);
  cr_assert_eq(cproton_instr_mode_reduce("default:buffer_type=global:reduce=host", &dev), CPROTON_OK);
  cr_assert_eq(dev, 0);
  cr_assert_eq(cproton_instr_mode_reduce("default:reduce=device", &dev), CPROTON_OK);
  cr_assert_eq(dev, 1);
  cr_assert_eq(cproton_instr_mode_reduce("default:reduce=gpu", &dev), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "device, host"), "%s", cproton_last_error());
  cr_assert_eq(cproton_instr_mode_options("default:reduce=host", &o), CPROTON_OK, "an option the pass ignores");
}

/* buffer_strategy: Proton's two values (and its enum spelling); the pass
 * option follows, anything else is refused naming the option and both. */
Test(instr_mode, buffer_strategy) {
  cproton_ptx_options o;
  cr_assert_eq(cproton_instr_mode_options("default", &o), CPROTON_OK);
  cr_assert_eq(o.strategy, CPROTON_STRATEGY_CIRCULAR);
  cr_assert_eq(cproton_instr_mode_options("default:buffer_strategy=flush", &o), CPROTON_OK,
               "%s", cproton_last_error());
  cr_assert_eq(o.strategy, CPROTON_STRATEGY_FLUSH);
  cr_assert_eq(cproton_instr_mode_options("default:buffer_strategy=BUFFER_STRATEGY.FLUSH:buffer_type=shared", &o),
               CPROTON_OK);
  cr_assert_eq(o.strategy, CPROTON_STRATEGY_FLUSH);
  cr_assert_eq(o.buffer, CPROTON_BUFFER_SHARED, "the mode keeps buffer_type; the pass overrides it");
  cr_assert_eq(cproton_instr_mode_options("mma:buffer_strategy=circular", &o), CPROTON_OK);
  cr_assert_eq(o.strategy, CPROTON_STRATEGY_CIRCULAR);
  static const char *const bad[] = {"default:buffer_strategy=flsuh", "default:buffer_strategy=",
                                    "default:buffer_strategy=flush,circular", "default:buffer_strategy=periodic"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(cproton_instr_mode_options(bad[i], &o), CPROTON_EINVAL, "%s", bad[i]);
    const char *e = cproton_last_error();
    cr_assert(strstr(e, "buffer_strategy") && strstr(e, "valid: circular, flush"), "%s: %s", bad[i], e);
  }
}

static const char *const names[] = {"outer", "inner"};
static const int32_t parents[] = {-1, 0};

static cproton_buffer_layout layout(void) {
  cproton_buffer_layout l;
  memset(&l, 0, sizeof l);
  l.n_units = 2;
  l.segment_bytes = 64;
  l.header_bytes = cp_layout_header_bytes(2);
  l.per_cta_bytes = l.header_bytes + 2 * 64;
  l.counter = CPROTON_COUNTER_CLOCK64;
  l.n_scopes = 2;
  l.scope_names = names;
  l.scope_parents = parents;
  l.unit_warp[0] = 0;
  l.unit_warp[1] = 1;
  return l;
}

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* One CTA; each unit records outer[0,100) with inner[10,30) inside. At 2
 * cycles per ns the CTA's finalize comes 50 ns after its start. */
static void fill(unsigned char *buf, const cproton_buffer_layout *l) {
  memset(buf, 0, l->per_cta_bytes);
  put32(buf + CP_HDR_MAGIC, CP_LAYOUT_MAGIC);
  buf[CP_HDR_VERSION] = CP_LAYOUT_VERSION;
  buf[CP_HDR_COUNTER] = CPROTON_COUNTER_CLOCK64;
  put32(buf + CP_HDR_SM, 5);
  put64(buf + CP_HDR_START_TIME, 1000000);
  put64(buf + CP_HDR_START_CTR, 5000);
  put64(buf + CP_HDR_FIN_TIME, 1000050);
  put64(buf + CP_HDR_END_TIME, 1000060);
  put32(buf + CP_HDR_N_UNITS, 2);
  put32(buf + CP_HDR_SEG_BYTES, 64);
  put32(buf + CP_HDR_N_ACTIVE, 2);
  const uint64_t at[4] = {0, 10, 30, 100};
  const uint32_t tag[4] = {cp_layout_tag(0, 0), cp_layout_tag(1, 0),
                           cp_layout_tag(1, 1), cp_layout_tag(0, 1)};
  for (uint32_t u = 0; u < 2; u++) {
    put32(buf + CP_HDR_COUNTS + 4 * u, 4);
    for (int r = 0; r < 4; r++)
      put64(buf + l->header_bytes + u * 64 + 8 * r,
            ((uint64_t)tag[r] << 48) | (5000 + at[r]));
  }
}

static void reset(void) { cp_session_reset_all(); }

/* Session `sid`'s tree as JSON, before its finalize. */
static json_t *tree_of(int sid) {
  char *json;
  cr_assert_eq(cproton_session_data_json(sid, &json, NULL), CPROTON_OK);
  json_t *j = cpt_parse_json(json);
  cproton_free(json);
  return j;
}

/* A tree session named `name` on the "none" backend (no driver here). */
static int tree_session(const char *name) {
  int sid = cpt_start_session(cpt_tmp_path(name), "none", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

Test(instr_runtime, host_buffers_land_under_kernel_scopes, .init = reset) {
  cproton_buffer_layout l = layout();
  cproton_instr_kernel *k;
  cr_assert_eq(cproton_instr_kernel_new("mm_kernel", &l, &k), CPROTON_OK);
  unsigned char buf[512];
  fill(buf, &l);
  int sid = tree_session("instr");
  cproton_scope_enter("step", NULL);
  for (int launch = 0; launch < 3; launch++)
    cr_assert_eq(cproton_instr_record_host(k, buf, l.per_cta_bytes, 0),
                 CPROTON_OK, "%s", cproton_last_error());
  cproton_scope_exit("step");
  json_t *j = tree_of(sid);
  json_t *step = json_array_get(json_object_get(json_array_get(j, 0), "children"), 0);
  json_t *kern = json_array_get(json_object_get(step, "children"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(kern, "frame"), "name")), "mm_kernel");
  json_t *outer = json_array_get(json_object_get(kern, "children"), 0);
  json_t *m = json_object_get(outer, "metrics");
  cr_assert_eq(json_integer_value(json_object_get(m, "cycles")), 3 * 2 * 100);
  cr_assert_eq(json_integer_value(json_object_get(m, "count")), 3 * 2);
  cr_assert_float_eq(json_real_value(json_object_get(m, "normalized_cycles")), 300.0, 1e-9);
  cr_assert_float_eq(json_real_value(json_object_get(m, "normalized_time (ns)")), 150.0, 1e-9,
                     "100 cycles at the measured 2 cycles/ns, 3 launches");
  cr_assert_str_eq(json_string_value(json_object_get(m, "device_type")), "1",
                   "Proton writes a cycle metric's device type as its enum number");
  json_t *inner = json_array_get(json_object_get(outer, "children"), 0);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(inner, "metrics"), "cycles")), 3 * 2 * 20);
  json_decref(j);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_stats st;
  cproton_instr_get_stats(&st);
  cr_assert_geq(st.decoded, 3);
  cproton_instr_kernel_free(k);
}

/* A trace session (backend "none") that receives one host buffer of
 * mm_kernel (2 warps x outer/inner) and is finalized as `format`; returns
 * the output's base name. */
static const char *trace_one_buffer(const char *stem, const char *format) {
  cproton_buffer_layout l = layout();
  cproton_instr_kernel *k;
  cr_assert_eq(cproton_instr_kernel_new("mm_kernel", &l, &k), CPROTON_OK);
  unsigned char buf[512];
  fill(buf, &l);
  const char *name = cpt_tmp_path(stem);
  int sid = cpt_start_session(name, "none", "trace", NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  cproton_scope_enter("test", NULL); /* a CPU scope: in the call stack only */
  cr_assert_eq(cproton_instr_record_host(k, buf, l.per_cta_bytes, 0), CPROTON_OK);
  cproton_scope_exit("test");
  cr_assert_eq(cproton_session_finalize(sid, format), CPROTON_OK, "%s",
               cproton_last_error());
  cproton_instr_kernel_free(k);
  return name;
}

Test(instr_runtime, trace_regions_per_warp_and_line, .init = reset) {
  const char *name = trace_one_buffer("instr_trace", NULL);
  char path[512];
  snprintf(path, sizeof path, "%s.chrome_trace", name);
  json_t *j = cpt_load_json(path);
  cr_assert_not_null(j);
  json_t *events = json_object_get(j, "traceEvents"), *e;
  size_t i;
  int regions = 0, inner_line1 = 0;
  json_array_foreach(events, i, e) {
    if (strcmp(json_string_value(json_object_get(e, "cat")), "mm_kernel"))
      continue;
    regions++;
    cr_assert_str_eq(json_string_value(json_object_get(e, "pid")), "mm_kernel Core5 CTA0");
    if (!strcmp(json_string_value(json_object_get(e, "name")), "inner")) {
      inner_line1 += strstr(json_string_value(json_object_get(e, "tid")), "(line 1)") != NULL;
      cr_assert_float_eq(json_real_value(json_object_get(e, "dur")), 0.010, 1e-9,
                         "20 cycles at 2 cycles/ns");
    }
  }
  cr_assert_eq(regions, 4, "2 warps x 2 scopes");
  cr_assert_eq(json_array_size(events), 4, "Proton's layout: the regions and nothing else");
  cr_assert_eq(inner_line1, 2);
  /* Proton's order (SM, CTA, warp, start), and the host's call stack up to
   * the kernel, as Proton's trace writes them */
  const char *order[4][2] = {{"outer", "warp 0 (line 0)"}, {"inner", "warp 0 (line 1)"},
                             {"outer", "warp 1 (line 0)"}, {"inner", "warp 1 (line 1)"}};
  for (size_t r = 0; r < 4; r++) {
    e = json_array_get(events, r);
    cr_assert_str_eq(json_string_value(json_object_get(e, "name")), order[r][0]);
    cr_assert_str_eq(json_string_value(json_object_get(e, "tid")), order[r][1]);
    json_t *stack = json_object_get(json_object_get(e, "args"), "call_stack");
    cr_assert_str_eq(json_string_value(json_array_get(stack, json_array_size(stack) - 1)), "mm_kernel");
    cr_assert_str_eq(json_string_value(json_array_get(stack, json_array_size(stack) - 2)), "test");
  }
  json_decref(j);
}

/* Proton 3.9 writes its CTA's times in every region's args (test_event_args):
 * init 1000000, finalize 1000050, copy-out done 1000060 (fill). Proton 3.6
 * writes the call stack alone. */
Test(instr_runtime, trace_regions_carry_cta_times_under_39, .init = reset) {
  for (int v39 = 0; v39 < 2; v39++) {
    cproton_set_proton_compat(v39 ? CPROTON_PROTON_3_9 : CPROTON_PROTON_3_6);
    const char *name = trace_one_buffer(v39 ? "instr_args39" : "instr_args36", NULL);
    cproton_set_proton_compat(CPROTON_PROTON_3_6);
    char path[512];
    snprintf(path, sizeof path, "%s.chrome_trace", name);
    json_t *j = cpt_load_json(path);
    cr_assert_not_null(j);
    json_t *events = json_object_get(j, "traceEvents"), *e;
    size_t i;
    cr_assert_eq(json_array_size(events), 4);
    json_array_foreach(events, i, e) {
      json_t *args = json_object_get(e, "args");
      cr_assert_not_null(json_object_get(args, "call_stack"));
      if (!v39) {
        cr_assert_eq(json_object_size(args), 1, "Proton 3.6: the call stack alone");
        continue;
      }
      cr_assert_eq(json_integer_value(json_object_get(args, "Init Time (ns)")), 1000000);
      cr_assert_eq(json_integer_value(json_object_get(args, "Post Final Time (ns)")), 1000060);
      cr_assert_eq(json_integer_value(json_object_get(args, "Finalization Time (ns)")), 10);
      cr_assert_float_eq(json_number_value(json_object_get(args, "Frequency (MHz)")), 1000.0, 1e-9);
    }
    json_decref(j);
  }
}

/* fill's CTA with an event "ev" besides "outer" on unit 0: unit 0 starts ev
 * at 10, unit 1 ends it at 30 (a cross-warp pair), then starts and ends
 * it itself at 60 and 70. */
static void fill_events(unsigned char *buf, const cproton_buffer_layout *l) {
  fill(buf, l);
  const uint64_t at[2][3] = {{0, 10, 100}, {30, 60, 70}};
  const uint32_t tag[2][3] = {{cp_layout_tag(0, 0), cp_layout_tag(1, 0), cp_layout_tag(0, 1)},
                              {cp_layout_tag(1, 1), cp_layout_tag(1, 0), cp_layout_tag(1, 1)}};
  for (uint32_t u = 0; u < 2; u++) {
    put32(buf + CP_HDR_COUNTS + 4 * u, 3);
    for (int r = 0; r < 3; r++)
      put64(buf + l->header_bytes + u * 64 + 8 * r, ((uint64_t)tag[u][r] << 48) | (5000 + at[u][r]));
  }
}

/* Proton 3.9 writes an event that two warps recorded as two flow instants
 * bound by a bind_id, each on its warp's line 0, and one that a single
 * warp recorded as a slice of cat "async" (test_gluon_warp_specialized_event);
 * Proton 3.6's layout writes both as slices of the kernel's cat. */
Test(instr_runtime, cross_warp_events_are_flow_links_under_39, .init = reset) {
  static const char *const ev_names[] = {"outer", "ev"};
  static const int32_t ev_parents[] = {-1, CPROTON_SCOPE_PARENT_EVENT};
  for (int v39 = 0; v39 < 2; v39++) {
    cproton_buffer_layout l = layout();
    l.scope_names = ev_names;
    l.scope_parents = ev_parents;
    cproton_instr_kernel *k;
    cr_assert_eq(cproton_instr_kernel_new("mm_kernel", &l, &k), CPROTON_OK);
    unsigned char buf[512];
    fill_events(buf, &l);
    cproton_set_proton_compat(v39 ? CPROTON_PROTON_3_9 : CPROTON_PROTON_3_6);
    const char *name = cpt_tmp_path(v39 ? "instr_flow39" : "instr_flow36");
    int sid = cpt_start_session(name, "none", "trace", NULL);
    cr_assert_geq(sid, 0, "%s", cproton_last_error());
    cr_assert_eq(cproton_instr_record_host(k, buf, l.per_cta_bytes, 0), CPROTON_OK);
    cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s", cproton_last_error());
    cproton_set_proton_compat(CPROTON_PROTON_3_6);
    cproton_instr_kernel_free(k);
    char path[512];
    snprintf(path, sizeof path, "%s.chrome_trace", name);
    json_t *j = cpt_load_json(path), *e;
    cr_assert_not_null(j);
    json_t *events = json_object_get(j, "traceEvents");
    size_t i;
    int flows = 0, async = 0, scopes = 0;
    json_int_t bind[2] = {-1, -1};
    json_array_foreach(events, i, e) {
      const char *cat = json_string_value(json_object_get(e, "cat"));
      const char *tid = json_string_value(json_object_get(e, "tid"));
      json_t *args = json_object_get(e, "args");
      if (!strcmp(cat, "flow")) {
        int in = json_is_true(json_object_get(e, "flow_in"));
        cr_assert(in != json_is_true(json_object_get(e, "flow_out")));
        cr_assert_str_eq(tid, in ? "warp 1 (line 0)" : "warp 0 (line 0)");
        cr_assert_float_eq(json_number_value(json_object_get(e, "dur")), 0.0, 1e-12);
        bind[in] = json_integer_value(json_object_get(e, "bind_id"));
        cr_assert_null(json_object_get(args, "Init Time (ns)"));
        flows++;
      } else if (!strcmp(cat, "async")) {
        cr_assert(strstr(tid, "warp 1 ") == tid, "%s", tid);
        cr_assert_float_eq(json_real_value(json_object_get(e, "dur")), 0.005, 1e-9, "10 cycles at 2/ns");
        cr_assert_null(json_object_get(args, "Init Time (ns)"), "Proton 3.9 writes the call stack alone");
        async++;
      } else {
        cr_assert_str_eq(cat, "mm_kernel");
        scopes++;
      }
    }
    if (v39) {
      cr_assert_eq(flows, 2);
      cr_assert_eq(async, 1);
      cr_assert_eq(scopes, 1);
      cr_assert_eq(bind[0], bind[1], "the two ends share one bind_id");
    } else {
      cr_assert_eq(flows + async, 0);
      cr_assert_eq(scopes, 3, "outer and two ev slices");
    }
    json_decref(j);
  }
}

/* Bytes `needle` occur in `hay` (binary-safe). */
static int contains(const char *hay, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp(hay + i, needle, k))
      return 1;
  return 0;
}

Test(instr_runtime, trace_regions_as_perfetto_warp_tracks, .init = reset) {
  const char *name = trace_one_buffer("instr_pf", "perfetto");
  char path[512];
  snprintf(path, sizeof path, "%s.pftrace", name);
  size_t n;
  char *pf = cpt_read_file(path, &n);
  cr_assert_not_null(pf);
  /* track names and interned scope names, as Perfetto's classes decode
   * them in tests/python/test_perfetto.py */
  cr_assert(contains(pf, n, "mm_kernel (warps)"));
  cr_assert(contains(pf, n, "CTA 0 (SM 5)"));
  cr_assert(contains(pf, n, "warp 0") && contains(pf, n, "warp 1"));
  cr_assert(contains(pf, n, "outer") && contains(pf, n, "inner"));
  free(pf);
}

/* Overwritten records: counted on the kernel's node; the surviving record
 * whose partner they were, on its scope's node. */
/* Thread 0's counter at its finalize (fin_ctr) measures the clock over the
 * same interval as the globaltimer: 200 counter units in 50 ns = 4 per ns,
 * whatever the other warps' last ends (100 here, which would say 2). */
Test(instr_runtime, finalize_counter_measures_the_clock, .init = reset) {
  cproton_buffer_layout l = layout();
  cproton_instr_kernel *k;
  cr_assert_eq(cproton_instr_kernel_new("mm_kernel", &l, &k), CPROTON_OK);
  unsigned char buf[512];
  fill(buf, &l);
  put32(buf + CP_HDR_FIN_CTR, 200);
  int sid = tree_session("instr_fin_ctr");
  cr_assert_eq(cproton_instr_record_host(k, buf, l.per_cta_bytes, 0), CPROTON_OK, "%s", cproton_last_error());
  json_t *j = tree_of(sid);
  json_t *kern = json_array_get(json_object_get(json_array_get(j, 0), "children"), 0);
  json_t *outer = json_array_get(json_object_get(kern, "children"), 0);
  cr_assert_float_eq(json_real_value(json_object_get(json_object_get(outer, "metrics"), "normalized_time (ns)")),
                     25.0, 1e-9, "100 cycles at 4 cycles/ns");
  json_decref(j);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(k);
}

Test(instr_runtime, drops_are_metrics, .init = reset) {
  cproton_buffer_layout l = layout();
  cproton_instr_kernel *k;
  cr_assert_eq(cproton_instr_kernel_new("mm_kernel", &l, &k), CPROTON_OK);
  unsigned char buf[512];
  fill(buf, &l);
  /* unit 1 wrote 10 records into its 8 slots: the first two (outer's start
   * and inner's start) were overwritten; slot 0..1 hold records 8, 9 */
  put32(buf + CP_HDR_COUNTS + 4, 10);
  for (int r = 4; r < 8; r++)
    put64(buf + l.header_bytes + 64 + 8 * r, ((uint64_t)cp_layout_tag(1, r % 2) << 48) | (5200 + 10 * r));
  put64(buf + l.header_bytes + 64, ((uint64_t)cp_layout_tag(0, 0) << 48) | 5300);
  put64(buf + l.header_bytes + 64 + 8, ((uint64_t)cp_layout_tag(0, 1) << 48) | 5310);
  int sid = tree_session("instr_drops");
  cr_assert_eq(cproton_instr_record_host(k, buf, l.per_cta_bytes, 0), CPROTON_OK, "%s", cproton_last_error());
  json_t *j = tree_of(sid);
  json_t *kern = json_array_get(json_object_get(json_array_get(j, 0), "children"), 0);
  json_t *km = json_object_get(kern, "metrics");
  cr_assert_eq(json_integer_value(json_object_get(km, "dropped_records")), 2);
  json_t *outer = json_array_get(json_object_get(kern, "children"), 0);
  json_t *inner = json_array_get(json_object_get(outer, "children"), 0);
  /* unit 1 kept: inner end(30), outer end(100), then inner x2 pairs, outer pair */
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(outer, "metrics"), "unpaired_records")), 1);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(inner, "metrics"), "unpaired_records")), 1);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(inner, "metrics"), "count")), 1 + 2);
  json_decref(j);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(k);
}

Test(instr_runtime, bad_arguments) {
  cproton_buffer_layout l = layout();
  cproton_instr_kernel *k = NULL;
  cr_assert_eq(cproton_instr_kernel_new(NULL, &l, &k), CPROTON_EINVAL);
  int32_t bad_parents[] = {1, -1};
  l.scope_parents = bad_parents;
  cr_assert_eq(cproton_instr_kernel_new("k", &l, &k), CPROTON_EINVAL);
  cr_assert_null(k);
  l = layout();
  cr_assert_eq(cproton_instr_kernel_new("k", &l, &k), CPROTON_OK);
  unsigned char junk[200] = {0};
  cr_assert_eq(cproton_instr_record_host(k, junk, 100, 0), CPROTON_EPARSE);
  cproton_instr_kernel_free(k);
  uint64_t p;
  cr_assert_neq(cproton_instr_alloc(64, 0, &p), CPROTON_OK, "no driver here");
}

/* A kernel whose second scope is an event: the runtime takes the layout,
 * and the event lands beside the scope under the kernel (not nested), with
 * its occurrences paired. */
Test(instr_runtime, events_are_top_level_nodes, .init = reset) {
  static const int32_t ev_parents[] = {-1, CPROTON_SCOPE_PARENT_EVENT};
  cproton_buffer_layout l = layout();
  l.scope_parents = ev_parents;
  cproton_instr_kernel *k;
  cr_assert_eq(cproton_instr_kernel_new("ev_kernel", &l, &k), CPROTON_OK, "%s", cproton_last_error());
  unsigned char buf[512];
  fill(buf, &l);
  int sid = tree_session("instr_events");
  cr_assert_eq(cproton_instr_record_host(k, buf, l.per_cta_bytes, 0), CPROTON_OK, "%s", cproton_last_error());
  json_t *j = tree_of(sid);
  json_t *kern = json_array_get(json_object_get(json_array_get(j, 0), "children"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(kern, "frame"), "name")), "ev_kernel");
  json_t *kids = json_object_get(kern, "children");
  cr_assert_eq(json_array_size(kids), 2, "the scope and the event, side by side");
  int seen = 0;
  for (size_t i = 0; i < 2; i++) {
    json_t *n = json_array_get(kids, i);
    const char *nm = json_string_value(json_object_get(json_object_get(n, "frame"), "name"));
    json_t *m = json_object_get(n, "metrics");
    if (!strcmp(nm, names[1])) {
      cr_assert_eq(json_integer_value(json_object_get(m, "count")), 2);
      cr_assert_eq(json_integer_value(json_object_get(m, "cycles")), 2 * 20);
      seen++;
    }
  }
  cr_assert_eq(seen, 1);
  json_decref(j);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cproton_instr_kernel_free(k);
}
