/* tests/gpu/pm_probe.c -- what CUPTI's PM sampling does on this GPU
 * (issue 27), outside cproton: which of the default counters the device
 * can sample in one pass, how samples' timestamps relate to CUPTI's clock
 * (cuptiGetTimestamp, the clock of kernel activity records), and the
 * values over a memory-bound and a compute-bound kernel. Prints RESULT
 * lines; built and run by tests/gpu/pmsampling.sh. Not part of cproton. */
#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pm_host_abi.h"

static void *cu, *cp;
#define SYM(lib, name) ((__typeof__(&name))dlsym(lib, #name))
#define HOST(name, type) ((CUptiResult(*)(type *))dlsym(cp, #name))

static const char *default_metrics[] = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "lts__t_sector_hit_rate.pct",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
    /* alternatives, in case a default one cannot be sampled */
    "sm__warps_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_issued.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg",
    "gpu__time_duration.sum",
    "lts__t_sectors_lookup_hit.sum",
    "lts__t_sectors_lookup_miss.sum",
    "lts__t_sectors.sum",
};
#define NM_DEFAULT (sizeof default_metrics / sizeof *default_metrics)
#define NM 64
static const char **metrics = default_metrics;
static size_t nm = NM_DEFAULT;
#include <time.h>
static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static const char *ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry spin(.param .u64 p, .param .u32 n) {\n"
    " .reg .f32 %f<4>; .reg .b32 %r<5>; .reg .pred %q; .reg .b64 %d<5>;\n"
    " mov.f32 %f1, 0f3F800000; mov.u32 %r1, 0; ld.param.u32 %r2, [n];\n"
    "L: fma.rn.f32 %f1, %f1, 0f3F800001, 0f3F800000; add.u32 %r1, %r1, 1;\n"
    " setp.lt.u32 %q, %r1, %r2; @%q bra L;\n"
    " ld.param.u64 %d1, [p]; cvta.to.global.u64 %d2, %d1;\n"
    " mov.u32 %r3, %tid.x; mov.u32 %r4, %ctaid.x; mad.lo.u32 %r3, %r4, 1024, %r3;\n"
    " mul.wide.u32 %d3, %r3, 4; add.u64 %d2, %d2, %d3; st.global.f32 [%d2], %f1;\n"
    " ret; }\n";

static cp_pm_host_object *host_new(const char *chip, const uint8_t *avail) {
  cp_pm_host_init_params p = {CP_PM_STRUCT_SIZE(cp_pm_host_init_params, pHostObject)};
  p.profilerType = CP_PM_PROFILER_PM_SAMPLING;
  p.pChipName = chip;
  p.pCounterAvailabilityImage = avail;
  CUptiResult r = HOST(cuptiProfilerHostInitialize, cp_pm_host_init_params)(&p);
  if (r) printf("RESULT pm_probe host_init=%d\n", (int)r);
  return r ? NULL : p.pHostObject;
}

static void host_free(cp_pm_host_object *h) {
  cp_pm_host_deinit_params p = {CP_PM_STRUCT_SIZE(cp_pm_host_deinit_params, pHostObject)};
  p.pHostObject = h;
  HOST(cuptiProfilerHostDeinitialize, cp_pm_host_deinit_params)(&p);
}

/* Config image for `names`; *passes filled. NULL when CUPTI refuses. */
static uint8_t *config(cp_pm_host_object *h, const char **names, size_t n,
                       size_t *size, size_t *passes) {
  cp_pm_host_add_metrics_params a = {CP_PM_STRUCT_SIZE(cp_pm_host_add_metrics_params, numMetrics)};
  a.pHostObject = h; a.ppMetricNames = names; a.numMetrics = n;
  CUptiResult r = HOST(cuptiProfilerHostConfigAddMetrics, cp_pm_host_add_metrics_params)(&a);
  if (r) return NULL;
  cp_pm_host_image_size_params s = {CP_PM_STRUCT_SIZE(cp_pm_host_image_size_params, configImageSize)};
  s.pHostObject = h;
  if (HOST(cuptiProfilerHostGetConfigImageSize, cp_pm_host_image_size_params)(&s)) return NULL;
  uint8_t *img = calloc(1, s.configImageSize);
  cp_pm_host_image_params g = {CP_PM_STRUCT_SIZE(cp_pm_host_image_params, pConfigImage)};
  g.pHostObject = h; g.configImageSize = s.configImageSize; g.pConfigImage = img;
  if (HOST(cuptiProfilerHostGetConfigImage, cp_pm_host_image_params)(&g)) { free(img); return NULL; }
  cp_pm_host_passes_params q = {CP_PM_STRUCT_SIZE(cp_pm_host_passes_params, numOfPasses)};
  q.configImageSize = s.configImageSize; q.pConfigImage = img;
  HOST(cuptiProfilerHostGetNumOfPasses, cp_pm_host_passes_params)(&q);
  *size = s.configImageSize; *passes = q.numOfPasses;
  return img;
}

int main(int argc, char **argv) {
  if (argc > 1) { metrics = (const char **)(argv + 1); nm = (size_t)argc - 1 < NM ? (size_t)argc - 1 : NM; }
  cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  const char *cpl = getenv("PM_PROBE_CUPTI");
  cp = dlopen(cpl ? cpl : "libcupti.so", RTLD_NOW);
  if (!cu || !cp) { printf("FAIL pm_probe dlopen: %s\n", dlerror()); return 1; }
  CUdevice dev; CUcontext ctx;
  SYM(cu, cuInit)(0);
  SYM(cu, cuDeviceGet)(&dev, 0);
  SYM(cu, cuDevicePrimaryCtxRetain)(&ctx, dev);
  SYM(cu, cuCtxSetCurrent)(ctx);
  CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  printf("RESULT pm_probe profiler_init=%d\n", (int)SYM(cp, cuptiProfilerInitialize)(&ip));
  CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = 0;
  CUptiResult crc = SYM(cp, cuptiDeviceGetChipName)(&cn);
  printf("RESULT pm_probe chip_rc=%d chip=%s\n", (int)crc,
         cn.pChipName ? cn.pChipName : "?");
  CUpti_PmSampling_GetCounterAvailability_Params av = {CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
  av.deviceIndex = 0;
  CUptiResult r = SYM(cp, cuptiPmSamplingGetCounterAvailability)(&av);
  uint8_t *avail = calloc(1, av.counterAvailabilityImageSize + 1);
  av.pCounterAvailabilityImage = avail;
  r = r ? r : SYM(cp, cuptiPmSamplingGetCounterAvailability)(&av);
  printf("RESULT pm_probe availability_rc=%d size=%zu\n", (int)r, av.counterAvailabilityImageSize);
  /* each metric alone */
  const char *ok[NM]; size_t nok = 0;
  for (size_t i = 0; i < nm; i++) {
    cp_pm_host_object *h = host_new(cn.pChipName, avail);
    size_t sz = 0, passes = 0;
    uint8_t *img = h ? config(h, &metrics[i], 1, &sz, &passes) : NULL;
    printf("RESULT pm_probe metric=%s sampleable=%d passes=%zu\n", metrics[i], img != NULL, passes);
    if (img && passes == 1 && (argc > 1 || i < 6)) ok[nok++] = metrics[i];
    free(img);
    if (h) host_free(h);
  }
  /* base throughput metrics, for names */
  cp_pm_host_object *h = host_new(cn.pChipName, avail);
  for (int t = 0; h && t < 3; t++) {
    cp_pm_host_base_metrics_params b = {CP_PM_STRUCT_SIZE(cp_pm_host_base_metrics_params, numMetrics)};
    b.pHostObject = h; b.metricType = t;
    if (HOST(cuptiProfilerHostGetBaseMetrics, cp_pm_host_base_metrics_params)(&b)) continue;
    printf("RESULT pm_probe base_metrics type=%d n=%zu\n", t, b.numMetrics);
    for (size_t i = 0; i < b.numMetrics; i++)
      if (getenv("PM_PROBE_LIST")) printf("BASE %d %s\n", t, b.ppMetricNames[i]);
  }
  /* the largest prefix-greedy set that fits one pass */
  const char *fit[NM]; size_t nfit = 0;
  for (size_t i = 0; i < nok; i++) {
    cp_pm_host_object *g = host_new(cn.pChipName, avail);
    size_t sz = 0, ps = 0;
    fit[nfit] = ok[i];
    uint8_t *im = g ? config(g, fit, nfit + 1, &sz, &ps) : NULL;
    printf("RESULT pm_probe greedy add=%s passes=%zu %s\n", ok[i], ps, ps == 1 ? "kept" : "DROPPED");
    if (im && ps == 1) nfit++;
    free(im);
    if (g) host_free(g);
  }
  memcpy(ok, fit, nfit * sizeof *fit); nok = nfit;
  size_t isz = 0, passes = 0;
  uint8_t *img = h ? config(h, ok, nok, &isz, &passes) : NULL;
  printf("RESULT pm_probe together n=%zu image=%zu passes=%zu\n", nok, isz, passes);
  if (!img) { printf("FAIL pm_probe no config\n"); return 1; }
  CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
  en.deviceIndex = 0;
  r = SYM(cp, cuptiPmSamplingEnable)(&en);
  printf("RESULT pm_probe enable=%d\n", (int)r);
  if (r) return 1;
  CUpti_PmSampling_SetConfig_Params sc = {CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
  sc.pPmSamplingObject = en.pPmSamplingObject;
  sc.configSize = isz; sc.pConfig = img;
  sc.hardwareBufferSize = 512u << 20;
  sc.samplingInterval = getenv("PM_PROBE_NS") ? strtoull(getenv("PM_PROBE_NS"), 0, 10) : 20000;
  sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  printf("RESULT pm_probe set_config=%d interval_ns=%llu\n", (int)SYM(cp, cuptiPmSamplingSetConfig)(&sc),
         (unsigned long long)sc.samplingInterval);
  CUpti_PmSampling_GetCounterDataSize_Params ds = {CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pPmSamplingObject = en.pPmSamplingObject; ds.pMetricNames = ok; ds.numMetrics = nok; ds.maxSamples = getenv("PM_PROBE_MAX") ? (uint32_t)atoi(getenv("PM_PROBE_MAX")) : 20000;
  r = SYM(cp, cuptiPmSamplingGetCounterDataSize)(&ds);
  printf("RESULT pm_probe counter_data_size=%zu rc=%d\n", ds.counterDataSize, (int)r);
  uint8_t *cd = calloc(1, ds.counterDataSize);
  CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  ci.pPmSamplingObject = en.pPmSamplingObject; ci.counterDataSize = ds.counterDataSize; ci.pCounterData = cd;
  printf("RESULT pm_probe cd_init=%d\n", 0);
  /* workload: memset (memory) then spin (compute), timed on CUPTI's clock */
  CUmodule mod; CUfunction fn; CUdeviceptr buf; size_t bytes = 1u << 30;
  SYM(cu, cuMemAlloc_v2)(&buf, bytes);
  r = (CUptiResult)SYM(cu, cuModuleLoadData)(&mod, ptx);
  SYM(cu, cuModuleGetFunction)(&fn, mod, "spin");
  printf("RESULT pm_probe module=%d\n", (int)r);
  uint64_t t[6];
  CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE};
  st.pPmSamplingObject = en.pPmSamplingObject;
  SYM(cp, cuptiGetTimestamp)(&t[0]);
  printf("RESULT pm_probe start=%d\n", (int)SYM(cp, cuptiPmSamplingStart)(&st));
  SYM(cp, cuptiGetTimestamp)(&t[1]);
  for (int i = 0; i < 100; i++) SYM(cu, cuMemsetD32_v2)(buf, 7, bytes / 4);
  SYM(cu, cuCtxSynchronize)();
  SYM(cp, cuptiGetTimestamp)(&t[2]);
  unsigned n = 1u << 20;
  void *args[] = {&buf, &n};
  SYM(cu, cuLaunchKernel)(fn, 132 * 4, 1, 1, 1024, 1, 1, 0, 0, args, 0);
  SYM(cu, cuCtxSynchronize)();
  SYM(cp, cuptiGetTimestamp)(&t[3]);
  CUpti_PmSampling_Stop_Params sp = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
  sp.pPmSamplingObject = en.pPmSamplingObject;
  printf("RESULT pm_probe stop=%d\n", (int)SYM(cp, cuptiPmSamplingStop)(&sp));
  SYM(cp, cuptiGetTimestamp)(&t[4]);
  printf("RESULT pm_probe cupti_ts start=%llu memset=[%llu,%llu] spin_end=%llu stop=%llu\n",
         (unsigned long long)t[0], (unsigned long long)t[1], (unsigned long long)t[2],
         (unsigned long long)t[3], (unsigned long long)t[4]);
  double v[NM], sum_mem[NM] = {0}, sum_spin[NM] = {0}, t_dec = 0, t_eval = 0, t_init = 0;
  size_t n_mem = 0, n_spin = 0, total = 0;
  for (int round = 0; round < 1000; round++) {
    double a = now_s();
    SYM(cp, cuptiPmSamplingCounterDataImageInitialize)(&ci);
    double b = now_s();
    CUpti_PmSampling_DecodeData_Params dd = {CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
    dd.pPmSamplingObject = en.pPmSamplingObject; dd.pCounterDataImage = cd; dd.counterDataImageSize = ds.counterDataSize;
    r = SYM(cp, cuptiPmSamplingDecodeData)(&dd);
    double c = now_s();
    t_init += b - a; t_dec += c - b;
    CUpti_PmSampling_GetCounterDataInfo_Params gi = {CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = cd; gi.counterDataImageSize = ds.counterDataSize;
    SYM(cp, cuptiPmSamplingGetCounterDataInfo)(&gi);
    if (round < 2 || r) printf("RESULT pm_probe round=%d decode=%d reason=%d overflow=%d completed=%zu init_ms=%.2f decode_ms=%.2f\n",
           round, (int)r, (int)dd.decodeStopReason, dd.overflow, gi.numCompletedSamples, (b - a) * 1e3, (c - b) * 1e3);
    double e0 = now_s();
    for (size_t s = 0; s < gi.numCompletedSamples; s++, total++) {
      CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
      si.pPmSamplingObject = en.pPmSamplingObject; si.pCounterDataImage = cd;
      si.counterDataImageSize = ds.counterDataSize; si.sampleIndex = s;
      SYM(cp, cuptiPmSamplingCounterDataGetSampleInfo)(&si);
      cp_pm_host_evaluate_params ev = {CP_PM_STRUCT_SIZE(cp_pm_host_evaluate_params, pMetricValues)};
      ev.pHostObject = h; ev.pCounterDataImage = cd; ev.counterDataImageSize = ds.counterDataSize;
      ev.rangeIndex = s; ev.ppMetricNames = ok; ev.numMetrics = nok; ev.pMetricValues = v;
      r = HOST(cuptiProfilerHostEvaluateToGpuValues, cp_pm_host_evaluate_params)(&ev);
      if (total < 2 || r) {
        printf("RESULT pm_probe sample=%zu t0=%llu t1=%llu eval=%d", total, (unsigned long long)si.startTimestamp,
               (unsigned long long)si.endTimestamp, (int)r);
        for (size_t m = 0; m < nok; m++) printf(" %.2f", v[m]);
        printf("\n");
      }
      int in_mem = si.startTimestamp >= t[1] && si.endTimestamp <= t[2];
      int in_spin = si.startTimestamp >= t[2] + 200000 && si.endTimestamp + 200000 <= t[3];
      for (size_t m = 0; m < nok; m++) {
        if (in_mem) sum_mem[m] += v[m];
        if (in_spin) sum_spin[m] += v[m];
      }
      n_mem += in_mem; n_spin += in_spin;
    }
    t_eval += now_s() - e0;
    if (r || dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
  }
  printf("RESULT pm_probe samples=%zu init_ms=%.1f decode_ms=%.1f eval_ms=%.1f decode_us_per_sample=%.2f eval_us_per_sample=%.2f\n",
         total, t_init * 1e3, t_dec * 1e3, t_eval * 1e3, t_dec * 1e6 / (total + 1), t_eval * 1e6 / (total + 1));
  for (size_t m = 0; m < nok; m++)
    printf("RESULT pm_probe mean %s memset=%.2f (n=%zu) spin=%.2f (n=%zu)\n", ok[m],
           n_mem ? sum_mem[m] / n_mem : -1, n_mem, n_spin ? sum_spin[m] / n_spin : -1, n_spin);
  CUpti_PmSampling_Disable_Params di = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
  di.pPmSamplingObject = en.pPmSamplingObject;
  printf("RESULT pm_probe disable=%d\n", (int)SYM(cp, cuptiPmSamplingDisable)(&di));
  printf("PASS pm_probe\n");
  return 0;
}
