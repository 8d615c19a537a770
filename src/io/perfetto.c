/* io/perfetto.c -- renders timeline events as a Perfetto protobuf trace.
 *
 * File layout (Perfetto's trace.proto; field numbers in the enum below):
 *
 *   Trace { repeated TracePacket packet = 1; }   one packet per record:
 *   #1  seq 1, SEQ_INCREMENTAL_STATE_CLEARED, defaults {clock 64},
 *       interned debug-annotation names (call_stack, correlation, graph)
 *   #2  ClockSnapshot at t0 (the earliest event): clock 64 (sequence-
 *       scoped, incremental) = 0, clock 65 (sequence-scoped, absolute) = 0,
 *       and MONOTONIC_RAW / BOOTTIME / REALTIME at that instant
 *   #3  TrackDescriptor uuid 1: the process (pid, "rank R: name")
 *   ... TrackDescriptors, written just before the first event on a track:
 *         thread T (ThreadDescriptor)           scopes, launch instants
 *         GPU d > stream s                      kernels
 *         GPU d > graph replays                 one slice per graph launch
 *         <kernel> (warps) > CTA c (SM s) > warp w   intra-kernel regions
 *         GPU d > <counter>                     a counter track per
 *                                               hardware counter (unit
 *                                               "%" when its name ends so)
 *       TrackEvents: SLICE_BEGIN / SLICE_END pairs (INSTANT for launches),
 *       timestamps as deltas on clock 64 (packets are in time order; one
 *       that is not says timestamp_clock_id 65 and gives ns since t0),
 *       names as interned iids (strtab id + 1) sent in the packet that
 *       first uses them; kernels and scopes carry the call stack (an
 *       interned string, "ROOT;a;b;kernel"), kernels their correlation id;
 *       a "launch" instant on the launching thread starts a flow that ends
 *       on the kernel (flow id = correlation id); a counter sample is a
 *       TYPE_COUNTER event at its start with double_counter_value.
 *
 * All packets are on sequence 1. Begin packets use interned state and say
 * so (SEQ_NEEDS_INCREMENTAL_STATE); end packets need none. An intra-kernel
 * region costs about 30 bytes (begin ~17, end ~12): docs/perfetto.md.
 *
 * Ordering: events arrive in completion order (children first). They are
 * sorted in windows of up to WINDOW events by (start, longer first, depth)
 * -- Perfetto keeps file order for equal timestamps, which decides nesting
 * when a parent and a child begin in the same nanosecond -- and slice ends
 * wait in a heap until time reaches them, so the file is in time order.
 *
 * Memory: the window, the pending ends, the track table, one bit per name
 * and call stack, and one entry per graph launch (capped). Not a hot path
 * (finalize). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fnv.h"
#include "core/cct.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/log.h"
#include "core/strtab.h"
#include "io/pb.h"
#include "io/perfetto.h"
#include "io/perfetto_writer.h"

static const char *const da_names[] = {"call_stack", "correlation", "graph"};

/* ---- small tables ------------------------------------------------------ */

int cp_perfetto_bit_test_set(writer *w, bits *b, uint32_t i) {
  size_t word = i / 64;
  if (word >= b->n_words) {
    size_t was = b->n_words;
    void *g;
    if (cp_grow(b->w, &b->n_words, word + 1, sizeof *b->w, 64, &g)) {
      w->oom = 1;
      return 1; /* claim "seen": no interned data we could not keep track of */
    }
    b->w = g;
    memset(b->w + was, 0, (b->n_words - was) * sizeof *b->w);
  }
  int was = (int)(b->w[word] >> (i % 64) & 1);
  b->w[word] |= 1ull << (i % 64);
  return was;
}

static uint64_t key_hash(const track_key *k) {
  uint64_t h = CP_FNV_BASIS;
  const uint32_t v[5] = {k->kind, k->a, k->b, k->c, k->d};
  for (int i = 0; i < 5; i++)
    h = cp_fnv_mix(h, v[i]);
  return h;
}

