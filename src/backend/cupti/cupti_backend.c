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
#include "backend/cupti/cupti_mode.h"
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

/* The instance: all of the backend's state, one per process (CUPTI's
 * subscriber is process-wide). `state`'s tables live until exit: CUPTI may
 * call late. */
static struct cupti_backend {
  pthread_mutex_t lock;
  int load_tried, load_rc;
  char load_msg[1024];
  cp_cupti_config config;
  cp_loader_api api;
  cp_cupti_state state;
  cp_pool *pool;
  atomic_int running, torn_down;
  /* Set while stopping: the last session is gone (and the session layer
   * holds its slot lock while calling stop), so completed buffers are
   * recycled without delivering anything. */
  atomic_int discarding;
  CUpti_SubscriberHandle subscriber;
  cp_features_env env; /* what the feature rows work with */
} self = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- hooks given to the pure modules ------------------------------------- */

static int describe_device(uint32_t id, cp_device_info *d) {
  CUdevice dev;
  if (self.api.cuDeviceGet(&dev, (int)id) != CUDA_SUCCESS)
    return CPROTON_EBACKEND;
  return cp_cudadrv_describe((cp_cudevice)dev, d);
}

static int graph_node_id(void *node, uint64_t *id) {
  return self.api.cuptiGetGraphNodeId((CUgraphNode)node, id) == CUPTI_SUCCESS
             ? CPROTON_OK
             : CPROTON_EBACKEND;
}

static uint64_t CUPTIAPI timestamp(void) { return cp_clock_now_ns(); }

static int launch_callbacks(uint32_t cbid, int on) {
  return self.api.cuptiEnableCallback((uint32_t)on, self.subscriber,
                                 CUPTI_CB_DOMAIN_DRIVER_API, cbid) ==
                 CUPTI_SUCCESS
             ? CPROTON_OK
             : CPROTON_EBACKEND;
}

/* ---- activity buffers ------------------------------------------------------
 */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size,
                                      size_t *max_records) {
  *buf = cp_pool_take(self.pool);
  *size = *buf ? cp_pool_buffer_size(self.pool) : 0;
  *max_records = 0;
  if (!*buf)
    atomic_fetch_add(&self.state.stats.no_buffer, 1);
}

static int next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec) {
  CUptiResult r = self.api.cuptiActivityGetNextRecord(buf, valid, rec);
  return r == CUPTI_SUCCESS ? 1 : r == CUPTI_ERROR_MAX_LIMIT_REACHED ? 0 : -1;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buf, size_t size, size_t valid) {
  if (buf && valid && !atomic_load(&self.discarding) &&
      !(self.state.ablate & CP_ABLATE_NO_RECORDS))
    cp_records_process(&self.state, buf, valid, next_record);
  size_t dropped = 0;
  if (ctx && self.api.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) ==
                 CUPTI_SUCCESS)
    atomic_fetch_add(&self.state.stats.dropped, dropped);
  cp_pool_give(self.pool, buf);
}

/* ---- load ---------------------------------------------------------------- */

static int load_locked(void) {
  if (!self.load_tried) {
    self.load_tried = 1;
    cp_cupti_config_from_env(&self.config);
    self.load_rc = cp_loader_open(&self.config, &self.api);
    snprintf(self.load_msg, sizeof self.load_msg, "%s", cp_error_message());
  }
  if (self.load_rc)
    return cp_error_set(self.load_rc, "%s", self.load_msg);
  return CPROTON_OK;
}

static int cupti_available(void) {
  pthread_mutex_lock(&self.lock);
  int rc = load_locked();
  pthread_mutex_unlock(&self.lock);
  return rc == CPROTON_OK;
}

void cp_cupti_backend_library_path(char *buf, size_t size) {
  pthread_mutex_lock(&self.lock);
  snprintf(buf, size, "%s", self.load_tried && !self.load_rc ? self.api.cupti_path : "");
  pthread_mutex_unlock(&self.lock);
}

static int alloc_state(void) {
  cp_cupti_state *st = &self.state;
  const cp_cupti_config *c = &self.config;
  if (!st->corr && !(st->corr = cp_corr_new(c->ring_slots)))
    return CPROTON_ENOMEM;
  if (!st->graphs && !(st->graphs = cp_graph_new(c->graph_nodes, c->graph_max)))
    return CPROTON_ENOMEM;
  if (!self.pool &&
      !(self.pool = cp_pool_new(c->buffer_size, c->n_buffers, c->max_buffers)))
    return CPROTON_ENOMEM;
  st->hooks.describe_device = describe_device;
  st->hooks.graph_node_id = graph_node_id;
  st->hooks.launch_callbacks = launch_callbacks;
  st->ablate = c->ablate;
  return CPROTON_OK;
}

