/* backend/cupti/features.c -- the feature table {name, wanted, enable,
 * flush, disable}. Invariant: a row is disabled only if it was enabled, and
 * flushed rows deliver kernel records before PC samples (the concurrent
 * sampler weighs its attribution with them). Not a hot path. Called by
 * cupti_backend.c. */
#include <stddef.h>

#include "backend/cupti/callbacks.h"
#include "backend/cupti/features.h"
#include "backend/cupti/pcsampling.h"
#include "backend/cupti/pm_exact.h"
#include "backend/cupti/pm_sampler.h"
#include "backend/cupti/records.h"
#include "core/error.h"
#include "core/log.h"

int cp_features_fail(const cp_loader_api *api, CUptiResult r,
                     const char *what) {
  const char *hint = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                         ? " (another CUPTI tool is attached: Proton, "
                           "torch.profiler, Nsight?)"
                         : "";
  return cp_error_set(CPROTON_EBACKEND, "cupti: %s failed: %s%s", what,
                      cp_loader_cupti_error(api, r), hint);
}

static int callbacks(cp_features_env *e, cp_callbacks_group g, int on) {
  size_t n;
  const cp_callbacks_id *ids = cp_callbacks_list(&n);
  for (size_t i = 0; i < n; i++) {
    if (ids[i].group != g)
      continue;
    CUptiResult r = e->api->cuptiEnableCallback((uint32_t)on, e->subscriber,
                                                ids[i].domain, ids[i].cbid);
    if (r != CUPTI_SUCCESS && ids[i].domain == CUPTI_CB_DOMAIN_NVTX)
      r = e->api->cuptiEnableDomain((uint32_t)on, e->subscriber,
                                    CUPTI_CB_DOMAIN_NVTX);
    if (r != CUPTI_SUCCESS && on)
      return cp_features_fail(e->api, r, "cuptiEnableCallback");
  }
  return CPROTON_OK;
}

/* ---- rows ------------------------------------------------------------------ */

static int always(const cp_features_env *e) { return (void)e, 1; }
static int nvtx_wanted(const cp_features_env *e) { return e->config->nvtx; }
static int pcs_wanted(const cp_features_env *e) { return e->mode.pcs.enabled; }

/* The kernel records' kind. Under PC sampling, serialized kernel records
 * (KIND_KERNEL), as Proton enables them: CUPTI's continuous PC sampling is
 * not meant to run beside concurrent-kernel tracing, and on an H100 a
 * 1 us fill kernel launched first in a process got samples in every
 * fresh run under serialized records but in half of them under concurrent
 * ones (docs/cupti.md, "PC sampling"). */
static CUpti_ActivityKind kernel_kind(const cp_features_env *e) {
  return e->mode.pcs.enabled ? CUPTI_ACTIVITY_KIND_KERNEL
                         : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
}

static int kernels_on(cp_features_env *e) {
  unsigned ablate = e->config->ablate;
  int rc = ablate & CP_ABLATE_NO_CALLBACK ? 0 : callbacks(e, CP_CB_KERNELS, 1);
  CUptiResult r;
  /* graph-only: graph launches are timed by events, nothing else is
   * recorded, so CUPTI makes no kernel record (docs/cupti.md) */
  if ((ablate & CP_ABLATE_NO_ACTIVITY) || e->config->graph_level == 2)
    return rc;
  if (!rc && (r = e->api->cuptiActivityEnable(kernel_kind(e))) != CUPTI_SUCCESS)
    rc = cp_features_fail(e->api, r, "cuptiActivityEnable(kernel records)");
  return rc;
}
/* Graph-level mode's launches are read here too: a flush waits for the
 * graphs launched before it (graphtime.c). */
static int kernels_flush(cp_features_env *e) {
  CUptiResult r =
      e->api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (e->state->gtime)
    cp_graphtime_drain(e->state->gtime, cp_records_graph_launch, e->state);
  return r == CUPTI_SUCCESS ? CPROTON_OK
                            : cp_features_fail(e->api, r, "cuptiActivityFlushAll");
}
static void kernels_off(cp_features_env *e) {
  e->api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  e->api->cuptiActivityDisable(kernel_kind(e));
  callbacks(e, CP_CB_KERNELS, 0);
  if (e->state->gtime) /* no launch is timed past here: read the rest */
    cp_graphtime_drain(e->state->gtime, cp_records_graph_launch, e->state);
}

/* Graph-node callbacks only per node: graph-level mode's one record per
 * launch never reads a node's capture context, so it neither asks CUPTI
 * for node ids inside graph construction, instantiation and destruction
 * nor keeps a table of nodes (docs/cupti.md, "Graph-level mode"). */
static int graphs_on(cp_features_env *e) {
  if (e->config->ablate & CP_ABLATE_NO_GRAPH_CB)
    return CPROTON_OK; /* measurement: no graph-node or capture callbacks */
  int rc = callbacks(e, CP_CB_GRAPHS, 1);
  if (!rc && !e->config->graph_level)
    rc = callbacks(e, CP_CB_NODES, 1);
  return rc;
}
static void graphs_off(cp_features_env *e) {
  callbacks(e, CP_CB_NODES, 0);
  callbacks(e, CP_CB_GRAPHS, 0);
}

