/* instrument/flow.c -- reads the labels, branches, exits and markers of one
 * kernel body in text order (see flow.h for why).
 *
 * Invariant: statements are split at ';' outside comments, except the line
 * directives (.loc, .file), which end at their newline; a statement may
 * start with labels ("name:"), a guard ("@%p" / "@!%p") and an opcode; only
 * bra, brx.idx (with its .branchtargets list), ret and exit matter here.
 * '{' and '}' open and close label scopes. Anything the reader cannot
 * resolve sets `indirect` with the construct and its offset, so the caller
 * checks text order instead of trusting a partial graph. Not a hot path;
 * called by instrument/scope.c once per kernel. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/grow.h"
#include "instrument/flow.h"

static int is_ident(int c) {
  return isalnum(c) || c == '_' || c == '$' || c == '.' || c == '%';
}

/* `arr` with room for element n (cap doubled when full), NULL when out of
 * memory (arr is then unchanged). */
static void *reserve(void *arr, size_t n, size_t *cap, size_t elem) {
  void *a;
  return cp_grow(arr, cap, n + 1, elem, 16, &a) ? NULL : a;
}

static int push(cp_flow *f, cp_flow_event e) {
  cp_flow_event *ev = reserve(f->ev, f->n, &f->cap, sizeof *ev);
  if (!ev)
    return cp_error_set(CPROTON_ENOMEM, "out of memory reading control flow");
  f->ev = ev;
  f->ev[f->n++] = e;
  return 0;
}

/* Skips blanks and comments from p (< end); braces are the caller's. */
static const char *skip(const char *p, const char *end) {
  while (p < end) {
    if (isspace((unsigned char)*p))
      p++;
    else if (p + 1 < end && p[0] == '/' && p[1] == '/')
      while (p < end && *p != '\n')
        p++;
    else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
      const char *q = p + 2;
      while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
        q++;
      p = q + 1 < end ? q + 2 : end;
    } else
      break;
  }
  return p;
}

static const char *ident_end(const char *p, const char *end) {
  while (p < end && is_ident((unsigned char)*p))
    p++;
  return p;
}

static int word_is(const char *w, size_t n, const char *s) {
  return n == strlen(s) && !memcmp(w, s, n);
}

/* Directives that end at the end of their line, not at a ';'. */
static const char *const line_directives[] = {".loc", ".file"};

/* The end of the statement starting at p: past its ';' (or `end`), or past
 * the line of a line directive. Comments inside it are skipped so a ';' in
 * them does not count. */
static const char *stmt_end(const char *p, const char *end) {
  const char *q = ident_end(p, end);
  for (size_t i = 0; i < sizeof line_directives / sizeof *line_directives; i++)
    if (word_is(p, (size_t)(q - p), line_directives[i])) {
      while (q < end && *q != '\n')
        q++;
      return q;
    }
  while (p < end && *p != ';') {
    if (p + 1 < end && p[0] == '/' && (p[1] == '/' || p[1] == '*'))
      p = skip(p, end);
    else
      p++;
  }
  return p < end ? p + 1 : end;
}

/* Marks the body as not followable at p (the first reason is kept). */
static void cannot_follow(const char *text, const char *p, cp_flow *f, const char *why) {
  if (!f->indirect) {
    f->why = why;
    f->why_off = (size_t)(p - text);
  }
  f->indirect = 1;
}

/* '{' opens block n_blocks inside `*cur`; '}' returns to its parent. */
static int open_block(cp_flow *f, uint32_t *cur) {
  uint32_t *bp = reserve(f->block_parent, f->n_blocks, &f->cap_blocks, sizeof *bp);
  if (!bp)
    return cp_error_set(CPROTON_ENOMEM, "out of memory reading control flow");
  f->block_parent = bp;
  f->block_parent[f->n_blocks] = *cur;
  *cur = (uint32_t)f->n_blocks++;
  return 0;
}

/* A label at p ("name:"): pushed, *next set past it. 0 when none. */
static int label(const char *text, const char *p, const char *end, cp_flow *f, uint32_t block,
                 const char **next, int *rc) {
  const char *q = ident_end(p, end);
  if (q == p || q >= end || *q != ':')
    return 0;
  *rc = push(f, (cp_flow_event){.kind = CP_FLOW_LABEL, .off = (size_t)(p - text),
                                .name_off = (size_t)(p - text), .name_len = (size_t)(q - p),
                                .target = -1, .block = block});
  *next = q + 1;
  return 1;
}

