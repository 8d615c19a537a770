/* instrument/scope.c -- allocates scope ids for one kernel and validates that
 * record markers nest: every end closes the innermost open scope.
 *
 * Nesting is checked along control-flow paths (instrument/flow.c), since a
 * compiler may order an RAII scope's end markers on different paths either
 * way in the text; every reachable marker sees one stack of open scopes.
 * A body whose flow cannot be followed (brx.idx, a branch to a label the
 * reader cannot find) is checked in text order, and the table carries a note
 * saying why: an unreachable marker is an error only when every branch was
 * followed.
 *
 * Invariant: ids are dense (0..n-1) in order of first appearance, so the
 * table is identical for identical input; a scope's parent is the scope
 * open around its first start. Not a hot path; called by instrument/pass.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"
#include "core/check.h"
#include "core/error.h"
#include "cproton/instrument.h"
#include "instrument/flow.h"
#include "instrument/layout.h"
#include "instrument/scope.h"

typedef struct open_scope {
  uint32_t id;
  uint32_t line;
} open_scope;

typedef struct assigner {
  const char *text;
  const cp_ptx_kernel *k;
  cp_scope_table *t;
  uint32_t *hash; /* open addressing: id + 1, 0 = empty */
  size_t hcap;
  open_scope *stack;
  size_t depth;
  char kname[128];
  char where[320]; /* a site's position for messages */
} assigner;

/* "line L (file.py:S)" of site `s` (the source line when the PTX has it). */
static const char *where(assigner *a, const cp_ptx_site *s) {
  return cp_ptx_site_where(a->text, s, a->where, sizeof a->where);
}


static int is_event_id(const cp_scope_table *t, uint32_t id) {
  return t->parents[id] == CPROTON_SCOPE_PARENT_EVENT;
}

/* The id of site `st`'s name, adding it with `parent` when new (events get
 * CPROTON_SCOPE_PARENT_EVENT); a name is either a scope or an event. */
static int lookup(assigner *a, const cp_ptx_site *st, int32_t parent, uint32_t *id) {
  cp_scope_table *t = a->t;
  const char *s = a->text + st->name_off;
  size_t n = st->name_len;
  if (st->is_event)
    parent = CPROTON_SCOPE_PARENT_EVENT;
  size_t i = cp_fnv_bytes(s, n) & (a->hcap - 1);
  for (; a->hash[i]; i = (i + 1) & (a->hcap - 1)) {
    const char *nm = t->names[a->hash[i] - 1];
    if (strlen(nm) == n && !memcmp(nm, s, n)) {
      *id = a->hash[i] - 1;
      CP_ASSERT(*id < t->n);
      if (is_event_id(t, *id) != !!st->is_event)
        return cp_error_set(CPROTON_EPARSE, "kernel '%s': %s: '%s' is used both as a scope and as an event",
                            a->kname, where(a, st), nm);
      return 0;
    }
  }
  if (t->n >= CP_LAYOUT_MAX_SCOPES)
    return cp_error_set(CPROTON_ELIMIT, "kernel '%s': more than %u scopes", a->kname, CP_LAYOUT_MAX_SCOPES);
  char *copy = malloc(n + 1);
  if (!copy)
    return cp_error_set(CPROTON_ENOMEM, "out of memory assigning scopes");
  memcpy(copy, s, n);
  copy[n] = '\0';
  CP_ASSERT(t->n < a->hcap / 2); /* hcap >= 2 x sites: probes end */
  t->names[t->n] = copy;
  t->parents[t->n] = parent;
  *id = t->n++;
  a->hash[i] = *id + 1;
  return 0;
}

static int on_start(assigner *a, const cp_ptx_site *s, uint32_t id) {
  for (size_t d = 0; d < a->depth; d++)
    if (a->stack[d].id == id)
      return cp_error_set(CPROTON_EPARSE,
                          "kernel '%s': %s: scope '%s' starts again while open since line %u",
                          a->kname, where(a, s), a->t->names[id], a->stack[d].line);
  a->stack[a->depth].id = id;
  a->stack[a->depth].line = s->line;
  a->depth++;
  return 0;
}

