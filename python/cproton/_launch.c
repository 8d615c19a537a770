/* _launch.c -- the Triton launch hook's body, in C: the launch metadata
 * computed under Proton's metadata state (LazyDict.get mirrored without
 * its Python frame), the kernel filter (cached per name), an op named
 * after the kernel with the metadata's numbers as metrics, Proton's
 * op_name/id ContextVars. Hot path: launch_enter/launch_exit, once per
 * Triton launch: no allocation beyond Python's own, no formatting. Called
 * by cproton.hooks.launch; uses only the public header. */
#include "_launch.h"

#include "_metrics.h"
#include "_scope.h"
#include "_status.h"

static PyObject *launch_filter; /* callable(name) -> bool, or NULL */
static PyObject *filter_cache;  /* dict: kernel name -> bool */
/* cproton.hooks.launch's `op_name` and `id` ContextVars (Proton's), set on
 * each hooked launch; NULL until the module registers them. */
static PyObject *launch_op_var, *launch_id_var;
static unsigned long long launch_count; /* under the GIL */

/* Interned keys of the launch path ("get" for LazyDict.get); Triton's
 * LazyDict keys are interned literals, so the reserved ones are usually
 * found by identity (launch_reserved_key). */
static PyObject *s_get, *s_name, *s_function, *s_stream, *s_data, *s_extras;
/* Triton's LazyDict class and its `get` function, registered by
 * cproton.hooks.launch when that `get` is the one metadata_get() mirrors. */
static PyObject *lazy_type, *lazy_get;

static int launch_strings(void) {
  s_data = PyUnicode_InternFromString("data");
  s_extras = PyUnicode_InternFromString("extras");
  if (!s_data || !s_extras)
    return -1;
  s_get = PyUnicode_InternFromString("get");
  s_name = PyUnicode_InternFromString("name");
  s_function = PyUnicode_InternFromString("function");
  s_stream = PyUnicode_InternFromString("stream");
  return s_get && s_name && s_function && s_stream ? 0 : -1;
}

/* 1 when the str `k` is "name", "function" or "stream" (not metrics). */
static int launch_reserved_key(PyObject *k) {
  if (k == s_name || k == s_function || k == s_stream)
    return 1;
  return PyUnicode_Compare(k, s_name) == 0 ||
         PyUnicode_Compare(k, s_function) == 0 ||
         PyUnicode_Compare(k, s_stream) == 0;
}

/* 1 when the launch filter admits kernel `name` (cached per name). */
static int admitted(PyObject *name) {
  if (!launch_filter)
    return 1;
  PyObject *hit = PyDict_GetItemWithError(filter_cache, name);
  if (hit)
    return PyObject_IsTrue(hit);
  if (PyErr_Occurred())
    return -1;
  PyObject *r = PyObject_CallOneArg(launch_filter, name);
  if (!r)
    return -1;
  int ok = PyObject_IsTrue(r);
  Py_DECREF(r);
  if (ok >= 0 && PyDict_SetItem(filter_cache, name, ok ? Py_True : Py_False))
    return -1;
  return ok;
}

static int add_launch_metrics(PyObject *data) {
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  int capturing = PyDict_GET_SIZE(data) ? cpy_metrics_capturing() : 0;
  if (capturing < 0)
    return -1;
  while (PyDict_Next(data, &pos, &k, &v)) {
    if (!PyUnicode_Check(k)) {
      PyErr_Format(PyExc_TypeError, "metric names must be str, not %.100s",
                   Py_TYPE(k)->tp_name);
      return -1;
    }
    if (launch_reserved_key(k) || PyBool_Check(v) ||
        !(PyLong_Check(v) || PyFloat_Check(v) || PyList_Check(v) ||
          PyTuple_Check(v) || cpy_metrics_is_tensor(v)))
      continue;
    const char *key = cpy_status_utf8_no_nul(k, "metric");
    /* Proton 3.6's hook: every value a double; 3.9: typed by value except
     * the roofline metrics (roofline_kind) */
    if (!key || cpy_metrics_add_one(CPROTON_CURRENT_OP, key, v, !cpy_metrics_is_39(), capturing) < 0)
      return -1;
  }
  return 0;
}

/* Sets op_name to the kernel's name and id to a number unique to this
 * launch in the process, as Proton's hook does. -1 with an exception. */
static int set_launch_vars(PyObject *name) {
  if (!launch_op_var || !launch_id_var)
    return 0;
  PyObject *id = PyLong_FromUnsignedLongLong(++launch_count);
  if (!id)
    return -1;
  /* op_name is set only when it changes (a launch of the same kernel as
   * the last one in this context leaves it as it is): one context copy. */
  PyObject *cur = NULL, *t1 = Py_None;
  if (PyContextVar_Get(launch_op_var, NULL, &cur) < 0) {
    Py_DECREF(id);
    return -1;
  }
  if (cur != name)
    t1 = PyContextVar_Set(launch_op_var, name);
  else
    Py_INCREF(t1);
  Py_XDECREF(cur);
  PyObject *t2 = t1 ? PyContextVar_Set(launch_id_var, id) : NULL;
  Py_DECREF(id);
  Py_XDECREF(t1);
  Py_XDECREF(t2);
  return t2 ? 0 : -1;
}

