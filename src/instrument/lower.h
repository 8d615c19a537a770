/* instrument/lower.h -- PTX code for the ProtonGPU operations (cp_lower_*):
 * the kernel-entry prologue (init_ctx + segment_alloc), one record
 * (read_counter + circular_store) and the finalize before an exit; and the
 * helpers that instrument/lower_agg.c (in-kernel sums) shares with them. */
#ifndef CP_INSTRUMENT_LOWER_H
#define CP_INSTRUMENT_LOWER_H

#include <stddef.h>
#include <stdint.h>

#include "instrument/text.h"

typedef struct cp_lower_cfg {
  int counter;     /* cproton_counter */
  int buffer;      /* cproton_buffer_kind */
  int granularity; /* cproton_granularity */
  uint32_t n_units, seg_bytes, header_bytes, per_cta_bytes;
  uint32_t sample_mask; /* 0: every unit */
  uint32_t n_scopes;    /* scope ids 0 .. n_scopes-1 (in-kernel sums) */
  int aggregate;        /* in-kernel sums (lower_agg.c) instead of records */
  int flow_verified;    /* markers nest on every control-flow path
                           (cp_scope_table.flow_verified) */
  int one_dim;          /* the block is known to be 1-D (.reqntid N) */
  const char *param;    /* name of the buffer .param */
  size_t param_len;
  uint32_t n_instrs;    /* out: instructions emitted by the last call */
} cp_lower_cfg;

/* Register/shared declarations and the prologue. */
void cp_lower_prologue(cp_text *t, cp_lower_cfg *c);

/* One record of scope `scope` (start or end). */
void cp_lower_record(cp_text *t, cp_lower_cfg *c, uint32_t scope, int is_end);

/* The statement that replaces an exit: a branch to the kernel's one
 * finalize block, guarded like the exit when `pred` is not NULL. */
void cp_lower_exit_branch(cp_text *t, const char *pred, size_t pred_len, int pred_neg);

/* The kernel's one finalize block ($cpr_fin), placed before the body's
 * closing brace and ending in `ret`: every exit branches there, and a body
 * that falls off its end falls into it. One block per kernel keeps the
 * output small and ptxas fast however many exits there are. */
void cp_lower_finalize(cp_text *t, cp_lower_cfg *c);

/* In-kernel sums (instrument/lower_agg.c): the same three places, with
 * per-scope totals in registers instead of records (cfg->n_scopes scopes,
 * per_cta_bytes = one slot). */
void cp_lower_agg_prologue(cp_text *t, cp_lower_cfg *c);
void cp_lower_agg_record(cp_text *t, cp_lower_cfg *c, uint32_t scope, int is_end);
void cp_lower_agg_finalize(cp_text *t, cp_lower_cfg *c);

/* ---- shared with instrument/lower_agg.c ---- */

/* Emits one instruction (printf format, no tab or newline) and counts it. */
void cp_lower_ins(cp_text *t, cp_lower_cfg *c, const char *fmt, ...) CP_PRINTF(3, 4);

/* Linear thread id into %cpr_tid and linear CTA id into %cpr_cta (uses
 * %cpr_t, %cpr_u, %cpr_n). */
void cp_lower_ids(cp_text *t, cp_lower_cfg *c);

/* %cpr_on (this thread records: lane 0 of a sampled unit's first warp),
 * %cpr_first (thread 0), %cpr_unit and %cpr_slot (its unit's index among
 * the sampled ones), from %cpr_tid. */
void cp_lower_unit(cp_text *t, cp_lower_cfg *c);

/* log2 of the warps per unit of c->granularity (a unit is
 * tid >> (5 + shift)). */
unsigned cp_lower_unit_shift(const cp_lower_cfg *c);

/* The special register of c->counter: "clock", "clock64", "globaltimer". */
const char *cp_lower_counter_name(const cp_lower_cfg *c);

/* ANDs predicate `pred` with "unit `unit` (a 32-bit register) is in
 * c->sample_mask"; leaves the mask in %cpr_u (uses %cpr_n). */
void cp_lower_and_sampled(cp_text *t, cp_lower_cfg *c, const char *unit, const char *pred);

/* Reads the configured counter into the 64-bit register `dst`, each
 * instruction guarded by `pred` ("" or "@%p "). */
void cp_lower_read_counter(cp_text *t, cp_lower_cfg *c, const char *pred, const char *dst);

#endif
