/* tools/viewer/main.c -- cproton-viewer: Proton's profile viewer in C.
 *
 *   cproton-viewer [-l] [-m a,b] [-i RE | -e RE] [-t X] [-d N] [-f FMT]
 *                  [--print-sorted] [--diff-profile OTHER] [--no-color]
 *                  [--demangle] [--output tree|folded|json|csv]
 *                  [--svg OUT.svg] [--lines[=N]] [--ranks] FILE [MORE...]
 *   cproton-viewer --advise [--json] FILE [MORE...]
 *   cproton-viewer --merge-traces OUT.pftrace IN.pftrace...
 *
 * Concern: command line and the order of steps (load, derive, filter, diff,
 * render), which follows triton/profiler/viewer.py. The environment is read
 * here only (NO_COLOR, through the configuration table: cproton_config_get). Exit status: 0 ok, 1 bad input, 2 bad usage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advise.h"
#include "viewer.h"

#define MAX_METRICS 16

static void lower_bare(const char *raw, char *out, size_t cap) {
  snprintf(out, cap, "%s", raw);
  char *p = strchr(out, '(');
  if (p)
    *p = '\0';
  size_t n = strlen(out);
  while (n && out[n - 1] == ' ')
    out[--n] = '\0';
  for (char *c = out; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
}

static void list_metrics(const vw_tree *t) {
  char buf[1024];
  puts("Available inclusive metrics:");
  for (int i = 0; i < t->n_inc_raw; i++)
    lower_bare(t->inc_raw[i], buf, sizeof buf), printf("- %s\n", buf);
  puts("Available exclusive metrics:");
  for (int i = 0; i < t->n_exc_raw; i++)
    lower_bare(t->exc_raw[i], buf, sizeof buf), printf("- %s\n", buf);
  vw_hwm_list(t, stdout); /* -m X for each X*ns (PM sampling) */
}

static int split_metrics(const vw_tree *t, char *spec, char **out) {
  static char fallback[1024];
  if (!spec) { /* our default; Proton prints nothing without -m */
    int has_time = 0;
    for (int i = 0; i < t->n_inc_raw; i++)
      has_time |= !strncmp(t->inc_raw[i], "time (", 6);
    if (!has_time && t->n_inc_raw + t->n_exc_raw <= 1)
      return vw_fail("%s: no metrics in the profile", t->file);
    snprintf(fallback, sizeof fallback, "%s",
             has_time ? "time/ms"
             : t->n_inc_raw ? t->inc_raw[0] : t->exc_raw[1]);
    out[0] = fallback;
    return 1;
  }
  int n = 0;
  for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
    if (n == MAX_METRICS)
      return vw_fail("at most %d metrics", MAX_METRICS);
    out[n++] = tok;
  }
  return n ? n : vw_fail("empty metric list");
}

/* Derives the shown metrics (and --color-by's, into *ccol, else -1), then
 * filters. */
static int prepare(const vw_args *a, char **m, int n, vw_tree *t, int *cols,
                   int *ccol) {
  char *cm = a->color_by;
  *ccol = -1;
  if (vw_derive(t, m, n, cols) || (cm && vw_derive(t, &cm, 1, ccol)))
    return -1;
  return vw_filter(t, a->include, a->exclude, a->threshold, cols[0]);
}

static void warn_negative_bytes(const vw_tree *t, const int *cols, int n) {
  for (int k = 0; k < n; k++) {
    if (strcmp(t->cols[cols[k]].name, "bytes (inc)"))
      continue;
    for (uint32_t i = 0; i < t->n; i++)
      if (t->cols[cols[k]].v[i] < 0) {
        printf("Warning: Negative byte values detected, this is usually the "
               "result of a datatype overflow\n\n");
        return;
      }
  }
}

/* Sum of raw metric `name` over every node, or -1 when no node has it. */
static double metric_total(vw_tree *t, const char *name) {
  int present = 0;
  for (int i = 0; i < t->n_exc_raw; i++)
    present |= !strcmp(t->exc_raw[i], name);
  char buf[64];
  snprintf(buf, sizeof buf, "%s", name);
  char *m = buf;
  int col;
  if (!present || vw_derive(t, &m, 1, &col))
    return -1;
  double sum = 0;
  for (uint32_t i = 0; i < t->n; i++)
    sum += isnan(t->cols[col].v[i]) ? 0 : t->cols[col].v[i];
  return sum;
}

