/* backend_cupti_pmexact_test.c -- `pmsampling:exact` (pm_exact.c,
 * pm_exact_ctx.c, pm_exact_map.c) against a fake CUPTI range profiler
 * that behaves as the CUPTI 13 headers describe it: while started, each
 * kernel run adds one auto range to the counter data image (at most
 * maxRangesPerPass; more are dropped and counted by DecodeData); ranges
 * are named by their index; EvaluateToGpuValues gives a range's values.
 * The "GPU" is the test: launch() calls the launch hook as the driver
 * callback would and then runs the kernel. Checks the range -> kernel
 * mapping in launch order, the storage contract, decoding when the image
 * is full, drops, graph launches, and CUPTI's refusals. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pm_exact.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

#define CTX ((CUcontext)0x1000)
#define OBJ ((CUpti_RangeProfiler_Object *)0x2000)
#define HOST ((cp_pm_host_object *)0x3000)
#define MAX_FAKE 64

/* ---- the fake GPU and CUPTI ------------------------------------------------ */

typedef struct fake_range {
  double value, ns; /* every metric's value, the duration */
} fake_range;

static fake_range image[MAX_FAKE]; /* ranges in the counter data image */
static size_t n_image, n_dropped, max_ranges, n_metrics;
static int started, n_stops, n_setconfigs, n_enables, n_disables;
static int range_mode, replay_mode, nesting;
static CUptiResult enable_result, add_result;
static const char *refused_metric; /* AddMetrics refuses a list holding it */
static CUcontext current;
static int primary_active;

