/* io/sink.c -- byte sinks for the writers: memory, plain file, gzip file.
 *
 * Invariant: a file sink never leaves a partial file at the destination:
 * bytes go to a temporary sibling that is renamed only after every write
 * and the final flush succeeded; the temporary is created and the
 * destination checked by io/output.c (exclusive, no links followed, only
 * regular files replaced). Not a hot path (finalize). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/grow.h"
#include "core/log.h"
#include "io/output.h"
#include "io/sink.h"

struct cp_sink {
  char *buf; /* memory sink, or staging buffer for file sinks */
  size_t len, cap;
  FILE *file;
  gzFile gz;
  char *path, *tmp;
  int error;
  int no_clobber;
  int64_t since_ns;
  size_t stem_len;
};

#define FLUSH_AT (1u << 16)

int cp_sink_memory(cp_sink **out) {
  *out = calloc(1, sizeof **out);
  return *out ? CPROTON_OK
              : cp_error_set(CPROTON_ENOMEM, "out of memory for output");
}

int cp_sink_file(const char *path, int gzip, cp_sink **out) {
  cp_sink *s = calloc(1, sizeof *s);
  if (!s || !(s->path = strdup(path))) {
    free(s);
    return cp_error_set(CPROTON_ENOMEM, "out of memory for output");
  }
  int fd, rc = cp_output_create(path, &s->tmp, &fd);
  if (rc) {
    free(s->path), free(s);
    return rc;
  }
  if (gzip)
    s->gz = gzdopen(fd, "wb6");
  else
    s->file = fdopen(fd, "wb");
  if (!s->gz && !s->file) {
    close(fd);
    cp_output_discard(s->tmp);
    free(s->path), free(s->tmp), free(s);
    return cp_error_set(CPROTON_ENOMEM, "out of memory for output '%s'",
                        path);
  }
  *out = s;
  return CPROTON_OK;
}

static void drain(cp_sink *s) {
  if (!s->len || (!s->file && !s->gz))
    return;
  size_t done = s->gz ? (size_t)gzwrite(s->gz, s->buf, (unsigned)s->len)
                      : fwrite(s->buf, 1, s->len, s->file);
  if (done != s->len && !s->error)
    s->error = cp_error_set(CPROTON_EIO, "write to '%s' failed: %s", s->path,
                            strerror(errno));
  s->len = 0;
}

void cp_sink_write(cp_sink *s, const void *p, size_t n) {
  if (s->error || n == 0) /* an empty field may come as (NULL, 0) */
    return;
  void *grown;
  if (n > SIZE_MAX - 1 - s->len || cp_grow(s->buf, &s->cap, s->len + n + 1, 1, 4096, &grown)) {
    s->error = cp_error_set(CPROTON_ENOMEM, "out of memory for output");
    return;
  }
  s->buf = grown;
  memcpy(s->buf + s->len, p, n);
  s->len += n;
  if (s->len >= FLUSH_AT)
    drain(s);
}

void cp_sink_puts(cp_sink *s, const char *str) {
  cp_sink_write(s, str, strlen(str));
}

void cp_sink_printf(cp_sink *s, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n >= 0)
    cp_sink_write(s, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *p) {
  if (p[0] < 0x80)
    return 1;
  size_t n = (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3
           : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || (n == 2 && p[0] < 0xC2))
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80)
      return 0;
  return n;
}

void cp_sink_json_string(cp_sink *s, const char *str) {
  const unsigned char *p = (const unsigned char *)str;
  cp_sink_write(s, "\"", 1);
  while (*p) {
    size_t n = utf8_len(p);
    if (n == 0) {
      cp_sink_puts(s, "\\ufffd");
      p++;
    } else if (*p == '"' || *p == '\\') {
      char esc[2] = {'\\', (char)*p++};
      cp_sink_write(s, esc, 2);
    } else if (*p < 0x20) {
      cp_sink_printf(s, "\\u%04x", *p++);
    } else {
      cp_sink_write(s, p, n);
      p += n;
    }
  }
  cp_sink_write(s, "\"", 1);
}

