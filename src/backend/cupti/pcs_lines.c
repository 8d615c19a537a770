/* backend/cupti/pcs_lines.c -- kept cubins (a list keyed by CRC) and a
 * cache (crc, function id, pc) -> frame id in front of the cubin's line
 * table; for a CRC it lacks, the recover hook (pcsampling.c: the loaded
 * objects' fat binaries) once. Invariant: a kept cubin is never freed
 * before the store (frame names are interned, so resolved ids outlive it);
 * the recover hook runs without the lock. Not a hot path: module loads and
 * the fetch of PC records when a range closes. Called by pcsampling.c and
 * tests. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pcs_lines.h"
#include "core/error.h"
#include "core/strtab.h"

#define CACHE_SLOTS (1u << 16) /* beyond: resolved without caching */
#define MAX_TRIED 256 /* unknown CRCs the recover hook is called for */

typedef struct cubin {
  uint64_t crc;
  void *image;
  size_t size;
  struct cubin *next;
} cubin;

typedef struct entry {
  uint64_t crc, pc;
  uint32_t fn; /* strtab id of the function; 0 = empty slot */
  uint32_t frame;
} entry;

struct cp_pcs_lines {
  pthread_mutex_t lock;
  cp_pcs_line_hooks hooks;
  size_t max_bytes;
  cubin *cubins;
  entry *cache;
  size_t used;
  uint64_t tried[MAX_TRIED]; /* unknown CRCs recover was called for */
  size_t n_tried;
  cp_pcs_lines_stats stats;
};

cp_pcs_lines *cp_pcs_lines_new(const cp_pcs_line_hooks *hooks,
                               size_t max_bytes) {
  cp_pcs_lines *l = calloc(1, sizeof *l);
  if (l && !(l->cache = calloc(CACHE_SLOTS, sizeof *l->cache))) {
    free(l);
    l = NULL;
  }
  if (!l) {
    cp_error_set(CPROTON_ENOMEM, "out of memory for the cubin store");
    return NULL;
  }
  pthread_mutex_init(&l->lock, NULL);
  l->hooks = *hooks;
  l->max_bytes = max_bytes;
  return l;
}

void cp_pcs_lines_free(cp_pcs_lines *l) {
  if (!l)
    return;
  for (cubin *c = l->cubins, *next; c; c = next) {
    next = c->next;
    free(c->image);
    free(c);
  }
  free(l->cache);
  pthread_mutex_destroy(&l->lock);
  free(l);
}

static cubin *find(cp_pcs_lines *l, uint64_t crc) {
  for (cubin *c = l->cubins; c; c = c->next)
    if (c->crc == crc)
      return c;
  return NULL;
}

int cp_pcs_lines_add(cp_pcs_lines *l, const void *image, size_t size) {
  uint64_t crc;
  if (!image || !size || !l->hooks.crc || l->hooks.crc(image, size, &crc))
    return cp_error_set(CPROTON_EINVAL, "pcsampling: cubin CRC refused");
  pthread_mutex_lock(&l->lock);
  int rc = CPROTON_OK;
  if (find(l, crc)) {
    /* kept already: a module loaded twice, or Triton's copy of it */
  } else if (l->stats.bytes + size > l->max_bytes) {
    l->stats.refused++;
    rc = cp_error_set(CPROTON_ELIMIT, "pcsampling: cubin store full");
  } else {
    cubin *c = malloc(sizeof *c);
    void *copy = c ? malloc(size) : NULL;
    if (!copy) {
      free(c);
      rc = cp_error_set(CPROTON_ENOMEM, "out of memory keeping a cubin");
    } else {
      memcpy(copy, image, size);
      *c = (cubin){crc, copy, size, l->cubins};
      l->cubins = c;
      l->stats.cubins++;
      l->stats.bytes += size;
    }
  }
  pthread_mutex_unlock(&l->lock);
  return rc;
}

