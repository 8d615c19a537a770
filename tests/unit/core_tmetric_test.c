/* core_tmetric_test.c -- tensor metrics without a GPU: the slot table
 * (sharing, kinds, limits), and records folded into sessions through the
 * public API, as a drained device buffer would hand them over (replays of a
 * captured record included). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/cct.h"
#include "core/device.h"
#include "core/session.h"
#include "core/strtab.h"
#include "core/tmetric.h"
#include "cproton/cproton.h"
#include "testutil.h"

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
  cp_tmetric_reset();
}

static int start(const char *name) {
  int sid = cpt_start_session(name, "none", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  return sid;
}

static void assert_profile(const char *path, const char *expected) {
  char *got, *want;
  int ok = cpt_json_file_matches(path, expected, &got, &want);
  cr_assert(ok, "%s\n  got: %s\n want: %s", path, got ? got : "(unreadable)",
            want ? want : "(bad expectation)");
  free(got), free(want);
}

static uint64_t dbits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

Test(core_tmetric, equal_slots_are_shared, .init = reset) {
  cp_tmetric_slot a = {.node = {cp_cct_root(), NULL}, .name = 1,
                       .kind = CP_VALUE_INT};
  cp_tmetric_slot b = a;
  b.kind = CP_VALUE_DOUBLE;
  uint32_t ia, ia2, ib;
  cr_assert_eq(cp_tmetric_reserve(&a, &ia), CPROTON_OK);
  cr_assert_eq(cp_tmetric_reserve(&b, &ib), CPROTON_OK);
  cr_assert_eq(cp_tmetric_reserve(&a, &ia2), CPROTON_OK);
  cr_assert_eq(ia, ia2);
  cr_assert_neq(ia, ib);
  cr_assert_eq(cp_tmetric_count(), 2);
  cr_assert_eq(cp_tmetric_get(ib)->kind, CP_VALUE_DOUBLE);
  cr_assert_null(cp_tmetric_get(2));
  cp_value v;
  uint64_t w = dbits(2.5);
  cr_assert_eq(cp_tmetric_value(cp_tmetric_get(ib), &w, &v), CPROTON_OK);
  cr_assert_eq(v.u.d, 2.5);
  w = (uint64_t)-7;
  cr_assert_eq(cp_tmetric_value(cp_tmetric_get(ia), &w, &v), CPROTON_OK);
  cr_assert_eq(v.u.i, -7);
  cr_assert_eq(cp_tmetric_get(ia)->n, 1); /* a scalar's n is 1 */
}

Test(core_tmetric, vector_slots_carry_their_length, .init = reset) {
  cp_tmetric_slot a = {.node = {cp_cct_root(), NULL}, .name = 1,
                       .kind = CP_VALUE_DOUBLE_VEC, .n = 3};
  cp_tmetric_slot b = a;
  b.n = 4;
  uint32_t ia, ib, bad;
  cr_assert_eq(cp_tmetric_reserve(&a, &ia), CPROTON_OK);
  cr_assert_eq(cp_tmetric_reserve(&b, &ib), CPROTON_OK);
  cr_assert_neq(ia, ib);
  b.n = 0;
  cr_assert_eq(cp_tmetric_reserve(&b, &bad), CPROTON_EINVAL);
  b.n = CPROTON_METRIC_MAX_VECTOR + 1;
  cr_assert_eq(cp_tmetric_reserve(&b, &bad), CPROTON_EINVAL);
  b = a, b.kind = CP_VALUE_INT, b.n = 2; /* a scalar of two values */
  cr_assert_eq(cp_tmetric_reserve(&b, &bad), CPROTON_EINVAL);
  uint64_t w[3] = {dbits(1.5), dbits(-2.0), dbits(0.25)};
  cp_value v;
  cr_assert_eq(cp_tmetric_value(cp_tmetric_get(ia), w, &v), CPROTON_OK);
  cr_assert_eq(v.kind, CP_VALUE_DOUBLE_VEC);
  cr_assert_eq(v.u.v.n, 3);
  cr_assert_eq(v.u.v.p.d[0], 1.5);
  cr_assert_eq(v.u.v.p.d[1], -2.0);
  cr_assert_eq(v.u.v.p.d[2], 0.25);
  cp_value_release(&v);
}

