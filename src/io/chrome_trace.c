/* io/chrome_trace.c -- renders timeline events as Chrome trace JSON, in
 * Proton 3.6's layout (kernels and intra-kernel regions only) or as
 * cproton's full timeline (also CPU scopes, flows and lane names); Proton
 * 3.9's layout is io/chrome_trace39.c, chosen here.
 *
 * Lanes: pid 0 is the host ("CPU"), tid the cproton thread id; pid 1+d is
 * GPU d, tid its stream; its hardware-counter samples are "C" events named
 * after the counter on that pid (one counter track each, in every layout
 * of this file). Flow events ("s" at the launch on the CPU lane,
 * "f" with "bp": "e" at the kernel) share the correlation id. Events are
 * streamed one by one; only the set of lanes is kept in memory.
 * Not a hot path (finalize). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cct.h"
#include "core/compat.h"
#include "core/error.h"
#include "core/strtab.h"
#include "io/chrome_trace.h"

#define MAX_LANES 4096

#define NO_THREAD UINT32_MAX /* a lane that names only its process */

typedef struct lane {
  uint32_t pid, tid;
} lane;

typedef struct state {
  cp_sink *s;
  uint64_t t0;
  int first;
  int timeline; /* CPU scopes, flows and lane names too */
  lane lanes[MAX_LANES];
  size_t n_lanes;
  uint64_t next_flow; /* Proton 3.9's bind_id of cross-warp event links */
} state;

static int find_t0(void *user, const cp_event *e) {
  state *st = user;
  if (e->start_ns && e->start_ns < st->t0)
    st->t0 = e->start_ns;
  uint64_t launch = cp_event_launch_ns(e);
  if (launch && launch < st->t0)
    st->t0 = launch;
  return 0;
}

static void add_lane(state *st, uint32_t pid, uint32_t tid) {
  for (size_t i = 0; i < st->n_lanes; i++)
    if (st->lanes[i].pid == pid && st->lanes[i].tid == tid)
      return;
  if (st->n_lanes < MAX_LANES)
    st->lanes[st->n_lanes++] = (lane){pid, tid};
}

static void sep(state *st) {
  cp_sink_puts(st->s, st->first ? "\n" : ",\n");
  st->first = 0;
}

static void put_us(cp_sink *s, const char *key, uint64_t ns) {
  cp_sink_printf(s, "\"%s\":%llu.%03llu", key,
                 (unsigned long long)(ns / 1000),
                 (unsigned long long)(ns % 1000));
}

void cp_chrome_put_stack(cp_sink *s, uint32_t node_id) {
  const cp_node *path[1400];
  size_t n = 0;
  for (const cp_node *c = cp_cct_node(node_id); c && n < 1400; c = c->parent)
    path[n++] = c;
  cp_sink_puts(s, "\"call_stack\":[");
  while (n--) {
    cp_sink_json_string(s, path[n]->id ? cp_strtab_str(path[n]->name) : "ROOT");
    if (n)
      cp_sink_puts(s, ",");
  }
  cp_sink_puts(s, "]");
}

