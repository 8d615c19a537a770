/* instrument_pass_test.c -- the PTX pass: golden output on the Triton
 * fixtures, ptxas acceptance for every option combination, byte-for-byte
 * identity without markers, scope tables and layouts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"
#include "testutil/testutil.h"


static cproton_ptx *run(const char *text, size_t n, const cproton_ptx_options *o) {
  cproton_ptx *p = NULL;
  int rc = cproton_ptx_instrument(text, n, o, &p);
  cr_assert_eq(rc, CPROTON_OK, "instrument failed: %s", cproton_last_error());
  return p;
}

static int have_ptxas(void) { return system("ptxas --version > /dev/null 2>&1") == 0; }

/* Assembles `text` for `arch` (rewriting the .target line); 0 on success. */
static int ptxas(const char *text, const char *arch) {
  const char *path = cpt_tmp_path("t.ptx");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  const char *tg = strstr(text, ".target ");
  const char *eol = tg ? strchr(tg, '\n') : NULL;
  cr_assert(tg && eol);
  fwrite(text, 1, (size_t)(tg - text), f);
  fprintf(f, ".target %s", arch);
  fputs(eol, f);
  fclose(f);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "ptxas -arch=%s %s -o %s.o 2> %s.log", arch, path, path, path);
  int rc = system(cmd);
  if (rc) {
    size_t n;
    char *log = cpt_read_file(cpt_tmp_path("t.ptx.log"), &n);
    fprintf(stderr, "ptxas %s failed:\n%s\n", arch, log ? log : "");
    free(log);
  }
  return rc;
}

Test(instrument_pass, golden_fixtures) {
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  cpt_ptx_golden("vadd_sm90", "shared", &o);
  cpt_ptx_golden("softmax_sm90", "shared", &o);
  cpt_ptx_golden("mm_pipelined_sm90", "shared", &o);
  o.buffer = CPROTON_BUFFER_GLOBAL;
  o.counter = CPROTON_COUNTER_CLOCK;
  cpt_ptx_golden("vadd_sm90", "global_clock", &o);
  o.counter = CPROTON_COUNTER_GLOBALTIMER;
  o.granularity = CPROTON_GRANULARITY_WARPGROUP;
  cpt_ptx_golden("mm_pipelined_sm90", "global_gt_wg", &o);
  cproton_ptx_options_init(&o);
  o.sample_mask = 0x5;
  cpt_ptx_golden("softmax_sm90", "sampled", &o);
}

Test(instrument_pass, every_option_assembles) {
  if (!have_ptxas())
    cr_skip_test("ptxas not found");
  static const char *const fx[] = {"vadd_sm90", "softmax_sm90", "mm_pipelined_sm90"};
  for (int f = 0; f < 3; f++) {
    size_t n;
    char *in = cpt_ptx_fixture(fx[f], &n);
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 3; c++)
        for (int g = 0; g < 9; g++) {
          cproton_ptx_options o;
          cproton_ptx_options_init(&o);
          o.buffer = b;
          o.counter = c;
          o.granularity = g;
          o.sample_mask = (b + c + g) % 2 ? 0x5 : 0;
          cproton_ptx *p = run(in, n, &o);
          const char *t = cproton_ptx_text(p, NULL);
          cr_assert_eq(ptxas(t, "sm_90a"), 0, "%s b%d c%d g%d sm_90a", fx[f], b, c, g);
          if (f < 2) /* mm uses wgmma: sm_90 only */
            cr_assert_eq(ptxas(t, "sm_80"), 0, "%s b%d c%d g%d sm_80", fx[f], b, c, g);
          cproton_ptx_free(p);
        }
    free(in);
  }
}

Test(instrument_pass, unmarked_kernel_is_unchanged) {
  static const char *const fx[] = {"vadd_sm90", "softmax_sm90", "mm_pipelined_sm90"};
  for (int f = 0; f < 3; f++) {
    size_t n;
    char *in = cpt_ptx_fixture(fx[f], &n);
    for (char *m = in; (m = strstr(m, "@cproton")) != NULL; m++)
      m[1] = 'x'; /* "@xproton": no longer a marker */
    cproton_ptx *p = run(in, n, NULL);
    size_t on;
    const char *out = cproton_ptx_text(p, &on);
    cr_assert_eq(on, n);
    cr_assert(!memcmp(out, in, n), "%s changed", fx[f]);
    cr_assert_eq(cproton_ptx_n_kernels(p), 0);
    cproton_ptx_free(p);
    free(in);
  }
  cproton_ptx *p = run("", 0, NULL);
  cr_assert_str_eq(cproton_ptx_text(p, NULL), "");
  cproton_ptx_free(p);
}

