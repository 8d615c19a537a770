/* tools/viewer/render.c -- output: Hatchet's console tree (same characters,
 * precision and RdYlGn colors, legend when colored), --print-sorted, and the
 * machine formats folded / json / csv.
 *
 * Invariant: nodes are walked in pre-order with an explicit stack of "last
 * child" flags, so depth never touches the C stack.
 * Called by main.c once; writes through one buffered FILE. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

static const char *const colormap[6] = {
    "\033[38;5;196m", "\033[38;5;208m", "\033[38;5;220m",
    "\033[38;5;46m",  "\033[38;5;34m",  "\033[38;5;22m"};
#define C_BLUE "\033[34m"
#define C_FAINT "\033[2m"
#define C_END "\033[0m"
#define C_LEFT "\033[38;5;160m"
#define C_RIGHT "\033[38;5;28m"

typedef struct ctx {
  vw_tree *t;
  const int *cols;
  int n_cols;
  const vw_render_opts *o;
  FILE *out;
  double min, max;
  char *name_buf, *dm_buf;
  size_t name_cap, dm_cap;
  char *line; /* the tree line being built, written with one fwrite */
  size_t line_len, line_cap;
  char *esc_buf; /* vw_escape's buffer */
  size_t esc_cap;
} ctx;

/* Exact "%.<prec>f" (prec 0..3) for |v| < 2^53, without printf: v is
 * mant * 2^e2 exactly, so v * 10^prec is rounded in integers, half to even
 * as glibc's printf does. Returns the length, or -1 when snprintf must do it
 * (NaN, inf, huge values). */
static int fixed_fast(char *buf, size_t cap, double v, int prec) {
  static const uint64_t scale[] = {1, 10, 100, 1000};
  uint64_t bits;
  memcpy(&bits, &v, 8);
  int be = (int)((bits >> 52) & 0x7FF);
  uint64_t mant = bits & ((1ull << 52) - 1);
  if (prec < 0 || prec > 3 || cap < 24 || be >= 1023 + 53)
    return -1;
  mant |= be ? 1ull << 52 : 0;
  int e2 = (be ? be : 1) - 1075, k = -e2;
  uint64_t sc = scale[prec], q;
  if (e2 >= 0) {
    q = (mant << e2) * sc;
  } else if (k >= 64) {
    q = 0; /* mant * sc < 2^63 <= half */
  } else {
    uint64_t num = mant * sc, r = num & ((1ull << k) - 1);
    uint64_t half = 1ull << (k - 1);
    q = num >> k;
    q += r > half || (r == half && (q & 1));
  }
  char tmp[24];
  int n = 0;
  uint64_t ip = q / sc, fp = q % sc;
  for (int d = 0; d < prec; d++, fp /= 10)
    tmp[n++] = (char)('0' + fp % 10);
  if (prec)
    tmp[n++] = '.';
  do
    tmp[n++] = (char)('0' + ip % 10);
  while (ip /= 10);
  if (bits >> 63)
    tmp[n++] = '-';
  for (int d = 0; d < n; d++)
    buf[d] = tmp[n - 1 - d];
  buf[n] = '\0';
  return n;
}

/* Python's "{:.<prec>f}": nan/inf spelled as Python does. */
static int fmt_fixed(char *buf, size_t cap, double v, int prec) {
  int n = fixed_fast(buf, cap, v, prec);
  if (n >= 0)
    return n;
  if (isnan(v))
    return snprintf(buf, cap, "nan");
  if (isinf(v))
    return snprintf(buf, cap, v > 0 ? "inf" : "-inf");
  return snprintf(buf, cap, "%.*f", prec, v);
}

/* Python's "{:.4}" on a float: %g plus ".0" when it reads like an int. */
static void fmt_py4(char *buf, size_t cap, double v) {
  if (isnan(v) || isinf(v)) {
    fmt_fixed(buf, cap, v, 0);
    return;
  }
  snprintf(buf, cap, "%.4g", v);
  if (!strpbrk(buf, ".e"))
    strncat(buf, ".0", cap - strlen(buf) - 1);
}

