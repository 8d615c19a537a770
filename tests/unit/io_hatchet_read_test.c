/* io_hatchet_read_test.c -- the Hatchet reader through the public API
 * (cproton/profile.h): reference files, values, device info, limits and
 * every bad-input class with its file:line:column message. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"
#include "testutil/testutil.h"

#define REF CP_DATA_DIR "/proton-3.6/"

static cproton_profile *parse_ok(const char *text) {
  cproton_profile *p = NULL;
  int rc = cproton_profile_parse(text, strlen(text), "t.hatchet", &p);
  cr_assert_eq(rc, CPROTON_OK, "%s", cproton_last_error());
  return p;
}

static void parse_bad(const char *text, int code, const char *msg) {
  cproton_profile *p = (cproton_profile *)1;
  int rc = cproton_profile_parse(text, strlen(text), "t.hatchet", &p);
  cr_assert_eq(rc, code, "rc %d for %s: %s", rc, text, cproton_last_error());
  cr_assert_null(p);
  cr_assert(strstr(cproton_last_error(), msg), "message \"%s\" lacks \"%s\"",
            cproton_last_error(), msg);
}

Test(io_hatchet_read, reference_files_open) {
  const char *files[] = {"instrumentation_tree", "pcsampling", "proton_hook",
                         "proton_python", "proton_shadow"};
  for (size_t i = 0; i < 5; i++) {
    char path[512];
    snprintf(path, sizeof path, REF "%s.hatchet", files[i]);
    cproton_profile *p = NULL;
    cr_assert_eq(cproton_profile_open(path, &p), CPROTON_OK, "%s",
                 cproton_last_error());
    cr_assert_str_eq(cproton_profile_node_name(p, 0), "ROOT");
    cr_assert_eq(cproton_profile_device_count(p), 1);
    cproton_device_info d;
    cr_assert_eq(cproton_profile_device(p, 0, &d), CPROTON_OK);
    cr_assert_str_eq(d.type, "CUDA");
    cr_assert_str_eq(d.arch, "90");
    cr_assert_eq(d.num_sms, 132);
    cr_assert_eq(d.clock_rate_khz, 1980000);
    cproton_profile_close(p);
  }
}

Test(io_hatchet_read, hook_tree_shape_and_metrics) {
  cproton_profile *p = NULL;
  cr_assert_eq(cproton_profile_open(REF "proton_hook.hatchet", &p), 0);
  cr_assert_eq(cproton_profile_node_count(p), 15);
  cr_assert_eq(cproton_profile_node_child_count(p, 0), 6);
  uint32_t add = cproton_profile_node_child(p, 0, 1);
  cr_assert_str_eq(cproton_profile_node_name(p, add), "add_kernel");
  cr_assert_str_eq(cproton_profile_node_type(p, add), "function");
  cr_assert_eq(cproton_profile_node_parent(p, add), 0);
  cr_assert_eq(cproton_profile_node_depth(p, add), 1);
  cproton_metric_value v;
  cr_assert_eq(cproton_profile_node_metric_by_name(p, add, "time (ns)", &v), 0);
  cr_assert_eq(v.kind, CPROTON_METRIC_INT);
  cr_assert_eq(v.i, 17343148);
  cr_assert_eq(cproton_profile_node_metric_by_name(p, add, "device_id", &v), 0);
  cr_assert_eq(v.kind, CPROTON_METRIC_STRING);
  cr_assert_str_eq(v.s, "0");
  cr_assert(isnan(v.d));
  uint32_t it0 = cproton_profile_node_child(p, 0, 2);
  cr_assert_eq(cproton_profile_node_metric_count(p, it0), 0);
  cr_assert_eq(cproton_profile_node_metric_by_name(p, it0, "count", &v),
               CPROTON_ENOTFOUND);
  uint32_t key;
  cr_assert_eq(cproton_profile_metric_find(p, "count", &key), 0);
  cr_assert_str_eq(cproton_profile_metric_name(p, key), "count");
  cr_assert_eq(cproton_profile_metric_find(p, "nope", &key), CPROTON_ENOTFOUND);
  /* bad ids never crash */
  cr_assert_null(cproton_profile_node_name(p, 999));
  cr_assert_eq(cproton_profile_node_parent(p, 0), CPROTON_PROFILE_NO_NODE);
  cr_assert_eq(cproton_profile_node_child(p, 0, 99), CPROTON_PROFILE_NO_NODE);
  cr_assert_eq(cproton_profile_node_metric_at(p, 0, 99, NULL, NULL),
               CPROTON_EINVAL);
  cproton_profile_close(p);
  cproton_profile_close(NULL);
}

