/* tools/viewer/args.c -- cproton-viewer's command line: vw_parse_args()
 * turns argv into a vw_args, and the tool's error message (vw_fail).
 *
 * Invariant: parsing never exits, prints or keeps state between calls
 * (getopt is restarted with optind = 0 and its own messages are off), so
 * the fuzz target tests/fuzz/viewer_cli_fuzz.c can call it on any argv.
 * Not a hot path; called once by main.c. */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

char vw_errmsg[1024];

int vw_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(vw_errmsg, sizeof vw_errmsg, fmt, ap);
  va_end(ap);
  return -1;
}

void vw_usage(FILE *f) {
  fputs(
      "usage: cproton-viewer [options] FILE.hatchet [MORE.hatchet...]\n"
      "       cproton-viewer --merge-traces OUT.pftrace IN.pftrace...\n"
      "  several FILEs (or --ranks): one tree of every rank's frames with\n"
      "                          sum, mean, max and imbalance (max/mean - 1)\n"
      "                          of each metric\n"
      "  -l, --list              list the metrics in FILE\n"
      "  -m, --metrics a,b       metrics to show (default: time/ms, else the\n"
      "                          first metric); derived: time/{s,ms,us,ns},\n"
      "                          avg_time/*, cpu_time/*, avg_cpu_time/*,\n"
      "                          [g|t]flop[8|16|32|64]/s, [g|t]byte/s, util,\n"
      "                          <metric>/%, X for a hardware counter X*ns\n"
      "                          (X*ns / pm_sampled_ns, e.g. sm_throughput%)\n"
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
      "      --lines[=N]         the N (20) hottest source lines of a PC-sampling\n"
      "                          profile, with their main stall reasons\n"
      "  -o, --output K          tree (default), folded, json or csv\n"
      "      --svg OUT.svg       also draw an icicle flame graph: width = the\n"
      "                          first metric, colour = frame kind\n"
      "      --color-by M        with --svg: colour = metric M on a blue-to-red\n"
      "                          scale (e.g. sm_throughput%, a hardware\n"
      "                          counter; grey: no value)\n"
      "      --roofline OUT.svg  also draw a roofline: each kernel's FLOP/s\n"
      "                          against FLOP/byte, with the device's ceilings\n"
      "      --ranks             merge the FILEs as ranks (even just one)\n"
      "      --advise [--json]   ranked performance findings for the kernels of\n"
      "                          the FILEs (one program's profiles, joined by\n"
      "                          call path); docs/advisor.md\n"
      "      --merge-traces OUT  write the Perfetto traces IN... as one trace\n"
      "                          with a process track group per rank\n",
      f);
}

enum { O_SORTED = 256, O_DIFF, O_NOCOLOR, O_COLOR, O_DEMANGLE, O_SVG, O_LINES,
       O_RANKS, O_MERGE_TRACES, O_ADVISE, O_JSON, O_ROOFLINE, O_COLOR_BY };

