/* _pyframes.c -- the "python" context source: the calling thread's Python
 * frames as interned "file:line@function" ids, outermost first.
 *
 * How it reads frames. cproton calls the unwinder on the thread that
 * launches a kernel, often from a CUPTI callback while that thread has
 * released the GIL (Triton's launcher wraps cuLaunchKernel in
 * Py_BEGIN_ALLOW_THREADS). A thread only ever reads its own frame chain,
 * which nobody else mutates while the thread sits in C code, so for
 * CPython 3.11 and 3.12 the chain is walked directly through the
 * interpreter-frame layout (mirrored below; it is not public API):
 * PyGILState_GetThisThreadState() -> tstate->cframe->current_frame ->
 * previous ... Nothing is allocated and no reference counts change, so this
 * is valid with or without the GIL. On other Python versions the public
 * frame API is used when the calling thread holds the GIL, and no frames
 * are reported (the kernel lands under ROOT) when it does not.
 *
 * Cache. (code object, instruction offset) -> {frame id, drop flag, text}
 * in an insert-only open-addressing table: lookups are lock-free (an entry
 * is published by a release store of its code pointer and never changes
 * afterwards); misses format the name and insert under a mutex. Entries
 * made while holding the GIL own a reference to the code object, so its
 * address cannot be reused; entries made without the GIL are validated on
 * every hit against the code's filename, name and first line. A change of
 * the skip list bumps a generation that retires older entries.
 *
 * Hot path: cpy_frames_unwind (launch callbacks, scope enter with
 * context="python"): in steady state no formatting, no allocation, no lock.
 * Called by cproton's core (through cproton_context_register) and by
 * _cproton.c. */
#include "_pyframes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_pylink.h"
#include "cproton/cproton.h"

#if PY_VERSION_HEX < 0x030B0000
#error "cproton needs CPython 3.11 or newer"
#endif

/* ---- interpreter frame layouts (3.11, 3.12) ------------------------------ */

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define CPY_DIRECT_WALK 1
typedef struct iframe {
  PyObject *f_func, *f_globals, *f_builtins, *f_locals;
  PyCodeObject *f_code;
  PyObject *frame_obj;
  struct iframe *previous;
  uint16_t *prev_instr;
  int stacktop;
  _Bool is_entry;
  char owner;
} iframe;
#define CPY_OWNER_CSTACK (-1) /* 3.11 has no shim frames */
#elif PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
#define CPY_DIRECT_WALK 1
typedef struct iframe {
  PyCodeObject *f_code;
  struct iframe *previous;
  PyObject *f_funcobj, *f_globals, *f_builtins, *f_locals, *frame_obj;
  uint16_t *prev_instr;
  int stacktop;
  uint16_t return_offset;
  char owner;
} iframe;
#define CPY_OWNER_CSTACK 3
#else
#define CPY_DIRECT_WALK 0
#endif
#define CPY_OWNER_GENERATOR 1

/* ---- the cache ------------------------------------------------------------- */

#define TABLE_BITS 15
#define TABLE_SIZE (1u << TABLE_BITS)
#define MAX_PROBES 64
#define MAX_WALK 256
#define TEXT_MAX 1024

typedef struct entry {
  _Atomic(uintptr_t) code; /* 0: empty; written last */
  int offset;
  unsigned gen;
  PyObject *filename, *name; /* validation (borrowed) */
  int firstlineno;
  uint32_t id;
  uint8_t drop, strong;
  char *text;
} entry;

static entry table[TABLE_SIZE];
static unsigned n_entries;
static atomic_uint generation = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char **skip; /* NULL-terminated; replaced under lock, old leaked */
static atomic_int registered;

