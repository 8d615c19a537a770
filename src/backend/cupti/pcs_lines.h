/* backend/cupti/pcs_lines.h -- cubins and their line tables for PC
 * sampling (cp_pcs_lines_*): a PC sample names (cubin CRC, function, PC
 * offset); this module keeps a copy of every cubin it was given (module
 * load callbacks, Triton's kept cubins, the recover hook) and maps such a triple to the
 * interned frame name "dir/file:line@function" through the cubin's line
 * table, as Proton names it.
 *
 * The vendor calls (cuptiGetCubinCrc, cuptiGetSassToSourceCorrelation) are
 * hooks, so tests run it on a checked-in cubin or with fakes. Thread-safe
 * (one mutex); not a hot path (module loads, ranges closing). */
#ifndef CP_BACKEND_CUPTI_PCS_LINES_H
#define CP_BACKEND_CUPTI_PCS_LINES_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_pcs_lines cp_pcs_lines;

typedef struct cp_pcs_line_hooks {
  /* The CRC CUPTI puts in samples of `cubin`. 0 or an error code. */
  int (*crc)(const void *cubin, size_t size, uint64_t *crc_out);
  /* Line, file and directory of `pc` in `function` (file and dir are
   * malloc'd by the callee, freed here; NULL = unknown). 0 or an error. */
  int (*source)(const void *cubin, size_t size, const char *function,
                uint64_t pc, uint32_t *line, char **file, char **dir);
  /* Optional (NULL: none): called, without the store's lock, when a sample
   * names cubin `crc` the store lacks (a module loaded before sampling
   * began); it may cp_pcs_lines_add the cubin if it finds it. Called at
   * most once per unknown CRC (the first 256 of them). */
  void (*recover)(cp_pcs_lines *l, uint64_t crc);
} cp_pcs_line_hooks;

typedef struct cp_pcs_lines_stats {
  uint64_t cubins, bytes;   /* cubins kept and their size */
  uint64_t refused;         /* cubins not kept: over the byte limit */
  uint64_t lookups, misses; /* resolutions; those without a line */
  uint64_t recoveries;      /* recover hook calls (unknown CRCs) */
} cp_pcs_lines_stats;

/* A store keeping at most `max_bytes` of cubins. NULL when out of memory. */
cp_pcs_lines *cp_pcs_lines_new(const cp_pcs_line_hooks *hooks,
                               size_t max_bytes);
void cp_pcs_lines_free(cp_pcs_lines *l);

/* Copies `cubin` (`size` bytes) unless a cubin with its CRC is kept.
 * Errors: EINVAL (CRC refused), ELIMIT (byte limit; counted), ENOMEM. */
int cp_pcs_lines_add(cp_pcs_lines *l, const void *cubin, size_t size);

/* The strtab id of "dir/file:line@function" for the sample triple, or 0
 * when the cubin is unknown or has no line for `pc` (the sample then stays
 * on its kernel node). Cached per (crc, function, pc). */
uint32_t cp_pcs_lines_resolve(cp_pcs_lines *l, uint64_t crc,
                              const char *function, uint64_t pc);

void cp_pcs_lines_get_stats(cp_pcs_lines *l, cp_pcs_lines_stats *out);

#endif
