/* backend/cupti/pcsampling_ctx.c -- PC sampling per CUDA context: CUPTI's
 * configuration (stall reasons by name, period 2^k cycles, buffers), the
 * sampling range opened and closed, contexts adopted at start or at their
 * first launch. Invariants: every vendor call goes through the loader's
 * table and is made on an application thread; a context whose
 * configuration CUPTI refuses is profiled at kernel level only, with one
 * warning for the run. Hot path: cp_pcsampling_ctx_seen (per launch, one
 * relaxed load when the context is the last one seen). Called by
 * pcsampling.c and pcsampling_range.c (state in pcsampling_state.h). */
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pcsampling_state.h"
#include "core/config_table.h"
#include "core/log.h"
#include "cproton/cproton.h"

#define SCRATCH_BYTES (16u << 20)
/* CUPTI's hardware buffer: a range spans up to the whole session, so it is
 * large (Proton's size). */
#define HARDWARE_MB 128
/* CUPTI's decoding thread wakes every SLEEP_MS (its default: 100 ms); more
 * often keeps the hardware buffer from filling and shortened Start/Stop
 * (measured, docs/benchmarks.md). */
#define SLEEP_MS 10

static cp_pcsampling_state *const g = &cp_pcsampling_g;

static CUptiResult read_stalls(CUcontext c) {
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np = {
      .size = CUpti_PCSamplingGetNumStallReasonsParamsSize, .ctx = c,
      .numStallReasons = &n};
  CUptiResult r = g->api->cuptiPCSamplingGetNumStallReasons(&np);
  if (r != CUPTI_SUCCESS)
    return r;
  if (n > 256)
    n = 256;
  char *names[256], store[256][CUPTI_STALL_REASON_STRING_SIZE];
  uint32_t idx[256];
  for (size_t i = 0; i < n; i++)
    names[i] = store[i];
  CUpti_PCSamplingGetStallReasonsParams sp = {
      .size = CUpti_PCSamplingGetStallReasonsParamsSize, .ctx = c,
      .numStallReasons = n, .stallReasonIndex = idx, .stallReasons = names};
  if ((r = g->api->cuptiPCSamplingGetStallReasons(&sp)) != CUPTI_SUCCESS)
    return r;
  cp_pcs_stalls_build((const char *const *)names, idx, n, &g->stalls);
  cp_info("pcsampling: %zu stall reasons, %zu kept (first: %s)", n, g->stalls.n,
          n ? names[0] : "-");
  memcpy(g->stall_ids, g->stalls.index, g->stalls.n * sizeof *g->stall_ids);
  return CUPTI_SUCCESS;
}

static int alloc_data(CUpti_PCSamplingData *d) {
  memset(d, 0, sizeof *d);
  d->size = sizeof *d;
  d->collectNumPcs = g->opt.buffer_pcs;
  d->pPcData = calloc(g->opt.buffer_pcs, sizeof *d->pPcData);
  if (!d->pPcData)
    return CPROTON_ENOMEM;
  for (size_t i = 0; i < g->opt.buffer_pcs; i++)
    if (!(d->pPcData[i].stallReason =
              calloc(g->stalls.n ? g->stalls.n : 1, sizeof(CUpti_PCSamplingStallReason))))
      return CPROTON_ENOMEM;
  return CPROTON_OK;
}

void cp_pcsampling_ctx_free_data(CUpti_PCSamplingData *d) {
  for (size_t i = 0; d->pPcData && i < d->collectNumPcs; i++)
    free(d->pPcData[i].stallReason);
  free(d->pPcData);
  memset(d, 0, sizeof *d);
}

typedef CUpti_PCSamplingConfigurationInfo attr;

/* Tuning knobs (docs/cupti.md): a positive integer from the environment. */
static size_t knob(const char *name, size_t dflt) {
  const char *v = cp_config_get(name);
  char *end;
  unsigned long long n = v ? strtoull(v, &end, 10) : 0;
  return v && *v && !*end && n ? (size_t)n : dflt;
}

