/* tools/viewer/roofline.c -- `--roofline FILE`: one SVG chart, log-log, of
 * every kernel frame's achieved FLOP/s (its flops, flops8..flops64 summed,
 * over its inclusive time) against its arithmetic intensity (those FLOPs
 * over its `bytes`), under the ceilings of the profile's first device: one
 * flat compute roof per operand width the profile has FLOPs of, and the
 * memory roof bytes/s × intensity (peaks as specs.py computes them, the
 * ones `-m util` uses). A kernel frame is one with a device_id; frames
 * without FLOPs, bytes or time cannot be placed and are counted in the
 * subtitle, never dropped silently. When the profile has hardware metrics
 * (PM sampling, hwm.c), each kernel's tooltip also gives its measured
 * dram_throughput% and sm_throughput% -- where it really sits against the
 * memory and compute roofs -- and the circle carries them as data-dram /
 * data-sm. Called once by main.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

/* The column of raw metric `name`, or -1 when the profile has none (not an
 * error: a profile may have FLOPs of one width only). */
static int column(vw_tree *t, const char *name) {
  uint32_t key;
  if (cproton_profile_metric_find(t->p, name, &key) != CPROTON_OK)
    return -1;
  return vw_col_get(t, name);
}

#define W_PX 900.0
#define H_PX 560.0
#define L_PX 80.0 /* plot area: left, top, right, bottom margins */
#define T_PX 50.0
#define R_PX 30.0
#define B_PX 60.0

typedef struct plot {
  double x0, x1, y0, y1; /* log10 ranges */
} plot;

static double px(const plot *p, double v) {
  return L_PX + (log10(v) - p->x0) / (p->x1 - p->x0) * (W_PX - L_PX - R_PX);
}
static double py(const plot *p, double v) {
  return H_PX - B_PX - (log10(v) - p->y0) / (p->y1 - p->y0) * (H_PX - T_PX - B_PX);
}

/* Per-frame FLOPs over every width column present, and the widths' peaks. */
static int flops_of(vw_tree *t, const cproton_device_info *d, double *fl,
                    double peaks[5]) {
  static const char *names[] = {"flops", "flops8", "flops16", "flops32",
                                "flops64"};
  static const int widths[] = {0, 8, 16, 32, 64};
  for (int k = 0; k < 5; k++) {
    peaks[k] = 0;
    int c = column(t, names[k]);
    if (c < 0)
      continue;
    if (widths[k] && vw_peak_flops(t->file, d, widths[k], &peaks[k]))
      return -1;
    for (uint32_t i = 0; i < t->n; i++)
      fl[i] += isnan(t->cols[c].v[i]) ? 0 : t->cols[c].v[i];
  }
  return 0;
}

static void axes(FILE *f, const plot *p) {
  fprintf(f, "<g class=\"axes\" stroke=\"#999\" font-size=\"11\">\n");
  for (int e = (int)ceil(p->x0); e <= (int)floor(p->x1); e++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" stroke=\"none\">1e%d</text>\n",
            px(p, pow(10, e)), T_PX, px(p, pow(10, e)), H_PX - B_PX,
            px(p, pow(10, e)) - 10, H_PX - B_PX + 16, e);
  for (int e = (int)ceil(p->y0); e <= (int)floor(p->y1); e++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
            "<text x=\"8\" y=\"%.1f\" stroke=\"none\">1e%d</text>\n",
            L_PX, py(p, pow(10, e)), W_PX - R_PX, py(p, pow(10, e)),
            py(p, pow(10, e)) + 4, e);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" stroke=\"none\">FLOP per byte"
          "</text><text x=\"8\" y=\"%.1f\" stroke=\"none\">FLOP/s</text></g>\n",
          W_PX / 2, H_PX - 20, T_PX - 10);
}

