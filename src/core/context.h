/* core/context.h -- per-thread context: the shadow scope stack, states, the
 * current op, and context sources such as Python (cp_context_*).
 *
 * Each stack frame keeps the context node it resolves to for every context
 * kind, so that a kernel launch reads one pointer per kind: no allocation,
 * no lock, no hashing on the launch path. */
#ifndef CP_CORE_CONTEXT_H
#define CP_CORE_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "core/cct.h"
#include "cproton/cproton.h"

typedef enum cp_context_kind {
  CP_CONTEXT_SHADOW = 0,
  CP_CONTEXT_PYTHON = 1,
  CP_CONTEXT_NATIVE = 2, /* scopes, then the launch's C/C++ call path */
  CP_CONTEXT_KINDS = 3
} cp_context_kind;

#define CP_MAX_DEPTH 1024
#define CP_MAX_STATES 64
#define CP_MAX_FRAMES 256 /* frames one context source may return */

typedef struct cp_frame {
  uint64_t id;      /* scope id handed to the user */
  uint64_t start_ns;/* CPU time at enter (trace sessions, timed scopes) */
  int timed;        /* a CPU-timed scope: its exit adds cpu_time (ns) */
  uint32_t name;    /* strtab id; 0 for an unresolved frame */
  uint64_t name_hash; /* unresolved frames: hash of the name, for exits */
  cp_node *node[CP_CONTEXT_KINDS]; /* all NULL when unresolved */
  uint32_t state;   /* the state open at push (0: none) */
  uint32_t state_tail; /* its second frame (0: none; cp_context_state_push) */
  uint32_t generation; /* compactions before its push (resolved frames) */
} cp_frame;

/* Parses "shadow" / "python" / "native". Errors: EINVAL (message lists valid names). */
int cp_context_kind_parse(const char *name, cp_context_kind *out);

/* Pushes a scope. `kinds` is a bit mask of the kinds to resolve now (the
 * kinds with active sessions); shadow is always resolved. On success
 * `*frame_out` points at the new top frame (valid until the next push or
 * pop on this thread). Errors: ENOMEM, ELIMIT. Hot path. */
int cp_context_push(uint32_t name, unsigned kinds, cp_frame **frame_out);

/* Pushes an unresolved scope: entered while no session was active, so its
 * name is not interned and it has no node (nothing records it, as Proton's
 * scopes do nothing without a session). Memory stays bounded however many
 * distinct names pass through. Kernels and children of an unresolved frame
 * land under the nearest resolved frame below it, or ROOT. Errors: ENOMEM,
 * ELIMIT. Hot path. */
int cp_context_push_unresolved(const char *name, cp_frame **frame_out);

/* Hash of a name as unresolved frames keep it. */
uint64_t cp_context_name_hash(const char *name);

/* Pops the top frame; `*popped` (may be NULL) then points at its copy among
 * the recently exited frames (valid until 8 more pops on this thread). With
 * `name` non-NULL it must match. A popped frame with `start_ns` set (timed
 * or traced) still counts as held, so that its node outlives the caller's
 * recording: the caller then calls cp_context_release. Needs no guard.
 * Errors: ESTATE (empty stack or mismatch; stack unchanged). */
int cp_context_pop(const char *name, const cp_frame **popped);

/* Lets go of the frame a pop kept held (see cp_context_pop). */
void cp_context_release(void);

/* The frame with scope id `id` on this thread's stack, or among its last
 * exited frames; id 0 is the top frame. NULL if none. */
const cp_frame *cp_context_find(uint64_t id);

/* Where frame `f` records for `kind`: its node, or its node's child named
 * after the state that was open when it was pushed (Proton appends the
 * state to every context). NULL when `kind` was not resolved. */
cp_node *cp_context_frame_node(const cp_frame *f, cp_context_kind kind);

/* Depth of the calling thread's stack. */
size_t cp_context_depth(void);

/* The node kernels launched now are attributed under for `kind`: the top
 * frame's node (for native: then the calling thread's native call path,
 * core/native.h), then the current op (which names the kernel node) or else
 * the innermost state (the kernel's parent), as Proton does.
 * `*is_op` is set when the op names the kernel node itself. Hot path. */
