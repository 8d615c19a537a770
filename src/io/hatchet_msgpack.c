/* io/hatchet_msgpack.c -- renders a session's tree as Hatchet MessagePack,
 * byte for byte the encoding Proton 3.9's writer uses:
 *
 *   array(2)
 *   ├─ node   map(3) "frame"    map(2) "name": str, "type": "function"
 *   │                "metrics"  map(k) kernel metrics first:
 *   │                           "time (ns)": uint, "count": uint,
 *   │                           "device_id": str, "device_type": str,
 *   │                           then user metrics in byte order of names
 *   │                           (int, float 64, or str)
 *   │                "children" array(n) of node
 *   └─ devices map  type ("CUDA") -> map  index ("0") -> map(5)
 *                   "clock_rate", "memory_clock_rate", "bus_width": uint,
 *                   "arch": str, "num_sms": uint
 *
 * Keys in that order (Proton's); scalars in their shortest encoding
 * (io/msgpack.h). As in Proton 3.9, a leaf without metrics is left out,
 * ROOT carries zeroed "time (ns)" and "count" only when some node has
 * kernel metrics, and the device map lists only the devices those kernels
 * ran on (our JSON writes every touched node and every device seen).
 * Children come in byte order of their names, as in our Hatchet JSON
 * (Proton 3.9 writes first-seen order; readers do not depend on it).
 * Non-finite doubles are written as nil, as the JSON writer writes null.
 * Invariant: the values of io/hatchet_write.c (both come
 * from io/hatchet_tree.c). Not a hot path (finalize, data queries). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/device.h"
#include "core/error.h"
#include "core/strtab.h"
#include "io/hatchet_msgpack.h"
#include "io/hatchet_tree.h"
#include "io/msgpack.h"

static void put_double(cp_sink *s, double d) {
  static const uint8_t nil = 0xc0;
  if (isfinite(d))
    cp_msgpack_double(s, d);
  else
    cp_sink_write(s, &nil, 1);
}

static void put_value(cp_sink *s, const cp_hatchet_entry *e) {
  const cp_value *v = &e->value;
  if (e->is_str) {
    cp_msgpack_cstr(s, e->str);
  } else if (cp_value_is_vector(v->kind)) { /* Proton 3.9: an array */
    cp_msgpack_array(s, v->u.v.n);
    for (uint32_t k = 0; k < v->u.v.n; k++)
      if (v->kind == CP_VALUE_INT_VEC)
        cp_msgpack_int(s, v->u.v.p.i[k]);
      else
        put_double(s, v->u.v.p.d[k]);
  } else if (v->kind == CP_VALUE_INT) {
    cp_msgpack_int(s, v->u.i);
  } else {
    put_double(s, v->u.d);
  }
}

/* Devices that kernels of the tree ran on, by type. */
typedef struct seen_devices {
  uint64_t mask[2]; /* CUDA, HIP: bit per device id < 64 */
} seen_devices;

static void see_device(seen_devices *seen, const cp_data *d,
                       const cp_node *n) {
  const cp_node_metrics *m = cp_data_metrics(d, n);
  if (m && m->has_kernel && m->device_id < 64)
    seen->mask[m->device_type == CP_DEVICE_HIP] |= 1ull << m->device_id;
}

static int put_metrics(cp_sink *s, const cp_hatchet_tree *t,
                       const cp_node *n) {
  size_t cap = cp_hatchet_tree_capacity(t, n), n_fixed;
  cp_hatchet_entry stack_entries[16];
  cp_hatchet_entry *es = cap <= 16 ? stack_entries : malloc(cap * sizeof *es);
  if (!es)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a profile");
  char id_buf[16];
  size_t k = cp_hatchet_tree_metrics(t, n, es, id_buf, &n_fixed);
  cp_msgpack_map(s, (uint32_t)k);
  for (size_t i = 0; i < k; i++) {
    cp_msgpack_cstr(s, es[i].name);
    put_value(s, &es[i]);
  }
  if (es != stack_entries)
    free(es);
  return CPROTON_OK;
}

