// kernels.cu -- a CUDA C kernel with cproton record markers, used by the
// native instrumentation example (host.c) and tests/gpu/instrument.sh.
// Structure (per warp, per launch): "kernel" once; "load" once; "compute"
// ITERS times nested in "kernel"; an early-exit branch for CTAs past `n`.
#include <cproton/device.h>

#define ITERS 8

extern "C" __global__ void __launch_bounds__(128)
scaled_sum(float *out, const float *x, int n, CPROTON_BUFFER_PARAM) {
  CPROTON_RECORD_START(kernel);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  CPROTON_RECORD_START(load);
  float v = i < n ? x[i] : 0.0f;
  CPROTON_RECORD_END(load);
  float acc = 0.0f;
#pragma unroll 1
  for (int k = 0; k < ITERS; k++) {
    CPROTON_RECORD_START(compute);
    acc = acc * 0.5f + v * (float)k;
    acc = __sinf(acc) + acc;
    CPROTON_RECORD_END(compute);
  }
  if (i < n)
    out[i] = acc;
  CPROTON_RECORD_END(kernel);
}
