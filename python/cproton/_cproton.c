/* _cproton.c -- the CPython extension module behind the cproton package: a
 * thin binding of <cproton/cproton.h> (sessions, scopes, metrics, states,
 * ops, data) plus the pieces that must be fast or must run without Python
 * code: the `Scope` type (the base of cproton.scope), the Triton launch
 * hook body, and the log queue.
 *
 * Invariant: the id mirror (ids[]) holds the scope ids of the calling
 * thread's shadow stack in order, as pushed and popped through this module;
 * it lets exit_scope() return the id it popped, as Proton's does.
 * Hot path: Scope.__enter__/__exit__, enter_scope/exit_scope, launch_enter/
 * launch_exit: no allocation beyond Python's own, no formatting.
 * The log handler may run on any thread without the GIL: it only queues.
 * Called by the Python modules of the package (profile.py, scope.py, ...).
 * Uses only the public header of the C library. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_hookchain.h"
#include "_pyframes.h"
#include "_torchlink.h"
#include "_instrument.h"
#include "_testing.h"
#include "cproton/cproton.h"

static int profiling_on; /* mirrors cproton.flags.flags.profiling_on */
static PyObject *warning_type; /* cproton.CprotonWarning */
static PyObject *launch_filter; /* callable(name) -> bool, or NULL */
static PyObject *filter_cache;  /* dict: kernel name -> bool */
/* cproton.hooks.launch's `op_name` and `id` ContextVars (Proton's), set on
 * each hooked launch; NULL until the module registers them. */
static PyObject *launch_op_var, *launch_id_var;
static unsigned long long launch_count; /* under the GIL */

#define MIRROR_DEPTH 1024
static _Thread_local uint64_t ids[MIRROR_DEPTH];
static _Thread_local size_t n_ids;
static _Thread_local int op_open;
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
static _Thread_local int in_metric_launch; /* launching them: no hooks */

/* ---- errors ----------------------------------------------------------------- */

/* The Python exception of a status. Where Proton's C++ makes the same check
 * it throws std::runtime_error, which pybind11 raises as RuntimeError: an
 * unknown session (ENOTFOUND, everywhere), and at the calls that pass them in
 * `runtime` (RT(...) bits): unknown backend/data/context names and a second
 * session's different mode (start), unknown output formats (check_format),
 * a metric's type change (add_one). What Proton does not check keeps
 * ValueError; docs/python.md has the table. */
#define RT(code) (1u << -(CPROTON_##code))

static PyObject *exception_for(int rc, unsigned runtime) {
  if (rc < 0 && rc > -32 && (runtime & (1u << -rc)))
    return PyExc_RuntimeError;
  switch (rc) {
  case CPROTON_ENOMEM:
    return PyExc_MemoryError;
  case CPROTON_EIO:
    return PyExc_OSError;
  case CPROTON_EINVAL:
  case CPROTON_EPARSE:
  case CPROTON_ESTATE:
  case CPROTON_ELIMIT:
  case CPROTON_EUNSUPPORTED:
    return PyExc_ValueError;
  default: /* ENOTFOUND: Proton's "Session has not been initialized: N" */
    return PyExc_RuntimeError;
  }
}

/* Raises the Python exception for status `rc` (RuntimeError for the codes
 * in `runtime`); returns NULL. */
static PyObject *raise_as(int rc, unsigned runtime) {
  const char *msg = cproton_last_error();
  PyErr_SetString(exception_for(rc, runtime),
                  msg && *msg ? msg : cproton_strerror(rc));
  return NULL;
}

static PyObject *raise_status(int rc) { return raise_as(rc, 0); }

/* Emits a CprotonWarning with the library's message; -1 if it raised. */
static int warn_status(int rc) {
  const char *msg = cproton_last_error();
  return PyErr_WarnEx(warning_type ? warning_type : PyExc_RuntimeWarning,
                      msg && *msg ? msg : cproton_strerror(rc), 2);
}

/* ---- the log queue -------------------------------------------------------- */

#define LOG_CAP 1024
static struct {
  int level;
  char text[512];
} log_queue[LOG_CAP];
static unsigned log_count, log_dropped;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_log(void *user, cproton_log_level level, const char *message) {
  pthread_mutex_lock(&log_lock);
  if (log_count < LOG_CAP) {
    log_queue[log_count].level = (int)level;
    snprintf(log_queue[log_count].text, sizeof log_queue[0].text, "%s",
             message ? message : "");
    log_count++;
  } else {
    log_dropped++;
  }
  pthread_mutex_unlock(&log_lock);
}

