/* tools/instrument/args.h -- cproton-instrument's command line
 * (ci_parse_args), kept apart from main so that the fuzz target
 * tests/fuzz/instrument_cli_fuzz.c can run it. */
#ifndef CPROTON_INSTRUMENT_ARGS_H
#define CPROTON_INSTRUMENT_ARGS_H

#include "cproton/cproton.h"

typedef struct ci_args {
  const char *in, *out; /* point into argv */
  int quiet;
  cproton_ptx_options o;
  char err[512]; /* the reason, when ci_parse_args() returns -1 */
} ci_args;

/* The usage text printed by --help and after usage errors. */
extern const char ci_usage[];

/* Parses argv (argv[0] is the program) into *a. Returns 0, 1 when -h or
 * --help was given, or -1 with a->err set ("bad option '--counter' x",
 * "no input file"). Never exits or prints; keeps no state between calls. */
int ci_parse_args(int argc, char **argv, ci_args *a);

#endif
