/* io/format.c -- the table of output formats and the generic file / memory
 * rendering around it.
 *
 * Invariant: `formats` is the only list of format names in the library;
 * messages that list valid names are built from it. Not a hot path
 * (finalize, periodic flushes, data queries). Called by the session layer (session/finalize.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/chrome_trace.h"
#include "io/format.h"
#include "io/hatchet_msgpack.h"
#include "io/hatchet_write.h"
#include "io/perfetto.h"

static int write_hatchet(cp_sink *s, const cp_io_input *in) {
  return cp_hatchet_write(s, in->data, in->kernel_root);
}

static int write_hatchet_msgpack(cp_sink *s, const cp_io_input *in) {
  return cp_hatchet_msgpack_write(s, in->data, in->kernel_root);
}

static int write_chrome_trace(cp_sink *s, const cp_io_input *in) {
  return cp_chrome_trace_write(s, in->trace, in->data);
}

static int write_chrome_timeline(cp_sink *s, const cp_io_input *in) {
  return cp_chrome_trace_write_timeline(s, in->trace, in->data);
}

static int write_perfetto(cp_sink *s, const cp_io_input *in) {
  cp_perfetto_info info = {.pid = (int)getpid(), .rank = in->rank,
                           .name = in->label};
  return cp_perfetto_write(s, in->trace, &info, NULL);
}

/* The first row of each kind is that kind's default. */
static const cp_io_format formats[] = {
    {"hatchet", ".hatchet", CP_IO_TREE, 0, write_hatchet},
    {"hatchet_msgpack", ".hatchet_msgpack", CP_IO_TREE, 0,
     write_hatchet_msgpack},
    {"chrome_trace", ".chrome_trace", CP_IO_TRACE, 1, write_chrome_trace},
    /* cproton's fuller Chrome trace (CPU scopes, flows, lane names) */
    {"chrome_timeline", ".chrome_trace", CP_IO_TRACE, 1, write_chrome_timeline},
    /* protobuf is compact already; Perfetto reads it as is */
    {"perfetto", ".pftrace", CP_IO_TRACE, 0, write_perfetto},
};

#define N_FORMATS (sizeof formats / sizeof formats[0])

void cp_io_format_names(int kind, char *buf, size_t size) {
  size_t n = 0;
  if (size)
    buf[0] = '\0';
  for (size_t i = 0; i < N_FORMATS && n < size; i++) {
    if (kind >= 0 && formats[i].kind != (cp_io_kind)kind)
      continue;
    int k = snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
                     formats[i].name);
    n += k > 0 ? (size_t)k : 0;
  }
}

const cp_io_format *cp_io_format_find(const char *name) {
  for (size_t i = 0; name && i < N_FORMATS; i++)
    if (strcmp(formats[i].name, name) == 0)
      return &formats[i];
  char valid[256];
  cp_io_format_names(-1, valid, sizeof valid);
  cp_error_set(CPROTON_EINVAL, "unknown output format '%s' (valid: %s)",
               name ? name : "(null)", valid);
  return NULL;
}

const cp_io_format *cp_io_format_default(cp_io_kind kind) {
  for (size_t i = 0; i < N_FORMATS; i++)
    if (formats[i].kind == kind)
      return &formats[i];
  return &formats[0];
}

int cp_io_format_path(const cp_io_format *f, const char *base, int gzip,
                      char *out, size_t size) {
  const char *gz = gzip && f->compressible ? ".gz" : "";
  char ext[64];
  snprintf(ext, sizeof ext, "%s%s", f->extension, gz);
  size_t n = strlen(base), k = strlen(ext);
  int has = n >= k && strcmp(base + n - k, ext) == 0;
  int w = snprintf(out, size, "%s%s", base, has ? "" : ext);
  if (w < 0 || (size_t)w >= size)
    return cp_error_set(CPROTON_EINVAL, "output path '%s%s' is too long", base,
                        ext);
  return CPROTON_OK;
}

/* Length of `path` without the format's extension (where a no-clobber
 * suffix goes: "x.hatchet" -> "x.1.hatchet"). */
static size_t stem_len(const cp_io_format *f, const char *path, int gz) {
  char ext[64];
  snprintf(ext, sizeof ext, "%s%s", f->extension, gz ? ".gz" : "");
  size_t n = strlen(path), k = strlen(ext);
  return n >= k && strcmp(path + n - k, ext) == 0 ? n - k : n;
}

int cp_io_format_write_file(const cp_io_format *f, const char *path, int gzip,
                            int64_t since_ns, const cp_io_input *in,
                            char *written_out, size_t written_size) {
  cp_sink *sink;
  int gz = gzip && f->compressible;
  int rc = cp_sink_file(path, gz, &sink);
  if (rc)
    return rc;
  if (since_ns > 0)
    cp_sink_no_clobber(sink, since_ns, stem_len(f, path, gz));
  rc = f->write(sink, in);
  int close_rc =
      cp_sink_close_file(sink, rc != CPROTON_OK, written_out, written_size);
  return rc ? rc : close_rc;
}

int cp_io_format_write_memory(const cp_io_format *f, const cp_io_input *in,
                              char **buf_out, size_t *size_out) {
  cp_sink *sink;
  int rc = cp_sink_memory(&sink);
  if (rc)
    return rc;
  rc = f->write(sink, in);
  int close_rc = cp_sink_close(sink, rc != CPROTON_OK, buf_out, size_out);
  return rc ? rc : close_rc;
}
