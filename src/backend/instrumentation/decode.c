/* backend/instrumentation/decode.c -- decodes a profile buffer copied back
 * from the device (layout: instrument/layout.h) into per-scope totals,
 * per-CTA headers and per-unit event lists (cproton_buffer_decode).
 *
 * Invariant: nothing is invented. Only the records a unit's count says
 * survive are read; a record whose partner was overwritten or never
 * written is counted as unpaired, never given a duration. The input is
 * untrusted: every field is checked against the layout before use and
 * every error names the CTA slice and byte offset. Not a hot path (it
 * allocates); the runtime calls it off the launch path, tools and tests
 * call it directly. */
#include <stdlib.h>
#include <string.h>

#include "backend/instrumentation/decode.h"
#include "backend/instrumentation/decode_events.h"
#include "core/check.h"
#include "core/error.h"
#include "core/grow.h"
#include "cproton/instrument.h"
#include "instrument/layout.h"

struct cproton_decoded {
  size_t n_scopes;
  char **names;
  int32_t *parents;
  uint64_t *cycles, *counts, *unpaired_by_scope;
  unsigned flags;
  int64_t shift; /* time_shift: cycles per record, else 0 */
  size_t n_units_total; /* units * valid CTAs, for normalisation */
  cproton_decoded_cta *ctas;
  size_t n_ctas, n_bad;
  cproton_decoded_warp *warps;
  size_t *first_event; /* per warp: index of its first event */
  size_t n_warps, cap_warps;
  cproton_decoded_event *events;
  size_t n_events, cap_events;
  uint64_t dropped, unpaired;
  uint64_t clock_cycles, clock_ns; /* the clock measurement's sums */
  /* event records of the CTA being decoded (paired when it is done) */
  cp_ev_rec *ev;
  size_t n_ev, cap_ev;
  cp_ev_pair *ev_pairs;
  int has_events; /* some scope is an event: records need the check */
};

typedef struct open_rec {
  uint32_t scope;
  int64_t t;
} open_rec;

/* Little-endian loads: one plain load on little-endian hosts (the decoder
 * reads every surviving record, so this is its inner loop). */
static inline uint32_t rd32(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
#else
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}

static inline uint64_t rd64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
#else
  return rd32(p) | (uint64_t)rd32(p + 4) << 32;
#endif
}

/* The layout of in-kernel sums: one slot of totals per CTA, no records. */
static int check_sums_layout(const cproton_buffer_layout *l) {
  uint32_t n = l->n_units;
  if (n == 0 || n > CP_LAYOUT_MAX_UNITS || l->n_scopes > CP_AGG_MAX_SCOPES ||
      l->per_cta_bytes != cp_layout_sum_slot_bytes(l->n_scopes))
    return cp_error_set(CPROTON_EINVAL, "layout: in-kernel sums of %u scopes over %u units with %u bytes per CTA "
                        "(need 1..32 units, at most %u scopes, %u bytes)", l->n_scopes, n, l->per_cta_bytes,
                        CP_AGG_MAX_SCOPES, cp_layout_sum_slot_bytes(l->n_scopes));
  return 0;
}

static int check_layout(const cproton_buffer_layout *l) {
  uint32_t n = l->n_units, seg = l->segment_bytes;
  if (l->aggregate)
    return check_sums_layout(l);
  if (n == 0 || n > CP_LAYOUT_MAX_UNITS || seg < CP_LAYOUT_MIN_SEGMENT || (seg & (seg - 1)))
    return cp_error_set(CPROTON_EINVAL, "layout: %u units of %u bytes (need 1..32 units, power-of-two segments >= 16)", n, seg);
  if (l->header_bytes != cp_layout_header_bytes(n) ||
      (uint64_t)l->per_cta_bytes != (uint64_t)l->header_bytes + (uint64_t)n * seg)
    return cp_error_set(CPROTON_EINVAL, "layout: per_cta_bytes %u / header_bytes %u do not match %u units x %u bytes",
                        l->per_cta_bytes, l->header_bytes, n, seg);
  if (l->counter > CPROTON_COUNTER_GLOBALTIMER || l->n_scopes > CP_LAYOUT_MAX_SCOPES ||
      (l->n_scopes && !l->scope_names))
    return cp_error_set(CPROTON_EINVAL, "layout: bad counter %u or scope table (%u scopes)", l->counter, l->n_scopes);
  for (uint32_t i = 0; i < l->n_scopes; i++)
    if (!l->scope_names[i] || (l->scope_parents && l->scope_parents[i] >= (int32_t)l->n_scopes))
      return cp_error_set(CPROTON_EINVAL, "layout: scope %u has no name or a bad parent", i);
  return 0;
}

