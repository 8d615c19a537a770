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

#endif
