/* backend/cupti/cupti_backend.h -- the CUPTI backend's ops table and the two
 * calls the injection entry point needs (cp_cupti_backend_*). */
#ifndef CP_BACKEND_CUPTI_CUPTI_BACKEND_H
#define CP_BACKEND_CUPTI_CUPTI_BACKEND_H

#include <stddef.h>

#include "backend/backend.h"

extern const cp_backend_ops cp_cupti_backend;

/* Copies the path of the libcupti that loaded into `buf` ("" when none did
 * yet). Thread-safe. */
void cp_cupti_backend_library_path(char *buf, size_t size);

/* Marks the process as tearing down: from now on no CUPTI or driver call is
 * made (flush and stop become no-ops). Called after the last finalize at
 * exit, and by a library destructor. Idempotent. */
void cp_cupti_backend_teardown(void);

#endif
