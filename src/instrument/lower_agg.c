/* instrument/lower_agg.c -- the in-kernel sums lowering (cp_lower_agg_*):
 * instead of storing a record per marker, each thread keeps per-scope
 * totals in registers, and the first warp of each recording unit adds them
 * to a slot of the launch's buffer when it exits, with one lane-parallel
 * atomic (lane j adds word j; layout: instrument/layout.h, "In-kernel
 * sums"). Warp 0 adds the CTA's words (finalized CTAs, the clock
 * measurement, whose %globaltimer only warp 0 reads) with its own.
 *
 * Per scope s these registers live for the whole kernel: %cpr_as<s> the
 * counter (low 32 bits) at the open start, %cpr_an<s> paired occurrences,
 * %cpr_ac<s> (64-bit) the cycles of the paired occurrences, and either
 *  - (the lean form, when the pass verified the nesting along every
 *    control-flow path: each end finds its scope open, no start finds it
 *    open) %cpr_ne<s>, the starts: a start adds 1 and reads the counter, an
 *    end reads the counter and adds the difference and 1; starts still open
 *    at the exit (ne - an) are unpaired; or
 *  - (when the flow could not be followed) %cpr_ao<s> 1 while a start is
 *    open and %cpr_au<s> unpaired markers: a start while the scope is open
 *    makes the earlier start unpaired, an end without an open start is
 *    unpaired (its duration multiplied by the open flag, 0), starts still
 *    open at the exit are unpaired.
 * Both pair exactly as the host decoder's stack does for the markers the
 * pass accepts (balanced, non-crossing, no scope started again while open).
 * Durations are
 * 32-bit counter differences: one occurrence may last up to 2^32 cycles
 * (about two seconds), and the sums are 64-bit.
 *
 * Every lane does the arithmetic (the same values in each lane of a warp,
 * no predicate in the hot path: an end multiplies the duration by the open
 * flag); only recording lanes add to the slot. Not a hot path; called by
 * instrument/pass.c once per site. */
#include <stdio.h>

#include "cproton/instrument.h"
#include "instrument/layout.h"
#include "instrument/lower.h"

/* The counter's low 32 bits into the 32-bit register `dst`. */
static void read_low(cp_text *t, cp_lower_cfg *c, const char *dst) {
  if (c->counter == CPROTON_COUNTER_CLOCK) {
    cp_lower_ins(t, c, "mov.u32 %s, %%clock;", dst);
    return;
  }
  cp_lower_ins(t, c, "mov.u64 %%cpr_v, %%%s;", cp_lower_counter_name(c));
  cp_lower_ins(t, c, "cvt.u32.u64 %s, %%cpr_v;", dst);
}

void cp_lower_agg_prologue(cp_text *t, cp_lower_cfg *c) {
  uint32_t n = c->n_scopes;
  c->n_instrs = 0;
  cp_text_printf(t, "\t// @cproton prologue: in-kernel sums of %u scopes, %s counter, %u units, %u B per slot\n", n,
                 cp_lower_counter_name(c), c->n_units, c->per_cta_bytes);
  cp_text_puts(t, "\t.reg .b32 %cpr_tid, %cpr_cta, %cpr_slot, %cpr_ln, %cpr_t, %cpr_u, %cpr_n;\n"
                  "\t.reg .b64 %cpr_buf, %cpr_a, %cpr_v, %cpr_x, %cpr_gt0, %cpr_c0, %cpr_gs, %cpr_cs;\n"
                  "\t.reg .pred %cpr_wr, %cpr_w0, %cpr_first, %cpr_q;\n");
  if (c->flow_verified)
    cp_text_printf(t, "\t.reg .b32 %%cpr_as<%u>, %%cpr_an<%u>, %%cpr_ne<%u>;\n", n, n, n);
  else
    cp_text_printf(t, "\t.reg .b32 %%cpr_as<%u>, %%cpr_an<%u>, %%cpr_ao<%u>, %%cpr_au<%u>;\n", n, n, n, n);
  cp_text_printf(t, "\t.reg .b64 %%cpr_ac<%u>;\n", n);
  /* the clock measurement's start, in warp 0 only (as the records' CTA
   * header): %globaltimer is read by one warp per CTA */
  cp_lower_ids(t, c);
  cp_lower_ins(t, c, "setp.lt.u32 %%cpr_q, %%cpr_tid, 32;");
  cp_lower_ins(t, c, "@%%cpr_q mov.u64 %%cpr_gt0, %%globaltimer;");
  cp_lower_read_counter(t, c, "@%cpr_q ", "%cpr_c0");
  for (uint32_t s = 0; s < n; s++) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_as%u, 0;", s);
    cp_lower_ins(t, c, "mov.u32 %%cpr_an%u, 0;", s);
    cp_lower_ins(t, c, "mov.u64 %%cpr_ac%u, 0;", s);
    if (c->flow_verified) {
      cp_lower_ins(t, c, "mov.u32 %%cpr_ne%u, 0;", s);
    } else {
      cp_lower_ins(t, c, "mov.u32 %%cpr_ao%u, 0;", s);
      cp_lower_ins(t, c, "mov.u32 %%cpr_au%u, 0;", s);
    }
  }
  cp_text_puts(t, "\t// @cproton prologue end\n");
}

