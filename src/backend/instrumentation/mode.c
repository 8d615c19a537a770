/* backend/instrumentation/mode.c -- Proton's instrumentation mode strings
 * ("default:key=value:...") parsed into pass options. Keys and values are
 * tables; enum spellings Python prints ("BUFFER_TYPE.GLOBAL", with that
 * type's name) are accepted as well as Proton's lower-case names.
 * This parser is the only authority on mode strings: the session layer
 * parses a session's mode once (cp_instr_mode_parse_config, the backend's
 * parse_mode), and the Python hook reads that parse
 * (cproton_session_instr_mode); cproton_instr_mode_parse is the same
 * function for a mode without a session; Python's mode classes and
 * cproton.mode.parse_instrumentation_mode read the canonical form it
 * writes, so the two cannot disagree.
 * Refused: an empty field ("default::x=1", "default:"), an empty key, and
 * an empty value except for sampling_options and optimizations, where
 * Proton's own str(mode) writes "" for "none". Not a hot path. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/check.h"
#include "core/error.h"
#include "backend/instrumentation/mode.h"
#include "cproton/instrumentation.h"

typedef struct word {
  const char *name;
  int value;
} word;

/* Proton's one metric type; the other counters are reached through
 * optimizations=clock32 or the pass options (cproton-instrument --counter),
 * not through mode strings, which Proton's mode classes must represent. */
static const word counters[] = {{"cycle", CPROTON_COUNTER_CLOCK64}, {NULL, 0}};
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

/* "BUFFER_TYPE.GLOBAL" -> "GLOBAL" when `type` is "BUFFER_TYPE" (NULL:
 * no dotted form); then compared without case. Returns the table's first
 * spelling of that value (the canonical one), or NULL. */
static const char *lookup_typed(const word *table, const char *type, const char *value, int *out) {
  const char *dot = strchr(value, '.');
  const char *v = value;
  if (dot) {
    if (!type || (size_t)(dot - value) != strlen(type) || strncasecmp(value, type, strlen(type)))
      return NULL;
    v = dot + 1;
  }
  for (const word *w = table; w->name; w++)
    if (strcasecmp(w->name, v) == 0) {
      *out = w->value;
      for (const word *c = table; c <= w; c++)
        if (c->value == w->value)
          return c->name;
    }
  return NULL;
}


static int bad(const char *key, const char *value, const char *valid) {
  return cp_error_set(CPROTON_EINVAL,
                      "instrumentation mode: unknown %s '%s' (valid: %s)", key,
                      value, valid);
}

/* The canonical form being written: mode name, then each field as given,
 * with the table's spelling of its value. Input is under 1 KiB and no
 * canonical value is more than one byte longer than its spelling. */
typedef struct canon {
  char s[4096];
  size_t n;
} canon;

static void put(canon *c, const char *a, size_t n) {
  CP_ASSERT(c->n + n < sizeof c->s); /* the bound above: it always fits */
  if (c->n + n < sizeof c->s) {
    memcpy(c->s + c->n, a, n);
    c->n += n;
    c->s[c->n] = '\0';
  }
}

static void puts_c(canon *c, const char *a) { put(c, a, strlen(a)); }

/* "0,4,5" -> bit mask of units; no empty item, no trailing comma. */
static int parse_units(const char *value, uint32_t *mask, canon *c) {
  *mask = 0;
  for (const char *p = value; *p;) {
    char *end;
    long u = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    if (u < 0 || u > 31 || (*end && (*end != ',' || !end[1])))
      return bad("sampling_options", value, "comma-separated units 0..31");
    *mask |= 1u << u;
    char num[8];
    snprintf(num, sizeof num, "%s%ld", p == value ? "" : ",", u);
    puts_c(c, num);
    p = *end ? end + 1 : end;
  }
  return CPROTON_OK;
}

typedef struct parsed {
  int sampling;
  uint32_t units;
  int opts; /* OPT_* */
  int reduce; /* cproton_reduce_kind; AUTO when not given */
} parsed;

/* "clock32, time_shift" -> OPT_* bits; blanks around an item are Proton's
 * (it strips them), an empty item is refused. */
