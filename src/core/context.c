/* core/context.c -- the calling thread's shadow stack, states and op.
 *
 * Invariant: frame i's node for a resolved kind is the child of frame
 * i-1's node (ROOT below frame 0) for shadow and native (the same node:
 * native frames exist only between a launch's scopes and its kernel); for
 * Python it is the path the source returned at push time. Thread state is allocated on first use and
 * freed by a pthread key destructor when the thread exits.
 * Other threads: a thread with no scope of its own launches under the main
 * thread's (the one that started the latest session) live top of stack,
 * which the main thread publishes in `main_top` on every push and pop; a
 * node pointer is all another thread reads.
 * Compaction: every thread is in a registry with two counters that only
 * it writes: `busy` (it is inside a recording call: cp_context_guard_*)
 * and `held` (resolved frames, states and the op it holds: each names a
 * node or a scoped string). cp_context_compact frees the tree and the
 * scoped names only when every thread has both at zero; exited frames kept
 * for late metrics carry the generation they were made in and are ignored
 * once it has passed; so does a thread's memo of its last Python path
 * (path_memo), which holds nodes without counting them in `held`.
 * Hot path: push/pop (scope enter/exit) and launch_node (launch callbacks).
 * Called by core/session.c. */
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fnv.h"
#include "core/context.h"
#include "core/error.h"
#include "core/native.h"
#include "core/strtab.h"

#define N_RECENT 8 /* exited frames kept for metrics added after exit */

/* The last path a context source gave this thread and its nodes, reused
 * for the longest common outer part of the next one: a launch from the
 * same call path costs a comparison of ids, not a child lookup per frame.
 * Valid while the tree's generation stays (a compaction frees the nodes;
 * the callers run inside a guard, so none can start while it is read). */
typedef struct path_memo {
  uint32_t ids[CP_MAX_FRAMES];
  cp_node *nodes[CP_MAX_FRAMES];
  size_t n;
  unsigned generation;
} path_memo;

typedef struct cp_thread {
  atomic_uint busy; /* recording calls in progress (nested) */
  atomic_uint held; /* resolved frames + resolved states + op */
  struct cp_thread *prev, *next; /* registry, under reg_lock */
  size_t depth;
  cp_frame stack[CP_MAX_DEPTH];
  cp_frame recent[N_RECENT];
  unsigned n_recent;
  uint32_t states[CP_MAX_STATES];
  uint32_t state_tails[CP_MAX_STATES]; /* a state's second frame, or 0 */
  size_t n_states;
  uint32_t op;
  uint32_t tid;
  uint64_t next_scope;
  /* Written by the owner only (plain stores, no RMW), read by
   * cp_context_uniform under reg_lock: stack non-empty; a state or an op. */
  atomic_int framed, marked;
  path_memo path; /* context="python" (resolve_source) */
} cp_thread;

static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local cp_thread *self;
static atomic_uint next_tid = 1;
static atomic_uint main_tid;             /* 0: no main thread */
static _Atomic(cp_node *) main_top;      /* its top shadow node, or NULL */

/* Change tracking for backends that skip launch callbacks while nothing
 * changed (backend/cupti/lazy.c): a generation bumped after every change
 * that can move any thread's launch site, and per-thread flags (framed,
 * marked) that cp_context_uniform reads over the registry. A flag changes
 * only when a thread's stack becomes empty or non-empty (or its states/op
 * do), by a plain store on the owner's own cache line: scopes pay no shared
 * RMW. The generation is bumped only while a hook is set, so a profile
 * without it pays one relaxed load per change. */
static _Atomic(void (*)(void)) change_hook;
static atomic_ullong site_gen;
/* cp_context_uniform's last answer: ((generation + 1) << 1) | answer, 0
 * when none. While the generation stays, the answer holds. */
static atomic_ullong uniform_memo;

static struct {
  _Atomic(cproton_unwind_fn) fn;
  void *_Atomic user;
} sources[CP_CONTEXT_KINDS];

static const char *kind_names[CP_CONTEXT_KINDS] = {"shadow", "python",
                                                   "native"};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static cp_thread *registry;  /* every live thread's state */
static atomic_uint generation; /* bumped by each compaction */
/* 1 once the process is registered for expedited membarrier: the guard's
 * store then needs no fence of its own (the compactor's membarrier makes
 * every running thread execute one), else it is sequentially consistent. */
static atomic_int light_fence;

/* After a change: bump the generation (sequentially consistent: lazy.c's
 * disable re-reads it after publishing its own flag) and tell the hook. */
