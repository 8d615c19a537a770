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
 * Invariant: a device buffer is handed out again only after the copy of its
 * launch completed, so a kernel never writes into a buffer being read. A
 * free buffer has every CTA's magic word and its first CP_AGG_MAX_BYTES
 * zero, so any kernel may take it: records see no stale header, in-kernel
 * sums start from zero. No call on the launching thread waits for the GPU. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/config_table.h"
#include "backend/backend.h"
#include "backend/cudadrv.h"
#include "backend/instrumentation/decode.h"
#include "backend/instrumentation/mode.h"
#include "backend/instrumentation/reduce_launch.h"
#include "backend/instrumentation/runtime.h"
#include "backend/instrumentation/sums.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/strtab.h"
#include "instrument/layout.h"

typedef struct buffer {
  cp_cudeviceptr dptr;
  void *host; /* pinned staging copy, host_size bytes, grown on demand */
  size_t size, host_size;
  cp_cucontext ctx;
  int in_use;
  int dirty; /* new from cuMemAlloc: must be zeroed before its first use */
  /* the device reduction's totals and their pinned copy (grown on demand) */
  cp_cudeviceptr sum_dptr;
  uint64_t *sum_host;
  size_t sum_words;
} buffer;

typedef struct pending {
  struct pending *next;
  const cproton_instr_kernel *kernel;
  cp_launch_site site;
  buffer *buf;
  size_t size;
  cp_cuevent after_kernel; /* on the user's stream */
  cp_cuevent copied;       /* on the copy stream */
  uint32_t device;
  uint64_t seq; /* launch order: deliveries keep it */
  uint64_t launched_ns; /* the launch call (cp_clock_now_ns) */
  int reduced;  /* totals reduced on the device (sum_host), not the buffer */
  size_t n_slots; /* in-kernel sums: slots copied to host (0: records) */
  int checked;  /* reduced, and the buffer copied too, to diff the two */
  cproton_decoded *dec;       /* decoded, waiting for its turn (or NULL) */
  struct pending *ready_next; /* in the ready list, by seq */
} pending;

/* One copy stream per CUDA context: copy-backs run beside the user's work,
 * ordered after the kernel by an event, never delaying the user's stream. */
#define MAX_CONTEXTS 64
static struct {
  cp_cucontext ctx;
  cp_custream stream;
} copy_streams[MAX_CONTEXTS];
static int n_copy_streams;

/* Recycled events (creating one per launch costs microseconds). */
#define MAX_IDLE_EVENTS 256
typedef struct idle_event {
  cp_cucontext ctx;
  cp_cuevent event;
} idle_event;
static idle_event idle_events[MAX_IDLE_EVENTS];
static int n_idle_events;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static pthread_cond_t freed = PTHREAD_COND_INITIALIZER; /* a buffer returned */
/* Launches are numbered as they are queued and delivered in that order
 * (profiles and traces list kernels as they were launched): decoders work
 * in parallel, put decoded launches in the ready list and go on decoding;
 * whichever holds the next number delivers it and those after it, one
 * thread at a time. */
static uint64_t next_seq, next_delivery;
static pending *ready;
static int delivering;
/* Pending entries point into this array, so it is allocated once and never
 * moves; buffers are recycled, so the cap bounds launches in flight. */
#define MAX_BUFFERS 1024
/* Device (and pinned host) bytes the pool may hold: past this, a launch
 * waits for the decoder to return a buffer instead of pinning more memory
 * (large grids with generous per-warp segments reach tens of MB a launch). */
#define MAX_POOL_BYTES ((size_t)2 << 30)
static buffer *buffers;
static size_t n_buffers, pool_bytes;
static pending *head, *tail;
/* Decoder threads: a large launch takes milliseconds to decode, so several
 * share the queue (half the CPUs, 2 to 8); deliveries keep launch order. */
#define MAX_WORKERS 8
static int busy, n_workers, stopping; /* busy: workers decoding now */
static pthread_t workers[MAX_WORKERS];
static cproton_ptx_options current;
static int have_current;
static unsigned mode_decode_flags; /* from the session's mode: time_shift */
static int mode_reduce_device;     /* reduce=device (the default) */
static int reduce_check;           /* CPROTON_INSTR_REDUCE_CHECK=1: diff with the host */

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

/* ---- buffer pool ------------------------------------------------------------ */

/* Frees idle buffers of `ctx` until `size` more bytes fit under the cap;
 * their slots (dptr 0) are reused. Caller: lock. */
