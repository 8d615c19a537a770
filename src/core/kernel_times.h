/* core/kernel_times.h -- the recent kernels CUPTI timed, for aligning
 * intra-kernel timelines with them (cp_ktimes_*).
 *
 * The instrumentation backend places a launch's intra-kernel regions by the
 * GPU's globaltimer relative to the launch, and until the kernel's CUPTI
 * record is known it can only anchor the earliest CTA at the host time of
 * the launch. When a CUPTI session runs too, its kernel records (host clock,
 * like every cproton time) are kept here by launch time, and traces are
 * written with each launch's regions moved so that its earliest CTA starts
 * at the CUPTI kernel's start: both timelines then share one clock. */
#ifndef CP_CORE_KERNEL_TIMES_H
#define CP_CORE_KERNEL_TIMES_H

#include <stdint.h>

#include <stdint.h>

/* Kernel records kept (a ring; older ones are forgotten). */
#define CP_KTIMES_SLOTS 8192u
/* A region's launch pairs with the latest CUPTI launch of the same kernel
 * name at most this long before it (the instrumentation hook registers the
 * launch right after the driver call CUPTI saw). */
#define CP_KTIMES_MAX_GAP_NS 10000000ull

/* Remembers a kernel CUPTI timed: launched at host time `launch_ns`
 * (0: unknown, ignored), ran [start_ns, end_ns]. Thread-safe. */
void cp_ktimes_put(const char *name, uint64_t launch_ns, uint64_t start_ns, uint64_t end_ns);

/* For an intra-kernel region of kernel `kernel_name` (strtab id) launched
 * at host time `launch_ns` (the anchor of its CTA times): the shift
 * (CUPTI start - launch time) that moves it onto its kernel's CUPTI
 * record, 0 when that is not known or launch_ns is 0. Thread-safe.
 * Knows no trace event: core/trace.c applies it (cp_event_align). */
int64_t cp_ktimes_shift(uint32_t kernel_name, uint64_t launch_ns);

#endif
