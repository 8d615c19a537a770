/* tools/viewer/svg.c -- `--svg FILE`: the tree as a static icicle flame
 * graph in one SVG file, with no script, stylesheet or font to fetch.
 *
 * Width of a frame = its value of the first -m metric, or the sum of its
 * children's widths when that is larger or the frame has no value (Proton's
 * intra-kernel cycles are exclusive columns, yet a scope's cycles include
 * its nested scopes': adding them up would count twice). Colour = the
 * frame's kind: scope (CPU/Python), kernel, source line (`file:line@func`),
 * intra-kernel scope -- or, with --color-by M, the frame's value of M on a
 * blue (low) to red (high) scale, 0-100 for a percentage (a name ending in
 * '%', e.g. a hardware counter's sm_throughput%) and the values' range
 * otherwise, grey where the frame has no value. A name that does not fit is cut with an ellipsis, and
 * each frame's <title> (the browser's tooltip) holds the full name, the
 * value and the share of the total. Frames narrower than MIN_PX are not
 * drawn; the subtitle says how many, so nothing goes missing unannounced.
 * Called once by main.c, after derive and filter. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

#define WIDTH_PX 1200.0
#define PAD_PX 10.0
#define ROW_PX 18.0
#define TOP_PX 46.0
#define LEGEND_PX 34.0
#define CHAR_PX 7.3 /* monospace at 12 px */
#define MIN_PX 0.1

enum { K_SCOPE, K_KERNEL, K_LINE, K_INTRA, K_COUNT };

/* Kind name (the frame's class), legend text, hue, saturation, lightness. */
static const struct {
  const char *cls, *label;
  double h, s, l;
} kinds[K_COUNT] = {
    {"scope", "scope", 210, 0.45, 0.70},
    {"kernel", "kernel", 28, 0.85, 0.62},
    {"line", "source line (file:line@func)", 135, 0.45, 0.62},
    {"intra", "intra-kernel scope", 275, 0.50, 0.72},
};

/* --color-by: the scale's ends, and the colour of a frame with no value. */
#define HOT_HUE 240.0 /* blue at the low end, down to red (0) */
#define NO_VALUE "#cfcfcf"
#define SCALE_STEPS 5

typedef struct layout {
  const vw_tree *t;
  const double *v; /* the metric column */
  const double *c; /* --color-by's column, or NULL: colour by kind */
  const char *c_name;
  double c_lo, c_hi;
  double *w, *x;   /* width weight and left edge, in metric units */
  uint32_t *depth;
  uint8_t *kind;
  double total, scale; /* pixels per metric unit */
  uint32_t max_depth, hidden;
} layout;

static int has_metric(const vw_tree *t, uint32_t i, const char *name) {
  cproton_metric_value v;
  uint32_t s = t->nodes[i].src;
  return s != VW_NONE &&
         cproton_profile_node_metric_by_name(t->p, s, name, &v) == 0;
}

/* "file:line@func": a ':' followed by digits and then '@'. */
static int is_line(const char *name) {
  for (const char *c = strchr(name, ':'); c; c = strchr(c + 1, ':')) {
    const char *d = c + 1;
    while (*d >= '0' && *d <= '9')
      d++;
    if (d > c + 1 && *d == '@')
      return 1;
  }
  return 0;
}

/* Intra-kernel scopes carry cycles; the frame above the outermost one is
 * their kernel even when Proton gave it no metrics. */
static void classify(layout *L) {
  const vw_tree *t = L->t;
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t par = t->nodes[i].parent;
    L->depth[i] = par == VW_NONE ? 0 : L->depth[par] + 1;
    if (is_line(t->nodes[i].name))
      L->kind[i] = K_LINE;
    else if (has_metric(t, i, "cycles") || has_metric(t, i, "normalized_cycles"))
      L->kind[i] = K_INTRA;
    else
      L->kind[i] = has_metric(t, i, "device_id") ? K_KERNEL : K_SCOPE;
  }
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t par = t->nodes[i].parent;
    if (L->kind[i] == K_INTRA && par != VW_NONE && L->kind[par] == K_SCOPE)
      L->kind[par] = K_KERNEL;
  }
}

