/* tools/viewer/lines.c -- the --lines view of a PC-sampling profile: source
 * lines ("file:line@function" frames) summed over every calling context,
 * hottest first, with their share of all samples and their main stall
 * reasons (share of the line's samples). Samples that stayed on kernel
 * nodes (no line table) count in the total only.
 * Called by main.c. Not a hot path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

#define TOP_STALLS 3

typedef struct line {
  const char *name;
  double samples;
  double *stalls; /* per stall column */
} line;

static double val(const vw_tree *t, int c, uint32_t i) {
  double v = c >= 0 ? t->cols[c].v[i] : 0;
  return isnan(v) ? 0 : v;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const line *)a)->name, ((const line *)b)->name);
}

static int by_samples(const void *a, const void *b) {
  double x = ((const line *)a)->samples, y = ((const line *)b)->samples;
  return x < y ? 1 : x > y ? -1 : by_name(a, b);
}

/* The raw "stalled_*" columns of the profile. */
static int stall_cols(vw_tree *t, int *cols, const char **names, int cap) {
  int n = 0;
  for (int pass = 0; pass < 2; pass++) {
    char **list = pass ? t->exc_raw : t->inc_raw;
    int count = pass ? t->n_exc_raw : t->n_inc_raw;
    for (int k = 0; k < count && n < cap; k++)
      if (!strncmp(list[k], "stalled_", 8) && (cols[n] = vw_col_get(t, list[k])) >= 0)
        names[n++] = list[k];
  }
  return n;
}

static void print_line(const line *l, double total, const char **snames,
                       int ns, FILE *out) {
  static char *esc;
  static size_t esc_cap;
  fprintf(out, "%12.0f %6.2f%%  %s", l->samples, 100 * l->samples / total,
          vw_escape(l->name, &esc, &esc_cap)); /* no raw control characters */
  uint8_t used[64] = {0};
  int k = 0;
  for (; k < TOP_STALLS; k++) {
    int best = -1;
    for (int s = 0; s < ns; s++)
      if (!used[s] && l->stalls[s] > 0 && (best < 0 || l->stalls[s] > l->stalls[best]))
        best = s;
    if (best < 0)
      break;
    used[best] = 1;
    fprintf(out, "%s%s %.0f%%", k ? ", " : "  [", snames[best] + 8,
            100 * l->stalls[best] / l->samples);
  }
  fputs(k ? "]\n" : "\n", out);
}

/* Sums duplicates (same frame name under several contexts) in place. */
static uint32_t merge(line *ls, uint32_t n, int ns) {
  qsort(ls, n, sizeof *ls, by_name);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (m && !strcmp(ls[m - 1].name, ls[i].name)) {
      ls[m - 1].samples += ls[i].samples;
      for (int s = 0; s < ns; s++)
        ls[m - 1].stalls[s] += ls[i].stalls[s];
    } else {
      ls[m++] = ls[i];
    }
  }
  return m;
}

int vw_lines(vw_tree *t, int top, FILE *out) {
  int c = vw_col_find(t, "num_samples") >= 0 ? vw_col_find(t, "num_samples") : -1;
  int known = 0;
  for (int k = 0; k < t->n_inc_raw; k++)
    known |= !strcmp(t->inc_raw[k], "num_samples");
  for (int k = 0; k < t->n_exc_raw; k++)
    known |= !strcmp(t->exc_raw[k], "num_samples");
  if (!known || (c = vw_col_get(t, "num_samples")) < 0)
    return vw_fail("%s: no PC samples (num_samples); profile with "
                   "mode=\"pcsampling\"", t->file);
  int scols[64];
  const char *snames[64];
  int ns = stall_cols(t, scols, snames, 64);
  line *ls = calloc(t->n ? t->n : 1, sizeof *ls);
  double *store = calloc((size_t)(t->n ? t->n : 1) * (size_t)(ns ? ns : 1), sizeof *store);
  if (!ls || !store) {
    free(ls), free(store);
    return vw_fail("out of memory");
  }
  double total = 0, with_line = 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    double s = val(t, c, i);
    total += s;
    if (s <= 0 || !strchr(t->nodes[i].name, '@'))
      continue;
    with_line += s;
    line *l = &ls[n];
    l->name = t->nodes[i].name;
    l->samples = s;
    l->stalls = store + (size_t)n++ * (size_t)(ns ? ns : 1);
    for (int k = 0; k < ns; k++)
      l->stalls[k] = val(t, scols[k], i);
  }
  n = merge(ls, n, ns);
  qsort(ls, n, sizeof *ls, by_samples);
  fprintf(out, "%.0f samples, %.2f%% on %u source lines\n", total,
           total > 0 ? 100 * with_line / total : 0.0, n);
  fprintf(out, "%12s %7s  %s\n", "samples", "share", "line  [main stall reasons]");
  for (uint32_t i = 0; i < n && (top <= 0 || i < (uint32_t)top); i++)
    print_line(&ls[i], total, snames, ns, out);
  free(ls);
  free(store);
  return 0;
}
