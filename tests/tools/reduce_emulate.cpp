// tests/tools/reduce_emulate.cpp -- ctest reduce_emulated: the device
// reduction's source (src/backend/instrumentation/reduce.cu) compiled for
// the CPU under a small emulation of the CUDA features it uses (one thread
// per CUDA thread, blocks one after another, shuffles and __syncthreads as
// barriers, atomics as atomics), run on synthetic profile buffers and
// compared word by word with the host decoder, the reference. Covers what
// the GPU test cannot reach in CI: every unit count 1..32, wrapped and
// exact segments, all three counters, time_shift, bad headers, records of
// unknown scopes, nesting past 64 open scopes. It checks the kernel's logic,
// not the PTX or the GPU's memory model (tests/gpu/python/instrument_reduce.py
// does that on a GPU). Exit status: the number of failed buffers.
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

extern "C" {
#include "backend/instrumentation/decode.h"
#include "backend/instrumentation/reduce.h"
#include "cproton/cproton.h"
}

// ---- the emulation ----------------------------------------------------------
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)

struct dim { unsigned x; };
static thread_local dim threadIdx, blockIdx;
static dim blockDim, gridDim;
static std::barrier<> *block_bar;
static std::barrier<> *warp_bar[32];
static uint64_t warp_slot[32][32];
alignas(16) static unsigned long long sh[8 + 3 * 2000]; // the kernel's `extern __shared__` array

static void __syncthreads() { block_bar->arrive_and_wait(); }

template <typename T> static T __ldg(const T *p) { return *p; }

static unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

template <typename T> static T __shfl_xor_sync(unsigned, T v, int o) {
  unsigned w = threadIdx.x >> 5, lane = threadIdx.x & 31u;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  warp_slot[w][lane] = bits;
  warp_bar[w]->arrive_and_wait();
  bits = warp_slot[w][lane ^ (unsigned)o];
  warp_bar[w]->arrive_and_wait();
  T out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

#include "backend/instrumentation/reduce.cu"

// ---- the launch, as reduce_launch.c makes it ------------------------------------
static void launch(const cp_reduce_params &r, unsigned blocks, unsigned threads) {
  blockDim.x = threads;
  gridDim.x = blocks;
  for (unsigned b = 0; b < blocks; b++) {
    std::barrier<> bar(threads);
    std::vector<std::barrier<> *> warps;
    for (unsigned w = 0; w < threads / 32; w++)
      warp_bar[w] = new std::barrier<>(32);
    block_bar = &bar;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; t++)
      ts.emplace_back([&r, b, t] {
        blockIdx.x = b;
        threadIdx.x = t;
        cproton_reduce(r);
      });
    for (auto &t : ts)
      t.join();
    for (unsigned w = 0; w < threads / 32; w++)
      delete warp_bar[w];
  }
}