static PyObject *py_drain_log(PyObject *m, PyObject *unused) {
  PyObject *list = PyList_New(0);
  pthread_mutex_lock(&log_lock);
  for (unsigned i = 0; list && i < log_count; i++) {
    PyObject *t = Py_BuildValue("(is)", log_queue[i].level, log_queue[i].text);
    if (!t || PyList_Append(list, t) < 0)
      Py_CLEAR(list);
    Py_XDECREF(t);
  }
  unsigned dropped = log_dropped;
  log_count = log_dropped = 0;
  pthread_mutex_unlock(&log_lock);
  if (list && dropped) {
    PyObject *t = Py_BuildValue("(is)", (int)CPROTON_LOG_WARN,
                                "some cproton log messages were dropped");
    if (!t || PyList_Append(list, t) < 0)
      Py_CLEAR(list);
    Py_XDECREF(t);
  }
  return list;
}

/* UTF-8 of a str with no NUL: the C library takes NUL-terminated names,
 * so "a\0b" would silently become "a" (session names raise the same way
 * through PyArg's "z"). */
static const char *utf8_no_nul(PyObject *s, const char *what) {
  Py_ssize_t n;
  const char *u = PyUnicode_AsUTF8AndSize(s, &n);
  if (u && strlen(u) != (size_t)n) {
    PyErr_Format(PyExc_ValueError, "embedded null character in %s name", what);
    return NULL;
  }
  return u;
}

/* ---- metrics ------------------------------------------------------------------ */