/* Intra-kernel records lost to full buffers are never silent: say so, with
 * the metrics that show where (cproton's instrumentation profiles). */
static void warn_drops(vw_tree *t) {
  double dropped = metric_total(t, "dropped_records");
  double unpaired = metric_total(t, "unpaired_records");
  if (dropped > 0 || unpaired > 0)
    printf("Warning: %.0f intra-kernel records were overwritten by full buffers "
           "and %.0f left unpaired; -m dropped_records (per kernel) and -m "
           "unpaired_records (per scope) show where; a larger buffer_size "
           "avoids it\n\n", dropped > 0 ? dropped : 0, unpaired > 0 ? unpaired : 0);
}

/* --svg OUT: opened before anything is read or printed, so that an output
 * that is one of the inputs, a directory or a device fails at once. */
static int open_svg(const vw_args *a, cproton_output **out) {
  const char *inputs[] = {a->file, a->diff};
  *out = NULL;
  if (a->svg && cproton_output_open(a->svg, inputs, 2, out) != CPROTON_OK)
    return vw_fail("--svg: %s", cproton_last_error());
  return 0;
}

/* --roofline OUT: written after the tree is derived (the same peaks and
 * time columns as -m util); committed only when complete. */
static int write_roofline(const vw_args *a, vw_tree *t) {
  const char *inputs[] = {a->file, a->diff};
  cproton_output *o;
  if (!a->roofline)
    return 0;
  if (cproton_output_open(a->roofline, inputs, 2, &o) != CPROTON_OK)
    return vw_fail("--roofline: %s", cproton_last_error());
  int rc = vw_roofline(t, cproton_output_stream(o));
  if (cproton_output_close(o, rc != 0) != CPROTON_OK && rc == 0)
    rc = vw_fail("--roofline: %s", cproton_last_error());
  return rc;
}

/* Writes the SVG into `svg` (when asked) and commits it; discards it when
 * `rc` already says the run failed. */
static int finish_svg(cproton_output *svg, int rc, vw_tree *t, int col,
                      int ccol, const vw_render_opts *o) {
  if (!svg)
    return rc;
  if (rc == 0)
    rc = vw_svg(t, col, ccol, o, cproton_output_stream(svg));
  if (cproton_output_close(svg, rc != 0) != CPROTON_OK && rc == 0)
    rc = vw_fail("--svg: %s", cproton_last_error());
  return rc;
}

static int run(vw_args *a) {
  vw_tree t, r;
  memset(&r, 0, sizeof r);
  char *metrics[MAX_METRICS];
  int cols[MAX_METRICS], rcols[MAX_METRICS], rc = -1, n, ccol, rccol;
  cproton_output *svg;
  if (open_svg(a, &svg))
    return -1;
  if (vw_tree_load(a->file, &t)) {
    vw_tree_free(&t);
    cproton_output_close(svg, 1);
    return -1;
  }
  if (a->list || a->lines) { /* args.c refuses --svg with these */
    rc = a->list ? (list_metrics(&t), 0) : vw_lines(&t, a->lines, stdout);
    vw_tree_free(&t);
    cproton_output_close(svg, 1);
    return rc;
  }
  if (!a->output || !strcmp(a->output, "tree"))
    warn_drops(&t); /* machine-readable outputs stay clean */
  char *spec = a->metrics ? strdup(a->metrics) : NULL;
  if ((n = split_metrics(&t, spec, metrics)) < 0 ||
      prepare(a, metrics, n, &t, cols, &ccol))
    goto out;
  if (a->diff && (vw_tree_load(a->diff, &r) ||
                  prepare(a, metrics, n, &r, rcols, &rccol) ||
                  vw_diff(&t, &r, cols, n)))
    goto out;
  int color = a->force_color ||
              (!a->no_color && !cproton_config_get("NO_COLOR") && isatty(1));
  vw_render_opts o = {a->depth, a->format, color, a->print_sorted,
                      a->demangle, a->output};
  rc = vw_render(&t, cols, n, &o, stdout);
  rc = finish_svg(svg, rc, &t, cols[0], ccol, &o);
  if (rc == 0)
    rc = write_roofline(a, &t);
  svg = NULL;
  warn_negative_bytes(&t, cols, n);
out:
  cproton_output_close(svg, 1); /* a failure before the render */
  free(spec);
  vw_tree_free(&t);
  vw_tree_free(&r);
  return rc;
}
/* Several ranks: each loaded and prepared like one profile, then merged
 * (merge.c) and shown with sum / mean / max / imbalance per metric. */
