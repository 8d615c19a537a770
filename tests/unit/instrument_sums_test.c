/* instrument_sums_test.c -- the pass's in-kernel sums lowering
 * (cproton_ptx_options.aggregate): golden output on the Triton fixtures,
 * ptxas acceptance for every counter, granularity and sampling, the
 * layout, the fallbacks to records (events, too many scopes) that the
 * layout reports, and the mode string that selects it (reduce=kernel). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"
#include "instrument/layout.h"
#include "testutil/testutil.h"


static cproton_ptx *run(const char *text, size_t n, const cproton_ptx_options *o) {
  cproton_ptx *p = NULL;
  cr_assert_eq(cproton_ptx_instrument(text, n, o, &p), CPROTON_OK, "instrument failed: %s", cproton_last_error());
  return p;
}

static cproton_ptx_options sums(void) {
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.aggregate = 1;
  return o;
}

static int have_ptxas(void) { return system("ptxas --version > /dev/null 2>&1") == 0; }

/* ptxas -arch=sm_90a on `text`; 0 on success (its log on stderr). */
static int ptxas(const char *text) {
  const char *path = cpt_tmp_path("sums.ptx");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "ptxas -arch=sm_90a %s -o %s.o", path, path);
  return system(cmd);
}

Test(instrument_sums, golden_fixtures) {
  cproton_ptx_options o = sums();
  cpt_ptx_golden("vadd_sm90", "sums", &o);
  o.counter = CPROTON_COUNTER_CLOCK;
  o.granularity = CPROTON_GRANULARITY_WARPGROUP;
  cpt_ptx_golden("mm_pipelined_sm90", "sums_clock_wg", &o);
}

Test(instrument_sums, every_counter_granularity_and_sampling_assembles) {
  if (!have_ptxas())
    cr_skip_test("ptxas not found");
  static const char *const fx[] = {"vadd_sm90", "softmax_sm90", "mm_pipelined_sm90"};
  for (int f = 0; f < 3; f++) {
    size_t n;
    char *in = cpt_ptx_fixture(fx[f], &n);
    for (int c = 0; c < 3; c++)
      for (int g = 0; g < 9; g++) {
        cproton_ptx_options o = sums();
        o.counter = c;
        o.granularity = g;
        o.sample_mask = (c + g) % 2 ? 0x5 : 0;
        cproton_ptx *p = run(in, n, &o);
        cr_assert_eq(ptxas(cproton_ptx_text(p, NULL)), 0, "%s counter %d granularity %d", fx[f], c, g);
        cproton_ptx_free(p);
      }
    free(in);
  }
}

Test(instrument_sums, layout_is_one_slot_of_totals) {
  size_t n;
  char *in = cpt_ptx_fixture("mm_pipelined_sm90", &n);
  cproton_ptx_options o = sums();
  cproton_ptx *p = run(in, n, &o);
  cproton_buffer_layout l;
  cr_assert_eq(cproton_ptx_kernel_layout(p, 0, &l), CPROTON_OK);
  cr_assert_eq(l.aggregate, 1);
  cr_assert_eq(l.n_scopes, 4);
  cr_assert_eq(l.per_cta_bytes, 256, "20 words, padded to two 128-byte lines");
  cr_assert_eq(l.header_bytes, 0);
  cr_assert_eq(l.segment_bytes, 0);
  cr_assert_eq(l.n_units, 4);
  cr_assert_null(cproton_ptx_kernel_warning(p, 0));
  const char *t = cproton_ptx_text(p, NULL);
  cr_assert_null(strstr(t, "__cproton_smem"), "no shared buffer");
  for (const char *line = t; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    size_t len = strcspn(line, "\n");
    int store = memmem(line, len, "\tst.", 4) || memmem(line, len, " st.", 4);
    cr_assert(!(store && memmem(line, len, "%cpr_", 5)), "a record store: %.*s", (int)len, line);
  }
  cr_assert(strstr(t, "red.global.add.u64"), "totals go to the slots by atomic adds");
  cproton_ptx_stats st;
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(st.n_records, 8);
  cr_assert_leq(st.record_instrs, 9, "an end marker is a counter read and a few register ops");
  cr_assert_lt(st.finalize_instrs, 120, "the exit: flags, the slot, one lane-parallel atomic");
  cproton_ptx_free(p);
  free(in);
}

Test(instrument_sums, events_keep_records) {
  size_t n;
  char *in = cpt_ptx_fixture("ws_events_sm90", &n);
  cproton_ptx_options o = sums();
  cproton_ptx *p = run(in, n, &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.aggregate, 0);
  cr_assert_gt(l.segment_bytes, 0);
  cr_assert_null(cproton_ptx_kernel_warning(p, 0), "a kernel that needs records is no warning");
  cproton_ptx_free(p);
  free(in);
}

#define HEAD                                                                   \
  ".version 8.7\n.target sm_90a\n.address_size 64\n"                           \
  ".visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0\n)\n"     \
  ".reqntid 64\n{\n"
#define M(s) "\t// @cproton record " s "\n"

