/* io/profile_model.c -- storage of a read profile: string interning, node and
 * metric arrays, the child index (layout drawn in io/profile_model.h).
 *
 * Invariant: string ids stay valid while the arena grows (they are offsets,
 * never pointers); a node's metrics are contiguous.
 * Not a hot path; called by io/hatchet_read.c while parsing and by
 * io/profile_api.c for lookups. */
#include "io/profile_model.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/error.h"
#include "core/grow.h"

#define MAX_ARENA 0xF0000000u
#define MAX_DEVICES 4096u

static int grow(void **ptr, size_t *cap, size_t need, size_t elem) {
  void *q;
  if (need <= *cap) /* the common case, without a call */
    return CPROTON_OK;
  if (cp_grow(*ptr, cap, need, elem, 16, &q))
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  *ptr = q;
  return CPROTON_OK;
}

/* FNV-1a style over 8-byte words, then folded to 32 bits. */
static uint32_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  }
  for (; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  h ^= h >> 32;
  return (uint32_t)h;
}

cproton_profile *cp_profile_model_new(const char *name) {
  cproton_profile *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->name = strdup(name ? name : "<buffer>");
  if (!p->name || cp_profile_model_intern(p, "", 0, &p->empty_id)) {
    cp_profile_model_free(p);
    return NULL;
  }
  return p;
}

void cp_profile_model_free(cproton_profile *p) {
  if (!p)
    return;
  free(p->name);
  free(p->arena);
  free(p->hash);
  free(p->nodes);
  free(p->metrics);
  free(p->vec);
  free(p->children);
  free(p->keys);
  free(p->key_hash);
  free(p->key_node);
  free(p->devices);
  free(p);
}

static int rehash(cproton_profile *p) {
  size_t cap = p->hash_cap ? p->hash_cap * 2 : 1024;
  uint64_t *h = calloc(cap, sizeof *h);
  if (!h)
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  for (size_t i = 0; i < p->hash_cap; i++) {
    uint64_t e = p->hash[i];
    if (!e)
      continue;
    size_t j = (size_t)(e >> 32) & (cap - 1);
    while (h[j])
      j = (j + 1) & (cap - 1);
    h[j] = e;
  }
  free(p->hash);
  p->hash = h;
  p->hash_cap = cap;
  return CPROTON_OK;
}

static int arena_add(cproton_profile *p, const char *s, size_t len,
                     uint32_t *id_out) {
  size_t need = p->arena_len + 4 + len + 1;
  if (need > MAX_ARENA)
    return cp_error_set(CPROTON_ELIMIT, "more than %u bytes of strings",
                        MAX_ARENA);
  int rc = grow((void **)&p->arena, &p->arena_cap, need, 1);
  if (rc)
    return rc;
  uint32_t l32 = (uint32_t)len;
  memcpy(p->arena + p->arena_len, &l32, 4);
  memcpy(p->arena + p->arena_len + 4, s, len);
  p->arena[p->arena_len + 4 + len] = '\0';
  *id_out = (uint32_t)(p->arena_len + 4);
  p->arena_len = need;
  return CPROTON_OK;
}

int cp_profile_model_intern(cproton_profile *p, const char *s, size_t len,
                            uint32_t *id_out) {
  if ((p->hash_used + 1) * 2 > p->hash_cap && rehash(p))
    return CPROTON_ENOMEM;
  uint32_t h = hash_bytes(s, len);
  size_t j = h & (p->hash_cap - 1);
  for (; p->hash[j]; j = (j + 1) & (p->hash_cap - 1)) {
    if ((uint32_t)(p->hash[j] >> 32) != h)
      continue;
    uint32_t id = (uint32_t)p->hash[j] - 1, l32;
    memcpy(&l32, p->arena + id - 4, 4);
    if (l32 == len && !memcmp(p->arena + id, s, len)) {
      *id_out = id;
      return CPROTON_OK;
    }
  }
  int rc = arena_add(p, s, len, id_out);
  if (rc)
    return rc;
  p->hash[j] = ((uint64_t)h << 32) | ((uint64_t)*id_out + 1);
  p->hash_used++;
  return CPROTON_OK;
}

int cp_profile_model_add_node(cproton_profile *p, uint32_t parent,
                              uint32_t *id_out) {
  if (p->n_nodes >= CPROTON_PROFILE_MAX_NODES)
    return cp_error_set(CPROTON_ELIMIT, "more than %u nodes",
                        CPROTON_PROFILE_MAX_NODES);
  size_t cap = p->nodes_cap;
  int rc = grow((void **)&p->nodes, &cap, (size_t)p->n_nodes + 1,
                sizeof *p->nodes);
  if (rc)
    return rc;
  p->nodes_cap = (uint32_t)cap;
  cp_profile_node *n = &p->nodes[p->n_nodes];
  memset(n, 0, sizeof *n);
  n->name = n->type = p->empty_id;
  n->parent = parent;
  n->depth = parent == CPROTON_PROFILE_NO_NODE ? 0 : p->nodes[parent].depth + 1;
  n->metric_off = (uint32_t)p->n_metrics;
  *id_out = p->n_nodes++;
  return CPROTON_OK;
}

static int key_rehash(cproton_profile *p) {
  uint32_t cap = p->key_hash_cap ? p->key_hash_cap * 2 : 64;
  uint32_t *h = calloc(cap, sizeof *h);
  if (!h)
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  for (uint32_t k = 0; k < p->n_keys; k++) {
    uint32_t j = (p->keys[k] * 2654435761u) & (cap - 1);
    while (h[j])
      j = (j + 1) & (cap - 1);
    h[j] = k + 1;
  }
  free(p->key_hash);
  p->key_hash = h;
  p->key_hash_cap = cap;
  return CPROTON_OK;
}