static CUptiResult f_result_string(CUptiResult r, const char **s) {
  *s = r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
       : r == CUPTI_ERROR_HARDWARE_BUSY         ? "CUPTI_ERROR_HARDWARE_BUSY"
                                                : "CUPTI_ERROR_OTHER";
  return CUPTI_SUCCESS;
}
static CUptiResult f_device_id(CUcontext c, uint32_t *d) { (void)c; *d = 0; return CUPTI_SUCCESS; }
static CUptiResult f_init(CUpti_Profiler_Initialize_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult f_deinit(CUpti_Profiler_DeInitialize_Params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult f_chip(CUpti_Device_GetChipName_Params *p) {
  p->pChipName = "GH100";
  return CUPTI_SUCCESS;
}
static CUptiResult f_avail(CUpti_Profiler_GetCounterAvailability_Params *p) {
  if (!p->pCounterAvailabilityImage)
    p->counterAvailabilityImageSize = 32;
  return CUPTI_SUCCESS;
}
static CUptiResult f_host_init(cp_pm_host_init_params *p) {
  cr_assert_eq(p->profilerType, CP_PM_PROFILER_RANGE);
  cr_assert_str_eq(p->pChipName, "GH100");
  p->pHostObject = HOST;
  return CUPTI_SUCCESS;
}
static CUptiResult f_host_deinit(cp_pm_host_deinit_params *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult f_add(cp_pm_host_add_metrics_params *p) {
  for (size_t i = 0; i < p->numMetrics; i++)
    if (refused_metric && !strcmp(p->ppMetricNames[i], refused_metric))
      return CUPTI_ERROR_INVALID_METRIC_NAME;
  n_metrics = p->numMetrics;
  return add_result;
}
static CUptiResult f_image_size(cp_pm_host_image_size_params *p) {
  p->configImageSize = 100;
  return CUPTI_SUCCESS;
}
static CUptiResult f_image(cp_pm_host_image_params *p) {
  memset(p->pConfigImage, 7, p->configImageSize);
  return CUPTI_SUCCESS;
}
static CUptiResult f_passes(cp_pm_host_passes_params *p) { p->numOfPasses = 3; return CUPTI_SUCCESS; }
static CUptiResult f_evaluate(cp_pm_host_evaluate_params *p) {
  if (p->rangeIndex >= n_image || p->pHostObject != HOST)
    return CUPTI_ERROR_INVALID_PARAMETER;
  cr_assert_str_eq(p->ppMetricNames[p->numMetrics - 1], "gpu__time_duration.sum");
  if (p->numMetrics == 7) /* the default set: its first counter, intact */
    cr_assert_str_eq(p->ppMetricNames[0], "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  for (size_t i = 0; i + 1 < p->numMetrics; i++)
    p->pMetricValues[i] = image[p->rangeIndex].value + (double)i;
  p->pMetricValues[p->numMetrics - 1] = image[p->rangeIndex].ns;
  return CUPTI_SUCCESS;
}
static CUptiResult f_enable(CUpti_RangeProfiler_Enable_Params *p) {
  cr_assert_eq(p->ctx, current, "enabled with its context current");
  n_enables++;
  p->pRangeProfilerObject = OBJ;
  return enable_result;
}
static CUptiResult f_disable(CUpti_RangeProfiler_Disable_Params *p) { (void)p; n_disables++; return CUPTI_SUCCESS; }
static CUptiResult f_data_size(CUpti_RangeProfiler_GetCounterDataSize_Params *p) {
  max_ranges = p->maxNumOfRanges;
  p->counterDataSize = 64 + 16 * p->maxNumOfRanges;
  return CUPTI_SUCCESS;
}
static CUptiResult f_image_init(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p) {
  (void)p;
  n_image = n_dropped = 0;
  return CUPTI_SUCCESS;
}
static CUptiResult f_setconfig(CUpti_RangeProfiler_SetConfig_Params *p) {
  n_setconfigs++;
  range_mode = p->range;
  replay_mode = p->replayMode;
  nesting = p->numNestingLevels;
  cr_assert_eq(p->maxRangesPerPass, max_ranges);
  return CUPTI_SUCCESS;
}
static CUptiResult f_start(CUpti_RangeProfiler_Start_Params *p) { (void)p; started = 1; return CUPTI_SUCCESS; }
/* Set: Stop launches a kernel through the driver, as CUPTI or the driver
 * might from inside a decode (the launch hook is called again). */
static _Atomic(void *) reenter;
static CUptiResult f_stop(CUpti_RangeProfiler_Stop_Params *p) {
  void (*b)(void *, uint32_t, const char *, const cp_launch_site *, int) = atomic_load(&reenter);
  if (b) {
    cp_launch_site site = {0};
    b(CTX, 999, "internal", &site, 1);
    b(CTX, 999, "internal", NULL, 0);
  }
  started = 0;
  n_stops++;
  p->isAllPassSubmitted = 1;
  return CUPTI_SUCCESS;
}
static int decode_fails; /* DecodeData fails this many more times */
static CUptiResult f_decode(CUpti_RangeProfiler_DecodeData_Params *p) {
  if (decode_fails > 0 && decode_fails--)
    return CUPTI_ERROR_UNKNOWN;
  p->numOfRangeDropped = n_dropped;
  return CUPTI_SUCCESS;
}
static CUptiResult f_info(CUpti_RangeProfiler_GetCounterDataInfo_Params *p) {
  p->numTotalRanges = n_image;
  return CUPTI_SUCCESS;
}
static CUptiResult f_range_info(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *p) {
  static char names[MAX_FAKE][8];
  snprintf(names[p->rangeIndex % MAX_FAKE], 8, "%zu", p->rangeIndex);
  p->rangeName = names[p->rangeIndex % MAX_FAKE];
  return CUPTI_SUCCESS;
}
static CUresult f_getctx(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
static CUresult f_setctx(CUcontext c) { current = c; return CUDA_SUCCESS; }
static CUresult f_count(int *n) { *n = 1; return CUDA_SUCCESS; }
static CUresult f_device(CUdevice *d, int i) { *d = i; return CUDA_SUCCESS; }
static CUresult f_state(CUdevice d, unsigned *flags, int *active) {
  (void)d;
  *flags = 0;
  *active = primary_active;
  return CUDA_SUCCESS;
}
static CUresult f_retain(CUcontext *c, CUdevice d) { (void)d; *c = CTX; return CUDA_SUCCESS; }
static CUresult f_release(CUdevice d) { (void)d; return CUDA_SUCCESS; }
static CUresult f_sync(void) { return CUDA_SUCCESS; }

/* The GPU runs a kernel: one range while started (dropped past the image). */
static void run_kernel(double value, double ns) {
  if (!started)
    return;
  if (n_image == max_ranges) {
    n_dropped++;
    return;
  }
  image[n_image++] = (fake_range){value, ns};
}

static cp_loader_api api;
static cp_cupti_state st;
static void setup(void) {
  cp_session_reset_all();
  memset(&api, 0, sizeof api);
  api.cuptiGetResultString = f_result_string;
  api.cuptiGetDeviceId = f_device_id;
  api.cuptiProfilerInitialize = f_init;
  api.cuptiProfilerDeInitialize = f_deinit;
  api.cuptiDeviceGetChipName = f_chip;
  api.cuptiProfilerGetCounterAvailability = f_avail;
  api.cuptiProfilerHostInitialize = f_host_init;
  api.cuptiProfilerHostDeinitialize = f_host_deinit;
  api.cuptiProfilerHostConfigAddMetrics = f_add;
  api.cuptiProfilerHostGetConfigImageSize = f_image_size;
  api.cuptiProfilerHostGetConfigImage = f_image;
  api.cuptiProfilerHostGetNumOfPasses = f_passes;
  api.cuptiProfilerHostEvaluateToGpuValues = f_evaluate;
  api.cuptiRangeProfilerEnable = f_enable;
  api.cuptiRangeProfilerDisable = f_disable;
  api.cuptiRangeProfilerSetConfig = f_setconfig;
  api.cuptiRangeProfilerStart = f_start;
  api.cuptiRangeProfilerStop = f_stop;
  api.cuptiRangeProfilerDecodeData = f_decode;
  api.cuptiRangeProfilerGetCounterDataSize = f_data_size;
  api.cuptiRangeProfilerCounterDataImageInitialize = f_image_init;
  api.cuptiRangeProfilerGetCounterDataInfo = f_info;
  api.cuptiRangeProfilerCounterDataGetRangeInfo = f_range_info;
  api.cuCtxGetCurrent = f_getctx;
  api.cuCtxSetCurrent = f_setctx;
  api.cuDeviceGetCount = f_count;
  api.cuDeviceGet = f_device;
  api.cuDevicePrimaryCtxGetState = f_state;
  api.cuDevicePrimaryCtxRetain = f_retain;
  api.cuDevicePrimaryCtxRelease_v2 = f_release;
  api.cuCtxSynchronize = f_sync;
  memset(&st, 0, sizeof st);
  n_image = n_dropped = max_ranges = n_metrics = 0;
  started = n_stops = n_setconfigs = n_enables = n_disables = 0;
  range_mode = replay_mode = nesting = 0;
  enable_result = add_result = CUPTI_SUCCESS;
  refused_metric = NULL;
  atomic_store(&reenter, NULL);
  decode_fails = 0;
  current = CTX;
  primary_active = 1;
  cpt_log_capture(CPROTON_LOG_DEBUG);
}

static void teardown(void) {
  cp_pm_exact_stop();
  cp_session_reset_all();
  cpt_log_release();
}

typedef void (*bracket_fn)(void *, uint32_t, const char *, const cp_launch_site *, int);

/* Starts a session and the mode with the default counters and `ranges`,
 * named through buffers overwritten once the mode started (it copies). */
static bracket_fn start(const char *path, int *sid, size_t ranges) {
  *sid = cpt_start_session(path, "fake", NULL, NULL);
  cr_assert_geq(*sid, 0, "%s", cproton_last_error());
  size_t n;
  const cp_pm_metric *d = cp_pm_metrics_defaults(&n);
  char names[8][2][128];
  cp_pm_metric m[8];
  cr_assert_leq(n, 8);
  for (size_t i = 0; i < n; i++) {
    snprintf(names[i][0], 128, "%s", d[i].name);
    snprintf(names[i][1], 128, "%s", d[i].exact);
    m[i] = (cp_pm_metric){names[i][0], names[i][1], 0, names[i][1]};
  }
  cp_pm_exact_options o;
  cp_pm_exact_options_init(&o);
  o.ranges = ranges;
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, n, &o), CPROTON_OK, "%s",
               cproton_last_error());
  memset(names, 'X', sizeof names);
  bracket_fn b = atomic_load(&st.hooks.launch_bracket);
  cr_assert_not_null(b);
  return b;
}

/* One launch of `kernel` (NULL: a graph launch) under `scope`: the launch
 * callback's enter, the kernel on the GPU (value, ns), the exit. */
static void launch(bracket_fn b, const char *kernel, const char *scope, uint32_t corr,
                   double value, double ns) {
  cp_launch_site site;
  cpt_capture_in(scope, &site);
  b(CTX, corr, kernel, &site, 1);
  run_kernel(value, ns);
  b(CTX, corr, kernel, NULL, 0);
}

static json_t *finish(int sid, const char *path) {
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  return cpt_load_json(full);
}

static json_t *child(json_t *node, const char *name) {
  json_t *c, *found = NULL;
  size_t i;
  json_array_foreach(json_object_get(node, "children"), i, c) {
    if (!strcmp(json_string_value(json_object_get(json_object_get(c, "frame"), "name")), name))
      found = c;
  }
  return found;
}

/* The metrics of scope/kernel below the root. */
static json_t *kernel_metrics(json_t *root, const char *scope, const char *kernel) {
  json_t *k = child(child(root, scope), kernel);
  cr_assert_not_null(k, "no node %s/%s", scope, kernel);
  return json_object_get(k, "metrics");
}

static double num(json_t *metrics, const char *name) {
  json_t *v = json_object_get(metrics, name);
  cr_assert_not_null(v, "no metric %s", name);
  return json_number_value(v);
}

/* ---- tests ----------------------------------------------------------------- */

/* Three launches, kernels k1, k2, k1 under scopes a, b, a: the image's
 * ranges 0, 1, 2 go to them in launch order, and each kernel node holds
 * the storage contract: pm_sampled_ns = summed durations, pm_samples =
 * ranges, <name>*ns = sum of value x duration (the default set's first
 * counter evaluates to `value`, the second to value + 1). */
Test(pmexact, ranges_map_to_launches_in_order, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pmx_order");
  int sid;
  bracket_fn b = start(path, &sid, 16);
  cr_assert_eq(n_enables, 1, "the active primary context is set up at start");
  cr_assert_eq(range_mode, CUPTI_AutoRange);
  cr_assert_eq(replay_mode, CUPTI_KernelReplay);
  cr_assert_eq(nesting, 1);
  size_t n_defaults;
  cp_pm_metrics_defaults(&n_defaults);
  cr_assert_eq(n_metrics, n_defaults + 1, "the defaults and the duration");
  launch(b, "k1", "a", 1, 50.0, 1000);
  launch(b, "k2", "b", 2, 20.0, 4000);
  launch(b, "k1", "a", 3, 80.0, 3000);
  cr_assert_eq(n_stops, 0, "nothing decoded before the flush");
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  cr_assert(started, "re-armed after the decode");
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  json_t *a = kernel_metrics(root, "a", "k1"), *bm = kernel_metrics(root, "b", "k2");
  cr_assert_eq(num(a, "pm_sampled_ns"), 4000);
  cr_assert_eq(num(a, "pm_samples"), 2);
  cr_assert_float_eq(num(a, "sm_throughput%*ns"), 50.0 * 1000 + 80.0 * 3000, 1e-6);
  cr_assert_float_eq(num(a, "dram_throughput%*ns"), 51.0 * 1000 + 81.0 * 3000, 1e-6);
  cr_assert_eq(num(bm, "pm_sampled_ns"), 4000);
  cr_assert_eq(num(bm, "pm_samples"), 1);
  cr_assert_float_eq(num(bm, "sm_throughput%*ns"), 20.0 * 4000, 1e-6);
  /* the viewer's value: the duration-weighted mean */
  cr_assert_float_eq(num(a, "sm_throughput%*ns") / num(a, "pm_sampled_ns"), 72.5, 1e-9);
  cr_assert(json_is_integer(json_object_get(a, "pm_sampled_ns")));
  cr_assert(json_is_real(json_object_get(a, "sm_throughput%*ns")));
  json_decref(j);
  cp_pm_exact_counts c;
  cp_pm_exact_counts_get(&c);
  cr_assert_eq(c.ranges, 3);
  cr_assert_eq(c.delivered, 3);
  cp_pm_exact_stop();
  cr_assert_eq(cpt_logged.n_warnings, 0, "%s", cpt_logged.last_warning);
  cr_assert_eq(n_disables, 1);
}

/* ranges=2: the image is decoded before the launch that would not fit,
 * so five launches lose nothing; the last two at the flush. */
Test(pmexact, decodes_when_full, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pmx_full");
  int sid;
  bracket_fn b = start(path, &sid, 2);
  cr_assert_eq(max_ranges, 2);
  for (uint32_t i = 0; i < 5; i++)
    launch(b, "k", "s", 10 + i, 10.0 * (i + 1), 100);
  cr_assert_eq(n_stops, 2, "decoded before launches 3 and 5");
  cr_assert_eq(n_setconfigs, 3, "armed at start and after each decode");
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  json_t *m = kernel_metrics(root, "s", "k");
  cr_assert_eq(num(m, "pm_samples"), 5);
  cr_assert_eq(num(m, "pm_sampled_ns"), 500);
  cr_assert_float_eq(num(m, "sm_throughput%*ns"), (10 + 20 + 30 + 40 + 50) * 100.0, 1e-6);
  json_decref(j);
  cp_pm_exact_stop();
  cr_assert_eq(cpt_logged.n_warnings, 0, "%s", cpt_logged.last_warning);
}

/* CUPTI dropped a range (the fake's image holds 2, three kernels ran
 * between decodes: a launch the hook never saw) and a range came with no
 * launch: both counted and reported at stop, never silent. */
Test(pmexact, drops_counted_and_reported, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pmx_drops");
  int sid;
  bracket_fn b = start(path, &sid, 2);
  launch(b, "k", "s", 1, 10.0, 100);
  run_kernel(99.0, 100); /* a kernel whose launch the hook missed */
  run_kernel(99.0, 100); /* and another: the image is full, CUPTI drops it */
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  cp_pm_exact_counts c;
  cp_pm_exact_counts_get(&c);
  cr_assert_eq(c.cupti_dropped, 1);
  cr_assert_eq(c.unmatched, 1, "the second range has no launch");
  cr_assert_eq(c.delivered, 1);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(num(kernel_metrics(root, "s", "k"), "pm_samples"), 1);
  json_decref(j);
  cr_assert_eq(cpt_logged.n_warnings, 0);
  cp_pm_exact_stop();
  cr_assert_eq(cpt_logged.n_warnings, 1, "drops are reported once, at stop");
  cr_assert(strstr(cpt_logged.last_warning, "1 ranges dropped by CUPTI, 1 ranges with no launch"),
            "%s", cpt_logged.last_warning);
}

/* Fewer ranges than launches (a launch that ran no kernel): the launch is
 * counted as unmeasured; a range CUPTI cannot evaluate is counted too. */
Test(pmexact, unmeasured_and_unevaluated, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pmx_unmeasured");
  int sid;
  bracket_fn b = start(path, &sid, 8);
  launch(b, "k", "s", 1, 10.0, 0); /* 0 ns: no weight, not stored */
  cp_launch_site site;
  cpt_capture_in("s", &site);
  b(CTX, 2, "k", &site, 1); /* launched, never ran */
  b(CTX, 2, "k", NULL, 0);
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  cp_pm_exact_counts c;
  cp_pm_exact_counts_get(&c);
  cr_assert_eq(c.unmeasured, 1);
  cr_assert_eq(c.eval_errors, 1);
  cr_assert_eq(c.delivered, 0);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cp_pm_exact_stop();
  cr_assert(strstr(cpt_logged.last_warning, "1 launches with no range"), "%s", cpt_logged.last_warning);
  cr_assert(strstr(cpt_logged.last_warning, "1 ranges not evaluated"), "%s", cpt_logged.last_warning);
}

/* A decode CUPTI fails: the flush says so, the queued launches are counted
 * as unmeasured (one warning), and the context is re-armed: the next
 * launches are measured. */
Test(pmexact, failed_decode_counted_and_rearmed, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pmx_decode_fail");
  int sid;
  bracket_fn b = start(path, &sid, 8);
  launch(b, "k", "lost", 1, 10.0, 100);
  launch(b, "k", "lost", 2, 10.0, 100);
  decode_fails = 1;
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_EBACKEND);
  cr_assert(strstr(cproton_last_error(), "1 context(s) not decoded"), "%s", cproton_last_error());
  cr_assert_eq(cpt_logged.n_warnings, 1);
  cr_assert(strstr(cpt_logged.last_warning, "cuptiRangeProfilerDecodeData failed"), "%s", cpt_logged.last_warning);
  cr_assert(strstr(cpt_logged.last_warning, "counted as unmeasured"), "%s", cpt_logged.last_warning);
  cr_assert(started, "re-armed");
  launch(b, "k", "kept", 3, 30.0, 100);
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  cp_pm_exact_counts c;
  cp_pm_exact_counts_get(&c);
  cr_assert_eq(c.unmeasured, 2);
  cr_assert_eq(c.delivered, 1);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(num(kernel_metrics(root, "kept", "k"), "pm_samples"), 1);
  cr_assert_null(child(child(root, "lost"), "k"), "nothing invented for the lost launches");
  json_decref(j);
  cp_pm_exact_stop();
  cr_assert(strstr(cpt_logged.last_warning, "2 launches with no range") && strstr(cpt_logged.last_warning, "1 failed decodes"),
            "%s", cpt_logged.last_warning);
}

/* A graph launch names no kernel: what ran before it is decoded at its
 * enter, its own ranges at its exit, counted, not given to a kernel. */
Test(pmexact, graph_launch_ranges_counted, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pmx_graph");
  int sid;
  bracket_fn b = start(path, &sid, 8);
  launch(b, "k", "before", 1, 10.0, 100);
  cp_launch_site site;
  cpt_capture_in("graph", &site);
  b(CTX, 2, NULL, &site, 1);
  cr_assert_eq(n_stops, 1, "decoded at the graph's enter");
  run_kernel(1.0, 10);
  run_kernel(2.0, 10);
  b(CTX, 2, NULL, NULL, 0);
  cr_assert_eq(n_stops, 2, "and at its exit");
  launch(b, "k", "after", 3, 30.0, 100);
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  cp_pm_exact_counts c;
  cp_pm_exact_counts_get(&c);
  cr_assert_eq(c.graph_ranges, 2);
  cr_assert_eq(c.delivered, 2);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_float_eq(num(kernel_metrics(root, "before", "k"), "sm_throughput%*ns"), 1000.0, 1e-9);
  cr_assert_float_eq(num(kernel_metrics(root, "after", "k"), "sm_throughput%*ns"), 3000.0, 1e-9);
  json_decref(j);
}

/* A launch made from inside a decode (here by the fake's Stop, on the
 * decoding thread) neither waits on the mode's lock nor is queued: the
 * decode at the flush, at a full image and at stop all return. */
Test(pmexact, launch_inside_decode_does_not_deadlock, .init = setup, .fini = teardown,
     .timeout = 10) {
  const char *path = cpt_tmp_path("pmx_reenter");
  int sid;
  bracket_fn b = start(path, &sid, 1);
  atomic_store(&reenter, (void *)b);
  launch(b, "k", "s", 1, 10.0, 100);
  launch(b, "k", "s", 2, 20.0, 100); /* full: decoded from inside the hook */
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  cp_pm_exact_counts c;
  cp_pm_exact_counts_get(&c);
  cr_assert_eq(c.delivered, 2);
  cr_assert_eq(c.unmeasured, 0, "the internal launches were not queued");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  cp_pm_exact_stop();
  cr_assert_eq(cpt_logged.n_warnings, 0, "%s", cpt_logged.last_warning);
}

/* The driver restricts the counters to administrators: start refuses with
 * the module option to change, and leaves the launch hook free. */
Test(pmexact, insufficient_privileges_refused, .init = setup, .fini = teardown) {
  enable_result = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  size_t n;
  const cp_pm_metric *m = cp_pm_metrics_defaults(&n);
  cp_pm_exact_options o;
  cp_pm_exact_options_init(&o);
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, n, &o), CPROTON_EBACKEND);
  const char *msg = cproton_last_error();
  cr_assert(strstr(msg, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), "%s", msg);
  cr_assert(strstr(msg, "NVreg_RestrictProfilingToAdminUsers"), "%s", msg);
  cr_assert_null(atomic_load(&st.hooks.launch_bracket));
  cr_assert_eq(n_disables, 0, "Enable failed: no object to give back");
  enable_result = CUPTI_SUCCESS;
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, n, &o), CPROTON_OK,
               "a later start works: %s", cproton_last_error());
}

