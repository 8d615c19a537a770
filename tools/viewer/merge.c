/* tools/viewer/merge.c -- several ranks' profiles as one tree: the union of
 * their frames (matched by name under matched parents) and, for each shown
 * metric M, the columns "M (sum)", "M (mean)", "M (max)" and "M imbalance".
 *
 * A rank without a frame counts 0 there: mean = sum / ranks, and
 * imbalance = max / mean - 1 (0 when the mean is 0), i.e. how much longer
 * the slowest rank took than the average one: 0 is perfect balance, 1 means
 * the slowest took twice the mean. Profiles must agree on device types and
 * architectures and on each metric's kind (number or string); otherwise the
 * message names the file and the metric or device.
 * Invariant: the union stays parent-before-child (new frames are appended
 * after their parent), which vw_tree_link / vw_tree_sort need.
 * Called by main.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

static const char *const stats[] = {"sum", "mean", "max", "imbalance"};

static void *xalloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p) {
    fprintf(stderr, "cproton-viewer: out of memory\n");
    exit(2);
  }
  return p;
}

/* ---- compatibility -------------------------------------------------------- */

static int devices_match(const vw_tree *a, const vw_tree *b) {
  uint32_t na = cproton_profile_device_count(a->p),
           nb = cproton_profile_device_count(b->p);
  for (uint32_t i = 0; i < na && nb; i++) {
    cproton_device_info x, y;
    cproton_profile_device(a->p, i, &x);
    cproton_profile_device(b->p, i < nb ? i : 0, &y);
    if (strcmp(x.type, y.type))
      return vw_fail("%s: device type %s differs from %s's %s; ranks of "
                     "different device types cannot be merged",
                     b->file, y.type, a->file, x.type);
    if (strcmp(x.arch, y.arch))
      return vw_fail("%s: device %s %s has arch %s but %s's has arch %s; "
                     "ranks of different devices cannot be merged",
                     b->file, y.type, y.index, y.arch, a->file, x.arch);
  }
  return 0;
}

/* Per metric key of `t`: bit 0 = seen as a number, bit 1 = as a string,
 * bit 2 = as a vector (an array: never a column, but a name that is a vector
 * in one rank and a number in another is a type change the merge refuses). */
static uint8_t *metric_kinds(const vw_tree *t) {
  const cproton_profile *p = t->p;
  uint32_t n_keys = cproton_profile_metric_count(p);
  uint8_t *kind = xalloc(n_keys);
  for (uint32_t i = 0; i < cproton_profile_node_count(p); i++)
    for (uint32_t m = 0; m < cproton_profile_node_metric_count(p, i); m++) {
      uint32_t key;
      cproton_metric_value v;
      cproton_profile_node_metric_at(p, i, m, &key, &v);
      if (key < n_keys && v.kind != CPROTON_METRIC_NONE)
        kind[key] |= v.kind == CPROTON_METRIC_STRING   ? 2
                     : v.kind == CPROTON_METRIC_VECTOR ? 4
                                                       : 1;
    }
  return kind;
}

/* "numbers", "strings and vectors", ... for a set of kind bits. */
static const char *kind_words(uint8_t k) {
  static const char *const words[] = {"",
                                      "numbers",
                                      "strings",
                                      "numbers and strings",
                                      "vectors",
                                      "numbers and vectors",
                                      "strings and vectors",
                                      "numbers, strings and vectors"};
  return words[k & 7];
}

static int metrics_match(const vw_tree *a, const vw_tree *b) {
  uint8_t *ka = metric_kinds(a), *kb = metric_kinds(b);
  uint32_t na = cproton_profile_metric_count(a->p);
  int rc = 0;
  for (uint32_t k = 0; k < cproton_profile_metric_count(b->p) && !rc; k++) {
    const char *name = cproton_profile_metric_name(b->p, k);
    for (uint32_t j = 0; j < na && !rc; j++) {
      uint8_t both = ka[j] | kb[k];
      if (ka[j] && kb[k] && (both & (both - 1)) && /* more than one kind */
          !strcmp(cproton_profile_metric_name(a->p, j), name))
        rc = vw_fail("%s: metric '%s' holds %s there but %s in %s; the "
                     "profiles cannot be merged", b->file, name,
                     kind_words(kb[k]), kind_words(ka[j]), a->file);
    }
  }
  free(ka), free(kb);
  return rc;
}

int vw_merge_check(vw_tree *trees, int n) {
  for (int i = 1; i < n; i++)
    if (devices_match(&trees[0], &trees[i]) ||
        metrics_match(&trees[0], &trees[i]))
      return -1;
  return 0;
}

/* ---- the union ------------------------------------------------------------ */

typedef struct uni {
  vw_node *nodes;
  uint32_t n, cap;
  uint32_t *table; /* hash of (parent, name) -> node, open addressing */
  size_t table_cap;
} uni;

static void uni_rehash(uni *u) {
  free(u->table);
  u->table_cap = 16;
  while (u->table_cap < (size_t)u->cap * 2)
    u->table_cap *= 2;
  u->table = xalloc(u->table_cap * sizeof *u->table);
  memset(u->table, 0xff, u->table_cap * sizeof *u->table);
  for (uint32_t i = 0; i < u->n; i++) {
    size_t j = vw_name_hash(u->nodes[i].parent, u->nodes[i].name) &
               (u->table_cap - 1);
    while (u->table[j] != VW_NONE)
      j = (j + 1) & (u->table_cap - 1);
    u->table[j] = i;
  }
}

