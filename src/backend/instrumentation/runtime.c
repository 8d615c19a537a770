/* backend/instrumentation/runtime.c -- the "instrumentation" backend: a
 * pool of device profile buffers, asynchronous copy-back, and a worker
 * thread that decodes off the launch path.
 *
 *   launching thread                      decoder threads (2-8)
 *   cproton_instr_alloc  -> pool buffer
 *   (kernel launch)
 *   cproton_instr_launch -> capture site,
 *     on the copy stream: the device
 *     reduction + a copy of its totals
 *     (tree mode), or a copy of the whole
 *     buffer (traces, reduce=host) into
 *     pinned host memory; cuEventRecord
 *     -> queue                             cuEventSynchronize, decode (or
 *                                          take the totals), deliver,
 *                                          buffers back to pool
 *
 * Here: kernels (their scope names interned) and the backend's ops; the
 * pool is in runtime_pool.c, launches and the decoders in
 * runtime_queue.c, their shared state in runtime_state.h.
 * Invariant: a device buffer is handed out again only after the copy of its
 * launch completed, so a kernel never writes into a buffer being read. A
 * free buffer has every CTA's magic word and its first CP_AGG_MAX_BYTES
 * zero, so any kernel may take it: records see no stale header, in-kernel
 * sums start from zero. No call on the launching thread waits for the GPU. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_table.h"
#include "backend/backend.h"
#include "backend/cudadrv.h"
#include "backend/instrumentation/mode.h"
#include "backend/instrumentation/runtime.h"
#include "backend/instrumentation/runtime_state.h"
#include "core/error.h"
#include "core/log.h"
#include "core/strtab.h"

cp_instr_runtime cp_instr_rt = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                .work = PTHREAD_COND_INITIALIZER,
                                .idle = PTHREAD_COND_INITIALIZER,
                                .freed = PTHREAD_COND_INITIALIZER};
static cp_instr_runtime *const g = &cp_instr_rt;

/* ---- kernels ---------------------------------------------------------------- */

static int copy_scopes(cproton_instr_kernel *k, const cproton_buffer_layout *l) {
  uint32_t n = l->n_scopes;
  k->names = calloc(n ? n : 1, sizeof *k->names);
  k->parents = calloc(n ? n : 1, sizeof *k->parents);
  k->name_ids = calloc(n ? n : 1, sizeof *k->name_ids);
  if (!k->names || !k->parents || !k->name_ids)
    return CPROTON_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    const char *s = l->scope_names[i] ? l->scope_names[i] : "?";
    if (!(k->names[i] = strdup(s)) ||
        cp_strtab_intern(s, strlen(s), &k->name_ids[i]))
      return CPROTON_ENOMEM;
    k->parents[i] = l->scope_parents ? l->scope_parents[i] : -1;
    k->has_events |= k->parents[i] == CPROTON_SCOPE_PARENT_EVENT;
    if (k->parents[i] >= (int32_t)i || (k->parents[i] < -1 && k->parents[i] != CPROTON_SCOPE_PARENT_EVENT))
      return cp_error_set(CPROTON_EINVAL, "scope %u has parent %d: parents "
                          "must come before their children", i, k->parents[i]);
  }
  k->layout.scope_names = (const char *const *)k->names;
  k->layout.scope_parents = k->parents;
  return CPROTON_OK;
}

int cproton_instr_kernel_new(const char *name, const cproton_buffer_layout *l,
                             cproton_instr_kernel **out) {
  if (!name || !*name || !l || !out || (l->n_scopes && !l->scope_names))
    return cp_error_set(CPROTON_EINVAL, "kernel name, layout and out are "
                                        "required");
  cproton_instr_kernel *k = calloc(1, sizeof *k);
  if (!k || !(k->name = strdup(name))) {
    free(k);
    return cp_error_set(CPROTON_ENOMEM, "out of memory registering a kernel");
  }
  k->layout = *l;
  int rc = copy_scopes(k, l);
  if (rc) {
    cproton_instr_kernel_free(k);
    return rc == CPROTON_ENOMEM
               ? cp_error_set(rc, "out of memory registering a kernel") : rc;
  }
  *out = k;
  return CPROTON_OK;
}

