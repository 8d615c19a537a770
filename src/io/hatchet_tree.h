/* io/hatchet_tree.h -- what a Hatchet profile of one session holds, shared
 * by the JSON and the MessagePack writers (cp_hatchet_tree_*): which
 * context nodes are written, in which order, with which metric entries. */
#ifndef CP_IO_HATCHET_TREE_H
#define CP_IO_HATCHET_TREE_H

#include <stddef.h>

#include "core/cct.h"
#include "core/data.h"

typedef struct cp_hatchet_tree {
  cp_data *d;
  unsigned char *keep; /* by node id: written or not */
  uint32_t n_ids;      /* nodes created later are not written */
  int any_kernel;      /* ROOT carries zeroed kernel metrics */
  uint32_t *root_zero; /* written names (strtab ids) ROOT gets a 0 for */
  size_t n_root_zero;
} cp_hatchet_tree;

/* What cp_hatchet_tree_open zeroes on ROOT ("hints" for inclusive metrics;
 * Proton 3.6 writes them so that Hatchet sees every inclusive column at the
 * top of the tree). */
enum {
  /* "time (ns)" and "count" when some node has kernel metrics (Proton 3.6
   * and 3.9, every backend that times kernels) */
  CP_HATCHET_ROOT_KERNEL = 1,
  /* every flexible metric that is not "(exc)" (properties included), seen
   * on any written node, kernels or not (Proton 3.6's JSON; 3.9 dropped it) */
  CP_HATCHET_ROOT_FLEX = 2
};

/* One metric of a node: "name": value. */
typedef struct cp_hatchet_entry {
  const char *name;
  cp_value value;
  int is_str;
  const char *str;
} cp_hatchet_entry;

/* Metric entries a node can have beyond its flexible metrics. */
#define CP_HATCHET_FIXED_ENTRIES 4

/* Marks the nodes `d` touched and their ancestors, and locks `d` until
 * cp_hatchet_tree_close. `root` (CP_HATCHET_ROOT_* bits) says which zeroed
 * metrics ROOT gets; a metric ROOT holds itself (C API only: Proton's ROOT
 * never has one) keeps its value. Errors: ENOMEM. */
int cp_hatchet_tree_open(cp_hatchet_tree *t, cp_data *d, unsigned root);

/* Unlocks and frees. */
void cp_hatchet_tree_close(cp_hatchet_tree *t);

/* The written children of `n`, in byte order of their names, as a
 * malloc'ed array in *kids_out (NULL when there are none). Returns the
 * count, or -1 with ENOMEM. */
long cp_hatchet_tree_children(const cp_hatchet_tree *t, const cp_node *n,
                              cp_node ***kids_out);

/* Whether `n` has metrics or written children: Proton 3.9 leaves out a
 * leaf with neither ("it adds no Hatchet information"). */
int cp_hatchet_tree_informative(const cp_hatchet_tree *t, const cp_node *n);

/* Fills `out` (room for CP_HATCHET_FIXED_ENTRIES + the node's flexible
 * metrics, see cp_hatchet_tree_capacity) with the node's entries: kernel
 * metrics first ("time (ns)", "count", "device_id", "device_type"), then
 * the flexible ones in byte order of their names. `id_buf` (16 bytes) holds
 * the device id string. Returns the count; *n_fixed_out gets how many lead
 * entries are kernel metrics. */
size_t cp_hatchet_tree_metrics(const cp_hatchet_tree *t, const cp_node *n,
                               cp_hatchet_entry *out, char *id_buf,
                               size_t *n_fixed_out);

/* Room cp_hatchet_tree_metrics needs for `n`. */
size_t cp_hatchet_tree_capacity(const cp_hatchet_tree *t, const cp_node *n);

#endif
