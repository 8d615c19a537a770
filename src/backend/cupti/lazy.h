/* backend/cupti/lazy.h -- launch callbacks only when the calling context
 * changed (cp_lazy_*; CPROTON_CUPTI_LAZY=1, docs/cupti.md "Lazy launch
 * callbacks").
 *
 * While no launch site can have changed since the last captured launch
 * (cp_context_generation unchanged, every thread launching under one site:
 * cp_context_uniform, cp_session_sites_shared), the launch callbacks are
 * switched off in CUPTI and the launches that follow cost the program only
 * CUPTI's activity record. Their records carry correlation ids no callback
 * stored; they fall in an id range that maps to the site of the launch
 * that switched the callbacks off:
 *
 *   ids:   ... c0 | c0+1 ... c1-1 | c1 ...
 *                ^ last captured   ^ first captured after a change
 *   range {first = c0+1, last = c1-1, site of c0}
 *
 * Any change (scope, state, op, session, main thread) re-enables the
 * callbacks on the changing thread before it returns, so its next launch is
 * captured and closes the range. Only a fresh capture closes it (its launch
 * began after the re-enable), and a range starts at the first capture of
 * the stable run, not at c0 + 1: launches racing the switches took ids on
 * the other side of them (lazy.c). Ranges live in a ring of fixed size; a
 * record in no range is unattributed (counted) and suspends lazy mode.
 *
 * Enter and exit: the callbacks are switched off only in the API *exit*
 * callback of the launch that completed the stable run, and only while no
 * other captured launch waits for its exit; never inside an enter callback.
 * On the H100 (docs/cupti.md, "Switching off inside a launch"), switching
 * off inside a launch's enter callback made CUPTI drop that launch's exit,
 * and from then on every launch of that thread, callbacks on or off, carried
 * the disabling launch's correlation id: records of different sites shared
 * one id. A thread whose captured ids stop increasing suspends lazy mode. */
#ifndef CP_BACKEND_CUPTI_LAZY_H
#define CP_BACKEND_CUPTI_LAZY_H

#include <stdint.h>

#include "backend/cupti/state.h"

/* Launches with no change between them before the callbacks go off. */
#define CP_LAZY_STABLE 4
/* Ranges kept for records not yet processed. */
#define CP_LAZY_RANGES 16384

/* Turns lazy mode on for `st` (hooks.launch_callbacks must be set) and
 * registers the context change hook. Not a hot path; ENOMEM. */
int cp_lazy_start(cp_cupti_state *st);

/* Re-enables the callbacks if they are off, unregisters the hook, forgets
 * the ranges. No-op when lazy mode is off. */
void cp_lazy_stop(cp_cupti_state *st);

/* A captured launch (API enter) with correlation id `id`, driver callback
 * `cbid`, at `site`; `gen` is cp_context_generation() read before the
 * capture. Closes an open range; once the context has been stable for
 * CP_LAZY_STABLE launches, asks for the switch-off at this launch's exit.
 * Switches back on if the callbacks are off (a launch racing the switch).
 * Hot path. */
void cp_lazy_launched(cp_cupti_state *st, uint32_t cbid, uint32_t id,
                      uint64_t gen, const cp_launch_site *site);

/* The API exit of launch `id` on this thread: switches the callbacks off
 * if its enter asked to and nothing changed since. Hot path (one relaxed
 * load when lazy mode is off). */
void cp_lazy_exited(cp_cupti_state *st, uint32_t id);

/* The site of a record whose id no callback stored: 1 and `*out` when `id`
 * falls in a range, else 0. Called on the records thread. */
int cp_lazy_lookup(cp_cupti_state *st, uint32_t id, cp_launch_site *out);

#endif
