/* backend/cupti/pcs_mode.h -- the CUPTI backend's mode strings
 * (cp_pcs_mode_*): "" (kernel timing) or
 *
 *   pcsampling[:interval=N][:exact][:buffer=PCS][:first=K]
 *
 * interval  cycles between two samples of one SM; CUPTI samples every 2^k
 *           cycles, k in 5..31, so N in 32..2147483648 is rounded to the
 *           nearest power of two (Proton's 1000 -> 2^10, its fixed period)
 * exact     every sample under its launch's calling context (Proton's
 *           semantics): a period ends whenever a kernel function is about
 *           to run under a second context; default is concurrent
 *           collection with a documented split rule (docs/cupti.md)
 * buffer    PC records fetched per cuptiPCSamplingGetData (64..1048576,
 *           default 4096)
 * first     the first K launches of each kernel function in a session run
 *           in a sampling range of their own, as every launch does under
 *           Proton (0..1000, default 1; 0 = none): short kernels get the
 *           samples Proton gives them (docs/cupti.md)
 * Options are separated by ':' or ','. Pure; not a hot path. */
#ifndef CP_BACKEND_CUPTI_PCS_MODE_H
#define CP_BACKEND_CUPTI_PCS_MODE_H

#include <stddef.h>
#include <stdint.h>

#define CP_PCS_INTERVAL_MIN 32ull
#define CP_PCS_INTERVAL_MAX 2147483648ull
#define CP_PCS_BUFFER_MIN 64u
#define CP_PCS_BUFFER_MAX 1048576u
#define CP_PCS_FIRST_MAX 1000u
#define CP_PCS_FIRST_DEFAULT 0u
/* The family's grammar, as error messages show it. */
#define CP_PCS_GRAMMAR "pcsampling[:interval=N][:exact][:buffer=PCS][:first=K]"

typedef struct cp_pcs_options {
  int enabled;           /* the mode asks for PC sampling */
  int exact;             /* one calling context per function and period */
  uint32_t period_log2;  /* CUPTI's samplingPeriod: 2^k cycles */
  uint64_t interval;     /* as given (cycles) */
  uint32_t buffer_pcs;   /* PC records per cuptiPCSamplingGetData */
  uint32_t first;        /* launches per function in a range of their own */
} cp_pcs_options;

/* Parses `mode` (NULL or "" = kernel timing only) into `out`. Errors:
 * EINVAL naming the option, its position and the valid range, e.g.
 * "cupti mode 'pcsampling:interval=abc': interval at offset 11 must be an
 * integer in 32..2147483648 (cycles)". */
int cp_pcs_mode_parse(const char *mode, cp_pcs_options *out);

/* Whether two parsed option sets ask for the same collection
 * ("pcsampling" == "pcsampling:interval=1000": the same period). */
int cp_pcs_options_same(const cp_pcs_options *a, const cp_pcs_options *b);

#endif
