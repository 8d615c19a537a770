/* _instrument.c -- the Triton side of the instrumentation backend, as thin
 * wrappers over <cproton/instrument.h> and <cproton/instrumentation.h>:
 *
 *   instrument_ptx(ptx, mode, num_warps, shared) -> (ptx, [layout dicts])
 *       the PTX pass with the options of a Proton mode string; each layout
 *       dict is JSON-serialisable, so it can ride in Triton's kernel
 *       metadata (and its cache) and be registered in a later process;
 *       a layout has "warning" when the pass checked scope nesting in
 *       text order (cproton_ptx_kernel_warning);
 *   instr_register(name, layout) -> handle      (once per loaded kernel)
 *   instr_alloc(size, stream) -> device pointer (Triton's profile allocator)
 *   instr_launch(handle, ptr, size, stream)     (after the launch)
 *   instr_flush(), instr_stats() -> dict
 *   instr_read(ptr, size, stream) -> bytes   (host_buffer: waits for the GPU)
 *   buffer_to_proton(layout, data, num_warps) -> bytes in Proton's layout
 *
 * Handles are registered kernels that live until process exit (Triton
 * keeps loaded kernels as long). Not a hot path except instr_alloc and
 * instr_launch, which do no Python-level allocation beyond their result. */
#include "_instrument.h"
#include "_status.h"

#include <cproton/cproton.h>

static PyObject *fail(int rc) {
  const char *msg = cproton_last_error();
  PyObject *type = rc == CPROTON_EINVAL || rc == CPROTON_EPARSE ||
                           rc == CPROTON_EUNSUPPORTED || rc == CPROTON_ELIMIT
                       ? PyExc_ValueError
                       : PyExc_RuntimeError;
  PyErr_SetString(type, msg && *msg ? msg : cproton_strerror(rc));
  return NULL;
}

static int set_u32(PyObject *d, const char *key, unsigned long v) {
  PyObject *o = PyLong_FromUnsignedLong(v);
  int rc = o ? PyDict_SetItemString(d, key, o) : -1;
  Py_XDECREF(o);
  return rc;
}

static PyObject *scope_lists(const cproton_buffer_layout *l, PyObject *d) {
  PyObject *names = PyList_New(l->n_scopes), *parents = PyList_New(l->n_scopes);
  for (uint32_t i = 0; names && parents && i < l->n_scopes; i++) {
    PyList_SET_ITEM(names, i, PyUnicode_FromString(l->scope_names[i]));
    PyList_SET_ITEM(parents, i, PyLong_FromLong(
                                    l->scope_parents ? l->scope_parents[i] : -1));
  }
  int rc = names && parents ? PyDict_SetItemString(d, "scope_names", names) |
                                  PyDict_SetItemString(d, "scope_parents", parents)
                            : -1;
  Py_XDECREF(names);
  Py_XDECREF(parents);
  return rc ? NULL : d;
}

static PyObject *layout_dict(const cproton_ptx *p, size_t k) {
  cproton_buffer_layout l;
  if (cproton_ptx_kernel_layout(p, k, &l))
    return fail(CPROTON_EINVAL);
  PyObject *d = PyDict_New(), *warps = PyList_New(l.n_units);
  if (!d || !warps || PyDict_SetItemString(d, "kernel", PyUnicode_FromString(
                                                   cproton_ptx_kernel_name(p, k))))
    goto error;
  for (uint32_t u = 0; u < l.n_units; u++)
    PyList_SET_ITEM(warps, u, PyLong_FromLong(l.unit_warp[u]));
  if (set_u32(d, "per_cta_bytes", l.per_cta_bytes) ||
      set_u32(d, "header_bytes", l.header_bytes) ||
      set_u32(d, "n_units", l.n_units) ||
      set_u32(d, "segment_bytes", l.segment_bytes) ||
      set_u32(d, "counter", l.counter) ||
      set_u32(d, "granularity", l.granularity) ||
      set_u32(d, "buffer", l.buffer) ||
      set_u32(d, "aggregate", l.aggregate) ||
      PyDict_SetItemString(d, "unit_warp", warps) || !scope_lists(&l, d))
    goto error;
  const char *warning = cproton_ptx_kernel_warning(p, k);
  if (warning) { /* the hook turns it into a CprotonWarning */
    PyObject *w = PyUnicode_FromString(warning);
    int bad = !w || PyDict_SetItemString(d, "warning", w);
    Py_XDECREF(w);
    if (bad)
      goto error;
  }
  Py_DECREF(warps);
  return d;
error:
  Py_XDECREF(d);
  Py_XDECREF(warps);
  return NULL;
}

