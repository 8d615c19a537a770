/* tools/viewer/hwm.c -- hardware-metric columns (issue 27): a profile of
 * the PM-sampling mode stores, per kernel node and by the sum rule,
 * `pm_sampled_ns` (the ns of the kernel that samples covered: the weight)
 * and, per counter X, `X*ns` = sum of value x overlap ns. X's value on any
 * frame -- a kernel, or inclusively a scope or call path -- is
 *
 *   X = (X*ns summed over the frame's subtree) / (pm_sampled_ns likewise)
 *
 * the time-weighted mean of the samples under it; none (NaN) where no
 * sample covered anything. This file finds such counters and builds their
 * columns; derive.c (-m X), main.c (--list), svg.c's caller (--color-by),
 * roofline.c (tooltips) and the advisor read them. Uses tree.c only. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "viewer.h"

#define WEIGHT "pm_sampled_ns"
#define SUFFIX "*ns"

/* Whether raw metric `raw` is "<metric>*ns" (metric case-insensitive). */
static int is_weighted(const char *raw, const char *metric) {
  size_t m = strlen(metric), r = strlen(raw);
  return r == m + strlen(SUFFIX) && !strncasecmp(raw, metric, m) &&
         !strcmp(raw + m, SUFFIX);
}

/* The raw name of `metric`'s weighted sum, or NULL when the profile has
 * none. */
static const char *weighted_raw(const vw_tree *t, const char *metric) {
  for (int pass = 0; pass < 2; pass++) {
    char **list = pass ? t->exc_raw : t->inc_raw;
    int n = pass ? t->n_exc_raw : t->n_inc_raw;
    for (int i = 0; i < n; i++)
      if (is_weighted(list[i], metric))
        return list[i];
  }
  return NULL;
}

/* The subtree sum of raw metric `raw` ("raw (inc)"): Proton's inclusive
 * column when the root has it, else summed here from the nodes. */
static int inclusive(vw_tree *t, const char *raw) {
  char name[600];
  snprintf(name, sizeof name, "%s (inc)", raw);
  int c = vw_col_find(t, name);
  for (int k = 0; c < 0 && k < t->n_inc_raw; k++)
    if (!strcmp(t->inc_raw[k], raw))
      c = vw_col_get(t, name);
  if (c >= 0)
    return c;
  int e = vw_col_get(t, raw);
  if (e < 0)
    return -1;
  c = vw_col_new(t, name, e);
  vw_col_subtree_sum(t, c, e);
  return c;
}

int vw_hwm_column(vw_tree *t, const char *metric) {
  const char *raw = weighted_raw(t, metric);
  if (!raw)
    return -2;
  char name[600];
  snprintf(name, sizeof name, "%.*s (inc)",
           (int)(strlen(raw) - strlen(SUFFIX)), raw);
  int c = vw_col_find(t, name);
  if (c >= 0)
    return c;
  if (!vw_hwm_present(t))
    return vw_fail("%s: %s has no %s beside it", t->file, raw, WEIGHT);
  int num = inclusive(t, raw), den = num < 0 ? -1 : inclusive(t, WEIGHT);
  if (den < 0)
    return -1;
  c = vw_col_new(t, name, -1);
  for (uint32_t i = 0; i < t->n; i++) {
    double w = t->cols[den].v[i], v = t->cols[num].v[i];
    t->cols[c].v[i] = w > 0 && isfinite(v) ? v / w : NAN;
  }
  return c;
}

int vw_hwm_present(const vw_tree *t) {
  for (int pass = 0; pass < 2; pass++) {
    char **list = pass ? t->exc_raw : t->inc_raw;
    int n = pass ? t->n_exc_raw : t->n_inc_raw;
    for (int i = 0; i < n; i++)
      if (!strcmp(list[i], WEIGHT))
        return 1;
  }
  return 0;
}

int vw_hwm_list(const vw_tree *t, FILE *f) {
  int n = 0;
  if (!vw_hwm_present(t))
    return 0;
  for (int pass = 0; pass < 2; pass++) {
    char **list = pass ? t->exc_raw : t->inc_raw;
    int count = pass ? t->n_exc_raw : t->n_inc_raw;
    for (int i = 0; i < count; i++) {
      size_t len = strlen(list[i]), s = strlen(SUFFIX);
      if (len <= s || strcmp(list[i] + len - s, SUFFIX) ||
          !strcmp(list[i], WEIGHT))
        continue;
      if (!n++)
        fputs("Available hardware metrics (X*ns / " WEIGHT "):\n", f);
      fprintf(f, "- %.*s\n", (int)(len - s), list[i]);
    }
  }
  return n;
}
