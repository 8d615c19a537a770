/* io/hatchet_tree.c -- selects what a session's Hatchet profile holds: the
 * nodes it touched plus their ancestors, children in byte order of their
 * names (Proton 3.6's order), kernel metrics before flexible ones, and the
 * zeros Proton writes on ROOT for inclusive metrics (CP_HATCHET_ROOT_*).
 *
 * Invariant: the data lock is held from open to close, so the metrics read
 * by a writer are one consistent snapshot. Not a hot path (finalize).
 * Called by io/hatchet_write.c and io/hatchet_msgpack.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/grow.h"
#include "core/strtab.h"
#include "core/kfacts.h"
#include "io/hatchet_tree.h"

static int kept(const cp_hatchet_tree *t, const cp_node *n) {
  return n->id < t->n_ids && t->keep[n->id];
}

/* Adds the written names of m's inclusive (not "(exc)") flexible metrics to
 * t->root_zero, which grows by doubling from *cap. Errors: ENOMEM. */
static int collect_inclusive(cp_hatchet_tree *t, const cp_node_metrics *m,
                             size_t *cap) {
  for (size_t i = 0; i < m->n_flex; i++) {
    /* vectors: Proton 3.6, whose ROOT zeros these are, had none */
    if (m->flex[i].rule == CP_METRIC_EXC ||
        cp_value_is_vector(m->flex[i].value.kind))
      continue;
    void *p;
    if (t->n_root_zero == *cap) {
      if (cp_grow(t->root_zero, cap, t->n_root_zero + 1, sizeof *t->root_zero,
                  16, &p))
        return cp_error_set(CPROTON_ENOMEM, "out of memory writing a profile");
      t->root_zero = p;
    }
    t->root_zero[t->n_root_zero++] = m->flex[i].out_name;
  }
  return CPROTON_OK;
}

static int by_id(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static int root_has(const cp_node_metrics *root, uint32_t out_name) {
  for (size_t i = 0; root && i < root->n_flex; i++)
    if (root->flex[i].out_name == out_name)
      return 1;
  return 0;
}

/* Sorts t->root_zero, drops repeats and the names ROOT holds itself. */
static void settle_root_zero(cp_hatchet_tree *t) {
  if (!t->n_root_zero)
    return; /* root_zero is NULL: qsort must not see it */
  const cp_node_metrics *root = cp_data_metrics(t->d, cp_cct_root());
  qsort(t->root_zero, t->n_root_zero, sizeof *t->root_zero, by_id);
  size_t k = 0;
  for (size_t i = 0; i < t->n_root_zero; i++) {
    uint32_t id = t->root_zero[i];
    if ((k == 0 || t->root_zero[k - 1] != id) && !root_has(root, id))
      t->root_zero[k++] = id;
  }
  t->n_root_zero = k;
}

/* Marks touched nodes and their ancestors; notes whether any node had
 * kernel metrics and, with CP_HATCHET_ROOT_FLEX, the inclusive names. */
static int mark(cp_hatchet_tree *t, unsigned root) {
  size_t cap = 0;
  int rc = CPROTON_OK;
  t->keep[0] = 1;
  for (uint32_t id = 1; id < t->n_ids && !rc; id++) {
    cp_node *n = cp_cct_node(id);
    if (!n || !cp_data_touched(t->d, n))
      continue;
    const cp_node_metrics *m = cp_data_metrics(t->d, n);
    t->any_kernel |= m && m->has_kernel;
    if (m && (root & CP_HATCHET_ROOT_FLEX))
      rc = collect_inclusive(t, m, &cap);
    for (; n && !t->keep[n->id]; n = n->parent)
      t->keep[n->id] = 1;
  }
  if (!(root & CP_HATCHET_ROOT_KERNEL))
    t->any_kernel = 0;
  settle_root_zero(t);
  return rc;
}

int cp_hatchet_tree_open(cp_hatchet_tree *t, cp_data *d, unsigned root) {
  *t = (cp_hatchet_tree){.d = d, .n_ids = cp_cct_count()};
  t->keep = calloc(t->n_ids ? t->n_ids : 1, 1);
  if (!t->keep)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a profile");
  cp_data_lock(d);
  int rc = mark(t, root);
  if (rc)
    cp_hatchet_tree_close(t);
  return rc;
}

void cp_hatchet_tree_close(cp_hatchet_tree *t) {
  cp_data_unlock(t->d);
  free(t->keep);
  free(t->root_zero);
  t->keep = NULL;
  t->root_zero = NULL;
}

static int by_name_node(const void *a, const void *b) {
  return strcmp(cp_strtab_str((*(cp_node *const *)a)->name),
                cp_strtab_str((*(cp_node *const *)b)->name));
}

long cp_hatchet_tree_children(const cp_hatchet_tree *t, const cp_node *n,
                              cp_node ***kids_out) {
  size_t count = 0;
  *kids_out = NULL;
  for (cp_node *c = atomic_load(&n->first_child); c; c = c->next_sibling)
    count += kept(t, c);
  if (!count)
    return 0;
  cp_node **kids = malloc(count * sizeof *kids);
  if (!kids) {
    cp_error_set(CPROTON_ENOMEM, "out of memory writing a profile");
    return -1;
  }
  size_t k = 0;
  for (cp_node *c = atomic_load(&n->first_child); c && k < count;
       c = c->next_sibling)
    if (kept(t, c))
      kids[k++] = c;
  qsort(kids, k, sizeof *kids, by_name_node);
  *kids_out = kids;
  return (long)k;
}

int cp_hatchet_tree_informative(const cp_hatchet_tree *t, const cp_node *n) {
  const cp_node_metrics *m = cp_data_metrics(t->d, n);
  if (m && (m->has_kernel || m->n_flex))
    return 1;
  for (cp_node *c = atomic_load(&n->first_child); c; c = c->next_sibling)
    if (kept(t, c))
      return 1;
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const cp_hatchet_entry *)a)->name,
                ((const cp_hatchet_entry *)b)->name);
}

