/* backend/cupti/pcsampling.h -- the vendor side of PC sampling
 * (cp_pcsampling_*): one CUPTI sampling configuration per CUDA context,
 * configured at start or on the first launch or creation seen for it; its
 * sampling range open from then on, closed, fetched into pcs_attr.c and
 * reopened where a period ends (flush; exact mode: a second calling
 * context for a function, a graph launch); a range of its own around each
 * function's first launches (`first=K`, both modes); cubins from module
 * loads kept in pcs_lines.c.
 * Called by features.c (enable/flush/disable rows) and by the public
 * cproton_pcsampling_add_cubin. Not a hot path except the per-launch context
 * check (one relaxed load when the context is the last one seen) and the
 * launch bracket (concurrent mode: a thread-local cache probe once a
 * function's first launches are done). */
#ifndef CP_BACKEND_CUPTI_PCSAMPLING_H
#define CP_BACKEND_CUPTI_PCSAMPLING_H

#include "backend/cupti/loader.h"
#include "backend/cupti/pcs_mode.h"
#include "backend/cupti/state.h"

/* Starts sampling with `opt` (state hooks installed). When
 * this CUPTI lacks the API, warns once and returns OK: kernels are still
 * profiled. Errors: ENOMEM. */
int cp_pcsampling_enable(const cp_loader_api *api, cp_cupti_state *st,
                         const cp_pcs_options *opt);

/* Drains every context and attributes all pending samples (`final`: with
 * the end-of-flush rules of pcs_attr.h). Call after the kernel records
 * were flushed. */
int cp_pcsampling_flush(int final);

/* Stops sampling; reports the counters once. */
void cp_pcsampling_disable(void);

#endif
