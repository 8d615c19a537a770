// native_app.cu -- the C++ CUDA workload of tests/gpu/native.sh and
// bench/native_stacks.sh: kernels launched from nested host functions with
// known names, under NVTX ranges, so `cproton --context native` (or
// CPROTON_CONTEXT=native under CUDA_INJECTION64_PATH) must show
//   train / ... main ... / app::forward(...) / app::layer1(...) ... / k_a
//   train / ... main ... / app::backward(...) / app::layer2(...) ... / k_b
// Usage: native_app REPS [N]   (REPS iterations of forward + backward, each
// launching 8 kernels over N floats, 1024 by default: launch-bound).
// Prints "LOOP_S <seconds>" for the loop alone.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void k_a(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
__global__ void k_b(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 0.5f;
}

namespace app {
__attribute__((noinline)) void layer1(float *x, int n) {
  for (int i = 0; i < 4; i++) k_a<<<(n + 255) / 256, 256>>>(x, n);
}
__attribute__((noinline)) void layer2(float *x, int n) {
  for (int i = 0; i < 4; i++) k_b<<<(n + 255) / 256, 256>>>(x, n);
}
__attribute__((noinline)) void forward(float *x, int n) { layer1(x, n); }
__attribute__((noinline)) void backward(float *x, int n) { layer2(x, n); }
} // namespace app

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 100;
  const int n = argc > 2 ? atoi(argv[2]) : 1024;
  float *x;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  app::forward(x, n); // warm-up: module load, first launches
  cudaDeviceSynchronize();
  double t0 = now_s();
  nvtxRangePushA("train");
  for (int r = 0; r < reps; r++) {
    app::forward(x, n);
    app::backward(x, n);
  }
  nvtxRangePop();
  cudaError_t e = cudaDeviceSynchronize();
  printf("LOOP_S %.6f\n", now_s() - t0);
  cudaFree(x);
  return e == cudaSuccess ? 0 : 1;
}