/* Width weights bottom-up (children follow their parent in the table), then
 * left edges top-down, children packed from their parent's left edge. */
static void place(layout *L) {
  const vw_tree *t = L->t;
  for (uint32_t i = t->n; i-- > 0;) {
    double own = isfinite(L->v[i]) && L->v[i] > 0 ? L->v[i] : 0, kids = 0;
    for (uint32_t c = t->first_child[i]; c != VW_NONE; c = t->next_sibling[c])
      kids += L->w[c];
    L->w[i] = fmax(own, kids);
  }
  double root_x = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    if (t->nodes[i].parent == VW_NONE) {
      L->x[i] = root_x;
      root_x += L->w[i];
    }
    double cur = L->x[i];
    for (uint32_t c = t->first_child[i]; c != VW_NONE; c = t->next_sibling[c]) {
      L->x[c] = cur;
      cur += L->w[c];
    }
  }
  L->total = root_x;
  L->scale = root_x > 0 ? (WIDTH_PX - 2 * PAD_PX) / root_x : 0;
}

/* XML text: markup characters escaped, control bytes (invalid in XML 1.0)
 * shown as '?'. At most max_chars code points, the last one an ellipsis
 * when the text is cut. */
void vw_svg_text(FILE *f, const char *s, size_t max_chars) {
  size_t chars = 0, len = strlen(s);
  for (size_t k = 0; k < len; k++)
    chars += ((unsigned char)s[k] & 0xC0) != 0x80;
  int cut = chars > max_chars;
  size_t keep = cut ? (max_chars >= 1 ? max_chars - 1 : 0) : chars, seen = 0;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if ((*c & 0xC0) != 0x80 && seen++ == keep)
      break;
    switch (*c) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*c < 0x20 ? '?' : *c, f);
    }
  }
  if (cut)
    fputs("\xe2\x80\xa6", f); /* U+2026 ellipsis in UTF-8 */
}

static void hsl_hex(double h, double s, double l, char out[8]) {
  double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h, 360) / 60;
  double x = c * (1 - fabs(fmod(hp, 2) - 1)), m = l - c / 2;
  double rgb[6][3] = {{c, x, 0}, {x, c, 0}, {0, c, x},
                      {0, x, c}, {x, 0, c}, {c, 0, x}};
  const double *p = rgb[(int)hp % 6];
  snprintf(out, 8, "#%02x%02x%02x", (int)lround((p[0] + m) * 255),
           (int)lround((p[1] + m) * 255), (int)lround((p[2] + m) * 255));
}

/* A kind's colour, its lightness varied by the name so neighbours differ. */
static void colour(int kind, const char *name, char out[8]) {
  unsigned h = 2166136261u;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    h = (h ^ *c) * 16777619u;
  double l = kinds[kind].l + ((double)(h % 1000) / 1000.0 - 0.5) * 0.12;
  hsl_hex(kinds[kind].h, kinds[kind].s, l, out);
}

/* The colour of value `v` on --color-by's scale (NO_VALUE for NaN). */
static void scale_colour(const layout *L, double v, char out[8]) {
  if (!isfinite(v)) {
    snprintf(out, 8, "%s", NO_VALUE);
    return;
  }
  double span = L->c_hi - L->c_lo;
  double u = span > 0 ? (v - L->c_lo) / span : 0.5;
  u = u < 0 ? 0 : u > 1 ? 1 : u;
  hsl_hex(HOT_HUE * (1 - u), 0.70, 0.58, out);
}

/* --color-by's line in a frame's tooltip. */
static void scale_title(FILE *f, const layout *L, uint32_t i) {
  fputc('\n', f);
  vw_svg_text(f, L->c_name, 200);
  if (isfinite(L->c[i]))
    fprintf(f, " = %.4g", L->c[i]);
  else
    fputs(": no value", f);
}

