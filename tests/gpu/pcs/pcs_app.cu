// tests/gpu/pcs/pcs_app.cu -- a native program for PC sampling through
// injection: a kernel with a dependent-load loop (line CHASE) and an FMA
// loop (line FMA), launched directly under an NVTX range and replayed from
// a CUDA graph. Built with -lineinfo. usage: pcs_app
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void chase_fma(const int *x, float *y, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int idx = i % n;
  float acc = (float)i;
  for (int k = 0; k < iters; k++) idx = x[idx];  // CHASE
  for (int k = 0; k < iters; k++) acc = acc * 1.0001f + 0.5f;  // FMA
  y[i] = acc + (float)idx;
}

int main() {
  const int n = 1 << 22, threads = 256, blocks = 1024;
  int *x; float *y;
  cudaMalloc(&x, n * sizeof(int));
  cudaMalloc(&y, blocks * threads * sizeof(float));
  int *h = new int[n];
  unsigned s = 12345;
  for (int i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; h[i] = (int)(s % n); }
  cudaMemcpy(x, h, n * sizeof(int), cudaMemcpyHostToDevice);
  nvtxRangePushA("direct");
  for (int r = 0; r < 4; r++) chase_fma<<<blocks, threads>>>(x, y, n, 2000);
  nvtxRangePop();
  cudaStream_t st; cudaStreamCreate(&st);
  cudaGraph_t g; cudaGraphExec_t ge;
  nvtxRangePushA("capture");
  cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
  chase_fma<<<blocks, threads, 0, st>>>(x, y, n, 2000);
  cudaStreamEndCapture(st, &g);
  nvtxRangePop();
  cudaGraphInstantiate(&ge, g, 0);
  nvtxRangePushA("replay");
  for (int r = 0; r < 4; r++) cudaGraphLaunch(ge, st);
  cudaStreamSynchronize(st);
  nvtxRangePop();
  cudaError_t e = cudaDeviceSynchronize();
  printf("pcs_app: %s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
