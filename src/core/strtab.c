/* core/strtab.c -- lock-free string interning in two tiers.
 *
 * Layout: per tier, a fixed array of bucket heads; each bucket is a singly
 * linked list of entries pushed with compare-and-swap, so lookups never
 * lock and an insert races only with other inserts into the same bucket.
 * Entries are also reachable by id through a two-level table of chunks
 * whose pointers are published with release stores.
 *
 * Tiers. The kept tier (ids below 2^31) holds names that caches outside
 * the core keep ids of (Python frames, kernels, metric names): its entries
 * live until process exit. The scoped tier (ids with bit 24 set) holds
 * scope, state and op names entered while a session records; the session
 * module empties it when no session is in use and no thread holds or is
 * using one of its ids (cp_strtab_scoped_reset), so distinct scope names
 * cost memory only while some session lives.
 *
 * Invariant: an entry is fully written before it becomes reachable from a
 * bucket or the id table; entries are never freed or moved while readers
 * may run (the scoped tier's reset has a quiescent caller).
 * Hot path: yes (scope enter interns the scope name); no lock, no allocation
 * for known names. Called by core/context.c, core/session.c and backends. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"
#include "core/strtab.h"

#define N_BUCKETS (1u << 16)
#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define N_CHUNKS (1u << 12) /* 2^24 ids per tier */
#define SCOPED_BIT (1u << 24) /* above every kept id: ids stay < 2^25 */

typedef struct entry {
  struct entry *next;
  uint32_t hash;
  uint32_t id;
  uint32_t len;
  char str[];
} entry;

typedef struct tier {
  /* page-aligned so that a reset can hand the pages back (madvise) */
  _Alignas(4096) _Atomic(entry *) buckets[N_BUCKETS];
  _Atomic(entry **) chunks[N_CHUNKS];
  atomic_uint taken;  /* ids handed out; the next one is taken + 1 */
  atomic_size_t live; /* entries linked in a bucket */
} tier;

/* Zero-initialised (.bss, not in the file); ids start at 1. */
static tier kept, scoped;

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

static entry *lookup(tier *t, uint32_t hash, const char *s, size_t len) {
  return find(atomic_load_explicit(&t->buckets[hash & (N_BUCKETS - 1)],
                                   memory_order_acquire),
              hash, s, len);
}

/* e's index in the id table: its id without the tier's tag. */
static uint32_t index_of(uint32_t id) { return id & ~SCOPED_BIT; }

static int publish_id(tier *t, entry *e) {
  uint32_t c = index_of(e->id) >> CHUNK_BITS;
  entry **chunk = atomic_load_explicit(&t->chunks[c], memory_order_acquire);
  if (!chunk) {
    entry **fresh = calloc(CHUNK_SIZE, sizeof *fresh);
    if (!fresh)
      return CPROTON_ENOMEM;
    entry **expected = NULL;
    if (atomic_compare_exchange_strong(&t->chunks[c], &expected, fresh))
      chunk = fresh;
    else {
      free(fresh);
      chunk = expected;
    }
  }
  atomic_store_explicit(
      (_Atomic(entry *) *)&chunk[index_of(e->id) & (CHUNK_SIZE - 1)], e,
      memory_order_release);
  return CPROTON_OK;
}

/* Takes an id for `e` and enters it in the id table. */
static int take_id(tier *t, entry *e) {
  uint32_t n = atomic_fetch_add(&t->taken, 1) + 1; /* 0 is never an id */
  e->id = n | (t == &scoped ? SCOPED_BIT : 0);
  if (n >= CHUNK_SIZE * N_CHUNKS || publish_id(t, e) != CPROTON_OK)
    return cp_error_set(CPROTON_ELIMIT, "too many distinct names");
  return CPROTON_OK;
}

static int insert(tier *t, uint32_t hash, const char *s, size_t len,
                  uint32_t *id_out) {
  _Atomic(entry *) *head = &t->buckets[hash & (N_BUCKETS - 1)];
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
    if (!e->id && take_id(t, e) != CPROTON_OK) {
      free(e);
      return CPROTON_ELIMIT;
    }
    e->next = old;
    if (atomic_compare_exchange_weak_explicit(head, &old, e,
                                              memory_order_release,
                                              memory_order_acquire))
      break;
  }
  atomic_fetch_add_explicit(&t->live, 1, memory_order_relaxed);
  *id_out = e->id;
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
  uint32_t hash = hash_bytes(s, len);
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
  return e ? e->str : NULL;
}

size_t cp_strtab_len(uint32_t id) {
  entry *e = by_id(id);
  return e ? e->len : 0;
}

/* Zeroes a page-aligned static array and gives its pages back: they read
 * as zeroes when touched again (private anonymous memory). */
void cp_strtab_release_pages(void *p, size_t size) {
  memset(p, 0, size);
  madvise(p, size & ~(size_t)4095, MADV_DONTNEED);
}

void cp_strtab_scoped_reset(void) {
  for (uint32_t b = 0; b < N_BUCKETS; b++)
    for (entry *e = atomic_load_explicit(&scoped.buckets[b],
                                         memory_order_relaxed), *next;
         e; e = next) {
      next = e->next;
      free(e);
    }
  for (uint32_t c = 0; c < N_CHUNKS; c++)
    free(atomic_load_explicit(&scoped.chunks[c], memory_order_relaxed));
  cp_strtab_release_pages(scoped.buckets, sizeof scoped.buckets);
  memset(scoped.chunks, 0, sizeof scoped.chunks);
  atomic_store(&scoped.taken, 0);
  atomic_store(&scoped.live, 0);
}

uint32_t cp_strtab_index(uint32_t id) {
  return id & SCOPED_BIT ? (index_of(id) << 1) | 1 : id << 1;
}

size_t cp_strtab_scoped_count(void) { return atomic_load(&scoped.live); }
