/* tools/viewer/timecol.c -- finding a metric's column the way Proton's
 * viewer does (match_available_metrics) and reading a time column in
 * seconds (get_time_seconds). Its own file so that derive.c and util.c,
 * which both need it, do not call each other (util.c is below derive.c).
 * Called by derive.c, util.c and roofline.c. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "viewer.h"

static const struct { const char *unit; double f; } time_units[] = {
    {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};

/* match_available_metrics(): case-insensitive, ignoring the unit. Writes the
 * DataFrame column name ("time (ns) (inc)") into out. */
int vw_match_metric(vw_tree *t, const char *metric, char *out, size_t cap) {
  char low[512];
  size_t n = 0;
  for (; metric[n] && n + 1 < sizeof low; n++)
    low[n] = (char)tolower((unsigned char)metric[n]);
  low[n] = '\0';
  for (int pass = 0; pass < 2; pass++) {
    char **list = pass ? t->exc_raw : t->inc_raw;
    int count = pass ? t->n_exc_raw : t->n_inc_raw;
    for (int i = 0; i < count; i++) {
      char bare[512];
      snprintf(bare, sizeof bare, "%s", list[i]);
      char *paren = strchr(bare, '(');
      if (paren)
        *paren = '\0';
      size_t l = strlen(bare);
      while (l && isspace((unsigned char)bare[l - 1]))
        bare[--l] = '\0';
      char *b = bare;
      while (isspace((unsigned char)*b))
        b++;
      for (char *c = b; *c; c++)
        *c = (char)tolower((unsigned char)*c);
      if (!strcmp(low, list[i]) || !strcmp(low, b)) {
        snprintf(out, cap, "%s%s", list[i], pass ? "" : " (inc)");
        return 0;
      }
    }
  }
  return vw_fail("%s: Metric %s is not found. Use the --list flag to list "
                 "available metrics", t->file, metric);
}

/* get_time_seconds(): the matched time column times its unit's factor. */
int vw_time_seconds(vw_tree *t, const char *metric, double *out) {
  char col[600];
  if (vw_match_metric(t, metric, col, sizeof col))
    return -1;
  int c = vw_col_get(t, col);
  if (c < 0)
    return -1;
  const char *open = strchr(col, '('), *close = open ? strchr(open, ')') : 0;
  double f = 0;
  for (size_t k = 0; close && k < 4; k++)
    if ((size_t)(close - open - 1) == strlen(time_units[k].unit) &&
        !strncmp(open + 1, time_units[k].unit, (size_t)(close - open - 1)))
      f = time_units[k].f;
  if (f == 0)
    return vw_fail("%s: metric \"%s\" has no time unit (s, ms, us, ns)",
                   t->file, col);
  for (uint32_t i = 0; i < t->n; i++)
    out[i] = t->cols[c].v[i] * f;
  return 0;
}


int vw_derive_time_seconds(vw_tree *t, double *out) {
  return vw_time_seconds(t, "time", out);
}
