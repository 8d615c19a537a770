/* backend/instrumentation/deliver.c -- decoded profile buffers into
 * sessions: per-scope metrics under kernel -> scope -> child scope, and
 * region events for traces, with cycles converted to time by the SM clock
 * measured in the same launch.
 *
 * Invariant: nothing is invented: unpaired or overwritten records are
 * counted (and reported at stop), never turned into durations.
 * Not a hot path: runs on the worker thread after the GPU finished. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/instrumentation/decode.h"
#include "backend/instrumentation/deliver.h"
#include "backend/instrumentation/reduce.h"
#include "core/device.h"
#include "core/error.h"
#include "core/log.h"
#include "core/strtab.h"

#define MAX_NESTING 64

/* A region's trace line (its depth, or the events' line) is 16 bits. */
_Static_assert(CP_DECODE_EVENT_DEPTH <= UINT16_MAX, "trace line fits u16");

static struct {
  atomic_ullong launches, decoded, dropped, unpaired, bad_ctas, failed;
  atomic_ullong reduced, reduce_checked, reduce_mismatches;
  atomic_ullong alloc_waits, alloc_wait_ns, inflight_ns, decode_ns;
  atomic_ullong summed;
} stats;

void cp_instr_count_launch(void) { atomic_fetch_add(&stats.launches, 1); }
void cp_instr_count_failure(void) { atomic_fetch_add(&stats.failed, 1); }
void cp_instr_count_wait(uint64_t ns) {
  atomic_fetch_add(&stats.alloc_waits, 1);
  atomic_fetch_add(&stats.alloc_wait_ns, ns);
}
void cp_instr_count_pipeline(uint64_t inflight_ns, uint64_t decode_ns) {
  atomic_fetch_add(&stats.inflight_ns, inflight_ns);
  atomic_fetch_add(&stats.decode_ns, decode_ns);
}
void cp_instr_count_summed(int ok) {
  atomic_fetch_add(ok ? &stats.decoded : &stats.failed, 1);
  if (ok)
    atomic_fetch_add(&stats.summed, 1);
}

int cproton_instr_get_stats(cproton_instr_stats *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "stats pointer is NULL");
  out->launches = atomic_load(&stats.launches);
  out->decoded = atomic_load(&stats.decoded);
  out->dropped = atomic_load(&stats.dropped);
  out->unpaired = atomic_load(&stats.unpaired);
  out->bad_ctas = atomic_load(&stats.bad_ctas);
  out->failed = atomic_load(&stats.failed);
  out->reduced = atomic_load(&stats.reduced);
  out->reduce_checked = atomic_load(&stats.reduce_checked);
  out->reduce_mismatches = atomic_load(&stats.reduce_mismatches);
  out->alloc_waits = atomic_load(&stats.alloc_waits);
  out->alloc_wait_ns = atomic_load(&stats.alloc_wait_ns);
  out->inflight_ns = atomic_load(&stats.inflight_ns);
  out->decode_ns = atomic_load(&stats.decode_ns);
  out->summed = atomic_load(&stats.summed);
  return CPROTON_OK;
}

/* Scope `s`'s path of name ids from its top-level ancestor; returns depth. */
static size_t scope_path(const cproton_instr_kernel *k, int32_t s,
                         uint32_t *path) {
  uint32_t rev[MAX_NESTING];
  size_t n = 0;
  for (; s >= 0 && n < MAX_NESTING && (uint32_t)s < k->layout.n_scopes;
       s = k->parents[s])
    rev[n++] = k->name_ids[s];
  for (size_t i = 0; i < n; i++)
    path[i] = rev[n - 1 - i];
  return n;
}

/* Counter units per nanosecond, measured: per CTA, the latest paired end
 * any unit recorded (counter units after thread 0's start counter) over the
 * globaltimer time from kernel entry to finalize, summed over CTAs (integer
 * sums, so that the device reduction's are identical). Falls back to the
 * device's reported clock when nothing was recorded. */
