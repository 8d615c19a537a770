/* _scope.c -- the `Scope` type (the base of cproton.scope),
 * enter_scope/exit_scope, states and ops, and the profiling flag that
 * gates them and the launch hook.
 * Invariant: the id mirror (ids[]) holds the scope ids of the calling
 * thread's shadow stack in order, as pushed and popped through this module;
 * it lets exit_scope() return the id it popped, as Proton's does.
 * Hot path: Scope.__enter__/__exit__, enter_scope/exit_scope: no
 * allocation beyond Python's own, no formatting. Called by the package's
 * Python modules (scope.py, profile.py, ...); uses only the public header. */
#include "_scope.h"

#include <structmember.h>

#include <stdint.h>

#include "_metrics.h"
#include "_status.h"

int cpy_profiling_on; /* mirrors cproton.flags.flags.profiling_on */

#define MIRROR_DEPTH 1024
static _Thread_local uint64_t ids[MIRROR_DEPTH];
static _Thread_local size_t n_ids;

/* ---- scopes ------------------------------------------------------------------- */

static const char *name_utf8(PyObject *name, const char *what) {
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "%s name must be a str, not %.100s", what,
                 Py_TYPE(name)->tp_name);
    return NULL;
  }
  return cpy_status_utf8_no_nul(name, what);
}

static int pop_scope(const char *name, uint64_t *id_out);

/* Pushes scope `name`; 0 with *id_out, or -1 with an exception. */
static int push_scope(PyObject *name, PyObject *metrics, uint64_t *id_out) {
  const char *s = name_utf8(name, "scope");
  if (!s)
    return -1;
  int rc = cproton_scope_enter(s, id_out);
  if (rc) {
    cpy_status_raise(rc);
    return -1;
  }
  if (n_ids < MIRROR_DEPTH)
    ids[n_ids] = *id_out;
  n_ids++;
  if (cpy_metrics_add(*id_out, metrics) == 0)
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
  if (!cpy_profiling_on || !self->name)
    Py_RETURN_NONE;
  if (push_scope(self->name, self->metrics, &self->id) < 0)
    return NULL;
  self->has_id = 1;
  Py_RETURN_NONE;
}

static PyObject *Scope_exit_scope(Scope *self, PyObject *unused) {
  if (!cpy_profiling_on || !self->has_id)
    Py_RETURN_NONE;
  uint64_t id;
  int rc = pop_scope(PyUnicode_AsUTF8(self->name), &id);
  if (rc && cpy_status_warn(rc) < 0)
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
  if (!cpy_profiling_on)
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
  if (!cpy_profiling_on)
    Py_RETURN_NONE;
  const char *s = NULL;
  if (name != Py_None && !(s = name_utf8(name, "scope")))
    return NULL;
  if (s && !*s)
    s = NULL; /* Proton: an empty name means "the innermost" */
  uint64_t id;
  int rc = pop_scope(s, &id);
  if (rc)
    return cpy_status_raise(rc);
  if (cpy_metrics_add(id, metrics) < 0)
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
    return cpy_status_raise(rc);
  Py_RETURN_NONE;
}

/* An exit with no open state raises, as the C API returns ESTATE: a
 * silently ignored exit would hide an unbalanced enter elsewhere. */
static PyObject *py_exit_state(PyObject *m, PyObject *unused) {
  int rc = cproton_state_exit();
  if (rc)
    return cpy_status_raise(rc);
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
    return cpy_status_raise(rc);
  cpy_op_open = 1;
  int ok = cpy_metrics_add(CPROTON_CURRENT_OP, metrics);
  if (cpy_metrics_run_pending_outside_op(s) < 0 || ok < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_exit_op(PyObject *m, PyObject *unused) {
  cpy_op_open = 0;
  int rc = cproton_op_exit();
  if (rc)
    return cpy_status_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *py_set_profiling(PyObject *m, PyObject *on) {
  int v = PyObject_IsTrue(on);
  if (v < 0)
    return NULL;
  cpy_profiling_on = v;
  Py_RETURN_NONE;
}

static PyObject *py_profiling(PyObject *m, PyObject *unused) {
  return PyBool_FromLong(cpy_profiling_on);
}

static PyMethodDef scope_methods[] = {
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
    {"depth", py_depth, METH_NOARGS, "the calling thread's scope depth"},
    {"enter_state", py_enter_state, METH_O, "enter_state(name)"},
    {"exit_state", py_exit_state, METH_NOARGS, "exit_state()"},
    {"enter_op", py_enter_op, METH_VARARGS, "enter_op(name, metrics=None)"},
    {"exit_op", py_exit_op, METH_NOARGS, "exit_op()"},
    {"set_profiling", py_set_profiling, METH_O, "set the profiling flag"},
    {"profiling", py_profiling, METH_NOARGS, "the profiling flag"},
    {NULL}};

int cpy_scope_add(PyObject *module) {
  if (PyType_Ready(&ScopeType) < 0)
    return -1;
  Py_INCREF(&ScopeType);
  if (PyModule_AddObject(module, "Scope", (PyObject *)&ScopeType) < 0) {
    Py_DECREF(&ScopeType);
    return -1;
  }
  return PyModule_AddFunctions(module, scope_methods);
}
