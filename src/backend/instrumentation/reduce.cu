/* backend/instrumentation/reduce.cu -- the device-side reduction of a
 * profile buffer (layout: instrument/layout.h) into the per-launch totals
 * that tree profiles need (CP_REDUCE_* in layout.h), so that a launch
 * copies back a few hundred bytes instead of its whole buffer.
 *
 * Source of reduce.ptx, which is checked in and embedded in the library
 * (the build needs no nvcc): regenerate with scripts/gen-reduce-ptx.sh;
 * ctest reduce_ptx_current checks that the two match. Loaded with
 * cuModuleLoadData by runtime_reduce.c and run on the copy stream after
 * the user's kernel.
 *
 * Invariant: the result equals what cproton_buffer_decode (decode.c, the
 * reference) computes from the same buffer with CPROTON_DECODE_NO_EVENTS |
 * CPROTON_DECODE_SKIP_BAD_CTAS: the same header checks, the same pairing
 * (innermost first, CP_DECODE_MAX_DEPTH open scopes), the same circular-
 * segment arithmetic, the same integer sums. Any change to one is a change
 * to the other; the GPU test (CPROTON_INSTR_REDUCE_CHECK=1) diffs them.
 *
 * One warp per CTA slice, lane u pairs unit u (at most 32 units); warps
 * stride over the slices; a block sums into shared memory and adds its
 * totals to the result with one global atomic per non-zero entry. */
#include "instrument/layout.h"

#define CP_REDUCE_DEPTH 64 /* = CP_DECODE_MAX_DEPTH (decode.h) */

typedef unsigned long long u64;
typedef long long i64;

struct cp_reduce_params {
  u64 buf;    /* device profile buffer */
  u64 out;    /* CP_REDUCE_FIXED + 3 * n_scopes u64, zeroed */
  u64 n_ctas; /* slices in buf */
  i64 shift;  /* time_shift cycles per record, else 0 */
  unsigned per_cta_bytes, header_bytes, n_units, segment_bytes;
  unsigned counter, n_scopes;
  unsigned char unit_warp[32];
};

__device__ static unsigned ld32(const unsigned char *p) { return *(const unsigned *)p; }
__device__ static u64 ld64(const unsigned char *p) { return *(const u64 *)p; }

/* The header checks of decode.c's check_cta; 1 when the slice is good. */
__device__ static int cta_ok(const unsigned char *p, u64 i, const cp_reduce_params &r) {
  unsigned w = ld32(p + CP_HDR_VERSION); /* version | counter << 16 | flags << 24 */
  return ld32(p + CP_HDR_MAGIC) == CP_LAYOUT_MAGIC && (w & 0xffffu) == CP_LAYOUT_VERSION &&
         ((w >> 16) & 0xffu) == r.counter && ld32(p + CP_HDR_N_UNITS) == r.n_units &&
         ld32(p + CP_HDR_SEG_BYTES) == r.segment_bytes && (u64)ld32(p + CP_HDR_CTA) == i &&
         ld32(p + CP_HDR_N_ACTIVE) <= 32u;
}

/* A block's running totals in shared memory: CP_REDUCE_FIXED counters,
 * then cycles, counts and unpaired per scope. */
struct totals {
  u64 *fixed, *cycles, *counts, *unpaired;
};

/* Per-lane accumulation of paired occurrences: runs of one scope stay in
 * registers and reach shared memory when the scope changes. */
struct run {
  unsigned scope;
  u64 cycles, count;
};

__device__ static void run_flush(run &a, const totals &t) {
  if (a.count) {
    atomicAdd(&t.cycles[a.scope], a.cycles);
    atomicAdd(&t.counts[a.scope], a.count);
  }
  a.count = 0;
  a.cycles = 0;
}

__device__ static void run_add(run &a, const totals &t, unsigned scope, i64 start, i64 end) {
  if (a.count && a.scope != scope)
    run_flush(a, t);
  a.scope = scope;
  a.cycles += end > start ? (u64)(end - start) : 0ull;
  a.count++;
}

/* Pairs the surviving records of one unit (decode.c's pair_unit and
 * close_scope); returns the unit's unpaired count, sets *dropped and
 * raises *last_end. */
