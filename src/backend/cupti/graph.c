/* backend/cupti/graph.c -- the graph-node table: open addressing with
 * linear probing and backward-shift deletion (no tombstones), so removals
 * keep probe chains short and the table never grows.
 * Invariant: 0 is never a key (CUPTI node ids start at 1); at most 3/4 of
 * the slots are used.
 * Not a hot path: called from resource callbacks (graph construction) and
 * from record processing on CUPTI's thread. */
#include <pthread.h>
#include <stdlib.h>

#include "backend/cupti/graph.h"
#include "core/error.h"

typedef struct entry {
  uint64_t key; /* node id, 0 = empty */
  cp_launch_site site;
} entry;

struct cp_graph {
  pthread_mutex_t lock;
  size_t mask, count;
  entry *e;
};

cp_graph *cp_graph_new(size_t capacity) {
  size_t n = 64;
  while (n < capacity && n < ((size_t)1 << 28))
    n <<= 1;
  cp_graph *g = calloc(1, sizeof *g);
  if (g)
    g->e = calloc(n, sizeof *g->e);
  if (!g || !g->e) {
    free(g);
    cp_error_set(CPROTON_ENOMEM, "out of memory for %zu graph nodes", n);
    return NULL;
  }
  pthread_mutex_init(&g->lock, NULL);
  g->mask = n - 1;
  return g;
}

void cp_graph_free(cp_graph *g) {
  if (!g)
    return;
  pthread_mutex_destroy(&g->lock);
  free(g->e);
  free(g);
}

void cp_graph_clear(cp_graph *g) {
  pthread_mutex_lock(&g->lock);
  for (size_t i = 0; i <= g->mask; i++)
    g->e[i].key = 0;
  g->count = 0;
  pthread_mutex_unlock(&g->lock);
}

static size_t hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return (size_t)k;
}

/* The slot holding `key`, or the empty slot where it would go. */
static size_t find(const cp_graph *g, uint64_t key) {
  size_t i = hash(key) & g->mask;
  while (g->e[i].key && g->e[i].key != key)
    i = (i + 1) & g->mask;
  return i;
}

/* Caller holds the lock. */
static int put_locked(cp_graph *g, uint64_t key, const cp_launch_site *site) {
  if (!key)
    return 0;
  size_t i = find(g, key);
  if (!g->e[i].key) {
    if ((g->count + 1) * 4 > (g->mask + 1) * 3)
      return 0;
    g->count++;
    g->e[i].key = key;
  }
  g->e[i].site = *site;
  return 1;
}

int cp_graph_put(cp_graph *g, uint64_t node_id, const cp_launch_site *site) {
  pthread_mutex_lock(&g->lock);
  int ok = put_locked(g, node_id, site);
  pthread_mutex_unlock(&g->lock);
  return ok;
}

int cp_graph_clone(cp_graph *g, uint64_t from, uint64_t to) {
  pthread_mutex_lock(&g->lock);
  size_t i = find(g, from);
  int ok = from && g->e[i].key ? put_locked(g, to, &g->e[i].site) : 0;
  pthread_mutex_unlock(&g->lock);
  return ok;
}

/* Backward-shift deletion: move later members of the probe run into the
 * hole when their home slot does not lie cyclically in (hole, j]. */
static void remove_at(cp_graph *g, size_t hole) {
  size_t j = hole;
  for (;;) {
    j = (j + 1) & g->mask;
    if (!g->e[j].key)
      break;
    size_t home = hash(g->e[j].key) & g->mask;
    int in_range =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (in_range)
      continue;
    g->e[hole] = g->e[j];
    hole = j;
  }
  g->e[hole].key = 0;
  g->count--;
}

void cp_graph_remove(cp_graph *g, uint64_t node_id) {
  pthread_mutex_lock(&g->lock);
  size_t i = find(g, node_id);
  if (node_id && g->e[i].key)
    remove_at(g, i);
  pthread_mutex_unlock(&g->lock);
}

int cp_graph_get(cp_graph *g, uint64_t node_id, cp_launch_site *out) {
  pthread_mutex_lock(&g->lock);
  size_t i = find(g, node_id);
  int ok = node_id && g->e[i].key;
  if (ok)
    *out = g->e[i].site;
  pthread_mutex_unlock(&g->lock);
  return ok;
}

size_t cp_graph_count(cp_graph *g) {
  pthread_mutex_lock(&g->lock);
  size_t n = g->count;
  pthread_mutex_unlock(&g->lock);
  return n;
}

/* `base` with the path of `tail` (below ROOT) appended. */
static cp_node *append_path(cp_node *base, const cp_node *tail) {
  const cp_node *path[CP_MAX_DEPTH];
  size_t n = 0;
  for (const cp_node *c = tail; c && c->parent && n < CP_MAX_DEPTH;
       c = c->parent)
    path[n++] = c;
  cp_node *at = base;
  while (at && n--)
    at = cp_cct_child(at, path[n]->name);
  return at;
}

int cp_graph_compose(const cp_launch_site *launch,
                     const cp_launch_site *capture, cp_launch_site *out) {
  *out = *launch;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
    const cp_node *c = capture->node[k];
    if (!c)
      continue; /* not captured for this kind */
    cp_node *base = launch->node[k] ? launch->node[k] : cp_cct_root();
    base = cp_cct_child_str(base, CP_GRAPH_CAPTURE_TAG);
    cp_node *n = base ? append_path(base, c) : NULL;
    if (!n)
      return cp_error_set(CPROTON_ENOMEM, "out of memory composing a graph "
                                          "kernel's context");
    out->node[k] = n;
    out->is_op[k] = capture->is_op[k];
  }
  return CPROTON_OK;
}
