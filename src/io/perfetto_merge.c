/* io/perfetto_merge.c -- several Perfetto traces (one per rank) into one.
 *
 * A Perfetto trace is a sequence of `Trace.packet` (field 1) records, so
 * traces concatenate; what collides are the ids each writer chose alone:
 * trusted_packet_sequence_id (interned data and sequence-scoped clocks live
 * per sequence), track uuids, flow ids and pids. Each packet is copied
 * field by field; the fields below are rewritten through cp_merge_map and
 * everything else is copied byte for byte:
 *
 *   TracePacket.trusted_packet_sequence_id (10)
 *   TracePacket.track_descriptor (60): uuid 1, parent_uuid 5,
 *       process (3).pid 1, thread (4).pid 1
 *   TracePacket.track_event (11): track_uuid 11, extra counter track uuids
 *       31 / 45, flow_ids 47 / 36, terminating_flow_ids 48 / 42
 *   TracePacket.trace_packet_defaults (59).track_event_defaults (11)
 *       .track_uuid 11, 31, 45
 *
 * Other producers' packets (ftrace, counters by pid, ...) are copied as they
 * are; a packed repeated id field is refused (cproton never writes one).
 *
 * Inputs are written in the order of their first clock snapshot's BOOTTIME
 * (trace_processor wants clock snapshots in time order), so ranks line up
 * on one host's clock. Inputs are untrusted: every read is bounds-checked
 * and errors name the file and byte offset. Memory: one packet at a time.
 * Not a hot path (a command-line tool). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cproton/cproton.h"
#include "io/perfetto_merge.h"
#include "io/output.h"
#include "io/sink.h"

#define MAX_PACKET (256u << 20)
#define MAX_DEPTH 8

typedef enum action {
  COPY = 0, SEQ, UUID, FLOW, PID, NEST
} action;

typedef struct rule {
  uint32_t field;
  action act;
  const struct rule *nested; /* NEST: the sub-message's rules */
} rule;

/* The rewritten paths, as data (see the header comment). */
static const rule process_rules[] = {{1, PID, NULL}, {0, COPY, NULL}};
static const rule thread_rules[] = {{1, PID, NULL}, {0, COPY, NULL}};
static const rule descriptor_rules[] = {
    {1, UUID, NULL}, {5, UUID, NULL}, {3, NEST, process_rules},
    {4, NEST, thread_rules}, {0, COPY, NULL}};
static const rule event_rules[] = {
    {11, UUID, NULL}, {31, UUID, NULL}, {45, UUID, NULL}, {47, FLOW, NULL},
    {48, FLOW, NULL}, {36, FLOW, NULL}, {42, FLOW, NULL}, {0, COPY, NULL}};
static const rule event_defaults_rules[] = {
    {11, UUID, NULL}, {31, UUID, NULL}, {45, UUID, NULL}, {0, COPY, NULL}};
static const rule defaults_rules[] = {{11, NEST, event_defaults_rules},
                                      {0, COPY, NULL}};
static const rule packet_rules[] = {
    {10, SEQ, NULL}, {60, NEST, descriptor_rules}, {11, NEST, event_rules},
    {59, NEST, defaults_rules}, {0, COPY, NULL}};

static const rule *find(const rule *r, uint32_t field) {
  while (r->field && r->field != field)
    r++;
  return r;
}

static uint64_t mapped(action a, uint64_t v, const cp_merge_map *m) {
  switch (a) {
  case SEQ:
  case UUID:
    return v ? (v - 1) * m->count + m->index + 1 : 0;
  case FLOW:
    return v * m->count + m->index;
  case PID:
    return (uint64_t)(m->index + 1) * 1000000u + v % 1000000u;
  default:
    return v;
  }
}

static int copy_message(const unsigned char *in, size_t n, size_t base,
                        const rule *rules, int depth, const cp_merge_map *m,
                        cp_pb *out, char *err, size_t err_size);

