/* io_hatchet_write_test.c -- the Hatchet JSON writer's documents compared
 * byte for byte: Proton 3.6's zeros on ROOT for inclusive metrics (flexible
 * ones with or without kernels, kernel ones when kernels ran), none for
 * "(exc)" metrics, and a value ROOT holds itself kept. The expected texts
 * are what Proton 3.6's libproton writes for the same calls (checked by
 * running it on the instrumentation backend, which needs no GPU), less its
 * leading empty line. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fake/fake.h"
#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
}

static int start(void) {
  int sid = cpt_start_session(cpt_tmp_path("hw"), "fake", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

/* Enters `name`, adds the integer metric `metric` (unless NULL), exits. */
static void scope(const char *name, const char *metric, int64_t v) {
  uint64_t id;
  cr_assert_eq(cproton_scope_enter(name, &id), CPROTON_OK);
  if (metric)
    cr_assert_eq(cproton_metric_add_int(id, metric, v), CPROTON_OK, "%s",
                 cproton_last_error());
  cr_assert_eq(cproton_scope_exit(name), CPROTON_OK);
}

/* `want` (Proton's file, 4 spaces a level) with each line's indentation
 * divided by 4: cproton's file is Proton's byte for byte but for that
 * (hatchet_write.c indents by 1). Caller frees. */
static char *reindented(const char *want) {
  char *out = malloc(strlen(want) + 1), *o = out;
  cr_assert_not_null(out);
  for (const char *p = want; *p;) {
    size_t sp = strspn(p, " ");
    cr_assert_eq(sp % 4, 0, "Proton indents by 4: %s", p);
    memset(o, ' ', sp / 4), o += sp / 4, p += sp;
    while (*p && *p != '\n')
      *o++ = *p++;
    if (*p)
      *o++ = *p++;
  }
  *o = 0;
  return out;
}

/* The session's document as finalize writes it, then finalizes. */
static void expect_document(int sid, const char *proton) {
  char *buf = NULL, *want = reindented(proton);
  size_t n = 0;
  cr_assert_eq(cproton_session_data(sid, 0, "hatchet", &buf, &n), CPROTON_OK,
               "%s", cproton_last_error());
  cr_assert_eq(n, strlen(want), "got:\n%.*s", (int)n, buf);
  cr_assert_arr_eq(buf, want, n, "got:\n%.*s", (int)n, buf);
  free(buf);
  free(want);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}

/* Proton 3.6's libproton writes this file for these calls: ROOT has a 0
 * for "f", "inc" and the properties "p" (a string) and "q", none for the
 * "(exc)" metrics "e" and "e2". */
Test(io_hatchet_write, root_zeros_every_inclusive_flexible_metric, .init = reset) {
  int sid = start();
  uint64_t id;
  cr_assert_eq(cproton_scope_enter("a", &id), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int(id, "inc", 1), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_double(id, "f", 2.5), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_string(id, "p (pty)", "x"), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int(id, "e (exc)", 3), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int(id, "q (pty)", 4), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("a"), CPROTON_OK);
  cr_assert_eq(cproton_scope_enter("b", &id), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_double(id, "e2 (exc)", 1.0), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("b"), CPROTON_OK);
  expect_document(sid,
      "[\n"
      "    {\n"
      "        \"children\": [\n"
      "            {\n"
      "                \"children\": [],\n"
      "                \"frame\": {\n"
      "                    \"name\": \"a\",\n"
      "                    \"type\": \"function\"\n"
      "                },\n"
      "                \"metrics\": {\n"
      "                    \"e\": 3,\n"
      "                    \"f\": 2.5,\n"
      "                    \"inc\": 1,\n"
      "                    \"p\": \"x\",\n"
      "                    \"q\": 4\n"
      "                }\n"
      "            },\n"
      "            {\n"
      "                \"children\": [],\n"
      "                \"frame\": {\n"
      "                    \"name\": \"b\",\n"
      "                    \"type\": \"function\"\n"
      "                },\n"
      "                \"metrics\": {\n"
      "                    \"e2\": 1.0\n"
      "                }\n"
      "            }\n"
      "        ],\n"
      "        \"frame\": {\n"
      "            \"name\": \"ROOT\",\n"
      "            \"type\": \"function\"\n"
      "        },\n"
      "        \"metrics\": {\n"
      "            \"f\": 0,\n"
      "            \"inc\": 0,\n"
      "            \"p\": 0,\n"
      "            \"q\": 0\n"
      "        }\n"
      "    },\n"
      "    {}\n"
      "]\n");
}