void cproton_instr_kernel_free(cproton_instr_kernel *k) {
  if (!k)
    return;
  for (uint32_t i = 0; k->names && i < k->layout.n_scopes; i++)
    free(k->names[i]);
  free(k->names), free(k->parents), free(k->name_ids), free(k->name);
  free(k);
}

/* ---- the backend ------------------------------------------------------------ */

int cproton_instr_current_options(cproton_ptx_options *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "options pointer is NULL");
  pthread_mutex_lock(&g->lock);
  if (g->have_current)
    *out = g->current;
  else
    cproton_ptx_options_init(out);
  pthread_mutex_unlock(&g->lock);
  return CPROTON_OK;
}

static int instr_available(void) {
  const cp_cudadrv *d;
  return cp_cudadrv_get(&d) == CPROTON_OK;
}

unsigned cp_instr_mode_decode_flags(void) {
  pthread_mutex_lock(&g->lock);
  unsigned f = g->mode_decode_flags;
  pthread_mutex_unlock(&g->lock);
  return f;
}

/* The session's mode, parsed once by the session layer (mode.c). */
static int instr_start(const cp_backend_config *config) {
  const cp_instr_mode *m = cp_instr_mode_of(config);
  pthread_mutex_lock(&g->lock);
  g->current = m->info.options;
  g->have_current = 1;
  g->mode_decode_flags = m->info.decode_flags;
  g->mode_reduce_device = m->reduce_on_device;
  const char *check = cp_config_get("CPROTON_INSTR_REDUCE_CHECK");
  g->reduce_check = check && *check && strcmp(check, "0") != 0;
  pthread_mutex_unlock(&g->lock);
  return CPROTON_OK;
}

static void instr_stop(void) {
  cproton_instr_flush();
  pthread_mutex_lock(&g->lock);
  int joined = g->n_workers;
  g->stopping = 1;
  pthread_cond_broadcast(&g->work);
  pthread_mutex_unlock(&g->lock);
  for (int i = 0; i < joined; i++)
    pthread_join(g->workers[i], NULL);
  pthread_mutex_lock(&g->lock);
  g->n_workers = 0;
  g->have_current = 0;
  g->mode_decode_flags = 0;
  /* The pool (device buffers and their pinned twins), the copy streams and
   * the idle events stay for the next session: pinning memory is slow, and
   * the pool is bounded by its cap. */
  pthread_mutex_unlock(&g->lock);
  cproton_instr_stats st;
  cproton_instr_get_stats(&st);
  /* Drops are avoidable: say which options keep every record. */
  if (st.dropped || st.unpaired || st.bad_ctas || st.failed)
    cp_warn("instrumentation: %llu records overwritten by full buffers, %llu "
            "unpaired, %llu CTAs with bad headers, %llu launches not decoded "
            "(of %llu)%s", (unsigned long long)st.dropped,
            (unsigned long long)st.unpaired, (unsigned long long)st.bad_ctas,
            (unsigned long long)st.failed, (unsigned long long)st.launches,
            st.dropped ? "; to keep every record give a larger buffer_size "
                         "(mode 'default:buffer_size=N', record bytes per CTA) "
                         "or buffer_strategy=flush"
                       : "");
}

static int instr_flush(void) { return cproton_instr_flush(); }

const cp_backend_ops cp_instrumentation_backend = {
    .name = "instrumentation",
    .available = instr_available,
    .probe = cp_cudadrv_probe,
    .parse_mode = cp_instr_mode_parse_config,
    .start = instr_start,
    .flush = instr_flush,
    .stop = instr_stop,
    .instruments_kernels = 1,
    .instr_mode_info = cp_instr_mode_info_of,
};
