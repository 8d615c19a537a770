/* tools/viewer/tree.c -- loading a profile into the viewer's table, columns,
 * subtree sums and squashing (Hatchet's squash + update_inclusive_columns).
 *
 * Invariant: nodes stay in pre-order (parent index < child index), so a
 * subtree sum is one reverse pass and squashing keeps the order.
 * Called by main.c, derive.c, filter.c and diff.c; not performance-critical
 * beyond being linear in the node count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

#define METADATA_SCOPE "__proton_launch_metadata"

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "cproton-viewer: out of memory\n");
    exit(2);
  }
  return p;
}

static int push_name(char ***list, int *n, const char *name) {
  for (int i = 0; i < *n; i++)
    if (!strcmp((*list)[i], name))
      return 0;
  char **l = realloc(*list, (size_t)(*n + 1) * sizeof *l);
  if (!l)
    return vw_fail("out of memory");
  *list = l;
  l[(*n)++] = strdup(name);
  return 0;
}

/* Which frames to show: launch-metadata frames go (with their subtrees),
 * and so does every frame with no metric in its own subtree. A frame that
 * carries metrics stays even when all its children went: Proton's
 * remove_frames() drops it then, which loses a CPU scope's metrics when its
 * nested scopes have none (docs/viewer.md, "Which frames are shown"). */
static uint8_t *removal_mask(const cproton_profile *p) {
  uint32_t n = cproton_profile_node_count(p);
  uint8_t *keep = xcalloc(n, 1);
  uint32_t *kept_children = xcalloc(n, sizeof *kept_children);
  for (uint32_t i = n; i-- > 0;) {
    int has = cproton_profile_node_metric_count(p, i) > 0 || kept_children[i];
    int k = strcmp(cproton_profile_node_name(p, i), METADATA_SCOPE) != 0 && has;
    keep[i] = (uint8_t)k;
    uint32_t par = cproton_profile_node_parent(p, i);
    if (k && par != CPROTON_PROFILE_NO_NODE)
      kept_children[par]++;
  }
  for (uint32_t i = 1; i < n; i++)
    keep[i] &= keep[cproton_profile_node_parent(p, i)];
  free(kept_children);
  return keep;
}

/* Hatchet's column lists: "inclusive" = the root's metric names, then
 * "name" and every other metric name in first-seen (pre-order) order. Each
 * metric key is looked at once, so this is linear in the metric values. */
static int metric_lists(vw_tree *t) {
  const cproton_profile *p = t->p;
  uint32_t root = t->nodes[0].src, n_keys = cproton_profile_metric_count(p);
  uint8_t *seen = xcalloc(n_keys, 1);
  int rc = -1;
  for (uint32_t m = 0; m < cproton_profile_node_metric_count(p, root); m++) {
    uint32_t key;
    cproton_profile_node_metric_at(p, root, m, &key, NULL);
    const char *name = cproton_profile_metric_name(p, key);
    if (!strstr(name, "(inc)") && push_name(&t->inc_raw, &t->n_inc_raw, name))
      goto out;
  }
  if (push_name(&t->exc_raw, &t->n_exc_raw, "name"))
    goto out;
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t s = t->nodes[i].src;
    for (uint32_t m = 0; m < cproton_profile_node_metric_count(p, s); m++) {
      uint32_t key;
      cproton_profile_node_metric_at(p, s, m, &key, NULL);
      if (key >= n_keys || seen[key])
        continue;
      seen[key] = 1;
      const char *name = cproton_profile_metric_name(p, key);
      int is_inc = 0;
      for (int k = 0; k < t->n_inc_raw; k++)
        is_inc |= !strcmp(t->inc_raw[k], name);
      if (!is_inc && push_name(&t->exc_raw, &t->n_exc_raw, name))
        goto out;
    }
  }
  rc = 0;
out:
  free(seen);
  return rc;
}

