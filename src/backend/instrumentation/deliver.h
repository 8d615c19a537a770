/* backend/instrumentation/deliver.h -- decoding and delivering a launch's
 * buffer (deliver.c), and the statistics it keeps. Below runtime.c: it
 * never calls into the runtime, which passes in what it needs. */
#ifndef CP_BACKEND_INSTR_DELIVER_H
#define CP_BACKEND_INSTR_DELIVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/session.h"
#include "cproton/instrumentation.h"

struct cproton_instr_kernel {
  char *name;
  cproton_buffer_layout layout; /* scope_names/parents point below */
  char **names;
  int32_t *parents;
  uint32_t *name_ids; /* strtab ids of the scope names */
  int has_events;     /* some scope is an event (pl.start_event): events pair
                         across warps, which only the host decoder does */
};

/* Counters of cproton_instr_get_stats (deliver.c), bumped by runtime.c:
 * a launch reported, a launch that could not be decoded, a wait for a
 * pool buffer, a launch's time in flight and decoding, and a launch of
 * in-kernel sums read (`ok`) or refused. */
void cp_instr_count_launch(void);
void cp_instr_count_failure(void);
void cp_instr_count_wait(uint64_t ns);
void cp_instr_count_pipeline(uint64_t inflight_ns, uint64_t decode_ns);
void cp_instr_count_summed(int ok);

/* Decodes `data` for kernel `k` and delivers it to the sessions of `site`.
 * `device` is the CUDA device id. Counts into the runtime's statistics.
 * Called by the worker thread and by cproton_instr_record_host. */
int cp_instr_deliver(const cproton_instr_kernel *k, const cp_launch_site *site,
                     const void *data, size_t size, uint32_t device,
                     unsigned mode_flags);

/* The two halves of cp_instr_deliver, so that decoding (the costly part)
 * runs in parallel while deliveries keep launch order. The decode keeps
 * event lists only when a session of `site` records a trace. Deliver
 * frees `d`. `mode_flags` are the decoder flags of the active session's
 * mode (runtime.c's cp_instr_mode_decode_flags), passed in so that this
 * half never calls back into the runtime. */
int cp_instr_decode(const cproton_instr_kernel *k, const cp_launch_site *site,
                    const void *data, size_t size, unsigned mode_flags,
                    cproton_decoded **out);
/* The device reduction's totals `words` (instrument/layout.h, CP_REDUCE_*)
 * of a launch of `k` as a decoded result. With `check_data` (the same
 * buffer copied back, `size` bytes), decodes it on the host too and counts
 * and reports any difference (CPROTON_INSTR_REDUCE_CHECK). */
int cp_instr_take_reduced(const cproton_instr_kernel *k, const uint64_t *words, const void *check_data, size_t size,
                          unsigned mode_flags, cproton_decoded **out);
int cp_instr_deliver_decoded(const cproton_instr_kernel *k,
                             const cp_launch_site *site, cproton_decoded *d,
                             uint32_t device);

#endif
