/* backend_decode_test.c -- the profile-buffer decoder on synthetic buffers
 * written the way the lowered PTX writes them: pairing and nesting,
 * circular wrap-around, counter wrap, truncation, bad headers, unpaired
 * records, and a layout taken from the pass itself. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/instrumentation/decode.h"
#include "backend/instrumentation/reduce.h"
#include "cproton/cproton.h"
#include "instrument/layout.h"

static const char *const names[] = {"a", "b", "c"};
static const int32_t parents[] = {-1, 0, 0};

static cproton_buffer_layout layout(uint32_t units, uint32_t seg, uint32_t counter) {
  cproton_buffer_layout l;
  memset(&l, 0, sizeof l);
  l.n_units = units;
  l.segment_bytes = seg;
  l.header_bytes = cp_layout_header_bytes(units);
  l.per_cta_bytes = l.header_bytes + units * seg;
  l.counter = counter;
  l.n_scopes = 3;
  l.scope_names = names;
  l.scope_parents = parents;
  for (uint32_t u = 0; u < units; u++)
    l.unit_warp[u] = (uint8_t)u;
  return l;
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

static void header(unsigned char *buf, const cproton_buffer_layout *l, uint32_t cta, uint32_t active) {
  unsigned char *p = buf + (size_t)cta * l->per_cta_bytes;
  put32(p + CP_HDR_MAGIC, CP_LAYOUT_MAGIC);
  p[CP_HDR_VERSION] = CP_LAYOUT_VERSION;
  p[CP_HDR_COUNTER] = (unsigned char)l->counter;
  put32(p + CP_HDR_CTA, cta);
  put32(p + CP_HDR_SM, 100 + cta);
  put64(p + CP_HDR_START_TIME, 1000000 + cta);
  put64(p + CP_HDR_START_CTR, 5000);
  put64(p + CP_HDR_FIN_TIME, 2000000);
  put64(p + CP_HDR_END_TIME, 2000100);
  put32(p + CP_HDR_N_UNITS, l->n_units);
  put32(p + CP_HDR_SEG_BYTES, l->segment_bytes);
  put32(p + CP_HDR_N_ACTIVE, active);
}

/* Appends record k of unit u: what one lowered record op does. */
static void record(unsigned char *buf, const cproton_buffer_layout *l, uint32_t cta, uint32_t u, uint32_t scope,
                   int is_end, uint64_t ctr) {
  unsigned char *p = buf + (size_t)cta * l->per_cta_bytes;
  uint32_t k = p[CP_HDR_COUNTS + 4 * u] | (uint32_t)p[CP_HDR_COUNTS + 4 * u + 1] << 8;
  uint32_t cap = l->segment_bytes / 8;
  uint64_t bits = l->counter == 0 ? 0xffffffffull : 0xffffffffffffull;
  uint64_t v = ((uint64_t)cp_layout_tag(scope, is_end) << 48) | (ctr & bits);
  put64(p + l->header_bytes + u * l->segment_bytes + (k % cap) * 8, v);
  put32(p + CP_HDR_COUNTS + 4 * u, k + 1);
}

static cproton_decoded *decode(const unsigned char *buf, size_t n, const cproton_buffer_layout *l, unsigned f) {
  cproton_decoded *d = NULL;
  cr_assert_eq(cproton_buffer_decode(buf, n, l, f, &d), CPROTON_OK, "%s", cproton_last_error());
  return d;
}

