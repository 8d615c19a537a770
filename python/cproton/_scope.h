/* _scope.h -- scopes, states and ops (see _scope.c). */
#ifndef CPROTON_PY_SCOPE_H
#define CPROTON_PY_SCOPE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Mirrors cproton.flags.flags.profiling_on: scopes and the launch hook do
 * nothing while it is 0. Under the GIL. */
extern int cpy_profiling_on;

/* Readies the Scope type and adds it, the scope/state/op functions and the
 * profiling flag's to `module`; -1 on error. */
int cpy_scope_add(PyObject *module);

#endif