static double measured_rate(const cproton_decoded *d, uint32_t counter,
                            uint32_t device) {
  if (counter == CPROTON_COUNTER_GLOBALTIMER)
    return 1.0;
  uint64_t sum_cycles, sum_ns;
  cp_decoded_clock(d, &sum_cycles, &sum_ns);
  double cycles = (double)sum_cycles, ns = (double)sum_ns;
  if (ns > 0 && cycles / ns > 0.1 && cycles / ns < 10.0)
    return cycles / ns;
  cp_device_info devs[CP_MAX_DEVICES];
  int n = cp_device_list(devs, CP_MAX_DEVICES);
  for (int i = 0; i < n; i++)
    if (devs[i].id == device && devs[i].clock_rate)
      return devs[i].clock_rate / 1e6; /* kHz -> cycles per ns */
  return 1.0;
}

static void add(const cp_launch_site *site, const cproton_instr_kernel *k,
                const uint32_t *path, size_t n, const char *metric,
                cp_value v) {
  uint32_t id;
  if (cp_strtab_intern(metric, strlen(metric), &id) == CPROTON_OK)
    cp_session_deliver_path_metric(site, k->name, path, n, id, v);
}

static void deliver_scopes(const cproton_instr_kernel *k,
                           const cp_launch_site *site,
                           const cproton_decoded *d, double rate,
                           uint32_t device) {
  char dev[16];
  snprintf(dev, sizeof dev, "%u", device);
  uint32_t dev_id = 0, cuda_id = 0;
  cp_strtab_intern(dev, strlen(dev), &dev_id);
  /* Proton (3.6 and 3.9) writes a cycle metric's device type as the
   * number of its DeviceType enum (CUDA = 1), not the name kernel
   * metrics carry. */
  cp_strtab_intern("1", 1, &cuda_id);
  for (size_t i = 0; i < cproton_decoded_n_scopes(d); i++) {
    cproton_decoded_scope s;
    cproton_decoded_get_scope(d, i, &s);
    if (s.count == 0 && s.unpaired == 0)
      continue;
    uint32_t path[MAX_NESTING];
    size_t n = scope_path(k, (int32_t)i, path);
    if (s.unpaired) /* only when there are some: Proton's tree otherwise */
      add(site, k, path, n, "unpaired_records",
          (cp_value){CP_VALUE_INT, {.i = (int64_t)s.unpaired}});
    if (s.count == 0)
      continue;
    add(site, k, path, n, "cycles", (cp_value){CP_VALUE_INT, {.i = (int64_t)s.cycles}});
    add(site, k, path, n, "normalized_cycles",
        (cp_value){CP_VALUE_DOUBLE, {.d = s.normalized_cycles}});
    add(site, k, path, n, "count", (cp_value){CP_VALUE_INT, {.i = (int64_t)s.count}});
    add(site, k, path, n, "normalized_time (ns)",
        (cp_value){CP_VALUE_DOUBLE, {.d = s.normalized_cycles / rate}});
    add(site, k, path, n, "device_id", (cp_value){CP_VALUE_STRING, {.s = dev_id}});
    add(site, k, path, n, "device_type", (cp_value){CP_VALUE_STRING, {.s = cuda_id}});
  }
}

/* Records lost to full circular segments, on the kernel's node (their
 * scopes are unknown: they were overwritten); CTAs skipped for a bad
 * header likewise. Only when there are some. */
static void deliver_drops(const cproton_instr_kernel *k,
                          const cp_launch_site *site,
                          const cproton_decoded *d) {
  uint64_t dropped = cproton_decoded_n_dropped(d);
  size_t bad = cproton_decoded_n_bad_ctas(d);
  if (dropped)
    add(site, k, NULL, 0, "dropped_records",
        (cp_value){CP_VALUE_INT, {.i = (int64_t)dropped}});
  if (bad)
    add(site, k, NULL, 0, "bad_ctas", (cp_value){CP_VALUE_INT, {.i = (int64_t)bad}});
}