static int copy_scopes(cproton_decoded *d, const cproton_buffer_layout *l) {
  size_t n = l->n_scopes ? l->n_scopes : 1;
  d->n_scopes = l->n_scopes;
  d->names = calloc(n, sizeof *d->names);
  d->parents = calloc(n, sizeof *d->parents);
  d->cycles = calloc(n, sizeof *d->cycles);
  d->counts = calloc(n, sizeof *d->counts);
  d->unpaired_by_scope = calloc(n, sizeof *d->unpaired_by_scope);
  if (!d->names || !d->parents || !d->cycles || !d->counts || !d->unpaired_by_scope)
    return cp_error_set(CPROTON_ENOMEM, "out of memory decoding");
  for (size_t i = 0; i < l->n_scopes; i++) {
    d->names[i] = strdup(l->scope_names[i]);
    if (!d->names[i])
      return cp_error_set(CPROTON_ENOMEM, "out of memory decoding");
    d->parents[i] = l->scope_parents ? l->scope_parents[i] : -1;
    d->has_events |= d->parents[i] == CPROTON_SCOPE_PARENT_EVENT;
  }
  return 0;
}

/* Checks CTA slice `i` at `p`; fills `c`. */
static int check_cta(const unsigned char *p, size_t i, const cproton_buffer_layout *l, cproton_decoded_cta *c) {
  size_t off = i * (size_t)l->per_cta_bytes;
  uint32_t magic = rd32(p + CP_HDR_MAGIC);
  if (magic != CP_LAYOUT_MAGIC)
    return cp_error_set(CPROTON_EPARSE, "CTA slice %zu (byte %zu): bad magic 0x%08x, expected 0x%08x ('CPRB'); "
                        "the CTA never finalized or this is not a cproton profile buffer", i, off, magic, CP_LAYOUT_MAGIC);
  unsigned version = (unsigned)p[CP_HDR_VERSION] | (unsigned)p[CP_HDR_VERSION + 1] << 8;
  if (version != CP_LAYOUT_VERSION)
    return cp_error_set(CPROTON_EPARSE, "CTA slice %zu (byte %zu): buffer version %u, this decoder reads %u",
                        i, off + CP_HDR_VERSION, version, CP_LAYOUT_VERSION);
  if (p[CP_HDR_COUNTER] != l->counter || rd32(p + CP_HDR_N_UNITS) != l->n_units ||
      rd32(p + CP_HDR_SEG_BYTES) != l->segment_bytes)
    return cp_error_set(CPROTON_EPARSE, "CTA slice %zu (byte %zu): header says counter %u, %u units x %u bytes; "
                        "the layout says counter %u, %u x %u (buffer from another kernel?)", i, off,
                        p[CP_HDR_COUNTER], rd32(p + CP_HDR_N_UNITS), rd32(p + CP_HDR_SEG_BYTES), l->counter,
                        l->n_units, l->segment_bytes);
  c->cta_id = rd32(p + CP_HDR_CTA);
  if (c->cta_id != i)
    return cp_error_set(CPROTON_EPARSE, "CTA slice %zu (byte %zu): header names CTA %u (stale or torn data)",
                        i, off + CP_HDR_CTA, c->cta_id);
  c->sm_id = rd32(p + CP_HDR_SM);
  c->n_active_warps = rd32(p + CP_HDR_N_ACTIVE);
  if (c->n_active_warps > 32)
    return cp_error_set(CPROTON_EPARSE, "CTA slice %zu (byte %zu): %u active warps", i, off + CP_HDR_N_ACTIVE,
                        c->n_active_warps);
  c->start_time = rd64(p + CP_HDR_START_TIME);
  c->start_counter = rd64(p + CP_HDR_START_CTR);
  c->finalize_time = rd64(p + CP_HDR_FIN_TIME);
  c->end_time = rd64(p + CP_HDR_END_TIME);
  c->last_end = 0;
  c->finalize_counter = rd32(p + CP_HDR_FIN_CTR);
  return 0;
}

