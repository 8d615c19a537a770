/* core/trace.h -- a session's timeline events for data="trace"
 * (cp_trace_*). Events are compact binary records appended from any thread,
 * spilled to an anonymous file past one buffer (bounded memory), and
 * rendered by io/chrome_trace.c or io/perfetto.c at finalize. */
#ifndef CP_CORE_TRACE_H
#define CP_CORE_TRACE_H

#include <stddef.h>
#include <stdint.h>

typedef enum cp_event_kind {
  CP_EVENT_SCOPE = 0,  /* a CPU scope on thread `lane` */
  CP_EVENT_KERNEL = 1, /* a kernel on device `device`, stream `lane` */
  CP_EVENT_REGION = 2  /* an intra-kernel region (instrumentation) */
} cp_event_kind;

typedef struct cp_event {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t launch_ns;   /* kernels: CPU time of the launch (0 if unknown) */
  uint32_t name;        /* strtab id */
  uint32_t node;        /* context node id: the call stack */
  uint32_t lane;        /* thread id (scopes), stream id (kernels), warp */
  uint32_t device;      /* device id; regions: SM id */
  uint32_t launch_lane; /* kernels: the launching thread; regions: line */
  uint32_t correlation; /* kernels: launch/kernel link; regions: CTA id */
  uint32_t group;       /* regions: the kernel's name (strtab id);
                           kernels: the CUDA graph id (0: not a replay) */
  uint8_t kind;         /* cp_event_kind */
  uint8_t is_event;     /* regions: a pl.start_event/end_event pair, not a
                           scope occurrence (end_lane says who ended it) */
  uint8_t reserved[2];  /* named so that an initializer zeroes them: the
                           spill file gets no uninitialized bytes (MSan) */
  /* regions: their CTA's %globaltimer ns at init, when the finalize began
   * and after the copy-out, raw (not moved like start_ns/end_ns): Proton
   * 3.9's trace writes them in every region's args; 0 for other kinds */
  uint64_t cta_init_ns;
  uint64_t cta_pre_final_ns;
  uint64_t cta_post_final_ns;
  uint32_t end_lane;    /* regions: the warp that recorded the end (lane,
                           the start's warp, but for an event another warp
                           ended); 0 for other kinds */
  uint32_t reserved2;   /* 0 (as reserved) */
} cp_event;
_Static_assert(sizeof(cp_event) == 88, "cp_event has no hidden padding");

typedef struct cp_trace cp_trace;

/* For an intra-kernel region event whose launch_ns is its launch's host
 * time: moves it by cp_ktimes_shift (onto its kernel's CUPTI record, when
 * known); clears launch_ns either way (regions carry none in the written
 * trace). Other kinds are left as they are. Thread-safe. */
void cp_event_align(cp_event *e);

/* A new empty trace; NULL when out of memory. */
cp_trace *cp_trace_new(void);

/* Frees `t`; NULL is fine. */
void cp_trace_free(cp_trace *t);

/* Where to create the spill file (an existing directory, usually the
 * output's); NULL or a failure there falls back to P_tmpdir, and failing
 * that the events stay in memory. Errors: ENOMEM. */
int cp_trace_set_spill_dir(cp_trace *t, const char *dir);

/* Appends one event. Thread-safe (mutex; trace mode only, never on the
 * launch path of tree sessions). Errors: ENOMEM, ELIMIT past the cap, EIO
 * when a spill write fails (that buffer's events are counted as dropped). */
int cp_trace_append(cp_trace *t, const cp_event *e);

/* Drops every event (the buffers are kept). */
void cp_trace_clear(cp_trace *t);

/* Calls `fn` on each event held when the call began, in append order
 * (copied in small blocks under the trace's lock, never held while `fn`
 * runs); stops at the first non-zero return and returns it, or EIO /
 * ENOMEM. Thread-safe: appends may go on meanwhile (issue 24.5). */
int cp_trace_each(const cp_trace *t, int (*fn)(void *, const cp_event *),
                  void *user);

/* Number of events held, events dropped (cap, memory, disk), and events
 * held in the spill file rather than in memory. Thread-safe. */
size_t cp_trace_count(const cp_trace *t);
size_t cp_trace_dropped(const cp_trace *t);
size_t cp_trace_spilled(const cp_trace *t);

#endif
