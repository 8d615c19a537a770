/* cproton/instrumentation.h -- the runtime of the "instrumentation"
 * backend: attaching instrumented kernels' profile buffers to sessions.
 * Included by <cproton/cproton.h>.
 *
 * A front end (cproton's Triton hook, or a native program) instruments PTX
 * with cproton_ptx_instrument (<cproton/instrument.h>), registers each
 * instrumented kernel once, takes a profile buffer for each launch from the
 * device pool, and reports the launch after enqueueing it:
 *
 *   cproton_instr_kernel *k;
 *   cproton_instr_kernel_new("matmul", &layout, &k);     // once per kernel
 *   uint64_t buf;
 *   cproton_instr_alloc(n_ctas * layout.per_cta_bytes, stream, &buf);
 *   cuLaunchKernel(..., params ending with &buf ...);
 *   cproton_instr_launch(k, buf, n_ctas * layout.per_cta_bytes, stream);
 *
 * cproton_instr_launch never synchronises: it enqueues an asynchronous copy
 * of the buffer on the launch's stream and an event; a worker thread waits
 * for the event, decodes the buffer and adds, under kernel -> scope ->
 * child scope, the metrics cycles, normalized_cycles, count and
 * normalized_time (ns) to every session that was active at the launch, and
 * one region event per warp and scope occurrence to trace sessions.
 * Sessions see the results after cproton_session_deactivate/finalize (they
 * flush this backend). */
#ifndef CPROTON_INSTRUMENTATION_H
#define CPROTON_INSTRUMENTATION_H

#include <stddef.h>
#include <stdint.h>

#include "cproton/errors.h"
#include "cproton/export.h"
#include "cproton/instrument.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses a Proton instrumentation mode string, e.g.
 * "default:buffer_type=global:granularity=warp:sampling_strategy=selective:
 * sampling_options=0,4:buffer_size=4096:optimizations=clock32", into pass
 * options (`out` is initialised first). NULL or "" is the default mode.
 * Errors: EINVAL naming the bad key or value. Thread-safe. */
CPROTON_API int cproton_instr_mode_options(const char *mode,
                                           cproton_ptx_options *out);

/* Writes the canonical form of a valid mode string into `buf` (`size`
 * bytes): the mode name, then each option as given, with Proton's
 * lower-case spelling of its value ("GRANULARITY.WARP_GROUP" and
 * "warpgroup" become "warp_group", "buffer_size=+8" becomes
 * "buffer_size=8", blanks around optimizations dropped); NULL or "" gives
 * "default". Python's cproton.mode parses only this form, so this parser
 * decides alone which mode strings are valid. Refused with EINVAL: what
 * cproton_instr_mode_options refuses, which includes empty options
 * ("default:", "default::x=1"), empty keys, and empty values of every key but
 * sampling_options and optimizations (Proton's str(mode) writes "" there
 * for none). ELIMIT: `buf` too small. Thread-safe. */
CPROTON_API int cproton_instr_mode_normalize(const char *mode, char *buf, size_t size);

/* The options of the mode the active instrumentation session was started
 * with (the defaults when none). Thread-safe. Errors: EINVAL for NULL. */
CPROTON_API int cproton_instr_current_options(cproton_ptx_options *out);

/* The decoder flags a mode string implies: CPROTON_DECODE_TIME_SHIFT for
 * `optimizations=time_shift`. Errors: those of cproton_instr_mode_options. */
CPROTON_API int cproton_instr_mode_decode_flags(const char *mode,
                                                unsigned *flags);

/* Where tree-mode per-scope totals are made: the `reduce` key of a mode
 * string (docs/instrumentation-runtime.md, "Decoding").
 * KERNEL: in the instrumented kernel itself (cproton_ptx_options.aggregate:
 * no records, a few hundred bytes of totals come back per launch).
 * DEVICE: records, summed by a reduction kernel on the copy stream.
 * HOST: records, copied back whole and decoded on the CPU.
 * AUTO (the key not given): front ends choose KERNEL for tree profiles when
 * nothing needs records (no trace, no host buffer, no time_shift), else
 * DEVICE; traces always decode records on the host. */
typedef enum cproton_reduce_kind {
  CPROTON_REDUCE_AUTO = 0,
  CPROTON_REDUCE_KERNEL = 1,
  CPROTON_REDUCE_DEVICE = 2,
  CPROTON_REDUCE_HOST = 3
} cproton_reduce_kind;

/* The `reduce` key of `mode` (AUTO when absent). Thread-safe. Errors:
 * those of cproton_instr_mode_options (`*out` is then AUTO). */
CPROTON_API int cproton_instr_mode_reduce_kind(const char *mode, cproton_reduce_kind *out);

/* Whether a mode decodes records of tree-mode launches on the device
 * (*on_device 1: `reduce` is not `host`) or copies them back whole (0).
 * Errors: those of cproton_instr_mode_options. */
CPROTON_API int cproton_instr_mode_reduce(const char *mode, int *on_device);

/* Whether kernels compiled for `mode` sum per-scope totals in the kernel
 * (*out 1) rather than store records: `reduce` unset or `kernel`, a tree
 * profile (is_trace 0), no host buffer (host_buffer 0) and no
 * `optimizations=time_shift`. The one copy of the AUTO rule above; the
 * Python hook asks it too. Errors: those of cproton_instr_mode_options
 * (`*out` is then 0). */
CPROTON_API int cproton_instr_mode_sums_in_kernel(const char *mode, int is_trace,
                                                  int host_buffer, int *out);