/* Appends an occurrence to the event list (events mode only). */
static inline __attribute__((always_inline)) int append_event(cproton_decoded *d, cproton_decoded_event ev) {
  if (d->n_events == d->cap_events) {
    void *e;
    if (cp_grow(d->events, &d->cap_events, d->n_events + 1, sizeof *d->events, 256, &e))
      return cp_error_set(CPROTON_ENOMEM, "out of memory decoding");
    d->events = e;
  }
  d->events[d->n_events++] = ev;
  return 0;
}

/* Inlined: it is on the per-record path of close_scope. */
static inline __attribute__((always_inline)) int add_event(cproton_decoded *d, uint32_t scope, uint32_t depth,
                                                           int64_t start, int64_t end, uint32_t end_warp) {
  d->cycles[scope] += end > start ? (uint64_t)(end - start) : 0;
  d->counts[scope]++;
  if (d->flags & CPROTON_DECODE_NO_EVENTS)
    return 0;
  return append_event(d, (cproton_decoded_event){scope, depth, start, end, end_warp, 0});
}

/* A surviving record of `scope` without a partner. */
static void unpaired(cproton_decoded *d, cproton_decoded_warp *w, uint32_t scope) {
  w->n_unpaired++;
  d->unpaired_by_scope[scope]++;
}

/* An end of `scope` at `t`: closes the innermost open `scope`; starts
 * opened inside it lost their ends and count as unpaired. */
static inline __attribute__((always_inline)) int close_scope(cproton_decoded *d, cproton_decoded_warp *w,
                                                             open_rec *st, size_t *depth, uint32_t scope,
                                                             int64_t t) {
  size_t j = *depth;
  while (j > 0 && st[j - 1].scope != scope)
    j--;
  if (j == 0) {
    unpaired(d, w, scope);
    return 0;
  }
  for (size_t k = j; k < *depth; k++)
    unpaired(d, w, st[k].scope);
  *depth = j - 1;
  if (d->shift && t < st[j - 1].t) /* shorter than the shift: Proton's rule */
    t = st[j - 1].t + d->shift / 2;
  return add_event(d, scope, (uint32_t)(j - 1), st[j - 1].t, t, w->warp);
}

/* ---- events: collected per CTA, paired across its units ------------------ */

static int push_event(cproton_decoded *d, uint32_t scope, uint32_t unit, int64_t t, uint64_t seq, int is_end) {
  if (d->n_ev == d->cap_ev) {
    size_t cap = d->cap_ev; /* committed once the pairs fit too */
    void *e;
    int rc = cp_grow(d->ev, &cap, d->n_ev + 1, sizeof *d->ev, 64, &e);
    cp_ev_pair *p = rc ? NULL : realloc(d->ev_pairs, (cap / 2 + 1) * sizeof *p);
    if (!rc)
      d->ev = e;
    if (!p)
      return cp_error_set(CPROTON_ENOMEM, "out of memory decoding events");
    d->ev_pairs = p;
    d->cap_ev = cap;
  }
  d->ev[d->n_ev++] = (cp_ev_rec){.scope = scope, .owner = unit, .t = t, .seq = seq, .is_end = is_end};
  return 0;
}

/* The CTA's warps are d->warps[w0 ..]; unit_warp maps a unit to its index
 * there. Puts each paired occurrence on the warp that recorded its start,
 * after that warp's scope occurrences, on line CP_DECODE_EVENT_DEPTH. */
