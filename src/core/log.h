/* core/log.h -- the one diagnostics channel of the library (cp_log). */
#ifndef CP_CORE_LOG_H
#define CP_CORE_LOG_H

#include "core/error.h"
#include "cproton/cproton.h"

/* Formats and hands one line to the installed handler. Never on a hot path:
 * launch callbacks count events and report them later instead. */
void cp_log(cproton_log_level level, const char *fmt, ...) CP_PRINTF(2, 3);

#define cp_warn(...) cp_log(CPROTON_LOG_WARN, __VA_ARGS__)
#define cp_info(...) cp_log(CPROTON_LOG_INFO, __VA_ARGS__)
#define cp_debug(...) cp_log(CPROTON_LOG_DEBUG, __VA_ARGS__)

#endif