static void set_name(ctx *c, const char *s, size_t n) {
  if (n + 1 > c->name_cap) {
    c->name_cap = (n + 1) * 2;
    c->name_buf = realloc(c->name_buf, c->name_cap);
    if (!c->name_buf) {
      fprintf(stderr, "cproton-viewer: out of memory\n");
      exit(2);
    }
  }
  memcpy(c->name_buf, s, n);
  c->name_buf[n] = '\0';
}

/* format_frames() of Proton's viewer, then optional demangling. */
static const char *display_name(ctx *c, uint32_t i) {
  const char *name = c->t->nodes[i].name, *f = c->o->format;
  if (f && !strcmp(f, "file_function_line")) {
    const char *s = strrchr(name, '/');
    name = s ? s + 1 : name;
  } else if (f && !strcmp(f, "function_line")) {
    const char *s = strrchr(name, ':');
    name = s ? s + 1 : name;
  } else if (f && !strcmp(f, "file_function")) {
    const char *file = strrchr(name, '/'), *fn = strrchr(name, '@');
    file = file ? file + 1 : name;
    fn = fn ? fn + 1 : name;
    size_t fl = strcspn(file, ":"), nl = strcspn(fn, ":");
    set_name(c, file, fl + 1 + nl);
    memcpy(c->name_buf + fl, "@", 1);
    memcpy(c->name_buf + fl + 1, fn, nl);
    c->name_buf[fl + 1 + nl] = '\0';
    name = c->name_buf;
  }
  return c->o->demangle ? vw_demangle(name, &c->dm_buf, &c->dm_cap) : name;
}

/* The name as text outputs show it: control characters escaped (escape.c). */
static const char *shown_name(ctx *c, uint32_t i) {
  return vw_escape(display_name(c, i), &c->esc_buf, &c->esc_cap);
}

static const char *metric_color(const ctx *c, double v) {
  double range = c->max - c->min;
  double p = range != 0 ? (v - c->min) / range : v / 1;
  if (p > 0.9)
    return colormap[0];
  if (p > 0.7)
    return colormap[1];
  if (p > 0.5)
    return colormap[2];
  if (p > 0.3)
    return colormap[3];
  if (p > 0.1)
    return colormap[4];
  if (p >= 0)
    return colormap[5];
  return C_BLUE;
}

static void line_put(ctx *c, const char *s, size_t n) {
  if (c->line_len + n > c->line_cap) {
    c->line_cap = (c->line_len + n) * 2 + 256;
    c->line = realloc(c->line, c->line_cap);
    if (!c->line) {
      fprintf(stderr, "cproton-viewer: out of memory\n");
      exit(2);
    }
  }
  memcpy(c->line + c->line_len, s, n);
  c->line_len += n;
}

static void line_str(ctx *c, const char *s) { line_put(c, s, strlen(s)); }

/* Appends one value with "%.3f", colored or faint when `color`. */
static void line_value(ctx *c, double v, const char *color) {
  char num[512];
  int n = fmt_fixed(num, sizeof num, v, 3);
  if (color)
    line_str(c, color);
  line_put(c, num, n > 0 && (size_t)n < sizeof num ? (size_t)n : strlen(num));
  if (color)
    line_put(c, C_END, sizeof C_END - 1);
}

/* One tree line after the prefix already in c->line, written at once. */
static void tree_line(ctx *c, uint32_t i) {
  double *v0 = c->t->cols[c->cols[0]].v;
  int color = c->o->color;
  line_value(c, v0[i], color ? metric_color(c, v0[i]) : NULL);
  for (int k = 1; k < c->n_cols; k++) {
    line_put(c, " ", 1);
    line_value(c, c->t->cols[c->cols[k]].v[i], color ? C_FAINT : NULL);
  }
  line_put(c, " ", 1);
  line_str(c, shown_name(c, i));
  uint8_t miss = c->t->diff ? c->t->nodes[i].missing : 0;
  if (miss) {
    line_put(c, " ", 1);
    line_str(c, color ? (miss == 1 ? C_LEFT : C_RIGHT) : "");
    line_str(c, miss == 1 ? "\u25c0 " : "\u25b6 ");
    line_str(c, color ? C_END : "");
  }
  line_put(c, "\n", 1);
  fwrite(c->line, 1, c->line_len, c->out);
  c->line_len = 0;
}

