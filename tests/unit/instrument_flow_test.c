/* instrument_flow_test.c -- scopes matched along control flow (nvcc's RAII
 * early returns), the shared finalize block (many exits stay small and
 * assemble fast) and the reserved $cpr_ label prefix. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cproton/cproton.h"
#include "testutil/testutil.h"

#define HEAD                                                                   \
  ".version 8.7\n.target sm_90a\n.address_size 64\n"                           \
  ".visible .entry k(\n\t.param .u64 k_param_0,\n"                             \
  "\t.param .u64 .ptr .global .align 1 k_param_1\n)\n.reqntid 64\n{\n"         \
  "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n"
#define M(s) "\t// @cproton record " s "\n"

static int have_ptxas(void) { return system("ptxas --version > /dev/null 2>&1") == 0; }

/* The architecture of `text`'s .target (sm_90a when it has none). */
static void target_arch(const char *text, char *arch, size_t cap) {
  const char *t = strstr(text, ".target sm_");
  size_t n = 0;
  if (t)
    for (t += strlen(".target "); n + 1 < cap && (isalnum((unsigned char)t[n]) || t[n] == '_'); n++)
      arch[n] = t[n];
  arch[n] = '\0';
  if (!n)
    snprintf(arch, cap, "sm_90a");
}

/* Assembles `text` for its target; returns ptxas's exit status and its time
 * in *secs. */
static int ptxas(const char *text, size_t n, double *secs) {
  const char *path = cpt_tmp_path("flow.ptx");
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  fwrite(text, 1, n, f);
  fclose(f);
  char cmd[1200], arch[32];
  target_arch(text, arch, sizeof arch);
  snprintf(cmd, sizeof cmd, "ptxas -arch=%s %s -o %s.o", arch, path, path);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int rc = system(cmd);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (secs)
    *secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  return rc;
}

/* ptxas (when installed) takes the pass's output of `p`. */
static void assert_assembles(const cproton_ptx *p) {
  size_t on;
  const char *out = cproton_ptx_text(p, &on);
  if (have_ptxas())
    cr_assert_eq(ptxas(out, on, NULL), 0, "ptxas rejected the instrumented PTX:\n%s", out);
}

static const char *scope_name(const cproton_buffer_layout *l, int32_t i) {
  return i < 0 ? "-" : l->scope_names[i];
}

Test(instrument_flow, nvcc_raii_early_returns_are_accepted) {
  size_t n;
  char *in = cpt_read_file(CP_SOURCE_DIR "/tests/data/instrument/scope_return.ptx", &n);
  cr_assert_not_null(in);
  cproton_ptx *p = NULL;
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  cr_assert_eq(cproton_ptx_instrument(in, n, &o, &p), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cproton_ptx_n_kernels(p), 2);
  static const char *const expect[2][2][2] = {{{"outer", "-"}, {"inner", "outer"}},
                                              {{"outer", "-"}, {"body", "outer"}}};
  for (size_t k = 0; k < 2; k++) {
    cproton_buffer_layout l;
    cproton_ptx_stats st;
    cr_assert_eq(cproton_ptx_kernel_layout(p, k, &l), CPROTON_OK);
    cr_assert_eq(cproton_ptx_kernel_stats(p, k, &st), CPROTON_OK);
    cr_assert_eq(l.n_scopes, 2);
    for (int s = 0; s < 2; s++) {
      cr_assert_str_eq(l.scope_names[s], expect[k][s][0]);
      cr_assert_str_eq(scope_name(&l, l.scope_parents[s]), expect[k][s][1]);
    }
    cr_assert_eq(st.n_records, k == 0 ? 5 : 6);
  }
  assert_assembles(p);
  cproton_ptx_free(p);
  free(in);
}

