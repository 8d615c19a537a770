/* instrument_pass_bench.c -- throughput of the PTX pass on the Triton
 * fixtures (MB/s of input PTX) and the code it adds (PTX instructions per
 * record, prologue and finalize). Baseline in the same run: a plain memcpy
 * of the same text, so the ratio shows what parsing and lowering cost.
 * usage: instrument_pass_bench [FIXTURE_DIR] [ITERATIONS]
 * (FIXTURE_DIR defaults to the repository's tests/data/ptx). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cproton/cproton.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long l = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)l + 1);
  *n = b ? fread(b, 1, (size_t)l, f) : 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : CP_DATA_DIR "/ptx";
  int iters = argc > 2 ? atoi(argv[2]) : 2000;
  static const char *const fx[] = {"vadd_sm90", "softmax_sm90", "mm_pipelined_sm90"};
  printf("%-20s %8s %10s %10s %8s %8s %8s %8s\n", "fixture", "bytes", "pass MB/s", "copy MB/s", "records",
         "instr/rec", "prologue", "finalize");
  for (int f = 0; f < 3; f++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.ptx", dir, fx[f]);
    size_t n;
    char *text = slurp(path, &n);
    if (!text) {
      fprintf(stderr, "cproton: error: cannot read %s\n", path);
      return 1;
    }
    cproton_ptx *p = NULL;
    double t0 = now();
    for (int i = 0; i < iters; i++) {
      cproton_ptx_free(p);
      if (cproton_ptx_instrument(text, n, NULL, &p) != CPROTON_OK) {
        fprintf(stderr, "cproton: error: %s\n", cproton_last_error());
        return 1;
      }
    }
    double t1 = now();
    char *copy = malloc(n);
    volatile char sink = 0;
    for (int i = 0; i < iters; i++) {
      memcpy(copy, text, n);
      sink ^= copy[i % n];
    }
    (void)sink;
    double t2 = now();
    cproton_ptx_stats st;
    cproton_ptx_kernel_stats(p, 0, &st);
    double mb = (double)n * iters / 1e6;
    printf("%-20s %8zu %10.1f %10.1f %8u %8u %8u %8u\n", fx[f], n, mb / (t1 - t0), mb / (t2 - t1), st.n_records,
           st.record_instrs, st.prologue_instrs, st.finalize_instrs);
    cproton_ptx_free(p);
    free(copy);
    free(text);
    (void)sink;
  }
  return 0;
}
