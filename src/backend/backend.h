/* backend/backend.h -- the interface every measurement backend implements
 * (cp_backend_*). Only backend/registry.c knows which ones were compiled in.
 *
 * Life cycle: the session layer parses each session's mode once
 * (`parse_mode`), calls `start` with it when the first session that
 * uses a backend starts, `flush` on deactivate and before finalize, and
 * `stop` when the last such session is gone. Backends deliver measurements
 * through core/session.h (cp_session_capture on the launching thread,
 * cp_session_deliver_kernel on their own thread). */
#ifndef CP_BACKEND_BACKEND_H
#define CP_BACKEND_BACKEND_H

#include <stddef.h>

#include "cproton/instrumentation.h"

/* A session's mode, parsed once by its backend's own table (`parse_mode`)
 * when the session starts; `start` and `same_mode` read the parsed form and
 * nothing parses the string again. `mode` is the string as given (NULL =
 * ""), owned by the caller (the session keeps it for its lifetime); `opts`
 * holds the backend's own options struct, read only by that backend (each
 * backend checks with _Static_assert that its struct fits). */
#define CP_BACKEND_OPTS_BYTES 8192
typedef struct cp_backend_config {
  const char *mode;
  /* Input to parse_mode (cp_backend_parse_mode sets it): the session
   * records a trace, not a tree. A backend refuses a mode here that the
   * data kind cannot run (instrumentation: in-kernel sums keep no records,
   * which a trace needs). */
  int is_trace;
  /* The backend whose parse_mode filled `opts` (cp_backend_parse_mode
   * sets it): a session that fell back to the CPU-only backend keeps the
   * configuration its own backend parsed, and only that backend reads it. */
  const struct cp_backend_ops *parsed_by;
  _Alignas(16) unsigned char opts[CP_BACKEND_OPTS_BYTES];
} cp_backend_config;

/* Stores a backend's parsed options (`size` bytes, at most
 * CP_BACKEND_OPTS_BYTES: the backend asserts it) and the mode string. */
void cp_backend_config_set(cp_backend_config *c, const char *mode,
                           const void *opts, size_t size);

/* The parsed options of type `T` a backend stored in `config`. */
#define CP_BACKEND_OPTS(T, config) ((const T *)(const void *)(config)->opts)

/* What a backend's `probe` found, without loading more than the driver. */
typedef struct cp_backend_probe {
  int runs;    /* non-zero: a session on this backend would measure here */
  int devices; /* GPUs the driver reports (0 without a driver) */
} cp_backend_probe;

/* One backend: a descriptor (name, flags) and its operations. Each backend
 * is one instance per process (CUPTI's subscriber and the CUDA driver are
 * process-wide), its state gathered in one file-level struct. */
typedef struct cp_backend_ops {
  const char *name;
  /* Non-zero when the backend can run here (driver and libraries load).
   * Must be cheap and must not print; may set the error message. */
  int (*available)(void);
  /* Cheaper than `available`: whether a driver and a device are there (no
   * vendor tool library is loaded). Silent; never fails. */
  void (*probe)(cp_backend_probe *out);
  /* Parses `mode` (NULL = "") with the backend's own mode table into
   * `out->opts` and sets `out->mode` to `mode` (NULL: the backend has no
   * modes and takes any string). Called for every session, also when the
   * backend is not available here, so a bad mode is refused everywhere.
   * 0 or EINVAL with the message. */
  int (*parse_mode)(const char *mode, cp_backend_config *out);
  /* Subscribes / allocates, for the configuration `parse_mode` made.
   * Errors: EBACKEND (vendor failure, translated). */
  int (*start)(const cp_backend_config *config);
  /* Delivers every pending record before returning. */
  int (*flush)(void);
  /* Unsubscribes and frees; reports dropped records through the log. */
  void (*stop)(void);
  /* Whether a session with configuration `b` can join the running `a`
   * (NULL: the mode strings must be equal; NULL == ""). `start` runs for
   * the first session only, so later sessions are checked here and refused
   * with a message when they differ, never silently ignored. */
  int (*same_mode)(const cp_backend_config *a, const cp_backend_config *b);
  /* Non-zero for the backend a session gets when it names none (CUPTI). */
  int is_default_candidate;
  /* Non-zero for the CPU-only backend a session falls back to when its
   * backend cannot run here ("none"). */
  int is_cpu_fallback;
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
  /* Non-zero when the mode asks for collection that needs the cubins of
   * kernels loaded before the session started (CUPTI's PC sampling). */
  int (*wants_loaded_cubins)(const cp_backend_config *config);
  /* Non-zero for in-kernel backends: their sessions need the front end's
   * compile hook (the instrumentation pass), which reads the session's
   * parsed mode through `instr_mode_info`. A flag, so no front end compares
   * a backend's name. */
  int instruments_kernels;
  /* For backends with `instruments_kernels`: the parsed mode as the public
   * cproton_instr_mode_info (what parse_mode made, not parsed again). */
  int (*instr_mode_info)(const cp_backend_config *config,
                         cproton_instr_mode_info *out);
} cp_backend_ops;

/* The backend named `name`, or NULL (message lists the valid names). */
const cp_backend_ops *cp_backend_find(const char *name);

/* The GPU backend a session gets when it names none, whether or not it is
 * available here; NULL when none was compiled in. */
const cp_backend_ops *cp_backend_default_candidate(void);

/* The default GPU backend when available here, else the CPU-only one. */
const cp_backend_ops *cp_backend_default(void);

/* The CPU-only backend sessions fall back to (the is_cpu_fallback row). */
const cp_backend_ops *cp_backend_cpu_fallback(void);

/* `b`'s parse_mode for a session recording a trace (`is_trace` 1) or a
 * tree, or for a backend without modes, `out->mode = mode`. */
int cp_backend_parse_mode(const cp_backend_ops *b, const char *mode,
                          int is_trace, cp_backend_config *out);

/* Whether `b` runs with `a` and `c` alike (same_mode, or equal strings). */
int cp_backend_same_mode(const cp_backend_ops *b, const cp_backend_config *a,
                         const cp_backend_config *c);

#endif
