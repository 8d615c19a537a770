/* cproton/errors.h -- the one table of cproton status codes.
 *
 * Every public function that can fail returns one of these codes (0 on
 * success, negative on failure) and leaves a detail message for the calling
 * thread, read with cproton_last_error(). The list is an X-macro so that the
 * enum, cproton_strerror() and cproton_error_name() never drift apart. */
#ifndef CPROTON_ERRORS_H
#define CPROTON_ERRORS_H

/* X(NAME, value, description) */
#define CPROTON_ERROR_LIST(X)                                                  \
  X(OK, 0, "success")                                                          \
  X(EINVAL, -1, "invalid argument")                                            \
  X(ENOMEM, -2, "out of memory")                                               \
  X(EIO, -3, "input/output error")                                             \
  X(ENOTFOUND, -4, "not found")                                                \
  X(ESTATE, -5, "operation not valid in the current state")                    \
  X(EPARSE, -6, "malformed input")                                             \
  X(EUNSUPPORTED, -7, "not supported")                                         \
  X(EBACKEND, -8, "GPU backend error")                                         \
  X(ELIMIT, -9, "limit exceeded")                                              \
  X(ENODEVICE, -10, "no GPU backend available")

typedef enum cproton_status {
#define CPROTON_X_ENUM(name, value, text) CPROTON_##name = (value),
  CPROTON_ERROR_LIST(CPROTON_X_ENUM)
#undef CPROTON_X_ENUM
} cproton_status;

#endif
