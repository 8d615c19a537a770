/* io/hatchet_read_msgpack.c -- Hatchet trees from MessagePack: the schema of
 * io/hatchet_read.c (node maps with "frame", "metrics", "children"; a
 * device-info map) over MessagePack values instead of JSON tokens.
 *
 * Input is untrusted: every length is checked against the bytes left
 * before it is used, containers are walked with counters and an explicit
 * node stack (never C recursion), nesting is bounded by
 * CPROTON_PROFILE_MAX_DEPTH, strings by CPROTON_PROFILE_MAX_STRING.
 * Errors name the byte offset of the value at fault. Keys may come in any
 * order; unknown keys are skipped; metric values are integers, floats,
 * strings, booleans (as 0/1) or nil (ignored), as in the JSON reader.
 * Not a hot path; called by io/profile_api.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/grow.h"
#include "io/hatchet_read_msgpack.h"

enum { MP_NIL, MP_BOOL, MP_INT, MP_DOUBLE, MP_STR, MP_BIN, MP_ARRAY, MP_MAP,
       MP_EXT };

typedef struct mp_val {
  int type;
  int64_t i;     /* MP_INT, MP_BOOL */
  double d;      /* MP_DOUBLE (and MP_INT beyond int64: stored as double) */
  const char *s; /* MP_STR payload (not NUL-terminated) */
  uint32_t n;    /* MP_STR/BIN/EXT bytes, MP_ARRAY items, MP_MAP pairs */
  size_t at;     /* offset of the value's first byte */
} mp_val;

typedef struct reader {
  const uint8_t *b;
  size_t len, pos;
  cproton_profile *p;
} reader;

static const char *const type_names[] = {"nil", "boolean", "integer",
                                         "float", "string", "binary",
                                         "array", "map", "extension"};

static int fail(const reader *r, size_t at, int code, const char *fmt, ...)
    CP_PRINTF(4, 5);

static int fail(const reader *r, size_t at, int code, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cp_error_set(code, "%s: byte %zu: %s", r->p->name, at, msg);
}

/* Wraps a model error (no position) with the offset. */
static int at(const reader *r, size_t off, int rc) {
  if (rc == CPROTON_OK)
    return rc;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", cp_error_message());
  return fail(r, off, rc, "%s", msg);
}

static int need(const reader *r, size_t n, size_t at_) {
  if (r->len - r->pos >= n)
    return CPROTON_OK;
  return fail(r, at_, CPROTON_EPARSE,
              "truncated: a value needs %zu more bytes, the file ends at "
              "byte %zu", n - (r->len - r->pos), r->len);
}

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

/* Reads an n-byte big-endian length or number after the tag. */
static int take(reader *r, int n, size_t at_, uint64_t *out) {
  int rc = need(r, (size_t)n, at_);
  if (rc)
    return rc;
  *out = be(r->b + r->pos, n);
  r->pos += (size_t)n;
  return CPROTON_OK;
}

/* Payload of a str/bin/ext: checks the bytes exist, then steps over them. */
static int payload(reader *r, mp_val *v, uint64_t n) {
  int rc = need(r, n, v->at);
  if (rc)
    return rc;
  if (v->type == MP_STR && n > CPROTON_PROFILE_MAX_STRING)
    return fail(r, v->at, CPROTON_ELIMIT, "string of %llu bytes (limit %u)",
                (unsigned long long)n, CPROTON_PROFILE_MAX_STRING);
  v->s = (const char *)r->b + r->pos;
  v->n = (uint32_t)n;
  r->pos += n;
  return CPROTON_OK;
}

static int read_uint(reader *r, mp_val *v, int n) {
  uint64_t u = 0;
  int rc = take(r, n, v->at, &u);
  v->type = u > INT64_MAX ? MP_DOUBLE : MP_INT;
  v->i = (int64_t)u;
  v->d = (double)u;
  return rc;
}

