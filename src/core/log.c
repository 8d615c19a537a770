/* core/log.c -- routes diagnostics to a handler the embedding program sets
 * (Python, the tools); the default writes "cproton: <level>: ..." to stderr.
 *
 * Invariant: the handler triple is swapped under a mutex and read under it,
 * so a handler is never called after cproton_log_set_handler replaced it.
 * Not a hot path. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cproton_log_fn handler;
static void *handler_user;
static cproton_log_level min_level = CPROTON_LOG_WARN;

static const char *level_names[] = {"debug", "info", "warning", "error"};

void cproton_log_set_handler(cproton_log_fn fn, void *user,
                             cproton_log_level level) {
  pthread_mutex_lock(&lock);
  handler = fn;
  handler_user = user;
  min_level = level;
  pthread_mutex_unlock(&lock);
}

void cp_log(cproton_log_level level, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&lock);
  if (level >= min_level) {
    if (handler)
      handler(handler_user, level, line);
    else if ((unsigned)level < 4)
      fprintf(stderr, "cproton: %s: %s\n", level_names[level], line);
  }
  pthread_mutex_unlock(&lock);
}
