/* backend/cupti/pm_attr.c -- kernel records and PM samples joined per
 * device, settled into metrics (contract in pm_attr.h). Invariant: a
 * device's samples are kept in time order, and a kernel is settled once
 * (removed from the queue when its values are delivered). Not a hot path:
 * one call per kernel record and per decoded sample, off the launch path. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pm_attr.h"
#include "backend/cupti/pm_mode.h"
#include "core/check.h"
#include "core/grow.h"
#include "core/hwm_attr.h"

#define MAX_KEPT 65536 /* samples kept per device, at most */

typedef struct pending {
  char *name;
  cp_launch_site site;
  uint64_t start, end;
  uint32_t device;
} pending;

typedef struct store {
  int on;
  uint64_t *t;   /* 2 per sample: t0, t1 */
  double *v;     /* nm per sample */
  size_t head, n, cap; /* live samples are [head, n) */
  uint64_t newest, pruned_to; /* newest t1; samples ending before
                                 pruned_to are gone */
} store;

static struct {
  pthread_mutex_t lock;
  size_t nm;
  char metric[CP_PM_MAX_METRICS][CP_PM_NAME_MAX + 4]; /* "<name>*ns" */
  uint64_t interval;
  cp_pm_deliver_fn deliver;
  pending *k;
  size_t nk, capk;
  store dev[CP_PM_ATTR_DEVICES];
  cp_pm_attr_stats stats;
} A = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Between begin and end: the record path takes the lock only then. */
static atomic_int active;

int cp_pm_attr_begin(size_t n, const char *const *names, uint64_t interval_ns,
                     cp_pm_deliver_fn deliver) {
  CP_ASSERT(n <= CP_PM_MAX_METRICS);
  pthread_mutex_lock(&A.lock);
  A.nm = n;
  for (size_t i = 0; i < n; i++)
    snprintf(A.metric[i], sizeof A.metric[i], "%s*ns", names[i]);
  A.interval = interval_ns;
  A.deliver = deliver ? deliver : cp_session_deliver_metric;
  memset(&A.stats, 0, sizeof A.stats);
  pthread_mutex_unlock(&A.lock);
  atomic_store(&active, 1);
  return CPROTON_OK;
}

void cp_pm_attr_device_on(uint32_t device) {
  if (device >= CP_PM_ATTR_DEVICES)
    return;
  pthread_mutex_lock(&A.lock);
  A.dev[device].on = 1;
  pthread_mutex_unlock(&A.lock);
}

void cp_pm_attr_kernel(const char *name, const cp_launch_site *site,
                       uint64_t start, uint64_t end, uint32_t device) {
  if (!atomic_load_explicit(&active, memory_order_relaxed))
    return;
  pthread_mutex_lock(&A.lock);
  void *grown;
  if (device < CP_PM_ATTR_DEVICES && A.dev[device].on) {
    char *copy = strdup(name ? name : "");
    if (!copy || cp_grow(A.k, &A.capk, A.nk + 1, sizeof *A.k, 256, &grown)) {
      free(copy);
      A.stats.errors++;
    } else {
      A.k = grown;
      A.k[A.nk++] = (pending){copy, *site, start, end > start ? end : start,
                              device};
    }
  }
  pthread_mutex_unlock(&A.lock);
}

/* Drops samples no kernel can need: older than the retention time or past
 * the per-device cap. */
static void prune(store *s) {
  while (s->head < s->n &&
         (s->n - s->head > MAX_KEPT ||
          s->t[2 * s->head + 1] + CP_PM_ATTR_RETAIN_NS < s->newest))
    s->pruned_to = s->t[2 * s->head++ + 1];
  CP_ASSERT(s->n - s->head <= MAX_KEPT);
  if (s->head > 4096 && s->head * 2 > s->n) {
    size_t live = s->n - s->head;
    memmove(s->t, s->t + 2 * s->head, live * 2 * sizeof *s->t);
    memmove(s->v, s->v + A.nm * s->head, live * A.nm * sizeof *s->v);
    s->head = 0;
    s->n = live;
  }
}

static int push(store *s, uint64_t t0, uint64_t t1, const double *values) {
  size_t cap = s->cap;
  void *t, *v;
  if (cp_grow(s->t, &cap, s->n + 1, 2 * sizeof *s->t, 1024, &t))
    return CPROTON_ENOMEM;
  s->t = t;
  cap = s->cap;
  if (cp_grow(s->v, &cap, s->n + 1, A.nm * sizeof *s->v, 1024, &v))
    return CPROTON_ENOMEM;
  s->v = v;
  s->cap = cap;
  /* kept in time order (cp_pm_attr_sample refuses a t1 before the newest) */
  CP_ASSERT(s->n == s->head || s->t[2 * s->n - 1] <= t1);
  s->t[2 * s->n] = t0;
  s->t[2 * s->n + 1] = t1;
  memcpy(s->v + A.nm * s->n, values, A.nm * sizeof *values);
  s->n++;
  return CPROTON_OK;
}

