/* backend_cupti_pcsampling_test.c -- pcsampling.c (the vendor side of PC
 * sampling) against a fake CUPTI that behaves as CUPTI 13 did on an H100:
 * samples of an open range are not handed out by GetData; closing the range
 * leaves its first records in the buffer given at configuration and GetData
 * hands over the rest. Checks that both parts reach the profile once, in
 * concurrent and exact modes, and that a refused configuration leaves a
 * kernel-level profile with one warning. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/fatbin.h"
#include "backend/cupti/features.h"
#include "backend/cupti/loader.h"
#include "backend/cupti/pcsampling.h"
#include "core/kfacts.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

#define CTX ((CUcontext)0x1000)

static CUpti_PCSamplingData *configured; /* the buffer given at configure */
static _Atomic int open_range, enable_fails, n_stops; /* threads too */
static size_t hw_bytes; /* the hardware buffer size configured */
static uint32_t sleep_ms; /* CUPTI's decoding period configured */
static uint32_t stall_index = 7;
/* The driver: one device whose primary context is CTX; `current` is the
 * calling thread's context (CTX unless a test says otherwise). */
static CUcontext current, enabled_on;
static int primary_active, retained, n_enables;

static CUptiResult f_version(uint32_t *v) { *v = 130000; return CUPTI_SUCCESS; }
static CUptiResult f_enable(CUpti_PCSamplingEnableParams *p) {
  enabled_on = p->ctx == current ? p->ctx : NULL; /* configured while current */
  n_enables++;
  return enable_fails ? CUPTI_ERROR_NOT_SUPPORTED : CUPTI_SUCCESS;
}
static CUptiResult f_disable(CUpti_PCSamplingDisableParams *p) { (void)p; return CUPTI_SUCCESS; }
static CUptiResult f_nstalls(CUpti_PCSamplingGetNumStallReasonsParams *p) {
  *p->numStallReasons = 1;
  return CUPTI_SUCCESS;
}
static CUptiResult f_stalls(CUpti_PCSamplingGetStallReasonsParams *p) {
  strcpy(p->stallReasons[0], "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  p->stallReasonIndex[0] = stall_index;
  return CUPTI_SUCCESS;
}
static CUptiResult f_config(CUpti_PCSamplingConfigurationInfoParams *p) {
  for (size_t i = 0; i < p->numAttributes; i++) {
    const CUpti_PCSamplingConfigurationInfo *a = &p->pPCSamplingConfigurationInfo[i];
    if (a->attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
      configured = a->attributeData.samplingDataBufferData.samplingDataBuffer;
    if (a->attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE)
      hw_bytes = a->attributeData.hardwareBufferSizeData.hardwareBufferSize;
    if (a->attributeType ==
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN)
      sleep_ms = a->attributeData.workerThreadPeriodicSleepSpanData
                     .workerThreadPeriodicSleepSpan;
  }
  return CUPTI_SUCCESS;
}
static CUptiResult f_start(CUpti_PCSamplingStartParams *p) {
  (void)p;
  open_range = 1;
  return CUPTI_SUCCESS;
}

/* One PC record of `samples` long-scoreboard samples at `pc`. */
static void put(CUpti_PCSamplingData *d, uint64_t pc, uint32_t samples) {
  CUpti_PCSamplingPCData *r = &d->pPcData[d->totalNumPcs++];
  r->cubinCrc = 1;
  r->pcOffset = pc;
  r->functionName = "kern";
  r->stallReasonCount = 1;
  r->stallReason[0] = (CUpti_PCSamplingStallReason){stall_index, samples};
}

/* Closing a range: its first record lands in the configured buffer. */
static CUptiResult f_stop(CUpti_PCSamplingStopParams *p) {
  (void)p;
  open_range = 0;
  n_stops++;
  configured->totalNumPcs = 0;
  put(configured, 0, 30);
  configured->remainingNumPcs = 1;
  configured->droppedSamples = 3; /* the hardware buffer overflowed */
  return CUPTI_SUCCESS;
}
/* GetData: nothing while a range is open; after a stop, the remaining one. */
static CUptiResult f_getdata(CUpti_PCSamplingGetDataParams *p) {
  CUpti_PCSamplingData *d = p->pcSamplingData;
  d->totalNumPcs = 0;
  if (!open_range && d->remainingNumPcs) {
    put(d, 16, 12);
    d->remainingNumPcs = 0;
  }
  return CUPTI_SUCCESS;
}
static CUptiResult f_crc(CUpti_GetCubinCrcParams *p) { p->cubinCrc = 1; return CUPTI_SUCCESS; }
static CUptiResult f_s2s(CUpti_GetSassToSourceCorrelationParams *p) {
  p->lineNumber = (uint32_t)p->pcOffset / 16 + 5;
  p->fileName = strdup("k.py");
  p->dirName = strdup("src");
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
static CUresult f_retain(CUcontext *c, CUdevice d) {
  (void)d;
  retained++;
  *c = CTX;
  return CUDA_SUCCESS;
}
static CUresult f_release(CUdevice d) { (void)d; retained--; return CUDA_SUCCESS; }
static CUresult f_sync(void) { return CUDA_SUCCESS; }
static cp_loader_api api;
static cp_cupti_state st;
/* A kernel record CUPTI hands over only at the next activity flush. */
static const cp_launch_site *late_record;
static CUptiResult f_flush(uint32_t flag) {
  (void)flag;
  void (*ran)(const char *, const void *, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) =
      atomic_load(&st.hooks.kernel_ran);
  if (late_record && ran)
    ran("kern", late_record, 100, 1, 128, 0, 0);
  late_record = NULL;
  return CUPTI_SUCCESS;
}
static int describe_h100(uint32_t id, cp_device_info *d) {
  (void)id;
  d->num_sms = 132;
  return 0;
}

static void setup(void) {
  cp_session_reset_all();
  memset(&api, 0, sizeof api);
  api.cuptiGetVersion = f_version;
  api.cuptiPCSamplingEnable = f_enable;
  api.cuptiPCSamplingDisable = f_disable;
  api.cuptiPCSamplingGetNumStallReasons = f_nstalls;
  api.cuptiPCSamplingGetStallReasons = f_stalls;
  api.cuptiPCSamplingSetConfigurationAttribute = f_config;
  api.cuptiPCSamplingStart = f_start;
  api.cuptiPCSamplingStop = f_stop;
  api.cuptiPCSamplingGetData = f_getdata;
  api.cuptiGetCubinCrc = f_crc;
  api.cuptiGetSassToSourceCorrelation = f_s2s;
  api.cuCtxGetCurrent = f_getctx;
  api.cuCtxSetCurrent = f_setctx;
  api.cuDeviceGetCount = f_count;
  api.cuDeviceGet = f_device;
  api.cuDevicePrimaryCtxGetState = f_state;
  api.cuDevicePrimaryCtxRetain = f_retain;
  api.cuDevicePrimaryCtxRelease_v2 = f_release;
  api.cuCtxSynchronize = f_sync;
  api.cuptiActivityFlushAll = f_flush;
  memset(&st, 0, sizeof st);
  st.corr = cp_corr_new(64);
  configured = NULL;
  late_record = NULL;
  hw_bytes = 0;
  sleep_ms = 0;
  open_range = enable_fails = n_stops = 0;
  current = CTX;
  enabled_on = NULL;
  primary_active = 1;
  retained = n_enables = 0;
  cpt_log_capture(CPROTON_LOG_DEBUG);
}

static void teardown(void) {
  cp_pcsampling_disable();
  cp_corr_free(st.corr);
  cp_session_reset_all();
  cpt_log_release();
}

static int start(const char *path, const char *mode) {
  int sid = cpt_start_session(path, "fake", NULL, mode);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

/* The node at `path` (n frame names) below `root`, NULL when absent. */
static json_t *node_at(json_t *root, const char *const *path, int n) {
  json_t *node = root;
  for (int k = 0; k < n && node; k++) {
    json_t *c, *found = NULL;
    size_t i;
    json_array_foreach(json_object_get(node, "children"), i, c) {
      if (!strcmp(json_string_value(json_object_get(json_object_get(c, "frame"), "name")), path[k]))
        found = c;
    }
    node = found;
  }
  return node;
}

static json_t *line_node(json_t *root, const char *scope, const char *line) {
  const char *path[] = {scope, "kern", line};
  json_t *n = node_at(root, path, 3);
  cr_assert_not_null(n, "no %s/kern/%s", scope, line);
  return n;
}

static long long samples(json_t *n) {
  return json_integer_value(json_object_get(json_object_get(n, "metrics"), "num_samples"));
}

/* num_samples summed over `n` and every node below it. */

static json_t *finish(int sid, const char *path) {
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  return cpt_load_json(full);
}

/* The first cubin of a fat binary, copied (the nvcc object's sm_90 one). */
static int copy_cubin(void *ctx, const void *cubin, size_t size,
                 uint64_t offset) {
  (void)offset;
  void **out = ctx;
  *out = malloc(size + sizeof(size_t));
  memcpy(*out, &size, sizeof size);
  memcpy((char *)*out + sizeof size, cubin, size);
  return 1;
}

/* A kept cubin gives its kernels' stack frames as kernel.stack_bytes: the
 * H100's CUPTI reported localMemoryPerThread 0 for poly_local, whose
 * run-time indexed array takes a 128-byte frame (issue 26, cu_local_array). */
Test(pcsampling, kept_cubin_gives_stack_frames, .init = setup, .fini = teardown) {
  cp_kfacts_reset();
  const char *path = cpt_tmp_path("pcsv_frames");
  int sid = start(path, "pcsampling");
  cp_pcs_options o;
  cp_pcs_mode_parse("pcsampling", &o);
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  void *blob = NULL;
  cp_fatbin_stats fs = {0};
  cp_fatbin_scan_file(CP_SOURCE_DIR "/tests/data/pcs/local_fatbin.o", 90,
                      1 << 20, copy_cubin, &blob, &fs);
  cr_assert_not_null(blob);
  size_t size;
  memcpy(&size, blob, sizeof size);
  cr_assert_eq(cproton_pcsampling_add_cubin((char *)blob + sizeof size, size), 0);
  free(blob);
  cp_kfact f[CP_KFACTS_MAX];
  int64_t local = -1, shared = -1;
  for (size_t i = 0, n = cp_kfacts_get("poly_local", f); i < n; i++)
    if (!strcmp(f[i].name, "kernel.stack_bytes"))
      local = f[i].value;
  for (size_t i = 0, n = cp_kfacts_get("poly_shared", f); i < n; i++)
    if (!strcmp(f[i].name, "kernel.stack_bytes"))
      shared = f[i].value;
  cr_assert_eq(local, 128);
  cr_assert_eq(shared, 0);
  json_decref(finish(sid, path));
  cp_kfacts_reset();
}

Test(pcsampling, concurrent_reads_buffer_and_getdata, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_conc");
  int sid = start(path, "pcsampling");
  cp_pcs_options o;
  cp_pcs_mode_parse("pcsampling", &o);
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  cr_assert_eq(cproton_pcsampling_add_cubin("cubin", 5), 0); /* crc 1 */
  cr_assert_not_null(configured, "the context was not configured at enable");
  cr_assert(open_range, "concurrent mode keeps a range open");
  cr_assert_eq(hw_bytes, 128u << 20, "a session-long range gets a large buffer");
  cr_assert_eq(sleep_ms, 10);
  cproton_scope_enter("work", NULL);
  cp_launch_site site;
  cp_session_capture(&site);
  cproton_scope_exit("work");
  void (*ran)(const char *, const void *, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) =
      atomic_load(&st.hooks.kernel_ran);
  cr_assert_not_null(ran);
  ran("kern", &site, 100, 1, 128, 0, 0);
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  cr_assert(open_range, "the range is reopened after the drain");
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(samples(line_node(root, "work", "src/k.py:5@kern")), 30); /* left by Stop */
  cr_assert_eq(samples(line_node(root, "work", "src/k.py:6@kern")), 12); /* from GetData */
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(root, "metrics"),
                                                  "num_dropped_samples")), 3);
  cr_assert_eq(samples(root), 0); /* Proton's zeroed ROOT metrics */
  cr_assert_eq(cpt_logged.n_warnings, 0);
  cp_pcsampling_disable();
  cr_assert_eq(cpt_logged.n_warnings, 1, "dropped samples are reported once at stop");
  json_decref(j);
}

/* A concurrent session with the fake's cubin (crc 1) handed over. */
static int start_concurrent_mode(const char *path, const char *mode) {
  int sid = start(path, mode);
  cp_pcs_options o;
  cp_pcs_mode_parse(mode, &o);
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  cr_assert_eq(cproton_pcsampling_add_cubin("cubin", 5), 0);
  return sid;
}

static int start_concurrent(const char *path) {
  return start_concurrent_mode(path, "pcsampling");
}

/* The last kernel's record reaches the library only after the final Stop
 * (it was still running at the kernel row's flush): the final flush takes
 * it before attributing, so its samples land under its scope, not ROOT. */
Test(pcsampling, final_flush_takes_late_records, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_late");
  int sid = start_concurrent(path);
  cp_launch_site site;
  cpt_capture_in("last", &site);
  late_record = &site;
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(samples(line_node(root, "last", "src/k.py:5@kern")), 30);
  cr_assert_eq(samples(line_node(root, "last", "src/k.py:6@kern")), 12);
  cp_pcsampling_disable();
  json_decref(j);
}

/* Two scopes ran the kernel equally long, one with a full grid, one with
 * 32 blocks: with the device's SM count known the split follows the busy
 * sub-partitions (528 : 128 on 132 SMs), not the time (1 : 1). */
Test(pcsampling, split_weighs_grid_occupancy, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_grid");
  st.hooks.describe_device = describe_h100;
  int sid = start_concurrent(path);
  cp_launch_site full, small;
  cpt_capture_in("full", &full);
  cpt_capture_in("small", &small);
  void (*ran)(const char *, const void *, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) =
      atomic_load(&st.hooks.kernel_ran);
  ran("kern", &full, 1000, 4096, 256, 0, 0);
  ran("kern", &small, 1000, 32, 256, 0, 0);
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  /* 30 samples on line 5: 30 * 128/656 = 5 (floor) to "small", the rest
   * (25) to the heaviest site */
  cr_assert_eq(samples(line_node(root, "small", "src/k.py:5@kern")), 5);
  cr_assert_eq(samples(line_node(root, "full", "src/k.py:5@kern")), 25);
  cp_pcsampling_disable();
  json_decref(j);
}

typedef void (*bracket_fn)(void *, uint32_t, const char *, const cp_launch_site *, int);

/* An exact session with the fake's cubin (crc 1) handed over; `mode`
 * "pcsampling:exact..." (the period tests say first=0: no first launch in
 * a range of its own). */
static bracket_fn start_mode(const char *path, int *sid, const char *mode) {
  *sid = start(path, mode);
  cp_pcs_options o;
  cp_pcs_mode_parse(mode, &o);
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  cr_assert_eq(cproton_pcsampling_add_cubin("cubin", 5), 0);
  bracket_fn b = atomic_load(&st.hooks.launch_bracket);
  cr_assert_not_null(b);
  cr_assert_null(atomic_load(&st.hooks.kernel_ran), "exact mode notes launches, not records");
  return b;
}

static bracket_fn start_exact(const char *path, int *sid) {
  return start_mode(path, sid, "pcsampling:exact:first=0");
}

/* One launch of `kernel` (NULL: a graph) with correlation id `corr` under
 * scope `scope`: API enter and exit. */
static void launch(bracket_fn b, const char *kernel, const char *scope, uint32_t corr) {
  cp_launch_site site;
  cpt_capture_in(scope, &site);
  cp_corr_put(st.corr, corr, &site, 0);
  b(CTX, corr, kernel, &site, 1);
  b(CTX, corr, kernel, NULL, 0);
}

/* A function keeps one period while it runs under one context; the launch
 * that brings a second context ends the period first (Stop, fetch,
 * attribute, Start), so each context gets exactly its own samples. The
 * fake's every Stop hands over 30 samples on line 5 and 12 on line 6. */
Test(pcsampling, exact_ends_period_on_second_context, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_exact");
  int sid;
  bracket_fn b = start_exact(path, &sid);
  cr_assert(open_range, "exact mode samples from start on");
  cr_assert_eq(hw_bytes, 128u << 20);
  launch(b, "kern", "first", 40);
  launch(b, "kern", "first", 41);
  launch(b, "other", "second", 42);
  cr_assert_eq(n_stops, 0, "one context per function: no Stop");
  launch(b, "kern", "second", 43);
  cr_assert_eq(n_stops, 1, "kern's second context ends the period");
  cr_assert(open_range);
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  const char *scopes[] = {"first", "second"};
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(samples(line_node(root, scopes[k], "src/k.py:5@kern")), 30, "%s", scopes[k]);
    cr_assert_eq(samples(line_node(root, scopes[k], "src/k.py:6@kern")), 12, "%s", scopes[k]);
  }
  json_decref(j);
}

