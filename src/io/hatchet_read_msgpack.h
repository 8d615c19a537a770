/* io/hatchet_read_msgpack.h -- the Hatchet MessagePack reader
 * (cp_hatchet_read_msgpack_*): Proton 3.9's "hatchet_msgpack" files, and
 * ours, into the same model as the JSON reader. */
#ifndef CP_IO_HATCHET_READ_MSGPACK_H
#define CP_IO_HATCHET_READ_MSGPACK_H

#include <stddef.h>

#include "io/profile_model.h"

/* Whether `len` bytes at `buf` start like a Hatchet MessagePack document (a
 * fixarray of one or two elements; JSON starts with '[' or whitespace). */
int cp_hatchet_read_msgpack_sniff(const void *buf, size_t len);

/* Parses the document in `len` bytes at `buf` into the empty profile `p`
 * and builds its child index. Returns CPROTON_OK or EPARSE / ELIMIT /
 * ENOMEM with a "name: byte N: ..." message (N = offset of the offending
 * value; a truncated file names the offset where bytes ran out). On
 * failure `p` holds partial data and must only be freed. */
int cp_hatchet_read_msgpack(const void *buf, size_t len, cproton_profile *p);

#endif
