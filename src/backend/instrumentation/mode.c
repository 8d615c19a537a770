/* backend/instrumentation/mode.c -- Proton's instrumentation mode strings
 * ("default:key=value:...") parsed into pass options. Keys and values are
 * tables; enum spellings Python prints ("BUFFER_TYPE.GLOBAL") are accepted
 * as well as Proton's lower-case names. Not a hot path. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "cproton/instrumentation.h"

typedef struct word {
  const char *name;
  int value;
} word;

static const word counters[] = {{"cycle", CPROTON_COUNTER_CLOCK64},
                                {"clock64", CPROTON_COUNTER_CLOCK64},
                                {"clock", CPROTON_COUNTER_CLOCK},
                                {"globaltimer", CPROTON_COUNTER_GLOBALTIMER},
                                {NULL, 0}};
static const word buffers[] = {{"shared", CPROTON_BUFFER_SHARED},
                               {"global", CPROTON_BUFFER_GLOBAL},
                               {NULL, 0}};
static const word granularities[] = {
    {"warp", CPROTON_GRANULARITY_WARP},
    {"warp_group", CPROTON_GRANULARITY_WARPGROUP},
    {"warpgroup", CPROTON_GRANULARITY_WARPGROUP},
    {"cta", CPROTON_GRANULARITY_CTA},
    {"warp_2", CPROTON_GRANULARITY_WARP_2},
    {"warp_4", CPROTON_GRANULARITY_WARP_4},
    {"warp_8", CPROTON_GRANULARITY_WARP_8},
    {"warp_group_2", CPROTON_GRANULARITY_WARPGROUP_2},
    {"warp_group_4", CPROTON_GRANULARITY_WARPGROUP_4},
    {"warp_group_8", CPROTON_GRANULARITY_WARPGROUP_8},
    {NULL, 0}};
static const word strategies[] = {{"circular", CPROTON_STRATEGY_CIRCULAR},
                                  {"flush", CPROTON_STRATEGY_FLUSH},
                                  {NULL, 0}};
/* Where tree-mode totals are made (docs/instrumentation-runtime.md). */
static const word reductions[] = {{"kernel", CPROTON_REDUCE_KERNEL},
                                  {"device", CPROTON_REDUCE_DEVICE},
                                  {"host", CPROTON_REDUCE_HOST},
                                  {NULL, 0}};
static const word samplings[] = {{"none", 0}, {"selective", 1}, {NULL, 0}};
/* Proton's optimizations. sched_stores and sched_barriers reorder Proton's
 * own lowering (its buffer stores, AMD scheduling barriers); cproton's
 * record is already a predicated store right after the counter read, so
 * they are accepted and change nothing. */
enum { OPT_CLOCK32 = 1, OPT_TIME_SHIFT = 2 };
static const word optimizations[] = {{"clock32", OPT_CLOCK32},
                                     {"time_shift", OPT_TIME_SHIFT},
                                     {"sched_stores", 0},
                                     {"sched_barriers", 0},
                                     {NULL, 0}};

/* "BUFFER_TYPE.GLOBAL" -> "GLOBAL"; then compared without case. */
static int lookup(const word *table, const char *value, int *out) {
  const char *dot = strrchr(value, '.');
  const char *v = dot ? dot + 1 : value;
  for (; table->name; table++)
    if (strcasecmp(table->name, v) == 0) {
      *out = table->value;
      return 1;
    }
  return 0;
}

static int bad(const char *key, const char *value, const char *valid) {
  return cp_error_set(CPROTON_EINVAL,
                      "instrumentation mode: unknown %s '%s' (valid: %s)", key,
                      value, valid);
}

/* "0,4,5" -> bit mask of units. */
static int parse_units(const char *value, uint32_t *mask) {
  *mask = 0;
  for (const char *p = value; *p;) {
    char *end;
    long u = strtol(p, &end, 10);
    if (end == p || u < 0 || u > 31)
      return bad("sampling_options", value, "comma-separated units 0..31");
    *mask |= 1u << u;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return bad("sampling_options", value, "comma-separated units 0..31");
  }
  return CPROTON_OK;
}

typedef struct parsed {
  int sampling;
  uint32_t units;
  int opts; /* OPT_* */
  int reduce; /* cproton_reduce_kind; AUTO when not given */
} parsed;

/* "clock32,time_shift" -> OPT_* bits. */
static int parse_optimizations(const char *value, int *opts) {
  char buf[256];
  if (strlen(value) >= sizeof buf)
    return bad("optimizations", value, "clock32, time_shift, sched_stores, sched_barriers");
  snprintf(buf, sizeof buf, "%s", value);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int v;
    if (!lookup(optimizations, t, &v))
      return bad("optimizations", t, "clock32, time_shift, sched_stores, sched_barriers");
    *opts |= v;
  }
  return CPROTON_OK;
}

