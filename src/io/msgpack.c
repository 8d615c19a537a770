/* io/msgpack.c -- MessagePack encoding of scalars and container headers
 * (format table in io/msgpack.h).
 *
 * Invariant: every value takes the smallest encoding the specification
 * allows for it, so the same values always give the same bytes. Not a hot
 * path. Called by io/hatchet_msgpack.c. */
#include <string.h>

#include "io/msgpack.h"

/* Writes `tag` then the low `n` bytes of `v`, most significant first. */
static void be(cp_sink *s, uint8_t tag, uint64_t v, int n) {
  uint8_t b[9];
  b[0] = tag;
  for (int i = 0; i < n; i++)
    b[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  cp_sink_write(s, b, (size_t)n + 1);
}

void cp_msgpack_uint(cp_sink *s, uint64_t v) {
  if (v <= 0x7f) {
    uint8_t b = (uint8_t)v;
    cp_sink_write(s, &b, 1);
  } else if (v <= 0xff) {
    be(s, 0xcc, v, 1);
  } else if (v <= 0xffff) {
    be(s, 0xcd, v, 2);
  } else if (v <= 0xffffffffu) {
    be(s, 0xce, v, 4);
  } else {
    be(s, 0xcf, v, 8);
  }
}

void cp_msgpack_int(cp_sink *s, int64_t v) {
  if (v >= 0) {
    cp_msgpack_uint(s, (uint64_t)v);
  } else if (v >= -32) {
    uint8_t b = (uint8_t)(0xe0 | (v + 32));
    cp_sink_write(s, &b, 1);
  } else if (v >= INT8_MIN) {
    be(s, 0xd0, (uint64_t)v, 1);
  } else if (v >= INT16_MIN) {
    be(s, 0xd1, (uint64_t)v, 2);
  } else if (v >= INT32_MIN) {
    be(s, 0xd2, (uint64_t)v, 4);
  } else {
    be(s, 0xd3, (uint64_t)v, 8);
  }
}

void cp_msgpack_double(cp_sink *s, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  be(s, 0xcb, bits, 8);
}

void cp_msgpack_str(cp_sink *s, const char *str, size_t len) {
  if (len <= 31) {
    uint8_t b = (uint8_t)(0xa0 | len);
    cp_sink_write(s, &b, 1);
  } else if (len <= 0xff) {
    be(s, 0xd9, len, 1);
  } else if (len <= 0xffff) {
    be(s, 0xda, len, 2);
  } else {
    be(s, 0xdb, len, 4);
  }
  cp_sink_write(s, str, len);
}

void cp_msgpack_cstr(cp_sink *s, const char *str) {
  cp_msgpack_str(s, str, strlen(str));
}

void cp_msgpack_array(cp_sink *s, uint32_t n) {
  if (n <= 15) {
    uint8_t b = (uint8_t)(0x90 | n);
    cp_sink_write(s, &b, 1);
  } else if (n <= 0xffff) {
    be(s, 0xdc, n, 2);
  } else {
    be(s, 0xdd, n, 4);
  }
}

void cp_msgpack_map(cp_sink *s, uint32_t n) {
  if (n <= 15) {
    uint8_t b = (uint8_t)(0x80 | n);
    cp_sink_write(s, &b, 1);
  } else if (n <= 0xffff) {
    be(s, 0xde, n, 2);
  } else {
    be(s, 0xdf, n, 4);
  }
}