static int grow_tracks(writer *w) {
  size_t cap = w->cap_tracks ? w->cap_tracks * 2 : 1024;
  track_slot *t = calloc(cap, sizeof *t);
  if (!t)
    return -1;
  for (size_t i = 0; i < w->cap_tracks; i++) {
    if (!w->tracks[i].uuid)
      continue;
    size_t j = key_hash(&w->tracks[i].k) & (cap - 1);
    while (t[j].uuid)
      j = (j + 1) & (cap - 1);
    t[j] = w->tracks[i];
  }
  free(w->tracks);
  w->tracks = t;
  w->cap_tracks = cap;
  return 0;
}

/* The slot of `k`: found (uuid set) or the empty one to fill. */
static track_slot *track_slot_of(writer *w, const track_key *k) {
  if ((w->n_tracks + 1) * 2 > w->cap_tracks && grow_tracks(w))
    return NULL;
  size_t j = key_hash(k) & (w->cap_tracks - 1);
  while (w->tracks[j].uuid && memcmp(&w->tracks[j].k, k, sizeof *k) != 0)
    j = (j + 1) & (w->cap_tracks - 1);
  return &w->tracks[j];
}

/* ---- packets ---------------------------------------------------------- */

void cp_perfetto_emit(writer *w, cp_pb *p) {
  if (p->oom) {
    w->oom = 1;
    return;
  }
  unsigned char hdr[11];
  hdr[0] = TRACE_PACKET << 3 | CP_PB_LEN;
  size_t n = 1 + cp_pb_put_varint(hdr + 1, p->n);
  cp_sink_write(w->s, hdr, n);
  cp_sink_write(w->s, p->b, p->n);
  w->st.bytes += n + p->n;
}

void cp_perfetto_put_interned(cp_pb *p, uint32_t field, uint64_t iid,
                              uint32_t str_field, const char *s) {
  cp_pb_begin(p, field);
  cp_pb_varint(p, IN_IID, iid);
  cp_pb_string(p, str_field, s);
  cp_pb_end(p);
}

static void put_head(writer *w) {
  cp_pb *p = &w->pkt;
  cp_pb_reset(p);
  cp_pb_varint(p, PKT_SEQ_ID, SEQ);
  cp_pb_varint(p, PKT_SEQ_FLAGS, SEQ_CLEARED);
  cp_pb_begin(p, PKT_DEFAULTS);
  cp_pb_varint(p, DEFAULTS_CLOCK, DELTA_CLOCK);
  cp_pb_end(p);
  cp_pb_begin(p, PKT_INTERNED);
  for (size_t i = 0; i < sizeof da_names / sizeof *da_names; i++)
    cp_perfetto_put_interned(p, IN_DA_NAMES, i + 1, IN_NAME, da_names[i]);
  cp_pb_end(p);
  cp_perfetto_emit(w, p);
}

static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put_clock(cp_pb *p, uint32_t id, uint64_t ts, int incremental) {
  cp_pb_begin(p, SNAP_CLOCKS);
  cp_pb_varint(p, CLOCK_ID, id);
  cp_pb_varint(p, CLOCK_TS, ts);
  if (incremental)
    cp_pb_varint(p, CLOCK_INCREMENTAL, 1);
  cp_pb_end(p);
}

/* Event times are CLOCK_MONOTONIC_RAW (core/clock.h); the other clocks are
 * read beside it now and shifted back to t0. */
static void put_clock_snapshot(writer *w) {
  uint64_t raw = clock_ns(CLOCK_MONOTONIC_RAW);
  uint64_t boot = clock_ns(CLOCK_BOOTTIME), real = clock_ns(CLOCK_REALTIME);
  cp_pb *p = &w->pkt;
  cp_pb_reset(p);
  cp_pb_varint(p, PKT_SEQ_ID, SEQ);
  cp_pb_begin(p, PKT_CLOCK_SNAPSHOT);
  put_clock(p, DELTA_CLOCK, 0, 1);
  put_clock(p, ABS_CLOCK, 0, 0);
  put_clock(p, CLOCK_MONO_RAW_ID, w->t0, 0);
  put_clock(p, CLOCK_BOOTTIME_ID, w->t0 + (boot - raw), 0);
  put_clock(p, CLOCK_REALTIME_ID, w->t0 + (real - raw), 0);
  cp_pb_end(p);
  cp_perfetto_emit(w, p);
}