/* One roof per width: min(peak, bw * intensity), drawn as a polyline. */
static void roofs(FILE *f, const plot *p, const double peaks[5], double bw) {
  static const char *labels[] = {"", "fp8", "fp16", "fp32", "fp64"};
  double lo = pow(10, p->x0), hi = pow(10, p->x1);
  if (bw * lo < pow(10, p->y0)) /* the slope enters at the bottom edge */
    lo = pow(10, p->y0) / bw;
  for (int k = 1; k < 5; k++) {
    if (peaks[k] <= 0)
      continue;
    double ridge = peaks[k] / bw;
    fprintf(f, "<polyline class=\"roof\" data-width=\"%s\" data-peak=\"%g\" "
            "fill=\"none\" stroke=\"#c33\" points=\"%.1f,%.1f %.1f,%.1f "
            "%.1f,%.1f\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s "
            "%.3g FLOP/s</text>\n", labels[k], peaks[k], px(p, lo),
            py(p, bw * lo), px(p, ridge), py(p, peaks[k]), px(p, hi),
            py(p, peaks[k]), px(p, hi) - 150, py(p, peaks[k]) - 4,
            labels[k], peaks[k]);
  }
  fprintf(f, "<g class=\"bandwidth\" data-bps=\"%g\"/>\n", bw);
}

static void range(double *lo, double *hi, double v) {
  if (v > 0 && isfinite(v)) {
    *lo = v < *lo ? v : *lo;
    *hi = v > *hi ? v : *hi;
  }
}

/* Axis ranges: every point and ridge, a decade of margin on each side. */
static plot bounds(const vw_tree *t, const uint8_t *ok, const double *ai,
                   const double *perf, const double peaks[5], double bw) {
  double xl = INFINITY, xh = 0, yl = INFINITY, yh = 0;
  for (uint32_t i = 0; i < t->n; i++)
    if (ok[i])
      range(&xl, &xh, ai[i]), range(&yl, &yh, perf[i]);
  for (int k = 1; k < 5; k++)
    if (peaks[k] > 0)
      range(&xl, &xh, peaks[k] / bw), range(&yl, &yh, peaks[k]);
  plot p = {floor(log10(xl)) - 1, ceil(log10(xh)) + 1, floor(log10(yl)) - 1,
            ceil(log10(yh)) + 1};
  return p;
}

/* The measured counters a tooltip gives, when the profile has them. */
static const struct {
  const char *metric, *attr;
} measured[] = {{"dram_throughput%", "data-dram"},
                {"sm_throughput%", "data-sm"}};
#define N_MEASURED (sizeof measured / sizeof *measured)

/* Columns of the measured counters (-1: the profile has none). */
static void measured_cols(vw_tree *t, int *cols) {
  for (size_t k = 0; k < N_MEASURED; k++) {
    cols[k] = vw_hwm_column(t, measured[k].metric);
    cols[k] = cols[k] < 0 ? -1 : cols[k];
  }
}

static void measured_attrs(FILE *f, const vw_tree *t, const int *cols,
                           uint32_t i) {
  for (size_t k = 0; k < N_MEASURED; k++)
    if (cols[k] >= 0 && isfinite(t->cols[cols[k]].v[i]))
      fprintf(f, " %s=\"%.4g\"", measured[k].attr, t->cols[cols[k]].v[i]);
}

static void measured_title(FILE *f, const vw_tree *t, const int *cols,
                           uint32_t i) {
  int n = 0;
  for (size_t k = 0; k < N_MEASURED; k++)
    if (cols[k] >= 0 && isfinite(t->cols[cols[k]].v[i]))
      fprintf(f, "%s%s %.3g", n++ ? ", " : "\nmeasured (PM sampling): ",
              measured[k].metric, t->cols[cols[k]].v[i]);
}

