/* _pylink.c -- the layers that cproton's "python" context puts around a
 * launching thread's own Python frames when PyTorch runs
 * (python/cproton/_torchlink.py turns them on, _torchlink.c gives the
 * libtorch and Python calls, _pyframes.c calls cpy_link_compose at each
 * launch):
 *
 * - Backward link, made at kernel launches (issue 28; no PyTorch mode).
 *   Forward record: autograd numbers its nodes from a per-thread counter
 *   (at::sequence_number) when it makes them, which for every ATen
 *   operator and autograd.Function.apply is before the operation launches
 *   its kernels. So at a launch of the forward thread outside backward,
 *   peek() == p != the last p seen means node p-1 was made since the last
 *   recorded launch and this is its first launch: node p-1 gets this
 *   launch's path; nodes last_p .. p-2 (made by operations that launched
 *   nothing: views, splits, expands) get the longest common prefix of the
 *   previous recorded launch's path and this one (they were made between
 *   the two, so their call site is under both). Later launches with the
 *   same p cost one compare. Paths are interned (_pathtab.c); a ring keeps
 *   {seq, path} at seq mod size (an entry overwritten before its backward
 *   ran is counted as evicted when looked up).
 *   Backward lookup: a launch inside a backward pass (graph task >= 0)
 *   asks Python for the running node's sequence number (query, with the
 *   GIL) and takes its forward path + "<backward>" + the thread's own
 *   frames newer than the engine's entry; without a record (a node made
 *   before the session or by another thread, AccumulateGrad, evicted) the
 *   frames of backward()'s caller + "<backward>" + own frames (the
 *   fallback; on an engine thread found by query, cached per graph task).
 * - Operator frames: a per-thread stack of "aten::..." frames, pushed and
 *   popped around each operator, put innermost.
 *
 * Locking: one mutex around the ring, the path table, the fallback cache
 * and the counts; taken only when the forward counter moved and once per
 * backward launch, never while taking the GIL. Thread-local state (the
 * operator stack) is read only by its own thread.
 * Hot path: cpy_link_launch_get and cpy_link_compose (launch callbacks). */
#include "_pylink.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "_pathtab.h"
#include "cproton/cproton.h"

#define RING_DEFAULT 65536u
#define MAX_PATHS 65536u
#define MAX_IDS (1u << 21) /* 8 MB of ids in all */
#define FB_SLOTS 4

typedef struct ring_entry {
  uint64_t seq; /* UINT64_MAX: empty */
  int32_t path;
} ring_entry;

typedef struct fb_slot {
  int task; /* -1: empty */
  size_t n; /* CPY_NO_ENTRY: no backward() caller was found */
  uint32_t ids[CPY_LINK_MAX];
} fb_slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const cpy_link_torch *) torch_ops; /* NULL: the link is off */
/* Guarded by lock: */
static cpy_pathtab *paths;
static ring_entry *ring;
static size_t ring_mask;
static int32_t prev_path = -1; /* the last recorded launch's path */
static fb_slot fallbacks[FB_SLOTS];
static unsigned fb_next;
static cpy_link_counts counts;
/* The forward thread: the one whose my_gen equals fwd_gen. */
static atomic_uint fwd_gen;
static _Thread_local unsigned my_gen;
static _Atomic uint64_t last_p; /* written by the forward thread only */
static uint64_t first_seq; /* the counter at start: older nodes, no record */

static _Thread_local struct {
  uint32_t ids[CPY_LINK_MAX];
  size_t n;
} ops;

static uint32_t backward_id(void) {
  static atomic_uint id; /* 0 until interned; ids start at 1 */
  uint32_t v = atomic_load(&id);
  if (v == 0 && cproton_frame_intern("<backward>", &v) == CPROTON_OK)
    atomic_store(&id, v);
  return v;
}

static void free_record(void) { /* under lock */
  cpy_pathtab_free(paths);
  free(ring);
  paths = NULL, ring = NULL, ring_mask = 0, prev_path = -1;
  for (int i = 0; i < FB_SLOTS; i++)
    fallbacks[i].task = -1;
}

