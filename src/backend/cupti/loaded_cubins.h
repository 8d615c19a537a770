/* backend/cupti/loaded_cubins.h -- the cubins in the fat binaries of the
 * objects loaded in this process (cp_loaded_cubins_*): the program and its
 * shared libraries, listed by dl_iterate_phdr, each read from its file
 * (backend/cupti/fatbin.h) at most once per set. PC sampling uses it for
 * modules that loaded before sampling began, whose cubins CUPTI's module
 * callback never handed over. Not a hot path; a set is used by one thread
 * at a time (the caller locks). */
#ifndef CP_BACKEND_CUPTI_LOADED_CUBINS_H
#define CP_BACKEND_CUPTI_LOADED_CUBINS_H

#include <stddef.h>

#include "backend/cupti/fatbin.h"

/* The objects scanned so far (device and inode of their files). */
typedef struct cp_loaded_cubins cp_loaded_cubins;

/* A new, empty set; NULL when out of memory. */
cp_loaded_cubins *cp_loaded_cubins_new(void);
/* Frees the set; NULL is accepted. */
void cp_loaded_cubins_free(cp_loaded_cubins *s);

/* Scans every loaded object the set has not scanned yet for cubins of SM
 * architecture `arch` (0: any), passing each to `fn` (cp_fatbin_walk);
 * sections over `max_section` bytes are counted in st->skipped. An object
 * that cannot be read is counted in *failed (its message is the thread's
 * error message) and not retried; the others are still scanned. Returns
 * the number of objects scanned by this call. */
size_t cp_loaded_cubins_scan(cp_loaded_cubins *s, unsigned arch,
                             size_t max_section, cp_fatbin_cubin_fn fn,
                             void *ctx, cp_fatbin_stats *st, size_t *failed);

#endif