Test(instrument_flow, text_order_alone_would_refuse_it) {
  /* The loop kernel's markers in text order: start outer, start body,
   * end body, end outer, end body, end outer. */
  size_t n;
  char *in = cpt_read_file(CP_SOURCE_DIR "/tests/data/instrument/scope_return.ptx", &n);
  cr_assert_not_null(in);
  const char *k2 = strstr(in, ".entry _Z17scope_return_loop");
  cr_assert_not_null(k2);
  const char *order[] = {"start outer", "start body", "end body", "end outer", "end body", "end outer"};
  const char *p = k2;
  for (size_t i = 0; i < 6; i++) {
    p = strstr(p, "@cproton record ");
    cr_assert_not_null(p);
    p += strlen("@cproton record ");
    cr_assert(!strncmp(p, order[i], strlen(order[i])), "marker %zu is not '%s'", i, order[i]);
  }
  free(in);
}

Test(instrument_flow, paths_that_join_with_different_scopes_are_refused) {
  /* One path opens 'a' and jumps to L, the other reaches L without it; the
   * marker after L cannot know which scope it closes. */
  const char *text = HEAD "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n"
      "\t@%p1 bra $L_b;\n" M("start a") "$L_b:\n" M("end a") "\tret;\n}\n";
  cproton_ptx *p = NULL;
  cr_assert_eq(cproton_ptx_instrument(text, strlen(text), NULL, &p), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "line 17: marker of scope 'a' is reached with different "
                                         "scopes open on paths that meet at line 16"),
            "%s", cproton_last_error());
  /* Loops keep their stack: a scope inside a loop body is fine. */
  text = HEAD "\tmov.u32 %r1, 0;\n" M("start outer") "$L_top:\n" M("start it")
      "\tadd.u32 %r1, %r1, 1;\n" M("end it") "\tsetp.lt.u32 %p1, %r1, 8;\n\t@%p1 bra $L_top;\n"
      M("end outer") "\tret;\n}\n";
  cr_assert_eq(cproton_ptx_instrument(text, strlen(text), NULL, &p), CPROTON_OK, "%s",
               cproton_last_error());
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_str_eq(scope_name(&l, l.scope_parents[1]), "outer");
  cproton_ptx_free(p);
}

Test(instrument_flow, reserved_label_prefix_is_refused) {
  const char *text = HEAD M("start a") "$cpr_done_0:\n" M("end a") "\tret;\n}\n";
  cproton_ptx *p = (cproton_ptx *)1;
  cr_assert_eq(cproton_ptx_instrument(text, strlen(text), NULL, &p), CPROTON_EUNSUPPORTED);
  cr_assert_null(p);
  cr_assert(strstr(cproton_last_error(), "line 13: the prefix $cpr_ is reserved"), "%s",
            cproton_last_error());
}

/* A kernel with `n` predicated rets inside one scope. */
static char *many_rets(size_t n, size_t *len) {
  size_t cap = 512 + n * 64;
  char *t = malloc(cap);
  size_t o = (size_t)snprintf(t, cap, "%s", HEAD "\tmov.u32 %r1, %tid.x;\n" M("start a"));
  for (size_t i = 0; i < n; i++)
    o += (size_t)snprintf(t + o, cap - o, "\tsetp.eq.u32 %%p1, %%r1, %zu;\n\t@%%p1 ret;\n", i);
  o += (size_t)snprintf(t + o, cap - o, "%s", M("end a") "\tret;\n}\n");
  *len = o;
  return t;
}

Test(instrument_flow, many_exits_share_one_finalize) {
  size_t n;
  char *in = many_rets(1000, &n);
  cproton_ptx *p = NULL;
  cr_assert_eq(cproton_ptx_instrument(in, n, NULL, &p), CPROTON_OK, "%s", cproton_last_error());
  size_t on;
  const char *out = cproton_ptx_text(p, &on);
  cproton_ptx_stats st;
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(st.n_exits, 1001);
  /* one branch (about 20 bytes) per exit plus one finalize and prologue */
  cr_assert_lt(on, n + 1001 * 24 + 8192, "%zu bytes out of %zu in", on, n);
  const char *fin = strstr(out, "$cpr_fin:");
  cr_assert(fin && !strstr(fin + 1, "$cpr_fin:"));
  if (have_ptxas()) {
    double secs;
    cr_assert_eq(ptxas(out, on, &secs), 0, "ptxas rejected the output");
    cr_assert_lt(secs, 3.0, "ptxas took %.1f s for 1,000 exits", secs);
  }
  cproton_ptx_free(p);
  free(in);
}

