/* core/native.c -- native call stacks at kernel launches: capture, the
 * profiler's frames dropped, and the table of known stacks (core/native.h).
 *
 * Capture: libunwind's unw_backtrace, else glibc's backtrace() (below);
 * the profiler's own frames are those up to the backend's launch entry,
 * whose return address (cp_native_floor) marks the program's first frame,
 * also when the library is linked into the program.
 * Table: open addressing over a fixed array of stacks keyed by a hash of
 * (parent node, return addresses). A slot is written under `lock` and
 * published by a release store of its key; readers take no lock. A full
 * table or a failed allocation leaves a launch under its scope, counted.
 * Addresses: each distinct return address gets an entry (under `lock`)
 * holding its placeholder name id and whether its module is the profiler's,
 * CUPTI's or CUDA's (dladdr, once per address): those frames are dropped
 * from the top of every stack. Names are spelled out by native_sym.c.
 * Hot path: cp_native_path (launch callbacks): one unwind, one hash, one
 * probe and compare for a known stack. Called by core/context.c. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <execinfo.h>

#include "core/native.h"
#include "core/native_addr.h"
#include "core/strtab.h"

/* MemorySanitizer cannot see the unwinder (libunwind, loaded at run time,
 * uninstrumented) write the addresses: they are marked written. */
#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#include <sanitizer/msan_interface.h>
#define MSAN_WRITTEN(p, n) __msan_unpoison((p), (n))
#endif
#endif
#ifndef MSAN_WRITTEN
#define MSAN_WRITTEN(p, n) ((void)0)
#endif

#define MAX_RAW 128          /* frames unwound before the profiler's drop */
#define STACK_SLOTS CP_NATIVE_MAX_STACKS

typedef struct stack_slot {
  atomic_ullong key; /* hash | 1; 0: empty */
  cp_node *parent;
  cp_node *node;     /* innermost frame's node (or parent: empty stack) */
  uint32_t n;
  uintptr_t *addrs;  /* n raw return addresses, innermost first */
} stack_slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(stack_slot *) slots; /* STACK_SLOTS, allocated on first use */
static _Thread_local uintptr_t floor_ra;
static struct {
  atomic_ullong unwinds, hits, misses, full;
} counts;

void cp_native_floor(const void *return_address) {
  floor_ra = (uintptr_t)return_address;
}

/* ---- the unwinder ------------------------------------------------------------
 * libunwind's unw_backtrace when libunwind.so.8 loads (RTLD_LOCAL: its
 * _Unwind_* and backtrace symbols must not replace libgcc's and glibc's for
 * the program), else glibc's backtrace(), which walks libgcc's unwinder:
 * both read the CFI of every module (the CUDA driver and CUPTI keep no frame
 * pointers); libunwind's caches each frame's rule and is 10-25x faster
 * (bench/native_unwind_bench.c, docs/dependencies.md). */
typedef int (*unwind_fn)(void **, int);
static _Atomic(unwind_fn) unwinder;

static unwind_fn pick_unwinder(void) {
  unwind_fn fn = atomic_load_explicit(&unwinder, memory_order_acquire);
  if (fn)
    return fn;
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (h)
    *(void **)&fn = dlsym(h, "unw_backtrace");
  if (!fn)
    fn = backtrace;
  atomic_store_explicit(&unwinder, fn, memory_order_release);
  return fn;
}

const char *cp_native_unwinder(void) {
  return pick_unwinder() == (unwind_fn)backtrace ? "backtrace" : "libunwind";
}

int cp_native_set_unwinder(const char *name) {
  if (strcmp(name, "backtrace") == 0) {
    atomic_store(&unwinder, (unwind_fn)backtrace);
    return 0;
  }
  atomic_store(&unwinder, NULL);
  return strcmp(cp_native_unwinder(), name) == 0 ? 0 : -1;
}

/* The calling thread's return addresses from the backend's entry's caller
 * outwards (the entry's own return address, cp_native_floor, marks it;
 * everything when it is not found). Returns the count; `*first` indexes
 * the first kept address in `buf`. */
static uint32_t unwind(uintptr_t *buf, uint32_t *first) {
  int n = pick_unwinder()((void **)buf, MAX_RAW);
  if (n > 0)
    MSAN_WRITTEN(buf, (size_t)n * sizeof *buf);
  uint32_t i = 0;
  while (floor_ra && i < (uint32_t)n && buf[i] != floor_ra)
    i++;
  *first = i < (uint32_t)n ? i : 0;
  return n > 0 ? (uint32_t)n : 0;
}