Test(instrument_pass, scope_table_and_layout) {
  size_t n;
  char *in = cpt_ptx_fixture("mm_pipelined_sm90", &n);
  cproton_ptx *p = run(in, n, NULL);
  cr_assert_eq(cproton_ptx_n_kernels(p), 1);
  cr_assert_str_eq(cproton_ptx_kernel_name(p, 0), "mm");
  cproton_buffer_layout l;
  cr_assert_eq(cproton_ptx_kernel_layout(p, 0, &l), CPROTON_OK);
  static const char *const names[] = {"kernel", "loads", "dot", "epilogue"};
  static const int parents[] = {-1, 0, 0, 0};
  cr_assert_eq(l.n_scopes, 4);
  for (int i = 0; i < 4; i++) {
    cr_assert_str_eq(l.scope_names[i], names[i]);
    cr_assert_eq(l.scope_parents[i], parents[i]);
  }
  cr_assert_eq(l.n_units, 4);
  cr_assert_eq(l.segment_bytes, 1024);
  cr_assert_eq(l.header_bytes, 80);
  cr_assert_eq(l.per_cta_bytes, 80 + 4 * 1024);
  cproton_ptx_stats st;
  cr_assert_eq(cproton_ptx_kernel_stats(p, 0, &st), CPROTON_OK);
  cr_assert_eq(st.n_records, 8);
  cr_assert_eq(st.n_exits, 1);
  cr_assert_eq(st.record_instrs, 6);
  cr_assert_eq(cproton_ptx_kernel_layout(p, 1, &l), CPROTON_EINVAL);
  cproton_ptx_free(p);
  free(in);
}

Test(instrument_pass, sampling_and_granularity_size_units) {
  size_t n;
  char *in = cpt_ptx_fixture("softmax_sm90", &n); /* 8 warps */
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.sample_mask = 0x81;
  cproton_ptx *p = run(in, n, &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.n_units, 2);
  cr_assert_eq(l.unit_warp[0], 0);
  cr_assert_eq(l.unit_warp[1], 7);
  cproton_ptx_free(p);
  o.sample_mask = 0;
  o.granularity = CPROTON_GRANULARITY_WARPGROUP;
  o.buffer = CPROTON_BUFFER_GLOBAL;
  o.buffer_size = 3000; /* 2 units -> 1500 -> 1024-byte segments */
  p = run(in, n, &o);
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.n_units, 2);
  cr_assert_eq(l.unit_warp[1], 4);
  cr_assert_eq(l.segment_bytes, 1024);
  cproton_ptx_free(p);
  /* Proton's warp_N / warp_group_N: one unit per N warps / N warp groups */
  static const struct {
    cproton_granularity g;
    uint32_t units, second;
  } per_n[] = {{CPROTON_GRANULARITY_WARP_2, 4, 2},      {CPROTON_GRANULARITY_WARP_4, 2, 4},
               {CPROTON_GRANULARITY_WARP_8, 1, 0},      {CPROTON_GRANULARITY_WARPGROUP_2, 1, 0},
               {CPROTON_GRANULARITY_WARPGROUP_4, 1, 0}, {CPROTON_GRANULARITY_WARPGROUP_8, 1, 0}};
  for (size_t i = 0; i < sizeof per_n / sizeof per_n[0]; i++) {
    o.granularity = per_n[i].g;
    p = run(in, n, &o);
    cproton_ptx_kernel_layout(p, 0, &l);
    cr_assert_eq(l.n_units, per_n[i].units, "granularity %d", (int)per_n[i].g);
    cr_assert_eq(l.unit_warp[1], per_n[i].second, "granularity %d", (int)per_n[i].g);
    cr_assert_eq(l.granularity, (uint32_t)per_n[i].g);
    cproton_ptx_free(p);
  }
  o.granularity = (cproton_granularity)9;
  cr_assert_eq(cproton_ptx_instrument(in, n, &o, &p), CPROTON_EINVAL);
  o.granularity = CPROTON_GRANULARITY_WARPGROUP;
  o.sample_mask = 0x100; /* beyond the 2 warp groups */
  cproton_ptx *q = NULL;
  cr_assert_eq(cproton_ptx_instrument(in, n, &o, &q), CPROTON_EINVAL);
  cr_assert_null(q);
  free(in);
}

