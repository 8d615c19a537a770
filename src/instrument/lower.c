/* instrument/lower.c -- emits the PTX that implements the ProtonGPU ops for
 * one kernel: prologue, records and finalize (layout: instrument/layout.h).
 *
 * Invariant: every register and label the code uses carries the prefix
 * %cpr_ / $cpr_, which the pass checks is absent from its input, so the
 * kernel's own registers are never touched. Every instruction goes through
 * cp_lower_ins(), which counts it (the counts are reported as pass statistics).
 * Not a hot path; called by instrument/pass.c once per site. */
#include <stdarg.h>
#include <stdio.h>

#include "cproton/instrument.h"
#include "instrument/layout.h"
#include "instrument/lower.h"

void cp_lower_ins(cp_text *t, cp_lower_cfg *c, const char *fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  cp_text_printf(t, "\t%s\n", line);
  c->n_instrs++;
}

static const char *const counter_names[] = {"clock", "clock64", "globaltimer"};
static const char *const buffer_names[] = {"shared", "global"};
static const char *const gran_names[] = {"warp",         "warpgroup",    "cta",
                                          "warp_2",       "warp_4",       "warp_8",
                                          "warp_group_2", "warp_group_4", "warp_group_8"};

void cp_lower_ids(cp_text *t, cp_lower_cfg *c) {
  cp_lower_ins(t, c, "mov.u32 %%cpr_tid, %%tid.x;");
  if (!c->one_dim) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_t, %%tid.z;");
    cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%ntid.y;");
    cp_lower_ins(t, c, "mov.u32 %%cpr_n, %%tid.y;");
    cp_lower_ins(t, c, "mad.lo.u32 %%cpr_t, %%cpr_t, %%cpr_u, %%cpr_n;");
    cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%ntid.x;");
    cp_lower_ins(t, c, "mad.lo.u32 %%cpr_tid, %%cpr_t, %%cpr_u, %%cpr_tid;");
  }
  cp_lower_ins(t, c, "mov.u32 %%cpr_cta, %%ctaid.z;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_t, %%nctaid.y;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%ctaid.y;");
  cp_lower_ins(t, c, "mad.lo.u32 %%cpr_cta, %%cpr_cta, %%cpr_t, %%cpr_u;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_t, %%nctaid.x;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%ctaid.x;");
  cp_lower_ins(t, c, "mad.lo.u32 %%cpr_cta, %%cpr_cta, %%cpr_t, %%cpr_u;");
}

unsigned cp_lower_unit_shift(const cp_lower_cfg *c) {
  unsigned shift = 0;
  while ((1u << shift) < cp_layout_unit_warps((uint32_t)c->granularity))
    shift++;
  return shift;
}

const char *cp_lower_counter_name(const cp_lower_cfg *c) { return counter_names[c->counter]; }

void cp_lower_unit(cp_text *t, cp_lower_cfg *c) {
  /* a unit is 2^shift warps; lane 0 of its first warp records (for CTA,
   * 32 warps: thread 0) */
  unsigned shift = cp_lower_unit_shift(c);
  cp_lower_ins(t, c, "shr.u32 %%cpr_unit, %%cpr_tid, %u;", 5 + shift);
  cp_lower_ins(t, c, "and.b32 %%cpr_t, %%cpr_tid, %u;", (32u << shift) - 1);
  cp_lower_ins(t, c, "setp.eq.u32 %%cpr_on, %%cpr_t, 0;");
  cp_lower_ins(t, c, "setp.eq.u32 %%cpr_first, %%cpr_tid, 0;");
  if (!c->sample_mask) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_slot, %%cpr_unit;");
    return;
  }
  cp_lower_and_sampled(t, c, "%cpr_unit", "%cpr_on");
  cp_lower_ins(t, c, "mov.u32 %%cpr_t, 1;");
  cp_lower_ins(t, c, "shl.b32 %%cpr_t, %%cpr_t, %%cpr_unit;");
  cp_lower_ins(t, c, "sub.u32 %%cpr_t, %%cpr_t, 1;");
  cp_lower_ins(t, c, "and.b32 %%cpr_t, %%cpr_t, %%cpr_u;");
  cp_lower_ins(t, c, "popc.b32 %%cpr_slot, %%cpr_t;");
}

