/* core/strtab.c -- lock-free string interning in two tiers.
 *
 * Layout: per tier, a growable lock-free hash set of entries
 * (core/sohash.c: its buckets double as names arrive, so interning costs
 * the same at 10^3 and at 10^7 names); entries are also reachable by id
 * through a two-level table of chunks whose pointers are published with
 * release stores.
 *
 * Tiers. The kept tier (ids below 2^24) holds names that caches outside
 * the core keep ids of (Python frames, kernels, metric names): its entries
 * live until process exit. The scoped tier (ids with bit 24 set) holds
 * scope, state and op names entered while a session records; the session
 * module empties it when no session is in use and no thread holds or is
 * using one of its ids (cp_strtab_scoped_reset), so distinct scope names
 * cost memory only while some session lives.
 *
 * Invariant: an entry is fully written and in the id table before it
 * becomes reachable from the hash set (an entry that loses an insert race
 * is taken out of the id table before it is freed: nobody was handed its
 * id); entries are never freed or moved while readers may run (the scoped
 * tier's reset has a quiescent caller).
 * Hot path: yes (scope enter interns the scope name); no lock, no allocation
 * for known names. Called by core/context.c, core/session.c and backends. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"
#include "core/check.h"
#include "core/error.h"
#include "core/sohash.h"
#include "core/strtab.h"

#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define N_CHUNKS (1u << 12) /* 2^24 ids per tier */
#define SCOPED_BIT (1u << 24) /* above every kept id: ids stay < 2^25 */

typedef struct entry {
  cp_solink link; /* in the tier's set */
  uint32_t id;
  uint32_t len;
  /* What readers are shown instead of `str` (cp_strtab_set_label), or
   * NULL; the set still matches `str`. Owned; freed never (kept tier). */
  _Atomic(const char *) label;
  char str[];
} entry;

typedef struct tier {
  cp_sohash names;
  _Atomic(entry **) chunks[N_CHUNKS];
  atomic_uint taken; /* ids handed out; the next one is taken + 1 */
} tier;

/* Zero-initialised (.bss, not in the file); ids start at 1. */
static tier kept, scoped;

typedef struct name_key {
  const char *s;
  size_t len;
} name_key;

static entry *entry_of(cp_solink *l) {
  return (entry *)((char *)l - offsetof(entry, link));
}

static int same_name(const cp_solink *l, const void *key) {
  const entry *e = (const entry *)((const char *)l - offsetof(entry, link));
  const name_key *k = key;
  return e->len == k->len && memcmp(e->str, k->s, k->len) == 0;
}

/* FNV-1a, then a finaliser round: the set orders by the whole hash and
 * buckets by its top bits, which then depend on every bit of every byte. */
static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = cp_fnv_bytes(s, len);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

static entry *lookup(tier *t, uint64_t hash, const char *s, size_t len) {
  name_key key = {s, len};
  for (cp_solink *l = cp_sohash_first(&t->names, hash); l;
       l = cp_sohash_next_same(l))
    if (same_name(l, &key))
      return entry_of(l);
  return NULL;
}

/* e's index in the id table: its id without the tier's tag. */
static uint32_t index_of(uint32_t id) { return id & ~SCOPED_BIT; }

/* The id table's slot for `id`, its chunk allocated when absent; NULL
 * without memory. */
static _Atomic(entry *) *id_slot(tier *t, uint32_t id) {
  uint32_t c = index_of(id) >> CHUNK_BITS;
  entry **chunk = atomic_load_explicit(&t->chunks[c], memory_order_acquire);
  if (!chunk) {
    entry **fresh = calloc(CHUNK_SIZE, sizeof *fresh);
    if (!fresh)
      return NULL;
    entry **expected = NULL;
    if (atomic_compare_exchange_strong(&t->chunks[c], &expected, fresh))
      chunk = fresh;
    else {
      free(fresh);
      chunk = expected;
    }
  }
  return (_Atomic(entry *) *)&chunk[index_of(id) & (CHUNK_SIZE - 1)];
}

/* Takes an id for `e` and enters `e` in the id table under it. */
static int take_id(tier *t, entry *e) {
  uint32_t n = atomic_fetch_add(&t->taken, 1) + 1; /* 0 is never an id */
  e->id = n | (t == &scoped ? SCOPED_BIT : 0);
  CP_ASSERT(n != 0); /* 0 is never an id (taken wraps only past the table) */
  _Atomic(entry *) *slot = n < CHUNK_SIZE * N_CHUNKS ? id_slot(t, e->id) : NULL;
  if (!slot)
    return cp_error_set(CPROTON_ELIMIT, "too many distinct names");
  atomic_store_explicit(slot, e, memory_order_release);
  return CPROTON_OK;
}

