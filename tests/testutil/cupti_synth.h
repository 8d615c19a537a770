/* cupti_synth.h -- helpers for the tests and benchmarks that feed
 * synthetic CUPTI kernel records (CUpti_ActivityKernel10; CUPTI headers
 * only, no libcupti) through backend/cupti/records.c. Header-only: the
 * test utility library is built without the CUPTI headers. */
#ifndef CPT_CUPTI_SYNTH_H
#define CPT_CUPTI_SYNTH_H

#include <cupti.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Walks a buffer of CUpti_ActivityKernel10 records like
 * cuptiActivityGetNextRecord does (cp_records_next_fn). */
static inline int cpt_next_kernel(uint8_t *buf, size_t valid,
                                  CUpti_Activity **rec) {
  size_t size = sizeof(CUpti_ActivityKernel10);
  uint8_t *p = *rec ? (uint8_t *)*rec + size : buf;
  if (p + size > buf + valid)
    return 0;
  *rec = (CUpti_Activity *)p;
  return 1;
}

#endif
