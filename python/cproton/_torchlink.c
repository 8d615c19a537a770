/* _torchlink.c -- the Python side of the "python" context's PyTorch layers
 * (python/cproton/_torchlink.py drives them, _pylink.c keeps the state):
 * link_setup resolves the two libtorch functions the backward link reads
 * at launches and gives _pylink.c the Python query it makes at backward
 * launches; link_reset, link_stats; operator frames (op_call).
 *
 * libtorch: at::sequence_number::peek() and
 * torch::autograd::get_current_graph_task_id(), both TORCH_API in every
 * PyTorch 2.x and plain C calls in practice (no arguments, an integer
 * back), looked up once by their mangled names with dlsym in the
 * libtorch_cpu.so that torch already loaded (RTLD_NOLOAD). A torch build
 * without them leaves the link off (link_setup says why).
 *
 * The query (a backward launch, any thread, maybe without the GIL): takes
 * the GIL with PyGILState_Ensure (not while the interpreter finalizes),
 * calls torch._C._current_autograd_node() and its _sequence_nr(), and
 * when asked finds the frames of the thread inside backward()
 * (_pyframes.c). Not called while any cproton lock is held. */
#include "_torchlink.h"

#include <dlfcn.h>
#include <string.h>

#include "_pyframes.h"
#include "_pylink.h"
#include "cproton/cproton.h"

static PyObject *current_node; /* torch._C._current_autograd_node; GIL */
static PyObject *s_sequence_nr;
static size_t ring_size; /* the test-only setter's; 0: the default */

static const char *const sym_peek = "_ZN2at15sequence_number4peekEv";
static const char *const sym_task =
    "_ZN5torch8autograd25get_current_graph_task_idEv";

static int finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/* The running node's sequence number; UINT64_MAX when none. GIL. */
static uint64_t node_seq(void) {
  uint64_t v = UINT64_MAX;
  PyObject *node = current_node ? PyObject_CallNoArgs(current_node) : NULL;
  PyObject *nr = node && node != Py_None
                     ? PyObject_CallMethodNoArgs(node, s_sequence_nr)
                     : NULL;
  if (nr)
    v = PyLong_AsUnsignedLongLong(nr);
  Py_XDECREF(nr);
  Py_XDECREF(node);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    v = UINT64_MAX;
  }
  return v;
}

static int query(uint64_t *seq, uint32_t *fb, size_t *n_fb, size_t max) {
  if (finalizing())
    return -1;
  PyGILState_STATE g = PyGILState_Ensure();
  /* a launch from Python code that has an exception pending keeps it */
#if PY_VERSION_HEX >= 0x030C0000
  PyObject *pending = PyErr_GetRaisedException();
#else
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
#endif
  *seq = node_seq();
  if (fb)
    *n_fb = cpy_frames_before_entry(fb, max);
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(pending);
#else
  PyErr_Restore(type, value, tb);
#endif
  PyGILState_Release(g);
  return 0;
}

static cpy_link_torch torch_fns = {.query = query};

/* Looks the two functions up in `lib` (each set-up; torch keeps the
 * library loaded, so the same addresses come back and a launch still
 * using the last ones is not disturbed). NULL, or why the link cannot be
 * on. */
static const char *resolve(const char *lib) {
  void *h = dlopen(lib, RTLD_NOLOAD | RTLD_LAZY);
  if (!h)
    return "libtorch_cpu is not loaded";
  void *peek = dlsym(h, sym_peek), *task = dlsym(h, sym_task);
  dlclose(h); /* torch keeps it loaded */
  if (!peek || !task)
    return !peek ? sym_peek : sym_task;
  torch_fns.peek = (uint64_t (*)(void))peek;
  torch_fns.task_id = (int (*)(void))task;
  return NULL;
}

/* link_setup(libtorch_cpu_path, current_node, entries, node_makers):
 * turns the backward link on with the calling thread as the forward thread
 * (entries, node_makers: code objects, _pyframes.h). Returns None, or
 * a str saying why the link stays off (a symbol missing). */
