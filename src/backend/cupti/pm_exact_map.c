/* backend/cupti/pm_exact_map.c -- `pmsampling:exact`'s ranges to kernels
 * (pm_exact_map.h): launch queues, the "<name>*ns" names, and delivery
 * of one decoded image. Invariant: a range reaches at most one launch and
 * a launch at most one range; whatever finds no partner is counted.
 * Not a hot path except cp_pm_exact_map_push (per launch in exact mode:
 * an intern lookup and a copy, under the caller's lock). Called by
 * pm_exact.c and unit tests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pm_exact_map.h"
#include "core/check.h"
#include "core/error.h"
#include "core/strtab.h"
#include "cproton/cproton.h"


int cp_pm_exact_map_queue_init(cp_pm_exact_queue *q, size_t cap) {
  memset(q, 0, sizeof *q);
  if (!cap || cap > (1u << 20))
    return cp_error_set(CPROTON_EINVAL,
                        "pmsampling:exact: ranges=%zu out of range 1..%u", cap,
                        1u << 20);
  q->v = calloc(cap, sizeof *q->v);
  if (!q->v)
    return cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory for "
                                        "%zu launches",
                        cap);
  q->cap = cap;
  return CPROTON_OK;
}

void cp_pm_exact_map_queue_free(cp_pm_exact_queue *q) {
  free(q->v);
  memset(q, 0, sizeof *q);
}

int cp_pm_exact_map_push(cp_pm_exact_queue *q, const cp_launch_site *site,
                         const char *kernel) {
  if (q->n == q->cap)
    return 1;
  uint32_t id = 0;
  if (kernel && cp_strtab_intern(kernel, strlen(kernel), &id))
    id = 0;
  q->v[q->n++] = (cp_pm_exact_launch){.site = *site, .kernel = id};
  return 0;
}

int cp_pm_exact_map_names(const cp_pm_metric *metrics, size_t n,
                          cp_pm_exact_names *out) {
  out->n = 0;
  out->stored = calloc(n ? n : 1, sizeof *out->stored);
  if (!out->stored)
    return cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory");
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(metrics[i].name) + sizeof "*ns";
    if (!(out->stored[i] = malloc(len))) {
      cp_pm_exact_map_names_free(out);
      return cp_error_set(CPROTON_ENOMEM, "pmsampling:exact: no memory");
    }
    snprintf(out->stored[i], len, "%s*ns", metrics[i].name);
    out->n = i + 1;
  }
  return CPROTON_OK;
}

void cp_pm_exact_map_names_free(cp_pm_exact_names *names) {
  for (size_t i = 0; i < names->n; i++)
    free(names->stored[i]);
  free(names->stored);
  memset(names, 0, sizeof *names);
}

/* Whether CUPTI's range name contradicts the launch's kernel: a name of
 * digits only is an index (auto ranges' names), which says nothing. */
static int contradicts(const char *range, uint32_t kernel) {
  if (!range || !*range || !kernel || strspn(range, "0123456789") ==
                                          strlen(range))
    return 0;
  const char *k = cp_strtab_str(kernel);
  return k && strcmp(range, k) != 0 && !strstr(k, range);
}

static int put(const cp_launch_site *site, const char *kernel,
               const char *metric, cp_value v) {
  return cp_session_deliver_metric(site, kernel, metric, v);
}

/* Delivers one range's values to `l`'s kernel node. 0 or an error. */
static int deliver_one(const cp_pm_exact_launch *l, const double *values,
                       const cp_pm_exact_names *names) {
  const char *k = cp_strtab_str(l->kernel);
  double ns = values[names->n];
  int rc = put(&l->site, k, "pm_sampled_ns",
               (cp_value){.kind = CP_VALUE_INT, .u.i = llround(ns)});
  if (!rc)
    rc = put(&l->site, k, "pm_samples",
             (cp_value){.kind = CP_VALUE_INT, .u.i = 1});
  for (size_t m = 0; m < names->n && !rc; m++)
    rc = put(&l->site, k, names->stored[m],
             (cp_value){.kind = CP_VALUE_DOUBLE, .u.d = values[m] * ns});
  return rc;
}

/* Range i of `r` for launch `l` (NULL: none); counts its fate. */
static int one_range(const cp_pm_exact_ranges *r, size_t i,
                     const cp_pm_exact_launch *l,
                     const cp_pm_exact_names *names, cp_pm_exact_counts *c) {
  double values[CP_PM_EXACT_MAX_METRICS + 1];
  if (!l) {
    c->unmatched++;
    return 0;
  }
  if (contradicts(r->name ? r->name(r->u, i) : NULL, l->kernel))
    c->name_mismatch++;
  if (names->n > CP_PM_EXACT_MAX_METRICS || r->evaluate(r->u, i, values) != 0 ||
      !isfinite(values[names->n]) || values[names->n] <= 0 || !l->kernel) {
    c->eval_errors++;
    return 0;
  }
  if (deliver_one(l, values, names)) {
    c->deliver_errors++;
    return 0;
  }
  c->delivered++;
  return 1;
}

size_t cp_pm_exact_map_deliver(cp_pm_exact_queue *q,
                               const cp_pm_exact_ranges *r,
                               const cp_pm_exact_names *names, int graph,
                               cp_pm_exact_counts *c) {
  size_t done = 0, launches = q->n;
  c->ranges += r->n;
  if (graph) {
    c->graph_ranges += r->n;
  } else {
    for (size_t i = 0; i < r->n; i++)
      done += one_range(r, i, i < q->n ? &q->v[i] : NULL, names, c);
    if (q->n > r->n)
      c->unmeasured += q->n - r->n;
  }
  if (graph)
    c->unmeasured += q->n;
  /* a range reaches at most one launch and a launch at most one range */
  CP_ASSERT(done <= r->n && done <= launches);
  (void)launches;
  q->n = 0;
  return done;
}
