/* core_check_test.c -- CP_ASSERT is live where CPROTON_ASSERTS is defined
 * (Debug and sanitizer builds) and compiled out, unevaluated, elsewhere. */
#include <criterion/criterion.h>
#include <signal.h>

#include "core/check.h"

static int evaluated;
static int touch(void) { return ++evaluated; }

#ifdef CPROTON_ASSERTS
Test(core_check, failed_assert_aborts, .signal = SIGABRT) {
  volatile int zero = 0;
  CP_ASSERT(zero == 1);
}

Test(core_check, true_assert_evaluates_once) {
  CP_ASSERT(touch() == 1);
  cr_assert_eq(evaluated, 1);
}
#else
Test(core_check, release_never_evaluates) {
  CP_ASSERT(touch() == 0);
  cr_assert_eq(evaluated, 0);
}
#endif
