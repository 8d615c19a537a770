/* _cproton.c -- the CPython extension module behind the cproton package: a
 * thin binding of <cproton/cproton.h>. This file: the module and its
 * initialisation, sessions (start, activate, finalize, data, phases),
 * kernel facts, PC-sampling cubins, the Proton version followed, the
 * configuration table, Python frames. The rest, one concern a file:
 * _status.c (exceptions, warnings, the log queue), _metrics.c (metrics
 * and tensor metrics), _scope.c (the `Scope` type, scopes, states, ops,
 * the profiling flag), _launch.c (the Triton launch hook's body),
 * _instrument.c, _hookchain.c, _torchlink.c, _pyframes.c, _pylink.c,
 * _pathtab.c.
 * Called by the Python modules of the package (profile.py, scope.py, ...).
 * Uses only the public header of the C library. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_hookchain.h"
#include "_instrument.h"
#include "_launch.h"
#include "_metrics.h"
#include "_pyframes.h"
#include "_scope.h"
#include "_status.h"
#include "_testing.h"
#include "_torchlink.h"
#include "cproton/cproton.h"

/* ---- kernel facts, PC sampling, compatibility, configuration --------------- */

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
  return rc == CPROTON_OK ? Py_NewRef(Py_None) : cpy_status_raise(rc);
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
    return cpy_status_raise_as(rc, 0);
  Py_RETURN_NONE;
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

/* probe(backend=None) -> (backend that would measure, runs, devices): the C
 * backends' own cheap probe (the driver only), so Python never loads
 * libcuda itself. */
static PyObject *py_probe(PyObject *m, PyObject *args) {
  const char *backend = NULL;
  if (!PyArg_ParseTuple(args, "|z:probe", &backend))
    return NULL;
  cproton_probe_info p;
  int rc = cproton_backend_probe(backend, &p);
  if (rc)
    return cpy_status_raise(rc);
  return Py_BuildValue("(sii)", p.backend, p.runs, p.devices);
}

/* check_mode(backend, mode): the backend's own C parser on `mode` (None
 * backend: the default GPU backend's); ValueError with its message. */
static PyObject *py_check_mode(PyObject *m, PyObject *args) {
  const char *backend, *mode;
  if (!PyArg_ParseTuple(args, "zz:check_mode", &backend, &mode))
    return NULL;
  int rc = cproton_backend_check_mode(backend, mode);
  if (rc) {
    PyErr_SetString(PyExc_ValueError, cproton_last_error());
    return NULL;
  }
  Py_RETURN_NONE;
}

/* A yes/no question about session `arg`'s parsed mode, as a bool. */
static PyObject *session_question(PyObject *arg, int (*ask)(int, int *)) {
  int id, out = 0;
  if (cpy_session_id(arg, &id))
    return NULL;
  int rc = ask(id, &out);
  if (rc)
    return cpy_status_raise(rc);
  return PyBool_FromLong(out);
}

/* session_wants_loaded_cubins(id) -> bool, from the session's parsed mode. */
static PyObject *py_session_wants_loaded_cubins(PyObject *m, PyObject *arg) {
  return session_question(arg, cproton_session_wants_loaded_cubins);
}

/* session_wants_instrumentation_hook(id) -> bool: the session's backend
 * instruments kernels (a descriptor flag, not its name). */
static PyObject *py_session_wants_instrumentation_hook(PyObject *m, PyObject *arg) {
  return session_question(arg, cproton_session_wants_instrumentation_hook);
}

static PyObject *py_proton_compat(PyObject *m, PyObject *unused) {
  return PyLong_FromLong(cproton_proton_compat());
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
    return cpy_status_raise_as(rc, CPY_RT(EINVAL) | CPY_RT(EUNSUPPORTED));
  return PyLong_FromLong(sid);
}

typedef int (*session_fn)(int);

static PyObject *call_session(PyObject *arg, session_fn fn) {
  int sid;
  if (cpy_session_id(arg, &sid))
    return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = fn(sid);
  Py_END_ALLOW_THREADS
  if (rc)
    return cpy_status_raise(rc);
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
    if (cpy_status_warn(rc) < 0)
      return NULL;
    Py_RETURN_NONE;
  }
  if (rc)
    return cpy_status_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *py_check_format(PyObject *m, PyObject *args) {
  const char *format = NULL;
  if (!PyArg_ParseTuple(args, "|z:check_format", &format))
    return NULL;
  int rc = cproton_format_check(format);
  if (rc) /* Proton: "Unknown output format: x" */
    return cpy_status_raise_as(rc, CPY_RT(EINVAL));
  Py_RETURN_NONE;
}

static PyObject *py_output_path(PyObject *m, PyObject *arg) {
  int sid;
  if (cpy_session_id(arg, &sid))
    return NULL;
  char buf[4096];
  int rc = cproton_session_output_path(sid, buf, sizeof buf);
  if (rc)
    return cpy_status_raise(rc);
  return PyUnicode_DecodeFSDefault(buf);
}