/* Pre-order walk calling `visit(c, node, is_last[0..depth])`. */
typedef void (*visit_fn)(ctx *c, uint32_t i, const uint8_t *last);

static void walk(ctx *c, visit_fn visit) {
  vw_tree *t = c->t;
  uint8_t *last = calloc((size_t)t->n + 1, 1);
  uint32_t *stack = malloc(((size_t)t->n + 1) * sizeof *stack);
  size_t sp = 0;
  for (uint32_t i = t->n; i-- > 0;) /* roots reversed onto the stack */
    if (t->nodes[i].parent == VW_NONE)
      stack[sp++] = i;
  while (sp) {
    uint32_t i = stack[--sp], d = t->nodes[i].depth;
    if ((int64_t)d >= c->o->depth)
      continue;
    last[d] = t->next_sibling[i] == VW_NONE;
    visit(c, i, last);
    size_t base = sp;
    for (uint32_t k = t->first_child[i]; k != VW_NONE; k = t->next_sibling[k])
      stack[sp++] = k;
    for (size_t a = base, b = sp; a + 1 < b; a++, b--) { /* reverse */
      uint32_t tmp = stack[a];
      stack[a] = stack[b - 1];
      stack[b - 1] = tmp;
    }
  }
  free(last);
  free(stack);
}

static void visit_tree(ctx *c, uint32_t i, const uint8_t *last) {
  uint32_t d = c->t->nodes[i].depth;
  c->line_len = 0;
  for (uint32_t k = 1; k <= d; k++)
    line_str(c, k < d ? (last[k] ? "   " : "\u2502  ")
                      : (last[k] ? "\u2514\u2500 " : "\u251c\u2500 "));
  tree_line(c, i);
}

static void legend(ctx *c) {
  static const double lo[6] = {0.9, 0.7, 0.5, 0.3, 0.1, 0.0};
  static const double hi[6] = {1.0, 0.9, 0.7, 0.5, 0.3, 0.1};
  char a[512], b[512];
  double range = c->max - c->min;
  fmt_fixed(a, sizeof a, c->min, 2);
  fmt_fixed(b, sizeof b, c->max, 2);
  fprintf(c->out, "\n\033[4mLegend" C_END " (Metric: %s Min: %s Max: %s)\n",
          c->t->cols[c->cols[0]].name, a, b);
  for (int k = 0; k < 6; k++) {
    fmt_fixed(a, sizeof a, lo[k] * range + c->min, 2);
    fmt_fixed(b, sizeof b, hi[k] * range + c->min, 2);
    fprintf(c->out, "%s\u2588 " C_END "%s - %s\n", colormap[k], a, b);
  }
  fprintf(c->out, "\nname" C_END " User code    " C_LEFT "\u25c0 " C_END
                  " Only in left graph    " C_RIGHT "\u25b6 " C_END
                  " Only in right graph\n");
}

static const double *sort_key;
static int by_value_desc(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  double u = sort_key[x], v = sort_key[y];
  int nu = isnan(u), nv = isnan(v);
  if (nu != nv)
    return nu - nv; /* NaN last */
  if (!nu && u != v)
    return u > v ? -1 : 1;
  return x < y ? -1 : (x > y);
}

/* Code points in a UTF-8 string (names are valid UTF-8). */
static size_t cps(const char *s, size_t *bytes_for_100) {
  size_t n = 0;
  for (const char *p = s; *p; p++) {
    if (((unsigned char)*p & 0xC0) != 0x80) {
      if (n == 100)
        *bytes_for_100 = (size_t)(p - s);
      n++;
    }
  }
  return n;
}

