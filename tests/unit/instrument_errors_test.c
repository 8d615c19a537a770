/* instrument_errors_test.c -- the pass on small synthetic kernels: errors
 * that name kernel, scope and line; unsupported input; exits with
 * predicates and labels; several kernels in one module. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"
#include "testutil/testutil.h"

/* Header lines 1-11; BODY starts on line 12. */
#define HEAD                                                                   \
  ".version 8.7\n.target sm_90a\n.address_size 64\n"                           \
  ".visible .entry k(\n\t.param .u64 k_param_0,\n"                             \
  "\t.param .u64 .ptr .global .align 1 k_param_1\n)\n.reqntid 64\n{\n"         \
  "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n"
#define TAIL "\tret;\n}\n"
#define M(s) "\t// begin inline asm\n\t// @cproton record " s "\n\t// end inline asm\n"

static int inst(const char *text, const cproton_ptx_options *o, cproton_ptx **p) {
  return cproton_ptx_instrument(text, strlen(text), o, p);
}

static void expect_error(const char *text, int code, const char *const *parts) {
  cproton_ptx *p = (cproton_ptx *)1;
  cr_assert_eq(inst(text, NULL, &p), code, "got: %s", cproton_last_error());
  cr_assert_null(p);
  for (; *parts; parts++)
    cr_assert(strstr(cproton_last_error(), *parts), "'%s' not in: %s", *parts, cproton_last_error());
}

static int ptxas_ok(const char *text) {
  if (system("ptxas --version > /dev/null 2>&1"))
    return 1;
  const char *path = cpt_tmp_path("e.ptx");
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "ptxas -arch=sm_90a %s -o %s.o", path, path);
  return system(cmd) == 0;
}

Test(instrument_errors, end_without_start_names_kernel_scope_line) {
  expect_error(HEAD M("end a") TAIL, CPROTON_EPARSE,
               (const char *const[]){"kernel 'k'", "line 13", "'a'", "without a start", NULL});
}

Test(instrument_errors, crossing_scopes) {
  expect_error(HEAD M("start a") M("start b") M("end a") M("end b") TAIL, CPROTON_EPARSE,
               (const char *const[]){"kernel 'k'", "line 19", "end of scope 'a' crosses scope 'b'",
                                     "started on line 16", NULL});
}

Test(instrument_errors, never_ended_and_restarted) {
  expect_error(HEAD M("start a") TAIL, CPROTON_EPARSE,
               (const char *const[]){"line 13", "'a' is never ended", NULL});
  expect_error(HEAD M("start a") M("start a") TAIL, CPROTON_EPARSE,
               (const char *const[]){"line 16", "starts again while open since line 13", NULL});
}

Test(instrument_errors, malformed_markers) {
  expect_error(HEAD M("begin a") TAIL, CPROTON_EPARSE, (const char *const[]){"line 13", "malformed", NULL});
  expect_error(HEAD M("start") TAIL, CPROTON_EPARSE, (const char *const[]){"malformed", NULL});
  expect_error(HEAD M("start a b") TAIL, CPROTON_EPARSE, (const char *const[]){"malformed", NULL});
  expect_error(HEAD M("start a\"b") TAIL, CPROTON_EPARSE, (const char *const[]){"quote", NULL});
}

Test(instrument_errors, unsupported_input) {
  expect_error(".version 8.7\n.target sm_90a\n.address_size 64\n.func f()\n{\n" M("start a") M("end a")
               "\tret;\n}\n", CPROTON_EUNSUPPORTED, (const char *const[]){"line 7", ".func", "__forceinline__", NULL});
  expect_error(".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n"
               ".reqntid 32\n{\n" M("start a") M("end a") TAIL, CPROTON_EUNSUPPORTED,
               (const char *const[]){"kernel 'k'", "last .param", NULL});
  expect_error(".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n"
               "{\n" M("start a") M("end a") TAIL, CPROTON_EINVAL, (const char *const[]){"num_warps", NULL});
  expect_error(HEAD M("start a") M("end a") "\tret;\n", CPROTON_EPARSE, (const char *const[]){"no closing", NULL});
}

