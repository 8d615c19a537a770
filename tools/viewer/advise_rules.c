/* tools/viewer/advise_rules.c -- the advisor's rules as data: one row per
 * rule (id, the evidence groups it needs, what to collect when they are
 * missing, the check, the suggestion and the model of the gain), and the
 * per-architecture limits the occupancy model uses (docs/advisor.md has the
 * same table in words).
 *
 * Invariant: a check only reads its kernel's facts (NaN = unknown) and the
 * run's totals; it fires only on facts it has, fills the evidence it used
 * and states the saving of its row's model. Not a hot path. Called by
 * advise.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "viewer.h"

/* Per-SM limits (CUDA programming guide, "compute capabilities"). */
static const av_arch arches[] = {
    {"70", 65536, 98304, 64, 32},  {"75", 65536, 65536, 32, 16},
    {"80", 65536, 167936, 64, 32}, {"86", 65536, 102400, 48, 16},
    {"89", 65536, 102400, 48, 24}, {"90", 65536, 233472, 64, 32},
    {"100", 65536, 233472, 64, 32}};

const av_arch *av_arch_of(const char *arch) {
  for (size_t i = 0; arch && i < sizeof arches / sizeof *arches; i++)
    if (!strcmp(arch, arches[i].arch))
      return &arches[i];
  return NULL;
}

static double T(const av_kernel *k) { return k->f[AF_TIME]; }

static double first(double a, double b) { return isnan(a) ? b : a; }

static void ev(av_finding *f, const char *name, double v) {
  if (f->n_ev < AV_MAX_EVIDENCE)
    f->ev[f->n_ev++] = (av_evidence){name, v, NULL};
}

static void evs(av_finding *f, const char *name, const char *s) {
  if (f->n_ev < AV_MAX_EVIDENCE && s)
    f->ev[f->n_ev++] = (av_evidence){name, 0, s};
}

/* Share of the targeted stalls a fix removes: the stall-hiding rules'
 * one factor, fitted on the H100 benchmark's measured pairs (bank_conflicts,
 * not_pipelined; docs/advisor.md, "Gain models"). */
#define H_STALL 0.8

/* What stall shares are relative to: the stalled samples (the sum of the
 * stall reasons) when the profile has them, else all samples. num_samples
 * also counts the not-issued samples (1.0-2.0x the stalled ones on the H100
 * profiles), so shares of it varied with the kernel and never reached 50%. */
static double stall_base(double samples, double stalled) {
  return stalled > 0 ? stalled : samples;
}

static double share(const av_kernel *k, av_fact stall) {
  double s = stall_base(k->f[AF_SAMPLES], k->f[AF_STALLED]), v = k->f[stall];
  return s > 0 && !isnan(v) ? v / s : 0;
}

static double regs_of(const av_kernel *k) {
  return first(k->f[AF_REGS], k->f[AF_T_REGS]);
}

static double threads_of(const av_kernel *k) {
  return first(k->f[AF_BLOCK], k->f[AF_T_WARPS] * 32);
}

static double smem_of(const av_kernel *k) {
  double s = k->f[AF_SMEM_S], d = k->f[AF_SMEM_D];
  if (isnan(s) && isnan(d))
    return first(k->f[AF_T_SHARED], 0);
  return (isnan(s) ? 0 : s) + (isnan(d) ? 0 : d);
}

static double sms_of(const av_kernel *k) {
  return k->has_dev && k->dev.num_sms > 0 ? k->dev.num_sms : NAN;
}

int av_occupancy(const av_kernel *k, double *occ, double *blocks_per_sm,
                 const char **limiter, double *occ_fix) {
  const av_arch *a = k->has_dev ? av_arch_of(k->dev.arch) : NULL;
  double regs = regs_of(k), threads = threads_of(k), smem = smem_of(k);
  if (!a || isnan(regs) || !(threads > 0) || threads > 1024)
    return 0;
  double warps = ceil(threads / 32);
  double per_warp = ceil(regs * 32 / 256) * 256;
  double lim[4] = {floor(a->max_warps / warps),
                   per_warp > 0 ? floor(floor(a->regs_per_sm / per_warp) / warps)
                                : INFINITY,
                   smem > 0 ? floor(a->smem_per_sm / (smem + 1024)) : INFINITY,
                   a->max_blocks};
  static const char *const names[4] = {"warps", "regs", "smem", "blocks"};
  int m = 0;
  for (int i = 1; i < 4; i++)
    m = lim[i] < lim[m] ? i : m;
  double next = INFINITY;
  for (int i = 0; i < 4; i++)
    next = i != m && lim[i] < next ? lim[i] : next;
  if (lim[m] < 1)
    return 0; /* the block does not fit: the facts are inconsistent */
  *occ = lim[m] * warps / a->max_warps;
  *occ_fix = fmin(next, a->max_warps / warps) * warps / a->max_warps;
  *blocks_per_sm = lim[m];
  *limiter = names[m];
  return 1;
}

