/* core/cct.c -- the calling-context tree: nodes found by (parent, name) in
 * a lock-free hash and enumerated through child lists. Nodes live until
 * cp_cct_reset, which core/session.c calls only when nothing can hold one.
 *
 * Invariant: a node is fully initialised (id included) before it is
 * published in its hash bucket; it is then published in its parent's
 * child list and the id table. A lookup that loses an insert race frees its
 * unpublished node and returns the winner, so (parent, name) is unique.
 * Hot path: yes (scope enter, kernel attribution); lock-free.
 * Called by core/context.c, core/data.c, io writers. */
#include <stdlib.h>
#include <string.h>

#include "core/cct.h"
#include "core/error.h"
#include "core/strtab.h"

#define N_BUCKETS (1u << 16)
#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define N_CHUNKS (1u << 14) /* 2^26 nodes */

static cp_node root_node = {.id = 0, .name = 0, .depth = 0};
/* page-aligned so that a reset can hand its pages back */
static _Alignas(4096) _Atomic(cp_node *) buckets[N_BUCKETS];
static _Atomic(cp_node **) chunks[N_CHUNKS];
static atomic_uint next_id = 1;

cp_node *cp_cct_root(void) { return &root_node; }

static uint32_t key_hash(const cp_node *parent, uint32_t name) {
  uint64_t k = ((uint64_t)parent->id << 32) | name;
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return (uint32_t)k;
}

static cp_node *find(cp_node *n, const cp_node *parent, uint32_t name) {
  for (; n; n = n->hash_next)
    if (n->parent == parent && n->name == name)
      return n;
  return NULL;
}

static cp_node **chunk_for(uint32_t id) {
  _Atomic(cp_node **) *slot = &chunks[id >> CHUNK_BITS];
  cp_node **c = atomic_load_explicit(slot, memory_order_acquire);
  if (c)
    return c;
  cp_node **fresh = calloc(CHUNK_SIZE, sizeof *fresh);
  if (!fresh)
    return NULL;
  cp_node **expected = NULL;
  if (atomic_compare_exchange_strong(slot, &expected, fresh))
    return fresh;
  free(fresh);
  return expected;
}

static void link_child(cp_node *parent, cp_node *n) {
  cp_node *old = atomic_load_explicit(&parent->first_child,
                                      memory_order_acquire);
  do
    n->next_sibling = old;
  while (!atomic_compare_exchange_weak_explicit(
      &parent->first_child, &old, n, memory_order_release,
      memory_order_acquire));
}

static cp_node *insert(cp_node *parent, uint32_t name, uint32_t hash) {
  _Atomic(cp_node *) *head = &buckets[hash & (N_BUCKETS - 1)];
  cp_node *n = calloc(1, sizeof *n);
  if (!n) {
    cp_error_set(CPROTON_ENOMEM, "out of memory adding a context node");
    return NULL;
  }
  n->name = name;
  n->parent = parent;
  n->depth = parent->depth + 1;
  /* The id is fixed before publication: children hash on it. A lost race
   * leaves a hole in the id table, which readers skip. */
  n->id = atomic_fetch_add(&next_id, 1);
  cp_node *old = atomic_load_explicit(head, memory_order_acquire);
  do {
    cp_node *found = find(old, parent, name);
    if (found) {
      free(n);
      return found;
    }
    n->hash_next = old;
  } while (!atomic_compare_exchange_weak_explicit(
      head, &old, n, memory_order_release, memory_order_acquire));
  cp_node **chunk = n->id < CHUNK_SIZE * N_CHUNKS ? chunk_for(n->id) : NULL;
  if (chunk)
    atomic_store_explicit((_Atomic(cp_node *) *)&chunk[n->id & (CHUNK_SIZE - 1)],
                          n, memory_order_release);
  link_child(parent, n);
  return n;
}

cp_node *cp_cct_child(cp_node *parent, uint32_t name) {
  /* Acquire pairs with the release below: a hint set by another thread
   * points at a node whose fields that thread initialised. */
  cp_node *h = atomic_load_explicit(&parent->hint, memory_order_acquire);
  if (h && h->name == name)
    return h;
  uint32_t hash = key_hash(parent, name);
  cp_node *n = find(atomic_load_explicit(&buckets[hash & (N_BUCKETS - 1)],
                                         memory_order_acquire),
                    parent, name);
  if (!n)
    n = insert(parent, name, hash);
  if (n)
    atomic_store_explicit(&parent->hint, n, memory_order_release);
  return n;
}

cp_node *cp_cct_child_str(cp_node *parent, const char *name) {
  uint32_t id;
  if (cp_strtab_intern(name, strlen(name), &id) != CPROTON_OK)
    return NULL;
  return cp_cct_child(parent, id);
}

cp_node *cp_cct_node(uint32_t id) {
  if (id == 0)
    return &root_node;
  if (id >= CHUNK_SIZE * N_CHUNKS)
    return NULL;
  cp_node **c =
      atomic_load_explicit(&chunks[id >> CHUNK_BITS], memory_order_acquire);
  return c ? atomic_load_explicit(
                 (_Atomic(cp_node *) *)&c[id & (CHUNK_SIZE - 1)],
                 memory_order_acquire)
           : NULL;
}

uint32_t cp_cct_count(void) { return atomic_load(&next_id); }

void cp_cct_reset(void) {
  for (uint32_t b = 0; b < N_BUCKETS; b++)
    for (cp_node *n = atomic_load_explicit(&buckets[b], memory_order_relaxed),
                 *next;
         n; n = next) {
      next = n->hash_next;
      free(n);
    }
  for (uint32_t c = 0; c < N_CHUNKS; c++) {
    free(atomic_load_explicit(&chunks[c], memory_order_relaxed));
    atomic_store_explicit(&chunks[c], NULL, memory_order_relaxed);
  }
  cp_strtab_release_pages(buckets, sizeof buckets);
  atomic_store(&root_node.first_child, NULL);
  atomic_store(&root_node.hint, NULL);
  atomic_store(&next_id, 1);
}
