/* backend/cupti/cupti_backend.c -- the thin vendor layer of the CUPTI
 * backend: load the libraries, subscribe, route CUPTI's buffer callbacks to
 * the pool and to records.c, route its API callbacks to callbacks.c, and
 * report at stop.
 * Invariant: after cp_cupti_backend_teardown() no vendor function is called;
 * every vendor call goes through the loader's table.
 * Hot path: none here (buffer callbacks run once per filled buffer).
 * Called by the session layer (session/start.c) through cp_cupti_backend, and by inject.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/cudadrv.h"
#include "backend/cupti/graphtime.h"
#include "backend/cupti/callbacks.h"
#include "backend/cupti/pcs_mode.h"
#include "backend/cupti/pm_mode.h"
#include "backend/cupti/config.h"
#include "backend/cupti/features.h"
#include "backend/cupti/cupti_backend.h"
#include "backend/cupti/adaptive.h"
#include "backend/cupti/lazy.h"
#include "backend/cupti/loader.h"
#include "backend/cupti/pool.h"
#include "backend/cupti/records.h"
#include "backend/cupti/stats.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int load_tried, load_rc;
static char load_msg[1024];
static cp_cupti_config config;
static cp_loader_api api;
static cp_cupti_state state; /* tables live until exit: CUPTI may call late */
static cp_pool *pool;
static atomic_int running, torn_down;
/* Set while stopping: the last session is gone (and the session layer holds
 * its slot lock while calling stop), so completed buffers are recycled
 * without delivering anything. */
static atomic_int discarding;

/* ---- hooks given to the pure modules ------------------------------------- */

static int describe_device(uint32_t id, cp_device_info *d) {
  CUdevice dev;
  if (api.cuDeviceGet(&dev, (int)id) != CUDA_SUCCESS)
    return CPROTON_EBACKEND;
  return cp_cudadrv_describe((cp_cudevice)dev, d);
}

static int graph_node_id(void *node, uint64_t *id) {
  return api.cuptiGetGraphNodeId((CUgraphNode)node, id) == CUPTI_SUCCESS
             ? CPROTON_OK
             : CPROTON_EBACKEND;
}

static uint64_t CUPTIAPI timestamp(void) { return cp_clock_now_ns(); }

static CUpti_SubscriberHandle subscriber;

static int launch_callbacks(uint32_t cbid, int on) {
  return api.cuptiEnableCallback((uint32_t)on, subscriber,
                                 CUPTI_CB_DOMAIN_DRIVER_API, cbid) ==
                 CUPTI_SUCCESS
             ? CPROTON_OK
             : CPROTON_EBACKEND;
}

/* ---- activity buffers ------------------------------------------------------
 */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size,
                                      size_t *max_records) {
  *buf = cp_pool_take(pool);
  *size = *buf ? cp_pool_buffer_size(pool) : 0;
  *max_records = 0;
  if (!*buf)
    atomic_fetch_add(&state.stats.no_buffer, 1);
}

static int next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec) {
  CUptiResult r = api.cuptiActivityGetNextRecord(buf, valid, rec);
  return r == CUPTI_SUCCESS ? 1 : r == CUPTI_ERROR_MAX_LIMIT_REACHED ? 0 : -1;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buf, size_t size, size_t valid) {
  if (buf && valid && !atomic_load(&discarding) &&
      !(state.ablate & CP_ABLATE_NO_RECORDS))
    cp_records_process(&state, buf, valid, next_record);
  size_t dropped = 0;
  if (ctx && api.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) ==
                 CUPTI_SUCCESS)
    atomic_fetch_add(&state.stats.dropped, dropped);
  cp_pool_give(pool, buf);
}

/* ---- load ---------------------------------------------------------------- */

static int load_locked(void) {
  if (!load_tried) {
    load_tried = 1;
    cp_cupti_config_from_env(&config);
    load_rc = cp_loader_open(&config, &api);
    snprintf(load_msg, sizeof load_msg, "%s", cp_error_message());
  }
  if (load_rc)
    return cp_error_set(load_rc, "%s", load_msg);
  return CPROTON_OK;
}

static int cupti_available(void) {
  pthread_mutex_lock(&lock);
  int rc = load_locked();
  pthread_mutex_unlock(&lock);
  return rc == CPROTON_OK;
}

void cp_cupti_backend_library_path(char *buf, size_t size) {
  pthread_mutex_lock(&lock);
  snprintf(buf, size, "%s", load_tried && !load_rc ? api.cupti_path : "");
  pthread_mutex_unlock(&lock);
}

static int alloc_state(void) {
  if (!state.corr && !(state.corr = cp_corr_new(config.ring_slots)))
    return CPROTON_ENOMEM;
  if (!state.graphs && !(state.graphs = cp_graph_new(config.graph_nodes, config.graph_max)))
    return CPROTON_ENOMEM;
  if (!pool && !(pool = cp_pool_new(config.buffer_size, config.n_buffers,
                                    config.max_buffers)))
    return CPROTON_ENOMEM;
  state.hooks.describe_device = describe_device;
  state.hooks.graph_node_id = graph_node_id;
  state.hooks.launch_callbacks = launch_callbacks;
  state.ablate = config.ablate;
  return CPROTON_OK;
}