void cp_lower_and_sampled(cp_text *t, cp_lower_cfg *c, const char *unit, const char *pred) {
  cp_lower_ins(t, c, "mov.u32 %%cpr_u, %u;", c->sample_mask);
  cp_lower_ins(t, c, "shr.b32 %%cpr_n, %%cpr_u, %s;", unit);
  cp_lower_ins(t, c, "and.b32 %%cpr_n, %%cpr_n, 1;");
  cp_lower_ins(t, c, "setp.ne.and.u32 %s, %%cpr_n, 0, %s;", pred, pred);
}

void cp_lower_read_counter(cp_text *t, cp_lower_cfg *c, const char *pred, const char *dst) {
  if (c->counter == CPROTON_COUNTER_CLOCK) {
    cp_lower_ins(t, c, "%smov.u32 %%cpr_t, %%clock;", pred);
    cp_lower_ins(t, c, "%scvt.u64.u32 %s, %%cpr_t;", pred, dst);
  } else {
    cp_lower_ins(t, c, "%smov.u64 %s, %%%s;", pred, dst, counter_names[c->counter]);
  }
}

void cp_lower_prologue(cp_text *t, cp_lower_cfg *c) {
  c->n_instrs = 0;
  cp_text_printf(t, "\t// @cproton prologue: %s granularity, %s counter, %s buffer, "
                 "%u units x %u B, %u B per CTA\n",
                 gran_names[c->granularity], counter_names[c->counter], buffer_names[c->buffer],
                 c->n_units, c->seg_bytes, c->per_cta_bytes);
  cp_text_puts(t, "\t.reg .b32 %cpr_tid, %cpr_cta, %cpr_unit, %cpr_slot, %cpr_idx, %cpr_sm, "
                  "%cpr_t, %cpr_u, %cpr_n, %cpr_o, %cpr_ss, %cpr_sa;\n"
                  "\t.reg .b64 %cpr_buf, %cpr_seg, %cpr_a, %cpr_v, %cpr_x, %cpr_y, "
                  "%cpr_gt0, %cpr_c0, %cpr_gtf, %cpr_gte;\n"
                  "\t.reg .b32 %cpr_fc;\n"
                  "\t.reg .pred %cpr_on, %cpr_first, %cpr_q;\n");
  if (c->buffer == CPROTON_BUFFER_SHARED)
    cp_text_printf(t, "\t.shared .align 16 .b8 __cproton_smem[%u];\n", c->n_units * c->seg_bytes);
  cp_lower_ids(t, c);
  cp_lower_unit(t, c);
  cp_lower_ins(t, c, "ld.param.u64 %%cpr_buf, [%.*s];", (int)c->param_len, c->param);
  cp_lower_ins(t, c, "cvta.to.global.u64 %%cpr_buf, %%cpr_buf;");
  cp_lower_ins(t, c, "mul.wide.u32 %%cpr_x, %%cpr_cta, %u;", c->per_cta_bytes);
  cp_lower_ins(t, c, "add.s64 %%cpr_buf, %%cpr_buf, %%cpr_x;");
  cp_lower_ins(t, c, "mul.wide.u32 %%cpr_x, %%cpr_slot, %u;", c->seg_bytes);
  cp_lower_ins(t, c, "add.s64 %%cpr_seg, %%cpr_buf, %%cpr_x;");
  cp_lower_ins(t, c, "add.s64 %%cpr_seg, %%cpr_seg, %u;", c->header_bytes);
  if (c->buffer == CPROTON_BUFFER_SHARED) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_ss, __cproton_smem;");
    cp_lower_ins(t, c, "mad.lo.u32 %%cpr_ss, %%cpr_slot, %u, %%cpr_ss;", c->seg_bytes);
  }
  cp_lower_ins(t, c, "mov.u32 %%cpr_idx, 0;");
  cp_lower_ins(t, c, "@%%cpr_first mov.u32 %%cpr_sm, %%smid;");
  cp_lower_ins(t, c, "@%%cpr_first mov.u64 %%cpr_gt0, %%globaltimer;");
  cp_lower_read_counter(t, c, "@%cpr_first ", "%cpr_c0");
  cp_text_puts(t, "\t// @cproton prologue end\n");
}

