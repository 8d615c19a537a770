/* _pylink.h -- context layers the "python" context adds around a thread's
 * own Python frames: the forward path a backward node came from (autograd)
 * and the stack of operator frames (aten) of the calling thread (see
 * _pylink.c). */
#ifndef CPROTON_PY_PYLINK_H
#define CPROTON_PY_PYLINK_H

#include <stddef.h>
#include <stdint.h>

#define CPY_LINK_MAX 256

/* What the unwinder adds for the calling thread. `prefix` replaces the
 * thread's frames outer to the `anchor` raw frames (the frames under the
 * hook that set it); `n_prefix` 0 means no link. `ops` go innermost. */
typedef struct cpy_link_view {
  const uint32_t *prefix;
  size_t n_prefix;
  size_t anchor;
  const uint32_t *ops;
  size_t n_ops;
} cpy_link_view;

/* The calling thread's view (lock-free, thread-local reads only). */
void cpy_link_view_get(cpy_link_view *v, size_t raw_depth_now);

/* Starts a backward pass: `ids` (the caller's frames, outermost first) plus
 * the <backward> frame become the fallback path. Returns the token to give
 * cpy_link_backward_end, or -1 (too deep / out of memory). */
long cpy_link_backward_begin(const uint32_t *ids, size_t n);
void cpy_link_backward_end(long token);

/* A backward node starts on this thread: its path is `ids` (the forward
 * frames) + <backward>, or the fallback when ids is NULL; `anchor` is the
 * raw frame depth under the hook. */
void cpy_link_node(const uint32_t *ids, size_t n, size_t anchor);

/* The same with ids NULL, unless this thread already has a link in the
 * live pass (a root node that was linked in the forward pass). */
void cpy_link_node_first(size_t anchor);

/* Operator frames of the calling thread: push an interned id, pop it. */
void cpy_link_op_push(uint32_t id);
void cpy_link_op_pop(void);

/* Forgets every link (session stop/finalize). */
void cpy_link_reset(void);

#endif