static void print_sorted(ctx *c) {
  vw_tree *t = c->t;
  uint32_t *idx = malloc(((size_t)t->n + 1) * sizeof *idx);
  for (uint32_t i = 0; i < t->n; i++)
    idx[i] = i;
  sort_key = t->cols[c->cols[0]].v;
  qsort(idx, t->n, sizeof *idx, by_value_desc);
  fprintf(c->out, "Sorted kernels by metric %s\n", t->cols[c->cols[0]].name);
  for (uint32_t r = 1; r < t->n; r++) {
    const char *name = shown_name(c, idx[r]);
    size_t cut = strlen(name), n = cps(name, &cut), width = n;
    char num[64];
    fmt_py4(num, sizeof num, sort_key[idx[r]]);
    if (n > 100) {
      fprintf(c->out, "%.*s...", (int)cut, name);
      width = 103;
    } else {
      fputs(name, c->out);
    }
    for (; width < 105; width++)
      fputc(' ', c->out);
    fprintf(c->out, " %s\n", num);
  }
  free(idx);
}

/* ---- machine formats ------------------------------------------------------ */

static void json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(out, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(out, "\\u%04x", ch);
    else
      fputc(ch, out);
  }
  fputc('"', out);
}

static void json_number(FILE *out, double v) {
  if (isfinite(v))
    fprintf(out, "%.17g", v);
  else
    fputs("null", out);
}

static void visit_json(ctx *c, uint32_t i, const uint8_t *last) {
  uint32_t d = c->t->nodes[i].depth;
  fprintf(c->out, "%*s{\"name\": ", (int)d * 2, "");
  json_string(c->out, display_name(c, i));
  fputs(", \"metrics\": {", c->out);
  for (int k = 0; k < c->n_cols; k++) {
    fputs(k ? ", " : "", c->out);
    json_string(c->out, c->t->cols[c->cols[k]].name);
    fputs(": ", c->out);
    json_number(c->out, c->t->cols[c->cols[k]].v[i]);
  }
  fputs("}", c->out);
  if (c->t->diff)
    fprintf(c->out, ", \"only_in\": %s",
            c->t->nodes[i].missing == 1   ? "\"left\""
            : c->t->nodes[i].missing == 2 ? "\"right\""
                                          : "null");
  int has_kids = c->t->first_child[i] != VW_NONE && (int64_t)d + 1 < c->o->depth;
  if (has_kids) {
    fputs(", \"children\": [\n", c->out);
    return;
  }
  fputs(", \"children\": []}", c->out);
  /* close the parents whose last child this is */
  for (uint32_t k = d; k > 0 && last[k]; k--)
    fprintf(c->out, "\n%*s]}", (int)(k - 1) * 2, "");
  uint32_t k = d;
  while (k > 0 && last[k])
    k--;
  fputs(k > 0 || !last[0] ? ",\n" : "", c->out);
}

/* RFC 4180 fields: the name always quoted, '"' doubled; control characters
 * escaped as in the tree, so a row is one line and safe to cat. */
static void visit_csv(ctx *c, uint32_t i, const uint8_t *last) {
  const char *name = shown_name(c, i);
  fprintf(c->out, "%u,\"", c->t->nodes[i].depth);
  for (; *name; name++) {
    if (*name == '"')
      fputc('"', c->out);
    fputc(*name, c->out);
  }
  fputc('"', c->out);
  for (int k = 0; k < c->n_cols; k++) {
    double v = c->t->cols[c->cols[k]].v[i];
    if (isfinite(v))
      fprintf(c->out, ",%.17g", v);
    else
      fputc(',', c->out);
  }
  fputc('\n', c->out);
}

/* One frame of a folded line at dst (room for 4 bytes per input byte):
 * ';' separates frames and '\n' lines, so ';' becomes ',' and control
 * characters and '\\' are escaped ("\n", "\t", "\x01", "\\\\"). */
