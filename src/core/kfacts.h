/* core/kfacts.h -- compile and launch facts per kernel (issue 26,
 * docs/advisor.md): registers, shared and local memory, grid and block from
 * the first CUPTI kernel record of each kernel, the stack frame from its
 * cubin (PC sampling keeps cubins), Triton's compile facts from the launch
 * hook; the profile writers add them to every kernel frame of
 * that name as "kernel.*" / "triton.*" metrics. Facts are per kernel name,
 * not per launch: the first value of each fact is kept, and the number of
 * distinct launch configurations is counted; a kernel launched as several
 * compiled variants (an autotuner's configs) also gets each variant's
 * launches and time, summarized as kernel.variant_* facts. */
#ifndef CP_CORE_KFACTS_H
#define CP_CORE_KFACTS_H

#include <stddef.h>
#include <stdint.h>

/* What one CUPTI kernel record says about its kernel. `timed`: the record
 * was delivered to a session, so its duration_ns counts towards its
 * compiled variant's time (kernel.variant_*, docs/advisor.md). */
typedef struct cp_kfacts_launch {
  int64_t regs, smem_static, smem_dynamic, local_bytes;
  uint32_t grid[3], block[3];
  uint64_t duration_ns;
  int timed;
} cp_kfacts_launch;

/* The most compiled variants (threads, shared memory, registers) timed per
 * kernel; a kernel with more gets no kernel.variant_* facts. */
#define CP_KFACTS_MAX_VARIANTS 16

/* The most distinct configurations counted per kernel ("kernel.configs"
 * stays at this value beyond it). */
#define CP_KFACTS_MAX_CONFIGS 64

/* One fact as the writers emit it; `str` is set for text facts. Strings are
 * owned by the table and live until cp_kfacts_reset(). */
typedef struct cp_kfact {
  const char *name;
  int64_t value;
  const char *str;
} cp_kfact;

/* The most facts one kernel can have (the size of cp_kfacts_get's out). */
#define CP_KFACTS_MAX 32

/* Notes a launch of `kernel` (CUPTI's records thread). A name string and
 * configuration this thread noted before cost a cache probe and a strcmp
 * (~15-30 ns); anything new takes the lock and hashes the name; no
 * allocation once the kernel is known. Returns CPROTON_OK or
 * CPROTON_ENOMEM. */
int cp_kfacts_launch_note(const char *kernel, const cp_kfacts_launch *l);

/* Sets fact `fact` (a name of docs/advisor.md's table, e.g.
 * "triton.num_warps") of `kernel` to `value`, or to the text `str` when
 * that is not NULL; a fact already set keeps its first value. Returns
 * CPROTON_OK, CPROTON_EINVAL (unknown fact, a number for a text fact or
 * the reverse, NULL kernel; message set) or CPROTON_ENOMEM. Thread-safe. */
int cp_kfacts_set(const char *kernel, const char *fact, int64_t value,
                  const char *str);

/* Notes that frames named `frame` hold launches of `kernel`: an op named
 * by the launch's metadata (Triton's launch_metadata "name", e.g.
 * matmul_kernel_2048x2048x2048) where the record of kernel `kernel` lands.
 * cp_kfacts_get(frame) then gives `kernel`'s facts when `frame` has none of
 * its own; the first kernel noted for a frame wins. A pair this thread
 * noted before costs a cache probe and two strcmp. Returns CPROTON_OK or
 * CPROTON_ENOMEM. Thread-safe. */
int cp_kfacts_alias(const char *frame, const char *kernel);

/* Copies the facts known for `kernel` (or for the kernel a frame of that
 * name holds: cp_kfacts_alias) into out (room for CP_KFACTS_MAX); returns
 * how many (0 for an unknown kernel). Thread-safe. */
size_t cp_kfacts_get(const char *kernel, cp_kfact *out);

/* Forgets every kernel (tests). Not while other threads use the table. */
void cp_kfacts_reset(void);

#endif
