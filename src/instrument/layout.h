/* instrument/layout.h -- the profile-buffer layout, version 1: the one
 * definition shared by the PTX lowering (which writes it) and the decoder in
 * backend/instrumentation (which reads it). Header only, libc only.
 *
 * The buffer of one launch is an array of CTA slices; CTA i (linear id
 * ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z)) owns bytes
 * [i * per_cta_bytes, (i + 1) * per_cta_bytes). All fields little-endian.
 *
 *   CTA slice (per_cta_bytes = header_bytes + n_units * segment_bytes)
 *   +0   u32 magic      0x42525043  "CPRB" in memory order
 *   +4   u16 version    1
 *   +6   u8  counter    cproton_counter of the records
 *   +7   u8  flags      bit0 shared buffer, bits 1-4 granularity
 *   +8   u32 cta_id     linear CTA id (checks the slice index)
 *   +12  u32 sm_id      %smid of thread 0
 *   +16  u64 start_time %globaltimer at kernel entry (thread 0)
 *   +24  u64 start_ctr  counter at kernel entry (thread 0)
 *   +32  u64 fin_time   %globaltimer when thread 0 began finalize
 *   +40  u64 end_time   %globaltimer after thread 0's copy-out
 *   +48  u32 n_units    units with a segment (checks the layout)
 *   +52  u32 seg_bytes  segment size (checks the layout)
 *   +56  u32 n_active   warps launched: ceil(ntid.x*ntid.y*ntid.z / 32)
 *   +60  u32 fin_ctr    counter units from start_ctr to fin_time (low 32
 *                       bits), read by thread 0 with fin_time: the clock
 *                       measurement; 0 in buffers of older cproton
 *   +64  u32 count[n_units]  records unit u wrote; grows past the capacity
 *        ... zero padding to header_bytes (a multiple of 16)
 *   +header_bytes  segment[0] | segment[1] | ... (segment_bytes each)
 *
 *   record (u64): bit 63 = 1 end / 0 start, bits 48..62 scope id,
 *                 bits 0..47 counter (low 32 bits only for CLOCK)
 *
 * A segment is circular: record k of a unit lives at byte (8k) mod
 * segment_bytes, so with count c > capacity the newest `capacity` records
 * survive and c - capacity were dropped. The header is written last by
 * thread 0, so a slice whose magic is missing was never finalized.
 */
#ifndef CP_INSTRUMENT_LAYOUT_H
#define CP_INSTRUMENT_LAYOUT_H

#include <stdint.h>

#define CP_LAYOUT_MAGIC 0x42525043u
#define CP_LAYOUT_VERSION 1u
#define CP_LAYOUT_FIXED_HEADER 64u
#define CP_LAYOUT_RECORD_BYTES 8u
#define CP_LAYOUT_MIN_SEGMENT 16u
#define CP_LAYOUT_MAX_UNITS 32u
#define CP_LAYOUT_MAX_SCOPES 32767u
#define CP_LAYOUT_SCOPE_SHIFT 48
#define CP_LAYOUT_END_BIT 63
#define CP_LAYOUT_FLAG_SHARED 1u

/* Header field offsets. */
enum {
  CP_HDR_MAGIC = 0,
  CP_HDR_VERSION = 4,
  CP_HDR_COUNTER = 6,
  CP_HDR_FLAGS = 7,
  CP_HDR_CTA = 8,
  CP_HDR_SM = 12,
  CP_HDR_START_TIME = 16,
  CP_HDR_START_CTR = 24,
  CP_HDR_FIN_TIME = 32,
  CP_HDR_END_TIME = 40,
  CP_HDR_N_UNITS = 48,
  CP_HDR_SEG_BYTES = 52,
  CP_HDR_N_ACTIVE = 56,
  CP_HDR_FIN_CTR = 60,
  CP_HDR_COUNTS = 64
};

/* The device reduction's result (backend/instrumentation/reduce.cu): u64
 * words, CP_REDUCE_FIXED totals, then cycles, counts and unpaired records
 * per scope (n_scopes each). CTAS counts good slices; the clock pair sums,
 * over CTAs, thread 0's counter span (fin_ctr) and globaltimer span from
 * entry to finalize (buffers without fin_ctr: over CTAs with a paired end,
 * the furthest end instead of fin_ctr). */