/* One field `f` (raw bytes in[start..end)) under rule `r`. */
static int copy_field(const rule *r, const cp_pb_field *f,
                      const unsigned char *raw, size_t raw_n, size_t at,
                      int depth, const cp_merge_map *m, cp_pb *out, char *err,
                      size_t err_size) {
  int want = r->act == NEST ? CP_PB_LEN
             : r->act == FLOW && (f->number == 47 || f->number == 48)
                 ? CP_PB_FIXED64
                 : CP_PB_VARINT;
  if (r->act != COPY && f->type != want) {
    snprintf(err, err_size, "field %u has wire type %d, expected %d at byte "
             "%zu", f->number, f->type, want, at);
    return -1;
  }
  switch (r->act) {
  case COPY:
    cp_pb_raw(out, raw, raw_n);
    return 0;
  case NEST: {
    cp_pb_begin(out, f->number);
    int rc = copy_message(f->data, f->len, at + (raw_n - f->len), r->nested,
                          depth + 1, m, out, err, err_size);
    cp_pb_end(out);
    return rc;
  }
  default:
    if (want == CP_PB_FIXED64)
      cp_pb_fixed64(out, f->number, mapped(r->act, f->value, m));
    else
      cp_pb_varint(out, f->number, mapped(r->act, f->value, m));
    return 0;
  }
}

static int copy_message(const unsigned char *in, size_t n, size_t base,
                        const rule *rules, int depth, const cp_merge_map *m,
                        cp_pb *out, char *err, size_t err_size) {
  if (depth > MAX_DEPTH) {
    snprintf(err, err_size, "messages nested too deeply at byte %zu", base);
    return -1;
  }
  size_t pos = 0;
  cp_pb_field f;
  int rc;
  while (pos < n) {
    size_t start = pos;
    if ((rc = cp_pb_next(in, n, &pos, base, &f, err, err_size)) != 1)
      return rc;
    if (copy_field(find(rules, f.number), &f, in + start, pos - start,
                   base + start, depth, m, out, err, err_size))
      return -1;
  }
  return 0;
}

int cp_perfetto_merge_packet(const unsigned char *in, size_t n, size_t base,
                             const cp_merge_map *m, cp_pb *out, char *err,
                             size_t err_size) {
  return copy_message(in, n, base, packet_rules, 0, m, out, err, err_size);
}

/* ---- files ---------------------------------------------------------------- */

typedef struct input {
  const char *path;
  uint32_t index;    /* on the command line: decides the renumbering */
  FILE *f;
  size_t offset;     /* of the next packet's key */
  uint64_t boottime; /* first clock snapshot's BOOTTIME, UINT64_MAX: none */
} input;

/* Reads one varint from a file; 0 ok, 1 at a clean EOF, -1 bad. */
static int file_varint(input *in, uint64_t *v) {
  *v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    int c = fgetc(in->f);
    if (c == EOF)
      return shift == 0 && !ferror(in->f) ? 1 : -1;
    in->offset++;
    *v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80))
      return 0;
  }
  return -1;
}

/* The next packet body into *buf; 1 read, 0 at the end, or an error. */
static int next_packet(input *in, unsigned char **buf, size_t *cap,
                       size_t *n, size_t *body_at) {
  uint64_t key, len;
  size_t at = in->offset;
  int rc = file_varint(in, &key);
  if (rc == 1)
    return 0;
  if (rc || key != (1u << 3 | CP_PB_LEN))
    return cp_error_set(CPROTON_EPARSE, "%s: byte %zu: not a Trace.packet "
                        "field (is this a Perfetto protobuf trace?)",
                        in->path, at);
  if (file_varint(in, &len) || len > MAX_PACKET)
    return cp_error_set(CPROTON_EPARSE, "%s: byte %zu: bad packet length",
                        in->path, at);
  if (len > *cap) {
    unsigned char *g = realloc(*buf, len);
    if (!g)
      return cp_error_set(CPROTON_ENOMEM, "out of memory merging traces");
    *buf = g, *cap = len;
  }
  *body_at = in->offset;
  if (fread(*buf, 1, len, in->f) != len)
    return cp_error_set(CPROTON_EPARSE, "%s: byte %zu: truncated packet "
                        "(%llu bytes announced)", in->path, at,
                        (unsigned long long)len);
  in->offset += len;
  *n = len;
  return 1;
}