Test(instrument_pass, shared_default_shrinks_with_existing_shared) {
  size_t n;
  char *in = cpt_ptx_fixture("mm_pipelined_sm90", &n); /* markers in the K loop */
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.existing_shared_bytes = 232448 - 1000; /* 1000 bytes left for 4 warps */
  cproton_ptx *p = run(in, n, &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.segment_bytes, 128);
  cproton_ptx_free(p);
  o.existing_shared_bytes = 232448 - 100;
  cr_assert_eq(cproton_ptx_instrument(in, n, &o, &p), CPROTON_ELIMIT);
  cr_assert(strstr(cproton_last_error(), "buffer=global"));
  free(in);
}

/* A kernel whose markers all run at most once gets one slot per marker by
 * default (nothing can be overwritten); one with a marker in a loop (a
 * backward branch around it) gets the usual default. */
#define LOOP_PTX(before, inside)                                                        \
  ".version 8.4\n.target sm_90a\n.address_size 64\n"                                  \
  ".visible .entry k(.param .u64 k_param_0)\n.reqntid 64\n{\n\t.reg .pred %p<2>;\n"   \
  "\t.reg .b32 %r<4>;\n" before "$L__BB0_1:\n" inside                                  \
  "\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 8;\n\t@%p1 bra $L__BB0_1;\n"      \
  "\tbra.uni $L__BB0_2;\n$L__BB0_2:\n\tret;\n}\n"
#define MARKS "\t// @cproton proton.record start a\n\t// @cproton record end a\n"

static uint32_t default_segment(const char *ptx, cproton_buffer_kind buffer) {
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.buffer = buffer;
  cproton_ptx *p = run(ptx, strlen(ptx), &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cproton_ptx_free(p);
  return l.segment_bytes;
}

Test(instrument_pass, loop_free_kernels_get_one_slot_per_marker) {
  cr_assert_eq(default_segment(LOOP_PTX(MARKS, ""), CPROTON_BUFFER_GLOBAL), 16, "2 records, 16-byte minimum");
  cr_assert_eq(default_segment(LOOP_PTX(MARKS, ""), CPROTON_BUFFER_SHARED), 64, "shared minimum");
  cr_assert_eq(default_segment(LOOP_PTX("", MARKS), CPROTON_BUFFER_GLOBAL), 4096, "marker in the loop");
  cr_assert_eq(default_segment(LOOP_PTX("", MARKS), CPROTON_BUFFER_SHARED), 1024, "the shared default");
  size_t n;
  char *in = cpt_ptx_fixture("vadd_sm90", &n);
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.buffer_size = 4096; /* an explicit size wins */
  cproton_ptx *p = run(in, n, &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.segment_bytes, 1024);
  cproton_ptx_free(p);
  free(in);
}

/* buffer_strategy=flush: records go to the global buffer (buffer_type is
 * overridden), loop-free kernels stay exact, loops get Proton's global
 * default of 16 KiB per unit, and an explicit buffer_size still wins. */
static cproton_buffer_layout flush_layout(const char *ptx, cproton_buffer_kind buffer, uint32_t size) {
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.strategy = CPROTON_STRATEGY_FLUSH;
  o.buffer = buffer;
  o.buffer_size = size;
  cproton_ptx *p = run(ptx, strlen(ptx), &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cproton_ptx_free(p);
  return l;
}

Test(instrument_pass, flush_strategy_sizes_a_global_buffer) {
  cproton_buffer_layout l = flush_layout(LOOP_PTX("", MARKS), CPROTON_BUFFER_SHARED, 0);
  cr_assert_eq(l.buffer, (uint32_t)CPROTON_BUFFER_GLOBAL);
  cr_assert_eq(l.segment_bytes, 16384, "2,048 records per unit");
  cr_assert_eq(l.per_cta_bytes, l.header_bytes + 2 * 16384);
  l = flush_layout(LOOP_PTX(MARKS, ""), CPROTON_BUFFER_GLOBAL, 0);
  cr_assert_eq(l.segment_bytes, 16, "loop-free: one slot per marker");
  l = flush_layout(LOOP_PTX("", MARKS), CPROTON_BUFFER_GLOBAL, 1 << 20);
  cr_assert_eq(l.segment_bytes, 1 << 19, "buffer_size over 2 units");
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.strategy = (cproton_buffer_strategy)2;
  cproton_ptx *p = NULL;
  const char *ptx = LOOP_PTX("", MARKS);
  cr_assert_eq(cproton_ptx_instrument(ptx, strlen(ptx), &o, &p), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "circular or flush"), "%s", cproton_last_error());
  cr_assert_null(p);
}

/* The two benchmark kernels of docs/instrumentation-runtime.md ("Buffer
 * sizing"), by their shapes: records per unit per launch against the
 * default segment. The vector add (4 warps, 2 scopes, no loop) writes 4
 * records per warp into 8 slots; the 4096^3 matmul (8 warps, 96 KiB of
 * Triton's shared memory for 3 stages of 128x64 + 64x128 fp16 tiles, a
 * scope in the K loop) writes 2 x 4096/64 = 128 records per warp into the
 * 1 KiB shared default (128 slots): neither overwrites. */
#define BENCH_PTX(warps, before, inside)                                                \
  ".version 8.4\n.target sm_90a\n.address_size 64\n"                                  \
  ".visible .entry k(.param .u64 k_param_0)\n.reqntid " warps "\n{\n"                 \
  "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n" before "$L__BB0_1:\n" inside             \
  "\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 64;\n\t@%p1 bra $L__BB0_1;\n"       \
  "\tret;\n}\n"

Test(instrument_pass, benchmark_kernels_do_not_overwrite_by_default) {
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  const char *vadd = BENCH_PTX("128", MARKS MARKS, "");
  cproton_ptx *p = run(vadd, strlen(vadd), &o);
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.n_units, 4);
  cr_assert_geq(l.segment_bytes / 8, 4, "vector add: 4 records per warp");
  cr_assert_eq(l.per_cta_bytes, 80 + 4 * 64, "336 bytes per CTA, as measured");
  cproton_ptx_free(p);
  const char *mm = BENCH_PTX("256", "", MARKS);
  o.existing_shared_bytes = 3 * (128 * 64 + 64 * 128) * 2;
  p = run(mm, strlen(mm), &o);
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.n_units, 8);
  cr_assert_geq(l.segment_bytes / 8, 2 * 4096 / 64, "matmul: 128 records per warp");
  cr_assert_eq(l.segment_bytes, 1024);
  cproton_ptx_free(p);
  o.strategy = CPROTON_STRATEGY_FLUSH; /* room for a K loop of 1,024 iterations */
  p = run(mm, strlen(mm), &o);
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.segment_bytes / 8, 2048);
  cproton_ptx_free(p);
}