static PyObject *py_instrument_ptx(PyObject *m, PyObject *args) {
  const char *ptx, *mode;
  Py_ssize_t size;
  unsigned num_warps, shared;
  int aggregate = -1; /* -1: as the mode says */
  if (!PyArg_ParseTuple(args, "s#zII|i:instrument_ptx", &ptx, &size, &mode,
                        &num_warps, &shared, &aggregate))
    return NULL;
  cproton_ptx_options o;
  int rc = cproton_instr_mode_options(mode, &o);
  if (rc)
    return fail(rc);
  if (aggregate >= 0)
    o.aggregate = aggregate;
  o.num_warps = num_warps;
  o.existing_shared_bytes = shared;
  cproton_ptx *p = NULL;
  Py_BEGIN_ALLOW_THREADS rc = cproton_ptx_instrument(ptx, (size_t)size, &o, &p);
  Py_END_ALLOW_THREADS if (rc) return fail(rc);
  size_t n;
  const char *text = cproton_ptx_text(p, &n);
  PyObject *layouts = PyList_New(0), *out = NULL;
  for (size_t k = 0; layouts && k < cproton_ptx_n_kernels(p); k++) {
    PyObject *d = layout_dict(p, k);
    if (!d || PyList_Append(layouts, d) < 0) {
      Py_XDECREF(d);
      Py_CLEAR(layouts);
    } else {
      Py_DECREF(d);
    }
  }
  if (layouts)
    out = Py_BuildValue("(s#N)", text, (Py_ssize_t)n, layouts);
  cproton_ptx_free(p);
  return out;
}

static int get_u32(PyObject *d, const char *key, uint32_t *out) {
  PyObject *v = PyDict_GetItemString(d, key);
  unsigned long x = v ? PyLong_AsUnsignedLong(v) : 0;
  if (!v || PyErr_Occurred()) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_ValueError, "layout lacks '%s'", key);
    return -1;
  }
  *out = (uint32_t)x;
  return 0;
}

/* Fills `l` from a layout dict; the names/parents arrays are allocated
 * into *names / *parents (freed by the caller). */
static int layout_from(PyObject *d, cproton_buffer_layout *l,
                       const char ***names, int32_t **parents) {
  memset(l, 0, sizeof *l);
  if (!PyDict_Check(d) || get_u32(d, "per_cta_bytes", &l->per_cta_bytes) ||
      get_u32(d, "header_bytes", &l->header_bytes) ||
      get_u32(d, "n_units", &l->n_units) ||
      get_u32(d, "segment_bytes", &l->segment_bytes) ||
      get_u32(d, "counter", &l->counter) ||
      get_u32(d, "granularity", &l->granularity) ||
      get_u32(d, "buffer", &l->buffer)) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_TypeError, "layout must be a dict");
    return -1;
  }
  if (PyDict_GetItemString(d, "aggregate") && get_u32(d, "aggregate", &l->aggregate))
    return -1; /* absent: a layout of records (cproton before in-kernel sums) */
  PyObject *sn = PyDict_GetItemString(d, "scope_names");
  PyObject *sp = PyDict_GetItemString(d, "scope_parents");
  PyObject *uw = PyDict_GetItemString(d, "unit_warp");
  if (!sn || !sp || !uw || !PyList_Check(sn) || !PyList_Check(sp) ||
      !PyList_Check(uw) || PyList_GET_SIZE(sn) != PyList_GET_SIZE(sp) ||
      PyList_GET_SIZE(uw) > 32) {
    PyErr_SetString(PyExc_ValueError, "layout has bad scope or warp lists");
    return -1;
  }
  l->n_scopes = (uint32_t)PyList_GET_SIZE(sn);
  *names = PyMem_Calloc(l->n_scopes + 1, sizeof **names);
  *parents = PyMem_Calloc(l->n_scopes + 1, sizeof **parents);
  if (!*names || !*parents)
    return PyErr_NoMemory(), -1;
  for (uint32_t i = 0; i < l->n_scopes; i++) {
    (*names)[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(sn, i));
    (*parents)[i] = (int32_t)PyLong_AsLong(PyList_GET_ITEM(sp, i));
    if (!(*names)[i] || PyErr_Occurred())
      return -1;
  }
  for (Py_ssize_t u = 0; u < PyList_GET_SIZE(uw); u++)
    l->unit_warp[u] = (uint8_t)PyLong_AsLong(PyList_GET_ITEM(uw, u));
  l->scope_names = *names;
  l->scope_parents = *parents;
  return PyErr_Occurred() ? -1 : 0;
}

