/* backend/cupti/pcs_attr.h -- PC samples -> (function, line) -> calling
 * contexts (cp_pcs_*). Pure: no vendor call; tests feed it buffers in
 * CUPTI's documented layout (CUpti_PCSamplingData with its PC records).
 *
 *   range closed (flush, exact split)     concurrent: kernel records
 *   cp_pcs_add(buffer)                    cp_pcs_note_kernel(name, site, ns)
 *     each PC: line (pcs_lines), stall      weight of (function, site)
 *     reasons -> pending[fn, line, corr]    since the last attribution
 *                                         exact: launches (API enter)
 *                                         cp_pcs_note_launch(fn, site)
 *   cp_pcs_attribute(final)
 *     corr != 0 (a graph launch's own range): the launch's site (ring)
 *     corr == 0: split among the sites that ran the function
 *       since the last attribution, in proportion to their weight
 *       (cp_pcs_kernel_weight: kernel time x the SM sub-partitions the
 *       grid can occupy, since each sub-partition samples its warps);
 *       none yet: kept for the next attribution; at `final`, the last site
 *       seen for the function, else ROOT (counted unattributed)
 *
 * Each (site, kernel, line) gets Proton's metrics: num_samples,
 * num_stalled_samples and one stalled_<reason> per stall reason, on the
 * child "file:line@function" of the kernel node, or on the kernel node
 * when the line is unknown. Thread-safe (one mutex). */
#ifndef CP_BACKEND_CUPTI_PCS_ATTR_H
#define CP_BACKEND_CUPTI_PCS_ATTR_H

#include <cupti_pcsampling.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cupti/corr.h"
#include "backend/cupti/pcs_lines.h"
#include "core/session.h"

/* Proton's PC-sampling metrics, in its order. */
#define CP_PCS_METRICS(X)                                                      \
  X(num_samples) X(num_stalled_samples) X(stalled_branch_resolving)            \
  X(stalled_no_instruction) X(stalled_short_scoreboard) X(stalled_wait)        \
  X(stalled_long_scoreboard) X(stalled_tex_throttle) X(stalled_barrier)        \
  X(stalled_membar) X(stalled_imc_miss) X(stalled_mio_throttle)                \
  X(stalled_math_pipe_throttle) X(stalled_drain) X(stalled_lg_throttle)        \
  X(stalled_not_Selected) X(stalled_misc) X(stalled_dispatch_stall)            \
  X(stalled_sleeping) X(stalled_selected)
#define CP_PCS_N_METRICS 20
#define CP_PCS_MAX_STALLS 64

/* CUPTI's stall-reason indices -> metric slots (2.. of CP_PCS_METRICS). */
typedef struct cp_pcs_stalls {
  size_t n;
  uint32_t index[CP_PCS_MAX_STALLS];   /* CUPTI's index */
  uint8_t metric[CP_PCS_MAX_STALLS];   /* slot in CP_PCS_METRICS */
  uint8_t not_issued[CP_PCS_MAX_STALLS];
} cp_pcs_stalls;

/* Keeps the reasons whose CUPTI name (e.g.
 * "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued") contains a
 * metric's name; the first metric in Proton's order wins. Returns how many
 * were kept (the reasons to configure CUPTI with). */
size_t cp_pcs_stalls_build(const char *const *names, const uint32_t *indices,
                           size_t n, cp_pcs_stalls *out);

/* The metric name of slot `k` (0 .. CP_PCS_N_METRICS-1). */
const char *cp_pcs_metric_name(int k);

typedef struct cp_pcs cp_pcs;

typedef struct cp_pcs_stats {
  uint64_t samples;        /* samples in PC records */
  uint64_t with_line;      /* of those, mapped to a source line */
  uint64_t dropped;        /* CUPTI's droppedSamples (hardware buffer full) */
  uint64_t buffer_full;    /* drains that saw hardwareBufferFull */
  uint64_t non_user;       /* nonUsrKernelsTotalSamples */
  uint64_t unattributed;   /* delivered under ROOT: launch unknown */
  uint64_t apportioned;    /* concurrent samples split among >1 sites */
  uint64_t lost;           /* pending or site table full */
  uint64_t unknown_stall;  /* stall reason index not configured */
  uint64_t sites_full;     /* (function, site) pairs not kept: table full */
} cp_pcs_stats;

/* `pending` (fn, line, corr) entries and `sites` (fn, site) entries at most;
 * `corr` (the backend's ring, for exact mode) and `lines` are borrowed.
 * NULL when out of memory. */
cp_pcs *cp_pcs_new(size_t pending, size_t sites, cp_corr *corr,
                   cp_pcs_lines *lines);
void cp_pcs_free(cp_pcs *p);

/* Forgets pending samples, sites and counters (backend start). */
void cp_pcs_clear(cp_pcs *p);

/* A kernel of `name` ran under `site` with `weight` (record path; graph
 * kernels with their composed site). */
void cp_pcs_note_kernel(cp_pcs *p, const char *name,
                        const cp_launch_site *site, uint64_t weight);

/* Exact mode, at a launch's API enter: kernel function `fn` (an id of
 * cp_strtab_intern) is launched under `site`. Returns 1 without noting it
 * when `fn` ran under another site since the last attribution (the caller
 * closes the period first, so that no function has two sites in one
 * period), unless `force`; 0 when noted. -1: table full (counted; its
 * samples go to the function's other sites). */
int cp_pcs_note_launch(cp_pcs *p, uint32_t fn, const cp_launch_site *site,
                       int force);

/* At a launch's API enter: whether this launch of kernel function `fn` is
 * one of its first `limit` in the session, which run in a sampling range
 * of their own (counted here when it is). 0 when the table is full. */
int cp_pcs_take_first(cp_pcs *p, uint32_t fn, uint32_t limit);

/* The expected share of samples of one kernel run: `ns` x the SM
 * sub-partitions (4 per SM) its grid can keep busy, min(blocks x min(warps
 * per block, 4), 4 x sms). PC sampling takes one sample per sub-partition
 * and period, so a 32-block kernel on a 132-SM GPU gets ~1/4 the samples of
 * a full grid running as long. `sms` 0 or an unknown grid: `ns` (the time
 * rule). Pure. */
uint64_t cp_pcs_kernel_weight(uint64_t ns, uint64_t blocks, uint32_t threads,
                              uint32_t sms);

/* Accumulates one CUpti_PCSamplingData filled by cuptiPCSamplingGetData:
 * totalNumPcs records, each with stallReasonCount reasons. `corr` non-zero:
 * every record belongs to that launch (exact mode: a graph launch is a
 * range of its own); 0: the records' own correlationId (0 in continuous
 * mode). */
void cp_pcs_add(cp_pcs *p, const CUpti_PCSamplingData *d,
                const cp_pcs_stalls *stalls, uint32_t corr);

/* Delivers what can be attributed (rules above). Errors: the first
 * delivery error (counted as lost; the rest is still delivered). */
int cp_pcs_attribute(cp_pcs *p, int final);

/* Delivers only the samples tagged with a launch (`corr` non-zero at
 * cp_pcs_add): a range of its own closed mid-period in concurrent mode,
 * whose untagged samples wait for the period's kernel records. Errors as
 * cp_pcs_attribute. */
int cp_pcs_attribute_tagged(cp_pcs *p);

void cp_pcs_get_stats(cp_pcs *p, cp_pcs_stats *out);

#endif