static void put_process(writer *w) {
  char name[512];
  const char *label = w->info && w->info->name ? w->info->name : "cproton";
  if (w->info && w->info->rank >= 0)
    snprintf(name, sizeof name, "rank %d: %s", w->info->rank, label);
  else
    snprintf(name, sizeof name, "%s", label);
  cp_pb *p = &w->desc;
  cp_pb_reset(p);
  cp_pb_varint(p, PKT_SEQ_ID, SEQ);
  cp_pb_begin(p, PKT_TRACK_DESCRIPTOR);
  cp_pb_varint(p, TD_UUID, 1);
  cp_pb_begin(p, TD_PROCESS);
  cp_pb_varint(p, PROC_PID, (uint64_t)(w->info ? w->info->pid : 0));
  cp_pb_string(p, PROC_NAME, name);
  cp_pb_end(p);
  cp_pb_end(p);
  cp_perfetto_emit(w, p);
  w->st.tracks++;
}

/* ---- tracks ------------------------------------------------------------- */


const char *cp_perfetto_str_or(uint32_t id, const char *fallback) {
  const char *s = cp_strtab_str(id);
  return s && *s ? s : fallback;
}

/* Parent, name and place among siblings of a new track; 0 parent: none. */
static uint64_t describe(writer *w, const track_key *k, char *name,
                         size_t size, int64_t *rank, int *ordered) {
  *rank = INT64_MIN;
  *ordered = 0;
  switch ((track_kind)k->kind) {
  case TK_THREAD:
    snprintf(name, size, "thread %u", k->a);
    return 0;
  case TK_GPU:
    snprintf(name, size, "GPU %u", k->a);
    *ordered = 1;
    return 1;
  case TK_STREAM:
    snprintf(name, size, "stream %u", k->b);
    *rank = k->b;
    return cp_perfetto_track(w, TK_GPU, k->a, 0, 0, 0);
  case TK_GRAPHS:
    snprintf(name, size, "graph replays");
    *rank = -1;
    return cp_perfetto_track(w, TK_GPU, k->a, 0, 0, 0);
  case TK_KERNEL:
    snprintf(name, size, "%s (warps)", cp_perfetto_str_or(k->a, "?"));
    *ordered = 1;
    return 1;
  case TK_CTA:
    snprintf(name, size, "CTA %u (SM %u)", k->c, k->b);
    *rank = k->c;
    *ordered = 1;
    return cp_perfetto_track(w, TK_KERNEL, k->a, 0, 0, 0);
  case TK_WARP:
    snprintf(name, size, "warp %u", k->d);
    *rank = k->d;
    return cp_perfetto_track(w, TK_CTA, k->a, k->b, k->c, 0);
  case TK_COUNTER:
    snprintf(name, size, "%s", cp_perfetto_str_or(k->b, "?"));
    return cp_perfetto_track(w, TK_GPU, k->a, 0, 0, 0);
  }
  return 1;
}

static void put_track(writer *w, const track_key *k, uint64_t uuid) {
  char name[1024];
  int64_t rank;
  int ordered;
  uint64_t parent = describe(w, k, name, sizeof name, &rank, &ordered);
  cp_pb *p = &w->desc; /* after describe: it may write parents */
  cp_pb_reset(p);
  cp_pb_varint(p, PKT_SEQ_ID, SEQ);
  cp_pb_begin(p, PKT_TRACK_DESCRIPTOR);
  cp_pb_varint(p, TD_UUID, uuid);
  if (k->kind == TK_THREAD) {
    cp_pb_begin(p, TD_THREAD);
    cp_pb_varint(p, THREAD_PID, (uint64_t)(w->info ? w->info->pid : 0));
    cp_pb_varint(p, THREAD_TID, k->a);
    cp_pb_string(p, THREAD_NAME, name);
    cp_pb_end(p);
  } else {
    cp_pb_varint(p, TD_PARENT, parent);
    cp_pb_string(p, TD_NAME, name);
  }
  if (k->kind == TK_COUNTER) { /* a counter track: "%" for percentages */
    size_t len = strlen(name);
    cp_pb_begin(p, TD_COUNTER);
    if (len && name[len - 1] == '%')
      cp_pb_string(p, CD_UNIT_NAME, "%");
    cp_pb_end(p);
  }
  if (ordered)
    cp_pb_varint(p, TD_CHILD_ORDERING, ORDER_EXPLICIT);
  if (rank != INT64_MIN) /* int32: negative ranks are 10-byte varints */
    cp_pb_varint(p, TD_SIBLING_RANK, (uint64_t)(int64_t)(int32_t)rank);
  cp_pb_end(p);
  cp_perfetto_emit(w, p);
  w->st.tracks++;
}

