/* backend/cupti/pcsampling_range.c -- PC sampling's periods: a range
 * closed, its records fetched into pcs_attr.c and attributed, the range
 * reopened (flush; exact mode: a function about to run under a second
 * calling context, a graph launch), and the launch bracket that decides
 * it: a range of its own for each function's first launches (both modes,
 * `first=K`), exact mode's periods, graph launches. Invariant: every
 * vendor call is made on an application thread (a flush or a launch; a
 * drain thread calling Stop and Start beside launches hung on an H100).
 * Hot path: cp_pcsampling_range_bracket (per launch: in exact mode two
 * hash probes under a mutex; in concurrent mode a thread-local cache probe
 * once a function's first launches are done). Called by pcsampling.c
 * (state in pcsampling_state.h). */
#include <string.h>

#include "backend/cupti/callbacks.h"
#include "backend/cupti/pcsampling_state.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/context.h"
#include "core/log.h"
#include "core/strtab.h"

static cp_pcsampling_state *const g = &cp_pcsampling_g;

static _Thread_local int my_slot = -1;
static _Thread_local uint32_t my_epoch; /* slots are handed out per enable */
/* The launch of this thread that runs in a range of its own (its
 * correlation id; 0: none), and concurrent mode's cache of kernel-name
 * pointers whose first launches are done (a stale entry can only skip a
 * first-launch range, never add one). */
static _Thread_local uint32_t first_corr;
#define DONE_CACHE 64
static _Thread_local const char *first_done[DONE_CACHE];
static _Thread_local uint32_t done_epoch;

static const char **done_slot(const char *name) {
  uint32_t epoch = atomic_load_explicit(&g->slot_epoch, memory_order_relaxed);
  if (done_epoch != epoch) {
    memset(first_done, 0, sizeof first_done);
    done_epoch = epoch;
  }
  return &first_done[((uintptr_t)name >> 4) % DONE_CACHE];
}

/* ---- ranges: close, fetch, attribute ------------------------------------- */

/* Takes the records in `s`'s configured buffer, then empties it. */
static void consume(sampled_ctx *s, uint32_t corr) {
  cp_debug("pcsampling: buffer of ctx %p: %zu PCs (%zu remaining), %llu "
           "samples, %llu dropped, %llu in non-user kernels, range %llu, "
           "corr %u",
           (void *)s->ctx, s->data.totalNumPcs, s->data.remainingNumPcs,
           (unsigned long long)s->data.totalSamples,
           (unsigned long long)s->data.droppedSamples,
           (unsigned long long)s->data.nonUsrKernelsTotalSamples,
           (unsigned long long)s->data.rangeId, corr);
  atomic_fetch_add(&g->n_pcs, s->data.totalNumPcs);
  atomic_fetch_add(&g->n_total, s->data.totalSamples);
  for (size_t i = 0; i < s->data.totalNumPcs; i++)
    if (s->data.pPcData[i].correlationId)
      atomic_fetch_add(&g->n_with_corr, 1);
  cp_pcs_add(g->pcs, &s->data, &g->stalls, corr);
  s->data.totalNumPcs = 0;
  s->data.totalSamples = 0;
  s->data.droppedSamples = 0;
  s->data.nonUsrKernelsTotalSamples = 0;
  s->data.hardwareBufferFull = 0;
}

/* Fetches everything CUPTI holds for `s` (records of launch `corr`, or 0);
 * caller holds `lock` and closed the range. Closing a range (or disabling)
 * leaves its first records in the buffer given at configuration; GetData
 * hands over the rest (remainingNumPcs), as Proton reads them. */
static void fetch(sampled_ctx *s, uint32_t corr) {
  if (!s->ok)
    return;
  consume(s, corr);
  for (int rounds = 0; rounds < 1024; rounds++) {
    CUpti_PCSamplingGetDataParams p = {
        .size = CUpti_PCSamplingGetDataParamsSize, .ctx = s->ctx,
        .pcSamplingData = &s->data};
    CUptiResult r = g->api->cuptiPCSamplingGetData(&p);
    if (r != CUPTI_SUCCESS) {
      if (atomic_fetch_add(&g->drain_errors, 1) == 0)
        cp_info("pcsampling: cuptiPCSamplingGetData: %s",
                cp_loader_cupti_error(g->api, r));
      return;
    }
    atomic_fetch_add(&g->n_gets, 1);
    consume(s, corr);
    if (!s->data.remainingNumPcs)
      return;
  }
}