/* The union node for `name` under `parent`, created when new. */
static uint32_t uni_child(uni *u, uint32_t parent, const char *name) {
  size_t j = vw_name_hash(parent, name) & (u->table_cap - 1);
  for (; u->table[j] != VW_NONE; j = (j + 1) & (u->table_cap - 1)) {
    const vw_node *v = &u->nodes[u->table[j]];
    if (v->parent == parent && !strcmp(v->name, name))
      return u->table[j];
  }
  if (u->n == u->cap) {
    u->cap = u->cap ? u->cap * 2 : 256;
    u->nodes = realloc(u->nodes, u->cap * sizeof *u->nodes);
    if (!u->nodes) {
      fprintf(stderr, "cproton-viewer: out of memory\n");
      exit(2);
    }
    uni_rehash(u);
    return uni_child(u, parent, name);
  }
  uint32_t id = u->n++;
  u->nodes[id] = (vw_node){.parent = parent, .src = VW_NONE, .name = name,
                           .depth = parent == VW_NONE
                                        ? 0 : u->nodes[parent].depth + 1};
  u->table[j] = id;
  return id;
}

/* map[i] = union node of tree t's node i. */
static uint32_t *uni_add(uni *u, const vw_tree *t) {
  uint32_t *map = xalloc((size_t)t->n * sizeof *map);
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t par = t->nodes[i].parent;
    map[i] = uni_child(u, par == VW_NONE ? VW_NONE : map[par],
                       t->nodes[i].name);
  }
  return map;
}

/* ---- statistics ----------------------------------------------------------- */

/* Fills the four columns of shown metric `k` from every rank. */
static void fill_stats(vw_tree *trees, int n, uint32_t **maps,
                       const int *const *cols, int k, uint32_t n_nodes,
                       double **out) {
  for (int s = 0; s < 4; s++)
    for (uint32_t i = 0; i < n_nodes; i++)
      out[s][i] = s == 2 ? -INFINITY : 0;
  uint8_t *any = xalloc(n_nodes);
  for (int r = 0; r < n; r++) {
    double *v = trees[r].cols[cols[r][k]].v;
    uint8_t *seen = xalloc(n_nodes);
    for (uint32_t i = 0; i < trees[r].n; i++) {
      uint32_t u = maps[r][i];
      if (isnan(v[i]) || seen[u])
        continue;
      seen[u] = any[u] = 1;
      out[0][u] += v[i];
      out[2][u] = v[i] > out[2][u] ? v[i] : out[2][u];
    }
    for (uint32_t u = 0; u < n_nodes; u++) /* absent on this rank: 0 */
      if (!seen[u] && out[2][u] < 0)
        out[2][u] = 0;
    free(seen);
  }
  for (uint32_t u = 0; u < n_nodes; u++) {
    if (!any[u]) {
      out[0][u] = out[1][u] = out[2][u] = out[3][u] = NAN;
      continue;
    }
    out[1][u] = out[0][u] / n;
    out[3][u] = out[1][u] != 0 ? out[2][u] / out[1][u] - 1 : 0;
  }
  free(any);
}

int vw_merge(vw_tree *trees, int n, const int *const *cols, int n_cols,
             int *out_cols) {
  uni u = {0};
  u.cap = 256;
  u.nodes = xalloc(u.cap * sizeof *u.nodes);
  uni_rehash(&u);
  uint32_t **maps = xalloc((size_t)n * sizeof *maps);
  for (int r = 0; r < n; r++)
    maps[r] = uni_add(&u, &trees[r]);
  double **vals = xalloc((size_t)n_cols * 4 * sizeof *vals);
  char **names = xalloc((size_t)n_cols * 4 * sizeof *names);
  for (int k = 0; k < n_cols; k++) {
    for (int s = 0; s < 4; s++) {
      char name[512], base[480];
      snprintf(base, sizeof base, "%s", trees[0].cols[cols[0][k]].name);
      char *inc = strstr(base, " (inc)"); /* Hatchet's column, not ours */
      if (inc)
        *inc = '\0';
      snprintf(name, sizeof name, s == 3 ? "%s %s" : "%s (%s)", base,
               stats[s]);
      names[4 * k + s] = strdup(name);
      vals[4 * k + s] = xalloc((size_t)u.n * sizeof(double));
    }
    fill_stats(trees, n, maps, cols, k, u.n, &vals[4 * k]);
  }
  vw_tree *m = &trees[0]; /* becomes the merged tree */
  for (int c = 0; c < m->n_cols; c++)
    free(m->cols[c].name), free(m->cols[c].v);
  m->n_cols = 0;
  free(m->nodes);
  m->nodes = u.nodes;
  m->n = u.n;
  for (int c = 0; c < 4 * n_cols; c++) {
    out_cols[c] = vw_col_new(m, names[c], -1);
    free(m->cols[out_cols[c]].v);
    m->cols[out_cols[c]].v = vals[c];
    free(names[c]);
  }
  for (int r = 0; r < n; r++)
    free(maps[r]);
  free(maps), free(u.table), free(vals), free(names);
  vw_tree_link(m);
  vw_tree_sort(m);
  return 0;
}