/* The lean form (c->flow_verified): no open flag to keep. */
static void lean_record(cp_text *t, cp_lower_cfg *c, uint32_t s, int is_end) {
  char reg[32];
  if (!is_end) {
    cp_lower_ins(t, c, "add.u32 %%cpr_ne%u, %%cpr_ne%u, 1;", s, s);
    snprintf(reg, sizeof reg, "%%cpr_as%u", s);
    read_low(t, c, reg);
    return;
  }
  read_low(t, c, "%cpr_t");
  cp_lower_ins(t, c, "sub.u32 %%cpr_t, %%cpr_t, %%cpr_as%u;", s);
  cp_lower_ins(t, c, "cvt.u64.u32 %%cpr_x, %%cpr_t;");
  cp_lower_ins(t, c, "add.u64 %%cpr_ac%u, %%cpr_ac%u, %%cpr_x;", s, s);
  cp_lower_ins(t, c, "add.u32 %%cpr_an%u, %%cpr_an%u, 1;", s, s);
}

void cp_lower_agg_record(cp_text *t, cp_lower_cfg *c, uint32_t s, int is_end) {
  c->n_instrs = 0;
  char reg[32];
  if (c->flow_verified) {
    lean_record(t, c, s, is_end);
    return;
  }
  if (!is_end) { /* bookkeeping first, the counter last: outside the region */
    cp_lower_ins(t, c, "add.u32 %%cpr_au%u, %%cpr_au%u, %%cpr_ao%u;", s, s, s);
    cp_lower_ins(t, c, "mov.u32 %%cpr_ao%u, 1;", s);
    snprintf(reg, sizeof reg, "%%cpr_as%u", s);
    read_low(t, c, reg);
    return;
  }
  read_low(t, c, "%cpr_t"); /* the counter first, then the bookkeeping */
  cp_lower_ins(t, c, "sub.u32 %%cpr_t, %%cpr_t, %%cpr_as%u;", s);
  cp_lower_ins(t, c, "mul.wide.u32 %%cpr_x, %%cpr_t, %%cpr_ao%u;", s);
  cp_lower_ins(t, c, "add.u64 %%cpr_ac%u, %%cpr_ac%u, %%cpr_x;", s, s);
  cp_lower_ins(t, c, "add.u32 %%cpr_an%u, %%cpr_an%u, %%cpr_ao%u;", s, s, s);
  cp_lower_ins(t, c, "xor.b32 %%cpr_u, %%cpr_ao%u, 1;", s);
  cp_lower_ins(t, c, "add.u32 %%cpr_au%u, %%cpr_au%u, %%cpr_u;", s, s);
  cp_lower_ins(t, c, "mov.u32 %%cpr_ao%u, 0;", s);
}

/* Whether unit 0 records (then warp 0 adds the CTA's words with its own). */
static int unit0_records(const cp_lower_cfg *c) { return !c->sample_mask || (c->sample_mask & 1u); }

/* %cpr_wr: this warp is the first of a recording unit; %cpr_w0: warp 0;
 * %cpr_first: thread 0; %cpr_ln: the lane. From %cpr_tid. */