/* Calls fn(layout, arg) with the layout dict `d` converted for the call. */
static PyObject *with_layout(PyObject *d, PyObject *(*fn)(const cproton_buffer_layout *, void *),
                             void *arg) {
  cproton_buffer_layout l;
  const char **names = NULL;
  int32_t *parents = NULL;
  PyObject *out = layout_from(d, &l, &names, &parents) == 0 ? fn(&l, arg) : NULL;
  PyMem_Free(names);
  PyMem_Free(parents);
  return out;
}

static PyObject *register_kernel(const cproton_buffer_layout *l, void *name) {
  cproton_instr_kernel *k;
  int rc = cproton_instr_kernel_new(name, l, &k);
  return rc ? fail(rc) : PyLong_FromVoidPtr(k);
}

static PyObject *py_instr_register(PyObject *m, PyObject *args) {
  const char *name;
  PyObject *d;
  if (!PyArg_ParseTuple(args, "sO:instr_register", &name, &d))
    return NULL;
  return with_layout(d, register_kernel, (void *)name);
}

static PyObject *py_instr_alloc(PyObject *m, PyObject *args) {
  unsigned long long size, stream;
  if (!PyArg_ParseTuple(args, "KK:instr_alloc", &size, &stream))
    return NULL;
  uint64_t ptr;
  int rc = cproton_instr_alloc((size_t)size, stream, &ptr);
  return rc ? fail(rc) : PyLong_FromUnsignedLongLong(ptr);
}

static PyObject *py_instr_launch(PyObject *m, PyObject *args) {
  PyObject *handle;
  unsigned long long ptr, size, stream;
  if (!PyArg_ParseTuple(args, "OKKK:instr_launch", &handle, &ptr, &size,
                        &stream))
    return NULL;
  const cproton_instr_kernel *k = PyLong_AsVoidPtr(handle);
  if (!k)
    return PyErr_Occurred() ? NULL : fail(CPROTON_EINVAL);
  int rc = cproton_instr_launch(k, ptr, (size_t)size, stream);
  if (rc)
    return fail(rc);
  Py_RETURN_NONE;
}

static PyObject *py_instr_release(PyObject *m, PyObject *args) {
  unsigned long long ptr;
  if (!PyArg_ParseTuple(args, "K:instr_release", &ptr))
    return NULL;
  int rc = cproton_instr_release(ptr);
  if (rc)
    return fail(rc);
  Py_RETURN_NONE;
}

/* A parsed mode as {canonical, reduce, time_shift, sums_in_kernel,
 * sums_in_kernel_host_buffer}. */
static PyObject *info_dict(const cproton_instr_mode_info *info) {
  static const char *const kinds[] = {"auto", "kernel", "device", "host"};
  return Py_BuildValue("{sssssNsNsN}", "canonical", info->canonical, "reduce", kinds[info->reduce],
                       "time_shift", PyBool_FromLong(info->decode_flags & CPROTON_DECODE_TIME_SHIFT),
                       "sums_in_kernel", PyBool_FromLong(info->sums_in_kernel),
                       "sums_in_kernel_host_buffer", PyBool_FromLong(info->sums_in_kernel_host_buffer));
}

/* instr_mode_parse(mode, is_trace) -> info_dict: the backend's own parse
 * (cproton_instr_mode_parse), refusals included, for a mode without a
 * session. */
static PyObject *py_instr_mode_parse(PyObject *m, PyObject *args) {
  const char *mode;
  int is_trace;
  if (!PyArg_ParseTuple(args, "zp:instr_mode_parse", &mode, &is_trace))
    return NULL;
  cproton_instr_mode_info info; /* 2.5 KiB */
  int rc = cproton_instr_mode_parse(mode, is_trace, &info);
  return rc ? fail(rc) : info_dict(&info);
}

/* session_instr_config(session) -> info_dict: the session's mode as its
 * backend parsed it when the session started (cproton_session_instr_mode). */
static PyObject *py_session_instr_config(PyObject *m, PyObject *arg) {
  int id;
  if (cpy_session_id(arg, &id))
    return NULL;
  cproton_instr_mode_info info;
  int rc = cproton_session_instr_mode(id, &info);
  return rc ? fail(rc) : info_dict(&info);
}

/* The C parser is the authority on mode strings: Python parses only the
 * canonical form it returns (cproton.mode.parse_instrumentation_mode). */
static PyObject *py_instr_mode_normalize(PyObject *m, PyObject *args) {
  const char *mode;
  if (!PyArg_ParseTuple(args, "z:instr_mode_normalize", &mode))
    return NULL;
  char buf[4096];
  int rc = cproton_instr_mode_normalize(mode, buf, sizeof buf);
  if (rc)
    return fail(rc);
  return PyUnicode_FromString(buf);
}