Test(core_tmetric, vector_records_fold_element_by_element, .init = reset) {
  const char *path = cpt_tmp_path("tm-vec.hatchet");
  int sid = start(path);
  uint64_t id;
  uint32_t v3, i2, x;
  cr_assert_eq(cproton_scope_enter("step", &id), CPROTON_OK);
  cr_assert_eq(cproton_tensor_metric_slot_vector(id, "hist", 1, 3, &v3),
               CPROTON_OK);
  cr_assert_eq(cproton_tensor_metric_slot_vector(id, "tok (pty)", 0, 2, &i2),
               CPROTON_OK);
  cr_assert_eq(cproton_tensor_metric_slot(id, "x", 0, &x), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("step"), CPROTON_OK);
  /* records of 4, 3 and 2 words, replayed twice, then padding where a
   * record did not fit (and garbage behind it, never read) */
  uint64_t words[] = {v3, dbits(1.0), dbits(2.0), dbits(3.0), i2, 5, 6, x, 1,
                      v3, dbits(0.5), dbits(0.5), dbits(0.5), i2, 7, -8, x, 2,
                      CPROTON_TENSOR_METRIC_PAD, 12345, 6};
  size_t n = 0;
  cr_assert_eq(cproton_tensor_metric_fold(words, 21, &n), CPROTON_OK, "%s",
               cproton_last_error());
  cr_assert_eq(n, 6);
  /* a truncated record: the fold stops there */
  cr_assert_eq(cproton_tensor_metric_fold(words, 3, &n), CPROTON_EPARSE);
  cr_assert_eq(n, 0);
  cr_assert(strstr(cproton_last_error(), "word 0 is truncated") != NULL,
            "%s", cproton_last_error());
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"x\":0},\"children\":["
      "{\"frame\":{\"name\":\"step\",\"type\":\"function\"},"
      "\"metrics\":{\"hist\":[1.5,2.5,3.5],\"tok\":[7,-8],\"x\":3},"
      "\"children\":[]}]},{}]");
}

Test(core_tmetric, host_vectors_and_their_errors, .init = reset) {
  const char *path = cpt_tmp_path("tm-hostvec.hatchet");
  int sid = start(path);
  uint64_t id;
  int64_t a[] = {1, 2, 3}, b[] = {10, 20, 30};
  double d[] = {0.5, 1.5};
  cr_assert_eq(cproton_scope_enter("s", &id), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int_vector(id, "v", a, 3), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int_vector(id, "v", b, 3), CPROTON_OK);
  a[0] = 99; /* the values were copied */
  cr_assert_eq(cproton_metric_add_int_vector(id, "v", b, 2), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(),
                   "Vector metric size mismatch for valueId 0 (v): "
                   "current=3, new=2") != NULL, "%s", cproton_last_error());
  cr_assert_eq(cproton_metric_add_double_vector(id, "v", d, 3), CPROTON_ESTATE);
  cr_assert(strstr(cproton_last_error(), "current=std::vector<int64_t>, "
                   "new=std::vector<double>") != NULL, "%s",
            cproton_last_error());
  cr_assert_eq(cproton_metric_add_double(id, "v", 1.0), CPROTON_ESTATE);
  cr_assert_eq(cproton_metric_add_double_vector(id, "d", d, 2), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int_vector(id, "empty", NULL, 0), CPROTON_OK);
  cr_assert_eq(cproton_metric_add_int_vector(id, "bad", NULL, 2), CPROTON_EINVAL);
  cr_assert_eq(cproton_scope_exit("s"), CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{},\"children\":["
      "{\"frame\":{\"name\":\"s\",\"type\":\"function\"},"
      "\"metrics\":{\"d\":[0.5,1.5],\"empty\":[],\"v\":[11,22,33]},"
      "\"children\":[]}]},{}]");
}

Test(core_tmetric, strings_and_the_limit_are_refused, .init = reset) {
  cp_tmetric_slot s = {.name = 1, .kind = CP_VALUE_STRING};
  uint32_t id;
  cr_assert_eq(cp_tmetric_reserve(&s, &id), CPROTON_EINVAL);
  s.kind = CP_VALUE_INT;
  for (uint32_t i = 0; i < CP_TMETRIC_MAX_SLOTS; i++) {
    s.name = i;
    cr_assert_eq(cp_tmetric_reserve(&s, &id), CPROTON_OK);
    cr_assert_eq(id, i);
  }
  s.name = CP_TMETRIC_MAX_SLOTS;
  cr_assert_eq(cp_tmetric_reserve(&s, &id), CPROTON_ELIMIT);
  cr_assert(strstr(cproton_last_error(), "65536") != NULL);
  s.name = 5; /* an existing slot is still found when the table is full */
  cr_assert_eq(cp_tmetric_reserve(&s, &id), CPROTON_OK);
  cr_assert_eq(id, 5);
}

