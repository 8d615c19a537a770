/* backend/cupti/pm_sampler.c -- CUPTI PM sampling on the decoder thread
 * (contract and failure policy in pm_sampler.h). Invariant: only the
 * decoder thread calls cuptiPmSampling* and cuptiProfilerHost* (start and
 * flush hand it work and wait), so no CUPTI object is shared between
 * threads; a device's counter data image is read up to `done` samples,
 * re-initialized only when full. Not a hot path. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cupti/pm_attr.h"
#include "backend/cupti/pm_config.h"
#include "backend/cupti/pm_sampler.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/session.h"

#define MAX_DEVICES 16
#define MAX_SAMPLES 512 /* per counter data image */
/* Bytes of raw records per device, decoded every period (a few dozen
 * records). Decoding costs the decoder thread about 0.15-0.2 ms of CPU per
 * sample with the default counters on an H100 while sampling runs (the
 * default interval's trade-off: pm_mode.h, docs/hardware-metrics.md). */
#define HW_BUFFER (16u << 20)
/* Periods of samples the image keeps room for: a decoder late by less
 * than this loses nothing (a decode into a full image drops the records
 * it cannot store, seen on an H100). */
#define SLACK_PERIODS 4

typedef struct device {
  int on;
  size_t index;
  CUcontext ctx;
  CUpti_PmSampling_Object *obj;
  cp_pm_host_object *host;
  uint8_t *avail; /* counter availability image (the host object's) */
  uint8_t *config; /* config image: CUPTI reads it until Disable (a copy
                      freed after SetConfig crashed the first decode) */
  uint8_t *data;
  size_t data_size, done; /* samples of `data` already handed over */
  uint64_t last_t1;       /* for gaps: samples the decoder missed */
} device;

enum { IDLE, WORK_START, WORK_FLUSH, WORK_STOP };

static struct {
  const cp_loader_api *api;
  cp_pm_options o;
  const char *cupti[CP_PM_MAX_METRICS]; /* into o.cupti */
  const char *names[CP_PM_MAX_METRICS]; /* into o.name */
  size_t n;
  device dev[MAX_DEVICES];
  int ndev;
  int64_t offset; /* add to a sample's time: cproton's clock */
  pthread_t thread;
  int thread_on;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int work, rc;          /* the request, and its outcome */
  char msg[1024];        /* the outcome's message (decoder thread's) */
  uint64_t lost, decode_ns, eval_ns, init_ns, overflows;
  CUptiResult decode_rc; /* the first failed decode's result */
} P = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

#define CALL(f, params) P.api->f(params)
#define PARAMS(type, var, last) type var = {.structSize = CP_PM_STRUCT_SIZE(type, last)}


static const char *cupti_err(CUptiResult r) {
  return cp_loader_cupti_error(P.api, r);
}

/* Another tool holds the counters, or the user may not read them. */
static int held_elsewhere(CUptiResult r) {
  return r == CUPTI_ERROR_HARDWARE_BUSY || r == CUPTI_ERROR_INVALID_OPERATION ||
         r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
         r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES;
}

static int refuse(CUptiResult r, const char *what, size_t dev) {
  const char *why =
      r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
              r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES
          ? "this user may not read GPU performance counters (the driver's "
            "NVreg_RestrictProfilingToAdminUsers=1: run as root or set it to 0)"
          : "the GPU's performance counters are held by another tool "
            "(Nsight Compute or Systems, DCGM, another profiler or "
            "pmsampling session); stop it or profile without pmsampling";
  return cp_error_set(CPROTON_EBACKEND, "cupti: pmsampling: %s on device %zu "
                      "failed (%s): %s", what, dev, cupti_err(r), why);
}

/* ---- per device ----------------------------------------------------------- */

static CUptiResult image_reset(device *d) {
  PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params, i, pCounterData);
  i.pPmSamplingObject = d->obj;
  i.counterDataSize = d->data_size;
  i.pCounterData = d->data;
  d->done = 0;
  uint64_t t = cp_clock_now_ns();
  CUptiResult r = CALL(cuptiPmSamplingCounterDataImageInitialize, &i);
  P.init_ns += cp_clock_now_ns() - t;
  return r;
}