int cpy_link_start(const cpy_link_torch *torch, size_t ring_size) {
  size_t size = 1;
  while (size < (ring_size ? ring_size : RING_DEFAULT))
    size <<= 1;
  atomic_store(&torch_ops, NULL);
  pthread_mutex_lock(&lock);
  free_record();
  paths = cpy_pathtab_new(MAX_PATHS, MAX_IDS);
  ring = malloc(size * sizeof *ring);
  int ok = paths && ring;
  for (size_t i = 0; ok && i < size; i++)
    ring[i].seq = UINT64_MAX;
  if (ok)
    ring_mask = size - 1;
  else
    free_record();
  memset(&counts, 0, sizeof counts);
  my_gen = atomic_fetch_add(&fwd_gen, 1) + 1;
  first_seq = torch->peek();
  atomic_store(&last_p, first_seq);
  pthread_mutex_unlock(&lock);
  if (ok)
    atomic_store(&torch_ops, torch);
  return ok ? 0 : -1;
}

void cpy_link_reset(void) {
  atomic_store(&torch_ops, NULL);
  pthread_mutex_lock(&lock);
  free_record();
  pthread_mutex_unlock(&lock);
  ops.n = 0;
}

cpy_link_launch cpy_link_launch_get(void) {
  cpy_link_launch l = {-2, 0};
  const cpy_link_torch *t =
      atomic_load_explicit(&torch_ops, memory_order_acquire);
  if (!t)
    return l;
  l.task = t->task_id();
  if (l.task == -1 &&
      my_gen == atomic_load_explicit(&fwd_gen, memory_order_relaxed)) {
    uint64_t p = t->peek(); /* 0: no node made yet on this thread */
    if (p != atomic_load_explicit(&last_p, memory_order_relaxed))
      l.record_at = p;
  }
  return l;
}

void cpy_link_counts_get(cpy_link_counts *out) {
  pthread_mutex_lock(&lock);
  *out = counts;
  pthread_mutex_unlock(&lock);
}

/* ---- the forward record ------------------------------------------------ */

static size_t common_prefix(int32_t a, const uint32_t *ids, size_t n) {
  size_t na;
  const uint32_t *pa = cpy_pathtab_get(paths, a, &na);
  size_t i = 0;
  while (i < na && i < n && pa[i] == ids[i])
    i++;
  return i;
}

static void put(uint64_t seq, int32_t path) {
  ring[seq & ring_mask] = (ring_entry){seq, path};
}

/* Nodes [from, p-1) at the common prefix, node p-1 at ids. Under lock. */
static void record_nodes(uint64_t from, uint64_t p, const uint32_t *ids,
                         size_t n) {
  int32_t exact = cpy_pathtab_intern(paths, ids, n);
  if (p - from > ring_mask + 1)
    from = p - (ring_mask + 1); /* older ones would be overwritten at once */
  if (from + 1 < p && prev_path >= 0) {
    size_t n_pre = common_prefix(prev_path, ids, n);
    int32_t pre = cpy_pathtab_intern(paths, ids, n_pre);
    for (uint64_t s = from; s + 1 < p; s++)
      if (pre >= 0)
        put(s, pre), counts.prefix++;
      else
        counts.paths_full++;
  }
  if (exact >= 0)
    put(p - 1, exact), counts.exact++;
  else
    counts.paths_full++;
  prev_path = exact;
  counts.records++;
}

/* A launch of the forward thread outside backward whose sequence counter
 * moved to p since the last record (cpy_link_launch_get). */
static void record(uint64_t p, const uint32_t *ids, size_t n) {
  uint64_t from = atomic_load_explicit(&last_p, memory_order_relaxed);
  atomic_store_explicit(&last_p, p, memory_order_relaxed);
  if (p < from) /* not expected: the counter only grows */
    from = p - 1;
  pthread_mutex_lock(&lock);
  if (ring)
    record_nodes(from, p, ids, n);
  pthread_mutex_unlock(&lock);
}

/* ---- the backward lookup ----------------------------------------------- */

/* The cached fallback of graph task `task` into fb. 1 when cached. */
static int fb_cached(int task, uint32_t *fb, size_t *n) {
  int hit = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < FB_SLOTS && !hit; i++)
    if (fallbacks[i].task == task) {
      *n = fallbacks[i].n;
      if (*n != CPY_NO_ENTRY)
        memcpy(fb, fallbacks[i].ids, *n * sizeof *fb);
      hit = 1;
    }
  pthread_mutex_unlock(&lock);
  return hit;
}

