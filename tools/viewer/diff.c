/* tools/viewer/diff.c -- --diff-profile: the union of two trees (frames
 * matched by name under matched parents, like Hatchet's graph union) and
 * left - right on the shown columns, with DataFrame.update()'s rule that a
 * NaN result keeps the left value. Nodes only on the right read NaN.
 * Invariant: the result stays in pre-order: a node's left children first,
 * then the right-only ones.
 * Called by main.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

typedef struct pair {
  uint32_t l, r;
} pair;

uint64_t vw_name_hash(uint32_t parent, const char *name) {
  uint64_t h = 1469598103934665603ull ^ parent;
  for (; *name; name++)
    h = (h ^ (unsigned char)*name) * 1099511628211ull;
  return h;
}

static int same_key(const vw_tree *L, uint32_t l, uint32_t parent, const char *name) {
  return L->nodes[l].parent == parent && !strcmp(L->nodes[l].name, name);
}

/* The table slot of key (parent, name): its entry or the empty slot to use.
 * One slot per distinct key, so same-named siblings cost no probing. */
static size_t find_slot(const vw_tree *L, const uint32_t *key_node, size_t cap, uint32_t parent,
                        const char *name) {
  size_t j = vw_name_hash(parent, name) & (cap - 1);
  while (key_node[j] != VW_NONE && !same_key(L, key_node[j], parent, name))
    j = (j + 1) & (cap - 1);
  return j;
}

/* match[r] = the left node that right node r merges into, or VW_NONE. The
 * k-th right child of a name merges into the k-th left child of that name
 * (each key's left nodes are chained in order). */
static uint32_t *match_nodes(const vw_tree *L, const vw_tree *R) {
  size_t cap = 16;
  while (cap < (size_t)L->n * 2)
    cap *= 2;
  uint32_t *key_node = malloc(cap * sizeof *key_node); /* first node of a key */
  uint32_t *next_free = malloc(cap * sizeof *next_free); /* next unmatched */
  uint32_t *tail = malloc(cap * sizeof *tail);
  uint32_t *next_same = malloc((L->n ? L->n : 1) * sizeof *next_same);
  uint32_t *match = malloc((R->n ? R->n : 1) * sizeof *match);
  if (!key_node || !next_free || !tail || !next_same || !match) {
    fprintf(stderr, "cproton-viewer: out of memory\n");
    exit(2);
  }
  memset(key_node, 0xff, cap * sizeof *key_node);
  for (uint32_t i = 0; i < L->n; i++) {
    size_t j = find_slot(L, key_node, cap, L->nodes[i].parent, L->nodes[i].name);
    next_same[i] = VW_NONE;
    if (key_node[j] == VW_NONE)
      key_node[j] = next_free[j] = i;
    else
      next_same[tail[j]] = i;
    tail[j] = i;
  }
  for (uint32_t r = 0; r < R->n; r++) {
    uint32_t rp = R->nodes[r].parent;
    uint32_t lp = rp == VW_NONE ? VW_NONE : match[rp];
    match[r] = VW_NONE;
    if (rp != VW_NONE && lp == VW_NONE)
      continue;
    size_t j = find_slot(L, key_node, cap, lp, R->nodes[r].name);
    if (key_node[j] != VW_NONE && next_free[j] != VW_NONE) {
      match[r] = next_free[j];
      next_free[j] = next_same[next_free[j]];
    }
  }
  free(key_node), free(next_free), free(tail), free(next_same);
  return match;
}