/* A graph launch (no kernel name) is a range of its own: the period before
 * it ends at its enter, and its own samples go to its launch's context. */
Test(pcsampling, exact_graph_launch_is_its_own_range, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_graph");
  int sid;
  bracket_fn b = start_exact(path, &sid);
  launch(b, "kern", "before", 50);
  launch(b, NULL, "graph", 51);
  cr_assert_eq(n_stops, 2, "closed at the graph's enter and at its exit");
  cr_assert(open_range);
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(samples(line_node(root, "graph", "src/k.py:5@kern")), 30);
  /* the period before, and the fake's samples of the last period (no kern
   * launch in it: the function's last site, as in concurrent mode) */
  cr_assert_eq(samples(line_node(root, "before", "src/k.py:5@kern")), 60);
  json_decref(j);
}

static bracket_fn flight_bracket;
static void *launch_in_flight(void *arg) {
  cp_launch_site *site = arg;
  flight_bracket(CTX, 60, "kern", site, 1); /* no exit: still in flight */
  return NULL;
}

/* Another thread's launch in flight when a period ends may start its
 * kernel after the Stop: it is noted in the next period too, so a launch
 * of the same function under another context ends that period as well,
 * and the last period (both in it) is split between them. */
Test(pcsampling, exact_launch_in_flight_kept_across_periods, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_flight");
  int sid;
  flight_bracket = start_exact(path, &sid);
  cp_launch_site a;
  cpt_capture_in("a", &a);
  pthread_t t;
  pthread_create(&t, NULL, launch_in_flight, &a);
  pthread_join(t, NULL);
  launch(flight_bracket, "g", "x", 61);
  launch(flight_bracket, "g", "y", 62); /* ends period 1: kern -> a */
  launch(flight_bracket, "kern", "b", 63); /* a still in flight: ends period 2 */
  cr_assert_eq(n_stops, 2);
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  cr_assert_eq(samples(line_node(root, "a", "src/k.py:5@kern")), 60 + 15);
  cr_assert_eq(samples(line_node(root, "b", "src/k.py:5@kern")), 15);
  json_decref(j);
}

