/* io_perfetto_test.c -- the Perfetto writer's framing, as seen through the
 * wire-format reader (tests/python/test_perfetto.py decodes the same traces
 * with Perfetto's own classes), and the protobuf encoder/reader. */
#include <criterion/criterion.h>
#include <string.h>

#include "io/pb.h"
#include "io/perfetto.h"
#include "trace_sample.h"

static char *write_sample(cpt_sample_shape shape, cp_perfetto_stats *st,
                          size_t *size) {
  cp_trace *t = cp_trace_new();
  cpt_trace_sample(t, &shape);
  cp_sink *s;
  cr_assert_eq(cp_sink_memory(&s), 0);
  cp_perfetto_info info = {.pid = 7, .rank = -1, .name = "t"};
  cr_assert_eq(cp_perfetto_write(s, t, &info, st), 0);
  char *buf;
  cr_assert_eq(cp_sink_close(s, 0, &buf, size), 0);
  cp_trace_free(t);
  return buf;
}

/* Field `number` of a message: its first occurrence, 1 if found. */
static int field(const cp_pb_field *msg, uint32_t number, cp_pb_field *out) {
  size_t pos = 0;
  char err[128];
  while (cp_pb_next(msg->data, msg->len, &pos, 0, out, err, sizeof err) == 1)
    if (out->number == number)
      return 1;
  return 0;
}

Test(io_perfetto, packets_tracks_and_balanced_slices) {
  cp_perfetto_stats st;
  size_t size, pos = 0;
  char *buf = write_sample((cpt_sample_shape){4, 4, 16}, &st, &size);
  cr_assert_eq(st.bytes, size);
  cr_assert_eq(st.region_events, 2 * 4 * 4 * 16);
  cr_assert_eq(st.replays, 1);
  cp_pb_field pkt, sub, type;
  char err[128];
  size_t packets = 0, tracks = 0, begins = 0, ends = 0, counters = 0;
  int rc;
  while ((rc = cp_pb_next((unsigned char *)buf, size, &pos, 0, &pkt, err,
                          sizeof err)) == 1) {
    cr_assert_eq(pkt.number, 1, "a Trace holds packets only");
    cr_assert_eq(pkt.type, CP_PB_LEN);
    packets++;
    tracks += field(&pkt, 60, &sub);
    if (field(&pkt, 11, &sub) && field(&sub, 9, &type)) {
      begins += type.value == 1;
      ends += type.value == 2;
      counters += type.value == 4 && field(&sub, 44, &type) &&
                  type.type == CP_PB_FIXED64;
    }
  }
  cr_assert_eq(rc, 0, "%s", err);
  cr_assert_eq(tracks, st.tracks);
  cr_assert_eq(begins, ends);
  cr_assert_eq(st.counters, CPT_SAMPLE_COUNTERS);
  cr_assert_eq(counters, st.counters, "TYPE_COUNTER with a double value");
  cr_assert_eq(begins, st.events - st.counters + st.replays);
  cr_assert_leq(st.region_bytes, 32 * st.region_events, "%zu bytes",
                st.region_bytes);
  free(buf);
}

Test(io_perfetto, empty_trace_is_a_valid_head) {
  cp_trace *t = cp_trace_new();
  cp_sink *s;
  cr_assert_eq(cp_sink_memory(&s), 0);
  cp_perfetto_stats st;
  cr_assert_eq(cp_perfetto_write(s, t, NULL, &st), 0);
  char *buf;
  size_t size;
  cr_assert_eq(cp_sink_close(s, 0, &buf, &size), 0);
  cr_assert_eq(st.events, 0);
  cr_assert_eq(st.tracks, 1, "the process track");
  cr_assert_gt(size, 20);
  free(buf);
  cp_trace_free(t);
}

Test(pb, encoder_round_trip_and_nested_lengths) {
  cp_pb p = {0};
  char big[300];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  cp_pb_varint(&p, 1, 300);
  cp_pb_begin(&p, 2);
  cp_pb_string(&p, 3, big); /* a body over 127 bytes: 2-byte length */
  cp_pb_fixed64(&p, 4, 0x0102030405060708ull);
  cp_pb_end(&p);
  cr_assert_not(p.oom);
  size_t pos = 0;
  cp_pb_field f, g;
  char err[128];
  cr_assert_eq(cp_pb_next(p.b, p.n, &pos, 0, &f, err, sizeof err), 1);
  cr_assert_eq(f.number, 1);
  cr_assert_eq(f.value, 300);
  cr_assert_eq(cp_pb_next(p.b, p.n, &pos, 0, &f, err, sizeof err), 1);
  cr_assert_eq(f.len, 2 + 1 + 299 + 1 + 8);
  cr_assert(field(&f, 4, &g));
  cr_assert_eq(g.value, 0x0102030405060708ull);
  cr_assert_eq(cp_pb_next(p.b, p.n, &pos, 0, &f, err, sizeof err), 0);
  cp_pb_free(&p);
}

Test(pb, reader_names_the_offset_of_bad_input) {
  const unsigned char truncated[] = {0x0a, 0x05, 0x01};
  const unsigned char overlong[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  const unsigned char group[] = {0x08, 0x01, 0x0b};
  size_t pos = 0;
  cp_pb_field f;
  char err[128];
  cr_assert_eq(cp_pb_next(truncated, 3, &pos, 100, &f, err, sizeof err), -1);
  cr_assert_str_eq(err, "length past the end of its message at byte 100");
  pos = 0;
  cr_assert_eq(cp_pb_next(overlong, sizeof overlong, &pos, 0, &f, err,
                          sizeof err), -1);
  cr_assert(strstr(err, "varint"));
  pos = 0;
  cr_assert_eq(cp_pb_next(group, 3, &pos, 0, &f, err, sizeof err), 1);
  cr_assert_eq(cp_pb_next(group, 3, &pos, 0, &f, err, sizeof err), -1);
  cr_assert_str_eq(err, "unsupported wire type (groups?) at byte 2");
}
