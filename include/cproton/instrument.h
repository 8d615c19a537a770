/* cproton/instrument.h -- intra-kernel instrumentation: the PTX pass and the
 * profile-buffer decoder. Included by <cproton/cproton.h>.
 *
 * The pass is a pure function of PTX text: it finds record markers
 * (`// @cproton record start|end <name>`, emitted by <cproton/device.h> or
 * by cproton.language in Triton), gives every scope name an id, and lowers
 * each marker into a counter read plus a single-lane 8-byte store into the
 * warp's segment of a per-CTA profile buffer. The buffer is the kernel's LAST
 * .param (a u64 pointer): CTA i writes bytes [i * per_cta_bytes,
 * (i + 1) * per_cta_bytes). A kernel without markers is left byte for byte
 * as it was. docs/instrumentation.md draws the buffer layout.
 *
 * Typical use:
 *
 *   cproton_ptx_options o;
 *   cproton_ptx_options_init(&o);
 *   o.buffer = CPROTON_BUFFER_GLOBAL;
 *   cproton_ptx *p;
 *   if (cproton_ptx_instrument(ptx, strlen(ptx), &o, &p) != CPROTON_OK)
 *     fprintf(stderr, "%s\n", cproton_last_error());
 *   size_t n;
 *   const char *out = cproton_ptx_text(p, &n);      // load with cuModuleLoadData
 *   cproton_buffer_layout lay;
 *   cproton_ptx_kernel_layout(p, 0, &lay);          // lay.per_cta_bytes ...
 *   // launch with a buffer of grid_ctas * lay.per_cta_bytes as last param,
 *   // copy it back, then:
 *   cproton_decoded *d;
 *   cproton_buffer_decode(host_copy, size, &lay, 0, &d);
 *   cproton_decoded_free(d);
 *   cproton_ptx_free(p);
 */
#ifndef CPROTON_INSTRUMENT_H
#define CPROTON_INSTRUMENT_H

#include <stddef.h>
#include <stdint.h>

#include "cproton/errors.h"
#include "cproton/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the pass ------------------------------------------------------------ */

/* What each record's counter field holds. Values are stored in the buffer
 * header, so they never change. */
typedef enum cproton_counter {
  CPROTON_COUNTER_CLOCK = 0,      /* %clock, 32-bit SM cycles */
  CPROTON_COUNTER_CLOCK64 = 1,    /* %clock64, SM cycles (48 bits kept) */
  CPROTON_COUNTER_GLOBALTIMER = 2 /* %globaltimer, ns (48 bits kept) */
} cproton_counter;

/* Where records live while the kernel runs. SHARED: a static .shared array
 * the pass declares, copied to the global buffer at each exit. GLOBAL:
 * records go straight to the global buffer. */
typedef enum cproton_buffer_kind {
  CPROTON_BUFFER_SHARED = 0,
  CPROTON_BUFFER_GLOBAL = 1
} cproton_buffer_kind;

/* Which threads record. A unit is one warp, N warps (WARP_N), one warp
 * group (4 warps), N warp groups (WARPGROUP_N: 4N warps) or the whole CTA;
 * lane 0 of the unit's first warp records (thread 0 for CTA). Proton's
 * granularities of the same names ("recorded for every N warp groups").
 * Values 0-2 keep their meaning from earlier versions. */
typedef enum cproton_granularity {
  CPROTON_GRANULARITY_WARP = 0,
  CPROTON_GRANULARITY_WARPGROUP = 1,
  CPROTON_GRANULARITY_CTA = 2,
  CPROTON_GRANULARITY_WARP_2 = 3,
  CPROTON_GRANULARITY_WARP_4 = 4,
  CPROTON_GRANULARITY_WARP_8 = 5,
  CPROTON_GRANULARITY_WARPGROUP_2 = 6,
  CPROTON_GRANULARITY_WARPGROUP_4 = 7,
  CPROTON_GRANULARITY_WARPGROUP_8 = 8
} cproton_granularity;

