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
 *       TrackEvents: SLICE_BEGIN / SLICE_END pairs (INSTANT for launches),
 *       timestamps as deltas on clock 64 (packets are in time order; one
 *       that is not says timestamp_clock_id 65 and gives ns since t0),
 *       names as interned iids (strtab id + 1) sent in the packet that
 *       first uses them; kernels and scopes carry the call stack (an
 *       interned string, "ROOT;a;b;kernel"), kernels their correlation id;
 *       a "launch" instant on the launching thread starts a flow that ends
 *       on the kernel (flow id = correlation id).
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

#include "core/cct.h"
#include "core/error.h"
#include "core/log.h"
#include "core/strtab.h"
#include "io/pb.h"
#include "io/perfetto.h"

#define WINDOW (1u << 18) /* events sorted at once: 14 MiB */
#define MAX_REPLAYS (1u << 20)
#define SEQ 1
#define DELTA_CLOCK 64 /* default: ns since the previous timed packet */
#define ABS_CLOCK 65   /* ns since t0, for the few packets out of order */
#define MAX_PENDING (1u << 20)

enum { /* field numbers, perfetto.protos */
  TRACE_PACKET = 1,
  PKT_CLOCK_SNAPSHOT = 6, PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10,
  PKT_TRACK_EVENT = 11, PKT_INTERNED = 12, PKT_SEQ_FLAGS = 13,
  PKT_CLOCK_ID = 58, PKT_DEFAULTS = 59, PKT_TRACK_DESCRIPTOR = 60,
  DEFAULTS_CLOCK = 58,
  SNAP_CLOCKS = 1, CLOCK_ID = 1, CLOCK_TS = 2, CLOCK_INCREMENTAL = 3,
  TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5,
  TD_CHILD_ORDERING = 11, TD_SIBLING_RANK = 12,
  PROC_PID = 1, PROC_NAME = 6, THREAD_PID = 1, THREAD_TID = 2,
  THREAD_NAME = 5,
  TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11,
  TE_FLOW = 47, TE_FLOW_END = 48,
  DA_NAME_IID = 1, DA_UINT = 3, DA_STRING_IID = 17,
  IN_EVENT_NAMES = 2, IN_DA_NAMES = 3, IN_DA_STRINGS = 29,
  IN_IID = 1, IN_NAME = 2,
};

enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3 };
enum { ORDER_EXPLICIT = 3 };
enum { CLOCK_REALTIME_ID = 1, CLOCK_MONO_RAW_ID = 5, CLOCK_BOOTTIME_ID = 6 };

/* Debug-annotation names, interned once in packet #1: iid = index + 1. */
enum { DA_CALL_STACK = 1, DA_CORRELATION = 2, DA_GRAPH = 3 };
static const char *const da_names[] = {"call_stack", "correlation", "graph"};

typedef enum track_kind {
  TK_THREAD = 1, TK_GPU, TK_STREAM, TK_GRAPHS, TK_KERNEL, TK_CTA, TK_WARP
} track_kind;

typedef struct track_key {
  uint32_t kind, a, b, c, d;
} track_key;

typedef struct track_slot {
  track_key k;
  uint64_t uuid; /* 0: empty */
} track_slot;

typedef struct replay {
  uint32_t corr, device, graph, launch_lane, n_kernels;
  uint64_t start, end, launch_ns;
} replay;

/* A slice end not yet written: ends wait until time reaches them so the
 * file stays in time order (and the delta clock's steps small). */
typedef struct pending {
  uint64_t ts, uuid;
  int region;
} pending;

typedef struct bits {
  uint64_t *w;
  size_t n_words;
} bits;

typedef struct writer {
  cp_sink *s;
  const cp_perfetto_info *info;
  cp_perfetto_stats st;
  cp_pb pkt, desc;
  uint64_t t0, next_uuid;
  track_slot *tracks;
  size_t n_tracks, cap_tracks;
  bits names, stacks;
  replay *replays;
  size_t n_replays, cap_replays;
  cp_event *win;
  size_t n_win, cap_win;
  pending *ends; /* min-heap by ts */
  size_t n_ends, cap_ends;
  uint64_t last_ts; /* the delta clock's value */
  uint32_t launch_name, replay_name;
  int oom;
  char stack_buf[16384];
} writer;