static void evict(const cp_cudadrv *d, size_t size, cp_cucontext ctx) {
  for (size_t i = 0; i < n_buffers && pool_bytes + size > MAX_POOL_BYTES; i++) {
    buffer *b = &buffers[i];
    if (b->in_use || !b->dptr || b->ctx != ctx)
      continue;
    d->cuMemFree(b->dptr);
    if (b->host)
      d->cuMemFreeHost(b->host);
    if (b->sum_dptr)
      d->cuMemFree(b->sum_dptr);
    if (b->sum_host)
      d->cuMemFreeHost(b->sum_host);
    pool_bytes -= b->size;
    memset(b, 0, sizeof *b);
  }
}

/* A slot for a new buffer: an evicted one, else the next; NULL when full. */
static buffer *free_slot(void) {
  for (size_t i = 0; i < n_buffers; i++)
    if (!buffers[i].dptr && !buffers[i].in_use)
      return &buffers[i];
  return n_buffers < MAX_BUFFERS ? &buffers[n_buffers++] : NULL;
}

/* A free buffer of at least `size` in `ctx`, else a new one; ELIMIT when
 * the pool is at its cap (the caller waits for a launch to finish). Caller:
 * lock. */
static int take_buffer(const cp_cudadrv *d, size_t size, cp_cucontext ctx,
                       buffer **out) {
  for (size_t i = 0; i < n_buffers; i++)
    if (!buffers[i].in_use && buffers[i].dptr && buffers[i].ctx == ctx &&
        buffers[i].size >= size && buffers[i].size <= 2 * size + 65536) {
      buffers[i].in_use = 1;
      *out = &buffers[i];
      return CPROTON_OK;
    }
  if (!buffers && !(buffers = calloc(MAX_BUFFERS, sizeof *buffers)))
    return cp_error_set(CPROTON_ENOMEM, "out of memory for the buffer pool");
  evict(d, size, ctx);
  if (pool_bytes + size > MAX_POOL_BYTES && pool_bytes > 0)
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
  pool_bytes += size;
  *out = b;
  return CPROTON_OK;
}

static buffer *find_buffer(uint64_t dptr) {
  for (size_t i = 0; i < n_buffers; i++)
    if (dptr && buffers[i].dptr == dptr && buffers[i].in_use)
      return &buffers[i];
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
  pthread_mutex_lock(&lock);
  buffer *b = NULL;
  /* Backpressure: with every buffer in flight, wait for the decoder to
   * return one rather than fail the launch (timed: where a launch's time
   * goes, cproton_instr_stats). */
  uint64_t waited_since = 0;
  while ((rc = take_buffer(d, size, ctx, &b)) == CPROTON_ELIMIT &&
         (head || busy)) {
    if (!waited_since)
      waited_since = cp_clock_now_ns();
    pthread_cond_wait(&freed, &lock);
  }
  if (waited_since)
    cp_instr_count_wait(cp_clock_now_ns() - waited_since);
  if (rc == CPROTON_ELIMIT)
    cp_error_set(rc, "profile buffer pool is full (%zu buffers, %zu bytes) "
                 "and no launch is in flight to free one", n_buffers,
                 pool_bytes);
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
  pthread_mutex_unlock(&lock);
  return rc;
}

int cproton_instr_release(uint64_t dptr) {
  pthread_mutex_lock(&lock);
  buffer *b = find_buffer(dptr);
  if (b) {
    b->in_use = 0;
    b->dirty = 1; /* the kernel may have written it before failing */
    pthread_cond_broadcast(&freed);
  }
  pthread_mutex_unlock(&lock);
  return b ? CPROTON_OK
           : cp_error_set(CPROTON_ENOTFOUND, "0x%llx is not a profile buffer "
                          "in use", (unsigned long long)dptr);
}

/* ---- launches and the worker ------------------------------------------------ */

/* An event of context `ctx` from the idle list, else a new one. Caller:
 * lock. */
static int event_get(const cp_cudadrv *d, cp_cucontext ctx, cp_cuevent *out) {
  for (int i = n_idle_events; i-- > 0;)
    if (idle_events[i].ctx == ctx) {
      *out = idle_events[i].event;
      idle_events[i] = idle_events[--n_idle_events];
      return CPROTON_OK;
    }
  /* BLOCKING_SYNC: decoder threads wait in cuEventSynchronize by sleeping,
   * not spinning; eight spinning waiters slowed the launching thread's own
   * driver calls (an H200 host: 0.14-0.25 ms per instrumented launch). */
  cp_curesult r = d->cuEventCreate(out, 1 /* CU_EVENT_BLOCKING_SYNC */ | 2 /* CU_EVENT_DISABLE_TIMING */);
  return r ? cp_cudadrv_error(r, "creating a copy-back event") : CPROTON_OK;
}

