/* io/pb.h -- protocol-buffers wire format: a small encoder for the Perfetto
 * writer and a bounds-checked field reader for the trace merger (cp_pb_*).
 *
 * Wire format (https://protobuf.dev/programming-guides/encoding/): a message
 * is a sequence of fields, each a varint key (field number << 3 | wire type)
 * and a value: 0 varint (little-endian base 128), 1 fixed64, 2 varint length
 * + bytes (strings, nested messages), 5 fixed32. No schema here: callers
 * know their field numbers. */
#ifndef CP_IO_PB_H
#define CP_IO_PB_H

#include <stddef.h>
#include <stdint.h>

enum { CP_PB_VARINT = 0, CP_PB_FIXED64 = 1, CP_PB_LEN = 2, CP_PB_FIXED32 = 5 };

#define CP_PB_MAX_NEST 16

/* A growing byte buffer with open nested messages. Zero-initialise it;
 * cp_pb_free releases it. Allocation failures are sticky (`oom`). */
typedef struct cp_pb {
  unsigned char *b;
  size_t n, cap;
  size_t open[CP_PB_MAX_NEST]; /* body start of each open message */
  int depth, oom;
} cp_pb;

void cp_pb_free(cp_pb *p);
/* Empties the buffer (keeps its memory). */
void cp_pb_reset(cp_pb *p);

void cp_pb_varint(cp_pb *p, uint32_t field, uint64_t v);
void cp_pb_fixed64(cp_pb *p, uint32_t field, uint64_t v);
void cp_pb_bytes(cp_pb *p, uint32_t field, const void *data, size_t n);
void cp_pb_string(cp_pb *p, uint32_t field, const char *s);

/* Appends bytes that are already encoded (a copied field). */
void cp_pb_raw(cp_pb *p, const void *data, size_t n);

/* Opens a nested message as field `field`; cp_pb_end closes the innermost
 * one, writing its length in front of its body. */
void cp_pb_begin(cp_pb *p, uint32_t field);
void cp_pb_end(cp_pb *p);

/* Bytes a varint of `v` takes (1..10). */
size_t cp_pb_varint_size(uint64_t v);

/* Writes the varint `v` at `out` (10 bytes of room); returns its length. */
size_t cp_pb_put_varint(unsigned char *out, uint64_t v);

/* One field read from a message. For CP_PB_LEN, `data`/`len` are the bytes;
 * otherwise `value` holds the number. */
typedef struct cp_pb_field {
  uint32_t number;
  int type;
  uint64_t value;
  const unsigned char *data;
  size_t len;
} cp_pb_field;

/* Reads the field at *pos of buf[0..size) and advances *pos. Returns 1 for
 * a field, 0 at the end, -1 on malformed input with `err` (64 bytes or
 * more) saying what and the byte offset `base + *pos`. Never reads past
 * `size`. */
int cp_pb_next(const unsigned char *buf, size_t size, size_t *pos,
               size_t base, cp_pb_field *f, char *err, size_t err_size);

#endif