Test(backend_decode, pairs_nested_scopes) {
  cproton_buffer_layout l = layout(2, 256, CPROTON_COUNTER_CLOCK64);
  unsigned char *buf = calloc(2, l.per_cta_bytes);
  for (uint32_t c = 0; c < 2; c++) {
    header(buf, &l, c, 2);
    for (uint32_t u = 0; u < 2; u++) {
      record(buf, &l, c, u, 0, 0, 5000 + 10);
      record(buf, &l, c, u, 1, 0, 5000 + 20);
      record(buf, &l, c, u, 1, 1, 5000 + 50);
      record(buf, &l, c, u, 0, 1, 5000 + 110);
    }
  }
  cproton_decoded *d = decode(buf, 2 * (size_t)l.per_cta_bytes, &l, 0);
  cr_assert_eq(cproton_decoded_n_ctas(d), 2);
  cr_assert_eq(cproton_decoded_n_warps(d), 4);
  cproton_decoded_scope s;
  cproton_decoded_get_scope(d, 0, &s);
  cr_assert_str_eq(s.name, "a");
  cr_assert_eq(s.cycles, 400);
  cr_assert_eq(s.count, 4);
  cr_assert_float_eq(s.normalized_cycles, 100.0, 1e-9);
  cproton_decoded_get_scope(d, 1, &s);
  cr_assert_eq(s.parent, 0);
  cr_assert_eq(s.cycles, 120);
  cproton_decoded_warp w;
  cproton_decoded_get_warp(d, 3, &w);
  cr_assert_eq(w.cta_id, 1);
  cr_assert_eq(w.sm_id, 101);
  cr_assert_eq(w.warp, 1);
  cr_assert_eq(w.n_events, 2);
  cr_assert_eq(w.events[0].scope, 1); /* inner closes first */
  cr_assert_eq(w.events[0].depth, 1);
  cr_assert_eq(w.events[0].start, 20);
  cr_assert_eq(w.events[0].end, 50);
  cr_assert_eq(w.events[1].depth, 0);
  cproton_decoded_cta c;
  cproton_decoded_get_cta(d, 1, &c);
  cr_assert_eq(c.start_time, 1000001);
  cr_assert_eq(c.end_time, 2000100);
  cr_assert_eq(cproton_decoded_n_unpaired(d), 0);
  cr_assert_eq(cproton_decoded_get_warp(d, 4, &w), CPROTON_EINVAL);
  cproton_decoded_free(d);
  free(buf);
}

Test(backend_decode, circular_wrap_counts_dropped) {
  cproton_buffer_layout l = layout(1, 64, CPROTON_COUNTER_CLOCK64); /* 8 records */
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 1);
  for (int i = 0; i < 5; i++) {
    record(buf, &l, 0, 0, 2, 0, 6000 + 100 * i);
    record(buf, &l, 0, 0, 2, 1, 6000 + 100 * i + 7);
  }
  record(buf, &l, 0, 0, 0, 0, 7000); /* 11 records: 3 dropped */
  cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, 0);
  cproton_decoded_warp w;
  cproton_decoded_get_warp(d, 0, &w);
  cr_assert_eq(w.n_written, 11);
  cr_assert_eq(w.n_dropped, 3);
  cr_assert_eq(w.n_events, 3);     /* pairs 2..4 survive whole */
  cr_assert_eq(w.n_unpaired, 2);   /* the end of pair 1, the last start */
  cr_assert_eq(w.events[0].start, 1200);
  cr_assert_eq(w.events[0].end, 1207);
  cr_assert_eq(cproton_decoded_n_dropped(d), 3);
  cproton_decoded_free(d);
  free(buf);
}

Test(backend_decode, clock32_wraps) {
  cproton_buffer_layout l = layout(1, 64, CPROTON_COUNTER_CLOCK);
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 1);
  put64(buf + CP_HDR_START_CTR, 0xfffffff0ull);
  record(buf, &l, 0, 0, 0, 0, 0xfffffff8ull);
  record(buf, &l, 0, 0, 0, 1, 0x10);
  cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, 0);
  cproton_decoded_scope s;
  cproton_decoded_get_scope(d, 0, &s);
  cr_assert_eq(s.cycles, 0x18);
  cproton_decoded_warp w;
  cproton_decoded_get_warp(d, 0, &w);
  cr_assert_eq(w.events[0].start, 8);
  cproton_decoded_free(d);
  free(buf);
}

Test(backend_decode, record_before_start_counter_is_negative) {
  cproton_buffer_layout l = layout(1, 64, CPROTON_COUNTER_CLOCK64);
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 1);
  record(buf, &l, 0, 0, 0, 0, 4990);
  record(buf, &l, 0, 0, 0, 1, 5030);
  cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, 0);
  cproton_decoded_warp w;
  cproton_decoded_get_warp(d, 0, &w);
  cr_assert_eq(w.events[0].start, -10);
  cr_assert_eq(w.events[0].end, 30);
  cproton_decoded_free(d);
  free(buf);
}

