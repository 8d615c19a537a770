/* io/perfetto_writer.h -- the Perfetto writer's private state and the
 * functions its two files share (perfetto.c: tables, packets, tracks, the
 * passes; perfetto_events.c: events, the sorting window, graph replays).
 * Not used outside io/perfetto*.c; the file layout is in perfetto.c. */
#ifndef CP_IO_PERFETTO_WRITER_H
#define CP_IO_PERFETTO_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "core/trace.h"
#include "io/pb.h"
#include "io/perfetto_types.h"
#include "io/sink.h"

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
  TD_COUNTER = 8, TD_CHILD_ORDERING = 11, TD_SIBLING_RANK = 12,
  CD_UNIT_NAME = 6,
  PROC_PID = 1, PROC_NAME = 6, THREAD_PID = 1, THREAD_TID = 2,
  THREAD_NAME = 5,
  TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11,
  TE_FLOW = 47, TE_FLOW_END = 48, TE_DOUBLE_COUNTER_VALUE = 44,
  DA_NAME_IID = 1, DA_UINT = 3, DA_STRING_IID = 17,
  IN_EVENT_NAMES = 2, IN_DA_NAMES = 3, IN_DA_STRINGS = 29,
  IN_IID = 1, IN_NAME = 2,
};

enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
enum { ORDER_EXPLICIT = 3 };
enum { CLOCK_REALTIME_ID = 1, CLOCK_MONO_RAW_ID = 5, CLOCK_BOOTTIME_ID = 6 };

/* Debug-annotation names, interned once in packet #1: iid = index + 1. */
enum { DA_CALL_STACK = 1, DA_CORRELATION = 2, DA_GRAPH = 3 };

typedef enum track_kind {
  TK_THREAD = 1, TK_GPU, TK_STREAM, TK_GRAPHS, TK_KERNEL, TK_CTA, TK_WARP,
  TK_COUNTER /* a: device, b: the counter's name (strtab id) */
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

/* perfetto.c: tables, packets, tracks */
/* Sets bit `i` of `b`; returns whether it was set before (1 when out of
 * memory, with w->oom set: nothing is interned that cannot be tracked). */
int cp_perfetto_bit_test_set(writer *w, bits *b, uint32_t i);
/* Frames packet `p` into the output as one TracePacket. */
void cp_perfetto_emit(writer *w, cp_pb *p);
/* An interned-data entry {iid, name} in field `field` of `p`. */
void cp_perfetto_put_interned(cp_pb *p, uint32_t field, uint64_t iid,
                              uint32_t str_field, const char *s);
/* The string of strtab id `id`, or `fallback`. */
const char *cp_perfetto_str_or(uint32_t id, const char *fallback);
/* The uuid of a track, described on first use; 0 when out of memory. */
uint64_t cp_perfetto_track(writer *w, track_kind kind, uint32_t a, uint32_t b,
                           uint32_t c, uint32_t d);

/* perfetto_events.c: events, the window, graph replays */
/* cp_trace_each's callback of the second pass: one event into the window. */
int cp_perfetto_events_collect(void *user, const cp_event *e);
/* Writes the slice ends due at or before `ts`. */
void cp_perfetto_events_drain_ends(writer *w, uint64_t ts);
/* Sorts and writes the events in the window. */
void cp_perfetto_events_flush_window(writer *w);
/* First pass: a kernel replayed from a CUDA graph joins its launch's slice. */
void cp_perfetto_events_note_replay(writer *w, const cp_event *e);
/* One slice per graph launch, after every event. */
void cp_perfetto_events_put_replays(writer *w);

#endif