static void frame(FILE *f, const layout *L, uint32_t i, const char *name,
                  const char *label) {
  double px = PAD_PX + L->x[i] * L->scale, pw = L->w[i] * L->scale;
  double py = TOP_PX + L->depth[i] * ROW_PX;
  char fill[8];
  if (L->c)
    scale_colour(L, L->c[i], fill);
  else
    colour(L->kind[i], name, fill);
  fprintf(f, "<g class=\"f %s\"", kinds[L->kind[i]].cls);
  if (L->c && isfinite(L->c[i]))
    fprintf(f, " data-color-value=\"%.6g\"", L->c[i]);
  fputs("><title>", f);
  vw_svg_text(f, name, SIZE_MAX);
  fprintf(f, "\n%.6g %s (%.2f%%)", L->w[i], label,
          L->total > 0 ? 100 * L->w[i] / L->total : 0);
  if (!isfinite(L->v[i]) || L->v[i] <= 0)
    fputs("; no value of its own: width = its children's sum", f);
  else if (L->v[i] != L->w[i])
    fprintf(f, "; own value %.6g: width = its children's sum", L->v[i]);
  if (L->c)
    scale_title(f, L, i);
  fprintf(f, "</title><rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" "
             "height=\"%.1f\" rx=\"2\" fill=\"%s\"/>",
          px, py, pw, ROW_PX - 1, fill);
  double room = (pw - 6) / CHAR_PX;
  if (room >= 3) {
    fprintf(f, "<text x=\"%.3f\" y=\"%.1f\">", px + 3, py + ROW_PX - 5);
    vw_svg_text(f, name, (size_t)room);
    fputs("</text>", f);
  }
  fputs("</g>\n", f);
}

static void header(FILE *f, const layout *L, const char *label, double h) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
          "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"DejaVu Sans Mono,Menlo,Consolas,monospace\" "
          "font-size=\"12\">\n"
          "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
          "fill=\"#f8f8f8\"/>\n<text x=\"%.0f\" y=\"20\" "
          "text-anchor=\"middle\" font-size=\"15\">",
          WIDTH_PX, h, WIDTH_PX, h, WIDTH_PX, h, WIDTH_PX / 2);
  vw_svg_text(f, L->t->file, 120);
  fprintf(f, "</text>\n<text x=\"%.0f\" y=\"36\" text-anchor=\"middle\" "
             "fill=\"#555555\">width: ",
          WIDTH_PX / 2);
  vw_svg_text(f, label, 60);
  fprintf(f, ", total %.6g; %u frames", L->total, L->t->n - L->hidden);
  if (L->hidden)
    fprintf(f, " (%u under %.1f px wide not drawn)", L->hidden, MIN_PX);
  fputs("</text>\n", f);
}

/* --color-by's legend: SCALE_STEPS swatches from low to high, then grey. */
static void scale_legend(FILE *f, const layout *L, double y) {
  double x = PAD_PX;
  fprintf(f, "<text class=\"scale\" x=\"%.1f\" y=\"%.1f\">colour: ", x,
          y + 11);
  vw_svg_text(f, L->c_name, 60);
  fputs("</text>\n", f);
  x += CHAR_PX * (8.0 + (double)strlen(L->c_name)) + 12;
  for (int k = 0; k < SCALE_STEPS; k++) {
    double v = L->c_lo + (L->c_hi - L->c_lo) * k / (SCALE_STEPS - 1);
    char fill[8];
    scale_colour(L, v, fill);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
               "rx=\"2\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%.4g"
               "</text>\n", x, y, fill, x + 20, y + 11, v);
    x += 20 + CHAR_PX * 8 + 12;
  }
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
             "rx=\"2\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">no value"
             "</text>\n", x, y, NO_VALUE, x + 20, y + 11);
}