Test(backend_decode, unpaired_and_out_of_range_records) {
  cproton_buffer_layout l = layout(1, 128, CPROTON_COUNTER_CLOCK64);
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 1);
  record(buf, &l, 0, 0, 1, 1, 5001); /* end without start */
  record(buf, &l, 0, 0, 0, 0, 5002);
  record(buf, &l, 0, 0, 1, 0, 5003); /* start whose end is lost */
  record(buf, &l, 0, 0, 0, 1, 5010); /* closes a; b unpaired */
  record(buf, &l, 0, 0, 77, 0, 5011); /* unknown scope */
  cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, 0);
  cproton_decoded_warp w;
  cproton_decoded_get_warp(d, 0, &w);
  cr_assert_eq(w.n_events, 1);
  cr_assert_eq(w.n_unpaired, 3);
  cr_assert_eq(cproton_decoded_n_unpaired(d), 3);
  cproton_decoded_free(d);
  free(buf);
}

Test(backend_decode, truncated_and_bad_headers) {
  cproton_buffer_layout l = layout(2, 64, CPROTON_COUNTER_CLOCK64);
  size_t n = 3 * (size_t)l.per_cta_bytes;
  unsigned char *buf = calloc(3, l.per_cta_bytes);
  for (uint32_t c = 0; c < 3; c++)
    header(buf, &l, c, 2);
  cproton_decoded *d = NULL;
  cr_assert_eq(cproton_buffer_decode(buf, n - 8, &l, 0, &d), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "not a whole number"));
  cr_assert_eq(cproton_buffer_decode(buf, 0, &l, 0, &d), CPROTON_EPARSE);
  buf[l.per_cta_bytes] ^= 0xff; /* CTA 1 magic */
  cr_assert_eq(cproton_buffer_decode(buf, n, &l, 0, &d), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "CTA slice 1"));
  cr_assert(strstr(cproton_last_error(), "bad magic"));
  cr_assert_null(d);
  d = decode(buf, n, &l, CPROTON_DECODE_SKIP_BAD_CTAS);
  cr_assert_eq(cproton_decoded_n_ctas(d), 2);
  cr_assert_eq(cproton_decoded_n_bad_ctas(d), 1);
  cproton_decoded_free(d);
  buf[l.per_cta_bytes] ^= 0xff;
  buf[CP_HDR_VERSION] = 9;
  cr_assert_eq(cproton_buffer_decode(buf, n, &l, 0, &d), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "version 9"));
  buf[CP_HDR_VERSION] = 1;
  put32(buf + CP_HDR_SEG_BYTES, 128);
  cr_assert_eq(cproton_buffer_decode(buf, n, &l, 0, &d), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "another kernel"));
  put32(buf + CP_HDR_SEG_BYTES, 64);
  put32(buf + CP_HDR_CTA, 5);
  cr_assert_eq(cproton_buffer_decode(buf, n, &l, 0, &d), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "stale"));
  free(buf);
}

Test(backend_decode, bad_layouts_and_inactive_warps) {
  cproton_buffer_layout l = layout(2, 64, CPROTON_COUNTER_CLOCK64);
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 1); /* only warp 0 launched */
  put32(buf + CP_HDR_COUNTS + 4, 999); /* stale count of warp 1 */
  cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, 0);
  cr_assert_eq(cproton_decoded_n_warps(d), 1);
  cproton_decoded_free(d);
  cproton_buffer_layout bad = l;
  bad.segment_bytes = 48;
  cr_assert_eq(cproton_buffer_decode(buf, l.per_cta_bytes, &bad, 0, &d), CPROTON_EINVAL);
  bad = l;
  bad.per_cta_bytes += 16;
  cr_assert_eq(cproton_buffer_decode(buf, l.per_cta_bytes, &bad, 0, &d), CPROTON_EINVAL);
  cr_assert_eq(cproton_buffer_decode(NULL, 1, &l, 0, &d), CPROTON_EINVAL);
  free(buf);
}

