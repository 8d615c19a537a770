/* backend/cupti/lazy.c -- launch callbacks switched off while no launch site
 * can have changed; records then find their site by correlation-id range
 * (see lazy.h for the scheme).
 *
 * Invariant (what keeps attribution exact): the callbacks are off only
 * while `off` is set, `off` is set only when the context generation read
 * before the disabling launch's capture is still current after `off` was
 * published, and every change bumps the generation before reading `off`.
 * So either the disabler sees the change and stays on, or the changing
 * thread sees `off` and switches the callbacks on (under `lock`, after the
 * disabler finished) before it returns: a launch after a change on the
 * changing thread is always captured.
 *
 * Enter/exit pairs (lazy.h): the switch-off happens in the exit callback of
 * the disabling launch, with `inflight` (captured launches whose exit is
 * pending) at 0 after `off` is published; a launch whose enter callback
 * runs counts itself in `inflight` first and then, if it sees `off`,
 * switches back on from inside its enter, so CUPTI still delivers its exit.
 * Every enter CUPTI delivers thus gets its exit. Each capture's id must be
 * above the same thread's previous one, or lazy mode suspends itself.
 *
 * Launches racing a change on another thread get a site valid just before
 * or after it, as with a callback.
 *
 * Id order across threads (docs/cupti.md, "What the driver may reorder"):
 * a launch takes its id before CUPTI decides whether to call back, and
 * another thread's launch may sit between the two. So a range is closed
 * only by a *fresh* capture, one on a thread that saw the latest re-enable
 * (`epoch`) before the launch began, whose id is above every id handed out
 * while the callbacks were off; it starts at the first capture of the
 * stable run that switched them off, below ids taken just before the
 * switch; the run must come from one thread; and callbacks go off again
 * only once the previous range is closed. A record whose id is then in no
 * range means the driver broke this model: lazy mode suspends itself
 * (callbacks on for the rest of the session, counted, warned at stop).
 * Hot path: cp_lazy_launched (one relaxed load when off; a few when on).
 * Called by callbacks.c (launched), records.c (lookup), cupti_backend.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/cupti/lazy.h"
#include "core/context.h"
#include "core/error.h"
#include "core/log.h"

#define MAX_CBIDS 16
#define DEBUG_LINES 32 /* CPROTON_LOG=debug: switches and misses logged */
#define OPEN UINT32_MAX

typedef struct range {
  uint32_t first, last; /* inclusive; last OPEN until the next capture */
  cp_launch_site site;
} range;

static struct {
  cp_cupti_state *st;
  atomic_int active;           /* lazy mode on */
  atomic_int off;              /* launch callbacks switched off */
  atomic_int open;             /* the newest range is not closed */
  pthread_mutex_t lock;        /* ranges, toggles, cbids */
  range *ranges;               /* ring of CP_LAZY_RANGES */
  uint64_t n;                  /* ranges appended */
  uint32_t cbids[MAX_CBIDS];   /* launch callbacks seen: the ones toggled */
  atomic_int n_cbids;
  atomic_int debug_lines;      /* debug lines left to print */
  atomic_ullong stable_gen;    /* generation of the latest captures */
  atomic_int stable;           /* captures in a row at stable_gen */
  atomic_uint stable_tid;      /* ... all on this thread */
  atomic_uint stable_first;    /* ... the first of them has this id */
  atomic_uint epoch;           /* re-enables so far (never reset) */
  atomic_int suspended;        /* the driver broke the id model */
  atomic_int inflight;         /* captured launches whose exit is pending */
  atomic_uint starts;          /* cp_lazy_start calls (never reset) */
} L = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The epoch this thread last saw at a callback or at its own re-enable:
 * equal to L.epoch means its launches began after the latest re-enable. */
static _Thread_local unsigned seen_epoch;

/* This thread's launch between its API enter and exit callbacks, and the
 * switch-off it asked for: done at the exit, never inside the enter (lazy.h,
 * "Enter and exit"). `start` tags the values with the lazy session. */
static _Thread_local struct {
  unsigned start;      /* L.starts when these were set */
  uint32_t entered;    /* id of the captured launch awaiting its exit, or 0 */
  uint32_t last;       /* id of this thread's previous capture, or 0 */
  int want_off;        /* switch off at the exit of `entered` */
  uint64_t gen;        /* ... if the generation is still this */
  uint32_t tid;        /* ... and the stable run still this thread's */
  cp_launch_site site; /* ... and the range gets this site */
} me;

