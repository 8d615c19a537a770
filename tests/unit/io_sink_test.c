/* io_sink_test.c -- JSON escaping, number formatting and atomic files. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "io/sink.h"
#include "testutil.h"

static char *render(void (*fn)(cp_sink *)) {
  cp_sink *s;
  cr_assert_eq(cp_sink_memory(&s), 0);
  fn(s);
  char *out = NULL;
  cr_assert_eq(cp_sink_close(s, 0, &out, NULL), 0);
  return out;
}

static void strings(cp_sink *s) {
  cp_sink_json_string(s, "a\"b\\c\n\x01");
  cp_sink_json_string(s, "caf\xc3\xa9 \xff\xfe");
}

Test(io_sink, strings_are_valid_json) {
  char *out = render(strings);
  cr_assert_str_eq(out, "\"a\\\"b\\\\c\\u000a\\u0001\"\"caf\xc3\xa9 \\ufffd\\ufffd\"");
  free(out);
}

static void doubles(cp_sink *s) {
  cp_sink_json_double(s, 669.1142578125);
  cp_sink_puts(s, " ");
  cp_sink_json_double(s, 0.1);
  cp_sink_puts(s, " ");
  cp_sink_json_double(s, 2.0);
  cp_sink_puts(s, " ");
  cp_sink_json_double(s, 1e300 * 1e300);
}

Test(io_sink, doubles_round_trip) {
  char *out = render(doubles);
  cr_assert_str_eq(out, "669.1142578125 0.1 2.0 null");
  free(out);
}

Test(io_sink, failed_file_leaves_nothing) {
  const char *path = cpt_tmp_path("atomic.json");
  cp_sink *s;
  cr_assert_eq(cp_sink_file(path, 0, &s), 0);
  cp_sink_puts(s, "partial");
  cr_assert_eq(cp_sink_close(s, 1, NULL, NULL), 0);
  cr_assert_eq(access(path, F_OK), -1);
  cr_assert_eq(cp_sink_file(path, 1, &s), 0);
  cp_sink_puts(s, "{}");
  cr_assert_eq(cp_sink_close(s, 0, NULL, NULL), 0);
  cr_assert_eq(access(path, F_OK), 0);
  cr_assert_neq(cp_sink_file("/proc/no/such", 0, &s), 0);
}