Test(instrument_errors, twice_is_refused) {
  cproton_ptx *p;
  cr_assert_eq(inst(HEAD M("start a") M("end a") TAIL, NULL, &p), CPROTON_OK);
  cproton_ptx *q = NULL;
  cr_assert_eq(inst(cproton_ptx_text(p, NULL), NULL, &q), CPROTON_EUNSUPPORTED);
  cr_assert(strstr(cproton_last_error(), "already instrumented"));
  cproton_ptx_free(p);
}

Test(instrument_errors, bad_options) {
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  o.counter = (cproton_counter)7;
  cproton_ptx *p;
  cr_assert_eq(inst(HEAD TAIL, &o, &p), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "counter"));
  cproton_ptx_options_init(&o);
  o.buffer_size = 8;
  cr_assert_eq(inst(HEAD M("start a") M("end a") TAIL, &o, &p), CPROTON_EINVAL);
  cr_assert_eq(cproton_ptx_instrument(NULL, 0, NULL, &p), CPROTON_EINVAL);
}

Test(instrument_errors, predicated_and_labelled_exits) {
  const char *text = HEAD "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n" M("start a")
      "\t@%p1 ret;\n\t@!%p1 bra $L_x;\n" M("end a") "$L_x: exit; // done\n" M("end a") TAIL;
  /* the second end follows an unconditional exit: no path reaches it */
  cproton_ptx *p = NULL;
  cr_assert_eq(inst(text, NULL, &p), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "line 24: marker of scope 'a' is unreachable"), "%s",
            cproton_last_error());
  text = HEAD "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n" M("start a")
      "\t@%p1 ret;\n\t@!%p1 bra $L_x;\n" M("end a") "$L_x: exit; // done\n\t@!%p1 ret.uni;\n" TAIL;
  cr_assert_eq(inst(text, NULL, &p), CPROTON_OK, "%s", cproton_last_error());
  cproton_ptx_stats st;
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(st.n_exits, 4);
  const char *out = cproton_ptx_text(p, NULL);
  /* each exit branches, guarded like the exit, to one shared finalize */
  cr_assert(strstr(out, "\t@%p1 bra $cpr_fin;\n"));
  cr_assert(strstr(out, "\t@!%p1 bra $cpr_fin;\n"));
  cr_assert(strstr(out, "$L_x: bra $cpr_fin; // done"));
  const char *fin = strstr(out, "$cpr_fin:");
  cr_assert(fin && !strstr(fin + 1, "$cpr_fin:"), "one finalize block");
  cr_assert(ptxas_ok(out), "ptxas rejected:\n%s", out);
  cproton_ptx_free(p);
}

/* Issue 24.3: the marker's site used to be read before the exit's on the
 * same line, so the writer copied a negative length (a heap overflow). */
Test(instrument_errors, marker_after_exit_on_one_line) {
  const char *text = HEAD "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 3;\n" M("start a")
      "\t@%p1 ret; // @cproton record end a\n" M("start b") M("end b") TAIL;
  cproton_ptx *p = NULL;
  cr_assert_eq(inst(text, NULL, &p), CPROTON_OK, "%s", cproton_last_error());
  const char *out = cproton_ptx_text(p, NULL);
  const char *br = strstr(out, "\t@%p1 bra $cpr_fin; // @cproton record end a\n");
  cr_assert(br, "the exit becomes the branch, the comment kept:\n%s", out);
  cr_assert(strstr(br, "// @cproton record start b") > br, "text after the line is kept in order");
  cproton_ptx_stats st;
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(st.n_records, 4);
  cr_assert(ptxas_ok(out), "ptxas rejected:\n%s", out);
  cproton_ptx_free(p);
}

/* Issue 24.4: a marker with no words read uninitialized lengths (MSan);
 * a marker after the closing brace would be written outside the kernel. */
Test(instrument_errors, bare_and_misplaced_markers) {
  expect_error(HEAD "\t// @cproton\n" TAIL, CPROTON_EPARSE, (const char *const[]){"line 12", "malformed", NULL});
  expect_error(HEAD "\t// @cproton  \t\n" TAIL, CPROTON_EPARSE, (const char *const[]){"line 12", "malformed", NULL});
  expect_error("// @cproton\n" HEAD TAIL, CPROTON_EPARSE, (const char *const[]){"line 1", "malformed", NULL});
  expect_error(HEAD M("start a") "\tret;\n} // @cproton record end a\n", CPROTON_EPARSE,
               (const char *const[]){"line 16", "closing '}'", NULL});
}