/* Minimal FLOP time and byte time at the device's peaks (ns); 0 when the
 * device or its peaks are unknown. A `flops` metric without a width counts
 * as 16-bit. */
static int roofline(const av_kernel *k, double *ft, double *bt) {
  static const int widths[] = {16, 8, 16, 32, 64};
  double peak, bps;
  *ft = 0, *bt = 0;
  if (!k->has_dev || vw_device_peaks("", &k->dev, 16, &peak, &bps) || !(bps > 0))
    return 0;
  for (int w = 0; w < 5; w++) {
    double v = k->f[AF_FLOPS + w];
    if (!isnan(v) && !vw_device_peaks("", &k->dev, widths[w], &peak, &bps) &&
        peak > 0)
      *ft += v / peak * 1e9;
  }
  *bt = isnan(k->f[AF_BYTES]) ? 0 : k->f[AF_BYTES] / bps * 1e9;
  return *ft > 0 || *bt > 0;
}

/* Local memory per thread: the larger of CUPTI's (which leaves out the
 * stack frame) and the cubin's stack frame, else Triton's PTX `.local`. */
static double local_of(const av_kernel *k) {
  double cupti = k->f[AF_LOCAL], stack = k->f[AF_STACK];
  if (isnan(cupti) && isnan(stack))
    return k->f[AF_T_LOCAL];
  return fmax(isnan(cupti) ? 0 : cupti, isnan(stack) ? 0 : stack);
}

/* LG throttle share of the stalled samples from which a kernel with local
 * memory is taken to be bound by it: LG throttle is the queue of local and
 * global memory instructions being full (what spills and run-time indexed
 * arrays cause). 41% on the H100's local-array kernel; every other kernel
 * of that benchmark, the spilling softmax included, <= 3.5%. */
#define SPILL_LG 0.12

static int spills(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  double sp = k->f[AF_T_SPILLS], regs = regs_of(k);
  double local = local_of(k);
  if (!(sp > 0) && !(local > 0))
    return 0;
  double r = regs > 0 ? regs : 255, lg = share(k, AF_S_LG);
  double frac = fmin(0.5, sp > 0 ? sp / (sp + r) : local / (local + 4 * r));
  if (lg >= SPILL_LG) /* measured: local traffic fills the LSU queue */
    frac = fmin(1, share(k, AF_S_LSB) + lg) * H_STALL;
  f->saving = T(k) * frac;
  ev(f, "spills", first(sp, 0)), ev(f, "local_bytes", first(local, 0));
  ev(f, "regs", first(regs, 0));
  if (lg >= SPILL_LG)
    ev(f, "lg_throttle_share", lg), ev(f, "long_scoreboard_share",
                                       share(k, AF_S_LSB));
  if (sp > 0)
    snprintf(f->diag, sizeof f->diag, "%.0f registers spilled (%.0f bytes of "
             "local memory per thread) at %.0f registers per thread: spilled "
             "values round-trip through local memory", sp, first(local, 0),
             first(regs, 0));
  else /* a stack frame without spills: an array indexed at run time */
    snprintf(f->diag, sizeof f->diag, "%.0f bytes of local memory per thread "
             "(a stack frame: arrays indexed at run time, or spills) at %.0f "
             "registers per thread: each access goes through the memory "
             "hierarchy instead of registers", local, first(regs, 0));
  return 1;
}

/* Saved share of an occupancy fix (Little's law): the latency-bound share
 * of the time shrinks with the warps that hide it, occ/occ_fix. */
static double occupancy_gain(double occ, double fix, double lat) {
  return (1 - occ / fix) * fmin(1, lat);
}

