/* io/hatchet_read.c -- Hatchet tree profiles: schema checks over the JSON
 * tokens, filling the compact model (io/profile_model.h).
 *
 * Document:  [ node, device_info? ]
 *   node        {"frame": {"name": str, "type": str, ...},
 *                "metrics": {key: number|string|bool|null, ...},
 *                "children": [node, ...], ...}      (keys in any order;
 *                "frame" required; unknown keys skipped; no duplicates)
 *   device_info {type: {index: {"arch": str|int, "num_sms": n,
 *                "clock_rate": kHz, "memory_clock_rate": kHz,
 *                "bus_width": bits, ...}}}
 * Invariant: nodes are parsed with an explicit stack (never C recursion), so
 * nesting is bounded by CPROTON_PROFILE_MAX_DEPTH, not by the C stack. Node
 * ids are given at '{', which makes them pre-order.
 * Not a hot path; called by io/profile_api.c on the opening thread. */
#include "io/hatchet_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"

#define next(lx) cp_hatchet_read_json_next(lx)
#define expect(lx, t, w) cp_hatchet_read_json_expect(lx, t, w)
#define perr(lx, code, ...) cp_hatchet_read_json_error(lx, code, __VA_ARGS__)
#define tname(t) cp_hatchet_read_json_tok_name(t)

enum { ST_OBJ_FIRST, ST_OBJ_NEXT, ST_CH_FIRST, ST_CH_NEXT };
enum { SEEN_FRAME = 1, SEEN_METRICS = 2, SEEN_CHILDREN = 4 };

typedef struct frame {
  uint32_t node;
  uint8_t state, seen;
} frame;

/* A recently seen short string (object key or string value): its id and,
 * once used as a metric name, its metric key + 1. Direct-mapped by a hash of
 * the bytes, so the few distinct keys of a file are interned once instead of
 * once per node. */
typedef struct key_slot {
  uint32_t len1; /* length + 1; 0 = empty */
  uint32_t id, metric1;
} key_slot;

#define KEY_SLOTS 512u /* key_hash() gives 9 bits */
#define KEY_CACHE_MAX 64u /* longer strings bypass the cache */

typedef struct parser {
  cp_json_lexer *lx;
  cproton_profile *p;
  frame *stack;
  size_t sp, cap;
  key_slot keys[KEY_SLOTS];
} parser;

/* Wraps a model error (which has no position) with the current position. */
static int at(parser *ps, int rc) {
  if (rc == CPROTON_OK)
    return rc;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", cp_error_message());
  return perr(ps->lx, rc, "%s", msg);
}

/* Slot of a short string: its length and first, middle and last bytes. */
static uint32_t key_hash(const char *s, size_t n) {
  if (n == 0)
    return 0;
  uint32_t h = (uint32_t)(unsigned char)s[0] |
               (uint32_t)(unsigned char)s[n - 1] << 8 |
               (uint32_t)(unsigned char)s[n >> 1] << 16 | (uint32_t)n << 24;
  return (h * 2654435761u) >> 23; /* 9 bits: KEY_SLOTS */
}

/* memcmp(a, b, n) == 0 for the short strings of the cache, inline. */
static int same(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return 0;
  return 1;
}

/* Interns the current string token through the cache; *slot_out is its
 * entry (copy it before lexing on: a later string may take the slot). */
static int intern_bytes(parser *ps, const char *s, size_t n, key_slot *out) {
  if (n > KEY_CACHE_MAX) {
    out->len1 = 0, out->metric1 = 0;
    return at(ps, cp_profile_model_intern(ps->p, s, n, &out->id));
  }
  key_slot *e = &ps->keys[key_hash(s, n)];
  if (e->len1 != n + 1 || !same(cp_profile_model_str(ps->p, e->id), s, n)) {
    uint32_t id;
    int rc = at(ps, cp_profile_model_intern(ps->p, s, n, &id));
    if (rc)
      return rc;
    *e = (key_slot){(uint32_t)n + 1, id, 0};
  }
  *out = *e;
  return CPROTON_OK;
}

/* intern_bytes() of the current string token. */
static int intern_cached(parser *ps, key_slot *out) {
  return intern_bytes(ps, ps->lx->str, ps->lx->str_len, out);
}

/* Reads members of an object whose '{' is the current token, calling
 * `member` with the key and the value's first token current. */
