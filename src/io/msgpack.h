/* io/msgpack.h -- a MessagePack encoder onto a sink (cp_msgpack_*).
 *
 * Each value is written in its shortest form, as the specification
 * (https://github.com/msgpack/msgpack/blob/master/spec.md) recommends and
 * as Proton's writer does: non-negative integers as positive fixint /
 * uint 8/16/32/64, negative ones as negative fixint / int 8/16/32/64,
 * doubles always as float 64 (0xcb), strings as fixstr / str 8/16/32,
 * array and map headers as fix / 16 / 32. Multi-byte numbers are
 * big-endian. Not a hot path. */
#ifndef CP_IO_MSGPACK_H
#define CP_IO_MSGPACK_H

#include <stddef.h>
#include <stdint.h>

#include "io/sink.h"

void cp_msgpack_uint(cp_sink *s, uint64_t v);
void cp_msgpack_int(cp_sink *s, int64_t v);
void cp_msgpack_double(cp_sink *s, double v);
void cp_msgpack_str(cp_sink *s, const char *str, size_t len);
void cp_msgpack_cstr(cp_sink *s, const char *str);
void cp_msgpack_array(cp_sink *s, uint32_t n);
void cp_msgpack_map(cp_sink *s, uint32_t n);

#endif