void cp_sink_json_double(cp_sink *s, double v) {
  char tmp[40];
  if (!isfinite(v)) { /* JSON has no NaN/Inf: write null, readers skip it */
    cp_sink_puts(s, "null");
    return;
  }
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (strtod(tmp, NULL) == v)
      break;
  }
  if (!strpbrk(tmp, ".eE")) /* keep it a float for readers that care */
    strncat(tmp, ".0", sizeof tmp - strlen(tmp) - 1);
  cp_sink_puts(s, tmp);
}

void cp_sink_no_clobber(cp_sink *s, int64_t since_ns, size_t stem_len) {
  s->no_clobber = 1;
  s->since_ns = since_ns;
  s->stem_len = stem_len < strlen(s->path) ? stem_len : strlen(s->path);
}


/* Whether `path` was modified at or after `since_ns`. */
static int fresh_file(const char *path, int64_t since_ns) {
  struct stat st;
  if (stat(path, &st) != 0)
    return 0;
  int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  return m >= since_ns;
}

/* Claims `path` for the finished temporary file without ever replacing a
 * file made by someone else during this run; see cp_sink_no_clobber. */
static int claim(cp_sink *s) {
  if (link(s->tmp, s->path) == 0)
    return unlink(s->tmp), CPROTON_OK;
  if (errno != EEXIST || !fresh_file(s->path, s->since_ns))
    return cp_output_replace(s->tmp, s->path);
  size_t n = strlen(s->path) + 16;
  char *alt = malloc(n);
  for (int k = 1; alt && k < 10000; k++) {
    snprintf(alt, n, "%.*s.%d%s", (int)s->stem_len, s->path, k,
             s->path + s->stem_len);
    if (link(s->tmp, alt) == 0) {
      unlink(s->tmp);
      cp_warn("'%s' was written by another process while this one ran; "
              "writing '%s' instead (give each process its own name, e.g. "
              "with {rank} or {pid})", s->path, alt);
      free(s->path);
      s->path = alt;
      return CPROTON_OK;
    }
    if (errno != EEXIST)
      break;
  }
  int err = errno;
  free(alt);
  return cp_error_set(CPROTON_EIO, "cannot write '%s' under another name: "
                      "%s", s->path, strerror(err));
}

static int close_file(cp_sink *s, int abort) {
  drain(s);
  int bad = s->gz ? gzclose(s->gz) != Z_OK : fclose(s->file) != 0;
  if (bad && !s->error)
    s->error = cp_error_set(CPROTON_EIO, "cannot finish '%s'", s->path);
  if (!s->error && !abort)
    s->error = s->no_clobber ? claim(s) : cp_output_replace(s->tmp, s->path);
  if (s->error || abort)
    cp_output_discard(s->tmp);
  return s->error;
}

static int finish(cp_sink *s, int abort, char **buf_out, size_t *size_out,
                  char *path_out, size_t path_size) {
  int rc;
  if (s->file || s->gz) {
    rc = close_file(s, abort);
    if (path_out && path_size)
      snprintf(path_out, path_size, "%s", s->path);
  } else {
    rc = s->error;
    if (!rc && !abort && buf_out) {
      if (!s->buf)
        s->buf = calloc(1, 1);
      else
        s->buf[s->len] = '\0';
      *buf_out = s->buf;
      if (size_out)
        *size_out = s->len;
      s->buf = NULL;
    }
  }
  free(s->buf), free(s->path), free(s->tmp), free(s);
  return rc;
}

int cp_sink_close(cp_sink *s, int abort, char **buf_out, size_t *size_out) {
  return finish(s, abort, buf_out, size_out, NULL, 0);
}

int cp_sink_close_file(cp_sink *s, int abort, char *path_out,
                       size_t path_size) {
  return finish(s, abort, NULL, NULL, path_out, path_size);
}
