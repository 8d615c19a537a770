/* core/trace.h -- a session's timeline events for data="trace"
 * (cp_trace_*). Events are compact binary records appended from any thread,
 * spilled to an anonymous file past one buffer (bounded memory), and
 * rendered by io/chrome_trace.c or io/perfetto.c at finalize. */
#ifndef CP_CORE_TRACE_H
#define CP_CORE_TRACE_H

#include <stddef.h>
#include <stdint.h>

typedef enum cp_event_kind {
  CP_EVENT_SCOPE = 0,   /* a CPU scope: u.scope */
  CP_EVENT_KERNEL = 1,  /* a kernel on a device's stream: u.kernel */
  CP_EVENT_REGION = 2,  /* an intra-kernel region (instrumentation): u.region */
  CP_EVENT_COUNTER = 3  /* a hardware-counter sample: u.counter */
} cp_event_kind;

/* Each kind's payload. Every byte of each is a named field (`reserved`
 * ones are 0), so a payload copied by cp_trace_append leaves no
 * uninitialized byte in the spill file (MSan). */
typedef struct cp_event_scope {
  uint32_t thread;   /* cproton thread id */
  uint32_t reserved;
} cp_event_scope;

typedef struct cp_event_kernel {
  uint64_t launch_ns;      /* CPU time of the launch (0 if unknown) */
  uint32_t stream, device; /* where it ran */
  uint32_t launch_thread;  /* the launching cproton thread */
  uint32_t correlation;    /* the launch/kernel link */
  uint32_t graph_id;       /* the CUDA graph replayed (0: not a replay) */
  uint32_t reserved;
} cp_event_kernel;

typedef struct cp_event_region {
  /* the launch's host time, the anchor of start_ns/end_ns until
   * cp_event_align moves them onto the kernel's CUPTI record; then 0 */
  uint64_t launch_ns;
  /* the CTA's %globaltimer ns at init, when the finalize began and after
   * the copy-out, raw (not moved like start_ns/end_ns): Proton 3.9's trace
   * writes them in every region's args */
  uint64_t cta_init_ns, cta_pre_final_ns, cta_post_final_ns;
  uint32_t warp, sm, cta; /* where it ran */
  uint32_t kernel_name;   /* strtab id of its kernel's name */
  uint32_t end_warp;      /* the warp that recorded the end (warp, but for
                             an event another warp ended) */
  uint16_t line;          /* trace line: the scope's depth, or the events'
                             line (decoder depths are <= 64) */
  uint8_t is_event;       /* a pl.start_event/end_event pair, not a scope
                             occurrence */
  uint8_t reserved;
} cp_event_region;

typedef struct cp_event_counter {
  double value;    /* the counter's value over [start_ns, end_ns) */
  uint32_t device; /* the device sampled; the event's name is the counter */
  uint32_t reserved;
} cp_event_counter;

/* One timeline event: [start_ns, end_ns) on the session's clock, a name
 * (strtab id), the context node (the call stack; 0 for counters), and the
 * payload of its kind. */
typedef struct cp_event {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t name;       /* strtab id */
  uint32_t node;       /* context node id */
  uint8_t kind;        /* cp_event_kind: which member of u is live */
  uint8_t reserved[7]; /* 0 */
  union {
    cp_event_scope scope;
    cp_event_kernel kernel;
    cp_event_region region;
    cp_event_counter counter;
  } u;
} cp_event;
_Static_assert(sizeof(cp_event_scope) == 8, "no hidden padding");
_Static_assert(sizeof(cp_event_kernel) == 32, "no hidden padding");
_Static_assert(sizeof(cp_event_region) == 56, "no hidden padding");
_Static_assert(sizeof(cp_event_counter) == 16, "no hidden padding");
_Static_assert(sizeof(cp_event) == 88, "cp_event has no hidden padding");

/* The CPU time of a kernel's launch (0 for other kinds, and unknown). */
static inline uint64_t cp_event_launch_ns(const cp_event *e) {
  return e->kind == CP_EVENT_KERNEL ? e->u.kernel.launch_ns : 0;
}

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

/* Appends one event: its header and its kind's payload (the rest of the
 * union is stored as zeros, whatever `e` holds there). Thread-safe (mutex; trace mode only, never on the
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
