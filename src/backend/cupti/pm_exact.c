/* backend/cupti/pm_exact.c -- `pmsampling:exact` (pm_exact.h): the mode's
 * life cycle and its launch hook. Each CUDA context gets the range
 * profiler (pm_exact_ctx.c) when the mode starts (active primary
 * contexts) or at its first launch; every launch is queued in launch
 * order (pm_exact_map.c) and the context's image is decoded when
 * `ranges` launches wait (before the next one runs), at each flush and at
 * stop. A graph launch closes the queue first and its own ranges are
 * counted, not attributed (no launch callback names its kernels).
 * Invariants: every vendor call is made on an application thread with
 * the context current, under `lock`; a context CUPTI refuses is profiled
 * at kernel level only, with one warning for the run.
 * Hot path: the launch hook (a mutex, a context lookup, an intern lookup
 * and a copy per launch; the launch itself is replayed by CUPTI, which
 * costs far more). Called by the CUPTI backend's feature table and by
 * unit tests. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/callbacks.h"
#include "backend/cupti/pm_exact.h"
#include "backend/cupti/pm_exact_ctx.h"
#include "core/error.h"
#include "core/log.h"
#include "cproton/cproton.h"

#define MAX_CTX 16
/* Evaluated last for every range: the weight of the storage contract. */
#define DURATION_METRIC "gpu__time_duration.sum"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const cp_loader_api *api;
static cp_cupti_state *state;
static cp_pm_exact_names stored;
static cp_pm_exact_setup setup;
static cp_pm_exact_ctx ctxs[MAX_CTX];
static int n_ctx;
static atomic_int on, warned;
static cp_pm_exact_counts counts;  /* guarded by `lock` */
static uint64_t decode_errors, contexts_lost; /* guarded by `lock` */
/* The graph launch this thread has in flight (its correlation id). */
static _Thread_local uint32_t graph_corr;
/* Set while this thread is inside the hook: a launch CUPTI or the driver
 * made from inside a decode would otherwise wait on `lock` forever. */
static _Thread_local int in_hook;

void cp_pm_exact_options_init(cp_pm_exact_options *o) {
  o->ranges = CP_PM_EXACT_RANGES;
}

/* One warning per run: `what` (CUPTI's refusal, with why) and `then`. */
static void warn_once(const char *what, const char *then) {
  if (!atomic_exchange(&warned, 1))
    cp_warn("%s; %s", what, then);
}

/* The calls of the sampling mode's loader list (CP_LOADER_CUPTI_PM) that
 * this mode makes too. */
#define SHARED_CALLS(X)                                                        \
  X(cuptiProfilerInitialize)                                                   \
  X(cuptiDeviceGetChipName)                                                    \
  X(cuptiProfilerHostInitialize)                                               \
  X(cuptiProfilerHostDeinitialize)                                             \
  X(cuptiProfilerHostConfigAddMetrics)                                         \
  X(cuptiProfilerHostGetConfigImageSize)                                       \
  X(cuptiProfilerHostGetConfigImage)                                           \
  X(cuptiProfilerHostGetNumOfPasses)                                           \
  X(cuptiProfilerHostEvaluateToGpuValues)

/* Whether this CUPTI has every call the mode makes. */
static int supported(const cp_loader_api *a) {
  int all = 1;
#define HAVE(f) all = all && a->f;
  CP_LOADER_CUPTI_RANGE(HAVE)
  SHARED_CALLS(HAVE)
#undef HAVE
  return all;
}

/* ---- contexts ------------------------------------------------------------ */

/* x for `c` (current on this thread), set up at first sight; NULL when
 * the table is full. Caller holds `lock`. */
static cp_pm_exact_ctx *ctx_of(CUcontext c) {
  for (int i = 0; i < n_ctx; i++)
    if (ctxs[i].ctx == c)
      return &ctxs[i];
  if (n_ctx == MAX_CTX) {
    contexts_lost++;
    return NULL;
  }
  cp_pm_exact_ctx *x = &ctxs[n_ctx++];
  if (cp_pm_exact_ctx_setup(api, c, &setup, x))
    warn_once(cp_error_message(), "profiling kernels only in that context");
  return x;
}

/* Decodes x (current on this thread); a failure is warned once. Caller
 * holds `lock`. */
static void decode(cp_pm_exact_ctx *x, int graph, int last) {
  if (cp_pm_exact_ctx_decode(api, x, &setup, graph, last, &counts)) {
    decode_errors++;
    warn_once(cp_error_message(),
              x->ok ? "its launches are counted as unmeasured"
                    : "profiling kernels only in that context from now on");
  }
}

/* Launch enter and exit on the launching thread (state.h's
 * launch_bracket); `name` NULL: a graph launch. Launches into a
 * capturing stream run nothing and get no range. */
