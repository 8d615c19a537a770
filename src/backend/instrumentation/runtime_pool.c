/* backend/instrumentation/runtime_pool.c -- the instrumentation runtime's
 * pool: device profile buffers and their pinned host twins (reused when a
 * free one of the context fits, evicted past MAX_POOL_BYTES), the device
 * reduction's totals, recycled copy-back events and one copy stream per
 * CUDA context. Invariant: a buffer is handed out again only after the
 * copy of its launch completed (in_use stays set until the decoder has
 * it), and a recycled one was re-armed on the copy stream, a new one is
 * zeroed on the user's stream before first use. On the launch path
 * (cproton_instr_alloc, and the queue's calls) under the runtime's lock;
 * no call here waits for the GPU. Called by the Triton hook and
 * runtime_queue.c (state in runtime_state.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cudadrv.h"
#include "backend/instrumentation/runtime.h"
#include "backend/instrumentation/runtime_state.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/error.h"

static cp_instr_runtime *const g = &cp_instr_rt;

/* Frees idle buffers of `ctx` until `size` more bytes fit under the cap;
 * their slots (dptr 0) are reused. Caller: lock. */
static void evict(const cp_cudadrv *d, size_t size, cp_cucontext ctx) {
  for (size_t i = 0; i < g->n_buffers && g->pool_bytes + size > MAX_POOL_BYTES; i++) {
    buffer *b = &g->buffers[i];
    if (b->in_use || !b->dptr || b->ctx != ctx)
      continue;
    d->cuMemFree(b->dptr);
    if (b->host)
      d->cuMemFreeHost(b->host);
    if (b->sum_dptr)
      d->cuMemFree(b->sum_dptr);
    if (b->sum_host)
      d->cuMemFreeHost(b->sum_host);
    g->pool_bytes -= b->size;
    memset(b, 0, sizeof *b);
  }
}

/* A slot for a new buffer: an evicted one, else the next; NULL when full. */
static buffer *free_slot(void) {
  for (size_t i = 0; i < g->n_buffers; i++)
    if (!g->buffers[i].dptr && !g->buffers[i].in_use)
      return &g->buffers[i];
  return g->n_buffers < MAX_BUFFERS ? &g->buffers[g->n_buffers++] : NULL;
}

/* A free buffer of at least `size` in `ctx`, else a new one; ELIMIT when
 * the pool is at its cap (the caller waits for a launch to finish). Caller:
 * lock. */
static int take_buffer(const cp_cudadrv *d, size_t size, cp_cucontext ctx,
                       buffer **out) {
  for (size_t i = 0; i < g->n_buffers; i++)
    if (!g->buffers[i].in_use && g->buffers[i].dptr && g->buffers[i].ctx == ctx &&
        g->buffers[i].size >= size && g->buffers[i].size <= 2 * size + 65536) {
      g->buffers[i].in_use = 1;
      *out = &g->buffers[i];
      CP_ASSERT((*out)->size >= size); /* at least `size` */
      return CPROTON_OK;
    }
  if (!g->buffers && !(g->buffers = calloc(MAX_BUFFERS, sizeof *g->buffers)))
    return cp_error_set(CPROTON_ENOMEM, "out of memory for the buffer pool");
  evict(d, size, ctx);
  if (g->pool_bytes + size > MAX_POOL_BYTES && g->pool_bytes > 0)
    return CPROTON_ELIMIT;
  buffer *b = free_slot();
  if (!b)
    return CPROTON_ELIMIT;
  cp_curesult r = d->cuMemAlloc(&b->dptr, size);
  if (r) {
    b->dptr = 0;
    return cp_cudadrv_error(r, "cuMemAlloc for a profile buffer");
  }
  b->size = size, b->ctx = ctx, b->in_use = 1, b->dirty = 1;
  g->pool_bytes += size;
  *out = b;
  return CPROTON_OK;
}

buffer *cp_instr_pool_find(uint64_t dptr) {
  for (size_t i = 0; i < g->n_buffers; i++)
    if (dptr && g->buffers[i].dptr == dptr && g->buffers[i].in_use)
      return &g->buffers[i];
  return NULL;
}

int cproton_instr_alloc(size_t size, uint64_t stream, uint64_t *dptr_out) {
  const cp_cudadrv *d;
  int rc = cp_cudadrv_get(&d);
  if (rc)
    return rc;
  if (!size || !dptr_out)
    return cp_error_set(CPROTON_EINVAL, "size and dptr_out are required");
  cp_cucontext ctx = NULL;
  d->cuCtxGetCurrent(&ctx);
  pthread_mutex_lock(&g->lock);
  buffer *b = NULL;
  /* Backpressure: with every buffer in flight, wait for the decoder to
   * return one rather than fail the launch (timed: where a launch's time
   * goes, cproton_instr_stats). */
  uint64_t waited_since = 0;
  while ((rc = take_buffer(d, size, ctx, &b)) == CPROTON_ELIMIT &&
         (g->head || g->busy)) {
    if (!waited_since)
      waited_since = cp_clock_now_ns();
    pthread_cond_wait(&g->freed, &g->lock);
  }
  if (waited_since)
    cp_instr_count_wait(cp_clock_now_ns() - waited_since);
  if (rc == CPROTON_ELIMIT)
    cp_error_set(rc, "profile buffer pool is full (%zu buffers, %zu bytes) "
                 "and no launch is in flight to free one", g->n_buffers,
                 g->pool_bytes);
  if (!rc && b->dirty) { /* recycled buffers were re-armed after their copy */
    cp_curesult r = d->cuMemsetD8Async(b->dptr, 0, b->size,
                                       (cp_custream)(uintptr_t)stream);
    if (r) {
      b->in_use = 0;
      rc = cp_cudadrv_error(r, "clearing a profile buffer");
    }
    b->dirty = 0;
  }
  if (!rc)
    *dptr_out = b->dptr;
  pthread_mutex_unlock(&g->lock);
  return rc;
}