int vw_tree_load(const char *path, vw_tree *t) {
  memset(t, 0, sizeof *t);
  t->file = path;
  if (cproton_profile_open(path, &t->p) != CPROTON_OK)
    return vw_fail("%s", cproton_last_error());
  uint32_t n = cproton_profile_node_count(t->p);
  uint8_t *keep = removal_mask(t->p);
  uint32_t *map = xcalloc(n, sizeof *map);
  t->nodes = xcalloc(n, sizeof *t->nodes);
  for (uint32_t i = 0; i < n; i++) {
    if (!keep[i])
      continue;
    uint32_t par = cproton_profile_node_parent(t->p, i);
    vw_node *v = &t->nodes[t->n];
    v->parent = par == CPROTON_PROFILE_NO_NODE ? VW_NONE : map[par];
    v->depth = cproton_profile_node_depth(t->p, i);
    v->src = i;
    v->name = cproton_profile_node_name(t->p, i);
    map[i] = t->n++;
  }
  free(keep);
  free(map);
  if (t->n == 0)
    return vw_fail("%s: no frame holds a metric (an empty profile?)", path);
  vw_tree_link(t);
  if (metric_lists(t))
    return -1;
  vw_tree_sort(t);
  return 0;
}

void vw_tree_free(vw_tree *t) {
  for (int i = 0; i < t->n_cols; i++) {
    free(t->cols[i].name);
    free(t->cols[i].v);
  }
  for (int i = 0; i < t->n_inc_raw; i++)
    free(t->inc_raw[i]);
  for (int i = 0; i < t->n_exc_raw; i++)
    free(t->exc_raw[i]);
  free(t->inc_raw);
  free(t->exc_raw);
  free(t->cols);
  free(t->nodes);
  free(t->first_child);
  free(t->next_sibling);
  cproton_profile_close(t->p);
  memset(t, 0, sizeof *t);
}

void vw_tree_link(vw_tree *t) {
  free(t->first_child);
  free(t->next_sibling);
  t->first_child = xcalloc(t->n, sizeof(uint32_t));
  t->next_sibling = xcalloc(t->n, sizeof(uint32_t));
  uint32_t *last = xcalloc(t->n, sizeof(uint32_t));
  for (uint32_t i = 0; i < t->n; i++)
    t->first_child[i] = t->next_sibling[i] = last[i] = VW_NONE;
  uint32_t last_root = VW_NONE; /* roots are chained as siblings too */
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t par = t->nodes[i].parent;
    if (par == VW_NONE) {
      if (last_root != VW_NONE)
        t->next_sibling[last_root] = i;
      last_root = i;
      continue;
    }
    if (last[par] == VW_NONE)
      t->first_child[par] = i;
    else
      t->next_sibling[last[par]] = i;
    last[par] = i;
  }
  free(last);
}

int vw_col_new(vw_tree *t, const char *name, int inc_of) {
  if (t->n_cols == t->cap_cols) {
    t->cap_cols = t->cap_cols ? t->cap_cols * 2 : 8;
    t->cols = realloc(t->cols, (size_t)t->cap_cols * sizeof *t->cols);
    if (!t->cols) {
      fprintf(stderr, "cproton-viewer: out of memory\n");
      exit(2);
    }
  }
  vw_col *c = &t->cols[t->n_cols];
  c->name = strdup(name);
  c->v = xcalloc(t->n, sizeof(double));
  c->inc_of = inc_of;
  for (uint32_t i = 0; i < t->n; i++)
    c->v[i] = NAN;
  return t->n_cols++;
}

int vw_col_find(const vw_tree *t, const char *name) {
  for (int i = 0; i < t->n_cols; i++)
    if (!strcmp(t->cols[i].name, name))
      return i;
  return -1;
}

/* Sum with pandas' sum(min_count=1): NaN only if the whole subtree is. */
void vw_col_subtree_sum(vw_tree *t, int inc, int exc) {
  double *d = t->cols[inc].v, *s = t->cols[exc].v;
  memcpy(d, s, t->n * sizeof(double));
  for (uint32_t i = t->n; i-- > 1;) {
    uint32_t par = t->nodes[i].parent;
    if (par == VW_NONE || isnan(d[i]))
      continue;
    d[par] = isnan(d[par]) ? d[i] : d[par] + d[i];
  }
}

