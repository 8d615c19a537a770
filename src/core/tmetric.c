/* core/tmetric.c -- the tensor-metric slot table: an append-only array of
 * slots and an open-addressing index over it, under one mutex. Reserving
 * is once per metric per scope entry (not per kernel), folding once per
 * drained record; neither is on a launch path.
 *
 * Compaction (issue 16.13): the last finalize frees the context tree and
 * the scoped names, but a slot's id outlives it in places cproton cannot
 * reach: records still in a device buffer, copies queued in Python, and
 * CUDA graphs that replay a captured copy kernel in any later session. So
 * slots are never dropped; instead cp_tmetric_save_paths copies each
 * slot's path (names from ROOT down, as strings) before the tree goes, and
 * cp_tmetric_restore_paths re-creates exactly those paths in the new tree
 * and points the slots at them. A slot id keeps its meaning (the same
 * scope path, metric and kind); what stays resident is at most the slots'
 * paths (CP_TMETRIC_MAX_SLOTS of them), not the names a run invented. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/grow.h"
#include "core/strtab.h"
#include "core/tmetric.h"
#include "cproton/cproton.h"

#define INDEX_SIZE (2 * CP_TMETRIC_MAX_SLOTS) /* a power of two, half full */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cp_tmetric_slot slots[CP_TMETRIC_MAX_SLOTS];
static uint32_t n_slots;
static uint32_t n_captured; /* slots with `captured` set */
static uint32_t index_[INDEX_SIZE]; /* slot id + 1; 0 = empty */

static int same(const cp_tmetric_slot *a, const cp_tmetric_slot *b) {
  return a->name == b->name && a->kind == b->kind && a->n == b->n &&
         a->captured == b->captured &&
         memcmp(a->node, b->node, sizeof a->node) == 0;
}

static uint32_t hash(const cp_tmetric_slot *s) {
  uint64_t h = 1469598103934665603ull ^ s->name ^ ((uint64_t)s->kind << 32) ^
               ((uint64_t)s->n << 40) ^ ((uint64_t)s->captured << 63);
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    h = (h ^ (s->node[k] ? s->node[k]->id : 0)) * 1099511628211ull;
  return (uint32_t)(h ^ (h >> 29));
}

/* EINVAL unless the kind and the number of values go together. */
static int check_shape(const cp_tmetric_slot *s) {
  int scalar = s->kind == CP_VALUE_INT || s->kind == CP_VALUE_DOUBLE;
  if (!scalar && !cp_value_is_vector(s->kind))
    return cp_error_set(CPROTON_EINVAL, "tensor metrics are int64 or double "
                        "(or vectors of them), not kind %d", (int)s->kind);
  if (scalar ? s->n > 1 : s->n == 0 || s->n > CPROTON_METRIC_MAX_VECTOR)
    return cp_error_set(CPROTON_EINVAL, "a %s tensor metric of %u values",
                        scalar ? "scalar" : "vector", s->n);
  return CPROTON_OK;
}