Test(io_hatchet_read, values_and_escapes) {
  cproton_profile *p = parse_ok(
      "[{\"frame\": {\"name\": \"a\\u00e9\\ud83d\\ude00\\n\", \"x\": [1, {}]},"
      " \"metrics\": {\"i\": -7, \"d\": 2.5e3, \"big\": 123456789012345678901,"
      " \"n\": NaN, \"b\": true, \"z\": null, \"i\": 8},"
      " \"children\": [], \"extra\": {\"k\": [1, 2]}}]");
  cr_assert_str_eq(cproton_profile_node_name(p, 0), "a\xc3\xa9\xf0\x9f\x98\x80\n");
  cproton_metric_value v;
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "i", &v), 0);
  cr_assert_eq(v.i, 8); /* duplicate key: last wins */
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "d", &v), 0);
  cr_assert_eq(v.kind, CPROTON_METRIC_DOUBLE);
  cr_assert_eq(v.d, 2500.0);
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "big", &v), 0);
  cr_assert_eq(v.kind, CPROTON_METRIC_DOUBLE);
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "n", &v), 0);
  cr_assert(isnan(v.d));
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "b", &v), 0);
  cr_assert_eq(v.i, 1);
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "z", &v),
               CPROTON_ENOTFOUND);
  cr_assert_eq(cproton_profile_device_count(p), 0);
  cproton_profile_close(p);
}

Test(io_hatchet_read, children_before_frame_keep_preorder) {
  cproton_profile *p = parse_ok(
      "[{\"children\": [{\"children\": [{\"frame\": {\"name\": \"c\"}}],"
      " \"frame\": {\"name\": \"b\"}}, {\"frame\": {\"name\": \"d\"}}],"
      " \"frame\": {\"name\": \"a\"}, \"metrics\": {\"m\": 1}},"
      " {\"HIP\": {\"1\": {\"arch\": \"gfx942\", \"num_sms\": 304}}}]");
  cr_assert_eq(cproton_profile_node_count(p), 4);
  const char *want[] = {"a", "b", "c", "d"};
  for (uint32_t i = 0; i < 4; i++)
    cr_assert_str_eq(cproton_profile_node_name(p, i), want[i]);
  cr_assert_eq(cproton_profile_node_parent(p, 2), 1);
  cr_assert_eq(cproton_profile_node_depth(p, 2), 2);
  cproton_device_info d;
  cr_assert_eq(cproton_profile_device(p, 0, &d), 0);
  cr_assert_str_eq(d.type, "HIP");
  cr_assert_str_eq(d.index, "1");
  cr_assert_str_eq(d.arch, "gfx942");
  cproton_profile_close(p);
}

Test(io_hatchet_read, bad_inputs_name_position) {
  parse_bad("", CPROTON_EPARSE, "t.hatchet:1:1: expected '['");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"metrics\": {\"c\": 1",
            CPROTON_EPARSE, "truncated");
  parse_bad("[{\"frame\": {\"name\": \"R\"},\n  \"metrics\": {\"c\": 1,}}]",
            CPROTON_EPARSE, "t.hatchet:2:22:");
  parse_bad("{}", CPROTON_EPARSE, "expected '['");
  parse_bad("[{\"metrics\": {}}]", CPROTON_EPARSE, "no \"frame\"");
  parse_bad("[{\"frame\": {\"type\": \"function\"}}]", CPROTON_EPARSE,
            "no \"name\"");
  parse_bad("[{\"frame\": {\"name\": 3}}]", CPROTON_EPARSE, "must be a string");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"metrics\": {\"t\": 1e400}}]",
            CPROTON_ELIMIT, "out of range");
  parse_bad("[{\"frame\": {\"name\": \"R\xc0\xaf\"}}]", CPROTON_EPARSE,
            "invalid UTF-8");
  parse_bad("[{\"frame\": {\"name\": \"R\\u0000\"}}]", CPROTON_EPARSE,
            "bad \\u escape");
  parse_bad("[{\"frame\": {\"name\": \"R\"}}, {\"CUDA\": 5}]", CPROTON_EPARSE,
            "expected an object");
  parse_bad("[{\"frame\": {\"name\": \"R\"}}, "
            "{\"CUDA\": {\"0\": {\"num_sms\": -3}}}]",
            CPROTON_EPARSE, "out of range");
  parse_bad("[{\"frame\": {\"name\": \"R\"}}] x", CPROTON_EPARSE,
            "unexpected character");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"children\": {}}]", CPROTON_EPARSE,
            "must be a list");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"children\": [1]}]",
            CPROTON_EPARSE, "expected a node object");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"metrics\": {\"a\": tru}}]",
            CPROTON_EPARSE, "invalid literal");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"x\": [1 2]}]", CPROTON_EPARSE,
            "expected ','");
}

