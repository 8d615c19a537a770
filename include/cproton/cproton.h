/* cproton/cproton.h -- the host API of cproton, a multi-level GPU profiler.
 *
 * Conventions that hold for every function below unless its comment says
 * otherwise:
 *   - Functions that can fail return a cproton_status: CPROTON_OK (0) or a
 *     negative code from <cproton/errors.h>. On failure a detail message is
 *     left for the calling thread: cproton_last_error().
 *   - The library never aborts, exits or prints; diagnostics go through the
 *     log handler (cproton_log_set_handler).
 *   - Strings passed in are copied when kept; the caller keeps ownership.
 *   - Session ids are small non-negative integers; CPROTON_ALL_SESSIONS (-1)
 *     names every session where a function says so.
 *   - All functions are thread-safe unless noted.
 *
 * Typical use:
 *
 *   cproton_session_options o;
 *   cproton_session_options_init(&o);
 *   o.name = "run";                      // writes run.hatchet
 *   int sid;
 *   if (cproton_session_start(&o, &sid) != CPROTON_OK)
 *     fprintf(stderr, "%s\n", cproton_last_error());
 *   uint64_t id;
 *   cproton_scope_enter("fwd", &id);
 *   launch_kernels();
 *   cproton_metric_add_double(id, "flops", 1e9);
 *   cproton_scope_exit("fwd");
 *   cproton_session_finalize(sid, NULL);
 */
#ifndef CPROTON_CPROTON_H
#define CPROTON_CPROTON_H

#include <stddef.h>
#include <stdint.h>

#include "cproton/errors.h"
#include "cproton/export.h"
#include "cproton/version.h"

