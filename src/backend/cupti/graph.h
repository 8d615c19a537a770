/* backend/cupti/graph.h -- CUDA graph nodes -> capture-time launch sites
 * (cp_graph_*), and the composition of a graph launch's context with a
 * node's capture-time context.
 *
 * A kernel replayed from a graph carries the correlation id of its
 * cuGraphLaunch (one site for all its kernels) and the id of its graph node.
 * When the node was created (stream capture or explicit construction) while
 * a session was active, the table remembers the context of that moment, and
 * the kernel lands at  <launch context> / <captured_at> / <capture context>
 * / <kernel>, Proton's layout (its test_cudagraph checks the tag).
 *
 * Lifetime of an entry (nothing is stored per launch):
 *   created / cloned   -> live   (a node made while no session was active,
 *                                 or the clone of a node the table never
 *                                 saw, is live with no capture context)
 *   destroyed          -> dead, stamped with the flush generation
 *   a flush completes  -> dead entries stamped before it are dropped
 * Programs destroy graphs right after their last replay, long before the
 * records thread reads the replays' records, so an entry outlives its node
 * until a flush has delivered what was launched before the destroy. The
 * table grows (sitemap.h) up to a maximum; when full, dead entries are
 * dropped early (counted as evicted), and a record that then finds no entry
 * is counted as lost (cp_graph_resolve), never placed silently wrong.
 *
 * Composition is memoised per node for the last launch context, so
 * replaying an executable graph under one context composes each node once,
 * not once per replay; the composed sites of the last CP_GRAPH_HOT (4,096)
 * node ids sit in a direct-mapped cache (graph.c), so a replayed kernel
 * costs one lock and one cache slot, no hash lookup. */
#ifndef CP_BACKEND_CUPTI_GRAPH_H
#define CP_BACKEND_CUPTI_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "core/session.h"

typedef struct cp_graph cp_graph;

/* The frame between a graph launch's context and a node's capture context. */
#define CP_GRAPH_CAPTURE_TAG "<captured_at>"

/* A table starting at `initial` slots, growing to at most `max_slots`
 * (powers of two; never filled beyond 3/4). NULL when out of memory
 * (message set). */
cp_graph *cp_graph_new(size_t initial, size_t max_slots);

/* Frees `g`; NULL is fine. */
void cp_graph_free(cp_graph *g);

/* Forgets every node. Thread-safe. */
void cp_graph_clear(cp_graph *g);

/* Inside graphs, a kernel launched under an op (a launch hook's name) is
 * named by the op (1, Proton 3.9 and the default) or keeps its own name
 * under the op's parent scope (0, Proton 3.6). */
void cp_graph_set_op_names(cp_graph *g, int op_names);

/* Remembers `site` (NULL: no capture context) as node `node_id`'s capture
 * context. Returns 1 when stored, 0 when the table is full (the caller
 * counts it). Thread-safe (mutex: graph construction is not a launch path). */
int cp_graph_put(cp_graph *g, uint64_t node_id, const cp_launch_site *site);

/* Node `node_id` (known) launches the copy kernel of tensor-metric slot
 * `slot` (core/tmetric_replay.h): cp_graph_resolve reports the slot for
 * its replays, and clones keep it. Returns 1, or 0 for an unknown node. */
int cp_graph_tag(cp_graph *g, uint64_t node_id, uint32_t slot);

/* Copies node `from`'s entry to `to` (graph instantiation clones nodes); a
 * `from` the table never saw gives `to` an entry with no capture context.
 * Returns 1 when `from` was known, 0 when not, -1 when the table is full. */
int cp_graph_clone(cp_graph *g, uint64_t from, uint64_t to);

/* CUDA destroys node `node_id`: its entry is kept until a flush that began
 * after this call completes (cp_graph_flushed). Thread-safe. */
void cp_graph_kill(cp_graph *g, uint64_t node_id);

/* A flush is about to start: returns the generation to pass to
 * cp_graph_flushed when it has delivered its records. */
uint32_t cp_graph_flush_begin(cp_graph *g);

/* The flush begun at `gen` completed: drops the entries of nodes destroyed
 * before it began. Returns how many. */
size_t cp_graph_flushed(cp_graph *g, uint32_t gen);

/* Forgets node `node_id` now. Thread-safe. */
void cp_graph_remove(cp_graph *g, uint64_t node_id);

/* Copies node `node_id`'s capture site into `*out`; 1 if known with a
 * capture context, else 0. */
int cp_graph_get(cp_graph *g, uint64_t node_id, cp_launch_site *out);

/* What cp_graph_resolve found. */
typedef enum cp_graph_found {
  CP_GRAPH_COMPOSED = 0,   /* `out` is the composed site */
  CP_GRAPH_NO_CONTEXT = 1, /* known node without capture context: launch */
  CP_GRAPH_UNKNOWN = 2,    /* a node the table never saw: built before
                              profiling started (or one CUPTI did not
                              report); `out` is the launch site */
  CP_GRAPH_LOST = 3,       /* a node newer than the first entry after the
                              full table evicted entries: probably one of
                              them; `out` is the launch site */
} cp_graph_found;

/* The site a replayed kernel of node `node_id` launched at `launch` is
 * delivered with (cp_graph_compose of the node's capture site, memoised).
 * Returns a cp_graph_found, or a negative status (ENOMEM, message set) with
 * `*out` the launch site. `*tag_out` (may be NULL) gets the node's
 * cp_graph_tag slot, or CPROTON_TENSOR_METRIC_NONE. Records thread: one
 * lock and one hash lookup per record once the node's composition is
 * memoised. */
int cp_graph_resolve(cp_graph *g, uint64_t node_id,
                     const cp_launch_site *launch, cp_launch_site *out,
                     uint32_t *tag_out);

/* Nodes held (live and dead); dead entries evicted early since clear. */
size_t cp_graph_count(cp_graph *g);
uint64_t cp_graph_evicted(cp_graph *g);

/* The site a graph kernel is delivered with: `launch` where, for each
 * context kind captured in `capture`, the node is the launch node, then
 * CP_GRAPH_CAPTURE_TAG, then the capture node's path (below ROOT); with
 * `op_names` 0 an op capture node is replaced by its parent scope (the
 * kernel keeps its own name). Returns 0, or ENOMEM (message set) when a
 * node could not be created. Not a hot path (CUPTI's thread). */
int cp_graph_compose(const cp_launch_site *launch,
                     const cp_launch_site *capture, int op_names,
                     cp_launch_site *out);

#endif