static int raw_column(vw_tree *t, const char *name) {
  uint32_t key;
  if (cproton_profile_metric_find(t->p, name, &key) != CPROTON_OK)
    return vw_fail("%s: no metric \"%s\"", t->file, name);
  int c = vw_col_new(t, name, -1), numeric = 0, strings = 0, vectors = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    cproton_metric_value v;
    if (t->nodes[i].src == VW_NONE ||
        cproton_profile_node_metric(t->p, t->nodes[i].src, key, &v))
      continue;
    strings += v.kind == CPROTON_METRIC_STRING;
    vectors += v.kind == CPROTON_METRIC_VECTOR;
    numeric += v.kind != CPROTON_METRIC_STRING && v.kind != CPROTON_METRIC_VECTOR;
    t->cols[c].v[i] = v.d; /* NaN for a string or a vector */
  }
  if ((strings || vectors) && !numeric)
    return vw_fail("%s: metric \"%s\" holds %s, not numbers", t->file, name,
                   vectors ? "vectors (arrays)" : "strings");
  return c;
}

/* A column by its DataFrame name: existing, raw, or "X (inc)" of a raw
 * root metric X. Returns the index or -1 (vw_errmsg). */
int vw_col_get(vw_tree *t, const char *name) {
  int c = vw_col_find(t, name);
  if (c >= 0)
    return c;
  if (!strcmp(name, "name"))
    return vw_fail("%s: metric \"name\" holds strings, not numbers", t->file);
  size_t len = strlen(name);
  if (len > 6 && !strcmp(name + len - 6, " (inc)")) {
    char base[1024];
    snprintf(base, sizeof base, "%.*s", (int)(len - 6), name);
    for (int k = 0; k < t->n_inc_raw; k++) {
      if (strcmp(t->inc_raw[k], base))
        continue;
      int e = vw_col_get(t, base);
      if (e < 0)
        return -1;
      c = vw_col_new(t, name, e);
      vw_col_subtree_sum(t, c, e);
      return c;
    }
  }
  return raw_column(t, name);
}

/* String form of metric `metric` on every node (device_id, device_type):
 * out[i] is NULL when absent or a double; integers are printed in decimal
 * into *store. The key is looked up once. Returns the array (caller frees
 * it and *store). */
const char **vw_node_strs(const vw_tree *t, const char *metric, char **store) {
  const char **out = xcalloc(t->n, sizeof *out);
  uint32_t key;
  *store = NULL;
  if (cproton_profile_metric_find(t->p, metric, &key) != CPROTON_OK)
    return out;
  for (uint32_t i = 0; i < t->n; i++) {
    cproton_metric_value v;
    if (t->nodes[i].src == VW_NONE ||
        cproton_profile_node_metric(t->p, t->nodes[i].src, key, &v))
      continue;
    if (v.kind == CPROTON_METRIC_STRING) {
      out[i] = v.s;
    } else if (v.kind == CPROTON_METRIC_INT) {
      if (!*store)
        *store = xcalloc(t->n, 24);
      snprintf(*store + (size_t)i * 24, 24, "%lld", (long long)v.i);
      out[i] = *store + (size_t)i * 24;
    }
  }
  return out;
}

/* Hatchet's squash: keep the marked nodes, reattach each to its nearest kept
 * ancestor, then recompute every "X (inc)" column from X. */
void vw_tree_keep(vw_tree *t, const uint8_t *keep) {
  uint32_t *map = xcalloc(t->n, sizeof *map), m = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t par = t->nodes[i].parent;
    uint32_t up = par == VW_NONE ? VW_NONE : map[par];
    if (!keep[i]) {
      map[i] = up; /* nearest kept ancestor, for the descendants */
      continue;
    }
    vw_node v = t->nodes[i];
    v.parent = up;
    v.depth = up == VW_NONE ? 0 : t->nodes[up].depth + 1;
    for (int c = 0; c < t->n_cols; c++)
      t->cols[c].v[m] = t->cols[c].v[i];
    t->nodes[m] = v;
    map[i] = m++;
  }
  t->n = m;
  free(map);
  for (int c = 0; c < t->n_cols; c++)
    if (t->cols[c].inc_of >= 0)
      vw_col_subtree_sum(t, c, t->cols[c].inc_of);
  vw_tree_link(t);
}

/* Sorting siblings by name (strcmp order, ties in file order): each name
 * is keyed by its 8 bytes after the siblings' common prefix, big-endian, so
 * most comparisons are one integer compare; a stable merge sort keeps ties
 * in file order. */