/* Another tool holds the counters. */
Test(pmexact, counters_held_refused, .init = setup, .fini = teardown) {
  enable_result = CUPTI_ERROR_HARDWARE_BUSY;
  size_t n;
  const cp_pm_metric *m = cp_pm_metrics_defaults(&n);
  cp_pm_exact_options o;
  cp_pm_exact_options_init(&o);
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, n, &o), CPROTON_EBACKEND);
  cr_assert(strstr(cproton_last_error(),
                   "another tool or the driver holds the GPU's performance counters"),
            "%s", cproton_last_error());
}

/* A context created after start whose device lacks the feature: one
 * warning, its launches run at kernel level, nothing else breaks. */
Test(pmexact, later_context_unsupported_warns_once, .init = setup, .fini = teardown) {
  primary_active = 0;
  const char *path = cpt_tmp_path("pmx_late");
  int sid;
  bracket_fn b = start(path, &sid, 8);
  cr_assert_eq(n_enables, 0, "no context yet");
  enable_result = CUPTI_ERROR_NOT_SUPPORTED;
  launch(b, "k", "s", 1, 10.0, 100);
  launch(b, "k", "s", 2, 10.0, 100);
  cr_assert_eq(n_enables, 1, "set up once, at the first launch");
  cr_assert_eq(cpt_logged.n_warnings, 1);
  cr_assert(strstr(cpt_logged.last_warning, "has no range profiler"), "%s", cpt_logged.last_warning);
  cr_assert_eq(cp_pm_exact_flush(), CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

/* An unknown counter is named; refused at start even before any context
 * exists (the host API checks it against the chip's name alone). */
Test(pmexact, unknown_counter_named, .init = setup, .fini = teardown) {
  primary_active = 0;
  refused_metric = "bogus__counter.sum";
  cp_pm_metric m[] = {
      {"sm_throughput%", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 0,
       "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"bogus__counter.sum", "bogus__counter.sum", 0, "bogus__counter.sum"}};
  cp_pm_exact_options o;
  cp_pm_exact_options_init(&o);
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, 2, &o), CPROTON_EBACKEND);
  cr_assert(strstr(cproton_last_error(), "no counter 'bogus__counter.sum' on chip GH100"),
            "%s", cproton_last_error());
  cr_assert_null(atomic_load(&st.hooks.launch_bracket));
  cr_assert_eq(n_enables, 0);
  refused_metric = NULL;
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, 1, &o), CPROTON_OK, "%s", cproton_last_error());
}

