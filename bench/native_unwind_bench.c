/* bench/native_unwind_bench.c -- what capturing a native call stack costs
 * on this CPU, per capture, at a given depth (issue 28 item 3; the numbers
 * behind the unwinder's choice in docs/dependencies.md):
 *   backtrace    glibc's backtrace() (libgcc's unwinder)
 *   libunwind    unw_backtrace from libunwind.so.8, loaded as the library
 *                loads it (dlopen, RTLD_LOCAL); skipped when absent
 *   fp_walk      following saved frame pointers (this program keeps them;
 *                the CUDA driver and CUPTI do not, so it is no option there)
 *   native_path  cp_native_path on a known stack (capture + hash + lookup)
 *                with libunwind, then with backtrace()
 * Usage: native_unwind_bench [DEPTH [ITERS]]. Prints "RESULT" lines. */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/cct.h"
#include "core/native.h"

typedef void (*probe_fn)(void);
static void *sink[256];
static volatile int sink_n;

static int (*unw_backtrace_fn)(void **, int);

static void by_backtrace(void) { sink_n = backtrace(sink, 256); }
static void by_libunwind(void) { sink_n = unw_backtrace_fn(sink, 256); }
static void by_fp_walk(void) {
  void **fp = __builtin_frame_address(0);
  int n = 0;
  while (fp && n < 256 && fp[1]) {
    sink[n++] = fp[1];
    void **next = fp[0];
    if (next <= fp) /* the outermost frame, or no frame pointer */
      break;
    fp = next;
  }
  sink_n = n;
}
static void by_native_path(void) { sink[0] = cp_native_path(cp_cct_root()); }
static void by_native_path_bt(void) {
  static int set;
  if (!set)
    set = 1, cp_native_set_unwinder("backtrace");
  sink[0] = cp_native_path(cp_cct_root());
}

/* Recurses to `depth` and runs the probe `iters` times there. */
__attribute__((noinline)) static double at_depth(int depth, probe_fn f,
                                                 long iters) {
  if (depth > 0) {
    double r = at_depth(depth - 1, f, iters);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return r;
  }
  struct timespec a, b;
  f(); /* warm-up: loads libgcc_s / caches */
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < iters; i++)
    f();
  clock_gettime(CLOCK_MONOTONIC, &b);
  return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / iters;
}

int main(int argc, char **argv) {
  int depth = argc > 1 ? atoi(argv[1]) : 20;
  long iters = argc > 2 ? atol(argv[2]) : 20000;
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (h)
    *(void **)&unw_backtrace_fn = dlsym(h, "unw_backtrace");
  const struct {
    const char *name;
    probe_fn f;
  } probes[] = {{"backtrace", by_backtrace},
                {"libunwind", unw_backtrace_fn ? by_libunwind : NULL},
                {"fp_walk", by_fp_walk},
                {"native_path(libunwind)", unw_backtrace_fn ? by_native_path : NULL},
                {"native_path(backtrace)", by_native_path_bt}};
  for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
    if (!probes[i].f)
      continue;
    double ns = at_depth(depth, probes[i].f, iters);
    printf("RESULT native_unwind %s depth %d: %.0f ns per capture (%d frames)\n",
           probes[i].name, depth, ns, sink_n);
  }
  return 0;
}