int cproton_instr_release(uint64_t dptr) {
  pthread_mutex_lock(&g->lock);
  buffer *b = cp_instr_pool_find(dptr);
  if (b) {
    b->in_use = 0;
    b->dirty = 1; /* the kernel may have written it before failing */
    pthread_cond_broadcast(&g->freed);
  }
  pthread_mutex_unlock(&g->lock);
  return b ? CPROTON_OK
           : cp_error_set(CPROTON_ENOTFOUND, "0x%llx is not a profile buffer "
                          "in use", (unsigned long long)dptr);
}

/* An event of context `ctx` from the idle list, else a new one. Caller:
 * lock. */
int cp_instr_pool_event_get(const cp_cudadrv *d, cp_cucontext ctx,
                            cp_cuevent *out) {
  for (int i = g->n_idle_events; i-- > 0;)
    if (g->idle_events[i].ctx == ctx) {
      *out = g->idle_events[i].event;
      g->idle_events[i] = g->idle_events[--g->n_idle_events];
      return CPROTON_OK;
    }
  /* BLOCKING_SYNC: decoder threads wait in cuEventSynchronize by sleeping,
   * not spinning; eight spinning waiters slowed the launching thread's own
   * driver calls (an H200 host: 0.14-0.25 ms per instrumented launch). */
  cp_curesult r = d->cuEventCreate(out, 1 /* CU_EVENT_BLOCKING_SYNC */ | 2 /* CU_EVENT_DISABLE_TIMING */);
  return r ? cp_cudadrv_error(r, "creating a copy-back event") : CPROTON_OK;
}

/* Caller: lock. */
void cp_instr_pool_event_put(const cp_cudadrv *d, cp_cucontext ctx,
                             cp_cuevent e) {
  if (!e)
    return;
  if (g->n_idle_events < MAX_IDLE_EVENTS)
    g->idle_events[g->n_idle_events++] = (idle_event){ctx, e};
  else
    d->cuEventDestroy(e);
}

/* The copy stream of `ctx`, created on first use. Caller: lock. */
int cp_instr_pool_copy_stream(const cp_cudadrv *d, cp_cucontext ctx,
                              cp_custream *out) {
  for (int i = 0; i < g->n_copy_streams; i++)
    if (g->copy_streams[i].ctx == ctx) {
      *out = g->copy_streams[i].stream;
      return CPROTON_OK;
    }
  if (g->n_copy_streams == MAX_CONTEXTS)
    return cp_error_set(CPROTON_ELIMIT, "more than %d CUDA contexts",
                        MAX_CONTEXTS);
  cp_curesult r = d->cuStreamCreate(out, 1 /* CU_STREAM_NON_BLOCKING */);
  if (r)
    return cp_cudadrv_error(r, "creating the copy-back stream");
  g->copy_streams[g->n_copy_streams].ctx = ctx;
  g->copy_streams[g->n_copy_streams++].stream = *out;
  return CPROTON_OK;
}
/* Room for `words` totals of the device reduction in `b`. Caller: lock. */
int cp_instr_pool_sum_room(const cp_cudadrv *d, buffer *b, size_t words) {
  if (b->sum_words >= words)
    return CPROTON_OK;
  if (b->sum_dptr)
    d->cuMemFree(b->sum_dptr);
  if (b->sum_host)
    d->cuMemFreeHost(b->sum_host);
  b->sum_dptr = 0, b->sum_host = NULL, b->sum_words = 0;
  cp_curesult r = d->cuMemAlloc(&b->sum_dptr, words * sizeof(uint64_t));
  if (!r && (r = d->cuMemHostAlloc((void **)&b->sum_host, words * sizeof(uint64_t), 0))) {
    d->cuMemFree(b->sum_dptr);
    b->sum_dptr = 0;
  }
  if (r)
    return cp_cudadrv_error(r, "allocating the device reduction's totals");
  b->sum_words = words;
  return CPROTON_OK;
}

/* Room for `bytes` in b's pinned twin (a copy of the whole buffer, or of
 * the in-kernel sums' slots). Caller: lock. */
int cp_instr_pool_host_room(const cp_cudadrv *d, buffer *b, size_t bytes) {
  if (b->host_size >= bytes)
    return CPROTON_OK;
  if (b->host)
    d->cuMemFreeHost(b->host);
  b->host = NULL, b->host_size = 0;
  cp_curesult r = d->cuMemHostAlloc(&b->host, bytes, 0);
  if (r)
    return cp_cudadrv_error(r, "cuMemHostAlloc for a profile buffer copy");
  b->host_size = bytes;
  return CPROTON_OK;
}