static int run_merge(vw_args *a) {
  int n = a->n_files, rc = -1, n_m = 0;
  vw_tree *trees = calloc((size_t)n, sizeof *trees);
  int(*cols)[MAX_METRICS] = calloc((size_t)n, sizeof *cols);
  const int **colp = calloc((size_t)n, sizeof *colp);
  char *metrics[MAX_METRICS], *spec = NULL;
  int out_cols[4 * MAX_METRICS];
  if (!trees || !cols || !colp) {
    vw_fail("out of memory");
    goto out;
  }
  for (int r = 0; r < n; r++)
    if (vw_tree_load(a->files[r], &trees[r]))
      goto out;
  if (vw_merge_check(trees, n))
    goto out;
  spec = a->metrics ? strdup(a->metrics) : NULL;
  if ((n_m = split_metrics(&trees[0], spec, metrics)) < 0)
    goto out;
  for (int r = 0; r < n; r++) {
    int ccol; /* no --svg with ranks (args.c), so no --color-by */
    if (prepare(a, metrics, n_m, &trees[r], cols[r], &ccol))
      goto out;
    colp[r] = cols[r];
  }
  vw_merge(trees, n, colp, n_m, out_cols);
  printf("%d ranks: %s", n, a->files[0]);
  for (int r = 1; r < n; r++)
    printf(", %s", a->files[r]);
  printf("\ncolumns:");
  for (int c = 0; c < 4 * n_m; c++)
    printf("%s %s", c ? "," : "", trees[0].cols[out_cols[c]].name);
  printf("\nimbalance = max / mean - 1 (0: balanced)\n\n");
  int color = a->force_color ||
              (!a->no_color && !cproton_config_get("NO_COLOR") && isatty(1));
  vw_render_opts o = {a->depth, a->format, color, a->print_sorted,
                      a->demangle, a->output};
  rc = vw_render(&trees[0], out_cols, 4 * n_m, &o, stdout);
out:
  free(spec);
  for (int r = 0; trees && r < n; r++)
    vw_tree_free(&trees[r]);
  free(trees), free(cols), free(colp);
  return rc;
}

static int run_merge_traces(const vw_args *a) {
  if (cproton_trace_merge((const char *const *)a->files, (size_t)a->n_files,
                          a->merge_traces) != CPROTON_OK)
    return vw_fail("%s", cproton_last_error());
  printf("merged %d traces into %s (one process track group per rank)\n",
         a->n_files, a->merge_traces);
  return 0;
}

/* --advise: every profile that opens is advised on; one that does not is
 * named on stderr and skipped (the advice covers the others). */
static int run_advise(const vw_args *a) {
  const cproton_profile **ps = calloc((size_t)a->n_files, sizeof *ps);
  int n = 0, rc = -1;
  if (!ps)
    return vw_fail("out of memory");
  for (int i = 0; i < a->n_files; i++) {
    cproton_profile *p;
    if (cproton_profile_open(a->files[i], &p) == CPROTON_OK)
      ps[n++] = p;
    else
      fprintf(stderr, "cproton-viewer: %s (skipped)\n", cproton_last_error());
  }
  if (n == 0)
    vw_fail("--advise: no profile could be read");
  else
    rc = vw_advise(ps, n, a->json, stdout);
  for (int i = 0; i < n; i++)
    cproton_profile_close((cproton_profile *)ps[i]);
  free(ps);
  return rc;
}

int main(int argc, char **argv) {
  static char outbuf[1 << 16];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  vw_args a;
  int rc = vw_parse_args(argc, argv, &a);
  if (rc == 1) {
    vw_usage(stdout);
    return 0;
  }
  if (rc) {
    fprintf(stderr, "cproton-viewer: %s\n", vw_errmsg);
    return 2;
  }
  if (a.merge_traces)
    rc = run_merge_traces(&a);
  else if (a.advise)
    rc = run_advise(&a);
  else if (a.n_files > 1 || a.ranks)
    rc = run_merge(&a);
  else
    rc = run(&a);
  if (fflush(stdout) != 0 && rc == 0) {
    fprintf(stderr, "cproton-viewer: write error\n");
    return 1;
  }
  if (rc) {
    fprintf(stderr, "cproton-viewer: %s\n", vw_errmsg);
    return 1;
  }
  return 0;
}