static PyObject *py_link_setup(PyObject *m, PyObject *args) {
  const char *lib;
  PyObject *node_fn, *codes, *makers;
  if (!PyArg_ParseTuple(args, "sOOO", &lib, &node_fn, &codes, &makers))
    return NULL;
  if (!PyCallable_Check(node_fn))
    return PyErr_Format(PyExc_TypeError,
                        "link_setup: current_node must be callable");
  const char *missing = resolve(lib);
  if (missing)
    return PyUnicode_FromFormat("%s: %s not found in %s", "backward link off",
                                missing, lib);
  if (cpy_frames_set_entries(codes, makers) < 0)
    return NULL;
  Py_XSETREF(current_node, Py_NewRef(node_fn));
  if (cpy_link_start(&torch_fns, ring_size) < 0)
    return PyErr_NoMemory();
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

/* link_reset(): the link off, its record freed (session finalize). */
static PyObject *py_link_reset(PyObject *m, PyObject *unused) {
  cpy_link_reset();
  Py_CLEAR(op_ids);
  Py_CLEAR(current_node);
  Py_RETURN_NONE;
}

/* link_stats(): what the link did since link_setup (issue 28: counts
 * that show a lost or misplaced link, not timings). */
static PyObject *py_link_stats(PyObject *m, PyObject *unused) {
  cpy_link_counts c;
  cpy_link_counts_get(&c);
  return Py_BuildValue(
      "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "records", c.records, "exact",
      c.exact, "prefix", c.prefix, "lookups", c.lookups, "linked", c.linked,
      "fallback", c.fallback, "evicted", c.evicted, "fallback_not_found",
      c.not_found, "paths_full", c.paths_full);
}

/* _link_ring_size(n): the ring's size at the next link_setup (tests: 0
 * restores the default). */
static PyObject *py_link_ring_size(PyObject *m, PyObject *o) {
  size_t n = PyLong_AsSize_t(o);
  if (n == (size_t)-1 && PyErr_Occurred())
    return NULL;
  ring_size = n;
  Py_RETURN_NONE;
}

/* _frames_before_entry(): what a device thread's fallback search finds now
 * (tests: the frame ids of another thread's backward() caller, outermost
 * first), or None when no thread is inside backward(). */
static PyObject *py_frames_before_entry(PyObject *m, PyObject *unused) {
  uint32_t ids[CPY_LINK_MAX];
  size_t n = cpy_frames_before_entry(ids, CPY_LINK_MAX);
  if (n == CPY_NO_ENTRY)
    Py_RETURN_NONE;
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list && i < n; i++) {
    PyObject *id = PyLong_FromUnsignedLong(ids[i]);
    if (!id) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, id);
  }
  return list;
}

static PyMethodDef methods[] = {
    {"frame_id", py_frame_id, METH_O, "frame_id(name): an interned frame id"},
    {"op_call", (PyCFunction)(void (*)(void))py_op_call, METH_FASTCALL,
     "op_call(func, args, kwargs): run an ATen operator under its aten:: frame"},
    {"link_setup", py_link_setup, METH_VARARGS,
     "link_setup(libtorch_cpu_path, current_node, entries, node_makers): "
     "the backward link "
     "on; None, or why it stays off"},
    {"link_reset", py_link_reset, METH_NOARGS, "the backward link off"},
    {"link_stats", py_link_stats, METH_NOARGS,
     "link_stats(): the backward link's counts since link_setup"},
    {"_link_ring_size", py_link_ring_size, METH_O,
     "_link_ring_size(n): the ring's size at the next link_setup (tests)"},
    {"_frames_before_entry", py_frames_before_entry, METH_NOARGS,
     "_frames_before_entry(): another thread's backward() caller's frame ids "
     "(tests)"},
    {NULL}};

int cpy_torchlink_add(PyObject *m) {
  if (PyModule_AddFunctions(m, methods) < 0)
    return -1;
  s_sequence_nr = PyUnicode_InternFromString("_sequence_nr");
  return s_sequence_nr ? 0 : -1;
}
