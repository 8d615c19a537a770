/* backend/instrumentation/decode.h -- the profile-buffer decoder behind
 * cproton_buffer_decode (cp_decode_*). The public API is in
 * <cproton/instrument.h>; this header only names the limits. */
#ifndef CP_BACKEND_INSTRUMENTATION_DECODE_H
#define CP_BACKEND_INSTRUMENTATION_DECODE_H

/* Open scopes tracked per unit while pairing; deeper starts are unpaired. */
#include <stddef.h>
#include <stdint.h>

#include "cproton/instrument.h"

/* Open scopes tracked per unit while pairing; deeper starts are unpaired.
 * reduce.cu's CP_REDUCE_DEPTH is the same number. */
#define CP_DECODE_MAX_DEPTH 64

/* The depth (trace line) of event occurrences: beside their warp's scopes,
 * which they need not nest with. */
#define CP_DECODE_EVENT_DEPTH CP_DECODE_MAX_DEPTH

/* Largest buffer accepted (bytes). */
#define CP_DECODE_MAX_BYTES (1ull << 36)

/* A decoded result made from the device reduction's words (layout.h,
 * CP_REDUCE_*): per-scope totals, dropped, unpaired, bad CTAs and the clock
 * sums, as the host decoder computes them with CPROTON_DECODE_NO_EVENTS;
 * no CTA or unit entries (n_ctas and n_warps are 0). Errors: EINVAL (a bad
 * layout), ENOMEM. */
int cp_decoded_from_reduce(const uint64_t *words, const cproton_buffer_layout *layout, cproton_decoded **out);

/* The clock measurement's inputs: over the CTAs with a paired end, the sum
 * of the furthest end (counter units after the start counter) and of the
 * globaltimer span from kernel entry to finalize. */
void cp_decoded_clock(const cproton_decoded *d, uint64_t *cycles, uint64_t *ns);

/* Units x good CTAs: the normalisation of normalized_cycles. */
size_t cp_decoded_n_units_total(const cproton_decoded *d);

#endif
