/* instrument_cli_fuzz.c -- libFuzzer target for cproton-instrument's
 * command line (tools/instrument/args.c): the input becomes an argv
 * (fuzz_argv.h) and goes through ci_parse_args(), which must accept it or
 * explain why, never crash or exit. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "args.h"
#include "fuzz_argv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_argv a;
  if (fuzz_argv_make(&a, "cproton-instrument", data, size))
    return 0;
  static ci_args args;
  int rc = ci_parse_args(a.argc, a.argv, &args);
  volatile size_t sink = 0;
  if (rc == 0) {
    sink += strlen(args.in) + (args.out ? strlen(args.out) : 0);
    sink += args.o.buffer_size + args.o.sample_mask + (size_t)args.quiet;
  } else if (rc < 0 && !args.err[0]) {
    __builtin_trap(); /* an error must come with a message */
  }
  (void)sink; /* clang 14 calls a volatile only added to "set but not used" */
  fuzz_argv_free(&a);
  return 0;
}