/* Host synchronizations as metrics of the calling context (the advisor's
 * host_sync evidence), on request only: they are metrics that Proton's
 * files never hold, and a scope with a metric is another kind of event in
 * Proton 3.9's trace (its test_trace and test_scope_exclusive failed when
 * they were always on). */
static int syncs_wanted(const cp_features_env *e) {
  return e->config->host_syncs && !(e->config->ablate & CP_ABLATE_NO_CALLBACK);
}
static int syncs_on(cp_features_env *e) { return callbacks(e, CP_CB_SYNC, 1); }
static void syncs_off(cp_features_env *e) { callbacks(e, CP_CB_SYNC, 0); }

static int nvtx_on(cp_features_env *e) {
  cp_callbacks_set_nvtx(1);
  return callbacks(e, CP_CB_NVTX, 1);
}
static void nvtx_off(cp_features_env *e) {
  cp_callbacks_set_nvtx(0);
  callbacks(e, CP_CB_NVTX, 0);
}

static int pcs_on(cp_features_env *e) {
  int rc = callbacks(e, CP_CB_PCS, 1);
  return rc ? rc : cp_pcsampling_enable(e->api, e->state, &e->mode.pcs);
}
static int pcs_flush(cp_features_env *e) {
  return (void)e, cp_pcsampling_flush(1);
}
static void pcs_off(cp_features_env *e) {
  cp_pcsampling_disable();
  callbacks(e, CP_CB_PCS, 0);
}

/* PM sampling: kernel records are flushed before the sampler's last
 * settlement, so that every kernel of the session finds its samples. */
static int pm_wanted(const cp_features_env *e) {
  return e->mode.pm.enabled && !e->mode.pm.exact;
}
static int pm_on(cp_features_env *e) {
  return cp_pm_sampler_start(e->api, &e->mode.pm);
}
static int pm_flush(cp_features_env *e) {
  return (void)e, cp_pm_sampler_flush();
}
static void pm_off(cp_features_env *e) {
  e->api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cp_pm_sampler_stop();
}

/* pmsampling:exact: the range profiler (pm_exact.c), the same counters
 * per launch. */
static int pmx_wanted(const cp_features_env *e) {
  return e->mode.pm.enabled && e->mode.pm.exact;
}
static int pmx_on(cp_features_env *e) {
  cp_pm_metric m[CP_PM_MAX_METRICS];
  for (size_t i = 0; i < e->mode.pm.n; i++)
    m[i] = (cp_pm_metric){e->mode.pm.name[i], e->mode.pm.cupti[i], 0, e->mode.pm.cupti[i]};
  cp_pm_exact_options o;
  cp_pm_exact_options_init(&o);
  o.ranges = e->mode.pm.ranges;
  return cp_pm_exact_start(e->api, e->state, m, e->mode.pm.n, &o);
}
static int pmx_flush(cp_features_env *e) {
  return (void)e, cp_pm_exact_flush();
}
static void pmx_off(cp_features_env *e) {
  e->api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cp_pm_exact_stop();
}

static const struct {
  const char *name;
  int (*wanted)(const cp_features_env *);
  int (*enable)(cp_features_env *);
  int (*flush)(cp_features_env *); /* NULL: nothing buffered */
  void (*disable)(cp_features_env *);
} rows[] = {
    {"kernels", always, kernels_on, kernels_flush, kernels_off},
    {"graphs", always, graphs_on, NULL, graphs_off},
    {"host_syncs", syncs_wanted, syncs_on, NULL, syncs_off},
    {"nvtx", nvtx_wanted, nvtx_on, NULL, nvtx_off},
    {"pcsampling", pcs_wanted, pcs_on, pcs_flush, pcs_off},
    {"pmsampling", pm_wanted, pm_on, pm_flush, pm_off},
    {"pmexact", pmx_wanted, pmx_on, pmx_flush, pmx_off},
};
#define N_ROWS (sizeof rows / sizeof *rows)

static unsigned enabled; /* bit i: row i enabled */

int cp_features_enable(cp_features_env *e) {
  enabled = 0;
  for (size_t i = 0; i < N_ROWS; i++) {
    if (!rows[i].wanted(e))
      continue;
    int rc = rows[i].enable(e);
    if (rc) {
      cp_features_disable(e);
      return rc;
    }
    enabled |= 1u << i;
  }
  return CPROTON_OK;
}

int cp_features_flush(cp_features_env *e) {
  int rc = CPROTON_OK;
  for (size_t i = 0; i < N_ROWS; i++)
    if ((enabled >> i & 1) && rows[i].flush) {
      int r = rows[i].flush(e);
      rc = rc ? rc : r;
    }
  return rc;
}

void cp_features_disable(cp_features_env *e) {
  for (size_t i = N_ROWS; i-- > 0;)
    if (enabled >> i & 1)
      rows[i].disable(e);
  enabled = 0;
}
