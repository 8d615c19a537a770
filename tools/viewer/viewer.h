/* tools/viewer/viewer.h -- cproton-viewer's internal model: a pre-order tree
 * of frames with named double columns, mirroring the pandas DataFrame that
 * Proton's viewer builds with Hatchet (docs/viewer.md). Uses only the public
 * header <cproton/cproton.h>. */
#ifndef CPROTON_VIEWER_H
#define CPROTON_VIEWER_H

#include <stdint.h>
#include <stdio.h>

#include <cproton/cproton.h>

#define VW_NONE UINT32_MAX

typedef struct vw_node {
  uint32_t parent; /* VW_NONE for a root */
  uint32_t depth;
  uint32_t src;    /* node id in the profile (VW_NONE: from the other side) */
  uint8_t missing; /* diff: 0 both sides, 1 only left, 2 only right */
  const char *name;
} vw_node;

typedef struct vw_col {
  char *name;
  double *v;
  int inc_of; /* >= 0: "X (inc)" recomputed from column inc_of on squash */
} vw_col;

typedef struct vw_tree {
  cproton_profile *p;
  const char *file;
  uint32_t n;
  vw_node *nodes; /* pre-order: parent index < child index */
  uint32_t *first_child, *next_sibling;
  vw_col *cols;
  int n_cols, cap_cols;
  char **inc_raw; /* raw metrics on the root: summed into " (inc)" */
  int n_inc_raw;
  char **exc_raw; /* every other column: "name", device_id, ... */
  int n_exc_raw;
  int diff; /* nodes carry `missing` */
} vw_tree;

/* args.c: the command line. */
typedef struct vw_args {
  int list, print_sorted, no_color, force_color, demangle, depth;
  int lines; /* --lines[=N]: the N hottest source lines (0: off) */
  char *metrics, *include, *exclude, *format, *diff, *output, *file;
  char *svg; /* --svg FILE: also write an icicle flame graph there */
  char *roofline; /* --roofline FILE: also write a roofline chart there */
  char *color_by; /* --color-by METRIC: the flame graph's colour (svg.c) */
  double threshold;
  char **files;        /* every positional FILE (files[0] == file) */
  int n_files, ranks;  /* ranks: merge even one file (--ranks) */
  char *merge_traces;  /* --merge-traces OUT: the files are .pftrace */
  int advise, json;    /* --advise [--json]: the advisor (advise.c) */
} vw_args;

/* Parses argv (argv[0] is the program) into *out. Returns 0, 1 when
 * --help/-h was given, or -1 with vw_errmsg set ("bad depth ...",
 * "option '-x' is unknown (see --help)"). Never exits or prints; strings in
 * *out point into argv (which it may rewrite: "-diff" -> "--diff-profile").
 * Restarts getopt (optind = 0) on every call; not thread-safe. */
int vw_parse_args(int argc, char **argv, vw_args *out);
void vw_usage(FILE *f);

/* Message of the last failure (the tool prints it). */
extern char vw_errmsg[1024];
int vw_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* tree.c */
int vw_tree_load(const char *path, vw_tree *t);
void vw_tree_free(vw_tree *t);
void vw_tree_link(vw_tree *t);
void vw_tree_sort(vw_tree *t);
int vw_col_new(vw_tree *t, const char *name, int inc_of);
int vw_col_find(const vw_tree *t, const char *name);
int vw_col_get(vw_tree *t, const char *name);
void vw_col_subtree_sum(vw_tree *t, int inc, int exc);
void vw_tree_keep(vw_tree *t, const uint8_t *keep);
const char **vw_node_strs(const vw_tree *t, const char *metric, char **store);

/* derive.c: Proton's derive_metrics. Fills out[i] with column indexes of the
 * metrics to show; returns 0 or -1 (vw_errmsg). */
int vw_derive(vw_tree *t, char **metrics, int n, int *out);
/* timecol.c: the column name matching `metric` (case-insensitive, unit
 * ignored; "(inc)" appended for inclusive ones) into out, or -1
 * (vw_errmsg); the matched time column in seconds per node; and the
 * inclusive "time" in seconds per node (get_time_seconds). */
int vw_match_metric(vw_tree *t, const char *metric, char *out, size_t cap);
int vw_time_seconds(vw_tree *t, const char *metric, double *out);
int vw_derive_time_seconds(vw_tree *t, double *out);
/* util.c: the util column; the device peaks it uses (specs.py): FLOP/s at
 * an operand width (8, 16, 32, 64 bits) and bytes/s. 0, or -1 with vw_errmsg
 * naming the file and the unsupported device. */