/* Closes `s`'s range, fetches its records (tagged with launch `corr`, or
 * 0) and reopens it (samples of the moment between are not taken); with
 * `sync`, first waits for the context's work, so that its kernels' samples
 * belong to the range closed. `s`'s context is current; caller holds
 * `lock`. */
static void restart(sampled_ctx *s, uint32_t corr, int sync) {
  if (sync) {
    cp_context_own_calls_begin();
    g->api->cuCtxSynchronize();
    cp_context_own_calls_end();
  }
  cp_pcsampling_ctx_range(s, 0);
  fetch(s, corr);
  cp_pcsampling_ctx_range(s, 1);
}

/* Ends the period on every context. Each is made current for CUPTI; the
 * caller's own is restored. Caller holds `lock`. */
void cp_pcsampling_range_close_all(void) {
  CUcontext mine = NULL;
  g->api->cuCtxGetCurrent(&mine);
  for (int i = 0; i < g->n_ctx; i++) {
    if (!g->ctxs[i].ok)
      continue;
    if (g->ctxs[i].ctx != mine)
      g->api->cuCtxSetCurrent(g->ctxs[i].ctx);
    restart(&g->ctxs[i], 0, g->opt.exact);
  }
  g->api->cuCtxSetCurrent(mine);
}

/* Exact mode: attributes what was fetched (each function to the one site
 * it ran under in the period); launches still in flight are noted in the
 * next period. Caller holds `lock`. */
static int attribute_period(int final, uint64_t since) {
  int rc = cp_pcs_attribute(g->pcs, final);
  for (int i = 0; i < g->n_threads; i++)
    if (g->flights[i].used)
      cp_pcs_note_launch(g->pcs, g->flights[i].fn, &g->flights[i].site, 1);
  atomic_fetch_add_explicit(&g->t_split_ns, cp_clock_now_ns() - since,
                            memory_order_relaxed);
  return rc;
}

int cp_pcsampling_range_end_period(int final) {
  uint64_t t = cp_clock_now_ns();
  cp_pcsampling_range_close_all();
  return attribute_period(final, t);
}

static in_flight *my_flight(void) {
  if (my_slot < 0 || my_epoch != g->slot_epoch) {
    my_slot = g->n_threads < MAX_THREADS ? g->n_threads++ : -1;
    my_epoch = g->slot_epoch;
  }
  CP_ASSERT(my_slot < MAX_THREADS && g->n_threads <= MAX_THREADS);
  return my_slot < 0 ? NULL : &g->flights[my_slot];
}

/* A launch without a kernel name (a graph launch): a range of its own,
 * its samples tagged with the launch (graph kernels' samples go to the
 * graph launch's calling context, as in Proton). */
static void own_range(void *c, uint32_t corr, int enter) {
  sampled_ctx *s = cp_pcsampling_ctx_find(c);
  if (!s || !s->ok)
    return;
  if (enter) {
    cp_pcsampling_range_end_period(0);
    atomic_fetch_add_explicit(&g->n_graph_ranges, 1, memory_order_relaxed);
    return;
  }
  uint64_t t = cp_clock_now_ns();
  restart(s, corr, 1); /* the launching thread: c is current */
  attribute_period(0, t);
}

/* A function's first launches (`first=K`, both modes) run in a range of
 * their own, as every launch does under Proton: the context's work is
 * synchronised and the open range closed (exact: the period ends on every
 * context) before the launch, a range opened for it, and at its exit that
 * range is closed, its samples tagged with the launch and attributed. A
 * short kernel then gets the samples it gets under Proton (docs/cupti.md).
 * The launching thread, `c` current; caller holds `lock`. */
static void first_enter(void *c, uint32_t corr) {
  sampled_ctx *s = cp_pcsampling_ctx_find(c);
  if (!s || !s->ok)
    return;
  uint64_t t = cp_clock_now_ns();
  if (g->opt.exact)
    cp_pcsampling_range_end_period(0);
  else
    restart(s, 0, 1); /* untagged: they wait for their kernel records */
  first_corr = corr;
  atomic_store_explicit(&g->own_ids[corr % OWN_IDS], corr,
                        memory_order_relaxed);
  atomic_fetch_add_explicit(&g->n_first, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&g->t_first_ns, cp_clock_now_ns() - t,
                            memory_order_relaxed);
}

/* At the exit the range is closed and left closed: the next launch on the
 * context opens it (reopen), so that a run of first launches costs one
 * Start and one Stop each, as under Proton. */