/* Caller: lock. */
static void event_put(const cp_cudadrv *d, cp_cucontext ctx, cp_cuevent e) {
  if (!e)
    return;
  if (n_idle_events < MAX_IDLE_EVENTS)
    idle_events[n_idle_events++] = (idle_event){ctx, e};
  else
    d->cuEventDestroy(e);
}

/* The copy stream of `ctx`, created on first use. Caller: lock. */
static int copy_stream(const cp_cudadrv *d, cp_cucontext ctx, cp_custream *out) {
  for (int i = 0; i < n_copy_streams; i++)
    if (copy_streams[i].ctx == ctx) {
      *out = copy_streams[i].stream;
      return CPROTON_OK;
    }
  if (n_copy_streams == MAX_CONTEXTS)
    return cp_error_set(CPROTON_ELIMIT, "more than %d CUDA contexts",
                        MAX_CONTEXTS);
  cp_curesult r = d->cuStreamCreate(out, 1 /* CU_STREAM_NON_BLOCKING */);
  if (r)
    return cp_cudadrv_error(r, "creating the copy-back stream");
  copy_streams[n_copy_streams].ctx = ctx;
  copy_streams[n_copy_streams++].stream = *out;
  return CPROTON_OK;
}

/* Delivers the ready launches whose turn it is; frees them. Caller: lock
 * (released while delivering). */
