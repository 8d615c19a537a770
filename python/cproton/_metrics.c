/* _metrics.c -- metrics from Python: dicts of numbers, strings, vectors
 * (Proton 3.9's lists) and tensors added to a scope or to the current op,
 * typed as the followed Proton types them (3.9's roofline metrics keep
 * their type); tensor metrics and numbers given during a CUDA graph
 * capture queued through cproton.metric, whose copy kernels are launched
 * outside the op they belong to. Invariant: a thread's queued copy
 * kernels (tensor_pending) are launched before its add_metrics call
 * returns, or by the op's opener. Called by _scope.c, _launch.c and the
 * package's Python modules; uses only the public header. */
#include "_metrics.h"

#include <stdint.h>
#include <string.h>

#include "_status.h"

_Thread_local int cpy_op_open;
_Thread_local int cpy_in_metric_launch; /* launching them: no hooks */
/* Tensor metrics (cproton.metric): record(scope_id, name, tensor,
 * as_double) -> bool
 * (True: a copy kernel is queued) and launch_pending(); NULL until the
 * module registers them. */
static PyObject *tensor_record, *tensor_launch;
/* cproton.metric's "is the current stream capturing a CUDA graph?", set
 * once it has a CUDA buffer (a capture needs one made before it): numbers
 * given during a capture then take the device path, so that every replay
 * adds them (docs/tensor-metrics.md). NULL: never capturing. */
static PyObject *capture_probe;
static _Thread_local int tensor_pending;   /* copy kernels queued */

/* A tensor metric value: anything with data_ptr() and device (torch). */
int cpy_metrics_is_tensor(PyObject *v) {
  return !PyLong_Check(v) && !PyFloat_Check(v) && !PyUnicode_Check(v) &&
         PyObject_HasAttrString(v, "data_ptr") &&
         PyObject_HasAttrString(v, "device");
}

static int add_tensor(uint64_t scope, const char *key, PyObject *v,
                      int as_double) {
  if (!tensor_record) {
    PyErr_Format(PyExc_RuntimeError, "metric '%s': tensor metrics need the "
                 "cproton.metric module (import cproton)", key);
    return -1;
  }
  PyObject *r = PyObject_CallFunction(tensor_record, "KsOO",
                                      (unsigned long long)scope, key, v,
                                      as_double ? Py_True : Py_False);
  if (!r)
    return -1;
  tensor_pending |= PyObject_IsTrue(r) > 0;
  Py_DECREF(r);
  return 0;
}

/* The state the copy kernels run under while the launch hook runs them
 * (Proton 3.9's per-kernel metadata state); NULL: "__proton_launch_metadata". */
PyObject *cpy_pending_state;

/* Launches the copy kernels queued by add_tensor. Their own Triton launch
 * must not enter the launch hook (it would open an op for them). */
static int run_pending(void) {
  if (!tensor_pending)
    return 0;
  tensor_pending = 0;
  cpy_in_metric_launch = 1;
  PyObject *r = PyObject_CallOneArg(tensor_launch, cpy_pending_state ? cpy_pending_state : Py_None);
  cpy_in_metric_launch = 0;
  Py_XDECREF(r);
  return r ? 0 : -1;
}

/* run_pending with the thread's op closed around it, so the copy kernels
 * are not attributed to the op (its kernel's node); the op `name` is
 * reopened on the same node. */
int cpy_metrics_run_pending_outside_op(const char *name) {
  if (!tensor_pending)
    return 0;
  int was_open = cpy_op_open;
  if (was_open)
    cproton_op_exit();
  int ok = run_pending();
  int rc = was_open ? cproton_op_enter(name) : CPROTON_OK;
  if (rc && ok == 0) {
    cpy_status_raise(rc);
    return -1;
  }
  return ok;
}

/* A list or tuple of numbers: Proton 3.9's vector metric. Doubles when
 * `as_double` or when an element is not an integer, else int64. */
