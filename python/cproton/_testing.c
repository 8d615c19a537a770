/* _testing.c -- test-only bindings of the library's fake backend, so the
 * Python tests can "launch kernels" without a GPU: a launch is captured on
 * the calling thread exactly like CUPTI's launch callback (context, state,
 * op, python frames) and delivered on flush / finalize.
 *
 * This file is the one exception to "the extension uses only the public
 * header": it declares the fake backend's two entry points
 * (src/backend/fake/fake.h), which are compiled into the same module. It
 * adds `_fake_launch` and `_fake_add_device` to cproton._cproton, only in
 * builds with CPROTON_TEST_BACKENDS (the tests'; the wheel has neither this
 * file nor the fake backend). Not a hot path. */
#include "_testing.h"

#include <stdint.h>

#include "cproton/cproton.h"

int cp_fake_launch(const char *kernel, uint64_t duration_ns, uint32_t device,
                   uint32_t stream);
void cp_fake_add_device(uint32_t id);

static PyObject *fake_launch(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "duration_ns", "device", "stream",
                           "release_gil", NULL};
  const char *name;
  unsigned long long duration = 1000;
  unsigned int device = 0, stream = 0;
  int release = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|KIIp:_fake_launch", kwlist,
                                   &name, &duration, &device, &stream,
                                   &release))
    return NULL;
  int rc;
  if (release) {
    Py_BEGIN_ALLOW_THREADS
    rc = cp_fake_launch(name, duration, device, stream);
    Py_END_ALLOW_THREADS
  } else {
    rc = cp_fake_launch(name, duration, device, stream);
  }
  if (rc) {
    PyErr_SetString(PyExc_RuntimeError, cproton_last_error());
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *fake_add_device(PyObject *m, PyObject *arg) {
  long id = PyLong_AsLong(arg);
  if (id == -1 && PyErr_Occurred())
    return NULL;
  cp_fake_add_device((uint32_t)id);
  Py_RETURN_NONE;
}

static PyMethodDef testing_methods[] = {
    {"_fake_launch", (PyCFunction)(void (*)(void))fake_launch,
     METH_VARARGS | METH_KEYWORDS,
     "_fake_launch(name, duration_ns=1000, device=0, stream=0, "
     "release_gil=True): test double of a kernel launch (backend 'fake')"},
    {"_fake_add_device", fake_add_device, METH_O,
     "_fake_add_device(id): register a fake H200-like device"},
    {NULL}};

int cpy_testing_add(PyObject *module) {
  return PyModule_AddFunctions(module, testing_methods);
}
