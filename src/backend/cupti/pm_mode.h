/* backend/cupti/pm_mode.h -- the CUPTI backend's hardware-metric mode
 * string (cp_pm_mode_*), issue 27:
 *
 *   pmsampling[:metrics=NAME,NAME...][:interval=NS][:exact]
 *
 * metrics   counters to read, by short name (sm_throughput%, ...) or
 *           Perfworks name (backend/cupti/pm_metrics.h); default: the six
 *           of the default set. At most CP_PM_MAX_METRICS.
 * interval  nanoseconds between two samples of a device
 *           (CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL), 1000..
 *           1000000000, default CP_PM_INTERVAL_DEFAULT (250 us: on an H100
 *           every default counter of 50 us+ kernels within 5 points of
 *           Nsight Compute at 100 and 250 us, not at 1 ms; decoding a
 *           sample costs the decoder thread ~0.2 ms of CPU, so 250 us keeps
 *           about one core busy; docs/hardware-metrics.md)
 * exact     per-kernel values from CUPTI's range profiler instead of
 *           sampling (kernels replayed where the counters need it)
 * ranges    exact mode: launches one counter data image holds per
 *           context before it is decoded, 1..1048576, default 1024
 * Options are separated by ':' only (',' separates metric names). Pure;
 * not a hot path. */
#ifndef CP_BACKEND_CUPTI_PM_MODE_H
#define CP_BACKEND_CUPTI_PM_MODE_H

#include <stddef.h>
#include <stdint.h>

#define CP_PM_MAX_METRICS 16
#define CP_PM_NAME_MAX 128
#define CP_PM_INTERVAL_MIN 1000ull
#define CP_PM_INTERVAL_MAX 1000000000ull
#define CP_PM_INTERVAL_DEFAULT 250000ull
#define CP_PM_RANGES_DEFAULT 1024u
#define CP_PM_RANGES_MAX 1048576u
/* The family's grammar, as the CUPTI backend's refusals show it. */
#define CP_PM_GRAMMAR "pmsampling[:metrics=NAME,NAME...][:interval=NS][:exact][:ranges=N]"

typedef struct cp_pm_options {
  int enabled;          /* the mode asks for hardware metrics */
  int exact;            /* range profiler instead of sampling */
  int user_metrics;     /* metrics= given (else the default set) */
  uint64_t interval_ns; /* sampling interval */
  size_t ranges;        /* exact mode: ranges per image */
  size_t n;             /* counters */
  /* stored name (the profile's) and the Perfworks name CUPTI reads */
  char name[CP_PM_MAX_METRICS][CP_PM_NAME_MAX];
  char cupti[CP_PM_MAX_METRICS][CP_PM_NAME_MAX];
} cp_pm_options;

/* Whether `mode` names the pmsampling family (its text before the first
 * ':' is "pmsampling", any case). */
int cp_pm_mode_is(const char *mode);

/* Parses a pmsampling mode into `out`. Errors: EINVAL naming the option
 * and its offset, e.g. "cupti mode 'pmsampling:interval=5': interval at
 * offset 20 must be an integer in 1000..1000000000 (ns)", or the counter
 * refusal of cp_pm_metrics_resolve (close names listed). */
int cp_pm_mode_parse(const char *mode, cp_pm_options *out);

/* Whether two parsed options ask for the same collection. */
int cp_pm_options_same(const cp_pm_options *a, const cp_pm_options *b);

#endif
