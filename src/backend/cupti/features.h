/* backend/cupti/features.h -- the CUPTI backend's features as rows of one
 * table (cp_features_*): kernel activity, graph capture contexts, NVTX
 * ranges, PC sampling. Each row says when the session's mode wants it and
 * how to enable, flush and disable it; the backend runs the rows in order,
 * so adding a feature adds a row, not a branch. Not a hot path. */
#ifndef CP_BACKEND_CUPTI_FEATURES_H
#define CP_BACKEND_CUPTI_FEATURES_H

#include "backend/cupti/config.h"
#include "backend/cupti/loader.h"
#include "backend/cupti/cupti_mode.h"
#include "backend/cupti/state.h"

/* What a row works with (owned by cupti_backend.c). */
typedef struct cp_features_env {
  const cp_loader_api *api;
  CUpti_SubscriberHandle subscriber;
  cp_cupti_state *state;
  const cp_cupti_config *config;
  cp_cupti_mode mode; /* the session's, parsed once (cupti_mode.h) */
} cp_features_env;

/* Enables every wanted row in order; on failure disables those enabled and
 * returns the error (message set). */
int cp_features_enable(cp_features_env *env);

/* Flushes every enabled row in order (kernel records before samples). */
int cp_features_flush(cp_features_env *env);

/* Disables every enabled row in reverse order. */
void cp_features_disable(cp_features_env *env);

/* "CUPTI_ERROR_..." -> EBACKEND with `what` and a hint for a second
 * subscriber. */
int cp_features_fail(const cp_loader_api *api, CUptiResult r,
                     const char *what);

#endif
