/* tools/viewer/main.c -- cproton-viewer: Proton's profile viewer in C.
 *
 *   cproton-viewer [-l] [-m a,b] [-i RE | -e RE] [-t X] [-d N] [-f FMT]
 *                  [--print-sorted] [--diff-profile OTHER] [--no-color]
 *                  [--demangle] [--output tree|folded|json|csv] FILE
 *
 * Concern: command line and the order of steps (load, derive, filter, diff,
 * render), which follows triton/profiler/viewer.py. The environment is read
 * here only (NO_COLOR). Exit status: 0 ok, 1 bad input, 2 bad usage. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viewer.h"

#define MAX_METRICS 16

typedef struct args {
  int list, print_sorted, no_color, force_color, demangle, depth;
  char *metrics, *include, *exclude, *format, *diff, *output, *file;
  double threshold;
} args;

static void usage(FILE *f) {
  fputs(
      "usage: cproton-viewer [options] FILE.hatchet\n"
      "  -l, --list              list the metrics in FILE\n"
      "  -m, --metrics a,b       metrics to show (default: time/ms, else the\n"
      "                          first metric); derived: time/{s,ms,us,ns},\n"
      "                          avg_time/*, cpu_time/*, avg_cpu_time/*,\n"
      "                          [g|t]flop[8|16|32|64]/s, [g|t]byte/s, util,\n"
      "                          <metric>/%\n"
      "  -i, --include REGEX     keep paths through frames matching REGEX\n"
      "  -e, --exclude REGEX     drop frames matching REGEX and their subtrees\n"
      "  -t, --threshold X       drop frames whose first metric is below X\n"
      "  -d, --depth N           tree depth to show (default 100)\n"
      "  -f, --format F          full|file_function_line|function_line|"
      "file_function\n"
      "      --print-sorted      also list frames sorted by the first metric\n"
      "      --diff-profile F    show FILE - F (also -diff F)\n"
      "      --no-color          never color (default: color on a terminal)\n"
      "      --color             always color\n"
      "      --demangle          demangle C++ kernel names\n"
      "  -o, --output K          tree (default), folded, json or csv\n",
      f);
}

static int parse_args(int argc, char **argv, args *a) {
  enum { O_SORTED = 256, O_DIFF, O_NOCOLOR, O_COLOR, O_DEMANGLE };
  static const struct option opts[] = {
      {"list", no_argument, 0, 'l'},
      {"metrics", required_argument, 0, 'm'},
      {"include", required_argument, 0, 'i'},
      {"exclude", required_argument, 0, 'e'},
      {"threshold", required_argument, 0, 't'},
      {"depth", required_argument, 0, 'd'},
      {"format", required_argument, 0, 'f'},
      {"output", required_argument, 0, 'o'},
      {"print-sorted", no_argument, 0, O_SORTED},
      {"diff-profile", required_argument, 0, O_DIFF},
      {"no-color", no_argument, 0, O_NOCOLOR},
      {"color", no_argument, 0, O_COLOR},
      {"demangle", no_argument, 0, O_DEMANGLE},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  memset(a, 0, sizeof *a);
  a->depth = 100;
  for (int i = 1; i < argc; i++) /* Proton's single-dash spelling */
    if (!strcmp(argv[i], "-diff"))
      argv[i] = "--diff-profile";
  int c;
  char *end;
  while ((c = getopt_long(argc, argv, "lm:i:e:t:d:f:o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'l': a->list = 1; break;
    case 'm': a->metrics = optarg; break;
    case 'i': a->include = optarg; break;
    case 'e': a->exclude = optarg; break;
    case 'f': a->format = optarg; break;
    case 'o': a->output = optarg; break;
    case O_SORTED: a->print_sorted = 1; break;
    case O_DIFF: a->diff = optarg; break;
    case O_NOCOLOR: a->no_color = 1; break;
    case O_COLOR: a->force_color = 1; break;
    case O_DEMANGLE: a->demangle = 1; break;
    case 't':
      a->threshold = strtod(optarg, &end);
      if (*end || end == optarg)
        return vw_fail("bad threshold \"%s\"", optarg);
      break;
    case 'd': {
      long v = strtol(optarg, &end, 10);
      if (*end || end == optarg || v < 0 || v > 1000000000)
        return vw_fail("bad depth \"%s\"", optarg);
      a->depth = (int)v;
      break;
    }
    case 'h': usage(stdout); exit(0);
    default: return vw_fail("bad usage (see --help)");
    }
  }
  if (optind != argc - 1)
    return vw_fail("expected exactly one profile file (see --help)");
  a->file = argv[optind];
  static const char *const formats[] = {"full", "file_function_line",
                                        "function_line", "file_function"};
  static const char *const outputs[] = {"tree", "folded", "json", "csv"};
  int ok_f = !a->format, ok_o = !a->output;
  for (int k = 0; k < 4; k++) {
    ok_f |= a->format && !strcmp(a->format, formats[k]);
    ok_o |= a->output && !strcmp(a->output, outputs[k]);
  }
  if (!ok_f)
    return vw_fail("bad --format \"%s\"", a->format);
  if (!ok_o)
    return vw_fail("bad --output \"%s\"", a->output);
  if (a->include && a->exclude)
    return vw_fail("Cannot specify both include and exclude");
  return 0;
}

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

static int prepare(const args *a, char **m, int n, vw_tree *t, int *cols) {
  if (vw_derive(t, m, n, cols))
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

static int run(args *a) {
  vw_tree t, r;
  memset(&r, 0, sizeof r);
  char *metrics[MAX_METRICS];
  int cols[MAX_METRICS], rcols[MAX_METRICS], rc = -1, n;
  if (vw_tree_load(a->file, &t)) {
    vw_tree_free(&t);
    return -1;
  }
  if (a->list) {
    list_metrics(&t);
    vw_tree_free(&t);
    return 0;
  }
  char *spec = a->metrics ? strdup(a->metrics) : NULL;
  if ((n = split_metrics(&t, spec, metrics)) < 0 ||
      prepare(a, metrics, n, &t, cols))
    goto out;
  if (a->diff && (vw_tree_load(a->diff, &r) ||
                  prepare(a, metrics, n, &r, rcols) ||
                  vw_diff(&t, &r, cols, n)))
    goto out;
  int color = a->force_color ||
              (!a->no_color && !getenv("NO_COLOR") && isatty(1));
  vw_render_opts o = {a->depth, a->format, color, a->print_sorted,
                      a->demangle, a->output};
  rc = vw_render(&t, cols, n, &o, stdout);
  warn_negative_bytes(&t, cols, n);
out:
  free(spec);
  vw_tree_free(&t);
  vw_tree_free(&r);
  return rc;
}
int main(int argc, char **argv) {
  static char outbuf[1 << 16];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  args a;
  if (parse_args(argc, argv, &a)) {
    fprintf(stderr, "cproton-viewer: %s\n", vw_errmsg);
    return 2;
  }
  int rc = run(&a);
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
