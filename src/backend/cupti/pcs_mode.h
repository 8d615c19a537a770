/* backend/cupti/pcs_mode.h -- the CUPTI backend's mode strings
 * (cp_pcs_mode_*): "" (kernel timing) or
 *
 *   pcsampling[:interval=N][:exact][:buffer=PCS][:drain=MS]
 *
 * interval  cycles between two samples of one SM; CUPTI samples every 2^k
 *           cycles, k in 5..31, so N in 32..2147483648 is rounded to the
 *           nearest power of two (Proton's 1000 -> 2^10, its fixed period)
 * exact     serialised collection: every sample carries its launch's
 *           correlation id (Proton's per-launch semantics); default is
 *           concurrent collection (docs/cupti.md says why)
 * buffer    PC records fetched per drain (64..1048576, default 4096)
 * drain     concurrent mode: fetch samples every MS milliseconds (0..60000;
 *           0 = only when the session flushes), default 0
 * Options are separated by ':' or ','. Pure; not a hot path. */
#ifndef CP_BACKEND_CUPTI_PCS_MODE_H
#define CP_BACKEND_CUPTI_PCS_MODE_H

#include <stddef.h>
#include <stdint.h>

#define CP_PCS_INTERVAL_MIN 32ull
#define CP_PCS_INTERVAL_MAX 2147483648ull
#define CP_PCS_BUFFER_MIN 64u
#define CP_PCS_BUFFER_MAX 1048576u

typedef struct cp_pcs_options {
  int enabled;           /* the mode asks for PC sampling */
  int exact;             /* serialised collection, per-launch attribution */
  uint32_t period_log2;  /* CUPTI's samplingPeriod: 2^k cycles */
  uint64_t interval;     /* as given (cycles) */
  uint32_t buffer_pcs;   /* PC records per cuptiPCSamplingGetData */
  uint32_t drain_ms;     /* concurrent mode: period of the drain thread */
} cp_pcs_options;

/* Parses `mode` (NULL or "" = kernel timing only) into `out`. Errors:
 * EINVAL naming the option, its position and the valid range, e.g.
 * "cupti mode 'pcsampling:interval=abc': interval at offset 11 must be an
 * integer in 32..2147483648 (cycles)". */
int cp_pcs_mode_parse(const char *mode, cp_pcs_options *out);

/* cp_pcs_mode_parse, discarding the options (the backend's check_mode). */
int cp_pcs_mode_check(const char *mode);

/* Whether two mode strings ask for the same collection (NULL == "";
 * "pcsampling" == "pcsampling:interval=1000"). 0 when either is invalid. */
int cp_pcs_mode_same(const char *a, const char *b);

#endif
