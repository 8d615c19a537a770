/* io/chrome_trace39.c -- a session's timeline as Proton 3.9's Chrome trace
 * ("chrome_trace" while the library follows Proton 3.9, core/compat.h).
 *
 *   {"displayTimeUnit": "us", "baseTimeNanoseconds": <epoch ns of ts 0>,
 *    "traceEvents": [
 *      lane metadata ("M": process "Trace", "CPU Thread <t>", "GPU Stream
 *        <s>", with sort indexes) -- only when kernels were recorded,
 *      one "X" per CPU scope: "cat" "scope", or "metric" when its node has
 *        metrics (name "<scope>: <m, v>, ...", args.metrics {m: "v"}),
 *        args.call_stack, args.scope_id, tid <thread>,
 *      graph scopes: per stream with replayed CUDA-graph kernels, a lane
 *        100000 + <stream> ("Graph: Stream <s>") with one "X" (cat "scope",
 *        no args) per run of kernels under a frame from "<captured_at>"
 *        down (metadata kernels left out),
 *      flows "launch->kernel" ("s" on the launching thread at the start of
 *        the scope the kernel was launched in, "f" with "bp" "e" at the
 *        kernel, "id" that scope occurrence's) for kernels launched inside
 *        a scope, one per graph launch,
 *      one "X" per kernel: "cat" "kernel", tid 200000 + <stream>,
 *        args.call_stack ["ROOT", ..., kernel], args.metrics when its node
 *        has metrics (launch metadata),
 *      one "C" per hardware-counter sample (cproton's, Proton has none):
 *        name "GPU <d> <counter>", args.value, at the sample's start]}
 *
 * Everything is in pid 0. Times are microseconds from the earliest event;
 * baseTimeNanoseconds is that event's time on the wall clock (the timebase
 * is CLOCK_MONOTONIC_RAW, core/clock.h: shifted by the offset between the
 * two clocks at writing). A trace with no event is
 * {"displayTimeUnit": "us", "traceEvents": []}, as Proton writes it.
 * Differences from Proton 3.9, by construction: metrics are those of the
 * scope's or kernel's context node summed over the session (Proton: of
 * that one occurrence); the scopes a flow can start at are the first 2^20
 * (beyond, a flow starts at its launch, with an id above 2^32);
 * graph lanes cover 256 streams and frames 128 deep below "<captured_at>"
 * (deeper ones are left off those lanes); intra-kernel regions keep Proton
 * 3.6's layout (io/chrome_trace.c). Not a hot path (finalize). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/cct.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/strtab.h"
#include "io/chrome_trace.h"

#define MAX_LANES 4096
#define GRAPH_LANE_BASE 100000u
#define GPU_LANE_BASE 200000u
#define CAPTURE_TAG "<captured_at>" /* backend/cupti/graph.h's frame */
#define MAX_GRAPH_DEPTH 128
#define MAX_GRAPH_STREAMS 256
#define MAX_INDEXED_SCOPES (1u << 20) /* 24 MB of spans at most */

/* A CPU scope's span, to find the scope a kernel was launched in. */
typedef struct scope_span {
  uint32_t lane, node;
  uint64_t start, end;
} scope_span;

/* A graph lane's open scopes (one per stream with replayed kernels). */
typedef struct graph_lane {
  uint32_t stream, depth;
  uint32_t name[MAX_GRAPH_DEPTH];
  uint64_t start[MAX_GRAPH_DEPTH];
  uint64_t last_end;
} graph_lane;

typedef struct state {
  cp_sink *s;
  cp_data *d;
  uint64_t t0;
  int first, n_kernels, n_events;
  uint32_t cpu[MAX_LANES], gpu[MAX_LANES], graph[MAX_LANES];
  size_t n_cpu, n_gpu, n_graph;
  graph_lane *lanes; /* MAX_GRAPH_STREAMS, while graph scopes are written */
  size_t n_lanes;
  uint32_t flow_stream, flow_corr; /* the last graph kernel given a flow */
  scope_span *spans; /* CPU scopes by (lane, node, start), the first ones */
  size_t n_spans, cap_spans;
} state;

