/* backend/instrumentation/reduce_launch.c -- loads the device reduction
 * (reduce.cu's PTX, embedded at build time as cp_reduce_ptx) once per CUDA
 * context with cuModuleLoadData, and launches it on the copy stream.
 *
 * Invariant: a context whose module failed to load is remembered and never
 * retried, so the caller's fallback (host decoding) costs one warning, not
 * one JIT attempt per launch. Caller holds the runtime's lock. */
#include <stddef.h>

#include "backend/instrumentation/reduce_launch.h"
#include "core/error.h"
#include "instrument/layout.h"

extern const char cp_reduce_ptx[];

/* The kernel's parameter block: reduce.cu's cp_reduce_params, byte for byte. */
typedef struct reduce_params {
  uint64_t buf, out, n_ctas;
  int64_t shift;
  uint32_t per_cta_bytes, header_bytes, n_units, segment_bytes;
  uint32_t counter, n_scopes;
  uint8_t unit_warp[32];
} reduce_params;
_Static_assert(sizeof(reduce_params) == 88, "reduce.cu's parameter block is 88 bytes");

#define REDUCE_THREADS 256 /* 8 warps, each 32 / g CTA slices at a time */
/* Blocks per SM that reduce.cu's __launch_bounds__ guarantee (64 registers):
 * the grid is one full wave of them and warps stride over the slices (a
 * fixed 1,024 blocks made 2.6 waves on an H100, the last one partial). */
#define REDUCE_BLOCKS_PER_SM 4
#define REDUCE_DEFAULT_SMS 132 /* when the driver does not say */
#define MAX_CONTEXTS 64

static struct {
  cp_cucontext ctx;
  cp_cufunction fn; /* NULL: the module failed to load here */
  unsigned sms;     /* the context's device's SMs */
} mods[MAX_CONTEXTS];
static int n_mods;

/* The kernel in `ctx`, loading the module on first use. */
static int function_of(const cp_cudadrv *d, cp_cucontext ctx, cp_cufunction *out, unsigned *sms) {
  for (int i = 0; i < n_mods; i++)
    if (mods[i].ctx == ctx) {
      *out = mods[i].fn;
      *sms = mods[i].sms;
      return mods[i].fn ? CPROTON_OK
                        : cp_error_set(CPROTON_EBACKEND, "the device reduction did not load in this context");
    }
  if (n_mods == MAX_CONTEXTS)
    return cp_error_set(CPROTON_ELIMIT, "more than %d CUDA contexts", MAX_CONTEXTS);
  cp_cumodule m = NULL;
  cp_cufunction f = NULL;
  cp_curesult r = d->cuModuleLoadData(&m, cp_reduce_ptx);
  if (!r)
    r = d->cuModuleGetFunction(&f, m, "cproton_reduce");
  cp_cudevice dev = 0;
  int n = 0;
  if (d->cuCtxGetDevice(&dev) || d->cuDeviceGetAttribute(&n, CP_CU_ATTR_MULTIPROCESSOR_COUNT, dev) || n <= 0)
    n = REDUCE_DEFAULT_SMS;
  mods[n_mods].ctx = ctx;
  mods[n_mods].sms = *sms = (unsigned)n;
  mods[n_mods++].fn = r ? NULL : f;
  *out = f;
  return r ? cp_cudadrv_error(r, "loading the device reduction (cuModuleLoadData)") : CPROTON_OK;
}

int cp_reduce_launch(const cp_cudadrv *d, cp_cucontext ctx, cp_custream s, const cproton_buffer_layout *l,
                     cp_cudeviceptr buf, size_t size, cp_cudeviceptr out, int64_t shift) {
  if (l->n_scopes > CP_REDUCE_MAX_SCOPES || l->n_units > CP_LAYOUT_MAX_UNITS || !l->per_cta_bytes)
    return cp_error_set(CPROTON_ELIMIT, "%u scopes, %u units: beyond the device reduction", l->n_scopes,
                        l->n_units);
  cp_cufunction f = NULL;
  unsigned sms = 0;
  int rc = function_of(d, ctx, &f, &sms);
  if (rc)
    return rc;
  reduce_params p = {.buf = buf, .out = out, .n_ctas = size / l->per_cta_bytes, .shift = shift,
                     .per_cta_bytes = l->per_cta_bytes, .header_bytes = l->header_bytes, .n_units = l->n_units,
                     .segment_bytes = l->segment_bytes, .counter = l->counter, .n_scopes = l->n_scopes};
  for (int i = 0; i < 32; i++)
    p.unit_warp[i] = l->unit_warp[i];
  uint32_t g = 1; /* lanes per slice, as the kernel groups them */
  while (g < l->n_units)
    g <<= 1;
  uint64_t per_block = REDUCE_THREADS / 32 * (32 / g), blocks = (p.n_ctas + per_block - 1) / per_block;
  if (blocks > (uint64_t)sms * REDUCE_BLOCKS_PER_SM)
    blocks = (uint64_t)sms * REDUCE_BLOCKS_PER_SM;
  if (!blocks)
    return CPROTON_OK;
  void *args[] = {&p};
  unsigned shared = (unsigned)(cp_reduce_n_words(l->n_scopes) * sizeof(uint64_t));
  cp_curesult r = d->cuLaunchKernel(f, (unsigned)blocks, 1, 1, REDUCE_THREADS, 1, 1, shared, s, args, NULL);
  return r ? cp_cudadrv_error(r, "launching the device reduction") : CPROTON_OK;
}