static int put_node(cp_sink *s, const cp_hatchet_tree *t, const cp_node *n,
                    seen_devices *seen) {
  see_device(seen, t->d, n);
  cp_msgpack_map(s, 3);
  cp_msgpack_cstr(s, "frame");
  cp_msgpack_map(s, 2);
  cp_msgpack_cstr(s, "name");
  cp_msgpack_cstr(s, n->id == 0 ? "ROOT" : cp_strtab_str(n->name));
  cp_msgpack_cstr(s, "type");
  cp_msgpack_cstr(s, "function");
  cp_msgpack_cstr(s, "metrics");
  int rc = put_metrics(s, t, n);
  cp_node **kids = NULL;
  long k = rc ? 0 : cp_hatchet_tree_children(t, n, &kids), w = 0;
  if (k < 0)
    return CPROTON_ENOMEM;
  for (long i = 0; i < k; i++) /* Proton 3.9 drops empty leaves */
    if (cp_hatchet_tree_informative(t, kids[i]))
      kids[w++] = kids[i];
  k = w;
  cp_msgpack_cstr(s, "children");
  cp_msgpack_array(s, (uint32_t)k);
  for (long i = 0; i < k && !rc; i++)
    rc = put_node(s, t, kids[i], seen);
  free(kids);
  return rc;
}

static void put_device(cp_sink *s, const cp_device_info *d) {
  cp_msgpack_map(s, 5);
  cp_msgpack_cstr(s, "clock_rate");
  cp_msgpack_uint(s, d->clock_rate);
  cp_msgpack_cstr(s, "memory_clock_rate");
  cp_msgpack_uint(s, d->memory_clock_rate);
  cp_msgpack_cstr(s, "bus_width");
  cp_msgpack_uint(s, d->bus_width);
  cp_msgpack_cstr(s, "arch");
  cp_msgpack_cstr(s, d->arch);
  cp_msgpack_cstr(s, "num_sms");
  cp_msgpack_uint(s, d->num_sms);
}

static int was_seen(const seen_devices *seen, const cp_device_info *d) {
  return d->id < 64 &&
         (seen->mask[d->type == CP_DEVICE_HIP] >> d->id & 1);
}

/* The devices kernels ran on, grouped by type (cp_device_list returns them
 * sorted by type, then id). */
static void put_devices(cp_sink *s, const seen_devices *seen) {
  cp_device_info all[CP_MAX_DEVICES], devs[CP_MAX_DEVICES];
  int n_all = cp_device_list(all, CP_MAX_DEVICES), n = 0;
  for (int i = 0; i < n_all; i++)
    if (was_seen(seen, &all[i]))
      devs[n++] = all[i];
  uint32_t types = 0;
  for (int i = 0; i < n; i++) {
    CP_ASSERT(i == 0 || devs[i - 1].type <= devs[i].type); /* grouped below */
    types += i == 0 || devs[i - 1].type != devs[i].type;
  }
  cp_msgpack_map(s, types);
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && devs[j].type == devs[i].type)
      j++;
    cp_msgpack_cstr(s, devs[i].type == CP_DEVICE_HIP ? "HIP" : "CUDA");
    cp_msgpack_map(s, (uint32_t)(j - i));
    for (; i < j; i++) {
      char id[16];
      snprintf(id, sizeof id, "%u", devs[i].id);
      cp_msgpack_cstr(s, id);
      put_device(s, &devs[i]);
    }
  }
}

int cp_hatchet_msgpack_write(cp_sink *s, cp_data *d, int kernel_root) {
  (void)kernel_root; /* Proton 3.9: root zeros whenever kernels exist */
  cp_hatchet_tree t;
  seen_devices seen = {{0, 0}};
  int rc = cp_hatchet_tree_open(&t, d, CP_HATCHET_ROOT_KERNEL);
  if (rc)
    return rc;
  cp_msgpack_array(s, 2);
  rc = put_node(s, &t, cp_cct_root(), &seen);
  put_devices(s, &seen);
  cp_hatchet_tree_close(&t);
  return rc;
}