static unsigned slot_of(const void *code, int offset) {
  uint64_t h = ((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)(unsigned)offset * 0xC2B2AE3D27D4EB4Full;
  return (unsigned)(h >> 32) & (TABLE_SIZE - 1);
}

static int valid(const entry *e, PyCodeObject *co, int offset, unsigned gen) {
  return e->offset == offset && e->gen == gen &&
         (e->strong || (e->filename == co->co_filename &&
                        e->name == co->co_name &&
                        e->firstlineno == co->co_firstlineno));
}

static const entry *lookup(PyCodeObject *co, int offset, unsigned gen) {
  unsigned i = slot_of(co, offset);
  for (int p = 0; p < MAX_PROBES; p++, i = (i + 1) & (TABLE_SIZE - 1)) {
    uintptr_t c = atomic_load_explicit(&table[i].code, memory_order_acquire);
    if (c == 0)
      return NULL;
    if (c == (uintptr_t)co && valid(&table[i], co, offset, gen))
      return &table[i];
  }
  return NULL;
}

/* UTF-8 of a str without touching the object when the GIL is not held. */
static const char *utf8_of(PyObject *s, int gil) {
  if (!s || !PyUnicode_Check(s))
    return "?";
  if (gil) {
    const char *u = PyUnicode_AsUTF8(s);
    if (!u)
      PyErr_Clear();
    return u ? u : "?";
  }
  if (PyUnicode_IS_COMPACT_ASCII(s))
    return (const char *)PyUnicode_DATA(s);
  return NULL; /* would need an allocation */
}

static int skipped(const char *file) {
  for (char **p = skip; p && *p; p++)
    if (strncmp(file, *p, strlen(*p)) == 0)
      return 1;
  return 0;
}

/* Formats and interns the frame into `e` (not yet published). Caller holds
 * `lock`. Returns 0, or -1 when the frame cannot be named without the GIL. */
static int describe(entry *e, char *text, PyCodeObject *co, int offset,
                    int gil) {
  const char *file = utf8_of(co->co_filename, gil);
  const char *name = utf8_of(co->co_name, gil);
  if (!file || !name)
    return -1;
  int line = PyCode_Addr2Line(co, offset * 2);
  snprintf(text, TEXT_MAX, "%s:%d@%s", file, line, name);
  e->drop = (uint8_t)skipped(file);
  if (cproton_frame_intern(text, &e->id) != CPROTON_OK)
    return -1;
  e->offset = offset;
  e->filename = co->co_filename;
  e->name = co->co_name;
  e->firstlineno = co->co_firstlineno;
  return 0;
}

/* Inserts a described entry; returns the published entry or NULL when the
 * table is full. Caller holds `lock`. */
static const entry *insert(const entry *tmp, PyCodeObject *co, const char *text,
                           int gil) {
  if (n_entries >= TABLE_SIZE / 4 * 3)
    return NULL;
  unsigned i = slot_of(co, tmp->offset);
  for (int p = 0; p < MAX_PROBES; p++, i = (i + 1) & (TABLE_SIZE - 1)) {
    if (atomic_load_explicit(&table[i].code, memory_order_relaxed) != 0)
      continue;
    entry *e = &table[i];
    e->offset = tmp->offset;
    e->gen = tmp->gen;
    e->filename = tmp->filename, e->name = tmp->name;
    e->firstlineno = tmp->firstlineno;
    e->id = tmp->id, e->drop = tmp->drop;
    e->text = strdup(text);
    e->strong = (uint8_t)gil;
    if (gil)
      Py_INCREF((PyObject *)co);
    n_entries++;
    atomic_store_explicit(&e->code, (uintptr_t)co, memory_order_release);
    return e;
  }
  return NULL;
}

/* The entry for (co, offset): cached, or described into `scratch` (with
 * `text`) when it cannot be cached. NULL when the frame cannot be named. */
static const entry *resolve(PyCodeObject *co, int offset, int gil,
                            entry *scratch, char *text) {
  unsigned gen = atomic_load_explicit(&generation, memory_order_acquire);
  const entry *e = lookup(co, offset, gen);
  if (e)
    return e;
  pthread_mutex_lock(&lock);
  gen = atomic_load(&generation);
  e = lookup(co, offset, gen);
  if (!e) {
    memset(scratch, 0, sizeof *scratch);
    scratch->gen = gen;
    if (describe(scratch, text, co, offset, gil) == 0) {
      e = insert(scratch, co, text, gil);
      if (!e) {
        scratch->text = text;
        e = scratch;
      }
    }
  }
  pthread_mutex_unlock(&lock);
  return e;
}

/* ---- walking ------------------------------------------------------------- */

typedef struct walk {
  const entry *frames[MAX_WALK]; /* innermost first */
  size_t raw_index[MAX_WALK];    /* of each kept frame, among all frames */
  size_t n, raw;
  int gil;
  entry scratch;
  char text[TEXT_MAX];
} walk;

static void visit(walk *w, PyCodeObject *co, int offset) {
  size_t raw = w->raw++;
  if (w->n >= MAX_WALK)
    return;
  const entry *e = resolve(co, offset, w->gil, &w->scratch, w->text);
  if (!e || e->drop)
    return;
  if (e == &w->scratch) { /* uncacheable: keep the id, text only for last */
    static _Thread_local entry spill[MAX_WALK];
    spill[w->n] = *e;
    spill[w->n].text = NULL;
    e = &spill[w->n];
  }
  w->raw_index[w->n] = raw;
  w->frames[w->n++] = e;
}

#if CPY_DIRECT_WALK
static void walk_direct(walk *w, PyThreadState *ts) {
  if (!ts->cframe)
    return;
  for (iframe *f = (iframe *)ts->cframe->current_frame; f; f = f->previous) {
    if (f->owner == CPY_OWNER_CSTACK || !f->f_code)
      continue;
    PyCodeObject *co = f->f_code;
    uint16_t *start = (uint16_t *)co->co_code_adaptive;
    if (f->owner != CPY_OWNER_GENERATOR &&
        f->prev_instr < start + co->_co_firsttraceable)
      continue; /* incomplete frame (being set up) */
    visit(w, co, (int)(f->prev_instr - start));
  }
}
#endif

static void walk_public(walk *w, PyThreadState *ts) {
  PyFrameObject *f = PyThreadState_GetFrame(ts);
  while (f) {
    PyCodeObject *co = PyFrame_GetCode(f);
    visit(w, co, PyFrame_GetLasti(f) / 2);
    Py_DECREF(co);
    PyFrameObject *back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
}

static void walk_current(walk *w) {
  w->n = w->raw = 0;
  PyThreadState *ts = PyGILState_GetThisThreadState();
  if (!ts || !atomic_load(&registered))
    return;
  w->gil = PyGILState_Check();
#if CPY_DIRECT_WALK
  walk_direct(w, ts);
#else
  if (w->gil)
    walk_public(w, ts);
#endif
  (void)walk_public;
}

/* Output: the link prefix (when the thread runs a linked backward node),
 * the thread's frames newer than the link's anchor (all of them without a
 * link), then the operator frames; outermost first. */
size_t cpy_frames_unwind(void *user, uint32_t *ids, size_t max) {
  (void)user;
  static _Thread_local walk w;
  walk_current(&w);
  cpy_link_view v;
  cpy_link_view_get(&v, w.raw);
  size_t n = 0, own = w.n;
  if (v.n_prefix) {
    for (n = 0; n < v.n_prefix && n < max; n++)
      ids[n] = v.prefix[n];
    own = 0; /* frames newer than the anchor: innermost raw indices */
    while (own < w.n && w.raw_index[own] < w.raw - v.anchor)
      own++;
  }
  for (size_t i = own; i-- > 0 && n < max;) /* outermost first */
    ids[n++] = w.frames[i]->id;
  for (size_t i = 0; i < v.n_ops && n < max; i++)
    ids[n++] = v.ops[i];
  return n;
}

size_t cpy_frames_raw_depth(void) {
  static _Thread_local walk w;
  walk_current(&w);
  return w.raw;
}

PyObject *cpy_frames_current(void) {
  walk *w = PyMem_Calloc(1, sizeof *w);
  if (!w)
    return PyErr_NoMemory();
  walk_current(w);
  PyObject *list = PyList_New((Py_ssize_t)w->n);
  for (size_t i = 0; list && i < w->n; i++) {
    const entry *e = w->frames[w->n - 1 - i];
    PyObject *s = PyUnicode_FromString(e->text ? e->text : "?");
    if (!s) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, s);
  }
  PyMem_Free(w);
  return list;
}

int cpy_frames_set_skip(PyObject *prefixes) {
  PyObject *seq = PySequence_Fast(prefixes, "skip prefixes must be a sequence of str");
  if (!seq)
    return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  char **fresh = calloc((size_t)n + 1, sizeof *fresh);
  for (Py_ssize_t i = 0; fresh && i < n; i++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "skip prefixes must be str");
      for (Py_ssize_t j = 0; j < i; j++)
        free(fresh[j]);
      free(fresh);
      Py_DECREF(seq);
      return -1;
    }
    fresh[i] = strdup(s);
  }
  Py_DECREF(seq);
  if (!fresh) {
    PyErr_NoMemory();
    return -1;
  }
  pthread_mutex_lock(&lock);
  skip = fresh; /* the old list may be read by a concurrent miss: leaked */
  atomic_fetch_add(&generation, 1);
  pthread_mutex_unlock(&lock);
  return 0;
}

int cpy_frames_register(void) {
  atomic_store(&registered, 1);
  return cproton_context_register("python", cpy_frames_unwind, NULL);
}

void cpy_frames_unregister(void) {
  atomic_store(&registered, 0);
  cproton_context_register("python", NULL, NULL);
}