void cp_chrome_put_counter(cp_sink *s, const cp_event *e, uint32_t pid,
                           int with_device, uint64_t t0) {
  const char *counter = cp_strtab_str(e->name);
  char name[600];
  if (with_device)
    snprintf(name, sizeof name, "GPU %u %.500s", e->u.counter.device,
             counter ? counter : "?");
  else
    snprintf(name, sizeof name, "%.500s", counter ? counter : "?");
  cp_sink_puts(s, "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":");
  cp_sink_json_string(s, name);
  cp_sink_printf(s, ",\"pid\":%u,", pid);
  put_us(s, "ts", e->start_ns - t0);
  cp_sink_puts(s, ",\"args\":{\"value\":");
  cp_sink_json_double(s, e->u.counter.value);
  cp_sink_puts(s, "}}");
}

static void put_complete(state *st, const cp_event *e, uint32_t pid,
                         uint32_t tid, const char *cat) {
  sep(st);
  cp_sink_puts(st->s, "{\"ph\":\"X\",\"cat\":");
  cp_sink_json_string(st->s, cat);
  cp_sink_puts(st->s, ",\"name\":");
  const char *name = cp_strtab_str(e->name);
  cp_sink_json_string(st->s, name ? name : "?");
  cp_sink_printf(st->s, ",\"pid\":%u,\"tid\":%u,", pid, tid);
  put_us(st->s, "ts", e->start_ns - st->t0);
  cp_sink_puts(st->s, ",");
  put_us(st->s, "dur", e->end_ns > e->start_ns ? e->end_ns - e->start_ns : 0);
  cp_sink_puts(st->s, ",\"args\":{");
  cp_chrome_put_stack(st->s, e->node);
  const cp_event_kernel *k = &e->u.kernel;
  if (e->kind == CP_EVENT_KERNEL)
    cp_sink_printf(st->s, ",\"correlation\":%u,\"device\":%u,\"stream\":%u",
                   k->correlation, k->device, k->stream);
  if (e->kind == CP_EVENT_KERNEL && k->graph_id) /* a CUDA graph's replay */
    cp_sink_printf(st->s, ",\"graph\":%u", k->graph_id);
  cp_sink_puts(st->s, "}}");
}

static void put_flow(state *st, const cp_event *e) {
  const cp_event_kernel *k = &e->u.kernel;
  if (!k->launch_ns || k->launch_ns > e->start_ns)
    return;
  sep(st);
  cp_sink_printf(st->s, "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\","
                        "\"id\":%u,\"pid\":0,\"tid\":%u,",
                 k->correlation, k->launch_thread);
  put_us(st->s, "ts", k->launch_ns - st->t0);
  cp_sink_puts(st->s, "}");
  sep(st);
  cp_sink_printf(st->s, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\","
                        "\"name\":\"launch\",\"id\":%u,\"pid\":%u,\"tid\":%u,",
                 k->correlation, k->device + 1, k->stream);
  put_us(st->s, "ts", e->start_ns - st->t0);
  cp_sink_puts(st->s, "}");
  add_lane(st, 0, k->launch_thread);
}

/* One warp's scope occurrence, laid out as Proton does: a process per
 * (kernel, SM, CTA), a thread per (warp, line) so overlapping scopes of a
 * warp stack up. */
/* Proton 3.9 writes its CTA's times in every region's args (its key
 * order; the frequency is that of the ns clock the times are in). */
static void put_cta_times(cp_sink *s, const cp_event_region *e) {
  uint64_t fin = e->cta_post_final_ns > e->cta_pre_final_ns ? e->cta_post_final_ns - e->cta_pre_final_ns : 0;
  cp_sink_printf(s, "\"Finalization Time (ns)\":%" PRIu64 ",\"Frequency (MHz)\":1000.0,"
                    "\"Init Time (ns)\":%" PRIu64 ",\"Post Final Time (ns)\":%" PRIu64 ",",
                 fin, e->cta_init_ns, e->cta_post_final_ns);
}

/* `{"ph":"X","cat":<cat>,"name":..,"pid":"<kernel> Core<SM> CTA<id>"` of
 * region `e` (its kernel's name when `cat` is NULL). */
static void put_region_head(state *st, const cp_event *e, const char *cat) {
  const cp_event_region *r = &e->u.region;
  const char *kernel = cp_strtab_str(r->kernel_name);
  sep(st);
  cp_sink_puts(st->s, "{\"ph\":\"X\",\"cat\":");
  cp_sink_json_string(st->s, cat ? cat : kernel ? kernel : "?");
  cp_sink_puts(st->s, ",\"name\":");
  const char *name = cp_strtab_str(e->name);
  cp_sink_json_string(st->s, name ? name : "?");
  char pid[600];
  snprintf(pid, sizeof pid, "%.500s Core%u CTA%u", kernel ? kernel : "?",
           r->sm, r->cta);
  cp_sink_puts(st->s, ",\"pid\":");
  cp_sink_json_string(st->s, pid);
}

/* A region as one slice; Proton 3.9 writes an event ended by its own warp
 * with cat "async" and no CTA times, a scope with them. */
static void put_region(state *st, const cp_event *e) {
  int v39 = cp_compat_is_39();
  const cp_event_region *r = &e->u.region;
  put_region_head(st, e, v39 && r->is_event ? "async" : NULL);
  cp_sink_printf(st->s, ",\"tid\":\"warp %u (line %u)\",", r->warp,
                 (unsigned)r->line);
  put_us(st->s, "ts", e->start_ns - st->t0);
  cp_sink_puts(st->s, ",");
  put_us(st->s, "dur", e->end_ns > e->start_ns ? e->end_ns - e->start_ns : 0);
  cp_sink_puts(st->s, ",\"args\":{");
  if (v39 && !r->is_event)
    put_cta_times(st->s, r);
  cp_chrome_put_stack(st->s, e->node);
  cp_sink_puts(st->s, "}}");
}

/* Proton 3.9's link of an event that one warp started and another ended:
 * an instant on each warp's line 0, bound by a flow (bind_id). */
static void put_event_link(state *st, const cp_event *e) {
  uint64_t id = st->next_flow++;
  for (int end = 0; end < 2; end++) {
    put_region_head(st, e, "flow");
    cp_sink_printf(st->s, ",\"tid\":\"warp %u (line 0)\",\"dur\":0,\"bind_id\":%" PRIu64 ",\"%s\":true,",
                   end ? e->u.region.end_warp : e->u.region.warp, id,
                   end ? "flow_in" : "flow_out");
    put_us(st->s, "ts", (end ? e->end_ns : e->start_ns) - st->t0);
    cp_sink_puts(st->s, ",\"args\":{");
    cp_chrome_put_stack(st->s, e->node);
    cp_sink_puts(st->s, "}}");
  }
}

static int put_event(void *user, const cp_event *e) {
  state *st = user;
  const cp_event_region *r = &e->u.region;
  if (e->kind == CP_EVENT_SCOPE && st->timeline) {
    put_complete(st, e, 0, e->u.scope.thread, "scope");
    add_lane(st, 0, e->u.scope.thread);
  } else if (e->kind == CP_EVENT_KERNEL) {
    put_complete(st, e, e->u.kernel.device + 1, e->u.kernel.stream, "kernel");
    add_lane(st, e->u.kernel.device + 1, e->u.kernel.stream);
    if (st->timeline)
      put_flow(st, e);
  } else if (e->kind == CP_EVENT_REGION && r->is_event &&
             r->end_warp != r->warp && cp_compat_is_39()) {
    put_event_link(st, e);
  } else if (e->kind == CP_EVENT_REGION) {
    put_region(st, e);
  } else if (e->kind == CP_EVENT_COUNTER) {
    sep(st);
    cp_chrome_put_counter(st->s, e, e->u.counter.device + 1, 0, st->t0);
    add_lane(st, e->u.counter.device + 1, NO_THREAD);
  }
  return 0;
}

static void put_metadata(state *st) {
  uint32_t named_pids[MAX_LANES];
  size_t n_pids = 0;
  for (size_t i = 0; i < st->n_lanes; i++) {
    const lane *l = &st->lanes[i];
    size_t k = 0;
    while (k < n_pids && named_pids[k] != l->pid)
      k++;
    if (k == n_pids) {
      named_pids[n_pids++] = l->pid;
      sep(st);
      if (l->pid == 0)
        cp_sink_puts(st->s, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,"
                            "\"args\":{\"name\":\"CPU\"}}");
      else
        cp_sink_printf(st->s, "{\"ph\":\"M\",\"name\":\"process_name\","
                              "\"pid\":%u,\"args\":{\"name\":\"GPU %u\"}}",
                       l->pid, l->pid - 1);
    }
    if (l->tid == NO_THREAD) /* a GPU with counters only */
      continue;
    sep(st);
    cp_sink_printf(st->s, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,"
                          "\"tid\":%u,\"args\":{\"name\":\"%s %u\"}}",
                   l->pid, l->tid, l->pid ? "stream" : "thread", l->tid);
  }
}

static int write_trace(cp_sink *s, const cp_trace *t, int timeline) {
  state *st = calloc(1, sizeof *st);
  if (!st)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a trace");
  st->s = s;
  st->timeline = timeline;
  st->t0 = UINT64_MAX;
  st->first = 1;
  cp_trace_each(t, find_t0, st);
  if (st->t0 == UINT64_MAX)
    st->t0 = 0;
  cp_sink_puts(s, "{\"displayTimeUnit\":\"us\",\"traceEvents\":[");
  cp_trace_each(t, put_event, st);
  if (timeline)
    put_metadata(st);
  cp_sink_puts(s, "\n]}\n");
  free(st);
  return CPROTON_OK;
}

static int is_region(void *user, const cp_event *e) {
  (void)user;
  return e->kind == CP_EVENT_REGION;
}

int cp_chrome_trace_write(cp_sink *s, const cp_trace *t, cp_data *d) {
  /* Proton 3.9's layout (io/chrome_trace39.c) for kernels and scopes;
   * intra-kernel regions keep this one (Proton 3.9 writes those with
   * another dumper). */
  if (cp_compat_is_39() && cp_trace_each(t, is_region, NULL) == 0)
    return cp_chrome_trace39_write(s, t, d);
  return write_trace(s, t, 0);
}

int cp_chrome_trace_write_timeline(cp_sink *s, const cp_trace *t,
                                   const cp_data *d) {
  (void)d;
  return write_trace(s, t, 1);
}
