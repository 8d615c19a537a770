/* io/perfetto.h -- a session's timeline as a Perfetto protobuf trace
 * (`.pftrace`), streamed with bounded memory (cp_perfetto_*). The layout
 * of the file is described in io/perfetto.c and docs/perfetto.md. */
#ifndef CP_IO_PERFETTO_H
#define CP_IO_PERFETTO_H

#include <stddef.h>

#include "core/trace.h"
#include "io/sink.h"

/* Who wrote the trace: the process track of the file. */
typedef struct cp_perfetto_info {
  int pid;          /* process id shown for the process track */
  int rank;         /* distributed rank, -1 when unknown */
  const char *name; /* label: the session's output name (may be NULL) */
  size_t window;    /* events sorted at once; 0: the default (2^18) */
} cp_perfetto_info;

/* What the writer produced, for tests and docs/perfetto.md's numbers. */
typedef struct cp_perfetto_stats {
  size_t events;         /* timeline events written (scopes, kernels...) */
  size_t region_events;  /* of which intra-kernel warp regions */
  size_t region_bytes;   /* bytes of the regions' packets (begin + end) */
  size_t tracks;         /* track descriptors written */
  size_t replays;        /* graph replay slices */
  size_t replays_skipped;/* graph launches past the replay table's cap */
  size_t bytes;          /* total bytes written */
} cp_perfetto_stats;

/* Streams every event of `t` into `s` as Perfetto TracePackets: one
 * sequence, interned names, kernels on per-device per-stream tracks, scopes
 * on per-thread tracks, launch -> kernel flows, graph replay slices, and
 * per-warp tracks for intra-kernel regions. Reads `t` twice; memory is a
 * fixed window plus one entry per track, name and graph launch. `stats`
 * may be NULL. Errors: ENOMEM, EIO (reading the spill). */
int cp_perfetto_write(cp_sink *s, const cp_trace *t,
                      const cp_perfetto_info *info, cp_perfetto_stats *stats);

#endif
