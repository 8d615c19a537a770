// Early returns inside CPROTON_SCOPE (the RAII macro of <cproton/device.h>).
// The destructor's end marker is emitted on every path out of the scope, and
// nvcc orders those copies freely in the text: the pass must match scopes
// along control flow. scope_return.ptx is this file compiled by
//   nvcc -ptx -arch=sm_90 -I include tests/data/instrument/scope_return.cu \
//        -o tests/data/instrument/scope_return.ptx
// (CUDA 13.0, V13.0.88); see README.md in this folder.
#include <cproton/device.h>

// The return path's "end outer" comes after the main path's in the text.
__global__ void __launch_bounds__(128)
scope_return(float *y, const float *x, int n, CPROTON_BUFFER_PARAM) {
  CPROTON_SCOPE(outer);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  {
    CPROTON_SCOPE(inner);
    y[i] = 2.0f * x[i];
  }
  y[i] += 1.0f;
}

// A return from a scope inside a loop: "end body" and "end outer" appear
// twice, interleaved with the loop's back edge.
__global__ void __launch_bounds__(128)
scope_return_loop(float *y, const float *x, int n, CPROTON_BUFFER_PARAM) {
  CPROTON_SCOPE(outer);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < n; k++) {
    CPROTON_SCOPE(body);
    if (x[k] < 0.0f)
      return;
    y[i] += x[k];
  }
  y[i] *= 2.0f;
}
