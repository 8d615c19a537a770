/* backend/cupti/pcsampling.c -- CUPTI's PC Sampling API: per-context
 * configuration (stall reasons by name, period 2^k cycles, buffers), one
 * sampling range per context kept open from start, closed and reopened
 * where a period ends (flush; exact mode: a function about to run under a
 * second calling context, a graph launch), a range of its own for each
 * function's first launches (both modes, `first=K`), module-load cubins
 * (and, for modules loaded before sampling, the loaded objects' cubins).
 * Invariants:
 * every vendor call goes through the loader's table and is made on an
 * application thread (a flush or a launch; a drain thread calling Stop and
 * Start beside launches hung on an H100); a context whose configuration
 * CUPTI refuses is profiled at kernel level only, with one warning for the
 * run. Hot paths: ctx_seen (per launch, one relaxed load) and bracket
 * (per launch: in exact mode two hash probes under a mutex; in concurrent
 * mode a thread-local cache probe once a function's first launches are
 * done). Called by features.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_table.h"
#include "backend/cupti/callbacks.h"
#include "backend/cupti/pcs_attr.h"
#include "backend/cupti/pcs_lines.h"
#include "backend/cupti/loaded_cubins.h"
#include "backend/cupti/cubin_info.h"
#include "core/kfacts.h"
#include "backend/cupti/pcsampling.h"
#include "core/clock.h"
#include "core/context.h"
#include "core/error.h"
#include "core/log.h"
#include "core/strtab.h"
#include "cproton/cproton.h"

#define MAX_CTX 64
#define MAX_THREADS 256 /* launching threads whose launch in flight is kept */
#define SCRATCH_BYTES (16u << 20)
/* CUPTI's hardware buffer: a range spans up to the whole session, so it is
 * large (Proton's size). */
#define HARDWARE_MB 128
/* CUPTI's decoding thread wakes every SLEEP_MS (its default: 100 ms); more
 * often keeps the hardware buffer from filling and shortened Start/Stop
 * (measured, docs/benchmarks.md). */
#define SLEEP_MS 10
#define CUBIN_BYTES (1ull << 30)
#define FATBIN_BYTES (64u << 20) /* larger .nv_fatbin sections are not read:
                                    vendor libraries, built without line info */
#define MIN_CUPTI_VERSION 22 /* CUPTI 12.4: PC records carry correlationId */

typedef struct sampled_ctx {
  CUcontext ctx;
  int ok;      /* configured; 0 = refused (kernel level only) */
  int started; /* inside a cuptiPCSamplingStart/Stop range */
  CUpti_PCSamplingData data;
} sampled_ctx;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* contexts, data */
static const cp_loader_api *api;
static cp_cupti_state *state;
static cp_pcs_options opt;
static cp_pcs_stalls stalls;
static uint32_t stall_ids[CP_PCS_MAX_STALLS];
static cp_pcs *pcs;
static cp_pcs_lines *lines;
static sampled_ctx ctxs[MAX_CTX];
static int n_ctx;
static _Atomic(void *) last_ctx;
static atomic_int on, warned;
static atomic_ullong drain_errors, dropped_reported;
/* diagnostics: cuptiPCSamplingGetData calls, PC records and samples seen */
static atomic_ullong n_gets, n_pcs, n_total, n_at_disable, n_with_corr;
/* where exact mode's time goes: ns closing periods (synchronise, Stop,
 * fetch, attribute, Start); periods closed by a second context and by
 * graph launches; launches noted */
static atomic_ullong t_split_ns, n_splits, n_graph_ranges, n_noted;
/* first launches of a function in ranges of their own, and ns spent on
 * their ranges (synchronise, Stop, fetch, Start before and after) */
static atomic_ullong n_first, t_first_ns;
/* some context's range was left closed by a first launch's exit */
static atomic_int closed;
/* Exact mode: the launch each thread has in flight (API enter to exit),
 * noted again when a period closes under it (its kernel may start after
 * the Stop). Guarded by `lock`. */
typedef struct in_flight {
  int used;
  uint32_t fn;
  cp_launch_site site;
} in_flight;
static in_flight flights[MAX_THREADS];
static int n_threads;
static _Thread_local int my_slot = -1;
static _Thread_local uint32_t my_epoch; /* slots are handed out per enable */
static _Atomic uint32_t slot_epoch; /* read on the launch path too */
/* The launch of this thread that runs in a range of its own (its
 * correlation id; 0: none), and concurrent mode's cache of kernel-name
 * pointers whose first launches are done (a stale entry can only skip a
 * first-launch range, never add one). */