static void changed(void) {
  void (*fn)(void) = atomic_load_explicit(&change_hook, memory_order_relaxed);
  if (!fn)
    return;
  atomic_fetch_add(&site_gen, 1);
  fn();
}

/* Keeps t->marked in step with its states and op (owner only). Release:
 * a reader of the generation bumped after it (changed()) sees it. */
static void remark(cp_thread *t) {
  int marked = t->n_states > 0 || t->op != 0;
  if (marked != atomic_load_explicit(&t->marked, memory_order_relaxed))
    atomic_store_explicit(&t->marked, marked, memory_order_release);
}

static void thread_free(void *p) {
  cp_thread *t = p;
  unsigned tid = t->tid;
  if (atomic_compare_exchange_strong(&main_tid, &tid, 0))
    atomic_store(&main_top, NULL); /* its stack is gone: others use ROOT */
  pthread_mutex_lock(&reg_lock); /* out of the registry: no longer counted */
  if (t->prev)
    t->prev->next = t->next;
  else
    registry = t->next;
  if (t->next)
    t->next->prev = t->prev;
  pthread_mutex_unlock(&reg_lock);
  free(p);
  self = NULL; /* destructors run on the exiting thread itself */
  changed();
}
static void make_key(void) { pthread_key_create(&thread_key, thread_free); }

static cp_thread *thread_get(void) {
  if (self)
    return self;
  pthread_once(&key_once, make_key);
  self = calloc(1, sizeof *self);
  if (!self)
    return NULL;
  self->tid = atomic_fetch_add(&next_tid, 1);
  pthread_setspecific(thread_key, self);
  pthread_mutex_lock(&reg_lock);
  self->next = registry;
  if (registry)
    registry->prev = self;
  registry = self;
  pthread_mutex_unlock(&reg_lock);
  return self;
}

/* Only the owner writes its counters: a load and a store, no RMW. */
static void held_add(cp_thread *t, int d) {
  unsigned h = atomic_load_explicit(&t->held, memory_order_relaxed);
  atomic_store_explicit(&t->held, h + (unsigned)d, memory_order_relaxed);
}

/* The owner lets go of a node or scoped name it has finished reading. */
static void held_drop(cp_thread *t) {
  unsigned h = atomic_load_explicit(&t->held, memory_order_relaxed);
  atomic_store_explicit(&t->held, h - 1, memory_order_release);
}

void cp_context_fence_init(void) {
  static int tried;
  if (tried)
    return;
  tried = 1;
  long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
              0) == 0)
    atomic_store(&light_fence, 1);
}

static _Thread_local int own_calls;

void cp_context_own_calls_begin(void) { own_calls++; }
void cp_context_own_calls_end(void) { own_calls -= own_calls > 0; }
int cp_context_own_calls(void) { return own_calls; }