static void warp_flags(cp_text *t, cp_lower_cfg *c) {
  unsigned shift = cp_lower_unit_shift(c);
  cp_lower_ins(t, c, "and.b32 %%cpr_t, %%cpr_tid, %u;", (32u << shift) - 1);
  cp_lower_ins(t, c, "setp.lt.u32 %%cpr_wr, %%cpr_t, 32;");
  if (c->sample_mask) {
    cp_lower_ins(t, c, "shr.u32 %%cpr_t, %%cpr_tid, %u;", 5 + shift);
    cp_lower_and_sampled(t, c, "%cpr_t", "%cpr_wr");
  }
  cp_lower_ins(t, c, "setp.lt.u32 %%cpr_w0, %%cpr_tid, 32;");
  cp_lower_ins(t, c, "setp.eq.u32 %%cpr_first, %%cpr_tid, 0;");
  cp_lower_ins(t, c, "and.b32 %%cpr_ln, %%cpr_tid, 31;");
}

/* %cpr_a = the address of this CTA's slot: CTA id mod CP_AGG_SLOTS when
 * the grid has that many CTAs, else the CTA's own. */
static void slot_address(cp_text *t, cp_lower_cfg *c) {
  cp_lower_ins(t, c, "ld.param.u64 %%cpr_buf, [%.*s];", (int)c->param_len, c->param);
  cp_lower_ins(t, c, "cvta.to.global.u64 %%cpr_buf, %%cpr_buf;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_t, %%nctaid.x;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%nctaid.y;");
  cp_lower_ins(t, c, "mul.lo.u32 %%cpr_t, %%cpr_t, %%cpr_u;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%nctaid.z;");
  cp_lower_ins(t, c, "mul.lo.u32 %%cpr_t, %%cpr_t, %%cpr_u;");
  cp_lower_ins(t, c, "and.b32 %%cpr_slot, %%cpr_cta, %u;", CP_AGG_SLOTS - 1);
  cp_lower_ins(t, c, "setp.lt.u32 %%cpr_q, %%cpr_t, %u;", CP_AGG_SLOTS);
  cp_lower_ins(t, c, "selp.b32 %%cpr_slot, %%cpr_cta, %%cpr_slot, %%cpr_q;");
  cp_lower_ins(t, c, "mad.wide.u32 %%cpr_a, %%cpr_slot, %u, %%cpr_buf;", c->per_cta_bytes);
}

/* The clock measurement (meaningful in warp 0, which read the start):
 * %cpr_cs the counter's span and %cpr_gs the %globaltimer span. */
static void clock_spans(cp_text *t, cp_lower_cfg *c) {
  cp_lower_ins(t, c, "@%%cpr_w0 mov.u64 %%cpr_gs, %%globaltimer;");
  cp_lower_ins(t, c, "sub.u64 %%cpr_gs, %%cpr_gs, %%cpr_gt0;");
  if (c->counter == CPROTON_COUNTER_CLOCK) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_t, %%clock;");
    cp_lower_ins(t, c, "cvt.u32.u64 %%cpr_u, %%cpr_c0;");
    cp_lower_ins(t, c, "sub.u32 %%cpr_t, %%cpr_t, %%cpr_u;");
    cp_lower_ins(t, c, "cvt.u64.u32 %%cpr_cs, %%cpr_t;");
  } else {
    cp_lower_ins(t, c, "mov.u64 %%cpr_cs, %%%s;", cp_lower_counter_name(c));
    cp_lower_ins(t, c, "sub.u64 %%cpr_cs, %%cpr_cs, %%cpr_c0;");
  }
}

/* Lane `word` of a recording warp takes `src` (`cvt`: a 32-bit register,
 * widened) into %cpr_v; `w0`: only in warp 0 (the CTA's words). */
static void take(cp_text *t, cp_lower_cfg *c, uint32_t word, const char *src, int cvt, int w0) {
  if (w0)
    cp_lower_ins(t, c, "setp.eq.and.u32 %%cpr_q, %%cpr_ln, %u, %%cpr_w0;", word);
  else
    cp_lower_ins(t, c, "setp.eq.u32 %%cpr_q, %%cpr_ln, %u;", word);
  cp_lower_ins(t, c, cvt ? "@%%cpr_q cvt.u64.u32 %%cpr_v, %s;" : "@%%cpr_q mov.u64 %%cpr_v, %s;", src);
}

/* Thread 0's scalar adds of the CTA's words, when warp 0 does not record
 * (unit 0 not sampled). */
