/* trace_sample.c -- the synthetic timeline of trace_sample.h. Events are
 * appended in the order the library produces them: a scope when it exits
 * (children first), a region when its end record pairs (inner first). */
#include <string.h>

#include "core/cct.h"
#include "core/strtab.h"
#include "trace_sample.h"

static uint32_t sid(const char *s) {
  uint32_t id = 0;
  cp_strtab_intern(s, strlen(s), &id);
  return id;
}

static size_t add(cp_trace *t, cp_event e) {
  return cp_trace_append(t, &e) == 0;
}

static size_t scopes(cp_trace *t, uint64_t base) {
  cp_node *step = cp_cct_child_str(cp_cct_root(), "step");
  cp_node *fwd = cp_cct_child_str(step, "fwd");
  size_t n = 0;
  n += add(t, (cp_event){.kind = CP_EVENT_SCOPE, .start_ns = base + 1000,
                         .end_ns = base + 5000, .name = fwd->name,
                         .node = fwd->id, .u.scope.thread = 1});
  n += add(t, (cp_event){.kind = CP_EVENT_SCOPE, .start_ns = base + 1000,
                         .end_ns = base + 9000, .name = step->name,
                         .node = step->id, .u.scope.thread = 1});
  n += add(t, (cp_event){.kind = CP_EVENT_SCOPE, .start_ns = base + 1200,
                         .end_ns = base + 1300, .name = step->name,
                         .node = step->id, .u.scope.thread = 2});
  /* 3 s earlier: event times are then 3e9 ns past the trace's start, as in
   * a real run, which sizes the timestamps honestly */
  n += add(t, (cp_event){.kind = CP_EVENT_SCOPE, .start_ns = base - 3000000000ull,
                         .end_ns = base - 2999999000ull, .name = fwd->name,
                         .node = fwd->id, .u.scope.thread = 2});
  return n;
}

static size_t kernel(cp_trace *t, const char *name, uint64_t start,
                     uint64_t end, uint32_t dev, uint32_t stream,
                     uint32_t corr, uint64_t launch, uint32_t graph) {
  cp_node *fwd = cp_cct_child_str(cp_cct_child_str(cp_cct_root(), "step"),
                                  "fwd");
  cp_node *k = cp_cct_child_str(fwd, name);
  return add(t, (cp_event){.kind = CP_EVENT_KERNEL, .start_ns = start,
                           .end_ns = end, .name = k->name, .node = k->id,
                           .u.kernel = {.launch_ns = launch, .stream = stream,
                                        .device = dev, .launch_thread = 1,
                                        .correlation = corr,
                                        .graph_id = graph}});
}

static size_t regions(cp_trace *t, uint64_t base, const cpt_sample_shape *s) {
  uint32_t kname = sid("mm_kernel"), outer = sid("outer"),
           inner = sid("inner");
  size_t n = 0;
  for (uint32_t c = 0; c < s->ctas; c++)
    for (uint32_t w = 0; w < s->warps; w++)
      for (uint32_t r = 0; r < s->reps; r++) {
        uint64_t t0 = base + 2000 + r * 150 + w * 3;
        cp_event e = {.kind = CP_EVENT_REGION,
                      .u.region = {.warp = w, .sm = 10 + c, .cta = c,
                                   .kernel_name = kname}};
        e.start_ns = t0 + 10, e.end_ns = t0 + 30, e.name = inner;
        e.u.region.line = 1;
        n += add(t, e);
        e.start_ns = t0, e.end_ns = t0 + 100, e.name = outer;
        e.u.region.line = 0;
        n += add(t, e);
      }
  return n;
}

/* Hardware-counter samples: three of sm_throughput% on GPU 0 across the
 * kernels there, one of dram_throughput% on GPU 1. */
static size_t counters(cp_trace *t, uint64_t base) {
  static const struct {
    uint32_t device;
    const char *name;
    uint64_t t0, t1;
    double value;
  } rows[] = {{0, "sm_throughput%", 1800, 2300, 40.0},
              {0, "sm_throughput%", 2300, 2800, 75.5},
              {0, "sm_throughput%", 2800, 3300, 10.25},
              {1, "dram_throughput%", 2400, 2700, 12.5}};
  size_t n = 0;
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
    n += add(t, (cp_event){.kind = CP_EVENT_COUNTER,
                           .start_ns = base + rows[i].t0,
                           .end_ns = base + rows[i].t1,
                           .name = sid(rows[i].name),
                           .u.counter = {.value = rows[i].value,
                                         .device = rows[i].device}});
  return n;
}

size_t cpt_trace_sample(cp_trace *t, const cpt_sample_shape *shape) {
  const uint64_t base = 5000000000ull; /* 5 s of uptime */
  size_t n = scopes(t, base);
  n += kernel(t, "mm_kernel", base + 2000, base + 3000, 0, 7, 11,
              base + 1500, 0);
  n += kernel(t, "add_kernel", base + 2500, base + 2600, 1, 3, 12,
              base + 1600, 0);
  n += kernel(t, "g1", base + 6000, base + 6100, 0, 7, 20, base + 5500, 5);
  n += kernel(t, "g2", base + 6100, base + 6300, 0, 7, 20, base + 5500, 5);
  n += kernel(t, "g3", base + 6300, base + 6400, 0, 7, 20, base + 5500, 5);
  n += regions(t, base, shape);
  n += counters(t, base);
  return n;
}
