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
#include "core/device.h"
#include "core/error.h"
#include "core/strtab.h"
#include "io/hatchet_write.h"

typedef struct writer {
  cp_sink *s;
  cp_data *d;
  unsigned char *keep; /* by node id: written or not */
  uint32_t n_ids;      /* nodes created later are not written */
  int any_kernel;
} writer;

static int kept(const writer *w, const cp_node *n) {
  return n->id < w->n_ids && w->keep[n->id];
}

static void indent(cp_sink *s, int level) {
  static const char spaces[] = "                                ";
  cp_sink_write(s, "\n", 1);
  for (int n = level * 4; n > 0; n -= 32)
    cp_sink_write(s, spaces, n < 32 ? (size_t)n : 32);
}

/* One metric entry as "name": value, in a sortable form. */
typedef struct entry {
  const char *name;
  cp_value value;
  int is_str;
  const char *str;
} entry;

static int by_name(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static entry int_entry(const char *name, int64_t v) {
  return (entry){.name = name, .value = {CP_VALUE_INT, {.i = v}}};
}

static entry str_entry(const char *name, const char *str) {
  return (entry){.name = name, .is_str = 1, .str = str};
}

static size_t collect(const cp_node_metrics *m, int is_root, int any_kernel,
                      entry *out, char *id_buf) {
  size_t n = 0;
  if (m && m->has_kernel) {
    snprintf(id_buf, 16, "%u", m->device_id);
    out[n++] = int_entry("count", (int64_t)m->count);
    out[n++] = str_entry("device_id", id_buf);
    out[n++] = str_entry("device_type",
                         m->device_type == CP_DEVICE_HIP ? "HIP" : "CUDA");
    out[n++] = int_entry("time (ns)", (int64_t)m->time_ns);
  } else if (is_root && any_kernel) {
    out[n++] = int_entry("count", 0);
    out[n++] = int_entry("time (ns)", 0);
  }
  for (size_t i = 0; m && i < m->n_flex; i++) {
    const cp_flex_metric *f = &m->flex[i];
    out[n++] = f->value.kind == CP_VALUE_STRING
                   ? str_entry(cp_strtab_str(f->out_name),
                               cp_strtab_str(f->value.u.s))
                   : (entry){.name = cp_strtab_str(f->out_name),
                             .value = f->value};
  }
  return n;
}

static void write_metrics(writer *w, const cp_node *n, int level) {
  const cp_node_metrics *m = cp_data_metrics(w->d, n);
  size_t cap = 6 + (m ? m->n_flex : 0);
  entry stack_entries[16];
  entry *es = cap <= 16 ? stack_entries : malloc(cap * sizeof *es);
  char id_buf[16];
  size_t count = es ? collect(m, n->id == 0, w->any_kernel, es, id_buf) : 0;
  qsort(es, count, sizeof *es, by_name);
  cp_sink_puts(w->s, count ? "{" : "{}");
  for (size_t i = 0; i < count; i++) {
    indent(w->s, level + 1);
    cp_sink_json_string(w->s, es[i].name);
    cp_sink_puts(w->s, ": ");
    if (es[i].is_str)
      cp_sink_json_string(w->s, es[i].str);
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

/* Children in name order, as Proton writes them (byte order). */
static int by_name_node(const void *a, const void *b) {
  return strcmp(cp_strtab_str((*(cp_node *const *)a)->name),
                cp_strtab_str((*(cp_node *const *)b)->name));
}

static int write_node(writer *w, const cp_node *n, int level);

static int write_children(writer *w, const cp_node *n, int level) {
  size_t count = 0;
  for (cp_node *c = atomic_load(&n->first_child); c; c = c->next_sibling)
    count += kept(w, c);
  if (!count) {
    cp_sink_puts(w->s, "[]");
    return CPROTON_OK;
  }
  cp_node **kids = malloc(count * sizeof *kids);
  if (!kids)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a profile");
  size_t k = 0;
  for (cp_node *c = atomic_load(&n->first_child); c && k < count;
       c = c->next_sibling)
    if (kept(w, c))
      kids[k++] = c;
  qsort(kids, k, sizeof *kids, by_name_node);
  cp_sink_puts(w->s, "[");
  int rc = CPROTON_OK;
  for (size_t i = 0; i < k && rc == CPROTON_OK; i++) {
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

static void write_devices(cp_sink *s) {
  cp_device_info devs[CP_MAX_DEVICES];
  int n = cp_device_list(devs, CP_MAX_DEVICES);
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

/* Marks touched nodes and their ancestors; returns whether any node had
 * kernel metrics. */
static int mark(writer *w, uint32_t n_ids) {
  int any_kernel = 0;
  w->keep[0] = 1;
  for (uint32_t id = 1; id < n_ids; id++) {
    cp_node *n = cp_cct_node(id);
    if (!n || !cp_data_touched(w->d, n))
      continue;
    const cp_node_metrics *m = cp_data_metrics(w->d, n);
    any_kernel |= m && m->has_kernel;
    for (; n && !w->keep[n->id]; n = n->parent)
      w->keep[n->id] = 1;
  }
  return any_kernel;
}

int cp_hatchet_write(cp_sink *s, cp_data *d, int kernel_root) {
  uint32_t n_ids = cp_cct_count();
  writer w = {.s = s, .d = d, .keep = calloc(n_ids, 1), .n_ids = n_ids};
  if (!w.keep)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a profile");
  cp_data_lock(d);
  w.any_kernel = mark(&w, n_ids) && kernel_root;
  cp_sink_puts(s, "[");
  indent(s, 1);
  int rc = write_node(&w, cp_cct_root(), 1);
  cp_sink_puts(s, ",");
  indent(s, 1);
  write_devices(s);
  cp_sink_puts(s, "\n]\n");
  cp_data_unlock(d);
  free(w.keep);
  return rc;
}
