/* core/check.h -- CP_ASSERT: invariants checked in debug and sanitizer builds.
 *
 * Why: comments that state an invariant ("Invariant: ...") are only as good
 * as the code that keeps them; CP_ASSERT makes the cheap ones checkable by
 * the test and sanitizer builds without costing the product anything.
 * CMake defines CPROTON_ASSERTS for CMAKE_BUILD_TYPE=Debug and whenever a
 * sanitizer option (CPROTON_SANITIZE, CPROTON_TSAN, CPROTON_MSAN,
 * CPROTON_FUZZ) is on. Without it the condition is not evaluated (only
 * type-checked inside sizeof), so a release build never aborts: library
 * code still returns a status for every failure it can meet at run time.
 * A failed assert is a bug in cproton, never bad input. */
#ifndef CPROTON_CORE_CHECK_H
#define CPROTON_CORE_CHECK_H

#ifdef CPROTON_ASSERTS
#include <stdio.h>
#include <stdlib.h>
#define CP_ASSERT(cond)                                                    \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "cproton: %s:%d: assertion failed: %s\n", __FILE__, \
              __LINE__, #cond);                                            \
      abort();                                                             \
    }                                                                      \
  } while (0)
#else
#define CP_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif
