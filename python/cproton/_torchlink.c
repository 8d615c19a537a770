/* _torchlink.c -- the Python side of the "python" context's PyTorch layers
 * (python/cproton/_torchlink.py drives them, _pylink.c keeps the state):
 * frame ids as bytes, the backward pass's begin/end, the autograd hooks as
 * C callables (no Python frame or bytecode per node), the linking of a
 * PyTorch call's outputs to the caller's frames, and operator frames.
 *
 * link_call runs once per PyTorch call of a profiled thread, so it does
 * the work in C: one walk of the frames (cached ids, _pyframes.c), and two
 * hooks per run of calls with the same frames (below). */
#include "_torchlink.h"

#include <string.h>

#include "_pyframes.h"
#include "_pylink.h"
#include "cproton/cproton.h"

/* What the link did since link_setup or link_reset (link_stats). */
static struct {
  unsigned long long calls;  /* through link_call */
  unsigned long long linked; /* calls whose outputs joined a run (a walk each) */
  unsigned long long runs, post_hooks; /* pre-hooks and post-hooks registered */
} stats;

static PyObject *py_frame_ids(PyObject *m, PyObject *unused) {
  uint32_t fids[CPY_LINK_MAX];
  size_t n = cpy_frames_unwind(NULL, fids, CPY_LINK_MAX);
  return PyBytes_FromStringAndSize((const char *)fids, (Py_ssize_t)(n * sizeof *fids));
}

/* fids: bytes of uint32 frame fids (frame_ids()), or None. */
static int ids_of(PyObject *o, const uint32_t **fids, size_t *n) {
  *fids = NULL, *n = 0;
  if (o == Py_None)
    return 0;
  if (!PyBytes_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "frame ids must be bytes from frame_ids()");
    return -1;
  }
  *fids = (const uint32_t *)PyBytes_AS_STRING(o);
  *n = (size_t)PyBytes_GET_SIZE(o) / sizeof(uint32_t);
  return 0;
}

static PyObject *py_backward_begin(PyObject *m, PyObject *o) {
  const uint32_t *fids;
  size_t n;
  if (ids_of(o, &fids, &n) < 0)
    return NULL;
  return PyLong_FromLong(cpy_link_backward_begin(fids, n));
}

static PyObject *py_backward_end(PyObject *m, PyObject *o) {
  long token = PyLong_AsLong(o);
  if (token == -1 && PyErr_Occurred())
    return NULL;
  cpy_link_backward_end(token);
  Py_RETURN_NONE;
}

/* backward_node(ids or None, own): `own` frames of the caller are not part
 * of the anchor. Registered as an autograd pre-hook (a partial over ids, so
 * no Python frame of its own) the second argument is the gradients: own 0. */
static PyObject *py_backward_node(PyObject *m, PyObject *args) {
  PyObject *o, *second = NULL;
  const uint32_t *fids;
  size_t n;
  if (!PyArg_ParseTuple(args, "O|O", &o, &second) || ids_of(o, &fids, &n) < 0)
    return NULL;
  long own = second && PyLong_CheckExact(second) ? PyLong_AsLong(second) : 0;
  size_t raw = cpy_frames_raw_depth();
  cpy_link_node(fids, n, raw > (size_t)own ? raw - (size_t)own : 0);
  Py_RETURN_NONE;
}

/* The post-hook of a linked node: back to the fallback. */
static PyObject *py_backward_post(PyObject *m, PyObject *args) {
  cpy_link_node(NULL, 0, cpy_frames_raw_depth());
  Py_RETURN_NONE;
}

static PyObject *py_frame_id(PyObject *m, PyObject *name) {
  const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  uint32_t id;
  if (!s)
    return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_TypeError, "frame name must be str"), NULL);
  if (cproton_frame_intern(s, &id) != CPROTON_OK)
    return PyErr_NoMemory();
  return PyLong_FromUnsignedLong(id);
}

static PyObject *py_op_push(PyObject *m, PyObject *o) {
  unsigned long id = PyLong_AsUnsignedLong(o);
  if (id == (unsigned long)-1 && PyErr_Occurred())
    return NULL;
  cpy_link_op_push((uint32_t)id);
  Py_RETURN_NONE;
}

static PyObject *py_op_pop(PyObject *m, PyObject *unused) {
  cpy_link_op_pop();
  Py_RETURN_NONE;
}

/* op_call(func, args, kwargs): the operator-frames mode's body outside
 * torch.compile, in one C call per ATen operator (issue 28, cost): its
 * "aten::name" frame (interned once per operator: func._schema.name) is
 * innermost while the operator runs. */
static PyObject *op_ids; /* {func: frame id} */

static long op_id_of(PyObject *func) {
  PyObject *id = op_ids ? PyDict_GetItemWithError(op_ids, func) : NULL;
  if (id)
    return PyLong_AsLong(id);
  if (PyErr_Occurred() || (!op_ids && !(op_ids = PyDict_New())))
    return -1;
  PyObject *schema = PyObject_GetAttrString(func, "_schema");
  PyObject *name = schema ? PyObject_GetAttrString(schema, "name") : NULL;
  Py_XDECREF(schema);
  if (!name)
    return -1;
  PyObject *fid = py_frame_id(NULL, name);
  Py_DECREF(name);
  long v = fid ? PyLong_AsLong(fid) : -1;
  if (fid && PyDict_SetItem(op_ids, func, fid) < 0)
    v = -1;
  Py_XDECREF(fid);
  return v;
}

static PyObject *py_op_call(PyObject *m, PyObject *const *a, Py_ssize_t n) {
  if (n != 3) {
    PyErr_SetString(PyExc_TypeError, "op_call(func, args, kwargs)");
    return NULL;
  }
  PyObject *kw = a[2] == Py_None ? NULL : a[2];
  if (kw && !PyDict_Check(kw))
    return PyErr_Format(PyExc_TypeError, "op_call: kwargs must be a dict or None");
  long fid = op_id_of(a[0]);
  if (fid < 0)
    return NULL;
  PyObject *args = PyTuple_Check(a[1]) ? Py_NewRef(a[1]) : PySequence_Tuple(a[1]);
  if (!args)
    return NULL;
  cpy_link_op_push((uint32_t)fid);
  PyObject *out = PyObject_Call(a[0], args, kw);
  cpy_link_op_pop();
  Py_DECREF(args);
  return out;
}

static PyObject *py_link_reset(PyObject *m, PyObject *unused) {
  cpy_link_reset();
  Py_CLEAR(op_ids);
  memset(&stats, 0, sizeof stats);
  Py_RETURN_NONE;
}

/* ---- the pre-hook: one forward path, inline ----------------------------- */

typedef struct link_hook {
  PyObject_VAR_HEAD
  uint32_t ids[1];
} link_hook;

static PyObject *hook_call(PyObject *self, PyObject *args, PyObject *kw) {
  link_hook *h = (link_hook *)self;
  cpy_link_node(h->ids, (size_t)Py_SIZE(h), cpy_frames_raw_depth());
  Py_RETURN_NONE;
}

static PyTypeObject LinkHookType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cproton._cproton.LinkHook",
    .tp_basicsize = offsetof(link_hook, ids),
    .tp_itemsize = sizeof(uint32_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_call = hook_call,
    .tp_doc = "autograd pre-hook: the node's forward frames for its thread",
};

/* ---- linking a call's outputs, by runs ----------------------------------- *
 *
 * Autograd's engine runs the nodes of one device thread by decreasing
 * sequence number, that is in reverse order of creation (its dependencies
 * allow nothing else when the forward pass ran on one thread). So the nodes
 * that consecutive calls with the same frames created run consecutively in
 * backward, and a run needs two hooks, not two per node: a pre-hook with the
 * frames on its last node (the first to run) and the post-hook (back to the
 * fallback) on its first, and only where nodes the mode did not see were
 * created just before the run (autograd's sequence counter moved between
 * the previous linked call's end and this call's start: a compiled region,
 * an autograd.Function): those run right after it and take the fallback;
 * with no gap the next node to run is the previous run's last, whose
 * pre-hook sets its link. (A call's own inner nodes, as a composite
 * operator makes, run after its output's node: after a gap they take the
 * fallback too, else the run's link.) Hooks
 * are the cost (each registration builds a handle, each call wraps the
 * gradients), so this matters. Nodes created inside a run by code the mode
 * does not see (a compiled region called on the same line) belong to its
 * line. State: the run of the thread that has the mode (GIL-guarded). */

static PyObject *tensor_type, *post_hook, *s_grad_fn, *s_prehook, *s_hook,
    *peek,         /* torch.autograd._get_sequence_nr, or None */
    *backward_fns, /* a tuple: the calls that open a backward pass */
    *on_backward;  /* the Python handler of those */
static link_hook *run_hook;  /* the current run's frames */
static PyObject *run_last;   /* its last node, not yet pre-hooked */
static long long seq_end = -1; /* the counter after the last linked call */

static int is_input(PyObject *o, PyObject *args) {
  Py_ssize_t n = PyTuple_Check(args) ? PyTuple_GET_SIZE(args) : 0;
  for (Py_ssize_t i = 0; i < n; i++)
    if (PyTuple_GET_ITEM(args, i) == o)
      return 1;
  return 0;
}

