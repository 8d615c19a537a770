/* core/clock.h -- the one timebase of cproton (cp_clock_*). CPU scopes, launch
 * times and GPU records (CUPTI is given this clock) share it, so traces line
 * up. Nanoseconds of CLOCK_MONOTONIC_RAW. Hot path safe (vDSO). */
#ifndef CP_CORE_CLOCK_H
#define CP_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t cp_clock_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