cp_node *cp_context_launch_node(cp_context_kind kind, int *is_op);

/* The node of the top frame for `kind`, resolving it now if it was not
 * resolved at push. A thread with an empty shadow stack gets the main
 * thread's live top (ROOT when the main thread has none either). */
cp_node *cp_context_top(cp_context_kind kind);

/* States and ops of the calling thread. */
/* Opens a state: `name` is its frame; a non-zero `tail` is a second frame
 * under it (Proton 3.9's "__proton_launch_metadata:<kernel>" state is the
 * frames "__proton_launch_metadata" / "<kernel>", core/session.c). */
int cp_context_state_push(uint32_t name, uint32_t tail);
int cp_context_state_pop(void);
int cp_context_op_set(uint32_t name); /* 0 clears */

/* Makes the calling thread the main thread: threads that enter no scope of
 * their own follow its live stack (PyTorch's autograd threads, ...). Called
 * at session start. */
void cp_context_set_main(void);

/* No main thread until the next cp_context_set_main: threads without scopes
 * launch under ROOT. */
void cp_context_clear_main(void);

/* Brackets a recording call (scope, state, op, metric, launch capture):
 * between them the calling thread may intern scoped names and touch the
 * tree and session stores, so no compaction runs. Begin must come before
 * the call reads the active-session mask. Nests. Errors: ENOMEM (then no
 * end is due). Hot path: two plain stores (see cp_context_fence_init). */
int cp_context_guard_begin(void);
void cp_context_guard_end(void);

/* cproton's own driver calls on this thread (a synchronization while
 * flushing, a decoder thread's event waits) are not the program's: the
 * callbacks that record the program's calls (host synchronizations,
 * backend/cupti/callbacks.c) skip them while cp_context_own_calls() is
 * non-zero. Nestable, per thread; a thread cproton starts may begin once
 * and never end. */
void cp_context_own_calls_begin(void);
void cp_context_own_calls_end(void);
int cp_context_own_calls(void);

/* Runs `reset` (which frees the tree and the scoped names) if no thread is
 * inside a guard or holds a resolved frame, state or op; returns whether it
 * ran and freed (`reset` returns 0 when it could not, e.g. out of memory,
 * and then must have freed nothing). The caller has made the active mask 0 (sequentially consistent) and
 * keeps it 0 meanwhile; threads block at their first call meanwhile only
 * if they are new. Frames exited earlier stop being found by id. */
int cp_context_compact(int (*reset)(void));

/* Registers the process for expedited membarrier (once; Linux 4.14+), which
 * makes the guard a plain store; without it the guard's store is
 * sequentially consistent. Called at session start, before any guard may
 * take the light path. */
void cp_context_fence_init(void);

/* A small id for the calling thread (1, 2, ...), for trace lanes. */
uint32_t cp_context_thread_id(void);

/* Registers the source for `kind` (context.c keeps one per kind). */
int cp_context_source_set(cp_context_kind kind, cproton_unwind_fn fn,
                          void *user);

/* Whether a source exists for `kind` (shadow always has one; native has
 * one when native stacks can be captured: cp_native_available). */
int cp_context_source_ready(cp_context_kind kind);

/* ---- change tracking ---------------------------------------------------------
 * For a backend that skips per-launch work while no launch site can have
 * changed (backend/cupti/lazy.c). With a hook set, every push, pop, state,
 * op, main-thread change and cp_context_touch() bumps a generation (sequentially
 * consistent) and then calls the hook on the changing thread. */

/* Sets (NULL: clears) the hook. Not a hot path. */
void cp_context_set_change_hook(void (*fn)(void));

/* The generation: changes whenever a launch site may have changed. */
uint64_t cp_context_generation(void);

/* Reports a change made outside this module (sessions starting, stopping,
 * activating; phases). */
void cp_context_touch(void);

/* 1 when every thread launching now gets the same launch node: no thread
 * has a state or an op, and no thread but the main one has frames. */
int cp_context_uniform(void);

#endif