static int on_end(assigner *a, const cp_ptx_site *s, uint32_t id) {
  const char *nm = a->t->names[id];
  if (a->depth && a->stack[a->depth - 1].id == id) {
    a->depth--;
    return 0;
  }
  for (size_t d = 0; d < a->depth; d++)
    if (a->stack[d].id == id) {
      const open_scope *in = &a->stack[a->depth - 1];
      return cp_error_set(CPROTON_EPARSE,
                          "kernel '%s': %s: end of scope '%s' crosses scope '%s' "
                          "(started on line %u, still open); end inner scopes first",
                          a->kname, where(a, s), nm, a->t->names[in->id], in->line);
    }
  return cp_error_set(CPROTON_EPARSE, "kernel '%s': %s: end of scope '%s' without a start",
                      a->kname, where(a, s), nm);
}

static int walk(assigner *a) {
  const cp_ptx_kernel *k = a->k;
  for (size_t i = 0; i < k->n_sites; i++) {
    const cp_ptx_site *s = &k->sites[i];
    if (s->kind != CP_SITE_RECORD)
      continue;
    int32_t parent = a->depth ? (int32_t)a->stack[a->depth - 1].id : -1;
    uint32_t id = 0;
    int rc = lookup(a, s, parent, &id);
    if (!rc && !s->is_event) /* events stay outside the nesting */
      rc = s->is_end ? on_end(a, s, id) : on_start(a, s, id);
    if (rc)
      return rc;
    a->t->site_scope[i] = id;
  }
  if (a->depth) {
    const open_scope *o = &a->stack[a->depth - 1];
    return cp_error_set(CPROTON_EPARSE, "kernel '%s': line %u: scope '%s' is never ended",
                        a->kname, o->line, a->t->names[o->id]);
  }
  return 0;
}

/* ---- control-flow walk -------------------------------------------------- */

typedef struct block_state {
  int seen, conflict;
  size_t depth;
  open_scope *stack;
} block_state;

typedef struct flow_walk {
  assigner *a;
  const cp_flow *f;
  block_state *bs;
  size_t *work, n_work;
  size_t *parent_site; /* per scope: the start site that set its parent */
  uint8_t *reached;    /* per site */
  int conflict;        /* current path joined differing stacks */
} flow_walk;

static int same_stack(const block_state *b, const assigner *a) {
  if (b->depth != a->depth)
    return 0;
  for (size_t d = 0; d < a->depth; d++)
    if (b->stack[d].id != a->stack[d].id)
      return 0;
  return 1;
}

/* Records the current stack as event i's entry state; queues it when new
 * or when paths with different stacks meet there. */
static int enqueue(flow_walk *w, size_t i) {
  block_state *b = &w->bs[i];
  assigner *a = w->a;
  if (b->seen && (b->conflict || (!w->conflict && same_stack(b, a))))
    return 0;
  if (b->seen) {
    b->conflict = 1;
  } else {
    b->seen = 1;
    b->conflict = w->conflict;
    b->depth = a->depth;
    b->stack = malloc((a->depth ? a->depth : 1) * sizeof *b->stack);
    if (!b->stack)
      return cp_error_set(CPROTON_ENOMEM, "out of memory checking scopes");
    memcpy(b->stack, a->stack, a->depth * sizeof *b->stack);
  }
  w->work[w->n_work++] = i;
  return 0;
}

static int flow_record(flow_walk *w, size_t join, const cp_ptx_site *s, size_t site) {
  assigner *a = w->a;
  uint32_t id = a->t->site_scope[site];
  w->reached[site] = 1;
  if (s->is_event) /* outside the nesting: any stack is fine */
    return 0;
  if (w->conflict)
    return cp_error_set(CPROTON_EPARSE,
                        "kernel '%s': %s: marker of scope '%s' is reached with different "
                        "scopes open on paths that meet at line %u",
                        a->kname, where(a, s), a->t->names[id], cp_flow_line(a->text, join));
  if (!s->is_end && site < w->parent_site[id]) {
    w->parent_site[id] = site;
    a->t->parents[id] = a->depth ? (int32_t)a->stack[a->depth - 1].id : -1;
  }
  return s->is_end ? on_end(a, s, id) : on_start(a, s, id);
}

