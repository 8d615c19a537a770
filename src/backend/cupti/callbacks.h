/* backend/cupti/callbacks.h -- CUPTI callbacks -> launch sites, graph
 * capture contexts and NVTX scopes (cp_callbacks_*). Pure: a table maps
 * (domain, callback id) to a handler, and the dispatcher is called by CUPTI
 * through cupti_backend.c, or directly by tests with synthetic callback data. */
#ifndef CP_BACKEND_CUPTI_CALLBACKS_H
#define CP_BACKEND_CUPTI_CALLBACKS_H

#include <cupti.h>
#include <stddef.h>

#include "backend/cupti/state.h"

/* Which CUPTI feature (features.c) a callback serves: each feature enables
 * its own group. */
typedef enum cp_callbacks_group {
  CP_CB_KERNELS = 1, /* launches */
  CP_CB_GRAPHS = 2,  /* stream capture begin/end */
  CP_CB_NVTX = 4,    /* NVTX ranges */
  CP_CB_PCS = 8,     /* module loads (cubins), contexts (PC sampling) */
  CP_CB_NODES = 16,  /* graph-node capture contexts (per-node mode only) */
  CP_CB_SYNC = 32    /* host synchronizations (with kernels; the advisor) */
} cp_callbacks_group;

/* One callback CUPTI should deliver: features.c enables exactly these. */
typedef struct cp_callbacks_id {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  cp_callbacks_group group;
} cp_callbacks_id;

/* The callbacks the backend subscribes to; `*n_out` receives the count.
 * Static storage. */
const cp_callbacks_id *cp_callbacks_list(size_t *n_out);

/* Whether the calling thread is inside cuStreamBeginCapture .. EndCapture
 * (its launches only record graph nodes). Hot path: a thread-local read. */
int cp_callbacks_capturing(void);

/* Whether NVTX ranges should become scopes (default on). Not a hot path. */
void cp_callbacks_set_nvtx(int enabled);

/* The CUpti_CallbackFunc: `user` is the cp_cupti_state. Hot path for
 * driver-API launches (enter: one capture, one ring store; no lock, no
 * allocation, no formatting). */
void CUPTIAPI cp_callbacks_dispatch(void *user, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data);

#endif