Test(backend_decode, layout_from_the_pass) {
  static const char ptx[] =
      ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_p\n)\n"
      ".reqntid 96\n{\n\t// @cproton record start x\n\t// @cproton record end x\n\tret;\n}\n";
  cproton_ptx *p;
  cr_assert_eq(cproton_ptx_instrument(ptx, sizeof ptx - 1, NULL, &p), CPROTON_OK, "%s", cproton_last_error());
  cproton_buffer_layout l;
  cproton_ptx_kernel_layout(p, 0, &l);
  cr_assert_eq(l.n_units, 3);
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 3);
  buf[CP_HDR_FLAGS] = 1;
  for (uint32_t u = 0; u < 3; u++) {
    record(buf, &l, 0, u, 0, 0, 5100);
    record(buf, &l, 0, u, 0, 1, 5100 + 10 * (u + 1));
  }
  cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, 0);
  cproton_decoded_scope s;
  cproton_decoded_get_scope(d, 0, &s);
  cr_assert_str_eq(s.name, "x");
  cr_assert_eq(s.cycles, 60);
  cr_assert_eq(s.count, 3);
  cr_assert_float_eq(s.normalized_cycles, 20.0, 1e-9);
  cproton_decoded_free(d);
  cproton_ptx_free(p);
  free(buf);
}

/* The circular buffer of circular_wrap_counts_dropped, decoded with and
 * without event lists: same totals, per-scope unpaired counts, and the
 * CTA's latest end (what the runtime measures the SM clock with). */
Test(backend_decode, aggregate_only_matches_full_decode) {
  cproton_buffer_layout l = layout(1, 64, CPROTON_COUNTER_CLOCK64);
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 1);
  for (int i = 0; i < 5; i++) {
    record(buf, &l, 0, 0, 2, 0, 6000 + 100 * i);
    record(buf, &l, 0, 0, 2, 1, 6000 + 100 * i + 7);
  }
  record(buf, &l, 0, 0, 0, 0, 7000);
  for (unsigned f = 0; f <= CPROTON_DECODE_NO_EVENTS; f += CPROTON_DECODE_NO_EVENTS) {
    cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, f);
    cproton_decoded_scope s;
    cproton_decoded_get_scope(d, 2, &s);
    cr_assert_eq(s.cycles, 21);
    cr_assert_eq(s.count, 3);
    cr_assert_eq(s.unpaired, 1, "the end whose start was overwritten");
    cproton_decoded_get_scope(d, 0, &s);
    cr_assert_eq(s.unpaired, 1, "the start left open");
    cr_assert_eq(cproton_decoded_n_warps(d), f ? 0 : 1, "no per-unit entries when aggregating");
    cr_assert_eq(cproton_decoded_n_dropped(d), 3);
    cr_assert_eq(cproton_decoded_n_unpaired(d), 2);
    cproton_decoded_cta c;
    cproton_decoded_get_cta(d, 0, &c);
    cr_assert_eq(c.last_end, 1407);
    cproton_decoded_free(d);
  }
  free(buf);
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Proton's host-buffer layout: header, uid vector, per block the preamble,
 * ids, word counts and records oldest first with 8-bit scope ids. */
