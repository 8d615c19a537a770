/* decode_bench.c -- profile-buffer decode throughput on synthetic buffers
 * shaped like the two benchmark kernels of issue 12:
 *
 *   vadd: 65,536 CTAs x 4 warps, 2 nested scopes (4 records per warp),
 *         1 KiB segments (the default shared buffer): a 64M-element add;
 *   mm:   512 CTAs x 8 warps, one scope in a 64-iteration K loop plus an
 *         outer one (130 records per warp), 2 KiB segments.
 *
 * For each: the full decode (event lists, what traces need), the
 * aggregate-only decode (CPROTON_DECODE_NO_EVENTS, what tree profiles
 * use), decode + delivery into a tree session (cproton_instr_record_host),
 * and the Proton host-buffer encoding. Prints records/s and ms per launch,
 * best of N runs. Not a test: numbers go to docs/benchmarks.md.
 *
 *   decode_bench [runs]      (default 5) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cproton/cproton.h"
#include "instrument/layout.h"

typedef struct shape {
  const char *name;
  uint32_t ctas, units, seg, loop; /* loop: inner pairs per warp */
} shape;

static const char *const names[] = {"outer", "inner"};
static const int32_t parents[] = {-1, 0};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static cproton_buffer_layout make_layout(const shape *s) {
  cproton_buffer_layout l;
  memset(&l, 0, sizeof l);
  l.n_units = s->units;
  l.segment_bytes = s->seg;
  l.header_bytes = cp_layout_header_bytes(s->units);
  l.per_cta_bytes = l.header_bytes + s->units * s->seg;
  l.counter = CPROTON_COUNTER_CLOCK64;
  l.n_scopes = 2;
  l.scope_names = names;
  l.scope_parents = parents;
  for (uint32_t u = 0; u < s->units; u++)
    l.unit_warp[u] = (uint8_t)u;
  return l;
}

/* Each warp: outer start, `loop` inner pairs, outer end. */
static unsigned char *make_buffer(const shape *s, const cproton_buffer_layout *l, uint64_t *records) {
  unsigned char *buf = calloc(s->ctas, l->per_cta_bytes);
  if (!buf)
    return NULL;
  *records = 0;
  for (uint32_t c = 0; c < s->ctas; c++) {
    unsigned char *p = buf + (size_t)c * l->per_cta_bytes;
    put32(p + CP_HDR_MAGIC, CP_LAYOUT_MAGIC);
    p[CP_HDR_VERSION] = CP_LAYOUT_VERSION;
    p[CP_HDR_COUNTER] = CPROTON_COUNTER_CLOCK64;
    put32(p + CP_HDR_CTA, c);
    put32(p + CP_HDR_SM, c % 132);
    put64(p + CP_HDR_START_TIME, 1000000 + c);
    put64(p + CP_HDR_START_CTR, 5000);
    put32(p + CP_HDR_N_UNITS, s->units);
    put32(p + CP_HDR_SEG_BYTES, s->seg);
    put32(p + CP_HDR_N_ACTIVE, s->units);
    uint64_t t = 5000;
    for (uint32_t u = 0; u < s->units; u++) {
      unsigned char *seg = p + l->header_bytes + (size_t)u * s->seg;
      uint32_t k = 0;
      put64(seg + 8 * k++, (uint64_t)cp_layout_tag(0, 0) << 48 | (t += 3));
      for (uint32_t i = 0; i < s->loop; i++) {
        put64(seg + 8 * k++, (uint64_t)cp_layout_tag(1, 0) << 48 | (t += 5));
        put64(seg + 8 * k++, (uint64_t)cp_layout_tag(1, 1) << 48 | (t += 40));
      }
      put64(seg + 8 * k++, (uint64_t)cp_layout_tag(0, 1) << 48 | (t += 7));
      put32(p + CP_HDR_COUNTS + 4 * u, k);
      *records += k;
    }
    put64(p + CP_HDR_FIN_TIME, 1000000 + c + (t - 5000) / 2);
  }
  return buf;
}

typedef int (*run_fn)(const unsigned char *, size_t, const cproton_buffer_layout *, void *);

static int run_decode(const unsigned char *b, size_t n, const cproton_buffer_layout *l, void *flags) {
  cproton_decoded *d = NULL;
  int rc = cproton_buffer_decode(b, n, l, *(unsigned *)flags, &d);
  cproton_decoded_free(d);
  return rc;
}

static int run_deliver(const unsigned char *b, size_t n, const cproton_buffer_layout *l, void *k) {
  (void)l;
  return cproton_instr_record_host(k, b, n, 0);
}

static int run_proton(const unsigned char *b, size_t n, const cproton_buffer_layout *l, void *units) {
  void *out = NULL;
  size_t size;
  int rc = cproton_buffer_to_proton(b, n, l, *(uint32_t *)units, &out, &size);
  cproton_free(out);
  return rc;
}

static void measure(const char *shape_name, const char *what, run_fn fn, void *arg, const unsigned char *b,
                    size_t n, const cproton_buffer_layout *l, uint64_t records, int runs) {
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now_s();
    if (fn(b, n, l, arg)) {
      fprintf(stderr, "%s %s: %s\n", shape_name, what, cproton_last_error());
      return;
    }
    double dt = now_s() - t0;
    if (dt < best)
      best = dt;
  }
  printf("%-5s %-26s %9.2f ms/launch %8.1f M records/s %7.2f GB/s\n", shape_name, what, best * 1e3,
         records / best / 1e6, n / best / 1e9);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  const shape shapes[] = {{"vadd", 65536, 4, 64, 1}, {"vadd1k", 65536, 4, 1024, 1}, {"mm", 512, 8, 2048, 64}};
  char path[] = "/tmp/cproton_decode_benchXXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return 1;
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = path;
  o.backend = "none";
  int sid;
  if (cproton_session_start(&o, &sid)) {
    fprintf(stderr, "session: %s\n", cproton_last_error());
    return 1;
  }
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    const shape *s = &shapes[i];
    cproton_buffer_layout l = make_layout(s);
    uint64_t records;
    unsigned char *buf = make_buffer(s, &l, &records);
    cproton_instr_kernel *k;
    if (!buf || cproton_instr_kernel_new(s->name, &l, &k))
      return 1;
    size_t n = (size_t)s->ctas * l.per_cta_bytes;
    printf("%s: %u CTAs x %u warps, %llu records, %.1f MB buffer\n", s->name, s->ctas, s->units,
           (unsigned long long)records, n / 1e6);
    unsigned full = 0, agg = CPROTON_DECODE_NO_EVENTS;
    uint32_t units = s->units;
    measure(s->name, "decode (events)", run_decode, &full, buf, n, &l, records, runs);
    measure(s->name, "decode (aggregate only)", run_decode, &agg, buf, n, &l, records, runs);
    measure(s->name, "decode + deliver (tree)", run_deliver, k, buf, n, &l, records, runs);
    measure(s->name, "Proton host-buffer encode", run_proton, &units, buf, n, &l, records, runs);
    cproton_instr_kernel_free(k);
    free(buf);
  }
  cproton_session_finalize(sid, NULL);
  remove(path);
  return 0;
}