__device__ static u64 pair_unit(const unsigned char *seg, unsigned n_written, u64 start_ctr,
                                const cp_reduce_params &r, const totals &t, run &acc, u64 *dropped,
                                i64 *last_end) {
  u64 cap = r.segment_bytes / CP_LAYOUT_RECORD_BYTES;
  u64 kept = n_written < cap ? n_written : cap;
  unsigned bits = r.counter == 0 ? 32u : 48u; /* cp_layout_counter_bits */
  u64 mask = (1ull << bits) - 1, half = 1ull << (bits - 1);
  unsigned short st_scope[CP_REDUCE_DEPTH];
  i64 st_t[CP_REDUCE_DEPTH];
  unsigned depth = 0;
  i64 tt = 0;
  u64 prev = start_ctr & mask, first = n_written - kept, slot = cap - 1, unp = 0;
  *dropped = first;
  for (u64 k = first; k < n_written; k++) {
    u64 v = ld64(seg + (k & slot) * CP_LAYOUT_RECORD_BYTES);
    unsigned scope = (unsigned)(v >> CP_LAYOUT_SCOPE_SHIFT) & 0x7fffu;
    u64 delta = ((v & mask) - prev) & mask;
    tt += (k == first && delta >= half) ? (i64)delta - (i64)(mask + 1) : (i64)delta;
    prev = v & mask;
    i64 ts = tt - r.shift * (i64)(k - first + 1);
    if (scope >= r.n_scopes) {
      unp++;
    } else if (v >> CP_LAYOUT_END_BIT) {
      unsigned j = depth;
      while (j > 0 && st_scope[j - 1] != scope)
        j--;
      if (j == 0) {
        unp++;
        atomicAdd(&t.unpaired[scope], 1ull);
      } else {
        for (unsigned q = j; q < depth; q++) {
          unp++;
          atomicAdd(&t.unpaired[st_scope[q]], 1ull);
        }
        depth = j - 1;
        i64 te = ts;
        if (r.shift && te < st_t[j - 1])
          te = st_t[j - 1] + r.shift / 2;
        run_add(acc, t, scope, st_t[j - 1], te);
      }
      if (tt > *last_end)
        *last_end = tt;
    } else if (depth == CP_REDUCE_DEPTH) {
      unp++;
      atomicAdd(&t.unpaired[scope], 1ull);
    } else {
      st_scope[depth] = (unsigned short)scope;
      st_t[depth++] = ts;
    }
  }
  while (depth > 0) {
    unp++;
    atomicAdd(&t.unpaired[st_scope[--depth]], 1ull);
  }
  return unp;
}

__device__ static i64 warp_max(i64 v) {
  for (int o = 16; o > 0; o >>= 1) {
    i64 w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

__device__ static u64 warp_sum(u64 v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* One CTA slice by one warp; lane = unit. Adds into the lane's dropped and
 * unpaired sums and, on lane 0, into the block's CTA counters. */
__device__ static void reduce_cta(u64 i, unsigned lane, const cp_reduce_params &r, const totals &t, run &acc,
                                  u64 *dropped, u64 *unpaired) {
  const unsigned char *p = (const unsigned char *)r.buf + i * r.per_cta_bytes;
  if (!cta_ok(p, i, r)) { /* the same answer on every lane */
    if (lane == 0)
      atomicAdd(&t.fixed[CP_REDUCE_BAD_CTAS], 1ull);
    return;
  }
  i64 last_end = 0;
  if (lane < r.n_units && r.unit_warp[lane] < ld32(p + CP_HDR_N_ACTIVE)) {
    u64 d = 0;
    *unpaired += pair_unit(p + r.header_bytes + (u64)lane * r.segment_bytes, ld32(p + CP_HDR_COUNTS + 4 * lane),
                           ld64(p + CP_HDR_START_CTR), r, t, acc, &d, &last_end);
    *dropped += d;
  }
  last_end = warp_max(last_end);
  if (lane == 0) {
    u64 t0 = ld64(p + CP_HDR_START_TIME), t1 = ld64(p + CP_HDR_FIN_TIME);
    atomicAdd(&t.fixed[CP_REDUCE_CTAS], 1ull);
    if (last_end > 0 && t1 > t0) {
      atomicAdd(&t.fixed[CP_REDUCE_CLOCK_CYCLES], (u64)last_end);
      atomicAdd(&t.fixed[CP_REDUCE_CLOCK_NS], t1 - t0);
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) cproton_reduce(const cp_reduce_params r) {
  extern __shared__ u64 sh[];
  unsigned n = CP_REDUCE_FIXED + 3u * r.n_scopes;
  for (unsigned j = threadIdx.x; j < n; j += blockDim.x)
    sh[j] = 0;
  __syncthreads();
  totals t = {sh, sh + CP_REDUCE_FIXED, sh + CP_REDUCE_FIXED + r.n_scopes, sh + CP_REDUCE_FIXED + 2 * r.n_scopes};
  unsigned lane = threadIdx.x & 31u, warps = blockDim.x >> 5;
  u64 stride = (u64)gridDim.x * warps, dropped = 0, unpaired = 0;
  run acc = {0, 0, 0};
  for (u64 i = (u64)blockIdx.x * warps + (threadIdx.x >> 5); i < r.n_ctas; i += stride)
    reduce_cta(i, lane, r, t, acc, &dropped, &unpaired);
  run_flush(acc, t);
  dropped = warp_sum(dropped);
  unpaired = warp_sum(unpaired);
  if (lane == 0) {
    atomicAdd(&t.fixed[CP_REDUCE_DROPPED], dropped);
    atomicAdd(&t.fixed[CP_REDUCE_UNPAIRED], unpaired);
  }
  __syncthreads();
  u64 *out = (u64 *)r.out;
  for (unsigned j = threadIdx.x; j < n; j += blockDim.x)
    if (sh[j])
      atomicAdd(&out[j], sh[j]);
}
