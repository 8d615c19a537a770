/* io/perfetto.h -- a session's timeline as a Perfetto protobuf trace
 * (`.pftrace`), streamed with bounded memory (cp_perfetto_*). The layout
 * of the file is described in io/perfetto.c and docs/perfetto.md. */
#ifndef CP_IO_PERFETTO_H
#define CP_IO_PERFETTO_H

#include <stddef.h>

#include "core/trace.h"
#include "io/perfetto_types.h"
#include "io/sink.h"


/* Streams every event of `t` into `s` as Perfetto TracePackets: one
 * sequence, interned names, kernels on per-device per-stream tracks, scopes
 * on per-thread tracks, launch -> kernel flows, graph replay slices, and
 * per-warp tracks for intra-kernel regions. Reads `t` twice; memory is a
 * fixed window plus one entry per track, name and graph launch. `stats`
 * may be NULL. Errors: ENOMEM, EIO (reading the spill). */
int cp_perfetto_write(cp_sink *s, const cp_trace *t,
                      const cp_perfetto_info *info, cp_perfetto_stats *stats);

#endif
