/* core/cct.c -- the calling-context tree: nodes found by (parent, name) in
 * a growable lock-free index (core/sohash.c) and enumerated through child
 * lists. Nodes live until cp_cct_reset, which core/session.c calls only
 * when nothing can hold one.
 *
 * Invariant: a node is fully initialised (id included) before it is
 * published in the index; it is then published in its parent's child list
 * and the id table. A lookup that loses an insert race frees its
 * unpublished node and returns the winner, so (parent, name) is unique.
 * The index doubles its buckets as the tree grows, so finding or adding a
 * node costs the same at 10^3 and at 10^7 nodes (docs/benchmarks.md).
 * Hot path: yes (scope enter, kernel attribution); lock-free.
 * Called by core/context.c, core/data.c, io writers. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cct.h"
#include "core/check.h"
#include "core/error.h"
#include "core/strtab.h"

#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define N_CHUNKS (1u << 14) /* 2^26 nodes */

static cp_node root_node = {.id = 0, .name = 0, .depth = 0};
static cp_sohash index_of_nodes; /* every node but ROOT, by (parent, name) */
static _Atomic(cp_node **) chunks[N_CHUNKS];
static atomic_uint next_id = 1;

cp_node *cp_cct_root(void) { return &root_node; }

typedef struct node_key {
  const cp_node *parent;
  uint32_t name;
} node_key;

static cp_node *node_of(cp_solink *l) {
  return (cp_node *)((char *)l - offsetof(cp_node, link));
}

static int same_key(const cp_solink *l, const void *key) {
  const cp_node *n =
      (const cp_node *)((const char *)l - offsetof(cp_node, link));
  const node_key *k = key;
  return n->parent == k->parent && n->name == k->name;
}

/* (parent id, name) through a bijective 64-bit mixer: distinct keys get
 * distinct hashes, and every bit of the hash depends on every key bit. */
static uint64_t key_hash(const cp_node *parent, uint32_t name) {
  uint64_t k = ((uint64_t)parent->id << 32) | name;
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
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

static cp_node *insert(cp_node *parent, uint32_t name, uint64_t hash) {
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
  node_key key = {parent, name};
  cp_node *won =
      node_of(cp_sohash_insert(&index_of_nodes, hash, &n->link, same_key, &key));
  if (won != n) {
    free(n);
    return won;
  }
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
  uint64_t hash = key_hash(parent, name);
  node_key key = {parent, name};
  cp_node *n = NULL;
  for (cp_solink *l = cp_sohash_first(&index_of_nodes, hash); l && !n;
       l = cp_sohash_next_same(l))
    if (same_key(l, &key))
      n = node_of(l);
  if (!n)
    n = insert(parent, name, hash);
  if (n)
    atomic_store_explicit(&parent->hint, n, memory_order_release);
  CP_ASSERT(!n || (n->parent == parent && n->name == name &&
                   n->depth == parent->depth + 1));
  return n;
}

/* Names this thread interned, by address. Kernel names come from CUPTI's
 * records, one string per kernel shared by all its records, so a name seen
 * before costs one string comparison here instead of strlen and a hash of
 * every byte (~40% of a kernel record's processing on the records thread:
 * docs/benchmarks.md). The string is compared because an address may be
 * reused for another name; the ids are the kept tier's, valid until exit. */
#define NAME_CACHE 256
static _Thread_local struct {
  const char *at;
  uint32_t id;
} name_cache[NAME_CACHE];

static int intern_cached(const char *name, uint32_t *id) {
  uintptr_t a = (uintptr_t)name;
  size_t slot = (size_t)((a >> 4) ^ (a >> 12)) & (NAME_CACHE - 1);
  if (name_cache[slot].at == name) {
    const char *s = cp_strtab_str(name_cache[slot].id);
    if (s && strcmp(s, name) == 0) {
      *id = name_cache[slot].id;
      return CPROTON_OK;
    }
  }
  int rc = cp_strtab_intern(name, strlen(name), id);
  if (rc == CPROTON_OK) {
    name_cache[slot].at = name;
    name_cache[slot].id = *id;
  }
  return rc;
}

cp_node *cp_cct_child_str(cp_node *parent, const char *name) {
  uint32_t id;
  if (intern_cached(name, &id) != CPROTON_OK)
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

void cp_cct_stats(cp_sohash_stats *out) {
  cp_sohash_stats_get(&index_of_nodes, out);
}

static void free_node(cp_solink *l) { free(node_of(l)); }

void cp_cct_reset(void) {
  cp_sohash_clear(&index_of_nodes, free_node);
  for (uint32_t c = 0; c < N_CHUNKS; c++) {
    free(atomic_load_explicit(&chunks[c], memory_order_relaxed));
    atomic_store_explicit(&chunks[c], NULL, memory_order_relaxed);
  }
  atomic_store(&root_node.first_child, NULL);
  atomic_store(&root_node.hint, NULL);
  atomic_store(&next_id, 1);
}