enum {
  CP_REDUCE_CTAS = 0,
  CP_REDUCE_BAD_CTAS = 1,
  CP_REDUCE_DROPPED = 2,
  CP_REDUCE_UNPAIRED = 3,
  CP_REDUCE_CLOCK_CYCLES = 4,
  CP_REDUCE_CLOCK_NS = 5,
  CP_REDUCE_FIXED = 8
};

/* In-kernel sums (cproton_ptx_options.aggregate; instrument/lower_agg.c):
 * no records. Each recording unit keeps, in registers, per scope the cycles
 * of its paired occurrences, their count and its unpaired markers, and at
 * its exit adds them with `red.global.add.u64` to one of CP_AGG_SLOTS slots
 * of the launch's buffer, slot (linear CTA id mod CP_AGG_SLOTS) when the
 * grid has at least CP_AGG_SLOTS CTAs, else the CTA's own. A slot holds
 * cp_layout_sum_words(n_scopes) u64 words in the CP_REDUCE_* order above
 * (the device reduction's result, so both take the same path to the
 * profile), padded to cp_layout_sum_slot_bytes: CTAS counts CTAs whose
 * warp 0 finalized; DROPPED stays 0 (nothing is stored); the clock pair
 * sums, per CTA, warp 0's counter and %globaltimer spans from kernel entry
 * to its exit. per_cta_bytes is one slot, so a buffer of grid x
 * per_cta_bytes holds every slot the grid uses. The runtime zeroes the
 * slots before a launch, copies back min(grid, CP_AGG_SLOTS) slots after
 * it and sums them on the host. Each recording warp adds its words with one
 * lane-parallel atomic into its slot's 128-byte lines, and striping over
 * slots spreads the atomics of large grids over many lines (a few hot
 * lines slowed a 64M-element add by a third on an H200). At most
 * CP_AGG_MAX_SCOPES scopes (each takes six registers for the whole kernel,
 * and a slot's words must fit a warp's 32 lanes); kernels with more, or
 * with events, keep records. */
#define CP_AGG_SLOTS 256u
#define CP_AGG_MAX_SCOPES 8u

/* u64 words of a device-reduction result or an in-kernel sums slot. */
static inline uint32_t cp_layout_sum_words(uint32_t n_scopes) {
  return CP_REDUCE_FIXED + 3u * n_scopes;
}

/* Bytes of one in-kernel sums slot: its words, padded to whole 128-byte
 * lines (one L2 request per line for a warp's lane-parallel atomic). */
static inline uint32_t cp_layout_sum_slot_bytes(uint32_t n_scopes) {
  return (8u * cp_layout_sum_words(n_scopes) + 127u) & ~127u;
}

/* The most bytes a launch's slots take (CP_AGG_SLOTS slots of a kernel of
 * CP_AGG_MAX_SCOPES scopes: 32 words, 256 bytes each): the runtime keeps
 * this much at the start of every free pool buffer zero, whatever kernel
 * used it last. */
#define CP_AGG_MAX_BYTES (CP_AGG_SLOTS * 256u)

/* Bytes of header for `n_units` units: fixed part plus counts, rounded up
 * to 16 so that segments allow 16-byte vector copies. */
static inline uint32_t cp_layout_header_bytes(uint32_t n_units) {
  return (CP_LAYOUT_FIXED_HEADER + 4u * n_units + 15u) & ~15u;
}

/* The 16-bit tag stored in bits 48..63 of a record. */
static inline uint32_t cp_layout_tag(uint32_t scope, int is_end) {
  return (is_end ? 0x8000u : 0u) | (scope & 0x7fffu);
}

/* Warps per unit of each cproton_granularity (index = the enum value):
 * warp, warp group, CTA (32: thread 0 records; at most 32 warps), warp_2,
 * warp_4, warp_8, warp_group_2, warp_group_4, warp_group_8. Always a power
 * of two, so a unit is (thread id >> (5 + log2 warps)). */
#define CP_LAYOUT_N_GRANULARITIES 9u
static inline uint32_t cp_layout_unit_warps(uint32_t granularity) {
  static const uint8_t warps[CP_LAYOUT_N_GRANULARITIES] = {1, 4, 32, 2, 4, 8, 8, 16, 32};
  return granularity < CP_LAYOUT_N_GRANULARITIES ? warps[granularity] : 1u;
}

/* Number of counter bits a record keeps for `counter`. */
static inline unsigned cp_layout_counter_bits(uint32_t counter) {
  return counter == 0 ? 32u : 48u;
}

#endif