/* ---- start / flush / stop ------------------------------------------------ */

static cp_features_env env;

static int subscribe(void) {
  /* the ablation "notimestamp" (measurement only) keeps CUPTI's clock */
  CUptiResult r = config.ablate & CP_ABLATE_NO_TIMESTAMP ? CUPTI_SUCCESS
                  : api.cuptiActivityRegisterTimestampCallback
                      ? api.cuptiActivityRegisterTimestampCallback(timestamp)
                      : CUPTI_ERROR_NOT_SUPPORTED;
  if (r != CUPTI_SUCCESS)
    cp_warn("cupti: GPU timestamps not on cproton's clock (%s); traces may "
            "misalign",
            cp_loader_cupti_error(&api, r));
  if ((r = api.cuptiActivityRegisterCallbacks(buffer_requested,
                                              buffer_completed)))
    return cp_features_fail(&api, r, "cuptiActivityRegisterCallbacks");
  if ((r = api.cuptiSubscribe(&subscriber, cp_callbacks_dispatch, &state)))
    return cp_features_fail(&api, r, "cuptiSubscribe");
  env.api = &api;
  env.subscriber = subscriber;
  env.state = &state;
  env.config = &config;
  int rc = cp_features_enable(&env);
  /* lazy callbacks: not with PC sampling or the exact hardware-metric mode
   * (they bracket or name every launch) nor with an ablation */
  if (!rc && config.lazy && !env.mode.enabled && !env.pm.exact &&
      !config.ablate) {
    rc = cp_lazy_start(&state);
    if (rc)
      cp_features_disable(&env);
  }
  /* adaptive batches: not with PC sampling (it weighs every record) nor
   * with an ablation */
  if (!rc && config.adaptive && !env.mode.enabled && !config.ablate &&
      (rc = cp_adaptive_new(config.adaptive, &state.adaptive))) {
    cp_lazy_stop(&state);
    cp_features_disable(&env);
  }
  if (rc)
    api.cuptiUnsubscribe(subscriber);
  return rc;
}

/* Graph-level mode's event pairs (graphtime.c), kept across sessions;
 * the driver is loaded only for this mode. */
static int graph_timing(int on) {
  if (on && state.gtime)
    cp_graphtime_stats_reset(state.gtime);
  if (!on || state.gtime)
    return CPROTON_OK;
  const cp_cudadrv *d;
  int rc = cp_cudadrv_get(&d);
  if (rc)
    return cp_error_set(rc, "cupti: graph-level mode needs the CUDA driver: %s",
                        cproton_last_error());
  state.gtime = cp_graphtime_new(d);
  return state.gtime ? CPROTON_OK : CPROTON_ENOMEM;
}

/* Launches graph-level mode could not time, at stop. */
static void graph_timing_report(void) {
  cp_graphtime_stats s;
  if (!state.gtime || !state.graph_level)
    return;
  cp_graphtime_stats_get(state.gtime, &s);
  if (s.dry || s.errors)
    cp_warn("cupti: graph-level mode: %llu graph launches timed; %llu not "
            "timed because all %d event pairs were in flight, %llu because "
            "a CUDA event call failed",
            (unsigned long long)s.timed, (unsigned long long)s.dry,
            CP_GRAPHTIME_PAIRS, (unsigned long long)s.errors);
}

static int start_locked(const cp_pcs_options *mode, const cp_pm_options *pm) {
  int rc = alloc_state();
  if (rc)
    return rc;
  if (config.bad[0]) /* read at load; refused at every start */
    return cp_error_set(CPROTON_EINVAL, "cupti: %s", config.bad);
  /* Read at every start: the Python layer sets them per Triton version. */
  cp_cupti_config_graphs_from_env(&config);
  if (config.graph_level < 0 || config.graph_op_names < 0)
    return cp_error_set(CPROTON_EINVAL,
                        "cupti: %s must be %s",
                        config.graph_level < 0 ? "CPROTON_CUPTI_GRAPHS"
                                               : "CPROTON_GRAPH_KERNEL_NAMES",
                        config.graph_level < 0 ? "\"node\", \"graph\" or \"graph-only\""
                                               : "\"hook\" or \"kernel\"");
  cp_corr_clear(state.corr);
  cp_graph_clear(state.graphs);
  cp_graph_set_op_names(state.graphs, config.graph_op_names);
  state.graph_level = config.graph_level;
  rc = graph_timing(config.graph_level > 0);
  if (rc)
    return rc;
  for (int i = 0; i < CP_WARNED_GRAPHS; i++)
    atomic_store(&state.warned_graphs[i], 0);
  cp_stats_reset(&state.stats);
  atomic_store(&state.devices_seen, 0);
  atomic_store(&discarding, 0);
  env.mode = *mode;
  env.pm = *pm;
  /* Read at every start, as Proton reads its knob (TRITON_ENABLE_NVTX). */
  config.nvtx = cp_cupti_config_nvtx_from_env();
  if (config.nvtx)
    cp_inject_set_nvtx_path(api.cupti_path);
  return subscribe();
}