// ---- synthetic buffers -------------------------------------------------------------
static uint64_t rng = 88172645463325252ull;
static uint64_t next() {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static uint32_t below(uint32_t n) { return (uint32_t)(next() % n); }

static void put(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

// One CTA slice: a header (sometimes broken) and per unit a random walk of
// starts and ends, mostly nested, sometimes not; `deep`: 100 starts, then
// ends of the innermost open scopes (nesting past the 64 tracked).
static int deep;
static void fill_cta(unsigned char *p, const cproton_buffer_layout &l, uint32_t cta) {
  put(p + CP_HDR_MAGIC, below(40) ? CP_LAYOUT_MAGIC : 0, 4);
  put(p + CP_HDR_VERSION, below(60) ? CP_LAYOUT_VERSION : 2, 2);
  p[CP_HDR_COUNTER] = (unsigned char)l.counter;
  put(p + CP_HDR_CTA, below(60) ? cta : cta + 1, 4);
  put(p + CP_HDR_SM, below(132), 4);
  uint64_t t0 = 1000000 + below(5000), c0 = (l.counter == 0 ? 0xfffff000ull : 5000) + below(100);
  put(p + CP_HDR_START_TIME, t0, 8);
  put(p + CP_HDR_START_CTR, c0, 8);
  put(p + CP_HDR_FIN_TIME, t0 + below(4) * 100000, 8);
  put(p + CP_HDR_END_TIME, t0 + 500000, 8);
  put(p + CP_HDR_N_UNITS, l.n_units, 4);
  put(p + CP_HDR_SEG_BYTES, l.segment_bytes, 4);
  put(p + CP_HDR_N_ACTIVE, below(50) ? l.n_units : below(34), 4);
  put(p + CP_HDR_FIN_CTR, below(3) ? 0 : 1 + below(400000), 4); /* 0: a buffer of older cproton */
  uint64_t mask = l.counter == 0 ? 0xffffffffull : 0xffffffffffffull, cap = l.segment_bytes / 8;
  for (uint32_t u = 0; u < l.n_units; u++) {
    uint32_t n = deep ? 150 : below(3) ? below((uint32_t)cap + 1) : below((uint32_t)cap * 3 + 80);
    uint64_t ctr = c0 - below(3);
    std::vector<uint32_t> open;
    for (uint32_t k = 0; k < n; k++) {
      ctr += below(200);
      uint32_t scope;
      int end;
      if (!open.empty() && (deep ? k >= 100 : below(3) == 0 && below(20))) {
        scope = open.back(), end = 1;
        open.pop_back();
      } else {
        scope = below(20) ? below(l.n_scopes) : below(l.n_scopes + 3); // some unknown ids
        end = below(15) == 0;
        if (!end)
          open.push_back(scope);
      }
      uint64_t v = ((uint64_t)cp_layout_tag(scope, end) << 48) | (ctr & mask);
      put(p + l.header_bytes + u * l.segment_bytes + (k % cap) * 8, v, 8);
    }
    put(p + CP_HDR_COUNTS + 4 * u, n, 4);
  }
}

static const char *names[8] = {"a", "b", "c", "d", "e", "f", "g", "h"};

// `max_blocks` caps the grid (reduce_launch.c caps it at 1024): a small cap
// makes each warp stride over several slices, as on large grids.
static int check(uint32_t units, uint32_t seg, uint32_t counter, int shift, uint32_t n_ctas, uint32_t n_scopes,
                 unsigned max_blocks) {
  cproton_buffer_layout l;
  std::memset(&l, 0, sizeof l);
  l.n_units = units, l.segment_bytes = seg, l.counter = counter, l.n_scopes = n_scopes;
  l.header_bytes = cp_layout_header_bytes(units);
  l.per_cta_bytes = l.header_bytes + units * seg;
  l.scope_names = names;
  for (uint32_t u = 0; u < units; u++)
    l.unit_warp[u] = (uint8_t)(deep || below(4) ? u : below(33));
  std::vector<unsigned char> buf((size_t)n_ctas * l.per_cta_bytes);
  for (uint32_t c = 0; c < n_ctas; c++)
    fill_cta(buf.data() + (size_t)c * l.per_cta_bytes, l, c);
  unsigned flags = CPROTON_DECODE_NO_EVENTS | CPROTON_DECODE_SKIP_BAD_CTAS | (shift ? CPROTON_DECODE_TIME_SHIFT : 0);
  cproton_decoded *d = nullptr;
  if (cproton_buffer_decode(buf.data(), buf.size(), &l, flags, &d)) {
    std::printf("FAIL host decode: %s\n", cproton_last_error());
    return 1;
  }
  size_t n = cp_reduce_n_words(n_scopes);
  std::vector<uint64_t> host(n), dev(n, 0);
  cp_reduce_words_of(d, host.data());
  cproton_decoded_free(d);
  cp_reduce_params r;
  std::memset(&r, 0, sizeof r);
  r.buf = (u64)(uintptr_t)buf.data(), r.out = (u64)(uintptr_t)dev.data(), r.n_ctas = n_ctas;
  r.shift = shift && counter != CPROTON_COUNTER_GLOBALTIMER ? CPROTON_TIME_SHIFT_CYCLES : 0;
  r.per_cta_bytes = l.per_cta_bytes, r.header_bytes = l.header_bytes, r.n_units = units;
  r.segment_bytes = seg, r.counter = counter, r.n_scopes = n_scopes;
  std::memcpy(r.unit_warp, l.unit_warp, 32);
  unsigned g = 1, blocks;
  while (g < units)
    g <<= 1;
  blocks = (n_ctas + 8 * (32 / g) - 1) / (8 * (32 / g)); // as reduce_launch.c sizes the grid
  launch(r, blocks > max_blocks ? max_blocks : blocks, 256);
  char msg[256];
  size_t bad = cp_reduce_diff(dev.data(), host.data(), &l, msg, sizeof msg);
  std::printf("%s units %u seg %u counter %u shift %d ctas %u blocks <= %u: %zu differ%s%s (host: %llu CTAs, "
              "%llu bad, %llu dropped, %llu unpaired)\n", bad ? "FAIL" : "PASS", units, seg, counter, shift, n_ctas,
              max_blocks, bad,
              bad ? "; first: " : "", bad ? msg : "", (unsigned long long)host[CP_REDUCE_CTAS],
              (unsigned long long)host[CP_REDUCE_BAD_CTAS], (unsigned long long)host[CP_REDUCE_DROPPED],
              (unsigned long long)host[CP_REDUCE_UNPAIRED]);
  return bad != 0;
}

int main() {
  int failed = 0;
  const uint32_t units[] = {1, 2, 3, 4, 8, 13, 32};
  for (uint32_t u : units)
    for (uint32_t counter = 0; counter <= CPROTON_COUNTER_GLOBALTIMER; counter++)
      failed += check(u, u > 8 ? 64 : 16u << below(6), counter, (int)below(2), 20 + below(60), 1 + below(8),
                      below(2) ? 1024 : 1 + below(3));
  failed += check(4, 32, CPROTON_COUNTER_CLOCK64, 0, 1100, 2, 2); // warps stride over many slices
  deep = 1;
  failed += check(2, 2048, CPROTON_COUNTER_CLOCK64, 1, 9, 3, 1024); // nesting past 64
  std::printf("reduce_emulated: %d failure(s)\n", failed);
  return failed;
}
