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
 * A group of g lanes (a power of two >= the units, at most 32) per CTA
 * slice, lane u of the group pairing unit u, 32 / g slices per warp at a
 * time; warps stride over the slices; a block sums into shared memory and
 * adds its totals to the result with one global atomic per non-zero entry. */
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

/* Read-only loads (the buffer does not change while the kernel runs). */
__device__ static unsigned ld32(const unsigned char *p) { return __ldg((const unsigned *)p); }
__device__ static u64 ld64(const unsigned char *p) { return __ldg((const u64 *)p); }

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

/* One unit's pairing state (decode.c's pair_unit locals). */
struct unit_state {
  unsigned short st_scope[CP_REDUCE_DEPTH];
  i64 st_t[CP_REDUCE_DEPTH];
  unsigned depth;
  i64 tt;
  u64 prev, mask, half, first, unp;
};

/* Record `v`, the k-th written by the unit (decode.c's pair_unit loop body
 * and close_scope). */
__device__ static __forceinline__ void pair_record(unit_state &u, u64 v, u64 k, const cp_reduce_params &r,
                                                   const totals &t, run &acc, i64 *last_end) {
  unsigned scope = (unsigned)(v >> CP_LAYOUT_SCOPE_SHIFT) & 0x7fffu;
  u64 delta = ((v & u.mask) - u.prev) & u.mask;
  u.tt += (k == u.first && delta >= u.half) ? (i64)delta - (i64)(u.mask + 1) : (i64)delta;
  u.prev = v & u.mask;
  i64 ts = u.tt - r.shift * (i64)(k - u.first + 1);
  if (scope >= r.n_scopes) {
    u.unp++;
  } else if (v >> CP_LAYOUT_END_BIT) {
    unsigned j = u.depth;
    while (j > 0 && u.st_scope[j - 1] != scope)
      j--;
    if (j == 0) {
      u.unp++;
      atomicAdd(&t.unpaired[scope], 1ull);
    } else {
      for (unsigned q = j; q < u.depth; q++) {
        u.unp++;
        atomicAdd(&t.unpaired[u.st_scope[q]], 1ull);
      }
      u.depth = j - 1;
      i64 te = ts;
      if (r.shift && te < u.st_t[j - 1])
        te = u.st_t[j - 1] + r.shift / 2;
      run_add(acc, t, scope, u.st_t[j - 1], te);
    }
    if (u.tt > *last_end)
      *last_end = u.tt;
  } else if (u.depth == CP_REDUCE_DEPTH) {
    u.unp++;
    atomicAdd(&t.unpaired[scope], 1ull);
  } else {
    u.st_scope[u.depth] = (unsigned short)scope;
    u.st_t[u.depth++] = ts;
  }
}

/* Records loaded at once: independent loads in flight together, so a unit
 * of hundreds of records costs a few memory latencies, not hundreds. */
#define CP_REDUCE_CHUNK 8

/* Pairs the surviving records of one unit (decode.c's pair_unit); returns
 * the unit's unpaired count, sets *dropped and raises *last_end. */
__device__ static u64 pair_unit(const unsigned char *seg, unsigned n_written, u64 start_ctr,
                                const cp_reduce_params &r, const totals &t, run &acc, u64 *dropped,
                                i64 *last_end) {
  u64 cap = r.segment_bytes / CP_LAYOUT_RECORD_BYTES;
  u64 kept = n_written < cap ? n_written : cap;
  unsigned bits = r.counter == 0 ? 32u : 48u; /* cp_layout_counter_bits */
  unit_state u;
  u.depth = 0;
  u.tt = 0;
  u.mask = (1ull << bits) - 1;
  u.half = 1ull << (bits - 1);
  u.prev = start_ctr & u.mask;
  u.first = n_written - kept;
  u.unp = 0;
  u64 slot = cap - 1; /* segments are powers of two: k mod cap */
  *dropped = u.first;
  for (u64 k0 = u.first; k0 < n_written; k0 += CP_REDUCE_CHUNK) {
    u64 v[CP_REDUCE_CHUNK];
#pragma unroll
    for (int c = 0; c < CP_REDUCE_CHUNK; c++)
      v[c] = k0 + c < n_written ? ld64(seg + ((k0 + c) & slot) * CP_LAYOUT_RECORD_BYTES) : 0;
#pragma unroll
    for (int c = 0; c < CP_REDUCE_CHUNK; c++)
      if (k0 + c < n_written)
        pair_record(u, v[c], k0 + c, r, t, acc, last_end);
  }
  while (u.depth > 0) {
    u.unp++;
    atomicAdd(&t.unpaired[u.st_scope[--u.depth]], 1ull);
  }
  return u.unp;
}