#ifdef __cplusplus
extern "C" {
#endif


#define CPROTON_ALL_SESSIONS (-1)

/* ---- errors and logging ------------------------------------------------ */

/* The detail message of the last failure on the calling thread ("" if none).
 * The string is owned by the library and valid until the next failing call
 * on the same thread. */
CPROTON_API const char *cproton_last_error(void);

/* A static description of `code` ("unknown status" for foreign codes). */
CPROTON_API const char *cproton_strerror(int code);

/* The code's symbolic name, e.g. "CPROTON_EINVAL"; static storage. */
CPROTON_API const char *cproton_error_name(int code);

/* The library version string ("0.1.0"); static storage. */
CPROTON_API const char *cproton_version(void);

typedef enum cproton_log_level {
  CPROTON_LOG_DEBUG = 0,
  CPROTON_LOG_INFO = 1,
  CPROTON_LOG_WARN = 2,
  CPROTON_LOG_ERROR = 3
} cproton_log_level;

/* Receives every diagnostic line (no trailing newline). May be called from
 * any thread, including CUPTI's; must not call back into cproton. */
typedef void (*cproton_log_fn)(void *user, cproton_log_level level,
                               const char *message);

/* Redirects diagnostics. NULL restores the default (stderr, "cproton: "
 * prefix, warnings and errors only). `min_level` filters below it. */
CPROTON_API void cproton_log_set_handler(cproton_log_fn fn, void *user,
                                         cproton_log_level min_level);

/* ---- Proton compatibility -------------------------------------------- */

/* Where Proton 3.6 and 3.9 differ, cproton follows one of them, for the
 * whole process. Under 3.9: an integer metric is "int64_t" in the type
 * mismatch message (3.6: "uint64_t" unless negative); a user metric may be
 * named like a kernel metric ("count", "time (ns)", "device_id",
 * "device_type") and its value replaces the kernel's in Hatchet output (3.6:
 * EINVAL, the name is reserved); a state named
 * "__proton_launch_metadata:<kernel>" is two frames,
 * "__proton_launch_metadata" then "<kernel>" (3.6: one frame, that name).
 * docs/compatibility.md lists every difference, including those the Python
 * package handles. */
typedef enum cproton_proton_version {
  CPROTON_PROTON_3_6 = 306, /* the default */
  CPROTON_PROTON_3_9 = 309
} cproton_proton_version;

/* Selects the Proton version to follow. Set it before starting sessions.
 * Errors: EINVAL for any other value. Any thread. */
CPROTON_API int cproton_set_proton_compat(int version);
/* The version followed now (a cproton_proton_version). Any thread. */
CPROTON_API int cproton_proton_compat(void);

/* ---- sessions ---------------------------------------------------------- */

typedef struct cproton_session_options {
  /* Output path without extension; NULL gives "proton". The extension is
   * added by the output format (".hatchet", ".chrome_trace"). The strings
   * "{pid}", "{rank}" and "{local_rank}" are replaced by the process id and
   * the RANK / LOCAL_RANK values given in `rank` / `local_rank`. */
  const char *name;
  /* "shadow" (scopes; default), "python" (needs a registered source) or
   * "native" (each launch's C/C++ call path below its scopes; docs/native-stacks.md). */
  const char *context;
  /* "tree" (default) or "trace". */
  const char *data;
  /* "cupti", "instrumentation", "none", or NULL for the default: "cupti"
   * when a CUDA driver is present, else "none" (CPU scopes only). */
  const char *backend;
  /* Backend mode string, e.g. "pcsampling" or Proton's instrumentation
   * mode strings; NULL for the default mode. "periodic_flushing" and
   * "periodic_flushing:format=<name>" belong to the session, as in Proton
   * 3.9: each complete phase is written to "<name>.part_<phase>.<ext>" when
   * the next phase starts (cproton_session_advance_phase). */
  const char *mode;
  /* Rank and local rank used for "{rank}" / "{local_rank}"; -1 if unknown. */
  int rank;
  int local_rank;
  /* Non-zero: write ".chrome_trace.gz" traces through zlib. */
  int gzip;
  /* Non-zero: finalize writes nothing when no kernel record arrived (the
   * injection entry point: a launcher process that never ran a kernel must
   * not leave an empty profile under a worker's name). */
  int skip_if_no_kernels;
} cproton_session_options;

/* Fills `o` with the defaults above. Always call before setting fields.
 * Errors: EINVAL for NULL `o`. */
CPROTON_API int cproton_session_options_init(cproton_session_options *o);

/* Starts a session and makes it active. Errors: EINVAL for unknown context,
 * data or backend strings (the message lists the valid ones) and for a mode
 * that differs from a running session's on the same backend, EPARSE for a
 * mode string the backend cannot parse (or a "periodic_flushing" mode with
 * a bad format), ELIMIT when too many sessions exist
 * or the name is too long, ENODEVICE is never returned: a GPU backend that
 * cannot load leaves a CPU-only session and one warning in the log.
 * `session_out` receives the id: 0, 1, 2, ... in start order, never reused
 * in a process (as in Proton), so a stale id cannot reach a later session. */
CPROTON_API int cproton_session_start(const cproton_session_options *o,
                                      int *session_out);

/* Resumes (activate) or pauses (deactivate) recording into a session, or
 * every session for CPROTON_ALL_SESSIONS. Deactivate flushes GPU records
 * gathered so far. Errors: ENOTFOUND for an unknown id. */
CPROTON_API int cproton_session_activate(int session);
CPROTON_API int cproton_session_deactivate(int session);

/* Flushes, writes the profile and frees the session (or all sessions).
 * `format` is NULL or "" (the data kind's default), "hatchet",
 * "chrome_trace" or "perfetto" (a protobuf trace, ".pftrace"; traces only,
 * never gzip'ed). The file is written to a temporary name and renamed, so a
 * failed write leaves no partial file. Errors: ENOTFOUND, EINVAL (format),
 * ENOMEM, EIO (the message names the path). The format is checked before
 * anything else: on every error except EIO the session is kept, with its
 * data and its active state, so the call can be retried; only EIO (the
 * file could not be written) frees it. */
CPROTON_API int cproton_session_finalize(int session, const char *format);

/* Whether cproton_session_finalize accepts `format` (NULL and "" included),
 * touching no session. Errors: EINVAL (the message lists the valid ones). */
CPROTON_API int cproton_format_check(const char *format);

/* Copies the path of the file the last finalize of `session` wrote, or that
 * it will write, into `buf` (NUL-terminated, truncated to `size`).
 * Errors: ENOTFOUND. */
CPROTON_API int cproton_session_output_path(int session, char *buf,
                                            size_t size);

/* Renders the session's current tree as Hatchet JSON without finalizing.
 * `*json_out` is malloc'ed; free it with cproton_free(). */
CPROTON_API int cproton_session_data_json(int session, char **json_out,
                                          size_t *size_out);

/* Renders phase `phase` of the session (-1: the current phase) in output
 * format `format` (any of them: a trace session's tree renders as
 * "hatchet" too; NULL or "": the session's default, "hatchet" or
 * "chrome_trace") without finalizing, after flushing its backend. `*buf_out` is
 * malloc'ed and NUL-terminated (MessagePack may contain NULs: use
 * `*size_out`); free it with cproton_free(). Errors: ENOTFOUND (no such
 * session, or the phase was cleared / written / never started), EINVAL
 * (unknown format, listing the valid ones). Any thread. */
CPROTON_API int cproton_session_data(int session, int64_t phase,
                                     const char *format, char **buf_out,
                                     size_t *size_out);

/* Ends the session's current phase and starts the next (Proton 3.9's
 * proton.data.advance_phase); `*phase_out` (may be NULL) gets its number.
 * Kernels launched from now on land in the new phase, whenever their
 * records arrive. In mode "periodic_flushing" every complete phase is then
 * written to "<name>.part_<phase>.<ext>" and its memory reused.
 * Errors: ENOTFOUND, ENOMEM, EIO (a part could not be written). */
CPROTON_API int cproton_session_advance_phase(int session,
                                              uint32_t *phase_out);

/* Sets `*complete_out` to 1 when phase `phase` is over and all its records
 * have arrived (a flush ran after it ended, or records of a later phase
 * arrived), else 0. Errors: ENOTFOUND, EINVAL. */
CPROTON_API int cproton_session_phase_complete(int session, uint32_t phase,
                                               int *complete_out);

/* Drops the data of phase `phase` (with `up_to`, of every phase up to it).
 * The current phase is emptied and keeps recording. Records that arrive
 * later for a dropped phase are counted and reported at finalize.
 * Errors: ENOTFOUND. */
CPROTON_API int cproton_session_clear(int session, uint32_t phase, int up_to);
/* Merges Perfetto traces written by separate processes (one per rank)
 * into `output`: each input keeps its own process track group, and its
 * sequence ids, track uuids, flow ids and pids are renumbered so they
 * cannot collide (inputs are read one packet at a time). Inputs are
 * written in the order of their clock snapshots. Errors: EINVAL, EIO,
 * ENOMEM, EPARSE (not a protobuf trace, truncated or corrupt: the message
 * names the file and byte offset; EINVAL also when `output` is one of the
 * inputs or exists as anything but a regular file, checked before any input
 * is read). `output` is written atomically, as cproton_output_open writes. */
CPROTON_API int cproton_trace_merge(const char *const *inputs,
                                    size_t n_inputs, const char *output);

/* Frees memory returned by this library; NULL is fine. */
CPROTON_API void cproton_free(void *ptr);

/* Number of sessions that exist (active or not). */
CPROTON_API int cproton_session_count(void);

/* What a session naming `backend` (NULL: the default) would get here,
 * found cheaply: for a GPU backend only the driver is loaded (no CUPTI),
 * and nothing is logged. */
typedef struct cproton_probe_info {
  /* The backend that would measure: `backend` itself, or for NULL the
   * default GPU backend when a driver reports a device, else "none".
   * Static storage. */
  const char *backend;
  int runs;    /* non-zero: `backend` (or the default) can measure here */
  int devices; /* GPUs the CUDA driver reports (0: no driver or device) */
} cproton_probe_info;

/* Fills `out`. Errors: EINVAL for NULL `out` or an unknown backend name
 * (the message lists the valid ones). */
CPROTON_API int cproton_backend_probe(const char *backend,
                                      cproton_probe_info *out);

/* Parses `mode` with the mode table of `backend` (NULL: the default GPU
 * backend's, which a CPU-only session also takes), as a session start
 * would, without starting anything. Errors: EINVAL for an unknown backend
 * or a mode it refuses (the message names the mode, the position and the
 * valid values). */
CPROTON_API int cproton_backend_check_mode(const char *backend,
                                           const char *mode);

/* Whether session `session`'s mode wants the cubins of kernels loaded
 * before it started (PC sampling maps samples to lines through them:
 * hand them over with cproton_pcsampling_add_cubin). Errors: ENOTFOUND
 * for an unknown session, EINVAL for NULL `out`. */
CPROTON_API int cproton_session_wants_loaded_cubins(int session, int *out);

/* Whether session `session`'s backend instruments kernels, so the front
 * end installs its compile hook (the instrumentation pass); a descriptor
 * flag of the backend that parsed the mode, not a name. Errors: EINVAL,
 * ENOTFOUND. */
CPROTON_API int cproton_session_wants_instrumentation_hook(int session,
                                                           int *out);

/* PC sampling (mode "pcsampling"): hands the profiler the cubin of a module
 * loaded before the session started (Triton keeps each compiled kernel's
 * cubin), so its samples get source lines. The image is copied; duplicates
 * (same CRC) are ignored. Errors: ESTATE (no session samples PCs), ELIMIT
 * (the cubin store's 1 GiB is full), EUNSUPPORTED (built without CUPTI).
 * Any thread. */
CPROTON_API int cproton_pcsampling_add_cubin(const void *cubin, size_t size);

/* ---- scopes, metrics and states ---------------------------------------- */

/* Pushes a scope named `name` on the calling thread's shadow stack; every
 * kernel launched until the matching exit is attributed under it.
 * `id_out` (may be NULL) receives a scope id for cproton_metric_add_*.
 * Errors: EINVAL (NULL or empty name), ELIMIT (stack deeper than 1024).
 * Hot path: no allocation once the (parent, name) node exists. */
CPROTON_API int cproton_scope_enter(const char *name, uint64_t *id_out);

/* Pops the innermost scope of the calling thread. With a non-NULL `name` the
 * innermost scope must have that name. Errors: ESTATE for an exit with no
 * enter or a name mismatch (the stack is left unchanged). */
CPROTON_API int cproton_scope_exit(const char *name);

/* Like cproton_scope_enter, and the matching cproton_scope_exit adds the
 * CPU time between them, in ns, as the exclusive metric "cpu_time (ns)"
 * (Proton's cpu_timed_scope). Same errors as cproton_scope_enter. */
CPROTON_API int cproton_cpu_timed_scope_enter(const char *name,
                                              uint64_t *id_out);

/* Depth of the calling thread's shadow stack. */
CPROTON_API size_t cproton_scope_depth(void);

/* Attach a metric to the scope `scope_id` in every active session. A name
 * ending in "(exc)" is exclusive, "(pty)" is a property (last value wins),
 * any other is summed over every entry of the scope. A metric keeps the type
 * of its first value; adding a double to an integer metric gives ESTATE
 * (with Proton's message). EINVAL for an empty or reserved name.
 * scope_id 0 means the innermost scope of the calling thread (ROOT if none). */
CPROTON_API int cproton_metric_add_int(uint64_t scope_id, const char *name,
                                       int64_t value);
CPROTON_API int cproton_metric_add_double(uint64_t scope_id, const char *name,
                                          double value);
/* Vector metrics (Proton 3.9): `n` values (n may be 0), summed element by
 * element; "(pty)" replaces them. A vector keeps its type and its length:
 * another type gives ESTATE, another length EINVAL ("Vector metric size
 * mismatch ..."). The values are copied. Hatchet JSON and hatchet_msgpack
 * write them as arrays. EINVAL also for values NULL with n > 0 and for
 * more than CPROTON_METRIC_MAX_VECTOR values. */
#define CPROTON_METRIC_MAX_VECTOR (1u << 24)
CPROTON_API int cproton_metric_add_int_vector(uint64_t scope_id,
                                              const char *name,
                                              const int64_t *values, size_t n);
CPROTON_API int cproton_metric_add_double_vector(uint64_t scope_id,
                                                 const char *name,
                                                 const double *values,
                                                 size_t n);
/* A string value (Proton accepts strings for any metric): it replaces the
 * previous value, whatever the suffix; mixing it with numbers gives EINVAL. */
CPROTON_API int cproton_metric_add_string(uint64_t scope_id, const char *name,
                                          const char *value);

/* Tensor metrics (docs/tensor-metrics.md): values that live in device
 * memory are copied by a small kernel, on the launching stream, into a
 * device buffer of records {slot, value words}; the host drains the buffer
 * at flush time and folds the records here, with the rules above. A slot
 * names where a value lands: the node cproton_metric_add_* would choose for
 * `scope_id` now (CPROTON_CURRENT_OP included), metric `name`, int64
 * (is_double 0) or double bits, and for a vector metric its length (the
 * record then has that many value words). Equal slots are shared and slots
 * live as long as the process, so a CUDA graph that captured a record
 * replays it into the sessions active when the buffer is drained.
 * With no active session `*slot_out` is CPROTON_TENSOR_METRIC_NONE: there
 * is nothing to record (a number would be dropped the same way).
 * Errors: EINVAL (bad or reserved name, a vector of more than
 * CPROTON_METRIC_MAX_VECTOR values), ESTATE (no op open for
 * CPROTON_CURRENT_OP), ENOTFOUND (unknown scope), ELIMIT (too many
 * distinct slots). */
#define CPROTON_TENSOR_METRIC_RECORD_WORDS 2 /* a scalar's record */
#define CPROTON_TENSOR_METRIC_NONE UINT32_MAX
/* A word where a record would start that says "no record from here on": a
 * copy kernel whose record does not fit writes it at its reserved offset. */
#define CPROTON_TENSOR_METRIC_PAD UINT64_MAX
CPROTON_API int cproton_tensor_metric_slot(uint64_t scope_id, const char *name,
                                           int is_double, uint32_t *slot_out);
/* As cproton_tensor_metric_slot for a vector metric of `n_values` values
 * (0: a scalar, as cproton_tensor_metric_slot). */
CPROTON_API int cproton_tensor_metric_slot_vector(uint64_t scope_id,
                                                  const char *name,
                                                  int is_double,
                                                  uint32_t n_values,
                                                  uint32_t *slot_out);
/* As cproton_tensor_metric_slot_vector for a value given while the calling
 * thread's stream is captured into a CUDA graph. While cproton follows
 * Proton 3.9 (cproton_set_proton_compat) the slot is marked captured and
 * never shared with an eager one: each replay's record then lands where
 * that replay's kernels land, <launch context>/<captured_at>/<the slot's
 * path>, as in Proton 3.9, when the CUPTI backend saw the replayed copy
 * kernel (see cproton_tensor_metric_tag); else on the slot's node, counted
 * and warned at the drain. Under Proton 3.6 it is
 * cproton_tensor_metric_slot_vector. Errors: as that function. */
CPROTON_API int cproton_tensor_metric_slot_captured(uint64_t scope_id,
                                                    const char *name,
                                                    int is_double,
                                                    uint32_t n_values,
                                                    uint32_t *slot_out);
/* The calling thread's next kernel launch copies a record of `slot` (a
 * captured slot; any other value, e.g. CPROTON_TENSOR_METRIC_NONE, clears
 * the tag): the graph node that launch creates during a stream capture is
 * remembered as that slot's copy kernel, so that its replays' CUPTI records
 * give its records their places. Set it right before the copy kernel's
 * launch and clear it right after. Any thread (thread-local). */
CPROTON_API void cproton_tensor_metric_tag(uint32_t slot);
/* Forgets the graph-replay places still queued for records of captured
 * slots (see cproton_tensor_metric_slot_captured) and returns how many.
 * Call it after draining every device buffer when one of them dropped
 * records (it was full): the places of the dropped records would otherwise
 * be taken by later records of the same slots, one replay late. The
 * forgotten places are said in a warning. Any thread. */
CPROTON_API size_t cproton_tensor_metric_forget_places(void);
/* Folds `n_words` words of drained records into every active session;
 * `*n_folded` (may be NULL) gets the records folded. Folding stops at a
 * CPROTON_TENSOR_METRIC_PAD word (no error) and at a record naming no slot
 * or running past `n_words` (EPARSE with its word offset: the length of
 * what follows is unknown). A value whose type or length differs from the
 * metric's gives ESTATE / EINVAL after folding the other records.
 * Once a captured slot exists the active sessions' backends are flushed
 * first (their records place graph replays); records of captured slots
 * that find no replay place are added on their slot's node and reported
 * in one warning. */
CPROTON_API int cproton_tensor_metric_fold(const uint64_t *words,
                                           size_t n_words, size_t *n_folded);

/* States: the innermost state of the calling thread becomes the parent frame
 * of every kernel it launches (Proton's `state`). Errors: EINVAL for a bad
 * name, ESTATE for an exit with no state. */
CPROTON_API int cproton_state_enter(const char *name);
CPROTON_API int cproton_state_exit(void);

/* Ops (Proton's enter_op, used by launch hooks): until cproton_op_exit,
 * kernels the calling thread launches land on a node named `name` under the
 * current context (and state) instead of on nodes named after the kernel.
 * Metrics for the op use the scope id CPROTON_CURRENT_OP.
 * Errors: EINVAL (bad name). One op at a time per thread; a new one
 * replaces the old. */
#define CPROTON_CURRENT_OP UINT64_MAX
CPROTON_API int cproton_op_enter(const char *name);
CPROTON_API int cproton_op_exit(void);

/* ---- kernel facts --------------------------------------------------------- */

/* Records a compile fact of kernel `kernel` for the performance advisor
 * (docs/advisor.md): `fact` is one of the "triton.*" names there
 * ("triton.num_warps", "triton.mma", ...); `text` is the value of a text
 * fact ("triton.mma", "triton.remarks", "triton.config"; NULL otherwise)
 * and `value` that of a numeric one. A fact already recorded keeps its
 * first value. Every profile written afterwards carries the kernel's facts
 * on each frame of a kernel of that name. Call once per compiled kernel,
 * not per launch. Returns CPROTON_OK, CPROTON_EINVAL (unknown fact, wrong
 * kind, NULL kernel; message set) or CPROTON_ENOMEM. Any thread. */
CPROTON_API int cproton_kernel_fact(const char *kernel, const char *fact,
                                    int64_t value, const char *text);

/* ---- context sources ---------------------------------------------------- */

/* Interns a frame name ("file:line@function") and gives its id; ids are
 * stable for the life of the process. Hot-path safe after the first call
 * for a name. Errors: EINVAL. */
CPROTON_API int cproton_frame_intern(const char *name, uint32_t *id_out);

/* A context source writes the calling thread's frames as interned ids,
 * outermost first, into `ids` (at most `max`) and returns how many. It may
 * be called on the thread that launches a kernel, with or without the GIL,
 * and must neither block nor call back into cproton except
 * cproton_frame_intern. */
typedef size_t (*cproton_unwind_fn)(void *user, uint32_t *ids, size_t max);

/* Registers the source for context `name` ("python"). Sessions started with
 * that context use it; NULL `fn` unregisters. Errors: EINVAL. */
CPROTON_API int cproton_context_register(const char *name, cproton_unwind_fn fn,
                                         void *user);

/* The configuration table (docs/configuration.md): row `i`'s fields
 * {name, type, default, knob or "", reader, documentation, rank role: "",
 * "rank", "local_rank" or "rank,local_rank"} into `fields`. Errors:
 * ENOTFOUND past the last row. */
CPROTON_API int cproton_config_row(size_t i, const char *fields[7]);

/* The environment value of configuration row `name`, or NULL when unset:
 * how the Python extension and the tools read the environment, so that
 * every variable they read is a row of the table. A name that is not a row
 * is refused: NULL with an EINVAL message (cproton_last_error). The
 * pointer is getenv's (valid until the variable changes). */
CPROTON_API const char *cproton_config_get(const char *name);

#ifdef __cplusplus
}
#endif

/* The other parts of the family: profile reading and instrumentation. */
#include "cproton/instrument.h"
#include "cproton/instrumentation.h"
#include "cproton/output.h"
#include "cproton/profile.h"

#endif