static _Thread_local uint32_t first_corr;
#define DONE_CACHE 64
static _Thread_local const char *first_done[DONE_CACHE];
static _Thread_local uint32_t done_epoch;

static const char **done_slot(const char *name) {
  uint32_t epoch = atomic_load_explicit(&slot_epoch, memory_order_relaxed);
  if (done_epoch != epoch) {
    memset(first_done, 0, sizeof first_done);
    done_epoch = epoch;
  }
  return &first_done[((uintptr_t)name >> 4) % DONE_CACHE];
}

static void warn_once(const char *what, CUptiResult r) {
  if (!atomic_exchange(&warned, 1))
    cp_warn("pcsampling: %s failed (%s); this GPU or driver gives no PC "
            "samples here, profiling kernels only",
            what, cp_loader_cupti_error(api, r));
}

/* ---- hooks for pcs_lines --------------------------------------------------- */

static int cubin_crc(const void *cubin, size_t size, uint64_t *crc) {
  CUpti_GetCubinCrcParams p = {.size = CUpti_GetCubinCrcParamsSize,
                               .cubinSize = size, .cubin = cubin};
  if (api->cuptiGetCubinCrc(&p) != CUPTI_SUCCESS)
    return CPROTON_EBACKEND;
  *crc = p.cubinCrc;
  return CPROTON_OK;
}

static int cubin_source(const void *cubin, size_t size, const char *fn,
                        uint64_t pc, uint32_t *line, char **file, char **dir) {
  CUpti_GetSassToSourceCorrelationParams p = {
      .size = CUpti_GetSassToSourceCorrelationParamsSize, .cubin = cubin,
      .functionName = fn, .cubinSize = size, .pcOffset = pc};
  if (api->cuptiGetSassToSourceCorrelation(&p) != CUPTI_SUCCESS)
    return CPROTON_EBACKEND;
  *line = p.lineNumber;
  *file = p.fileName;
  *dir = p.dirName;
  return CPROTON_OK;
}

/* A kernel's stack frame (local arrays, spills) as its kernel.stack_bytes
 * fact: CUPTI's records leave it out of localMemoryPerThread. */
static void note_frame(void *ctx, const char *name, uint32_t bytes) {
  (void)ctx;
  cp_kfacts_set(name, "kernel.stack_bytes", bytes, NULL);
}

/* Keeps a cubin for line mapping and notes its kernels' frames. */
static int keep(const void *cubin, size_t size) {
  int rc = cp_pcs_lines_add(lines, cubin, size);
  if (rc == CPROTON_OK)
    cp_cubin_info_frames(cubin, size, note_frame, NULL);
  return rc;
}

static void module_loaded(const void *cubin, size_t size) {
  if (lines)
    keep(cubin, size);
}

/* Modules loaded before sampling began (a CUDA C library's kernels run
 * before start(): lazy loading loads a module at its first launch) never
 * passed module_loaded; a sample naming such a cubin makes pcs_lines call
 * this, which looks the CRC up among the cubins of the device's
 * architecture in the loaded objects' fat binaries (each object read once
 * per process, its cubins indexed, not kept) and keeps the one found
 * (docs/cupti.md, "Line mapping"). */
static pthread_mutex_t recover_lock = PTHREAD_MUTEX_INITIALIZER;
static cp_loaded_cubins *loaded; /* kept for the process */
static cp_fatbin_stats recovered;
static size_t recover_failed, n_recovered;

static int keep_found(void *ctx, const void *cubin, size_t size,
                      uint64_t offset) {
  (void)ctx, (void)offset;
  keep(cubin, size); /* a refusal is counted by the store */
  return 0;
}

static unsigned sampled_arch(void) {
  cp_device_info d = {0};
  if (!state || !state->hooks.describe_device ||
      state->hooks.describe_device(0, &d) != 0)
    return 0; /* unknown: every architecture's cubins */
  return (unsigned)strtoul(d.arch, NULL, 10);
}

static void recover_cubin(cp_pcs_lines *l, uint64_t crc) {
  (void)l; /* the store, `lines`, which keep() adds to */
  pthread_mutex_lock(&recover_lock);
  if (!loaded)
    loaded = cp_loaded_cubins_new(cubin_crc, sampled_arch(), FATBIN_BYTES);
  if (loaded)
    n_recovered += (size_t)cp_loaded_cubins_find(loaded, crc, keep_found, NULL,
                                                 &recovered, &recover_failed);
  pthread_mutex_unlock(&recover_lock);
}

/* SM counts per device id, looked up once (0: unknown, the time rule). */
static _Atomic uint32_t device_sms[64];
static int time_rule; /* CPROTON_PCS_WEIGHT=time: weigh by duration only */

