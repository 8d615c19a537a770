/* core_session_test.c -- sessions end to end through the public API and the
 * fake backend: trees written, read back with jansson, compared whole. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
}

static int start(const char *name, const char *data, const char *backend) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = name;
  o.data = data;
  o.backend = backend;
  int sid = -1;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK, "%s",
               cproton_last_error());
  return sid;
}

/* Loads `path` and checks it equals the JSON text `expected`. */
static void assert_profile(const char *path, const char *expected) {
  json_t *got = cpt_load_json(path);
  json_t *want = cpt_parse_json(expected);
  cr_assert_not_null(got);
  cr_assert_not_null(want);
  char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
  char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
  cr_assert_str_eq(g, w);
  free(g), free(w);
  json_decref(got), json_decref(want);
}

#define KERNEL(n, c, t)                                                        \
  "{\"frame\":{\"name\":\"" n "\",\"type\":\"function\"},\"metrics\":{"        \
  "\"count\":" #c ",\"device_id\":\"0\",\"device_type\":\"CUDA\","             \
  "\"time (ns)\":" #t "},\"children\":[]}"

Test(core_session, nested_scopes_and_kernels, .init = reset) {
  const char *path = cpt_tmp_path("nested");
  int sid = start(path, NULL, "fake");
  cp_fake_add_device(0);
  uint64_t id;
  cr_assert_eq(cproton_scope_enter("fwd", &id), CPROTON_OK);
  cp_fake_launch("matmul", 100, 0, 7);
  cp_fake_launch("matmul", 50, 0, 7);
  cr_assert_eq(cproton_scope_enter("attn", NULL), CPROTON_OK);
  cp_fake_launch("softmax", 10, 0, 7);
  cr_assert_eq(cproton_metric_add_double(0, "flops", 2.5), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("attn"), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int(id, "bytes", 64), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit(NULL), CPROTON_OK);
  cp_fake_launch("top", 1, 0, 7);
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  assert_profile(full,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"count\":0,\"time (ns)\":0},\"children\":["
      "{\"frame\":{\"name\":\"fwd\",\"type\":\"function\"},"
      "\"metrics\":{\"bytes\":64},\"children\":["
      "{\"frame\":{\"name\":\"attn\",\"type\":\"function\"},"
      "\"metrics\":{\"flops\":2.5},\"children\":["
      KERNEL("softmax", 1, 10) "]},"
      KERNEL("matmul", 2, 150) "]},"
      KERNEL("top", 1, 1) "]},"
      "{\"CUDA\":{\"0\":{\"arch\":\"90\",\"bus_width\":6016,"
      "\"clock_rate\":1980000,\"memory_clock_rate\":3201000,"
      "\"num_sms\":132}}}]");
}
