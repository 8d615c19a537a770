/* instrument/scope.c -- allocates scope ids for one kernel and validates that
 * record markers nest: every end closes the innermost open scope.
 *
 * Invariant: ids are dense (0..n-1) in order of first appearance, so the
 * table is identical for identical input; a scope's parent is the scope
 * open around its first start. Not a hot path; called by instrument/pass.c. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
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
} assigner;

static uint64_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* The id of name [s, s+n), adding it with `parent` when new. */
static int lookup(assigner *a, const char *s, size_t n, int32_t parent, uint32_t *id) {
  cp_scope_table *t = a->t;
  size_t i = hash_name(s, n) & (a->hcap - 1);
  for (; a->hash[i]; i = (i + 1) & (a->hcap - 1)) {
    const char *nm = t->names[a->hash[i] - 1];
    if (strlen(nm) == n && !memcmp(nm, s, n)) {
      *id = a->hash[i] - 1;
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
                          "kernel '%s': line %u: scope '%s' starts again while open since line %u",
                          a->kname, s->line, a->t->names[id], a->stack[d].line);
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
                          "kernel '%s': line %u: end of scope '%s' crosses scope '%s' "
                          "(started on line %u, still open); end inner scopes first",
                          a->kname, s->line, nm, a->t->names[in->id], in->line);
    }
  return cp_error_set(CPROTON_EPARSE, "kernel '%s': line %u: end of scope '%s' without a start",
                      a->kname, s->line, nm);
}

static int walk(assigner *a) {
  const cp_ptx_kernel *k = a->k;
  for (size_t i = 0; i < k->n_sites; i++) {
    const cp_ptx_site *s = &k->sites[i];
    if (s->kind != CP_SITE_RECORD)
      continue;
    int32_t parent = a->depth ? (int32_t)a->stack[a->depth - 1].id : -1;
    uint32_t id = 0;
    int rc = lookup(a, a->text + s->name_off, s->name_len, parent, &id);
    if (!rc)
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

int cp_scope_assign(const char *text, const cp_ptx_kernel *k, cp_scope_table *t) {
  memset(t, 0, sizeof *t);
  assigner a = {.text = text, .k = k, .t = t};
  size_t nr = k->n_records ? k->n_records : 1;
  a.hcap = 16;
  while (a.hcap < 2 * nr)
    a.hcap *= 2;
  size_t nlen = k->name_len < sizeof a.kname ? k->name_len : sizeof a.kname - 1;
  memcpy(a.kname, text + k->name_off, nlen);
  a.kname[nlen] = '\0';
  a.hash = calloc(a.hcap, sizeof *a.hash);
  a.stack = malloc(nr * sizeof *a.stack);
  t->names = calloc(nr, sizeof *t->names);
  t->parents = malloc(nr * sizeof *t->parents);
  t->site_scope = calloc(k->n_sites ? k->n_sites : 1, sizeof *t->site_scope);
  int rc = (!a.hash || !a.stack || !t->names || !t->parents || !t->site_scope)
               ? cp_error_set(CPROTON_ENOMEM, "out of memory assigning scopes")
               : walk(&a);
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
  memset(t, 0, sizeof *t);
}