/* Region events in Proton's order (SM, CTA, warp, start), on the
 * kernel's node: the call stack of an intra-kernel event is the host's
 * stack up to the kernel, as in Proton's trace. */
typedef struct region_ref {
  uint32_t sm, cta, warp;
  int64_t start;
  uint32_t w, e; /* warp index in the result, event index in the warp */
} region_ref;

static int region_cmp(const void *pa, const void *pb) {
  const region_ref *a = pa, *b = pb;
  if (a->sm != b->sm)
    return a->sm < b->sm ? -1 : 1;
  if (a->cta != b->cta)
    return a->cta < b->cta ? -1 : 1;
  if (a->warp != b->warp)
    return a->warp < b->warp ? -1 : 1;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  return a->e < b->e ? -1 : a->e > b->e;
}

static region_ref *sorted_regions(const cproton_decoded *d, size_t *n_out) {
  size_t n = 0, n_warps = cproton_decoded_n_warps(d);
  for (size_t w = 0; w < n_warps; w++) {
    cproton_decoded_warp wp;
    cproton_decoded_get_warp(d, w, &wp);
    n += wp.n_events;
  }
  region_ref *r = malloc((n ? n : 1) * sizeof *r);
  if (!r)
    return NULL;
  n = 0;
  for (size_t w = 0; w < n_warps; w++) {
    cproton_decoded_warp wp;
    cproton_decoded_get_warp(d, w, &wp);
    for (size_t e = 0; e < wp.n_events; e++)
      r[n++] = (region_ref){wp.sm_id, wp.cta_id, wp.warp, wp.events[e].start,
                            (uint32_t)w, (uint32_t)e};
  }
  qsort(r, n, sizeof *r, region_cmp);
  *n_out = n;
  return r;
}

/* CTAs are aligned on their globaltimer start, the earliest at the launch's
 * CPU time so regions sit beside the host timeline. */
static int deliver_regions(const cproton_instr_kernel *k,
                           const cp_launch_site *site,
                           const cproton_decoded *d, double rate) {
  size_t n_ctas = cproton_decoded_n_ctas(d), n = 0;
  uint64_t first = UINT64_MAX;
  for (size_t c = 0; c < n_ctas; c++) {
    cproton_decoded_cta cta;
    cproton_decoded_get_cta(d, c, &cta);
    if (cta.start_time < first)
      first = cta.start_time;
  }
  region_ref *r = sorted_regions(d, &n);
  if (!r)
    return cp_error_set(CPROTON_ENOMEM, "out of memory ordering regions");
  uint64_t base = site->launch_ns ? site->launch_ns : first;
  uint32_t group = 0;
  cp_strtab_intern(k->name, strlen(k->name), &group);
  for (size_t i = 0; i < n; i++) {
    cproton_decoded_warp wp;
    cproton_decoded_cta cta;
    cproton_decoded_get_warp(d, r[i].w, &wp);
    cproton_decoded_get_cta(d, wp.cta, &cta);
    const cproton_decoded_event *ev = &wp.events[r[i].e];
    double cta0 = (double)base + (double)(cta.start_time - first);
    cp_event out = {.kind = CP_EVENT_REGION,
                    .start_ns = (uint64_t)(cta0 + ev->start / rate),
                    .end_ns = (uint64_t)(cta0 + ev->end / rate),
                    .name = k->name_ids[ev->scope],
                    .u.region = {
                        .warp = wp.warp, .sm = wp.sm_id,
                        .line = (uint16_t)ev->depth, .cta = wp.cta_id,
                        .kernel_name = group,
                        .cta_init_ns = cta.start_time,
                        .cta_pre_final_ns = cta.finalize_time,
                        .cta_post_final_ns = cta.end_time,
                        .is_event = ev->depth == CP_DECODE_EVENT_DEPTH,
                        .end_warp = ev->end_warp,
                        /* the anchor of these times: the trace writer
                         * moves them onto the kernel's CUPTI start when it
                         * is known (core/kernel_times.h) */
                        .launch_ns = site->launch_ns}};
    cp_session_deliver_event(site, k->name, NULL, 0, &out);
  }
  free(r);
  return CPROTON_OK;
}