typedef struct sort_item {
  uint64_t key;
  uint32_t idx;
} sort_item;

static int item_less(const vw_node *nodes, const sort_item *a,
                     const sort_item *b) {
  if (a->key != b->key)
    return a->key < b->key;
  return strcmp(nodes[a->idx].name, nodes[b->idx].name) < 0;
}

static void merge_sort(const vw_node *nodes, sort_item *v, sort_item *tmp,
                       size_t n) {
  if (n < 2)
    return;
  size_t h = n / 2, i = 0, j = h, k = 0;
  merge_sort(nodes, v, tmp, h);
  merge_sort(nodes, v + h, tmp, n - h);
  if (!item_less(nodes, &v[h], &v[h - 1]))
    return; /* already in order */
  while (i < h && j < n)
    tmp[k++] = item_less(nodes, &v[j], &v[i]) ? v[j++] : v[i++];
  while (i < h)
    tmp[k++] = v[i++];
  memcpy(v, tmp, k * sizeof *v); /* v[j..n) is in place */
}

/* Sorts kids[0..n) (ascending node indexes) by name; items/tmp hold n. */
static void sort_siblings(const vw_node *nodes, uint32_t *kids, size_t n,
                          sort_item *items, sort_item *tmp) {
  if (n < 2)
    return;
  const char *first = nodes[kids[0]].name;
  size_t lcp = strlen(first);
  for (size_t i = 1; i < n && lcp; i++) {
    const char *s = nodes[kids[i]].name;
    size_t l = 0;
    while (l < lcp && s[l] == first[l])
      l++;
    lcp = l;
  }
  for (size_t i = 0; i < n; i++) {
    const unsigned char *s = (const unsigned char *)nodes[kids[i]].name + lcp;
    uint64_t key = 0;
    int b = 0;
    for (; b < 8 && s[b]; b++)
      key = key << 8 | s[b];
    items[i] = (sort_item){b ? key << (8 * (8 - b)) : 0, kids[i]};
  }
  merge_sort(nodes, items, tmp, n);
  for (size_t i = 0; i < n; i++)
    kids[i] = items[i].idx;
}

/* Hatchet numbers nodes in a pre-order walk that visits children sorted by
 * frame (name, then type; all frames are "function"), and renders in that
 * order: reorder the table the same way. Ties keep file order. */
void vw_tree_sort(vw_tree *t) {
  uint32_t n = t->n, *order = xcalloc(n, sizeof *order), m = 0;
  uint32_t *stack = xcalloc(n, sizeof *stack), *kids = xcalloc(n, sizeof *kids);
  uint32_t *newid = xcalloc(n, sizeof *newid);
  sort_item *items = xcalloc(n, sizeof *items), *tmp = xcalloc(n, sizeof *tmp);
  size_t sp = 0, nk = 0;
  for (uint32_t i = 0; i < n; i++)
    if (t->nodes[i].parent == VW_NONE)
      kids[nk++] = i;
  sort_siblings(t->nodes, kids, nk, items, tmp);
  while (nk)
    stack[sp++] = kids[--nk];
  while (sp) {
    uint32_t u = stack[--sp];
    order[m++] = u;
    for (uint32_t c = t->first_child[u]; c != VW_NONE; c = t->next_sibling[c])
      kids[nk++] = c;
    sort_siblings(t->nodes, kids, nk, items, tmp);
    while (nk)
      stack[sp++] = kids[--nk];
  }
  free(items), free(tmp);
  vw_node *nodes = xcalloc(n, sizeof *nodes);
  for (uint32_t i = 0; i < n; i++) {
    nodes[i] = t->nodes[order[i]];
    newid[order[i]] = i;
  }
  for (uint32_t i = 0; i < n; i++)
    if (nodes[i].parent != VW_NONE)
      nodes[i].parent = newid[nodes[i].parent];
  for (int c = 0; c < t->n_cols; c++) {
    double *v = xcalloc(n, sizeof *v);
    for (uint32_t i = 0; i < n; i++)
      v[i] = t->cols[c].v[order[i]];
    free(t->cols[c].v);
    t->cols[c].v = v;
  }
  free(t->nodes);
  t->nodes = nodes;
  free(order), free(stack), free(kids), free(newid);
  vw_tree_link(t);
}
