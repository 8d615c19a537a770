/* cproton/device.h -- record markers for CUDA C/C++ kernels.
 *
 * Each macro emits an empty inline-assembly statement whose text is a PTX
 * comment naming the record op; `volatile` and the "memory" clobber keep it
 * in program order with respect to memory operations. The markers do
 * nothing until `cproton-instrument` (or cproton_ptx_instrument) lowers
 * them; uninstrumented PTX still assembles and runs unchanged.
 *
 *   #include <cproton/device.h>
 *   __global__ void __launch_bounds__(256)
 *   saxpy(float *y, const float *x, float a, int n, CPROTON_BUFFER_PARAM) {
 *     CPROTON_RECORD_START(load);
 *     ...
 *     CPROTON_RECORD_END(load);
 *   }
 *
 * Rules (checked by the pass, see docs/instrumentation.md):
 *   - scope names are one token: letters, digits, _ . : - and the like;
 *   - starts and ends nest (end the inner scope first) in program order;
 *   - markers must end up in the __global__ function's body: device
 *     functions that contain markers must be inlined (__forceinline__);
 *   - the kernel's LAST parameter is the profile buffer (CPROTON_BUFFER_PARAM);
 *   - give __launch_bounds__ (the pass needs the warps per CTA) or pass
 *     --num-warps to cproton-instrument;
 *   - markers should be reached by whole warps (lane 0 writes the record).
 */
#ifndef CPROTON_DEVICE_H
#define CPROTON_DEVICE_H

#define CPROTON_STR_(x) #x
#define CPROTON_STR(x) CPROTON_STR_(x)

/* Opens scope `name` (an identifier-like token, not a string). */
#define CPROTON_RECORD_START(name)                                             \
  asm volatile("// @cproton record start " CPROTON_STR(name) ::: "memory")

/* Closes scope `name`. */
#define CPROTON_RECORD_END(name)                                               \
  asm volatile("// @cproton record end " CPROTON_STR(name) ::: "memory")

/* The profile-buffer parameter: put it last in the kernel's parameters and
 * pass a device pointer of grid_ctas * per_cta_bytes bytes (or NULL for an
 * uninstrumented build, where it is unused). */
#define CPROTON_BUFFER_PARAM void *__cproton_profile_buffer

#ifdef __cplusplus
/* RAII scope for C++ kernels: CPROTON_SCOPE(name) records start here and
 * end when the enclosing block ends. */
#define CPROTON_SCOPE_CAT_(a, b) a##b
#define CPROTON_SCOPE_CAT(a, b) CPROTON_SCOPE_CAT_(a, b)
#define CPROTON_SCOPE(name)                                                    \
  struct CPROTON_SCOPE_CAT(cproton_scope_, name) {                             \
    __device__ __forceinline__ CPROTON_SCOPE_CAT(cproton_scope_, name)() {     \
      CPROTON_RECORD_START(name);                                              \
    }                                                                          \
    __device__ __forceinline__ ~CPROTON_SCOPE_CAT(cproton_scope_, name)() {    \
      CPROTON_RECORD_END(name);                                                \
    }                                                                          \
  } CPROTON_SCOPE_CAT(cproton_scope_var_, name)
#endif

#endif