/* Proton's test_pcsampling after the rest of its file: the CUDA context
 * exists before start (here: the runtime's primary context, not current on
 * the thread that starts the session), and the first launch after start is
 * a kernel without line information (no cubin handed over). Its context is
 * configured at start, while current, and its samples land on its kernel
 * node, in both modes. */
static void first_launch_case(const char *mode) { /* first=0 */
  const char *path = cpt_tmp_path("pcsv_first");
  int sid = start(path, mode);
  cp_pcs_options o;
  cp_pcs_mode_parse(mode, &o);
  current = NULL;
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  cr_assert_eq(enabled_on, CTX, "the existing context is configured at start, made current");
  cr_assert_null(current, "the caller's (absent) context is restored");
  cr_assert_eq(retained, 0, "the primary context is released");
  cr_assert(open_range, "both modes sample from start on");
  cproton_scope_enter("init", NULL);
  cp_launch_site site;
  cp_session_capture(&site);
  cp_corr_put(st.corr, 5, &site, 0);
  current = CTX; /* the launching thread */
  void (*seen)(void *) = atomic_load(&st.hooks.launch_context);
  bracket_fn bracket = atomic_load(&st.hooks.launch_bracket);
  seen(CTX);
  if (bracket) {
    bracket(CTX, 5, "kern", &site, 1);
    cr_assert(open_range, "the first launch is inside a range");
    bracket(CTX, 5, "kern", NULL, 0);
  }
  void (*ran)(const char *, const void *, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) =
      atomic_load(&st.hooks.kernel_ran);
  if (ran)
    ran("kern", &site, 2, 1, 128, 0, 0); /* a 2 ns kernel */
  cproton_scope_exit("init");
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  const char *at[] = {"init", "kern"};
  json_t *k = node_at(root, at, 2);
  cr_assert_not_null(k, "no init/kern node");
  cr_assert_eq(samples(k), 42, "both parts of the hand-over on the kernel node");
  cr_assert_eq(json_array_size(json_object_get(k, "children")), 0, "no line, no child");
  json_decref(j);
}