/* A warp-specialized Gluon kernel with events (tests/gpu/python/ws_events.py):
 * "handoff" starts in the producer partition and ends in the consumer's,
 * "gap" spans loop iterations of the default partition; the partitions are
 * entered through brx.idx, whose flow the pass follows (no warning). */
Test(instrument_pass, ws_events_fixture) {
  size_t n;
  char *in = cpt_ptx_fixture("ws_events_sm90", &n);
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  cproton_ptx *p = run(in, n, &o);
  cproton_buffer_layout l;
  cr_assert_eq(cproton_ptx_kernel_layout(p, 0, &l), CPROTON_OK);
  cr_assert_eq(l.n_units, 8); /* 4 default warps + 2 workers, rounded up to 8 */
  cr_assert_eq(l.n_scopes, 3);
  cr_assert_str_eq(l.scope_names[0], "gap");
  cr_assert_eq(l.scope_parents[0], CPROTON_SCOPE_PARENT_EVENT);
  cr_assert_str_eq(l.scope_names[1], "step");
  cr_assert_eq(l.scope_parents[1], -1);
  cr_assert_str_eq(l.scope_names[2], "handoff");
  cr_assert_eq(l.scope_parents[2], CPROTON_SCOPE_PARENT_EVENT);
  cr_assert_null(cproton_ptx_kernel_warning(p, 0));
  cproton_ptx_stats st;
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(st.n_records, 14);
  if (have_ptxas()) {
    const char *path = cpt_tmp_path("ws_events.ptx");
    FILE *f = fopen(path, "w");
    fputs(cproton_ptx_text(p, NULL), f);
    fclose(f);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "ptxas -arch=sm_90a %s -o %s.o", path, path);
    cr_assert_eq(system(cmd), 0);
  }
  cproton_ptx_free(p);
  /* units of several warps: said in the kernel's warning, not refused */
  o.granularity = CPROTON_GRANULARITY_WARPGROUP;
  p = run(in, n, &o);
  const char *w = cproton_ptx_kernel_warning(p, 0);
  cr_assert(w && strstr(w, "kernel 'ws_events': events in a warp-specialized kernel with 4 warps per unit"), "%s",
            w ? w : "(none)");
  cproton_ptx_free(p);
  free(in);
}