/* Occupancy limited by `what` ("regs" or "smem"). Software-pipelined
 * tensor-core kernels trade occupancy for registers and stages on purpose. */
static int occupancy(const av_kernel *k, av_finding *f, const char *what) {
  double occ, bps, fix;
  const char *lim;
  const char *mma = k->s[AS_MMA];
  if (!av_occupancy(k, &occ, &bps, &lim, &fix) || strcmp(lim, what) ||
      occ >= 0.5 || !(fix > occ) || av_hwm_dram_saturated(k))
    return 0; /* DRAM already saturated (measured): more warps cannot help */
  if (mma && strcmp(mma, "fma") && strcmp(mma, "none") &&
      k->f[AF_T_STAGES] >= 3)
    return 0;
  double grid = k->f[AF_GRID], sms = sms_of(k);
  if (grid < sms * bps * 2) /* fewer blocks than slots: not the limit */
    return 0;
  double lat = k->f[AF_SAMPLES] > 0 ? share(k, AF_S_LSB) + share(k, AF_S_LG) +
                                          share(k, AF_S_SSB)
                                    : 0.5;
  f->saving = T(k) * occupancy_gain(occ, fix, lat);
  ev(f, "regs", first(regs_of(k), 0)), ev(f, "smem_bytes", smem_of(k));
  ev(f, "threads", threads_of(k)), ev(f, "occupancy", occ);
  ev(f, "occupancy_fixed", fix), ev(f, "latency_share", lat);
  snprintf(f->diag, sizeof f->diag, "theoretical occupancy %.0f%% (%.0f "
           "blocks per SM), limited by %s; %.0f%% without that limit",
           occ * 100, bps, !strcmp(what, "regs") ? "registers per thread"
                                                 : "shared memory per block",
           fix * 100);
  return 1;
}

/* A kernel that spills is register-limited because of the spills: the
 * spills finding names that cause and the same change (fewer registers per
 * thread), so this one stays silent (tr_spills on the H100: both fired, and
 * the occupancy estimate, 2.3x, outranked the spills one). */
static int occupancy_regs(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  if (k->f[AF_T_SPILLS] > 0 || local_of(k) > 0)
    return 0;
  return occupancy(k, f, "regs");
}

static int occupancy_smem(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  return occupancy(k, f, "smem");
}

static int small_grid(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  double grid = k->f[AF_GRID], sms = sms_of(k);
  double avg = T(k) / (k->f[AF_COUNT] > 0 ? k->f[AF_COUNT] : 1);
  if (!(grid > 0) || !(grid < sms) || avg < 10000)
    return 0;
  f->saving = T(k) * 0.9 * (1 - grid / sms);
  ev(f, "grid", grid), ev(f, "sms", sms), ev(f, "avg_time_ns", avg);
  snprintf(f->diag, sizeof f->diag, "%.0f blocks on %.0f SMs: %.0f SMs idle "
           "for the whole kernel", grid, sms, sms - grid);
  return 1;
}

static int tail_wave(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  double occ, bps, fix, grid = k->f[AF_GRID], sms = sms_of(k);
  const char *lim;
  if (!(grid > 0) || isnan(sms) || !av_occupancy(k, &occ, &bps, &lim, &fix))
    return 0;
  double waves = grid / (sms * bps), full = ceil(waves);
  if (waves <= 1 || waves / full > 0.85)
    return 0;
  f->saving = T(k) * (1 - waves / full);
  ev(f, "grid", grid), ev(f, "blocks_per_sm", bps), ev(f, "sms", sms);
  ev(f, "waves", waves);
  snprintf(f->diag, sizeof f->diag, "%.2f waves of %.0f blocks: the last "
           "wave fills %.0f%% of the GPU", waves, sms * bps,
           (waves - floor(waves)) * 100);
  return 1;
}

/* Long-scoreboard share of the stalled samples: between the pipelined
 * tensor-core kernels' largest (22.5%, cuBLAS; tuned Triton matmul 19.9%)
 * and the one-stage matmul's 55.4% on the H100 (docs/advisor.md). */
#define NOT_PIPELINED_LSB 0.35