/* The counter data image for MAX_SAMPLES samples, initialized. */
static CUptiResult data_image(device *d) {
  PARAMS(CUpti_PmSampling_GetCounterDataSize_Params, s, counterDataSize);
  s.pPmSamplingObject = d->obj;
  s.pMetricNames = P.cupti;
  s.numMetrics = P.n;
  s.maxSamples = MAX_SAMPLES;
  CUptiResult r = CALL(cuptiPmSamplingGetCounterDataSize, &s);
  if (r)
    return r;
  if (!(d->data = calloc(1, s.counterDataSize)))
    return CUPTI_ERROR_OUT_OF_MEMORY;
  d->data_size = s.counterDataSize;
  return image_reset(d);
}

static CUptiResult configure(device *d, const uint8_t *cfg, size_t size) {
  PARAMS(CUpti_PmSampling_SetConfig_Params, c, hwBufferAppendMode);
  c.pPmSamplingObject = d->obj;
  c.configSize = size;
  c.pConfig = cfg;
  c.hardwareBufferSize = HW_BUFFER;
  c.samplingInterval = P.o.interval_ns;
  c.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  c.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  CUptiResult r = CALL(cuptiPmSamplingSetConfig, &c);
  if (!r)
    r = data_image(d);
  PARAMS(CUpti_PmSampling_Start_Params, s, pPmSamplingObject);
  s.pPmSamplingObject = d->obj;
  return r ? r : CALL(cuptiPmSamplingStart, &s);
}

/* Enables and starts device `i` with its own host object (which
 * evaluates its samples). 1: on; 0: not available here (warned); <0:
 * refused (message set). */
static int device_start(size_t i, const char *chip, uint8_t *avail) {
  device *d = &P.dev[i];
  size_t size = 0, passes = 0;
  CUptiResult r;
  uint8_t *cfg = cp_pm_config_image(P.api, chip, avail, P.cupti, P.n, &size,
                                    &passes, &r, &d->host);
  d->avail = avail;
  if (cfg) {
    PARAMS(CUpti_PmSampling_Enable_Params, e, pPmSamplingObject);
    e.deviceIndex = i;
    if (!(r = CALL(cuptiPmSamplingEnable, &e))) {
      d->obj = e.pPmSamplingObject;
      if (!(r = configure(d, cfg, size)))
        d->on = 1, d->index = i;
    }
  }
  d->config = cfg;
  if (d->on)
    return 1;
  if (held_elsewhere(r))
    return refuse(r, "cuptiPmSamplingEnable/Start", i), -1;
  cp_warn("cupti: pmsampling: device %zu has no PM sampling (%s); kernel-level "
          "profiling continues without hardware metrics there", i, cupti_err(r));
  return 0;
}

/* How often the thread decodes: 64 intervals, within 2..50 ms (each decode
 * call has a fixed cost of milliseconds), so an image of MAX_SAMPLES holds
 * eight periods. */
static uint64_t period_ns(void) {
  uint64_t p = 64 * P.o.interval_ns;
  return p < 2000000 ? 2000000 : p > 50000000 ? 50000000 : p;
}

/* ---- decoding --------------------------------------------------------------- */

/* CUPTI stamps samples with the GPU's clock in Unix-epoch ns; kernel
 * records are on cproton's clock (CLOCK_MONOTONIC_RAW, the timestamp
 * callback). The offset is taken afresh per decode, so that a step of the
 * wall clock moves later samples only. */
static int64_t offset_for(uint64_t t1) {
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  uint64_t now_rt = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
  uint64_t now = cp_clock_now_ns();
  uint64_t d_rt = t1 > now_rt ? t1 - now_rt : now_rt - t1;
  uint64_t d_mono = t1 > now ? t1 - now : now - t1;
  return d_rt < d_mono ? (int64_t)(now - now_rt) : 0;
}

static void hand_over(device *d, size_t s, const CUpti_PmSampling_CounterData_GetSampleInfo_Params *si) {
  double v[CP_PM_MAX_METRICS];
  PARAMS(cp_pm_host_evaluate_params, e, pMetricValues);
  e.pHostObject = d->host;
  e.pCounterDataImage = d->data;
  e.counterDataImageSize = d->data_size;
  e.rangeIndex = s;
  e.ppMetricNames = P.cupti;
  e.numMetrics = P.n;
  e.pMetricValues = v;
  if (CALL(cuptiProfilerHostEvaluateToGpuValues, &e))
    for (size_t m = 0; m < P.n; m++)
      v[m] = NAN; /* counted as irregular by pm_attr */
  uint64_t t0 = si->startTimestamp + (uint64_t)P.offset;
  uint64_t t1 = si->endTimestamp + (uint64_t)P.offset;
  if (d->last_t1 && t0 > d->last_t1 + P.o.interval_ns / 2)
    P.lost += (t0 - d->last_t1) / P.o.interval_ns;
  d->last_t1 = t1;
  cp_pm_attr_sample((uint32_t)d->index, t0, t1, v);
  /* trace sessions: one counter track per device and counter */
  for (size_t m = 0; m < P.n && !isnan(v[m]); m++)
    cp_session_deliver_counter((uint32_t)d->index, t0, t1, P.names[m], v[m]);
}

