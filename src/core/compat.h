/* core/compat.h -- which Proton the library follows where Proton 3.6 and
 * 3.9 differ (cp_compat_*). The Python layer decides (python/cproton/
 * _compat.py) and sets it once through cproton_set_proton_compat. */
#ifndef CP_CORE_COMPAT_H
#define CP_CORE_COMPAT_H

#include "cproton/cproton.h"

/* The version set by cproton_set_proton_compat (CPROTON_PROTON_3_6 until
 * then). A relaxed atomic load: cheap enough for any path. */
int cp_compat_proton(void);

/* Whether the library follows Proton 3.9 (or later). */
static inline int cp_compat_is_39(void) {
  return cp_compat_proton() >= CPROTON_PROTON_3_9;
}

/* The frame name of a kernel called `kernel_name`: Proton 3.9 names its
 * metric-copy kernels' frames "<metric>", so under 3.9 cproton's own copy
 * kernel (CP_COMPAT_METRIC_KERNEL, python/cproton/metric.py) is named so;
 * any other kernel, and every kernel under 3.6, keeps its name. */
#define CP_COMPAT_METRIC_KERNEL "_cproton_tensor_metric"
const char *cp_compat_kernel_frame(const char *kernel_name);

#endif