static PyObject *py_set_launch_vars(PyObject *m, PyObject *args) {
  PyObject *op, *id;
  if (!PyArg_ParseTuple(args, "O!O!:set_launch_vars", &PyContextVar_Type, &op,
                        &PyContextVar_Type, &id))
    return NULL;
  Py_INCREF(op);
  Py_XSETREF(launch_op_var, op);
  Py_INCREF(id);
  Py_XSETREF(launch_id_var, id);
  Py_RETURN_NONE;
}

/* LazyDict.get() without its Python frame, step for step: `for func, args
 * in self.extras: self.data = self.data | func(*args)`, then
 * `self.extras.clear()`, `return self.data`. */
static PyObject *lazy_get_c(PyObject *lazy) {
  PyObject *extras = PyObject_GetAttr(lazy, s_extras);
  if (!extras)
    return NULL;
  if (!PyList_Check(extras)) { /* not Triton's: its own method */
    Py_DECREF(extras);
    return PyObject_CallMethodNoArgs(lazy, s_get);
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(extras); i++) {
    PyObject *item = PyList_GET_ITEM(extras, i), *func, *args;
    Py_INCREF(item);
    PyObject *seq = PySequence_Tuple(item);
    Py_DECREF(item);
    if (seq && PyTuple_GET_SIZE(seq) != 2) {
      PyErr_Format(PyExc_ValueError, "LazyDict extras: expected 2 values to "
                   "unpack, got %zd", PyTuple_GET_SIZE(seq));
      Py_CLEAR(seq);
    }
    if (!seq)
      goto fail;
    func = PyTuple_GET_ITEM(seq, 0);
    args = PyTuple_GET_ITEM(seq, 1);
    PyObject *targs = PyTuple_Check(args) ? (Py_INCREF(args), args)
                                          : PySequence_Tuple(args);
    PyObject *more = targs ? PyObject_Call(func, targs, NULL) : NULL;
    Py_XDECREF(targs);
    Py_DECREF(seq);
    PyObject *data = more ? PyObject_GetAttr(lazy, s_data) : NULL;
    PyObject *merged = data ? PyNumber_Or(data, more) : NULL;
    Py_XDECREF(data);
    Py_XDECREF(more);
    int rc = merged ? PyObject_SetAttr(lazy, s_data, merged) : -1;
    Py_XDECREF(merged);
    if (rc < 0)
      goto fail;
  }
  if (PyList_SetSlice(extras, 0, PyList_GET_SIZE(extras), NULL) < 0)
    goto fail;
  Py_DECREF(extras);
  return PyObject_GetAttr(lazy, s_data);
fail:
  Py_DECREF(extras);
  return NULL;
}

/* The launch metadata dict of `lazy`: lazy_get_c for Triton's own LazyDict
 * (exact class, `get` unchanged since registration), else lazy.get(). */
static PyObject *metadata_get(PyObject *lazy) {
  if (lazy_type && (PyObject *)Py_TYPE(lazy) == lazy_type) {
    PyObject *get = PyDict_GetItemWithError(((PyTypeObject *)lazy_type)->tp_dict,
                                            s_get);
    if (get == lazy_get)
      return lazy_get_c(lazy);
    if (PyErr_Occurred())
      return NULL;
  }
  return PyObject_CallMethodNoArgs(lazy, s_get);
}

static PyObject *py_set_lazy_dict(PyObject *m, PyObject *args) {
  PyObject *type, *get;
  if (!PyArg_ParseTuple(args, "O!O:set_lazy_dict", &PyType_Type, &type, &get))
    return NULL;
  Py_INCREF(type);
  Py_XSETREF(lazy_type, type);
  Py_INCREF(get);
  Py_XSETREF(lazy_get, get);
  Py_RETURN_NONE;
}

/* The kernel's name before its launch metadata is computed
 * (lazy.data["name"]): a new reference, or NULL (no error) when absent. */
static PyObject *raw_kernel_name(PyObject *lazy) {
  PyObject *data = PyObject_GetAttr(lazy, s_data), *name = NULL;
  if (data && PyDict_Check(data))
    name = PyDict_GetItemWithError(data, s_name);
  if (name && PyUnicode_Check(name))
    Py_INCREF(name);
  else
    name = NULL;
  Py_XDECREF(data);
  PyErr_Clear();
  return name;
}

/* Whether this thread is computing a launch's metadata: Proton 3.9 does
 * not hook the kernels launched meanwhile (its LaunchHook's in_hook). */
static _Thread_local int in_metadata;

/* Computes the launch metadata under Proton's metadata state: Proton 3.6's
 * "__proton_launch_metadata", 3.9's "__proton_launch_metadata:<raw>" (two
 * frames, core/session.c). */