Test(io_hatchet_read, limits) {
  /* a string over the limit */
  size_t n = CPROTON_PROFILE_MAX_STRING + 100;
  char *big = malloc(n + 64);
  strcpy(big, "[{\"frame\": {\"name\": \"");
  size_t off = strlen(big);
  memset(big + off, 'a', n);
  strcpy(big + off + n, "\"}}]");
  cproton_profile *p = NULL;
  cr_assert_eq(cproton_profile_parse(big, strlen(big), "big", &p),
               CPROTON_ELIMIT);
  cr_assert(strstr(cproton_last_error(), "big:1:21:"), "%s",
            cproton_last_error());
  free(big);
  /* nesting over the limit, without recursion */
  size_t depth = CPROTON_PROFILE_MAX_DEPTH + 2, unit = 40;
  char *deep = malloc(depth * unit + 16), *o = deep;
  o += sprintf(o, "[");
  for (size_t i = 0; i < depth; i++)
    o += sprintf(o, "{\"frame\":{\"name\":\"x\"},\"children\":[");
  *o = '\0';
  cr_assert_eq(cproton_profile_parse(deep, strlen(deep), "deep", &p),
               CPROTON_ELIMIT);
  free(deep);
}

Test(io_hatchet_read, open_errors) {
  cproton_profile *p = NULL;
  cr_assert_eq(cproton_profile_open("/nonexistent/x.hatchet", &p), CPROTON_EIO);
  cr_assert(strstr(cproton_last_error(), "/nonexistent/x.hatchet"));
  cr_assert_eq(cproton_profile_open(NULL, &p), CPROTON_EINVAL);
  cr_assert_eq(cproton_profile_parse("[]", 2, NULL, NULL), CPROTON_EINVAL);
}

Test(io_hatchet_read, file_window_refills) {
  /* > 4 MiB so the reader's window refills mid-file */
  const char *path = cpt_tmp_path("wide.hatchet");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f, "[{\"frame\": {\"name\": \"ROOT\"}, \"metrics\": {\"count\": 0},"
             " \"children\": [");
  for (int i = 0; i < 60000; i++)
    fprintf(f, "%s{\"frame\": {\"name\": \"kernel_%d\", \"type\": \"function\"},"
               " \"metrics\": {\"count\": %d, \"time (ns)\": %d.5}}",
            i ? ",\n" : "", i, i % 100, i);
  fprintf(f, "]}]\n");
  fclose(f);
  cproton_profile *p = NULL;
  cr_assert_eq(cproton_profile_open(path, &p), 0, "%s", cproton_last_error());
  cr_assert_eq(cproton_profile_node_count(p), 60001);
  cproton_metric_value v;
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 60000, "time (ns)", &v), 0);
  cr_assert_eq(v.d, 59999.5);
  cr_assert_str_eq(cproton_profile_node_name(p, 60000), "kernel_59999");
  cproton_profile_close(p);
}

Test(io_hatchet_read, vector_metrics) {
  /* as Proton 3.9 writes them: one element per line, [] when empty */
  cproton_profile *p = parse_ok(
      "[{\"frame\": {\"name\": \"R\"}, \"metrics\": {\"e\": [], \"iv\": [\n"
      "  1,\n  -2\n], \"v\": [0.5, null, true], \"x\": 4}, \"children\": []}]");
  cproton_metric_value v;
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "iv", &v), CPROTON_OK);
  cr_assert_eq(v.kind, CPROTON_METRIC_VECTOR);
  cr_assert_eq(v.n, 2);
  cr_assert_eq(v.v[0], 1.0);
  cr_assert_eq(v.v[1], -2.0);
  cr_assert(isnan(v.d));
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "v", &v), CPROTON_OK);
  cr_assert_eq(v.n, 3);
  cr_assert_eq(v.v[0], 0.5);
  cr_assert(isnan(v.v[1]));
  cr_assert_eq(v.v[2], 1.0);
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "e", &v), CPROTON_OK);
  cr_assert_eq(v.kind, CPROTON_METRIC_VECTOR);
  cr_assert_eq(v.n, 0);
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "x", &v), CPROTON_OK);
  cr_assert_eq(v.i, 4);
  cproton_profile_close(p);
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"metrics\": {\"v\": [1, \"a\"]}}]",
            CPROTON_EPARSE, "t.hatchet:1:48: vector metric \"v\" must hold "
            "numbers, found string");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"metrics\": {\"v\": [1 2]}}]",
            CPROTON_EPARSE, "expected ',' or ']'");
  parse_bad("[{\"frame\": {\"name\": \"R\"}, \"metrics\": {\"count\": [1]}}]",
            CPROTON_EPARSE, "metric \"count\" must be a number, found an array");
}