void cp_pm_attr_sample(uint32_t device, uint64_t t0, uint64_t t1,
                       const double *values) {
  if (device >= CP_PM_ATTR_DEVICES)
    return;
  pthread_mutex_lock(&A.lock);
  store *s = &A.dev[device];
  int nan = 0;
  for (size_t m = 0; m < A.nm; m++)
    nan |= isnan(values[m]);
  /* the first sample after a start spans the time since the counters
   * were last read: its value is not this interval's */
  if (t1 < t0 || t1 - t0 > 2 * A.interval || nan || t1 < s->newest)
    A.stats.irregular++;
  else if (push(s, t0, t1, values))
    A.stats.errors++;
  else
    A.stats.samples++;
  if (t1 > s->newest)
    s->newest = t1;
  prune(s);
  pthread_mutex_unlock(&A.lock);
}

/* First live sample with t1 > at (samples are in time order). */
static size_t first_after(const store *s, uint64_t at) {
  size_t lo = s->head, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->t[2 * mid + 1] > at)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static void put(const pending *p, const char *metric, cp_value v) {
  if (A.deliver(&p->site, p->name, metric, v))
    A.stats.errors++;
}

static cp_value ival(uint64_t x) {
  return (cp_value){.kind = CP_VALUE_INT, .u.i = (int64_t)x};
}

static void deliver_one(const pending *p, const cp_hwm_kernel *k,
                        const double *weighted) {
  put(p, "pm_sampled_ns", ival(k->covered_ns));
  put(p, "pm_unsampled_ns", ival(k->unsampled_ns));
  put(p, "pm_samples", ival(k->samples));
  put(p, "pm_shared_samples", ival(k->shared));
  for (size_t m = 0; k->covered_ns && m < A.nm; m++)
    put(p, A.metric[m],
        (cp_value){.kind = CP_VALUE_DOUBLE, .u.d = weighted[m]});
  A.stats.kernels += k->covered_ns > 0;
  A.stats.unsampled += k->covered_ns == 0;
}

/* Attributes the samples of `s` to the `nb` kernels of `b` (one device). */
static int attribute(const store *s, const pending *b, size_t nb) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < nb; i++) {
    lo = b[i].start < lo ? b[i].start : lo;
    hi = b[i].end > hi ? b[i].end : hi;
  }
  size_t from = first_after(s, lo), to = from;
  while (to < s->n && s->t[2 * to] < hi)
    to++;
  size_t ns = to - from;
  cp_hwm_kernel *k = calloc(nb, sizeof *k);
  double *w = calloc(nb * (A.nm ? A.nm : 1), sizeof *w);
  int rc = k && w ? CPROTON_OK : CPROTON_ENOMEM;
  /* every counter at once: the overlaps (covered, samples, shared) are the
   * same for all of them; without counters the kernels stay zeroed */
  if (!rc && A.nm) {
    for (size_t i = 0; i < nb; i++)
      k[i] = (cp_hwm_kernel){.start = b[i].start, .end = b[i].end};
    rc = cp_hwm_attr_apply_metrics(ns ? s->t + 2 * from : NULL,
                                   ns ? s->v + A.nm * from : NULL, ns, A.nm,
                                   k, nb, w);
  }
  for (size_t i = 0; !rc && i < nb; i++) {
    if (!k[i].covered_ns && b[i].end < s->pruned_to)
      A.stats.late++;
    deliver_one(&b[i], &k[i], w + i * A.nm);
  }
  free(k);
  free(w);
  return rc;
}

/* Settles the ready kernels of device `d`; they leave the queue. */
static int settle_device(uint32_t d, int all) {
  store *s = &A.dev[d];
  size_t nb = 0, keep = 0;
  pending *b = malloc((A.nk ? A.nk : 1) * sizeof *b);
  if (!b)
    return CPROTON_ENOMEM;
  for (size_t i = 0; i < A.nk; i++) {
    int ready = A.k[i].device == d && (all || A.k[i].end <= s->newest);
    if (ready)
      b[nb++] = A.k[i];
    else
      A.k[keep++] = A.k[i];
  }
  A.nk = keep;
  int rc = nb ? attribute(s, b, nb) : CPROTON_OK;
  for (size_t i = 0; i < nb; i++)
    free(b[i].name);
  free(b);
  return rc;
}

int cp_pm_attr_settle(int all) {
  int rc = CPROTON_OK;
  pthread_mutex_lock(&A.lock);
  for (uint32_t d = 0; d < CP_PM_ATTR_DEVICES; d++)
    if (A.dev[d].on) {
      int r = settle_device(d, all);
      rc = rc ? rc : r;
    }
  if (rc)
    A.stats.errors++;
  pthread_mutex_unlock(&A.lock);
  return rc;
}

void cp_pm_attr_stats_get(cp_pm_attr_stats *out) {
  pthread_mutex_lock(&A.lock);
  *out = A.stats;
  pthread_mutex_unlock(&A.lock);
}

void cp_pm_attr_end(void) {
  atomic_store(&active, 0);
  pthread_mutex_lock(&A.lock);
  for (size_t i = 0; i < A.nk; i++)
    free(A.k[i].name);
  free(A.k);
  A.k = NULL;
  A.nk = A.capk = 0;
  for (size_t d = 0; d < CP_PM_ATTR_DEVICES; d++) {
    free(A.dev[d].t);
    free(A.dev[d].v);
    A.dev[d] = (store){0};
  }
  pthread_mutex_unlock(&A.lock);
}
