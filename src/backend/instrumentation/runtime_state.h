/* backend/instrumentation/runtime_state.h -- the instrumentation
 * runtime's state, one struct for the process (it was the file globals of
 * runtime.c), its types and the functions its three files share:
 *   runtime.c        kernels, the backend's ops (start, stop, flush, mode)
 *   runtime_pool.c   device buffers and their pinned twins, events and
 *                    copy streams, recycled under the cap
 *   runtime_queue.c  launches queued, copied back, decoded by the worker
 *                    threads and delivered in launch order
 * Not used outside those files (runtime.h is the runtime's interface to
 * the rest of the backend; not included here, so no include cycle).
 * Invariant: every field is guarded by `lock` (the decoders release it
 * while they wait for a copy, decode and deliver). */
#ifndef CP_BACKEND_INSTR_RUNTIME_STATE_H
#define CP_BACKEND_INSTR_RUNTIME_STATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cudadrv.h"
#include "core/session.h"
#include "cproton/instrument.h"
#include "cproton/instrumentation.h"

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

/* Recycled events (creating one per launch costs microseconds). */
#define MAX_IDLE_EVENTS 256
typedef struct idle_event {
  cp_cucontext ctx;
  cp_cuevent event;
} idle_event;

/* Pending entries point into the buffer array, so it is allocated once and
 * never moves; buffers are recycled, so the cap bounds launches in flight. */
#define MAX_BUFFERS 1024
/* Device (and pinned host) bytes the pool may hold: past this, a launch
 * waits for the decoder to return a buffer instead of pinning more memory
 * (large grids with generous per-warp segments reach tens of MB a launch). */
#define MAX_POOL_BYTES ((size_t)2 << 30)
/* Decoder threads: a large launch takes milliseconds to decode, so several
 * share the queue (half the CPUs, 2 to 8); deliveries keep launch order. */
#define MAX_WORKERS 8

typedef struct cp_instr_runtime {
  struct {
    cp_cucontext ctx;
    cp_custream stream;
  } copy_streams[MAX_CONTEXTS];
  int n_copy_streams;
  idle_event idle_events[MAX_IDLE_EVENTS];
  int n_idle_events;
  pthread_mutex_t lock;
  pthread_cond_t work;
  pthread_cond_t idle;
  pthread_cond_t freed; /* a buffer returned */
  /* Launches are numbered as they are queued and delivered in that order
   * (profiles and traces list kernels as they were launched): decoders
   * work in parallel, put decoded launches in the ready list and go on
   * decoding; whichever holds the next number delivers it and those after
   * it, one thread at a time. */
  uint64_t next_seq, next_delivery;
  pending *ready;
  int delivering;
  buffer *buffers;
  size_t n_buffers, pool_bytes;
  pending *head, *tail;
  int busy, n_workers, stopping; /* busy: workers decoding now */
  pthread_t workers[MAX_WORKERS];
  cproton_ptx_options current;
  int have_current;
  unsigned mode_decode_flags; /* from the session's mode: time_shift */
  int mode_reduce_device;     /* reduce=device (the default) */
  int reduce_check; /* CPROTON_INSTR_REDUCE_CHECK=1: diff with the host */
} cp_instr_runtime;

/* The one instance (runtime.c). */
extern cp_instr_runtime cp_instr_rt;

/* runtime_pool.c; callers hold `lock`. */
buffer *cp_instr_pool_find(uint64_t dptr);
int cp_instr_pool_event_get(const cp_cudadrv *d, cp_cucontext ctx,
                            cp_cuevent *out);
void cp_instr_pool_event_put(const cp_cudadrv *d, cp_cucontext ctx,
                             cp_cuevent e);
int cp_instr_pool_copy_stream(const cp_cudadrv *d, cp_cucontext ctx,
                              cp_custream *out);
int cp_instr_pool_sum_room(const cp_cudadrv *d, buffer *b, size_t words);
int cp_instr_pool_host_room(const cp_cudadrv *d, buffer *b, size_t bytes);

#endif
