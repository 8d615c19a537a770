/* core/session.h -- sessions, and the two calls through which backends
 * hand measurements to them (cp_session_*).
 *
 *   launching thread           backend thread (CUPTI's)
 *   ----------------           ------------------------
 *   cp_session_capture(&site)  -> keep `site` by correlation id
 *                              cp_session_deliver_kernel(&site, &record)
 *
 * A launch site is a plain value: the context node per context kind, the
 * sessions active at the launch and the epoch that tells whether a session
 * slot was reused since. Capturing reads thread-local state only. */
#ifndef CP_CORE_SESSION_H
#define CP_CORE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "core/cct.h"
#include "core/context.h"
#include "core/data.h"
#include "core/trace.h"
#include "cproton/cproton.h"

#define CP_MAX_SESSIONS 32

typedef struct cp_launch_site {
  cp_node *node[CP_CONTEXT_KINDS]; /* parent of the kernel, or the op node */
  uint8_t is_op[CP_CONTEXT_KINDS]; /* the node is an op: no kernel child */
  uint32_t sessions;               /* bit i: session slot i was active */
  uint32_t epoch;                  /* session epoch at capture */
  uint32_t thread;                 /* cp_context_thread_id() */
  uint64_t launch_ns;              /* CPU time of the launch (trace only) */
} cp_launch_site;

typedef struct cp_kernel_record {
  const char *name; /* kernel name as the device reports it */
  uint64_t start_ns, end_ns;
  uint32_t device_id;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t graph_id; /* CUDA graph of a replayed kernel, 0 otherwise */
  cp_device_type device_type;
  /* 0 or 1: one launch. More: a batch of `count` launches of one kernel at
   * one site whose durations sum to end_ns - start_ns (the CUPTI backend's
   * adaptive mode); not for trace sessions. */
  uint32_t count;
} cp_kernel_record;

/* Fills `site` for a launch on the calling thread. Hot path: no lock, no
 * allocation once the context nodes exist. `site->sessions` is 0 when no
 * session is active (the caller may then skip the launch). */
void cp_session_capture(cp_launch_site *site);

/* 1 when a launch's site depends on nothing but the shadow stacks and the
 * sessions (only shadow-context sessions, no trace session: no Python call
 * path and no launch time per launch). Then, with cp_context_uniform(), two
 * launches with no change between them (cp_context_generation) share one
 * site. Reports changes through cp_context_touch. */
int cp_session_sites_shared(void);

/* Adds a kernel record to every session active at capture that still
 * exists. Called on the backend's thread; takes per-session locks.
 * Errors: ENOMEM (the record is counted as dropped). */
int cp_session_deliver_kernel(const cp_launch_site *site,
                              const cp_kernel_record *rec);

/* Adds a metric to the node the site's kernel `kernel_name` landed on (or
 * the op node) in every session of the site: launch metadata, sampling and
 * intra-kernel metrics. */
int cp_session_deliver_metric(const cp_launch_site *site,
                              const char *kernel_name, const char *metric,
                              cp_value v);

/* Like cp_session_deliver_metric, on the node kernel/names[0]/.../names[n-1]
 * (strtab ids): intra-kernel scopes under their kernel. */
int cp_session_deliver_path_metric(const cp_launch_site *site,
                                   const char *kernel_name,
                                   const uint32_t *names, size_t n_names,
                                   uint32_t metric, cp_value v);

/* Appends `proto` (its node filled per session with the node of
 * kernel/names...) to every trace session of the site. */
int cp_session_deliver_event(const cp_launch_site *site,
                             const char *kernel_name, const uint32_t *names,
                             size_t n_names, const cp_event *proto);

/* Appends one hardware-counter sample -- `value` of `counter` (e.g.
 * "sm_throughput%") on `device` over [t0_ns, t1_ns) on the session clock --
 * as a CP_EVENT_COUNTER to every active trace session (tree sessions
 * ignore it; with none active it only checks its arguments). Called from a
 * backend's decoder thread; thread-safe (slots read-locked, one trace lock
 * per append). Errors: EINVAL (no name, t1_ns < t0_ns, a value that is not
 * finite: nothing appended), ENOMEM, ELIMIT/EIO from a trace (that trace
 * counts the sample as dropped; the other sessions still get it). */
int cp_session_deliver_counter(uint32_t device, uint64_t t0_ns,
                               uint64_t t1_ns, const char *counter,
                               double value);

/* Whether any session reached by `site` records a trace. */
int cp_session_site_traces(const cp_launch_site *site);

/* The node a site's kernel lands on for `kind`. NULL when out of memory. */
cp_node *cp_session_kernel_node(const cp_launch_site *site,
                                cp_context_kind kind, const char *kernel_name);

/* Bit mask of the active session slots. */
uint32_t cp_session_active_mask(void);

/* How many times the last finalize freed the context tree and the scoped
 * names (for tests and stats; see compact_if_idle in session.c). */
unsigned cp_session_compactions(void);

/* Frees every session without writing (tests, process teardown). */
void cp_session_reset_all(void);

/* Threads stop following the thread that started the latest session: a
 * thread's kernels land under its own scopes only (ROOT without any). The
 * injection entry point calls it, because its scopes are NVTX ranges, which
 * NVTX defines per thread. */
void cp_session_threads_independent(void);

/* The output path (without extension) a session started with `o` writes:
 * o->name ("proton" when NULL or empty) with {pid}, {rank} and
 * {local_rank} filled (ranks below 0 give 0). Errors: ELIMIT (longer than
 * `size`). The injection entry point checks its directory before
 * starting (docs/cupti.md). */
int cp_session_expand_name(const cproton_session_options *o, char *out,
                           size_t size);

/* Whether a session recording a tree (`is_trace` 0) or a trace can be
 * finalized in `format` (NULL or "": the default). Errors: EINVAL, the
 * message naming the format and the valid ones. */
int cp_session_format_check(int is_trace, const char *format);

#endif
