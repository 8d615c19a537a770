/* _metrics.h -- metrics from Python (see _metrics.c): what the scope and
 * launch-hook files call, and the per-thread op state they share. */
#ifndef CPROTON_PY_METRICS_H
#define CPROTON_PY_METRICS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "cproton/cproton.h"

/* The calling thread has an op open (enter_op or a hooked launch). */
extern _Thread_local int cpy_op_open;
/* The calling thread is launching tensor metrics' copy kernels: the launch
 * hook ignores their launches. */
extern _Thread_local int cpy_in_metric_launch;
/* The state the copy kernels run under while the launch hook runs them
 * (Proton 3.9's per-kernel metadata state); NULL: "__proton_launch_metadata". */
extern PyObject *cpy_pending_state;

/* Whether the library follows Proton 3.9. */
static inline int cpy_metrics_is_39(void) {
  return cproton_proton_compat() >= CPROTON_PROTON_3_9;
}

/* A tensor metric value: anything with data_ptr() and device (torch). */
int cpy_metrics_is_tensor(PyObject *v);

/* 1 when numbers must be recorded on the device now (a CUDA graph is being
 * captured on the current stream), 0 if not, -1 with an exception. */
int cpy_metrics_capturing(void);

/* Adds metric `key` = `v` to `scope` (CPROTON_CURRENT_OP: the open op);
 * `capturing` from cpy_metrics_capturing(). 0, or -1 with an exception. */
int cpy_metrics_add_one(uint64_t scope, const char *key, PyObject *v,
                        int as_double, int capturing);

/* Adds every item of the dict `metrics` (None: nothing) to `scope`. */
int cpy_metrics_add(uint64_t scope, PyObject *metrics);

/* Launches the thread's queued copy kernels with its op `name` closed
 * around them (reopened on the same node). 0, or -1 with an exception. */
int cpy_metrics_run_pending_outside_op(const char *name);

/* Adds add_metrics and the tensor-metric functions to `module`. */
int cpy_metrics_add_methods(PyObject *module);

#endif