static void add_lane(uint32_t *lanes, size_t *n, uint32_t id) {
  for (size_t i = 0; i < *n; i++)
    if (lanes[i] == id)
      return;
  if (*n < MAX_LANES)
    lanes[(*n)++] = id;
}

/* A kernel launched inside a scope gets a flow (Proton: one launched at
 * ROOT has no launching scope event). */
static int has_flow(const cp_event *e) {
  const cp_node *n = cp_cct_node(e->node);
  uint64_t launch = e->u.kernel.launch_ns;
  return launch && launch <= e->start_ns && n && n->parent &&
         n->parent->id != 0;
}

static int is_metadata_name(const char *name) {
  return strcmp(name, "<metric>") == 0 ||
         strncmp(name, "__proton_launch_metadata", 24) == 0;
}

/* A replayed graph kernel's frames from CAPTURE_TAG down to its parent, into
 * path[] (outermost first); their count, or 0 when it has none to show: not
 * under a capture, or a metadata kernel (a metadata state or "<metric>"
 * anywhere on its path: Proton 3.9 leaves those out of graph lanes). */
static size_t graph_path(const cp_event *e, uint32_t *path) {
  const cp_node *n = cp_cct_node(e->node);
  if (!e->u.kernel.graph_id || !n)
    return 0;
  uint32_t up[MAX_GRAPH_DEPTH];
  size_t k = 0, tag = 0;
  for (const cp_node *c = n->parent; c && c->id; c = c->parent) {
    const char *name = cp_strtab_str(c->name);
    if (!name || is_metadata_name(name))
      return 0;
    if (!tag && k < MAX_GRAPH_DEPTH) {
      up[k++] = c->name;
      tag = strcmp(name, CAPTURE_TAG) == 0;
    }
  }
  const char *kernel = cp_strtab_str(n->name);
  if (!tag || (kernel && is_metadata_name(kernel)))
    return 0;
  for (size_t i = 0; i < k; i++)
    path[i] = up[k - 1 - i];
  return k;
}

/* Keeps the span of scope event `e`; past MAX_INDEXED_SCOPES (or out of
 * memory) later scopes are not indexed and their kernels' flows start at
 * the launch itself. */
static void index_scope(state *st, const cp_event *e) {
  if (st->n_spans == st->cap_spans) {
    void *p;
    if ((st->cap_spans ? 2 * st->cap_spans : 1024) > MAX_INDEXED_SCOPES ||
        cp_grow(st->spans, &st->cap_spans, st->n_spans + 1, sizeof *st->spans,
                1024, &p))
      return;
    st->spans = p;
  }
  CP_ASSERT(st->n_spans < MAX_INDEXED_SCOPES);
  st->spans[st->n_spans++] = (scope_span){
      .lane = e->u.scope.thread, .node = e->node, .start = e->start_ns,
      .end = e->end_ns};
}