Test(instrument_sums, more_scopes_than_registers_keep_records) {
  char text[4096] = HEAD;
  for (int i = 0; i <= (int)CP_AGG_MAX_SCOPES; i++) /* one more than fits */
    snprintf(text + strlen(text), sizeof text - strlen(text), M("start s%d") M("end s%d"), i, i);
  strcat(text, "\tret;\n}\n");
  cproton_ptx_options o = sums();
  cproton_ptx *p = run(text, strlen(text), &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.aggregate, 0);
  cr_assert_gt(l.segment_bytes, 0);
  cproton_ptx_free(p);
  /* exactly the limit sums in the kernel */
  strcpy(text, HEAD);
  for (int i = 0; i < (int)CP_AGG_MAX_SCOPES; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text), M("start s%d") M("end s%d"), i, i);
  strcat(text, "\tret;\n}\n");
  p = run(text, strlen(text), &o);
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.aggregate, 1);
  if (have_ptxas())
    cr_assert_eq(ptxas(cproton_ptx_text(p, NULL)), 0);
  cproton_ptx_free(p);
}

Test(instrument_sums, mode_string_reduce_kernel) {
  cproton_ptx_options o;
  cproton_reduce_kind kind;
  cr_assert_eq(cproton_instr_mode_options("default:reduce=kernel", &o), CPROTON_OK);
  cr_assert_eq(o.aggregate, 1);
  cr_assert_eq(cproton_instr_mode_reduce_kind("default:reduce=kernel", &kind), CPROTON_OK);
  cr_assert_eq(kind, CPROTON_REDUCE_KERNEL);
  cr_assert_eq(cproton_instr_mode_options("default", &o), CPROTON_OK);
  cr_assert_eq(o.aggregate, 0, "the default leaves the choice to the front end");
  cr_assert_eq(cproton_instr_mode_reduce_kind("default", &kind), CPROTON_OK);
  cr_assert_eq(kind, CPROTON_REDUCE_AUTO);
  cr_assert_eq(cproton_instr_mode_reduce_kind("default:reduce=device", &kind), CPROTON_OK);
  cr_assert_eq(kind, CPROTON_REDUCE_DEVICE);
  cr_assert_eq(cproton_instr_mode_reduce_kind("default:reduce=host", &kind), CPROTON_OK);
  cr_assert_eq(kind, CPROTON_REDUCE_HOST);
  int on_device = 0;
  cr_assert_eq(cproton_instr_mode_reduce("default:reduce=kernel", &on_device), CPROTON_OK);
  cr_assert_eq(on_device, 1);
  cr_assert_eq(cproton_instr_mode_reduce_kind("default:reduce=warp", &kind), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "kernel, device, host"), "%s", cproton_last_error());
  cr_assert_eq(kind, CPROTON_REDUCE_AUTO);
}

/* The in-kernel-sums default is C's (issue 25), the same for C front ends
 * and the Python hook: sums only for a tree profile with reduce unset or
 * kernel and nothing that needs records. */
Test(instrument_sums, sums_in_kernel_rule) {
  int out = -1;
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default", 0, 0, &out), CPROTON_OK);
  cr_assert_eq(out, 1, "tree profile, reduce unset: sums in the kernel");
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default:reduce=kernel", 0, 0, &out), CPROTON_OK);
  cr_assert_eq(out, 1);
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default", 1, 0, &out), CPROTON_OK);
  cr_assert_eq(out, 0, "traces need records");
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default", 0, 1, &out), CPROTON_OK);
  cr_assert_eq(out, 0, "the host buffer needs records");
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default:optimizations=time_shift", 0, 0, &out),
               CPROTON_OK);
  cr_assert_eq(out, 0, "time_shift needs records");
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default:reduce=device", 0, 0, &out), CPROTON_OK);
  cr_assert_eq(out, 0);
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default:reduce=host", 0, 0, &out), CPROTON_OK);
  cr_assert_eq(out, 0);
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default:reduce=warp", 0, 0, &out), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "kernel, device, host"), "%s", cproton_last_error());
  cr_assert_eq(out, 0);
  cr_assert_eq(cproton_instr_mode_sums_in_kernel("default", 0, 0, NULL), CPROTON_EINVAL);
}

/* Nesting checked along control flow gives the lean form (no open flags);
 * a kernel whose flow the pass cannot follow (a brx.idx without a
 * .branchtargets list) keeps the open-flag form. */
Test(instrument_sums, lean_form_only_where_the_flow_was_followed) {
  size_t n;
  char *in = cpt_ptx_fixture("vadd_sm90", &n);
  cproton_ptx_options o = sums();
  cproton_ptx *p = run(in, n, &o);
  const char *t = cproton_ptx_text(p, NULL);
  cr_assert(strstr(t, "%cpr_ne") && !strstr(t, "%cpr_ao"), "vadd: the lean form");
  cproton_ptx_free(p);
  free(in);
  const char *text = HEAD "\t.reg .b32 %r<2>;\n\tmov.u32 %r1, %tid.x;\n\tbrx.idx %r1, $L_nowhere;\n"
      M("start a") M("end a") "\tret;\n}\n";
  p = run(text, strlen(text), &o);
  t = cproton_ptx_text(p, NULL);
  cr_assert(strstr(t, "%cpr_ao") && !strstr(t, "%cpr_ne"), "brx.idx: open flags kept");
  cr_assert_not_null(cproton_ptx_kernel_warning(p, 0), "the text-order note stays");
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.aggregate, 1);
  cproton_ptx_free(p);
}