/* Lazy mode keeps the callbacks on from now on. Caller: lock. */
static void suspend_locked(const char *why, uint32_t id) {
  if (!atomic_exchange(&L.suspended, 1)) {
    atomic_fetch_add(&L.st->stats.lazy_suspended, 1);
    cp_debug("cupti lazy: suspended at id %u: %s", id, why);
  }
}

/* Caller: lock. */
static void toggle(int on) {
  int n = atomic_load(&L.n_cbids);
  for (int i = 0; i < n; i++)
    if (L.st->hooks.launch_callbacks(L.cbids[i], on) != 0)
      atomic_fetch_add(&L.st->stats.lazy_toggle_errors, 1);
}

/* Callbacks back on if they are off; the caller's thread then counts as
 * having seen the re-enable. Caller: lock. */
static void switch_on_locked(void) {
  if (atomic_load(&L.off)) {
    toggle(1);
    atomic_store(&L.off, 0);
    seen_epoch = atomic_fetch_add(&L.epoch, 1) + 1; /* after the enable */
  }
}

/* The context changed (any thread): callbacks back on before returning. */
static void on_change(void) {
  if (!atomic_load(&L.off))
    return;
  pthread_mutex_lock(&L.lock);
  switch_on_locked();
  pthread_mutex_unlock(&L.lock);
}

int cp_lazy_start(cp_cupti_state *st) {
  if (!L.ranges && !(L.ranges = calloc(CP_LAZY_RANGES, sizeof *L.ranges)))
    return cp_error_set(CPROTON_ENOMEM, "out of memory for %d launch ranges",
                        CP_LAZY_RANGES);
  pthread_mutex_lock(&L.lock);
  L.st = st;
  L.n = 0;
  atomic_store(&L.n_cbids, 0);
  atomic_store(&L.off, 0);
  atomic_store(&L.open, 0);
  atomic_store(&L.stable, 0);
  atomic_store(&L.suspended, 0);
  atomic_store(&L.inflight, 0);
  atomic_fetch_add(&L.starts, 1);
  atomic_store(&L.debug_lines, DEBUG_LINES);
  atomic_store(&L.active, 1);
  pthread_mutex_unlock(&L.lock);
  cp_context_set_change_hook(on_change);
  return CPROTON_OK;
}

void cp_lazy_stop(cp_cupti_state *st) {
  (void)st;
  if (!atomic_load(&L.active))
    return;
  cp_context_set_change_hook(NULL);
  pthread_mutex_lock(&L.lock);
  if (atomic_load(&L.off))
    toggle(1);
  atomic_store(&L.off, 0);
  atomic_fetch_add(&L.epoch, 1);
  atomic_store(&L.open, 0);
  atomic_store(&L.active, 0);
  pthread_mutex_unlock(&L.lock);
}

/* Remembers a launch callback id, so that it is toggled. One first seen
 * while the others are off is not switched off here, inside its own enter
 * callback: the caller switches everything back on instead. A 17th entry
 * point could not be toggled: lazy mode suspends itself. Caller: lock. */
static void note_cbid(uint32_t cbid) {
  int n = atomic_load(&L.n_cbids);
  for (int i = 0; i < n; i++)
    if (L.cbids[i] == cbid)
      return;
  if (n < MAX_CBIDS) {
    L.cbids[n] = cbid;
    atomic_store(&L.n_cbids, n + 1);
  } else {
    suspend_locked("more launch entry points than lazy mode toggles", 0);
  }
}