static uint32_t sms_of(uint32_t device) {
  if (device >= 64 || time_rule)
    return 0;
  uint32_t n = atomic_load_explicit(&device_sms[device], memory_order_relaxed);
  cp_device_info d = {0};
  if (!n && state->hooks.describe_device &&
      state->hooks.describe_device(device, &d) == 0 && d.num_sms)
    atomic_store(&device_sms[device], n = d.num_sms);
  return n;
}

/* Correlation ids of first launches whose samples were tagged (their
 * kernel records weigh nothing: the period's untagged samples are other
 * launches'). Direct-mapped; an id overwritten before its record arrives
 * only lets that record weigh. */
#define OWN_IDS 4096
static _Atomic uint32_t own_ids[OWN_IDS];

static void kernel_ran(const char *name, const void *site, uint64_t ns,
                       uint64_t blocks, uint32_t threads, uint32_t device,
                       uint32_t corr) {
  if (corr && atomic_load_explicit(&own_ids[corr % OWN_IDS],
                                   memory_order_relaxed) == corr)
    return;
  cp_pcs_note_kernel(pcs, name, site,
                     cp_pcs_kernel_weight(ns, blocks, threads, sms_of(device)));
}

/* ---- per-context configuration ----------------------------------------------- */

static CUptiResult read_stalls(CUcontext c) {
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np = {
      .size = CUpti_PCSamplingGetNumStallReasonsParamsSize, .ctx = c,
      .numStallReasons = &n};
  CUptiResult r = api->cuptiPCSamplingGetNumStallReasons(&np);
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
  if ((r = api->cuptiPCSamplingGetStallReasons(&sp)) != CUPTI_SUCCESS)
    return r;
  cp_pcs_stalls_build((const char *const *)names, idx, n, &stalls);
  cp_info("pcsampling: %zu stall reasons, %zu kept (first: %s)", n, stalls.n,
          n ? names[0] : "-");
  memcpy(stall_ids, stalls.index, stalls.n * sizeof *stall_ids);
  return CUPTI_SUCCESS;
}

static int alloc_data(CUpti_PCSamplingData *d) {
  memset(d, 0, sizeof *d);
  d->size = sizeof *d;
  d->collectNumPcs = opt.buffer_pcs;
  d->pPcData = calloc(opt.buffer_pcs, sizeof *d->pPcData);
  if (!d->pPcData)
    return CPROTON_ENOMEM;
  for (size_t i = 0; i < opt.buffer_pcs; i++)
    if (!(d->pPcData[i].stallReason =
              calloc(stalls.n ? stalls.n : 1, sizeof(CUpti_PCSamplingStallReason))))
      return CPROTON_ENOMEM;
  return CPROTON_OK;
}

