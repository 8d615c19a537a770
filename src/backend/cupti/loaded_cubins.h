/* backend/cupti/loaded_cubins.h -- the cubins in the fat binaries of the
 * objects loaded in this process, found by CRC (cp_loaded_cubins_*): the
 * program and its shared libraries, listed by dl_iterate_phdr, each file
 * read (backend/cupti/fatbin.h) once per set to index its cubins of one
 * SM architecture by CRC (file, offset, size; no bytes kept), and the
 * cubin asked for read back from its file. PC sampling uses it for modules
 * that loaded before sampling began, whose cubins CUPTI's module callback
 * never handed over. Not a hot path; one thread at a time (the caller
 * locks). */
#ifndef CP_BACKEND_CUPTI_LOADED_CUBINS_H
#define CP_BACKEND_CUPTI_LOADED_CUBINS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cupti/fatbin.h"

/* The CRC CUPTI's PC samples name a cubin by (cuptiGetCubinCrc); 0 or an
 * error code. */
typedef int (*cp_loaded_crc_fn)(const void *cubin, size_t size, uint64_t *crc);

typedef struct cp_loaded_cubins cp_loaded_cubins;

/* A new, empty set for cubins of SM architecture `arch` (0: any), reading
 * `.nv_fatbin` sections up to `max_section` bytes; NULL when out of memory. */
cp_loaded_cubins *cp_loaded_cubins_new(cp_loaded_crc_fn crc, unsigned arch,
                                       size_t max_section);
/* Frees the set; NULL is accepted. */
void cp_loaded_cubins_free(cp_loaded_cubins *s);

/* The cubin whose CRC is `crc`: the loaded objects the set has not read yet
 * are read first and their cubins indexed; then the indexed cubin is read
 * back from its file and passed to `fn` (its offset: in that file).
 * Returns 1 when passed, 0 when no loaded object holds it. What the scans
 * found adds to *st; an object that cannot be read (or a cubin that cannot
 * be read back) adds to *failed, the thread's error message saying why. */
int cp_loaded_cubins_find(cp_loaded_cubins *s, uint64_t crc,
                          cp_fatbin_cubin_fn fn, void *ctx,
                          cp_fatbin_stats *st, size_t *failed);

/* Objects read and cubins indexed so far. */
void cp_loaded_cubins_counts(const cp_loaded_cubins *s, size_t *objects,
                             size_t *cubins);

#endif
