/* io_msgpack_test.c -- Hatchet MessagePack: the encoder's bytes at every
 * size boundary, a session written in Proton 3.9's exact layout, the reader
 * giving the same profile as the JSON reader, and bad input refused with
 * the byte offset. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "core/device.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "io/msgpack.h"
#include "io/sink.h"
#include "testutil.h"

/* The bytes `fn` writes into a memory sink, compared with `want`. */
#define ENCODES(call, ...)                                                     \
  do {                                                                         \
    static const unsigned char want[] = {__VA_ARGS__};                        \
    cp_sink *s;                                                                \
    cr_assert_eq(cp_sink_memory(&s), CPROTON_OK);                              \
    call;                                                                      \
    char *buf;                                                                 \
    size_t n;                                                                  \
    cr_assert_eq(cp_sink_close(s, 0, &buf, &n), CPROTON_OK);                   \
    cr_assert_eq(n, sizeof want, "%s: %zu bytes", #call, n);                   \
    cr_assert_arr_eq(buf, want, sizeof want, "%s", #call);                     \
    free(buf);                                                                 \
  } while (0)

Test(io_msgpack, integers_take_their_shortest_form) {
  ENCODES(cp_msgpack_uint(s, 0x7f), 0x7f);
  ENCODES(cp_msgpack_uint(s, 0x80), 0xcc, 0x80);
  ENCODES(cp_msgpack_uint(s, 0x100), 0xcd, 0x01, 0x00);
  ENCODES(cp_msgpack_uint(s, 0x10000), 0xce, 0x00, 0x01, 0x00, 0x00);
  ENCODES(cp_msgpack_uint(s, 0x100000000ull), 0xcf, 0, 0, 0, 1, 0, 0, 0, 0);
  ENCODES(cp_msgpack_int(s, 5), 0x05);
  ENCODES(cp_msgpack_int(s, -1), 0xff);
  ENCODES(cp_msgpack_int(s, -32), 0xe0);
  ENCODES(cp_msgpack_int(s, -33), 0xd0, 0xdf);
  ENCODES(cp_msgpack_int(s, -129), 0xd1, 0xff, 0x7f);
  ENCODES(cp_msgpack_int(s, -32769), 0xd2, 0xff, 0xff, 0x7f, 0xff);
  ENCODES(cp_msgpack_int(s, INT64_MIN), 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0);
}

Test(io_msgpack, floats_strings_and_headers) {
  ENCODES(cp_msgpack_double(s, 1.0), 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);
  ENCODES(cp_msgpack_cstr(s, "ab"), 0xa2, 'a', 'b');
  ENCODES(cp_msgpack_array(s, 15), 0x9f);
  ENCODES(cp_msgpack_array(s, 16), 0xdc, 0x00, 0x10);
  ENCODES(cp_msgpack_map(s, 0x10000), 0xdf, 0x00, 0x01, 0x00, 0x00);
  char s32[33];
  memset(s32, 'x', 32), s32[32] = '\0';
  cp_sink *s;
  cr_assert_eq(cp_sink_memory(&s), CPROTON_OK);
  cp_msgpack_cstr(s, s32);
  char *buf;
  size_t n;
  cr_assert_eq(cp_sink_close(s, 0, &buf, &n), CPROTON_OK);
  cr_assert_eq(n, 34);
  cr_assert_eq((unsigned char)buf[0], 0xd9, "str 8 from 32 bytes on");
  cr_assert_eq(buf[1], 32);
  free(buf);
}

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
}

/* One session, fake kernels: ROOT -> a -> k (2 launches, 300 ns). */
static char *render(const char *format, size_t *size_out) {
  int sid = cpt_start_session(cpt_tmp_path("mp"), "fake", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  cproton_scope_enter("a", NULL);
  cp_fake_launch("k", 100, 0, 7);
  cp_fake_launch("k", 200, 0, 7);
  cproton_metric_add_double(0, "flops", 2.5);
  cproton_scope_exit("a");
  char *buf = NULL;
  cr_assert_eq(cproton_session_data(sid, 0, format, &buf, size_out),
               CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  return buf;
}

#define S(lit) lit, sizeof lit - 1
/* Proton 3.9's frame header for a fixstr name, then "metrics". */
#define HEADER(len, ...)                                                       \
  0x83, 0xa5, 'f', 'r', 'a', 'm', 'e', 0x82, 0xa4, 'n', 'a', 'm', 'e',         \
      0xa0 | len, __VA_ARGS__, 0xa4, 't', 'y', 'p', 'e', 0xa8, 'f', 'u', 'n',  \
      'c', 't', 'i', 'o', 'n', 0xa7, 'm', 'e', 't', 'r', 'i', 'c', 's'
#define KEY_TIME 0xa9, 't', 'i', 'm', 'e', ' ', '(', 'n', 's', ')'
#define KEY_COUNT 0xa5, 'c', 'o', 'u', 'n', 't'
#define KEY_CHILDREN 0xa8, 'c', 'h', 'i', 'l', 'd', 'r', 'e', 'n'

Test(io_msgpack, proton_39_layout_byte_for_byte, .init = reset) {
  cp_fake_add_device(0);
  size_t n;
  unsigned char *got = (unsigned char *)render("hatchet_msgpack", &n);
  static const unsigned char want[] = {
      0x92,
      HEADER(4, 'R', 'O', 'O', 'T'), 0x82, KEY_TIME, 0x00, KEY_COUNT, 0x00,
      KEY_CHILDREN, 0x91,
      HEADER(1, 'a'), 0x81, 0xa5, 'f', 'l', 'o', 'p', 's', 0xcb, 0x40, 0x04,
      0, 0, 0, 0, 0, 0, KEY_CHILDREN, 0x91,
      HEADER(1, 'k'), 0x84, KEY_TIME, 0xcd, 0x01, 0x2c, KEY_COUNT, 0x02,
      0xa9, 'd', 'e', 'v', 'i', 'c', 'e', '_', 'i', 'd', 0xa1, '0',
      0xab, 'd', 'e', 'v', 'i', 'c', 'e', '_', 't', 'y', 'p', 'e', 0xa4, 'C',
      'U', 'D', 'A', KEY_CHILDREN, 0x90,
      /* devices */
      0x81, 0xa4, 'C', 'U', 'D', 'A', 0x81, 0xa1, '0', 0x85,
      0xaa, 'c', 'l', 'o', 'c', 'k', '_', 'r', 'a', 't', 'e', 0xce, 0x00,
      0x1e, 0x36, 0x60};
  cr_assert_geq(n, sizeof want);
  cr_assert_arr_eq(got, want, sizeof want);
  free(got);
}

/* Both renderings of one session open to the same profile. */
Test(io_msgpack, reader_matches_the_json_reader, .init = reset) {
  cp_fake_add_device(0);
  size_t nj, nm;
  char *json = render("hatchet", &nj);
  char *mp = render("hatchet_msgpack", &nm);
  cproton_profile *a, *b;
  cr_assert_eq(cproton_profile_parse(json, nj, "j", &a), CPROTON_OK);
  cr_assert_eq(cproton_profile_parse(mp, nm, "m", &b), CPROTON_OK, "%s",
               cproton_last_error());
  uint32_t count = cproton_profile_node_count(a);
  cr_assert_eq(cproton_profile_node_count(b), count);
  for (uint32_t i = 0; i < count; i++) {
    cr_assert_str_eq(cproton_profile_node_name(a, i),
                     cproton_profile_node_name(b, i));
    cr_assert_eq(cproton_profile_node_parent(a, i),
                 cproton_profile_node_parent(b, i));
    /* ROOT differs on purpose: the JSON (Proton 3.6) has a 0 for every
     * inclusive metric, MessagePack (3.9) only the kernel ones. Each
     * metric of the MessagePack file is in the JSON one, alike. */
    uint32_t nmet = cproton_profile_node_metric_count(b, i);
    uint32_t extra = i == 0 ? 1 : 0; /* "flops": 0 */
    cr_assert_eq(cproton_profile_node_metric_count(a, i), nmet + extra);
    for (uint32_t k = 0; k < nmet; k++) {
      uint32_t key;
      cproton_metric_value va, vb;
      cproton_profile_node_metric_at(b, i, k, &key, &vb);
      const char *name = cproton_profile_metric_name(b, key);
      cr_assert_eq(cproton_profile_node_metric_by_name(a, i, name, &va),
                   CPROTON_OK, "%s", name);
      cr_assert_eq(va.kind, vb.kind, "%s", name);
      if (va.kind == CPROTON_METRIC_STRING)
        cr_assert_str_eq(va.s, vb.s);
      else
        cr_assert_eq(va.d, vb.d, "%s", name);
    }
  }
  cproton_device_info da, db;
  cr_assert_eq(cproton_profile_device_count(b), 1);
  cproton_profile_device(a, 0, &da), cproton_profile_device(b, 0, &db);
  cr_assert_str_eq(da.arch, db.arch);
  cr_assert_eq(da.num_sms, db.num_sms);
  cr_assert_eq(da.clock_rate_khz, db.clock_rate_khz);
  cproton_profile_close(a), cproton_profile_close(b);
  free(json), free(mp);
}

Test(io_msgpack, every_truncation_is_refused_with_its_offset, .init = reset) {
  size_t n;
  char *mp = render("hatchet_msgpack", &n);
  for (size_t len = 1; len < n; len++) {
    cproton_profile *p = NULL;
    cr_assert_eq(cproton_profile_parse(mp, len, "t.hatchet_msgpack", &p),
                 CPROTON_EPARSE, "prefix of %zu bytes", len);
    cr_assert(strstr(cproton_last_error(), "t.hatchet_msgpack: byte "),
              "%s", cproton_last_error());
  }
  char tail[64];
  snprintf(tail, sizeof tail, "the file ends at byte %zu", n - 1);
  cproton_profile *p = NULL;
  cproton_profile_parse(mp, n - 1, "t", &p);
  cr_assert(strstr(cproton_last_error(), "truncated"), "%s",
            cproton_last_error());
  cr_assert(strstr(cproton_last_error(), tail), "%s", cproton_last_error());
  free(mp);
}

Test(io_msgpack, corrupt_bytes_name_their_offset) {
  static const char never_used[] = "\x92\x83\xa5" "frame" "\xc1";
  cproton_profile *p = NULL;
  cr_assert_eq(cproton_profile_parse(S(never_used), "c", &p), CPROTON_EPARSE);
  cr_assert_str_eq(cproton_last_error(),
                   "c: byte 8: 0xc1 is not a MessagePack type");
  static const char not_a_node[] = "\x92\x93";
  cr_assert_eq(cproton_profile_parse(S(not_a_node), "c", &p), CPROTON_EPARSE);
  cr_assert_str_eq(cproton_last_error(),
                   "c: byte 1: a node must be a map, found array");
  static const char huge_string[] = "\x92\x81\xdb\xff\xff\xff\xff";
  cr_assert_eq(cproton_profile_parse(S(huge_string), "c", &p),
               CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "c: byte 2: truncated"), "%s",
            cproton_last_error());
  static const char map_metric[] =
      "\x91\x82\xa5" "frame" "\x81\xa4" "name" "\xa1x"
      "\xa7" "metrics" "\x81\xa1m\x80";
  cr_assert_eq(cproton_profile_parse(S(map_metric), "c", &p),
               CPROTON_EPARSE);
  cr_assert_str_eq(cproton_last_error(),
                   "c: byte 27: metric \"m\" must be a number, a string or "
                   "an array of numbers, found map");
  static const char str_in_vector[] =
      "\x91\x82\xa5" "frame" "\x81\xa4" "name" "\xa1x"
      "\xa7" "metrics" "\x81\xa1m\x92\x01\xa1s";
  cr_assert_eq(cproton_profile_parse(S(str_in_vector), "c", &p),
               CPROTON_EPARSE);
  cr_assert_str_eq(cproton_last_error(),
                   "c: byte 29: vector metric \"m\" must hold numbers, "
                   "found string");
}

Test(io_msgpack, vector_metrics_are_read) {
  /* Proton 3.9's layout: {"v": [1, -2], "d": [0.5, nil], "e": []} */
  static const char doc[] =
      "\x91\x82\xa5" "frame" "\x81\xa4" "name" "\xa1x"
      "\xa7" "metrics" "\x83\xa1v\x92\x01\xfe"
      "\xa1" "d" "\x92\xcb\x3f\xe0\0\0\0\0\0\0\xc0" "\xa1" "e" "\x90";
  cproton_profile *p;
  cr_assert_eq(cproton_profile_parse(S(doc), "c", &p), CPROTON_OK, "%s",
               cproton_last_error());
  cproton_metric_value v;
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "v", &v), CPROTON_OK);
  cr_assert_eq(v.kind, CPROTON_METRIC_VECTOR);
  cr_assert_eq(v.n, 2);
  cr_assert_eq(v.v[0], 1.0);
  cr_assert_eq(v.v[1], -2.0);
  cr_assert(isnan(v.d));
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "d", &v), CPROTON_OK);
  cr_assert_eq(v.n, 2);
  cr_assert_eq(v.v[0], 0.5);
  cr_assert(isnan(v.v[1]));
  cr_assert_eq(cproton_profile_node_metric_by_name(p, 0, "e", &v), CPROTON_OK);
  cr_assert_eq(v.kind, CPROTON_METRIC_VECTOR);
  cr_assert_eq(v.n, 0);
  cproton_profile_close(p);
}