/* Pre-order walk of the union; returns the pairs in output order. */
static pair *union_order(const vw_tree *L, const vw_tree *R,
                         const uint32_t *match, const uint32_t *rmatch_of_l,
                         uint32_t *n_out) {
  size_t cap = (size_t)L->n + R->n + 1;
  pair *out = malloc(cap * sizeof *out), *stack = malloc(cap * sizeof *stack);
  pair *kids = malloc(cap * sizeof *kids);
  if (!out || !stack || !kids) {
    fprintf(stderr, "cproton-viewer: out of memory\n");
    exit(2);
  }
  size_t sp = 0, n = 0;
  for (uint32_t i = 0; i < L->n; i++) /* roots: left ones, then right-only */
    if (L->nodes[i].parent == VW_NONE)
      kids[n++] = (pair){i, rmatch_of_l[i]};
  for (uint32_t i = 0; i < R->n; i++)
    if (R->nodes[i].parent == VW_NONE && match[i] == VW_NONE)
      kids[n++] = (pair){VW_NONE, i};
  while (n)
    stack[sp++] = kids[--n];
  uint32_t m = 0;
  while (sp) {
    pair u = stack[--sp];
    out[m++] = u;
    size_t nk = 0;
    if (u.l != VW_NONE)
      for (uint32_t c = L->first_child[u.l]; c != VW_NONE; c = L->next_sibling[c])
        kids[nk++] = (pair){c, rmatch_of_l[c]};
    if (u.r != VW_NONE)
      for (uint32_t c = R->first_child[u.r]; c != VW_NONE; c = R->next_sibling[c])
        if (match[c] == VW_NONE)
          kids[nk++] = (pair){VW_NONE, c};
    while (nk)
      stack[sp++] = kids[--nk];
  }
  free(stack);
  free(kids);
  *n_out = m;
  return out;
}

static double diff_value(double l, double r) {
  double d = l - r;
  return isnan(d) ? l : d;
}

int vw_diff(vw_tree *L, vw_tree *R, const int *cols, int n_cols) {
  uint32_t *match = match_nodes(L, R);
  uint32_t *rm = malloc((L->n ? L->n : 1) * sizeof *rm);
  for (uint32_t i = 0; i < L->n; i++)
    rm[i] = VW_NONE;
  for (uint32_t r = 0; r < R->n; r++)
    if (match[r] != VW_NONE)
      rm[match[r]] = r;
  uint32_t n;
  pair *order = union_order(L, R, match, rm, &n);
  int *rcol = calloc((size_t)L->n_cols + 1, sizeof *rcol);
  for (int c = 0; c < L->n_cols; c++)
    rcol[c] = -1;
  for (int k = 0; k < n_cols; k++)
    rcol[cols[k]] = vw_col_find(R, L->cols[cols[k]].name);
  vw_node *nodes = calloc(n ? n : 1, sizeof *nodes);
  uint32_t *newid_l = malloc((L->n ? L->n : 1) * sizeof *newid_l);
  uint32_t *newid_r = malloc((R->n ? R->n : 1) * sizeof *newid_r);
  for (uint32_t i = 0; i < n; i++) {
    pair u = order[i];
    vw_node v = u.l != VW_NONE ? L->nodes[u.l] : R->nodes[u.r];
    uint32_t par = v.parent;
    v.parent = par == VW_NONE ? VW_NONE
                              : (u.l != VW_NONE ? newid_l[par] : newid_r[par]);
    v.depth = v.parent == VW_NONE ? 0 : nodes[v.parent].depth + 1;
    v.missing = u.l == VW_NONE ? 2 : (u.r == VW_NONE ? 1 : 0);
    if (u.l == VW_NONE)
      v.src = VW_NONE;
    if (u.l != VW_NONE)
      newid_l[u.l] = i;
    if (u.r != VW_NONE)
      newid_r[u.r] = i;
    nodes[i] = v;
  }
  for (int c = 0; c < L->n_cols; c++) {
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (uint32_t i = 0; i < n; i++) {
      pair u = order[i];
      double lv = u.l != VW_NONE ? L->cols[c].v[u.l] : NAN;
      v[i] = lv;
      if (u.l != VW_NONE && u.r != VW_NONE && rcol[c] >= 0)
        v[i] = diff_value(lv, R->cols[rcol[c]].v[u.r]);
    }
    free(L->cols[c].v);
    L->cols[c].v = v;
    L->cols[c].inc_of = -1;
  }
  free(L->nodes);
  L->nodes = nodes;
  L->n = n;
  L->diff = 1;
  vw_tree_link(L);
  vw_tree_sort(L);
  free(match), free(rm), free(order), free(rcol), free(newid_l), free(newid_r);
  return 0;
}
