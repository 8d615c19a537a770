/* core/tmetric.c -- the tensor-metric slot table: an append-only array of
 * slots and an open-addressing index over it, under one mutex. Reserving
 * is once per metric per scope entry (not per kernel), folding once per
 * drained record; neither is on a launch path. */
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "core/tmetric.h"

#define INDEX_SIZE (2 * CP_TMETRIC_MAX_SLOTS) /* a power of two, half full */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cp_tmetric_slot slots[CP_TMETRIC_MAX_SLOTS];
static uint32_t n_slots;
static uint32_t index_[INDEX_SIZE]; /* slot id + 1; 0 = empty */

static int same(const cp_tmetric_slot *a, const cp_tmetric_slot *b) {
  return a->name == b->name && a->kind == b->kind &&
         memcmp(a->node, b->node, sizeof a->node) == 0;
}

static uint32_t hash(const cp_tmetric_slot *s) {
  uint64_t h = 1469598103934665603ull ^ s->name ^ ((uint64_t)s->kind << 32);
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    h = (h ^ (s->node[k] ? s->node[k]->id : 0)) * 1099511628211ull;
  return (uint32_t)(h ^ (h >> 29));
}

int cp_tmetric_reserve(const cp_tmetric_slot *s, uint32_t *id_out) {
  if (s->kind != CP_VALUE_INT && s->kind != CP_VALUE_DOUBLE)
    return cp_error_set(CPROTON_EINVAL,
                        "tensor metrics are int64 or double, not kind %d",
                        (int)s->kind);
  int rc = CPROTON_OK;
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

cp_value cp_tmetric_value(const cp_tmetric_slot *s, uint64_t bits) {
  cp_value v = {.kind = s->kind};
  if (s->kind == CP_VALUE_DOUBLE)
    memcpy(&v.u.d, &bits, sizeof v.u.d);
  else
    memcpy(&v.u.i, &bits, sizeof v.u.i);
  return v;
}

uint32_t cp_tmetric_count(void) {
  pthread_mutex_lock(&lock);
  uint32_t n = n_slots;
  pthread_mutex_unlock(&lock);
  return n;
}

void cp_tmetric_reset(void) {
  pthread_mutex_lock(&lock);
  memset(index_, 0, sizeof index_);
  n_slots = 0;
  pthread_mutex_unlock(&lock);
}
