/* tools/viewer/advise.h -- the advisor's internal model (docs/advisor.md):
 * one av_kernel per kernel frame and call path, joined over the profiles
 * given; the facts the rules read (compile facts, time, roofline inputs,
 * PC-sampling stalls); the rule table; findings. Uses only the public
 * header <cproton/cproton.h>. */
#ifndef CPROTON_VIEWER_ADVISE_H
#define CPROTON_VIEWER_ADVISE_H

#include <stdint.h>
#include <stdio.h>

#include <cproton/cproton.h>

/* Numeric facts of a kernel; NaN when no profile holds them. The order is
 * the order of av_fact_names (advise.c). */
typedef enum av_fact {
  AF_REGS, AF_SMEM_S, AF_SMEM_D, AF_LOCAL, AF_GRID, AF_BLOCK, AF_CONFIGS,
  AF_T_WARPS, AF_T_STAGES, AF_T_CTAS, AF_T_SHARED, AF_T_REGS, AF_T_SPILLS,
  AF_T_TMA, AF_T_LD, AF_T_ST, AF_T_LOCAL, AF_STACK,
  AF_VARIANTS, AF_VAR_N, AF_VAR_NS, AF_BEST_NS, AF_BEST_N, AF_BEST_THREADS,
  AF_BEST_SMEM, /* compiled variants' launches and time (kernel.variant_*) */
  AF_N_STATIC, /* the facts above are per kernel: shared by name */
  AF_TIME = AF_N_STATIC, AF_COUNT, AF_FLOPS, AF_FLOPS8, AF_FLOPS16,
  AF_FLOPS32, AF_FLOPS64, AF_BYTES, AF_SYNCS, AF_SYNC_NS,
  AF_PM_NS, AF_PM_DRAM, AF_PM_SM, /* PM sampling: pm_sampled_ns, X*ns */
  AF_N_NODE, /* the facts above are metrics of the kernel frame */
  AF_SAMPLES = AF_N_NODE, AF_STALLED, AF_S_LSB, AF_S_SSB, AF_S_MIO, AF_S_LG,
  AF_S_BAR, AF_S_MATH, AF_S_WAIT, AF_S_SEL, AF_S_DRAIN,
  AF_N
} av_fact;

/* String facts. */
typedef enum av_sfact { AS_MMA, AS_REMARKS, AS_CONFIG, AS_N } av_sfact;

/* Which kinds of evidence a kernel (or the profiles) hold: a rule needs
 * all the groups of its row. */
enum {
  AG_TIME = 1, AG_CUPTI = 2, AG_TRITON = 4, AG_CONF = 8 /* CUPTI or Triton */,
  AG_PCS = 16, AG_ROOF = 32, AG_SYNC = 64 /* host synchronizations */,
  AG_LINES = 128 /* PC samples on source-line frames */
};

/* Per-SM limits of an architecture (advise_rules.c). */
typedef struct av_arch {
  const char *arch;
  double regs_per_sm, smem_per_sm, max_warps, max_blocks;
} av_arch;

typedef struct av_kernel {
  const char *name;
  const cproton_profile *p; /* where it was first seen (path, device) */
  uint32_t node;
  double f[AF_N];
  const char *s[AS_N];
  const char *hot_line; /* the source line with most samples */
  double hot_samples, hot_lsb;
  const char *mem_line; /* the source line with most long-scoreboard samples */
  double mem_samples, mem_lsb;
  uint64_t parent;  /* hash of the call path above the frame */
  uint64_t seen_in; /* bit i: profile i held the frame (i < 64) */
  int dead; /* joined into another kernel (a renamed frame): not judged */
  uint32_t frames; /* kernels (call paths) of this name in the profiles */
  cproton_device_info dev;
  int has_dev;
  int groups; /* AG_* */
  int host;   /* 1: a calling context with host synchronizations, no kernel */
} av_kernel;

#define AV_MAX_EVIDENCE 8

typedef struct av_evidence {
  const char *name;
  double v;      /* used when s is NULL */
  const char *s;
} av_evidence;

typedef struct av_finding {
  int rule;
  const av_kernel *k;
  double saving;    /* estimated ns saved */
  double base;      /* ns the speedup is relative to (the kernel's time) */
  int n_ev;
  av_evidence ev[AV_MAX_EVIDENCE];
  char diag[400];
} av_finding;

/* Context of a run: totals the rules and the output need. */
typedef struct av_ctx {
  double total_time; /* every kernel's time, for `share` */
  const av_kernel *kernels;
  uint32_t n_kernels;
} av_ctx;

/* A rule fills *f and returns 1 when it fires on k, else 0. */
typedef int (*av_check)(const av_kernel *k, const av_ctx *c, av_finding *f);

typedef struct av_rule {
  const char *id;
  int needs;            /* AG_* groups, all needed */
  const char *needs_txt; /* what is missing when unavailable */
  const char *mode;      /* how to collect it */
  av_check check;
  const char *suggestion, *model;
  int bound; /* 1: names no cause, only a distance to a peak (an upper
                bound on what the cause rules' fixes save): ranked after
                the cause findings (docs/advisor.md, "Ranking") */
} av_rule;

/* advise_rules.c: the table. */
extern const av_rule av_rules[];
extern const int av_n_rules;
const av_arch *av_arch_of(const char *arch);

/* advise_rules.c: theoretical occupancy (active warps / max warps) of k,
 * its blocks per SM and what limits it ("regs", "smem", "warps",
 * "blocks"); 0 when the facts are missing. */
int av_occupancy(const av_kernel *k, double *occ, double *blocks_per_sm,
                 const char **limiter, double *occ_fix);

/* advise_hwm.c: measured hardware metrics (PM sampling, issue 27).
 * av_hwm_measured: 1 and the kernel's measured value of counter fact
 * `which` (AF_PM_DRAM, AF_PM_SM) in percent, X*ns / pm_sampled_ns, when it
 * was sampled; else 0. av_hwm_dram_saturated: the measured DRAM throughput
 * is >= AV_DRAM_SATURATED percent (more occupancy or FLOPs cannot help).
 * av_hwm_roof: replaces *fraction (the model's fraction of the roof) with
 * the measured dram (memory) or sm (compute) throughput / 100 and adds it
 * to f's evidence as "measured_dram_throughput%" / "measured_sm_throughput%";
 * returns 1 when it did, 0 (nothing changed) without measurements. */
#define AV_DRAM_SATURATED 80.0
int av_hwm_measured(const av_kernel *k, av_fact which, double *pct);
int av_hwm_dram_saturated(const av_kernel *k);
int av_hwm_roof(const av_kernel *k, int memory, double *fraction,
                av_finding *f);

/* advise_out.c: text and JSON. */
void av_print_text(const av_finding *const *f, size_t n, const int *unavail,
                   const av_ctx *c, FILE *out);
void av_print_json(const av_finding *const *f, size_t n, const int *unavail,
                   const av_ctx *c, FILE *out);

/* The frames the advisor judges: kernel frames, and calling contexts
 * with host synchronizations (advise.c). */

/* advise.c: advice on n opened profiles to `out` (json: 1 for JSON).
 * Returns 0, or -1 with vw_errmsg set (out of memory). Never fails on a
 * profile's content: what is missing makes rules unavailable. */
int vw_advise(const cproton_profile *const *profiles, int n, int json,
              FILE *out);

/* util.c: the device's peak FLOP/s at `width` bits and bytes/s, as
 * Proton's specs.py; -1 (vw_errmsg) for unknown devices. */
int vw_device_peaks(const char *file, const cproton_device_info *d, int width,
                    double *flops, double *bps);

#endif
