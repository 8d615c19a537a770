/* backend/cupti/loaded_cubins.c -- the loaded objects' cubins indexed by
 * CRC, each file read once per set, a cubin read back when asked for
 * (loaded_cubins.h).
 *
 * Invariant: no file is read while the dynamic loader's lock is held (the
 * object names are copied out of dl_iterate_phdr first); the index keeps
 * (crc, file, offset, size) only, so a process's large CUDA libraries cost
 * a scan, not their cubins' bytes. Not a hot path: PC sampling calls it
 * when a sample names an unknown cubin. */
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cupti/loaded_cubins.h"

typedef struct file_id {
  dev_t dev;
  ino_t ino;
} file_id;

typedef struct ref {
  uint64_t crc, off, size;
  size_t file; /* index in paths */
} ref;

struct cp_loaded_cubins {
  cp_loaded_crc_fn crc;
  unsigned arch;
  size_t max_section;
  file_id *seen;
  char **paths; /* of the files read, parallel to seen */
  size_t n, cap;
  ref *refs;
  size_t n_refs, cap_refs;
};

cp_loaded_cubins *cp_loaded_cubins_new(cp_loaded_crc_fn crc, unsigned arch,
                                       size_t max_section) {
  cp_loaded_cubins *s = calloc(1, sizeof *s);
  if (s)
    s->crc = crc, s->arch = arch, s->max_section = max_section;
  return s;
}

void cp_loaded_cubins_free(cp_loaded_cubins *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free(s->paths[i]);
  free(s->paths), free(s->seen), free(s->refs), free(s);
}

void cp_loaded_cubins_counts(const cp_loaded_cubins *s, size_t *objects,
                             size_t *cubins) {
  *objects = s->n, *cubins = s->n_refs;
}

/* The loaded objects' file names (the program as /proc/self/exe). */
typedef struct names {
  char **v;
  size_t n, cap;
} names;

static int add_name(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  names *ns = data;
  const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name
                                                         : "/proc/self/exe";
  if (ns->n == ns->cap) {
    size_t cap = ns->cap ? 2 * ns->cap : 32;
    char **v = realloc(ns->v, cap * sizeof *v);
    if (!v)
      return 1; /* out of memory: scan the objects listed so far */
    ns->v = v, ns->cap = cap;
  }
  if ((ns->v[ns->n] = strdup(name)))
    ns->n++;
  return 0;
}

/* Notes `path` as read and returns its index, or -1 when it was read
 * before or cannot be identified (the vDSO, files that are gone). Takes
 * ownership of path. */
static long note_file(cp_loaded_cubins *s, char *path) {
  struct stat sb;
  long at = -1;
  if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
    at = (long)s->n;
    for (size_t i = 0; i < s->n && at >= 0; i++)
      at = s->seen[i].dev == sb.st_dev && s->seen[i].ino == sb.st_ino ? -1 : at;
  }
  if (at >= 0 && s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    file_id *v = realloc(s->seen, cap * sizeof *v);
    char **p = v ? realloc(s->paths, cap * sizeof *p) : NULL;
    if (v)
      s->seen = v;
    if (p)
      s->paths = p, s->cap = cap;
    else
      at = -1;
  }
  if (at < 0) {
    free(path);
    return -1;
  }
  s->seen[s->n] = (file_id){sb.st_dev, sb.st_ino};
  s->paths[s->n++] = path;
  return at;
}

typedef struct indexing {
  cp_loaded_cubins *s;
  size_t file;
} indexing;

static int index_cubin(void *ctx, const void *cubin, size_t size,
                       uint64_t offset) {
  indexing *x = ctx;
  cp_loaded_cubins *s = x->s;
  uint64_t crc;
  if (s->crc(cubin, size, &crc))
    return 0; /* CUPTI refused it: no sample can name it */
  if (s->n_refs == s->cap_refs) {
    size_t cap = s->cap_refs ? 2 * s->cap_refs : 64;
    ref *r = realloc(s->refs, cap * sizeof *r);
    if (!r)
      return 1; /* out of memory: the rest of this file is not indexed */
    s->refs = r, s->cap_refs = cap;
  }
  s->refs[s->n_refs++] = (ref){crc, offset, size, x->file};
  return 0;
}

/* Reads and indexes the loaded objects not read before. */
static void scan_new(cp_loaded_cubins *s, cp_fatbin_stats *st, size_t *failed) {
  names ns = {0};
  dl_iterate_phdr(add_name, &ns);
  for (size_t i = 0; i < ns.n; i++) {
    long at = note_file(s, ns.v[i]);
    indexing x = {s, (size_t)at};
    if (at >= 0 && cp_fatbin_scan_file(s->paths[at], s->arch, s->max_section,
                                       index_cubin, &x, st))
      (*failed)++;
  }
  free(ns.v);
}

int cp_loaded_cubins_find(cp_loaded_cubins *s, uint64_t crc,
                          cp_fatbin_cubin_fn fn, void *ctx,
                          cp_fatbin_stats *st, size_t *failed) {
  scan_new(s, st, failed);
  for (size_t i = 0; i < s->n_refs; i++) {
    const ref *r = &s->refs[i];
    uint8_t *bytes = NULL;
    if (r->crc != crc)
      continue;
    if (cp_fatbin_read(s->paths[r->file], r->off, r->size, &bytes)) {
      (*failed)++;
      return 0;
    }
    fn(ctx, bytes, (size_t)r->size, r->off);
    free(bytes);
    return 1;
  }
  return 0;
}