Test(pcsampling, context_before_start_first_launch_concurrent, .init = setup,
     .fini = teardown) {
  first_launch_case("pcsampling:first=0");
}

Test(pcsampling, context_before_start_first_launch_exact, .init = setup,
     .fini = teardown) {
  first_launch_case("pcsampling:exact:first=0");
}

/* Concurrent mode with first=1 (opt-in): a function's first launch runs
 * in a range of its own, as every launch does under Proton: the open range
 * is closed at its enter (after a synchronise) and again at its exit, and
 * the samples of that range are the launch's, attributed at once from its
 * correlation id, with no kernel record needed. Later launches of the
 * function add no Stop. The fake's every Stop hands over 30 samples on
 * line 5 and 12 on line 6. */
Test(pcsampling, first_launch_own_range_concurrent, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_first_conc");
  int sid = start_concurrent_mode(path, "pcsampling:first=1");
  bracket_fn b = atomic_load(&st.hooks.launch_bracket);
  cr_assert_not_null(b, "concurrent mode brackets a function's first launches");
  launch(b, "kern", "init", 5);
  cr_assert_eq(n_stops, 2, "closed before the first launch and after it");
  cr_assert_not(open_range, "left closed until the next launch");
  launch(b, "kern", "init", 6);
  cr_assert(open_range, "the next launch opens the shared range again");
  launch(b, "kern", "later", 7);
  cr_assert_eq(n_stops, 2, "later launches of kern keep the range open");
  launch(b, "other", "later", 8);
  cr_assert_eq(n_stops, 4, "another function's first launch has its own range");
  launch(b, "third", "later", 9);
  cr_assert_eq(n_stops, 5, "a first launch after a closed range: no Stop before it");
  cr_assert_not(open_range);
  launch(b, NULL, "later", 10);
  cr_assert(open_range, "a graph launch opens it too");
  cp_launch_site init, later;
  cpt_capture_in("init", &init);
  cpt_capture_in("later", &later);
  void (*ran)(const char *, const void *, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t) =
      atomic_load(&st.hooks.kernel_ran);
  /* the first launch's record weighs nothing: its samples were its own
   * range's; the untagged ones are the later launches' */
  ran("kern", &init, 100, 1, 128, 0, 5);
  ran("kern", &later, 100, 1, 128, 0, 7);
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  /* the first launch's range, by its correlation id */
  cr_assert_eq(samples(line_node(root, "init", "src/k.py:5@kern")), 30);
  cr_assert_eq(samples(line_node(root, "init", "src/k.py:6@kern")), 12);
  /* the untagged ranges (before kern's and other's first launches, the
   * final one; the fake names kern in all) by kernel records, all to
   * "later"; and other's and third's first launches' ranges (the fake
   * names kern there too), by their ids */
  cr_assert_eq(samples(line_node(root, "later", "src/k.py:5@kern")), 3 * 30 + 2 * 30);
  json_decref(j);
}