/* A tensor metric value: anything with data_ptr() and device (torch). */
static int is_tensor(PyObject *v) {
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
static PyObject *pending_state;

/* Launches the copy kernels queued by add_tensor. Their own Triton launch
 * must not enter the launch hook (it would open an op for them). */
static int run_pending(void) {
  if (!tensor_pending)
    return 0;
  tensor_pending = 0;
  in_metric_launch = 1;
  PyObject *r = PyObject_CallOneArg(tensor_launch, pending_state ? pending_state : Py_None);
  in_metric_launch = 0;
  Py_XDECREF(r);
  return r ? 0 : -1;
}

/* run_pending with the thread's op closed around it, so the copy kernels
 * are not attributed to the op (its kernel's node); the op `name` is
 * reopened on the same node. */
static int run_pending_outside_op(const char *name) {
  if (!tensor_pending)
    return 0;
  int was_open = op_open;
  if (was_open)
    cproton_op_exit();
  int ok = run_pending();
  int rc = was_open ? cproton_op_enter(name) : CPROTON_OK;
  if (rc && ok == 0) {
    raise_status(rc);
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
    raise_as(st, RT(ESTATE)); /* a type change: Proton's RuntimeError */
  else
    rc = 0;
out:
  PyMem_Free(buf);
  Py_DECREF(seq);
  return rc;
}

/* 1 when numbers must be recorded on the device now (a CUDA graph is being
 * captured on the current stream), 0 if not, -1 with an exception. */
static int capturing_now(void) {
  if (!capture_probe)
    return 0;
  PyObject *r = PyObject_CallNoArgs(capture_probe);
  if (!r)
    return -1;
  int on = PyObject_IsTrue(r);
  Py_DECREF(r);
  return on;
}

static int is_39(void) { return cproton_proton_compat() >= CPROTON_PROTON_3_9; }

/* Proton 3.9's roofline metrics keep their type whatever the value's:
 * 1 for "flops" and "flops8/16/32/64" (double), 2 for "bytes" (int64), 0
 * for any other name (typed by its value). Proton 3.6 types by value. */
static int roofline_kind(const char *key) {
  static const char *const doubles[] = {"flops", "flops8", "flops16",
                                        "flops32", "flops64"};
  if (!is_39())
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
    raise_as(rc, RT(ESTATE));
  return rc ? -1 : 0;
}

/* `capturing`: from capturing_now(), once per dict of metrics. */
static int add_one(uint64_t scope, const char *key, PyObject *v, int as_double,
                   int capturing) {
  int rc, roof = roofline_kind(key);
  if (roof)
    as_double = roof == 1;
  if (roof == 2 && PyFloat_Check(v) && !capturing)
    return add_as_int(scope, key, v);
  if (PyUnicode_Check(v) && is_39()) { /* Proton 3.9 has no string metrics */
    PyErr_Format(PyExc_TypeError, "add_metrics(): incompatible function "
                 "arguments: metric '%s' must be an int, a float or a "
                 "sequence of them, not str", key);
    return -1;
  }
  if (is_tensor(v) || (capturing && (PyLong_Check(v) || PyFloat_Check(v))))
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
    raise_as(rc, RT(ESTATE)); /* the type mismatch: Proton's RuntimeError */
    return -1;
  }
  return 0;
}

/* Adds every item of the dict `metrics` to `scope`. */
static int add_metrics(uint64_t scope, PyObject *metrics) {
  if (metrics == Py_None || !metrics)
    return 0;
  if (!PyDict_Check(metrics)) {
    PyErr_Format(PyExc_TypeError, "metrics must be a dict, not %.100s",
                 Py_TYPE(metrics)->tp_name);
    return -1;
  }
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  int capturing = PyDict_GET_SIZE(metrics) ? capturing_now() : 0;
  if (capturing < 0)
    return -1;
  while (PyDict_Next(metrics, &pos, &k, &v)) {
    const char *key = PyUnicode_Check(k) ? utf8_no_nul(k, "metric") : NULL;
    if (!key) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "metric names must be str, not %.100s",
                     Py_TYPE(k)->tp_name);
      return -1;
    }
    if (add_one(scope, key, v, 0, capturing) < 0) {
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
  if (add_metrics(id, metrics) < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* ---- scopes ------------------------------------------------------------------- */

static const char *name_utf8(PyObject *name, const char *what) {
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "%s name must be a str, not %.100s", what,
                 Py_TYPE(name)->tp_name);
    return NULL;
  }
  return utf8_no_nul(name, what);
}

static int pop_scope(const char *name, uint64_t *id_out);

/* Pushes scope `name`; 0 with *id_out, or -1 with an exception. */
static int push_scope(PyObject *name, PyObject *metrics, uint64_t *id_out) {
  const char *s = name_utf8(name, "scope");
  if (!s)
    return -1;
  int rc = cproton_scope_enter(s, id_out);
  if (rc) {
    raise_status(rc);
    return -1;
  }
  if (n_ids < MIRROR_DEPTH)
    ids[n_ids] = *id_out;
  n_ids++;
  if (add_metrics(*id_out, metrics) == 0)
    return 0;
  /* A bad metric raises before `with` gets the scope: exit it here, or it
   * would stay open on this thread for every later session. */
  uint64_t unused;
  pop_scope(NULL, &unused);
  return -1;
}

/* Pops the innermost scope (checking `name` unless NULL). */
static int pop_scope(const char *name, uint64_t *id_out) {
  int rc = cproton_scope_exit(name);
  if (rc)
    return rc;
  *id_out = n_ids && n_ids <= MIRROR_DEPTH ? ids[n_ids - 1] : 0;
  if (n_ids)
    n_ids--;
  return CPROTON_OK;
}

typedef struct {
  PyObject_HEAD
  PyObject *name;
  PyObject *metrics;
  uint64_t id;
  int has_id;
} Scope;

static int Scope_init(Scope *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "metrics", NULL};
  PyObject *name, *metrics = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:scope", kwlist, &name,
                                   &metrics))
    return -1;
  if (!name_utf8(name, "scope"))
    return -1;
  if (metrics != Py_None && !PyDict_Check(metrics)) {
    PyErr_Format(PyExc_TypeError, "metrics must be a dict, not %.100s",
                 Py_TYPE(metrics)->tp_name);
    return -1;
  }
  Py_INCREF(name);
  Py_XSETREF(self->name, name);
  Py_INCREF(metrics);
  Py_XSETREF(self->metrics, metrics);
  self->has_id = 0;
  return 0;
}