static void cta_words_alone(cp_text *t, cp_lower_cfg *c) {
  cp_lower_ins(t, c, "@!%%cpr_first bra $cpr_rec;");
  cp_lower_ins(t, c, "red.global.add.u64 [%%cpr_a+%u], 1;", 8u * CP_REDUCE_CTAS);
  cp_lower_ins(t, c, "red.global.add.u64 [%%cpr_a+%u], %%cpr_cs;", 8u * CP_REDUCE_CLOCK_CYCLES);
  cp_lower_ins(t, c, "red.global.add.u64 [%%cpr_a+%u], %%cpr_gs;", 8u * CP_REDUCE_CLOCK_NS);
  cp_text_puts(t, "$cpr_rec:\n");
}

/* Each recording warp adds its whole slot contribution with one atomic
 * instruction: lane j adds word j (cp_layout_sum_words(n) <= 32 words, a
 * 128-byte-aligned slot), so the L2 sees one request per line and warp
 * instead of one per word and unit. Lanes whose word is 0 add nothing. */
static void warp_sums(cp_text *t, cp_lower_cfg *c) {
  uint32_t n = c->n_scopes;
  char reg[32];
  const char *unp = c->flow_verified ? "ne" : "au"; /* each scope's unpaired markers, below */
  cp_lower_ins(t, c, "mov.u32 %%cpr_n, 0;");
  for (uint32_t s = 0; s < n; s++) {
    if (c->flow_verified) /* starts still open at the exit */
      cp_lower_ins(t, c, "sub.u32 %%cpr_ne%u, %%cpr_ne%u, %%cpr_an%u;", s, s, s);
    else
      cp_lower_ins(t, c, "add.u32 %%cpr_au%u, %%cpr_au%u, %%cpr_ao%u;", s, s, s);
    cp_lower_ins(t, c, "add.u32 %%cpr_n, %%cpr_n, %%cpr_%s%u;", unp, s);
  }
  cp_lower_ins(t, c, "mov.u64 %%cpr_v, 0;");
  if (unit0_records(c)) {
    take(t, c, CP_REDUCE_CTAS, "1", 0, 1);
    take(t, c, CP_REDUCE_CLOCK_CYCLES, "%cpr_cs", 0, 1);
    take(t, c, CP_REDUCE_CLOCK_NS, "%cpr_gs", 0, 1);
  }
  take(t, c, CP_REDUCE_UNPAIRED, "%cpr_n", 1, 0);
  for (uint32_t s = 0; s < n; s++) {
    snprintf(reg, sizeof reg, "%%cpr_ac%u", s);
    take(t, c, CP_REDUCE_FIXED + s, reg, 0, 0);
    snprintf(reg, sizeof reg, "%%cpr_an%u", s);
    take(t, c, CP_REDUCE_FIXED + n + s, reg, 1, 0);
    snprintf(reg, sizeof reg, "%%cpr_%s%u", unp, s);
    take(t, c, CP_REDUCE_FIXED + 2 * n + s, reg, 1, 0);
  }
  cp_lower_ins(t, c, "mul.wide.u32 %%cpr_x, %%cpr_ln, 8;");
  cp_lower_ins(t, c, "add.s64 %%cpr_a, %%cpr_a, %%cpr_x;");
  cp_lower_ins(t, c, "setp.ne.u64 %%cpr_q, %%cpr_v, 0;");
  cp_lower_ins(t, c, "@%%cpr_q red.global.add.u64 [%%cpr_a], %%cpr_v;");
}

void cp_lower_agg_finalize(cp_text *t, cp_lower_cfg *c) {
  c->n_instrs = 0;
  cp_text_puts(t, "\t// @cproton finalize: in-kernel sums\n$cpr_fin:\n");
  cp_lower_ids(t, c);
  warp_flags(t, c);
  if (unit0_records(c)) { /* warp 0 records: the CTA's words go with its sums */
    cp_lower_ins(t, c, "@!%%cpr_wr bra $cpr_done;");
    slot_address(t, c);
    clock_spans(t, c);
  } else {
    cp_lower_ins(t, c, "or.pred %%cpr_q, %%cpr_wr, %%cpr_w0;");
    cp_lower_ins(t, c, "@!%%cpr_q bra $cpr_done;");
    slot_address(t, c);
    clock_spans(t, c);
    cta_words_alone(t, c);
    cp_lower_ins(t, c, "@!%%cpr_wr bra $cpr_done;");
  }
  warp_sums(t, c);
  cp_text_puts(t, "$cpr_done:\n");
  cp_lower_ins(t, c, "ret;");
}
