/* io/hatchet_write.c -- renders the calling-context tree seen by one
 * session as Hatchet literal JSON: [{frame, metrics, children}, devices].
 *
 * Invariant: a node is written iff the session touched it or one of its
 * descendants; children and metric keys in byte order of their names, as
 * in Proton's files. Not a hot path (finalize). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cct.h"
#include "core/compat.h"
#include "core/device.h"
#include "core/error.h"
#include "core/strtab.h"
#include "io/hatchet_tree.h"
#include "io/hatchet_write.h"

typedef struct writer {
  cp_sink *s;
  cp_hatchet_tree t;
  int proton39;    /* Proton 3.9's content (core/compat.h): cp_hatchet_write */
  uint64_t ran[2]; /* CUDA, HIP: a bit per device id < 64 kernels ran on */
} writer;

/* Spaces per level. Proton indents by 4; in a deep calling-context tree
 * that is most of the file (82% of a python-context profile, 65% of a
 * shadow one), so cproton indents by 1: the same JSON, one key per line,
 * about half the bytes. */
#define CP_HATCHET_INDENT 1

static void indent(cp_sink *s, int level) {
  static const char spaces[] = "                                ";
  cp_sink_write(s, "\n", 1);
  for (int n = level * CP_HATCHET_INDENT; n > 0; n -= 32)
    cp_sink_write(s, spaces, n < 32 ? (size_t)n : 32);
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const cp_hatchet_entry *)a)->name,
                ((const cp_hatchet_entry *)b)->name);
}

/* A vector metric as Proton 3.9 writes it: one element per line, "[]"
 * when empty; `level` is the metric's own. */
static void write_vector(cp_sink *s, const cp_value *v, int level) {
  cp_sink_puts(s, v->u.v.n ? "[" : "[]");
  for (uint32_t k = 0; k < v->u.v.n; k++) {
    indent(s, level + 1);
    if (v->kind == CP_VALUE_INT_VEC)
      cp_sink_printf(s, "%lld", (long long)v->u.v.p.i[k]);
    else
      cp_sink_json_double(s, v->u.v.p.d[k]);
    if (k + 1 < v->u.v.n)
      cp_sink_puts(s, ",");
  }
  if (v->u.v.n) {
    indent(s, level);
    cp_sink_puts(s, "]");
  }
}

static void write_metrics(writer *w, const cp_node *n, int level) {
  size_t cap = cp_hatchet_tree_capacity(&w->t, n), n_fixed;
  cp_hatchet_entry stack_entries[16];
  cp_hatchet_entry *es = cap <= 16 ? stack_entries : malloc(cap * sizeof *es);
  char id_buf[16];
  size_t count =
      es ? cp_hatchet_tree_metrics(&w->t, n, es, id_buf, &n_fixed) : 0;
  qsort(es, count, sizeof *es, by_name); /* JSON: every key in byte order */
  cp_sink_puts(w->s, count ? "{" : "{}");
  for (size_t i = 0; i < count; i++) {
    indent(w->s, level + 1);
    cp_sink_json_string(w->s, es[i].name);
    cp_sink_puts(w->s, ": ");
    if (es[i].is_str)
      cp_sink_json_string(w->s, es[i].str);
    else if (cp_value_is_vector(es[i].value.kind))
      write_vector(w->s, &es[i].value, level + 1);
    else if (es[i].value.kind == CP_VALUE_INT)
      cp_sink_printf(w->s, "%lld", (long long)es[i].value.u.i);
    else
      cp_sink_json_double(w->s, es[i].value.u.d);
    if (i + 1 < count)
      cp_sink_puts(w->s, ",");
  }
  if (count) {
    indent(w->s, level);
    cp_sink_puts(w->s, "}");
  }
  if (es != stack_entries)
    free(es);
}

static int write_node(writer *w, const cp_node *n, int level);

static int write_children(writer *w, const cp_node *n, int level) {
  cp_node **kids;
  long k = cp_hatchet_tree_children(&w->t, n, &kids);
  if (k < 0)
    return CPROTON_ENOMEM;
  if (k == 0) {
    cp_sink_puts(w->s, "[]");
    return CPROTON_OK;
  }
  cp_sink_puts(w->s, "[");
  int rc = CPROTON_OK;
  for (long i = 0; i < k && rc == CPROTON_OK; i++) {
    indent(w->s, level + 1);
    rc = write_node(w, kids[i], level + 1);
    if (i + 1 < k)
      cp_sink_puts(w->s, ",");
  }
  indent(w->s, level);
  cp_sink_puts(w->s, "]");
  free(kids);
  return rc;
}

