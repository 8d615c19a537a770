/* core/error.h -- per-thread error detail messages (cp_error_*). */
#ifndef CP_CORE_ERROR_H
#define CP_CORE_ERROR_H

#include "cproton/errors.h"

#if defined(__GNUC__)
#define CP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CP_PRINTF(a, b)
#endif

/* Records `fmt` as the calling thread's detail message and returns `code`,
 * so that failures read `return cp_error_set(CPROTON_EINVAL, "...")`. */
int cp_error_set(int code, const char *fmt, ...) CP_PRINTF(2, 3);

/* Clears the calling thread's message. */
void cp_error_clear(void);

/* The calling thread's message ("" when none). */
const char *cp_error_message(void);

#endif