int cp_context_guard_begin(void) {
  cp_thread *t = thread_get();
  if (!t)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for thread state");
  /* The store must be ordered before the caller's load of the active mask,
   * against the compactor's store of the mask and load of `busy` (Dekker):
   * by the compactor's membarrier (then only the compiler must keep the
   * order) or by a sequentially consistent store. */
  unsigned b = atomic_load_explicit(&t->busy, memory_order_relaxed) + 1;
  if (atomic_load_explicit(&light_fence, memory_order_relaxed)) {
    atomic_store_explicit(&t->busy, b, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
  } else {
    atomic_store(&t->busy, b);
  }
  return CPROTON_OK;
}

void cp_context_guard_end(void) {
  cp_thread *t = self;
  atomic_store_explicit(
      &t->busy, atomic_load_explicit(&t->busy, memory_order_relaxed) - 1,
      memory_order_release);
}

int cp_context_compact(int (*reset)(void)) {
  /* every running thread passes a full barrier: a guard store made before
   * it is seen below, a mask load after it sees 0 */
  if (atomic_load(&light_fence) &&
      syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
    return 0;
  pthread_mutex_lock(&reg_lock);
  int quiet = 1;
  for (cp_thread *t = registry; t && quiet; t = t->next)
    quiet = atomic_load(&t->busy) == 0 &&
            atomic_load_explicit(&t->held, memory_order_acquire) == 0;
  int done = quiet && reset();
  if (done) {
    atomic_store(&main_top, NULL);
    atomic_fetch_add(&generation, 1);
  }
  pthread_mutex_unlock(&reg_lock);
  return done;
}

int cp_context_kind_parse(const char *name, cp_context_kind *out) {
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    if (name && strcmp(name, kind_names[k]) == 0) {
      *out = (cp_context_kind)k;
      return CPROTON_OK;
    }
  return cp_error_set(CPROTON_EINVAL,
                      "unknown context '%s' (valid: shadow, python, native)",
                      name ? name : "(null)");
}

/* The node of path ids[0, count) from ROOT, through t's memo (t may be
 * NULL: no memo). NULL when a node cannot be made. */
static cp_node *path_node(cp_thread *t, const uint32_t *ids, size_t count) {
  cp_node *n = cp_cct_root();
  if (!t) {
    for (size_t i = 0; i < count && n; i++)
      n = cp_cct_child(n, ids[i]);
    return n;
  }
  path_memo *m = &t->path;
  unsigned gen = atomic_load_explicit(&generation, memory_order_acquire);
  size_t i = 0;
  if (m->generation != gen)
    m->n = 0, m->generation = gen;
  while (i < count && i < m->n && m->ids[i] == ids[i])
    i++;
  if (i)
    n = m->nodes[i - 1];
  for (; i < count && n; i++) {
    n = cp_cct_child(n, ids[i]);
    m->ids[i] = ids[i], m->nodes[i] = n;
  }
  m->n = n ? count : 0;
  return n;
}

/* Resolves the Python path from ROOT; ROOT when there is no source. */
static cp_node *resolve_source(cp_thread *t, cp_context_kind kind) {
  cproton_unwind_fn fn = atomic_load(&sources[kind].fn);
  if (!fn)
    return cp_cct_root();
  uint32_t ids[CP_MAX_FRAMES];
  size_t count = fn(atomic_load(&sources[kind].user), ids, CP_MAX_FRAMES);
  cp_node *n = path_node(t, ids, count < CP_MAX_FRAMES ? count : CP_MAX_FRAMES);
  return n ? n : cp_cct_root();
}

uint64_t cp_context_name_hash(const char *name) {
  return cp_fnv_str(name);
}

/* The shadow node of the innermost resolved frame of `t`; NULL if none
 * (frames entered with no session active have no node). */
static cp_node *resolved_top(const cp_thread *t) {
  for (size_t i = t->depth; i-- > 0;)
    if (t->stack[i].node[CP_CONTEXT_SHADOW])
      return t->stack[i].node[CP_CONTEXT_SHADOW];
  return NULL;
}

/* The main thread's top shadow node, for threads without scopes. */
static void publish_top(const cp_thread *t) {
  if (t->tid == atomic_load_explicit(&main_tid, memory_order_relaxed))
    atomic_store_explicit(&main_top, resolved_top(t), memory_order_release);
}

/* A push (depth 0 -> 1) or pop (1 -> 0) on `t` flips t->framed (release,
 * as remark). Other depth changes touch nothing shared. */
static void frame_edge(cp_thread *t, size_t depth_before, size_t depth_after) {
  if (!depth_before != !depth_after)
    atomic_store_explicit(&t->framed, depth_after > 0, memory_order_release);
}

/* The calling thread's state when its stack has room for one more frame. */
static int push_room(cp_thread **out) {
  cp_thread *t = *out = thread_get();
  if (!t)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for thread state");
  if (t->depth >= CP_MAX_DEPTH)
    return cp_error_set(CPROTON_ELIMIT, "scope stack deeper than %d", CP_MAX_DEPTH);
  return CPROTON_OK;
}

int cp_context_push_unresolved(const char *name, cp_frame **frame_out) {
  cp_thread *t;
  int rc = push_room(&t);
  if (rc)
    return rc;
  cp_frame *f = &t->stack[t->depth];
  memset(f->node, 0, sizeof f->node);
  f->name = 0;
  f->name_hash = cp_context_name_hash(name);
  f->start_ns = 0;
  f->timed = 0;
  f->id = ((uint64_t)t->tid << 40) | ++t->next_scope;
  f->state = 0;
  frame_edge(t, t->depth, t->depth + 1);
  t->depth++; /* an unresolved frame leaves main_top as it is */
  *frame_out = f;
  changed();
  return CPROTON_OK;
}

void cp_context_set_main(void) {
  cp_thread *t = thread_get();
  if (!t)
    return;
  atomic_store(&main_tid, t->tid);
  publish_top(t);
  changed();
}

void cp_context_clear_main(void) {
  atomic_store(&main_tid, 0);
  atomic_store(&main_top, NULL);
  changed();
}

int cp_context_push(uint32_t name, unsigned kinds, cp_frame **frame_out) {
  cp_thread *t;
  int rc = push_room(&t);
  if (rc)
    return rc;
  cp_node *parent = resolved_top(t);
  if (!parent)
    parent = cp_cct_root();
  cp_frame *f = &t->stack[t->depth];
  f->node[CP_CONTEXT_SHADOW] = cp_cct_child(parent, name);
  if (!f->node[CP_CONTEXT_SHADOW])
    return CPROTON_ENOMEM;
  for (int k = 1; k < CP_CONTEXT_KINDS; k++)
    f->node[k] = !((kinds >> k) & 1)     ? NULL
                 : k == CP_CONTEXT_NATIVE ? f->node[CP_CONTEXT_SHADOW]
                                          : resolve_source(t, (cp_context_kind)k);
  f->name = name;
  f->start_ns = 0;
  f->timed = 0;
  f->id = ((uint64_t)t->tid << 40) | ++t->next_scope;
  f->state = t->n_states ? t->states[t->n_states - 1] : 0;
  f->state_tail = t->n_states ? t->state_tails[t->n_states - 1] : 0;
  f->generation = atomic_load_explicit(&generation, memory_order_relaxed);
  frame_edge(t, t->depth, t->depth + 1);
  t->depth++;
  held_add(t, 1);
  publish_top(t);
  *frame_out = f;
  changed();
  return CPROTON_OK;
}

int cp_context_pop(const char *name, const cp_frame **popped) {
  cp_thread *t = thread_get();
  if (!t || t->depth == 0)
    return cp_error_set(CPROTON_ESTATE, "exit_scope without a matching enter");
  cp_frame *f = &t->stack[t->depth - 1];
  int mismatch = name && (f->name ? strcmp(name, cp_strtab_str(f->name)) != 0
                                  : cp_context_name_hash(name) != f->name_hash);
  if (mismatch)
    return cp_error_set(CPROTON_ESTATE,
                        "exit_scope('%s') does not match the innermost "
                        "scope%s%s%s",
                        name, f->name ? " '" : " (entered with no session active)",
                        f->name ? cp_strtab_str(f->name) : "", f->name ? "'" : "");
  cp_frame *kept = &t->recent[t->n_recent++ % N_RECENT];
  *kept = *f;
  if (popped)
    *popped = kept;
  frame_edge(t, t->depth, t->depth - 1);
  t->depth--;
  /* release: the name was read above, before any compaction. A timed or
   * traced frame stays held until its caller has recorded it. */
  if (f->name && !f->start_ns)
    held_drop(t);
  publish_top(t);
  changed();
  return CPROTON_OK;
}

void cp_context_release(void) { held_drop(self); }

const cp_frame *cp_context_find(uint64_t id) {
  cp_thread *t = thread_get();
  if (!t)
    return NULL;
  if (id == 0)
    return t->depth ? &t->stack[t->depth - 1] : NULL;
  for (size_t i = t->depth; i-- > 0;)
    if (t->stack[i].id == id)
      return &t->stack[i];
  unsigned now = atomic_load_explicit(&generation, memory_order_relaxed);
  for (unsigned i = 0; i < N_RECENT; i++) /* older ones' nodes are gone */
    if (t->recent[i].id == id && (!t->recent[i].name ||
                                  t->recent[i].generation == now))
      return &t->recent[i];
  return NULL;
}

size_t cp_context_depth(void) {
  cp_thread *t = thread_get();
  return t ? t->depth : 0;
}

/* The node of state `state` (with its second frame `tail`) under `n`. */
static cp_node *state_node(cp_node *n, uint32_t state, uint32_t tail) {
  n = cp_cct_child(n, state);
  return n && tail ? cp_cct_child(n, tail) : n;
}

cp_node *cp_context_frame_node(const cp_frame *f, cp_context_kind kind) {
  cp_node *n = f->node[kind];
  return n && f->state ? state_node(n, f->state, f->state_tail) : n;
}

cp_node *cp_context_top(cp_context_kind kind) {
  cp_thread *t = thread_get();
  if (kind == CP_CONTEXT_PYTHON)
    return resolve_source(t, kind);
  cp_node *top = t ? resolved_top(t) : NULL;
  if (top)
    return top;
  cp_node *main = atomic_load_explicit(&main_top, memory_order_acquire);
  return main ? main : cp_cct_root();
}

cp_node *cp_context_launch_node(cp_context_kind kind, int *is_op) {
  cp_thread *t = thread_get();
  cp_node *n = cp_context_top(kind);
  if (kind == CP_CONTEXT_NATIVE)
    n = cp_native_path(n);
  *is_op = 0;
  if (!t)
    return n;
  if (t->op) { /* an op names the kernel node itself; states don't apply */
    n = cp_cct_child(n, t->op);
    *is_op = 1;
  } else if (t->n_states && t->states[t->n_states - 1]) { /* 0: unresolved */
    size_t top = t->n_states - 1;
    n = state_node(n, t->states[top], t->state_tails[top]);
  }
  return n ? n : cp_cct_root();
}

int cp_context_state_push(uint32_t name, uint32_t tail) {
  cp_thread *t = thread_get();
  if (!t)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for thread state");
  if (t->n_states >= CP_MAX_STATES)
    return cp_error_set(CPROTON_ELIMIT, "more than %d nested states",
                        CP_MAX_STATES);
  t->state_tails[t->n_states] = name ? tail : 0;
  t->states[t->n_states++] = name;
  if (name)
    held_add(t, 1);
  remark(t);
  changed();
  return CPROTON_OK;
}

int cp_context_state_pop(void) {
  cp_thread *t = thread_get();
  if (!t || t->n_states == 0)
    return cp_error_set(CPROTON_ESTATE, "exit_state without enter_state");
  if (t->states[--t->n_states])
    held_drop(t);
  remark(t);
  changed();
  return CPROTON_OK;
}

int cp_context_op_set(uint32_t name) {
  cp_thread *t = thread_get();
  if (!t)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for thread state");
  held_add(t, (name != 0) - (t->op != 0));
  int same = t->op == name;
  t->op = name;
  if (!same) {
    remark(t);
    changed();
  }
  return CPROTON_OK;
}

uint32_t cp_context_thread_id(void) {
  cp_thread *t = thread_get();
  return t ? t->tid : 0;
}

int cp_context_source_set(cp_context_kind kind, cproton_unwind_fn fn,
                          void *user) {
  if (kind != CP_CONTEXT_PYTHON)
    return cp_error_set(CPROTON_EINVAL, "context '%s' takes no source",
                        kind_names[kind < CP_CONTEXT_KINDS ? kind : 0]);
  atomic_store(&sources[kind].user, user);
  atomic_store(&sources[kind].fn, fn);
  return CPROTON_OK;
}

int cp_context_source_ready(cp_context_kind kind) {
  const char *why;
  if (kind == CP_CONTEXT_NATIVE)
    return cp_native_available(&why);
  return kind == CP_CONTEXT_SHADOW || atomic_load(&sources[kind].fn) != NULL;
}

/* ---- change tracking (backend/cupti/lazy.c) -------------------------------- */

void cp_context_set_change_hook(void (*fn)(void)) {
  atomic_store(&change_hook, fn);
  atomic_fetch_add(&site_gen, 1);
}

uint64_t cp_context_generation(void) { return atomic_load(&site_gen); }

void cp_context_touch(void) { changed(); }

/* Over the registry: no thread marked, and no thread framed but the main
 * one. Caller: reg_lock. */
static int uniform_scan(void) {
  unsigned main = atomic_load(&main_tid);
  for (const cp_thread *t = registry; t; t = t->next) {
    if (atomic_load_explicit(&t->marked, memory_order_acquire))
      return 0;
    if (atomic_load_explicit(&t->framed, memory_order_acquire) &&
        (!main || t->tid != main))
      return 0;
  }
  return 1; /* every thread at ROOT, or under the main thread's stack */
}

int cp_context_uniform(void) {
  /* The flags read after `gen` are those of `gen` or later; while the
   * generation stays (a hook set: every change bumps it) so does the
   * answer, and the scan runs once per change, not once per launch. */
  int memo_ok = atomic_load(&change_hook) != NULL;
  uint64_t gen = atomic_load(&site_gen);
  uint64_t memo = atomic_load_explicit(&uniform_memo, memory_order_relaxed);
  if (memo_ok && memo >> 1 == gen + 1)
    return (int)(memo & 1);
  pthread_mutex_lock(&reg_lock);
  int u = uniform_scan();
  pthread_mutex_unlock(&reg_lock);
  atomic_store_explicit(&uniform_memo, ((gen + 1) << 1) | (uint64_t)u,
                        memory_order_relaxed);
  return u;
}
