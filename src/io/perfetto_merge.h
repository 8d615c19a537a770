/* io/perfetto_merge.h -- merges Perfetto traces of several processes
 * (ranks) into one, each keeping its own process track group
 * (cp_perfetto_merge_*). The public entry is cproton_trace_merge. */
#ifndef CP_IO_PERFETTO_MERGE_H
#define CP_IO_PERFETTO_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "io/pb.h"

/* How one input's ids become unique in the merged trace: input `index` of
 * `count`. Track uuids u > 0 become (u-1)*count + index + 1, sequence ids
 * likewise, flow ids f become f*count + index, and pids p become
 * (index+1)*10^6 + p mod 10^6 (so a pid reads back in its last digits). */
typedef struct cp_merge_map {
  uint32_t index, count;
} cp_merge_map;

/* Rewrites one TracePacket body `in[0..n)` into `out` (appended). `base`
 * is the body's offset in its file, for messages. Returns 0, or -1 with
 * `err` naming the problem and the byte offset (malformed protobuf, a
 * rewritten field with an unexpected wire type, nesting too deep). */
int cp_perfetto_merge_packet(const unsigned char *in, size_t n, size_t base,
                             const cp_merge_map *m, cp_pb *out, char *err,
                             size_t err_size);

#endif