static void drain(void) {
  while (!delivering && ready && ready->seq == next_delivery) {
    pending *p = ready;
    ready = p->ready_next;
    delivering = 1;
    pthread_mutex_unlock(&lock);
    if (p->dec && cp_instr_deliver_decoded(p->kernel, &p->site, p->dec, p->device))
      cp_warn("kernel %s: %s", p->kernel->name, cp_error_message());
    free(p);
    pthread_mutex_lock(&lock);
    delivering = 0;
    next_delivery++;
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
  pthread_mutex_lock(&lock);
  event_put(d, p->buf->ctx, p->after_kernel);
  event_put(d, p->buf->ctx, p->copied);
  p->buf->in_use = 0;
  pthread_cond_broadcast(&freed);
  pending **at = &ready;
  while (*at && (*at)->seq < p->seq)
    at = &(*at)->ready_next;
  p->ready_next = *at;
  *at = p;
  drain();
  pthread_mutex_unlock(&lock);
}

static void *worker_main(void *arg) {
  const cp_cudadrv *d = arg;
  cp_context_own_calls_begin(); /* its event waits are cproton's */
  pthread_mutex_lock(&lock);
  for (;;) {
    while (!head && !stopping)
      pthread_cond_wait(&work, &lock);
    if (!head && stopping)
      break;
    pending *p = head;
    head = p->next;
    if (!head)
      tail = NULL;
    busy++;
    pthread_mutex_unlock(&lock);
    d->cuCtxSetCurrent(p->buf->ctx);
    finish(d, p); /* p now belongs to the ready list */
    pthread_mutex_lock(&lock);
    busy--;
    if (!head && !busy)
      pthread_cond_broadcast(&idle);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

/* Caller holds lock. */
static int ensure_worker(const cp_cudadrv *d) {
  if (n_workers)
    return CPROTON_OK;
  stopping = 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int want = cpus / 2 < 2 ? 2 : cpus / 2 > MAX_WORKERS ? MAX_WORKERS : (int)(cpus / 2);
  while (n_workers < want &&
         pthread_create(&workers[n_workers], NULL, worker_main, (void *)d) == 0)
    n_workers++;
  return n_workers ? CPROTON_OK
                   : cp_error_set(CPROTON_EBACKEND,
                                  "cannot start a decoder thread");
}

/* Room for `words` totals of the device reduction in `b`. Caller: lock. */
static int sum_room(const cp_cudadrv *d, buffer *b, size_t words) {
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
static int host_room(const cp_cudadrv *d, buffer *b, size_t bytes) {
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
  int64_t shift = (mode_decode_flags & CPROTON_DECODE_TIME_SHIFT) && l->counter != CPROTON_COUNTER_GLOBALTIMER
                      ? CPROTON_TIME_SHIFT_CYCLES : 0;
  int rc = sum_room(d, p->buf, words);
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
  return mode_reduce_device && !cp_session_site_traces(&p->site) && !p->kernel->has_events &&
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
  int rc = copy_stream(d, ctx, &cs);
  if (!rc)
    rc = event_get(d, ctx, &p->after_kernel);
  if (!rc)
    rc = event_get(d, ctx, &p->copied);
  if (rc)
    return rc;
  const cproton_buffer_layout *l = &p->kernel->layout;
  uint32_t pitch = l->per_cta_bytes;
  size_t n_ctas = pitch ? p->size / pitch : 0;
  p->n_slots = l->aggregate ? cp_sums_n_slots(n_ctas) : 0;
  rc = host_room(d, p->buf, l->aggregate ? p->n_slots * pitch : p->size);
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
    p->checked = p->reduced && reduce_check;
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
  pthread_mutex_lock(&lock);
  p->buf = find_buffer(dptr);
  rc = !p->buf ? cp_error_set(CPROTON_ENOTFOUND, "0x%llx is not a profile "
                              "buffer in use", (unsigned long long)dptr)
       : size > p->buf->size ? cp_error_set(CPROTON_EINVAL, "launch size %zu "
                                            "exceeds its buffer", size)
                             : ensure_worker(d);
  p->size = size;
  if (!rc)
    rc = enqueue_copy(d, p, stream);
  if (!rc) {
    p->seq = next_seq++;
    if (tail)
      tail->next = p;
    else
      head = p;
    tail = p;
    pthread_cond_signal(&work);
  } else {
    if (p->buf) {
      p->buf->in_use = 0;
      p->buf->dirty = 1;
    }
    event_put(d, p->buf ? p->buf->ctx : NULL, p->after_kernel);
    event_put(d, p->buf ? p->buf->ctx : NULL, p->copied);
    free(p);
  }
  pthread_mutex_unlock(&lock);
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
  pthread_mutex_lock(&lock);
  buffer *b = find_buffer(dptr);
  cp_cucontext ctx = b ? b->ctx : NULL;
  cp_cuevent done = NULL;
  rc = !b ? cp_error_set(CPROTON_ENOTFOUND, "0x%llx is not a profile buffer "
                         "in use", (unsigned long long)dptr)
       : size > b->size ? cp_error_set(CPROTON_EINVAL, "read of %zu bytes "
                                       "exceeds its buffer", size)
                        : event_get(d, ctx, &done);
  pthread_mutex_unlock(&lock);
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
  pthread_mutex_lock(&lock);
  event_put(d, ctx, done);
  pthread_mutex_unlock(&lock);
  return r ? cp_cudadrv_error(r, "reading a profile buffer") : CPROTON_OK;
}

int cproton_instr_flush(void) {
  pthread_mutex_lock(&lock);
  while (head || busy)
    pthread_cond_wait(&idle, &lock);
  pthread_mutex_unlock(&lock);
  return CPROTON_OK;
}

/* ---- the backend ------------------------------------------------------------ */

int cproton_instr_current_options(cproton_ptx_options *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "options pointer is NULL");
  pthread_mutex_lock(&lock);
  if (have_current)
    *out = current;
  else
    cproton_ptx_options_init(out);
  pthread_mutex_unlock(&lock);
  return CPROTON_OK;
}

static int instr_available(void) {
  const cp_cudadrv *d;
  return cp_cudadrv_get(&d) == CPROTON_OK;
}

unsigned cp_instr_mode_decode_flags(void) {
  pthread_mutex_lock(&lock);
  unsigned f = mode_decode_flags;
  pthread_mutex_unlock(&lock);
  return f;
}

/* The session's mode, parsed once by the session layer (mode.c). */
static int instr_start(const cp_backend_config *config) {
  const cp_instr_mode *m = cp_instr_mode_of(config);
  pthread_mutex_lock(&lock);
  current = m->options;
  have_current = 1;
  mode_decode_flags = m->decode_flags;
  mode_reduce_device = m->reduce_on_device;
  const char *check = cp_config_get("CPROTON_INSTR_REDUCE_CHECK");
  reduce_check = check && *check && strcmp(check, "0") != 0;
  pthread_mutex_unlock(&lock);
  return CPROTON_OK;
}

static void instr_stop(void) {
  cproton_instr_flush();
  pthread_mutex_lock(&lock);
  int joined = n_workers;
  stopping = 1;
  pthread_cond_broadcast(&work);
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < joined; i++)
    pthread_join(workers[i], NULL);
  pthread_mutex_lock(&lock);
  n_workers = 0;
  have_current = 0;
  mode_decode_flags = 0;
  /* The pool (device buffers and their pinned twins), the copy streams and
   * the idle events stay for the next session: pinning memory is slow, and
   * the pool is bounded by its cap. */
  pthread_mutex_unlock(&lock);
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
};