/* Counter into %cpr_v with the record tag in bits 48..63. */
static void tagged_counter(cp_text *t, cp_lower_cfg *c, uint32_t tag) {
  if (c->counter == CPROTON_COUNTER_CLOCK) {
    cp_lower_read_counter(t, c, "", "%cpr_v");
    cp_lower_ins(t, c, "or.b64 %%cpr_v, %%cpr_v, 0x%04X000000000000;", tag);
  } else {
    cp_lower_read_counter(t, c, "", "%cpr_v");
    cp_lower_ins(t, c, "bfi.b64 %%cpr_v, %u, %%cpr_v, 48, 16;", tag);
  }
}

/* Address of the next slot: %cpr_a (global) or %cpr_sa (shared). */
static void slot_address(cp_text *t, cp_lower_cfg *c) {
  cp_lower_ins(t, c, "and.b32 %%cpr_o, %%cpr_idx, %u;", c->seg_bytes - 1);
  if (c->buffer == CPROTON_BUFFER_SHARED)
    cp_lower_ins(t, c, "add.u32 %%cpr_sa, %%cpr_ss, %%cpr_o;");
  else
    cp_lower_ins(t, c, "mad.wide.u32 %%cpr_a, %%cpr_o, 1, %%cpr_seg;");
}

void cp_lower_record(cp_text *t, cp_lower_cfg *c, uint32_t scope, int is_end) {
  c->n_instrs = 0;
  uint32_t tag = cp_layout_tag(scope, is_end);
  /* A start reads the counter last and an end first, so that the
   * bookkeeping falls outside the measured region. */
  if (is_end)
    tagged_counter(t, c, tag);
  slot_address(t, c);
  if (!is_end)
    tagged_counter(t, c, tag);
  if (c->buffer == CPROTON_BUFFER_SHARED)
    cp_lower_ins(t, c, "@%%cpr_on st.shared.b64 [%%cpr_sa], %%cpr_v;");
  else
    cp_lower_ins(t, c, "@%%cpr_on st.global.b64 [%%cpr_a], %%cpr_v;");
  cp_lower_ins(t, c, "add.u32 %%cpr_idx, %%cpr_idx, 8;");
}

/* Lane copy of the used part of the shared segment to global memory. */
static void copy_out(cp_text *t, cp_lower_cfg *c) {
  cp_lower_ins(t, c, "add.u32 %%cpr_n, %%cpr_idx, 15;");
  cp_lower_ins(t, c, "and.b32 %%cpr_n, %%cpr_n, -16;");
  cp_lower_ins(t, c, "min.u32 %%cpr_n, %%cpr_n, %u;", c->seg_bytes);
  cp_lower_ins(t, c, "mov.u32 %%cpr_o, 0;");
  cp_lower_ins(t, c, "setp.eq.u32 %%cpr_q, %%cpr_n, 0;");
  cp_lower_ins(t, c, "@%%cpr_q bra $cpr_hdr;");
  cp_text_puts(t, "$cpr_cp:\n");
  cp_lower_ins(t, c, "add.u32 %%cpr_sa, %%cpr_ss, %%cpr_o;");
  cp_lower_ins(t, c, "ld.shared.v2.u64 {%%cpr_x, %%cpr_y}, [%%cpr_sa];");
  cp_lower_ins(t, c, "mad.wide.u32 %%cpr_a, %%cpr_o, 1, %%cpr_seg;");
  cp_lower_ins(t, c, "st.global.v2.u64 [%%cpr_a], {%%cpr_x, %%cpr_y};");
  cp_lower_ins(t, c, "add.u32 %%cpr_o, %%cpr_o, 16;");
  cp_lower_ins(t, c, "setp.lt.u32 %%cpr_q, %%cpr_o, %%cpr_n;");
  cp_lower_ins(t, c, "@%%cpr_q bra $cpr_cp;");
}

