/* io/profile_model.h -- the compact in-memory form of a read profile
 * (struct cproton_profile) and its builder (cp_profile_model_*).
 *
 * Layout (all arrays grow by doubling while the reader appends):
 *
 *   strings  arena: [u32 len][bytes][NUL] [u32 len][bytes][NUL] ...
 *            a string id is the offset of its first byte; equal strings
 *            share one id (open-addressing hash of ids).
 *   nodes    cp_profile_node[n], pre-order; node 0 is the root.
 *   metrics  cp_profile_metric[m]; node i owns metrics[off .. off+n).
 *   children u32[n-1]; node i's children are children[coff .. coff+nc),
 *            built once by cp_profile_model_finish().
 *   keys     string ids of distinct metric names, in first-seen order.
 *
 * A node costs 32 bytes, a metric value 16, plus 4 for the child index. */
#ifndef CP_IO_PROFILE_MODEL_H
#define CP_IO_PROFILE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "cproton/profile.h"

/* Metrics on one node (keeps duplicate-key checks cheap). */
#define CP_PROFILE_MAX_NODE_METRICS 4096u

typedef struct cp_profile_node {
  uint32_t name, type; /* string ids */
  uint32_t parent, depth;
  uint32_t metric_off, n_metrics;
  uint32_t child_off, n_children;
} cp_profile_node;

typedef struct cp_profile_metric {
  uint32_t key;  /* index into keys[] */
  uint32_t kind; /* cproton_metric_kind */
  union {
    int64_t i;
    double d;
    uint32_t s; /* string id */
    struct {
      uint32_t off, n; /* elements vec[off .. off+n) */
    } vec;           /* CPROTON_METRIC_VECTOR */
  } v;
} cp_profile_metric;

typedef struct cp_profile_device {
  uint32_t type, index, arch; /* string ids */
  double clock_rate, memory_clock_rate, bus_width, num_sms;
} cp_profile_device;

struct cproton_profile {
  char *name;
  char *arena;
  size_t arena_len, arena_cap;
  uint64_t *hash; /* (hash << 32 | id + 1), 0 = empty */
  size_t hash_cap, hash_used;
  cp_profile_node *nodes;
  uint32_t n_nodes, nodes_cap;
  cp_profile_metric *metrics;
  size_t n_metrics, metrics_cap;
  double *vec; /* elements of vector metrics */
  size_t n_vec, vec_cap;
  uint32_t *children;
  uint32_t *keys; /* string ids */
  uint32_t n_keys, keys_cap;
  uint32_t *key_hash; /* key index + 1, by name hash; 0 = empty */
  uint32_t *key_node; /* per key: node + 1 that set it last (while reading) */
  uint32_t key_hash_cap;
  cp_profile_device *devices;
  uint32_t n_devices, devices_cap;
  uint32_t empty_id; /* id of "" */
};

/* A new empty profile named `name` (copied); NULL when out of memory. */
cproton_profile *cp_profile_model_new(const char *name);

/* Frees everything (NULL is fine). */
void cp_profile_model_free(cproton_profile *p);

/* Interns `len` bytes at `s` (no NUL inside); sets *id_out. ENOMEM/ELIMIT. */
int cp_profile_model_intern(cproton_profile *p, const char *s, size_t len,
                            uint32_t *id_out);

/* The string with id `id`. */
static inline const char *cp_profile_model_str(const cproton_profile *p,
                                               uint32_t id) {
  return p->arena + id;
}

/* Appends a node under `parent` (CPROTON_PROFILE_NO_NODE for the root);
 * name/type start as "". Sets *id_out. ENOMEM/ELIMIT. */
int cp_profile_model_add_node(cproton_profile *p, uint32_t parent,
                              uint32_t *id_out);

/* Finds or adds the metric key named by string id `name`; sets *key_out. */
int cp_profile_model_key(cproton_profile *p, uint32_t name,
                         uint32_t *key_out);

/* Sets metric `key` of `node`, whose metrics must be the last appended
 * (the reader appends one node's metrics object at a time); a repeated key
 * overwrites, as JSON objects do in Python. */
/* Appends one element of a vector metric whose elements start at
 * p->n_vec (taken before its first). Errors: ENOMEM, ELIMIT (2^32 - 1
 * elements in one file). */
int cp_profile_model_vec_push(cproton_profile *p, double v);

int cp_profile_model_set_metric(cproton_profile *p, uint32_t node,
                                const cp_profile_metric *m);

/* Adds a device entry, replacing one of the same type and index (a
 * repeated JSON key: the last wins); ENOMEM/ELIMIT. */
int cp_profile_model_add_device(cproton_profile *p,
                                const cp_profile_device *d);

/* Forgets every device of `type` (a repeated type key replaces them). */
void cp_profile_model_drop_devices(cproton_profile *p, uint32_t type);

/* Builds the child index after the last node. ENOMEM. */
int cp_profile_model_finish(cproton_profile *p);

#endif
