/* _torchlink.h -- the Python functions of the "python" context's PyTorch
 * layers (backward link set-up, operator frames), see _torchlink.c. */
#ifndef CPROTON_PY_TORCHLINK_H
#define CPROTON_PY_TORCHLINK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds the functions to the module. 0, or -1 with an
 * exception set. */
int cpy_torchlink_add(PyObject *m);

#endif