/* ---- small tables ------------------------------------------------------ */

static int bit_test_set(writer *w, bits *b, uint32_t i) {
  size_t word = i / 64;
  if (word >= b->n_words) {
    size_t n = b->n_words ? b->n_words : 64;
    while (n <= word)
      n *= 2;
    uint64_t *g = realloc(b->w, n * sizeof *g);
    if (!g) {
      w->oom = 1;
      return 1; /* claim "seen": no interned data we could not keep track of */
    }
    memset(g + b->n_words, 0, (n - b->n_words) * sizeof *g);
    b->w = g;
    b->n_words = n;
  }
  int was = (int)(b->w[word] >> (i % 64) & 1);
  b->w[word] |= 1ull << (i % 64);
  return was;
}

static uint64_t key_hash(const track_key *k) {
  uint64_t h = 1469598103934665603ull;
  const uint32_t v[5] = {k->kind, k->a, k->b, k->c, k->d};
  for (int i = 0; i < 5; i++)
    h = (h ^ v[i]) * 1099511628211ull;
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

static void emit(writer *w, cp_pb *p) {
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

static void put_interned(cp_pb *p, uint32_t field, uint64_t iid,
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
    put_interned(p, IN_DA_NAMES, i + 1, IN_NAME, da_names[i]);
  cp_pb_end(p);
  emit(w, p);
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
  emit(w, p);
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
  emit(w, p);
  w->st.tracks++;
}

/* ---- tracks ------------------------------------------------------------- */

static uint64_t track(writer *w, track_kind kind, uint32_t a, uint32_t b,
                      uint32_t c, uint32_t d);

static const char *str_or(uint32_t id, const char *fallback) {
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
    return track(w, TK_GPU, k->a, 0, 0, 0);
  case TK_GRAPHS:
    snprintf(name, size, "graph replays");
    *rank = -1;
    return track(w, TK_GPU, k->a, 0, 0, 0);
  case TK_KERNEL:
    snprintf(name, size, "%s (warps)", str_or(k->a, "?"));
    *ordered = 1;
    return 1;
  case TK_CTA:
    snprintf(name, size, "CTA %u (SM %u)", k->c, k->b);
    *rank = k->c;
    *ordered = 1;
    return track(w, TK_KERNEL, k->a, 0, 0, 0);
  case TK_WARP:
    snprintf(name, size, "warp %u", k->d);
    *rank = k->d;
    return track(w, TK_CTA, k->a, k->b, k->c, 0);
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
  if (ordered)
    cp_pb_varint(p, TD_CHILD_ORDERING, ORDER_EXPLICIT);
  if (rank != INT64_MIN) /* int32: negative ranks are 10-byte varints */
    cp_pb_varint(p, TD_SIBLING_RANK, (uint64_t)(int64_t)(int32_t)rank);
  cp_pb_end(p);
  emit(w, p);
  w->st.tracks++;
}

/* The uuid of a track, describing it first when it is new. 0: no memory. */
static uint64_t track(writer *w, track_kind kind, uint32_t a, uint32_t b,
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

/* ---- events ------------------------------------------------------------- */

/* Starts an event packet: timestamp, sequence, and TrackEvent opened. */
static void event_open(writer *w, uint64_t ts, int needs_state, int type,
                       uint64_t uuid) {
  cp_pb *p = &w->pkt;
  cp_pb_reset(p);
  if (ts < w->t0)
    ts = w->t0;
  if (ts >= w->last_ts) {
    cp_pb_varint(p, PKT_TIMESTAMP, ts - w->last_ts);
    w->last_ts = ts;
  } else { /* behind the delta clock: absolute, which leaves it alone */
    cp_pb_varint(p, PKT_TIMESTAMP, ts - w->t0);
    cp_pb_varint(p, PKT_CLOCK_ID, ABS_CLOCK);
  }
  cp_pb_varint(p, PKT_SEQ_ID, SEQ);
  if (needs_state)
    cp_pb_varint(p, PKT_SEQ_FLAGS, SEQ_NEEDS_STATE);
  cp_pb_begin(p, PKT_TRACK_EVENT);
  cp_pb_varint(p, TE_TYPE, (uint64_t)type);
  cp_pb_varint(p, TE_TRACK, uuid);
}

/* "ROOT;a;b" for a context node, into a bounded buffer. */
static void stack_string(uint32_t node, char *out, size_t size) {
  const cp_node *path[512];
  size_t n = 0, len = 0;
  for (const cp_node *c = cp_cct_node(node); c && n < 512; c = c->parent)
    path[n++] = c;
  out[0] = '\0';
  while (n-- && len + 1 < size) {
    const char *s = path[n]->id ? str_or(path[n]->name, "?") : "ROOT";
    int k = snprintf(out + len, size - len, "%s%s", len ? ";" : "", s);
    len += k > 0 ? (size_t)k : 0;
  }
}

/* Closes the TrackEvent and adds the interned data its iids need. */
static void event_close(writer *w, uint32_t name, int has_stack,
                        uint32_t node) {
  cp_pb *p = &w->pkt;
  cp_pb_end(p);
  int new_name = name != UINT32_MAX &&
                 !bit_test_set(w, &w->names, cp_strtab_index(name));
  int new_stack = has_stack && !bit_test_set(w, &w->stacks, node);
  if (new_name || new_stack) {
    cp_pb_begin(p, PKT_INTERNED);
    if (new_name)
      put_interned(p, IN_EVENT_NAMES, (uint64_t)name + 1, IN_NAME,
                   str_or(name, "?"));
    if (new_stack) {
      stack_string(node, w->stack_buf, sizeof w->stack_buf);
      put_interned(p, IN_DA_STRINGS, (uint64_t)node + 1, IN_NAME,
                   w->stack_buf);
    }
    cp_pb_end(p);
  }
  emit(w, p);
}

static void annotate(cp_pb *p, uint32_t name_iid, uint32_t field,
                     uint64_t v) {
  cp_pb_begin(p, TE_ANNOTATIONS);
  cp_pb_varint(p, DA_NAME_IID, name_iid);
  cp_pb_varint(p, field, v);
  cp_pb_end(p);
}

static void slice_end(writer *w, uint64_t ts, uint64_t uuid, int region) {
  size_t before = w->st.bytes;
  event_open(w, ts, 0, SLICE_END, uuid);
  event_close(w, UINT32_MAX, 0, 0);
  if (region)
    w->st.region_bytes += w->st.bytes - before;
}

static int earlier(const pending *a, const pending *b) { return a->ts < b->ts; }

static void pop_end(writer *w) {
  pending top = w->ends[0], *h = w->ends;
  h[0] = h[--w->n_ends];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < w->n_ends && earlier(&h[l], &h[m]))
      m = l;
    if (r < w->n_ends && earlier(&h[r], &h[m]))
      m = r;
    if (m == i)
      break;
    pending tmp = h[i];
    h[i] = h[m], h[m] = tmp, i = m;
  }
  slice_end(w, top.ts, top.uuid, top.region);
}

/* Writes every pending end at or before `ts` (ends before begins at equal
 * times: back-to-back slices stay siblings). */
static void drain_ends(writer *w, uint64_t ts) {
  while (w->n_ends && w->ends[0].ts <= ts)
    pop_end(w);
}

/* The end of a slice that began at `start`: now when empty, else later. */
static void end_at(writer *w, uint64_t start, uint64_t end, uint64_t uuid,
                   int region) {
  if (end <= start) {
    slice_end(w, end, uuid, region);
    return;
  }
  if (w->n_ends == MAX_PENDING)
    pop_end(w); /* full: the earliest goes now; later begins go absolute */
  if (w->n_ends == w->cap_ends) {
    size_t cap = w->cap_ends ? w->cap_ends * 2 : 1024;
    pending *g = realloc(w->ends, cap * sizeof *g);
    if (!g) {
      slice_end(w, end, uuid, region); /* out of order, still correct */
      return;
    }
    w->ends = g;
    w->cap_ends = cap;
  }
  size_t i = w->n_ends++;
  w->ends[i] = (pending){end, uuid, region};
  while (i && earlier(&w->ends[i], &w->ends[(i - 1) / 2])) {
    pending tmp = w->ends[i];
    w->ends[i] = w->ends[(i - 1) / 2], w->ends[(i - 1) / 2] = tmp;
    i = (i - 1) / 2;
  }
}

static uint64_t end_of(const cp_event *e) {
  return e->end_ns > e->start_ns ? e->end_ns : e->start_ns;
}

static void put_scope(writer *w, const cp_event *e) {
  uint64_t uuid = track(w, TK_THREAD, e->lane, 0, 0, 0);
  event_open(w, e->start_ns, 1, SLICE_BEGIN, uuid);
  cp_pb_varint(&w->pkt, TE_NAME_IID, (uint64_t)e->name + 1);
  annotate(&w->pkt, DA_CALL_STACK, DA_STRING_IID, (uint64_t)e->node + 1);
  event_close(w, e->name, 1, e->node);
  end_at(w, e->start_ns, end_of(e), uuid, 0);
}

/* A "launch" instant on the launching thread that starts flow `id`. */
static void put_launch(writer *w, uint64_t ts, uint32_t thread, uint64_t id) {
  event_open(w, ts, 1, INSTANT, track(w, TK_THREAD, thread, 0, 0, 0));
  cp_pb_varint(&w->pkt, TE_NAME_IID, (uint64_t)w->launch_name + 1);
  cp_pb_fixed64(&w->pkt, TE_FLOW, id);
  event_close(w, w->launch_name, 0, 0);
}

/* Whether a kernel's launch gets its own flow: graph replays' kernels do
 * not (the launch's flow ends on the replay slice, put_replays). */
static int kernel_flow(const cp_event *e) {
  return e->kind == CP_EVENT_KERNEL && e->launch_ns &&
         e->launch_ns <= e->start_ns && !e->group;
}

static void put_kernel(writer *w, const cp_event *e) {
  uint64_t uuid = track(w, TK_STREAM, e->device, e->lane, 0, 0);
  event_open(w, e->start_ns, 1, SLICE_BEGIN, uuid);
  cp_pb *p = &w->pkt;
  cp_pb_varint(p, TE_NAME_IID, (uint64_t)e->name + 1);
  annotate(p, DA_CALL_STACK, DA_STRING_IID, (uint64_t)e->node + 1);
  annotate(p, DA_CORRELATION, DA_UINT, e->correlation);
  if (e->group)
    annotate(p, DA_GRAPH, DA_UINT, e->group);
  if (kernel_flow(e))
    cp_pb_fixed64(p, TE_FLOW_END, e->correlation);
  event_close(w, e->name, 1, e->node);
  end_at(w, e->start_ns, end_of(e), uuid, 0);
}

static void put_region(writer *w, const cp_event *e) {
  uint64_t uuid = track(w, TK_WARP, e->group, e->device, e->correlation,
                        e->lane);
  size_t before = w->st.bytes;
  event_open(w, e->start_ns, 1, SLICE_BEGIN, uuid);
  cp_pb_varint(&w->pkt, TE_NAME_IID, (uint64_t)e->name + 1);
  event_close(w, e->name, 0, 0);
  w->st.region_events++;
  w->st.region_bytes += w->st.bytes - before;
  end_at(w, e->start_ns, end_of(e), uuid, 1);
}

/* Window entries of this kind are a kernel's launch, at its launch time. */
#define KIND_LAUNCH 0x80

static void put_event(writer *w, const cp_event *e) {
  drain_ends(w, e->start_ns);
  if (e->kind == KIND_LAUNCH) {
    put_launch(w, e->start_ns, e->launch_lane, e->correlation);
    return;
  }
  if (e->kind == CP_EVENT_SCOPE)
    put_scope(w, e);
  else if (e->kind == CP_EVENT_KERNEL)
    put_kernel(w, e);
  else if (e->kind == CP_EVENT_REGION)
    put_region(w, e);
  else
    return;
  w->st.events++;
}

/* ---- the sorting window ------------------------------------------------ */

static uint32_t depth_of(const cp_event *e) {
  if (e->kind == CP_EVENT_REGION)
    return e->launch_lane;
  const cp_node *n = e->kind == CP_EVENT_SCOPE ? cp_cct_node(e->node) : NULL;
  return n ? n->depth : 0;
}

static int by_time(const void *pa, const void *pb) {
  const cp_event *a = pa, *b = pb;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns ? -1 : 1;
  uint64_t ea = end_of(a), eb = end_of(b);
  if (ea != eb)
    return ea > eb ? -1 : 1; /* the enclosing (longer) one first */
  uint32_t da = depth_of(a), db = depth_of(b);
  return da < db ? -1 : da > db;
}

static void flush_window(writer *w) {
  qsort(w->win, w->n_win, sizeof *w->win, by_time);
  for (size_t i = 0; i < w->n_win; i++)
    put_event(w, &w->win[i]);
  w->n_win = 0;
}

static void add_to_window(writer *w, const cp_event *e) {
  w->win[w->n_win++] = *e;
  if (w->n_win == w->cap_win)
    flush_window(w);
}

static int collect(void *user, const cp_event *e) {
  writer *w = user;
  add_to_window(w, e);
  if (kernel_flow(e)) {
    cp_event launch = *e;
    launch.kind = KIND_LAUNCH;
    launch.start_ns = launch.end_ns = e->launch_ns;
    add_to_window(w, &launch);
  }
  return w->oom ? CPROTON_ENOMEM : 0;
}

/* ---- graph replays ------------------------------------------------------- */

static replay *replay_slot(writer *w, uint32_t corr) {
  if ((w->n_replays + 1) * 2 > w->cap_replays) {
    size_t cap = w->cap_replays ? w->cap_replays * 2 : 256;
    if (cap / 2 > MAX_REPLAYS)
      return NULL;
    replay *t = calloc(cap, sizeof *t);
    if (!t) {
      w->oom = 1;
      return NULL;
    }
    for (size_t i = 0; i < w->cap_replays; i++)
      if (w->replays[i].n_kernels) {
        size_t j = (w->replays[i].corr * 2654435761u) & (cap - 1);
        while (t[j].n_kernels)
          j = (j + 1) & (cap - 1);
        t[j] = w->replays[i];
      }
    free(w->replays);
    w->replays = t;
    w->cap_replays = cap;
  }
  size_t j = (corr * 2654435761u) & (w->cap_replays - 1);
  while (w->replays[j].n_kernels && w->replays[j].corr != corr)
    j = (j + 1) & (w->cap_replays - 1);
  return &w->replays[j];
}

static void note_replay(writer *w, const cp_event *e) {
  replay *r = replay_slot(w, e->correlation);
  if (!r) {
    w->st.replays_skipped++;
    return;
  }
  if (!r->n_kernels) {
    w->n_replays++;
    *r = (replay){.corr = e->correlation, .device = e->device,
                  .graph = e->group, .launch_lane = e->launch_lane,
                  .start = e->start_ns, .end = end_of(e),
                  .launch_ns = e->launch_ns};
  }
  r->n_kernels++;
  if (e->start_ns < r->start)
    r->start = e->start_ns;
  if (end_of(e) > r->end)
    r->end = end_of(e);
}

static void put_replays(writer *w) {
  for (size_t i = 0; i < w->cap_replays; i++) {
    const replay *r = &w->replays[i];
    if (!r->n_kernels)
      continue;
    uint64_t uuid = track(w, TK_GRAPHS, r->device, 0, 0, 0);
    int flow = r->launch_ns && r->launch_ns <= r->start;
    event_open(w, r->start, 1, SLICE_BEGIN, uuid);
    cp_pb *p = &w->pkt;
    cp_pb_varint(p, TE_NAME_IID, (uint64_t)w->replay_name + 1);
    annotate(p, DA_GRAPH, DA_UINT, r->graph);
    annotate(p, DA_CORRELATION, DA_UINT, r->corr);
    if (flow)
      cp_pb_fixed64(p, TE_FLOW_END, r->corr);
    event_close(w, w->replay_name, 0, 0);
    slice_end(w, r->end, uuid, 0);
    if (flow)
      put_launch(w, r->launch_ns, r->launch_lane, r->corr);
    w->st.replays++;
  }
}

/* ---- the two passes ------------------------------------------------------ */

static int scan(void *user, const cp_event *e) {
  writer *w = user;
  if (e->start_ns && e->start_ns < w->t0)
    w->t0 = e->start_ns;
  if (e->launch_ns && e->launch_ns < w->t0)
    w->t0 = e->launch_ns;
  if (e->kind == CP_EVENT_KERNEL && e->group)
    note_replay(w, e);
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
    rc = cp_trace_each(t, collect, w);
  }
  if (!rc) {
    flush_window(w);
    drain_ends(w, UINT64_MAX);
    put_replays(w);
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
