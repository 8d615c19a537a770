/* backend/instrumentation/reduce.h -- the device reduction of profile
 * buffers (cp_reduce_*): its result words (instrument/layout.h,
 * CP_REDUCE_*), their comparison with the host decoder's (reduce_words.c),
 * and its launch on the copy stream (reduce_launch.c; the kernel is
 * reduce.cu, embedded as PTX). */
#ifndef CP_BACKEND_INSTRUMENTATION_REDUCE_H
#define CP_BACKEND_INSTRUMENTATION_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "cproton/instrument.h"

/* Scopes the kernel sums in shared memory (3 words each, 48 KiB in all);
 * kernels with more scopes are decoded on the host. */
#define CP_REDUCE_MAX_SCOPES 2000u

/* Words of the result for a kernel of `n_scopes` scopes. */
size_t cp_reduce_n_words(uint32_t n_scopes);

/* The words the device reduction would produce, from a host decode made
 * with CPROTON_DECODE_NO_EVENTS | CPROTON_DECODE_SKIP_BAD_CTAS. `w` holds
 * cp_reduce_n_words(n_scopes) words. */
void cp_reduce_words_of(const cproton_decoded *d, uint64_t *w);

/* Compares device words `dev` with host words `host` for `layout`; returns
 * the number of words that differ and describes the first in `msg` (scope
 * names included). */
size_t cp_reduce_diff(const uint64_t *dev, const uint64_t *host, const cproton_buffer_layout *layout, char *msg,
                      size_t cap);

#endif