int vw_util(vw_tree *t);
int vw_peak_flops(const char *file, const cproton_device_info *d, int width,
                  double *out);
int vw_peak_bps(const char *file, const cproton_device_info *d, double *out);

/* roofline.c: writes a roofline chart of the kernel frames (achieved FLOP/s
 * against FLOP per byte, log-log) with the first device's ceilings to `f`.
 * 0, or -1 (vw_errmsg) when no kernel frame has FLOPs, bytes and time, or
 * the device's peaks are unknown. */
int vw_roofline(vw_tree *t, FILE *f);

/* hwm.c: hardware-metric columns (PM sampling, issue 27). vw_hwm_column:
 * the column "X (inc)" = X*ns / pm_sampled_ns over each frame's subtree
 * (NaN where nothing was sampled) for a metric X whose "X*ns" the profile
 * has (X matched case-insensitively); -2 when it has none (not an error),
 * -1 (vw_errmsg) when X*ns has no pm_sampled_ns beside it. vw_hwm_present:
 * whether the profile has pm_sampled_ns. vw_hwm_list: writes the
 * "Available hardware metrics" section of --list (nothing without them);
 * returns how many it listed. */
int vw_hwm_column(vw_tree *t, const char *metric);
int vw_hwm_present(const vw_tree *t);
int vw_hwm_list(const vw_tree *t, FILE *f);

/* filter.c */
int vw_filter(vw_tree *t, const char *include, const char *exclude,
              double threshold, int metric_col);

/* diff.c: the hash of a frame by (parent index, name), for matching trees
 * (diff.c, merge.c). */
uint64_t vw_name_hash(uint32_t parent, const char *name);

/* diff.c: left - right on the shown columns (names taken from left). */
int vw_diff(vw_tree *left, vw_tree *right, const int *cols, int n_cols);

/* merge.c: ranks as one tree. vw_merge_check refuses profiles of
 * different device types/archs or metric kinds (vw_errmsg names the file
 * and metric). vw_merge turns trees[0] into the union of all n trees with
 * four columns per shown metric (cols[r][k]: metric k's column in tree r):
 * out_cols[4k..4k+3] = sum, mean, max, imbalance (max/mean - 1). The other
 * trees must outlive trees[0] (frame names point into them). */
int vw_merge_check(vw_tree *trees, int n);
int vw_merge(vw_tree *trees, int n, const int *const *cols, int n_cols,
             int *out_cols);

/* demangle.c */
const char *vw_demangle(const char *name, char **buf, size_t *cap);

/* escape.c: `name` with control characters (C0, DEL, C1) shown as visible
 * escapes (\n, \x1b, \u009b) in *buf (grown as needed, owned by the
 * caller), or `name` itself when it has none. Exits 2 when out of memory,
 * as the viewer's other allocations do. */
const char *vw_escape(const char *name, char **buf, size_t *cap);

/* lines.c: the --lines view (hottest source lines of a PC-sampling
 * profile, with their main stall reasons). 0 or -1 (vw_errmsg). */
int vw_lines(vw_tree *t, int top, FILE *out);

/* render.c */
typedef struct vw_render_opts {
  int depth;
  const char *format; /* frame-name format */
  int color, print_sorted, demangle;
  const char *output; /* "tree", "folded", "json", "csv" */
} vw_render_opts;
int vw_render(vw_tree *t, const int *cols, int n_cols,
              const vw_render_opts *o, FILE *out);

/* svg.c: writes the tree as a static icicle flame graph to `f` (the
 * stream of a cproton_output, which main.c opened before any input was
 * read and commits), frame widths from column `col`, colours by frame kind
 * or, when `color_col` >= 0, by that column's value on a blue-to-red scale
 * (0-100 for a name ending in '%', else its range; grey: no value);
 * o->depth and o->demangle apply. 0 or -1. */
int vw_svg(const vw_tree *t, int col, int color_col, const vw_render_opts *o,
           FILE *f);
/* svg.c: `s` as XML text (markup escaped, control bytes as '?'), cut to
 * max_chars code points with an ellipsis. */
void vw_svg_text(FILE *f, const char *s, size_t max_chars);

#endif