static int add_vector(uint64_t scope, const char *key, PyObject *v,
                      int as_double) {
  PyObject *seq = PySequence_Fast(v, "a vector metric");
  if (!seq)
    return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject **items = PySequence_Fast_ITEMS(seq);
  int dbl = as_double, rc = -1;
  for (Py_ssize_t k = 0; k < n && !dbl; k++)
    dbl = PyFloat_Check(items[k]) || !PyIndex_Check(items[k]);
  union { int64_t i; double d; } *buf = PyMem_Malloc((size_t)(n ? n : 1) * 8);
  if (!buf) {
    PyErr_NoMemory();
    goto out;
  }
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject *e = items[k];
    if (PyUnicode_Check(e) || !PyNumber_Check(e)) {
      PyErr_Format(PyExc_TypeError, "vector metric '%s' must hold numbers, "
                   "not %.100s (element %zd)", key, Py_TYPE(e)->tp_name, k);
      goto out;
    }
    if (dbl)
      buf[k].d = PyFloat_AsDouble(e);
    else
      buf[k].i = PyLong_AsLongLong(e);
    if (PyErr_Occurred()) {
      if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "vector metric '%s': element %zd does "
                     "not fit in 64 bits", key, k);
      }
      goto out;
    }
  }
  int st = dbl ? cproton_metric_add_double_vector(scope, key, &buf[0].d, (size_t)n)
               : cproton_metric_add_int_vector(scope, key, &buf[0].i, (size_t)n);
  if (st)
    cpy_status_raise_as(st, CPY_RT(ESTATE)); /* a type change: Proton's RuntimeError */
  else
    rc = 0;
out:
  PyMem_Free(buf);
  Py_DECREF(seq);
  return rc;
}

/* 1 when numbers must be recorded on the device now (a CUDA graph is being
 * captured on the current stream), 0 if not, -1 with an exception. */
int cpy_metrics_capturing(void) {
  if (!capture_probe)
    return 0;
  PyObject *r = PyObject_CallNoArgs(capture_probe);
  if (!r)
    return -1;
  int on = PyObject_IsTrue(r);
  Py_DECREF(r);
  return on;
}


/* Proton 3.9's roofline metrics keep their type whatever the value's:
 * 1 for "flops" and "flops8/16/32/64" (double), 2 for "bytes" (int64), 0
 * for any other name (typed by its value). Proton 3.6 types by value. */
static int roofline_kind(const char *key) {
  static const char *const doubles[] = {"flops", "flops8", "flops16",
                                        "flops32", "flops64"};
  if (!cpy_metrics_is_39())
    return 0;
  for (size_t i = 0; i < sizeof doubles / sizeof *doubles; i++)
    if (strcmp(key, doubles[i]) == 0)
      return 1;
  return strcmp(key, "bytes") == 0 ? 2 : 0;
}

/* A float given for an int64 roofline metric ("bytes" under 3.9): its
 * integer part, as Proton 3.9's int() conversion. */
static int add_as_int(uint64_t scope, const char *key, PyObject *v) {
  PyObject *i = PyNumber_Long(v);
  long long x = i ? PyLong_AsLongLong(i) : -1;
  Py_XDECREF(i);
  if (x == -1 && PyErr_Occurred())
    return -1;
  int rc = cproton_metric_add_int(scope, key, (int64_t)x);
  if (rc)
    cpy_status_raise_as(rc, CPY_RT(ESTATE));
  return rc ? -1 : 0;
}

