/* tools/viewer/derive.c -- Proton's derived metrics (viewer.derive_metrics),
 * as tables: time units, FLOP and byte rates, util from device peaks
 * (specs.py), percentages, hardware counters (hwm.c), and the raw-metric
 * fallback.
 *
 * Invariant: names and values follow triton/profiler/viewer.py 3.6 exactly,
 * including its quirks (case-sensitive derived names, "(inc)" columns that
 * filters leave stale); docs/viewer.md lists them.
 * Called by main.c once per profile. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

typedef struct factor {
  const char *metric; /* as typed after -m */
  const char *base;   /* source metric ("bytes", "flops16", "time", ...) */
  double factor;
  int kind; /* 0 rate, 1 time, 2 avg time, 3 cpu time, 4 avg cpu time */
} factor;

#define RATE(prefix, w, f)                                                     \
  {prefix "flop" w "/s", "flops" w, f, 0}
#define RATES(w) RATE("", w, 1), RATE("g", w, 1e9), RATE("t", w, 1e12)
#define TIMES(name, kind)                                                      \
  {name "/s", NULL, 1, kind}, {name "/ms", NULL, 1e-3, kind},                  \
      {name "/us", NULL, 1e-6, kind}, {name "/ns", NULL, 1e-9, kind}

static const factor factors[] = {
    {"byte/s", "bytes", 1, 0}, {"gbyte/s", "bytes", 1e9, 0},
    {"tbyte/s", "bytes", 1e12, 0}, RATES(""), RATES("8"), RATES("16"),
    RATES("32"), RATES("64"), TIMES("time", 1), TIMES("avg_time", 2),
    TIMES("cpu_time", 3), TIMES("avg_cpu_time", 4)};

static int matched_col(vw_tree *t, const char *metric) {
  char col[600];
  return vw_match_metric(t, metric, col, sizeof col) ? -1 : vw_col_get(t, col);
}

static int derive_factor(vw_tree *t, const factor *f) {
  char name[128];
  snprintf(name, sizeof name, "%s (inc)", f->metric);
  int c = vw_col_find(t, name);
  if (c >= 0)
    return c;
  double *sec = calloc(t->n ? t->n : 1, sizeof *sec);
  int is_cpu = f->kind >= 3, rc = -1, src = -1;
  if (!sec || vw_time_seconds(t, is_cpu ? "cpu_time" : "time", sec))
    goto out;
  if (f->kind == 0 && (src = matched_col(t, f->base)) < 0)
    goto out;
  if ((f->kind == 2 || f->kind == 4) && (src = vw_col_get(t, "count (inc)")) < 0)
    goto out;
  c = vw_col_new(t, name, -1);
  for (uint32_t i = 0; i < t->n; i++) {
    double v = sec[i];
    if (f->kind == 0)
      v = t->cols[src].v[i] / sec[i];
    else if (f->kind == 2 || f->kind == 4)
      v = sec[i] / t->cols[src].v[i];
    t->cols[c].v[i] = v / f->factor;
  }
  rc = c;
out:
  free(sec);
  return rc;
}

static int derive_percent(vw_tree *t, const char *metric) {
  char base[512], col[600], name[600];
  snprintf(base, sizeof base, "%s", metric);
  char *slash = strchr(base, '/');
  *slash = '\0';
  if (strcmp(slash + 1, "%") != 0)
    return vw_fail("%s: Unsupported unit %s", t->file, slash + 1);
  if (vw_match_metric(t, base, col, sizeof col))
    return -1;
  int src = vw_col_get(t, col);
  if (src < 0)
    return -1;
  int inc = strstr(col, "(inc)") != NULL;
  snprintf(name, sizeof name, "%s%s", metric, inc ? " (inc)" : "");
  int c = vw_col_find(t, name);
  if (c >= 0)
    return c;
  double total = 0;
  if (inc)
    total = t->cols[src].v[0];
  else
    for (uint32_t i = 0; i < t->n; i++)
      total += isnan(t->cols[src].v[i]) ? 0 : t->cols[src].v[i];
  c = vw_col_new(t, name, -1);
  for (uint32_t i = 0; i < t->n; i++)
    t->cols[c].v[i] = t->cols[src].v[i] / total * 100.0;
  return c;
}

int vw_derive(vw_tree *t, char **metrics, int n, int *out) {
  for (int k = 0; k < n; k++) {
    const char *m = metrics[k];
    int c = -2;
    if (!strcmp(m, "util"))
      c = vw_util(t);
    if (c == -2) /* a hardware counter: X*ns / pm_sampled_ns (hwm.c) */
      c = vw_hwm_column(t, m);
    for (size_t f = 0; c == -2 && f < sizeof factors / sizeof *factors; f++)
      if (!strcmp(m, factors[f].metric))
        c = derive_factor(t, &factors[f]);
    if (c == -2)
      c = strchr(m, '/') ? derive_percent(t, m) : matched_col(t, m);
    if (c < 0)
      return -1;
    out[k] = c;
  }
  return 0;
}
