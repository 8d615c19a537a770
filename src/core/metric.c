/* core/metric.c -- metric name rules as data (suffix table) and folding.
 *
 * Invariant: a metric's kind is fixed by its first value. Not a hot path
 * for kernels (their metrics are fixed fields in core/data.c); called for
 * user metrics, launch metadata, intra-kernel and sampling metrics. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/compat.h"
#include "core/error.h"
#include "core/log.h"
#include "core/metric.h"

static const struct {
  const char *suffix;
  cp_metric_rule rule;
} suffix_rules[] = {
    {"(exc)", CP_METRIC_EXC},
    {"(pty)", CP_METRIC_PTY},
};

static const char *reserved[] = {"time (ns)", "count", "device_id",
                                 "device_type"};

cp_metric_rule cp_metric_rule_of(const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof suffix_rules / sizeof *suffix_rules; i++) {
    size_t k = strlen(suffix_rules[i].suffix);
    if (n >= k && memcmp(name + n - k, suffix_rules[i].suffix, k) == 0)
      return suffix_rules[i].rule;
  }
  return CP_METRIC_SUM;
}

size_t cp_metric_output_len(const char *name) {
  size_t n = strlen(name);
  if (cp_metric_rule_of(name) != CP_METRIC_SUM)
    n -= 5; /* both suffixes are five bytes */
  while (n > 0 && name[n - 1] == ' ')
    n--;
  return n;
}

int cp_metric_is_reserved(const char *name) {
  if (cp_compat_is_39()) /* Proton 3.9 takes any name (core/compat.h) */
    return 0;
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (strcmp(name, reserved[i]) == 0)
      return 1;
  return 0;
}

/* Proton's name for the type of `v` (Proton 3.6's integers are unsigned
 * unless negative, 3.9's all int64_t; cproton has one integer kind). */
static const char *type_name(const cp_value *v) {
  switch (v->kind) {
  case CP_VALUE_INT:
    return v->u.i < 0 || cp_compat_is_39() ? "int64_t" : "uint64_t";
  case CP_VALUE_DOUBLE:
    return "double";
  case CP_VALUE_INT_VEC:
    return "std::vector<int64_t>";
  case CP_VALUE_DOUBLE_VEC:
    return "std::vector<double>";
  default:
    return "std::string";
  }
}

int cp_value_is_vector(cp_value_kind kind) {
  return kind == CP_VALUE_INT_VEC || kind == CP_VALUE_DOUBLE_VEC;
}

int cp_value_dup(cp_value *dst, cp_value src, const char *name) {
  *dst = src;
  if (!cp_value_is_vector(src.kind))
    return CPROTON_OK;
  /* 8-byte elements either way; one extra keeps malloc(0) out */
  void *p = malloc(((size_t)src.u.v.n + 1) * sizeof(int64_t));
  if (!p)
    return cp_error_set(CPROTON_ENOMEM, "out of memory adding vector metric "
                        "'%s' (%u elements)", name, src.u.v.n);
  if (src.u.v.n) /* an empty vector may come with no elements at all */
    memcpy(p, src.kind == CP_VALUE_INT_VEC ? (void *)src.u.v.p.i : (void *)src.u.v.p.d,
           (size_t)src.u.v.n * sizeof(int64_t));
  if (src.kind == CP_VALUE_INT_VEC)
    dst->u.v.p.i = p;
  else
    dst->u.v.p.d = p;
  return CPROTON_OK;
}

void cp_value_release(cp_value *v) {
  if (v->kind == CP_VALUE_INT_VEC)
    free(v->u.v.p.i);
  else if (v->kind == CP_VALUE_DOUBLE_VEC)
    free(v->u.v.p.d);
  *v = (cp_value){CP_VALUE_INT, {.i = 0}};
}

/* Integer sums saturate at INT64_MAX / INT64_MIN rather than wrap: a
 * clamped total is still the right order of magnitude and keeps its sign,
 * a wrapped one is garbage. Promoting to double would change the metric's
 * type under the user's feet. Saturations are counted and logged (the
 * first 16, then at every power of two), so they are never silent. */
static atomic_ulong n_saturated;

static void add_saturating(int64_t *acc, int64_t v, const char *name) {
  int64_t sum;
  if (!__builtin_add_overflow(*acc, v, &sum)) {
    *acc = sum;
    return;
  }
  *acc = v > 0 ? INT64_MAX : INT64_MIN;
  unsigned long n = atomic_fetch_add(&n_saturated, 1) + 1;
  if (n <= 16 || (n & (n - 1)) == 0)
    cp_warn("integer metric '%s' saturated at %s (%lu saturated additions "
            "in this process)", name, v > 0 ? "INT64_MAX" : "INT64_MIN", n);
}

/* Element by element into the elements `acc` owns (a property's new
 * elements are copied over the old ones: same length, no allocation). */
static int fold_vector(cp_value *acc, cp_value v, cp_metric_rule rule,
                       const char *name) {
  if (acc->u.v.n != v.u.v.n)
    return cp_error_set(CPROTON_EINVAL,
                        "Vector metric size mismatch for valueId 0 (%s): "
                        "current=%u, new=%u",
                        name, acc->u.v.n, v.u.v.n);
  for (uint32_t k = 0; k < v.u.v.n; k++) {
    if (v.kind == CP_VALUE_DOUBLE_VEC)
      acc->u.v.p.d[k] = rule == CP_METRIC_PTY ? v.u.v.p.d[k] : acc->u.v.p.d[k] + v.u.v.p.d[k];
    else if (rule == CP_METRIC_PTY)
      acc->u.v.p.i[k] = v.u.v.p.i[k];
    else
      add_saturating(&acc->u.v.p.i[k], v.u.v.p.i[k], name);
  }
  return CPROTON_OK;
}

int cp_metric_fold(cp_value *acc, cp_value v, cp_metric_rule rule,
                   const char *name) {
  /* Proton's text: users and tests match on it. ESTATE, not EINVAL: the
   * value is fine, the metric already holds another type. */
  if (acc->kind != v.kind)
    return cp_error_set(CPROTON_ESTATE,
                        "Metric value type mismatch for valueId 0 (%s): "
                        "current=%s, new=%s",
                        name, type_name(acc), type_name(&v));
  if (cp_value_is_vector(v.kind))
    return fold_vector(acc, v, rule, name);
  if (rule == CP_METRIC_PTY || v.kind == CP_VALUE_STRING)
    *acc = v;
  else if (v.kind == CP_VALUE_INT)
    add_saturating(&acc->u.i, v.u.i, name);
  else
    acc->u.d += v.u.d;
  CP_ASSERT(acc->kind == v.kind);
  return CPROTON_OK;
}