static int parse_optimizations(const char *value, int *opts, canon *c) {
  static const char valid[] = "clock32, time_shift, sched_stores, sched_barriers";
  for (const char *p = value; *p;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    char item[32];
    while (n && isspace((unsigned char)*p))
      p++, n--;
    while (n && isspace((unsigned char)p[n - 1]))
      n--;
    if (n == 0 || n >= sizeof item)
      return bad("optimizations", value, valid);
    memcpy(item, p, n);
    item[n] = '\0';
    int v;
    const char *name = lookup_typed(optimizations, NULL, item, &v);
    if (!name)
      return bad("optimizations", item, valid);
    *opts |= v;
    puts_c(c, c->s[c->n - 1] == '=' ? "" : ",");
    puts_c(c, name);
    if (!comma)
      break;
    if (!comma[1])
      return bad("optimizations", value, valid);
    p = comma + 1;
  }
  return CPROTON_OK;
}

/* The keys whose value is a word of a table, with the enum type name
 * Python's str() prints before the member. */
enum { F_COUNTER, F_BUFFER, F_GRANULARITY, F_STRATEGY, F_SAMPLING, F_REDUCE };
static const struct word_key {
  const char *key, *type, *valid;
  const word *table;
  int field;
} word_keys[] = {
    {"metric_type", "METRIC_TYPE", "cycle", counters, F_COUNTER},
    {"buffer_type", "BUFFER_TYPE", "shared, global", buffers, F_BUFFER},
    {"granularity", "GRANULARITY",
     "warp, warp_2, warp_4, warp_8, warp_group, warp_group_2, warp_group_4, warp_group_8, cta", granularities,
     F_GRANULARITY},
    {"buffer_strategy", "BUFFER_STRATEGY", "circular, flush", strategies, F_STRATEGY},
    {"sampling_strategy", "SAMPLING_STRATEGY", "none, selective", samplings, F_SAMPLING},
    {"reduce", NULL, "kernel, device, host", reductions, F_REDUCE},
};

static int apply_word(cproton_ptx_options *o, parsed *ps, const struct word_key *k, const char *value,
                      canon *c) {
  int v;
  const char *name = lookup_typed(k->table, k->type, value, &v);
  if (!name)
    return bad(k->key, value, k->valid);
  puts_c(c, name);
  switch (k->field) {
  case F_COUNTER: o->counter = (cproton_counter)v; break;
  case F_BUFFER: o->buffer = (cproton_buffer_kind)v; break;
  case F_GRANULARITY: o->granularity = (cproton_granularity)v; break;
  case F_STRATEGY: o->strategy = (cproton_buffer_strategy)v; break;
  case F_SAMPLING: ps->sampling = v; break;
  default: ps->reduce = v; break;
  }
  return 0;
}

static int apply(cproton_ptx_options *o, parsed *ps, const char *key, const char *value, canon *c) {
  for (size_t i = 0; i < sizeof word_keys / sizeof *word_keys; i++)
    if (!strcmp(key, word_keys[i].key))
      return *value ? apply_word(o, ps, &word_keys[i], value, c)
                    : cp_error_set(CPROTON_EINVAL, "instrumentation mode: empty value for %s (valid: %s)",
                                   key, word_keys[i].valid);
  if (!strcmp(key, "sampling_options"))
    return parse_units(value, &ps->units, c);
  if (!strcmp(key, "optimizations"))
    return parse_optimizations(value, &ps->opts, c);
  if (!strcmp(key, "buffer_size")) {
    char *end;
    long n = isdigit((unsigned char)*value) ? strtol(value, &end, 10) : -1;
    if (n < 0 || *end || n > (1l << 30))
      return bad(key, value, "a byte count");
    o->buffer_size = (uint32_t)n;
    char num[16];
    snprintf(num, sizeof num, "%ld", n);
    puts_c(c, num);
    return 0;
  }
  return cp_error_set(CPROTON_EINVAL, "instrumentation mode: unknown key '%s'", key);
}

static int parse_field(cproton_ptx_options *o, parsed *ps, char *field, canon *c) {
  char *eq = strchr(field, '=');
  if (!eq || eq == field)
    return cp_error_set(CPROTON_EINVAL,
                        "instrumentation mode: malformed option '%s' "
                        "(expected key=value)", field);
  *eq = '\0';
  puts_c(c, ":");
  puts_c(c, field);
  puts_c(c, "=");
  return apply(o, ps, field, eq + 1, c);
}

