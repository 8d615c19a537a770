/* _instrument.h -- the instrumentation backend's functions in the extension
 * (see _instrument.c). */
#ifndef CPROTON_PY_INSTRUMENT_H
#define CPROTON_PY_INSTRUMENT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds instrument_ptx, instr_register, instr_alloc, instr_launch,
 * instr_flush and instr_stats to `module`; -1 on error. */
int cpy_instrument_add(PyObject *module);

#endif