/* Thread 0 writes the CTA header, magic word last. */
static void header(cp_text *t, cp_lower_cfg *c) {
  unsigned long long word0 = CP_LAYOUT_MAGIC | ((unsigned long long)CP_LAYOUT_VERSION << 32) |
                             ((unsigned long long)c->counter << 48) |
                             ((unsigned long long)((c->buffer == CPROTON_BUFFER_SHARED) |
                                                   (c->granularity << 1)) << 56);
  cp_lower_ins(t, c, "mov.u64 %%cpr_gte, %%globaltimer;");
  cp_lower_ins(t, c, "st.global.v2.u32 [%%cpr_buf+8], {%%cpr_cta, %%cpr_sm};");
  cp_lower_ins(t, c, "st.global.v2.u64 [%%cpr_buf+16], {%%cpr_gt0, %%cpr_c0};");
  cp_lower_ins(t, c, "st.global.v2.u64 [%%cpr_buf+32], {%%cpr_gtf, %%cpr_gte};");
  cp_lower_ins(t, c, "mov.u32 %%cpr_t, %%ntid.x;");
  if (!c->one_dim) {
    cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%ntid.y;");
    cp_lower_ins(t, c, "mul.lo.u32 %%cpr_t, %%cpr_t, %%cpr_u;");
    cp_lower_ins(t, c, "mov.u32 %%cpr_u, %%ntid.z;");
    cp_lower_ins(t, c, "mul.lo.u32 %%cpr_t, %%cpr_t, %%cpr_u;");
  }
  cp_lower_ins(t, c, "add.u32 %%cpr_t, %%cpr_t, 31;");
  cp_lower_ins(t, c, "shr.u32 %%cpr_t, %%cpr_t, 5;");
  cp_lower_ins(t, c, "mov.u32 %%cpr_u, %u;", c->n_units);
  cp_lower_ins(t, c, "mov.u32 %%cpr_n, %u;", c->seg_bytes);
  cp_lower_ins(t, c, "st.global.v4.u32 [%%cpr_buf+48], {%%cpr_u, %%cpr_n, %%cpr_t, %%cpr_fc};");
  cp_lower_ins(t, c, "st.global.u64 [%%cpr_buf], %llu;", word0);
}

void cp_lower_exit_branch(cp_text *t, const char *pred, size_t pred_len, int pred_neg) {
  if (pred)
    cp_text_printf(t, "@%s%.*s bra $cpr_fin;", pred_neg ? "!" : "", (int)pred_len, pred);
  else
    cp_text_puts(t, "bra $cpr_fin;");
}

/* %cpr_fc: thread 0's counter units since its entry, read right after
 * fin_time: the same interval on both clocks (the clock measurement). */
static void fin_counter(cp_text *t, cp_lower_cfg *c) {
  if (c->counter == CPROTON_COUNTER_CLOCK) {
    cp_lower_ins(t, c, "@%%cpr_first mov.u32 %%cpr_fc, %%clock;");
    cp_lower_ins(t, c, "@%%cpr_first cvt.u32.u64 %%cpr_t, %%cpr_c0;");
    cp_lower_ins(t, c, "@%%cpr_first sub.u32 %%cpr_fc, %%cpr_fc, %%cpr_t;");
    return;
  }
  cp_lower_read_counter(t, c, "@%cpr_first ", "%cpr_x");
  cp_lower_ins(t, c, "@%%cpr_first sub.u64 %%cpr_x, %%cpr_x, %%cpr_c0;");
  cp_lower_ins(t, c, "@%%cpr_first cvt.u32.u64 %%cpr_fc, %%cpr_x;");
}

void cp_lower_finalize(cp_text *t, cp_lower_cfg *c) {
  c->n_instrs = 0;
  cp_text_puts(t, "\t// @cproton finalize\n$cpr_fin:\n");
  cp_lower_ins(t, c, "@%%cpr_first mov.u64 %%cpr_gtf, %%globaltimer;");
  fin_counter(t, c);
  cp_lower_ins(t, c, "@!%%cpr_on bra $cpr_hdr;");
  cp_lower_ins(t, c, "shr.u32 %%cpr_n, %%cpr_idx, 3;");
  cp_lower_ins(t, c, "mul.wide.u32 %%cpr_x, %%cpr_slot, 4;");
  cp_lower_ins(t, c, "add.s64 %%cpr_a, %%cpr_buf, %%cpr_x;");
  cp_lower_ins(t, c, "st.global.u32 [%%cpr_a+%u], %%cpr_n;", CP_HDR_COUNTS);
  if (c->buffer == CPROTON_BUFFER_SHARED)
    copy_out(t, c);
  cp_text_puts(t, "$cpr_hdr:\n");
  cp_lower_ins(t, c, "@!%%cpr_first bra $cpr_done;");
  header(t, c);
  cp_text_puts(t, "$cpr_done:\n");
  cp_lower_ins(t, c, "ret;");
}