static int not_pipelined(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  double lsb = share(k, AF_S_LSB);
  if (!(k->f[AF_T_STAGES] <= 1) || lsb < NOT_PIPELINED_LSB)
    return 0;
  f->saving = T(k) * lsb * H_STALL;
  ev(f, "num_stages", k->f[AF_T_STAGES]), ev(f, "long_scoreboard_share", lsb);
  snprintf(f->diag, sizeof f->diag, "num_stages %.0f and %.0f%% of the "
           "stalled samples wait on global loads (long scoreboard): loads are not "
           "overlapped with compute", k->f[AF_T_STAGES], lsb * 100);
  return 1;
}

/* Drain share of the stalled samples from which a kernel's stores are
 * taken as scattered: warps that exit wait for their stores to drain, and
 * a warp's scattered store is up to 32 sector writes instead of 4. Between
 * the coalesced H100 benchmark kernels' largest (23%, PyTorch's vectorized
 * elementwise kernel; tuned vector add 20%) and the strided kernel's 44%,
 * at about their geometric middle (docs/advisor.md, "Thresholds"). */
#define STORE_DRAIN 0.32
#define SECTOR_BITS 256.0 /* 32 bytes: what a warp's access is served in */

/* Narrow loads: the line waiting most on global loads (long scoreboard)
 * holds >= 20% of the samples, >= 50% of them on the long scoreboard, with
 * loads <= 32 bits (or of unknown width). Returns the saved share. */
static double narrow_loads(const av_kernel *k) {
  double s = k->f[AF_SAMPLES], ld = k->f[AF_T_LD];
  double line = s > 0 ? k->mem_samples / s : 0;
  /* of all the line's samples, not the stalled ones: on the H100 the hot
   * lines of coalesced 128-bit loads held 61-95% of their stalled samples on
   * the long scoreboard, so that share cannot tell coalesced from not */
  double lsb = k->mem_samples > 0 ? k->mem_lsb / k->mem_samples : 0;
  if (line < 0.2 || lsb < 0.5 || ld > 32)
    return 0;
  return line * lsb * (isnan(ld) ? 0.4 : 0.6);
}

/* Scattered accesses (drain >= STORE_DRAIN, stores <= 32 bits or unknown):
 * each access uses width/SECTOR_BITS of the sector it moves, so the time
 * waiting on memory (long scoreboard + drain) shrinks by that factor. */
static double scattered(const av_kernel *k) {
  double st = k->f[AF_T_ST], drain = share(k, AF_S_DRAIN);
  if (drain < STORE_DRAIN || st > 32)
    return 0;
  double bits = isnan(st) ? 32 : st;
  return fmin(1, share(k, AF_S_LSB) + drain) * (1 - bits / SECTOR_BITS);
}

static int uncoalesced(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  double narrow = narrow_loads(k), scat = scattered(k);
  if (!(narrow > 0) && !(scat > 0))
    return 0;
  f->saving = T(k) * fmax(narrow, scat);
  double s = k->f[AF_SAMPLES];
  double line = s > 0 ? k->mem_samples / s : 0;
  double lsb = k->mem_samples > 0 ? k->mem_lsb / k->mem_samples : 0;
  evs(f, "line", k->mem_line), ev(f, "line_share", line);
  ev(f, "line_long_scoreboard", lsb), ev(f, "drain_share", share(k, AF_S_DRAIN));
  if (!isnan(k->f[AF_T_LD]))
    ev(f, "ld_bits", k->f[AF_T_LD]);
  if (!isnan(k->f[AF_T_ST]))
    ev(f, "st_bits", k->f[AF_T_ST]);
  if (scat >= narrow)
    snprintf(f->diag, sizeof f->diag, "%.0f%% of the stalled samples are "
             "warps at exit waiting for their stores to drain (and %.0f%% "
             "wait on global loads): scattered, uncoalesced accesses that "
             "move a whole sector per element", share(k, AF_S_DRAIN) * 100,
             share(k, AF_S_LSB) * 100);
  else
    snprintf(f->diag, sizeof f->diag, "%.0f%% of the samples sit on the "
             "line waiting most on global memory, %.0f%% of them on the long "
             "scoreboard%s", line * 100, lsb * 100,
             isnan(k->f[AF_T_LD]) ? "" : ", and the widest global load is "
                                         "32 bits or less");
  return 1;
}

/* Share of a kernel's time that compute could explain (1 without data). */
static double compute_share(const av_kernel *k) {
  double ft, bt;
  return roofline(k, &ft, &bt) && ft + bt > 0 ? ft / fmax(ft, bt) : 1;
}

