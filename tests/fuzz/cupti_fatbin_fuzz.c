/* cupti_fatbin_fuzz.c -- libFuzzer target for fat binaries
 * (backend/cupti/fatbin.c): the input is a `.nv_fatbin` section's bytes,
 * walked for cubins of every architecture and of sm_90; each delivered
 * cubin is read whole (an ELF extent past the input would show under the
 * sanitizers). The corpus holds the sections of nvcc's output and cut or
 * altered copies of them. */
#include <stdint.h>
#include <string.h>

#include "backend/cupti/fatbin.h"

static int touch(void *ctx, const void *cubin, size_t size,
                 uint64_t offset) {
  (void)offset;
  uint8_t *sum = ctx;
  for (size_t i = 0; i < size; i++)
    *sum ^= ((const uint8_t *)cubin)[i];
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size) {
  uint8_t sum = 0;
  cp_fatbin_stats st;
  memset(&st, 0, sizeof st);
  cp_fatbin_walk(d, size, 0, touch, &sum, &st);
  cp_fatbin_walk(d, size, 90, touch, &sum, &st);
  volatile uint8_t keep = sum; /* the reads are not optimised away */
  (void)keep;
  return 0;
}