/* Splits at every ':' (strtok_r would skip empty fields). */
static int parse_fields(const char *mode, char *buf, cproton_ptx_options *out, parsed *ps, canon *c) {
  char *name = buf, *colon = strchr(buf, ':');
  if (colon)
    *colon = '\0';
  if (!*name)
    return cp_error_set(CPROTON_EINVAL,
                        "instrumentation mode '%s' names no mode (valid: "
                        "default, mma)", mode);
  if (strcmp(name, "default") != 0 && strcmp(name, "mma") != 0)
    return cp_error_set(CPROTON_EINVAL,
                        "instrumentation mode: unknown mode '%s' (valid: "
                        "default, mma)", name);
  puts_c(c, name);
  while (colon) {
    char *f = colon + 1;
    colon = strchr(f, ':');
    if (colon)
      *colon = '\0';
    if (!*f)
      return cp_error_set(CPROTON_EINVAL, "instrumentation mode '%s': empty option", mode);
    int rc = parse_field(out, ps, f, c);
    if (rc)
      return rc;
  }
  return CPROTON_OK;
}

static int parse_mode_canon(const char *mode, cproton_ptx_options *out, parsed *ps_out, canon *c) {
  cproton_ptx_options_init(out);
  memset(ps_out, 0, sizeof *ps_out);
  c->n = 0;
  c->s[0] = '\0';
  if (!mode || !*mode) {
    puts_c(c, "default");
    return CPROTON_OK;
  }
  char buf[1024];
  if (strlen(mode) >= sizeof buf)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode too long");
  snprintf(buf, sizeof buf, "%s", mode);
  parsed ps = {0};
  int rc = parse_fields(mode, buf, out, &ps, c);
  if (rc)
    return rc;
  if (ps.opts & OPT_CLOCK32)
    out->counter = CPROTON_COUNTER_CLOCK;
  if (ps.sampling)
    out->sample_mask = ps.units;
  out->aggregate = ps.reduce == CPROTON_REDUCE_KERNEL;
  *ps_out = ps;
  return CPROTON_OK;
}

static int parse_mode(const char *mode, cproton_ptx_options *out, parsed *ps_out) {
  canon c;
  return parse_mode_canon(mode, out, ps_out, &c);
}

int cproton_instr_mode_normalize(const char *mode, char *buf, size_t size) {
  if (!buf || !size)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: no output buffer");
  cproton_ptx_options o;
  parsed ps;
  canon c;
  buf[0] = '\0';
  int rc = parse_mode_canon(mode, &o, &ps, &c);
  if (rc)
    return rc;
  if (c.n >= size)
    return cp_error_set(CPROTON_ELIMIT, "instrumentation mode: %zu-byte buffer for a %zu-byte canonical form",
                        size, c.n);
  memcpy(buf, c.s, c.n + 1);
  return CPROTON_OK;
}

int cproton_instr_mode_options(const char *mode, cproton_ptx_options *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: out is NULL");
  parsed ps;
  return parse_mode(mode, out, &ps);
}

/* What the runtime needs, from one parse. */
static int parse_instr(const char *mode, cp_instr_mode *m, canon *c) {
  parsed ps;
  int rc = parse_mode_canon(mode, &m->info.options, &ps, c);
  m->info.decode_flags = !rc && (ps.opts & OPT_TIME_SHIFT) ? CPROTON_DECODE_TIME_SHIFT : 0;
  m->info.reduce = rc ? CPROTON_REDUCE_AUTO : (cproton_reduce_kind)ps.reduce;
  m->reduce_on_device = rc || ps.reduce != CPROTON_REDUCE_HOST;
  return rc;
}

_Static_assert(sizeof(cp_instr_mode) <= CP_BACKEND_OPTS_BYTES,
               "an instrumentation mode fits a backend configuration");

int cproton_instr_mode_decode_flags(const char *mode, unsigned *flags) {
  if (!flags)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: flags is NULL");
  cp_instr_mode m;
  canon c;
  int rc = parse_instr(mode, &m, &c);
  *flags = m.info.decode_flags;
  return rc;
}

