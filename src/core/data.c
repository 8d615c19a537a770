/* core/data.c -- per-session measurements keyed by context-node id.
 *
 * Layout: a two-level table indexed by node id; each chunk holds 4096 slots
 * of {touched byte, metrics pointer}. Chunks are published with CAS so
 * touching is lock-free; metrics are changed under the store's mutex
 * (record processing and user metrics, never the launch path).
 * Invariant: a slot's metrics pointer, once set, lives until cp_data_free;
 * chunks live until cp_data_trim (called only when no thread can use d).
 * Hot path: cp_data_touch (scope enter). Called by core/session.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/error.h"
#include "core/strtab.h"

#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define N_CHUNKS (1u << 14)

typedef struct slot {
  _Atomic unsigned char touched;
  cp_node_metrics *metrics;
} slot;

struct cp_data {
  _Atomic(slot *) chunks[N_CHUNKS];
  pthread_mutex_t lock;
};

cp_data *cp_data_new(void) {
  cp_data *d = calloc(1, sizeof *d);
  if (d)
    pthread_mutex_init(&d->lock, NULL);
  return d;
}

/* Frees a node's metrics and the vector elements they own. */
static void free_metrics(cp_node_metrics *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->n_flex; i++)
    cp_value_release(&m->flex[i].value);
  free(m->flex);
  free(m);
}

void cp_data_free(cp_data *d) {
  if (!d)
    return;
  for (uint32_t c = 0; c < N_CHUNKS; c++) {
    slot *chunk = atomic_load(&d->chunks[c]);
    if (!chunk)
      continue;
    for (uint32_t i = 0; i < CHUNK_SIZE; i++)
      free_metrics(chunk[i].metrics);
    free(chunk);
  }
  pthread_mutex_destroy(&d->lock);
  free(d);
}

void cp_data_reset(cp_data *d) {
  pthread_mutex_lock(&d->lock);
  for (uint32_t c = 0; c < N_CHUNKS; c++) {
    slot *chunk = atomic_load(&d->chunks[c]);
    for (uint32_t i = 0; chunk && i < CHUNK_SIZE; i++) {
      free_metrics(chunk[i].metrics);
      chunk[i].metrics = NULL;
      atomic_store_explicit(&chunk[i].touched, 0, memory_order_relaxed);
    }
  }
  pthread_mutex_unlock(&d->lock);
}

void cp_data_trim(cp_data *d) {
  cp_data_reset(d);
  for (uint32_t c = 0; c < N_CHUNKS; c++) {
    free(atomic_load(&d->chunks[c]));
    atomic_store(&d->chunks[c], NULL);
  }
}

static slot *slot_of(cp_data *d, uint32_t id, int create) {
  if (id >= CHUNK_SIZE * N_CHUNKS)
    return NULL;
  _Atomic(slot *) *p = &d->chunks[id >> CHUNK_BITS];
  slot *chunk = atomic_load_explicit(p, memory_order_acquire);
  if (!chunk && create) {
    slot *fresh = calloc(CHUNK_SIZE, sizeof *fresh);
    if (!fresh)
      return NULL;
    slot *expected = NULL;
    if (atomic_compare_exchange_strong(p, &expected, fresh))
      chunk = fresh;
    else {
      free(fresh);
      chunk = expected;
    }
  }
  return chunk ? &chunk[id & (CHUNK_SIZE - 1)] : NULL;
}

int cp_data_touch(cp_data *d, const cp_node *n) {
  slot *s = slot_of(d, n->id, 1);
  if (!s)
    return cp_error_set(CPROTON_ENOMEM, "out of memory recording a scope");
  if (!atomic_load_explicit(&s->touched, memory_order_relaxed))
    atomic_store_explicit(&s->touched, 1, memory_order_relaxed);
  return CPROTON_OK;
}

int cp_data_touched(const cp_data *d, const cp_node *n) {
  slot *s = slot_of((cp_data *)d, n->id, 0);
  return s && atomic_load_explicit(&s->touched, memory_order_relaxed);
}

/* Caller holds the lock. */
static cp_node_metrics *metrics_of(cp_data *d, const cp_node *n) {
  slot *s = slot_of(d, n->id, 1);
  if (!s)
    return NULL;
  atomic_store_explicit(&s->touched, 1, memory_order_relaxed);
  if (!s->metrics)
    s->metrics = calloc(1, sizeof *s->metrics);
  return s->metrics;
}

int cp_data_add_kernel(cp_data *d, const cp_node *n, uint64_t duration_ns,
                       uint32_t count, uint32_t device_id,
                       cp_device_type type) {
  pthread_mutex_lock(&d->lock);
  cp_node_metrics *m = metrics_of(d, n);
  if (m) {
    m->time_ns += duration_ns;
    m->count += count;
    m->device_id = device_id;
    m->device_type = type;
    m->has_kernel = 1;
  }
  pthread_mutex_unlock(&d->lock);
  return m ? CPROTON_OK
           : cp_error_set(CPROTON_ENOMEM, "out of memory recording a kernel");
}

static int fold_flex(cp_node_metrics *m, uint32_t name, cp_value v) {
  const char *str = cp_strtab_str(name);
  for (size_t i = 0; i < m->n_flex; i++)
    if (m->flex[i].name == name)
      return cp_metric_fold(&m->flex[i].value, v, m->flex[i].rule, str);
  cp_flex_metric *grown = realloc(m->flex, (m->n_flex + 1) * sizeof *grown);
  if (!grown)
    return cp_error_set(CPROTON_ENOMEM, "out of memory adding metric '%s'",
                        str);
  m->flex = grown;
  uint32_t out_id;
  cp_value own;
  int rc = cp_strtab_intern(str, cp_metric_output_len(str), &out_id);
  if (rc || (rc = cp_value_dup(&own, v, str))) /* the caller's vector is borrowed */
    return rc;
  m->flex[m->n_flex++] = (cp_flex_metric){
      .name = name, .out_name = out_id, .rule = cp_metric_rule_of(str),
      .value = own};
  return CPROTON_OK;
}

int cp_data_add_metric(cp_data *d, const cp_node *n, uint32_t name,
                       cp_value v) {
  pthread_mutex_lock(&d->lock);
  cp_node_metrics *m = metrics_of(d, n);
  int rc = m ? fold_flex(m, name, v)
             : cp_error_set(CPROTON_ENOMEM, "out of memory adding a metric");
  pthread_mutex_unlock(&d->lock);
  return rc;
}

int cp_data_add_metric_str(cp_data *d, const cp_node *n, const char *name,
                           cp_value v) {
  uint32_t id;
  int rc = cp_strtab_intern(name, strlen(name), &id);
  return rc ? rc : cp_data_add_metric(d, n, id, v);
}

const cp_node_metrics *cp_data_metrics(const cp_data *d, const cp_node *n) {
  slot *s = slot_of((cp_data *)d, n->id, 0);
  return s ? s->metrics : NULL;
}

void cp_data_lock(cp_data *d) { pthread_mutex_lock(&d->lock); }
void cp_data_unlock(cp_data *d) { pthread_mutex_unlock(&d->lock); }
