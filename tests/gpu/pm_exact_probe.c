/* tests/gpu/pm_exact_probe.c -- pmsampling:exact's range-profiler side
 * (src/backend/cupti/pm_exact*.c) on a real GPU without the CUPTI backend
 * or a mode string: links the build's libcproton.a, opens the driver and
 * CUPTI through the loader, starts the mode with the default counters and
 * a 4-range image, and launches a compute-bound and a memory-bound kernel
 * alternately under two scopes, calling the mode's launch hook around each
 * launch as the driver-API callback does. A session on backend "none"
 * receives the values; its profile is read by tests/gpu/pmexact.sh.
 * Prints RESULT/PASS/FAIL lines: CUPTI's refusals, the counts, and the
 * wall time of the launches with the mode on and off (each synchronised).
 * Usage: pm_exact_probe PROFILE_STEM. Not part of cproton. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/cupti/loader.h"
#include "backend/cupti/pm_exact.h"
#include "core/session.h"
#include "cproton/cproton.h"

#define LAUNCHES 10 /* of each kernel */
#define N_COPY (64u << 20)
#define SPIN_ITERS 200000u

static const char *ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry pmx_spin(.param .u64 p, .param .u32 n) {\n"
    " .reg .f32 %f<3>; .reg .b32 %r<6>; .reg .pred %q; .reg .b64 %d<3>;\n"
    " mov.f32 %f1, 0f3F800000; mov.u32 %r1, 0; ld.param.u32 %r2, [n];\n"
    "L1: fma.rn.f32 %f1, %f1, 0f3F7FFFFF, 0f3F800000; add.u32 %r1, %r1, 1;\n"
    " setp.lt.u32 %q, %r1, %r2; @%q bra L1;\n"
    " ld.param.u64 %d1, [p]; cvta.to.global.u64 %d1, %d1;\n"
    " mov.u32 %r3, %tid.x; mov.u32 %r4, %ctaid.x; mov.u32 %r5, %ntid.x;\n"
    " mad.lo.u32 %r3, %r4, %r5, %r3; mul.wide.u32 %d2, %r3, 4;\n"
    " add.u64 %d1, %d1, %d2; st.global.f32 [%d1], %f1; ret; }\n"
    ".visible .entry pmx_copy(.param .u64 dst, .param .u64 src) {\n"
    " .reg .f32 %f<2>; .reg .b32 %r<4>; .reg .b64 %d<6>;\n"
    " ld.param.u64 %d1, [dst]; ld.param.u64 %d2, [src];\n"
    " cvta.to.global.u64 %d1, %d1; cvta.to.global.u64 %d2, %d2;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;\n"
    " mad.lo.u32 %r1, %r2, %r3, %r1; mul.wide.u32 %d3, %r1, 4;\n"
    " add.u64 %d4, %d2, %d3; ld.global.f32 %f1, [%d4];\n"
    " add.u64 %d5, %d1, %d3; st.global.f32 [%d5], %f1; ret; }\n";

static cp_loader_api api;
static struct {
  __typeof__(&cuInit) init;
  __typeof__(&cuModuleLoadData) load;
  __typeof__(&cuModuleGetFunction) get;
  __typeof__(&cuMemAlloc_v2) alloc;
  __typeof__(&cuLaunchKernel) launch;
} cu;
static CUcontext ctx;
static CUfunction spin, copy;
static CUdeviceptr a, b;
static unsigned n_spin = SPIN_ITERS;
static uint32_t corr;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  cu.init = (__typeof__(cu.init))dlsym(h, "cuInit");
  cu.load = (__typeof__(cu.load))dlsym(h, "cuModuleLoadData");
  cu.get = (__typeof__(cu.get))dlsym(h, "cuModuleGetFunction");
  cu.alloc = (__typeof__(cu.alloc))dlsym(h, "cuMemAlloc_v2");
  cu.launch = (__typeof__(cu.launch))dlsym(h, "cuLaunchKernel");
  CUdevice dev;
  CUmodule m;
  return !cu.init || cu.init(0) || api.cuDeviceGet(&dev, 0) ||
         api.cuDevicePrimaryCtxRetain(&ctx, dev) || api.cuCtxSetCurrent(ctx) ||
         cu.load(&m, ptx) || cu.get(&spin, m, "pmx_spin") ||
         cu.get(&copy, m, "pmx_copy") || cu.alloc(&a, N_COPY * 4) ||
         cu.alloc(&b, N_COPY * 4);
}

static cp_cupti_state st;