static void Scope_dealloc(Scope *self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(self->name);
  Py_CLEAR(self->metrics);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Scope_traverse(Scope *self, visitproc visit, void *arg) {
  Py_VISIT(self->name);
  Py_VISIT(self->metrics);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

static PyObject *Scope_enter_scope(Scope *self, PyObject *unused) {
  if (!profiling_on || !self->name)
    Py_RETURN_NONE;
  if (push_scope(self->name, self->metrics, &self->id) < 0)
    return NULL;
  self->has_id = 1;
  Py_RETURN_NONE;
}

static PyObject *Scope_exit_scope(Scope *self, PyObject *unused) {
  if (!profiling_on || !self->has_id)
    Py_RETURN_NONE;
  uint64_t id;
  int rc = pop_scope(PyUnicode_AsUTF8(self->name), &id);
  if (rc && warn_status(rc) < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *Scope_enter(Scope *self, PyObject *unused) {
  PyObject *r = Scope_enter_scope(self, NULL);
  if (!r)
    return NULL;
  Py_DECREF(r);
  Py_INCREF(self);
  return (PyObject *)self;
}

static PyObject *Scope_exit(Scope *self, PyObject *const *args,
                            Py_ssize_t n) {
  return Scope_exit_scope(self, NULL);
}

static PyObject *Scope_get_id(Scope *self, void *closure) {
  if (!self->has_id)
    Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong(self->id);
}

static int Scope_set_id(Scope *self, PyObject *v, void *closure) {
  if (!v || v == Py_None) {
    self->has_id = 0;
    return 0;
  }
  unsigned long long id = PyLong_AsUnsignedLongLong(v);
  if (id == (unsigned long long)-1 && PyErr_Occurred())
    return -1;
  self->id = id;
  self->has_id = 1;
  return 0;
}

static PyMemberDef Scope_members[] = {
    {"name", T_OBJECT, offsetof(Scope, name), 0, "The scope's name."},
    {"metrics", T_OBJECT, offsetof(Scope, metrics), 0,
     "Metrics added when the scope is entered (dict or None)."},
    {NULL}};

static PyGetSetDef Scope_getset[] = {
    {"id", (getter)Scope_get_id, (setter)Scope_set_id,
     "The scope id of the last entry, or None.", NULL},
    {NULL}};

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
    return raise_status(rc);
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
    return raise_as(rc, RT(ESTATE));
  return PyLong_FromSize_t(folded);
}

static PyMethodDef Scope_methods[] = {
    {"__enter__", (PyCFunction)Scope_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))Scope_exit, METH_FASTCALL, NULL},
    {"_enter_scope", (PyCFunction)Scope_enter_scope, METH_NOARGS, NULL},
    {"_exit_scope", (PyCFunction)Scope_exit_scope, METH_NOARGS, NULL},
    {NULL}};

static PyTypeObject ScopeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cproton._cproton.Scope",
    .tp_basicsize = sizeof(Scope),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Scope(name, metrics=None)\n--\n\nA shadow-stack scope.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scope_init,
    .tp_dealloc = (destructor)Scope_dealloc,
    .tp_traverse = (traverseproc)Scope_traverse,
    .tp_members = Scope_members,
    .tp_getset = Scope_getset,
    .tp_methods = Scope_methods,
};

static PyObject *py_enter_scope(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "metrics", NULL};
  PyObject *name, *metrics = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$O:enter_scope", kwlist, &name,
                                   &metrics))
    return NULL;
  if (!profiling_on)
    Py_RETURN_NONE;
  uint64_t id;
  if (push_scope(name, metrics, &id) < 0)
    return NULL;
  return PyLong_FromUnsignedLongLong(id);
}

static PyObject *py_exit_scope(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "metrics", NULL};
  PyObject *name = Py_None, *metrics = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$O:exit_scope", kwlist, &name,
                                   &metrics))
    return NULL;
  if (!profiling_on)
    Py_RETURN_NONE;
  const char *s = NULL;
  if (name != Py_None && !(s = name_utf8(name, "scope")))
    return NULL;
  if (s && !*s)
    s = NULL; /* Proton: an empty name means "the innermost" */
  uint64_t id;
  int rc = pop_scope(s, &id);
  if (rc)
    return raise_status(rc);
  if (add_metrics(id, metrics) < 0)
    return NULL;
  if (!id)
    Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong(id);
}

static PyObject *py_depth(PyObject *m, PyObject *unused) {
  return PyLong_FromSize_t(cproton_scope_depth());
}

/* ---- states and ops ------------------------------------------------------------ */

static PyObject *py_enter_state(PyObject *m, PyObject *name) {
  const char *s = name_utf8(name, "state");
  if (!s)
    return NULL;
  int rc = cproton_state_enter(s);
  if (rc)
    return raise_status(rc);
  Py_RETURN_NONE;
}

/* An exit with no open state raises, as the C API returns ESTATE: a
 * silently ignored exit would hide an unbalanced enter elsewhere. */
static PyObject *py_exit_state(PyObject *m, PyObject *unused) {
  int rc = cproton_state_exit();
  if (rc)
    return raise_status(rc);
  Py_RETURN_NONE;
}

static PyObject *py_enter_op(PyObject *m, PyObject *args) {
  PyObject *name, *metrics = Py_None;
  if (!PyArg_ParseTuple(args, "O|O:enter_op", &name, &metrics))
    return NULL;
  const char *s = name_utf8(name, "op");
  if (!s)
    return NULL;
  int rc = cproton_op_enter(s);
  if (rc)
    return raise_status(rc);
  op_open = 1;
  int ok = add_metrics(CPROTON_CURRENT_OP, metrics);
  if (run_pending_outside_op(s) < 0 || ok < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_exit_op(PyObject *m, PyObject *unused) {
  op_open = 0;
  int rc = cproton_op_exit();
  if (rc)
    return raise_status(rc);
  Py_RETURN_NONE;
}

/* ---- the Triton launch hook ------------------------------------------------------ */

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
  int capturing = PyDict_GET_SIZE(data) ? capturing_now() : 0;
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
          PyTuple_Check(v) || is_tensor(v)))
      continue;
    const char *key = utf8_no_nul(k, "metric");
    /* Proton 3.6's hook: every value a double; 3.9: typed by value except
     * the roofline metrics (roofline_kind) */
    if (!key || add_one(CPROTON_CURRENT_OP, key, v, !is_39(), capturing) < 0)
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