static int no_tensor_cores(const av_kernel *k, const av_ctx *c,
                           av_finding *f) {
  (void)c;
  if (!k->s[AS_MMA] || strcmp(k->s[AS_MMA], "fma"))
    return 0;
  double cs = compute_share(k), issue = share(k, AF_S_SEL) +
                                       share(k, AF_S_MATH);
  /* measured: the samples issuing (selected) or waiting on the math pipe
   * are the FMA work tensor cores take over; the operand loads from shared
   * memory (short scoreboard), barriers and dispatch stay */
  if (k->f[AF_SAMPLES] > 0 && k->f[AF_STALLED] > 0)
    cs = fmin(cs, issue);
  f->saving = T(k) * 0.75 * cs;
  evs(f, "mma", k->s[AS_MMA]), ev(f, "compute_share", cs);
  snprintf(f->diag, sizeof f->diag, "the kernel's dot runs on FMA units, "
           "not tensor cores");
  return 1;
}

static int old_mma(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  if (!k->s[AS_MMA] || strcmp(k->s[AS_MMA], "mma") || !k->has_dev ||
      atoi(k->dev.arch) < 90)
    return 0;
  double cs = compute_share(k);
  f->saving = T(k) * 0.3 * cs;
  evs(f, "mma", "mma"), evs(f, "arch", k->dev.arch);
  ev(f, "compute_share", cs);
  snprintf(f->diag, sizeof f->diag, "the dot uses mma.sync (MMA v2) on an "
           "sm_%s device, where wgmma (MMA v3) is faster", k->dev.arch);
  return 1;
}

/* MIO throttle + short scoreboard share of the stalled samples: between
 * the largest of every other H100 benchmark kernel (30.4%, the FMA matmul;
 * tuned softmax 25.0%) and the conflicted transpose's 54.5%. */
#define BANK_SHARE 0.40

static int bank_conflicts(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  double s = share(k, AF_S_MIO) + share(k, AF_S_SSB);
  if (s < BANK_SHARE)
    return 0;
  f->saving = T(k) * s * H_STALL;
  ev(f, "mio_throttle_share", share(k, AF_S_MIO));
  ev(f, "short_scoreboard_share", share(k, AF_S_SSB));
  snprintf(f->diag, sizeof f->diag, "%.0f%% of the stalled samples wait on shared "
           "memory (MIO throttle, short scoreboard): likely bank conflicts",
           s * 100);
  return 1;
}

#define LAUNCH_NS 4000.0 /* GPU idle per eager launch (CPU launch cost) */
/* A Triton kernel is launched from Python through Triton's launcher: a tiny
 * one took 11.1-12.6 us per launch without a profiler (docs/benchmarks.md,
 * the launch-overhead benchmark of issue 4); the kernel's triton.* facts
 * say which launcher it had. */
#define TRITON_LAUNCH_NS 11000.0
#define GRAPH_NS 1000.0  /* per kernel replayed in a CUDA graph */

static int launch_bound(const av_kernel *k, const av_ctx *c, av_finding *f) {
  (void)c;
  double n = k->f[AF_COUNT], avg = T(k) / (n > 0 ? n : 1);
  double launch = isnan(k->f[AF_T_WARPS]) ? LAUNCH_NS : TRITON_LAUNCH_NS;
  if (!(n >= 100) || avg >= launch)
    return 0;
  f->base = n * launch;
  f->saving = n * (launch - fmax(avg, GRAPH_NS));
  ev(f, "count", n), ev(f, "avg_time_ns", avg), ev(f, "launch_ns", launch);
  snprintf(f->diag, sizeof f->diag, "%.0f launches of %.2f us each: shorter "
           "than a launch, so the GPU waits on the CPU between them",
           n, avg / 1e3);
  return 1;
}

/* Host synchronizations at one calling context: the host waits until the
 * GPU is done, so the GPU then idles for at least a launch before the next
 * kernel; without them the host would run ahead. The base is the profile's
 * kernel time plus those idle launches. A few (end of a step) are normal. */