/* Ends the current run: its pre-hook on its last node. 0, or -1. */
static int flush(void) {
  int rc = 0;
  if (run_last && run_hook) {
    PyObject *r = PyObject_CallMethodOneArg(run_last, s_prehook, (PyObject *)run_hook);
    rc = r ? 0 : -1;
    stats.runs += r != NULL;
    Py_XDECREF(r);
  }
  Py_CLEAR(run_last);
  Py_CLEAR(run_hook);
  return rc;
}

/* The run for the caller's frames: the current one, or a new one after
 * ending it. 1 when the run is new, 0 when it goes on, -1 on error. */
static int enter_run(void) {
  uint32_t fids[CPY_LINK_MAX];
  size_t n = cpy_frames_unwind(NULL, fids, CPY_LINK_MAX);
  if (run_hook && (size_t)Py_SIZE(run_hook) == n &&
      memcmp(run_hook->ids, fids, n * sizeof *fids) == 0)
    return 0;
  if (flush() < 0)
    return -1;
  run_hook = PyObject_NewVar(link_hook, &LinkHookType, (Py_ssize_t)n);
  if (!run_hook)
    return -1;
  memcpy(run_hook->ids, fids, n * sizeof *fids);
  return 1;
}

/* One output: its node joins the run; the first node of a new run after a
 * gap gets the post-hook. `fresh`: 1 while this call's run still wants its
 * post-hook, 0 when not, -1 while the run is not chosen yet. 0, or -1 with
 * an exception. */
static int link_one(PyObject *t, PyObject *args, int gap, int *fresh) {
  if (!PyObject_TypeCheck(t, (PyTypeObject *)tensor_type) || is_input(t, args))
    return 0; /* an input returned as is (to(), contiguous()): linked already */
  PyObject *node = PyObject_GetAttr(t, s_grad_fn);
  if (!node)
    return -1;
  int rc = 0;
  if (node != Py_None) {
    if (*fresh < 0)
      *fresh = enter_run() && gap; /* enter_run's -1 stays true: checked */
    rc = PyErr_Occurred() ? -1 : 0;
    if (rc == 0 && *fresh == 1) {
      PyObject *r = PyObject_CallMethodOneArg(node, s_hook, post_hook);
      rc = r ? 0 : -1;
      stats.post_hooks += r != NULL;
      Py_XDECREF(r);
    }
    *fresh = 0;
    if (rc == 0) {
      Py_INCREF(node);
      Py_XSETREF(run_last, node);
    }
  }
  Py_DECREF(node);
  return rc;
}

static long long counter(void) {
  if (!peek || peek == Py_None)
    return -1;
  PyObject *r = PyObject_CallNoArgs(peek);
  long long v = r ? PyLong_AsLongLong(r) : -1;
  Py_XDECREF(r);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    v = -1;
  }
  return v;
}

/* The nodes of `out` (a tensor, or a tuple/list of them) join the run of
 * the caller's frames; `start` is the sequence counter read before the call
 * (-1: unknown). 0, or -1 with an exception. */
static int link_out(PyObject *out, PyObject *args, long long start) {
  int gap = start < 0 || seq_end < 0 || start != seq_end;
  int rc = 0, fresh = -1;
  if (PyTuple_Check(out) || PyList_Check(out)) {
    for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(out); i++)
      rc = link_one(PySequence_Fast_GET_ITEM(out, i), args, gap, &fresh);
  } else {
    rc = link_one(out, args, gap, &fresh);
  }
  if (rc == 0 && fresh == 0) { /* a node joined: the counter after this call */
    stats.linked++;
    seq_end = counter();
  }
  return rc;
}

static int is_backward(PyObject *func) {
  Py_ssize_t n = backward_fns ? PyTuple_GET_SIZE(backward_fns) : 0;
  for (Py_ssize_t i = 0; i < n; i++)
    if (PyTuple_GET_ITEM(backward_fns, i) == func)
      return 1;
  return 0;
}

/* link_call(func, args, kwargs): the body of the link's __torch_function__
 * outside torch.compile (one C call per PyTorch call instead of a dozen
 * bytecodes and three calls: issue 28, cost): a backward entry goes to the
 * Python handler; else the call runs between a read of the sequence counter
 * and the linking of its outputs. */
static PyObject *py_link_call(PyObject *m, PyObject *const *a, Py_ssize_t n) {
  if (n != 3 || !tensor_type || !on_backward) {
    PyErr_SetString(PyExc_TypeError, "link_call(func, args, kwargs) after link_setup()");
    return NULL;
  }
  PyObject *func = a[0], *kw = a[2] == Py_None ? NULL : a[2];
  if (kw && !PyDict_Check(kw))
    return PyErr_Format(PyExc_TypeError, "link_call: kwargs must be a dict or None");
  stats.calls++;
  if (is_backward(func))
    return PyObject_CallFunctionObjArgs(on_backward, func, a[1], a[2], NULL);
  PyObject *args = PyTuple_Check(a[1]) ? Py_NewRef(a[1]) : PySequence_Tuple(a[1]);
  if (!args)
    return NULL;
  long long start = counter();
  PyObject *out = PyObject_Call(func, args, kw);
  if (out && link_out(out, args, start) < 0)
    Py_CLEAR(out);
  Py_DECREF(args);
  return out;
}