/* kernel_fact(kernel, fact, value): a compile fact for the advisor
 * (cproton_kernel_fact); value is an int, or a str for text facts. */
static PyObject *py_kernel_fact(PyObject *m, PyObject *args) {
  const char *kernel, *fact;
  PyObject *value;
  (void)m;
  if (!PyArg_ParseTuple(args, "ssO:kernel_fact", &kernel, &fact, &value))
    return NULL;
  int rc;
  if (PyUnicode_Check(value)) {
    const char *text = PyUnicode_AsUTF8(value);
    if (!text)
      return NULL;
    rc = cproton_kernel_fact(kernel, fact, 0, text);
  } else {
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred())
      return NULL;
    rc = cproton_kernel_fact(kernel, fact, v, NULL);
  }
  return rc == CPROTON_OK ? Py_NewRef(Py_None) : raise_status(rc);
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
  PyObject *state = raw && is_39()
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
  if (!profiling_on || lazy == Py_None || in_metric_launch ||
      (in_metadata && is_39())) /* a kernel launched by launch_metadata */
    Py_RETURN_NONE;
  PyObject *raw = raw_kernel_name(lazy);
  int early = raw && launch_filter && is_39() ? admitted(raw) : 1;
  PyObject *data = early > 0 ? metadata_under_state(lazy, raw) : NULL;
  /* Proton 3.9 launches the metric copies under the kernel's metadata
   * state too */
  PyObject *state = data && raw && is_39()
      ? PyUnicode_FromFormat("__proton_launch_metadata:%U", raw) : NULL;
  Py_XDECREF(raw);
  if (early == 0)
    Py_RETURN_NONE;
  if (!data)
    return NULL;
  Py_XSETREF(pending_state, state);
  PyObject *name = PyDict_Check(data) ? PyDict_GetItemWithError(data, s_name)
                                      : NULL;
  if (!name && PyErr_Occurred()) {
    Py_DECREF(data);
    return NULL;
  }
  int ok = name && PyUnicode_Check(name) ? admitted(name) : 0;
  if (ok > 0) {
    int rc = cproton_op_enter(PyUnicode_AsUTF8(name));
    ok = rc ? (raise_status(rc), -1) : 1;
    op_open = ok > 0;
    if (ok > 0 && add_launch_metrics(data) < 0)
      ok = -1;
    if (run_pending_outside_op(PyUnicode_AsUTF8(name)) < 0)
      ok = -1;
    if (ok > 0 && set_launch_vars(name) < 0)
      ok = -1;
  }
  Py_CLEAR(pending_state);
  Py_DECREF(data);
  if (ok < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_launch_exit(PyObject *m, PyObject *lazy) {
  if (op_open && !in_metric_launch) {
    op_open = 0;
    cproton_op_exit();
  }
  Py_RETURN_NONE;
}

/* pcsampling_add_cubin(bytes): a module loaded before start (Triton's
 * kept cubin) gets source lines. Returns False when no session samples. */
static PyObject *py_pcsampling_add_cubin(PyObject *m, PyObject *arg) {
  Py_buffer b;
  if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
    return NULL;
  int rc = cproton_pcsampling_add_cubin(b.buf, (size_t)b.len);
  PyBuffer_Release(&b);
  return PyBool_FromLong(rc == CPROTON_OK);
}

/* set_proton_compat(306 | 309): the Proton version the library and this
 * module follow (cproton._compat decides it once, at import). */
static PyObject *py_set_proton_compat(PyObject *m, PyObject *arg) {
  long v = PyLong_AsLong(arg);
  if (v == -1 && PyErr_Occurred())
    return NULL;
  int rc = cproton_set_proton_compat((int)v);
  if (rc)
    return raise_as(rc, 0);
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

/* config_table() -> [(name, type, default, knob, reader, doc, role)]: the C
 * configuration table, the one list of environment variables and knobs. */
static PyObject *py_config_table(PyObject *m, PyObject *unused) {
  PyObject *rows = PyList_New(0);
  const char *f[7];
  for (size_t i = 0; rows && cproton_config_row(i, f) == CPROTON_OK; i++) {
    PyObject *t = Py_BuildValue("(sssssss)", f[0], f[1], f[2], f[3], f[4], f[5],
                                f[6]);
    if (!t || PyList_Append(rows, t) < 0) {
      Py_XDECREF(t);
      Py_DECREF(rows);
      return NULL;
    }
    Py_DECREF(t);
  }
  return rows;
}

static PyObject *py_proton_compat(PyObject *m, PyObject *unused) {
  return PyLong_FromLong(cproton_proton_compat());
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

/* ---- sessions ---------------------------------------------------------------------- */

static PyObject *py_start(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "context", "data", "backend", "mode",
                           "gzip", "rank", "local_rank", NULL};
  cproton_session_options o;
  cproton_session_options_init(&o);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzzzzpii:start", kwlist,
                                   &o.name, &o.context, &o.data, &o.backend,
                                   &o.mode, &o.gzip, &o.rank, &o.local_rank))
    return NULL;
  int sid, rc;
  Py_BEGIN_ALLOW_THREADS
  rc = cproton_session_start(&o, &sid);
  Py_END_ALLOW_THREADS
  if (rc) /* EPARSE (a bad mode string) stays ValueError, as in Proton */
    return raise_as(rc, RT(EINVAL) | RT(EUNSUPPORTED));
  return PyLong_FromLong(sid);
}