static int host_sync(const av_kernel *k, const av_ctx *c, av_finding *f) {
  double n = k->f[AF_SYNCS], wait = first(k->f[AF_SYNC_NS], 0);
  if (!(n >= 10) || !(c->total_time > 0))
    return 0;
  f->saving = n * LAUNCH_NS;
  f->base = c->total_time + f->saving;
  ev(f, "syncs", n), ev(f, "host_wait_ns", wait);
  ev(f, "kernel_time_ns", c->total_time);
  snprintf(f->diag, sizeof f->diag, "%.0f host synchronizations here "
           "(%.3f ms waiting for the GPU): after each the GPU idles until "
           "the host launches again", n, wait / 1e6);
  return 1;
}

/* A kernel launched as several compiled variants (kernel.variant_*, timed
 * by CUPTI per variant, facts of the name): pinning the fastest saves each
 * other launch's excess over its average. Only for a kernel at one call
 * path, so the variants did like work; an autotuner keyed on sizes that
 * picks another config per size at that one path still looks alike. */
static int variants_slower(const av_kernel *k, av_finding *f) {
  double n = k->f[AF_VAR_N], ns = k->f[AF_VAR_NS], best = k->f[AF_BEST_NS];
  if (k->frames != 1 || !(k->f[AF_VARIANTS] >= 2) || !(n > 0) || !(ns > 0) ||
      !(best > 0) ||
      ns / n < 1.1 * best)
    return 0;
  f->saving = T(k) * fmax(0, ns - n * best) / ns;
  ev(f, "variants", k->f[AF_VARIANTS]), ev(f, "avg_time_ns", ns / n);
  ev(f, "best_avg_time_ns", best), ev(f, "best_launches", k->f[AF_BEST_N]);
  ev(f, "best_threads", k->f[AF_BEST_THREADS]);
  ev(f, "best_smem_bytes", k->f[AF_BEST_SMEM]);
  snprintf(f->diag, sizeof f->diag, "%.0f compiled variants of this kernel "
           "ran: %.2f us per launch on average, the fastest (%.0f threads, "
           "%.0f bytes of shared memory per block; %.0f launches) %.2f us",
           k->f[AF_VARIANTS], ns / n / 1e3, k->f[AF_BEST_THREADS],
           k->f[AF_BEST_SMEM], k->f[AF_BEST_N], best / 1e3);
  return 1;
}

/* The fastest kernel of the same name with another Triton config, else
 * the fastest compiled variant of this one. */
static int autotune_slower(const av_kernel *k, const av_ctx *c,
                           av_finding *f) {
  const char *cfg = k->s[AS_CONFIG];
  double n = k->f[AF_COUNT] > 0 ? k->f[AF_COUNT] : 1, avg = T(k) / n;
  const av_kernel *best = NULL;
  double best_avg = avg;
  for (uint32_t i = 0; cfg && i < c->n_kernels; i++) {
    const av_kernel *o = &c->kernels[i];
    double on = o->f[AF_COUNT] > 0 ? o->f[AF_COUNT] : 1;
    if (o == k || o->dead || !o->s[AS_CONFIG] || !(o->f[AF_TIME] > 0) ||
        strcmp(o->name, k->name) || !strcmp(o->s[AS_CONFIG], cfg))
      continue;
    if (o->f[AF_TIME] / on < best_avg)
      best = o, best_avg = o->f[AF_TIME] / on;
  }
  if (!best || best_avg * 1.1 > avg)
    return variants_slower(k, f);
  f->saving = n * (avg - best_avg);
  evs(f, "config", cfg), ev(f, "avg_time_ns", avg);
  evs(f, "best_config", best->s[AS_CONFIG]), ev(f, "best_avg_time_ns", best_avg);
  snprintf(f->diag, sizeof f->diag, "this config takes %.2f us per launch; "
           "another config of the same kernel in the profile took %.2f us",
           avg / 1e3, best_avg / 1e3);
  return 1;
}

