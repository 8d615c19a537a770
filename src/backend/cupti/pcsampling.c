/* backend/cupti/pcsampling.c -- CUPTI's PC Sampling API, the entry
 * points: enable (the API probed, tables allocated, counters reset, state
 * hooks installed, the existing contexts adopted), flush (the period ended
 * on every context, samples attributed, drops reported as a ROOT metric),
 * disable (sampling stopped on every context, the counters reported once),
 * the hooks pcs_lines.c calls (cubin CRC, SASS-to-source, and the recovery
 * of cubins of modules loaded before sampling from the loaded objects' fat
 * binaries), the kept cubins' kernel frames (kernel.stack_bytes) and
 * concurrent mode's kernel weights. Per-context configuration and ranges
 * are in pcsampling_ctx.c, periods and the launch bracket in
 * pcsampling_range.c, their shared state in pcsampling_state.h.
 * Invariants: every vendor call goes through the loader's table and is
 * made on an application thread (a flush or a launch; a drain thread
 * calling Stop and Start beside launches hung on an H100); a context whose
 * configuration CUPTI refuses is profiled at kernel level only, with one
 * warning for the run. Hot path: kernel_ran (per kernel record in
 * concurrent mode: one relaxed load, a weight). Called by features.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_table.h"
#include "backend/cupti/pcs_attr.h"
#include "backend/cupti/pcs_lines.h"
#include "backend/cupti/loaded_cubins.h"
#include "backend/cupti/cubin_info.h"
#include "core/kfacts.h"
#include "backend/cupti/pcsampling.h"
#include "backend/cupti/pcsampling_state.h"
#include "core/error.h"
#include "core/log.h"
#include "cproton/cproton.h"

#define CUBIN_BYTES (1ull << 30)
#define FATBIN_BYTES (64u << 20) /* larger .nv_fatbin sections are not read:
                                    vendor libraries, built without line info */
#define MIN_CUPTI_VERSION 22 /* CUPTI 12.4: PC records carry correlationId */

cp_pcsampling_state cp_pcsampling_g = {.lock = PTHREAD_MUTEX_INITIALIZER};
static cp_pcsampling_state *const g = &cp_pcsampling_g;

void cp_pcsampling_warn_once(const char *what, CUptiResult r) {
  if (!atomic_exchange(&g->warned, 1))
    cp_warn("pcsampling: %s failed (%s); this GPU or driver gives no PC "
            "samples here, profiling kernels only",
            what, cp_loader_cupti_error(g->api, r));
}

/* ---- hooks for pcs_lines --------------------------------------------------- */

static int cubin_crc(const void *cubin, size_t size, uint64_t *crc) {
  CUpti_GetCubinCrcParams p = {.size = CUpti_GetCubinCrcParamsSize,
                               .cubinSize = size, .cubin = cubin};
  if (g->api->cuptiGetCubinCrc(&p) != CUPTI_SUCCESS)
    return CPROTON_EBACKEND;
  *crc = p.cubinCrc;
  return CPROTON_OK;
}

static int cubin_source(const void *cubin, size_t size, const char *fn,
                        uint64_t pc, uint32_t *line, char **file, char **dir) {
  CUpti_GetSassToSourceCorrelationParams p = {
      .size = CUpti_GetSassToSourceCorrelationParamsSize, .cubin = cubin,
      .functionName = fn, .cubinSize = size, .pcOffset = pc};
  if (g->api->cuptiGetSassToSourceCorrelation(&p) != CUPTI_SUCCESS)
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
  int rc = cp_pcs_lines_add(g->lines, cubin, size);
  if (rc == CPROTON_OK)
    cp_cubin_info_frames(cubin, size, note_frame, NULL);
  return rc;
}

static void module_loaded(const void *cubin, size_t size) {
  if (g->lines)
    keep(cubin, size);
}

/* Modules loaded before sampling began (a CUDA C library's kernels run
 * before start(): lazy loading loads a module at its first launch) never
 * passed module_loaded; a sample naming such a cubin makes pcs_lines call
 * this, which looks the CRC up among the cubins of the device's
 * architecture in the loaded objects' fat binaries (each object read once
 * per process, its cubins indexed, not kept) and keeps the one found
 * (docs/cupti.md, "Line mapping"). File-static, not in the shared state:
 * only this file's recovery and report use them, and the index outlives
 * every session. */
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
  if (!g->state || !g->state->hooks.describe_device ||
      g->state->hooks.describe_device(0, &d) != 0)
    return 0; /* unknown: every architecture's cubins */
  return (unsigned)strtoul(d.arch, NULL, 10);
}

static void recover_cubin(cp_pcs_lines *l, uint64_t crc) {
  (void)l; /* the store, `g->lines`, which keep() adds to */
  pthread_mutex_lock(&recover_lock);
  if (!loaded)
    loaded = cp_loaded_cubins_new(cubin_crc, sampled_arch(), FATBIN_BYTES);
  if (loaded)
    n_recovered += (size_t)cp_loaded_cubins_find(loaded, crc, keep_found, NULL,
                                                 &recovered, &recover_failed);
  pthread_mutex_unlock(&recover_lock);
}