static PyObject *py_data_json(PyObject *m, PyObject *arg) {
  int sid;
  if (cpy_session_id(arg, &sid))
    return NULL;
  char *json = NULL;
  size_t size = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = cproton_session_data_json(sid, &json, &size);
  Py_END_ALLOW_THREADS
  if (rc)
    return cpy_status_raise(rc);
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
    return cpy_status_raise(rc);
  PyObject *b = PyBytes_FromStringAndSize(buf, (Py_ssize_t)size);
  cproton_free(buf);
  return b;
}

static PyObject *py_advance_phase(PyObject *m, PyObject *arg) {
  int sid;
  if (cpy_session_id(arg, &sid))
    return NULL;
  uint32_t phase = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = cproton_session_advance_phase(sid, &phase);
  Py_END_ALLOW_THREADS
  if (rc)
    return cpy_status_raise(rc);
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
    return cpy_status_raise(rc);
  return PyBool_FromLong(complete);
}

static PyObject *py_clear(PyObject *m, PyObject *args) {
  int sid, up_to;
  unsigned int phase;
  if (!PyArg_ParseTuple(args, "iIp:clear", &sid, &phase, &up_to))
    return NULL;
  int rc = cproton_session_clear(sid, phase, up_to);
  if (rc)
    return cpy_status_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *py_session_count(PyObject *m, PyObject *unused) {
  return PyLong_FromLong(cproton_session_count());
}


/* ---- frames ---------------------------------------------------------------------- */

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
static PyObject *py_shutdown(PyObject *m, PyObject *unused) {
  cpy_frames_unregister();
  cpy_profiling_on = 0;
  Py_RETURN_NONE;
}


static PyMethodDef methods[] = {
    {"kernel_fact", py_kernel_fact, METH_VARARGS,
     "kernel_fact(kernel, fact, value): a compile fact for the advisor "
     "(docs/advisor.md); int or str value; the first value is kept"},
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
    {"check_format", py_check_format, METH_VARARGS,
     "check_format(format): ValueError unless finalize accepts it"},
    {"pcsampling_add_cubin", py_pcsampling_add_cubin, METH_O,
     "pcsampling_add_cubin(bytes) -> bool"},
    {"set_proton_compat", py_set_proton_compat, METH_O,
     "set_proton_compat(306 or 309)"},
    {"config_table", py_config_table, METH_NOARGS,
     "config_table() -> [(name, type, default, knob, reader, doc, role)]"},
    {"proton_compat", py_proton_compat, METH_NOARGS, "proton_compat() -> 306 or 309"},
    {"probe", py_probe, METH_VARARGS,
     "probe(backend=None) -> (backend that would measure, runs, devices)"},
    {"check_mode", py_check_mode, METH_VARARGS,
     "check_mode(backend, mode): ValueError unless the backend parses mode"},
    {"session_wants_loaded_cubins", py_session_wants_loaded_cubins, METH_O,
     "session_wants_loaded_cubins(session) -> bool"},
    {"session_wants_instrumentation_hook", py_session_wants_instrumentation_hook, METH_O,
     "session_wants_instrumentation_hook(session) -> bool"},
    {"python_frames", py_python_frames, METH_NOARGS,
     "the calling thread's frames as the python context sees them"},
    {"set_frame_skip", py_set_frame_skip, METH_VARARGS,
     "set_frame_skip(prefixes, callers_of=()): drop frames whose file starts "
     "with one of prefixes, and the callers of the functions callers_of "
     "names ('file-prefix@function')"},
    {"shutdown", py_shutdown, METH_NOARGS, "unregister the python context"},
    {NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_cproton",
    .m_doc = "cproton's C extension", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__cproton(void) {
  PyObject *m = PyModule_Create(&module);
  if (!m)
    return NULL;
  if (cpy_scope_add(m) < 0 || cpy_launch_add(m) < 0 ||
      cpy_metrics_add_methods(m) < 0 ||
      PyModule_AddStringConstant(m, "version", cproton_version()) < 0 ||
      PyModule_AddIntConstant(m, "TENSOR_METRIC_RECORD_WORDS",
                              CPROTON_TENSOR_METRIC_RECORD_WORDS) < 0 ||
      PyModule_AddIntConstant(m, "TENSOR_METRIC_NONE",
                              (long)CPROTON_TENSOR_METRIC_NONE) < 0 ||
      PyModule_AddIntConstant(m, "METRIC_MAX_VECTOR",
                              (long)CPROTON_METRIC_MAX_VECTOR) < 0 ||
      cpy_testing_add(m) < 0 || cpy_instrument_add(m) < 0 ||
      cpy_hookchain_add(m) < 0 || cpy_torchlink_add(m) < 0 ||
      cpy_status_add(m) < 0) { /* last: it installs the log handler */
    Py_DECREF(m);
    return NULL;
  }
  if (cpy_frames_register() != CPROTON_OK) {
    Py_DECREF(m);
    return cpy_status_raise(CPROTON_EINVAL);
  }
  return m;
}