/* Below `limit` of the roofline on the bound side (memory: 1, compute: 0). */
static int roof(const av_kernel *k, av_finding *f, int memory) {
  double ft, bt;
  if (!roofline(k, &ft, &bt) || (memory ? bt < ft : ft <= bt))
    return 0;
  double need = memory ? bt : ft, ach = need / T(k);
  /* what well-tuned kernels reach: the tuned Triton matmul measured 70% of
   * the H100's dense 16-bit peak (docs/advisor.md) */
  double reach = memory ? 0.85 : 0.7;
  if (!memory && av_hwm_dram_saturated(k))
    return 0; /* measured: DRAM is the limit, not FLOP/s */
  int measured = av_hwm_roof(k, memory, &ach, f); /* measured beats model */
  if (ach >= 0.5)
    return 0;
  f->saving = T(k) - need / reach;
  double flops = 0; /* the count, not its time (ft) */
  for (int w = AF_FLOPS; w <= AF_FLOPS64; w++)
    flops += isnan(k->f[w]) ? 0 : k->f[w];
  ev(f, memory ? "bytes" : "flops", memory ? k->f[AF_BYTES] : flops);
  ev(f, "min_time_ns", need), ev(f, "roofline_fraction", ach);
  if (measured)
    snprintf(f->diag, sizeof f->diag, "%s-bound; measured %s throughput "
             "%.0f%% of peak (PM sampling)", memory ? "memory" : "compute",
             memory ? "DRAM" : "SM", ach * 100);
  else
    snprintf(f->diag, sizeof f->diag, "%s-bound at %.0f%% of the device's "
             "peak %s", memory ? "memory" : "compute", ach * 100,
             memory ? "DRAM bandwidth" : "tensor-core FLOP/s");
  return 1;
}

static int memory_roofline(const av_kernel *k, const av_ctx *c,
                           av_finding *f) {
  (void)c;
  return roof(k, f, 1);
}

static int compute_roofline(const av_kernel *k, const av_ctx *c,
                            av_finding *f) {
  (void)c;
  return roof(k, f, 0);
}

#define CONF_MODE "this cproton's CUPTI profile (kernel records) or hook=\"triton\""
#define CUPTI_MODE "this cproton's CUPTI profile (kernel records)"
#define SYNC_MODE "CPROTON_HOST_SYNCS=1 with this cproton's CUPTI backend"
#define TRITON_MODE "hook=\"triton\" with this cproton (compile facts)"
#define PCS_MODE "mode=\"pcsampling\" (a second profile may hold it)"
#define ROOF_MODE "launch_metadata returning flops/bytes (hook=\"triton\") or " \
                  "proton metrics flops*/bytes on the kernel's scope"

