/* backend/cupti/graph.c -- the graph-node table (graph.h) over a growable
 * site map (sitemap.h): node lifetimes tied to flushes, memoised
 * composition of launch and capture contexts.
 * Invariant: an entry is dropped only after a flush that began after its
 * node's destruction completed, or when the table is full (evicted, and
 * counted); a record whose node was made while profiling never silently
 * loses its capture context.
 * Not a hot path: called from resource callbacks (graph construction) and
 * from record processing on CUPTI's thread (one lock per graph record). */
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/cupti/graph.h"
#include "backend/cupti/sitemap.h"
#include "core/cct.h"
#include "core/error.h"
#include "cproton/cproton.h"

enum { F_CONTEXT = 1, F_DEAD = 2 };

/* The composed sites of recently replayed nodes, direct-mapped by node id:
 * an executable graph's nodes have consecutive ids, so replaying one of up
 * to CP_GRAPH_HOT nodes finds each node's site in a slot of its own, in
 * memory order, without the hash table's cache misses (the map's mixing
 * hash scatters consecutive ids on purpose, against clustering). Entries
 * are copies, invalidated whenever their node's entry changes. */
#define CP_GRAPH_HOT 4096

typedef struct hot {
  uint64_t key; /* 0: empty */
  const cp_node *launch[CP_CONTEXT_KINDS];
  cp_node *out[CP_CONTEXT_KINDS];
  uint8_t is_op[CP_CONTEXT_KINDS];
  uint32_t tag; /* as the entry's */
} hot;

struct cp_graph {
  cp_sitemap *map;
  hot hot[CP_GRAPH_HOT];
  uint64_t min_key;  /* smallest node id stored since clear; UINT64_MAX */
  uint32_t gen;      /* flush generation (dead entries carry theirs) */
  uint64_t evicted;  /* dead entries dropped early: table full */
  atomic_int op_names;
};

static void cool(cp_graph *g, uint64_t key) {
  hot *h = &g->hot[key % CP_GRAPH_HOT];
  if (h->key == key)
    h->key = 0;
}

static void cool_all(cp_graph *g) {
  for (size_t i = 0; i < CP_GRAPH_HOT; i++)
    g->hot[i].key = 0;
}

cp_graph *cp_graph_new(size_t initial, size_t max_slots) {
  cp_graph *g = calloc(1, sizeof *g);
  if (!g) {
    cp_error_set(CPROTON_ENOMEM, "out of memory for the graph table");
    return NULL;
  }
  if (!(g->map = cp_sitemap_new(initial, max_slots))) {
    free(g);
    return NULL;
  }
  g->min_key = UINT64_MAX;
  atomic_init(&g->op_names, 1);
  return g;
}

void cp_graph_free(cp_graph *g) {
  if (!g)
    return;
  cp_sitemap_free(g->map);
  free(g);
}

void cp_graph_clear(cp_graph *g) {
  cp_sitemap_lock(g->map);
  cp_sitemap_clear_locked(g->map);
  cool_all(g);
  g->min_key = UINT64_MAX;
  g->evicted = 0;
  cp_sitemap_unlock(g->map);
}

void cp_graph_set_op_names(cp_graph *g, int op_names) {
  atomic_store(&g->op_names, op_names != 0);
}

static int is_dead(const cp_sitemap_value *v, void *arg) {
  (void)arg;
  return v->flags & F_DEAD;
}

/* Caller holds the lock. A full table first gives up its dead entries. */
static int put_locked(cp_graph *g, uint64_t key, const cp_sitemap_value *v) {
  if (!key)
    return 0;
  cool(g, key);
  if (!cp_sitemap_put_locked(g->map, key, v)) {
    cool_all(g);
    g->evicted += cp_sitemap_drop_locked(g->map, is_dead, NULL);
    if (!cp_sitemap_put_locked(g->map, key, v))
      return 0;
  }
  if (key < g->min_key)
    g->min_key = key;
  return 1;
}

