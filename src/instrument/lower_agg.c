/* instrument/lower_agg.c -- the in-kernel sums lowering (cp_lower_agg_*):
 * instead of storing a record per marker, each thread keeps per-scope
 * totals in registers and the recording lane of each unit adds them to a
 * slot of the launch's buffer when it exits (layout: instrument/layout.h,
 * "In-kernel sums").
 *
 * Per scope s, five registers live for the whole kernel: %cpr_as<s> the
 * counter (low 32 bits) at the open start, %cpr_ao<s> 1 while a start is
 * open, %cpr_an<s> paired occurrences, %cpr_au<s> unpaired markers, and
 * %cpr_ac<s> (64-bit) the cycles of the paired occurrences. A start while
 * the scope is open makes the earlier start unpaired; an end without an
 * open start is unpaired; starts still open at the exit are unpaired. For
 * the markers the pass accepts (balanced, non-crossing, no scope started
 * again while open, along every control-flow path) this pairs exactly as
 * the host decoder's stack does. Durations are
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

static const char *const counter_names[] = {"clock", "clock64", "globaltimer"};

/* The counter's low 32 bits into the 32-bit register `dst`. */
static void read_low(cp_text *t, cp_lower_cfg *c, const char *dst) {
  if (c->counter == CPROTON_COUNTER_CLOCK) {
    cp_lower_ins(t, c, "mov.u32 %s, %%clock;", dst);
    return;
  }
  cp_lower_ins(t, c, "mov.u64 %%cpr_v, %%%s;", counter_names[c->counter]);
  cp_lower_ins(t, c, "cvt.u32.u64 %s, %%cpr_v;", dst);
}

void cp_lower_agg_prologue(cp_text *t, cp_lower_cfg *c) {
  uint32_t n = c->n_scopes;
  c->n_instrs = 0;
  cp_text_printf(t, "\t// @cproton prologue: in-kernel sums of %u scopes, %s counter, %u units, %u B per slot\n", n,
                 counter_names[c->counter], c->n_units, c->per_cta_bytes);
  cp_text_puts(t, "\t.reg .b32 %cpr_tid, %cpr_cta, %cpr_unit, %cpr_slot, %cpr_t, %cpr_u, %cpr_n;\n"
                  "\t.reg .b64 %cpr_buf, %cpr_a, %cpr_v, %cpr_x, %cpr_gt0, %cpr_c0;\n"
                  "\t.reg .pred %cpr_on, %cpr_first, %cpr_q;\n");
  cp_text_printf(t, "\t.reg .b32 %%cpr_as<%u>, %%cpr_ao<%u>, %%cpr_an<%u>, %%cpr_au<%u>;\n", n, n, n, n);
  cp_text_printf(t, "\t.reg .b64 %%cpr_ac<%u>;\n", n);
  /* the clock measurement's start: both clocks, read together */
  cp_lower_ins(t, c, "mov.u64 %%cpr_gt0, %%globaltimer;");
  cp_lower_read_counter(t, c, "", "%cpr_c0");
  for (uint32_t s = 0; s < n; s++) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_as%u, 0;", s);
    cp_lower_ins(t, c, "mov.u32 %%cpr_ao%u, 0;", s);
    cp_lower_ins(t, c, "mov.u32 %%cpr_an%u, 0;", s);
    cp_lower_ins(t, c, "mov.u32 %%cpr_au%u, 0;", s);
    cp_lower_ins(t, c, "mov.u64 %%cpr_ac%u, 0;", s);
  }
  cp_text_puts(t, "\t// @cproton prologue end\n");
}

