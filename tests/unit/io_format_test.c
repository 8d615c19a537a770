/* io_format_test.c -- the output format table and file naming: lookup by
 * name, messages that list the valid names, extensions, and the rule that
 * a profile never replaces a file another writer made during the run. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/data.h"
#include "core/error.h"
#include "core/trace.h"
#include "cproton/cproton.h"
#include "io/format.h"
#include "testutil.h"

Test(io_format, rows_by_name) {
  const cp_io_format *h = cp_io_format_find("hatchet");
  const cp_io_format *m = cp_io_format_find("hatchet_msgpack");
  const cp_io_format *c = cp_io_format_find("chrome_trace");
  cr_assert(h && m && c);
  cr_assert_str_eq(h->extension, ".hatchet");
  cr_assert_str_eq(m->extension, ".hatchet_msgpack");
  cr_assert_eq(m->kind, CP_IO_TREE);
  cr_assert_eq(c->kind, CP_IO_TRACE);
  cr_assert(c->compressible && !h->compressible);
  cr_assert_eq(cp_io_format_default(CP_IO_TREE), h);
  cr_assert_eq(cp_io_format_default(CP_IO_TRACE), c);
}

Test(io_format, unknown_name_lists_the_valid_ones) {
  cr_assert_null(cp_io_format_find("xml"));
  cr_assert_str_eq(cproton_last_error(),
                   "unknown output format 'xml' (valid: hatchet, "
                   "hatchet_msgpack, chrome_trace, chrome_timeline, perfetto)");
  char names[128];
  cp_io_format_names(CP_IO_TREE, names, sizeof names);
  cr_assert_str_eq(names, "hatchet, hatchet_msgpack");
  cp_io_format_names(CP_IO_TRACE, names, sizeof names);
  cr_assert_str_eq(names, "chrome_trace, chrome_timeline, perfetto");
  const cp_io_format *p = cp_io_format_find("perfetto");
  cr_assert_eq(p->kind, CP_IO_TRACE);
  cr_assert_not(p->compressible, "protobuf is written as is");
  cr_assert_str_eq(p->extension, ".pftrace");
}

Test(io_format, paths) {
  char out[256];
  const cp_io_format *c = cp_io_format_find("chrome_trace");
  cr_assert_eq(cp_io_format_path(c, "a/b", 1, out, sizeof out), CPROTON_OK);
  cr_assert_str_eq(out, "a/b.chrome_trace.gz");
  cr_assert_eq(cp_io_format_path(c, "a/b.chrome_trace", 0, out, sizeof out),
               CPROTON_OK);
  cr_assert_str_eq(out, "a/b.chrome_trace");
  const cp_io_format *h = cp_io_format_find("hatchet");
  cr_assert_eq(cp_io_format_path(h, "x", 1, out, sizeof out), CPROTON_OK);
  cr_assert_str_eq(out, "x.hatchet", "hatchet is not compressible");
  cr_assert_eq(cp_io_format_path(h, "x", 0, out, 4), CPROTON_EINVAL);
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
}

/* Writes an empty tree as `path` for a session started at `since`; the
 * path written goes to `got`. */
static void write_profile(const char *path, int64_t since, char *got,
                          size_t size) {
  cp_data *d = cp_data_new();
  cp_io_input in = {.data = d, .kernel_root = 1};
  cr_assert_eq(cp_io_format_write_file(cp_io_format_find("hatchet"), path, 0,
                                       since, &in, got, size),
               CPROTON_OK);
  cp_data_free(d);
}

Test(io_format, a_file_written_during_the_run_is_never_replaced) {
  char path[512], got[600];
  snprintf(path, sizeof path, "%s", cpt_tmp_path("clobber.hatchet"));
  int64_t since = now_ns();
  write_text(path, "other rank's profile");
  write_profile(path, since, got, sizeof got);
  char want[600];
  snprintf(want, sizeof want, "%.*s.1.hatchet",
           (int)(strlen(path) - strlen(".hatchet")), path);
  cr_assert_str_eq(got, want);
  size_t n;
  char *kept = cpt_read_file(path, &n);
  cr_assert_str_eq(kept, "other rank's profile");
  free(kept);
  write_profile(path, since, got, sizeof got);
  cr_assert(strstr(got, ".2.hatchet"), "%s", got);
}

Test(io_format, an_earlier_runs_file_is_replaced) {
  char path[512], got[600];
  snprintf(path, sizeof path, "%s", cpt_tmp_path("stale.hatchet"));
  write_text(path, "last week's profile");
  int64_t since = now_ns() + 1000000; /* the session started after it */
  usleep(2000);
  write_profile(path, since, got, sizeof got);
  cr_assert_str_eq(got, path);
  size_t n;
  char *text = cpt_read_file(path, &n);
  cr_assert(text[0] == '[', "replaced by the new profile");
  free(text);
}