/* Hands over samples [d->done, completed) of the image. */
static void evaluate(device *d, size_t completed) {
  uint64_t t = cp_clock_now_ns();
  for (size_t s = d->done; s < completed; s++) {
    PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params, si, endTimestamp);
    si.pPmSamplingObject = d->obj;
    si.pCounterDataImage = d->data;
    si.counterDataImageSize = d->data_size;
    si.sampleIndex = s;
    if (CALL(cuptiPmSamplingCounterDataGetSampleInfo, &si))
      continue;
    if (s == d->done)
      P.offset = offset_for(si.endTimestamp);
    hand_over(d, s, &si);
  }
  d->done = completed;
  P.eval_ns += cp_clock_now_ns() - t;
}

static size_t completed(const device *d) {
  PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params, g, numCompletedSamples);
  g.pCounterDataImage = d->data;
  g.counterDataImageSize = d->data_size;
  return CALL(cuptiPmSamplingGetCounterDataInfo, &g) ? d->done
                                                     : g.numCompletedSamples;
}

/* Decodes device `d`'s hardware buffer until it is empty, re-initializing
 * the image (its cost is per slot, so not after every decode) whenever
 * fewer than SLACK_PERIODS periods of samples would still fit. */
static void decode(device *d) {
  size_t period = (size_t)(period_ns() / P.o.interval_ns) + 1;
  for (int round = 0; round < 64; round++) {
    if (d->done + SLACK_PERIODS * period > MAX_SAMPLES)
      image_reset(d);
    PARAMS(CUpti_PmSampling_DecodeData_Params, p, overflow);
    p.pPmSamplingObject = d->obj;
    p.pCounterDataImage = d->data;
    p.counterDataImageSize = d->data_size;
    uint64_t t = cp_clock_now_ns();
    CUptiResult r = CALL(cuptiPmSamplingDecodeData, &p);
    P.decode_ns += cp_clock_now_ns() - t;
    if (r || p.overflow)
      P.overflows++;
    if (r && !P.decode_rc)
      P.decode_rc = r;
    if (r)
      return;
    evaluate(d, completed(d));
    if (p.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
      return;
    image_reset(d);
  }
}

static void decode_all(void) {
  for (int i = 0; i < P.ndev; i++)
    if (P.dev[i].on)
      decode(&P.dev[i]);
}

/* ---- the decoder thread ------------------------------------------------------ */

/* The counter set: what fits one pass. A user's list must fit whole. */
static int choose(const char *chip, const uint8_t *avail) {
  char why[512];
  size_t asked = P.n, dropped = cp_pm_config_fit(
                               P.api, chip, avail, P.cupti, P.names, &P.n,
                               why, sizeof why);
  if (dropped && P.o.user_metrics)
    return cp_error_set(CPROTON_EINVAL, "cupti: pmsampling: %s; PM sampling "
                        "reads its counters in one pass (drop it, or read it "
                        "with pmsampling:exact)", why);
  if (dropped)
    cp_warn("cupti: pmsampling: %zu of the %zu default counters left out on "
            "%s: %s", dropped, asked, chip, why);
  return CPROTON_OK;
}

/* Device i's primary context, current on this thread (CUPTI's PM
 * sampling works in a context; the application's threads are left alone).
 * Its chip name into chip. */
static int enter_device(size_t i, char *chip, size_t size) {
  CUdevice dev;
  if (P.api->cuDeviceGet(&dev, (int)i) ||
      P.api->cuDevicePrimaryCtxRetain(&P.dev[i].ctx, dev) ||
      P.api->cuCtxSetCurrent(P.dev[i].ctx))
    return 0;
  PARAMS(CUpti_Device_GetChipName_Params, c, pChipName);
  c.deviceIndex = i;
  if (CALL(cuptiDeviceGetChipName, &c) || !c.pChipName)
    return 0;
  snprintf(chip, size, "%s", c.pChipName);
  return 1;
}

static int setup(void) {
  int n = 0;
  PARAMS(CUpti_Profiler_Initialize_Params, ip, pPriv);
  if (P.api->cuInit(0) || P.api->cuDeviceGetCount(&n) || n <= 0 ||
      CALL(cuptiProfilerInitialize, &ip)) {
    cp_warn("cupti: pmsampling: no device or no CUPTI profiler here; "
            "kernel-level profiling continues without hardware metrics");
    return CPROTON_OK;
  }
  P.ndev = n < MAX_DEVICES ? n : MAX_DEVICES;
  for (int i = 0, chosen = 0; i < P.ndev; i++) {
    char chip[64];
    uint8_t *avail = enter_device((size_t)i, chip, sizeof chip)
                         ? cp_pm_availability(P.api, (size_t)i) : NULL;
    if (!avail) {
      cp_warn("cupti: pmsampling: device %d has no PM sampling here; "
              "kernel-level profiling continues without its metrics", i);
      continue;
    }
    int rc = chosen++ ? CPROTON_OK : choose(chip, avail);
    if (rc || !P.n) {
      free(avail);
      if (rc)
        return rc;
      continue;
    }
    if (device_start((size_t)i, chip, avail) < 0) /* owns avail now */
      return CPROTON_EBACKEND;
  }
  cp_pm_attr_begin(P.n, P.names, P.o.interval_ns, NULL);
  for (int i = 0; i < P.ndev; i++)
    if (P.dev[i].on)
      cp_pm_attr_device_on((uint32_t)i);
  return CPROTON_OK;
}

static void device_stop(device *d) {
  if (d->on) {
    PARAMS(CUpti_PmSampling_Stop_Params, s, pPmSamplingObject);
    s.pPmSamplingObject = d->obj;
    CALL(cuptiPmSamplingStop, &s);
    decode(d);
  }
  if (d->obj) {
    PARAMS(CUpti_PmSampling_Disable_Params, x, pPmSamplingObject);
    x.pPmSamplingObject = d->obj;
    CALL(cuptiPmSamplingDisable, &x);
  }
  cp_pm_host_free(P.api, d->host);
  free(d->avail);
  free(d->config);
  free(d->data);
  CUdevice dev;
  if (d->ctx && !P.api->cuDeviceGet(&dev, (int)(d - P.dev)))
    P.api->cuDevicePrimaryCtxRelease_v2(dev);
  *d = (device){0};
}

static void teardown(void) {
  for (int i = 0; i < MAX_DEVICES; i++)
    device_stop(&P.dev[i]);
  cp_pm_attr_settle(1);
}

/* Waits for work or the next period; returns the work (IDLE: a tick). */
static int wait_work(void) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  uint64_t ns = (uint64_t)until.tv_nsec + period_ns();
  until.tv_sec += (time_t)(ns / 1000000000ull);
  until.tv_nsec = (long)(ns % 1000000000ull);
  pthread_mutex_lock(&P.lock);
  while (P.work == IDLE &&
         pthread_cond_timedwait(&P.cond, &P.lock, &until) != ETIMEDOUT)
    ;
  int w = P.work;
  pthread_mutex_unlock(&P.lock);
  return w;
}

