/* io/perfetto_types.h -- the Perfetto writer's options and statistics,
 * shared by its interface (perfetto.h) and its private state
 * (perfetto_writer.h). */
#ifndef CP_IO_PERFETTO_TYPES_H
#define CP_IO_PERFETTO_TYPES_H

#include <stddef.h>

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
  size_t counters;       /* of the events, hardware-counter samples */
  size_t tracks;         /* track descriptors written */
  size_t replays;        /* graph replay slices */
  size_t replays_skipped;/* graph launches past the replay table's cap */
  size_t bytes;          /* total bytes written */
} cp_perfetto_stats;

#endif
