/* io/sink.h -- where writers put bytes: a growing memory buffer or a file
 * that is written under a temporary name, optionally gzip'ed, and renamed
 * into place only on success (cp_sink_*). */
#ifndef CP_IO_SINK_H
#define CP_IO_SINK_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_sink cp_sink;

/* A sink into memory. Errors: ENOMEM. */
int cp_sink_memory(cp_sink **out);

/* A sink into `path` through a temporary sibling created by
 * cp_output_create (io/output.h: exclusive, never through a link; `path`
 * must be absent or a regular file), gzip'ed when `gzip`.
 * Errors: EINVAL (`path` is not a regular file), EIO naming the path. */
int cp_sink_file(const char *path, int gzip, cp_sink **out);

/* Makes a file sink refuse to replace a file that another writer produced
 * while this one was running: on close, when `path` exists and was
 * modified at or after `since_ns` (CLOCK_REALTIME), the file is written as
 * "<path[0..stem_len)>.<k><path[stem_len..]>" for the first free k instead,
 * with a warning naming both. An older file (an earlier run's) is replaced.
 * Creation is atomic (link, never rename over), so two processes closing
 * at once cannot both win one name. */
void cp_sink_no_clobber(cp_sink *s, int64_t since_ns, size_t stem_len);


/* Appends bytes / a NUL-terminated string / printf text. Errors are sticky:
 * the first failure is kept and reported by cp_sink_close. */
void cp_sink_write(cp_sink *s, const void *p, size_t n);
void cp_sink_puts(cp_sink *s, const char *str);
void cp_sink_printf(cp_sink *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends `str` as a JSON string literal (quotes, escapes; invalid UTF-8
 * bytes become U+FFFD so the output is always valid JSON). */
void cp_sink_json_string(cp_sink *s, const char *str);

/* Appends a double in the shortest form that reads back exactly. */
void cp_sink_json_double(cp_sink *s, double v);

/* Finishes the sink. Files: renamed into place on success, removed on
 * failure or when `abort` is non-zero. Memory: on success `*buf_out` (may
 * be NULL to discard) receives a malloc'ed NUL-terminated buffer. Frees the
 * sink in every case. Errors: the first write error, EIO, ENOMEM. */
int cp_sink_close(cp_sink *s, int abort, char **buf_out, size_t *size_out);

/* cp_sink_close for a file sink that also copies the path finally written
 * (it differs from the requested one after a no-clobber rename) into
 * `path_out`. */
int cp_sink_close_file(cp_sink *s, int abort, char *path_out,
                       size_t path_size);

#endif