/* No range profiler in this CUPTI: one warning, start succeeds (kernels
 * are still profiled), no hook. Bad arguments and a taken hook refused. */
Test(pmexact, refusals_and_missing_api, .init = setup, .fini = teardown) {
  size_t n;
  const cp_pm_metric *m = cp_pm_metrics_defaults(&n);
  cp_pm_exact_options o;
  cp_pm_exact_options_init(&o);
  o.ranges = 0;
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, n, &o), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "ranges=0"), "%s", cproton_last_error());
  cp_pm_exact_options_init(&o);
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, 0, &o), CPROTON_EINVAL);
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, CP_PM_EXACT_MAX_METRICS + 1, &o), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "at most 256"), "%s", cproton_last_error());
  atomic_store(&st.hooks.launch_bracket, (bracket_fn)0x1);
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, n, &o), CPROTON_ESTATE);
  cr_assert(strstr(cproton_last_error(), "pcsampling:exact"), "%s", cproton_last_error());
  atomic_store(&st.hooks.launch_bracket, NULL);
  api.cuptiRangeProfilerEnable = NULL; /* CUPTI older than 12.6 */
  cr_assert_eq(cp_pm_exact_start(&api, &st, m, n, &o), CPROTON_OK);
  cr_assert_eq(cpt_logged.n_warnings, 1);
  cr_assert(strstr(cpt_logged.last_warning, "no range profiler"), "%s", cpt_logged.last_warning);
  cr_assert_null(atomic_load(&st.hooks.launch_bracket));
}