static int place_events(cproton_decoded *d, size_t w0, const uint32_t *unit_warp, size_t n_pairs) {
  size_t first = d->first_event[w0], n_old = d->n_events - first;
  cproton_decoded_event *old = malloc((n_old ? n_old : 1) * sizeof *old);
  if (!old)
    return cp_error_set(CPROTON_ENOMEM, "out of memory decoding events");
  if (n_old) /* no event yet: d->events may still be NULL */
    memcpy(old, d->events + first, n_old * sizeof *old);
  d->n_events = first;
  int rc = 0;
  for (size_t w = w0; !rc && w < d->n_warps; w++) {
    size_t end = w + 1 < d->n_warps ? d->first_event[w + 1] : first + n_old;
    size_t from = d->first_event[w] - first, to = end - first;
    d->first_event[w] = d->n_events;
    for (size_t i = from; !rc && i < to; i++)
      rc = append_event(d, old[i]); /* counted when first added */
    for (size_t i = 0; !rc && i < n_pairs; i++) {
      const cp_ev_pair *p = &d->ev_pairs[i];
      if (unit_warp[p->owner] == w)
        rc = add_event(d, p->scope, CP_DECODE_EVENT_DEPTH, p->start, p->end,
                       d->warps[unit_warp[p->end_owner]].warp);
    }
  }
  free(old);
  return rc;
}

/* Pairs the CTA's event records; totals per event, unpaired records on the
 * unit that recorded them. */
static int finish_events(cproton_decoded *d, size_t w0, const uint32_t *unit_warp) {
  size_t n_pairs = 0, n_left = 0;
  int rc = cp_events_pair(d->ev, d->n_ev, d->ev_pairs, &n_pairs, &n_left);
  int keep = !(d->flags & CPROTON_DECODE_NO_EVENTS);
  for (size_t i = 0; !rc && !keep && i < n_pairs; i++)
    rc = add_event(d, d->ev_pairs[i].scope, CP_DECODE_EVENT_DEPTH, d->ev_pairs[i].start, d->ev_pairs[i].end,
                   0); /* no event list: the warp is not kept */
  for (size_t i = 0; !rc && i < n_left; i++) {
    d->unpaired_by_scope[d->ev[i].scope]++;
    d->unpaired++;
    if (keep)
      d->warps[unit_warp[d->ev[i].owner]].n_unpaired++;
  }
  if (!rc && keep && n_pairs) /* add_event keeps them too */
    rc = place_events(d, w0, unit_warp, n_pairs);
  d->n_ev = 0;
  return rc;
}

/* Pairs the surviving records of one unit. `seg` is its segment. */
/* `events` is a constant at each call: kernels without events get a loop
 * without the event check (it cost a quarter of the decode rate). */
static inline __attribute__((always_inline)) int pair_records(cproton_decoded *d, cproton_decoded_warp *w,
                                                              const unsigned char *seg,
                                                              const cproton_buffer_layout *l,
                                                              cproton_decoded_cta *c, const int events) {
  uint64_t start_ctr = c->start_counter;
  uint64_t cap = l->segment_bytes / CP_LAYOUT_RECORD_BYTES;
  uint64_t kept = w->n_written < cap ? w->n_written : cap;
  unsigned bits = cp_layout_counter_bits(l->counter);
  uint64_t mask = (1ull << bits) - 1, half = 1ull << (bits - 1);
  open_rec st[CP_DECODE_MAX_DEPTH];
  size_t depth = 0;
  int64_t t = 0;
  uint64_t prev = start_ctr & mask, first = w->n_written - kept;
  uint64_t slot = cap - 1; /* segments are powers of two: k mod cap */
  CP_ASSERT(cap && (cap & slot) == 0); /* check_layout refused others */
  w->n_dropped = first;
  for (uint64_t k = first; k < w->n_written; k++) {
    uint64_t v = rd64(seg + (k & slot) * CP_LAYOUT_RECORD_BYTES);
    uint32_t scope = (uint32_t)(v >> CP_LAYOUT_SCOPE_SHIFT) & 0x7fffu;
    uint64_t delta = ((v & mask) - prev) & mask;
    /* the first record may precede thread 0's start counter slightly */
    t += (k == first && delta >= half) ? (int64_t)delta - (int64_t)(mask + 1) : (int64_t)delta;
    prev = v & mask;
    int64_t ts = t - d->shift * (int64_t)(k - first + 1);
    int rc = 0;
    if (scope >= l->n_scopes)
      w->n_unpaired++; /* no scope to charge it to */
    else if (events && d->parents[scope] == CPROTON_SCOPE_PARENT_EVENT) {
      rc = push_event(d, scope, w->unit, ts, k, (int)(v >> CP_LAYOUT_END_BIT));
      if ((v >> CP_LAYOUT_END_BIT) && t > c->last_end)
        c->last_end = t;
    } else if (v >> CP_LAYOUT_END_BIT) {
      rc = close_scope(d, w, st, &depth, scope, ts);
      if (t > c->last_end)
        c->last_end = t; /* unshifted: it measures the clock */
    } else if (depth == CP_DECODE_MAX_DEPTH)
      unpaired(d, w, scope);
    else
      st[depth++] = (open_rec){scope, ts};
    if (rc)
      return rc;
  }
  while (depth > 0)
    unpaired(d, w, st[--depth].scope);
  return 0;
}