static void done(int rc) {
  pthread_mutex_lock(&P.lock);
  P.rc = rc;
  if (rc)
    snprintf(P.msg, sizeof P.msg, "%s", cp_error_message());
  P.work = IDLE;
  pthread_cond_broadcast(&P.cond);
  pthread_mutex_unlock(&P.lock);
}

/* A flush: everything sampled so far decoded; kernels that ended after the
 * newest sample wait up to three intervals for theirs. */
static int flush_now(void) {
  decode_all();
  struct timespec pause = {0, (long)(3 * P.o.interval_ns < 50000000
                                         ? 3 * P.o.interval_ns : 50000000)};
  nanosleep(&pause, NULL);
  decode_all();
  return cp_pm_attr_settle(1);
}

static void *loop(void *arg) {
  (void)arg;
  int rc = setup(); /* start() set WORK_START and waits for done() */
  if (rc)
    teardown();
  done(rc);
  for (int w = IDLE; !rc && w != WORK_STOP;) {
    w = wait_work();
    if (w == WORK_STOP) {
      teardown();
      done(CPROTON_OK);
    } else if (w == WORK_FLUSH) {
      done(flush_now());
    } else {
      decode_all();
      cp_pm_attr_settle(0);
    }
  }
  return NULL;
}

/* ---- the API ------------------------------------------------------------------ */