static int insert(tier *t, uint64_t hash, const char *s, size_t len,
                  uint32_t *id_out) {
  entry *e = malloc(sizeof *e + len + 1);
  if (!e)
    return cp_error_set(CPROTON_ENOMEM, "out of memory interning a name");
  memcpy(e->str, s, len);
  e->str[len] = '\0';
  e->len = (uint32_t)len;
  atomic_init(&e->label, NULL);
  if (take_id(t, e) != CPROTON_OK) {
    free(e);
    return CPROTON_ELIMIT;
  }
  name_key key = {s, len};
  /* in the id table before the hash set can hand it out */
  CP_ASSERT(atomic_load_explicit(id_slot(t, e->id), memory_order_relaxed) == e);
  entry *won = entry_of(cp_sohash_insert(&t->names, hash, &e->link,
                                         same_name, &key));
  if (won != e) { /* another thread won the race: e's id was never given */
    atomic_store_explicit(id_slot(t, e->id), NULL, memory_order_relaxed);
    free(e);
  }
  CP_ASSERT(won->id != 0 && won->len == len && !memcmp(won->str, s, len));
  *id_out = won->id;
  return CPROTON_OK;
}

static int check(const char *s, size_t len) {
  if (!s || len >= CP_STRTAB_MAX_LEN)
    return cp_error_set(CPROTON_EINVAL, "name is NULL or longer than %u bytes",
                        CP_STRTAB_MAX_LEN - 1);
  return CPROTON_OK;
}

/* Interns in tier `t`; a name the kept tier has keeps its kept id whatever
 * `t` is (the tree merges it as before). */
static int intern_in(tier *t, const char *s, size_t len, uint32_t *id_out) {
  int rc = check(s, len);
  if (rc)
    return rc;
  uint64_t hash = hash_bytes(s, len);
  entry *e = lookup(t, hash, s, len);
  if (!e && t != &kept)
    e = lookup(&kept, hash, s, len);
  if (e) {
    *id_out = e->id;
    return CPROTON_OK;
  }
  return insert(t, hash, s, len, id_out);
}

int cp_strtab_intern(const char *s, size_t len, uint32_t *id_out) {
  return intern_in(&kept, s, len, id_out);
}

int cp_strtab_intern_scoped(const char *s, size_t len, uint32_t *id_out) {
  return intern_in(&scoped, s, len, id_out);
}

static entry *by_id(uint32_t id) {
  tier *t = id & SCOPED_BIT ? &scoped : &kept;
  uint32_t i = index_of(id);
  if (i == 0 || i >= CHUNK_SIZE * N_CHUNKS)
    return NULL;
  entry **chunk =
      atomic_load_explicit(&t->chunks[i >> CHUNK_BITS], memory_order_acquire);
  if (!chunk)
    return NULL;
  return atomic_load_explicit(
      (_Atomic(entry *) *)&chunk[i & (CHUNK_SIZE - 1)], memory_order_acquire);
}

const char *cp_strtab_str(uint32_t id) {
  entry *e = by_id(id);
  if (!e)
    return NULL;
  const char *l = atomic_load_explicit(&e->label, memory_order_acquire);
  return l ? l : e->str;
}

size_t cp_strtab_len(uint32_t id) {
  entry *e = by_id(id);
  if (!e)
    return 0;
  const char *l = atomic_load_explicit(&e->label, memory_order_acquire);
  return l ? strlen(l) : e->len;
}

int cp_strtab_set_label(uint32_t id, const char *label) {
  entry *e = by_id(id);
  if (!e || (id & SCOPED_BIT))
    return cp_error_set(CPROTON_EINVAL, "no kept name with id %u", id);
  size_t n = strlen(label);
  if (check(label, n))
    return CPROTON_EINVAL;
  char *copy = malloc(n + 1);
  if (!copy)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for a label");
  memcpy(copy, label, n + 1);
  const char *expected = NULL; /* the first label stays: readers hold it */
  if (!atomic_compare_exchange_strong(&e->label, &expected, copy))
    free(copy);
  return CPROTON_OK;
}

static void free_entry(cp_solink *l) { free(entry_of(l)); }

void cp_strtab_scoped_reset(void) {
  cp_sohash_clear(&scoped.names, free_entry);
  for (uint32_t c = 0; c < N_CHUNKS; c++)
    free(atomic_load_explicit(&scoped.chunks[c], memory_order_relaxed));
  memset(scoped.chunks, 0, sizeof scoped.chunks);
  atomic_store(&scoped.taken, 0);
}

void cp_strtab_stats(int scoped_tier, cp_sohash_stats *out) {
  cp_sohash_stats_get(scoped_tier ? &scoped.names : &kept.names, out);
}

uint32_t cp_strtab_index(uint32_t id) {
  return id & SCOPED_BIT ? (index_of(id) << 1) | 1 : id << 1;
}

size_t cp_strtab_scoped_count(void) { return cp_sohash_count(&scoped.names); }