/* What happens when a unit writes more records than its segment holds
 * (Proton's buffer_strategy). CIRCULAR: the segment wraps and the newest
 * records overwrite the oldest (counted as dropped). FLUSH: Proton's "flush
 * the buffer instead of overwriting it"; cproton cannot flush in the middle
 * of a kernel (no device-to-host channel while it runs), so FLUSH writes
 * records straight to the global buffer that the runtime flushes to the host
 * after every launch, and sizes it to keep every record: loop-free kernels
 * get one slot per marker, others buffer_size or 16 KiB per unit (Proton's
 * global default). A unit that still writes more wraps as CIRCULAR does, and
 * the overwritten records are counted (docs/instrumentation-runtime.md). */
typedef enum cproton_buffer_strategy {
  CPROTON_STRATEGY_CIRCULAR = 0,
  CPROTON_STRATEGY_FLUSH = 1
} cproton_buffer_strategy;

typedef struct cproton_ptx_options {
  cproton_counter counter;         /* default CLOCK64 */
  cproton_buffer_kind buffer;      /* default SHARED */
  cproton_granularity granularity; /* default WARP */
  /* Bytes of records per CTA (all units). Each unit's segment is the
   * largest power of two <= buffer_size / units, at least 16. 0: global
   * buffers get 4096 bytes per unit; shared buffers get up to 1024 bytes
   * per unit, less when shared memory is short (see the two fields below). */
  uint32_t buffer_size;
  /* Units that record, as a bit mask over unit indices (bit u = unit u);
   * 0 means every unit. Only sampled units get a segment. */
  uint32_t sample_mask;
  /* Warps per CTA; 0 takes it from the kernel's .reqntid / .maxntid
   * (an error when neither is present). At most 32. */
  uint32_t num_warps;
  /* Shared memory the kernel already uses beyond its static .shared
   * declarations (Triton's dynamic `shared`), and the per-block limit
   * (0: 232448, sm_90's 227 KiB). Only used to size a default shared
   * buffer. */
  uint32_t existing_shared_bytes;
  uint32_t max_shared_bytes;
  /* Default CIRCULAR. FLUSH implies a global buffer (`buffer` is not used)
   * and the larger default segment above. */
  cproton_buffer_strategy strategy;
  /* Non-zero: sum per-scope cycles, counts and unpaired markers inside the
   * kernel (registers, then one atomic add per unit and value at its exit)
   * instead of storing records: per-scope totals for tree profiles with no
   * profile buffer to copy back or decode (docs/instrumentation-runtime.md,
   * "In-kernel sums"). No records means no traces, no host buffer and no
   * time_shift. Kernels with events (they pair across warps) or more than
   * 8 scopes keep records; their layout's `aggregate` says which applied
   * (no warning is set for that).
   * `buffer`, `buffer_size` and `strategy` are then not used. Default 0. */
  int aggregate;
} cproton_ptx_options;

/* Fills `o` with the defaults above. Always call before setting fields.
 * Errors: EINVAL for NULL `o`. */
CPROTON_API int cproton_ptx_options_init(cproton_ptx_options *o);

/* The result of the pass: instrumented text plus, per instrumented kernel,
 * the scope table and buffer layout. Opaque; free with cproton_ptx_free. */
typedef struct cproton_ptx cproton_ptx;

/* Instruments `ptx` (`size` bytes, need not be NUL-terminated). `o` may be
 * NULL for defaults. On success `*out` owns a new result. Errors: EINVAL
 * (bad arguments or options; the message says which), EPARSE (malformed PTX
 * or markers: unpaired or crossing start/end, named by kernel, scope and
 * line), EUNSUPPORTED (a marker outside a kernel entry, a last parameter
 * that is not a 64-bit pointer, PTX that is already instrumented), ELIMIT
 * (too many scopes, too large input, not enough shared memory), ENOMEM.
 * Thread-safe: no global state. */