static int read_sint(reader *r, mp_val *v, int n) {
  uint64_t u = 0;
  int rc = take(r, n, v->at, &u);
  int shift = 64 - 8 * n;
  v->type = MP_INT;
  v->i = (int64_t)(u << shift) >> shift; /* sign-extend */
  return rc;
}

static int read_double(reader *r, mp_val *v, int n) {
  uint64_t u = 0;
  int rc = take(r, n, v->at, &u);
  v->type = MP_DOUBLE;
  if (n == 4) {
    uint32_t w = (uint32_t)u;
    float f;
    memcpy(&f, &w, sizeof f);
    v->d = f;
  } else {
    memcpy(&v->d, &u, sizeof v->d);
  }
  return rc;
}

/* Sized str/bin/ext/array/map forms: tag ranges 0xc4.. and 0xd9.. */
static int read_sized(reader *r, mp_val *v, int type, int n, int ext) {
  uint64_t len = 0;
  int rc = take(r, n, v->at, &len);
  v->type = type;
  if (!rc && ext)
    rc = need(r, 1, v->at), r->pos += rc ? 0 : 1; /* the ext type byte */
  if (rc)
    return rc;
  if (type == MP_ARRAY || type == MP_MAP) {
    v->n = (uint32_t)len;
    return CPROTON_OK;
  }
  return payload(r, v, len);
}

/* Reads one value's header (scalars whole; str/bin/ext with payload;
 * arrays and maps only their count). */
static int next(reader *r, mp_val *v) {
  memset(v, 0, sizeof *v);
  v->at = r->pos;
  int rc = need(r, 1, r->pos);
  if (rc)
    return rc;
  uint8_t t = r->b[r->pos++];
  if (t <= 0x7f || t >= 0xe0)
    return v->type = MP_INT, v->i = (int8_t)t, v->d = (double)v->i,
           CPROTON_OK;
  if (t >= 0xa0 && t <= 0xbf)
    return v->type = MP_STR, payload(r, v, t & 0x1f);
  if (t >= 0x90 && t <= 0x9f)
    return v->type = MP_ARRAY, v->n = t & 0x0f, CPROTON_OK;
  if (t >= 0x80 && t <= 0x8f)
    return v->type = MP_MAP, v->n = t & 0x0f, CPROTON_OK;
  switch (t) {
  case 0xc0: return v->type = MP_NIL, CPROTON_OK;
  case 0xc2: case 0xc3: return v->type = MP_BOOL, v->i = t == 0xc3, CPROTON_OK;
  case 0xc4: case 0xc5: case 0xc6:
    return read_sized(r, v, MP_BIN, 1 << (t - 0xc4), 0);
  case 0xc7: case 0xc8: case 0xc9:
    return read_sized(r, v, MP_EXT, 1 << (t - 0xc7), 1);
  case 0xca: return read_double(r, v, 4);
  case 0xcb: return read_double(r, v, 8);
  case 0xcc: case 0xcd: case 0xce: case 0xcf:
    return read_uint(r, v, 1 << (t - 0xcc));
  case 0xd0: case 0xd1: case 0xd2: case 0xd3:
    return read_sint(r, v, 1 << (t - 0xd0));
  case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
    v->type = MP_EXT; /* fixext 1..16: type byte + payload */
    return (rc = need(r, 1, v->at)) ? rc
                                    : (r->pos++, payload(r, v, 1u << (t - 0xd4)));
  case 0xd9: case 0xda: case 0xdb:
    return read_sized(r, v, MP_STR, 1 << (t - 0xd9), 0);
  case 0xdc: case 0xdd: return read_sized(r, v, MP_ARRAY, 2 << (t - 0xdc), 0);
  case 0xde: case 0xdf: return read_sized(r, v, MP_MAP, 2 << (t - 0xde), 0);
  default:
    return fail(r, v->at, CPROTON_EPARSE, "0x%02x is not a MessagePack type",
                t);
  }
}

/* Skips the contents of `v` (its header is read). Iterative: a counter of
 * values still to read; each costs at least one byte, so a lying count
 * ends at the end of the input. */
