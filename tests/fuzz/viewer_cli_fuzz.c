/* viewer_cli_fuzz.c -- libFuzzer target for cproton-viewer's command line
 * (tools/viewer/args.c): the input becomes an argv (fuzz_argv.h) and goes
 * through vw_parse_args(), which must accept it or set a message, never
 * crash or exit; the parsed fields are then read. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_argv.h"
#include "viewer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_argv a;
  if (fuzz_argv_make(&a, "cproton-viewer", data, size))
    return 0;
  vw_args args;
  vw_errmsg[0] = '\0';
  int rc = vw_parse_args(a.argc, a.argv, &args);
  volatile size_t sink = 0;
  if (rc == 0) {
    const char *s[] = {args.metrics, args.include, args.exclude, args.format,
                       args.diff,    args.output,  args.file};
    for (size_t k = 0; k < sizeof s / sizeof *s; k++)
      sink += s[k] ? strlen(s[k]) : 0;
    sink += (size_t)args.depth + (size_t)args.list;
  } else if (rc < 0 && !vw_errmsg[0]) {
    __builtin_trap(); /* an error must come with a message */
  }
  (void)sink; /* clang 14 calls a volatile only added to "set but not used" */
  fuzz_argv_free(&a);
  return 0;
}
