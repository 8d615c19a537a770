/* backend/cupti/inject.h -- CUDA's injection entry point. With
 * CUDA_INJECTION64_PATH=/path/to/libcproton.so, the CUDA driver loads the
 * library during cuInit and calls InitializeInjection(), which starts a
 * session from environment variables (backend/cupti/config.h lists them)
 * and finalizes it at exit. This is the one exported symbol without the
 * cproton_ prefix: CUDA requires the name. */
#ifndef CP_BACKEND_CUPTI_INJECT_H
#define CP_BACKEND_CUPTI_INJECT_H

#include "cproton/export.h"

/* Called by the CUDA driver, once, on the thread running cuInit. Returns 1
 * (success) even when profiling could not start, so the program runs on;
 * the reason is logged. Idempotent. */
CPROTON_API int InitializeInjection(void);

#endif