/* The SM count of `device`, looked up once (0: unknown, the time rule). */
static uint32_t sms_of(uint32_t device) {
  if (device >= 64 || g->time_rule)
    return 0;
  uint32_t n = atomic_load_explicit(&g->device_sms[device], memory_order_relaxed);
  cp_device_info d = {0};
  if (!n && g->state->hooks.describe_device &&
      g->state->hooks.describe_device(device, &d) == 0 && d.num_sms)
    atomic_store(&g->device_sms[device], n = d.num_sms);
  return n;
}

/* Concurrent mode's weights from kernel records; a first launch whose
 * samples were tagged (own_ids) weighs nothing. */
static void kernel_ran(const char *name, const void *site, uint64_t ns,
                       uint64_t blocks, uint32_t threads, uint32_t device,
                       uint32_t corr) {
  if (corr && atomic_load_explicit(&g->own_ids[corr % OWN_IDS],
                                   memory_order_relaxed) == corr)
    return;
  cp_pcs_note_kernel(g->pcs, name, site,
                     cp_pcs_kernel_weight(ns, blocks, threads, sms_of(device)));
}

/* ---- enable / flush / disable ---------------------------------------------- */

static int supported(void) {
  uint32_t v = 0;
  if (!g->api->cuptiPCSamplingEnable || !g->api->cuptiPCSamplingGetData ||
      !g->api->cuptiGetSassToSourceCorrelation || !g->api->cuptiGetCubinCrc ||
      g->api->cuptiGetVersion(&v) != CUPTI_SUCCESS || v < MIN_CUPTI_VERSION) {
    cp_pcsampling_warn_once(
        "loading CUPTI's PC Sampling API (CUPTI 12.4 or newer needed)",
        CUPTI_ERROR_NOT_SUPPORTED);
    return 0;
  }
  return 1;
}

static int alloc_tables(cp_cupti_state *st) {
  static const cp_pcs_line_hooks hooks = {cubin_crc, cubin_source,
                                          recover_cubin};
  if (!g->lines && !(g->lines = cp_pcs_lines_new(&hooks, CUBIN_BYTES)))
    return CPROTON_ENOMEM;
  if (!g->pcs && !(g->pcs = cp_pcs_new(1 << 16, 1 << 14, st->corr, g->lines)))
    return CPROTON_ENOMEM;
  return CPROTON_OK;
}

int cp_pcsampling_enable(const cp_loader_api *a, cp_cupti_state *st,
                         const cp_pcs_options *o) {
  g->api = a;
  g->state = st;
  atomic_store(&g->warned, 0);
  if (!supported())
    return CPROTON_OK;
  int rc = alloc_tables(st);
  if (rc)
    return cp_error_set(rc, "out of memory starting PC sampling");
  g->opt = *o;
  cp_pcs_clear(g->pcs);
  atomic_store(&g->drain_errors, 0);
  atomic_store(&g->dropped_reported, 0);
  atomic_store(&g->n_gets, 0), atomic_store(&g->n_pcs, 0);
  atomic_store(&g->n_total, 0);
  atomic_store(&g->n_at_disable, 0), atomic_store(&g->n_with_corr, 0);
  atomic_store(&g->t_split_ns, 0), atomic_store(&g->n_splits, 0);
  atomic_store(&g->n_first, 0), atomic_store(&g->t_first_ns, 0);
  atomic_store(&g->closed, 0);
  atomic_store(&g->n_graph_ranges, 0), atomic_store(&g->n_noted, 0);
  pthread_mutex_lock(&g->lock);
  memset(g->flights, 0, sizeof g->flights);
  g->n_threads = 0;
  g->slot_epoch++;
  pthread_mutex_unlock(&g->lock);
  const char *w = cp_config_get("CPROTON_PCS_WEIGHT");
  g->time_rule = w && !strcmp(w, "time");
  for (int i = 0; i < 64; i++)
    atomic_store(&g->device_sms[i], 0);
  for (int i = 0; i < OWN_IDS; i++)
    atomic_store(&g->own_ids[i], 0);
  st->hooks.module_loaded = module_loaded;
  atomic_store(&st->hooks.kernel_ran, g->opt.exact ? NULL : kernel_ran);
  atomic_store(&g->on, 1);
  atomic_store(&st->hooks.launch_context, cp_pcsampling_ctx_seen);
  atomic_store(&st->hooks.launch_bracket,
               g->opt.exact || g->opt.first ? cp_pcsampling_range_bracket
                                            : NULL);
  cp_pcsampling_ctx_adopt();
  return CPROTON_OK;
}

/* Dropped samples, as a ROOT metric of every live session (once per new
 * count) and in the log at disable. */
