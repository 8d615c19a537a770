/* backend/cupti/adaptive.c -- repeated kernel records summed into batches
 * (see adaptive.h). Invariant: every record taken is in exactly one
 * delivery: its batch's when the batch fills, else the flush's.
 * Lock order: the table's lock, then the core's (deliveries happen under
 * it, so a batch's name is never freed while delivered).
 * Hot path: cp_adaptive_take runs per record on the records thread (one
 * hash probe, one uncontended lock). Called by records.c and
 * cupti_backend.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/adaptive.h"
#include "core/error.h"

#define PROBES 8

typedef struct slot {
  int used;
  uint64_t hash;
  cp_launch_site site;
  const char *key_name; /* the record's pointer: CUPTI shares one string
                           per kernel, so the pointer is the key (a kernel
                           seen under two pointers gets two keys: harmless) */
  char *name;           /* owned copy, delivered with the batch */
  uint32_t device, graph, threads;
  uint64_t blocks;
  uint64_t seen;     /* records of this key so far */
  uint32_t n;        /* records in the open batch */
  uint64_t batch_ns; /* their summed duration */
  cp_kernel_record last; /* the newest record of the batch */
} slot;

struct cp_adaptive {
  pthread_mutex_t lock;
  unsigned n;
  uint64_t batched, batches;
  slot slots[CP_ADAPTIVE_SLOTS];
};

int cp_adaptive_new(unsigned n, cp_adaptive **out) {
  *out = NULL;
  if (n == UINT32_MAX)
    return cp_error_set(CPROTON_EINVAL, "CPROTON_CUPTI_ADAPTIVE is not a "
                        "number (N in 2..%d; 0 or 1: off)", CP_ADAPTIVE_MAX);
  if (n < 2 || n > CP_ADAPTIVE_MAX)
    return cp_error_set(CPROTON_EINVAL,
                        "CPROTON_CUPTI_ADAPTIVE=%u: N must be in 2..%d", n,
                        CP_ADAPTIVE_MAX);
  cp_adaptive *a = calloc(1, sizeof *a);
  if (!a)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for the adaptive table");
  pthread_mutex_init(&a->lock, NULL);
  a->n = n;
  *out = a;
  return CPROTON_OK;
}

void cp_adaptive_free(cp_adaptive *a) {
  if (!a)
    return;
  for (size_t i = 0; i < CP_ADAPTIVE_SLOTS; i++)
    free(a->slots[i].name);
  pthread_mutex_destroy(&a->lock);
  free(a);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t key_hash(const cp_launch_site *s, const cp_kernel_record *r,
                         uint64_t blocks, uint32_t threads) {
  uint64_t h = mix(1469598103934665603ull, (uint64_t)(uintptr_t)r->name);
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    h = mix(h, (uint64_t)(uintptr_t)s->node[k] ^ s->is_op[k]);
  h = mix(h, ((uint64_t)s->sessions << 32) | s->epoch);
  h = mix(h, ((uint64_t)r->device_id << 32) | r->graph_id);
  return mix(mix(h, blocks), threads);
}

static int same_key(const slot *sl, uint64_t h, const cp_launch_site *s,
                    const cp_kernel_record *r, uint64_t blocks,
                    uint32_t threads) {
  if (sl->hash != h || sl->device != r->device_id ||
      sl->graph != r->graph_id || sl->blocks != blocks ||
      sl->threads != threads || sl->site.sessions != s->sessions ||
      sl->site.epoch != s->epoch)
    return 0;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    if (sl->site.node[k] != s->node[k] || sl->site.is_op[k] != s->is_op[k])
      return 0;
  return sl->key_name == r->name;
}

/* The slot of the key, claimed if new; NULL when none is free near it.
 * Caller: lock. */
static slot *find(cp_adaptive *a, const cp_launch_site *s,
                  const cp_kernel_record *r, uint64_t blocks,
                  uint32_t threads) {
  uint64_t h = key_hash(s, r, blocks, threads);
  for (unsigned i = 0; i < PROBES; i++) {
    slot *sl = &a->slots[(h + i) % CP_ADAPTIVE_SLOTS];
    if (sl->used && same_key(sl, h, s, r, blocks, threads))
      return sl;
    if (!sl->used) {
      if (!(sl->name = strdup(r->name ? r->name : "")))
        return NULL;
      sl->used = 1;
      sl->key_name = r->name;
      sl->hash = h;
      sl->site = *s;
      sl->device = r->device_id;
      sl->graph = r->graph_id;
      sl->blocks = blocks;
      sl->threads = threads;
      return sl;
    }
  }
  return NULL;
}

/* The open batch as one record (count n, duration the sum), emptied.
 * Caller: lock, sl->n > 0. */
static cp_kernel_record batch_of(slot *sl) {
  cp_kernel_record b = sl->last;
  b.name = sl->name;
  b.end_ns = b.start_ns + sl->batch_ns;
  b.count = sl->n;
  sl->n = 0;
  sl->batch_ns = 0;
  return b;
}

int cp_adaptive_take(cp_adaptive *a, const cp_launch_site *site,
                     const cp_kernel_record *r, uint64_t blocks,
                     uint32_t threads, int *rc) {
  *rc = CPROTON_OK;
  pthread_mutex_lock(&a->lock);
  slot *sl = find(a, site, r, blocks, threads);
  if (!sl || sl->seen++ < CP_ADAPTIVE_STABLE) {
    pthread_mutex_unlock(&a->lock);
    return 0;
  }
  sl->batch_ns += r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
  sl->last = *r;
  sl->n++;
  a->batched++;
  if (sl->n >= a->n) {
    /* under the lock: the batch names the slot's copy, which a flush on
     * another thread frees (one delivery per N records: no contention) */
    cp_kernel_record b = batch_of(sl);
    a->batches++;
    *rc = cp_session_deliver_kernel(&sl->site, &b);
  }
  pthread_mutex_unlock(&a->lock);
  return 1;
}

/* Keys are forgotten too: their site's nodes may be freed once the
 * sessions that were flushed finalize, and a new node at the same address
 * must not match. */
int cp_adaptive_flush(cp_adaptive *a) {
  int first = CPROTON_OK;
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < CP_ADAPTIVE_SLOTS; i++) {
    slot *sl = &a->slots[i];
    if (sl->used && sl->n > 0) {
      cp_kernel_record b = batch_of(sl);
      a->batches++;
      int rc = cp_session_deliver_kernel(&sl->site, &b);
      if (rc && !first)
        first = rc;
    }
    free(sl->name);
    memset(sl, 0, sizeof *sl);
  }
  pthread_mutex_unlock(&a->lock);
  return first;
}

void cp_adaptive_counts(const cp_adaptive *a, uint64_t *batched,
                        uint64_t *batches) {
  pthread_mutex_lock((pthread_mutex_t *)&a->lock);
  *batched = a->batched;
  *batches = a->batches;
  pthread_mutex_unlock((pthread_mutex_t *)&a->lock);
}