/* ---- start / flush / stop ------------------------------------------------ */

static int subscribe(void) {
  /* the ablation "notimestamp" (measurement only) keeps CUPTI's clock */
  CUptiResult r = self.config.ablate & CP_ABLATE_NO_TIMESTAMP ? CUPTI_SUCCESS
                  : self.api.cuptiActivityRegisterTimestampCallback
                      ? self.api.cuptiActivityRegisterTimestampCallback(timestamp)
                      : CUPTI_ERROR_NOT_SUPPORTED;
  if (r != CUPTI_SUCCESS)
    cp_warn("cupti: GPU timestamps not on cproton's clock (%s); traces may "
            "misalign",
            cp_loader_cupti_error(&self.api, r));
  if ((r = self.api.cuptiActivityRegisterCallbacks(buffer_requested,
                                              buffer_completed)))
    return cp_features_fail(&self.api, r, "cuptiActivityRegisterCallbacks");
  if ((r = self.api.cuptiSubscribe(&self.subscriber, cp_callbacks_dispatch, &self.state)))
    return cp_features_fail(&self.api, r, "cuptiSubscribe");
  self.env.api = &self.api;
  self.env.subscriber = self.subscriber;
  self.env.state = &self.state;
  self.env.config = &self.config;
  int rc = cp_features_enable(&self.env);
  /* lazy callbacks: not with PC sampling or the exact hardware-metric mode
   * (they bracket or name every launch) nor with an ablation */
  if (!rc && self.config.lazy && !self.env.mode.pcs.enabled &&
      !self.env.mode.pm.exact && !self.config.ablate) {
    rc = cp_lazy_start(&self.state);
    if (rc)
      cp_features_disable(&self.env);
  }
  /* adaptive batches: not with PC sampling (it weighs every record) nor
   * with an ablation */
  if (!rc && self.config.adaptive && !self.env.mode.pcs.enabled && !self.config.ablate &&
      (rc = cp_adaptive_new(self.config.adaptive, &self.state.adaptive))) {
    cp_lazy_stop(&self.state);
    cp_features_disable(&self.env);
  }
  if (rc)
    self.api.cuptiUnsubscribe(self.subscriber);
  return rc;
}

/* Graph-level mode's event pairs (graphtime.c), kept across sessions;
 * the driver is loaded only for this mode. */
static int graph_timing(int on) {
  if (on && self.state.gtime)
    cp_graphtime_stats_reset(self.state.gtime);
  if (!on || self.state.gtime)
    return CPROTON_OK;
  const cp_cudadrv *d;
  int rc = cp_cudadrv_get(&d);
  if (rc)
    return cp_error_set(rc, "cupti: graph-level mode needs the CUDA driver: %s",
                        cproton_last_error());
  self.state.gtime = cp_graphtime_new(d);
  return self.state.gtime ? CPROTON_OK : CPROTON_ENOMEM;
}

/* Launches graph-level mode could not time, at stop. */
static void graph_timing_report(void) {
  cp_graphtime_stats s;
  if (!self.state.gtime || !self.state.graph_level)
    return;
  cp_graphtime_stats_get(self.state.gtime, &s);
  if (s.dry || s.errors)
    cp_warn("cupti: graph-level mode: %llu graph launches timed; %llu not "
            "timed because all %d event pairs were in flight, %llu because "
            "a CUDA event call failed",
            (unsigned long long)s.timed, (unsigned long long)s.dry,
            CP_GRAPHTIME_PAIRS, (unsigned long long)s.errors);
}