Test(io_msgpack, files_open_by_content, .init = reset) {
  size_t n;
  char *mp = render("hatchet_msgpack", &n);
  const char *path = cpt_tmp_path("f.hatchet_msgpack");
  FILE *f = fopen(path, "wb");
  fwrite(mp, 1, n, f);
  fclose(f);
  cproton_profile *p;
  cr_assert_eq(cproton_profile_open(path, &p), CPROTON_OK, "%s",
               cproton_last_error());
  cr_assert_str_eq(cproton_profile_node_name(p, 1), "a");
  cproton_profile_close(p);
  free(mp);
}

/* A profile read from a pipe (`cproton-viewer /dev/stdin`, `<(...)`) has no
 * size and no pread: its format still comes from its first byte, for
 * MessagePack and for JSON (issue 24: MessagePack from a pipe was taken for
 * JSON). The bytes fit the pipe's buffer, so no writer process is needed. */
static cproton_profile *open_through_pipe(const char *bytes, size_t n) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  cr_assert_eq(write(fds[1], bytes, n), (ssize_t)n);
  close(fds[1]);
  char path[64];
  snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
  cproton_profile *p = NULL;
  cr_assert_eq(cproton_profile_open(path, &p), CPROTON_OK, "%s",
               cproton_last_error());
  close(fds[0]);
  return p;
}

Test(io_msgpack, pipes_open_by_content, .init = reset) {
  const char *kinds[] = {"hatchet_msgpack", "hatchet"};
  for (int k = 0; k < 2; k++) {
    size_t n;
    char *bytes = render(kinds[k], &n);
    cr_assert_lt(n, 60000, "the test writes the whole profile into the pipe");
    cproton_profile *p = open_through_pipe(bytes, n);
    cr_assert_str_eq(cproton_profile_node_name(p, 1), "a", "%s", kinds[k]);
    cproton_profile_close(p);
    free(bytes);
  }
}
