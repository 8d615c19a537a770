/* backend/cupti/graph.h -- CUDA graph nodes -> capture-time launch sites
 * (cp_graph_*), and the composition of a graph launch's context with a
 * node's capture-time context.
 *
 * A kernel replayed from a graph carries the correlation id of its
 * cuGraphLaunch (one site for all its kernels) and the id of its graph node.
 * When the node was created (stream capture or explicit construction) while
 * the backend ran, the table remembers the context of that moment, and the
 * kernel lands at  <launch context> / <captured_at> / <capture context> /
 * <kernel>, Proton's layout (its test_cudagraph checks the tag).
 *
 * Memory is bounded: the table has a fixed capacity chosen at creation,
 * entries go away when CUDA destroys the node, and nothing is kept per
 * launch. Graphs created before profiling began have no entries; their
 * kernels land under the launch context only. */
#ifndef CP_BACKEND_CUPTI_GRAPH_H
#define CP_BACKEND_CUPTI_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "core/session.h"

typedef struct cp_graph cp_graph;

/* The frame between a graph launch's context and a node's capture context. */
#define CP_GRAPH_CAPTURE_TAG "<captured_at>"


/* A table for at most `capacity` nodes (rounded up to a power of two; it is
 * never filled beyond 3/4). NULL when out of memory (message set). */
cp_graph *cp_graph_new(size_t capacity);

/* Frees `g`; NULL is fine. */
void cp_graph_free(cp_graph *g);

/* Forgets every node. Thread-safe. */
void cp_graph_clear(cp_graph *g);

/* Remembers `site` as node `node_id`'s capture context. Returns 1 when
 * stored, 0 when the table is full (the caller counts it). Thread-safe
 * (mutex: graph construction is not a launch path). */
int cp_graph_put(cp_graph *g, uint64_t node_id, const cp_launch_site *site);

/* Copies node `from`'s entry to `to` (graph instantiation clones nodes).
 * Returns 1 when copied, 0 when `from` is unknown or the table is full. */
int cp_graph_clone(cp_graph *g, uint64_t from, uint64_t to);

/* Forgets node `node_id` (CUDA destroyed it). Thread-safe. */
void cp_graph_remove(cp_graph *g, uint64_t node_id);

/* Copies node `node_id`'s capture site into `*out`; 1 if known, else 0. */
int cp_graph_get(cp_graph *g, uint64_t node_id, cp_launch_site *out);

/* Number of nodes held. */
size_t cp_graph_count(cp_graph *g);

/* The site a graph kernel is delivered with: `launch` where, for each
 * context kind captured in `capture`, the node is the launch node, then
 * CP_GRAPH_CAPTURE_TAG, then the capture node's path (below ROOT). Returns 0, or ENOMEM (message
 * set) when a node could not be created. Not a hot path (CUPTI's thread). */
int cp_graph_compose(const cp_launch_site *launch,
                     const cp_launch_site *capture, cp_launch_site *out);

#endif
