/* core/trace.h -- a session's timeline events for data="trace"
 * (cp_trace_*). Events are compact binary records appended from any thread
 * and rendered by io/chrome_trace.c at finalize. */
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
  uint32_t group;       /* regions: the kernel's name (strtab id) */
  uint8_t kind;         /* cp_event_kind */
} cp_event;

typedef struct cp_trace cp_trace;

/* A new empty trace; NULL when out of memory. */
cp_trace *cp_trace_new(void);

/* Frees `t`; NULL is fine. */
void cp_trace_free(cp_trace *t);

/* Appends one event. Thread-safe (mutex; trace mode only, never on the
 * launch path of tree sessions). Errors: ENOMEM, ELIMIT past the cap. */
int cp_trace_append(cp_trace *t, const cp_event *e);

/* Drops every event (the buffers are kept). */
void cp_trace_clear(cp_trace *t);

/* Calls `fn` on each event in append order; stops at the first non-zero
 * return and returns it. The caller ensures no concurrent appends. */
int cp_trace_each(const cp_trace *t, int (*fn)(void *, const cp_event *),
                  void *user);

/* Number of events held, and events dropped at the cap. */
size_t cp_trace_count(const cp_trace *t);
size_t cp_trace_dropped(const cp_trace *t);

#endif