static int start_locked(const cp_cupti_mode *mode) {
  int rc = alloc_state();
  if (rc)
    return rc;
  if (self.config.bad[0]) /* read at load; refused at every start */
    return cp_error_set(CPROTON_EINVAL, "cupti: %s", self.config.bad);
  /* Read at every start: the Python layer sets them per Triton version. */
  cp_cupti_config_graphs_from_env(&self.config);
  if (self.config.graph_level < 0 || self.config.graph_op_names < 0)
    return cp_error_set(CPROTON_EINVAL,
                        "cupti: %s must be %s",
                        self.config.graph_level < 0 ? "CPROTON_CUPTI_GRAPHS"
                                               : "CPROTON_GRAPH_KERNEL_NAMES",
                        self.config.graph_level < 0 ? "\"node\", \"graph\" or \"graph-only\""
                                               : "\"hook\" or \"kernel\"");
  cp_corr_clear(self.state.corr);
  cp_graph_clear(self.state.graphs);
  cp_graph_set_op_names(self.state.graphs, self.config.graph_op_names);
  self.state.graph_level = self.config.graph_level;
  rc = graph_timing(self.config.graph_level > 0);
  if (rc)
    return rc;
  for (int i = 0; i < CP_WARNED_GRAPHS; i++)
    atomic_store(&self.state.warned_graphs[i], 0);
  cp_stats_reset(&self.state.stats);
  atomic_store(&self.state.devices_seen, 0);
  atomic_store(&self.discarding, 0);
  self.env.mode = *mode;
  /* Read at every start, as Proton reads its knob (TRITON_ENABLE_NVTX). */
  self.config.nvtx = cp_cupti_config_nvtx_from_env();
  if (self.config.nvtx)
    cp_inject_set_nvtx_path(self.api.cupti_path);
  return subscribe();
}

/* Called for the first session on the backend, with its mode parsed once
 * by the session layer (cupti_mode.c): it starts the features that mode
 * wants; session/start.c refuses later sessions whose mode differs. */
static int cupti_start(const cp_backend_config *config) {
  pthread_mutex_lock(&self.lock);
  int rc = atomic_load(&self.torn_down)
           ? cp_error_set(CPROTON_ESTATE, "cupti: process is exiting")
           : load_locked();
  if (!rc && !atomic_load(&self.running)) {
    rc = start_locked(cp_cupti_mode_of(config));
    if (!rc)
      atomic_store(&self.running, 1);
  }
  pthread_mutex_unlock(&self.lock);
  return rc;
}

/* Not under `self.lock`: a forced flush may run buffer_completed right
 * here, and record delivery takes only the core's read lock. */
static int cupti_flush(void) {
  if (!atomic_load(&self.running) || atomic_load(&self.torn_down))
    return CPROTON_OK;
  /* graph nodes destroyed before this flush began: their records are
   * delivered by it, so their entries can go (graph.h) */
  uint32_t gen = cp_graph_flush_begin(self.state.graphs);
  int rc = cp_features_flush(&self.env);
  if (!rc)
    cp_graph_flushed(self.state.graphs, gen);
  /* after the records: their batches too */
  int arc = self.state.adaptive ? cp_adaptive_flush(self.state.adaptive) : CPROTON_OK;
  return rc ? rc : arc;
}

/* Partial batches delivered, counts logged, the table freed. */
static void adaptive_stop(void) {
  if (!self.state.adaptive)
    return;
  if (cp_adaptive_flush(self.state.adaptive))
    atomic_fetch_add(&self.state.stats.adaptive_errors, 1);
  uint64_t batched, batches;
  cp_adaptive_counts(self.state.adaptive, &batched, &batches);
  cp_info("cupti: adaptive mode: %llu kernel records delivered in %llu "
          "batches (counts and times exact)",
          (unsigned long long)batched, (unsigned long long)batches);
  cp_adaptive_free(self.state.adaptive);
  self.state.adaptive = NULL;
}

static void cupti_stop(void) {
  if (!atomic_load(&self.running))
    return;
  atomic_store(&self.discarding, 1);
  if (!atomic_load(&self.torn_down)) {
    cp_lazy_stop(&self.state);
    cp_features_disable(&self.env);
    self.api.cuptiUnsubscribe(self.subscriber);
  }
  adaptive_stop();
  atomic_store(&self.running, 0);
  if (cp_corr_spilled(self.state.corr))
    cp_info("cupti: %llu correlation entries spilled (records read more "
            "than %zu launches late), %llu of them expired unread from the "
            "full spill map; a record that needed one is counted below",
            (unsigned long long)cp_corr_spilled(self.state.corr),
            cp_corr_capacity(self.state.corr),
            (unsigned long long)cp_corr_expired(self.state.corr));
  cp_stats_report(&self.state.stats, cp_corr_capacity(self.state.corr));
  graph_timing_report();
}

/* PC sampling maps samples to lines through each module's cubin. */
static int wants_loaded_cubins(const cp_backend_config *config) {
  return cp_cupti_mode_of(config)->pcs.enabled;
}

void cp_cupti_backend_teardown(void) { atomic_store(&self.torn_down, 1); }

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
    .probe = cp_cudadrv_probe,
    .parse_mode = cp_cupti_mode_parse_config,
    .same_mode = cp_cupti_mode_same_config,
    .wants_loaded_cubins = wants_loaded_cubins,
};