static int skip(reader *r, const mp_val *v) {
  uint64_t pending = v->type == MP_ARRAY ? v->n
                     : v->type == MP_MAP ? 2ull * v->n : 0;
  mp_val x;
  while (pending) {
    int rc = next(r, &x);
    if (rc)
      return rc;
    pending--;
    pending += x.type == MP_ARRAY ? x.n : x.type == MP_MAP ? 2ull * x.n : 0;
  }
  return CPROTON_OK;
}

static int expect(reader *r, mp_val *v, int type, const char *what) {
  int rc = next(r, v);
  if (!rc && v->type != type)
    rc = fail(r, v->at, CPROTON_EPARSE, "%s must be a%s %s, found %s", what,
              type == MP_ARRAY ? "n" : "", type_names[type],
              type_names[v->type]);
  return rc;
}

static int is_key(const mp_val *k, const char *s) {
  size_t n = strlen(s);
  return k->n == n && memcmp(k->s, s, n) == 0;
}

/* ---- nodes ------------------------------------------------------------------ */

static int read_frame(reader *r, uint32_t node) {
  mp_val m, k, v;
  int rc = expect(r, &m, MP_MAP, "\"frame\"");
  int named = 0;
  for (uint32_t i = 0; i < m.n && !rc; i++) {
    if ((rc = expect(r, &k, MP_STR, "a frame key")) || (rc = next(r, &v)))
      break;
    int is_name = is_key(&k, "name"), is_type = is_key(&k, "type");
    if (!is_name && !is_type) {
      rc = skip(r, &v);
      continue;
    }
    if (v.type != MP_STR)
      return fail(r, v.at, CPROTON_EPARSE, "frame.%s must be a string, found %s",
                  is_name ? "name" : "type", type_names[v.type]);
    uint32_t id;
    rc = at(r, v.at, cp_profile_model_intern(r->p, v.s, v.n, &id));
    if (is_name)
      r->p->nodes[node].name = id, named = 1;
    else
      r->p->nodes[node].type = id;
  }
  if (!rc && !named)
    rc = fail(r, m.at, CPROTON_EPARSE, "frame has no \"name\"");
  return rc;
}

/* A vector metric (Proton 3.9): an array of numbers (booleans as 0/1, nil
 * as NaN); `v` is its header. */
static int vector_value(reader *r, const mp_val *v, const mp_val *k,
                        cp_profile_metric *m) {
  m->kind = CPROTON_METRIC_VECTOR;
  m->v.vec.off = (uint32_t)r->p->n_vec;
  m->v.vec.n = v->n;
  for (uint32_t i = 0; i < v->n; i++) {
    mp_val e;
    int rc = next(r, &e);
    if (rc)
      return rc;
    double d;
    switch (e.type) {
    case MP_INT: case MP_BOOL: d = (double)e.i; break;
    case MP_DOUBLE: d = e.d; break;
    case MP_NIL: d = NAN; break;
    default:
      return fail(r, e.at, CPROTON_EPARSE,
                  "vector metric \"%.*s\" must hold numbers, found %s",
                  (int)(k->n < 200 ? k->n : 200), k->s, type_names[e.type]);
    }
    if ((rc = at(r, e.at, cp_profile_model_vec_push(r->p, d))))
      return rc;
  }
  return CPROTON_OK;
}

static int metric_value(reader *r, const mp_val *v, const mp_val *k,
                        cp_profile_metric *m) {
  switch (v->type) {
  case MP_ARRAY:
    return vector_value(r, v, k, m);
  case MP_INT: case MP_BOOL:
    m->kind = CPROTON_METRIC_INT, m->v.i = v->i;
    return CPROTON_OK;
  case MP_DOUBLE:
    m->kind = CPROTON_METRIC_DOUBLE, m->v.d = v->d;
    return CPROTON_OK;
  case MP_STR:
    m->kind = CPROTON_METRIC_STRING;
    return at(r, v->at, cp_profile_model_intern(r->p, v->s, v->n, &m->v.s));
  default:
    return fail(r, v->at, CPROTON_EPARSE,
                "metric \"%.*s\" must be a number, a string or an array of "
                "numbers, found %s",
                (int)(k->n < 200 ? k->n : 200), k->s, type_names[v->type]);
  }
}