static cp_hatchet_entry int_entry(const char *name, int64_t v) {
  return (cp_hatchet_entry){.name = name, .value = {CP_VALUE_INT, {.i = v}}};
}

static cp_hatchet_entry str_entry(const char *name, const char *str) {
  return (cp_hatchet_entry){.name = name, .is_str = 1, .str = str};
}

/* Appends `e` to out[0..*k), except that a user metric named like a kernel
 * metric (allowed under Proton 3.9, core/compat.h) takes that kernel
 * entry's place, as Proton 3.9 writes its flexible metrics over the kernel
 * ones: one key per name, the user's value. */
static void put(cp_hatchet_entry *out, size_t *k, size_t n_fixed,
                cp_hatchet_entry e) {
  for (size_t i = 0; i < n_fixed; i++)
    if (strcmp(out[i].name, e.name) == 0) {
      out[i] = e;
      return;
    }
  out[(*k)++] = e;
}

/* The kernel's compile and launch facts (core/kfacts.h), written once per
 * kernel frame whatever the number of launches: the table keeps one value
 * per kernel name. A flexible metric of the same name wins. */
static size_t add_facts(const cp_node *n, cp_hatchet_entry *out, size_t k,
                        size_t n_fixed) {
  cp_kfact f[CP_KFACTS_MAX];
  size_t nf = cp_kfacts_get(cp_strtab_str(n->name), f);
  for (size_t i = 0; i < nf; i++) {
    int dup = 0;
    for (size_t j = n_fixed; j < k; j++)
      dup |= !strcmp(out[j].name, f[i].name);
    if (!dup)
      out[k++] = f[i].str ? str_entry(f[i].name, f[i].str)
                          : int_entry(f[i].name, f[i].value);
  }
  return k;
}

size_t cp_hatchet_tree_capacity(const cp_hatchet_tree *t, const cp_node *n) {
  const cp_node_metrics *m = cp_data_metrics(t->d, n);
  return CP_HATCHET_FIXED_ENTRIES + CP_KFACTS_MAX + (m ? m->n_flex : 0) +
         (n->id == 0 ? t->n_root_zero : 0);
}

size_t cp_hatchet_tree_metrics(const cp_hatchet_tree *t, const cp_node *n,
                               cp_hatchet_entry *out, char *id_buf,
                               size_t *n_fixed_out) {
  const cp_node_metrics *m = cp_data_metrics(t->d, n);
  size_t k = 0;
  if (m && m->has_kernel) {
    snprintf(id_buf, 16, "%u", m->device_id);
    out[k++] = int_entry("time (ns)", (int64_t)m->time_ns);
    out[k++] = int_entry("count", (int64_t)m->count);
    out[k++] = str_entry("device_id", id_buf);
    out[k++] = str_entry("device_type",
                         m->device_type == CP_DEVICE_HIP ? "HIP" : "CUDA");
  } else if (n->id == 0 && t->any_kernel) {
    out[k++] = int_entry("time (ns)", 0);
    out[k++] = int_entry("count", 0);
  }
  *n_fixed_out = k;
  for (size_t i = 0; m && i < m->n_flex; i++) {
    const cp_flex_metric *f = &m->flex[i];
    put(out, &k, *n_fixed_out,
        f->value.kind == CP_VALUE_STRING
            ? str_entry(cp_strtab_str(f->out_name), cp_strtab_str(f->value.u.s))
            : (cp_hatchet_entry){.name = cp_strtab_str(f->out_name),
                                 .value = f->value});
  }
  for (size_t i = 0; n->id == 0 && i < t->n_root_zero; i++)
    put(out, &k, *n_fixed_out, int_entry(cp_strtab_str(t->root_zero[i]), 0));
  if (m && m->has_kernel && n->id != 0) /* per-kernel facts (docs/advisor.md) */
    k = add_facts(n, out, k, *n_fixed_out);
  qsort(out + *n_fixed_out, k - *n_fixed_out, sizeof *out, by_name);
  return k;
}
