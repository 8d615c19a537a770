/* backend/backend.h -- the interface every measurement backend implements
 * (cp_backend_*). Only backend/registry.c knows which ones were compiled in.
 *
 * Life cycle: the session module calls `start` when the first session that
 * uses a backend starts, `flush` on deactivate and before finalize, and
 * `stop` when the last such session is gone. Backends deliver measurements
 * through core/session.h (cp_session_capture on the launching thread,
 * cp_session_deliver_kernel on their own thread). */
#ifndef CP_BACKEND_BACKEND_H
#define CP_BACKEND_BACKEND_H

typedef struct cp_backend_ops {
  const char *name;
  /* Non-zero when the backend can run here (driver and libraries load).
   * Must be cheap and must not print; may set the error message. */
  int (*available)(void);
  /* Subscribes / allocates. `mode` is the session's mode string or NULL.
   * Errors: EINVAL (bad mode), EBACKEND (vendor failure, translated). */
  int (*start)(const char *mode);
  /* Delivers every pending record before returning. */
  int (*flush)(void);
  /* Unsubscribes and frees; reports dropped records through the log. */
  void (*stop)(void);
  /* Non-zero for the backend a session gets when it names none (CUPTI). */
  int is_default_candidate;
  /* Non-zero when nothing can arrive after `flush` for work launched before
   * it (no GPU work in flight: the CPU-only backend). Periodic flushing then
   * writes the phase that just ended at its advance_phase instead of at the
   * next one, when a record of a later phase shows the GPU caught up. */
  int flush_is_complete;
  /* Non-zero for backends that time whole kernels (CUPTI, the CPU-only and
   * test backends): their sessions write zeroed kernel metrics on ROOT, as
   * Proton does. Zero for intra-kernel backends (instrumentation). A flag,
   * so the session layer never compares a backend's name. */
  int times_kernels;
  /* Whether a session with mode `b` can join the running mode `a` (NULL:
   * the strings must be equal; NULL == ""). `start` runs for the first
   * session only, so later sessions are checked here and refused with a
   * message when they differ, never silently ignored. */
  int (*mode_compatible)(const char *a, const char *b);
  /* Validates a mode without starting anything (NULL: any mode is left to
   * `start`). Called for every session, also when the backend is not
   * available here, so a bad mode is refused everywhere. 0 or EINVAL with
   * the message. */
  int (*check_mode)(const char *mode);
} cp_backend_ops;

/* The backend named `name`, or NULL (message lists the valid names). */
const cp_backend_ops *cp_backend_find(const char *name);

/* The GPU backend a session gets when it names none, whether or not it is
 * available here; NULL when none was compiled in. */
const cp_backend_ops *cp_backend_default_candidate(void);

/* The default GPU backend when available here, else the "none" backend. */
const cp_backend_ops *cp_backend_default(void);

#endif
