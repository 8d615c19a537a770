/* trace_sample.h -- a synthetic timeline with every kind of event the
 * trace writers render: nested CPU scopes on two threads (a parent and a
 * child beginning in the same nanosecond), kernels on two devices with
 * launch flows, one CUDA graph replay of three kernels, and intra-kernel
 * regions (outer with inner nested) for CTAs x warps x repetitions, and
 * hardware-counter samples (3 of sm_throughput% on GPU 0, 1 of
 * dram_throughput% on GPU 1, CPT_SAMPLE_COUNTERS in all). Shared
 * by io_perfetto_test.c and tests/tools/perfetto_sample.c. */
#ifndef CP_TRACE_SAMPLE_H
#define CP_TRACE_SAMPLE_H

#include <stdint.h>

#include "core/trace.h"

#define CPT_SAMPLE_COUNTERS 4

typedef struct cpt_sample_shape {
  uint32_t ctas, warps, reps; /* regions: 2 * ctas * warps * reps */
} cpt_sample_shape;

/* Appends the sample to `t`; returns the number of events appended. */
size_t cpt_trace_sample(cp_trace *t, const cpt_sample_shape *shape);

#endif