int cp_tmetric_reserve(const cp_tmetric_slot *shape, uint32_t *id_out) {
  int rc = check_shape(shape);
  if (rc)
    return rc;
  cp_tmetric_slot slot = *shape;
  if (!cp_value_is_vector(slot.kind))
    slot.n = 1; /* a scalar's record has one value word, whatever n said */
  const cp_tmetric_slot *s = &slot;
  pthread_mutex_lock(&lock);
  uint32_t i = hash(s) & (INDEX_SIZE - 1);
  while (index_[i] && !same(&slots[index_[i] - 1], s))
    i = (i + 1) & (INDEX_SIZE - 1);
  if (index_[i]) {
    *id_out = index_[i] - 1;
  } else if (n_slots == CP_TMETRIC_MAX_SLOTS) {
    rc = cp_error_set(CPROTON_ELIMIT,
                      "tensor metrics: %u distinct (scope, metric) slots "
                      "in this process, the most cproton keeps",
                      CP_TMETRIC_MAX_SLOTS);
  } else {
    slots[n_slots] = *s;
    n_captured += s->captured != 0;
    index_[i] = ++n_slots;
    *id_out = n_slots - 1;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

const cp_tmetric_slot *cp_tmetric_get(uint32_t id) {
  pthread_mutex_lock(&lock);
  const cp_tmetric_slot *s = id < n_slots ? &slots[id] : NULL;
  pthread_mutex_unlock(&lock);
  return s; /* slots are never moved or changed once published */
}

int cp_tmetric_value(const cp_tmetric_slot *s, const uint64_t *words,
                     cp_value *out) {
  *out = (cp_value){.kind = s->kind};
  if (s->kind == CP_VALUE_DOUBLE) {
    memcpy(&out->u.d, words, sizeof out->u.d);
  } else if (s->kind == CP_VALUE_INT) {
    memcpy(&out->u.i, words, sizeof out->u.i);
  } else {
    /* int64 and double elements are 8 bytes, as the words are: the copy
     * is the conversion (bit patterns written by the device kernel) */
    cp_value borrowed = {.kind = s->kind};
    borrowed.u.v.n = s->n;
    borrowed.u.v.p.i = (int64_t *)words;
    return cp_value_dup(out, borrowed, "tensor metric");
  }
  return CPROTON_OK;
}

static _Thread_local uint32_t tag = CPROTON_TENSOR_METRIC_NONE;

void cp_tmetric_tag_set(uint32_t id) {
  const cp_tmetric_slot *s = cp_tmetric_get(id);
  tag = s && s->captured ? id : CPROTON_TENSOR_METRIC_NONE;
}

uint32_t cp_tmetric_tag_take(void) {
  uint32_t id = tag;
  tag = CPROTON_TENSOR_METRIC_NONE;
  return id;
}

uint32_t cp_tmetric_count(void) {
  pthread_mutex_lock(&lock);
  uint32_t n = n_slots;
  pthread_mutex_unlock(&lock);
  return n;
}

uint32_t cp_tmetric_captured_count(void) {
  pthread_mutex_lock(&lock);
  uint32_t n = n_captured;
  pthread_mutex_unlock(&lock);
  return n;
}

void cp_tmetric_reset(void) {
  pthread_mutex_lock(&lock);
  memset(index_, 0, sizeof index_);
  n_slots = n_captured = 0;
  pthread_mutex_unlock(&lock);
}

/* ---- across a compaction ---------------------------------------------------
 * The saved form is one buffer of records, one per (slot, kind) whose node
 * is below ROOT: {slot, kind, depth}, then `depth` names from ROOT's child
 * down, each {length, bytes}. */

struct cp_tmetric_saved {
  unsigned char *buf;
  size_t len, cap;
};

static int put(cp_tmetric_saved *sv, const void *p, size_t n) {
  void *b;
  if (sv->len + n > sv->cap) {
    if (cp_grow(sv->buf, &sv->cap, sv->len + n, 1, 4096, &b))
      return CPROTON_ENOMEM;
    sv->buf = b;
  }
  memcpy(sv->buf + sv->len, p, n);
  sv->len += n;
  return CPROTON_OK;
}

/* Appends the record of `n` (a node below ROOT) for slot `id`, kind `k`. */
static int save_path(cp_tmetric_saved *sv, uint32_t id, uint32_t k,
                     const cp_node *n) {
  uint32_t head[3] = {id, k, n->depth};
  const cp_node **path = malloc(n->depth * sizeof *path);
  int rc = path ? put(sv, head, sizeof head) : CPROTON_ENOMEM;
  for (uint32_t d = n->depth; path && d-- > 0; n = n->parent)
    path[d] = n;
  for (uint32_t d = 0; !rc && d < head[2]; d++) {
    uint32_t len = (uint32_t)cp_strtab_len(path[d]->name);
    rc = put(sv, &len, sizeof len);
    rc = rc ? rc : put(sv, cp_strtab_str(path[d]->name), len);
  }
  free(path);
  return rc;
}

int cp_tmetric_save_paths(cp_tmetric_saved **out) {
  cp_tmetric_saved *sv = calloc(1, sizeof *sv);
  int rc = sv ? CPROTON_OK : CPROTON_ENOMEM;
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; !rc && i < n_slots; i++)
    for (uint32_t k = 0; !rc && k < CP_CONTEXT_KINDS; k++)
      if (slots[i].node[k] && slots[i].node[k]->depth > 0)
        rc = save_path(sv, i, k, slots[i].node[k]);
  pthread_mutex_unlock(&lock);
  if (rc) {
    cp_tmetric_saved_free(sv);
    return cp_error_set(CPROTON_ENOMEM, "out of memory saving tensor-metric "
                        "slots' paths");
  }
  *out = sv;
  return CPROTON_OK;
}

void cp_tmetric_saved_free(cp_tmetric_saved *sv) {
  if (sv)
    free(sv->buf);
  free(sv);
}

/* The node of the path of `depth` names at `*at`, made in the current tree;
 * *at moves past the names. NULL when out of memory. */
static const cp_node *make_path(const unsigned char **at, uint32_t depth) {
  cp_node *n = cp_cct_root();
  for (uint32_t d = 0; d < depth; d++) {
    uint32_t len, name;
    memcpy(&len, *at, sizeof len);
    const char *s = (const char *)*at + sizeof len;
    *at += sizeof len + len;
    /* scoped as at first: a kept name (kernel, frame) keeps its id */
    if (n && cp_strtab_intern_scoped(s, len, &name) == CPROTON_OK)
      n = cp_cct_child(n, name);
    else
      n = NULL;
  }
  return n;
}

/* Rebuilds the index: node ids changed. Slots that became equal (a name
 * that was scoped and is kept now) share one index entry; both ids stay. */
static void reindex(void) {
  memset(index_, 0, sizeof index_);
  for (uint32_t s = 0; s < n_slots; s++) {
    uint32_t i = hash(&slots[s]) & (INDEX_SIZE - 1);
    while (index_[i] && !same(&slots[index_[i] - 1], &slots[s]))
      i = (i + 1) & (INDEX_SIZE - 1);
    if (!index_[i])
      index_[i] = s + 1;
  }
}

size_t cp_tmetric_restore_paths(cp_tmetric_saved *sv) {
  size_t lost = 0;
  pthread_mutex_lock(&lock);
  const unsigned char *at = sv->buf, *end = sv->len ? sv->buf + sv->len : at; /* buf is NULL when empty */
  while (at < end) {
    uint32_t head[3];
    memcpy(head, at, sizeof head);
    at += sizeof head;
    const cp_node *n = make_path(&at, head[2]);
    if (!n)
      lost++, n = cp_cct_root(); /* out of memory: ROOT, and said so */
    slots[head[0]].node[head[1]] = n;
  }
  reindex();
  pthread_mutex_unlock(&lock);
  cp_tmetric_saved_free(sv);
  return lost;
}