/* One launch of `which` (0 spin, 1 copy) under `scope`, bracketed by the
 * mode's hook when it is on, as callbacks.c's on_launch calls it at the
 * launch's API enter and exit. 0 or a CUDA error. */
static int launch(int which, const char *scope) {
  void (*hook)(void *, uint32_t, const char *, const cp_launch_site *, int) =
      atomic_load(&st.hooks.launch_bracket);
  const char *name = which ? "pmx_copy" : "pmx_spin";
  void *spin_args[] = {&a, &n_spin}, *copy_args[] = {&b, &a};
  cp_launch_site site;
  cproton_scope_enter(scope, NULL);
  cp_session_capture(&site);
  corr++;
  if (hook)
    hook(ctx, corr, name, &site, 1);
  CUresult r = which ? cu.launch(copy, N_COPY / 1024, 1, 1, 1024, 1, 1, 0,
                                 NULL, copy_args, NULL)
                     : cu.launch(spin, 132 * 4, 1, 1, 256, 1, 1, 0, NULL,
                                 spin_args, NULL);
  if (hook)
    hook(ctx, corr, name, NULL, 0);
  cproton_scope_exit(scope);
  return (int)r;
}

/* LAUNCHES of each kernel, alternating; wall time with a final sync. */
static int launches(double *ms) {
  double t0 = now_ms();
  for (int i = 0; i < LAUNCHES; i++)
    if (launch(0, "compute") || launch(1, "memory"))
      return 1;
  api.cuCtxSynchronize();
  *ms = now_ms() - t0;
  return 0;
}

static void counts(void) {
  cp_pm_exact_counts c;
  cp_pm_exact_counts_get(&c);
  printf("RESULT pm_exact_probe ranges=%llu delivered=%llu cupti_dropped=%llu "
         "unmatched=%llu unmeasured=%llu graph=%llu not_evaluated=%llu "
         "not_stored=%llu name_mismatch=%llu\n",
         (unsigned long long)c.ranges, (unsigned long long)c.delivered,
         (unsigned long long)c.cupti_dropped, (unsigned long long)c.unmatched,
         (unsigned long long)c.unmeasured, (unsigned long long)c.graph_ranges,
         (unsigned long long)c.eval_errors,
         (unsigned long long)c.deliver_errors,
         (unsigned long long)c.name_mismatch);
  int ok = c.delivered == 2 * LAUNCHES && c.ranges == 2 * LAUNCHES;
  printf("%s pm_exact_probe_counts\n", ok ? "PASS" : "FAIL");
}

/* The mode on the real range profiler: start, launches, flush, stop. */
static int profiled(const char *stem, double *ms) {
  int sid = -1;
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = stem;
  o.backend = "none";
  if (cproton_session_start(&o, &sid))
    return printf("FAIL pm_exact_probe session: %s\n", cproton_last_error());
  size_t n;
  const cp_pm_metric *m = cp_pm_metrics_defaults(&n);
  cp_pm_exact_options opt;
  cp_pm_exact_options_init(&opt);
  opt.ranges = 4; /* decoded when full, re-armed, several times */
  if (cp_pm_exact_start(&api, &st, m, n, &opt))
    return printf("FAIL pm_exact_probe start: %s\n", cproton_last_error());
  if (!atomic_load(&st.hooks.launch_bracket))
    return printf("FAIL pm_exact_probe: the mode did not start (warning above)\n");
  int rc = launches(ms);
  if (cp_pm_exact_flush())
    printf("FAIL pm_exact_probe flush: %s\n", cproton_last_error());
  counts();
  cp_pm_exact_stop();
  cproton_session_finalize(sid, NULL);
  return rc;
}

int main(int argc, char **argv) {
  cproton_log_set_handler(NULL, NULL, CPROTON_LOG_INFO);
  cp_cupti_config c;
  cp_cupti_config_from_env(&c);
  if (cp_loader_open(&c, &api) || driver())
    return printf("FAIL pm_exact_probe setup: %s\n", cproton_last_error()), 1;
  printf("RESULT pm_exact_probe cupti=%s\n", api.cupti_path);
  double off = 0, on = 0, warm;
  if (launches(&warm) || launches(&off) ||
      profiled(argc > 1 ? argv[1] : "pm_exact_probe", &on))
    return 1;
  printf("RESULT pm_exact_probe launches=%d off_ms=%.2f on_ms=%.2f "
         "ratio=%.1fx\n",
         2 * LAUNCHES, off, on, off > 0 ? on / off : 0);
  printf("PASS pm_exact_probe\n");
  return 0;
}