typedef int (*session_fn)(int);

static PyObject *call_session(PyObject *arg, session_fn fn) {
  int sid = (int)PyLong_AsLong(arg);
  if (sid == -1 && PyErr_Occurred())
    return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = fn(sid);
  Py_END_ALLOW_THREADS
  if (rc)
    return raise_status(rc);
  Py_RETURN_NONE;
}

static PyObject *py_activate(PyObject *m, PyObject *sid) {
  return call_session(sid, cproton_session_activate);
}

static PyObject *py_deactivate(PyObject *m, PyObject *sid) {
  return call_session(sid, cproton_session_deactivate);
}

static PyObject *py_finalize(PyObject *m, PyObject *args) {
  int sid;
  const char *format = NULL;
  if (!PyArg_ParseTuple(args, "i|z:finalize", &sid, &format))
    return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = cproton_session_finalize(sid, format);
  Py_END_ALLOW_THREADS
  /* Proton finalizes an unknown session silently (finalize twice works);
   * cproton does too, with a warning so that a wrong id is not lost. */
  if (rc == CPROTON_ENOTFOUND && sid >= 0) {
    if (warn_status(rc) < 0)
      return NULL;
    Py_RETURN_NONE;
  }
  if (rc)
    return raise_status(rc);
  Py_RETURN_NONE;
}

static PyObject *py_check_format(PyObject *m, PyObject *args) {
  const char *format = NULL;
  if (!PyArg_ParseTuple(args, "|z:check_format", &format))
    return NULL;
  int rc = cproton_format_check(format);
  if (rc) /* Proton: "Unknown output format: x" */
    return raise_as(rc, RT(EINVAL));
  Py_RETURN_NONE;
}

static PyObject *py_output_path(PyObject *m, PyObject *arg) {
  int sid = (int)PyLong_AsLong(arg);
  if (sid == -1 && PyErr_Occurred())
    return NULL;
  char buf[4096];
  int rc = cproton_session_output_path(sid, buf, sizeof buf);
  if (rc)
    return raise_status(rc);
  return PyUnicode_DecodeFSDefault(buf);
}

static PyObject *py_data_json(PyObject *m, PyObject *arg) {
  int sid = (int)PyLong_AsLong(arg);
  if (sid == -1 && PyErr_Occurred())
    return NULL;
  char *json = NULL;
  size_t size = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = cproton_session_data_json(sid, &json, &size);
  Py_END_ALLOW_THREADS
  if (rc)
    return raise_status(rc);
  PyObject *s = PyUnicode_DecodeUTF8(json, (Py_ssize_t)size, "replace");
  cproton_free(json);
  return s;
}

/* data(session, phase, format) -> bytes: one phase rendered in a format. */
static PyObject *py_data(PyObject *m, PyObject *args) {
  int sid;
  long long phase;
  const char *format = NULL;
  if (!PyArg_ParseTuple(args, "iLz:data", &sid, &phase, &format))
    return NULL;
  char *buf = NULL;
  size_t size = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = cproton_session_data(sid, (int64_t)phase, format, &buf, &size);
  Py_END_ALLOW_THREADS
  if (rc)
    return raise_status(rc);
  PyObject *b = PyBytes_FromStringAndSize(buf, (Py_ssize_t)size);
  cproton_free(buf);
  return b;
}