static int write_node(writer *w, const cp_node *n, int level) {
  const cp_node_metrics *m = cp_data_metrics(w->t.d, n);
  if (m && m->has_kernel && m->device_id < 64)
    w->ran[m->device_type == CP_DEVICE_HIP] |= 1ull << m->device_id;
  cp_sink_puts(w->s, "{");
  indent(w->s, level + 1);
  cp_sink_puts(w->s, "\"children\": ");
  int rc = write_children(w, n, level + 1);
  cp_sink_puts(w->s, ",");
  indent(w->s, level + 1);
  cp_sink_puts(w->s, "\"frame\": {");
  indent(w->s, level + 2);
  cp_sink_puts(w->s, "\"name\": ");
  cp_sink_json_string(w->s, n->id == 0 ? "ROOT" : cp_strtab_str(n->name));
  cp_sink_puts(w->s, ",");
  indent(w->s, level + 2);
  cp_sink_puts(w->s, "\"type\": \"function\"");
  indent(w->s, level + 1);
  cp_sink_puts(w->s, "},");
  indent(w->s, level + 1);
  cp_sink_puts(w->s, "\"metrics\": ");
  write_metrics(w, n, level + 1);
  indent(w->s, level);
  cp_sink_puts(w->s, "}");
  return rc;
}

/* Every device seen, or under Proton 3.9 those kernels of the tree ran on. */
static void write_devices(cp_sink *s, const writer *w) {
  cp_device_info all[CP_MAX_DEVICES], devs[CP_MAX_DEVICES];
  int n_all = cp_device_list(all, CP_MAX_DEVICES), n = 0;
  for (int i = 0; i < n_all; i++) {
    uint64_t ran = w->ran[all[i].type == CP_DEVICE_HIP];
    if (!w->proton39 || (all[i].id < 64 && (ran >> all[i].id & 1)))
      devs[n++] = all[i];
  }
  cp_sink_puts(s, n ? "{" : "{}");
  for (int i = 0; i < n; i++) {
    int first_of_type = i == 0 || devs[i - 1].type != devs[i].type;
    int last_of_type = i + 1 == n || devs[i + 1].type != devs[i].type;
    if (first_of_type) {
      indent(s, 2);
      cp_sink_puts(s, devs[i].type == CP_DEVICE_HIP ? "\"HIP\": {" : "\"CUDA\": {");
    }
    indent(s, 3);
    cp_sink_printf(s, "\"%u\": {", devs[i].id);
    indent(s, 4);
    cp_sink_puts(s, "\"arch\": ");
    cp_sink_json_string(s, devs[i].arch);
    cp_sink_puts(s, ",");
    indent(s, 4);
    cp_sink_printf(s, "\"bus_width\": %u,", devs[i].bus_width);
    indent(s, 4);
    cp_sink_printf(s, "\"clock_rate\": %llu,",
                   (unsigned long long)devs[i].clock_rate);
    indent(s, 4);
    cp_sink_printf(s, "\"memory_clock_rate\": %llu,",
                   (unsigned long long)devs[i].memory_clock_rate);
    indent(s, 4);
    cp_sink_printf(s, "\"num_sms\": %u", devs[i].num_sms);
    indent(s, 3);
    cp_sink_puts(s, i + 1 < n && !last_of_type ? "}," : "}");
    if (last_of_type) {
      indent(s, 2);
      cp_sink_puts(s, i + 1 < n ? "}," : "}");
    }
  }
  if (n) {
    indent(s, 1);
    cp_sink_puts(s, "}");
  }
}

int cp_hatchet_write(cp_sink *s, cp_data *d, int kernel_root) {
  /* Proton 3.6's ROOT: a 0 for every inclusive metric of the tree, and every
   * device seen; Proton 3.9's: zeros for the kernel metrics only, and the
   * devices its kernels ran on (core/compat.h) */
  writer w = {.s = s, .proton39 = cp_compat_is_39()};
  unsigned root = (w.proton39 ? 0 : CP_HATCHET_ROOT_FLEX) |
                  (kernel_root ? CP_HATCHET_ROOT_KERNEL : 0);
  int rc = cp_hatchet_tree_open(&w.t, d, root);
  if (rc)
    return rc;
  cp_sink_puts(s, "[");
  indent(s, 1);
  rc = write_node(&w, cp_cct_root(), 1);
  cp_sink_puts(s, ",");
  indent(s, 1);
  write_devices(s, &w);
  cp_sink_puts(s, "\n]\n");
  cp_hatchet_tree_close(&w.t);
  return rc;
}