static size_t fold_name(const char *name, char *dst) {
  size_t n = 0;
  for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
    if (*s == ';')
      dst[n++] = ',';
    else if (*s == '\\')
      dst[n++] = '\\', dst[n++] = '\\';
    else if (*s == '\n')
      dst[n++] = '\\', dst[n++] = 'n';
    else if (*s == '\t')
      dst[n++] = '\\', dst[n++] = 't';
    else if (*s < 0x20 || *s == 0x7f)
      n += (size_t)sprintf(dst + n, "\\x%02x", *s);
    else
      dst[n++] = (char)*s;
  }
  return n;
}

/* Folded stacks: "a;b;c <self value>" for flame-graph tools; the self value
 * of an inclusive column is the node's value minus its children's. */
static void visit_folded(ctx *c, uint32_t i, const uint8_t *last) {
  static char *path;
  static size_t cap, *ends, n_ends;
  vw_tree *t = c->t;
  uint32_t d = t->nodes[i].depth;
  if (d + 1 > n_ends) {
    n_ends = (d + 1) * 2;
    ends = realloc(ends, n_ends * sizeof *ends);
  }
  const char *name = display_name(c, i);
  size_t start = d ? ends[d - 1] + 1 : 0, len = strlen(name);
  if (start + 4 * len + 1 > cap) {
    cap = (start + 4 * len + 1) * 2;
    path = realloc(path, cap);
  }
  if (!path || !ends) {
    fprintf(stderr, "cproton-viewer: out of memory\n");
    exit(2);
  }
  if (d)
    path[start - 1] = ';';
  ends[d] = start + fold_name(name, path + start);
  const vw_col *col = &t->cols[c->cols[0]];
  double self = col->v[i];
  if (strstr(col->name, "(inc)"))
    for (uint32_t k = t->first_child[i]; k != VW_NONE; k = t->next_sibling[k])
      if (!isnan(col->v[k]))
        self -= col->v[k];
  if (!(self > fabs(col->v[i]) * 1e-12)) /* drop rounding residue */
    return;
  fwrite(path, 1, ends[d], c->out);
  if (self == floor(self) && self < 1e15)
    fprintf(c->out, " %.0f\n", self);
  else
    fprintf(c->out, " %.9g\n", self);
}

static int vw_render_machine(ctx *c) {
  const char *f = c->o->output;
  if (!strcmp(f, "json")) {
    fputs("[\n", c->out);
    walk(c, visit_json);
    fputs("\n]\n", c->out);
  } else if (!strcmp(f, "csv")) {
    fputs("depth,name", c->out);
    for (int k = 0; k < c->n_cols; k++)
      fprintf(c->out, ",\"%s\"", c->t->cols[c->cols[k]].name);
    fputc('\n', c->out);
    walk(c, visit_csv);
  } else {
    walk(c, visit_folded);
  }
  return 0;
}

int vw_render(vw_tree *t, const int *cols, int n_cols,
              const vw_render_opts *o, FILE *out) {
  ctx c = {t, cols, n_cols, o, out, NAN, NAN, NULL, NULL, 0, 0, NULL, 0, 0,
           NULL, 0};
  const double *v = t->cols[cols[0]].v;
  for (uint32_t i = 0; i < t->n; i++) {
    if (!isfinite(v[i]))
      continue;
    if (isnan(c.min) || v[i] < c.min)
      c.min = v[i];
    if (isnan(c.max) || v[i] > c.max)
      c.max = v[i];
  }
  int rc = 0;
  if (o->output && strcmp(o->output, "tree")) {
    rc = vw_render_machine(&c);
  } else {
    walk(&c, visit_tree);
    if (o->color)
      legend(&c);
    fputc('\n', out);
    if (o->print_sorted)
      print_sorted(&c);
  }
  free(c.name_buf);
  free(c.dm_buf);
  free(c.line);
  free(c.esc_buf);
  return rc;
}