static PyObject *py_advance_phase(PyObject *m, PyObject *arg) {
  int sid = (int)PyLong_AsLong(arg);
  if (sid == -1 && PyErr_Occurred())
    return NULL;
  uint32_t phase = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = cproton_session_advance_phase(sid, &phase);
  Py_END_ALLOW_THREADS
  if (rc)
    return raise_status(rc);
  return PyLong_FromUnsignedLong(phase);
}

static PyObject *py_phase_complete(PyObject *m, PyObject *args) {
  int sid;
  unsigned int phase;
  if (!PyArg_ParseTuple(args, "iI:phase_complete", &sid, &phase))
    return NULL;
  int complete = 0;
  int rc = cproton_session_phase_complete(sid, phase, &complete);
  if (rc)
    return raise_status(rc);
  return PyBool_FromLong(complete);
}

static PyObject *py_clear(PyObject *m, PyObject *args) {
  int sid, up_to;
  unsigned int phase;
  if (!PyArg_ParseTuple(args, "iIp:clear", &sid, &phase, &up_to))
    return NULL;
  int rc = cproton_session_clear(sid, phase, up_to);
  if (rc)
    return raise_status(rc);
  Py_RETURN_NONE;
}

static PyObject *py_session_count(PyObject *m, PyObject *unused) {
  return PyLong_FromLong(cproton_session_count());
}

/* ---- flags, frames, misc ------------------------------------------------------------ */

static PyObject *py_set_profiling(PyObject *m, PyObject *on) {
  int v = PyObject_IsTrue(on);
  if (v < 0)
    return NULL;
  profiling_on = v;
  Py_RETURN_NONE;
}

static PyObject *py_profiling(PyObject *m, PyObject *unused) {
  return PyBool_FromLong(profiling_on);
}

static PyObject *py_python_frames(PyObject *m, PyObject *unused) {
  return cpy_frames_current();
}

