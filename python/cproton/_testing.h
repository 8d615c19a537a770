/* _testing.h -- test-only functions of the extension (see _testing.c). */
#ifndef CPROTON_PY_TESTING_H
#define CPROTON_PY_TESTING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds _fake_launch and _fake_add_device to `module`; -1 on error. Built
 * only with CPROTON_TEST_BACKENDS (the tests' builds, never the wheel). */
#ifdef CPROTON_TEST_BACKENDS
int cpy_testing_add(PyObject *module);
#else
static inline int cpy_testing_add(PyObject *module) {
  (void)module;
  return 0;
}
#endif

#endif
