/* core/strtab.c -- lock-free string interning.
 *
 * Layout: a fixed array of bucket heads; each bucket is a singly linked list
 * of entries pushed with compare-and-swap, so lookups never lock and an
 * insert races only with other inserts into the same bucket. Entries are
 * also reachable by id through a two-level table of chunks whose pointers
 * are published with release stores.
 *
 * Invariant: an entry is fully written before it becomes reachable from a
 * bucket or the id table; entries are never freed or moved.
 * Hot path: yes (scope enter interns the scope name); no lock, no allocation
 * for known names. Called by core/context.c, core/session.c and backends. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/strtab.h"

#define N_BUCKETS (1u << 16)
#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define N_CHUNKS (1u << 12) /* 2^24 ids in all */

typedef struct entry {
  struct entry *next;
  uint32_t hash;
  uint32_t id;
  uint32_t len;
  char str[];
} entry;

static _Atomic(entry *) buckets[N_BUCKETS];
static _Atomic(entry **) chunks[N_CHUNKS];
static atomic_uint next_id = 1; /* 0 is never a valid id */

static uint32_t hash_bytes(const char *s, size_t len) {
  uint32_t h = 2166136261u; /* FNV-1a: short names, good enough spread */
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static entry *find(entry *e, uint32_t hash, const char *s, size_t len) {
  for (; e; e = e->next)
    if (e->hash == hash && e->len == len && memcmp(e->str, s, len) == 0)
      return e;
  return NULL;
}

static int publish_id(entry *e) {
  uint32_t c = e->id >> CHUNK_BITS;
  entry **chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);
  if (!chunk) {
    entry **fresh = calloc(CHUNK_SIZE, sizeof *fresh);
    if (!fresh)
      return CPROTON_ENOMEM;
    entry **expected = NULL;
    if (atomic_compare_exchange_strong(&chunks[c], &expected, fresh))
      chunk = fresh;
    else {
      free(fresh);
      chunk = expected;
    }
  }
  atomic_store_explicit((_Atomic(entry *) *)&chunk[e->id & (CHUNK_SIZE - 1)],
                        e, memory_order_release);
  return CPROTON_OK;
}

static int insert(uint32_t hash, const char *s, size_t len, uint32_t *id_out) {
  _Atomic(entry *) *head = &buckets[hash & (N_BUCKETS - 1)];
  entry *e = malloc(sizeof *e + len + 1);
  if (!e)
    return cp_error_set(CPROTON_ENOMEM, "out of memory interning a name");
  memcpy(e->str, s, len);
  e->str[len] = '\0';
  e->hash = hash;
  e->len = (uint32_t)len;
  e->id = 0;
  entry *old = atomic_load_explicit(head, memory_order_acquire);
  for (;;) {
    entry *found = find(old, hash, s, len);
    if (found) { /* another thread won the race */
      free(e);
      *id_out = found->id;
      return CPROTON_OK;
    }
    if (!e->id) {
      e->id = atomic_fetch_add(&next_id, 1);
      if (e->id >= CHUNK_SIZE * N_CHUNKS || publish_id(e) != CPROTON_OK) {
        free(e);
        return cp_error_set(CPROTON_ELIMIT, "too many distinct names");
      }
    }
    e->next = old;
    if (atomic_compare_exchange_weak_explicit(head, &old, e,
                                              memory_order_release,
                                              memory_order_acquire))
      break;
  }
  *id_out = e->id;
  return CPROTON_OK;
}

int cp_strtab_intern(const char *s, size_t len, uint32_t *id_out) {
  if (!s || len >= CP_STRTAB_MAX_LEN)
    return cp_error_set(CPROTON_EINVAL, "name is NULL or longer than %u bytes",
                        CP_STRTAB_MAX_LEN - 1);
  uint32_t hash = hash_bytes(s, len);
  entry *e = find(atomic_load_explicit(&buckets[hash & (N_BUCKETS - 1)],
                                       memory_order_acquire),
                  hash, s, len);
  if (e) {
    *id_out = e->id;
    return CPROTON_OK;
  }
  return insert(hash, s, len, id_out);
}

static entry *by_id(uint32_t id) {
  if (id == 0 || id >= CHUNK_SIZE * N_CHUNKS)
    return NULL;
  entry **chunk =
      atomic_load_explicit(&chunks[id >> CHUNK_BITS], memory_order_acquire);
  if (!chunk)
    return NULL;
  return atomic_load_explicit(
      (_Atomic(entry *) *)&chunk[id & (CHUNK_SIZE - 1)], memory_order_acquire);
}

const char *cp_strtab_str(uint32_t id) {
  entry *e = by_id(id);
  return e ? e->str : NULL;
}

size_t cp_strtab_len(uint32_t id) {
  entry *e = by_id(id);
  return e ? e->len : 0;
}