Test(backend_decode, proton_host_buffer_layout) {
  cproton_buffer_layout l = layout(2, 32, CPROTON_COUNTER_CLOCK64); /* 4 records */
  l.unit_warp[0] = 0;
  l.unit_warp[1] = 2; /* warps 0 and 2 sampled out of 4 */
  unsigned char *buf = calloc(2, l.per_cta_bytes);
  header(buf, &l, 0, 4); /* CTA 1 never finalized */
  record(buf, &l, 0, 0, 1, 0, 0x123400000000ull + 5);
  record(buf, &l, 0, 0, 1, 1, 0x123400000000ull + 9);
  for (int i = 0; i < 3; i++) { /* unit 1 wraps: 6 written, 4 kept */
    record(buf, &l, 0, 1, 0, 0, 100 + 10 * i);
    record(buf, &l, 0, 1, 0, 1, 105 + 10 * i);
  }
  void *out = NULL;
  size_t n = 0;
  cr_assert_eq(cproton_buffer_to_proton(buf, 2 * (size_t)l.per_cta_bytes, &l, 4, &out, &n), CPROTON_OK, "%s",
               cproton_last_error());
  const unsigned char *b = out;
  uint32_t block = 40 + 4 * 4 + 2 * 32;
  cr_assert_eq(get32(b), 1);
  cr_assert_eq(get32(b + 12), 48, "payload offset after 2 uids");
  cr_assert_eq(get32(b + 16), 2 * block);
  cr_assert_eq(get32(b + 24), 2, "blocks");
  cr_assert_eq(get32(b + 28), 4, "total units");
  cr_assert_eq(get32(b + 32), block);
  cr_assert_eq(get32(b + 36), 2);
  cr_assert_eq(get32(b + 40), 0);
  cr_assert_eq(get32(b + 44), 2);
  cr_assert_eq(n, 48 + 2 * (size_t)block);
  const unsigned char *p = b + 48;
  cr_assert_eq(get32(p), 0xdeadbeefu);
  cr_assert_eq(get32(p + 8), 100, "SM id");
  cr_assert_eq(get32(p + 12), 64, "buf size");
  cr_assert_eq(get32(p + 40 + 0), 4, "warp 0: 2 records = 4 words");
  cr_assert_eq(get32(p + 40 + 8), 12, "warp 2: 6 records written");
  cr_assert_eq(get32(p + 40 + 4), 0);
  const unsigned char *r = p + 56;
  cr_assert_eq(get32(r), (1u << 23) | 0x234u, "start, scope 1, counter bits 32..42");
  cr_assert_eq(get32(r + 4), 5);
  cr_assert_eq(get32(r + 8), 0x80000000u | (1u << 23) | 0x234u);
  r += 32; /* warp 2's segment, oldest surviving first */
  cr_assert_eq(get32(r + 4), 110);
  cr_assert_eq(get32(r + 12), 115);
  cr_assert_eq(get32(r + 24 + 4), 125);
  cr_assert_eq(get32(b + 48 + block), 0, "unfinalized CTA: no preamble");
  cproton_free(out);
  l.n_scopes = 3;
  cr_assert_eq(cproton_buffer_to_proton(buf, 2 * (size_t)l.per_cta_bytes, &l, 2, &out, &n), CPROTON_EINVAL,
               "warp 2 of a 2-warp kernel");
  cr_assert_eq(cproton_buffer_to_proton(buf, 7, &l, 4, &out, &n), CPROTON_EPARSE);
  free(buf);
}

/* Proton's time_shift: the k-th record of a unit moves k x 7 cycles
 * earlier; an occurrence shorter than the shift keeps half of it. */
Test(backend_decode, time_shift_removes_the_record_cost) {
  cproton_buffer_layout l = layout(1, 256, CPROTON_COUNTER_CLOCK64);
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 1);
  record(buf, &l, 0, 0, 0, 0, 5100); /* k=1: 100 -> 93 */
  record(buf, &l, 0, 0, 1, 0, 5120); /* k=2: 120 -> 106 */
  record(buf, &l, 0, 0, 1, 1, 5125); /* k=3: 125 -> 104 < 106: 106 + 3 */
  record(buf, &l, 0, 0, 0, 1, 5300); /* k=4: 300 -> 272 */
  cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, CPROTON_DECODE_TIME_SHIFT);
  cproton_decoded_warp w;
  cproton_decoded_get_warp(d, 0, &w);
  cr_assert_eq(w.events[0].start, 106);
  cr_assert_eq(w.events[0].end, 109);
  cr_assert_eq(w.events[1].start, 93);
  cr_assert_eq(w.events[1].end, 272);
  cproton_decoded_cta c;
  cproton_decoded_get_cta(d, 0, &c);
  cr_assert_eq(c.last_end, 300, "the clock is measured unshifted");
  cproton_decoded_free(d);
  l.counter = CPROTON_COUNTER_GLOBALTIMER;
  buf[CP_HDR_COUNTER] = CPROTON_COUNTER_GLOBALTIMER;
  d = decode(buf, l.per_cta_bytes, &l, CPROTON_DECODE_TIME_SHIFT);
  cproton_decoded_get_warp(d, 0, &w);
  cr_assert_eq(w.events[1].start, 100, "nanoseconds are not shifted");
  cproton_decoded_free(d);
  free(buf);
}