/* Whether block `outer` is `inner` or encloses it. */
static int encloses(const cp_flow *f, uint32_t outer, uint32_t inner) {
  for (;; inner = f->block_parent[inner]) {
    if (inner == outer)
      return 1;
    if (inner == 0)
      return 0;
  }
}

/* brx.idx at p (opcode ends at q): one branch per label of its
 * .branchtargets list, which PTX declares in the function before use. */
static int brx(const char *text, const char *p, const char *q, const char *end, cp_flow *f,
               uint32_t block, int cond) {
  if (!word_is(p, (size_t)(q - p), "brx.idx") && !word_is(p, (size_t)(q - p), "brx.idx.uni")) {
    cannot_follow(text, p, f, "an unknown indirect branch");
    return 0;
  }
  const char *t = memchr(q, ',', (size_t)(end - q));
  t = t ? skip(t + 1, end) : end;
  const char *te = ident_end(t, end);
  const cp_flow_event *list = NULL;
  for (size_t i = f->n; !list && i-- > 0;) {
    const cp_flow_event *l = &f->ev[i];
    if (l->kind == CP_FLOW_LABEL && l->list_off && l->name_len == (size_t)(te - t) &&
        !memcmp(text + l->name_off, t, l->name_len) && encloses(f, l->block, block))
      list = l;
  }
  if (!list || te == t) {
    cannot_follow(text, p, f,
                  "an indirect branch (brx.idx) without a .branchtargets list before it");
    return 0;
  }
  uint32_t lblock = list->block;
  const char *a = skip(text + list->list_off, text + list->list_end);
  end = text + list->list_end;
  int rc = 0, any = 0;
  while (!rc && a < end && *a != ';') {
    const char *ae = ident_end(a, end);
    if (ae == a) {
      cannot_follow(text, a, f, "a .branchtargets list the reader cannot parse");
      return 0;
    }
    const char *next = skip(ae, end);
    int last = next >= end || *next != ',';
    rc = push(f, (cp_flow_event){.kind = CP_FLOW_BRANCH, .cond = last ? cond : 1,
                                 .off = (size_t)(p - text), .name_off = (size_t)(a - text),
                                 .name_len = (size_t)(ae - a), .target = -1, .block = lblock});
    any = 1;
    a = last ? next : skip(next + 1, end);
  }
  if (!rc && !any)
    cannot_follow(text, p, f, "a .branchtargets list the reader cannot parse");
  return rc;
}

/* One statement at p (labels already taken): the guarded opcode. */
static int statement(const char *text, const char *p, const char *end, cp_flow *f,
                     uint32_t block) {
  const char *q;
  int cond = 0;
  if (p < end && *p == '@') {
    cond = 1;
    p = ident_end(p + 1 + (p + 1 < end && p[1] == '!'), end);
    p = skip(p, end);
  }
  q = ident_end(p, end);
  size_t n = (size_t)(q - p);
  if (word_is(p, n, "ret") || word_is(p, n, "ret.uni") || word_is(p, n, "exit"))
    return push(f, (cp_flow_event){.kind = CP_FLOW_EXIT, .cond = cond, .off = (size_t)(p - text),
                                   .target = -1});
  if (word_is(p, n, ".branchtargets")) {
    if (f->n && f->ev[f->n - 1].kind == CP_FLOW_LABEL && f->ev[f->n - 1].block == block)
      f->ev[f->n - 1].list_off = (size_t)(q - text),
      f->ev[f->n - 1].list_end = (size_t)(end - text);
    return 0;
  }
  if (n >= 3 && !memcmp(p, "brx", 3))
    return brx(text, p, q, end, f, block, cond);
  if (!word_is(p, n, "bra") && !word_is(p, n, "bra.uni"))
    return 0;
  const char *t = skip(q, end), *te = ident_end(t, end);
  return push(f, (cp_flow_event){.kind = CP_FLOW_BRANCH, .cond = cond, .off = (size_t)(p - text),
                                 .name_off = (size_t)(t - text), .name_len = (size_t)(te - t),
                                 .target = -1, .block = block});
}

/* Resolves every branch to its label event (labels are few per kernel;
 * a sorted index keeps thousands of branches cheap). */
static _Thread_local const char *g_text;
static _Thread_local const cp_flow_event *g_ev;
static int name_cmp(const char *text, const cp_flow_event *x, const cp_flow_event *y) {
  size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
  int c = memcmp(text + x->name_off, text + y->name_off, n);
  return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}