/* Maximum over the aligned group of `g` lanes (a power of two). */
__device__ static i64 group_max(i64 v, unsigned g) {
  for (unsigned o = g >> 1; o > 0; o >>= 1) {
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

/* A lane's CTA counters, kept in registers and summed over the warp at
 * the end: shared-memory atomics on the same few words from every group's
 * first lane were the kernel's main stall (Nsight Compute, H100: MIO
 * scoreboard, 40% of stalls). */
struct cta_sums {
  unsigned ctas, bad;
  u64 clock_cycles, clock_ns;
};

/* CTA slice `i` (none when i >= n_ctas) by a group of `g` lanes, lane
 * `unit` of the group pairing that unit. Every lane of the warp calls it
 * (the shuffles need them all). Adds into the lane's dropped and unpaired
 * sums and, on the group's first lane, into its CTA counters. */
__device__ static void reduce_cta(u64 i, unsigned unit, unsigned g, const cp_reduce_params &r, const totals &t,
                                  run &acc, u64 *dropped, u64 *unpaired, cta_sums *c) {
  const unsigned char *p = (const unsigned char *)r.buf + (i < r.n_ctas ? i : 0) * r.per_cta_bytes;
  int ok = i < r.n_ctas && cta_ok(p, i, r); /* the same answer on the group's lanes */
  if (i < r.n_ctas && !ok && unit == 0)
    c->bad++;
  i64 last_end = 0;
  if (ok && unit < r.n_units && r.unit_warp[unit] < ld32(p + CP_HDR_N_ACTIVE)) {
    u64 d = 0;
    *unpaired += pair_unit(p + r.header_bytes + (u64)unit * r.segment_bytes, ld32(p + CP_HDR_COUNTS + 4 * unit),
                           ld64(p + CP_HDR_START_CTR), r, t, acc, &d, &last_end);
    *dropped += d;
  }
  last_end = group_max(last_end, g);
  if (ok && unit == 0) {
    u64 t0 = ld64(p + CP_HDR_START_TIME), t1 = ld64(p + CP_HDR_FIN_TIME);
    unsigned fin = ld32(p + CP_HDR_FIN_CTR); /* 0: a buffer of older cproton */
    c->ctas++;
    if (t1 > t0 && (fin || last_end > 0)) {
      c->clock_cycles += fin ? (u64)fin : (u64)last_end;
      c->clock_ns += t1 - t0;
    }
  }
}

/* 4 blocks of 256 per SM (64 registers; reduce_launch.c sizes the grid to
 * one wave of them): the kernel waits on memory, so resident warps matter
 * more than the few spills this costs. */
extern "C" __global__ void __launch_bounds__(256, 4) cproton_reduce(const cp_reduce_params r) {
  extern __shared__ u64 sh[];
  unsigned n = CP_REDUCE_FIXED + 3u * r.n_scopes;
  for (unsigned j = threadIdx.x; j < n; j += blockDim.x)
    sh[j] = 0;
  __syncthreads();
  totals t = {sh, sh + CP_REDUCE_FIXED, sh + CP_REDUCE_FIXED + r.n_scopes, sh + CP_REDUCE_FIXED + 2 * r.n_scopes};
  /* A warp takes 32 / g slices at a time, g lanes (a power of two >= the
   * units) each: the 4 units of a 4-warp kernel use the whole warp. */
  unsigned g = 1;
  while (g < r.n_units)
    g <<= 1;
  unsigned lane = threadIdx.x & 31u, warps = blockDim.x >> 5, per_warp = 32u / g;
  u64 stride = (u64)gridDim.x * warps * per_warp, dropped = 0, unpaired = 0;
  run acc = {0, 0, 0};
  cta_sums c = {0, 0, 0, 0};
  for (u64 base = ((u64)blockIdx.x * warps + (threadIdx.x >> 5)) * per_warp; base < r.n_ctas; base += stride)
    reduce_cta(base + lane / g, lane & (g - 1), g, r, t, acc, &dropped, &unpaired, &c);
  run_flush(acc, t);
  dropped = warp_sum(dropped);
  unpaired = warp_sum(unpaired);
  u64 ctas = warp_sum(c.ctas), bad = warp_sum(c.bad);
  u64 cycles = warp_sum(c.clock_cycles), ns = warp_sum(c.clock_ns);
  if (lane == 0) {
    atomicAdd(&t.fixed[CP_REDUCE_DROPPED], dropped);
    atomicAdd(&t.fixed[CP_REDUCE_UNPAIRED], unpaired);
    atomicAdd(&t.fixed[CP_REDUCE_CTAS], ctas);
    atomicAdd(&t.fixed[CP_REDUCE_BAD_CTAS], bad);
    atomicAdd(&t.fixed[CP_REDUCE_CLOCK_CYCLES], cycles);
    atomicAdd(&t.fixed[CP_REDUCE_CLOCK_NS], ns);
  }
  __syncthreads();
  u64 *out = (u64 *)r.out;
  for (unsigned j = threadIdx.x; j < n; j += blockDim.x)
    if (sh[j])
      atomicAdd(&out[j], sh[j]);
}