static void legend(FILE *f, const layout *L, double y) {
  if (L->c) {
    scale_legend(f, L, y);
    return;
  }
  double x = PAD_PX;
  for (int k = 0; k < K_COUNT; k++) {
    char fill[8];
    hsl_hex(kinds[k].h, kinds[k].s, kinds[k].l, fill);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
               "rx=\"2\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
            x, y, fill, x + 20, y + 11, kinds[k].label);
    x += 20 + CHAR_PX * (double)strlen(kinds[k].label) + 24;
  }
}

/* Frames drawn: inside the depth limit and at least MIN_PX wide (a frame
 * too narrow hides its subtree, which is narrower still). */
static uint8_t *visible(layout *L, int depth) {
  uint8_t *show = calloc(L->t->n ? L->t->n : 1, 1);
  if (!show)
    return NULL;
  for (uint32_t i = 0; i < L->t->n; i++) {
    uint32_t par = L->t->nodes[i].parent;
    show[i] = (par == VW_NONE || show[par]) && (int64_t)L->depth[i] < depth &&
              L->w[i] * L->scale >= MIN_PX;
    L->hidden += !show[i];
    if (show[i] && L->depth[i] > L->max_depth)
      L->max_depth = L->depth[i];
  }
  return show;
}

static int draw(FILE *f, layout *L, const char *label,
                const vw_render_opts *o) {
  uint8_t *show = visible(L, o->depth);
  if (!show)
    return vw_fail("out of memory");
  double body = (L->max_depth + 1) * ROW_PX;
  header(f, L, label, TOP_PX + body + LEGEND_PX);
  char *dm = NULL;
  size_t dm_cap = 0;
  for (uint32_t i = 0; i < L->t->n; i++) {
    if (!show[i])
      continue;
    const char *name = L->t->nodes[i].name;
    frame(f, L, i, o->demangle ? vw_demangle(name, &dm, &dm_cap) : name, label);
  }
  legend(f, L, TOP_PX + body + 12);
  fputs("</svg>\n", f);
  free(dm);
  free(show);
  return 0;
}

/* "time (ms) (inc)" -> "time (ms)" */
static void bare_label(const char *cname, char *out, size_t size) {
  const char *inc = strstr(cname, " (inc)");
  snprintf(out, size, "%.*s",
           (int)(inc ? (size_t)(inc - cname) : strlen(cname)), cname);
}

/* --color-by's scale: 0-100 for a percentage, else the values' range. */
static void scale_of(layout *L, int ccol, char *name, size_t size) {
  bare_label(L->t->cols[ccol].name, name, size);
  L->c = L->t->cols[ccol].v;
  L->c_name = name;
  size_t len = strlen(name);
  if (len && name[len - 1] == '%') {
    L->c_lo = 0, L->c_hi = 100;
    return;
  }
  L->c_lo = INFINITY, L->c_hi = -INFINITY;
  for (uint32_t i = 0; i < L->t->n; i++)
    if (isfinite(L->c[i]))
      L->c_lo = fmin(L->c_lo, L->c[i]), L->c_hi = fmax(L->c_hi, L->c[i]);
  if (L->c_lo > L->c_hi) /* no frame has a value */
    L->c_lo = L->c_hi = 0;
}

int vw_svg(const vw_tree *t, int col, int color_col, const vw_render_opts *o,
           FILE *f) {
  char label[256], cname[256];
  bare_label(t->cols[col].name, label, sizeof label);
  layout L = {.t = t, .v = t->cols[col].v};
  if (color_col >= 0)
    scale_of(&L, color_col, cname, sizeof cname);
  size_t n = t->n ? t->n : 1;
  L.w = calloc(n, sizeof *L.w), L.x = calloc(n, sizeof *L.x);
  L.depth = calloc(n, sizeof *L.depth), L.kind = calloc(n, 1);
  int rc = -1;
  if (!L.w || !L.x || !L.depth || !L.kind) {
    rc = vw_fail("out of memory");
    goto out;
  }
  classify(&L);
  place(&L);
  rc = draw(f, &L, label, o);
out:
  free(L.w), free(L.x), free(L.depth), free(L.kind);
  return rc;
}