int cp_instr_decode(const cproton_instr_kernel *k, const cp_launch_site *site,
                    const void *data, size_t size, unsigned mode_flags,
                    cproton_decoded **out) {
  unsigned flags = CPROTON_DECODE_SKIP_BAD_CTAS | mode_flags;
  if (!cp_session_site_traces(site))
    flags |= CPROTON_DECODE_NO_EVENTS;
  int rc = cproton_buffer_decode(data, size, &k->layout, flags, out);
  atomic_fetch_add(rc ? &stats.failed : &stats.decoded, 1);
  return rc;
}

/* The host decode of CPROTON_INSTR_REDUCE_CHECK, diffed with the device's
 * words: the host decoder is the reference. */
static void check_reduced(const cproton_instr_kernel *k, const uint64_t *words, const void *data, size_t size,
                          unsigned mode_flags) {
  cproton_decoded *h = NULL;
  size_t n = cp_reduce_n_words(k->layout.n_scopes), bad;
  uint64_t *hw = malloc(n * sizeof *hw);
  char msg[256];
  int rc = hw ? cproton_buffer_decode(data, size, &k->layout, CPROTON_DECODE_SKIP_BAD_CTAS |
                                      CPROTON_DECODE_NO_EVENTS | mode_flags, &h)
              : cp_error_set(CPROTON_ENOMEM, "out of memory checking the device reduction");
  if (rc) {
    cp_warn("kernel %s: device reduction check: %s", k->name, cp_error_message());
    bad = 1;
  } else {
    cp_reduce_words_of(h, hw);
    bad = cp_reduce_diff(words, hw, &k->layout, msg, sizeof msg);
    if (bad)
      cp_warn("kernel %s: the device reduction differs from the host decoder in %zu values; first: %s", k->name,
              bad, msg);
  }
  atomic_fetch_add(&stats.reduce_checked, 1);
  if (bad)
    atomic_fetch_add(&stats.reduce_mismatches, 1);
  cproton_decoded_free(h);
  free(hw);
}

int cp_instr_take_reduced(const cproton_instr_kernel *k, const uint64_t *words, const void *check_data, size_t size,
                          unsigned mode_flags, cproton_decoded **out) {
  if (check_data)
    check_reduced(k, words, check_data, size, mode_flags);
  int rc = cp_decoded_from_reduce(words, &k->layout, out);
  atomic_fetch_add(rc ? &stats.failed : &stats.decoded, 1);
  if (!rc)
    atomic_fetch_add(&stats.reduced, 1);
  return rc;
}

int cp_instr_deliver_decoded(const cproton_instr_kernel *k,
                             const cp_launch_site *site, cproton_decoded *d,
                             uint32_t device) {
  atomic_fetch_add(&stats.dropped, cproton_decoded_n_dropped(d));
  atomic_fetch_add(&stats.unpaired, cproton_decoded_n_unpaired(d));
  atomic_fetch_add(&stats.bad_ctas, cproton_decoded_n_bad_ctas(d));
  double rate = measured_rate(d, k->layout.counter, device);
  deliver_scopes(k, site, d, rate, device);
  deliver_drops(k, site, d);
  int rc = CPROTON_OK;
  if (cproton_decoded_n_warps(d) && cp_session_site_traces(site))
    rc = deliver_regions(k, site, d, rate);
  cproton_decoded_free(d);
  return rc;
}

int cp_instr_deliver(const cproton_instr_kernel *k, const cp_launch_site *site,
                     const void *data, size_t size, uint32_t device,
                     unsigned mode_flags) {
  cproton_decoded *d = NULL;
  int rc = cp_instr_decode(k, site, data, size, mode_flags, &d);
  return rc ? rc : cp_instr_deliver_decoded(k, site, d, device);
}