/* The uuid of a track, describing it first when it is new. 0: no memory. */
uint64_t cp_perfetto_track(writer *w, track_kind kind, uint32_t a, uint32_t b,
                           uint32_t c, uint32_t d) {
  track_key k = {kind, a, b, c, d};
  track_slot *slot = track_slot_of(w, &k);
  if (!slot) {
    w->oom = 1;
    return 0;
  }
  if (slot->uuid)
    return slot->uuid;
  uint64_t uuid = ++w->next_uuid;
  slot->k = k;
  slot->uuid = uuid;
  w->n_tracks++;
  put_track(w, &k, uuid);
  return uuid;
}

/* ---- the two passes ------------------------------------------------------ */

static int scan(void *user, const cp_event *e) {
  writer *w = user;
  if (e->start_ns && e->start_ns < w->t0)
    w->t0 = e->start_ns;
  uint64_t launch = cp_event_launch_ns(e);
  if (launch && launch < w->t0)
    w->t0 = launch;
  if (e->kind == CP_EVENT_KERNEL && e->u.kernel.graph_id)
    cp_perfetto_events_note_replay(w, e);
  return w->oom ? CPROTON_ENOMEM : 0;
}

static void writer_free(writer *w) {
  cp_pb_free(&w->pkt);
  cp_pb_free(&w->desc);
  free(w->tracks);
  free(w->names.w);
  free(w->stacks.w);
  free(w->replays);
  free(w->win);
  free(w->ends);
  free(w);
}

static int intern_names(writer *w) {
  int rc = cp_strtab_intern("launch", 6, &w->launch_name);
  return rc ? rc : cp_strtab_intern("graph replay", 12, &w->replay_name);
}

int cp_perfetto_write(cp_sink *s, const cp_trace *t,
                      const cp_perfetto_info *info, cp_perfetto_stats *stats) {
  writer *w = calloc(1, sizeof *w);
  size_t n = 2 * cp_trace_count(t) + 2; /* a kernel may add its launch */
  size_t max = info && info->window ? info->window : WINDOW;
  if (w) {
    w->cap_win = n < max ? n : max;
    w->win = malloc(w->cap_win * sizeof *w->win);
  }
  if (!w || !w->win) {
    free(w);
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a trace");
  }
  w->s = s;
  w->info = info;
  w->t0 = UINT64_MAX;
  w->next_uuid = 1; /* 1 is the process */
  int rc = intern_names(w);
  if (!rc)
    rc = cp_trace_each(t, scan, w);
  if (w->t0 == UINT64_MAX)
    w->t0 = 0;
  w->last_ts = w->t0;
  if (!rc) {
    put_head(w);
    put_clock_snapshot(w);
    put_process(w);
    rc = cp_trace_each(t, cp_perfetto_events_collect, w);
  }
  if (!rc) {
    cp_perfetto_events_flush_window(w);
    cp_perfetto_events_drain_ends(w, UINT64_MAX);
    cp_perfetto_events_put_replays(w);
  }
  if (w->oom)
    rc = cp_error_set(CPROTON_ENOMEM, "out of memory writing a trace");
  if (w->st.replays_skipped)
    cp_warn("perfetto: %zu graph launches past the table's cap have no "
            "replay slice (their kernels are written)",
            w->st.replays_skipped);
  if (stats)
    *stats = w->st;
  writer_free(w);
  return rc;
}
