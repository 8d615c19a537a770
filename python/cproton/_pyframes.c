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
 * every hit against the code's filename, name (pointers and the strings'
 * hashes) and first line (`ident`). A change of the skip list bumps a
 * generation that retires older entries.
 *
 * Memo. Each thread keeps its last walk, outermost first; the next walk
 * reuses its longest matching outer part under the same validation rule
 * and probes the table only below it (see "the per-thread memo").
 *
 * PyTorch. The kept frames go to the backward link (_pylink.c,
 * cpy_link_compose), which records them as a forward path or replaces the
 * caller's part by a node's forward path; inside a backward pass the walk
 * tells it where the engine's entry frame is (cpy_frames_set_entries), and
 * cpy_frames_before_entry finds the frames of another thread's backward()
 * caller (with the GIL, for autograd's device threads).
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

/* What a cache entry made without the GIL checks on each hit: the code
 * object at its address may since have been freed and another made there,
 * and so may its name and filename strings (issue 28: a function "gen7"
 * was named "gen1"). The strings' own hashes (set when a str is interned,
 * as code names are; -1 while not computed) tell two strings at one address
 * apart; the object is alive while its frame runs, so reading it is safe. */
typedef struct ident {
  PyObject *filename, *name; /* borrowed: compared, never dereferenced */
  Py_hash_t file_hash, name_hash;
  int firstlineno;
} ident;

static Py_hash_t str_hash(PyObject *s) { /* code objects hold str */
  return ((PyASCIIObject *)s)->hash;
}

/* Computes a str's cached hash when not yet set (many names are not
 * interned: "<module>", code made by code.replace). For an exact str this
 * reads only its bytes and the hash secret and stores the one value any
 * thread would store, so it is done without the GIL too; a subclass (its
 * __hash__ could run Python) is left alone and stays -1: then an entry made
 * without the GIL is not kept (resolve). */
static void hash_now(PyObject *s) {
  if (PyUnicode_CheckExact(s) && str_hash(s) == -1)
    (void)PyObject_Hash(s); /* a str's hash never fails, never is -1 */
}

static void ident_of(ident *id, PyCodeObject *co) {
  hash_now(co->co_filename);
  hash_now(co->co_name);
  id->filename = co->co_filename, id->name = co->co_name;
  id->file_hash = str_hash(co->co_filename);
  id->name_hash = str_hash(co->co_name);
  id->firstlineno = co->co_firstlineno;
}

static int same_code(const ident *id, PyCodeObject *co) {
  return id->name == co->co_name && id->filename == co->co_filename &&
         id->firstlineno == co->co_firstlineno &&
         id->name_hash == str_hash(co->co_name) &&
         id->file_hash == str_hash(co->co_filename);
}

typedef struct entry {
  _Atomic(uintptr_t) code; /* 0: empty; written last */
  int offset;
  unsigned gen;
  ident ident; /* validation of entries that own no reference */
  uint32_t id;
  uint8_t drop, strong;
  char *text;
} entry;

static entry table[TABLE_SIZE];
static unsigned n_entries;
static atomic_uint generation = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Which frames are dropped: those of files under a `skip` prefix, and the
 * callers of a function of `callers` ("file-prefix@function"): a router
 * that calls its caller again (as PyTorch's handle_torch_function does
 * under a torch-function mode) would show the user's operation twice.
 * Both lists NULL-terminated, replaced under lock, old ones leaked. */
static char **skip, **callers;
#define DROP_SELF 1
#define DROP_CALLER 2
static atomic_int registered;

static unsigned slot_of(const void *code, int offset) {
  uint64_t h = ((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)(unsigned)offset * 0xC2B2AE3D27D4EB4Full;
  return (unsigned)(h >> 32) & (TABLE_SIZE - 1);
}

static int valid(const entry *e, PyCodeObject *co, int offset, unsigned gen) {
  return e->offset == offset && e->gen == gen &&
         (e->strong || same_code(&e->ident, co));
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

/* DROP_SELF and DROP_CALLER as the lists say for (file, name). */
static uint8_t drop_flags(const char *file, const char *name) {
  uint8_t flags = 0;
  for (char **p = skip; p && *p && !flags; p++)
    if (strncmp(file, *p, strlen(*p)) == 0)
      flags = DROP_SELF;
  for (char **p = callers; p && *p; p++) {
    const char *at = strrchr(*p, '@');
    if (at && strcmp(at + 1, name) == 0 &&
        strncmp(file, *p, (size_t)(at - *p)) == 0)
      return flags | DROP_CALLER;
  }
  return flags;
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
  e->drop = drop_flags(file, name);
  if (cproton_frame_intern(text, &e->id) != CPROTON_OK)
    return -1;
  e->offset = offset;
  ident_of(&e->ident, co);
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
    e->ident = tmp->ident;
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
      /* without the GIL and without its name's hash an entry could not
       * tell a new name at the old one's address: described each time */
      e = gil || scratch->ident.name_hash != -1 ? insert(scratch, co, text, gil)
                                                : NULL;
      if (!e) {
        scratch->text = text;
        e = scratch;
      }
    }
  }
  pthread_mutex_unlock(&lock);
  return e;
}

/* ---- the engine's entry ----------------------------------------------------
 *
 * Inside a backward pass the link (_pylink.c) needs to know which of the
 * thread's frames are the caller of backward() and which run the node:
 * those older and newer than the innermost frame of the engine's entry
 * (torch.autograd.graph._engine_run_backward, or torch.autograd.backward
 * and .grad in a torch without it; cpy_frames_set_entries). Checked only
 * on backward launches. */

#define MAX_ENTRIES 4
static _Atomic(PyCodeObject *) entries[MAX_ENTRIES]; /* strong references */
/* Node makers: Python functions that make an autograd node and then run
 * Python code that launches (autograd.Function.apply: its node is made
 * before forward() runs). A node's forward path ends at the caller of the
 * innermost maker frame, not at its first kernel's launch site inside
 * forward() (for a compiled region, Inductor's first kernel call). Checked
 * only when a forward launch records (cpy_link_launch_get). */
static _Atomic(PyCodeObject *) makers[MAX_ENTRIES];

static int in_set(_Atomic(PyCodeObject *) *set, const PyCodeObject *co) {
  for (int i = 0; i < MAX_ENTRIES; i++)
    if (co == atomic_load_explicit(&set[i], memory_order_relaxed) && co)
      return 1;
  return 0;
}

static int is_entry(const PyCodeObject *co) { return in_set(entries, co); }
static int is_maker(const PyCodeObject *co) { return in_set(makers, co); }

/* ---- walking ------------------------------------------------------------- */

typedef struct walk {
  const entry *frames[MAX_WALK]; /* innermost first */
  size_t raw_index[MAX_WALK];    /* of each kept frame, among all frames */
  size_t n, raw;
  size_t entry_raw; /* the innermost entry frame's raw index, or CPY_NO_ENTRY */
  size_t maker_raw; /* the innermost node maker's, or CPY_NO_ENTRY */
  int gil;
  int inner_drops_caller; /* the frame visited last (inner) says so */
  entry scratch;
  char text[TEXT_MAX];
} walk;

static void visit(walk *w, PyCodeObject *co, int offset) {
  size_t raw = w->raw++;
  if (w->entry_raw == CPY_NO_ENTRY && is_entry(co))
    w->entry_raw = raw;
  if (w->maker_raw == CPY_NO_ENTRY && is_maker(co))
    w->maker_raw = raw;
  int caller_dropped = w->inner_drops_caller;
  w->inner_drops_caller = 0;
  if (w->n >= MAX_WALK)
    return;
  const entry *e = resolve(co, offset, w->gil, &w->scratch, w->text);
  w->inner_drops_caller = e && (e->drop & DROP_CALLER);
  if (!e || (e->drop & DROP_SELF) || caller_dropped)
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
/* The first frame from `f` on that has a name: not a C-stack shim, not
 * incomplete (being set up); NULL at the end of the chain. */
static iframe *visible(iframe *f) {
  for (; f; f = f->previous) {
    if (f->owner == CPY_OWNER_CSTACK || !f->f_code)
      continue;
    PyCodeObject *co = f->f_code;
    if (f->owner == CPY_OWNER_GENERATOR ||
        f->prev_instr >= (uint16_t *)co->co_code_adaptive + co->_co_firsttraceable)
      return f;
  }
  return NULL;
}

static int offset_of(const iframe *f) {
  return (int)(f->prev_instr - (uint16_t *)f->f_code->co_code_adaptive);
}

static iframe *innermost(PyThreadState *ts) {
  return ts->cframe ? visible((iframe *)ts->cframe->current_frame) : NULL;
}

static void walk_direct(walk *w, PyThreadState *ts) {
  for (iframe *f = innermost(ts); f; f = visible(f->previous))
    visit(w, f->f_code, offset_of(f));
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

static void walk_reset(walk *w, int gil) {
  w->n = w->raw = 0;
  w->entry_raw = w->maker_raw = CPY_NO_ENTRY;
  w->inner_drops_caller = 0;
  w->gil = gil;
}

static void walk_current(walk *w) {
  walk_reset(w, 0);
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
}

/* ---- the per-thread memo of the last walk ---------------------------------
 *
 * A launch path repeats: the same frames (code object, instruction offset)
 * from the outermost down to where the previous launch's call path left
 * off. Each thread keeps its last walk, outermost first, with what the
 * table gave for each frame (a copy, so a repeated path reads only this
 * thread's array, not the scattered table entries); a walk first gathers
 * the raw (code, offset) pairs with pointer loads only, keeps the longest
 * outer run that matches the memo and resolves only the frames below it.
 * A memo frame is reused under the table's own rule: same code pointer and
 * offset, same generation, and for an entry made without the GIL (it owns
 * no reference, so the address may now hold another code object) the
 * code's filename, name, their hashes and first line checked again on
 * every reuse (`same_code`). */

typedef struct mframe {
  PyCodeObject *code;
  ident ident; /* validation, as in `entry` */
  int offset;
  uint32_t id;
  uint8_t drop, strong;
} mframe;

typedef struct memo {
  mframe f[MAX_WALK]; /* outermost first; [0, n) reusable */
  size_t n;
  unsigned gen;
  PyCodeObject *code[MAX_WALK]; /* this walk's raw frames, innermost first */
  int offset[MAX_WALK];
  entry scratch;
  char text[TEXT_MAX];
} memo;

static int mframe_matches(const mframe *m, PyCodeObject *co, int offset) {
  return m->code == co && m->offset == offset &&
         (m->strong || same_code(&m->ident, co));
}

#if CPY_DIRECT_WALK
/* The raw frames of the calling thread, innermost first, into m->code and
 * m->offset (the frames walk_direct visits). Returns their number, or
 * MAX_WALK + 1 when there are more than MAX_WALK. */
static size_t gather(memo *m, PyThreadState *ts) {
  size_t n = 0;
  for (iframe *f = innermost(ts); f; f = visible(f->previous)) {
    if (n == MAX_WALK)
      return MAX_WALK + 1;
    m->code[n] = f->f_code;
    m->offset[n++] = offset_of(f);
  }
  return n;
}
#endif

/* Memo frame j (outermost first) from the table. Returns 1 when it may be
 * reused by later walks (a cached entry), 0 when not (described only for
 * this walk, or not nameable: then dropped). */
static int fill(memo *m, size_t j, PyCodeObject *co, int offset, int gil) {
  mframe *d = &m->f[j];
  const entry *e = resolve(co, offset, gil, &m->scratch, m->text);
  d->code = co, d->offset = offset;
  d->drop = e ? e->drop : DROP_SELF;
  if (!e)
    return 0;
  d->id = e->id, d->strong = e->strong;
  d->ident = e->ident;
  return e != &m->scratch;
}

/* Brings m->f[0, raw) up to date with the raw frames just gathered. */
static void refresh(memo *m, size_t raw) {
  unsigned gen = atomic_load_explicit(&generation, memory_order_acquire);
  size_t j = 0, keep;
  if (m->gen != gen)
    m->n = 0, m->gen = gen;
  while (j < raw && j < m->n &&
         mframe_matches(&m->f[j], m->code[raw - 1 - j], m->offset[raw - 1 - j]))
    j++;
  int gil = j < raw && PyGILState_Check(); /* asked only when a frame is new */
  for (keep = j; j < raw; j++)
    if (fill(m, j, m->code[raw - 1 - j], m->offset[raw - 1 - j], gil) &&
        keep == j)
      keep++;
  m->n = keep;
}

/* ---- the link's view of the walk ---------------------------------------- */

/* The raw index (outermost first) of the innermost entry frame of m's
 * walk, or CPY_NO_ENTRY. */
static size_t innermost_of(const memo *m, size_t raw,
                           int (*is)(const PyCodeObject *)) {
  for (size_t j = raw; j-- > 0;)
    if (is(m->f[j].code))
      return j;
  return CPY_NO_ENTRY;
}

/* The raw index that splits m's walk for the link: inside backward the
 * engine's entry; at a forward launch that records, the innermost node
 * maker; else none. */
static size_t split_of(const memo *m, size_t raw, cpy_link_launch l) {
  if (l.task >= 0)
    return innermost_of(m, raw, is_entry);
  if (l.record_at)
    return innermost_of(m, raw, is_maker);
  return CPY_NO_ENTRY;
}

/* The kept frames of m->f[0, raw), outermost first, without the entry
 * frame (a maker frame stays: it is part of the launch's own path), then
 * the link's composition (the forward record, or the backward path) and
 * the operator frames. */
static size_t emit(const memo *m, size_t raw, uint32_t *ids, size_t max) {
  cpy_link_launch l = cpy_link_launch_get();
  size_t at = split_of(m, raw, l);
  size_t n = 0, outer = CPY_NO_ENTRY;
  for (size_t j = 0; j < raw && n < max; j++) {
    if (j == at) {
      outer = n;
      if (l.task >= 0)
        continue;
    }
    if (!(m->f[j].drop & DROP_SELF) &&
        !(j + 1 < raw && (m->f[j + 1].drop & DROP_CALLER)))
      ids[n++] = m->f[j].id;
  }
  if (at != CPY_NO_ENTRY && outer == CPY_NO_ENTRY)
    outer = n; /* the ids ran out before the entry */
  return cpy_link_compose(ids, n, outer, l, max);
}

/* The walk without the memo (other Python versions, stacks deeper than
 * MAX_WALK): the link and operator layers around w's frames. */
static size_t unwind_plain(uint32_t *ids, size_t max) {
  static _Thread_local walk w;
  walk_current(&w);
  cpy_link_launch l = cpy_link_launch_get();
  size_t split = l.task >= 0 ? w.entry_raw
                 : l.record_at ? w.maker_raw
                               : CPY_NO_ENTRY;
  size_t n = 0, outer = CPY_NO_ENTRY;
  for (size_t i = w.n; i-- > 0 && n < max;) { /* outermost first */
    if (split != CPY_NO_ENTRY && outer == CPY_NO_ENTRY &&
        w.raw_index[i] <= split)
      outer = n; /* the frames from here on are newer than the split */
    if (l.task < 0 || w.raw_index[i] != w.entry_raw)
      ids[n++] = w.frames[i]->id;
  }
  if (split != CPY_NO_ENTRY && outer == CPY_NO_ENTRY)
    outer = n;
  return cpy_link_compose(ids, n, outer, l, max);
}

/* The calling thread's memo. Not inlined: the module is a shared object,
 * where each use of a thread-local is a call to __tls_get_addr, which GCC
 * repeated in every iteration of gather's loop when the memo was used by
 * name; through this accessor it is one call per walk. */
static __attribute__((noinline)) memo *this_memo(void) {
  static _Thread_local memo m;
  return &m;
}

size_t cpy_frames_unwind(void *user, uint32_t *ids, size_t max) {
  (void)user;
#if CPY_DIRECT_WALK
  memo *m = this_memo();
  PyThreadState *ts = PyGILState_GetThisThreadState();
  if (!ts || !atomic_load_explicit(&registered, memory_order_relaxed))
    return emit(m, 0, ids, max); /* the link's fallback and the ops */
  size_t raw = gather(m, ts);
  if (raw <= MAX_WALK) {
    refresh(m, raw);
    return emit(m, raw, ids, max);
  }
#endif
  return unwind_plain(ids, max);
}

static int set_codes(_Atomic(PyCodeObject *) *set, PyObject *codes,
                     const char *what) {
  PyObject *seq = PySequence_Fast(codes, "expected a sequence of code objects");
  if (!seq)
    return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; i++)
    if (!PyCode_Check(PySequence_Fast_GET_ITEM(seq, i)) || i >= MAX_ENTRIES) {
      Py_DECREF(seq);
      PyErr_Format(PyExc_TypeError, "%s: at most 4 code objects", what);
      return -1;
    }
  for (Py_ssize_t i = 0; i < MAX_ENTRIES; i++) {
    PyObject *co = i < n ? Py_NewRef(PySequence_Fast_GET_ITEM(seq, i)) : NULL;
    /* a launch comparing the old pointer right now only compares it */
    Py_XDECREF((PyObject *)atomic_exchange(&set[i], (PyCodeObject *)co));
  }
  Py_DECREF(seq);
  return 0;
}

int cpy_frames_set_entries(PyObject *codes, PyObject *node_makers) {
  return set_codes(entries, codes, "entries") < 0 ||
                 set_codes(makers, node_makers, "node makers") < 0
             ? -1
             : 0;
}

/* The frames of `ts` older than its innermost entry frame, outermost
 * first, through the cache and the skip rules as the unwinder names them;
 * CPY_NO_ENTRY when it has no entry frame. GIL. */
static size_t thread_before_entry(PyThreadState *ts, uint32_t *ids, size_t max) {
  static _Thread_local walk w;
  walk_reset(&w, 1);
  walk_public(&w, ts);
  if (w.entry_raw == CPY_NO_ENTRY)
    return CPY_NO_ENTRY;
  size_t n = 0;
  for (size_t i = w.n; i-- > 0 && n < max;) /* outermost first */
    if (w.raw_index[i] > w.entry_raw)
      ids[n++] = w.frames[i]->id;
  return n;
}

size_t cpy_frames_before_entry(uint32_t *ids, size_t max) {
  PyThreadState *me = PyThreadState_Get();
  PyInterpreterState *in = PyThreadState_GetInterpreter(me);
  for (PyThreadState *ts = PyInterpreterState_ThreadHead(in); ts;
       ts = PyThreadState_Next(ts)) {
    size_t n = ts == me ? CPY_NO_ENTRY : thread_before_entry(ts, ids, max);
    if (n != CPY_NO_ENTRY)
      return n;
  }
  return CPY_NO_ENTRY;
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

/* A NULL-terminated copy of a sequence of str; NULL with an exception. */
static char **str_list(PyObject *items, const char *what) {
  PyObject *seq = PySequence_Fast(items, what);
  if (!seq)
    return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  char **fresh = calloc((size_t)n + 1, sizeof *fresh);
  for (Py_ssize_t i = 0; fresh && i < n; i++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, what);
      for (Py_ssize_t j = 0; j < i; j++)
        free(fresh[j]);
      free(fresh);
      Py_DECREF(seq);
      return NULL;
    }
    fresh[i] = strdup(s);
  }
  Py_DECREF(seq);
  if (!fresh)
    PyErr_NoMemory();
  return fresh;
}

int cpy_frames_set_skip(PyObject *prefixes, PyObject *caller_of) {
  char **fresh = str_list(prefixes, "skip prefixes must be a sequence of str");
  if (!fresh)
    return -1;
  char **fresh_callers =
      caller_of ? str_list(caller_of, "callers must be a sequence of str "
                                      "'file-prefix@function'")
                : calloc(1, sizeof *fresh_callers);
  if (!fresh_callers) {
    if (!PyErr_Occurred())
      PyErr_NoMemory();
    for (char **p = fresh; *p; p++)
      free(*p);
    free(fresh);
    return -1;
  }
  pthread_mutex_lock(&lock);
  skip = fresh; /* the old lists may be read by a concurrent miss: leaked */
  callers = fresh_callers;
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