Test(instrument_errors, only_marked_kernels_change) {
  const char *other = ".visible .entry plain(\n\t.param .u64 plain_param_0\n)\n{\n\tret;\n}\n";
  char text[4096];
  snprintf(text, sizeof text, "%s%s" M("start a") M("end a") TAIL "%s", HEAD, "", other);
  cproton_ptx *p;
  cr_assert_eq(inst(text, NULL, &p), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cproton_ptx_n_kernels(p), 1);
  const char *out = cproton_ptx_text(p, NULL);
  size_t ol = strlen(out), tl = strlen(other);
  cr_assert(ol > tl && !strcmp(out + ol - tl, other), "the unmarked kernel changed");
  cr_assert(ptxas_ok(out));
  cproton_ptx_free(p);
}

Test(instrument_errors, block_comments_and_strings_are_not_code) {
  const char *text = HEAD "\t/* .entry fake( { ret; \n */\n" M("start a") M("end a") TAIL
                          "\t.file 1 \"/a//b.py\"\n";
  cproton_ptx *p;
  cr_assert_eq(inst(text, NULL, &p), CPROTON_OK, "%s", cproton_last_error());
  cproton_ptx_stats st;
  cproton_ptx_kernel_stats(p, 0, &st);
  cr_assert_eq(st.n_exits, 1);
  cr_assert(ptxas_ok(cproton_ptx_text(p, NULL)));
  cproton_ptx_free(p);
}

#define E(s) "\t// begin inline asm\n\t// @cproton proton.event " s "\n\t// end inline asm\n"

/* Events stay outside the scope nesting: a start before a loop and its end
 * inside it, starts and ends crossing scopes, an end on one path only --
 * all accepted, with the event's parent marking it as an event. */
Test(instrument_errors, events_need_not_nest) {
  const char *text = HEAD E("start gap") M("start a") "$L_loop:\n" E("end gap") M("end a") M("start a")
      E("start gap") "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_loop;\n" M("end a") E("end gap") TAIL;
  cproton_ptx *p = NULL;
  cr_assert_eq(inst(text, NULL, &p), CPROTON_OK, "%s", cproton_last_error());
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.n_scopes, 2);
  cr_assert_str_eq(l.scope_names[0], "gap");
  cr_assert_eq(l.scope_parents[0], CPROTON_SCOPE_PARENT_EVENT);
  cr_assert_eq(l.scope_parents[1], -1);
  cr_assert(ptxas_ok(cproton_ptx_text(p, NULL)));
  cproton_ptx_free(p);
}

/* Unbalanced events and a name used both ways are refused with kernel,
 * event and line. */
Test(instrument_errors, unbalanced_events) {
  expect_error(HEAD M("start a") E("start ev") M("end a") TAIL, CPROTON_EPARSE,
               (const char *const[]){"kernel 'k'", "line 16", "event 'ev' is started but never ended", NULL});
  expect_error(HEAD E("end ev") TAIL, CPROTON_EPARSE,
               (const char *const[]){"kernel 'k'", "line 13", "event 'ev' is ended but never started", NULL});
  expect_error(HEAD M("start x") E("start x") E("end x") M("end x") TAIL, CPROTON_EPARSE,
               (const char *const[]){"kernel 'k'", "line 16", "'x' is used both as a scope and as an event", NULL});
  expect_error(HEAD E("begin ev") TAIL, CPROTON_EPARSE, (const char *const[]){"line 13", "malformed marker", NULL});
  /* the source line, from the `.loc` before the marker and the `.file`
   * table Triton writes after the code */
  expect_error(HEAD "\t.loc\t1 42 0\n" E("start ev") TAIL "\t.file\t1 \"/src/kern.py\"\n", CPROTON_EPARSE,
               (const char *const[]){"kernel 'k'", "line 14 (kern.py:42)", "event 'ev' is started but never ended",
                                     NULL});
}
