/* io/output.c -- creating output files safely: exclusive temporaries,
 * destinations that are regular files only, outputs that are not inputs
 * (cp_output_*), and the public cproton_output_* handle the tools write
 * through (a stdio stream over such a temporary).
 *
 * Invariant: no open() here follows a symbolic link or reuses an existing
 * name: temporaries are created with O_CREAT|O_EXCL|O_NOFOLLOW under a
 * fresh random name, so another user who plants a link at a temporary's
 * name in a shared directory gets nothing written through it. The rules
 * are listed in io/output.h and docs/guarantees.md ("File safety").
 * Not a hot path: finalize, trace merges, the tools. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "cproton/cproton.h"
#include "io/output.h"

/* Tries before giving up: each collision is a name someone else holds, and
 * with 2^32 random names per pid, 64 in a row means the names are not
 * random (or a directory full of them): say so rather than spin. */
#define TRIES 64

static const struct {
  mode_t type;
  const char *what;
} kinds[] = {
    {S_IFDIR, "a directory"},   {S_IFCHR, "a device node"},
    {S_IFBLK, "a device node"}, {S_IFIFO, "a FIFO"},
    {S_IFSOCK, "a socket"},     {S_IFLNK, "a symbolic link"},
};

static const char *kind_of(mode_t mode) {
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if ((mode & S_IFMT) == kinds[i].type)
      return kinds[i].what;
  return "not a regular file";
}

int cp_output_check(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? CPROTON_OK
                           : cp_error_set(CPROTON_EIO, "cannot write '%s': %s",
                                          path, strerror(errno));
  if (S_ISREG(st.st_mode))
    return CPROTON_OK;
  return cp_error_set(CPROTON_EINVAL,
                      "'%s' is %s; cproton replaces only regular files "
                      "(remove it or write elsewhere)",
                      path, kind_of(st.st_mode));
}

int cp_output_not_input(const char *path, const char *const *inputs,
                        size_t n_inputs) {
  struct stat out, in;
  if (!inputs || stat(path, &out) != 0)
    return CPROTON_OK; /* absent: it cannot be an input */
  for (size_t i = 0; i < n_inputs; i++)
    if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev &&
        in.st_ino == out.st_ino)
      return cp_error_set(CPROTON_EINVAL,
                          "output '%s' is the input '%s'; writing it would "
                          "replace what is being read (name another output)",
                          path, inputs[i]);
  return CPROTON_OK;
}

/* 32 random bits for a temporary's name; the clock and a counter where
 * getrandom fails (an old kernel), which still differ per call. */
static uint32_t random_bits(void) {
  static _Atomic uint32_t counter;
  uint32_t r;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
    return r;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u ^
         ++counter * 40503u;
}

/* The permission bits a new temporary gets: the replaced file's, else
 * 0666 (the kernel takes the umask off). */
static mode_t wanted_mode(const char *path, int *replacing) {
  struct stat st;
  *replacing = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
  return *replacing ? (st.st_mode & 0777) : 0666;
}

int cp_output_create(const char *path, char **tmp_out, int *fd_out) {
  int rc = cp_output_check(path), replacing;
  if (rc)
    return rc;
  size_t n = strlen(path) + 40;
  char *tmp = malloc(n);
  if (!tmp)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for output");
  mode_t mode = wanted_mode(path, &replacing);
  int fd = -1;
  for (int i = 0; i < TRIES && fd < 0; i++) {
    snprintf(tmp, n, "%s.tmp.%d.%08x", path, (int)getpid(), random_bits());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) {
    int err = errno;
    rc = cp_error_set(CPROTON_EIO, "cannot write '%s' (temporary '%s'): %s",
                      path, tmp, err == EEXIST ? "every temporary name tried "
                      "exists" : strerror(err));
    free(tmp);
    return rc;
  }
  if (replacing) /* the umask did not apply to a mode we copy */
    (void)fchmod(fd, mode);
  *tmp_out = tmp;
  *fd_out = fd;
  return CPROTON_OK;
}

int cp_output_replace(const char *tmp, const char *path) {
  int rc = cp_output_check(path);
  if (rc)
    return rc;
  if (rename(tmp, path) != 0)
    return cp_error_set(CPROTON_EIO, "cannot rename to '%s': %s", path,
                        strerror(errno));
  return CPROTON_OK;
}

void cp_output_discard(const char *tmp) {
  if (tmp)
    unlink(tmp);
}

/* ---- the public handle ------------------------------------------------- */

struct cproton_output {
  char *path, *tmp;
  FILE *f;
};

int cproton_output_open(const char *path, const char *const *inputs,
                        size_t n_inputs, cproton_output **out) {
  if (!path || !*path || !out || (n_inputs && !inputs))
    return cp_error_set(CPROTON_EINVAL, "output: a path and a handle are "
                        "required (inputs may be NULL only when none)");
  *out = NULL;
  int fd, rc = cp_output_not_input(path, inputs, n_inputs);
  cproton_output *o = rc ? NULL : calloc(1, sizeof *o);
  if (rc || !o)
    return rc ? rc : cp_error_set(CPROTON_ENOMEM, "out of memory for output");
  if ((rc = cp_output_create(path, &o->tmp, &fd)) != CPROTON_OK) {
    free(o);
    return rc;
  }
  if (!(o->path = strdup(path)) || !(o->f = fdopen(fd, "wb"))) {
    if (!o->f)
      close(fd);
    cp_output_discard(o->tmp);
    free(o->path), free(o->tmp), free(o);
    return cp_error_set(CPROTON_ENOMEM, "out of memory for output");
  }
  *out = o;
  return CPROTON_OK;
}

FILE *cproton_output_stream(cproton_output *o) { return o ? o->f : NULL; }

int cproton_output_close(cproton_output *o, int discard) {
  if (!o)
    return CPROTON_OK;
  int bad = ferror(o->f), rc = CPROTON_OK;
  bad |= fclose(o->f) != 0;
  if (bad && !discard)
    rc = cp_error_set(CPROTON_EIO, "cannot write '%s': %s", o->path,
                      strerror(errno ? errno : EIO));
  else if (!discard)
    rc = cp_output_replace(o->tmp, o->path);
  if (rc || discard)
    cp_output_discard(o->tmp);
  free(o->path), free(o->tmp), free(o);
  return rc;
}