/* Everything a mode string says for one session, from one parse. */
typedef struct cproton_instr_mode_info {
  cproton_ptx_options options; /* as cproton_instr_mode_options */
  cproton_reduce_kind reduce;  /* as cproton_instr_mode_reduce_kind */
  unsigned decode_flags;       /* as cproton_instr_mode_decode_flags */
  /* The AUTO rule (cproton_instr_mode_sums_in_kernel) for this session's
   * data, without and with the host buffer. */
  int sums_in_kernel, sums_in_kernel_host_buffer;
  char canonical[2048]; /* as cproton_instr_mode_normalize */
} cproton_instr_mode_info;

/* Parses `mode` once for a session recording a trace (is_trace 1) or a
 * tree, filling `out`: the instrumentation backend's own parse, for a mode
 * without a session (a session's is read with cproton_session_instr_mode). Errors: those of
 * cproton_instr_mode_options; EINVAL for reduce=kernel with a trace or
 * with optimizations=time_shift, which need records; ELIMIT for a
 * canonical form over 2047 bytes. Thread-safe. */
CPROTON_API int cproton_instr_mode_parse(const char *mode, int is_trace,
                                         cproton_instr_mode_info *out);

/* The parsed mode of instrumentation session `session`: what its backend's
 * one parse made when the session started (the same function as
 * cproton_instr_mode_parse, for the session's data kind), read, not parsed
 * again. Errors: ENOTFOUND; EINVAL when the session's backend does not
 * instrument kernels. */
CPROTON_API int cproton_session_instr_mode(int session,
                                           cproton_instr_mode_info *out);

/* A registered instrumented kernel: its name and buffer layout (copied). */
typedef struct cproton_instr_kernel cproton_instr_kernel;

/* Registers kernel `name` with `layout` (scope names and parents are
 * copied). Kernels live until cproton_instr_kernel_free, which must not
 * run while launches of the kernel are pending (call after a flush).
 * Errors: EINVAL, ENOMEM. */
CPROTON_API int cproton_instr_kernel_new(const char *name,
                                         const cproton_buffer_layout *layout,
                                         cproton_instr_kernel **out);
CPROTON_API void cproton_instr_kernel_free(cproton_instr_kernel *k);

/* A device buffer of at least `size` bytes from the pool, in the current
 * CUDA context, for one launch on `stream` (a CUstream; 0 = default). Its
 * first `size` bytes are zeroed on that stream (so a CTA that never reached
 * its finalize is seen as missing, not as an earlier launch's data). It
 * returns to the pool after its launch's records were copied back (or at
 * cproton_instr_release). Errors: ENODEVICE, EBACKEND (the driver's
 * message), ENOMEM, ELIMIT (1,024 buffers in flight). */
CPROTON_API int cproton_instr_alloc(size_t size, uint64_t stream,
                                    uint64_t *dptr_out);

/* Gives back a buffer whose launch never happened. Errors: ENOTFOUND. */
CPROTON_API int cproton_instr_release(uint64_t dptr);

/* Reports that kernel `k` was just enqueued on `stream` (a CUstream; 0 for
 * the default stream) with buffer `dptr` of `size` bytes. Captures the
 * calling thread's context, enqueues the copy-back; never blocks on the
 * GPU. Errors: ENOTFOUND (dptr not from cproton_instr_alloc), EBACKEND. */
CPROTON_API int cproton_instr_launch(const cproton_instr_kernel *k,
                                     uint64_t dptr, size_t size,
                                     uint64_t stream);

/* Decodes a buffer the caller already copied to the host and delivers it
 * to the active sessions under the calling thread's context, as if it came
 * from a launch of `k` (native programs that manage their own buffers).
 * Errors: those of cproton_buffer_decode. */
CPROTON_API int cproton_instr_record_host(const cproton_instr_kernel *k,
                                          const void *data, size_t size,
                                          uint32_t device_id);

/* Copies `size` bytes of profile buffer `dptr` into `dst` after the work
 * queued on `stream` so far (the launch that wrote it), waiting for it:
 * the synchronous read behind Python's `InstrumentationHook.host_buffer`,
 * a debugging aid, never on the normal launch path. Errors: ENOTFOUND
 * (not a buffer in use), EINVAL, EBACKEND. */
CPROTON_API int cproton_instr_read(uint64_t dptr, size_t size, uint64_t stream,
                                   void *dst);

/* Waits for every pending launch to be decoded and delivered. */
CPROTON_API int cproton_instr_flush(void);

/* Counters since start: launches reported, decoded, records dropped by
 * full circular segments, unpaired records, CTAs with bad headers; launches
 * reduced on the device, of those checked against the host decoder
 * (CPROTON_INSTR_REDUCE_CHECK=1) and found to differ; `summed`, launches of
 * kernels that sum in the kernel (their slots read, no records; counted in
 * `decoded` too, or in `failed` when their slots were refused). Where a launch's time
 * goes (ns, summed over launches): `alloc_wait_ns` the launching thread
 * waited for a pool buffer (back-pressure; `alloc_waits` launches waited),
 * `inflight_ns` from the launch call until a decoder thread saw its
 * copy-back done (the GPU's kernel, reduction and copy, plus queueing),
 * `decode_ns` decoder threads spent turning the buffer or its reduced
 * totals into metrics. */
typedef struct cproton_instr_stats {
  uint64_t launches, decoded, dropped, unpaired, bad_ctas, failed;
  uint64_t reduced, reduce_checked, reduce_mismatches;
  uint64_t alloc_waits, alloc_wait_ns, inflight_ns, decode_ns;
  uint64_t summed;
} cproton_instr_stats;
/* Errors: EINVAL for NULL `out`. */
CPROTON_API int cproton_instr_get_stats(cproton_instr_stats *out);

#ifdef __cplusplus
}
#endif

#endif