static void first_exit(void *c, uint32_t corr) {
  sampled_ctx *s = cp_pcsampling_ctx_find(c);
  first_corr = 0;
  if (!s || !s->ok)
    return;
  uint64_t t = cp_clock_now_ns();
  cp_context_own_calls_begin();
  g->api->cuCtxSynchronize(); /* the kernel's samples are this range's */
  cp_context_own_calls_end();
  cp_pcsampling_ctx_range(s, 0);
  fetch(s, corr);
  if (!s->started)
    atomic_store(&g->closed, 1);
  if (g->opt.exact)
    attribute_period(0, t);
  else
    cp_pcs_attribute_tagged(g->pcs);
  atomic_fetch_add_explicit(&g->t_first_ns, cp_clock_now_ns() - t,
                            memory_order_relaxed);
}

/* Any other launch's enter on a context whose range a first launch left
 * closed: opened again. `closed` stays set while some context is closed.
 * Caller holds `lock`. */
static void reopen(void *c) {
  sampled_ctx *s = cp_pcsampling_ctx_find(c);
  if (s && s->ok && !s->started)
    cp_pcsampling_ctx_range(s, 1);
  int any = 0;
  for (int i = 0; i < g->n_ctx; i++)
    any |= g->ctxs[i].ok && !g->ctxs[i].started;
  atomic_store(&g->closed, any);
}

/* Exact mode's launch enter, `fn` not a first launch: the range stays
 * open while each kernel function runs under one calling context; a
 * launch of a function that ran under another context in this period
 * ends the period first, so every sample's function names its context
 * (Proton's per-launch semantics for the profile, without a Start and a
 * Stop per launch). Caller holds `lock`. */
static void note_exact(uint32_t fn, const cp_launch_site *site, in_flight *f) {
  if (cp_pcs_note_launch(g->pcs, fn, site, 0) == 1) {
    cp_pcsampling_range_end_period(0);
    atomic_fetch_add_explicit(&g->n_splits, 1, memory_order_relaxed);
    /* another thread's launch in flight may hold fn's other site: then
     * both share the period, split by launches (counted apportioned) */
    cp_pcs_note_launch(g->pcs, fn, site, 1);
  }
  atomic_fetch_add_explicit(&g->n_noted, 1, memory_order_relaxed);
  if (f)
    *f = (in_flight){.used = 1, .fn = fn, .site = *site};
}

/* A named launch's enter; caller holds `lock`. */
static void launch_enter(void *c, uint32_t corr, const char *name, uint32_t fn,
                         const cp_launch_site *site, in_flight *f) {
  if (g->opt.first && cp_pcs_take_first(g->pcs, fn, g->opt.first)) {
    /* exact: in flight, so that a period another thread ends before its
     * exit notes it (its untagged samples then find its context) */
    if (g->opt.exact)
      *f = (in_flight){.used = 1, .fn = fn, .site = *site};
    first_enter(c, corr);
    return;
  }
  reopen(c);
  if (g->opt.exact)
    note_exact(fn, site, f);
  else
    *done_slot(name) = name;
}

/* Launch enter and exit, on the launching thread (docs/cupti.md): first
 * launches in both modes, exact mode's periods and graph launches.
 * Launches into a capturing stream run nothing. */
void cp_pcsampling_range_bracket(void *c, uint32_t corr, const char *name,
                    const cp_launch_site *site, int enter) {
  if (!c || !atomic_load_explicit(&g->on, memory_order_relaxed) ||
      cp_callbacks_capturing())
    return;
  int mine = !enter && first_corr && first_corr == corr;
  if (!g->opt.exact && !mine &&
      (!enter || (!atomic_load_explicit(&g->closed, memory_order_relaxed) &&
                  (!name || *done_slot(name) == name))))
    return; /* concurrent mode: first launches and closed ranges only */
  uint32_t fn = 0;
  if (name && cp_strtab_intern(name, strlen(name), &fn))
    name = NULL;
  pthread_mutex_lock(&g->lock);
  in_flight none = {0}, *f = my_flight();
  if (!f)
    f = &none;
  if (!enter && f->used && g->opt.exact)
    f->used = 0;
  if (mine)
    first_exit(c, corr);
  else if (!name && g->opt.exact)
    own_range(c, corr, enter);
  else if (enter && name && site)
    launch_enter(c, corr, name, fn, site, f);
  else if (enter)
    reopen(c);
  pthread_mutex_unlock(&g->lock);
}

