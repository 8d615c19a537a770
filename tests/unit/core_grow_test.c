/* core_grow_test.c -- cp_grow: doubling from the first size, untouched
 * arrays when it fits, and an overflowing size refused with ENOMEM while
 * the old array and capacity stay as they were. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/grow.h"
#include "cproton/cproton.h"

Test(core_grow, doubles_from_first_until_it_fits) {
  int *a = NULL;
  size_t cap = 0;
  void *p;
  cr_assert_eq(cp_grow(a, &cap, 1, sizeof *a, 16, &p), CPROTON_OK);
  a = p;
  cr_assert_eq(cap, 16);
  a[15] = 7;
  cr_assert_eq(cp_grow(a, &cap, 16, sizeof *a, 16, &p), CPROTON_OK);
  cr_assert_eq(p, a); /* fits: same array */
  cr_assert_eq(cp_grow(a, &cap, 100, sizeof *a, 16, &p), CPROTON_OK);
  a = p;
  cr_assert_eq(cap, 128);
  cr_assert_eq(a[15], 7);
  free(a);
}

Test(core_grow, overflow_is_refused_and_changes_nothing) {
  char *a = malloc(8);
  size_t cap = 8;
  void *p = a;
  cr_assert_eq(cp_grow(a, &cap, SIZE_MAX, 1, 8, &p), CPROTON_ENOMEM);
  cr_assert_eq(cap, 8);
  cr_assert_null(p);
  cr_assert_eq(cp_grow(a, &cap, SIZE_MAX / 4, 64, 8, &p), CPROTON_ENOMEM);
  cr_assert_eq(cap, 8);
  a[7] = 1; /* still ours */
  free(a);
}