static int by_lane_node_start(const void *a, const void *b) {
  const scope_span *x = a, *y = b;
  if (x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* The span of `node`'s scope on `lane` open at `t`, or NULL. */
static const scope_span *span_at(const state *st, uint32_t lane, uint32_t node,
                                 uint64_t t) {
  /* binary search: the last span with key <= (lane, node, t) */
  size_t lo = 0, hi = st->n_spans;
  scope_span key = {.lane = lane, .node = node, .start = t};
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (by_lane_node_start(&st->spans[mid], &key) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  const scope_span *sp = lo ? &st->spans[lo - 1] : NULL;
  return sp && sp->lane == lane && sp->node == node && sp->end >= t ? sp : NULL;
}

/* The CPU scope kernel `e` was launched in: the innermost ancestor of its
 * node that has a scope open at the launch on the launching thread (for a
 * replayed graph kernel, the scope the graph was launched in). */
static const scope_span *launch_scope(const state *st, const cp_event *e) {
  const cp_node *n = cp_cct_node(e->node);
  for (const cp_node *c = n ? n->parent : NULL; c && c->id; c = c->parent) {
    const scope_span *sp = span_at(st, e->u.kernel.launch_thread, c->id,
                                   e->u.kernel.launch_ns);
    if (sp)
      return sp;
  }
  return NULL;
}

static int scan(void *user, const cp_event *e) {
  state *st = user;
  if (e->kind != CP_EVENT_SCOPE && e->kind != CP_EVENT_KERNEL &&
      e->kind != CP_EVENT_COUNTER)
    return 0;
  st->n_events++;
  if (e->start_ns < st->t0)
    st->t0 = e->start_ns;
  if (e->kind == CP_EVENT_COUNTER)
    return 0;
  if (e->kind == CP_EVENT_SCOPE) {
    add_lane(st->cpu, &st->n_cpu, e->u.scope.thread);
    index_scope(st, e);
  } else {
    const cp_event_kernel *k = &e->u.kernel;
    uint32_t path[MAX_GRAPH_DEPTH];
    st->n_kernels++;
    add_lane(st->gpu, &st->n_gpu, k->stream);
    if (graph_path(e, path))
      add_lane(st->graph, &st->n_graph, k->stream);
    if (has_flow(e)) {
      add_lane(st->cpu, &st->n_cpu, k->launch_thread);
      if (k->launch_ns < st->t0)
        st->t0 = k->launch_ns;
    }
  }
  return 0;
}

static void sep(state *st) {
  cp_sink_puts(st->s, st->first ? "\n" : ",\n");
  st->first = 0;
}

static void put_us(cp_sink *s, const char *key, uint64_t ns) {
  cp_sink_printf(s, "\"%s\":%llu.%03llu", key, (unsigned long long)(ns / 1000),
                 (unsigned long long)(ns % 1000));
}

static void put_lane_names(state *st, uint32_t tid, const char *what,
                           uint32_t id) {
  sep(st);
  cp_sink_printf(st->s, "{\"ph\":\"M\",\"pid\":0,\"tid\":%u,\"name\":"
                        "\"thread_name\",\"args\":{\"name\":\"%s %u\"}}",
                 tid, what, id);
  sep(st);
  cp_sink_printf(st->s, "{\"ph\":\"M\",\"pid\":0,\"tid\":%u,\"name\":"
                        "\"thread_sort_index\",\"args\":{\"sort_index\":%u}}",
                 tid, tid);
}

static void put_metadata(state *st) {
  sep(st);
  cp_sink_puts(st->s, "{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":"
                      "\"process_name\",\"args\":{\"name\":\"Trace\"}}");
  sep(st);
  cp_sink_puts(st->s, "{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":"
                      "\"process_sort_index\",\"args\":{\"sort_index\":0}}");
  for (size_t i = 0; i < st->n_cpu; i++)
    put_lane_names(st, st->cpu[i], "CPU Thread", st->cpu[i]);
  for (size_t i = 0; i < st->n_graph; i++)
    put_lane_names(st, GRAPH_LANE_BASE + st->graph[i], "Graph: Stream",
                   st->graph[i]);
  for (size_t i = 0; i < st->n_gpu; i++)
    put_lane_names(st, GPU_LANE_BASE + st->gpu[i], "GPU Stream", st->gpu[i]);
}

/* A metric value as Proton 3.9 prints it (C++'s std::to_string for
 * numbers, "[a,b]" for vectors, the text of a string) into buf. */
static void format_value(const cp_value *v, char *buf, size_t size) {
  size_t k = 0;
  switch (v->kind) {
  case CP_VALUE_INT:
    snprintf(buf, size, "%lld", (long long)v->u.i);
    return;
  case CP_VALUE_DOUBLE:
    snprintf(buf, size, "%f", v->u.d);
    return;
  case CP_VALUE_STRING:
    snprintf(buf, size, "%s", cp_strtab_str(v->u.s));
    return;
  default:
    k = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < v->u.v.n && k + 32 < size; i++)
      k += (size_t)(v->kind == CP_VALUE_INT_VEC
                        ? snprintf(buf + k, size - k, "%s%lld", i ? "," : "",
                                   (long long)v->u.v.p.i[i])
                        : snprintf(buf + k, size - k, "%s%g", i ? "," : "",
                                   v->u.v.p.d[i]));
    snprintf(buf + k, size - k, "]");
  }
}

static int by_out_name(const void *a, const void *b) {
  const cp_flex_metric *x = *(const cp_flex_metric *const *)a;
  const cp_flex_metric *y = *(const cp_flex_metric *const *)b;
  return strcmp(cp_strtab_str(x->out_name), cp_strtab_str(y->out_name));
}

/* The node's metrics in byte order of their names (Proton's std::map), as
 * a malloc'ed array in *out (NULL when there are none); their count, or -1
 * with ENOMEM. */
static long sorted_metrics(const state *st, uint32_t node,
                           const cp_flex_metric ***out) {
  const cp_node *n = cp_cct_node(node);
  const cp_node_metrics *m = n && st->d ? cp_data_metrics(st->d, n) : NULL;
  *out = NULL;
  if (!m || !m->n_flex)
    return 0;
  *out = malloc(m->n_flex * sizeof **out);
  if (!*out)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a trace");
  for (size_t i = 0; i < m->n_flex; i++)
    (*out)[i] = &m->flex[i];
  qsort(*out, m->n_flex, sizeof **out, by_out_name);
  return (long)m->n_flex;
}

/* ,"metrics":{"m":"v",...} */
static void put_metrics(cp_sink *s, const cp_flex_metric **ms, size_t n) {
  char buf[512];
  cp_sink_puts(s, ",\"metrics\":{");
  for (size_t i = 0; i < n; i++) {
    cp_sink_json_string(s, cp_strtab_str(ms[i]->out_name));
    cp_sink_puts(s, ":");
    format_value(&ms[i]->value, buf, sizeof buf);
    cp_sink_json_string(s, buf);
    if (i + 1 < n)
      cp_sink_puts(s, ",");
  }
  cp_sink_puts(s, "}");
}

/* "<scope>: <m1, v1>, <m2, v2>". Errors: ENOMEM. */
static int put_metric_name(cp_sink *s, const char *scope,
                           const cp_flex_metric **ms, size_t n) {
  size_t cap = 256 + strlen(scope), k;
  for (size_t i = 0; i < n; i++)
    cap += strlen(cp_strtab_str(ms[i]->out_name)) + 520;
  char *name = malloc(cap), buf[512];
  if (!name)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a trace");
  k = (size_t)snprintf(name, cap, "%s: ", scope);
  for (size_t i = 0; i < n; i++) {
    format_value(&ms[i]->value, buf, sizeof buf);
    k += (size_t)snprintf(name + k, cap - k, "%s<%s, %s>", i ? ", " : "",
                          cp_strtab_str(ms[i]->out_name), buf);
  }
  cp_sink_json_string(s, name);
  free(name);
  return CPROTON_OK;
}

static void put_times(state *st, const cp_event *e) {
  put_us(st->s, "ts", e->start_ns - st->t0);
  cp_sink_puts(st->s, ",");
  put_us(st->s, "dur", e->end_ns > e->start_ns ? e->end_ns - e->start_ns : 0);
}

static int put_scope(void *user, const cp_event *e) {
  state *st = user;
  if (e->kind != CP_EVENT_SCOPE)
    return 0;
  const cp_flex_metric **ms;
  long n = sorted_metrics(st, e->node, &ms);
  if (n < 0)
    return (int)n;
  const char *name = cp_strtab_str(e->name);
  sep(st);
  cp_sink_puts(st->s, "{\"name\":");
  int rc = CPROTON_OK;
  if (n)
    rc = put_metric_name(st->s, name ? name : "", ms, (size_t)n);
  else
    cp_sink_json_string(st->s, name ? name : "");
  if (rc) {
    free(ms);
    return rc;
  }
  cp_sink_printf(st->s, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%u,",
                 n ? "metric" : "scope", e->u.scope.thread);
  put_times(st, e);
  cp_sink_puts(st->s, ",\"args\":{");
  cp_chrome_put_stack(st->s, e->node);
  cp_sink_printf(st->s, ",\"scope_id\":%u", e->node);
  if (n)
    put_metrics(st->s, ms, (size_t)n);
  cp_sink_puts(st->s, "}}");
  free(ms);
  return 0;
}

/* One "X" on a graph lane: a frame of replayed kernels, from the first
 * kernel under it to the end of the last (Proton 3.9's graph scopes). */
static void put_graph_scope(state *st, uint32_t stream, uint32_t name,
                            uint64_t start, uint64_t end) {
  const char *text = cp_strtab_str(name);
  sep(st);
  cp_sink_puts(st->s, "{\"name\":");
  cp_sink_json_string(st->s, text ? text : "");
  cp_sink_printf(st->s, ",\"cat\":\"scope\",\"ph\":\"X\",\"pid\":0,\"tid\":%u,",
                 GRAPH_LANE_BASE + stream);
  put_us(st->s, "ts", start - st->t0);
  cp_sink_puts(st->s, ",");
  put_us(st->s, "dur", end > start ? end - start : 0);
  cp_sink_puts(st->s, "}");
}

static graph_lane *lane_of(state *st, uint32_t stream) {
  for (size_t i = 0; i < st->n_lanes; i++)
    if (st->lanes[i].stream == stream)
      return &st->lanes[i];
  if (st->n_lanes == MAX_GRAPH_STREAMS)
    return NULL;
  graph_lane *l = &st->lanes[st->n_lanes++];
  l->stream = stream;
  return l;
}

/* Closes the lane's open frames above depth `keep`. */
static void close_graph_scopes(state *st, graph_lane *l, uint32_t keep) {
  while (l->depth > keep) {
    l->depth--;
    put_graph_scope(st, l->stream, l->name[l->depth], l->start[l->depth],
                    l->last_end);
  }
}

/* Replayed kernels in arrival order per stream: frames shared with the
 * previous kernel stay open, the others close at the previous kernel's end
 * and open at this one's start. */
static int put_graph_kernel(void *user, const cp_event *e) {
  state *st = user;
  uint32_t path[MAX_GRAPH_DEPTH];
  size_t n = e->kind == CP_EVENT_KERNEL ? graph_path(e, path) : 0;
  graph_lane *l = n ? lane_of(st, e->u.kernel.stream) : NULL;
  if (!l)
    return 0;
  uint32_t common = 0;
  while (common < l->depth && common < n && l->name[common] == path[common])
    common++;
  close_graph_scopes(st, l, common);
  for (; l->depth < n; l->depth++) {
    l->name[l->depth] = path[l->depth];
    l->start[l->depth] = e->start_ns;
  }
  if (e->end_ns > l->last_end)
    l->last_end = e->end_ns;
  return 0;
}

static int put_graph_scopes(state *st, const cp_trace *t) {
  if (!st->n_graph)
    return CPROTON_OK;
  st->lanes = calloc(MAX_GRAPH_STREAMS, sizeof *st->lanes);
  if (!st->lanes)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a trace");
  int rc = cp_trace_each(t, put_graph_kernel, st);
  for (size_t i = 0; i < st->n_lanes; i++)
    close_graph_scopes(st, &st->lanes[i], 0);
  free(st->lanes);
  st->lanes = NULL;
  return rc;
}

static int put_flow(void *user, const cp_event *e) {
  state *st = user;
  if (e->kind != CP_EVENT_KERNEL || !has_flow(e))
    return 0;
  const cp_event_kernel *k = &e->u.kernel;
  if (k->graph_id) { /* a graph launch's kernels share its correlation: one flow */
    if (st->flow_stream == k->stream && st->flow_corr == k->correlation)
      return 0;
    st->flow_stream = k->stream;
    st->flow_corr = k->correlation;
  }
  /* As Proton 3.9: the flow starts where the launching scope does and
   * bears its event's id (one id per scope occurrence); a scope not indexed
   * (still open at the end, or past MAX_INDEXED_SCOPES) gives the launch
   * time and an id of its own above 2^32. */
  const scope_span *sp = launch_scope(st, e);
  unsigned long long id = sp ? (unsigned long long)(sp - st->spans) + 1
                             : (1ull << 32) + k->correlation;
  sep(st);
  cp_sink_printf(st->s, "{\"name\":\"launch->kernel\",\"cat\":\"flow\",\"ph\":"
                        "\"s\",\"pid\":0,\"tid\":%u,", k->launch_thread);
  put_us(st->s, "ts", (sp ? sp->start : k->launch_ns) - st->t0);
  cp_sink_printf(st->s, ",\"id\":%llu,\"bp\":\"e\"}", id);
  sep(st);
  cp_sink_printf(st->s, "{\"name\":\"launch->kernel\",\"cat\":\"flow\",\"ph\":"
                        "\"f\",\"pid\":0,\"tid\":%u,", GPU_LANE_BASE + k->stream);
  put_us(st->s, "ts", e->start_ns - st->t0);
  cp_sink_printf(st->s, ",\"id\":%llu,\"bp\":\"e\"}", id);
  return 0;
}

static int put_kernel(void *user, const cp_event *e) {
  state *st = user;
  if (e->kind != CP_EVENT_KERNEL)
    return 0;
  const cp_flex_metric **ms;
  long n = sorted_metrics(st, e->node, &ms);
  if (n < 0)
    return (int)n;
  const char *name = cp_strtab_str(e->name);
  sep(st);
  cp_sink_puts(st->s, "{\"name\":");
  cp_sink_json_string(st->s, name ? name : "?");
  cp_sink_printf(st->s,
                 ",\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":0,\"tid\":%u,",
                 GPU_LANE_BASE + e->u.kernel.stream);
  put_times(st, e);
  cp_sink_puts(st->s, ",\"args\":{");
  cp_chrome_put_stack(st->s, e->node);
  if (n)
    put_metrics(st->s, ms, (size_t)n);
  cp_sink_puts(st->s, "}}");
  free(ms);
  return 0;
}

/* A hardware-counter sample: a counter track "GPU <d> <counter>" in pid 0
 * (cproton's addition; Proton 3.9 records no counters). */
static int put_counter(void *user, const cp_event *e) {
  state *st = user;
  if (e->kind != CP_EVENT_COUNTER)
    return 0;
  sep(st);
  cp_chrome_put_counter(st->s, e, 0, 1, st->t0);
  return 0;
}

/* The wall-clock time of `t` (a CLOCK_MONOTONIC_RAW time, core/clock.h). */
static uint64_t wall_ns(uint64_t t) {
  struct timespec w;
  clock_gettime(CLOCK_REALTIME, &w);
  uint64_t now = cp_clock_now_ns();
  uint64_t wall = (uint64_t)w.tv_sec * 1000000000ull + (uint64_t)w.tv_nsec;
  return wall - (now > t ? now - t : 0);
}

int cp_chrome_trace39_write(cp_sink *s, const cp_trace *t, cp_data *d) {
  state *st = calloc(1, sizeof *st);
  if (!st)
    return cp_error_set(CPROTON_ENOMEM, "out of memory writing a trace");
  *st = (state){.s = s, .d = d, .t0 = UINT64_MAX, .first = 1};
  int rc = cp_trace_each(t, scan, st);
  if (st->n_spans)
    qsort(st->spans, st->n_spans, sizeof *st->spans, by_lane_node_start);
  if (!rc && st->n_events == 0) {
    cp_sink_puts(s, "{\"displayTimeUnit\":\"us\",\"traceEvents\":[]}\n");
  } else if (!rc) {
    if (d)
      cp_data_lock(d);
    cp_sink_printf(s, "{\"displayTimeUnit\":\"us\",\"baseTimeNanoseconds\":"
                      "%llu,\"traceEvents\":[",
                   (unsigned long long)wall_ns(st->t0));
    if (st->n_kernels)
      put_metadata(st);
    rc = cp_trace_each(t, put_scope, st);
    rc = rc ? rc : put_graph_scopes(st, t);
    rc = rc ? rc : cp_trace_each(t, put_flow, st);
    rc = rc ? rc : cp_trace_each(t, put_kernel, st);
    rc = rc ? rc : cp_trace_each(t, put_counter, st);
    cp_sink_puts(s, "\n]}\n");
    if (d)
      cp_data_unlock(d);
  }
  free(st->spans);
  free(st);
  return rc;
}
