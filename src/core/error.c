/* core/error.c -- the status table's strings and the per-thread detail
 * message behind cproton_last_error().
 *
 * Invariant: the message buffer is thread-local, so one thread's failure never
 * overwrites another's. Not a hot path; called by any thread. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "cproton/cproton.h"

static _Thread_local char message[1024];

/* Formatted aside first: a caller wrapping a cause in context passes the
 * message itself as an argument (cp_error_set(rc, "x: %s",
 * cp_error_message())), which vsnprintf must not read while writing it. */
int cp_error_set(int code, const char *fmt, ...) {
  char text[sizeof message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  memcpy(message, text, sizeof message);
  return code;
}

void cp_error_clear(void) { message[0] = '\0'; }

const char *cp_error_message(void) { return message; }

const char *cproton_last_error(void) { return message; }

const char *cproton_strerror(int code) {
  switch (code) {
#define X_TEXT(name, value, text)                                              \
  case value:                                                                  \
    return text;
    CPROTON_ERROR_LIST(X_TEXT)
#undef X_TEXT
  }
  return "unknown status";
}

const char *cproton_error_name(int code) {
  switch (code) {
#define X_NAME(name, value, text)                                              \
  case value:                                                                  \
    return "CPROTON_" #name;
    CPROTON_ERROR_LIST(X_NAME)
#undef X_NAME
  }
  return "CPROTON_UNKNOWN";
}

const char *cproton_version(void) { return CPROTON_VERSION_STRING; }
