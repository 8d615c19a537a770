/* _pylink.c -- the layers that cproton's "python" context puts around a
 * thread's own Python frames when PyTorch runs (python/cproton/_torchlink.py
 * feeds them):
 *
 * - Backward link. Autograd's engine thread has no Python frames of the
 *   forward code, so its kernels would land at ROOT. While a backward pass
 *   runs (begin/end, called around Tensor.backward and autograd.grad), a
 *   thread that runs a node hooked in the forward pass takes that node's
 *   forward frames + "<backward>" in place of its own frames outer to the
 *   hook (the anchor: frames that stay the same while the node runs); any
 *   other node, and a thread with no frames, take the frames of the caller
 *   of backward() + "<backward>" (the fallback). The epoch retires a
 *   thread's link when its backward pass ends.
 * - Operator frames: a per-thread stack of "aten::..." frames, pushed and
 *   popped around each operator, put innermost.
 *
 * The fallback is global (one backward pass at a time owns it; a nested
 * pass saves and restores it through the token). Thread-local state is read
 * only by its own thread, in the unwinder, without locks. */
#include "_pylink.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "cproton/cproton.h"

typedef struct fallback {
  uint32_t ids[CPY_LINK_MAX];
  size_t n;
  unsigned long epoch;
} fallback;

#define MAX_NEST 8

static fallback nest[MAX_NEST]; /* [depth-1] is the live one */
static atomic_int depth;
static atomic_ulong epoch_counter = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct thread_link {
  uint32_t ids[CPY_LINK_MAX];
  size_t n, anchor;
  unsigned long epoch;
  uint32_t ops[CPY_LINK_MAX];
  size_t n_ops;
} thread_link;

static _Thread_local thread_link tl;

static uint32_t backward_id(void) {
  static atomic_uint id; /* 0 until interned; ids start at 1 */
  uint32_t v = atomic_load(&id);
  if (v == 0 && cproton_frame_intern("<backward>", &v) == CPROTON_OK)
    atomic_store(&id, v);
  return v;
}

static size_t with_marker(uint32_t *out, const uint32_t *ids, size_t n) {
  if (n > CPY_LINK_MAX - 1)
    n = CPY_LINK_MAX - 1; /* the outermost frames stay */
  memcpy(out, ids, n * sizeof *ids);
  out[n] = backward_id();
  return n + 1;
}

long cpy_link_backward_begin(const uint32_t *ids, size_t n) {
  pthread_mutex_lock(&lock);
  int d = atomic_load(&depth);
  long token = -1;
  if (d < MAX_NEST) {
    nest[d].n = with_marker(nest[d].ids, ids, n);
    nest[d].epoch = atomic_fetch_add(&epoch_counter, 1) + 1;
    atomic_store(&depth, d + 1);
    token = d;
  }
  pthread_mutex_unlock(&lock);
  return token;
}

void cpy_link_backward_end(long token) {
  if (token < 0)
    return;
  pthread_mutex_lock(&lock);
  if (atomic_load(&depth) > token)
    atomic_store(&depth, (int)token);
  atomic_fetch_add(&epoch_counter, 1); /* retires the threads' links */
  pthread_mutex_unlock(&lock);
}

static const fallback *live(void) {
  int d = atomic_load(&depth);
  return d > 0 ? &nest[d - 1] : NULL;
}

void cpy_link_node(const uint32_t *ids, size_t n, size_t anchor) {
  const fallback *f = live();
  if (!f)
    return;
  tl.epoch = f->epoch;
  tl.anchor = anchor;
  if (ids)
    tl.n = with_marker(tl.ids, ids, n);
  else {
    memcpy(tl.ids, f->ids, f->n * sizeof *f->ids);
    tl.n = f->n;
  }
}

void cpy_link_node_first(size_t anchor) {
  const fallback *f = live();
  if (f && tl.epoch != f->epoch)
    cpy_link_node(NULL, 0, anchor);
}

void cpy_link_view_get(cpy_link_view *v, size_t raw_depth_now) {
  memset(v, 0, sizeof *v);
  v->ops = tl.ops;
  v->n_ops = tl.n_ops < CPY_LINK_MAX ? tl.n_ops : CPY_LINK_MAX;
  const fallback *f = live();
  if (!f)
    return;
  if (tl.epoch == f->epoch && raw_depth_now >= tl.anchor) {
    v->prefix = tl.ids, v->n_prefix = tl.n, v->anchor = tl.anchor;
  } else if (raw_depth_now == 0) { /* an engine thread before any hook */
    v->prefix = f->ids, v->n_prefix = f->n;
  }
}

void cpy_link_op_push(uint32_t id) {
  if (tl.n_ops < CPY_LINK_MAX)
    tl.ops[tl.n_ops] = id;
  tl.n_ops++; /* counts past the cap so pops stay paired */
}

void cpy_link_op_pop(void) {
  if (tl.n_ops > 0)
    tl.n_ops--;
}

void cpy_link_reset(void) {
  pthread_mutex_lock(&lock);
  atomic_store(&depth, 0);
  atomic_fetch_add(&epoch_counter, 1);
  pthread_mutex_unlock(&lock);
  tl.n_ops = 0;
}