static CUptiResult configure(CUcontext c, CUpti_PCSamplingData *d) {
  attr a[8];
  memset(a, 0, sizeof a);
  a[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  a[0].attributeData.stallReasonData.stallReasonCount = g->stalls.n;
  a[0].attributeData.stallReasonData.pStallReasonIndex = g->stall_ids;
  a[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  a[1].attributeData.samplingPeriodData.samplingPeriod = g->opt.period_log2;
  a[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
  a[2].attributeData.scratchBufferSizeData.scratchBufferSize =
      knob("CPROTON_PCS_SCRATCH_MB", SCRATCH_BYTES >> 20) << 20;
  a[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
  a[3].attributeData.hardwareBufferSizeData.hardwareBufferSize =
      knob("CPROTON_PCS_HW_MB", HARDWARE_MB) << 20;
  a[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  /* Continuous collection in start/stop ranges: without ranges GetData gave
   * no records while sampling ran (they all appeared at Disable, measured on
   * an H100), so ranges are closed to hand samples over; KERNEL_SERIALIZED
   * gave no samples at all there. */
  a[4].attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  a[5].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  a[5].attributeData.samplingDataBufferData.samplingDataBuffer = d;
  a[6].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  a[6].attributeData.enableStartStopControlData.enableStartStopControl = 1;
  a[7].attributeType =
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN;
  a[7].attributeData.workerThreadPeriodicSleepSpanData
      .workerThreadPeriodicSleepSpan = (uint32_t)knob("CPROTON_PCS_SLEEP_MS", SLEEP_MS);
  CUpti_PCSamplingConfigurationInfoParams p = {
      .size = CUpti_PCSamplingConfigurationInfoParamsSize, .ctx = c,
      .numAttributes = 8, .pPCSamplingConfigurationInfo = a};
  return g->api->cuptiPCSamplingSetConfigurationAttribute(&p);
}

/* Opens (`start`) or closes a sampling range on `s`; caller holds `lock`. */
void cp_pcsampling_ctx_range(sampled_ctx *s, int start) {
  if (!s->ok || s->started == start)
    return;
  CUptiResult r;
  if (start) {
    CUpti_PCSamplingStartParams p = {
        .size = CUpti_PCSamplingStartParamsSize, .ctx = s->ctx};
    r = g->api->cuptiPCSamplingStart(&p);
  } else {
    CUpti_PCSamplingStopParams p = {.size = CUpti_PCSamplingStopParamsSize,
                                    .ctx = s->ctx};
    r = g->api->cuptiPCSamplingStop(&p);
  }
  cp_debug("pcsampling: cuptiPCSampling%s(ctx %p): %s", start ? "Start" : "Stop",
           (void *)s->ctx, cp_loader_cupti_error(g->api, r));
  if (r == CUPTI_SUCCESS)
    s->started = start;
  else if (atomic_fetch_add(&g->drain_errors, 1) == 0)
    cp_info("pcsampling: cuptiPCSampling%s: %s", start ? "Start" : "Stop",
            cp_loader_cupti_error(g->api, r));
}

/* Enables and configures sampling on `c`; caller holds `lock`. */
static void add_context(CUcontext c) {
  if (g->n_ctx == MAX_CTX) {
    cp_pcsampling_warn_once("a 65th CUDA context",
                            CUPTI_ERROR_MAX_LIMIT_REACHED);
    return;
  }
  sampled_ctx *s = &g->ctxs[g->n_ctx++];
  *s = (sampled_ctx){.ctx = c};
  CUpti_PCSamplingEnableParams ep = {.size = CUpti_PCSamplingEnableParamsSize,
                                     .ctx = c};
  CUptiResult r = g->api->cuptiPCSamplingEnable(&ep);
  cp_debug("pcsampling: cuptiPCSamplingEnable(ctx %p): %s", (void *)c,
           cp_loader_cupti_error(g->api, r));
  if (r != CUPTI_SUCCESS)
    return cp_pcsampling_warn_once("cuptiPCSamplingEnable", r);
  if (!g->stalls.n && (r = read_stalls(c)) != CUPTI_SUCCESS)
    return cp_pcsampling_warn_once("cuptiPCSamplingGetStallReasons", r);
  if (alloc_data(&s->data)) {
    cp_pcsampling_ctx_free_data(&s->data);
    return cp_pcsampling_warn_once("allocating the sample buffer",
                                   CUPTI_ERROR_OUT_OF_MEMORY);
  }
  if ((r = configure(c, &s->data)) != CUPTI_SUCCESS) {
    cp_pcsampling_ctx_free_data(&s->data);
    return cp_pcsampling_warn_once(
        "cuptiPCSamplingSetConfigurationAttribute", r);
  }
  s->ok = 1;
  cp_pcsampling_ctx_range(s, 1);
  cp_info("pcsampling: context %p sampled every 2^%u cycles, %s",
          (void *)c, g->opt.period_log2,
          g->opt.exact ? "exact (a period per calling context of a function)"
                    : "concurrent");
}

/* The entry of context `c`, or NULL; caller holds `lock`. */
sampled_ctx *cp_pcsampling_ctx_find(void *c) {
  for (int i = 0; i < g->n_ctx; i++)
    if (g->ctxs[i].ctx == c)
      return &g->ctxs[i];
  return NULL;
}

/* Launch path: a relaxed compare with the last context seen. */
void cp_pcsampling_ctx_seen(void *c) {
  if (!c || atomic_load_explicit(&g->last_ctx, memory_order_relaxed) == c ||
      !atomic_load_explicit(&g->on, memory_order_relaxed))
    return;
  pthread_mutex_lock(&g->lock);
  if (!cp_pcsampling_ctx_find(c))
    add_context(c);
  atomic_store(&g->last_ctx, c);
  pthread_mutex_unlock(&g->lock);
}

/* Contexts that exist before start: the caller's current one, and every
 * device's primary context that is active (the runtime's, which PyTorch and
 * Triton use; the thread calling start may hold none current). Configured
 * now rather than at their next launch, so that the first launch after
 * start runs in an open range with nothing left to set up on its path. */
void cp_pcsampling_ctx_adopt(void) {
  CUcontext mine = NULL;
  if (g->api->cuCtxGetCurrent(&mine) != CUDA_SUCCESS)
    mine = NULL;
  cp_pcsampling_ctx_seen(mine);
  int n = 0;
  if (g->api->cuDeviceGetCount(&n) != CUDA_SUCCESS)
    return;
  for (int i = 0; i < n; i++) {
    CUdevice d;
    unsigned flags = 0;
    int active = 0;
    CUcontext c = NULL;
    if (g->api->cuDeviceGet(&d, i) != CUDA_SUCCESS ||
        g->api->cuDevicePrimaryCtxGetState(d, &flags, &active) != CUDA_SUCCESS ||
        !active || g->api->cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS)
      continue;
    if (c && c != mine) {
      g->api->cuCtxSetCurrent(c); /* CUPTI configures the current context */
      cp_pcsampling_ctx_seen(c);
      g->api->cuCtxSetCurrent(mine);
    }
    g->api->cuDevicePrimaryCtxRelease_v2(d);
  }
}

