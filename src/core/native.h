/* core/native.h -- native call stacks as context frames (cp_native_*).
 *
 * With context "native", each kernel launch's C/C++ call path becomes
 * frames between the scopes (NVTX ranges) and the kernel:
 *
 *   ROOT / scope or NVTX range ... / outermost native frame ... / innermost
 *        native frame (the launch site) / [state] / kernel
 *
 * At a launch the raw return addresses are captured (libunwind, else
 * glibc's backtrace()),
 * the frames of the profiler, CUPTI and the CUDA driver and runtime are
 * dropped from the top, and the address vector is looked up in a table of
 * known stacks: a stack seen before costs one hash and one compare. A new
 * stack interns one placeholder name per address and builds its path;
 * names are spelled out once per address, when a profile is written
 * (cp_native_symbolize: dladdr, libdw for file:line when present, C++
 * names demangled). */
#ifndef CP_CORE_NATIVE_H
#define CP_CORE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/cct.h"
#include "core/native_addr.h" /* cp_native_symbolize */
#include "core/native_sym.h"  /* cp_native_lines_available */

#define CP_NATIVE_MAX_DEPTH 64 /* frames kept per stack (outermost cut) */
#define CP_NATIVE_MAX_STACKS (1u << 14) /* distinct (scope, stack) pairs */

/* Counters since the process started (tests, finalize's report). */
typedef struct cp_native_stats {
  uint64_t unwinds;   /* stacks captured (one per launch) */
  uint64_t hits;      /* found in the table of known stacks */
  uint64_t misses;    /* new stacks: a path was built */
  uint64_t full;      /* new stacks not kept: table full (kernel under the
                         scope, without native frames) */
  uint64_t addresses; /* distinct return addresses seen */
  uint64_t symbolized;/* of them, named by cp_native_symbolize */
} cp_native_stats;

/* Whether native stacks can be captured in this build and process; when
 * not, `*why` says why. Also warms the unwinder up (its first use loads
 * libgcc_s and allocates), so call it before launches are profiled. */
int cp_native_available(const char **why);

/* Marks the frames inside the backend's launch entry as the profiler's
 * own: the entry passes its return address (__builtin_return_address(0)),
 * and the stacks this thread captures start at the frame it returns to.
 * Hot path: one thread-local store. */
void cp_native_floor(const void *return_address);

/* The unwinder in use: "libunwind" (libunwind.so.8's unw_backtrace, loaded
 * at run time) or "backtrace" (glibc's, ~20x slower per frame). */
const char *cp_native_unwinder(void);

/* Tests: uses `name`'s unwinder ("libunwind" or "backtrace"); -1 when it
 * is not available (the other one is used). Not while launches run. */
int cp_native_set_unwinder(const char *name);

/* The node for the calling thread's native stack under `parent`: the
 * innermost frame's node, or `parent` when the stack is empty, cannot be
 * kept (counted) or out of memory. Hot path: no lock or allocation for a
 * stack seen before. */
cp_node *cp_native_path(cp_node *parent);

/* Forgets the known stacks (their nodes are about to be freed:
 * core/session.c's reset_tables). The caller guarantees no thread is
 * capturing. */
void cp_native_reset(void);

void cp_native_get_stats(cp_native_stats *out);

#endif
