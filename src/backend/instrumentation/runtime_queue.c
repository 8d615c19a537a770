/* backend/instrumentation/runtime_queue.c -- the instrumentation
 * runtime's launches: each queued with its calling context, its buffer
 * reduced on the device and its totals copied back (tree mode), or copied
 * whole (traces, reduce=host), or its in-kernel sums' slots copied, all on
 * the context's copy stream after an event on the user's stream; decoder
 * threads wait for the copy, decode, return the buffer and deliver in
 * launch order. Invariant: no call on the launching thread waits for the
 * GPU; deliveries keep the order of the launches' sequence numbers. Hot
 * path: cproton_instr_launch (one calloc, the lock, three driver calls).
 * Called by the Triton hook and runtime.c (state in runtime_state.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cudadrv.h"
#include "backend/instrumentation/decode.h"
#include "backend/instrumentation/reduce_launch.h"
#include "backend/instrumentation/runtime.h"
#include "backend/instrumentation/runtime_state.h"
#include "backend/instrumentation/sums.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/context.h"
#include "core/error.h"
#include "core/log.h"
#include "instrument/layout.h"

static cp_instr_runtime *const g = &cp_instr_rt;

/* Delivers the ready launches whose turn it is; frees them. Caller: lock
 * (released while delivering). */
static void drain(void) {
  while (!g->delivering && g->ready && g->ready->seq == g->next_delivery) {
    pending *p = g->ready;
    CP_ASSERT(p->seq == g->next_delivery);
    g->ready = p->ready_next;
    g->delivering = 1;
    pthread_mutex_unlock(&g->lock);
    if (p->dec && cp_instr_deliver_decoded(p->kernel, &p->site, p->dec, p->device))
      cp_warn("kernel %s: %s", p->kernel->name, cp_error_message());
    free(p);
    pthread_mutex_lock(&g->lock);
    g->delivering = 0;
    g->next_delivery++;
  }
}

/* Waits for the copy, decodes, returns the buffer and events to their
 * pools, and queues the result for delivery in launch order. */
static void finish(const cp_cudadrv *d, pending *p) {
  cp_context_own_calls_begin();
  cp_curesult r = d->cuEventSynchronize(p->copied);
  cp_context_own_calls_end();
  uint64_t done = cp_clock_now_ns();
  if (r) {
    cp_cudadrv_error(r, "waiting for a profile buffer copy");
    cp_warn("%s", cp_error_message());
    cp_instr_count_failure();
  } else if (p->n_slots) {
    size_t n_ctas = p->size / p->kernel->layout.per_cta_bytes;
    int rc = cp_sums_decode(p->kernel->name, &p->kernel->layout, p->buf->host, p->n_slots, n_ctas, &p->dec);
    if (rc)
      cp_warn("%s", cp_error_message());
    cp_instr_count_summed(!rc);
  } else if (p->reduced ? cp_instr_take_reduced(p->kernel, p->buf->sum_host,
                                                 p->checked ? p->buf->host : NULL, p->size,
                                                 cp_instr_mode_decode_flags(), &p->dec)
                         : cp_instr_decode(p->kernel, &p->site, p->buf->host, p->size,
                                           cp_instr_mode_decode_flags(), &p->dec)) {
    cp_warn("kernel %s: %s", p->kernel->name, cp_error_message());
    p->dec = NULL;
  }
  cp_instr_count_pipeline(done - p->launched_ns, cp_clock_now_ns() - done);
  pthread_mutex_lock(&g->lock);
  cp_instr_pool_event_put(d, p->buf->ctx, p->after_kernel);
  cp_instr_pool_event_put(d, p->buf->ctx, p->copied);
  p->buf->in_use = 0;
  pthread_cond_broadcast(&g->freed);
  pending **at = &g->ready;
  while (*at && (*at)->seq < p->seq)
    at = &(*at)->ready_next;
  p->ready_next = *at;
  *at = p;
  CP_ASSERT(!p->ready_next || p->ready_next->seq > p->seq);
  drain();
  pthread_mutex_unlock(&g->lock);
}