static int by_name(const void *a, const void *b) {
  return name_cmp(g_text, &g_ev[*(const size_t *)a], &g_ev[*(const size_t *)b]);
}

/* The label named like branch e in e's block or the innermost enclosing
 * block that has one; idx[lo..hi) are the labels of that name. -1: none. */
static int64_t visible(const cp_flow *f, const cp_flow_event *e, const size_t *idx, size_t lo,
                       size_t hi) {
  for (uint32_t b = e->block;; b = f->block_parent[b]) {
    for (size_t i = lo; i < hi; i++)
      if (f->ev[idx[i]].block == b)
        return (int64_t)idx[i];
    if (b == 0)
      return -1;
  }
}

static int resolve(const char *text, cp_flow *f) {
  size_t nl = 0;
  for (size_t i = 0; i < f->n; i++)
    nl += f->ev[i].kind == CP_FLOW_LABEL;
  size_t *idx = malloc((nl ? nl : 1) * sizeof *idx);
  if (!idx)
    return cp_error_set(CPROTON_ENOMEM, "out of memory reading control flow");
  nl = 0;
  for (size_t i = 0; i < f->n; i++)
    if (f->ev[i].kind == CP_FLOW_LABEL)
      idx[nl++] = i;
  g_text = text, g_ev = f->ev; /* qsort has no context argument in C11 */
  qsort(idx, nl, sizeof *idx, by_name);
  for (size_t i = 0; i < f->n; i++) {
    cp_flow_event *e = &f->ev[i];
    if (e->kind != CP_FLOW_BRANCH)
      continue;
    size_t lo = 0, hi = nl;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (name_cmp(text, &f->ev[idx[mid]], e) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    hi = lo;
    while (hi < nl && name_cmp(text, &f->ev[idx[hi]], e) == 0)
      hi++;
    e->target = visible(f, e, idx, lo, hi);
    if (e->target < 0)
      cannot_follow(text, text + e->off, f, "a branch to a label not visible from it");
  }
  free(idx);
  return 0;
}

/* Pushes the record markers at or before offset `at`. */
static int records_to(const cp_ptx_kernel *k, size_t at, size_t *site, cp_flow *f) {
  int rc = 0;
  for (; !rc && *site < k->n_sites && k->sites[*site].at <= at; ++*site)
    if (k->sites[*site].kind == CP_SITE_RECORD)
      rc = push(f, (cp_flow_event){.kind = CP_FLOW_RECORD, .site = *site,
                                   .off = k->sites[*site].at, .target = -1});
  return rc;
}

int cp_flow_read(const char *text, const cp_ptx_kernel *k, cp_flow *f) {
  memset(f, 0, sizeof *f);
  if (!k->body_end || k->body_end < k->prologue_at) {
    cannot_follow(text, text + k->prologue_at, f, "a kernel body the reader cannot delimit");
    return 0;
  }
  const char *p = text + k->prologue_at, *end = text + k->body_end;
  size_t site = 0;
  uint32_t cur = 0;
  int rc = open_block(f, &cur); /* block 0: the body */
  while (!rc && (p = skip(p, end)) < end) {
    rc = records_to(k, (size_t)(p - text), &site, f);
    const char *e;
    if (rc)
      break;
    if (*p == '{' || *p == '}') {
      if (*p == '{')
        rc = open_block(f, &cur);
      else if (cur)
        cur = f->block_parent[cur];
      else
        cannot_follow(text, p, f, "a '}' that closes no block");
      p++;
      continue;
    }
    if (label(text, p, end, f, cur, &e, &rc)) { /* markers may follow it */
      p = e;
      continue;
    }
    e = stmt_end(p, end);
    if (!rc)
      rc = statement(text, p, e, f, cur);
    p = e;
  }
  if (!rc)
    rc = records_to(k, SIZE_MAX, &site, f);
  if (!rc)
    rc = resolve(text, f);
  if (rc)
    cp_flow_free(f);
  return rc;
}

uint32_t cp_flow_line(const char *text, size_t off) {
  uint32_t line = 1;
  for (size_t i = 0; i < off; i++)
    line += text[i] == '\n';
  return line;
}

void cp_flow_free(cp_flow *f) {
  free(f->ev);
  free(f->block_parent);
  memset(f, 0, sizeof *f);
}