static const struct option long_opts[] = {
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
    {"svg", required_argument, 0, O_SVG},
    {"roofline", required_argument, 0, O_ROOFLINE},
    {"color-by", required_argument, 0, O_COLOR_BY},
    {"lines", optional_argument, 0, O_LINES},
    {"ranks", no_argument, 0, O_RANKS},
    {"merge-traces", required_argument, 0, O_MERGE_TRACES},
    {"advise", no_argument, 0, O_ADVISE},
    {"json", no_argument, 0, O_JSON},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* getopt's '?' or ':' for argv[optind - 1]: a message naming the option. */
static int bad_option(int c, char *arg) {
  const char *what = c == ':' ? "needs an argument" : "is unknown";
  if (optopt && optopt < 256 && !(arg && !strncmp(arg, "--", 2)))
    return vw_fail("option '-%c' %s (see --help)", optopt, what);
  return vw_fail("option '%.200s' %s (see --help)", arg ? arg : "?", what);
}

/* --lines[=N]: N in 1..1000000, 20 without a value. */
static int lines_option(const char *v, vw_args *a) {
  char *end;
  long n = v ? strtol(v, &end, 10) : 20;
  if (v && (end == v || *end || n < 1 || n > 1000000))
    return vw_fail("bad --lines value '%s' (valid: 1..1000000)", v);
  a->lines = (int)n;
  return 0;
}

static int number_option(int c, const char *v, vw_args *a) {
  char *end;
  if (c == 't') {
    a->threshold = strtod(v, &end);
    if (*end || end == v)
      return vw_fail("bad threshold \"%.200s\"", v);
    return 0;
  }
  long d = strtol(v, &end, 10);
  if (*end || end == v || d < 0 || d > 1000000000)
    return vw_fail("bad depth \"%.200s\"", v);
  a->depth = (int)d;
  return 0;
}

/* One option from getopt_long; returns 0, 1 for --help, -1 on error. */
static int one_option(int c, char **argv, vw_args *a) {
  switch (c) {
  case 'l': a->list = 1; return 0;
  case 'm': a->metrics = optarg; return 0;
  case 'i': a->include = optarg; return 0;
  case 'e': a->exclude = optarg; return 0;
  case 'f': a->format = optarg; return 0;
  case 'o': a->output = optarg; return 0;
  case O_SORTED: a->print_sorted = 1; return 0;
  case O_DIFF: a->diff = optarg; return 0;
  case O_NOCOLOR: a->no_color = 1; return 0;
  case O_COLOR: a->force_color = 1; return 0;
  case O_DEMANGLE: a->demangle = 1; return 0;
  case O_SVG: a->svg = optarg; return 0;
  case O_ROOFLINE: a->roofline = optarg; return 0;
  case O_COLOR_BY: a->color_by = optarg; return 0;
  case O_LINES: return lines_option(optarg, a);
  case O_RANKS: a->ranks = 1; return 0;
  case O_MERGE_TRACES: a->merge_traces = optarg; return 0;
  case O_ADVISE: a->advise = 1; return 0;
  case O_JSON: a->json = 1; return 0;
  case 't':
  case 'd': return number_option(c, optarg, a);
  case 'h': return 1;
  default: return bad_option(c, optind > 0 ? argv[optind - 1] : NULL);
  }
}

static int check_choices(const vw_args *a) {
  static const char *const formats[] = {"full", "file_function_line",
                                        "function_line", "file_function"};
  static const char *const outputs[] = {"tree", "folded", "json", "csv"};
  int ok_f = !a->format, ok_o = !a->output;
  for (int k = 0; k < 4; k++) {
    ok_f |= a->format && !strcmp(a->format, formats[k]);
    ok_o |= a->output && !strcmp(a->output, outputs[k]);
  }
  if (!ok_f)
    return vw_fail("bad --format \"%.200s\"", a->format);
  if (!ok_o)
    return vw_fail("bad --output \"%.200s\"", a->output);
  if (a->include && a->exclude)
    return vw_fail("Cannot specify both include and exclude");
  if (a->color_by && !a->svg)
    return vw_fail("--color-by colours the flame graph; give --svg too");
  if (a->svg && a->diff)
    return vw_fail("--svg draws one profile; it does not take --diff-profile");
  if (a->roofline && (a->diff || a->n_files > 1 || a->ranks || a->list ||
                      a->lines || a->merge_traces))
    return vw_fail("--roofline draws one profile's kernels; it cannot be "
                   "combined with --diff-profile, several files, --ranks, "
                   "--list, --lines or --merge-traces");
  return 0;
}

int vw_parse_args(int argc, char **argv, vw_args *a) {
  memset(a, 0, sizeof *a);
  a->depth = 100;
  if (argc < 1 || !argv)
    return vw_fail("expected exactly one profile file (see --help)");
  for (int i = 1; i < argc; i++) /* Proton's single-dash spelling */
    if (argv[i] && !strcmp(argv[i], "-diff"))
      argv[i] = "--diff-profile";
  optind = 0; /* GNU: start over, whatever an earlier call left */
  opterr = 0; /* messages come from bad_option() */
  int c;
  while ((c = getopt_long(argc, argv, ":lm:i:e:t:d:f:o:h", long_opts, NULL)) !=
         -1) {
    int rc = one_option(c, argv, a);
    if (rc)
      return rc;
  }
  if (optind >= argc)
    return vw_fail("expected a profile file (see --help)");
  a->files = argv + optind;
  a->n_files = argc - optind;
  a->file = argv[optind];
  if (a->diff && (a->n_files > 1 || a->ranks))
    return vw_fail("--diff-profile compares one profile with another; it "
                   "cannot be combined with several files or --ranks");
  if (a->svg && (a->n_files > 1 || a->ranks || a->list || a->lines ||
                 a->merge_traces)) /* it used to be skipped without a word */
    return vw_fail("--svg draws one profile's tree; it cannot be combined "
                   "with several files, --ranks, --list, --lines or "
                   "--merge-traces");
  if (a->json && !a->advise)
    return vw_fail("--json is the --advise output's form; give --advise too");
  if (a->advise && (a->list || a->lines || a->svg || a->roofline || a->diff ||
                    a->ranks || a->merge_traces || a->metrics || a->output))
    return vw_fail("--advise reads the profiles whole; it cannot be combined "
                   "with -l, -m, -o, --lines, --svg, --roofline, --diff-profile, "
                   "--ranks or --merge-traces");
  return check_choices(a);
}
