/* backend/instrumentation/runtime.h -- internals shared by the
 * instrumentation runtime's files (cp_instr_*). */
#ifndef CP_BACKEND_INSTR_RUNTIME_H
#define CP_BACKEND_INSTR_RUNTIME_H

#include "backend/instrumentation/deliver.h"

/* Decoder flags of the active session's mode (time_shift). */
unsigned cp_instr_mode_decode_flags(void);

#endif
