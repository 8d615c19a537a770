/* core/compat.c -- the Proton version whose behaviour the library follows
 * where Proton 3.6 and 3.9 differ: the type names in a metric-type error,
 * user metrics named like kernel metrics, the launch-metadata state's
 * frames, the metric-copy kernel's frame name. docs/compatibility.md lists every difference.
 *
 * Invariant: one process-wide value, set before sessions start (by the
 * Python layer at import) and read with relaxed atomics; changing it while
 * sessions run only changes what later calls do. Not a hot path to set;
 * reading it is one load. */
#include <stdatomic.h>
#include <string.h>

#include "core/compat.h"
#include "core/error.h"

static atomic_int proton_version = CPROTON_PROTON_3_6;

int cproton_set_proton_compat(int version) {
  if (version != CPROTON_PROTON_3_6 && version != CPROTON_PROTON_3_9)
    return cp_error_set(CPROTON_EINVAL,
                        "unknown Proton version %d (valid: %d for 3.6, %d "
                        "for 3.9)", version, CPROTON_PROTON_3_6,
                        CPROTON_PROTON_3_9);
  atomic_store_explicit(&proton_version, version, memory_order_relaxed);
  return CPROTON_OK;
}

int cproton_proton_compat(void) { return cp_compat_proton(); }

int cp_compat_proton(void) {
  return atomic_load_explicit(&proton_version, memory_order_relaxed);
}

const char *cp_compat_kernel_frame(const char *kernel_name) {
  if (kernel_name && cp_compat_is_39() &&
      strcmp(kernel_name, CP_COMPAT_METRIC_KERNEL) == 0)
    return "<metric>";
  return kernel_name;
}