Test(core_tmetric, records_fold_into_the_scope_they_were_reserved_on,
     .init = reset) {
  const char *path = cpt_tmp_path("tmetric.hatchet");
  uint32_t slot;
  cr_assert_eq(cproton_tensor_metric_slot(0, "x", 1, &slot), CPROTON_OK);
  cr_assert_eq(slot, CPROTON_TENSOR_METRIC_NONE); /* no session */
  cr_assert_eq(cp_tmetric_count(), 0);
  int sid = start(path);
  uint64_t id;
  uint32_t flops, bytes, peak;
  cr_assert_eq(cproton_scope_enter("fwd", &id), CPROTON_OK);
  cr_assert_eq(cproton_tensor_metric_slot(id, "flops", 1, &flops), CPROTON_OK);
  cr_assert_eq(cproton_tensor_metric_slot(id, "bytes", 0, &bytes), CPROTON_OK);
  cr_assert_eq(cproton_tensor_metric_slot(id, "peak (pty)", 0, &peak),
               CPROTON_OK);
  cr_assert_eq(cproton_tensor_metric_slot(id, "count", 0, &slot),
               CPROTON_EINVAL);
  cr_assert_eq(cproton_tensor_metric_slot(424242, "x", 0, &slot),
               CPROTON_ENOTFOUND);
  cr_assert_eq(cproton_tensor_metric_slot(CPROTON_CURRENT_OP, "x", 0, &slot),
               CPROTON_ESTATE);
  cr_assert_eq(cproton_scope_exit("fwd"), CPROTON_OK);
  /* The scope is closed when the buffer drains: a graph replaying its
   * records three times, then a later eager run. */
  uint64_t words[] = {flops, dbits(1.5), bytes, 10, peak, 3,
                      flops, dbits(1.5), bytes, 10, peak, 9,
                      flops, dbits(1.5), bytes, 10, peak, 4};
  size_t n = 0;
  cr_assert_eq(cproton_tensor_metric_fold(words, 18, &n), CPROTON_OK, "%s",
               cproton_last_error());
  cr_assert_eq(n, 9);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"bytes\":0,\"flops\":0,\"peak\":0},\"children\":["
      "{\"frame\":{\"name\":\"fwd\",\"type\":\"function\"},"
      "\"metrics\":{\"bytes\":30,\"flops\":4.5,\"peak\":4},"
      "\"children\":[]}]},{}]");
}

Test(core_tmetric, slots_outlive_sessions, .init = reset) {
  /* A graph captured in one session replays into the next one, after the
   * last finalize freed the context tree. */
  const char *p1 = cpt_tmp_path("tm1.hatchet");
  const char *p2 = cpt_tmp_path("tm2.hatchet");
  int s1 = start(p1);
  uint64_t id;
  uint32_t slot;
  cproton_scope_enter("step", &id);
  cr_assert_eq(cproton_tensor_metric_slot(id, "tokens", 0, &slot), CPROTON_OK);
  cproton_scope_exit("step");
  unsigned compactions = cp_session_compactions();
  cr_assert_eq(cproton_session_finalize(s1, NULL), CPROTON_OK);
  /* The finalize freed the tree (issue 16.13): the slot's path "step" was
   * re-created in the new one, so the records below read no freed node. */
  cr_assert_eq(cp_session_compactions(), compactions + 1);
  uint64_t words[] = {slot, 5};
  size_t n = 0;
  /* no session: the record belongs to none (folded into nothing) */
  cr_assert_eq(cproton_tensor_metric_fold(words, 2, &n), CPROTON_OK);
  int s2 = start(p2);
  cr_assert_eq(cproton_tensor_metric_fold(words, 2, &n), CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(s2, NULL), CPROTON_OK);
  assert_profile(p2,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"tokens\":0},\"children\":["
      "{\"frame\":{\"name\":\"step\",\"type\":\"function\"},"
      "\"metrics\":{\"tokens\":5},\"children\":[]}]},{}]");
}

Test(core_tmetric, bad_records_are_reported_and_good_ones_kept,
     .init = reset) {
  const char *path = cpt_tmp_path("tm-bad.hatchet");
  int sid = start(path);
  uint32_t slot, dslot;
  cr_assert_eq(cproton_tensor_metric_slot(0, "n", 0, &slot), CPROTON_OK);
  /* a record naming no slot: the length of what follows is unknown, so
   * the fold stops there and says how much it left unread */
  uint64_t words[] = {slot, 1, 999, 7, slot, 2, (uint64_t)1 << 40, 0};
  size_t n = 0;
  cr_assert_eq(cproton_tensor_metric_fold(words, 8, &n), CPROTON_EPARSE);
  cr_assert_eq(n, 1);
  cr_assert(strstr(cproton_last_error(), "word 2 names no reserved slot "
                   "(slot 999); its 6 words") != NULL, "%s",
            cproton_last_error());
  cr_assert_eq(cproton_tensor_metric_fold(words + 4, 4, &n), CPROTON_EPARSE);
  cr_assert_eq(n, 1);
  cr_assert_eq(cproton_tensor_metric_fold(NULL, 2, &n), CPROTON_EINVAL);
  /* a double value for an integer metric: Proton's type-mismatch error */
  cr_assert_eq(cproton_tensor_metric_slot(0, "n", 1, &dslot), CPROTON_OK);
  uint64_t mixed[] = {dslot, dbits(1.0), slot, 4};
  cr_assert_eq(cproton_tensor_metric_fold(mixed, 4, &n), CPROTON_ESTATE);
  cr_assert_eq(n, 1); /* the good record after it is folded */
  cr_assert(strstr(cproton_last_error(), "type mismatch") != NULL, "%s",
            cproton_last_error());
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  assert_profile(path,
      "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},"
      "\"metrics\":{\"n\":7},\"children\":[]},{}]");
}
