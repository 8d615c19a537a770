/* io/format.h -- the output formats, as one table (cp_io_format_*).
 *
 * Every way a session can be written is a row: its name (what users pass to
 * finalize and to mode="periodic_flushing:format=..."), the file extension,
 * whether it renders the tree or the trace of a session, whether it may be
 * gzip'ed, and its writer. Core looks rows up by name and never compares
 * format names itself; adding a format is a writer in src/io/ plus one row
 * in io/format.c. */
#ifndef CP_IO_FORMAT_H
#define CP_IO_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "core/data.h"
#include "core/trace.h"
#include "io/sink.h"

typedef enum cp_io_kind {
  CP_IO_TREE = 0, /* renders a session's calling-context tree (cp_data) */
  CP_IO_TRACE = 1 /* renders a session's timeline (cp_trace) */
} cp_io_kind;

/* What a writer renders: one session's (or one phase's) measurements. */
typedef struct cp_io_input {
  cp_data *data;         /* the tree; writers lock it while reading */
  const cp_trace *trace; /* the timeline (trace formats) */
  int kernel_root;       /* zeroed kernel metrics on ROOT (tree formats) */
  int rank;              /* the session's rank, -1 unknown (perfetto) */
  const char *label;     /* the output's base name, may be NULL (perfetto) */
} cp_io_input;

typedef struct cp_io_format {
  const char *name;      /* "hatchet", "hatchet_msgpack", "chrome_trace", ... */
  const char *extension; /* ".hatchet", ...; ".gz" is added when gzip'ed */
  cp_io_kind kind;
  int compressible; /* the session's gzip option applies */
  /* Streams `in` into `s`. Errors: ENOMEM; sink errors surface at
   * cp_sink_close. */
  int (*write)(cp_sink *s, const cp_io_input *in);
} cp_io_format;

/* The row named `name`, or NULL with EINVAL "unknown output format 'x'
 * (valid: hatchet, hatchet_msgpack, chrome_trace, ...)". The one place that
 * knows format names; any thread. */
const cp_io_format *cp_io_format_find(const char *name);

/* The format a session of `kind` writes when none is named. */
const cp_io_format *cp_io_format_default(cp_io_kind kind);

/* Writes the names of every format of `kind` (or every format when `kind`
 * is negative), comma-separated, into `buf`. */
void cp_io_format_names(int kind, char *buf, size_t size);

/* The file name of `base` written as `f` (gzip'ed when `gzip` and the
 * format is compressible): `base` + extension, unless `base` already ends
 * with it. Errors: EINVAL when it does not fit `size`. */
int cp_io_format_path(const cp_io_format *f, const char *base, int gzip,
                      char *out, size_t size);

/* Writes `in` as `f` into the file `path` (through a temporary name, see
 * io/sink.h), gzip'ed when `gzip` and the format is compressible. With
 * `since_ns` > 0, a file at `path` that was modified at or after `since_ns`
 * (CLOCK_REALTIME) -- another process of the run wrote it -- is kept, and
 * this one is written as "<stem>.<k><extension>" with a warning
 * (cp_sink_no_clobber). `written_out` (may be NULL) receives the path
 * actually written. Errors: EIO naming the path, ENOMEM. */
int cp_io_format_write_file(const cp_io_format *f, const char *path, int gzip,
                            int64_t since_ns, const cp_io_input *in,
                            char *written_out, size_t written_size);

/* Renders `in` as `f` into a malloc'ed buffer (NUL-terminated; `*size_out`
 * excludes the NUL). Errors: ENOMEM. */
int cp_io_format_write_memory(const cp_io_format *f, const cp_io_input *in,
                              char **buf_out, size_t *size_out);

#endif