/* link_stats(): what the link did since link_setup or link_reset (issue
 * 28, cost: counts that a regression in the runs shows, not timings). */
static PyObject *py_link_stats(PyObject *m, PyObject *unused) {
  return Py_BuildValue("{s:K,s:K,s:K,s:K}", "calls", stats.calls, "linked",
                       stats.linked, "runs", stats.runs, "post_hooks",
                       stats.post_hooks);
}

/* link_flush(): ends the current run (before a backward pass, at stop). */
static PyObject *py_link_flush(PyObject *m, PyObject *unused) {
  if (flush() < 0)
    return NULL;
  seq_end = -1;
  Py_RETURN_NONE;
}

/* link_setup(torch.Tensor, peek[, backward_fns, on_backward]): the type
 * link_call looks for, torch.autograd._get_sequence_nr (or None where
 * torch lacks it), and for link_call the tuple of calls that open a
 * backward pass and their handler, on_backward(func, args, kwargs). Clears
 * the counts of link_stats. */
static PyObject *py_link_setup(PyObject *m, PyObject *args) {
  PyObject *type, *fn, *fns = NULL, *handler = NULL;
  if (!PyArg_ParseTuple(args, "O!O|O!O", &PyType_Type, &type, &fn, &PyTuple_Type,
                        &fns, &handler))
    return NULL;
  if (fns && !PyCallable_Check(handler))
    return PyErr_Format(PyExc_TypeError, "link_setup: on_backward must be callable");
  Py_XSETREF(tensor_type, Py_NewRef(type));
  Py_XSETREF(peek, Py_NewRef(fn));
  Py_XSETREF(backward_fns, Py_XNewRef(fns));
  Py_XSETREF(on_backward, Py_XNewRef(handler));
  memset(&stats, 0, sizeof stats);
  Py_RETURN_NONE;
}

/* The pre-hook of backward()'s roots: the fallback on an engine thread
 * whose first node has no link. */
static PyObject *py_backward_root(PyObject *m, PyObject *args) {
  cpy_link_node_first(cpy_frames_raw_depth());
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"frame_ids", py_frame_ids, METH_NOARGS,
     "the calling thread's python-context frame ids, as bytes"},
    {"backward_begin", py_backward_begin, METH_O,
     "backward_begin(ids): a backward pass starts; returns a token"},
    {"backward_end", py_backward_end, METH_O, "backward_end(token)"},
    {"backward_node", py_backward_node, METH_VARARGS,
     "backward_node(ids or None, own): this thread runs a backward node"},
    {"backward_post", py_backward_post, METH_VARARGS,
     "autograd post-hook: this thread is back on the fallback"},
    {"frame_id", py_frame_id, METH_O, "frame_id(name): an interned frame id"},
    {"op_push", py_op_push, METH_O, "op_push(id): enter an operator frame"},
    {"op_pop", py_op_pop, METH_NOARGS, "op_pop(): leave it"},
    {"op_call", (PyCFunction)(void (*)(void))py_op_call, METH_FASTCALL,
     "op_call(func, args, kwargs): run an ATen operator under its aten:: frame"},
    {"link_reset", py_link_reset, METH_NOARGS, "forget backward links"},
    {"link_call", (PyCFunction)(void (*)(void))py_link_call, METH_FASTCALL,
     "link_call(func, args, kwargs): run a PyTorch call and link its outputs"},
    {"link_stats", py_link_stats, METH_NOARGS,
     "link_stats(): calls, linked calls, runs and post-hooks since link_setup"},
    {"link_setup", py_link_setup, METH_VARARGS,
     "link_setup(torch.Tensor, peek[, backward_fns, on_backward])"},
    {"link_flush", py_link_flush, METH_NOARGS, "end the current run of linked calls"},
    {"backward_root", py_backward_root, METH_VARARGS,
     "pre-hook of a backward root: the fallback unless a link is set"},
    {NULL}};

int cpy_torchlink_add(PyObject *m) {
  if (PyType_Ready(&LinkHookType) < 0 || PyModule_AddFunctions(m, methods) < 0)
    return -1;
  s_grad_fn = PyUnicode_InternFromString("grad_fn");
  s_prehook = PyUnicode_InternFromString("register_prehook");
  s_hook = PyUnicode_InternFromString("register_hook");
  post_hook = PyObject_GetAttrString(m, "backward_post");
  return s_grad_fn && s_prehook && s_hook && post_hook ? 0 : -1;
}
