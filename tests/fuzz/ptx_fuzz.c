/* ptx_fuzz.c -- libFuzzer target for the PTX pass: any bytes must give
 * CPROTON_OK or an error code, never a crash, a leak or a read out of
 * bounds. The first byte picks the options. */
#include <stdint.h>
#include <stdlib.h>

#include "cproton/cproton.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  if (size > 0) {
    o.buffer = (cproton_buffer_kind)(data[0] & 1);
    o.counter = (cproton_counter)((data[0] >> 1) % 3);
    o.granularity = (cproton_granularity)((data[0] >> 3) % 9);
    o.sample_mask = (data[0] & 0x20) ? 0x5 : 0;
    o.num_warps = (data[0] & 0x40) ? 4 : 0;
    data++;
    size--;
  }
  cproton_ptx *p = NULL;
  if (cproton_ptx_instrument((const char *)data, size, &o, &p) == CPROTON_OK) {
    size_t n;
    cproton_ptx_text(p, &n);
    for (size_t k = 0; k < cproton_ptx_n_kernels(p); k++) {
      cproton_buffer_layout l;
      cproton_ptx_kernel_layout(p, k, &l);
      const char *w = cproton_ptx_kernel_warning(p, k);
      while (w && *w) /* must be a string */
        w++;
    }
  }
  cproton_ptx_free(p);
  return 0;
}