/* Exact mode with first=1 (opt-in): the first launch of a function ends
 * the period before it and runs in a range of its own; its samples go to
 * its own context. A second context for the function still ends a period. */
Test(pcsampling, first_launch_own_range_exact, .init = setup, .fini = teardown) {
  const char *path = cpt_tmp_path("pcsv_first_exact");
  int sid;
  bracket_fn b = start_mode(path, &sid, "pcsampling:exact:first=1");
  launch(b, "kern", "a", 70);
  cr_assert_eq(n_stops, 2, "the period before ends, and the launch's range after it");
  launch(b, "kern", "a", 71);
  cr_assert_eq(n_stops, 2, "one context per function: no Stop");
  launch(b, "kern", "b", 72);
  cr_assert_eq(n_stops, 3, "kern's second context ends the period");
  cr_assert_eq(cp_pcsampling_flush(1), 0);
  json_t *j = finish(sid, path), *root = json_array_get(j, 0);
  /* a: its first launch's range (tagged) and the period of its second
   * launch; the period before the first launch had no launch of kern, so
   * its samples wait and go with the next period of kern (a's); b: the
   * last period */
  cr_assert_eq(samples(line_node(root, "a", "src/k.py:5@kern")), 3 * 30);
  cr_assert_eq(samples(line_node(root, "b", "src/k.py:5@kern")), 30);
  json_decref(j);
}