int cp_graph_put(cp_graph *g, uint64_t node_id, const cp_launch_site *site) {
  cp_sitemap_value v = {.flags = site ? F_CONTEXT : 0};
  if (site)
    v.site = *site;
  cp_sitemap_lock(g->map);
  int ok = put_locked(g, node_id, &v);
  cp_sitemap_unlock(g->map);
  return ok;
}

int cp_graph_tag(cp_graph *g, uint64_t node_id, uint32_t slot) {
  cp_sitemap_lock(g->map);
  cp_sitemap_value *v = cp_sitemap_find_locked(g->map, node_id);
  if (v) {
    v->tag = slot + 1;
    cool(g, node_id);
  }
  cp_sitemap_unlock(g->map);
  return v != NULL;
}

int cp_graph_clone(cp_graph *g, uint64_t from, uint64_t to) {
  cp_sitemap_lock(g->map);
  cp_sitemap_value *f = cp_sitemap_find_locked(g->map, from);
  cp_sitemap_value v = {0};
  if (f) {
    v.site = f->site;
    v.flags = f->flags & F_CONTEXT;
    v.tag = f->tag;
  }
  int rc = put_locked(g, to, &v) ? (f != NULL) : -1;
  cp_sitemap_unlock(g->map);
  return rc;
}

void cp_graph_kill(cp_graph *g, uint64_t node_id) {
  cp_sitemap_lock(g->map);
  cp_sitemap_value *v = cp_sitemap_find_locked(g->map, node_id);
  if (v) {
    v->flags |= F_DEAD;
    v->gen = g->gen;
  }
  cp_sitemap_unlock(g->map);
}

uint32_t cp_graph_flush_begin(cp_graph *g) {
  cp_sitemap_lock(g->map);
  uint32_t gen = g->gen++;
  cp_sitemap_unlock(g->map);
  return gen;
}

/* Dead before the flush began: its generation is at most the flush's
 * (generations compared modulo 2^32, as they wrap). */
static int dead_before(const cp_sitemap_value *v, void *arg) {
  uint32_t gen = *(const uint32_t *)arg;
  return (v->flags & F_DEAD) && (int32_t)(gen - v->gen) >= 0;
}

size_t cp_graph_flushed(cp_graph *g, uint32_t gen) {
  cp_sitemap_lock(g->map);
  size_t n = cp_sitemap_drop_locked(g->map, dead_before, &gen);
  if (n)
    cool_all(g);
  cp_sitemap_unlock(g->map);
  return n;
}

void cp_graph_remove(cp_graph *g, uint64_t node_id) {
  cp_sitemap_lock(g->map);
  cp_sitemap_remove_locked(g->map, node_id);
  cool(g, node_id);
  cp_sitemap_unlock(g->map);
}

int cp_graph_get(cp_graph *g, uint64_t node_id, cp_launch_site *out) {
  cp_sitemap_lock(g->map);
  cp_sitemap_value *v = cp_sitemap_find_locked(g->map, node_id);
  int ok = v && (v->flags & F_CONTEXT);
  if (ok)
    *out = v->site;
  cp_sitemap_unlock(g->map);
  return ok;
}

size_t cp_graph_count(cp_graph *g) {
  cp_sitemap_lock(g->map);
  size_t n = cp_sitemap_count_locked(g->map);
  cp_sitemap_unlock(g->map);
  return n;
}

uint64_t cp_graph_evicted(cp_graph *g) {
  cp_sitemap_lock(g->map);
  uint64_t n = g->evicted;
  cp_sitemap_unlock(g->map);
  return n;
}

/* The memo holds when the launch nodes are the ones composed last time. */
static int memo_hit(const cp_sitemap_value *v, const cp_launch_site *launch) {
  if (!v->memo_valid)
    return 0;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    if (v->memo_launch[k] != launch->node[k])
      return 0;
  return 1;
}

static void memo_apply(const cp_sitemap_value *v, const cp_launch_site *launch,
                       cp_launch_site *out) {
  *out = *launch;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
    out->node[k] = v->memo_out[k];
    out->is_op[k] = v->memo_is_op[k];
  }
}