typedef int (*member_fn)(parser *ps, void *ctx, const key_slot *key);

static int each_member(parser *ps, void *ctx, member_fn member) {
  cp_json_lexer *lx = ps->lx;
  if (lx->tok != CP_JSON_LBRACE)
    return perr(lx, CPROTON_EPARSE, "expected an object, found %s",
                tname(lx->tok));
  const char *kp;
  size_t kn;
  int last, first = 1, rc;
  while (cp_hatchet_read_json_member(lx, &kp, &kn, &last)) { /* fast path */
    key_slot key;
    first = 0;
    if ((rc = intern_bytes(ps, kp, kn, &key)) || (rc = member(ps, ctx, &key)))
      return rc;
    if (last) {
      cp_hatchet_read_json_member_end(lx);
      return CPROTON_OK;
    }
  }
  rc = next(lx);
  if (rc || (first && lx->tok == CP_JSON_RBRACE))
    return rc;
  for (;;) {
    if (lx->tok != CP_JSON_STRING)
      return perr(lx, CPROTON_EPARSE, "expected a string key, found %s%s",
                  tname(lx->tok),
                  lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
    key_slot key;
    if ((rc = intern_cached(ps, &key)) ||
        (rc = cp_hatchet_read_json_colon_value(lx)) ||
        (rc = member(ps, ctx, &key)) ||
        (rc = cp_hatchet_read_json_sep(lx, CP_JSON_RBRACE)))
      return rc == 1 ? CPROTON_OK : rc;
  }
}

static const char *str_of(parser *ps, uint32_t id) {
  return cp_profile_model_str(ps->p, id);
}

static int frame_member(parser *ps, void *ctx, const key_slot *k) {
  cp_profile_node *n = &ps->p->nodes[*(uint32_t *)ctx];
  const char *key = str_of(ps, k->id);
  int is_name = k->len1 == 5 && !memcmp(key, "name", 4);
  int is_type = k->len1 == 5 && !memcmp(key, "type", 4);
  if (!is_name && !is_type)
    return cp_hatchet_read_json_skip(ps->lx);
  if (ps->lx->tok != CP_JSON_STRING)
    return perr(ps->lx, CPROTON_EPARSE, "frame.%s must be a string, found %s",
                key, tname(ps->lx->tok));
  uint32_t id;
  int rc = at(ps, cp_profile_model_intern(ps->p, ps->lx->str,
                                          ps->lx->str_len, &id));
  n = &ps->p->nodes[*(uint32_t *)ctx];
  if (is_name)
    n->name = id;
  else
    n->type = id;
  return rc;
}

static int parse_frame(parser *ps, uint32_t node) {
  uint64_t line = ps->lx->tok_line, col = ps->lx->tok_col;
  uint32_t empty = ps->p->empty_id;
  ps->p->nodes[node].name = CPROTON_PROFILE_NO_NODE;
  int rc = each_member(ps, &node, frame_member);
  if (rc)
    return rc;
  if (ps->p->nodes[node].name == CPROTON_PROFILE_NO_NODE) {
    ps->p->nodes[node].name = empty;
    return cp_error_set(CPROTON_EPARSE, "%s:%llu:%llu: frame has no \"name\"",
                        ps->lx->name, (unsigned long long)line,
                        (unsigned long long)col);
  }
  return CPROTON_OK;
}

/* The metric key of the cached string `k` (looked up once per slot). */
static int metric_key(parser *ps, const key_slot *k, uint32_t *key_out) {
  if (k->metric1) {
    *key_out = k->metric1 - 1;
    return CPROTON_OK;
  }
  int rc = at(ps, cp_profile_model_key(ps->p, k->id, key_out));
  if (rc || !k->len1)
    return rc;
  key_slot *e = &ps->keys[key_hash(str_of(ps, k->id), k->len1 - 1)];
  if (e->id == k->id && e->len1 == k->len1)
    e->metric1 = *key_out + 1;
  return CPROTON_OK;
}

/* Metrics the viewer computes with: a string there ("count": "ten") is an
 * error, not a value to drop. Other metrics may hold strings (Proton's
 * MetricValueType includes std::string). */
static int numeric_metric(const char *name) {
  static const char *const names[] = {"count", "time (ns)", "cpu_time (ns)", "cycles",
                                      "normalized_cycles", "num_samples"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(name, names[i]) == 0)
      return 1;
  return 0;
}

/* A vector metric (Proton 3.9), the current token its '['; ends on its
 * ']'. Elements are numbers (true/false as 1/0) or null (NaN). */
static int vector_metric(parser *ps, const key_slot *k, cp_profile_metric *m) {
  cp_json_lexer *lx = ps->lx;
  m->kind = CPROTON_METRIC_VECTOR;
  m->v.vec.off = (uint32_t)ps->p->n_vec;
  int rc = next(lx);
  if (rc || lx->tok == CP_JSON_RBRACKET)
    return rc;
  for (;;) {
    double d;
    switch (lx->tok) {
    case CP_JSON_INT: d = (double)lx->ival; break;
    case CP_JSON_DOUBLE: d = lx->dval; break;
    case CP_JSON_TRUE: case CP_JSON_FALSE: d = lx->tok == CP_JSON_TRUE; break;
    case CP_JSON_NULL: d = NAN; break;
    default:
      return perr(lx, CPROTON_EPARSE, "vector metric \"%.200s\" must hold "
                  "numbers, found %s", str_of(ps, k->id), tname(lx->tok));
    }
    if ((rc = at(ps, cp_profile_model_vec_push(ps->p, d))))
      return rc;
    m->v.vec.n++;
    rc = cp_hatchet_read_json_sep(lx, CP_JSON_RBRACKET);
    if (rc)
      return rc == 1 ? CPROTON_OK : rc;
  }
}

static int metric_member(parser *ps, void *ctx, const key_slot *k) {
  cp_json_lexer *lx = ps->lx;
  cp_profile_metric m;
  memset(&m, 0, sizeof m);
  switch (lx->tok) {
  case CP_JSON_INT:
    m.kind = CPROTON_METRIC_INT, m.v.i = lx->ival;
    break;
  case CP_JSON_DOUBLE:
    m.kind = CPROTON_METRIC_DOUBLE, m.v.d = lx->dval;
    break;
  case CP_JSON_TRUE:
  case CP_JSON_FALSE:
    m.kind = CPROTON_METRIC_INT, m.v.i = lx->tok == CP_JSON_TRUE;
    break;
  case CP_JSON_STRING: {
    if (numeric_metric(str_of(ps, k->id)))
      return perr(lx, CPROTON_EPARSE, "metric \"%.200s\" must be a number, found a string",
                  str_of(ps, k->id));
    m.kind = CPROTON_METRIC_STRING;
    key_slot v;
    int rc = intern_cached(ps, &v);
    if (rc)
      return rc;
    m.v.s = v.id;
    break;
  }
  case CP_JSON_NULL:
    return CPROTON_OK;
  case CP_JSON_LBRACKET: {
    if (numeric_metric(str_of(ps, k->id)))
      return perr(lx, CPROTON_EPARSE, "metric \"%.200s\" must be a number, found an array",
                  str_of(ps, k->id));
    int rc = vector_metric(ps, k, &m);
    if (rc)
      return rc;
    break;
  }
  default:
    return perr(lx, CPROTON_EPARSE,
                "metric \"%.200s\" must be a number, a string or an array of "
                "numbers, found %s",
                str_of(ps, k->id), tname(lx->tok));
  }
  int rc = metric_key(ps, k, &m.key);
  return rc ? rc : at(ps, cp_profile_model_set_metric(
                              ps->p, *(uint32_t *)ctx, &m));
}

static int push(parser *ps, uint32_t parent) {
  if (ps->sp >= CPROTON_PROFILE_MAX_DEPTH)
    return perr(ps->lx, CPROTON_ELIMIT, "nodes nested deeper than %u",
                CPROTON_PROFILE_MAX_DEPTH);
  void *s;
  if (ps->sp == ps->cap) {
    if (cp_grow(ps->stack, &ps->cap, ps->sp + 1, sizeof *ps->stack, 64, &s))
      return perr(ps->lx, CPROTON_ENOMEM, "out of memory");
    ps->stack = s;
  }
  if (ps->lx->tok != CP_JSON_LBRACE)
    return perr(ps->lx, CPROTON_EPARSE, "expected a node object, found %s%s",
                tname(ps->lx->tok),
                ps->lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
  uint32_t id;
  int rc = at(ps, cp_profile_model_add_node(ps->p, parent, &id));
  if (rc)
    return rc;
  ps->stack[ps->sp++] = (frame){id, ST_OBJ_FIRST, 0};
  return CPROTON_OK;
}

/* One member of the node on top; the value's first token is current. */
static int node_member(parser *ps, frame *f, const char *key) {
  static const struct { const char *key; size_t len; uint8_t bit; } known[] = {
      {"frame", 5, SEEN_FRAME}, {"metrics", 7, SEEN_METRICS},
      {"children", 8, SEEN_CHILDREN}};
  f->state = ST_OBJ_NEXT;
  size_t len = strlen(key);
  for (size_t k = 0; k < 3; k++) {
    if (len != known[k].len || memcmp(key, known[k].key, len))
      continue;
    if (f->seen & known[k].bit)
      return perr(ps->lx, CPROTON_EPARSE, "duplicate \"%s\" in a node", key);
    f->seen |= known[k].bit;
    if (k == 0)
      return parse_frame(ps, f->node);
    if (k == 1)
      return each_member(ps, &f->node, metric_member);
    if (ps->lx->tok != CP_JSON_LBRACKET)
      return perr(ps->lx, CPROTON_EPARSE, "\"children\" must be a list");
    f->state = ST_CH_FIRST;
    return CPROTON_OK;
  }
  return cp_hatchet_read_json_skip(ps->lx);
}

static int end_node(parser *ps) {
  frame *f = &ps->stack[ps->sp - 1];
  if (!(f->seen & SEEN_FRAME))
    return perr(ps->lx, CPROTON_EPARSE, "node has no \"frame\"");
  ps->sp--;
  if (ps->sp)
    ps->stack[ps->sp - 1].state = ST_CH_NEXT;
  return CPROTON_OK;
}

/* Reads the next key of the node on top (the current token is just after
 * '{' or ','), looks it up and dispatches its value. */
static int node_key(parser *ps, frame *f) {
  cp_json_lexer *lx = ps->lx;
  if (lx->tok != CP_JSON_STRING)
    return perr(lx, CPROTON_EPARSE, "expected a string key, found %s%s",
                tname(lx->tok),
                lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
  char key[16] = "?";
  if (lx->str_len < sizeof key) {
    memcpy(key, lx->str, lx->str_len);
    key[lx->str_len] = '\0';
  }
  int rc = cp_hatchet_read_json_colon_value(lx);
  return rc ? rc : node_member(ps, f, key);
}

/* One step of the node state machine; see the file comment. */
static int node_step(parser *ps) {
  cp_json_lexer *lx = ps->lx;
  frame *f = &ps->stack[ps->sp - 1];
  int rc = next(lx);
  if (rc)
    return rc;
  switch (f->state) {
  case ST_OBJ_FIRST:
    return lx->tok == CP_JSON_RBRACE ? end_node(ps) : node_key(ps, f);
  case ST_OBJ_NEXT:
    if (lx->tok == CP_JSON_RBRACE)
      return end_node(ps);
    if (lx->tok != CP_JSON_COMMA)
      return perr(lx, CPROTON_EPARSE, "expected ',' or '}', found %s%s",
                  tname(lx->tok),
                  lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
    return (rc = next(lx)) ? rc : node_key(ps, f);
  case ST_CH_NEXT:
    if (lx->tok == CP_JSON_COMMA) {
      uint32_t parent = f->node;
      return (rc = next(lx)) ? rc : push(ps, parent);
    }
    /* ] ends the list, anything else is an error */
    __attribute__((fallthrough));
  default:
    if (lx->tok == CP_JSON_RBRACKET) {
      f->state = ST_OBJ_NEXT;
      return CPROTON_OK;
    }
    if (f->state == ST_CH_FIRST)
      return push(ps, f->node);
    return perr(lx, CPROTON_EPARSE, "expected ',' or ']', found %s%s",
                tname(lx->tok),
                lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
  }
}

static int parse_tree(parser *ps) {
  int rc = push(ps, CPROTON_PROFILE_NO_NODE);
  while (!rc && ps->sp)
    rc = node_step(ps);
  return rc;
}

/* ---- device info ---------------------------------------------------------- */

typedef struct dev_ctx {
  cp_profile_device d;
  uint32_t type;
} dev_ctx;

static int dev_number(parser *ps, const char *key, double *out) {
  cp_json_lexer *lx = ps->lx;
  if (lx->tok != CP_JSON_INT && lx->tok != CP_JSON_DOUBLE)
    return perr(lx, CPROTON_EPARSE, "device %s must be a number, found %s",
                key, tname(lx->tok));
  if (!(lx->dval >= 0) || lx->dval > 1e15)
    return perr(lx, CPROTON_EPARSE, "device %s out of range: %g", key,
                lx->dval);
  *out = lx->dval;
  return CPROTON_OK;
}

static int dev_field(parser *ps, void *ctx, const key_slot *ks) {
  dev_ctx *c = ctx;
  cp_json_lexer *lx = ps->lx;
  const char *key = str_of(ps, ks->id);
  if (!strcmp(key, "arch")) {
    char tmp[32];
    const char *s = lx->str;
    size_t n = lx->str_len;
    if (lx->tok == CP_JSON_INT) {
      n = (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)lx->ival);
      s = tmp;
    } else if (lx->tok != CP_JSON_STRING) {
      return perr(lx, CPROTON_EPARSE, "device arch must be a string");
    }
    return at(ps, cp_profile_model_intern(ps->p, s, n, &c->d.arch));
  }
  static const char *const names[] = {"clock_rate", "memory_clock_rate",
                                      "bus_width", "num_sms"};
  double *slots[] = {&c->d.clock_rate, &c->d.memory_clock_rate,
                     &c->d.bus_width, &c->d.num_sms};
  for (size_t k = 0; k < 4; k++)
    if (!strcmp(key, names[k]))
      return dev_number(ps, key, slots[k]);
  return cp_hatchet_read_json_skip(lx);
}

static int dev_index(parser *ps, void *ctx, const key_slot *k) {
  dev_ctx *c = ctx;
  memset(&c->d, 0, sizeof c->d);
  c->d.type = c->type;
  c->d.index = k->id;
  c->d.arch = ps->p->empty_id;
  int rc = each_member(ps, c, dev_field);
  return rc ? rc : at(ps, cp_profile_model_add_device(ps->p, &c->d));
}

static int dev_type(parser *ps, void *ctx, const key_slot *k) {
  dev_ctx *c = ctx;
  c->type = k->id;
  /* A repeated type key replaces the earlier object, as json.load does. */
  cp_profile_model_drop_devices(ps->p, k->id);
  return each_member(ps, c, dev_index);
}

static int parse_devices(parser *ps) {
  if (ps->lx->tok != CP_JSON_LBRACE)
    return perr(ps->lx, CPROTON_EPARSE,
                "second element must be the device-info object, found %s",
                tname(ps->lx->tok));
  dev_ctx c;
  memset(&c, 0, sizeof c);
  return each_member(ps, &c, dev_type);
}

/* ---- document --------------------------------------------------------------- */

static int parse_document(parser *ps) {
  cp_json_lexer *lx = ps->lx;
  int rc = next(lx);
  if (rc)
    return rc;
  if (lx->tok != CP_JSON_LBRACKET)
    return perr(lx, CPROTON_EPARSE,
                "expected '[' (a Hatchet list [root, device_info]), found %s",
                tname(lx->tok));
  if ((rc = next(lx)) || (rc = parse_tree(ps)) || (rc = next(lx)))
    return rc;
  if (lx->tok == CP_JSON_COMMA) {
    if ((rc = next(lx)) || (rc = parse_devices(ps)) || (rc = next(lx)))
      return rc;
  }
  if (lx->tok != CP_JSON_RBRACKET)
    return perr(lx, CPROTON_EPARSE, "expected ']' after %s, found %s%s",
                ps->p->n_devices ? "device info" : "the root node",
                tname(lx->tok),
                lx->tok == CP_JSON_EOF ? " (truncated file?)" : "");
  if ((rc = next(lx)))
    return rc;
  if (lx->tok != CP_JSON_EOF)
    return perr(lx, CPROTON_EPARSE, "extra data after the document");
  return at(ps, cp_profile_model_finish(ps->p));
}

int cp_hatchet_read_document(cp_json_lexer *lx, cproton_profile *p) {
  parser *ps = calloc(1, sizeof *ps);
  if (!ps)
    return cp_error_set(CPROTON_ENOMEM, "%s: out of memory", lx->name);
  ps->lx = lx;
  ps->p = p;
  int rc = parse_document(ps);
  free(ps->stack);
  free(ps);
  return rc;
}