/* `capturing`: from capturing_now(), once per dict of metrics. */
int cpy_metrics_add_one(uint64_t scope, const char *key, PyObject *v, int as_double,
                   int capturing) {
  int rc, roof = roofline_kind(key);
  if (roof)
    as_double = roof == 1;
  if (roof == 2 && PyFloat_Check(v) && !capturing)
    return add_as_int(scope, key, v);
  if (PyUnicode_Check(v) && cpy_metrics_is_39()) { /* Proton 3.9 has no string metrics */
    PyErr_Format(PyExc_TypeError, "add_metrics(): incompatible function "
                 "arguments: metric '%s' must be an int, a float or a "
                 "sequence of them, not str", key);
    return -1;
  }
  if (cpy_metrics_is_tensor(v) || (capturing && (PyLong_Check(v) || PyFloat_Check(v))))
    return add_tensor(scope, key, v, as_double);
  if (PyList_Check(v) || PyTuple_Check(v))
    return add_vector(scope, key, v, as_double);
  if (!as_double && (PyLong_Check(v) || (!PyFloat_Check(v) &&
                                          PyIndex_Check(v)))) {
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Format(PyExc_ValueError, "metric '%s' does not fit in 64 bits",
                   key);
      return -1;
    }
    rc = cproton_metric_add_int(scope, key, (int64_t)x);
  } else if (PyFloat_Check(v) || PyNumber_Check(v)) {
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred())
      return -1;
    rc = cproton_metric_add_double(scope, key, x);
  } else if (PyUnicode_Check(v)) { /* Proton's string metrics */
    const char *text = PyUnicode_AsUTF8(v);
    if (!text)
      return -1;
    rc = cproton_metric_add_string(scope, key, text);
  } else {
    PyErr_Format(PyExc_TypeError, "metric '%s' must be an int, a float, a "
                 "str or a list of numbers, not %.100s", key,
                 Py_TYPE(v)->tp_name);
    return -1;
  }
  if (rc) {
    cpy_status_raise_as(rc, CPY_RT(ESTATE)); /* the type mismatch: Proton's RuntimeError */
    return -1;
  }
  return 0;
}

/* Adds every item of the dict `metrics` to `scope`. */
int cpy_metrics_add(uint64_t scope, PyObject *metrics) {
  if (metrics == Py_None || !metrics)
    return 0;
  if (!PyDict_Check(metrics)) {
    PyErr_Format(PyExc_TypeError, "metrics must be a dict, not %.100s",
                 Py_TYPE(metrics)->tp_name);
    return -1;
  }
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  int capturing = PyDict_GET_SIZE(metrics) ? cpy_metrics_capturing() : 0;
  if (capturing < 0)
    return -1;
  while (PyDict_Next(metrics, &pos, &k, &v)) {
    const char *key = PyUnicode_Check(k) ? cpy_status_utf8_no_nul(k, "metric") : NULL;
    if (!key) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "metric names must be str, not %.100s",
                     Py_TYPE(k)->tp_name);
      return -1;
    }
    if (cpy_metrics_add_one(scope, key, v, 0, capturing) < 0) {
      /* The metrics before this one were added: launch their copies too. */
      PyObject *t, *val, *tb;
      PyErr_Fetch(&t, &val, &tb);
      if (scope != CPROTON_CURRENT_OP && run_pending() < 0)
        PyErr_Clear();
      PyErr_Restore(t, val, tb);
      return -1;
    }
  }
  /* An op's copy kernels are launched by its opener, outside the op. */
  return scope == CPROTON_CURRENT_OP ? 0 : run_pending();
}