/* A context current at start that is also the primary one is configured
 * once; a context with no primary context active is left to its launch. */
Test(pcsampling, current_primary_configured_once, .init = setup, .fini = teardown) {
  cp_pcs_options o;
  cp_pcs_mode_parse("pcsampling", &o);
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  cr_assert_eq(n_enables, 1);
  cr_assert_eq(retained, 0);
  cp_pcsampling_disable();
  current = NULL;
  primary_active = 0;
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  cr_assert_eq(n_enables, 1, "no context, nothing configured");
  cr_assert_eq(retained, 0, "an inactive primary context is not created");
}

/* CPROTON_PCS_HW_MB / _SLEEP_MS override the defaults; junk is ignored. */
Test(pcsampling, knobs_override_buffer_and_period, .init = setup, .fini = teardown) {
  setenv("CPROTON_PCS_HW_MB", "4", 1);
  setenv("CPROTON_PCS_SLEEP_MS", "1x", 1);
  cp_pcs_options o;
  cp_pcs_mode_parse("pcsampling:exact", &o);
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  unsetenv("CPROTON_PCS_HW_MB");
  unsetenv("CPROTON_PCS_SLEEP_MS");
  cr_assert_eq(hw_bytes, 4u << 20);
  cr_assert_eq(sleep_ms, 10, "a malformed period keeps the default");
}

