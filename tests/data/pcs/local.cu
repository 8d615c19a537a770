// The kernels of tests/data/pcs/local_fatbin.o (see README.md): a per-thread
// array indexed at run time lives in the stack frame (128 bytes of local
// memory per thread); the same table in shared memory needs none.
extern "C" __global__ void poly_local(const float *w_in, float *out, int iters) {
  float w[32];
  for (int k = 0; k < 32; k++) w[k] = w_in[k];
  float acc = threadIdx.x;
  for (int i = 0; i < iters; i++) acc = acc * w[(i + threadIdx.x) & 31] + 1.0f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
extern "C" __global__ void poly_shared(const float *w_in, float *out, int iters) {
  __shared__ float w[32];
  if (threadIdx.x < 32) w[threadIdx.x] = w_in[threadIdx.x];
  __syncthreads();
  float acc = threadIdx.x;
  for (int i = 0; i < iters; i++) acc = acc * w[(i + threadIdx.x) & 31] + 1.0f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
