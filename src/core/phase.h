/* core/phase.h -- a session's phases: consecutive slices of its
 * measurements, as Proton 3.9's proton.data.advance_phase() makes them
 * (cp_phases_*).
 *
 * A phase owns one data store (tree) and one trace. Phase 0 starts with
 * the session; advancing starts phase n+1 at a new session epoch, so a
 * record captured at launch lands in the phase that was current at its
 * launch, however late it arrives. Cleared or written phases give their
 * stores back to a spare list: stores are reset and reused, never freed
 * while the slot exists, because a scope entered on another thread may
 * still touch the store that was current a moment ago. */
#ifndef CP_CORE_PHASE_H
#define CP_CORE_PHASE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/data.h"
#include "core/trace.h"

typedef struct cp_phase {
  uint32_t number;
  uint32_t start_epoch, end_epoch; /* launches in [start, end) belong here */
  cp_data *data;
  cp_trace *trace;
} cp_phase;

#define CP_PHASES_FAILED_KEPT 8

typedef struct cp_phases {
  cp_phase *live; /* ascending numbers; the last one is current */
  size_t n_live, cap_live;
  cp_phase *spare; /* reset stores waiting for reuse (number unused) */
  size_t n_spare, cap_spare;
  uint32_t current;                /* number of the current phase */
  int64_t flushed_through;         /* phases <= this were flushed; -1 none */
  _Atomic uint32_t max_delivered;  /* highest phase a record landed in */
  _Atomic uint64_t late;           /* records whose phase was gone */
  /* part files (periodic flushing, finalize): how many were attempted and
   * failed, and the first CP_PHASES_FAILED_KEPT failed phase numbers */
  uint32_t n_parts, n_failed;
  uint32_t failed[CP_PHASES_FAILED_KEPT];
} cp_phases;

/* Starts phase 0 at `epoch` (the session's start epoch), dropping any
 * phase left from an earlier session of the slot. Errors: ENOMEM. */
int cp_phases_begin(cp_phases *ps, uint32_t epoch);

/* The current phase (never NULL after cp_phases_begin). */
cp_phase *cp_phases_current(cp_phases *ps);

/* The live phase numbered `number`, or NULL. */
cp_phase *cp_phases_find(cp_phases *ps, uint32_t number);

/* The live phase a launch captured at `epoch` belongs to, or NULL when that
 * phase was cleared or written (the caller counts the record as late). */
cp_phase *cp_phases_at_epoch(cp_phases *ps, uint32_t epoch);

/* Ends the current phase and starts the next one at `epoch`; sets
 * *number_out to its number. Errors: ENOMEM (nothing changes). */
int cp_phases_advance(cp_phases *ps, uint32_t epoch, uint32_t *number_out);

/* Drops phase `number` (with `up_to`, every phase <= number). The current
 * phase is emptied, not dropped: it keeps recording. */
void cp_phases_clear(cp_phases *ps, uint32_t number, int up_to);

/* Whether phase `number` is complete: over (before the current one) and
 * every record launched in it has been delivered -- a flush ran after it
 * ended, or a record of a later phase arrived (kernels finish in launch
 * order, the rule Proton uses). */
int cp_phases_complete(const cp_phases *ps, uint32_t number);

/* Notes that a flush started while `current_at_start` was current has
 * delivered everything launched before it. */
void cp_phases_flushed(cp_phases *ps, uint32_t current_at_start);

/* Counts one part file written (ok != 0) or lost (ok == 0) for phase
 * `number`, so that finalize can report every loss. */
void cp_phases_note_part(cp_phases *ps, uint32_t number, int ok);

/* "2, 5" (the failed phase numbers, "..." past the kept ones) into out. */
void cp_phases_failed_list(const cp_phases *ps, char *out, size_t size);

/* Frees every store (the slot goes away; no other thread may use them). */
void cp_phases_free(cp_phases *ps);

/* Empties every store and frees its per-node tables (a slot whose session
 * ended). No other thread may use them meanwhile. */
void cp_phases_trim(cp_phases *ps);

#endif