/* The device reduction's result words (layout.h, CP_REDUCE_*) from a host
 * decode, back into a decoded result, and their diff. The kernel itself
 * runs only on a GPU (tests/gpu/python/instrument_reduce.py diffs it with
 * this decoder); here: the conversions the runtime applies to its words. */
Test(backend_decode, reduce_words_round_trip_and_diff) {
  cproton_buffer_layout l = layout(2, 64, CPROTON_COUNTER_CLOCK64);
  unsigned char *buf = calloc(3, l.per_cta_bytes);
  for (uint32_t c = 0; c < 2; c++) {
    header(buf, &l, c, 2);
    for (int i = 0; i < 6; i++) { /* wraps the 8-record segment of unit 0 */
      record(buf, &l, c, 0, 1, 0, 5000 + 100 * i);
      record(buf, &l, c, 0, 1, 1, 5000 + 100 * i + 9 + c);
    }
    record(buf, &l, c, 1, 2, 0, 5010);
  }
  /* slice 2 never finalized: no header */
  size_t n = cp_reduce_n_words(l.n_scopes);
  uint64_t *w = calloc(n, sizeof *w), *back = calloc(n, sizeof *back);
  cproton_decoded *d = decode(buf, 3 * (size_t)l.per_cta_bytes, &l,
                              CPROTON_DECODE_NO_EVENTS | CPROTON_DECODE_SKIP_BAD_CTAS);
  cp_reduce_words_of(d, w);
  cr_assert_eq(w[CP_REDUCE_CTAS], 2);
  cr_assert_eq(w[CP_REDUCE_BAD_CTAS], 1);
  cr_assert_eq(w[CP_REDUCE_DROPPED], 8, "12 records in 8 slots, twice");
  cr_assert_eq(w[CP_REDUCE_UNPAIRED], 2, "each CTA's unit 1 start");
  cr_assert_eq(w[CP_REDUCE_CLOCK_CYCLES], 509 + 510, "the furthest end per CTA");
  cr_assert_eq(w[CP_REDUCE_CLOCK_NS], (2000000 - 1000000) + (2000000 - 1000001));
  cr_assert_eq(w[CP_REDUCE_FIXED + 1], 4 * 9 + 4 * 10, "scope b: 4 surviving pairs per CTA");
  cr_assert_eq(w[CP_REDUCE_FIXED + 3 + 1], 8);
  cr_assert_eq(w[CP_REDUCE_FIXED + 6 + 2], 2);
  cproton_decoded *r = NULL;
  cr_assert_eq(cp_decoded_from_reduce(w, &l, &r), CPROTON_OK);
  cp_reduce_words_of(r, back);
  back[CP_REDUCE_CTAS] = w[CP_REDUCE_CTAS]; /* the totals keep no CTA entries */
  char msg[256];
  cr_assert_eq(cp_reduce_diff(back, w, &l, msg, sizeof msg), 0, "%s", msg);
  cproton_decoded_scope a, b;
  cproton_decoded_get_scope(d, 1, &a);
  cproton_decoded_get_scope(r, 1, &b);
  cr_assert_float_eq(a.normalized_cycles, b.normalized_cycles, 0, "same normalisation (units x good CTAs)");
  cr_assert_str_eq(b.name, "b");
  back[CP_REDUCE_FIXED + 3 + 1]++;
  back[CP_REDUCE_DROPPED]++;
  cr_assert_eq(cp_reduce_diff(back, w, &l, msg, sizeof msg), 2);
  cr_assert_str_eq(msg, "dropped records: device 9, host 8");
  back[CP_REDUCE_DROPPED]--;
  cp_reduce_diff(back, w, &l, msg, sizeof msg);
  cr_assert_str_eq(msg, "scope 1 (b) count: device 9, host 8");
  cproton_decoded_free(d);
  cproton_decoded_free(r);
  free(w), free(back), free(buf);
}

/* Events (pl.start_event / pl.end_event): a producer unit starts, a
 * consumer unit ends; a unit that both starts and ends pairs its own
 * records first; leftovers pair across units in time order (each end with
 * the earliest open start before it); what stays alone is unpaired. */
