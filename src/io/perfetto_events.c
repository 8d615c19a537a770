/* io/perfetto_events.c -- the Perfetto writer's events (perfetto.c has the
 * file layout): scope, kernel and region slices with their annotations,
 * launch instants and flows, slice ends held in a heap until time reaches
 * them, the sorting window, and one slice per CUDA graph launch. Not a hot
 * path (finalize). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cct.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/log.h"
#include "core/strtab.h"
#include "io/perfetto_writer.h"

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
    const char *s =
        path[n]->id ? cp_perfetto_str_or(path[n]->name, "?") : "ROOT";
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
                 !cp_perfetto_bit_test_set(w, &w->names, cp_strtab_index(name));
  int new_stack = has_stack && !cp_perfetto_bit_test_set(w, &w->stacks, node);
  if (new_name || new_stack) {
    cp_pb_begin(p, PKT_INTERNED);
    if (new_name)
      cp_perfetto_put_interned(p, IN_EVENT_NAMES, (uint64_t)name + 1, IN_NAME,
                   cp_perfetto_str_or(name, "?"));
    if (new_stack) {
      stack_string(node, w->stack_buf, sizeof w->stack_buf);
      cp_perfetto_put_interned(p, IN_DA_STRINGS, (uint64_t)node + 1, IN_NAME,
                   w->stack_buf);
    }
    cp_pb_end(p);
  }
  cp_perfetto_emit(w, p);
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
void cp_perfetto_events_drain_ends(writer *w, uint64_t ts) {
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
  void *g;
  if (w->n_ends == w->cap_ends) {
    if (cp_grow(w->ends, &w->cap_ends, w->n_ends + 1, sizeof *w->ends, 1024,
                &g)) {
      slice_end(w, end, uuid, region); /* out of order, still correct */
      return;
    }
    w->ends = g;
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
  uint64_t uuid = cp_perfetto_track(w, TK_THREAD, e->u.scope.thread, 0, 0, 0);
  event_open(w, e->start_ns, 1, SLICE_BEGIN, uuid);
  cp_pb_varint(&w->pkt, TE_NAME_IID, (uint64_t)e->name + 1);
  annotate(&w->pkt, DA_CALL_STACK, DA_STRING_IID, (uint64_t)e->node + 1);
  event_close(w, e->name, 1, e->node);
  end_at(w, e->start_ns, end_of(e), uuid, 0);
}

/* A "launch" instant on the launching thread that starts flow `id`. */
static void put_launch(writer *w, uint64_t ts, uint32_t thread, uint64_t id) {
  event_open(w, ts, 1, INSTANT,
             cp_perfetto_track(w, TK_THREAD, thread, 0, 0, 0));
  cp_pb_varint(&w->pkt, TE_NAME_IID, (uint64_t)w->launch_name + 1);
  cp_pb_fixed64(&w->pkt, TE_FLOW, id);
  event_close(w, w->launch_name, 0, 0);
}

/* Whether a kernel's launch gets its own flow: graph replays' kernels do
 * not (the launch's flow ends on the replay slice,
 * cp_perfetto_events_put_replays). */
static int kernel_flow(const cp_event *e) {
  const cp_event_kernel *k = &e->u.kernel;
  return e->kind == CP_EVENT_KERNEL && k->launch_ns &&
         k->launch_ns <= e->start_ns && !k->graph_id;
}

static void put_kernel(writer *w, const cp_event *e) {
  const cp_event_kernel *k = &e->u.kernel;
  uint64_t uuid = cp_perfetto_track(w, TK_STREAM, k->device, k->stream, 0, 0);
  event_open(w, e->start_ns, 1, SLICE_BEGIN, uuid);
  cp_pb *p = &w->pkt;
  cp_pb_varint(p, TE_NAME_IID, (uint64_t)e->name + 1);
  annotate(p, DA_CALL_STACK, DA_STRING_IID, (uint64_t)e->node + 1);
  annotate(p, DA_CORRELATION, DA_UINT, k->correlation);
  if (k->graph_id)
    annotate(p, DA_GRAPH, DA_UINT, k->graph_id);
  if (kernel_flow(e))
    cp_pb_fixed64(p, TE_FLOW_END, k->correlation);
  event_close(w, e->name, 1, e->node);
  end_at(w, e->start_ns, end_of(e), uuid, 0);
}