static int read_metrics(reader *r, uint32_t node) {
  mp_val m, k, v;
  int rc = expect(r, &m, MP_MAP, "\"metrics\"");
  for (uint32_t i = 0; i < m.n && !rc; i++) {
    if ((rc = expect(r, &k, MP_STR, "a metric name")) || (rc = next(r, &v)))
      break;
    if (v.type == MP_NIL)
      continue;
    cp_profile_metric pm;
    memset(&pm, 0, sizeof pm);
    uint32_t name;
    if ((rc = metric_value(r, &v, &k, &pm)) ||
        (rc = at(r, k.at, cp_profile_model_intern(r->p, k.s, k.n, &name))) ||
        (rc = at(r, k.at, cp_profile_model_key(r->p, name, &pm.key))))
      break;
    rc = at(r, v.at, cp_profile_model_set_metric(r->p, node, &pm));
  }
  return rc;
}

typedef struct frame {
  uint32_t node;
  uint32_t keys_left, children_left;
  uint8_t in_children, seen;
  size_t at;
} frame;

typedef struct stack {
  frame *f;
  size_t n, cap;
} stack;

static int push(reader *r, stack *s, uint32_t parent) {
  mp_val m;
  int rc = expect(r, &m, MP_MAP, "a node");
  if (rc)
    return rc;
  if (s->n >= CPROTON_PROFILE_MAX_DEPTH)
    return fail(r, m.at, CPROTON_ELIMIT, "nodes nested deeper than %u",
                CPROTON_PROFILE_MAX_DEPTH);
  void *f;
  if (s->n == s->cap) {
    if (cp_grow(s->f, &s->cap, s->n + 1, sizeof *s->f, 64, &f))
      return fail(r, m.at, CPROTON_ENOMEM, "out of memory");
    s->f = f;
  }
  uint32_t id;
  rc = at(r, m.at, cp_profile_model_add_node(r->p, parent, &id));
  if (!rc)
    s->f[s->n++] = (frame){.node = id, .keys_left = m.n, .at = m.at};
  return rc;
}

/* One key of the node on top. */
static int node_key(reader *r, frame *f) {
  static const char *const known[] = {"frame", "metrics", "children"};
  mp_val k, v;
  int rc = expect(r, &k, MP_STR, "a node key");
  f->keys_left--;
  for (int i = 0; i < 3 && !rc; i++) {
    if (!is_key(&k, known[i]))
      continue;
    if (f->seen >> i & 1)
      return fail(r, k.at, CPROTON_EPARSE, "duplicate \"%s\" in a node",
                  known[i]);
    f->seen |= (uint8_t)(1u << i);
    if (i == 0)
      return read_frame(r, f->node);
    if (i == 1)
      return read_metrics(r, f->node);
    if ((rc = expect(r, &v, MP_ARRAY, "\"children\"")))
      return rc;
    f->in_children = 1, f->children_left = v.n;
    return CPROTON_OK;
  }
  return rc ? rc : (rc = next(r, &v)) ? rc : skip(r, &v);
}

static int read_tree(reader *r) {
  stack s = {0};
  int rc = push(r, &s, CPROTON_PROFILE_NO_NODE);
  while (!rc && s.n) {
    frame *f = &s.f[s.n - 1];
    if (f->in_children && f->children_left) {
      f->children_left--;
      rc = push(r, &s, f->node);
    } else if (f->in_children) {
      f->in_children = 0;
    } else if (f->keys_left) {
      rc = node_key(r, f);
    } else if (!(f->seen & 1)) {
      rc = fail(r, f->at, CPROTON_EPARSE, "node has no \"frame\"");
    } else {
      s.n--;
    }
  }
  free(s.f);
  return rc;
}

