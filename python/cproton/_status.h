/* _status.h -- how the extension reports (see _status.c): exceptions for
 * library statuses, warnings, the log queue, NUL-checked names. */
#ifndef CPROTON_PY_STATUS_H
#define CPROTON_PY_STATUS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "cproton/cproton.h"

/* The bit of status `code` (ENOTFOUND, EINVAL, ...) in the `runtime` mask
 * of cpy_status_raise_as: those statuses raise RuntimeError there. */
#define CPY_RT(code) (1u << -(CPROTON_##code))

/* Raises the Python exception for status `rc` (RuntimeError for the codes
 * in `runtime`) with the library's message; returns NULL. */
PyObject *cpy_status_raise_as(int rc, unsigned runtime);

/* cpy_status_raise_as(rc, 0). */
PyObject *cpy_status_raise(int rc);

/* A session id from a Python int: 0, or -1 with the exception set. */
int cpy_session_id(PyObject *arg, int *out);

/* Emits a CprotonWarning with the library's message; -1 if it raised. */
int cpy_status_warn(int rc);

/* UTF-8 of the str `s`, or NULL with ValueError when it holds a NUL
 * (`what` names it in the message); owned by `s`. */
const char *cpy_status_utf8_no_nul(PyObject *s, const char *what);

/* Installs the log handler (CPROTON_LOG=debug lets debug lines through)
 * and adds drain_log and set_warning_type to `module`; -1 on error. */
int cpy_status_add(PyObject *module);

#endif
