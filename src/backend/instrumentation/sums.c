/* backend/instrumentation/sums.c -- reads the slots of in-kernel sums
 * (layout: instrument/layout.h, "In-kernel sums"): adds them up, checks
 * that they can come from one launch, and hands the totals to the same
 * path as the device reduction's result (cp_decoded_from_reduce).
 *
 * Invariant: nothing is invented. The slots are untrusted (device memory
 * that a failed launch or a bug may leave stale): totals that no launch of
 * this grid can produce are refused with the kernel and the value named,
 * never delivered. Not a hot path: a decoder thread, once per launch. */
#include "backend/instrumentation/sums.h"

#include "backend/instrumentation/decode.h"
#include "core/error.h"
#include "instrument/layout.h"

size_t cp_sums_n_slots(size_t n_ctas) { return n_ctas < CP_AGG_SLOTS ? n_ctas : CP_AGG_SLOTS; }

/* Checks totals `w` of a launch of `n_ctas` CTAs; fills BAD_CTAS. */
static int check_totals(const char *kernel, uint32_t n_scopes, uint64_t *w, size_t n_ctas) {
  const char *what = "";
  uint64_t unpaired = 0;
  for (uint32_t s = 0; s < n_scopes; s++)
    unpaired += w[CP_REDUCE_FIXED + 2 * n_scopes + s];
  if (w[CP_REDUCE_CTAS] > n_ctas)
    what = "more finalized CTAs than the grid has";
  else if (w[CP_REDUCE_DROPPED] || w[CP_REDUCE_BAD_CTAS])
    what = "dropped records or bad CTAs, which in-kernel sums never write";
  else if (unpaired != w[CP_REDUCE_UNPAIRED])
    what = "unpaired markers per scope that do not add up to the total";
  if (*what)
    return cp_error_set(CPROTON_EPARSE, "kernel %s: in-kernel sums of a %zu-CTA launch hold %s (CTAs %llu, "
                        "unpaired %llu of %llu): the slots were not zeroed or are corrupt; launch skipped",
                        kernel, n_ctas, what, (unsigned long long)w[CP_REDUCE_CTAS],
                        (unsigned long long)unpaired, (unsigned long long)w[CP_REDUCE_UNPAIRED]);
  w[CP_REDUCE_BAD_CTAS] = n_ctas - w[CP_REDUCE_CTAS]; /* never reached their exit */
  return 0;
}

int cp_sums_decode(const char *kernel, const cproton_buffer_layout *layout, const uint64_t *slots, size_t n_slots,
                   size_t n_ctas, cproton_decoded **out) {
  if (!layout || !slots || !out || !kernel)
    return cp_error_set(CPROTON_EINVAL, "cp_sums_decode: NULL argument");
  *out = NULL;
  if (!layout->aggregate || layout->n_scopes > CP_AGG_MAX_SCOPES)
    return cp_error_set(CPROTON_EINVAL, "kernel %s: layout of %u scopes is not one of in-kernel sums", kernel,
                        layout->n_scopes);
  if (n_slots != cp_sums_n_slots(n_ctas))
    return cp_error_set(CPROTON_EINVAL, "kernel %s: %zu slots for %zu CTAs (expected %zu)", kernel, n_slots,
                        n_ctas, cp_sums_n_slots(n_ctas));
  if (layout->per_cta_bytes != cp_layout_sum_slot_bytes(layout->n_scopes))
    return cp_error_set(CPROTON_EINVAL, "kernel %s: %u-byte slots for %u scopes (expected %u)", kernel,
                        layout->per_cta_bytes, layout->n_scopes, cp_layout_sum_slot_bytes(layout->n_scopes));
  uint64_t w[CP_REDUCE_FIXED + 3 * CP_AGG_MAX_SCOPES] = {0};
  uint32_t words = cp_layout_sum_words(layout->n_scopes), stride = layout->per_cta_bytes / 8;
  for (size_t i = 0; i < n_slots; i++)
    for (uint32_t j = 0; j < words; j++)
      w[j] += slots[i * stride + j];
  int rc = check_totals(kernel, layout->n_scopes, w, n_ctas);
  return rc ? rc : cp_decoded_from_reduce(w, layout, out);
}
