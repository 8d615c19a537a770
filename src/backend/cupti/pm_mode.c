/* backend/cupti/pm_mode.c -- parser of the pmsampling mode string.
 * Invariant: on success every counter has a stored and a Perfworks name,
 * no name twice; on failure the message names the option and its offset.
 * Pure; not a hot path (session start). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "backend/cupti/mode_options.h"
#include "backend/cupti/pm_metrics.h"
#include "backend/cupti/pm_mode.h"
#include "core/check.h"
#include "core/error.h"

static int bad(const char *mode, size_t at, const char *why) {
  return cp_error_set(CPROTON_EINVAL, "cupti mode '%s': %s at offset %zu",
                      mode, why, at);
}

int cp_pm_mode_is(const char *mode) {
  return mode && strcspn(mode, ":") == 10 &&
         !strncasecmp(mode, "pmsampling", 10);
}

static int add(cp_pm_options *o, const char *mode, size_t at,
               const char *name) {
  cp_pm_metric m;
  if (o->n == CP_PM_MAX_METRICS)
    return bad(mode, at, "more than 16 metrics");
  if (strlen(name) >= CP_PM_NAME_MAX)
    return bad(mode, at, "metric name longer than 127 characters");
  if (cp_pm_metrics_resolve(name, &m)) {
    char why[512];
    snprintf(why, sizeof why, "%s", cp_error_message());
    return cp_error_set(CPROTON_EINVAL, "cupti mode '%s': %s", mode, why);
  }
  for (size_t i = 0; i < o->n; i++)
    if (!strcmp(o->name[i], m.name))
      return bad(mode, at, "metric named twice");
  snprintf(o->name[o->n], CP_PM_NAME_MAX, "%s", m.name);
  snprintf(o->cupti[o->n], CP_PM_NAME_MAX, "%s", m.cupti); /* see below */
  o->n++;
  return CPROTON_OK;
}

/* metrics=a,b,c: `p`/`n` is the value. */
static int metrics(cp_pm_options *o, const char *mode, const char *p,
                   size_t n) {
  char name[CP_PM_NAME_MAX + 1];
  if (n == 0)
    return bad(mode, (size_t)(p - mode), "metrics needs at least one name");
  for (size_t i = 0; i < n;) {
    size_t k = 0, at = (size_t)(p - mode) + i;
    while (i < n && p[i] != ',') {
      if (k < CP_PM_NAME_MAX)
        name[k++] = p[i];
      i++;
    }
    name[k] = '\0';
    if (k == 0)
      return bad(mode, at, "empty metric name");
    int rc = add(o, mode, at, name);
    if (rc)
      return rc;
    i += i < n; /* the comma */
  }
  return CPROTON_OK;
}

static int set_metrics(void *opts, const cp_mode_value *v) {
  cp_pm_options *o = opts;
  o->user_metrics = 1;
  return metrics(o, v->mode, v->text, v->len);
}

/* The family's options (the shared loop in mode_options.c reads them). */
static const cp_mode_opt options[] = {
    {"exact", CP_MODE_FLAG, 0, 0, NULL, CP_MODE_FIELD(cp_pm_options, exact), NULL},
    {"metrics", CP_MODE_TEXT, 0, 0, NULL, 0, 0, set_metrics},
    {"interval", CP_MODE_NUMBER, CP_PM_INTERVAL_MIN, CP_PM_INTERVAL_MAX,
     "interval must be an integer in 1000..1000000000 (ns)",
     CP_MODE_FIELD(cp_pm_options, interval_ns), NULL},
    {"ranges", CP_MODE_NUMBER, 1, CP_PM_RANGES_MAX,
     "ranges must be an integer in 1..1048576",
     CP_MODE_FIELD(cp_pm_options, ranges), NULL},
};

int cp_pm_mode_parse(const char *mode, cp_pm_options *o) {
  memset(o, 0, sizeof *o);
  o->interval_ns = CP_PM_INTERVAL_DEFAULT;
  o->ranges = CP_PM_RANGES_DEFAULT;
  if (!cp_pm_mode_is(mode))
    return bad(mode ? mode : "", 0, "unknown mode");
  o->enabled = 1;
  int rc = cp_mode_options_parse(mode, 10, ":", options,
                                 sizeof options / sizeof *options, o, bad);
  if (rc)
    return rc;
  size_t nd;
  const cp_pm_metric *d = cp_pm_metrics_defaults(&nd);
  for (size_t i = 0, fill = !o->n; fill && i < nd; i++)
    if (d[i].sampled || o->exact)
      snprintf(o->name[o->n++], CP_PM_NAME_MAX, "%s", d[i].name);
  /* the Perfworks name each counter is read by, once `exact` is known
   * (it may follow metrics=): the sampler's or Nsight Compute's own */
  for (size_t i = 0; i < o->n; i++) {
    cp_pm_metric m;
    int unknown = cp_pm_metrics_resolve(o->name[i], &m);
    CP_ASSERT(!unknown); /* resolved once already (or a default row) */
    (void)unknown;
    snprintf(o->cupti[i], CP_PM_NAME_MAX, "%s", o->exact ? m.exact : m.cupti);
    /* every counter has a stored and a Perfworks name */
    CP_ASSERT(o->name[i][0] && o->cupti[i][0]);
  }
  return CPROTON_OK;
}

int cp_pm_options_same(const cp_pm_options *a, const cp_pm_options *b) {
  if (a->enabled != b->enabled || a->exact != b->exact ||
      a->interval_ns != b->interval_ns || a->ranges != b->ranges ||
      a->n != b->n)
    return 0;
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->cupti[i], b->cupti[i]))
      return 0;
  return 1;
}