/* The backend's mode families: "" and pcsampling[...] (pcs_mode.c),
 * pmsampling[...] (pm_mode.c); one parse per string. */
static int parse_mode(const char *mode, cp_pcs_options *pcs,
                      cp_pm_options *pm) {
  if (!cp_pm_mode_is(mode)) {
    memset(pm, 0, sizeof *pm);
    return cp_pcs_mode_parse(mode, pcs);
  }
  cp_pcs_mode_parse(NULL, pcs);
  return cp_pm_mode_parse(mode, pm);
}

static int check_mode(const char *mode) {
  cp_pcs_options pcs;
  cp_pm_options pm;
  return parse_mode(mode, &pcs, &pm);
}

static int mode_same(const char *a, const char *b) {
  cp_pm_options x, y;
  int pa = cp_pm_mode_is(a), pb = cp_pm_mode_is(b);
  if (!pa && !pb)
    return cp_pcs_mode_same(a, b);
  return pa && pb && !cp_pm_mode_parse(a, &x) && !cp_pm_mode_parse(b, &y) &&
         cp_pm_options_same(&x, &y);
}

/* Called for every session: the first one starts the features its mode
 * wants; session/start.c refuses later sessions whose mode differs. */
static int cupti_start(const char *mode) {
  cp_pcs_options o;
  cp_pm_options pm;
  int rc = parse_mode(mode, &o, &pm);
  if (rc)
    return rc;
  pthread_mutex_lock(&lock);
  rc = atomic_load(&torn_down)
           ? cp_error_set(CPROTON_ESTATE, "cupti: process is exiting")
           : load_locked();
  if (!rc && !atomic_load(&running)) {
    rc = start_locked(&o, &pm);
    if (!rc)
      atomic_store(&running, 1);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* Not under `lock`: a forced flush may run buffer_completed right here, and
 * record delivery takes only the core's read lock. */
static int cupti_flush(void) {
  if (!atomic_load(&running) || atomic_load(&torn_down))
    return CPROTON_OK;
  /* graph nodes destroyed before this flush began: their records are
   * delivered by it, so their entries can go (graph.h) */
  uint32_t gen = cp_graph_flush_begin(state.graphs);
  int rc = cp_features_flush(&env);
  if (!rc)
    cp_graph_flushed(state.graphs, gen);
  /* after the records: their batches too */
  int arc = state.adaptive ? cp_adaptive_flush(state.adaptive) : CPROTON_OK;
  return rc ? rc : arc;
}

/* Partial batches delivered, counts logged, the table freed. */
static void adaptive_stop(void) {
  if (!state.adaptive)
    return;
  if (cp_adaptive_flush(state.adaptive))
    atomic_fetch_add(&state.stats.adaptive_errors, 1);
  uint64_t batched, batches;
  cp_adaptive_counts(state.adaptive, &batched, &batches);
  cp_info("cupti: adaptive mode: %llu kernel records delivered in %llu "
          "batches (counts and times exact)",
          (unsigned long long)batched, (unsigned long long)batches);
  cp_adaptive_free(state.adaptive);
  state.adaptive = NULL;
}

static void cupti_stop(void) {
  if (!atomic_load(&running))
    return;
  atomic_store(&discarding, 1);
  if (!atomic_load(&torn_down)) {
    cp_lazy_stop(&state);
    cp_features_disable(&env);
    api.cuptiUnsubscribe(subscriber);
  }
  adaptive_stop();
  atomic_store(&running, 0);
  if (cp_corr_spilled(state.corr))
    cp_info("cupti: %llu correlation entries spilled (records read more "
            "than %zu launches late), %llu of them expired unread from the "
            "full spill map; a record that needed one is counted below",
            (unsigned long long)cp_corr_spilled(state.corr),
            cp_corr_capacity(state.corr),
            (unsigned long long)cp_corr_expired(state.corr));
  cp_stats_report(&state.stats, cp_corr_capacity(state.corr));
  graph_timing_report();
}

void cp_cupti_backend_teardown(void) { atomic_store(&torn_down, 1); }

/* Library unload or process exit after every atexit handler: CUDA may be
 * gone already, so no vendor call is safe past this point. */
__attribute__((destructor)) static void at_unload(void) {
  cp_cupti_backend_teardown();
}

const cp_backend_ops cp_cupti_backend = {
    .name = "cupti",
    .available = cupti_available,
    .start = cupti_start,
    .flush = cupti_flush,
    .stop = cupti_stop,
    .is_default_candidate = 1,
    .times_kernels = 1,
    .mode_compatible = mode_same,
    .check_mode = check_mode,
};