static void report_dropped(uint64_t dropped) {
  uint64_t before = atomic_exchange(&g->dropped_reported, dropped);
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
  if (!atomic_load(&g->on))
    return CPROTON_OK;
  int rc;
  pthread_mutex_lock(&g->lock);
  if (g->opt.exact) {
    rc = cp_pcsampling_range_end_period(final);
    pthread_mutex_unlock(&g->lock);
  } else {
    cp_pcsampling_range_close_all();
    pthread_mutex_unlock(&g->lock);
    /* Stop waited for the range's kernels: the records of those still
     * running when the kernel row flushed arrive now, so that their
     * samples find their sites instead of the fallback */
    if (final)
      g->api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    rc = cp_pcs_attribute(g->pcs, final);
  }
  cp_pcs_stats s;
  cp_pcs_get_stats(g->pcs, &s);
  report_dropped(s.dropped);
  return rc;
}

static void report(void) {
  cp_pcs_stats s;
  cp_pcs_lines_stats l;
  cp_pcs_get_stats(g->pcs, &s);
  cp_pcs_lines_get_stats(g->lines, &l);
  cp_info("pcsampling: %llu samples, %llu with a source line, %llu cubins; "
          "%llu fetches gave %llu PC records (%llu with a correlation id; "
          "CUPTI counted %llu samples, %llu of them in non-user kernels, "
          "which it gives no PC records for); %llu samples left at disable",
          (unsigned long long)s.samples, (unsigned long long)s.with_line,
          (unsigned long long)l.cubins, (unsigned long long)g->n_gets,
          (unsigned long long)g->n_pcs, (unsigned long long)g->n_with_corr,
          (unsigned long long)g->n_total, (unsigned long long)s.non_user,
          (unsigned long long)g->n_at_disable);
  cp_info("pcsampling: %llu first launches of a function in ranges of their "
          "own (first=%u), %.1f ms on those ranges",
          (unsigned long long)g->n_first, g->opt.first, g->t_first_ns / 1e6);
  if (g->opt.exact)
    cp_info("pcsampling: exact: %llu launches noted, %llu periods closed by "
            "a function's second calling context, %llu graph launches in "
            "ranges of their own, %.1f ms closing periods (%llu samples "
            "split between sites of a launch race)",
            (unsigned long long)g->n_noted, (unsigned long long)g->n_splits,
            (unsigned long long)g->n_graph_ranges, g->t_split_ns / 1e6,
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
      s.sites_full || s.unknown_stall || l.refused || g->drain_errors)
    cp_warn("pcsampling: %llu samples dropped by CUPTI (hardware buffer full "
            "%llu times), %llu lost (tables full), %llu unattributed, %llu "
            "with unknown stall reasons, %llu sites not kept, %llu cubins "
            "not kept, %llu failed drains (of %llu samples)",
            (unsigned long long)s.dropped, (unsigned long long)s.buffer_full,
            (unsigned long long)s.lost, (unsigned long long)s.unattributed,
            (unsigned long long)s.unknown_stall,
            (unsigned long long)s.sites_full, (unsigned long long)l.refused,
            (unsigned long long)atomic_load(&g->drain_errors),
            (unsigned long long)s.samples);
}

void cp_pcsampling_disable(void) {
  if (!atomic_exchange(&g->on, 0))
    return;
  atomic_store(&g->state->hooks.launch_context, NULL);
  atomic_store(&g->state->hooks.launch_bracket, NULL);
  atomic_store(&g->state->hooks.kernel_ran, NULL);
  pthread_mutex_lock(&g->lock);
  for (int i = 0; i < g->n_ctx; i++) {
    if (g->ctxs[i].ok) {
      g->ctxs[i].data.totalNumPcs = 0;
      cp_pcsampling_ctx_range(&g->ctxs[i], 0);
      CUpti_PCSamplingDisableParams p = {
          .size = CUpti_PCSamplingDisableParamsSize, .ctx = g->ctxs[i].ctx};
      CUptiResult r = g->api->cuptiPCSamplingDisable(&p);
      cp_debug("pcsampling: cuptiPCSamplingDisable(ctx %p): %s, %zu PCs left",
               (void *)g->ctxs[i].ctx, cp_loader_cupti_error(g->api, r),
               g->ctxs[i].data.totalNumPcs);
      /* CUPTI leaves what it still held in the configured buffer: no
       * session is left to take it, so it is counted, not delivered */
      for (size_t k = 0; k < g->ctxs[i].data.totalNumPcs; k++)
        for (size_t j = 0; j < g->ctxs[i].data.pPcData[k].stallReasonCount; j++)
          atomic_fetch_add(&g->n_at_disable,
                           g->ctxs[i].data.pPcData[k].stallReason[j].samples);
    }
    cp_pcsampling_ctx_free_data(&g->ctxs[i].data);
  }
  g->n_ctx = 0;
  atomic_store(&g->last_ctx, NULL);
  pthread_mutex_unlock(&g->lock);
  report();
}

int cproton_pcsampling_add_cubin(const void *cubin, size_t size) {
  if (!atomic_load(&g->on) || !g->lines)
    return cp_error_set(CPROTON_ESTATE,
                        "no session samples PCs (mode 'pcsampling')");
  return keep(cubin, size);
}