static int apply(cproton_ptx_options *o, parsed *ps, const char *key,
                 const char *value) {
  int v;
  if (!strcmp(key, "metric_type"))
    return lookup(counters, value, &v) ? (o->counter = v, 0)
                                       : bad(key, value, "cycle");
  if (!strcmp(key, "buffer_type"))
    return lookup(buffers, value, &v) ? (o->buffer = v, 0)
                                      : bad(key, value, "shared, global");
  if (!strcmp(key, "granularity"))
    return lookup(granularities, value, &v)
               ? (o->granularity = v, 0)
               : bad(key, value, "warp, warp_2, warp_4, warp_8, warp_group, warp_group_2, warp_group_4, warp_group_8, cta");
  if (!strcmp(key, "buffer_strategy"))
    return lookup(strategies, value, &v) ? (o->strategy = v, 0)
                                         : bad(key, value, "circular, flush");
  if (!strcmp(key, "sampling_strategy"))
    return lookup(samplings, value, &ps->sampling)
               ? 0 : bad(key, value, "none, selective");
  if (!strcmp(key, "sampling_options"))
    return parse_units(value, &ps->units);
  if (!strcmp(key, "buffer_size")) {
    char *end;
    long n = strtol(value, &end, 10);
    if (*end || n < 0 || n > (1l << 30))
      return bad(key, value, "a byte count");
    o->buffer_size = (uint32_t)n;
    return 0;
  }
  if (!strcmp(key, "optimizations"))
    return parse_optimizations(value, &ps->opts);
  if (!strcmp(key, "reduce"))
    return lookup(reductions, value, &ps->reduce) ? 0 : bad(key, value, "kernel, device, host");
  return cp_error_set(CPROTON_EINVAL, "instrumentation mode: unknown key '%s'",
                      key);
}

static int parse_field(cproton_ptx_options *o, parsed *ps, char *field) {
  char *eq = strchr(field, '=');
  if (!eq)
    return cp_error_set(CPROTON_EINVAL,
                        "instrumentation mode: malformed option '%s' "
                        "(expected key=value)", field);
  *eq = '\0';
  return apply(o, ps, field, eq + 1);
}

static int parse_mode(const char *mode, cproton_ptx_options *out, parsed *ps_out) {
  cproton_ptx_options_init(out);
  memset(ps_out, 0, sizeof *ps_out);
  if (!mode || !*mode)
    return CPROTON_OK;
  char buf[1024];
  if (strlen(mode) >= sizeof buf)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode too long");
  snprintf(buf, sizeof buf, "%s", mode);
  /* The mode name is the text before the first ':' and may not be empty
   * (":key=value" and "::::" name no mode); strtok_r would skip it. */
  char *save = NULL, *name = buf[0] == ':' ? NULL : strtok_r(buf, ":", &save);
  if (!name)
    return cp_error_set(CPROTON_EINVAL,
                        "instrumentation mode '%s' names no mode (valid: "
                        "default, mma)", mode);
  if (strcmp(name, "default") != 0 && strcmp(name, "mma") != 0)
    return cp_error_set(CPROTON_EINVAL,
                        "instrumentation mode: unknown mode '%s' (valid: "
                        "default, mma)", name);
  parsed ps = {0};
  for (char *f; (f = strtok_r(NULL, ":", &save));) {
    int rc = parse_field(out, &ps, f);
    if (rc)
      return rc;
  }
  if (ps.opts & OPT_CLOCK32)
    out->counter = CPROTON_COUNTER_CLOCK;
  if (ps.sampling)
    out->sample_mask = ps.units;
  out->aggregate = ps.reduce == CPROTON_REDUCE_KERNEL;
  *ps_out = ps;
  return CPROTON_OK;
}

int cproton_instr_mode_options(const char *mode, cproton_ptx_options *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: out is NULL");
  parsed ps;
  return parse_mode(mode, out, &ps);
}

int cproton_instr_mode_decode_flags(const char *mode, unsigned *flags) {
  if (!flags)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: flags is NULL");
  cproton_ptx_options o;
  parsed ps;
  int rc = parse_mode(mode, &o, &ps);
  *flags = !rc && (ps.opts & OPT_TIME_SHIFT) ? CPROTON_DECODE_TIME_SHIFT : 0;
  return rc;
}

int cproton_instr_mode_reduce(const char *mode, int *on_device) {
  if (!on_device)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: on_device is NULL");
  cproton_ptx_options o;
  parsed ps;
  int rc = parse_mode(mode, &o, &ps);
  *on_device = rc || ps.reduce != CPROTON_REDUCE_HOST;
  return rc;
}

int cproton_instr_mode_reduce_kind(const char *mode, cproton_reduce_kind *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: out is NULL");
  cproton_ptx_options o;
  parsed ps;
  int rc = parse_mode(mode, &o, &ps);
  *out = rc ? CPROTON_REDUCE_AUTO : (cproton_reduce_kind)ps.reduce;
  return rc;
}