static PyObject *py_add_metrics(PyObject *m, PyObject *args) {
  unsigned long long id;
  PyObject *metrics;
  if (!PyArg_ParseTuple(args, "KO:add_metrics", &id, &metrics))
    return NULL;
  if (cpy_metrics_add(id, metrics) < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* ---- tensor metrics (cproton.metric) -------------------------------------------- */

static PyObject *py_set_tensor_metric_handler(PyObject *m, PyObject *args) {
  PyObject *rec, *launch;
  if (!PyArg_ParseTuple(args, "OO:set_tensor_metric_handler", &rec, &launch))
    return NULL;
  if (!PyCallable_Check(rec) || !PyCallable_Check(launch)) {
    PyErr_SetString(PyExc_TypeError, "tensor metric handlers must be callable");
    return NULL;
  }
  Py_INCREF(rec);
  Py_XSETREF(tensor_record, rec);
  Py_INCREF(launch);
  Py_XSETREF(tensor_launch, launch);
  Py_RETURN_NONE;
}

static PyObject *py_set_capture_probe(PyObject *m, PyObject *probe) {
  if (probe != Py_None && !PyCallable_Check(probe)) {
    PyErr_SetString(PyExc_TypeError, "the capture probe must be callable or None");
    return NULL;
  }
  Py_XSETREF(capture_probe, probe == Py_None ? NULL : Py_NewRef(probe));
  Py_RETURN_NONE;
}

static PyObject *py_tensor_metric_slot(PyObject *m, PyObject *args) {
  unsigned long long scope;
  const char *name;
  int is_double;
  unsigned int n_values = 0; /* 0: a scalar; else a vector's length */
  int captured = 0;          /* given during a CUDA graph capture */
  if (!PyArg_ParseTuple(args, "Ksp|Ip:tensor_metric_slot", &scope, &name,
                        &is_double, &n_values, &captured))
    return NULL;
  uint32_t slot;
  int rc = captured ? cproton_tensor_metric_slot_captured(
                          scope, name, is_double, n_values, &slot)
                    : cproton_tensor_metric_slot_vector(scope, name, is_double,
                                                        n_values, &slot);
  if (rc)
    return cpy_status_raise(rc);
  return PyLong_FromUnsignedLong(slot);
}

/* tensor_metric_tag(slot): the thread's next launch copies slot's record */
static PyObject *py_tensor_metric_tag(PyObject *m, PyObject *arg) {
  unsigned long slot = PyLong_AsUnsignedLong(arg);
  if (slot == (unsigned long)-1 && PyErr_Occurred())
    return NULL;
  cproton_tensor_metric_tag(slot > UINT32_MAX ? CPROTON_TENSOR_METRIC_NONE
                                              : (uint32_t)slot);
  Py_RETURN_NONE;
}

/* tensor_metric_forget_places() -> graph-replay places forgotten */
static PyObject *py_tensor_metric_forget_places(PyObject *m,
                                                PyObject *Py_UNUSED(a)) {
  return PyLong_FromSize_t(cproton_tensor_metric_forget_places());
}

/* tensor_metric_fold(bytes of little-endian int64 words) -> records folded */
static PyObject *py_tensor_metric_fold(PyObject *m, PyObject *arg) {
  Py_buffer b;
  if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
    return NULL;
  size_t folded = 0;
  int rc = b.len % sizeof(uint64_t)
               ? CPROTON_EINVAL
               : cproton_tensor_metric_fold((const uint64_t *)b.buf,
                                            (size_t)b.len / sizeof(uint64_t),
                                            &folded);
  PyBuffer_Release(&b);
  if (rc == CPROTON_EINVAL && b.len % sizeof(uint64_t)) {
    PyErr_Format(PyExc_ValueError, "tensor metric records: %zd bytes is not "
                 "a whole number of 64-bit words", b.len);
    return NULL;
  }
  if (rc) /* a metric's type change: Proton's RuntimeError, as in add_one */
    return cpy_status_raise_as(rc, CPY_RT(ESTATE));
  return PyLong_FromSize_t(folded);
}

static PyMethodDef metrics_methods[] = {
    {"add_metrics", py_add_metrics, METH_VARARGS, "add_metrics(id, dict)"},
    {"set_tensor_metric_handler", py_set_tensor_metric_handler, METH_VARARGS,
     "set_tensor_metric_handler(record, launch_pending) (cproton.metric)"},
    {"set_capture_probe", py_set_capture_probe, METH_O,
     "set_capture_probe(callable or None): numbers take the device path "
     "while it returns True"},
    {"tensor_metric_slot", py_tensor_metric_slot, METH_VARARGS,
     "tensor_metric_slot(scope_id, name, is_double, n_values=0, "
     "captured=False) -> slot"},
    {"tensor_metric_forget_places", py_tensor_metric_forget_places,
     METH_NOARGS,
     "tensor_metric_forget_places() -> graph-replay places forgotten"},
    {"tensor_metric_tag", py_tensor_metric_tag, METH_O,
     "tensor_metric_tag(slot): the thread's next launch copies slot's record"},
    {"tensor_metric_fold", py_tensor_metric_fold, METH_O,
     "tensor_metric_fold(bytes of int64 {slot, bits} records) -> folded"},
    {NULL}};

int cpy_metrics_add_methods(PyObject *module) {
  return PyModule_AddFunctions(module, metrics_methods);
}