static PyObject *py_instr_flush(PyObject *m, PyObject *unused) {
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = cproton_instr_flush();
  Py_END_ALLOW_THREADS if (rc) return fail(rc);
  Py_RETURN_NONE;
}

static PyObject *py_instr_stats(PyObject *m, PyObject *unused) {
  cproton_instr_stats s;
  cproton_instr_get_stats(&s);
  return Py_BuildValue("{sKsKsKsKsKsKsKsKsKsKsKsKsKsK}", "launches", s.launches,
                       "decoded", s.decoded, "dropped", s.dropped, "unpaired",
                       s.unpaired, "bad_ctas", s.bad_ctas, "failed", s.failed,
                       "reduced", s.reduced, "reduce_checked", s.reduce_checked,
                       "reduce_mismatches", s.reduce_mismatches, "alloc_waits",
                       s.alloc_waits, "alloc_wait_ns", s.alloc_wait_ns,
                       "inflight_ns", s.inflight_ns, "decode_ns", s.decode_ns,
                       "summed", s.summed);
}

static PyObject *py_instr_read(PyObject *m, PyObject *args) {
  unsigned long long ptr, size, stream;
  if (!PyArg_ParseTuple(args, "KKK:instr_read", &ptr, &size, &stream))
    return NULL;
  PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
  if (!out)
    return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = cproton_instr_read(ptr, (size_t)size, stream,
                                                 PyBytes_AS_STRING(out));
  Py_END_ALLOW_THREADS if (rc) {
    Py_DECREF(out);
    return fail(rc);
  }
  return out;
}

typedef struct to_proton {
  Py_buffer data;
  unsigned int total_units;
} to_proton;

static PyObject *encode_proton(const cproton_buffer_layout *l, void *arg) {
  to_proton *a = arg;
  void *enc = NULL;
  size_t n = 0;
  int rc = cproton_buffer_to_proton(a->data.buf, (size_t)a->data.len, l, a->total_units, &enc, &n);
  PyObject *out = rc ? fail(rc) : PyBytes_FromStringAndSize(enc, (Py_ssize_t)n);
  cproton_free(enc);
  return out;
}

static PyObject *py_buffer_to_proton(PyObject *m, PyObject *args) {
  PyObject *d;
  to_proton a;
  if (!PyArg_ParseTuple(args, "Oy*I:buffer_to_proton", &d, &a.data, &a.total_units))
    return NULL;
  PyObject *out = with_layout(d, encode_proton, &a);
  PyBuffer_Release(&a.data);
  return out;
}

static PyMethodDef instrument_methods[] = {
    {"instrument_ptx", py_instrument_ptx, METH_VARARGS,
     "instrument_ptx(ptx, mode, num_warps, shared[, aggregate]) -> (ptx, "
     "layouts); aggregate 0/1 overrides the mode's reduce=kernel"},
    {"instr_register", py_instr_register, METH_VARARGS,
     "instr_register(kernel_name, layout) -> handle"},
    {"instr_alloc", py_instr_alloc, METH_VARARGS,
     "instr_alloc(size, stream) -> device pointer"},
    {"instr_launch", py_instr_launch, METH_VARARGS,
     "instr_launch(handle, ptr, size, stream)"},
    {"instr_release", py_instr_release, METH_VARARGS,
     "instr_release(ptr): a buffer whose launch never happened"},
    {"instr_mode_normalize", py_instr_mode_normalize, METH_VARARGS,
     "instr_mode_normalize(mode) -> the canonical form of a valid mode string "
     "(ValueError with the parser's message otherwise)"},
    {"instr_mode_parse", py_instr_mode_parse, METH_VARARGS,
     "instr_mode_parse(mode, is_trace) -> dict: the backend's parse of a mode without a session"},
    {"session_instr_config", py_session_instr_config, METH_O,
     "session_instr_config(session) -> dict: the session's mode as its backend parsed it"},
    {"instr_read", py_instr_read, METH_VARARGS,
     "instr_read(ptr, size, stream) -> bytes, after the stream's work"},
    {"buffer_to_proton", py_buffer_to_proton, METH_VARARGS,
     "buffer_to_proton(layout, data, num_warps) -> bytes in Proton's "
     "host-buffer layout"},
    {"instr_flush", py_instr_flush, METH_NOARGS, "wait for pending decodes"},
    {"instr_stats", py_instr_stats, METH_NOARGS, "runtime counters"},
    {NULL}};

int cpy_instrument_add(PyObject *module) {
  return PyModule_AddFunctions(module, instrument_methods);
}