static uint64_t stack_hash(const cp_node *parent, const uintptr_t *a,
                           uint32_t n) {
  uint64_t h = (uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ull;
  for (uint32_t i = 0; i < n; i++)
    h = (h ^ a[i]) * 0x100000001b3ull, h ^= h >> 29;
  return h | 1;
}

static int same(const stack_slot *s, const cp_node *parent,
                const uintptr_t *a, uint32_t n) {
  return s->parent == parent && s->n == n &&
         memcmp(s->addrs, a, n * sizeof *a) == 0;
}

/* The slot holding the stack, or the empty slot where it goes, or NULL
 * (table full). */
static stack_slot *probe(stack_slot *tab, uint64_t h, const cp_node *parent,
                         const uintptr_t *a, uint32_t n) {
  for (uint32_t i = 0; i < STACK_SLOTS; i++) {
    stack_slot *s = &tab[(h + i) & (STACK_SLOTS - 1)];
    uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
    if (!k || (k == h && same(s, parent, a, n)))
      return s;
  }
  return NULL;
}

/* Builds the path of a new stack under `parent`, outermost frame first,
 * after dropping the profiler's frames from the top. Caller: lock. */
static cp_node *build(cp_node *parent, const uintptr_t *a, uint32_t n) {
  uint32_t top = 0;
  while (top < n && cp_native_addr_dropped(a[top]))
    top++;
  uint32_t last = n - top > CP_NATIVE_MAX_DEPTH ? top + CP_NATIVE_MAX_DEPTH
                                                : n;
  cp_node *node = parent;
  for (uint32_t i = last; i-- > top && node;) {
    uint32_t id;
    if (cp_native_addr_name(a[i], &id))
      return NULL;
    node = cp_cct_child(node, id);
  }
  return node;
}

static stack_slot *table(void) {
  stack_slot *t = atomic_load_explicit(&slots, memory_order_acquire);
  if (t)
    return t;
  pthread_mutex_lock(&lock);
  if (!(t = atomic_load(&slots)) && (t = calloc(STACK_SLOTS, sizeof *t)))
    atomic_store_explicit(&slots, t, memory_order_release);
  pthread_mutex_unlock(&lock);
  return t;
}

/* A stack not in the table: its path, kept in the table; `parent` when the
 * table is full or memory runs out (counted in `full`). */
static cp_node *miss(stack_slot *tab, cp_node *parent, const uintptr_t *a,
                     uint32_t n, uint64_t h) {
  pthread_mutex_lock(&lock);
  stack_slot *s = probe(tab, h, parent, a, n); /* raced with another? */
  cp_node *node = s && atomic_load(&s->key) ? s->node : NULL;
  if (node) /* another thread added it meanwhile: a known stack after all */
    atomic_fetch_add_explicit(&counts.hits, 1, memory_order_relaxed);
  else if (s && (node = build(parent, a, n))) {
    uintptr_t *copy = malloc((n ? n : 1) * sizeof *a); /* none: not kept */
    if (copy) {
      memcpy(copy, a, n * sizeof *a);
      s->parent = parent, s->node = node, s->n = n, s->addrs = copy;
      atomic_store_explicit(&s->key, h, memory_order_release);
    }
    atomic_fetch_add_explicit(&counts.misses, 1, memory_order_relaxed);
  } else { /* table full, or out of memory: under the scope, counted */
    atomic_fetch_add_explicit(&counts.full, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&lock);
  return node ? node : parent;
}

cp_node *cp_native_path(cp_node *parent) {
  uintptr_t buf[MAX_RAW];
  uint32_t first, n = unwind(buf, &first);
  const uintptr_t *a = buf + first;
  n -= first;
  atomic_fetch_add_explicit(&counts.unwinds, 1, memory_order_relaxed);
  stack_slot *tab = table();
  if (!tab) {
    atomic_fetch_add_explicit(&counts.full, 1, memory_order_relaxed);
    return parent;
  }
  uint64_t h = stack_hash(parent, a, n);
  stack_slot *s = probe(tab, h, parent, a, n);
  if (s && atomic_load_explicit(&s->key, memory_order_acquire)) {
    atomic_fetch_add_explicit(&counts.hits, 1, memory_order_relaxed);
    return s->node;
  }
  return miss(tab, parent, a, n, h);
}

int cp_native_available(const char **why) {
  uintptr_t a[MAX_RAW];
  uint32_t first;
  if (unwind(a, &first) == 0) { /* no unwind tables for this very function */
    *why = "the unwinder found no frames (no unwind tables)";
    return 0;
  }
  *why = NULL;
  return 1;
}

void cp_native_reset(void) {
  stack_slot *t = atomic_load(&slots);
  if (!t)
    return;
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; i < STACK_SLOTS; i++) {
    free(t[i].addrs);
    t[i].addrs = NULL;
    atomic_store_explicit(&t[i].key, 0, memory_order_relaxed);
  }
  pthread_mutex_unlock(&lock);
}

void cp_native_get_stats(cp_native_stats *out) {
  *out = (cp_native_stats){
      .unwinds = atomic_load(&counts.unwinds),
      .hits = atomic_load(&counts.hits),
      .misses = atomic_load(&counts.misses),
      .full = atomic_load(&counts.full)};
  cp_native_addr_counts(&out->addresses, &out->symbolized);
}