void cp_lower_agg_record(cp_text *t, cp_lower_cfg *c, uint32_t s, int is_end) {
  c->n_instrs = 0;
  char reg[32];
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

/* The clock measurement: this unit's counter and globaltimer spans. */
static void clock_spans(cp_text *t, cp_lower_cfg *c) {
  cp_lower_ins(t, c, "mov.u64 %%cpr_x, %%globaltimer;");
  cp_lower_ins(t, c, "sub.u64 %%cpr_x, %%cpr_x, %%cpr_gt0;");
  cp_lower_ins(t, c, "red.global.add.u64 [%%cpr_a+%u], %%cpr_x;", 8u * CP_REDUCE_CLOCK_NS);
  if (c->counter == CPROTON_COUNTER_CLOCK) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_t, %%clock;");
    cp_lower_ins(t, c, "cvt.u32.u64 %%cpr_u, %%cpr_c0;");
    cp_lower_ins(t, c, "sub.u32 %%cpr_t, %%cpr_t, %%cpr_u;");
    cp_lower_ins(t, c, "cvt.u64.u32 %%cpr_v, %%cpr_t;");
  } else {
    cp_lower_ins(t, c, "mov.u64 %%cpr_v, %%%s;", counter_names[c->counter]);
    cp_lower_ins(t, c, "sub.u64 %%cpr_v, %%cpr_v, %%cpr_c0;");
  }
  cp_lower_ins(t, c, "red.global.add.u64 [%%cpr_a+%u], %%cpr_v;", 8u * CP_REDUCE_CLOCK_CYCLES);
}

/* Adds the 32-bit register `reg` to slot word `word` when it is not 0. */
static void add_u32(cp_text *t, cp_lower_cfg *c, const char *reg, uint32_t word) {
  cp_lower_ins(t, c, "setp.ne.u32 %%cpr_q, %s, 0;", reg);
  cp_lower_ins(t, c, "cvt.u64.u32 %%cpr_x, %s;", reg);
  cp_lower_ins(t, c, "@%%cpr_q red.global.add.u64 [%%cpr_a+%u], %%cpr_x;", 8u * word);
}

/* Scope s's totals; its unpaired markers into the running %cpr_n. */
static void scope_sums(cp_text *t, cp_lower_cfg *c, uint32_t s) {
  uint32_t n = c->n_scopes;
  char reg[32];
  cp_lower_ins(t, c, "add.u32 %%cpr_au%u, %%cpr_au%u, %%cpr_ao%u;", s, s, s); /* open at the exit */
  cp_lower_ins(t, c, "setp.ne.u32 %%cpr_q, %%cpr_an%u, 0;", s);
  cp_lower_ins(t, c, "@%%cpr_q red.global.add.u64 [%%cpr_a+%u], %%cpr_ac%u;", 8u * (CP_REDUCE_FIXED + s), s);
  snprintf(reg, sizeof reg, "%%cpr_an%u", s);
  add_u32(t, c, reg, CP_REDUCE_FIXED + n + s);
  snprintf(reg, sizeof reg, "%%cpr_au%u", s);
  add_u32(t, c, reg, CP_REDUCE_FIXED + 2 * n + s);
  cp_lower_ins(t, c, "add.u32 %%cpr_n, %%cpr_n, %%cpr_au%u;", s);
}

void cp_lower_agg_finalize(cp_text *t, cp_lower_cfg *c) {
  c->n_instrs = 0;
  cp_text_puts(t, "\t// @cproton finalize: in-kernel sums\n$cpr_fin:\n");
  cp_lower_ids(t, c);
  cp_lower_unit(t, c);
  slot_address(t, c);
  cp_lower_ins(t, c, "@%%cpr_first red.global.add.u64 [%%cpr_a+%u], 1;", 8u * CP_REDUCE_CTAS);
  cp_lower_ins(t, c, "@!%%cpr_on bra $cpr_done;");
  clock_spans(t, c);
  cp_lower_ins(t, c, "mov.u32 %%cpr_n, 0;");
  for (uint32_t s = 0; s < c->n_scopes; s++)
    scope_sums(t, c, s);
  add_u32(t, c, "%cpr_n", CP_REDUCE_UNPAIRED);
  cp_text_puts(t, "$cpr_done:\n");
  cp_lower_ins(t, c, "ret;");
}