const av_rule av_rules[] = {
    {"spills", AG_TIME | AG_CONF, "spilled registers or local memory per kernel",
     CONF_MODE, spills,
     "lower register pressure: smaller tiles (BLOCK_*), fewer num_stages or "
     "more num_warps in Triton; fewer live values or __launch_bounds__ in CUDA C; "
     "a per-thread array indexed at run time: shared memory, or indices known "
     "at compile time (unrolled loops) so it stays in registers",
     "time x min(50%, spills / (spills + regs)); bytes: local / (local + 4 regs); "
     "LG throttle >= 12% of the stalled samples: time x (long scoreboard + LG "
     "throttle share) x 0.8", 0},
    {"occupancy_regs", AG_TIME | AG_CONF, "registers and block size per kernel",
     CONF_MODE, occupancy_regs,
     "fewer registers per thread: smaller BLOCK_* or more num_warps in Triton, "
     "__launch_bounds__(threads, blocks) or -maxrregcount in CUDA C",
     "time x (1 - occ/occ_fix) x latency share of the stalled samples (0.5 without samples)", 0},
    {"occupancy_smem", AG_TIME | AG_CONF, "shared memory and block size per kernel",
     CONF_MODE, occupancy_smem,
     "less shared memory per block: fewer num_stages (each buffers one tile of "
     "each operand) or a smaller BLOCK_K",
     "time x (1 - occ/occ_fix) x latency share of the stalled samples (0.5 without samples)", 0},
    {"small_grid", AG_TIME | AG_CUPTI, "grid size and SM count", CUPTI_MODE,
     small_grid,
     "more, smaller blocks (smaller BLOCK_*), split-K / a split reduction, so "
     "every SM gets work",
     "time x 0.9 x (1 - blocks / SMs)", 0},
    {"tail_wave", AG_TIME | AG_CUPTI, "grid size, occupancy and SM count",
     CUPTI_MODE, tail_wave,
     "a grid of whole waves (blocks a multiple of SMs x blocks per SM), or a "
     "persistent kernel with one block per SM slot",
     "time x (1 - waves / ceil(waves))", 0},
    {"not_pipelined", AG_TIME | AG_TRITON | AG_PCS,
     "num_stages (Triton) and PC-sampling stall reasons",
     TRITON_MODE " and " PCS_MODE, not_pipelined,
     "num_stages=3 (2-4) so the next iteration's loads overlap this one's math",
     "time x long-scoreboard share of the stalled samples x 0.8", 0},
    {"uncoalesced", AG_TIME | AG_PCS | AG_LINES, "PC-sampling stall reasons per source line",
     PCS_MODE "; samples without source lines: build the kernel with line "
     "info (nvcc -lineinfo; Triton has it)", uncoalesced,
     "contiguous accesses along the fastest axis (stride 1 per thread), "
     "tl.max_contiguous/tl.multiple_of hints and aligned strides so loads "
     "become 128-bit; in CUDA C consecutive threads read consecutive addresses",
     "narrow loads: time x line share x line's long-scoreboard share x 0.6 (0.4 "
     "without load widths); scattered (drain >= 32% of the stalled samples): "
     "time x (long scoreboard + drain share) x (1 - store bits / 256)", 0},
    {"no_tensor_cores", AG_TIME | AG_TRITON, "the MMA kind of the kernel's dot",
     TRITON_MODE, no_tensor_cores,
     "tl.dot on fp16/bf16 (or tf32) operands with BLOCK_M/N/K >= 16 so it "
     "lowers to tensor cores",
     "time x 0.75 x compute share: the issuing + math-pipe share of the "
     "stalled samples when sampled, else of the roofline (1 without flops/bytes)", 0},
    {"old_mma", AG_TIME | AG_TRITON, "the MMA kind of the kernel's dot",
     TRITON_MODE, old_mma,
     "on Hopper a dot becomes wgmma with num_warps 4 or 8, BLOCK_M >= 64 and "
     "fp16/bf16/fp8 operands; Triton's remark 'MMA version 3 acceleration not "
     "applied' says why it did not",
     "time x 0.3 x compute share of the roofline (1 without flops/bytes)", 0},
    {"bank_conflicts", AG_TIME | AG_PCS, "PC-sampling stall reasons", PCS_MODE,
     bank_conflicts,
     "pad or swizzle shared tiles (e.g. one extra column), avoid a stride of "
     "32 words between a warp's threads",
     "time x (MIO throttle + short scoreboard share of the stalled samples) x 0.8", 0},
    {"launch_bound", AG_TIME, "kernel time and launch counts",
     "any tree profile with kernel times", launch_bound,
     "capture the loop in a CUDA graph (torch.cuda.graphs, "
     "triton.testing.do_bench_cudagraph) or fuse the short kernels",
     "count x (launch - max(avg, 1 us graph launch)), relative to count x "
     "launch; launch = 11 us for a Triton kernel (Python launcher), else 4 us", 0},
    {"host_sync", AG_SYNC, "host synchronizations per calling context "
     "(host_syncs)", SYNC_MODE, host_sync,
     "remove synchronizing calls (.item(), .cpu(), torch.cuda.synchronize) "
     "from the loop",
     "syncs x 4 us (a launch the GPU waits for after each), relative to "
     "the profile's kernel time plus that", 0},
    {"autotune_slower", AG_TIME | AG_CONF,
     "Triton configs (triton.config) of kernels seen several times, or the "
     "time per compiled variant (kernel.variant_*)",
     CUPTI_MODE " or " TRITON_MODE, autotune_slower,
     "pin the faster config (autotune key, or the config seen in the profile; "
     "the fastest variant's threads = num_warps x 32)",
     "count x (avg - the fastest other config's avg); variants: time x "
     "(variant time - launches x the fastest variant's avg) / variant time", 0},
    {"memory_roofline", AG_TIME | AG_ROOF, "bytes moved per kernel",
     ROOF_MODE, memory_roofline,
     "coalesced, vectorized accesses, fewer passes over memory (fuse with "
     "the producer/consumer), larger blocks per load",
     "time - bytes / (0.85 x peak DRAM bandwidth)", 0},
    {"compute_roofline", AG_TIME | AG_ROOF, "FLOPs per kernel", ROOF_MODE,
     compute_roofline,
     "tensor-core friendly tiles (BLOCK_M/N >= 128, BLOCK_K 64), more "
     "num_stages, wgmma on Hopper",
     "time - flops / (0.7 x peak tensor-core FLOP/s); an upper bound, ranked after cause findings",
     1},
};

const int av_n_rules = (int)(sizeof av_rules / sizeof *av_rules);