static void bracket(void *c, uint32_t corr, const char *name,
                    const cp_launch_site *site, int enter) {
  int graph_exit = !enter && graph_corr && graph_corr == corr;
  if (!c || !atomic_load_explicit(&on, memory_order_relaxed) ||
      cp_callbacks_capturing() || (!enter && !graph_exit) || in_hook)
    return;
  in_hook = 1;
  pthread_mutex_lock(&lock);
  cp_pm_exact_ctx *x = ctx_of(c);
  if (x && x->ok) {
    if (!enter) { /* a graph launch's own ranges */
      decode(x, 1, 0);
      graph_corr = 0;
    } else if (!name || !site) {
      decode(x, 0, 0); /* what ran before the graph */
      graph_corr = corr;
    } else if (cp_pm_exact_map_push(&x->q, site, name) == 1) {
      decode(x, 0, 0); /* full: the image holds `ranges` */
      if (x->ok)
        cp_pm_exact_map_push(&x->q, site, name);
      else
        counts.unmeasured++;
    }
  }
  pthread_mutex_unlock(&lock);
  in_hook = 0;
}

/* ---- start / flush / stop ------------------------------------------------ */

/* Sets up the active primary contexts now (made current in turn): a
 * refusal there refuses the session; a lack of support is warned. */
static int adopt_contexts(void) {
  CUcontext mine = NULL;
  int n = 0, rc = CPROTON_OK;
  if (api->cuCtxGetCurrent(&mine) != CUDA_SUCCESS)
    mine = NULL;
  if (api->cuDeviceGetCount(&n) != CUDA_SUCCESS)
    return CPROTON_OK;
  for (int i = 0; i < n && !rc; i++) {
    CUdevice d;
    unsigned flags = 0;
    int active = 0;
    CUcontext c = NULL;
    if (api->cuDeviceGet(&d, i) != CUDA_SUCCESS ||
        api->cuDevicePrimaryCtxGetState(d, &flags, &active) != CUDA_SUCCESS ||
        !active || api->cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS)
      continue;
    api->cuCtxSetCurrent(c);
    in_hook = 1;
    pthread_mutex_lock(&lock);
    cp_pm_exact_ctx *x = ctx_of(c);
    if (x && !x->ok && x->refuse)
      rc = CPROTON_EBACKEND; /* the message is the setup's */
    pthread_mutex_unlock(&lock);
    in_hook = 0;
    api->cuCtxSetCurrent(mine);
    api->cuDevicePrimaryCtxRelease_v2(d);
  }
  return rc;
}

/* Decodes (and, `last`, frees) every context, each made current. Caller
 * holds `lock`. Returns the number of failed decodes. */
static uint64_t decode_all(int last) {
  uint64_t before = decode_errors;
  in_hook = 1;
  CUcontext mine = NULL;
  if (api->cuCtxGetCurrent(&mine) != CUDA_SUCCESS)
    mine = NULL;
  for (int i = 0; i < n_ctx; i++) {
    if (ctxs[i].ctx != mine)
      api->cuCtxSetCurrent(ctxs[i].ctx);
    decode(&ctxs[i], 0, last);
    if (last)
      cp_pm_exact_ctx_free(api, &ctxs[i]);
  }
  api->cuCtxSetCurrent(mine);
  if (last)
    n_ctx = 0;
  in_hook = 0;
  return decode_errors - before;
}

int cp_pm_exact_flush(void) {
  if (!atomic_load(&on))
    return CPROTON_OK;
  pthread_mutex_lock(&lock);
  uint64_t failed = decode_all(0);
  pthread_mutex_unlock(&lock);
  return failed ? cp_error_set(CPROTON_EBACKEND,
                               "pmsampling:exact: %llu context(s) not decoded",
                               (unsigned long long)failed)
                : CPROTON_OK;
}

/* Caller holds `lock`. */
static void report(void) {
  const cp_pm_exact_counts *c = &counts;
  cp_info("pmsampling:exact: %llu ranges decoded, %llu delivered to kernels",
          (unsigned long long)c->ranges, (unsigned long long)c->delivered);
  if (c->cupti_dropped || c->unmatched || c->unmeasured || c->graph_ranges ||
      c->eval_errors || c->deliver_errors || c->name_mismatch ||
      decode_errors || contexts_lost)
    cp_warn("pmsampling:exact: %llu ranges dropped by CUPTI, %llu ranges "
            "with no launch, %llu launches with no range, %llu ranges of "
            "graph launches not attributed, %llu ranges not evaluated, %llu "
            "values not stored, %llu ranges named otherwise than their "
            "kernel, %llu failed decodes, %llu launches in contexts beyond "
            "%d not profiled",
            (unsigned long long)c->cupti_dropped,
            (unsigned long long)c->unmatched,
            (unsigned long long)c->unmeasured,
            (unsigned long long)c->graph_ranges,
            (unsigned long long)c->eval_errors,
            (unsigned long long)c->deliver_errors,
            (unsigned long long)c->name_mismatch,
            (unsigned long long)decode_errors,
            (unsigned long long)contexts_lost, MAX_CTX);
}

