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
#include "core/grow.h"

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
  void *grown;
  if (ns->n == ns->cap) {
    if (cp_grow(ns->v, &ns->cap, ns->n + 1, sizeof *ns->v, 32, &grown))
      return 1; /* out of memory: scan the objects listed so far */
    ns->v = grown;
  }
  if ((ns->v[ns->n] = strdup(name)))
    ns->n++;
  return 0;
}

/* Room for one more file in the parallel `seen` and `paths`. Each grows
 * from the same capacity, so they end equal; when the second fails the
 * first is merely larger than `cap` says, and the next call grows it again
 * to the same size. ENOMEM: nothing recorded. */
static int grow_files(cp_loaded_cubins *s) {
  size_t cap_seen = s->cap, cap_paths = s->cap;
  void *grown;
  if (cp_grow(s->seen, &cap_seen, s->n + 1, sizeof *s->seen, 64, &grown))
    return 1;
  s->seen = grown;
  if (cp_grow(s->paths, &cap_paths, s->n + 1, sizeof *s->paths, 64, &grown))
    return 1;
  s->paths = grown, s->cap = cap_paths;
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
  if (at >= 0 && s->n == s->cap && grow_files(s))
    at = -1;
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
  void *grown;
  if (s->n_refs == s->cap_refs) {
    if (cp_grow(s->refs, &s->cap_refs, s->n_refs + 1, sizeof *s->refs, 64,
                &grown))
      return 1; /* out of memory: the rest of this file is not indexed */
    s->refs = grown;
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
