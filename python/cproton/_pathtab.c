/* _pathtab.c -- interned paths of frame ids (the backward link's forward
 * record, _pylink.c, keeps one index per autograd node instead of a copy
 * of its path).
 *
 * Layout: an arena of ids where each path is stored once, contiguously;
 * `start`/`len` per path index; an open-addressing hash of path indices
 * (a multiply-xorshift mix of the ids, linear probing, at most half
 * full). Fixed sizes,
 * chosen at creation: nothing grows, so an index or a pointer from
 * cpy_pathtab_get stays valid until the table is freed. A path that does
 * not fit returns -1, which the caller counts as a lost record.
 *
 * Not a hot path by itself: called by the forward record once per new
 * autograd sequence number (not per launch), under _pylink.c's lock. */
#include "_pathtab.h"

#include <stdlib.h>
#include <string.h>


struct cpy_pathtab {
  uint32_t *ids;      /* the arena */
  size_t n_ids, max_ids;
  uint32_t *start, *len; /* per path */
  size_t n_paths, max_paths;
  int32_t *slots; /* path index + 1; 0 empty */
  size_t n_slots; /* a power of two, >= 2 * max_paths */
};

cpy_pathtab *cpy_pathtab_new(size_t max_paths, size_t max_ids) {
  cpy_pathtab *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->n_slots = 16;
  while (t->n_slots < 2 * max_paths)
    t->n_slots <<= 1;
  t->ids = malloc(max_ids * sizeof *t->ids);
  t->start = malloc(max_paths * sizeof *t->start);
  t->len = malloc(max_paths * sizeof *t->len);
  t->slots = calloc(t->n_slots, sizeof *t->slots);
  t->max_ids = max_ids, t->max_paths = max_paths;
  if (!t->ids || !t->start || !t->len || !t->slots) {
    cpy_pathtab_free(t);
    return NULL;
  }
  return t;
}

void cpy_pathtab_free(cpy_pathtab *t) {
  if (!t)
    return;
  free(t->ids);
  free(t->start);
  free(t->len);
  free(t->slots);
  free(t);
}

static uint64_t hash_of(const uint32_t *ids, size_t n) {
  uint64_t h = n;
  for (size_t i = 0; i < n; i++) {
    h = (h ^ ids[i]) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  return h;
}

static int same(const cpy_pathtab *t, int32_t i, const uint32_t *ids,
                size_t n) {
  return t->len[i] == n &&
         memcmp(t->ids + t->start[i], ids, n * sizeof *ids) == 0;
}

int32_t cpy_pathtab_intern(cpy_pathtab *t, const uint32_t *ids, size_t n) {
  size_t mask = t->n_slots - 1, s = (size_t)hash_of(ids, n) & mask;
  for (; t->slots[s]; s = (s + 1) & mask)
    if (same(t, t->slots[s] - 1, ids, n))
      return t->slots[s] - 1;
  if (t->n_paths == t->max_paths || t->max_ids - t->n_ids < n)
    return -1;
  int32_t i = (int32_t)t->n_paths++;
  t->start[i] = (uint32_t)t->n_ids, t->len[i] = (uint32_t)n;
  memcpy(t->ids + t->n_ids, ids, n * sizeof *ids);
  t->n_ids += n;
  t->slots[s] = i + 1;
  return i;
}

const uint32_t *cpy_pathtab_get(const cpy_pathtab *t, int32_t i, size_t *n) {
  *n = t->len[i];
  return t->ids + t->start[i];
}