static PyObject *metadata_under_state(PyObject *lazy, PyObject *raw) {
  PyObject *state = raw && cpy_metrics_is_39()
      ? PyUnicode_FromFormat("__proton_launch_metadata:%U", raw)
      : PyUnicode_FromString("__proton_launch_metadata");
  const char *text = state ? PyUnicode_AsUTF8(state) : NULL;
  if (!text) {
    Py_XDECREF(state);
    return NULL;
  }
  cproton_state_enter(text);
  Py_DECREF(state);
  in_metadata++;
  PyObject *data = metadata_get(lazy);
  in_metadata--;
  cproton_state_exit();
  return data;
}

/* Computes the launch metadata (under the metadata state, as Proton does)
 * and opens an op named after the kernel with its numeric keys as
 * metrics. Under Proton 3.9 a kernel filter is applied to the raw kernel
 * name first, so a filtered kernel's metadata is never computed (3.9's
 * LaunchHook.configure). */
static PyObject *py_launch_enter(PyObject *m, PyObject *lazy) {
  if (!cpy_profiling_on || lazy == Py_None || cpy_in_metric_launch ||
      (in_metadata && cpy_metrics_is_39())) /* a kernel launched by launch_metadata */
    Py_RETURN_NONE;
  PyObject *raw = raw_kernel_name(lazy);
  int early = raw && launch_filter && cpy_metrics_is_39() ? admitted(raw) : 1;
  PyObject *data = early > 0 ? metadata_under_state(lazy, raw) : NULL;
  /* Proton 3.9 launches the metric copies under the kernel's metadata
   * state too */
  PyObject *state = data && raw && cpy_metrics_is_39()
      ? PyUnicode_FromFormat("__proton_launch_metadata:%U", raw) : NULL;
  Py_XDECREF(raw);
  if (early == 0)
    Py_RETURN_NONE;
  if (!data)
    return NULL;
  Py_XSETREF(cpy_pending_state, state);
  PyObject *name = PyDict_Check(data) ? PyDict_GetItemWithError(data, s_name)
                                      : NULL;
  if (!name && PyErr_Occurred()) {
    Py_DECREF(data);
    return NULL;
  }
  int ok = name && PyUnicode_Check(name) ? admitted(name) : 0;
  if (ok > 0) {
    int rc = cproton_op_enter(PyUnicode_AsUTF8(name));
    ok = rc ? (cpy_status_raise(rc), -1) : 1;
    cpy_op_open = ok > 0;
    if (ok > 0 && add_launch_metrics(data) < 0)
      ok = -1;
    if (cpy_metrics_run_pending_outside_op(PyUnicode_AsUTF8(name)) < 0)
      ok = -1;
    if (ok > 0 && set_launch_vars(name) < 0)
      ok = -1;
  }
  Py_CLEAR(cpy_pending_state);
  Py_DECREF(data);
  if (ok < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_launch_exit(PyObject *m, PyObject *lazy) {
  if (cpy_op_open && !cpy_in_metric_launch) {
    cpy_op_open = 0;
    cproton_op_exit();
  }
  Py_RETURN_NONE;
}

/* launch_admits(name) -> bool: whether the kernel filter admits `name`. */
static PyObject *py_launch_admits(PyObject *m, PyObject *name) {
  if (!PyUnicode_Check(name)) {
    PyErr_SetString(PyExc_TypeError, "a kernel name must be a str");
    return NULL;
  }
  int ok = admitted(name);
  return ok < 0 ? NULL : PyBool_FromLong(ok);
}

static PyObject *py_set_launch_filter(PyObject *m, PyObject *fn) {
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "the launch filter must be callable");
    return NULL;
  }
  Py_XDECREF(launch_filter);
  launch_filter = fn == Py_None ? NULL : (Py_INCREF(fn), fn);
  PyDict_Clear(filter_cache);
  Py_RETURN_NONE;
}

static PyMethodDef launch_methods[] = {
    {"set_launch_vars", py_set_launch_vars, METH_VARARGS,
     "set_launch_vars(op_name, id): the ContextVars each hooked launch sets"},
    {"launch_enter", py_launch_enter, METH_O, "Triton launch-enter hook"},
    {"set_lazy_dict", py_set_lazy_dict, METH_VARARGS,
     "set_lazy_dict(LazyDict, LazyDict.get): its get() may run in C"},
    {"launch_exit", py_launch_exit, METH_O, "Triton launch-exit hook"},
    {"launch_admits", py_launch_admits, METH_O, "launch_admits(name) -> bool"},
    {"set_launch_filter", py_set_launch_filter, METH_O,
     "set_launch_filter(callable or None)"},
    {NULL}};

int cpy_launch_add(PyObject *module) {
  filter_cache = PyDict_New();
  if (!filter_cache || launch_strings() < 0)
    return -1;
  return PyModule_AddFunctions(module, launch_methods);
}