static void points(FILE *f, const vw_tree *t, const plot *p, const uint8_t *ok,
                   const double *ai, const double *perf, const double *sec,
                   const int *hw) {
  for (uint32_t i = 0; i < t->n; i++) {
    if (!ok[i])
      continue;
    fprintf(f, "<circle class=\"kernel\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" "
            "fill=\"#e8893a\" data-ai=\"%.6g\" data-flops=\"%.6g\"",
            px(p, ai[i]), py(p, perf[i]), ai[i], perf[i]);
    measured_attrs(f, t, hw, i);
    fputs("><title>", f);
    vw_svg_text(f, t->nodes[i].name, 400);
    fprintf(f, "\n%.3g FLOP/byte, %.3g FLOP/s, %.3g s", ai[i], perf[i],
            sec[i]);
    measured_title(f, t, hw, i);
    fputs("</title></circle>\n", f);
  }
}

/* Fills ai/perf/ok for kernel frames; returns how many could be placed and
 * counts in *skipped the kernel frames that could not. */
static uint32_t place(vw_tree *t, const double *fl, const double *sec,
                      double *ai, double *perf, uint8_t *ok,
                      uint32_t *skipped) {
  char *store = NULL;
  const char **ids = vw_node_strs(t, "device_id", &store);
  int b = column(t, "bytes");
  uint32_t n = 0;
  for (uint32_t i = 0; ids && i < t->n; i++) {
    if (!ids[i])
      continue;
    double by = b >= 0 ? t->cols[b].v[i] : NAN;
    ok[i] = fl[i] > 0 && by > 0 && sec[i] > 0;
    ai[i] = fl[i] / by;
    perf[i] = fl[i] / sec[i];
    n += ok[i];
    *skipped += !ok[i];
  }
  free(ids);
  free(store);
  return n;
}

static int chart(FILE *f, vw_tree *t, const double *fl, const double *sec,
                 const double peaks[5], double bw) {
  size_t n = t->n ? t->n : 1;
  double *ai = calloc(n, sizeof *ai), *perf = calloc(n, sizeof *perf);
  uint8_t *ok = calloc(n, 1);
  uint32_t skipped = 0, placed = 0;
  int rc = -1;
  if (ai && perf && ok)
    placed = place(t, fl, sec, ai, perf, ok, &skipped);
  if (!placed) {
    rc = vw_fail("%s: --roofline: no kernel frame has flops, bytes and time "
                 "(Proton's launch_metadata flops*/bytes)", t->file);
    goto out;
  }
  plot p = bounds(t, ok, ai, perf, peaks, bw);
  int hw[N_MEASURED];
  measured_cols(t, hw);
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\""
          "http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
          "height=\"%.0f\" font-family=\"monospace\">\n<text x=\"%.0f\" "
          "y=\"20\" font-size=\"14\">Roofline: %u kernel frames", W_PX, H_PX,
          L_PX, placed);
  fprintf(f, " (%u without flops, bytes or time not drawn)</text>\n", skipped);
  axes(f, &p);
  roofs(f, &p, peaks, bw);
  points(f, t, &p, ok, ai, perf, sec, hw);
  fputs("</svg>\n", f);
  rc = ferror(f) ? vw_fail("--roofline: write failed") : 0;
out:
  free(ai);
  free(perf);
  free(ok);
  return rc;
}

int vw_roofline(vw_tree *t, FILE *f) {
  if (cproton_profile_device_count(t->p) == 0)
    return vw_fail("%s: --roofline: the profile has no device info (no "
                   "ceilings)", t->file);
  cproton_device_info d;
  cproton_profile_device(t->p, 0, &d);
  size_t n = t->n ? t->n : 1;
  double *fl = calloc(n, sizeof *fl), *sec = calloc(n, sizeof *sec);
  double peaks[5], bw = 0;
  int rc = -1;
  if (fl && sec && !flops_of(t, &d, fl, peaks) && !vw_peak_bps(t->file, &d, &bw) &&
      !vw_derive_time_seconds(t, sec))
    rc = chart(f, t, fl, sec, peaks, bw);
  free(fl);
  free(sec);
  return rc;
}