Test(instrument_flow, exit_in_a_nested_block_keeps_finalize_visible) {
  /* PTX labels are scoped to their { } block: the finalize block must not
   * go after a last exit that sits in a nested block. */
  const char *text = HEAD M("start a") M("end a") "\t{\n\t.reg .b32 %t;\n\tmov.u32 %t, 1;\n"
      "\t@%p1 ret;\n\tret;\n\t}\n}\n";
  cproton_ptx *p = NULL;
  cr_assert_eq(cproton_ptx_instrument(text, strlen(text), NULL, &p), CPROTON_OK, "%s",
               cproton_last_error());
  size_t on;
  const char *out = cproton_ptx_text(p, &on);
  const char *fin = strstr(out, "$cpr_fin:"), *close = strstr(out, "\t}\n");
  cr_assert(fin && close && fin > close, "finalize inside the nested block:\n%s", out);
  if (have_ptxas())
    cr_assert_eq(ptxas(out, on, NULL), 0, "ptxas rejected:\n%s", out);
  cproton_ptx_free(p);
}

static const char *warning_of(const char *text, size_t n, cproton_ptx **p) {
  cr_assert_eq(cproton_ptx_instrument(text, n, NULL, p), CPROTON_OK, "%s", cproton_last_error());
  return cproton_ptx_kernel_warning(*p, 0);
}

/* Instruments Triton's PTX in tests/data/instrument/`file` (see the README
 * there): the flow is followed (no warning), one scope `name`, ptxas takes
 * the output. */
static void triton_ws_kernel(const char *file, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/tests/data/instrument/%s", CP_SOURCE_DIR, file);
  size_t n;
  char *in = cpt_read_file(path, &n);
  cr_assert_not_null(in, "%s", path);
  cproton_ptx *p = NULL;
  cr_assert_null(warning_of(in, n, &p), "%s", cproton_ptx_kernel_warning(p, 0));
  cproton_buffer_layout l;
  cproton_ptx_stats st;
  cproton_ptx_kernel_layout(p, 0, &l);
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(l.n_scopes, 1);
  cr_assert_str_eq(l.scope_names[0], name);
  cr_assert_eq(st.n_records, 2);
  assert_assembles(p);
  cproton_ptx_free(p);
  free(in);
}

Test(instrument_flow, triton_tma_warp_specialized_loop_is_followed) {
  /* sm_90: a scope around the loop body; `.loc` lines precede the branches
   * into and around the loop. */
  triton_ws_kernel("matmul_tma_ws_sm90.ptx", "loop");
}

Test(instrument_flow, triton_warp_specialized_partitions_are_followed) {
  /* sm_100: the kernel enters its partitions through brx.idx over a
   * multi-line .branchtargets list. */
  triton_ws_kernel("matmul_tma_ws_sm100.ptx", "kernel");
}

Test(instrument_flow, loc_directive_ends_at_its_line) {
  /* `.loc` has no ';': the branch and the label after it are statements of
   * their own. Read as one statement, $L_in had no way in (unreachable) and
   * $L_out no label (text order). */
  const char *text = HEAD "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n"
      "\t.loc\t1 26 31 // k.py:26:31\n\t@%p1 bra \t$L_in;\n\tbra.uni \t$L_out;\n$L_in:\n"
      M("start a") "\tadd.u32 %r1, %r1, 1;\n" M("end a") "\t.loc\t1 27 3\n$L_out:\n\tret;\n}\n";
  cproton_ptx *p = NULL;
  cr_assert_null(warning_of(text, strlen(text), &p), "%s", cproton_ptx_kernel_warning(p, 0));
  cproton_ptx_free(p);
  text = HEAD "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n\t.loc\t1 26 31\n"
      "\t@%p1 bra \t$L_in;\n\tbra.uni \t$L_out;\n$L_in:\n" M("start a") M("end a")
      "$L_out:\n\tret;\n}\n";
  cr_assert_null(warning_of(text, strlen(text), &p), "%s", cproton_ptx_kernel_warning(p, 0));
  cproton_ptx_free(p);
}

