/* _pylink.h -- the layers that the "python" context adds around a
 * launching thread's own Python frames when PyTorch runs: the backward
 * link (a backward kernel under the forward path of the autograd node that
 * launched it) and the calling thread's stack of operator frames (aten).
 * See _pylink.c. */
#ifndef CPROTON_PY_PYLINK_H
#define CPROTON_PY_PYLINK_H

#include <stddef.h>
#include <stdint.h>

#define CPY_LINK_MAX 256
#define CPY_NO_ENTRY ((size_t)-1)

/* What the link needs from libtorch and from Python (_torchlink.c fills
 * it; the functions must stay valid for the life of the process). */
typedef struct cpy_link_torch {
  uint64_t (*peek)(void); /* at::sequence_number::peek: the calling thread's */
  int (*task_id)(void);   /* torch::autograd::get_current_graph_task_id */
  /* Takes the GIL: *seq = the sequence number of the node the calling
   * thread runs (UINT64_MAX: none); with fb non-NULL, fb[0, *n_fb) = the
   * frames older than the engine's entry of a thread that runs backward()
   * (*n_fb = CPY_NO_ENTRY when no thread does). 0, or -1 when Python
   * could not be asked (finalizing): *seq and *n_fb are then untouched. */
  int (*query)(uint64_t *seq, uint32_t *fb, size_t *n_fb, size_t max);
} cpy_link_torch;

/* Turns the link on, with the calling thread as the forward thread (the
 * one whose launches record nodes) and a ring of `ring_size` nodes (0:
 * the default, 65536; rounded up to a power of two). Clears the counts.
 * 0, or -1 when out of memory (the link stays off). Any thread, with the
 * GIL (so two starts do not race). */
int cpy_link_start(const cpy_link_torch *torch, size_t ring_size);

/* Turns the link off and frees its record (session stop/finalize). */
void cpy_link_reset(void);

/* What the link does at a launch of the calling thread, read once per
 * launch. `task`: -2 while the link is off, -1 outside a backward pass on
 * this thread, else the graph task id. `record_at`: on the forward thread
 * outside backward, the sequence counter when it moved since the last
 * record (this launch records node record_at-1 and the unwinder looks for
 * a node maker frame); else 0. Hot path: a few loads and up to two libtorch
 * calls. */
typedef struct cpy_link_launch {
  int task;
  uint64_t record_at;
} cpy_link_launch;

cpy_link_launch cpy_link_launch_get(void);

/* Composes the launch's path in place: ids[0, n) are the launching
 * thread's kept frames, outermost first, of which ids[0, n_outer) are
 * older than the innermost frame of the engine's entry (task >= 0) or of
 * a node maker (a recording launch: the record ends there), CPY_NO_ENTRY
 * when there is none; `l` is cpy_link_launch_get()'s. Records the forward
 * path (l.record_at != 0) or puts the backward kernel under its node's
 * forward path (task >= 0; takes the GIL through query, never while
 * holding a lock); then appends the operator frames. Returns the path's
 * length (<= max). Hot path (launch callbacks). */
size_t cpy_link_compose(uint32_t *ids, size_t n, size_t n_outer,
                        cpy_link_launch l, size_t max);

/* Operator frames of the calling thread: push an interned id, pop it. */
void cpy_link_op_push(uint32_t id);
void cpy_link_op_pop(void);

/* What the link did since cpy_link_start. */
typedef struct cpy_link_counts {
  unsigned long long records;  /* forward launches that saw new nodes */
  unsigned long long exact;    /* nodes given their first launch's path */
  unsigned long long prefix;   /* nodes without a launch: a common prefix */
  unsigned long long lookups;  /* backward launches */
  unsigned long long linked;   /* ... whose node had a forward path */
  unsigned long long fallback; /* ... under backward()'s caller */
  unsigned long long evicted;  /* ... whose record the ring had overwritten */
  unsigned long long not_found; /* fallbacks with no backward() caller found */
  unsigned long long paths_full; /* nodes not recorded: path table full */
} cpy_link_counts;

void cpy_link_counts_get(cpy_link_counts *out);

#endif
