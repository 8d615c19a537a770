/* backend/instrumentation/reduce_launch.h -- loading and launching the
 * device reduction (reduce_launch.c, cp_reduce_launch). */
#ifndef CP_BACKEND_INSTRUMENTATION_REDUCE_LAUNCH_H
#define CP_BACKEND_INSTRUMENTATION_REDUCE_LAUNCH_H

#include "backend/cudadrv.h"
#include "backend/instrumentation/reduce.h"

/* Launches the reduction of `buf` (`size` bytes, whole CTA slices of
 * `layout`) into `out` (cp_reduce_n_words words, zeroed by the caller on
 * the same stream) on stream `s` of the current context `ctx`. `shift` is
 * the time_shift in cycles per record (0 for none). Loads the module on the
 * context's first use. Errors: EBACKEND (the module does not load or the
 * launch fails: the caller decodes on the host), ELIMIT (too many scopes or
 * contexts). */
int cp_reduce_launch(const cp_cudadrv *d, cp_cucontext ctx, cp_custream s, const cproton_buffer_layout *layout,
                     cp_cudeviceptr buf, size_t size, cp_cudeviceptr out, int64_t shift);

#endif
