/* io/pb.c -- protobuf wire-format encoding and a checked field reader.
 *
 * Invariant: the encoder never writes past `cap` (it grows or sets `oom`);
 * the reader never reads past the size it is given and treats every byte as
 * untrusted. Nested lengths are written when a message closes: the body is
 * moved right by the length's varint size (bodies are small: one packet).
 * Not a hot path (finalize, the merge tool). */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/grow.h"
#include "io/pb.h"

void cp_pb_free(cp_pb *p) {
  free(p->b);
  memset(p, 0, sizeof *p);
}

void cp_pb_reset(cp_pb *p) {
  p->n = 0;
  p->depth = 0;
}

static int reserve(cp_pb *p, size_t more) {
  if (p->oom)
    return 0;
  void *b;
  if (more > SIZE_MAX - p->n || cp_grow(p->b, &p->cap, p->n + more, 1, 256, &b)) {
    p->oom = 1;
    return 0;
  }
  p->b = b;
  return 1;
}

size_t cp_pb_put_varint(unsigned char *out, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  out[n++] = (unsigned char)v;
  return n;
}

size_t cp_pb_varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80)
    v >>= 7, n++;
  return n;
}

static void key(cp_pb *p, uint32_t field, int type) {
  if (reserve(p, 10))
    p->n += cp_pb_put_varint(p->b + p->n, (uint64_t)field << 3 | (unsigned)type);
  CP_ASSERT(p->oom || p->n <= p->cap);
}

void cp_pb_varint(cp_pb *p, uint32_t field, uint64_t v) {
  key(p, field, CP_PB_VARINT);
  if (reserve(p, 10))
    p->n += cp_pb_put_varint(p->b + p->n, v);
}

void cp_pb_fixed64(cp_pb *p, uint32_t field, uint64_t v) {
  key(p, field, CP_PB_FIXED64);
  if (reserve(p, 8))
    for (int i = 0; i < 8; i++)
      p->b[p->n++] = (unsigned char)(v >> (8 * i));
}

void cp_pb_bytes(cp_pb *p, uint32_t field, const void *data, size_t n) {
  key(p, field, CP_PB_LEN);
  if (reserve(p, 10 + n)) {
    p->n += cp_pb_put_varint(p->b + p->n, n);
    memcpy(p->b + p->n, data, n);
    p->n += n;
  }
  CP_ASSERT(p->oom || p->n <= p->cap);
}

void cp_pb_raw(cp_pb *p, const void *data, size_t n) {
  if (reserve(p, n)) {
    memcpy(p->b + p->n, data, n);
    p->n += n;
  }
}

void cp_pb_string(cp_pb *p, uint32_t field, const char *s) {
  cp_pb_bytes(p, field, s, strlen(s));
}

void cp_pb_begin(cp_pb *p, uint32_t field) {
  key(p, field, CP_PB_LEN);
  if (p->depth == CP_PB_MAX_NEST) { /* a writer bug; refuse, don't corrupt */
    p->oom = 1;
    return;
  }
  p->open[p->depth++] = p->n;
}

void cp_pb_end(cp_pb *p) {
  if (p->depth == 0 || p->oom)
    return;
  size_t start = p->open[--p->depth], len = p->n - start;
  size_t k = cp_pb_varint_size(len);
  if (!reserve(p, k))
    return;
  memmove(p->b + start + k, p->b + start, len);
  cp_pb_put_varint(p->b + start, len);
  p->n += k;
}

/* Reads a varint at *pos; 0 on success. */
static int read_varint(const unsigned char *buf, size_t size, size_t *pos,
                       uint64_t *out) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (*pos >= size)
      return -1;
    unsigned char c = buf[(*pos)++];
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

static int fail(char *err, size_t n, const char *what, size_t at) {
  snprintf(err, n, "%s at byte %zu", what, at);
  return -1;
}

int cp_pb_next(const unsigned char *buf, size_t size, size_t *pos,
               size_t base, cp_pb_field *f, char *err, size_t err_size) {
  if (*pos >= size)
    return 0;
  size_t at = *pos;
  uint64_t k;
  if (read_varint(buf, size, pos, &k))
    return fail(err, err_size, "truncated or overlong field key", base + at);
  f->number = (uint32_t)(k >> 3);
  f->type = (int)(k & 7);
  f->data = NULL;
  f->len = 0;
  if (k >> 3 == 0 || k >> 3 > 0x1fffffff)
    return fail(err, err_size, "invalid field number", base + at);
  switch (f->type) {
  case CP_PB_VARINT:
    if (read_varint(buf, size, pos, &f->value))
      return fail(err, err_size, "truncated varint", base + at);
    return 1;
  case CP_PB_FIXED64:
  case CP_PB_FIXED32: {
    size_t n = f->type == CP_PB_FIXED64 ? 8 : 4;
    if (size - *pos < n)
      return fail(err, err_size, "truncated fixed-width field", base + at);
    f->value = 0;
    for (size_t i = 0; i < n; i++)
      f->value |= (uint64_t)buf[*pos + i] << (8 * i);
    *pos += n;
    return 1;
  }
  case CP_PB_LEN:
    if (read_varint(buf, size, pos, &f->value) || f->value > size - *pos)
      return fail(err, err_size, "length past the end of its message",
                  base + at);
    f->data = buf + *pos;
    f->len = (size_t)f->value;
    *pos += f->len;
    return 1;
  default:
    return fail(err, err_size, "unsupported wire type (groups?)", base + at);
  }
}