static int pair_unit(cproton_decoded *d, cproton_decoded_warp *w, const unsigned char *seg,
                     const cproton_buffer_layout *l, cproton_decoded_cta *c) {
  return d->has_events ? pair_records(d, w, seg, l, c, 1) : pair_records(d, w, seg, l, c, 0);
}

static int grow_warps(cproton_decoded *d, size_t cap) {
  cproton_decoded_warp *p = realloc(d->warps, cap * sizeof *p);
  if (p)
    d->warps = p;
  size_t *f = p ? realloc(d->first_event, cap * sizeof *f) : NULL;
  if (!p || !f)
    return cp_error_set(CPROTON_ENOMEM, "out of memory decoding");
  d->first_event = f;
  d->cap_warps = cap;
  return 0;
}

static int add_warp(cproton_decoded *d, cproton_decoded_warp **w) {
  if (d->n_warps == d->cap_warps) {
    int rc = grow_warps(d, d->cap_warps ? d->cap_warps * 2 : 64);
    if (rc)
      return rc;
  }
  d->first_event[d->n_warps] = d->n_events;
  *w = &d->warps[d->n_warps++];
  memset(*w, 0, sizeof **w);
  return 0;
}

static int decode_cta(cproton_decoded *d, const unsigned char *p, const cproton_buffer_layout *l,
                      cproton_decoded_cta *c) {
  size_t w0 = d->n_warps;
  uint32_t unit_warp[CP_LAYOUT_MAX_UNITS]; /* set for units that record (events mode) */
  for (uint32_t u = 0; u < l->n_units; u++) {
    if (l->unit_warp[u] >= c->n_active_warps)
      continue; /* the warp was not launched */
    /* aggregate-only decodes keep no per-unit entries: one stack copy */
    cproton_decoded_warp tmp = {0}, *w = &tmp;
    int rc = d->flags & CPROTON_DECODE_NO_EVENTS ? 0 : add_warp(d, &w);
    if (rc)
      return rc;
    w->cta = (uint32_t)d->n_ctas;
    w->cta_id = c->cta_id;
    w->sm_id = c->sm_id;
    w->warp = l->unit_warp[u];
    w->unit = u;
    w->n_written = rd32(p + CP_HDR_COUNTS + 4 * u);
    if (!(d->flags & CPROTON_DECODE_NO_EVENTS))
      unit_warp[u] = (uint32_t)(d->n_warps - 1);
    rc = pair_unit(d, w, p + l->header_bytes + (size_t)u * l->segment_bytes, l, c);
    if (rc)
      return rc;
    d->dropped += w->n_dropped;
    d->unpaired += w->n_unpaired;
  }
  return d->n_ev ? finish_events(d, w0, unit_warp) : 0;
}

