/* core/tmetric.h -- the tensor-metric slot table (cp_tmetric_*): where a
 * metric value recorded on the GPU, without a host sync, is folded when the
 * host drains the device buffer. A slot is {context node per kind, metric
 * name, value kind}; the device buffer's records name a slot, never a node,
 * so a record replayed by a CUDA graph long after its capture still finds
 * its node: when the last finalize frees the context tree (core/session.c,
 * compaction), the slots' paths are saved and re-created in the new tree
 * (cp_tmetric_save_paths / cp_tmetric_restore_paths). See
 * docs/tensor-metrics.md and docs/guarantees.md ("Memory of names"). */
#ifndef CP_CORE_TMETRIC_H
#define CP_CORE_TMETRIC_H

#include <stddef.h>
#include <stdint.h>

#include "core/cct.h"
#include "core/context.h"
#include "core/metric.h"

/* Slots are never freed (a captured graph may replay its records at any
 * time, in any later session); equal slots are shared, so the table holds one slot per distinct
 * (node, name, kind), not one per record. */
#define CP_TMETRIC_MAX_SLOTS 65536u

typedef struct cp_tmetric_slot {
  const cp_node *node[CP_CONTEXT_KINDS]; /* NULL: kind not resolved */
  uint32_t name;                         /* strtab id */
  cp_value_kind kind; /* int, double, or their vector kinds */
  uint32_t n;         /* values per record: 1, or the vector's length */
  uint8_t captured;   /* given during a CUDA graph capture while cproton
                         follows Proton 3.9: each replay's record lands at
                         that replay's place (core/tmetric_replay.h), so
                         such a slot is never shared with an eager one */
} cp_tmetric_slot;

/* The slot equal to `s`, made if new, in *id_out. Errors: EINVAL (a kind
 * other than int, double or their vectors; n over 1 for a scalar (0 or 1
 * mean 1), 0 or over
 * CPROTON_METRIC_MAX_VECTOR for a vector), ELIMIT (CP_TMETRIC_MAX_SLOTS
 * distinct slots). */
int cp_tmetric_reserve(const cp_tmetric_slot *s, uint32_t *id_out);

/* Slot `id`, or NULL when no such slot was reserved. */
const cp_tmetric_slot *cp_tmetric_get(uint32_t id);

/* The value that a record's s->n value words stand for in slot `s`'s kind,
 * in *out; a vector's elements are copied to memory the caller frees with
 * cp_value_release. Errors: ENOMEM. */
int cp_tmetric_value(const cp_tmetric_slot *s, const uint64_t *words,
                     cp_value *out);

/* The calling thread's next kernel launch is the copy kernel of a record
 * of slot `id` (CPROTON_TENSOR_METRIC_NONE: no longer). Set around the
 * launch by the Python layer; a graph node created by that launch during a
 * stream capture takes the tag (cp_tmetric_tag_take). Only a captured
 * slot's tag is kept. Any thread; thread-local. */
void cp_tmetric_tag_set(uint32_t id);

/* The calling thread's tag, cleared (CPROTON_TENSOR_METRIC_NONE when none):
 * the CUPTI backend's graph-node callback, on the launching thread. */
uint32_t cp_tmetric_tag_take(void);

/* Number of slots reserved so far (tests, docs). */
uint32_t cp_tmetric_count(void);

/* Number of those slots with `captured` set. */
uint32_t cp_tmetric_captured_count(void);

/* Forgets every slot (tests only: a live graph's records would dangle). */
void cp_tmetric_reset(void);

/* Every slot's path as names (the tree is about to be freed). Caller: the
 * compaction, with no thread reserving or folding. Errors: ENOMEM (then
 * nothing may be freed). */
typedef struct cp_tmetric_saved cp_tmetric_saved;
int cp_tmetric_save_paths(cp_tmetric_saved **out);

/* Re-creates the saved paths in the (new) tree, points each slot at its
 * path's node and frees `saved`. A path that cannot be made (out of
 * memory) puts its slot on ROOT; returns how many did, for the caller to
 * report (outside its locks). Same caller. */
size_t cp_tmetric_restore_paths(cp_tmetric_saved *saved);

/* Frees a saved form without restoring it (NULL is fine). */
void cp_tmetric_saved_free(cp_tmetric_saved *saved);

#endif