int cproton_instr_mode_reduce(const char *mode, int *on_device) {
  if (!on_device)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: on_device is NULL");
  cp_instr_mode m;
  canon c;
  int rc = parse_instr(mode, &m, &c);
  *on_device = m.reduce_on_device;
  return rc;
}

int cproton_instr_mode_reduce_kind(const char *mode, cproton_reduce_kind *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: out is NULL");
  cp_instr_mode m;
  canon c;
  int rc = parse_instr(mode, &m, &c);
  *out = m.info.reduce;
  return rc;
}

/* The one copy of the rule (the AUTO choice at cproton_reduce_kind), so
 * that C front ends get the default the Python hook uses: in-kernel sums
 * need reduce unset or `kernel`, a tree profile, and nothing that needs
 * records (the host buffer, time_shift). */
static int sums_rule(const cp_instr_mode *m, int is_trace, int host_buffer) {
  int reduce_ok = m->info.reduce == CPROTON_REDUCE_AUTO || m->info.reduce == CPROTON_REDUCE_KERNEL;
  return reduce_ok && !is_trace && !host_buffer &&
         !(m->info.decode_flags & CPROTON_DECODE_TIME_SHIFT);
}

int cproton_instr_mode_sums_in_kernel(const char *mode, int is_trace,
                                      int host_buffer, int *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: out is NULL");
  *out = 0;
  cp_instr_mode m;
  canon c;
  int rc = parse_instr(mode, &m, &c);
  if (!rc)
    *out = sums_rule(&m, is_trace, host_buffer);
  return rc;
}

/* reduce=kernel asked for where records are needed: refused, not ignored. */
static int kernel_sums_refused(const cp_instr_mode *m, int is_trace) {
  if (m->info.reduce != CPROTON_REDUCE_KERNEL ||
      (!is_trace && !(m->info.decode_flags & CPROTON_DECODE_TIME_SHIFT)))
    return CPROTON_OK;
  return cp_error_set(CPROTON_EINVAL, "instrumentation mode: reduce=kernel sums per-scope totals inside the "
                      "kernel and stores no records, which %s need; use reduce=device or leave reduce out",
                      is_trace ? "traces" : "time_shift");
}

/* The one parse of a session's mode (the backend's parse_mode and the
 * public cproton_instr_mode_parse): the fields, the refusal of in-kernel
 * sums where the data kind needs records, the AUTO rule with and without
 * the host buffer, the canonical form. */
static int parse_session(const char *mode, int is_trace, cp_instr_mode *m) {
  canon c;
  memset(m, 0, sizeof *m);
  int rc = parse_instr(mode, m, &c);
  if (!rc)
    rc = kernel_sums_refused(m, is_trace);
  if (!rc && c.n >= sizeof m->info.canonical)
    rc = cp_error_set(CPROTON_ELIMIT, "instrumentation mode: canonical form over %zu bytes",
                      sizeof m->info.canonical - 1);
  if (rc)
    return rc;
  m->info.sums_in_kernel = sums_rule(m, is_trace, 0);
  m->info.sums_in_kernel_host_buffer = sums_rule(m, is_trace, 1);
  memcpy(m->info.canonical, c.s, c.n + 1);
  return CPROTON_OK;
}

int cproton_instr_mode_parse(const char *mode, int is_trace, cproton_instr_mode_info *out) {
  if (!out)
    return cp_error_set(CPROTON_EINVAL, "instrumentation mode: out is NULL");
  memset(out, 0, sizeof *out);
  cp_instr_mode m;
  int rc = parse_session(mode, is_trace, &m);
  if (!rc)
    *out = m.info;
  return rc;
}

const cp_instr_mode *cp_instr_mode_of(const cp_backend_config *config) {
  return CP_BACKEND_OPTS(cp_instr_mode, config);
}

int cp_instr_mode_parse_config(const char *mode, cp_backend_config *out) {
  cp_instr_mode m;
  int rc = parse_session(mode, out->is_trace, &m);
  cp_backend_config_set(out, mode, &m, sizeof m);
  return rc;
}

int cp_instr_mode_info_of(const cp_backend_config *config, cproton_instr_mode_info *out) {
  *out = cp_instr_mode_of(config)->info;
  return CPROTON_OK;
}