/* ---- device info -------------------------------------------------------------- */

static int dev_field(reader *r, cp_profile_device *d, const mp_val *k) {
  static const char *const names[] = {"clock_rate", "memory_clock_rate",
                                      "bus_width", "num_sms"};
  double *slots[] = {&d->clock_rate, &d->memory_clock_rate, &d->bus_width,
                     &d->num_sms};
  mp_val v;
  int rc = next(r, &v);
  if (rc)
    return rc;
  if (is_key(k, "arch")) {
    char tmp[32];
    if (v.type == MP_INT)
      v.n = (uint32_t)snprintf(tmp, sizeof tmp, "%lld", (long long)v.i),
      v.s = tmp;
    else if (v.type != MP_STR)
      return fail(r, v.at, CPROTON_EPARSE, "device arch must be a string");
    return at(r, v.at, cp_profile_model_intern(r->p, v.s, v.n, &d->arch));
  }
  for (int i = 0; i < 4; i++) {
    if (!is_key(k, names[i]))
      continue;
    double x = v.type == MP_INT ? (double)v.i : v.d;
    if ((v.type != MP_INT && v.type != MP_DOUBLE) || !(x >= 0) || x > 1e15)
      return fail(r, v.at, CPROTON_EPARSE,
                  "device %s must be a number in [0, 1e15]", names[i]);
    *slots[i] = x;
    return CPROTON_OK;
  }
  return skip(r, &v);
}

static int read_device(reader *r, uint32_t type, const mp_val *index) {
  cp_profile_device d;
  memset(&d, 0, sizeof d);
  d.type = type;
  d.arch = r->p->empty_id;
  mp_val m, k;
  int rc = at(r, index->at,
              cp_profile_model_intern(r->p, index->s, index->n, &d.index));
  if (!rc)
    rc = expect(r, &m, MP_MAP, "a device");
  for (uint32_t i = 0; i < m.n && !rc; i++)
    if (!(rc = expect(r, &k, MP_STR, "a device field")))
      rc = dev_field(r, &d, &k);
  return rc ? rc : at(r, m.at, cp_profile_model_add_device(r->p, &d));
}

static int read_devices(reader *r) {
  mp_val types, t, ids, id;
  int rc = expect(r, &types, MP_MAP, "the device info");
  for (uint32_t i = 0; i < types.n && !rc; i++) {
    uint32_t type;
    if ((rc = expect(r, &t, MP_STR, "a device type")) ||
        (rc = at(r, t.at, cp_profile_model_intern(r->p, t.s, t.n, &type))) ||
        (rc = expect(r, &ids, MP_MAP, "the devices of a type")))
      break;
    for (uint32_t j = 0; j < ids.n && !rc; j++)
      if (!(rc = expect(r, &id, MP_STR, "a device index")))
        rc = read_device(r, type, &id);
  }
  return rc;
}

/* ---- document ------------------------------------------------------------------ */

int cp_hatchet_read_msgpack_sniff(const void *buf, size_t len) {
  const uint8_t *b = buf;
  return len > 0 && (b[0] == 0x91 || b[0] == 0x92);
}

int cp_hatchet_read_msgpack(const void *buf, size_t len, cproton_profile *p) {
  reader r = {.b = buf, .len = len, .p = p};
  mp_val top;
  int rc = expect(&r, &top, MP_ARRAY, "a Hatchet document");
  if (!rc && (top.n < 1 || top.n > 2))
    rc = fail(&r, 0, CPROTON_EPARSE,
              "a Hatchet document is [root, device_info], found an array of "
              "%u", top.n);
  if (!rc)
    rc = read_tree(&r);
  if (!rc && top.n == 2)
    rc = read_devices(&r);
  if (!rc && r.pos != r.len)
    rc = fail(&r, r.pos, CPROTON_EPARSE, "extra data after the document");
  return rc ? rc : at(&r, r.pos, cp_profile_model_finish(p));
}
