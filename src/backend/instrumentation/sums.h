/* backend/instrumentation/sums.h -- the slots written by a kernel that sums
 * in the kernel (cproton_ptx_options.aggregate; instrument/layout.h,
 * "In-kernel sums") into a decoded launch (cp_sums_*). */
#ifndef CP_BACKEND_INSTRUMENTATION_SUMS_H
#define CP_BACKEND_INSTRUMENTATION_SUMS_H

#include <stddef.h>
#include <stdint.h>

#include "cproton/instrument.h"

/* Slots a launch of `n_ctas` CTAs writes: min(n_ctas, CP_AGG_SLOTS). */
size_t cp_sums_n_slots(size_t n_ctas);

/* Sums the `n_slots` slots at `slots` (each layout->per_cta_bytes long,
 * its first cp_layout_sum_words(n_scopes) u64 words used; copied back from
 * a launch of `n_ctas` CTAs of a kernel with `layout`) into a decoded result: per-scope totals, CTAs that never
 * finalized as bad CTAs. Errors: EINVAL (a layout that is not aggregate or
 * has too many scopes), EPARSE (slots that cannot come from one launch:
 * more finalized CTAs than the grid has, records dropped, or unpaired
 * totals that disagree: memory not zeroed before the launch, or corrupt;
 * the message names the kernel and the value), ENOMEM. */
int cp_sums_decode(const char *kernel, const cproton_buffer_layout *layout, const uint64_t *slots, size_t n_slots,
                   size_t n_ctas, cproton_decoded **out);

#endif
