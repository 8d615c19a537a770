/* backend/instrumentation/decode_events.h -- pairing of event records
 * (Proton's pl.start_event / pl.end_event) within one CTA (cp_events_*).
 *
 * Events do not nest, and their start and end may be recorded by different
 * units (warp-specialized partitions) or in different loop iterations, so
 * they cannot be paired on a unit's scope stack. The decoder collects the
 * event records of one CTA and pairs them here: first per unit, each end
 * with the unit's earliest open start of the event (FIFO), then the
 * leftovers of all units per event in time order, each end with the
 * earliest open start before it. Counters of one CTA are one SM's clock,
 * so times of different units compare. */
#ifndef CP_BACKEND_INSTRUMENTATION_DECODE_EVENTS_H
#define CP_BACKEND_INSTRUMENTATION_DECODE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_ev_rec {
  uint32_t scope;
  uint32_t owner; /* the unit (or any id of the recording unit) */
  int64_t t;      /* counter units, relative to the CTA's start counter */
  uint64_t seq;   /* order of recording within the owner */
  int is_end;
} cp_ev_rec;

typedef struct cp_ev_pair {
  uint32_t scope;
  uint32_t owner;     /* the unit that recorded the start */
  uint32_t end_owner; /* the unit that recorded the end */
  int64_t start, end;
} cp_ev_pair;

/* Pairs `n` records (reordered in place). `pairs` has room for n / 2.
 * On return *n_pairs pairs are filled and r[0 .. *n_left) are the records
 * that found no partner. Errors: ENOMEM. */
int cp_events_pair(cp_ev_rec *r, size_t n, cp_ev_pair *pairs, size_t *n_pairs, size_t *n_left);

#endif