static void free_data(CUpti_PCSamplingData *d) {
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
  a[0].attributeData.stallReasonData.stallReasonCount = stalls.n;
  a[0].attributeData.stallReasonData.pStallReasonIndex = stall_ids;
  a[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  a[1].attributeData.samplingPeriodData.samplingPeriod = opt.period_log2;
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
  return api->cuptiPCSamplingSetConfigurationAttribute(&p);
}

/* Opens (`start`) or closes a sampling range on `s`; caller holds `lock`. */
static void range(sampled_ctx *s, int start) {
  if (!s->ok || s->started == start)
    return;
  CUptiResult r;
  if (start) {
    CUpti_PCSamplingStartParams p = {
        .size = CUpti_PCSamplingStartParamsSize, .ctx = s->ctx};
    r = api->cuptiPCSamplingStart(&p);
  } else {
    CUpti_PCSamplingStopParams p = {.size = CUpti_PCSamplingStopParamsSize,
                                    .ctx = s->ctx};
    r = api->cuptiPCSamplingStop(&p);
  }
  cp_debug("pcsampling: cuptiPCSampling%s(ctx %p): %s", start ? "Start" : "Stop",
           (void *)s->ctx, cp_loader_cupti_error(api, r));
  if (r == CUPTI_SUCCESS)
    s->started = start;
  else if (atomic_fetch_add(&drain_errors, 1) == 0)
    cp_info("pcsampling: cuptiPCSampling%s: %s", start ? "Start" : "Stop",
            cp_loader_cupti_error(api, r));
}

/* Enables and configures sampling on `c`; caller holds `lock`. */
static void add_context(CUcontext c) {
  if (n_ctx == MAX_CTX) {
    warn_once("a 65th CUDA context", CUPTI_ERROR_MAX_LIMIT_REACHED);
    return;
  }
  sampled_ctx *s = &ctxs[n_ctx++];
  *s = (sampled_ctx){.ctx = c};
  CUpti_PCSamplingEnableParams ep = {.size = CUpti_PCSamplingEnableParamsSize,
                                     .ctx = c};
  CUptiResult r = api->cuptiPCSamplingEnable(&ep);
  cp_debug("pcsampling: cuptiPCSamplingEnable(ctx %p): %s", (void *)c,
           cp_loader_cupti_error(api, r));
  if (r != CUPTI_SUCCESS)
    return warn_once("cuptiPCSamplingEnable", r);
  if (!stalls.n && (r = read_stalls(c)) != CUPTI_SUCCESS)
    return warn_once("cuptiPCSamplingGetStallReasons", r);
  if (alloc_data(&s->data)) {
    free_data(&s->data);
    return warn_once("allocating the sample buffer", CUPTI_ERROR_OUT_OF_MEMORY);
  }
  if ((r = configure(c, &s->data)) != CUPTI_SUCCESS) {
    free_data(&s->data);
    return warn_once("cuptiPCSamplingSetConfigurationAttribute", r);
  }
  s->ok = 1;
  range(s, 1);
  cp_info("pcsampling: context %p sampled every 2^%u cycles, %s",
          (void *)c, opt.period_log2,
          opt.exact ? "exact (a period per calling context of a function)"
                    : "concurrent");
}

/* The entry of context `c`, or NULL; caller holds `lock`. */
static sampled_ctx *find_ctx(void *c) {
  for (int i = 0; i < n_ctx; i++)
    if (ctxs[i].ctx == c)
      return &ctxs[i];
  return NULL;
}

/* Launch path: a relaxed compare with the last context seen. */
static void ctx_seen(void *c) {
  if (!c || atomic_load_explicit(&last_ctx, memory_order_relaxed) == c ||
      !atomic_load_explicit(&on, memory_order_relaxed))
    return;
  pthread_mutex_lock(&lock);
  if (!find_ctx(c))
    add_context(c);
  atomic_store(&last_ctx, c);
  pthread_mutex_unlock(&lock);
}

/* Contexts that exist before start: the caller's current one, and every
 * device's primary context that is active (the runtime's, which PyTorch and
 * Triton use; the thread calling start may hold none current). Configured
 * now rather than at their next launch, so that the first launch after
 * start runs in an open range with nothing left to set up on its path. */
static void adopt_contexts(void) {
  CUcontext mine = NULL;
  if (api->cuCtxGetCurrent(&mine) != CUDA_SUCCESS)
    mine = NULL;
  ctx_seen(mine);
  int n = 0;
  if (api->cuDeviceGetCount(&n) != CUDA_SUCCESS)
    return;
  for (int i = 0; i < n; i++) {
    CUdevice d;
    unsigned flags = 0;
    int active = 0;
    CUcontext c = NULL;
    if (api->cuDeviceGet(&d, i) != CUDA_SUCCESS ||
        api->cuDevicePrimaryCtxGetState(d, &flags, &active) != CUDA_SUCCESS ||
        !active || api->cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS)
      continue;
    if (c && c != mine) {
      api->cuCtxSetCurrent(c); /* CUPTI configures the current context */
      ctx_seen(c);
      api->cuCtxSetCurrent(mine);
    }
    api->cuDevicePrimaryCtxRelease_v2(d);
  }
}

/* ---- ranges: close, fetch, attribute ------------------------------------- */

/* Takes the records in `s`'s configured buffer, then empties it. */
static void consume(sampled_ctx *s, uint32_t corr) {
  cp_debug("pcsampling: buffer of ctx %p: %zu PCs (%zu remaining), %llu "
           "samples, %llu dropped, %llu in non-user kernels, range %llu, "
           "corr %u",
           (void *)s->ctx, s->data.totalNumPcs, s->data.remainingNumPcs,
           (unsigned long long)s->data.totalSamples,
           (unsigned long long)s->data.droppedSamples,
           (unsigned long long)s->data.nonUsrKernelsTotalSamples,
           (unsigned long long)s->data.rangeId, corr);
  atomic_fetch_add(&n_pcs, s->data.totalNumPcs);
  atomic_fetch_add(&n_total, s->data.totalSamples);
  for (size_t i = 0; i < s->data.totalNumPcs; i++)
    if (s->data.pPcData[i].correlationId)
      atomic_fetch_add(&n_with_corr, 1);
  cp_pcs_add(pcs, &s->data, &stalls, corr);
  s->data.totalNumPcs = 0;
  s->data.totalSamples = 0;
  s->data.droppedSamples = 0;
  s->data.nonUsrKernelsTotalSamples = 0;
  s->data.hardwareBufferFull = 0;
}

/* Fetches everything CUPTI holds for `s` (records of launch `corr`, or 0);
 * caller holds `lock` and closed the range. Closing a range (or disabling)
 * leaves its first records in the buffer given at configuration; GetData
 * hands over the rest (remainingNumPcs), as Proton reads them. */
static void fetch(sampled_ctx *s, uint32_t corr) {
  if (!s->ok)
    return;
  consume(s, corr);
  for (int rounds = 0; rounds < 1024; rounds++) {
    CUpti_PCSamplingGetDataParams p = {
        .size = CUpti_PCSamplingGetDataParamsSize, .ctx = s->ctx,
        .pcSamplingData = &s->data};
    CUptiResult r = api->cuptiPCSamplingGetData(&p);
    if (r != CUPTI_SUCCESS) {
      if (atomic_fetch_add(&drain_errors, 1) == 0)
        cp_info("pcsampling: cuptiPCSamplingGetData: %s",
                cp_loader_cupti_error(api, r));
      return;
    }
    atomic_fetch_add(&n_gets, 1);
    consume(s, corr);
    if (!s->data.remainingNumPcs)
      return;
  }
}

/* Closes `s`'s range, fetches its records (tagged with launch `corr`, or
 * 0) and reopens it (samples of the moment between are not taken); with
 * `sync`, first waits for the context's work, so that its kernels' samples
 * belong to the range closed. `s`'s context is current; caller holds
 * `lock`. */
static void restart(sampled_ctx *s, uint32_t corr, int sync) {
  if (sync) {
    cp_context_own_calls_begin();
    api->cuCtxSynchronize();
    cp_context_own_calls_end();
  }
  range(s, 0);
  fetch(s, corr);
  range(s, 1);
}

/* Ends the period on every context. Each is made current for CUPTI; the
 * caller's own is restored. Caller holds `lock`. */
static void close_all(void) {
  CUcontext mine = NULL;
  api->cuCtxGetCurrent(&mine);
  for (int i = 0; i < n_ctx; i++) {
    if (!ctxs[i].ok)
      continue;
    if (ctxs[i].ctx != mine)
      api->cuCtxSetCurrent(ctxs[i].ctx);
    restart(&ctxs[i], 0, opt.exact);
  }
  api->cuCtxSetCurrent(mine);
}

/* Exact mode: attributes what was fetched (each function to the one site
 * it ran under in the period); launches still in flight are noted in the
 * next period. Caller holds `lock`. */
static int attribute_period(int final, uint64_t since) {
  int rc = cp_pcs_attribute(pcs, final);
  for (int i = 0; i < n_threads; i++)
    if (flights[i].used)
      cp_pcs_note_launch(pcs, flights[i].fn, &flights[i].site, 1);
  atomic_fetch_add_explicit(&t_split_ns, cp_clock_now_ns() - since, memory_order_relaxed);
  return rc;
}

static int end_period(int final) {
  uint64_t t = cp_clock_now_ns();
  close_all();
  return attribute_period(final, t);
}

static in_flight *my_flight(void) {
  if (my_slot < 0 || my_epoch != slot_epoch) {
    my_slot = n_threads < MAX_THREADS ? n_threads++ : -1;
    my_epoch = slot_epoch;
  }
  return my_slot < 0 ? NULL : &flights[my_slot];
}

/* A launch without a kernel name (a graph launch): a range of its own,
 * its samples tagged with the launch (graph kernels' samples go to the
 * graph launch's calling context, as in Proton). */
static void own_range(void *c, uint32_t corr, int enter) {
  sampled_ctx *s = find_ctx(c);
  if (!s || !s->ok)
    return;
  if (enter) {
    end_period(0);
    atomic_fetch_add_explicit(&n_graph_ranges, 1, memory_order_relaxed);
    return;
  }
  uint64_t t = cp_clock_now_ns();
  restart(s, corr, 1); /* the launching thread: c is current */
  attribute_period(0, t);
}

/* A function's first launches (`first=K`, both modes) run in a range of
 * their own, as every launch does under Proton: the context's work is
 * synchronised and the open range closed (exact: the period ends on every
 * context) before the launch, a range opened for it, and at its exit that
 * range is closed, its samples tagged with the launch and attributed. A
 * short kernel then gets the samples it gets under Proton (docs/cupti.md).
 * The launching thread, `c` current; caller holds `lock`. */
static void first_enter(void *c, uint32_t corr) {
  sampled_ctx *s = find_ctx(c);
  if (!s || !s->ok)
    return;
  uint64_t t = cp_clock_now_ns();
  if (opt.exact)
    end_period(0);
  else
    restart(s, 0, 1); /* untagged: they wait for their kernel records */
  first_corr = corr;
  atomic_store_explicit(&own_ids[corr % OWN_IDS], corr, memory_order_relaxed);
  atomic_fetch_add_explicit(&n_first, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&t_first_ns, cp_clock_now_ns() - t,
                            memory_order_relaxed);
}

/* At the exit the range is closed and left closed: the next launch on the
 * context opens it (reopen), so that a run of first launches costs one
 * Start and one Stop each, as under Proton. */
static void first_exit(void *c, uint32_t corr) {
  sampled_ctx *s = find_ctx(c);
  first_corr = 0;
  if (!s || !s->ok)
    return;
  uint64_t t = cp_clock_now_ns();
  cp_context_own_calls_begin();
  api->cuCtxSynchronize(); /* the kernel's samples are this range's */
  cp_context_own_calls_end();
  range(s, 0);
  fetch(s, corr);
  if (!s->started)
    atomic_store(&closed, 1);
  if (opt.exact)
    attribute_period(0, t);
  else
    cp_pcs_attribute_tagged(pcs);
  atomic_fetch_add_explicit(&t_first_ns, cp_clock_now_ns() - t,
                            memory_order_relaxed);
}

/* Any other launch's enter on a context whose range a first launch left
 * closed: opened again. `closed` stays set while some context is closed.
 * Caller holds `lock`. */
static void reopen(void *c) {
  sampled_ctx *s = find_ctx(c);
  if (s && s->ok && !s->started)
    range(s, 1);
  int any = 0;
  for (int i = 0; i < n_ctx; i++)
    any |= ctxs[i].ok && !ctxs[i].started;
  atomic_store(&closed, any);
}

/* Exact mode's launch enter, `fn` not a first launch: the range stays
 * open while each kernel function runs under one calling context; a
 * launch of a function that ran under another context in this period
 * ends the period first, so every sample's function names its context
 * (Proton's per-launch semantics for the profile, without a Start and a
 * Stop per launch). Caller holds `lock`. */
static void note_exact(uint32_t fn, const cp_launch_site *site, in_flight *f) {
  if (cp_pcs_note_launch(pcs, fn, site, 0) == 1) {
    end_period(0);
    atomic_fetch_add_explicit(&n_splits, 1, memory_order_relaxed);
    /* another thread's launch in flight may hold fn's other site: then
     * both share the period, split by launches (counted apportioned) */
    cp_pcs_note_launch(pcs, fn, site, 1);
  }
  atomic_fetch_add_explicit(&n_noted, 1, memory_order_relaxed);
  if (f)
    *f = (in_flight){.used = 1, .fn = fn, .site = *site};
}

/* A named launch's enter; caller holds `lock`. */
static void launch_enter(void *c, uint32_t corr, const char *name, uint32_t fn,
                         const cp_launch_site *site, in_flight *f) {
  if (opt.first && cp_pcs_take_first(pcs, fn, opt.first)) {
    /* exact: in flight, so that a period another thread ends before its
     * exit notes it (its untagged samples then find its context) */
    if (opt.exact)
      *f = (in_flight){.used = 1, .fn = fn, .site = *site};
    first_enter(c, corr);
    return;
  }
  reopen(c);
  if (opt.exact)
    note_exact(fn, site, f);
  else
    *done_slot(name) = name;
}

/* Launch enter and exit, on the launching thread (docs/cupti.md): first
 * launches in both modes, exact mode's periods and graph launches.
 * Launches into a capturing stream run nothing. */
static void bracket(void *c, uint32_t corr, const char *name,
                    const cp_launch_site *site, int enter) {
  if (!c || !atomic_load_explicit(&on, memory_order_relaxed) ||
      cp_callbacks_capturing())
    return;
  int mine = !enter && first_corr && first_corr == corr;
  if (!opt.exact && !mine &&
      (!enter || (!atomic_load_explicit(&closed, memory_order_relaxed) &&
                  (!name || *done_slot(name) == name))))
    return; /* concurrent mode: first launches and closed ranges only */
  uint32_t fn = 0;
  if (name && cp_strtab_intern(name, strlen(name), &fn))
    name = NULL;
  pthread_mutex_lock(&lock);
  in_flight none = {0}, *f = my_flight();
  if (!f)
    f = &none;
  if (!enter && f->used && opt.exact)
    f->used = 0;
  if (mine)
    first_exit(c, corr);
  else if (!name && opt.exact)
    own_range(c, corr, enter);
  else if (enter && name && site)
    launch_enter(c, corr, name, fn, site, f);
  else if (enter)
    reopen(c);
  pthread_mutex_unlock(&lock);
}

/* ---- enable / flush / disable ---------------------------------------------- */

static int supported(void) {
  uint32_t v = 0;
  if (!api->cuptiPCSamplingEnable || !api->cuptiPCSamplingGetData ||
      !api->cuptiGetSassToSourceCorrelation || !api->cuptiGetCubinCrc ||
      api->cuptiGetVersion(&v) != CUPTI_SUCCESS || v < MIN_CUPTI_VERSION) {
    warn_once("loading CUPTI's PC Sampling API (CUPTI 12.4 or newer needed)",
              CUPTI_ERROR_NOT_SUPPORTED);
    return 0;
  }
  return 1;
}

static int alloc_tables(cp_cupti_state *st) {
  static const cp_pcs_line_hooks hooks = {cubin_crc, cubin_source,
                                          recover_cubin};
  if (!lines && !(lines = cp_pcs_lines_new(&hooks, CUBIN_BYTES)))
    return CPROTON_ENOMEM;
  if (!pcs && !(pcs = cp_pcs_new(1 << 16, 1 << 14, st->corr, lines)))
    return CPROTON_ENOMEM;
  return CPROTON_OK;
}

int cp_pcsampling_enable(const cp_loader_api *a, cp_cupti_state *st,
                         const cp_pcs_options *o) {
  api = a;
  state = st;
  atomic_store(&warned, 0);
  if (!supported())
    return CPROTON_OK;
  int rc = alloc_tables(st);
  if (rc)
    return cp_error_set(rc, "out of memory starting PC sampling");
  opt = *o;
  cp_pcs_clear(pcs);
  atomic_store(&drain_errors, 0);
  atomic_store(&dropped_reported, 0);
  atomic_store(&n_gets, 0), atomic_store(&n_pcs, 0), atomic_store(&n_total, 0);
  atomic_store(&n_at_disable, 0), atomic_store(&n_with_corr, 0);
  atomic_store(&t_split_ns, 0), atomic_store(&n_splits, 0);
  atomic_store(&n_first, 0), atomic_store(&t_first_ns, 0);
  atomic_store(&closed, 0);
  atomic_store(&n_graph_ranges, 0), atomic_store(&n_noted, 0);
  pthread_mutex_lock(&lock);
  memset(flights, 0, sizeof flights);
  n_threads = 0;
  slot_epoch++;
  pthread_mutex_unlock(&lock);
  const char *w = cp_config_get("CPROTON_PCS_WEIGHT");
  time_rule = w && !strcmp(w, "time");
  for (int i = 0; i < 64; i++)
    atomic_store(&device_sms[i], 0);
  for (int i = 0; i < OWN_IDS; i++)
    atomic_store(&own_ids[i], 0);
  st->hooks.module_loaded = module_loaded;
  atomic_store(&st->hooks.kernel_ran, opt.exact ? NULL : kernel_ran);
  atomic_store(&on, 1);
  atomic_store(&st->hooks.launch_context, ctx_seen);
  atomic_store(&st->hooks.launch_bracket,
               opt.exact || opt.first ? bracket : NULL);
  adopt_contexts();
  return CPROTON_OK;
}

/* Dropped samples, as a ROOT metric of every live session (once per new
 * count) and in the log at disable. */
static void report_dropped(uint64_t dropped) {
  uint64_t before = atomic_exchange(&dropped_reported, dropped);
  if (dropped <= before)
    return;
  cp_launch_site root = {.sessions = UINT32_MAX, .epoch = UINT32_MAX};
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    root.is_op[k] = 1;
  cp_session_deliver_metric(&root, NULL, "num_dropped_samples",
                            (cp_value){.kind = CP_VALUE_INT,
                                       .u.i = (int64_t)(dropped - before)});
}

int cp_pcsampling_flush(int final) {
  if (!atomic_load(&on))
    return CPROTON_OK;
  int rc;
  pthread_mutex_lock(&lock);
  if (opt.exact) {
    rc = end_period(final);
    pthread_mutex_unlock(&lock);
  } else {
    close_all();
    pthread_mutex_unlock(&lock);
    /* Stop waited for the range's kernels: the records of those still
     * running when the kernel row flushed arrive now, so that their
     * samples find their sites instead of the fallback */
    if (final)
      api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    rc = cp_pcs_attribute(pcs, final);
  }
  cp_pcs_stats s;
  cp_pcs_get_stats(pcs, &s);
  report_dropped(s.dropped);
  return rc;
}

static void report(void) {
  cp_pcs_stats s;
  cp_pcs_lines_stats l;
  cp_pcs_get_stats(pcs, &s);
  cp_pcs_lines_get_stats(lines, &l);
  cp_info("pcsampling: %llu samples, %llu with a source line, %llu cubins; "
          "%llu fetches gave %llu PC records (%llu with a correlation id; "
          "CUPTI counted %llu samples, %llu of them in non-user kernels, "
          "which it gives no PC records for); %llu samples left at disable",
          (unsigned long long)s.samples, (unsigned long long)s.with_line,
          (unsigned long long)l.cubins, (unsigned long long)n_gets,
          (unsigned long long)n_pcs, (unsigned long long)n_with_corr,
          (unsigned long long)n_total, (unsigned long long)s.non_user,
          (unsigned long long)n_at_disable);
  cp_info("pcsampling: %llu first launches of a function in ranges of their "
          "own (first=%u), %.1f ms on those ranges",
          (unsigned long long)n_first, opt.first, t_first_ns / 1e6);
  if (opt.exact)
    cp_info("pcsampling: exact: %llu launches noted, %llu periods closed by "
            "a function's second calling context, %llu graph launches in "
            "ranges of their own, %.1f ms closing periods (%llu samples "
            "split between sites of a launch race)",
            (unsigned long long)n_noted, (unsigned long long)n_splits,
            (unsigned long long)n_graph_ranges, t_split_ns / 1e6,
            (unsigned long long)s.apportioned);
  pthread_mutex_lock(&recover_lock);
  size_t objects = 0, indexed = 0;
  if (loaded)
    cp_loaded_cubins_counts(loaded, &objects, &indexed);
  if (l.recoveries)
    cp_info("pcsampling: %llu unknown cubins looked up in the loaded "
            "objects' fat binaries, %zu found; %zu objects read, %zu cubins "
            "indexed, %llu compressed (not read), %llu for other "
            "architectures, %llu sections too large, %zu reads failed",
            (unsigned long long)l.recoveries, n_recovered, objects, indexed,
            (unsigned long long)recovered.compressed,
            (unsigned long long)recovered.other_arch,
            (unsigned long long)recovered.skipped, recover_failed);
  pthread_mutex_unlock(&recover_lock);
  if (s.dropped || s.lost || s.unattributed || s.buffer_full ||
      s.sites_full || s.unknown_stall || l.refused || drain_errors)
    cp_warn("pcsampling: %llu samples dropped by CUPTI (hardware buffer full "
            "%llu times), %llu lost (tables full), %llu unattributed, %llu "
            "with unknown stall reasons, %llu sites not kept, %llu cubins "
            "not kept, %llu failed drains (of %llu samples)",
            (unsigned long long)s.dropped, (unsigned long long)s.buffer_full,
            (unsigned long long)s.lost, (unsigned long long)s.unattributed,
            (unsigned long long)s.unknown_stall,
            (unsigned long long)s.sites_full, (unsigned long long)l.refused,
            (unsigned long long)atomic_load(&drain_errors),
            (unsigned long long)s.samples);
}

void cp_pcsampling_disable(void) {
  if (!atomic_exchange(&on, 0))
    return;
  atomic_store(&state->hooks.launch_context, NULL);
  atomic_store(&state->hooks.launch_bracket, NULL);
  atomic_store(&state->hooks.kernel_ran, NULL);
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_ctx; i++) {
    if (ctxs[i].ok) {
      ctxs[i].data.totalNumPcs = 0;
      range(&ctxs[i], 0);
      CUpti_PCSamplingDisableParams p = {
          .size = CUpti_PCSamplingDisableParamsSize, .ctx = ctxs[i].ctx};
      CUptiResult r = api->cuptiPCSamplingDisable(&p);
      cp_debug("pcsampling: cuptiPCSamplingDisable(ctx %p): %s, %zu PCs left",
               (void *)ctxs[i].ctx, cp_loader_cupti_error(api, r),
               ctxs[i].data.totalNumPcs);
      /* CUPTI leaves what it still held in the configured buffer: no
       * session is left to take it, so it is counted, not delivered */
      for (size_t k = 0; k < ctxs[i].data.totalNumPcs; k++)
        for (size_t j = 0; j < ctxs[i].data.pPcData[k].stallReasonCount; j++)
          atomic_fetch_add(&n_at_disable,
                           ctxs[i].data.pPcData[k].stallReason[j].samples);
    }
    free_data(&ctxs[i].data);
  }
  n_ctx = 0;
  atomic_store(&last_ctx, NULL);
  pthread_mutex_unlock(&lock);
  report();
}

int cproton_pcsampling_add_cubin(const void *cubin, size_t size) {
  if (!atomic_load(&on) || !lines)
    return cp_error_set(CPROTON_ESTATE,
                        "no session samples PCs (mode 'pcsampling')");
  return keep(cubin, size);
}