/* BOOTTIME (clock 6) of a packet's clock snapshot (field 6), if any. */
static int snapshot_boottime(const unsigned char *b, size_t n, uint64_t *out) {
  size_t pos = 0, p2, p3;
  cp_pb_field f, c, v;
  char err[128];
  while (cp_pb_next(b, n, &pos, 0, &f, err, sizeof err) == 1) {
    if (f.number != 6 || f.type != CP_PB_LEN)
      continue;
    for (p2 = 0; cp_pb_next(f.data, f.len, &p2, 0, &c, err, sizeof err) == 1;) {
      uint64_t id = 0, ts = 0;
      if (c.number != 1 || c.type != CP_PB_LEN)
        continue;
      for (p3 = 0; cp_pb_next(c.data, c.len, &p3, 0, &v, err, sizeof err) == 1;) {
        if (v.type == CP_PB_VARINT && v.number == 1)
          id = v.value;
        if (v.type == CP_PB_VARINT && v.number == 2)
          ts = v.value;
      }
      if (id == 6)
        return *out = ts, 1;
    }
  }
  return 0;
}

/* Opens every input and finds its clock snapshot (among its first
 * packets; cproton writes it second). */
static int open_inputs(input *ins, size_t n, unsigned char **buf,
                       size_t *cap) {
  for (size_t i = 0; i < n; i++) {
    input *in = &ins[i];
    in->boottime = UINT64_MAX;
    if (!(in->f = fopen(in->path, "rb")))
      return cp_error_set(CPROTON_EIO, "cannot read '%s': %s", in->path,
                          strerror(errno));
    size_t len, at;
    int rc;
    for (int k = 0; k < 16 && (rc = next_packet(in, buf, cap, &len, &at)) == 1;
         k++)
      if (snapshot_boottime(*buf, len, &in->boottime))
        break;
    if (rc < 0)
      return rc;
    rewind(in->f);
    in->offset = 0;
  }
  return CPROTON_OK;
}

static int by_boottime(const void *a, const void *b) {
  const input *x = a, *y = b;
  return x->boottime < y->boottime ? -1 : x->boottime > y->boottime;
}

static int copy_input(input *in, const cp_merge_map *m, cp_sink *s,
                      unsigned char **buf, size_t *cap, cp_pb *out) {
  size_t len, at;
  int rc;
  char err[256];
  while ((rc = next_packet(in, buf, cap, &len, &at)) == 1) {
    cp_pb_reset(out);
    if (cp_perfetto_merge_packet(*buf, len, at, m, out, err, sizeof err))
      return cp_error_set(CPROTON_EPARSE, "%s: %s", in->path, err);
    if (out->oom)
      return cp_error_set(CPROTON_ENOMEM, "out of memory merging traces");
    unsigned char hdr[11];
    hdr[0] = 1u << 3 | CP_PB_LEN;
    size_t k = 1 + cp_pb_put_varint(hdr + 1, out->n);
    cp_sink_write(s, hdr, k);
    cp_sink_write(s, out->b, out->n);
  }
  return rc;
}

int cproton_trace_merge(const char *const *inputs, size_t n_inputs,
                        const char *output) {
  if (!inputs || !n_inputs || !output || n_inputs > 100000)
    return cp_error_set(CPROTON_EINVAL, "trace merge: inputs and an output "
                        "are required");
  int rc = cp_output_not_input(output, inputs, n_inputs);
  if (rc == CPROTON_OK)
    rc = cp_output_check(output); /* before reading any input */
  if (rc)
    return rc;
  input *ins = calloc(n_inputs, sizeof *ins);
  if (!ins)
    return cp_error_set(CPROTON_ENOMEM, "out of memory merging traces");
  for (size_t i = 0; i < n_inputs; i++)
    ins[i].path = inputs[i], ins[i].index = (uint32_t)i;
  unsigned char *buf = NULL;
  size_t cap = 0;
  cp_pb out = {0};
  cp_sink *s = NULL;
  rc = open_inputs(ins, n_inputs, &buf, &cap);
  if (!rc) {
    /* ids follow the command line; the file order follows the clock */
    qsort(ins, n_inputs, sizeof *ins, by_boottime);
    rc = cp_sink_file(output, 0, &s);
  }
  for (size_t i = 0; !rc && i < n_inputs; i++) {
    cp_merge_map m = {ins[i].index, (uint32_t)n_inputs};
    rc = copy_input(&ins[i], &m, s, &buf, &cap, &out);
  }
  if (s) {
    int close_rc = cp_sink_close(s, rc != CPROTON_OK, NULL, NULL);
    rc = rc ? rc : close_rc;
  }
  for (size_t i = 0; i < n_inputs; i++)
    if (ins[i].f)
      fclose(ins[i].f);
  free(ins), free(buf);
  cp_pb_free(&out);
  return rc;
}