CPROTON_API int cproton_ptx_instrument(const char *ptx, size_t size,
                                       const cproton_ptx_options *o,
                                       cproton_ptx **out);

/* The instrumented text (NUL-terminated; `size_out` may be NULL). Owned by
 * `p`. When no kernel has markers it equals the input byte for byte. */
CPROTON_API const char *cproton_ptx_text(const cproton_ptx *p,
                                         size_t *size_out);

/* Number of kernels that were instrumented (entries with markers). */
CPROTON_API size_t cproton_ptx_n_kernels(const cproton_ptx *p);

/* Name of instrumented kernel `k` (< n_kernels), owned by `p`; NULL when out
 * of range. */
CPROTON_API const char *cproton_ptx_kernel_name(const cproton_ptx *p,
                                                size_t k);

/* Per-kernel statistics of the pass. */
typedef struct cproton_ptx_stats {
  uint32_t n_records;       /* markers lowered */
  uint32_t n_exits;         /* ret/exit sites finalized */
  uint32_t record_instrs;   /* PTX instructions added per record */
  uint32_t prologue_instrs; /* PTX instructions in the prologue */
  uint32_t finalize_instrs; /* PTX instructions of the kernel's one shared
                               finalize block (static); each exit adds a
                               branch to it */
} cproton_ptx_stats;

/* ---- the buffer layout (shared by the pass and the decoder) -------------- */

/* scope_parents value of an event (Proton's pl.allocate_event): a named
 * region outside the scope nesting whose start and end may be recorded in
 * different basic blocks, loop iterations or warps. The decoder pairs an
 * event's records per unit first (a start then the next end), then the
 * leftovers across the units of a CTA in time order (each end with the
 * earliest open start before it); it is a top-level node of the profile. */
#define CPROTON_SCOPE_PARENT_EVENT (-2)

/* Everything the decoder needs to read a kernel's profile buffer. Filled by
 * cproton_ptx_kernel_layout; a caller that keeps the values elsewhere (a
 * Python extension) may fill it by hand. Strings and arrays are borrowed. */
typedef struct cproton_buffer_layout {
  uint32_t per_cta_bytes;  /* bytes per CTA slice (multiple of 16) */
  uint32_t header_bytes;   /* CTA header + per-unit counts, multiple of 16 */
  uint32_t n_units;        /* units with a segment per CTA */
  uint32_t segment_bytes;  /* bytes per unit segment (power of two) */
  uint32_t counter;        /* a cproton_counter */
  uint32_t granularity;    /* a cproton_granularity */
  uint32_t buffer;         /* a cproton_buffer_kind */
  uint32_t n_scopes;       /* scope ids are 0 .. n_scopes-1 */
  const char *const *scope_names; /* n_scopes names */
  /* n_scopes parent ids, -1 = top, CPROTON_SCOPE_PARENT_EVENT = an event;
   * may be NULL */
  const int32_t *scope_parents;
  /* unit_warp[u]: the first warp of unit u (its recording warp) */
  uint8_t unit_warp[32];
  /* Non-zero: the kernel sums in the kernel (cproton_ptx_options.aggregate)
   * and writes no records: per_cta_bytes is one slot of per-scope totals,
   * header_bytes and segment_bytes are 0, and the buffer is not decodable
   * by cproton_buffer_decode (the runtime reads the slots). */
  uint32_t aggregate;
} cproton_buffer_layout;

/* Fills `lay` for kernel `k`; pointers stay valid while `p` lives.
 * Errors: EINVAL (NULL or k out of range). */
CPROTON_API int cproton_ptx_kernel_layout(const cproton_ptx *p, size_t k,
                                          cproton_buffer_layout *lay);

/* Fills `st` for kernel `k`. Errors: EINVAL. */
CPROTON_API int cproton_ptx_kernel_stats(const cproton_ptx *p, size_t k,
                                         cproton_ptx_stats *st);