static PyObject *py_set_frame_skip(PyObject *m, PyObject *args) {
  PyObject *prefixes, *caller_of = NULL;
  if (!PyArg_ParseTuple(args, "O|O:set_frame_skip", &prefixes, &caller_of) ||
      cpy_frames_set_skip(prefixes, caller_of) < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_set_warning_type(PyObject *m, PyObject *type) {
  Py_INCREF(type);
  Py_XSETREF(warning_type, type);
  Py_RETURN_NONE;
}

static PyObject *py_shutdown(PyObject *m, PyObject *unused) {
  cpy_frames_unregister();
  profiling_on = 0;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"kernel_fact", py_kernel_fact, METH_VARARGS,
     "kernel_fact(kernel, fact, value): a compile fact for the advisor "
     "(docs/advisor.md); int or str value; the first value is kept"},
    {"set_launch_vars", py_set_launch_vars, METH_VARARGS,
     "set_launch_vars(op_name, id): the ContextVars each hooked launch sets"},
    {"start", (PyCFunction)(void (*)(void))py_start,
     METH_VARARGS | METH_KEYWORDS,
     "start(name, context, data, backend, mode, gzip=False, rank=-1,\n"
     "local_rank=-1) -> session id; rank values fill {rank}/{local_rank}"},
    {"activate", py_activate, METH_O, "activate(session); -1: all"},
    {"deactivate", py_deactivate, METH_O, "deactivate(session); -1: all"},
    {"finalize", py_finalize, METH_VARARGS, "finalize(session, format=None)"},
    {"output_path", py_output_path, METH_O, "output path of a session"},
    {"data_json", py_data_json, METH_O, "the session's tree as Hatchet JSON"},
    {"data", py_data, METH_VARARGS,
     "data(session, phase, format) -> bytes; phase -1: the current one"},
    {"advance_phase", py_advance_phase, METH_O,
     "advance_phase(session) -> the new phase's number"},
    {"phase_complete", py_phase_complete, METH_VARARGS,
     "phase_complete(session, phase) -> bool"},
    {"clear", py_clear, METH_VARARGS, "clear(session, phase, up_to)"},
    {"session_count", py_session_count, METH_NOARGS, "number of sessions"},
    {"enter_scope", (PyCFunction)(void (*)(void))py_enter_scope,
     METH_VARARGS | METH_KEYWORDS,
     "enter_scope($module, /, name, *, metrics=None)\n--\n\n"
     "Enters scope `name` on the calling thread and returns its id (None\n"
     "when profiling is off). TypeError for a non-str name or bad metrics,\n"
     "ValueError for an empty name."},
    {"exit_scope", (PyCFunction)(void (*)(void))py_exit_scope,
     METH_VARARGS | METH_KEYWORDS,
     "exit_scope($module, /, name=None, *, metrics=None)\n--\n\n"
     "Exits the innermost scope of the calling thread and returns its id.\n"
     "With `name`, the innermost scope must have that name, otherwise\n"
     "ValueError and nothing is popped; an exit with no open scope raises\n"
     "ValueError. `metrics` are added to the exited scope."},
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
    {"depth", py_depth, METH_NOARGS, "the calling thread's scope depth"},
    {"enter_state", py_enter_state, METH_O, "enter_state(name)"},
    {"exit_state", py_exit_state, METH_NOARGS, "exit_state()"},
    {"check_format", py_check_format, METH_VARARGS,
     "check_format(format): ValueError unless finalize accepts it"},
    {"enter_op", py_enter_op, METH_VARARGS, "enter_op(name, metrics=None)"},
    {"exit_op", py_exit_op, METH_NOARGS, "exit_op()"},
    {"launch_enter", py_launch_enter, METH_O, "Triton launch-enter hook"},
    {"set_lazy_dict", py_set_lazy_dict, METH_VARARGS,
     "set_lazy_dict(LazyDict, LazyDict.get): its get() may run in C"},
    {"pcsampling_add_cubin", py_pcsampling_add_cubin, METH_O,
     "pcsampling_add_cubin(bytes) -> bool"},
    {"launch_exit", py_launch_exit, METH_O, "Triton launch-exit hook"},
    {"set_proton_compat", py_set_proton_compat, METH_O,
     "set_proton_compat(306 or 309)"},
    {"config_table", py_config_table, METH_NOARGS,
     "config_table() -> [(name, type, default, knob, reader, doc, role)]"},
    {"proton_compat", py_proton_compat, METH_NOARGS, "proton_compat() -> 306 or 309"},
    {"launch_admits", py_launch_admits, METH_O, "launch_admits(name) -> bool"},
    {"set_launch_filter", py_set_launch_filter, METH_O,
     "set_launch_filter(callable or None)"},
    {"set_profiling", py_set_profiling, METH_O, "set the profiling flag"},
    {"profiling", py_profiling, METH_NOARGS, "the profiling flag"},
    {"python_frames", py_python_frames, METH_NOARGS,
     "the calling thread's frames as the python context sees them"},
    {"set_frame_skip", py_set_frame_skip, METH_VARARGS,
     "set_frame_skip(prefixes, callers_of=()): drop frames whose file starts "
     "with one of prefixes, and the callers of the functions callers_of "
     "names ('file-prefix@function')"},
    {"drain_log", py_drain_log, METH_NOARGS, "queued (level, message) pairs"},
    {"set_warning_type", py_set_warning_type, METH_O, NULL},
    {"shutdown", py_shutdown, METH_NOARGS, "unregister the python context"},
    {NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_cproton",
    .m_doc = "cproton's C extension", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__cproton(void) {
  if (PyType_Ready(&ScopeType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module);
  if (!m)
    return NULL;
  filter_cache = PyDict_New();
  Py_INCREF(&ScopeType);
  if (!filter_cache ||
      PyModule_AddObject(m, "Scope", (PyObject *)&ScopeType) < 0 ||
      PyModule_AddStringConstant(m, "version", cproton_version()) < 0 ||
      PyModule_AddIntConstant(m, "TENSOR_METRIC_RECORD_WORDS",
                              CPROTON_TENSOR_METRIC_RECORD_WORDS) < 0 ||
      PyModule_AddIntConstant(m, "TENSOR_METRIC_NONE",
                              (long)CPROTON_TENSOR_METRIC_NONE) < 0 ||
      PyModule_AddIntConstant(m, "METRIC_MAX_VECTOR",
                              (long)CPROTON_METRIC_MAX_VECTOR) < 0 ||
      cpy_testing_add(m) < 0 || cpy_instrument_add(m) < 0 ||
      cpy_hookchain_add(m) < 0 || cpy_torchlink_add(m) < 0 ||
      launch_strings() < 0) {
    Py_DECREF(m);
    return NULL;
  }
  /* CPROTON_LOG=debug lets debug lines through (as for the injection) */
  const char *lv = getenv("CPROTON_LOG");
  cproton_log_set_handler(on_log, NULL,
                          lv && !strcmp(lv, "debug") ? CPROTON_LOG_DEBUG
                                                     : CPROTON_LOG_INFO);
  if (cpy_frames_register() != CPROTON_OK) {
    Py_DECREF(m);
    return raise_status(CPROTON_EINVAL);
  }
  return m;
}