/* Kernels and flexible metrics: ROOT gets the kernel zeros and a 0 for
 * "flops"; "t (exc)" gets none (the rule of Proton 3.6's dumpHatchet). */
Test(io_hatchet_write, root_zeros_kernel_and_flexible_metrics, .init = reset) {
  int sid = start();
  uint64_t id;
  cr_assert_eq(cproton_scope_enter("a", &id), CPROTON_OK);
  cr_assert_eq(cp_fake_launch("k", 100, 0, 7), CPROTON_OK);
  cr_assert_eq(cp_fake_launch("k", 200, 0, 7), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_double(id, "flops", 2.5), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("a"), CPROTON_OK);
  scope("x", "t (exc)", 7);
  expect_document(sid,
      "[\n"
      "    {\n"
      "        \"children\": [\n"
      "            {\n"
      "                \"children\": [\n"
      "                    {\n"
      "                        \"children\": [],\n"
      "                        \"frame\": {\n"
      "                            \"name\": \"k\",\n"
      "                            \"type\": \"function\"\n"
      "                        },\n"
      "                        \"metrics\": {\n"
      "                            \"count\": 2,\n"
      "                            \"device_id\": \"0\",\n"
      "                            \"device_type\": \"CUDA\",\n"
      "                            \"time (ns)\": 300\n"
      "                        }\n"
      "                    }\n"
      "                ],\n"
      "                \"frame\": {\n"
      "                    \"name\": \"a\",\n"
      "                    \"type\": \"function\"\n"
      "                },\n"
      "                \"metrics\": {\n"
      "                    \"flops\": 2.5\n"
      "                }\n"
      "            },\n"
      "            {\n"
      "                \"children\": [],\n"
      "                \"frame\": {\n"
      "                    \"name\": \"x\",\n"
      "                    \"type\": \"function\"\n"
      "                },\n"
      "                \"metrics\": {\n"
      "                    \"t\": 7\n"
      "                }\n"
      "            }\n"
      "        ],\n"
      "        \"frame\": {\n"
      "            \"name\": \"ROOT\",\n"
      "            \"type\": \"function\"\n"
      "        },\n"
      "        \"metrics\": {\n"
      "            \"count\": 0,\n"
      "            \"flops\": 0,\n"
      "            \"time (ns)\": 0\n"
      "        }\n"
      "    },\n"
      "    {}\n"
      "]\n");
}

/* Only "(exc)" metrics and no kernel: ROOT stays empty (Proton's
 * test_scope_exclusive). */
Test(io_hatchet_write, exclusive_metrics_leave_root_empty, .init = reset) {
  int sid = start();
  scope("a", "e (exc)", 1);
  expect_document(sid,
      "[\n"
      "    {\n"
      "        \"children\": [\n"
      "            {\n"
      "                \"children\": [],\n"
      "                \"frame\": {\n"
      "                    \"name\": \"a\",\n"
      "                    \"type\": \"function\"\n"
      "                },\n"
      "                \"metrics\": {\n"
      "                    \"e\": 1\n"
      "                }\n"
      "            }\n"
      "        ],\n"
      "        \"frame\": {\n"
      "            \"name\": \"ROOT\",\n"
      "            \"type\": \"function\"\n"
      "        },\n"
      "        \"metrics\": {}\n"
      "    },\n"
      "    {}\n"
      "]\n");
}

/* ROOT's own metric (the C API adds to ROOT outside any scope; Proton's
 * ROOT never holds one) keeps its value; the others get their 0. */
Test(io_hatchet_write, a_value_root_holds_is_kept, .init = reset) {
  int sid = start();
  cr_assert_eq(cproton_metric_add_int(0, "inc", 5), CPROTON_OK);
  uint64_t id;
  cr_assert_eq(cproton_scope_enter("a", &id), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int(id, "inc", 1), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int(id, "other", 2), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("a"), CPROTON_OK);
  expect_document(sid,
      "[\n"
      "    {\n"
      "        \"children\": [\n"
      "            {\n"
      "                \"children\": [],\n"
      "                \"frame\": {\n"
      "                    \"name\": \"a\",\n"
      "                    \"type\": \"function\"\n"
      "                },\n"
      "                \"metrics\": {\n"
      "                    \"inc\": 1,\n"
      "                    \"other\": 2\n"
      "                }\n"
      "            }\n"
      "        ],\n"
      "        \"frame\": {\n"
      "            \"name\": \"ROOT\",\n"
      "            \"type\": \"function\"\n"
      "        },\n"
      "        \"metrics\": {\n"
      "            \"inc\": 5,\n"
      "            \"other\": 0\n"
      "        }\n"
      "    },\n"
      "    {}\n"
      "]\n");
}