static int decode_all(cproton_decoded *d, const unsigned char *buf, size_t size, const cproton_buffer_layout *l,
                      unsigned flags) {
  size_t n = size / l->per_cta_bytes;
  d->ctas = calloc(n, sizeof *d->ctas);
  if (!d->ctas)
    return cp_error_set(CPROTON_ENOMEM, "out of memory decoding");
  int rc0 = flags & CPROTON_DECODE_NO_EVENTS ? 0 : grow_warps(d, n * l->n_units); /* all units usually record */
  if (rc0)
    return rc0;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *p = buf + i * (size_t)l->per_cta_bytes;
    if (i + 8 < n) /* a few slices ahead: the walk is latency-bound */
      __builtin_prefetch(p + 8 * (size_t)l->per_cta_bytes);
    cproton_decoded_cta *c = &d->ctas[d->n_ctas];
    int rc = check_cta(p, i, l, c);
    if (rc && (flags & CPROTON_DECODE_SKIP_BAD_CTAS)) {
      d->n_bad++;
      continue;
    }
    if (!rc)
      rc = decode_cta(d, p, l, c);
    if (rc)
      return rc;
    if (c->finalize_time > c->start_time && (c->finalize_counter || c->last_end > 0)) {
      d->clock_cycles += c->finalize_counter ? c->finalize_counter : (uint64_t)c->last_end;
      d->clock_ns += c->finalize_time - c->start_time;
    }
    d->n_ctas++;
  }
  for (size_t i = 0; i < d->n_warps; i++) /* no events: no array either */
    d->warps[i].events = d->events ? d->events + d->first_event[i] : NULL;
  for (size_t i = 0; i + 1 < d->n_warps; i++)
    d->warps[i].n_events = d->first_event[i + 1] - d->first_event[i];
  if (d->n_warps)
    d->warps[d->n_warps - 1].n_events = d->n_events - d->first_event[d->n_warps - 1];
  d->n_units_total = (size_t)l->n_units * d->n_ctas;
  return 0;
}

int cproton_buffer_decode(const void *data, size_t size, const cproton_buffer_layout *layout, unsigned flags,
                          cproton_decoded **out) {
  if (!data || !layout || !out)
    return cp_error_set(CPROTON_EINVAL, "cproton_buffer_decode: NULL data, layout or out");
  *out = NULL;
  if (layout->aggregate)
    return cp_error_set(CPROTON_EINVAL, "layout: the kernel sums in the kernel (aggregate): its buffer holds "
                        "per-scope totals, not records to decode");
  int rc = check_layout(layout);
  if (rc)
    return rc;
  if (size == 0 || size % layout->per_cta_bytes != 0)
    return cp_error_set(CPROTON_EPARSE, "profile buffer of %zu bytes is not a whole number of %u-byte CTA slices "
                        "(truncated copy?)", size, layout->per_cta_bytes);
  if ((unsigned long long)size > CP_DECODE_MAX_BYTES)
    return cp_error_set(CPROTON_ELIMIT, "profile buffer of %zu bytes exceeds the decoder's limit", size);
  cproton_decoded *d = calloc(1, sizeof *d);
  if (!d)
    return cp_error_set(CPROTON_ENOMEM, "out of memory decoding");
  d->flags = flags;
  if ((flags & CPROTON_DECODE_TIME_SHIFT) && layout->counter != CPROTON_COUNTER_GLOBALTIMER)
    d->shift = CPROTON_TIME_SHIFT_CYCLES;
  rc = copy_scopes(d, layout);
  if (!rc)
    rc = decode_all(d, data, size, layout, flags);
  if (rc) {
    cproton_decoded_free(d);
    return rc;
  }
  *out = d;
  return CPROTON_OK;
}