Test(pcsampling, refused_gives_one_warning, .init = setup, .fini = teardown) {
  enable_fails = 1;
  cp_pcs_options o;
  cp_pcs_mode_parse("pcsampling", &o);
  cr_assert_eq(cp_pcsampling_enable(&api, &st, &o), 0);
  void (*seen)(void *) = atomic_load(&st.hooks.launch_context);
  seen((void *)0x2000);
  seen((void *)0x3000);
  cr_assert_eq(cpt_logged.n_warnings, 1);
  cr_assert_null(configured);
}

#else
Test(pcsampling, no_cupti) { cr_skip_test("built without CUPTI headers"); }
#endif

/* ---- which kernel records PC sampling runs beside -------------------------- */

static int kind_on[64];
static CUptiResult f_act_enable(CUpti_ActivityKind k) {
  kind_on[k & 63] = 1;
  return CUPTI_SUCCESS;
}
static CUptiResult f_act_disable(CUpti_ActivityKind k) {
  kind_on[k & 63] = 0;
  return CUPTI_SUCCESS;
}
static CUptiResult f_enable_cb(uint32_t on, CUpti_SubscriberHandle s,
                               CUpti_CallbackDomain d, CUpti_CallbackId id) {
  (void)on, (void)s, (void)d, (void)id;
  return CUPTI_SUCCESS;
}

/* Enables the feature rows for `mode` and reports whether serialized
 * (KIND_KERNEL) and concurrent kernel records were switched on. */
static void kinds_for(const char *mode, int *serial, int *concurrent) {
  memset(kind_on, 0, sizeof kind_on);
  api.cuptiActivityEnable = f_act_enable;
  api.cuptiActivityDisable = f_act_disable;
  api.cuptiEnableCallback = f_enable_cb;
  cp_cupti_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cp_features_env env = {.api = &api, .state = &st, .config = &cfg};
  cr_assert_eq(cp_cupti_mode_parse(mode, &env.mode), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cp_features_enable(&env), CPROTON_OK, "%s", cproton_last_error());
  *serial = kind_on[CUPTI_ACTIVITY_KIND_KERNEL];
  *concurrent = kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
  cp_features_disable(&env);
  cr_assert(!kind_on[CUPTI_ACTIVITY_KIND_KERNEL] &&
                !kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
            "disable switches off the kind it enabled");
}

/* Proton runs continuous PC sampling beside serialized kernel records; the
 * H100 run of test_pcsampling sampled a short first kernel in every fresh
 * process only so (docs/cupti.md). Without sampling, concurrent records. */
Test(pcsampling, samples_beside_serialized_kernel_records, .init = setup, .fini = teardown) {
  int serial, concurrent;
  kinds_for("pcsampling", &serial, &concurrent);
  cr_assert(serial && !concurrent, "pcsampling: serial %d concurrent %d", serial, concurrent);
  kinds_for("pcsampling:exact", &serial, &concurrent);
  cr_assert(serial && !concurrent, "exact: serial %d concurrent %d", serial, concurrent);
  kinds_for("", &serial, &concurrent);
  cr_assert(!serial && concurrent, "no sampling: serial %d concurrent %d", serial, concurrent);
}