/* Frees what names_of made (the duration's name is a literal). */
static void names_free(void) {
  for (size_t i = 0; setup.names && i + 1 < setup.n_names; i++)
    free((char *)setup.names[i]);
  free(setup.names);
  memset(&setup, 0, sizeof setup);
  cp_pm_exact_map_names_free(&stored);
}

/* The names CUPTI evaluates (copies of the metrics' Perfworks names, the
 * duration last) and the names values are stored under. */
static int names_of(const cp_pm_metric *metrics, size_t n, size_t ranges) {
  setup.names = calloc(n + 1, sizeof *setup.names);
  if (!setup.names)
    return cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory");
  setup.n_names = n + 1;
  setup.stored = &stored;
  setup.ranges = ranges;
  setup.names[n] = DURATION_METRIC;
  int rc = cp_pm_exact_map_names(metrics, n, &stored);
  for (size_t i = 0; i < n && !rc; i++)
    if (!(setup.names[i] = strdup(metrics[i].cupti)))
      rc = cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory");
  if (rc)
    names_free();
  return rc;
}

static void release(void) {
  void (*mine)(void *, uint32_t, const char *, const cp_launch_site *, int) =
      bracket;
  atomic_compare_exchange_strong(&state->hooks.launch_bracket, &mine, NULL);
  pthread_mutex_lock(&lock);
  decode_all(1);
  pthread_mutex_unlock(&lock);
  CUpti_Profiler_DeInitialize_Params p = {
      .structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
  api->cuptiProfilerDeInitialize(&p);
  names_free();
}

void cp_pm_exact_stop(void) {
  if (!atomic_exchange(&on, 0))
    return;
  release();
  pthread_mutex_lock(&lock);
  report();
  pthread_mutex_unlock(&lock);
}

void cp_pm_exact_counts_get(cp_pm_exact_counts *out) {
  pthread_mutex_lock(&lock);
  *out = counts;
  pthread_mutex_unlock(&lock);
}

/* Every counter known on device 0's chip, before any context exists (the
 * devices of one process are of one kind in the cases this mode serves;
 * each context's setup checks its own chip again). */
static int check_counters(const cp_loader_api *a) {
  int n = 0;
  if (a->cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1)
    return CPROTON_OK;
  return cp_pm_exact_ctx_check(a, 0, &setup);
}

static int check_args(const cp_loader_api *a, cp_cupti_state *st,
                      const cp_pm_metric *metrics, size_t n,
                      const cp_pm_exact_options *opt) {
  if (atomic_load(&on))
    return cp_error_set(CPROTON_ESTATE, "pmsampling:exact is already on");
  if (!a || !st || !metrics || !n || !opt)
    return cp_error_set(CPROTON_EINVAL, "pmsampling:exact: no counters");
  if (n > CP_PM_EXACT_MAX_METRICS)
    return cp_error_set(CPROTON_EINVAL,
                        "pmsampling:exact: %zu counters, at most %d", n,
                        CP_PM_EXACT_MAX_METRICS);
  if (!opt->ranges || opt->ranges > CP_PM_EXACT_MAX_RANGES)
    return cp_error_set(CPROTON_EINVAL,
                        "pmsampling:exact: ranges=%zu out of range 1..%u",
                        opt->ranges, CP_PM_EXACT_MAX_RANGES);
  if (atomic_load(&st->hooks.launch_bracket))
    return cp_error_set(CPROTON_ESTATE,
                        "pmsampling:exact cannot run beside another mode "
                        "that brackets every launch (pcsampling:exact)");
  return CPROTON_OK;
}

int cp_pm_exact_start(const cp_loader_api *a, cp_cupti_state *st,
                      const cp_pm_metric *metrics, size_t n,
                      const cp_pm_exact_options *opt) {
  int rc = check_args(a, st, metrics, n, opt);
  if (rc)
    return rc;
  if (!supported(a)) {
    cp_warn("pmsampling:exact: %s has no range profiler (CUPTI 12.6 or newer "
            "needed); profiling kernels only",
            a->cupti_path[0] ? a->cupti_path : "this CUPTI");
    return CPROTON_OK;
  }
  CUpti_Profiler_Initialize_Params ip = {
      .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CUptiResult r = a->cuptiProfilerInitialize(&ip);
  if (r != CUPTI_SUCCESS)
    return cp_error_set(CPROTON_EBACKEND,
                        "pmsampling:exact: cuptiProfilerInitialize failed: %s",
                        cp_loader_cupti_error(a, r));
  if ((rc = names_of(metrics, n, opt->ranges)))
    return rc;
  if ((rc = check_counters(a))) {
    names_free();
    return rc;
  }
  api = a;
  state = st;
  memset(&counts, 0, sizeof counts);
  decode_errors = contexts_lost = 0;
  atomic_store(&warned, 0);
  atomic_store(&on, 1);
  atomic_store(&st->hooks.launch_bracket, bracket);
  if ((rc = adopt_contexts())) {
    atomic_store(&on, 0);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cp_error_message());
    release();
    return cp_error_set(rc, "%s", msg);
  }
  return CPROTON_OK;
}
