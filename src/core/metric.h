/* core/metric.h -- metric values and Proton's name-suffix rules
 * (cp_metric_*). */
#ifndef CP_CORE_METRIC_H
#define CP_CORE_METRIC_H

#include <stddef.h>
#include <stdint.h>

typedef enum cp_metric_rule {
  CP_METRIC_SUM = 0, /* summed over entries here and (by viewers) into parents */
  CP_METRIC_EXC = 1, /* "(exc)": summed over entries, never into parents */
  CP_METRIC_PTY = 2  /* "(pty)": a property, the last value wins */
} cp_metric_rule;

typedef enum cp_value_kind {
  CP_VALUE_INT = 0,
  CP_VALUE_DOUBLE = 1,
  CP_VALUE_STRING = 2, /* strtab id; a string always replaces the value */
  /* Proton 3.9's vector metrics: `n` elements, summed element by element;
   * a vector keeps its length (another length is an error) */
  CP_VALUE_INT_VEC = 3,
  CP_VALUE_DOUBLE_VEC = 4
} cp_value_kind;

typedef struct cp_value {
  cp_value_kind kind;
  union {
    int64_t i;
    double d;
    uint32_t s;
    struct {
      union {
        int64_t *i; /* CP_VALUE_INT_VEC */
        double *d;  /* CP_VALUE_DOUBLE_VEC */
      } p;
      uint32_t n; /* elements */
    } v;
  } u;
} cp_value;

/* Whether `kind` is a vector kind. */
int cp_value_is_vector(cp_value_kind kind);

/* `src` in *dst with a vector's elements copied to memory *dst owns (a
 * scalar is copied as is). Errors: ENOMEM. */
int cp_value_dup(cp_value *dst, cp_value src, const char *name);

/* Frees what cp_value_dup allocated; *v is left a scalar zero. */
void cp_value_release(cp_value *v);

/* The rule for a metric name, by its suffix. */
cp_metric_rule cp_metric_rule_of(const char *name);

/* Folds `v` into `acc` under `rule` (a vector element by element, into
 * the elements `acc` owns). Errors: ESTATE when the kinds differ (a metric
 * keeps the kind of its first value), with Proton's message "Metric value
 * type mismatch for valueId 0 (name): current=.., new=.."; EINVAL when two
 * vectors differ in length, with Proton 3.9's "Vector metric size mismatch
 * for valueId 0 (name): current=3, new=2". */
int cp_metric_fold(cp_value *acc, cp_value v, cp_metric_rule rule,
                   const char *name);

/* The length of the name Proton writes for `name`: a prefix of it, without
 * its "(exc)" or "(pty)" suffix and the spaces before that. */
size_t cp_metric_output_len(const char *name);

/* Names that the kernel metrics own; user metrics may not reuse them
 * (Proton 3.6; under Proton 3.9, core/compat.h, none is reserved). */
int cp_metric_is_reserved(const char *name);

#endif
