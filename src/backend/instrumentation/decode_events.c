/* backend/instrumentation/decode_events.c -- pairs one CTA's event records
 * (see decode_events.h). Two passes of the same FIFO matcher: per (event,
 * unit) in recording order, then per event over every unit's leftovers in
 * time order. Not a hot path: kernels have few event records next to their
 * scope records, and a CTA without events never gets here. */
#include <stdlib.h>

#include "backend/instrumentation/decode_events.h"
#include "core/check.h"
#include "core/error.h"

/* (scope, owner, seq): a unit's records of one event in recording order. */
static int by_owner(const void *a, const void *b) {
  const cp_ev_rec *x = a, *y = b;
  if (x->scope != y->scope)
    return x->scope < y->scope ? -1 : 1;
  if (x->owner != y->owner)
    return x->owner < y->owner ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* (scope, t, starts first, owner, seq): one event's records in time order. */
static int by_time(const void *a, const void *b) {
  const cp_ev_rec *x = a, *y = b;
  if (x->scope != y->scope)
    return x->scope < y->scope ? -1 : 1;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  if (x->is_end != y->is_end)
    return x->is_end ? 1 : -1;
  if (x->owner != y->owner)
    return x->owner < y->owner ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* FIFO matching within runs of records that `same` says belong together
 * (sorted): each end takes the earliest unmatched start of its run. Marks
 * matched records in `used`. `q` has room for n indices. */
static void match(const cp_ev_rec *r, size_t n, int same_owner, uint8_t *used, size_t *q, cp_ev_pair *pairs,
                  size_t *n_pairs) {
  size_t head = 0, tail = 0;
  for (size_t i = 0; i < n; i++) {
    CP_ASSERT(i == 0 || r[i - 1].scope <= r[i].scope); /* sorted: runs are contiguous */
    if (i == 0 || r[i].scope != r[i - 1].scope || (same_owner && r[i].owner != r[i - 1].owner))
      head = tail = 0; /* a new run */
    if (!r[i].is_end) {
      q[tail++] = i;
    } else if (head < tail) {
      const cp_ev_rec *s = &r[q[head++]];
      used[q[head - 1]] = used[i] = 1;
      pairs[(*n_pairs)++] = (cp_ev_pair){s->scope, s->owner, r[i].owner, s->t, r[i].t};
    }
  }
}

/* Moves the unmatched records to the front; returns their count. */
static size_t compact(cp_ev_rec *r, size_t n, uint8_t *used) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!used[i])
      r[k++] = r[i];
  for (size_t i = 0; i < k; i++)
    used[i] = 0;
  return k;
}

int cp_events_pair(cp_ev_rec *r, size_t n, cp_ev_pair *pairs, size_t *n_pairs, size_t *n_left) {
  *n_pairs = 0;
  *n_left = n;
  if (n == 0)
    return 0;
  uint8_t *used = calloc(n, 1);
  size_t *q = malloc(n * sizeof *q);
  if (!used || !q) {
    free(used), free(q);
    return cp_error_set(CPROTON_ENOMEM, "out of memory pairing events");
  }
  qsort(r, n, sizeof *r, by_owner);
  match(r, n, 1, used, q, pairs, n_pairs);
  n = compact(r, n, used);
  qsort(r, n, sizeof *r, by_time);
  match(r, n, 0, used, q, pairs, n_pairs);
  *n_left = compact(r, n, used);
  free(used), free(q);
  return 0;
}
