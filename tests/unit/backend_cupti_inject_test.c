/* backend_cupti_inject_test.c -- the injection's settings are checked when
 * the program starts (issue 24.16): values are never cut, a bad format,
 * data, switch, log level or output directory is refused with one message
 * naming the variable, and then no session runs (nothing to lose at exit).
 * CPU only: InitializeInjection falls back to CPU recording without CUPTI,
 * and no kernel runs, so nothing is written at exit. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#ifdef CPROTON_HAVE_CUPTI
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/config.h"
#include "backend/cupti/inject.h"
#include "cproton/cproton.h"
#include "testutil.h"

static const char *const vars[] = {
    "CPROTON_NAME", "CPROTON_DATA", "CPROTON_FORMAT", "CPROTON_CONTEXT",
    "CPROTON_MODE", "CPROTON_GZIP", "CPROTON_DISABLE", "CPROTON_LOG",
    "TRITON_PROTON_DISABLE", "CPROTON_BACKEND", NULL};

static void clear_env(void) {
  for (const char *const *v = vars; *v; v++)
    unsetenv(*v);
}

static void clear_and_capture(void) {
  clear_env();
  cr_redirect_stderr();
}

/* What InitializeInjection printed. */
static char *captured(void) {
  fflush(stderr);
  FILE *f = cr_get_redirected_stderr();
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  return buf;
}

static int lines(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

Test(backend_cupti_inject, long_values_are_read_whole_or_refused,
     .init = clear_env) {
  /* 129 bytes that used to run as "...interval=10000" */
  char long_mode[130];
  snprintf(long_mode, sizeof long_mode, "%s", "pcsampling:");
  while (strlen(long_mode) < 129 - strlen("interval=1000000"))
    strcat(long_mode, ":");
  strcat(long_mode, "interval=1000000");
  cr_assert_eq(strlen(long_mode), 129);
  setenv("CPROTON_MODE", long_mode, 1);
  cp_inject_config c;
  cr_assert_eq(cp_inject_config_from_env(&c), CPROTON_OK, "%s",
               cproton_last_error());
  cr_assert_str_eq(c.mode, long_mode);
  char mode[1100];
  memset(mode, 'x', sizeof mode - 1);
  mode[sizeof mode - 1] = '\0';
  setenv("CPROTON_MODE", mode, 1);
  cr_assert_eq(cp_inject_config_from_env(&c), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "CPROTON_MODE is 1099 bytes long"),
            "%s", cproton_last_error());
  unsetenv("CPROTON_MODE");
  setenv("CPROTON_FORMAT", "hatchet_msgpack_and_then_some_more", 1);
  cr_assert_eq(cp_inject_config_from_env(&c), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "CPROTON_FORMAT is 34 bytes"), "%s",
            cproton_last_error());
}

Test(backend_cupti_inject, bad_settings_are_named, .init = clear_env) {
  static const struct {
    const char *var, *value, *message;
  } cases[] = {
      {"CPROTON_FORMAT", "bogus", "CPROTON_FORMAT: unknown output format 'bogus'"},
      {"CPROTON_FORMAT", "perfetto", "output format 'perfetto' writes trace data"},
      {"CPROTON_DATA", "forest", "CPROTON_DATA='forest' is not tree or trace"},
      {"CPROTON_GZIP", "yes", "CPROTON_GZIP='yes' is not 0 or 1"},
      {"CPROTON_GZIP", " 1", "CPROTON_GZIP=' 1' is not 0 or 1"},
      {"CPROTON_DISABLE", "maybe", "CPROTON_DISABLE='maybe' is not 0 or 1"},
      {"CPROTON_LOG", "loud", "CPROTON_LOG='loud' is not debug, info"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    clear_env();
    setenv(cases[i].var, cases[i].value, 1);
    cp_inject_config c;
    cr_assert_eq(cp_inject_config_from_env(&c), CPROTON_EINVAL, "%s=%s",
                 cases[i].var, cases[i].value);
    cr_assert(strstr(cproton_last_error(), cases[i].message), "%s",
              cproton_last_error());
    cr_assert_eq(c.log_level, CPROTON_LOG_WARN);
  }
  clear_env();
  setenv("CPROTON_DATA", "trace", 1);
  setenv("CPROTON_FORMAT", "perfetto", 1);
  setenv("CPROTON_GZIP", "1", 1);
  cp_inject_config c;
  cr_assert_eq(cp_inject_config_from_env(&c), CPROTON_OK, "%s",
               cproton_last_error());
  cr_assert(c.gzip);
}

static void assert_refused_at_start(const char *message) {
  cr_assert_eq(InitializeInjection(), 1);
  char *err = captured();
  cr_assert(strstr(err, message), "stderr: %s", err);
  cr_assert_eq(lines(err, "not profiling this process"), 1, "%s", err);
  char path[256];
  cr_assert_eq(cproton_session_output_path(0, path, sizeof path),
               CPROTON_ENOTFOUND, "a session started: %s", path);
}

Test(backend_cupti_inject, unknown_format_refused_at_start,
     .init = clear_and_capture) {
  setenv("CPROTON_NAME", cpt_tmp_path("inject"), 1);
  setenv("CPROTON_FORMAT", "bogus", 1);
  assert_refused_at_start("CPROTON_FORMAT: unknown output format 'bogus'");
}

/* The launcher exports CPROTON_BACKEND (`cproton --backend`); the injection
 * ignored it before issue 25 and profiled with CUPTI whatever it said. */
Test(backend_cupti_inject, backend_variable_is_honoured,
     .init = clear_and_capture) {
  setenv("CPROTON_NAME", cpt_tmp_path("inject_backend"), 1);
  setenv("CPROTON_BACKEND", "bogus", 1);
  assert_refused_at_start("bogus");
}

Test(backend_cupti_inject, missing_directory_refused_at_start,
     .init = clear_and_capture) {
  char name[600];
  snprintf(name, sizeof name, "%s/x_{rank}", cpt_tmp_path("missing"));
  setenv("CPROTON_NAME", name, 1);
  char want[700];
  snprintf(want, sizeof want, "no directory '%s'", cpt_tmp_path("missing"));
  assert_refused_at_start(want);
}

Test(backend_cupti_inject, good_settings_start_a_session,
     .init = clear_and_capture) {
  setenv("CPROTON_NAME", cpt_tmp_path("good_{pid}"), 1);
  setenv("CPROTON_DATA", "trace", 1);
  setenv("CPROTON_FORMAT", "perfetto", 1);
  cr_assert_eq(InitializeInjection(), 1);
  char path[600];
  cr_assert_eq(cproton_session_output_path(0, path, sizeof path), CPROTON_OK);
  cr_assert(strstr(path, "good_"));
  cr_assert_eq(lines(captured(), "not profiling"), 0);
}

#endif