static void put_region(writer *w, const cp_event *e) {
  const cp_event_region *r = &e->u.region;
  uint64_t uuid = cp_perfetto_track(w, TK_WARP, r->kernel_name, r->sm, r->cta,
                                    r->warp);
  size_t before = w->st.bytes;
  event_open(w, e->start_ns, 1, SLICE_BEGIN, uuid);
  cp_pb_varint(&w->pkt, TE_NAME_IID, (uint64_t)e->name + 1);
  event_close(w, e->name, 0, 0);
  w->st.region_events++;
  w->st.region_bytes += w->st.bytes - before;
  end_at(w, e->start_ns, end_of(e), uuid, 1);
}

/* A hardware-counter sample: its value from its start on, on the track of
 * (device, counter). Uses no interned state. */
static void put_counter(writer *w, const cp_event *e) {
  uint64_t uuid = cp_perfetto_track(w, TK_COUNTER, e->u.counter.device,
                                    e->name, 0, 0);
  uint64_t raw;
  memcpy(&raw, &e->u.counter.value, sizeof raw); /* its IEEE 754 bits */
  event_open(w, e->start_ns, 0, COUNTER, uuid);
  cp_pb_fixed64(&w->pkt, TE_DOUBLE_COUNTER_VALUE, raw);
  event_close(w, UINT32_MAX, 0, 0);
  w->st.counters++;
}

/* Window entries of this kind are a kernel's launch, at its launch time. */
#define KIND_LAUNCH 0x80

static void put_event(writer *w, const cp_event *e) {
  cp_perfetto_events_drain_ends(w, e->start_ns);
  if (e->kind == KIND_LAUNCH) {
    put_launch(w, e->start_ns, e->u.kernel.launch_thread,
               e->u.kernel.correlation);
    return;
  }
  if (e->kind == CP_EVENT_SCOPE)
    put_scope(w, e);
  else if (e->kind == CP_EVENT_KERNEL)
    put_kernel(w, e);
  else if (e->kind == CP_EVENT_REGION)
    put_region(w, e);
  else if (e->kind == CP_EVENT_COUNTER)
    put_counter(w, e);
  else
    return;
  w->st.events++;
}

/* ---- the sorting window ------------------------------------------------ */

static uint32_t depth_of(const cp_event *e) {
  if (e->kind == CP_EVENT_REGION)
    return e->u.region.line;
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

void cp_perfetto_events_flush_window(writer *w) {
  qsort(w->win, w->n_win, sizeof *w->win, by_time);
  for (size_t i = 0; i < w->n_win; i++)
    put_event(w, &w->win[i]);
  w->n_win = 0;
}

static void add_to_window(writer *w, const cp_event *e) {
  w->win[w->n_win++] = *e;
  if (w->n_win == w->cap_win)
    cp_perfetto_events_flush_window(w);
}

int cp_perfetto_events_collect(void *user, const cp_event *e) {
  writer *w = user;
  add_to_window(w, e);
  if (kernel_flow(e)) {
    cp_event launch = *e;
    launch.kind = KIND_LAUNCH;
    launch.start_ns = launch.end_ns = e->u.kernel.launch_ns;
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

void cp_perfetto_events_note_replay(writer *w, const cp_event *e) {
  const cp_event_kernel *k = &e->u.kernel;
  replay *r = replay_slot(w, k->correlation);
  if (!r) {
    w->st.replays_skipped++;
    return;
  }
  if (!r->n_kernels) {
    w->n_replays++;
    *r = (replay){.corr = k->correlation, .device = k->device,
                  .graph = k->graph_id, .launch_lane = k->launch_thread,
                  .start = e->start_ns, .end = end_of(e),
                  .launch_ns = k->launch_ns};
  }
  r->n_kernels++;
  if (e->start_ns < r->start)
    r->start = e->start_ns;
  if (end_of(e) > r->end)
    r->end = end_of(e);
}

void cp_perfetto_events_put_replays(writer *w) {
  for (size_t i = 0; i < w->cap_replays; i++) {
    const replay *r = &w->replays[i];
    if (!r->n_kernels)
      continue;
    uint64_t uuid = cp_perfetto_track(w, TK_GRAPHS, r->device, 0, 0, 0);
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
