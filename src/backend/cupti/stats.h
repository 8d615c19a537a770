/* backend/cupti/stats.h -- the end-of-run report of the CUPTI backend
 * (cp_stats_*): every record that did not land where it belongs is counted
 * and reported once, in one warning, never silently. */
#ifndef CP_BACKEND_CUPTI_STATS_H
#define CP_BACKEND_CUPTI_STATS_H

#include "backend/cupti/state.h"

/* Zeroes every counter. */
void cp_stats_reset(cp_cupti_stats *s);

/* Logs one warning naming each non-zero problem counter (dropped,
 * unattributed, collisions, ...) and one debug line with the totals.
 * Returns 1 when a warning was logged. Not a hot path (backend stop). */
int cp_stats_report(const cp_cupti_stats *s, size_t ring_slots);

#endif
