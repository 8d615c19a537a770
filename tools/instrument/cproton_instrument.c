/* cproton_instrument.c -- `cproton-instrument in.ptx -o out.ptx [options]`:
 * runs the intra-kernel instrumentation pass on a PTX file, writes the
 * instrumented PTX and prints, per kernel, the scope table and the
 * profile-buffer size per CTA. Uses the public API only.
 *
 * Invariant: the output file is written to a temporary name and renamed,
 * so a failure never leaves partial output over a good file. Errors print
 * "cproton: error: ..." and exit 1 (2 for usage errors). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"

static const char usage[] =
    "usage: cproton-instrument IN.ptx [-o OUT.ptx] [options]\n"
    "  -o FILE                 output (default: stdout; the table then goes to stderr)\n"
    "  --counter C             clock | clock64 (default) | globaltimer\n"
    "  --buffer B              shared (default) | global\n"
    "  --buffer-size N         record bytes per CTA (split in power-of-two segments)\n"
    "  --granularity G         warp (default) | warpgroup | cta\n"
    "  --sample-warps LIST     units that record, e.g. 0,2,5 (default: all)\n"
    "  --num-warps N           warps per CTA when the kernel has no .reqntid/.maxntid\n"
    "  --existing-shared N     dynamic shared bytes the kernel already uses\n"
    "  --max-shared N          shared bytes per block (default 232448)\n"
    "  -q                      do not print the scope table\n";

static int fail(const char *path, const char *msg) {
  fprintf(stderr, "cproton: error: %s%s%s\n", path ? path : "", path ? ": " : "", msg);
  return 1;
}

static int pick(const char *v, const char *const *names, int n, int *out) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) {
      *out = i;
      return 0;
    }
  return -1;
}

static int parse_u32(const char *v, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 0);
  if (errno || end == v || *end || x > 0xffffffffu || v[0] == '-')
    return -1;
  *out = (uint32_t)x;
  return 0;
}

static int parse_list(const char *v, uint32_t *mask) {
  *mask = 0;
  for (const char *p = v; *p;) {
    char *end;
    unsigned long u = strtoul(p, &end, 10);
    if (end == p || u > 31)
      return -1;
    *mask |= 1u << u;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return -1;
  }
  return *mask ? 0 : -1;
}

typedef struct args {
  const char *in, *out;
  int quiet;
  cproton_ptx_options o;
} args;

/* Returns 0, or 2 after printing a usage error. */
static int parse_args(int argc, char **argv, args *a) {
  static const char *const counters[] = {"clock", "clock64", "globaltimer"};
  static const char *const buffers[] = {"shared", "global"};
  static const char *const grans[] = {"warp", "warpgroup", "cta"};
  cproton_ptx_options_init(&a->o);
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int e = 0, x = 0;
    if (!strcmp(k, "-h") || !strcmp(k, "--help")) {
      fputs(usage, stdout);
      exit(0);
    } else if (!strcmp(k, "-q")) {
      a->quiet = 1;
      continue;
    } else if (k[0] != '-' || !k[1]) {
      if (a->in)
        e = -1;
      a->in = k;
      if (e)
        break;
      continue;
    } else if (!v) {
      e = -1;
    } else if (!strcmp(k, "-o")) {
      a->out = v;
    } else if (!strcmp(k, "--counter")) {
      e = pick(v, counters, 3, &x);
      a->o.counter = (cproton_counter)x;
    } else if (!strcmp(k, "--buffer")) {
      e = pick(v, buffers, 2, &x);
      a->o.buffer = (cproton_buffer_kind)x;
    } else if (!strcmp(k, "--granularity")) {
      e = pick(v, grans, 3, &x);
      a->o.granularity = (cproton_granularity)x;
    } else if (!strcmp(k, "--buffer-size")) {
      e = parse_u32(v, &a->o.buffer_size);
    } else if (!strcmp(k, "--sample-warps")) {
      e = parse_list(v, &a->o.sample_mask);
    } else if (!strcmp(k, "--num-warps")) {
      e = parse_u32(v, &a->o.num_warps);
    } else if (!strcmp(k, "--existing-shared")) {
      e = parse_u32(v, &a->o.existing_shared_bytes);
    } else if (!strcmp(k, "--max-shared")) {
      e = parse_u32(v, &a->o.max_shared_bytes);
    } else {
      e = -1;
    }
    if (e) {
      fprintf(stderr, "cproton: error: bad option '%s'%s%s\n%s", k, v ? " " : "", v ? v : "", usage);
      return 2;
    }
    i++;
  }
  if (!a->in) {
    fprintf(stderr, "cproton: error: no input file\n%s", usage);
    return 2;
  }
  return 0;
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

static int write_atomic(const char *path, const char *text, size_t size) {
  if (!path || !strcmp(path, "-"))
    return fwrite(text, 1, size, stdout) == size ? 0 : -1;
  size_t l = strlen(path) + 16;
  char *tmp = malloc(l);
  if (!tmp)
    return -1;
  snprintf(tmp, l, "%s.tmp%d", path, (int)(size % 1000));
  FILE *f = fopen(tmp, "wb");
  int rc = !f || fwrite(text, 1, size, f) != size;
  if (f && fclose(f))
    rc = 1;
  if (!rc && rename(tmp, path))
    rc = 1;
  if (rc)
    remove(tmp);
  free(tmp);
  return rc ? -1 : 0;
}

static void print_table(FILE *f, const cproton_ptx *p) {
  static const char *const counters[] = {"clock", "clock64", "globaltimer"};
  static const char *const buffers[] = {"shared", "global"};
  static const char *const grans[] = {"warp", "warpgroup", "cta"};
  for (size_t k = 0; k < cproton_ptx_n_kernels(p); k++) {
    cproton_buffer_layout l;
    cproton_ptx_stats st;
    cproton_ptx_kernel_layout(p, k, &l);
    cproton_ptx_kernel_stats(p, k, &st);
    fprintf(f, "kernel %s: %u scopes, %u records, %u exits; %s buffer, %s, %s granularity\n",
            cproton_ptx_kernel_name(p, k), l.n_scopes, st.n_records, st.n_exits, buffers[l.buffer],
            counters[l.counter], grans[l.granularity]);
    fprintf(f, "  buffer: %u bytes per CTA = %u header + %u units x %u bytes\n", l.per_cta_bytes,
            l.header_bytes, l.n_units, l.segment_bytes);
    fprintf(f, "  %4s %6s  %s\n", "id", "parent", "name");
    for (uint32_t i = 0; i < l.n_scopes; i++) {
      if (l.scope_parents[i] < 0)
        fprintf(f, "  %4u %6s  %s\n", i, "-", l.scope_names[i]);
      else
        fprintf(f, "  %4u %6d  %s\n", i, l.scope_parents[i], l.scope_names[i]);
    }
  }
  if (!cproton_ptx_n_kernels(p))
    fprintf(f, "no markers found; output equals input\n");
}

int main(int argc, char **argv) {
  args a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc;
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
  size_t n;
  const char *out = cproton_ptx_text(p, &n);
  if (write_atomic(a.out, out, n))
    rc = fail(a.out, "cannot write output");
  else if (!a.quiet)
    print_table(a.out && strcmp(a.out, "-") ? stdout : stderr, p);
  cproton_ptx_free(p);
  free(text);
  return rc;
}