/* Walks the block starting at event i until it ends. */
static int flow_block(flow_walk *w, size_t i) {
  const cp_flow *f = w->f;
  block_state *b = &w->bs[i];
  assigner *a = w->a;
  a->depth = b->depth;
  memcpy(a->stack, b->stack, b->depth * sizeof *a->stack);
  w->conflict = b->conflict;
  size_t join = i < f->n ? f->ev[i].off : 0;
  for (size_t j = i; j < f->n; j++) {
    const cp_flow_event *e = &f->ev[j];
    if (e->kind == CP_FLOW_LABEL && j != i)
      return enqueue(w, j); /* falls through into the next block */
    if (e->kind == CP_FLOW_RECORD) {
      int rc = flow_record(w, join, &a->k->sites[e->site], e->site);
      if (rc)
        return rc;
    } else if (e->kind == CP_FLOW_BRANCH) {
      int rc = enqueue(w, (size_t)e->target);
      return rc || !e->cond ? rc : enqueue(w, j + 1);
    } else if (e->kind == CP_FLOW_EXIT) {
      return e->cond ? enqueue(w, j + 1) : 0;
    }
  }
  return 0;
}

/* After the walk: markers no path reaches, scopes that never end. */
static int flow_finish(flow_walk *w) {
  assigner *a = w->a;
  const cp_ptx_kernel *k = a->k;
  uint8_t *ended = calloc(a->t->n ? a->t->n : 1, 1);
  if (!ended)
    return cp_error_set(CPROTON_ENOMEM, "out of memory checking scopes");
  for (size_t i = 0; i < k->n_sites; i++)
    if (k->sites[i].kind == CP_SITE_RECORD && k->sites[i].is_end)
      ended[a->t->site_scope[i]] = 1;
  int rc = 0;
  for (size_t i = 0; !rc && i < k->n_sites; i++) {
    const cp_ptx_site *s = &k->sites[i];
    if (s->kind != CP_SITE_RECORD)
      continue;
    const char *nm = a->t->names[a->t->site_scope[i]];
    if (!w->reached[i])
      rc = cp_error_set(CPROTON_EPARSE, "kernel '%s': %s: marker of %s '%s' is unreachable",
                        a->kname, where(a, s), s->is_event ? "event" : "scope", nm);
    else if (!s->is_end && !s->is_event && !ended[a->t->site_scope[i]])
      rc = cp_error_set(CPROTON_EPARSE, "kernel '%s': %s: scope '%s' is never ended", a->kname,
                        where(a, s), nm);
  }
  free(ended);
  return rc;
}

static int walk_flow(assigner *a, const cp_flow *f) {
  const cp_ptx_kernel *k = a->k;
  for (size_t i = 0; i < k->n_sites; i++) { /* ids in text order */
    const cp_ptx_site *s = &k->sites[i];
    if (s->kind != CP_SITE_RECORD)
      continue;
    int rc = lookup(a, s, -1, &a->t->site_scope[i]);
    if (rc)
      return rc;
  }
  flow_walk w = {.a = a, .f = f};
  w.bs = calloc(f->n + 1, sizeof *w.bs);
  w.work = malloc(2 * (f->n + 1) * sizeof *w.work);
  w.parent_site = malloc((a->t->n ? a->t->n : 1) * sizeof *w.parent_site);
  w.reached = calloc(k->n_sites ? k->n_sites : 1, 1);
  int rc = (!w.bs || !w.work || !w.parent_site || !w.reached)
               ? cp_error_set(CPROTON_ENOMEM, "out of memory checking scopes")
               : 0;
  for (uint32_t s = 0; !rc && s < a->t->n; s++)
    w.parent_site[s] = SIZE_MAX;
  a->depth = 0;
  if (!rc)
    rc = enqueue(&w, 0);
  while (!rc && w.n_work)
    rc = flow_block(&w, w.work[--w.n_work]);
  if (!rc)
    rc = flow_finish(&w);
  for (size_t i = 0; w.bs && i <= f->n; i++)
    free(w.bs[i].stack);
  free(w.bs), free(w.work), free(w.parent_site), free(w.reached);
  return rc;
}

int cp_scope_has_events(const cp_scope_table *t) {
  for (uint32_t i = 0; i < t->n; i++)
    if (is_event_id(t, i))
      return 1;
  return 0;
}

int cp_scope_add_note(cp_scope_table *t, const char *text) {
  const char *old = t->note ? t->note : "";
  size_t n = strlen(old) + strlen(text) + 3;
  char *note = malloc(n);
  if (!note)
    return cp_error_set(CPROTON_ENOMEM, "out of memory noting a kernel warning");
  snprintf(note, n, "%s%s%s", old, *old ? "; " : "", text);
  free(t->note);
  t->note = note;
  return 0;
}

