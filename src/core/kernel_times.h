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

#include "core/trace.h"

/* Kernel records kept (a ring; older ones are forgotten). */
#define CP_KTIMES_SLOTS 8192u
/* A region's launch pairs with the latest CUPTI launch of the same kernel
 * name at most this long before it (the instrumentation hook registers the
 * launch right after the driver call CUPTI saw). */
#define CP_KTIMES_MAX_GAP_NS 10000000ull

/* Remembers a kernel CUPTI timed: launched at host time `launch_ns`
 * (0: unknown, ignored), ran [start_ns, end_ns]. Thread-safe. */
void cp_ktimes_put(const char *name, uint64_t launch_ns, uint64_t start_ns, uint64_t end_ns);

/* For an intra-kernel region event whose launch_ns is its launch's host
 * time (the anchor of its CTA times): moves it by (CUPTI start - launch
 * time) when its kernel's CUPTI record is known; clears launch_ns either
 * way (regions carry none in the written trace). Thread-safe. */
void cp_ktimes_align(cp_event *e);

#endif