Test(backend_decode, events_pair_across_units) {
  static const char *const en[] = {"loop", "handoff", "gap"};
  static const int32_t ep[] = {-1, CPROTON_SCOPE_PARENT_EVENT, CPROTON_SCOPE_PARENT_EVENT};
  cproton_buffer_layout l = layout(3, 256, CPROTON_COUNTER_CLOCK64);
  l.scope_names = en;
  l.scope_parents = ep;
  unsigned char *buf = calloc(1, l.per_cta_bytes);
  header(buf, &l, 0, 3);
  /* unit 0 (producer): a scope, and starts of "handoff" at 10, 20, 30, 40 */
  record(buf, &l, 0, 0, 0, 0, 5000 + 5);
  for (int i = 1; i <= 4; i++)
    record(buf, &l, 0, 0, 1, 0, 5000 + 10 * (uint64_t)i);
  record(buf, &l, 0, 0, 0, 1, 5000 + 45);
  /* unit 1 (consumer): ends at 25, 35, 45 (the start at 40 stays open), and
   * an end at 1 before any start (unpaired) */
  record(buf, &l, 0, 1, 1, 1, 5000 + 1);
  for (int i = 0; i < 3; i++)
    record(buf, &l, 0, 1, 1, 1, 5000 + 25 + 10 * (uint64_t)i);
  /* unit 2: "gap" from the end of one iteration to the start of the next */
  record(buf, &l, 0, 2, 2, 0, 5000 + 100);
  record(buf, &l, 0, 2, 2, 1, 5000 + 107);
  record(buf, &l, 0, 2, 2, 0, 5000 + 200);
  record(buf, &l, 0, 2, 2, 1, 5000 + 203);
  for (unsigned f = 0; f <= CPROTON_DECODE_NO_EVENTS; f += CPROTON_DECODE_NO_EVENTS) {
    cproton_decoded *d = decode(buf, l.per_cta_bytes, &l, f);
    cproton_decoded_scope s;
    cproton_decoded_get_scope(d, 1, &s);
    cr_assert_eq(s.parent, CPROTON_SCOPE_PARENT_EVENT);
    cr_assert_eq(s.count, 3); /* 10-25, 20-35, 30-45 */
    cr_assert_eq(s.cycles, 45);
    cr_assert_eq(s.unpaired, 2); /* the start at 40, the end at 1 */
    cproton_decoded_get_scope(d, 2, &s);
    cr_assert_eq(s.count, 2);
    cr_assert_eq(s.cycles, 10);
    cr_assert_eq(s.unpaired, 0);
    cproton_decoded_get_scope(d, 0, &s);
    cr_assert_eq(s.count, 1);
    cr_assert_eq(s.cycles, 40);
    cr_assert_eq(cproton_decoded_n_unpaired(d), 2);
    if (f == 0) { /* occurrences sit on the unit that started them */
      cproton_decoded_warp w;
      cproton_decoded_get_warp(d, 0, &w);
      cr_assert_eq(w.n_events, 4);
      cr_assert_eq(w.events[0].scope, 0);
      cr_assert_eq(w.events[1].scope, 1);
      cr_assert_eq(w.events[1].depth, 64);
      cr_assert_eq(w.events[1].start, 10);
      cr_assert_eq(w.events[1].end, 25);
      cr_assert_eq(w.n_unpaired, 1);
      cproton_decoded_get_warp(d, 1, &w);
      cr_assert_eq(w.n_events, 0);
      cr_assert_eq(w.n_unpaired, 1);
      cproton_decoded_get_warp(d, 2, &w);
      cr_assert_eq(w.n_events, 2);
      cr_assert_eq(w.events[1].start, 200);
      /* the warp that recorded each end: the consumer's for "handoff",
       * the holding warp's own for a scope and for "gap" */
      cproton_decoded_warp w0, w1;
      cproton_decoded_get_warp(d, 0, &w0);
      cproton_decoded_get_warp(d, 1, &w1);
      cr_assert_neq(w0.warp, w1.warp);
      cr_assert_eq(w0.events[0].end_warp, w0.warp);
      for (size_t e = 1; e < 4; e++)
        cr_assert_eq(w0.events[e].end_warp, w1.warp, "event %zu", e);
      cr_assert_eq(w.events[0].end_warp, w.warp);
      cr_assert_eq(w.events[1].end_warp, w.warp);
    }
    cproton_decoded_free(d);
  }
  free(buf);
}
