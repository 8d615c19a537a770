/* _launch.h -- the Triton launch hook's body (see _launch.c). */
#ifndef CPROTON_PY_LAUNCH_H
#define CPROTON_PY_LAUNCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Interns the launch path's keys, makes the filter cache and adds the
 * hook's functions to `module`; -1 on error. */
int cpy_launch_add(PyObject *module);

#endif