static int cbid_known(uint32_t cbid) {
  int n = atomic_load_explicit(&L.n_cbids, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (L.cbids[i] == cbid)
      return 1;
  return 0;
}

static range *newest(void) { return &L.ranges[(L.n - 1) % CP_LAZY_RANGES]; }

/* The first id of the oldest range kept. Caller: lock, L.n > 0. */
static uint32_t oldest_first(void) {
  uint64_t i = L.n > CP_LAZY_RANGES ? L.n - CP_LAZY_RANGES : 0;
  return L.ranges[i % CP_LAZY_RANGES].first;
}

/* The first DEBUG_LINES switches and misses, for checking the id order a
 * driver gives (docs/cupti.md: what the H100 run showed). */
static int debug_line(void) {
  return atomic_fetch_sub_explicit(&L.debug_lines, 1, memory_order_relaxed) > 0;
}

/* The first fresh capture after the callbacks came back on ends the range:
 * its launch began after the re-enable, so its id is above every id handed
 * out while they were off. One below the range's start means the driver
 * does not hand out ids in launch order. Caller: lock. */
static void close_locked(uint32_t id) {
  if (!atomic_load(&L.open))
    return;
  range *r = newest();
  if (id < r->first)
    suspend_locked("a launch begun after the re-enable has a lower id than "
                   "one made before the callbacks went off", id);
  r->last = id > r->first ? id - 1 : r->first - 1; /* first - 1: empty */
  atomic_store(&L.open, 0);
  if (debug_line())
    cp_debug("cupti lazy: range %llu: ids %u..%u%s, closed by a capture of id "
             "%u (thread %u)",
             (unsigned long long)L.n, r->first, r->last,
             r->last < r->first ? " (empty)" : "", id, cp_context_thread_id());
}

/* Switches the callbacks off after capture `id` at `site`, at that
 * launch's exit callback, unless the context moved since `gen`, another
 * thread captured since (the stable run is no longer this thread's) or
 * another thread's captured launch still waits for its exit callback
 * (switching off now would make CUPTI drop that exit: see lazy.h). */
static void try_off(uint32_t id, uint64_t gen, uint32_t tid,
                    const cp_launch_site *site) {
  pthread_mutex_lock(&L.lock);
  /* open: the previous range still waits for a fresh capture to end it */
  if (atomic_load(&L.off) || !atomic_load(&L.active) ||
      atomic_load(&L.suspended) || atomic_load(&L.open) ||
      atomic_load(&L.stable_gen) != gen ||
      atomic_load(&L.stable_tid) != tid) {
    pthread_mutex_unlock(&L.lock);
    return;
  }
  atomic_store(&L.off, 1);
  /* after publishing `off`: a launch entering from now on sees it and
   * switches back on (cp_lazy_launched); one that entered before is here */
  if (cp_context_generation() != gen || atomic_load(&L.inflight) != 0) {
    atomic_store(&L.off, 0);
    pthread_mutex_unlock(&L.lock);
    return;
  }
  /* From the run's first capture: a launch that took its id between it
   * and `id` and reaches CUPTI's check after the switch is in the range. */
  uint32_t first = atomic_load(&L.stable_first);
  if (first > id)
    first = id;
  if (L.n && newest()->last >= first)
    first = newest()->last + 1;
  range *r = &L.ranges[L.n++ % CP_LAZY_RANGES];
  r->first = first;
  r->last = OPEN;
  r->site = *site;
  atomic_store(&L.open, 1);
  toggle(0);
  if (debug_line())
    cp_debug("cupti lazy: callbacks off after id %u (thread %u)", id,
             cp_context_thread_id());
  atomic_fetch_add(&L.st->stats.lazy_ranges, 1);
  pthread_mutex_unlock(&L.lock);
}

/* A capture that breaks the id model before any record can be misplaced
 * by it: callbacks on for the rest of the session. */
static void refuse(const char *why, uint32_t id) {
  pthread_mutex_lock(&L.lock);
  suspend_locked(why, id);
  switch_on_locked();
  pthread_mutex_unlock(&L.lock);
}

/* This thread's state, reset when a new lazy session started. */
static void own_state(void) {
  unsigned s = atomic_load_explicit(&L.starts, memory_order_relaxed);
  if (me.start != s) {
    me.start = s;
    me.entered = me.last = 0;
    me.want_off = 0;
  }
}

void cp_lazy_launched(cp_cupti_state *st, uint32_t cbid, uint32_t id,
                      uint64_t gen, const cp_launch_site *site) {
  (void)st;
  if (!atomic_load_explicit(&L.active, memory_order_relaxed))
    return;
  own_state();
  if (!me.entered) {
    me.entered = id;
    atomic_fetch_add(&L.inflight, 1); /* before reading `off` (try_off) */
  }
  me.want_off = 0;
  /* one thread's API calls take ids one after another from one counter:
   * an id not above the thread's previous one means CUPTI repeats ids
   * (the H100 run: docs/cupti.md) and no placement by id can be trusted */
  if (me.last && id <= me.last && !atomic_load(&L.suspended))
    refuse("a thread's launch has an id not above its previous launch's", id);
  me.last = id;
  /* a callback while they are off: a launch racing the switch-off, or an
   * entry point not switched yet. On again from inside this enter callback,
   * so that CUPTI still delivers this launch's exit. */
  int raced = atomic_load(&L.off);
  if (raced) {
    pthread_mutex_lock(&L.lock);
    note_cbid(cbid);
    switch_on_locked();
    pthread_mutex_unlock(&L.lock);
  }
  /* not fresh if it raced: the launch began before its own re-enable */
  unsigned ep = atomic_load(&L.epoch);
  int fresh = !raced && seen_epoch == ep;
  seen_epoch = ep;
  if (!cbid_known(cbid) ||
      (fresh && atomic_load_explicit(&L.open, memory_order_relaxed))) {
    pthread_mutex_lock(&L.lock);
    note_cbid(cbid);
    if (fresh && !atomic_load(&L.off))
      close_locked(id);
    pthread_mutex_unlock(&L.lock);
  }
  uint32_t tid = site->thread ? site->thread : cp_context_thread_id();
  if (atomic_load_explicit(&L.stable_gen, memory_order_relaxed) != gen ||
      atomic_load_explicit(&L.stable_tid, memory_order_relaxed) != tid) {
    atomic_store_explicit(&L.stable_gen, gen, memory_order_relaxed);
    atomic_store_explicit(&L.stable_tid, tid, memory_order_relaxed);
    atomic_store_explicit(&L.stable_first, id, memory_order_relaxed);
    atomic_store_explicit(&L.stable, 1, memory_order_relaxed);
    return;
  }
  if (atomic_fetch_add_explicit(&L.stable, 1, memory_order_relaxed) + 1 <
      CP_LAZY_STABLE)
    return;
  /* read after `gen`: the counts are those of generation `gen` or later */
  if (cp_context_uniform() && cp_session_sites_shared() &&
      !atomic_load_explicit(&L.suspended, memory_order_relaxed)) {
    me.want_off = 1; /* at this launch's exit (cp_lazy_exited) */
    me.gen = gen;
    me.tid = tid;
    me.site = *site;
  }
}

void cp_lazy_exited(cp_cupti_state *st, uint32_t id) {
  (void)st;
  if (!atomic_load_explicit(&L.active, memory_order_relaxed))
    return;
  own_state();
  if (!me.entered || me.entered != id)
    return; /* an exit whose enter ran while callbacks were off */
  me.entered = 0;
  atomic_fetch_sub(&L.inflight, 1);
  if (me.want_off) {
    me.want_off = 0;
    try_off(id, me.gen, me.tid, &me.site);
  }
}

/* The newest range whose first id is <= id, by binary search over the ring
 * (first ids increase). Caller: lock. */
static const range *find_locked(uint32_t id) {
  uint64_t lo = L.n > CP_LAZY_RANGES ? L.n - CP_LAZY_RANGES : 0, hi = L.n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (L.ranges[mid % CP_LAZY_RANGES].first <= id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == (L.n > CP_LAZY_RANGES ? L.n - CP_LAZY_RANGES : 0))
    return NULL;
  const range *r = &L.ranges[(lo - 1) % CP_LAZY_RANGES];
  return id <= r->last ? r : NULL;
}

int cp_lazy_lookup(cp_cupti_state *st, uint32_t id, cp_launch_site *out) {
  if (!L.ranges || !id)
    return 0;
  pthread_mutex_lock(&L.lock);
  const range *r = L.n ? find_locked(id) : NULL;
  if (r) {
    *out = r->site;
  } else if (L.n && id >= oldest_first() && atomic_load(&L.active)) {
    /* no callback stored it and no range holds it: the driver handed out an
     * id this model does not expect. Exactness first: callbacks back on. */
    atomic_fetch_add_explicit(&st->stats.lazy_misses, 1, memory_order_relaxed);
    if (debug_line())
      cp_debug("cupti lazy: record id %u in no range (newest: %u..%u of %llu)",
               id, newest()->first, newest()->last, (unsigned long long)L.n);
    suspend_locked("a record's id is in no range", id);
    if (atomic_load(&L.off)) {
      toggle(1);
      atomic_store(&L.off, 0);
      atomic_fetch_add(&L.epoch, 1);
    }
  }
  pthread_mutex_unlock(&L.lock);
  if (r)
    atomic_fetch_add_explicit(&st->stats.lazy_records, 1, memory_order_relaxed);
  return r != NULL;
}
