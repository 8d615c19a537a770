/* backend/cupti/adaptive.h -- batched delivery of repeated kernel records
 * (cp_adaptive_*; CPROTON_CUPTI_ADAPTIVE=N, opt-in, docs/cupti.md
 * "Adaptive mode").
 *
 * A key is (launch site: sessions, phase epoch, context nodes; kernel
 * name; device; graph; grid and block sizes). Its first CP_ADAPTIVE_STABLE
 * records are delivered one by one as in the default mode; after that its
 * records are summed into a batch (count, total duration) and one delivery
 * of N launches replaces N deliveries. Counts and times stay exact: summing
 * a skipped record's duration costs the same as skipping it, so scaling a
 * sample would add error for no saving. Partial batches are delivered at
 * every backend flush and at stop, so a profile never misses one. */
#ifndef CP_BACKEND_CUPTI_ADAPTIVE_H
#define CP_BACKEND_CUPTI_ADAPTIVE_H

#include <stdint.h>

#include "core/session.h"

/* Records of a key delivered singly before its records are batched. */
#define CP_ADAPTIVE_STABLE 8
/* Keys kept; a record whose key finds no slot is delivered singly. */
#define CP_ADAPTIVE_SLOTS 4096
/* The largest N (CPROTON_CUPTI_ADAPTIVE). */
#define CP_ADAPTIVE_MAX 65536

typedef struct cp_adaptive cp_adaptive;

/* A table batching N records per delivery (2 <= n <= CP_ADAPTIVE_MAX)
 * into `*out`. Errors: EINVAL, ENOMEM. */
int cp_adaptive_new(unsigned n, cp_adaptive **out);
void cp_adaptive_free(cp_adaptive *a);

/* Record `r` (duration end - start) of a launch at `site`, grid `blocks`,
 * block `threads`: 1 when it went into its key's batch (and a full batch
 * was delivered; `*rc` is that delivery's status), 0 when the caller must
 * deliver it as usual. Thread-safe; runs per record. */
int cp_adaptive_take(cp_adaptive *a, const cp_launch_site *site,
                     const cp_kernel_record *r, uint64_t blocks,
                     uint32_t threads, int *rc);

/* Delivers every partial batch. The first failing delivery's status. */
int cp_adaptive_flush(cp_adaptive *a);

/* Records that went into batches, and batches delivered. */
void cp_adaptive_counts(const cp_adaptive *a, uint64_t *batched,
                        uint64_t *batches);

#endif
