/* core/tmetric_replay.h -- where the records of a CUDA graph's replays land
 * (cp_tmetric_replay_*): a FIFO of places per captured tensor-metric slot.
 *
 * A metric given during a stream capture (core/tmetric.h, `captured`) is
 * written by a copy kernel that the graph replays; Proton 3.9 puts each
 * replay's value at <launch context>/<captured_at>/<capture path>, where the
 * replayed kernels land. The device record names only its slot, so the
 * place comes from the copy kernel's own CUPTI record (it carries the graph
 * launch's correlation id and the node, which the graph table tagged with
 * the slot): the CUPTI backend pushes that replay's place for the slot, and
 * the fold pops the slot's oldest place for each record of the slot. A
 * slot's records and its kernel records come in the same (GPU) order, so
 * records of different graphs or streams never take each other's places.
 *
 *   records thread:  kernel record of a tagged node -> push(slot, place)
 *   drain (host):    record {slot, values}          -> pop(slot) or none
 *
 * Bounded: at most CP_TMETRIC_REPLAY_MAX places wait at once; a push
 * beyond is counted (its record then lands on the slot's capture node), as
 * is a record that finds no place (cp_tmetric_replay_take_counts; the fold
 * warns). Places point into the context tree: the compaction at the last
 * finalize drops them (cp_tmetric_replay_clear) before freeing it. */
#ifndef CP_CORE_TMETRIC_REPLAY_H
#define CP_CORE_TMETRIC_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "core/cct.h"
#include "core/context.h"

#define CP_TMETRIC_REPLAY_MAX 65536u

/* One replay of slot `slot`'s copy kernel: its record lands on `node[k]`
 * for context kind k (NULL: the slot's own node). Returns 1 when queued,
 * 0 when the queue is full or out of memory (counted). Thread-safe (one
 * mutex); the CUPTI records thread, once per replayed copy kernel. */
int cp_tmetric_replay_push(uint32_t slot,
                           cp_node *const node[CP_CONTEXT_KINDS]);

/* The oldest place queued for `slot`, removed, into `out`: 1, or 0 when
 * none is queued (counted as unplaced). Thread-safe; the fold. */
int cp_tmetric_replay_pop(uint32_t slot, cp_node *out[CP_CONTEXT_KINDS]);

/* Places refused since the last call (queue full) and records that found
 * no place; both reset. */
void cp_tmetric_replay_take_counts(uint64_t *full_out, uint64_t *unplaced_out);

/* Places queued now. */
size_t cp_tmetric_replay_count(void);

/* Drops every queued place (the tree is about to be freed, or tests);
 * returns how many. */
size_t cp_tmetric_replay_clear(void);

#endif