/* pm_exact_map.c alone: a range named otherwise than its kernel (CUPTI
 * naming ranges by kernel) is counted; digit names (indices) are not. */
static double map_value = 5;
static int map_eval(void *u, size_t i, double *v) {
  (void)u; (void)i;
  v[0] = map_value;
  v[1] = 10; /* ns */
  return 0;
}
static const char *map_name(void *u, size_t i) {
  (void)u;
  return i == 0 ? "7" : "other_kernel";
}
Test(pmexact, map_counts_name_mismatch) {
  cp_pm_exact_queue q;
  cr_assert_eq(cp_pm_exact_map_queue_init(&q, 2), 0);
  cp_launch_site site = {0};
  cr_assert_eq(cp_pm_exact_map_push(&q, &site, "kern"), 0);
  cr_assert_eq(cp_pm_exact_map_push(&q, &site, "kern"), 0);
  cr_assert_eq(cp_pm_exact_map_push(&q, &site, "kern"), 1, "full");
  cp_pm_metric m = {"x%", "x__y.sum", 0, "x__y.sum"};
  cp_pm_exact_names names;
  cr_assert_eq(cp_pm_exact_map_names(&m, 1, &names), 0);
  cr_assert_str_eq(names.stored[0], "x%*ns");
  cp_pm_exact_ranges r = {2, map_eval, map_name, NULL};
  cp_pm_exact_counts c = {0};
  cp_pm_exact_map_deliver(&q, &r, &names, 0, &c);
  cr_assert_eq(c.name_mismatch, 1);
  cr_assert_eq(c.ranges, 2);
  cr_assert_eq(q.n, 0, "emptied");
  cr_assert_eq(cp_pm_exact_map_queue_init(&(cp_pm_exact_queue){0}, 0), CPROTON_EINVAL);
  cp_pm_exact_map_names_free(&names);
  cp_pm_exact_map_queue_free(&q);
}

#else
Test(pmexact, skipped_without_cupti_headers) { cr_skip_test("no CUPTI headers"); }
#endif