static void *worker_main(void *arg) {
  const cp_cudadrv *d = arg;
  cp_context_own_calls_begin(); /* its event waits are cproton's */
  pthread_mutex_lock(&g->lock);
  for (;;) {
    while (!g->head && !g->stopping)
      pthread_cond_wait(&g->work, &g->lock);
    if (!g->head && g->stopping)
      break;
    pending *p = g->head;
    g->head = p->next;
    if (!g->head)
      g->tail = NULL;
    g->busy++;
    pthread_mutex_unlock(&g->lock);
    d->cuCtxSetCurrent(p->buf->ctx);
    finish(d, p); /* p now belongs to the ready list */
    pthread_mutex_lock(&g->lock);
    g->busy--;
    if (!g->head && !g->busy)
      pthread_cond_broadcast(&g->idle);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

/* Caller holds lock. */
static int ensure_worker(const cp_cudadrv *d) {
  if (g->n_workers)
    return CPROTON_OK;
  g->stopping = 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int want = cpus / 2 < 2 ? 2 : cpus / 2 > MAX_WORKERS ? MAX_WORKERS : (int)(cpus / 2);
  while (g->n_workers < want &&
         pthread_create(&g->workers[g->n_workers], NULL, worker_main, (void *)d) == 0)
    g->n_workers++;
  return g->n_workers ? CPROTON_OK
                   : cp_error_set(CPROTON_EBACKEND,
                                  "cannot start a decoder thread");
}

/* In-kernel sums: copy the launch's slots back, then zero them for the
 * next launch (the kernel wrote nothing else). Caller: lock. */
static cp_curesult enqueue_sums(const cp_cudadrv *d, pending *p, cp_custream cs) {
  size_t bytes = p->n_slots * p->kernel->layout.per_cta_bytes;
  cp_curesult r = d->cuMemcpyDtoHAsync(p->buf->host, p->buf->dptr, bytes, cs);
  return r ? r : d->cuMemsetD8Async(p->buf->dptr, 0, bytes, cs);
}

/* Tree mode: on the copy stream, zero the totals, run the reduction over
 * the buffer, copy the totals back. Returns non-zero (after one warning)
 * when the reduction cannot run; the caller then copies the buffer.
 * Caller: lock. */
static int enqueue_reduce(const cp_cudadrv *d, pending *p, cp_custream cs) {
  static int warned;
  const cproton_buffer_layout *l = &p->kernel->layout;
  size_t words = cp_reduce_n_words(l->n_scopes);
  int64_t shift = (g->mode_decode_flags & CPROTON_DECODE_TIME_SHIFT) && l->counter != CPROTON_COUNTER_GLOBALTIMER
                      ? CPROTON_TIME_SHIFT_CYCLES : 0;
  int rc = cp_instr_pool_sum_room(d, p->buf, words);
  if (!rc) {
    cp_curesult r = d->cuMemsetD8Async(p->buf->sum_dptr, 0, words * sizeof(uint64_t), cs);
    rc = r ? cp_cudadrv_error(r, "zeroing the device reduction's totals")
           : cp_reduce_launch(d, p->buf->ctx, cs, l, p->buf->dptr, p->size, p->buf->sum_dptr, shift);
  }
  if (!rc) {
    cp_curesult r = d->cuMemcpyDtoHAsync(p->buf->sum_host, p->buf->sum_dptr, words * sizeof(uint64_t), cs);
    rc = r ? cp_cudadrv_error(r, "copying the device reduction's totals") : 0;
  }
  if (rc && !warned) { /* once: every later launch falls back the same way */
    warned = 1;
    cp_warn("instrumentation: %s; decoding profile buffers on the host instead", cp_error_message());
  }
  return rc;
}

/* Whether launch `p` is reduced on the device: tree mode (no session of
 * its site records a trace), reduce=device, a kernel without events (they
 * pair across warps, on the host only), within the reduction's
 * limits, whole CTA slices (else the host decoder reports the size). Caller:
 * lock. */
static int wants_reduce(const pending *p) {
  const cproton_buffer_layout *l = &p->kernel->layout;
  return g->mode_reduce_device && !cp_session_site_traces(&p->site) && !p->kernel->has_events &&
         l->n_scopes <= CP_REDUCE_MAX_SCOPES &&
         l->per_cta_bytes && p->size % l->per_cta_bytes == 0;
}

/* After the kernel (an event on the user's stream), on the copy stream:
 * reduce the buffer on the device and copy its totals back (tree mode), or
 * copy the whole buffer to its pinned twin (traces, reduce=host, or the
 * reduction unavailable; both with CPROTON_INSTR_REDUCE_CHECK), then re-arm
 * the buffer by zeroing each CTA's magic word (a strided 2D memset of
 * n_ctas words), then record `copied`. The user's stream gets one event
 * record, nothing else. Caller: lock. */
static int enqueue_copy(const cp_cudadrv *d, pending *p, uint64_t stream) {
  cp_custream user = (cp_custream)(uintptr_t)stream, cs;
  cp_cucontext ctx = p->buf->ctx;
  int rc = cp_instr_pool_copy_stream(d, ctx, &cs);
  if (!rc)
    rc = cp_instr_pool_event_get(d, ctx, &p->after_kernel);
  if (!rc)
    rc = cp_instr_pool_event_get(d, ctx, &p->copied);
  if (rc)
    return rc;
  const cproton_buffer_layout *l = &p->kernel->layout;
  uint32_t pitch = l->per_cta_bytes;
  size_t n_ctas = pitch ? p->size / pitch : 0;
  p->n_slots = l->aggregate ? cp_sums_n_slots(n_ctas) : 0;
  rc = cp_instr_pool_host_room(d, p->buf, l->aggregate ? p->n_slots * pitch : p->size);
  if (rc)
    return rc;
  cp_curesult r = d->cuEventRecord(p->after_kernel, user);
  if (!r)
    r = d->cuStreamWaitEvent(cs, p->after_kernel, 0);
  if (r)
    return cp_cudadrv_error(r, "enqueueing a profile buffer copy");
  if (l->aggregate) {
    r = enqueue_sums(d, p, cs);
  } else {
    p->reduced = wants_reduce(p) && enqueue_reduce(d, p, cs) == CPROTON_OK;
    p->checked = p->reduced && g->reduce_check;
    if (!p->reduced || p->checked)
      r = d->cuMemcpyDtoHAsync(p->buf->host, p->buf->dptr, p->size, cs);
    /* re-arm: the start for in-kernel sums, and every magic word (already
     * in that start when the buffer is no larger) */
    if (!r)
      r = d->cuMemsetD8Async(p->buf->dptr, 0, p->size < CP_AGG_MAX_BYTES ? p->size : CP_AGG_MAX_BYTES, cs);
    if (!r && n_ctas && p->size > CP_AGG_MAX_BYTES)
      r = d->cuMemsetD2D32Async(p->buf->dptr, pitch, 0, 1, n_ctas, cs);
  }
  if (!r)
    r = d->cuEventRecord(p->copied, cs);
  if (!r && n_ctas * pitch != p->size)
    p->buf->dirty = 1; /* a tail the memset did not cover */
  return r ? cp_cudadrv_error(r, "enqueueing a profile buffer copy") : 0;
}

int cproton_instr_launch(const cproton_instr_kernel *k, uint64_t dptr,
                         size_t size, uint64_t stream) {
  if (!k) /* before the driver: a NULL is wrong on every machine */
    return cp_error_set(CPROTON_EINVAL, "kernel is required");
  const cp_cudadrv *d;
  int rc = cp_cudadrv_get(&d);
  if (rc)
    return rc;
  pending *p = calloc(1, sizeof *p);
  if (!p)
    return cp_error_set(CPROTON_ENOMEM, "out of memory recording a launch");
  p->kernel = k;
  p->launched_ns = cp_clock_now_ns();
  cp_session_capture(&p->site);
  cp_cudevice dev = 0;
  d->cuCtxGetDevice(&dev);
  p->device = (uint32_t)dev;
  cp_cudadrv_register_device(dev); /* device info for the profile, once */
  cp_instr_count_launch();
  pthread_mutex_lock(&g->lock);
  p->buf = cp_instr_pool_find(dptr);
  rc = !p->buf ? cp_error_set(CPROTON_ENOTFOUND, "0x%llx is not a profile "
                              "buffer in use", (unsigned long long)dptr)
       : size > p->buf->size ? cp_error_set(CPROTON_EINVAL, "launch size %zu "
                                            "exceeds its buffer", size)
                             : ensure_worker(d);
  p->size = size;
  if (!rc)
    rc = enqueue_copy(d, p, stream);
  if (!rc) {
    p->seq = g->next_seq++;
    if (g->tail)
      g->tail->next = p;
    else
      g->head = p;
    g->tail = p;
    pthread_cond_signal(&g->work);
  } else {
    if (p->buf) {
      p->buf->in_use = 0;
      p->buf->dirty = 1;
    }
    cp_instr_pool_event_put(d, p->buf ? p->buf->ctx : NULL, p->after_kernel);
    cp_instr_pool_event_put(d, p->buf ? p->buf->ctx : NULL, p->copied);
    free(p);
  }
  pthread_mutex_unlock(&g->lock);
  return rc;
}

int cproton_instr_record_host(const cproton_instr_kernel *k, const void *data,
                              size_t size, uint32_t device_id) {
  if (!k || !data)
    return cp_error_set(CPROTON_EINVAL, "kernel and data are required");
  cp_launch_site site;
  cp_session_capture(&site);
  cp_instr_count_launch();
  return cp_instr_deliver(k, &site, data, size, device_id, cp_instr_mode_decode_flags());
}

int cproton_instr_read(uint64_t dptr, size_t size, uint64_t stream,
                       void *dst) {
  const cp_cudadrv *d;
  int rc = cp_cudadrv_get(&d);
  if (rc)
    return rc;
  if (!dst)
    return cp_error_set(CPROTON_EINVAL, "dst is required");
  pthread_mutex_lock(&g->lock);
  buffer *b = cp_instr_pool_find(dptr);
  cp_cucontext ctx = b ? b->ctx : NULL;
  cp_cuevent done = NULL;
  rc = !b ? cp_error_set(CPROTON_ENOTFOUND, "0x%llx is not a profile buffer "
                         "in use", (unsigned long long)dptr)
       : size > b->size ? cp_error_set(CPROTON_EINVAL, "read of %zu bytes "
                                       "exceeds its buffer", size)
                        : cp_instr_pool_event_get(d, ctx, &done);
  pthread_mutex_unlock(&g->lock);
  if (rc)
    return rc;
  cp_custream s = (cp_custream)(uintptr_t)stream;
  cp_curesult r = d->cuMemcpyDtoHAsync(dst, dptr, size, s);
  if (!r)
    r = d->cuEventRecord(done, s);
  if (!r) {
    cp_context_own_calls_begin();
    r = d->cuEventSynchronize(done);
    cp_context_own_calls_end();
  }
  pthread_mutex_lock(&g->lock);
  cp_instr_pool_event_put(d, ctx, done);
  pthread_mutex_unlock(&g->lock);
  return r ? cp_cudadrv_error(r, "reading a profile buffer") : CPROTON_OK;
}

int cproton_instr_flush(void) {
  pthread_mutex_lock(&g->lock);
  while (g->head || g->busy)
    pthread_cond_wait(&g->idle, &g->lock);
  pthread_mutex_unlock(&g->lock);
  return CPROTON_OK;
}
