/* fuzz_argv.h -- turns a fuzz input into an argv for the command-line
 * fuzz targets (*_cli_fuzz.c): arguments are split on NUL or newline, at
 * most FUZZ_ARGV_MAX of them, each cut to FUZZ_ARG_LEN bytes; argv[0] is
 * the program name and argv[argc] is NULL, as main() gets them. */
#ifndef CP_FUZZ_ARGV_H
#define CP_FUZZ_ARGV_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ARGV_MAX 64
#define FUZZ_ARG_LEN 4096

typedef struct fuzz_argv {
  int argc;
  char *argv[FUZZ_ARGV_MAX + 2];
  char *store; /* all arguments, NUL-separated; free with fuzz_argv_free */
} fuzz_argv;

/* Fills *a from data[0..size); returns 0, or -1 when out of memory. */
static inline int fuzz_argv_make(fuzz_argv *a, const char *prog,
                                 const uint8_t *data, size_t size) {
  memset(a, 0, sizeof *a);
  a->store = malloc(size + 1);
  if (!a->store)
    return -1;
  a->argv[a->argc++] = (char *)prog;
  size_t i = 0;
  while (i <= size && a->argc <= FUZZ_ARGV_MAX) {
    size_t start = i;
    while (i < size && data[i] != 0 && data[i] != '\n')
      i++;
    if (i == size && start == size && size > 0)
      break; /* a trailing separator ends the list */
    size_t len = i - start < FUZZ_ARG_LEN ? i - start : FUZZ_ARG_LEN;
    memcpy(a->store + start, data + start, len);
    a->store[start + len] = '\0';
    a->argv[a->argc++] = a->store + start;
    i++;
  }
  a->argv[a->argc] = NULL;
  return 0;
}

static inline void fuzz_argv_free(fuzz_argv *a) { free(a->store); }

#endif
