/* backend/cupti/loaded_cubins.c -- scans the fat binaries of the objects
 * loaded in this process, each file once per set (loaded_cubins.h).
 *
 * Invariant: no file is read while the dynamic loader's lock is held (the
 * object names are copied out of dl_iterate_phdr first, since the cubin
 * callback may call into libraries that load others). Not a hot path: PC
 * sampling calls it when a sample names an unknown cubin. */
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cupti/loaded_cubins.h"

typedef struct file_id {
  dev_t dev;
  ino_t ino;
} file_id;

struct cp_loaded_cubins {
  file_id *seen;
  size_t n, cap;
};

cp_loaded_cubins *cp_loaded_cubins_new(void) {
  return calloc(1, sizeof(cp_loaded_cubins));
}

void cp_loaded_cubins_free(cp_loaded_cubins *s) {
  if (s)
    free(s->seen);
  free(s);
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

/* 1 when the file was scanned before (or cannot be identified), else it is
 * noted as scanned and 0 returned. */
static int seen_before(cp_loaded_cubins *s, const char *path) {
  struct stat sb;
  if (stat(path, &sb) || !S_ISREG(sb.st_mode))
    return 1; /* the vDSO and objects whose files are gone */
  for (size_t i = 0; i < s->n; i++)
    if (s->seen[i].dev == sb.st_dev && s->seen[i].ino == sb.st_ino)
      return 1;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    file_id *v = realloc(s->seen, cap * sizeof *v);
    if (!v)
      return 1;
    s->seen = v, s->cap = cap;
  }
  s->seen[s->n++] = (file_id){sb.st_dev, sb.st_ino};
  return 0;
}

size_t cp_loaded_cubins_scan(cp_loaded_cubins *s, unsigned arch,
                             size_t max_section, cp_fatbin_cubin_fn fn,
                             void *ctx, cp_fatbin_stats *st, size_t *failed) {
  names ns = {0};
  size_t scanned = 0;
  dl_iterate_phdr(add_name, &ns);
  for (size_t i = 0; i < ns.n; i++) {
    if (!seen_before(s, ns.v[i])) {
      scanned++;
      if (cp_fatbin_scan_file(ns.v[i], arch, max_section, fn, ctx, st))
        (*failed)++;
    }
    free(ns.v[i]);
  }
  free(ns.v);
  return scanned;
}
