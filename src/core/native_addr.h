/* core/native_addr.h -- the distinct return addresses of native stacks
 * (cp_native_addr_*): each one's placeholder name and whether its module is
 * the profiler's, CUPTI's or CUDA's. Used by core/native.c on a new stack
 * and by cp_native_symbolize. Thread-safe (one lock); not a hot path. */
#ifndef CP_CORE_NATIVE_ADDR_H
#define CP_CORE_NATIVE_ADDR_H

#include <stdint.h>

/* 1 when `addr` lies in a module whose frames are dropped from the top of a
 * stack (libcuda, libcupti, libcudart, libnvidia-*, libcproton); decided
 * once per address with dladdr. 0 too when out of memory. */
int cp_native_addr_dropped(uintptr_t addr);

/* The name id of `addr`'s frame: a placeholder ("native:0x...") until
 * cp_native_symbolize labels it. Errors: ENOMEM, ELIMIT. */
int cp_native_addr_name(uintptr_t addr, uint32_t *id_out);

/* Distinct addresses named so far, and how many of them are symbolized. */
void cp_native_addr_counts(uint64_t *named, uint64_t *symbolized);

/* Gives every address seen so far its name (once per address). Not a hot
 * path; thread-safe. Errors: none (an address that cannot be named keeps
 * module+offset). */
void cp_native_symbolize(void);

#endif