/* An inline-asm style wait loop in a { } block of its own. */
#define WAIT                                                                   \
  "\t{\n\t.reg .pred c;\n\twaitLoop:\n\tsetp.eq.u32 c, %r1, 0;\n"                      \
  "\t@!c bra.uni waitLoop;\n\t}\n"

Test(instrument_flow, labels_are_scoped_to_their_block) {
  /* Two blocks declare waitLoop:, one outside scope 'a' and one inside; each
   * branch goes to its own block's label. Either label for both branches
   * would join a path with 'a' open to one without it. */
  const char *text =
      HEAD "\tmov.u32 %r1, %tid.x;\n" WAIT M("start a") WAIT M("end a") "\tret;\n}\n";
  cproton_ptx *p = NULL;
  cr_assert_null(warning_of(text, strlen(text), &p), "%s", cproton_ptx_kernel_warning(p, 0));
  assert_assembles(p);
  cproton_ptx_free(p);
}

#define BRX(list)                                                                          \
  HEAD "\tmov.u32 %r1, %tid.x;\n" M("start a") "$L_t: .branchtargets " list ";\n"          \
       "\tbrx.idx %r1, $L_t;\n$L_0:\n" M("end a") "\tbra.uni $L_x;\n$L_1:\n" M("end a") \
       "$L_x:\n\tret;\n}\n"

Test(instrument_flow, brx_idx_goes_to_every_listed_label) {
  /* 'a' ends once on each target's path */
  const char *text = BRX("$L_0, $L_1");
  cproton_ptx *p = NULL;
  cr_assert_null(warning_of(text, strlen(text), &p), "%s", cproton_ptx_kernel_warning(p, 0));
  cproton_ptx_stats st;
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(st.n_records, 3);
  assert_assembles(p);
  cproton_ptx_free(p);
  /* only $L_0 listed: $L_1 and its marker are dead code */
  text = BRX("$L_0");
  cr_assert_eq(cproton_ptx_instrument(text, strlen(text), NULL, &p), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "line 20: marker of scope 'a' is unreachable"), "%s",
            cproton_last_error());
}

Test(instrument_flow, what_cannot_be_followed_is_checked_in_text_order_with_a_warning) {
  /* A brx.idx whose list is unknown: no marker may be called unreachable;
   * the text order (start a, end a) is checked and the kernel says why. */
  const char *text = HEAD "\tmov.u32 %r1, %tid.x;\n\tbrx.idx %r1, $L_nowhere;\n" M("start a")
      M("end a") "\tret;\n}\n";
  cproton_ptx *p = NULL;
  const char *w = warning_of(text, strlen(text), &p);
  cr_assert(w && strstr(w, "kernel 'k': line 13: an indirect branch (brx.idx) without a "
                           ".branchtargets list before it; scope nesting is checked in text order"),
            "%s", w ? w : "(no warning)");
  cproton_ptx_free(p);
  /* the text-order check still refuses bad nesting */
  text = HEAD "\tbrx.idx %r1, $L_nowhere;\n" M("end a") "\tret;\n}\n";
  cr_assert_eq(cproton_ptx_instrument(text, strlen(text), NULL, &p), CPROTON_EPARSE);
  /* so does a branch to a label it cannot see (inside a nested block) */
  text = HEAD "\tbra.uni $L_in;\n\t{\n$L_in:\n" M("start a") "\t}\n" M("end a") "\tret;\n}\n";
  w = warning_of(text, strlen(text), &p);
  cr_assert(w && strstr(w, "line 12: a branch to a label not visible from it"), "%s",
            w ? w : "(no warning)");
  cproton_ptx_free(p);
}