static void memo_store(cp_sitemap_value *v, const cp_launch_site *launch,
                       const cp_launch_site *out) {
  for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
    v->memo_launch[k] = launch->node[k];
    v->memo_out[k] = out->node[k];
    v->memo_is_op[k] = out->is_op[k];
  }
  v->memo_valid = 1;
}

static int hot_hit(const hot *h, uint64_t key, const cp_launch_site *launch) {
  if (h->key != key || !key)
    return 0;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    if (h->launch[k] != launch->node[k])
      return 0;
  return 1;
}

static void hot_fill(hot *h, uint64_t key, const cp_launch_site *launch,
                     const cp_launch_site *out, uint32_t tag) {
  h->key = key;
  h->tag = tag;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
    h->launch[k] = launch->node[k];
    h->out[k] = out->node[k];
    h->is_op[k] = out->is_op[k];
  }
}

/* The map's answer for a node not in the hot cache. Caller holds the lock. */
static int resolve_locked(cp_graph *g, uint64_t node_id,
                          const cp_launch_site *launch, cp_launch_site *out,
                          uint32_t *tag) {
  cp_sitemap_value *v = cp_sitemap_find_locked(g->map, node_id);
  int rc;
  *tag = v ? v->tag : 0;
  /* a node newer than the first entry, after evictions: its entry may be
   * one of them (nodes CUPTI never reported, e.g. inside child graphs, are
   * unknown as well; without evictions they are only unknown) */
  if (!v)
    return node_id >= g->min_key && g->evicted ? CP_GRAPH_LOST
                                               : CP_GRAPH_UNKNOWN;
  if (!(v->flags & F_CONTEXT))
    return CP_GRAPH_NO_CONTEXT;
  if (memo_hit(v, launch))
    return memo_apply(v, launch, out), CP_GRAPH_COMPOSED;
  rc = cp_graph_compose(launch, &v->site, atomic_load(&g->op_names), out);
  if (rc == 0)
    memo_store(v, launch, out);
  else
    *out = *launch;
  return rc;
}

int cp_graph_resolve(cp_graph *g, uint64_t node_id,
                     const cp_launch_site *launch, cp_launch_site *out,
                     uint32_t *tag_out) {
  *out = *launch;
  cp_sitemap_lock(g->map);
  hot *h = &g->hot[node_id % CP_GRAPH_HOT];
  int rc;
  uint32_t tag = 0; /* slot + 1 */
  if (hot_hit(h, node_id, launch)) {
    for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
      out->node[k] = h->out[k];
      out->is_op[k] = h->is_op[k];
    }
    tag = h->tag;
    rc = CP_GRAPH_COMPOSED;
  } else if ((rc = resolve_locked(g, node_id, launch, out, &tag)) ==
             CP_GRAPH_COMPOSED) {
    hot_fill(h, node_id, launch, out, tag);
  }
  cp_sitemap_unlock(g->map);
  if (tag_out)
    *tag_out = tag ? tag - 1 : CPROTON_TENSOR_METRIC_NONE;
  return rc;
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
                     const cp_launch_site *capture, int op_names,
                     cp_launch_site *out) {
  *out = *launch;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++) {
    const cp_node *c = capture->node[k];
    int is_op = capture->is_op[k];
    if (!c)
      continue; /* not captured for this kind */
    if (is_op && !op_names) { /* Proton 3.6: the kernel keeps its name */
      c = c->parent;
      is_op = 0;
    }
    cp_node *base = launch->node[k] ? launch->node[k] : cp_cct_root();
    base = cp_cct_child_str(base, CP_GRAPH_CAPTURE_TAG);
    cp_node *n = base ? append_path(base, c) : NULL;
    if (!n)
      return cp_error_set(CPROTON_ENOMEM, "out of memory composing a graph "
                                          "kernel's context");
    out->node[k] = n;
    out->is_op[k] = (uint8_t)is_op;
  }
  return CPROTON_OK;
}