/* "dir/file:line@function" interned; 0 when the table has no file. */
static uint32_t lookup_frame(cp_pcs_lines *l, const cubin *c,
                             const char *fn, uint64_t pc) {
  uint32_t line = 0, id = 0;
  char *file = NULL, *dir = NULL;
  if (l->hooks.source &&
      l->hooks.source(c->image, c->size, fn, pc, &line, &file, &dir) == 0 &&
      file && *file) {
    size_t n = strlen(file) + (dir ? strlen(dir) : 0) + strlen(fn) + 32;
    char *name = malloc(n);
    if (name) {
      int k = snprintf(name, n, "%s%s%s:%u@%s", dir && *dir ? dir : "",
                       dir && *dir ? "/" : "", file, line, fn);
      if (cp_strtab_intern(name, (size_t)k, &id))
        id = 0;
      free(name);
    }
  }
  free(file);
  free(dir);
  return id;
}

static size_t slot_of(uint64_t crc, uint32_t fn, uint64_t pc) {
  uint64_t h = (crc ^ (pc * 0x9E3779B97F4A7C15ull) ^ fn) * 0xff51afd7ed558ccdull;
  return (size_t)(h >> 40) & (CACHE_SLOTS - 1);
}

/* The cached frame of the triple: 1 (id set) or 0. Locked. */
static int cached(cp_pcs_lines *l, uint64_t crc, uint32_t fn, uint64_t pc,
                  uint32_t *id) {
  size_t i = slot_of(crc, fn, pc);
  for (size_t probes = 0; l->cache[i].fn && probes < 64;
       i = (i + 1) & (CACHE_SLOTS - 1), probes++)
    if (l->cache[i].fn == fn && l->cache[i].crc == crc && l->cache[i].pc == pc) {
      *id = l->cache[i].frame;
      return 1;
    }
  return 0;
}

/* Notes the triple's frame in a free slot near its home, if any. Locked. */
static void cache_put(cp_pcs_lines *l, uint64_t crc, uint32_t fn, uint64_t pc,
                      uint32_t id) {
  size_t i = slot_of(crc, fn, pc);
  for (size_t probes = 0; l->cache[i].fn && probes < 64; probes++)
    i = (i + 1) & (CACHE_SLOTS - 1);
  if (!l->cache[i].fn && l->used < CACHE_SLOTS / 2) {
    l->cache[i] = (entry){crc, pc, fn, id};
    l->used++;
  }
}

/* 1 when the recover hook should run for unknown `crc` (first time seen,
 * below MAX_TRIED); it is then noted. Locked. */
static int should_recover(cp_pcs_lines *l, uint64_t crc) {
  if (!l->hooks.recover || l->n_tried == MAX_TRIED)
    return 0;
  for (size_t i = 0; i < l->n_tried; i++)
    if (l->tried[i] == crc)
      return 0;
  l->tried[l->n_tried++] = crc;
  l->stats.recoveries++;
  return 1;
}

uint32_t cp_pcs_lines_resolve(cp_pcs_lines *l, uint64_t crc,
                              const char *function, uint64_t pc) {
  uint32_t fn, id = 0;
  if (!function || cp_strtab_intern(function, strlen(function), &fn))
    return 0;
  pthread_mutex_lock(&l->lock);
  l->stats.lookups++;
  if (!cached(l, crc, fn, pc, &id)) {
    const cubin *c = find(l, crc);
    if (!c && should_recover(l, crc)) {
      pthread_mutex_unlock(&l->lock); /* the hook adds through the lock */
      l->hooks.recover(l, crc);
      pthread_mutex_lock(&l->lock);
      c = find(l, crc);
    }
    id = c ? lookup_frame(l, c, function, pc) : 0;
    cache_put(l, crc, fn, pc, id);
  }
  l->stats.misses += id == 0;
  pthread_mutex_unlock(&l->lock);
  return id;
}

void cp_pcs_lines_get_stats(cp_pcs_lines *l, cp_pcs_lines_stats *out) {
  pthread_mutex_lock(&l->lock);
  *out = l->stats;
  pthread_mutex_unlock(&l->lock);
}
