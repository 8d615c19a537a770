/* backend/instrumentation/mode.h -- the instrumentation backend's mode,
 * parsed once per session by mode.c (the backend's parse_mode) into what
 * the runtime needs at start: pass options, decoder flags, where tree
 * totals are reduced. The public cproton_instr_mode_* functions
 * (cproton/instrumentation.h) are the same parser for C and Python front
 * ends. Pure; not a hot path. */
#ifndef CP_BACKEND_INSTRUMENTATION_MODE_H
#define CP_BACKEND_INSTRUMENTATION_MODE_H

#include "backend/backend.h"
#include "cproton/instrumentation.h"

typedef struct cp_instr_mode {
  /* pass options, decoder flags (CPROTON_DECODE_TIME_SHIFT), reduce (AUTO
   * when the key is absent), the in-kernel-sums rule, the canonical form:
   * what the front end reads through cproton_session_instr_mode */
  cproton_instr_mode_info info;
  int reduce_on_device; /* records summed on the device (not host) */
} cp_instr_mode;

/* The backend's parse_mode: `mode` for a session of `out->is_trace` into a
 * cp_instr_mode in `out->opts`. Errors: those of cproton_instr_mode_parse
 * (the same function: reduce=kernel refused where records are needed). */
int cp_instr_mode_parse_config(const char *mode, cp_backend_config *out);

/* The backend's instr_mode_info: the public part of the parsed mode. */
int cp_instr_mode_info_of(const cp_backend_config *config,
                          cproton_instr_mode_info *out);

/* The parsed mode in a configuration cp_instr_mode_parse_config filled. */
const cp_instr_mode *cp_instr_mode_of(const cp_backend_config *config);

#endif