/* A warning about kernel `k`, or NULL: set when the pass could not follow
 * the kernel's control flow (e.g. brx.idx) and checked scope nesting in text
 * order instead; names the line and the construct. The library does not
 * print it: callers should (cproton-instrument and the Triton hook do).
 * Valid while `p` lives. */
CPROTON_API const char *cproton_ptx_kernel_warning(const cproton_ptx *p, size_t k);

/* Frees a result; NULL is fine. */
CPROTON_API void cproton_ptx_free(cproton_ptx *p);

/* ---- the decoder ----------------------------------------------------------- */

/* Decoded profile of one launch. Opaque; free with cproton_decoded_free. */
typedef struct cproton_decoded cproton_decoded;

/* Flags for cproton_buffer_decode. */
#define CPROTON_DECODE_SKIP_BAD_CTAS 1u /* skip CTAs with a bad header */
/* Aggregate only: per-scope totals, per-CTA headers and the dropped and
 * unpaired totals, but no per-unit entries (n_warps is 0) and no events.
 * One streaming pass over the surviving records that stores nothing per
 * record or unit: what tree-mode profiles need. */
#define CPROTON_DECODE_NO_EVENTS 2u
/* Proton's time_shift: take the cost of the instrumentation itself out of
 * the timeline. Each record costs CPROTON_TIME_SHIFT_CYCLES on the SM (the
 * counter read and store), so the k-th surviving record of a unit (k from
 * 1) moves k x that cost earlier; an occurrence shorter than the shift
 * keeps half the cost as its duration, as Proton does. Counters in cycles
 * only (no effect on GLOBALTIMER). */
#define CPROTON_DECODE_TIME_SHIFT 4u
#define CPROTON_TIME_SHIFT_CYCLES 7

/* Decodes a profile buffer copied back from the device: `size` must be a
 * whole number of CTA slices. Per unit it reads the record count, works out
 * how many records the circular segment overwrote, pairs start/end records
 * (innermost first) and sums per-scope cycles. Errors: EINVAL (NULL
 * arguments, an inconsistent layout), EPARSE (a size that is not a multiple
 * of per_cta_bytes, a bad magic, version or header field, a scope id beyond
 * n_scopes: the message names the CTA and byte offset; with
 * CPROTON_DECODE_SKIP_BAD_CTAS, CTAs with a bad header are counted and
 * skipped instead), ENOMEM. `layout` is only read during the call; scope
 * names are copied. Thread-safe. Not for a launch callback: it allocates. */
CPROTON_API int cproton_buffer_decode(const void *data, size_t size,
                                      const cproton_buffer_layout *layout,
                                      unsigned flags, cproton_decoded **out);

/* Per-scope totals over every CTA and unit. `cycles` is in counter units
 * (ns for GLOBALTIMER). normalized_cycles = cycles / (units * CTAs), as in
 * Proton's tree. */
typedef struct cproton_decoded_scope {
  const char *name;
  int32_t parent; /* -1 for a top-level scope */
  uint64_t cycles;
  uint64_t count; /* paired occurrences */
  double normalized_cycles;
  /* surviving records of this scope that found no partner (their partner
   * was overwritten, never written, or crossed by another scope) */
  uint64_t unpaired;
} cproton_decoded_scope;

/* One CTA's header. Times are %globaltimer ns; start_counter is the
 * counter read at kernel entry by thread 0. */
typedef struct cproton_decoded_cta {
  uint32_t cta_id;
  uint32_t sm_id;
  uint32_t n_active_warps;
  uint64_t start_time;
  uint64_t start_counter;
  uint64_t finalize_time; /* when thread 0 began the finalize */
  uint64_t end_time;      /* after thread 0's copy-out */
  /* the latest paired end (counter units after start_counter) of any unit
   * of the CTA, 0 when none */
  int64_t last_end;
  /* counter units from start_counter to finalize_time, read by thread 0
   * together with finalize_time: with finalize_time - start_time it
   * measures the SM clock of the launch (one thread, one interval, two
   * clocks). 0 in buffers of cproton before it, which measured last_end
   * against that interval instead (biased high: other warps end after
   * thread 0's finalize). */
  uint32_t finalize_counter;
} cproton_decoded_cta;

