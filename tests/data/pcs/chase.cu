// The kernel of tests/data/pcs/chase.cubin (see README.md): a dependent-load
// loop on line 7 and an FMA loop on line 9.
__global__ void chase(const int *x, float *y, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int idx = i % n;
  float acc = (float)i;
  for (int k = 0; k < iters; k++) idx = x[idx];
  for (int k = 0; k < iters; k++)
    acc = acc * 1.0001f + 0.5f;
  y[i] = acc + (float)idx;
}
