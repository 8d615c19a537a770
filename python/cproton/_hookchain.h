/* _hookchain.h -- a C __call__ for Triton's hook chains (see _hookchain.c). */
#ifndef CPROTON_PY_HOOKCHAIN_H
#define CPROTON_PY_HOOKCHAIN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds fast_chain(chain, on) to `module`; -1 on error. */
int cpy_hookchain_add(PyObject *module);

#endif