static int symbols_present(const cp_loader_api *api) {
  int ok = 1;
#define CHECK(f) ok &= api->f != NULL;
  CP_LOADER_CUPTI_PM(CHECK)
#undef CHECK
  return ok;
}

/* Hands `w` to the thread and waits until it is done; its result. */
static int request(int w) {
  pthread_mutex_lock(&P.lock);
  P.work = w;
  pthread_cond_broadcast(&P.cond);
  while (P.work != IDLE)
    pthread_cond_wait(&P.cond, &P.lock);
  int rc = P.rc;
  pthread_mutex_unlock(&P.lock);
  if (rc)
    cp_error_set(rc, "%s", P.msg);
  return rc;
}

/* A process that exits with sampling on (no finalize: Proton writes no
 * profile then) must stop the decoder thread before the CUDA runtime's exit
 * handlers tear contexts down under it. Registered after the first start,
 * hence after CUDA's own handlers, so it runs before them. */
static void stop_at_exit(void) { cp_pm_sampler_stop(); }

int cp_pm_sampler_start(const cp_loader_api *api, const cp_pm_options *o) {
  if (P.thread_on)
    return CPROTON_OK;
  if (!symbols_present(api)) {
    cp_warn("cupti: pmsampling: this CUPTI (%s) has no PM sampling API "
            "(CUDA 12.6 or newer); kernel-level profiling continues without "
            "hardware metrics", api->cupti_path);
    return CPROTON_OK;
  }
  P.api = api;
  P.o = *o;
  P.n = o->n;
  for (size_t i = 0; i < P.n; i++)
    P.cupti[i] = P.o.cupti[i], P.names[i] = P.o.name[i];
  P.lost = P.decode_ns = P.eval_ns = P.init_ns = P.overflows = 0;
  P.decode_rc = CUPTI_SUCCESS;
  pthread_mutex_lock(&P.lock);
  P.work = WORK_START;
  pthread_mutex_unlock(&P.lock);
  if (pthread_create(&P.thread, NULL, loop, NULL))
    return cp_error_set(CPROTON_ENOMEM, "cupti: pmsampling: no thread");
  pthread_mutex_lock(&P.lock);
  while (P.work != IDLE)
    pthread_cond_wait(&P.cond, &P.lock);
  int rc = P.rc;
  pthread_mutex_unlock(&P.lock);
  if (rc) {
    pthread_join(P.thread, NULL);
    return cp_error_set(rc, "%s", P.msg);
  }
  P.thread_on = 1;
  static int registered;
  if (!registered++)
    atexit(stop_at_exit);
  return CPROTON_OK;
}

int cp_pm_sampler_running(void) {
  for (int i = 0; P.thread_on && i < P.ndev; i++)
    if (P.dev[i].on)
      return 1;
  return 0;
}

int cp_pm_sampler_flush(void) {
  return P.thread_on ? request(WORK_FLUSH) : CPROTON_OK;
}

static void report(void) {
  cp_pm_attr_stats s;
  cp_pm_attr_stats_get(&s);
  cp_info("cupti: pmsampling: %llu samples every %llu ns, %llu kernels given "
          "values, %llu without a sample, %llu records too late; decoding "
          "%.1f ms, evaluating %.1f ms, image set-up %.1f ms on the decoder "
          "thread",
          (unsigned long long)s.samples, (unsigned long long)P.o.interval_ns,
          (unsigned long long)s.kernels, (unsigned long long)s.unsampled,
          (unsigned long long)s.late, P.decode_ns / 1e6, P.eval_ns / 1e6,
          P.init_ns / 1e6);
  if (P.lost || P.overflows || s.irregular > (uint64_t)P.ndev || s.errors)
    cp_warn("cupti: pmsampling: about %llu samples lost (hardware buffer "
            "overflows or failed decodes: %llu, the first %s), %llu samples "
            "dropped as irregular, %llu delivery errors; a longer interval "
            "(pmsampling:interval=N) gives the decoder more time",
            (unsigned long long)P.lost, (unsigned long long)P.overflows,
            P.decode_rc ? cupti_err(P.decode_rc) : "an overflow",
            (unsigned long long)s.irregular, (unsigned long long)s.errors);
}

void cp_pm_sampler_stop(void) {
  if (!P.thread_on)
    return;
  request(WORK_STOP);
  pthread_join(P.thread, NULL);
  P.thread_on = 0;
  report();
  cp_pm_attr_end();
  P.ndev = 0;
}
