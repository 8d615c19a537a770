/* backend/cupti/fatbin.h -- the cubins inside an ELF file's fat binary
 * (cp_fatbin_*): nvcc puts every kernel of a program or shared library in
 * its `.nv_fatbin` section, a sequence of containers each holding entries
 * (a cubin per SM architecture, PTX). PC sampling needs the cubin of a
 * module to map PCs to source lines; CUPTI hands it over only when the
 * module loads, so a module loaded before sampling started is found here.
 *
 * Layouts (little-endian; what nvcc 12-13 write; fields not named are not
 * read):
 *
 *   container: u32 magic 0xBA55ED50 | u16 version | u16 header size (H)
 *              | u64 entries size (S) | ... H bytes, then S bytes of entries
 *   entry:     u16 kind (2 = ELF cubin, 1 = PTX) | u16 version
 *              | u32 header size (h) | u64 payload size (p) | ...
 *              | u32 SM architecture at +28 (90 = sm_90) | ...
 *              h bytes, then p bytes of payload
 *
 * A cubin payload is a plain ELF image; a compressed one (nvcc's
 * -compress-mode, PTX by default in CUDA 13) does not start with the ELF
 * magic and is counted, not delivered. Input is untrusted: every size is
 * checked against its enclosing one. Not a hot path; no global state. */
#ifndef CP_BACKEND_CUPTI_FATBIN_H
#define CP_BACKEND_CUPTI_FATBIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_fatbin_stats {
  uint64_t cubins;     /* delivered */
  uint64_t compressed; /* ELF entries that are not plain ELF: not delivered */
  uint64_t other_arch; /* ELF entries for another architecture */
  uint64_t skipped;    /* files whose section is over the size limit */
} cp_fatbin_stats;

/* Called with each cubin: `size` is the ELF image's own extent, `offset`
 * where it starts in the walked bytes (cp_fatbin_walk) or in the file
 * (cp_fatbin_scan_file). The bytes are valid during the call only. A
 * non-zero return stops the walk. */
typedef int (*cp_fatbin_cubin_fn)(void *ctx, const void *cubin, size_t size,
                                  uint64_t offset);

/* Walks the containers in `data` (`size` bytes, e.g. a `.nv_fatbin`
 * section), calling `fn` for each plain ELF cubin of SM architecture `arch`
 * (0: every architecture); zero padding between containers is skipped.
 * Returns CPROTON_OK, or CPROTON_EPARSE with a message naming the offset of
 * a malformed container or entry (the cubins before it were delivered). */
int cp_fatbin_walk(const uint8_t *data, size_t size, unsigned arch,
                   cp_fatbin_cubin_fn fn, void *ctx, cp_fatbin_stats *st);

/* The `.nv_fatbin` section of the ELF file at `path`, read and walked as
 * cp_fatbin_walk does. A file without the section (or not a 64-bit
 * little-endian ELF file) delivers nothing and returns CPROTON_OK; a
 * section larger than `max_bytes` is counted in st->skipped. Errors: EIO
 * (cannot open or read), ENOMEM, EPARSE (section headers or section out of
 * the file, a malformed fat binary), each naming `path`. */
int cp_fatbin_scan_file(const char *path, unsigned arch, size_t max_bytes,
                        cp_fatbin_cubin_fn fn, void *ctx, cp_fatbin_stats *st);

/* Reads `n` bytes at `off` of the file at `path` into a new buffer *out
 * (the caller frees it): a cubin found by cp_fatbin_scan_file, read again.
 * Errors: EIO, ENOMEM, each naming `path`. */
int cp_fatbin_read(const char *path, uint64_t off, uint64_t n, uint8_t **out);

#endif