int cp_decoded_from_reduce(const uint64_t *w, const cproton_buffer_layout *layout, cproton_decoded **out) {
  if (!w || !layout || !out)
    return cp_error_set(CPROTON_EINVAL, "cp_decoded_from_reduce: NULL argument");
  *out = NULL;
  int rc = check_layout(layout);
  if (rc)
    return rc;
  cproton_decoded *d = calloc(1, sizeof *d);
  if (!d)
    return cp_error_set(CPROTON_ENOMEM, "out of memory decoding");
  d->flags = CPROTON_DECODE_NO_EVENTS;
  rc = copy_scopes(d, layout);
  if (rc) {
    cproton_decoded_free(d);
    return rc;
  }
  const uint64_t *cyc = w + CP_REDUCE_FIXED, *cnt = cyc + layout->n_scopes, *unp = cnt + layout->n_scopes;
  for (size_t i = 0; i < layout->n_scopes; i++) {
    d->cycles[i] = cyc[i];
    d->counts[i] = cnt[i];
    d->unpaired_by_scope[i] = unp[i];
  }
  d->n_bad = (size_t)w[CP_REDUCE_BAD_CTAS];
  d->dropped = w[CP_REDUCE_DROPPED];
  d->unpaired = w[CP_REDUCE_UNPAIRED];
  d->clock_cycles = w[CP_REDUCE_CLOCK_CYCLES];
  d->clock_ns = w[CP_REDUCE_CLOCK_NS];
  d->n_units_total = (size_t)layout->n_units * (size_t)w[CP_REDUCE_CTAS];
  *out = d;
  return CPROTON_OK;
}

void cp_decoded_clock(const cproton_decoded *d, uint64_t *cycles, uint64_t *ns) {
  *cycles = d ? d->clock_cycles : 0;
  *ns = d ? d->clock_ns : 0;
}

size_t cp_decoded_n_units_total(const cproton_decoded *d) { return d ? d->n_units_total : 0; }

size_t cproton_decoded_n_scopes(const cproton_decoded *d) { return d ? d->n_scopes : 0; }
size_t cproton_decoded_n_ctas(const cproton_decoded *d) { return d ? d->n_ctas : 0; }
size_t cproton_decoded_n_warps(const cproton_decoded *d) { return d ? d->n_warps : 0; }
size_t cproton_decoded_n_bad_ctas(const cproton_decoded *d) { return d ? d->n_bad : 0; }
uint64_t cproton_decoded_n_dropped(const cproton_decoded *d) { return d ? d->dropped : 0; }
uint64_t cproton_decoded_n_unpaired(const cproton_decoded *d) { return d ? d->unpaired : 0; }

int cproton_decoded_get_scope(const cproton_decoded *d, size_t i, cproton_decoded_scope *out) {
  if (!d || !out || i >= d->n_scopes)
    return cp_error_set(CPROTON_EINVAL, "cproton_decoded_get_scope: no scope %zu", i);
  out->name = d->names[i];
  out->parent = d->parents[i];
  out->cycles = d->cycles[i];
  out->count = d->counts[i];
  out->normalized_cycles = d->n_units_total ? (double)d->cycles[i] / (double)d->n_units_total : 0.0;
  out->unpaired = d->unpaired_by_scope[i];
  return CPROTON_OK;
}

int cproton_decoded_get_cta(const cproton_decoded *d, size_t i, cproton_decoded_cta *out) {
  if (!d || !out || i >= d->n_ctas)
    return cp_error_set(CPROTON_EINVAL, "cproton_decoded_get_cta: no CTA %zu", i);
  *out = d->ctas[i];
  return CPROTON_OK;
}

int cproton_decoded_get_warp(const cproton_decoded *d, size_t i, cproton_decoded_warp *out) {
  if (!d || !out || i >= d->n_warps)
    return cp_error_set(CPROTON_EINVAL, "cproton_decoded_get_warp: no warp %zu", i);
  *out = d->warps[i];
  return CPROTON_OK;
}

void cproton_decoded_free(cproton_decoded *d) {
  if (!d)
    return;
  for (size_t i = 0; d->names && i < d->n_scopes; i++)
    free(d->names[i]);
  free(d->names);
  free(d->parents);
  free(d->cycles);
  free(d->counts);
  free(d->unpaired_by_scope);
  free(d->ctas);
  free(d->warps);
  free(d->first_event);
  free(d->events);
  free(d->ev);
  free(d->ev_pairs);
  free(d);
}
