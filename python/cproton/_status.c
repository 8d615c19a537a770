/* _status.c -- how the extension reports: the Python exception of a
 * library status (RuntimeError where Proton's C++ throws, else by kind), a
 * CprotonWarning with the library's message, the log queue (the library's
 * log handler may run on any thread without the GIL: it only queues;
 * drain_log hands the lines to Python), and names checked for an embedded
 * NUL before they reach the C library. Called by every file of the
 * extension; uses only the public header of the C library. */
#include "_status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PyObject *warning_type; /* cproton.CprotonWarning */

/* The Python exception of a status. Where Proton's C++ makes the same check
 * it throws std::runtime_error, which pybind11 raises as RuntimeError: an
 * unknown session (ENOTFOUND, everywhere), and at the calls that pass them in
 * `runtime` (CPY_RT(...) bits): unknown backend/data/context names and a second
 * session's different mode (start), unknown output formats (check_format),
 * a metric's type change (add_one). What Proton does not check keeps
 * ValueError; docs/python.md has the table. */
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
PyObject *cpy_status_raise_as(int rc, unsigned runtime) {
  const char *msg = cproton_last_error();
  PyErr_SetString(exception_for(rc, runtime),
                  msg && *msg ? msg : cproton_strerror(rc));
  return NULL;
}

PyObject *cpy_status_raise(int rc) { return cpy_status_raise_as(rc, 0); }

int cpy_session_id(PyObject *arg, int *out) {
  *out = (int)PyLong_AsLong(arg);
  return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Emits a CprotonWarning with the library's message; -1 if it raised. */
int cpy_status_warn(int rc) {
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
const char *cpy_status_utf8_no_nul(PyObject *s, const char *what) {
  Py_ssize_t n;
  const char *u = PyUnicode_AsUTF8AndSize(s, &n);
  if (u && strlen(u) != (size_t)n) {
    PyErr_Format(PyExc_ValueError, "embedded null character in %s name", what);
    return NULL;
  }
  return u;
}

static PyObject *py_set_warning_type(PyObject *m, PyObject *type) {
  Py_INCREF(type);
  Py_XSETREF(warning_type, type);
  Py_RETURN_NONE;
}

static PyMethodDef status_methods[] = {
    {"drain_log", py_drain_log, METH_NOARGS, "queued (level, message) pairs"},
    {"set_warning_type", py_set_warning_type, METH_O, NULL},
    {NULL}};

int cpy_status_add(PyObject *module) {
  /* CPROTON_LOG=debug lets debug lines through (as for the injection) */
  const char *lv = cproton_config_get("CPROTON_LOG");
  cproton_log_set_handler(on_log, NULL,
                          lv && !strcmp(lv, "debug") ? CPROTON_LOG_DEBUG
                                                     : CPROTON_LOG_INFO);
  return PyModule_AddFunctions(module, status_methods);
}
