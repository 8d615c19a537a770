/* log_capture.c -- what the library logged during a unit test (the fake
 * CUPTI tests' warnings and messages): one handler for every test that
 * checks cp_log's output, installed by cpt_log_capture. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

cpt_log cpt_logged;

static void capture(void *user, cproton_log_level level, const char *m) {
  (void)user;
  if (level >= CPROTON_LOG_WARN) {
    cpt_logged.n_warnings++;
    snprintf(cpt_logged.last_warning, sizeof cpt_logged.last_warning, "%s", m);
  }
  size_t len = strlen(cpt_logged.all);
  if (len + 1 < sizeof cpt_logged.all) /* keep what fits, never overflow */
    snprintf(cpt_logged.all + len, sizeof cpt_logged.all - len, "%s\n", m);
}

void cpt_log_capture(cproton_log_level min) {
  memset(&cpt_logged, 0, sizeof cpt_logged);
  cproton_log_set_handler(capture, NULL, min);
}

void cpt_log_release(void) { cproton_log_set_handler(NULL, NULL, CPROTON_LOG_WARN); }
