/* backend/cupti/cupti_mode.h -- the CUPTI backend's mode strings, parsed
 * once per session (cp_cupti_mode_*): "" (kernel timing) or a mode family
 * named by the string's first word, each family a row of one table in
 * cupti_mode.c with its own parser (pcsampling: pcs_mode.h; pmsampling:
 * pm_mode.h). Adding a family is a row there and a member here. Pure; not
 * a hot path. */
#ifndef CP_BACKEND_CUPTI_CUPTI_MODE_H
#define CP_BACKEND_CUPTI_CUPTI_MODE_H

#include "backend/backend.h"
#include "backend/cupti/pcs_mode.h"
#include "backend/cupti/pm_mode.h"

typedef enum cp_cupti_family {
  CP_CUPTI_KERNELS = 0, /* "": kernel timing only */
  CP_CUPTI_PCSAMPLING,  /* pcs_mode.h */
  CP_CUPTI_PMSAMPLING,  /* pm_mode.h */
} cp_cupti_family;

/* A parsed mode: the family and that family's options (the others keep
 * their defaults: pcs.enabled is 0 unless the family is PC sampling,
 * pm.enabled 0 unless it is PM sampling). */
typedef struct cp_cupti_mode {
  cp_cupti_family family;
  cp_pcs_options pcs;
  cp_pm_options pm;
} cp_cupti_mode;

/* Parses `mode` (NULL or "" = kernel timing). Errors: EINVAL naming the
 * mode, the offset and the valid forms, e.g. "cupti mode 'x': unknown mode
 * at offset 0 (valid: '' or pcsampling[...])". */
int cp_cupti_mode_parse(const char *mode, cp_cupti_mode *out);

/* Whether two parsed modes ask for the same collection. */
int cp_cupti_mode_same(const cp_cupti_mode *a, const cp_cupti_mode *b);

/* The backend's parse_mode and same_mode over cp_backend_config. */
int cp_cupti_mode_parse_config(const char *mode, cp_backend_config *out);
int cp_cupti_mode_same_config(const cp_backend_config *a,
                              const cp_backend_config *b);
const cp_cupti_mode *cp_cupti_mode_of(const cp_backend_config *config);

#endif
