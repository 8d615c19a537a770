/* _hookchain.c -- Triton's launcher calls knobs.runtime.launch_enter_hook
 * and launch_exit_hook (triton.knobs.HookChain objects) around every kernel
 * launch; HookChain.__call__ is a Python loop (`for call in self.calls:
 * call(*args, **kwargs)`), a Python frame per call that costs more than
 * cproton's whole hook body. fast_chain(chain, True) switches the chain's
 * class to a subclass made here whose tp_call runs the same loop in C (same
 * order, `reversed` honoured, the live `calls` list read as Python's list
 * iterators read it); fast_chain(chain, False) switches it back. The object,
 * its `calls` list and every other method stay Triton's, so hooks that
 * others add to the chain keep working. Returns False (and changes nothing)
 * when the class cannot be switched (a Triton whose HookChain differs). */
#include "_hookchain.h"

static PyObject *s_calls, *s_reversed;
static PyObject *fast_base; /* the HookChain class the subclass derives */
static PyObject *fast_type; /* that subclass */

/* Calls every hook in `calls` (a list) in order, or last to first, with
 * args/kw; as list iterators do, an index past the list's current end
 * stops the loop. */
static int call_all(PyObject *calls, int rev, PyObject *args, PyObject *kw) {
  Py_ssize_t n = PyList_GET_SIZE(calls);
  for (Py_ssize_t k = 0; rev ? k < n : k < PyList_GET_SIZE(calls); k++) {
    Py_ssize_t i = rev ? n - 1 - k : k;
    if (i >= PyList_GET_SIZE(calls))
      break;
    PyObject *fn = PyList_GET_ITEM(calls, i);
    Py_INCREF(fn);
    PyObject *r = PyTuple_GET_SIZE(args) == 1 && !kw
                      ? PyObject_CallOneArg(fn, PyTuple_GET_ITEM(args, 0))
                      : PyObject_Call(fn, args, kw);
    Py_DECREF(fn);
    if (!r)
      return -1;
    Py_DECREF(r);
  }
  return 0;
}

static PyObject *chain_call(PyObject *self, PyObject *args, PyObject *kw) {
  PyObject *calls = PyObject_GetAttr(self, s_calls);
  if (!calls)
    return NULL;
  PyObject *rev = PyObject_GetAttr(self, s_reversed);
  int r = rev ? PyObject_IsTrue(rev) : -1;
  Py_XDECREF(rev);
  int ok = r >= 0 && PyList_Check(calls) ? call_all(calls, r, args, kw) : -1;
  if (ok < 0 && r >= 0 && !PyList_Check(calls))
    PyErr_SetString(PyExc_TypeError, "hook chain's calls must be a list");
  Py_DECREF(calls);
  if (ok < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* The subclass of `base`, made on first use (one HookChain class per
 * process; a different one gets none). */
static PyObject *subclass_of(PyObject *base) {
  if (fast_type)
    return fast_base == base ? fast_type : NULL;
  PyType_Slot slots[] = {{Py_tp_call, chain_call}, {0, NULL}};
  PyType_Spec spec = {"cproton._hookchain.HookChain", 0, 0,
                      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  PyObject *bases = PyTuple_Pack(1, base);
  if (!bases)
    return NULL;
  fast_type = PyType_FromSpecWithBases(&spec, bases);
  Py_DECREF(bases);
  if (!fast_type) {
    PyErr_Clear();
    return NULL;
  }
  Py_INCREF(base);
  fast_base = base;
  return fast_type;
}

static PyObject *py_fast_chain(PyObject *m, PyObject *args) {
  PyObject *chain;
  int on;
  if (!PyArg_ParseTuple(args, "Op:fast_chain", &chain, &on))
    return NULL;
  PyObject *cls = (PyObject *)Py_TYPE(chain);
  PyObject *want = NULL;
  if (on && cls != fast_type)
    want = subclass_of(cls);
  else if (!on && fast_type && cls == fast_type)
    want = fast_base;
  else
    return PyBool_FromLong(on ? cls == fast_type : 1);
  if (!want || PyObject_SetAttrString(chain, "__class__", want) < 0) {
    PyErr_Clear(); /* e.g. an incompatible layout: keep Triton's loop */
    Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"fast_chain", py_fast_chain, METH_VARARGS,
     "fast_chain(chain, on): Triton hook chain called from C (on) or Python"},
    {NULL, NULL, 0, NULL}};

int cpy_hookchain_add(PyObject *module) {
  s_calls = PyUnicode_InternFromString("calls");
  s_reversed = PyUnicode_InternFromString("reversed");
  if (!s_calls || !s_reversed)
    return -1;
  return PyModule_AddFunctions(module, methods);
}
