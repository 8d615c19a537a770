/* cproton_instrument.c -- `cproton-instrument in.ptx -o out.ptx [options]`:
 * runs the intra-kernel instrumentation pass on a PTX file, writes the
 * instrumented PTX and prints, per kernel, the scope table and the
 * profile-buffer size per CTA. Uses the public API only.
 *
 * Invariant: a regular output file is written through cproton_output (a
 * temporary created exclusively, never through a link, renamed into place),
 * so a failure never leaves partial output over a good file and the input
 * is never the output; an existing device node or FIFO (/dev/null, a pipe,
 * a terminal) is written directly, never replaced. Errors print
 * "cproton: error: ..." and exit 1 (2 for usage errors, parsed by args.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cproton/cproton.h"

static int fail(const char *path, const char *msg) {
  fprintf(stderr, "cproton: error: %s%s%s\n", path ? path : "", path ? ": " : "", msg);
  return 1;
}

static char *read_all(const char *path, size_t *size) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb)
        free(b);
      b = nb;
    }
  }
  int bad = ferror(f);
  if (f != stdin)
    fclose(f);
  if (bad) {
    free(b);
    return NULL;
  }
  *size = n;
  return b;
}

static int write_direct(FILE *f, const char *path, const char *text,
                        size_t size) {
  int rc = !f || fwrite(text, 1, size, f) != size;
  if (f && f != stdout && fclose(f))
    rc = 1;
  return rc ? fail(path, "cannot write output") : 0;
}

/* An existing device node or FIFO (/dev/null, a pipe, a terminal) the user
 * named is written into, never replaced: opened without O_CREAT (nothing
 * is created if it vanished meanwhile) and checked again once open. 1 when
 * `path` is no such thing (the caller writes a file), else 0 or the exit
 * status. */
static int write_to_device(const char *path, const char *text, size_t size) {
  struct stat st;
  if (stat(path, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
    return -1;
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0 ||
      !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    if (fd >= 0)
      close(fd);
    return fail(path, "cannot write: not the device or FIFO it was");
  }
  FILE *f = fdopen(fd, "wb");
  if (!f)
    close(fd);
  return write_direct(f, path, text, size);
}

/* Writes the output: stdout for "-", into an existing device or FIFO, or
 * else a regular file through cproton_output (an exclusive temporary,
 * renamed; refused over a directory, a link, or the input itself). */
static int write_output(const char *path, const char *in, const char *text,
                        size_t size) {
  if (!path || !strcmp(path, "-"))
    return write_direct(stdout, "-", text, size);
  const char *inputs[] = {strcmp(in, "-") ? in : NULL};
  cproton_output *o;
  if (cproton_output_open(path, inputs, 1, &o) != CPROTON_OK) {
    int rc = write_to_device(path, text, size);
    return rc >= 0 ? rc : fail(NULL, cproton_last_error());
  }
  int bad = fwrite(text, 1, size, cproton_output_stream(o)) != size;
  if (cproton_output_close(o, bad) != CPROTON_OK || bad)
    return fail(path, bad ? "cannot write output" : cproton_last_error());
  return 0;
}

static void print_table(FILE *f, const cproton_ptx *p) {
  static const char *const counters[] = {"clock", "clock64", "globaltimer"};
  static const char *const buffers[] = {"shared buffer", "global buffer"};
  static const char *const grans[] = {"warp",   "warpgroup", "cta",          "warp_2",       "warp_4",
                                       "warp_8", "warp_group_2", "warp_group_4", "warp_group_8"};
  for (size_t k = 0; k < cproton_ptx_n_kernels(p); k++) {
    cproton_buffer_layout l;
    cproton_ptx_stats st;
    cproton_ptx_kernel_layout(p, k, &l);
    cproton_ptx_kernel_stats(p, k, &st);
    fprintf(f, "kernel %s: %u scopes, %u records, %u exits; %s, %s, %s granularity\n",
            cproton_ptx_kernel_name(p, k), l.n_scopes, st.n_records, st.n_exits,
            l.aggregate ? "in-kernel sums" : buffers[l.buffer], counters[l.counter], grans[l.granularity]);
    if (l.aggregate)
      fprintf(f, "  sums: %u bytes per CTA (one slot of totals), %u units\n", l.per_cta_bytes, l.n_units);
    else
      fprintf(f, "  buffer: %u bytes per CTA = %u header + %u units x %u bytes\n", l.per_cta_bytes,
              l.header_bytes, l.n_units, l.segment_bytes);
    fprintf(f, "  %4s %6s  %s\n", "id", "parent", "name");
    for (uint32_t i = 0; i < l.n_scopes; i++) {
      if (l.scope_parents[i] == CPROTON_SCOPE_PARENT_EVENT)
        fprintf(f, "  %4u %6s  %s (event)\n", i, "-", l.scope_names[i]);
      else if (l.scope_parents[i] < 0)
        fprintf(f, "  %4u %6s  %s\n", i, "-", l.scope_names[i]);
      else
        fprintf(f, "  %4u %6d  %s\n", i, l.scope_parents[i], l.scope_names[i]);
    }
  }
  if (!cproton_ptx_n_kernels(p))
    fprintf(f, "no markers found; output equals input\n");
}

int main(int argc, char **argv) {
  static ci_args a;
  int rc = ci_parse_args(argc, argv, &a);
  if (rc == 1) {
    fputs(ci_usage, stdout);
    return 0;
  }
  if (rc) {
    fprintf(stderr, "cproton: error: %s\n%s", a.err, ci_usage);
    return 2;
  }
  size_t size = 0;
  char *text = read_all(a.in, &size);
  if (!text)
    return fail(a.in, strerror(errno ? errno : EIO));
  cproton_ptx *p = NULL;
  if (cproton_ptx_instrument(text, size, &a.o, &p) != CPROTON_OK) {
    rc = fail(a.in, cproton_last_error());
    free(text);
    return rc;
  }
  for (size_t k = 0; k < cproton_ptx_n_kernels(p); k++) /* even with -q */
    if (cproton_ptx_kernel_warning(p, k))
      fprintf(stderr, "cproton: warning: %s: %s\n", a.in, cproton_ptx_kernel_warning(p, k));
  size_t n;
  const char *out = cproton_ptx_text(p, &n);
  rc = write_output(a.out, a.in, out, n);
  if (!rc && !a.quiet)
    print_table(a.out && strcmp(a.out, "-") ? stdout : stderr, p);
  cproton_ptx_free(p);
  free(text);
  return rc;
}