static void fb_store(int task, const uint32_t *fb, size_t n) { /* under lock */
  fb_slot *s = &fallbacks[fb_next++ % FB_SLOTS];
  s->task = task, s->n = n;
  if (n != CPY_NO_ENTRY)
    memcpy(s->ids, fb, n * sizeof *fb);
}

/* out = base + <backward> + own, at most max ids; the outer frames stay. */
static size_t join(uint32_t *out, size_t max, const uint32_t *base, size_t nb,
                   const uint32_t *own, size_t no) {
  if (max == 0)
    return 0;
  if (nb > max - 1)
    nb = max - 1;
  if (nb)
    memcpy(out, base, nb * sizeof *out);
  out[nb] = backward_id();
  size_t n = nb + 1;
  if (no > max - n)
    no = max - n;
  if (no)
    memcpy(out + n, own, no * sizeof *out);
  return n + no;
}

/* The forward path of node `seq`, or the fallback (fb: CPY_NO_ENTRY when
 * none was found), joined with `own` into out. Under lock. */
static size_t linked_path(uint64_t seq, const uint32_t *fb, size_t n_fb,
                          const uint32_t *own, size_t n_own, uint32_t *out,
                          size_t max) {
  const uint32_t *base = NULL;
  size_t nb = 0;
  ring_entry e = {UINT64_MAX, -1};
  if (ring && seq != UINT64_MAX)
    e = ring[seq & ring_mask];
  counts.lookups++;
  if (e.seq == seq && seq != UINT64_MAX) {
    counts.linked++;
    base = cpy_pathtab_get(paths, e.path, &nb);
  } else {
    counts.fallback++;
    counts.evicted += e.seq != UINT64_MAX && e.seq > seq && seq >= first_seq;
    if (n_fb != CPY_NO_ENTRY) {
      base = fb, nb = n_fb;
    } else {
      counts.not_found++;
      if (paths && prev_path >= 0) /* the outermost frame of the forward */
        base = cpy_pathtab_get(paths, prev_path, &nb), nb = nb > 0;
    }
  }
  return join(out, max, base, nb, own, n_own);
}

static size_t backward_path(const cpy_link_torch *t, uint32_t *ids, size_t n,
                            size_t n_outer, int task, size_t max) {
  uint32_t fb[CPY_LINK_MAX], out[CPY_LINK_MAX];
  const uint32_t *base = fb, *own = ids;
  size_t n_fb = CPY_NO_ENTRY, n_own = n;
  if (n_outer != CPY_NO_ENTRY) /* the thread that called backward() */
    base = ids, n_fb = n_outer, own = ids + n_outer, n_own = n - n_outer;
  int want = n_outer == CPY_NO_ENTRY && !fb_cached(task, fb, &n_fb);
  uint64_t seq = UINT64_MAX;
  size_t n_q = CPY_NO_ENTRY;
  int asked = t->query(&seq, want ? fb : NULL, &n_q, CPY_LINK_MAX - 1) == 0;
  if (want && asked)
    n_fb = n_q;
  pthread_mutex_lock(&lock);
  if (want && asked)
    fb_store(task, fb, n_fb);
  size_t r = linked_path(seq, base, n_fb, own, n_own, out,
                         max < CPY_LINK_MAX ? max : CPY_LINK_MAX);
  pthread_mutex_unlock(&lock);
  memcpy(ids, out, r * sizeof *ids);
  return r;
}

size_t cpy_link_compose(uint32_t *ids, size_t n, size_t n_outer,
                        cpy_link_launch l, size_t max) {
  const cpy_link_torch *t =
      atomic_load_explicit(&torch_ops, memory_order_acquire);
  if (t && l.record_at) /* below a node maker: the frames older than it */
    record(l.record_at, ids,
           n_outer != CPY_NO_ENTRY && n_outer < n ? n_outer : n);
  else if (t && l.task >= 0)
    n = backward_path(t, ids, n, n_outer, l.task, max);
  size_t n_ops = ops.n < CPY_LINK_MAX ? ops.n : CPY_LINK_MAX;
  for (size_t i = 0; i < n_ops && n < max; i++)
    ids[n++] = ops.ids[i];
  return n;
}

/* ---- operator frames --------------------------------------------------- */

void cpy_link_op_push(uint32_t id) {
  if (ops.n < CPY_LINK_MAX)
    ops.ids[ops.n] = id;
  ops.n++; /* counts past the cap so pops stay paired */
}

void cpy_link_op_pop(void) {
  if (ops.n > 0)
    ops.n--;
}