int cp_profile_model_key(cproton_profile *p, uint32_t name,
                         uint32_t *key_out) {
  if ((p->n_keys + 1) * 2 > p->key_hash_cap && key_rehash(p))
    return CPROTON_ENOMEM;
  uint32_t j = (name * 2654435761u) & (p->key_hash_cap - 1);
  for (; p->key_hash[j]; j = (j + 1) & (p->key_hash_cap - 1)) {
    if (p->keys[p->key_hash[j] - 1] == name) {
      *key_out = p->key_hash[j] - 1;
      return CPROTON_OK;
    }
  }
  if (p->n_keys >= CPROTON_PROFILE_MAX_METRIC_KEYS)
    return cp_error_set(CPROTON_ELIMIT, "more than %u distinct metric names",
                        CPROTON_PROFILE_MAX_METRIC_KEYS);
  size_t cap = p->keys_cap, cap2 = p->keys_cap;
  int rc = grow((void **)&p->keys, &cap, p->n_keys + 1, sizeof *p->keys);
  if (!rc)
    rc = grow((void **)&p->key_node, &cap2, p->n_keys + 1, sizeof *p->key_node);
  if (rc)
    return rc;
  p->keys_cap = (uint32_t)cap;
  p->key_node[p->n_keys] = 0;
  p->keys[p->n_keys] = name;
  p->key_hash[j] = p->n_keys + 1;
  *key_out = p->n_keys++;
  return CPROTON_OK;
}

int cp_profile_model_vec_push(cproton_profile *p, double v) {
  if (p->n_vec >= UINT32_MAX - 1)
    return cp_error_set(CPROTON_ELIMIT, "more than %u vector metric elements",
                        UINT32_MAX - 1);
  int rc = grow((void **)&p->vec, &p->vec_cap, p->n_vec + 1, sizeof *p->vec);
  if (!rc)
    p->vec[p->n_vec++] = v;
  return rc;
}

int cp_profile_model_set_metric(cproton_profile *p, uint32_t node,
                                const cp_profile_metric *m) {
  cp_profile_node *n = &p->nodes[node];
  if (p->key_node[m->key] == node + 1) { /* repeated key: overwrite */
    for (uint32_t i = 0; i < n->n_metrics; i++) {
      if (p->metrics[n->metric_off + i].key == m->key) {
        p->metrics[n->metric_off + i] = *m;
        return CPROTON_OK;
      }
    }
  }
  if (n->n_metrics >= CP_PROFILE_MAX_NODE_METRICS)
    return cp_error_set(CPROTON_ELIMIT, "more than %u metrics on one node",
                        CP_PROFILE_MAX_NODE_METRICS);
  if (n->n_metrics == 0)
    n->metric_off = (uint32_t)p->n_metrics;
  CP_ASSERT(n->metric_off + n->n_metrics == p->n_metrics);
  if (p->n_metrics >= UINT32_MAX - 1)
    return cp_error_set(CPROTON_ELIMIT, "too many metric values");
  if (p->n_metrics == p->metrics_cap) {
    int rc = grow((void **)&p->metrics, &p->metrics_cap, p->n_metrics + 1,
                  sizeof *p->metrics);
    if (rc)
      return rc;
  }
  p->metrics[p->n_metrics++] = *m;
  n->n_metrics++;
  p->key_node[m->key] = node + 1;
  return CPROTON_OK;
}

int cp_profile_model_add_device(cproton_profile *p,
                                const cp_profile_device *d) {
  for (uint32_t i = 0; i < p->n_devices; i++)
    if (p->devices[i].type == d->type && p->devices[i].index == d->index) {
      p->devices[i] = *d; /* a repeated key: the last one wins, as in Python */
      return CPROTON_OK;
    }
  if (p->n_devices >= MAX_DEVICES)
    return cp_error_set(CPROTON_ELIMIT, "more than %u devices", MAX_DEVICES);
  size_t cap = p->devices_cap;
  int rc = grow((void **)&p->devices, &cap, p->n_devices + 1,
                sizeof *p->devices);
  if (rc)
    return rc;
  p->devices_cap = (uint32_t)cap;
  p->devices[p->n_devices++] = *d;
  return CPROTON_OK;
}

void cp_profile_model_drop_devices(cproton_profile *p, uint32_t type) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < p->n_devices; i++)
    if (p->devices[i].type != type)
      p->devices[n++] = p->devices[i];
  p->n_devices = n;
}

int cp_profile_model_finish(cproton_profile *p) {
  uint32_t n = p->n_nodes;
  p->children = malloc((n ? n : 1) * sizeof *p->children);
  if (!p->children)
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  for (uint32_t i = 1; i < n; i++)
    p->nodes[p->nodes[i].parent].n_children++;
  uint32_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    p->nodes[i].child_off = off;
    off += p->nodes[i].n_children;
    p->nodes[i].n_children = 0;
  }
  for (uint32_t i = 1; i < n; i++) {
    cp_profile_node *par = &p->nodes[p->nodes[i].parent];
    p->children[par->child_off + par->n_children++] = i;
  }
  /* shrink the big arrays to their size */
  void *q = realloc(p->nodes, (n ? n : 1) * sizeof *p->nodes);
  if (q)
    p->nodes = q, p->nodes_cap = n;
  q = realloc(p->metrics, (p->n_metrics ? p->n_metrics : 1) * sizeof *p->metrics);
  if (q)
    p->metrics = q, p->metrics_cap = p->n_metrics;
  free(p->hash);
  p->hash = NULL;
  p->hash_cap = p->hash_used = 0;
  free(p->key_node);
  p->key_node = NULL;
  return CPROTON_OK;
}
