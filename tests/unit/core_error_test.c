/* core_error_test.c -- the status table and per-thread messages. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "cproton/cproton.h"

Test(core_error, strerror_covers_every_code) {
  cr_assert_str_eq(cproton_strerror(CPROTON_OK), "success");
  cr_assert_str_eq(cproton_strerror(CPROTON_EINVAL), "invalid argument");
  cr_assert_str_eq(cproton_error_name(CPROTON_EPARSE), "CPROTON_EPARSE");
  cr_assert_str_eq(cproton_strerror(12345), "unknown status");
}

static void *other_thread(void *arg) {
  cp_error_set(CPROTON_EIO, "thread message");
  return NULL;
}

Test(core_error, messages_are_per_thread) {
  cr_assert_eq(cp_error_set(CPROTON_EINVAL, "main %d", 7), CPROTON_EINVAL);
  pthread_t t;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, NULL);
  cr_assert_str_eq(cproton_last_error(), "main 7");
}

Test(core_error, version_matches_macros) {
  cr_assert_str_eq(cproton_version(), CPROTON_VERSION_STRING);
  cr_assert_eq(CPROTON_VERSION_HEX, 0x000100);
}

/* A cause wrapped in context: the message is an argument of the call that
 * replaces it (valgrind reported the overlapping copy in loader.c's
 * "no NVIDIA driver: %s"). */
Test(core_error, wrapping_the_message_in_context) {
  cp_error_set(CPROTON_ENODEVICE, "libcuda.so.1: cannot open shared object");
  cp_error_set(CPROTON_ENODEVICE, "no NVIDIA driver: %s", cp_error_message());
  cr_assert_str_eq(cproton_last_error(),
                   "no NVIDIA driver: libcuda.so.1: cannot open shared object");
}
