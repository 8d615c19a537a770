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
  cproton_ptx_options options;
  unsigned decode_flags;      /* CPROTON_DECODE_TIME_SHIFT */
  cproton_reduce_kind reduce; /* AUTO when the key is absent */
  int reduce_on_device;       /* records summed on the device (not host) */
} cp_instr_mode;

/* The backend's parse_mode: `mode` into a cp_instr_mode in `out->opts`.
 * Errors: those of cproton_instr_mode_options. */
int cp_instr_mode_parse_config(const char *mode, cp_backend_config *out);

/* The parsed mode in a configuration cp_instr_mode_parse_config filled. */
const cp_instr_mode *cp_instr_mode_of(const cp_backend_config *config);

#endif