/* One paired scope occurrence. start/end are counter units relative to the
 * CTA's start_counter (unwrapped along the unit's records; slightly
 * negative when a warp recorded before thread 0 read start_counter). depth
 * is 0 for an occurrence with no enclosing open scope. */
typedef struct cproton_decoded_event {
  uint32_t scope;
  uint32_t depth;
  int64_t start;
  int64_t end;
  /* the warp (first warp of its unit) that recorded the end: the holding
   * warp's own for scope occurrences; for a pl.start_event/end_event pair
   * the end's, which differs when another warp ended it (added after
   * cproton 0.1.0: the struct grew, so rebuild code that indexes events) */
  uint32_t end_warp;
  uint32_t reserved; /* 0 */
} cproton_decoded_event;

/* One recording unit of one CTA. */
typedef struct cproton_decoded_warp {
  uint32_t cta;        /* index into the CTAs of this result */
  uint32_t cta_id;
  uint32_t sm_id;
  uint32_t warp;       /* first warp of the unit */
  uint32_t unit;
  uint64_t n_written;  /* records the unit wrote (its stored count) */
  uint64_t n_dropped;  /* overwritten by the circular segment */
  uint32_t n_unpaired; /* surviving records that found no partner */
  size_t n_events;
  const cproton_decoded_event *events; /* owned by the result */
} cproton_decoded_warp;

CPROTON_API size_t cproton_decoded_n_scopes(const cproton_decoded *d);
CPROTON_API size_t cproton_decoded_n_ctas(const cproton_decoded *d);
CPROTON_API size_t cproton_decoded_n_warps(const cproton_decoded *d);
/* CTAs skipped under CPROTON_DECODE_SKIP_BAD_CTAS. */
CPROTON_API size_t cproton_decoded_n_bad_ctas(const cproton_decoded *d);
/* Totals over all units. */
CPROTON_API uint64_t cproton_decoded_n_dropped(const cproton_decoded *d);
CPROTON_API uint64_t cproton_decoded_n_unpaired(const cproton_decoded *d);

/* Copy entry `i` into `*out`; strings and event arrays stay owned by `d`.
 * Errors: EINVAL (NULL or out of range). */
CPROTON_API int cproton_decoded_get_scope(const cproton_decoded *d, size_t i,
                                      cproton_decoded_scope *out);
CPROTON_API int cproton_decoded_get_cta(const cproton_decoded *d, size_t i,
                                        cproton_decoded_cta *out);
CPROTON_API int cproton_decoded_get_warp(const cproton_decoded *d, size_t i,
                                     cproton_decoded_warp *out);

/* Frees a decoded result; NULL is fine. */
CPROTON_API void cproton_decoded_free(cproton_decoded *d);

/* Re-encodes a profile buffer in the binary layout of Proton's
 * `InstrumentationHook.host_buffer` (a 40-byte header with the sampled
 * unit ids, then per CTA a 0xdeadbeef preamble, ids, times, per-warp word
 * counts and 8-byte records with 8-bit scope ids and 43-bit counters; see
 * docs/instrumentation-runtime.md), for tools written against Proton's
 * host buffer. `total_units` is the kernel's warp count. Segments hold
 * the surviving records oldest first; a CTA that never finalized is a zero
 * block. `*out` is freed with cproton_free. Errors: EINVAL, EPARSE (size
 * not a whole number of slices), EUNSUPPORTED (more than 256 scopes),
 * ELIMIT (a payload over 4 GiB), ENOMEM. */
CPROTON_API int cproton_buffer_to_proton(const void *data, size_t size,
                                         const cproton_buffer_layout *layout,
                                         uint32_t total_units, void **out,
                                         size_t *out_size);

#ifdef __cplusplus
}
#endif

#endif
