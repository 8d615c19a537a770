/* core/tmetric_replay.c -- the per-slot FIFOs of graph-replay places
 * (tmetric_replay.h): one pool of CP_TMETRIC_REPLAY_MAX entries linked into
 * a list per slot, with a free list, under one mutex. Allocated on the
 * first push (a program without captured tensor metrics pays nothing).
 * Invariant: every entry is on exactly one list, a slot's or the free one;
 * a slot's list is in push order.
 * Not a hot path: one push per replayed copy kernel (the records thread),
 * one pop per drained record of a captured slot. */
#include <pthread.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/tmetric.h"
#include "core/tmetric_replay.h"

typedef struct entry {
  uint32_t next; /* index + 1; 0 = end */
  cp_node *node[CP_CONTEXT_KINDS];
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *pool;           /* CP_TMETRIC_REPLAY_MAX entries */
static uint32_t *head, *tail; /* per slot: index + 1; 0 = empty */
static uint32_t free_head;    /* index + 1 */
static size_t n_queued;
static uint64_t n_full, n_unplaced;

/* Caller holds the lock. Links every entry into the free list. */
static void reset_locked(void) {
  for (uint32_t i = 0; i < CP_TMETRIC_REPLAY_MAX; i++)
    pool[i].next = i + 1 < CP_TMETRIC_REPLAY_MAX ? i + 2 : 0;
  free_head = 1;
  for (uint32_t s = 0; s < CP_TMETRIC_MAX_SLOTS; s++)
    head[s] = tail[s] = 0;
  n_queued = 0;
}

/* Caller holds the lock. 0 when out of memory. */
static int ready_locked(void) {
  if (pool)
    return 1;
  pool = malloc(CP_TMETRIC_REPLAY_MAX * sizeof *pool);
  head = malloc(CP_TMETRIC_MAX_SLOTS * sizeof *head);
  tail = malloc(CP_TMETRIC_MAX_SLOTS * sizeof *tail);
  if (!pool || !head || !tail) {
    free(pool), free(head), free(tail);
    pool = NULL, head = tail = NULL;
    return 0;
  }
  reset_locked();
  return 1;
}

int cp_tmetric_replay_push(uint32_t slot,
                           cp_node *const node[CP_CONTEXT_KINDS]) {
  int ok = 0;
  pthread_mutex_lock(&lock);
  if (slot < CP_TMETRIC_MAX_SLOTS && ready_locked() && free_head) {
    uint32_t i = free_head - 1;
    CP_ASSERT(n_queued < CP_TMETRIC_REPLAY_MAX); /* a free entry is unqueued */
    free_head = pool[i].next;
    pool[i].next = 0;
    for (int k = 0; k < CP_CONTEXT_KINDS; k++)
      pool[i].node[k] = node[k];
    CP_ASSERT(!tail[slot] || pool[tail[slot] - 1].next == 0);
    if (tail[slot])
      pool[tail[slot] - 1].next = i + 1;
    else
      head[slot] = i + 1;
    tail[slot] = i + 1;
    n_queued++;
    ok = 1;
  } else {
    n_full++;
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

int cp_tmetric_replay_pop(uint32_t slot, cp_node *out[CP_CONTEXT_KINDS]) {
  int ok = 0;
  pthread_mutex_lock(&lock);
  if (pool && slot < CP_TMETRIC_MAX_SLOTS && head[slot]) {
    uint32_t i = head[slot] - 1;
    CP_ASSERT(n_queued > 0 && tail[slot]);
    head[slot] = pool[i].next;
    if (!head[slot])
      tail[slot] = 0;
    for (int k = 0; k < CP_CONTEXT_KINDS; k++)
      out[k] = pool[i].node[k];
    pool[i].next = free_head;
    free_head = i + 1;
    n_queued--;
    ok = 1;
  } else {
    n_unplaced++;
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

void cp_tmetric_replay_take_counts(uint64_t *full_out, uint64_t *unplaced_out) {
  pthread_mutex_lock(&lock);
  *full_out = n_full;
  *unplaced_out = n_unplaced;
  n_full = n_unplaced = 0;
  pthread_mutex_unlock(&lock);
}

size_t cp_tmetric_replay_count(void) {
  pthread_mutex_lock(&lock);
  size_t n = n_queued;
  pthread_mutex_unlock(&lock);
  return n;
}

size_t cp_tmetric_replay_clear(void) {
  pthread_mutex_lock(&lock);
  size_t n = n_queued;
  if (pool && n)
    reset_locked();
  pthread_mutex_unlock(&lock);
  return n;
}