/* Says in t->note why nesting falls back to text order. */
static int note_fallback(assigner *a, const cp_flow *f) {
  char why[512];
  snprintf(why, sizeof why, "kernel '%s': line %u: %s; scope nesting is checked in text order", a->kname,
           cp_flow_line(a->text, f->why_off), f->why);
  return cp_scope_add_note(a->t, why);
}

/* Control flow when it can be followed, else text order (and a note: a
 * reader that cannot follow the flow must not call markers unreachable). */
static int check_nesting(assigner *a) {
  cp_flow f;
  int rc = cp_flow_read(a->text, a->k, &f);
  if (rc)
    return rc;
  if (f.indirect) {
    rc = note_fallback(a, &f);
    if (!rc)
      rc = walk(a);
  } else {
    rc = walk_flow(a, &f);
    a->t->flow_verified = rc == 0;
  }
  cp_flow_free(&f);
  return rc;
}

/* Every event needs a start and an end somewhere in the kernel (where they
 * are is free: they pair at decode time, across warps if need be). */
static int check_events(assigner *a) {
  const cp_ptx_kernel *k = a->k;
  uint32_t n = a->t->n ? a->t->n : 1;
  size_t *first[2] = {malloc(n * sizeof(size_t)), malloc(n * sizeof(size_t))};
  int rc = !first[0] || !first[1] ? cp_error_set(CPROTON_ENOMEM, "out of memory checking events") : 0;
  for (uint32_t id = 0; !rc && id < a->t->n; id++)
    first[0][id] = first[1][id] = SIZE_MAX;
  for (size_t i = 0; !rc && i < k->n_sites; i++) {
    const cp_ptx_site *s = &k->sites[i];
    if (s->kind == CP_SITE_RECORD && s->is_event && first[s->is_end][a->t->site_scope[i]] == SIZE_MAX)
      first[s->is_end][a->t->site_scope[i]] = i;
  }
  for (uint32_t id = 0; !rc && id < a->t->n; id++) {
    if (!is_event_id(a->t, id) || (first[0][id] != SIZE_MAX) == (first[1][id] != SIZE_MAX))
      continue;
    int has_start = first[0][id] != SIZE_MAX;
    rc = cp_error_set(CPROTON_EPARSE, "kernel '%s': %s: event '%s' is %s but never %s anywhere in the kernel",
                      a->kname, where(a, &k->sites[has_start ? first[0][id] : first[1][id]]), a->t->names[id],
                      has_start ? "started" : "ended", has_start ? "ended" : "started");
  }
  free(first[0]), free(first[1]);
  return rc;
}

int cp_scope_assign(const char *text, const cp_ptx_kernel *k, cp_scope_table *t) {
  memset(t, 0, sizeof *t);
  assigner a = {.text = text, .k = k, .t = t};
  size_t nr = k->n_records ? k->n_records : 1;
  a.hcap = 16;
  while (a.hcap < 2 * nr)
    a.hcap *= 2;
  size_t nlen = k->h.name_len < sizeof a.kname ? k->h.name_len : sizeof a.kname - 1;
  memcpy(a.kname, text + k->h.name_off, nlen);
  a.kname[nlen] = '\0';
  a.hash = calloc(a.hcap, sizeof *a.hash);
  a.stack = malloc(nr * sizeof *a.stack);
  t->names = calloc(nr, sizeof *t->names);
  t->parents = malloc(nr * sizeof *t->parents);
  t->site_scope = calloc(k->n_sites ? k->n_sites : 1, sizeof *t->site_scope);
  int rc = (!a.hash || !a.stack || !t->names || !t->parents || !t->site_scope)
               ? cp_error_set(CPROTON_ENOMEM, "out of memory assigning scopes")
               : check_nesting(&a);
  if (!rc)
    rc = check_events(&a);
  free(a.hash);
  free(a.stack);
  if (rc)
    cp_scope_free(t);
  return rc;
}

void cp_scope_free(cp_scope_table *t) {
  for (uint32_t i = 0; t->names && i < t->n; i++)
    free(t->names[i]);
  free(t->names);
  free(t->parents);
  free(t->site_scope);
  free(t->note);
  memset(t, 0, sizeof *t);
}
