/* instrument/ptx_read.c -- reads PTX text for the pass: kernel entries
 * (name, last .param, .reqntid/.maxntid, where the prologue goes), record
 * markers and exits, all as byte offsets into the caller's text.
 *
 * Invariant: the reader never copies or changes the input; every site it
 * reports is an offset into it, in increasing order, so the writer can copy
 * the untouched bytes verbatim. Comments are blanked in a per-line copy of
 * the same length, so offsets in the copy are offsets in the input.
 * Input is untrusted: sizes, counts and names are bounded, and every error
 * names the line. Not a hot path; called by instrument/pass.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/error.h"
#include "core/grow.h"
#include "instrument/ptx_header.h"
#include "instrument/ptx_read.h"
#include "instrument/text.h"

typedef enum { ST_TOP, ST_HEADER, ST_BODY } rstate;

typedef struct reader {
  const char *s;
  size_t n;
  uint32_t lineno;
  char *code; /* blanked copy of the current line */
  size_t code_cap;
  int in_block; /* inside a block comment */
  int depth;    /* brace depth */
  rstate st;
  int is_entry;
  int paren;      /* paren depth while in a header */
  size_t hstart;  /* header start offset */
  cp_text header; /* blanked header text, same offsets from hstart */
  int pending;    /* prologue offset not found yet */
  cp_ptx_kernel cur;
  cp_ptx_module *m;
  uint32_t loc_file, loc_line; /* the last `.loc` directive of the body */
  struct src_file {
    uint32_t idx;
    size_t off, len; /* basename */
  } *files;          /* `.file` directives (Triton writes them after the code) */
  size_t n_files, cap_files;
} reader;

/* Blanks comments of line [b, e) into r->code; *cmt gets the offset (from b)
 * of a line comment's "//" or -1. Strings are kept as they are. */
static int blank_line(reader *r, size_t b, size_t e, long *cmt) {
  size_t len = e - b;
  if (len + 1 > r->code_cap) {
    size_t cap = len + 64;
    char *p = realloc(r->code, cap);
    if (!p)
      return cp_error_set(CPROTON_ENOMEM, "out of memory reading PTX");
    r->code = p;
    r->code_cap = cap;
  }
  const char *s = r->s + b;
  int in_str = 0;
  *cmt = -1;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (r->in_block) {
      r->code[i] = ' ';
      if (c == '*' && i + 1 < len && s[i + 1] == '/') {
        r->code[++i] = ' ';
        r->in_block = 0;
      }
    } else if (in_str) {
      r->code[i] = c;
      in_str = c != '"';
    } else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
      *cmt = (long)i;
      memset(r->code + i, ' ', len - i);
      break;
    } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
      r->code[i] = r->code[i + 1] = ' ';
      r->in_block = 1;
      i++;
    } else {
      r->code[i] = c;
      in_str = c == '"';
    }
  }
  r->code[len] = '\0';
  return 0;
}

static int push_site(reader *r, const cp_ptx_site *site) {
  cp_ptx_kernel *k = &r->cur;
  if (k->n_sites >= CP_PTX_MAX_SITES)
    return cp_error_set(CPROTON_ELIMIT, "line %u: more than %u markers/exits in one kernel",
                        r->lineno, CP_PTX_MAX_SITES);
  void *p;
  if (k->n_sites == k->cap_sites) {
    if (cp_grow(k->sites, &k->cap_sites, k->n_sites + 1, sizeof *k->sites, 16, &p))
      return cp_error_set(CPROTON_ENOMEM, "out of memory reading PTX");
    k->sites = p;
  }
  /* sites in increasing order, so the writer copies the bytes between */
  CP_ASSERT(k->n_sites == 0 || k->sites[k->n_sites - 1].at <= site->at);
  k->sites[k->n_sites++] = *site;
  return 0;
}

static int name_char_ok(int c) {
  return c > 32 && c < 127 && c != '"' && c != '\\';
}

/* Parses "// @cproton record start|end NAME" (or "proton.record"; "event"
 * and "proton.event" for events) at line offset b + cmt. */
static int read_marker(reader *r, size_t b, size_t e, long cmt, int *found) {
  const char *s = r->s + b + cmt + 2, *end = r->s + e;
  *found = 0;
  while (s < end && (*s == ' ' || *s == '\t'))
    s++;
  if ((size_t)(end - s) < 8 || memcmp(s, "@cproton", 8) != 0)
    return 0;
  *found = 1;
  s += 8;
  const char *w[4];
  size_t wl[4];
  int nw = 0;
  while (s < end) {
    while (s < end && isspace((unsigned char)*s))
      s++;
    if (s == end)
      break;
    if (nw == 4)
      return cp_error_set(CPROTON_EPARSE, "line %u: trailing text after the scope name of a @cproton marker", r->lineno);
    w[nw] = s;
    while (s < end && !isspace((unsigned char)*s))
      s++;
    wl[nw] = (size_t)(s - w[nw]);
    nw++;
  }
  /* a bare "@cproton" has no word to compare: refuse before reading any */
  if (nw != 3)
    return cp_error_set(CPROTON_EPARSE,
                        "line %u: malformed marker; expected '// @cproton record|event start|end <name>'", r->lineno);
  int is_end = wl[1] == 3 && !memcmp(w[1], "end", 3);
  int is_start = wl[1] == 5 && !memcmp(w[1], "start", 5);
  /* "proton.record" (Proton's op name, what the Triton front end writes so
   * that IR dumps show record ops as Proton's do) is the same op */
  int is_op = (wl[0] == 6 && !memcmp(w[0], "record", 6)) || (wl[0] == 13 && !memcmp(w[0], "proton.record", 13));
  int is_event = (wl[0] == 5 && !memcmp(w[0], "event", 5)) || (wl[0] == 12 && !memcmp(w[0], "proton.event", 12));
  if (!(is_op || is_event) || !(is_end || is_start))
    return cp_error_set(CPROTON_EPARSE,
                        "line %u: malformed marker; expected '// @cproton record|event start|end <name>'", r->lineno);
  if (wl[2] > CP_PTX_MAX_NAME)
    return cp_error_set(CPROTON_ELIMIT, "line %u: scope name longer than %u bytes", r->lineno, CP_PTX_MAX_NAME);
  for (size_t i = 0; i < wl[2]; i++)
    if (!name_char_ok((unsigned char)w[2][i]))
      return cp_error_set(CPROTON_EPARSE, "line %u: scope name with a quote, backslash or non-ASCII byte", r->lineno);
  cp_ptx_site site = {.kind = CP_SITE_RECORD, .line = r->lineno, .is_end = is_end, .is_event = is_event,
                      .src_file = r->loc_file, .src_line = r->loc_line,
                      .name_off = (size_t)(w[2] - r->s), .name_len = wl[2]};
  site.at = e < r->n ? e + 1 : e;
  if (r->st != ST_BODY || !r->is_entry)
    return cp_error_set(CPROTON_EUNSUPPORTED,
                        "line %u: marker outside a kernel entry (%s); markers must be inlined into the .entry (use __forceinline__)",
                        r->lineno, r->st == ST_BODY ? "in a .func" : "at module scope");
  if (r->pending) {
    r->cur.prologue_at = b;
    r->pending = 0;
  }
  r->cur.n_records++;
  return push_site(r, &site);
}

/* Finds exits ("ret", "ret.uni", "exit", maybe predicated) on a body line. */
static int read_exits(reader *r, size_t b) {
  const char *code = r->code;
  const char *p = code;
  while (*p) {
    const char *st = cp_ptx_skip_ws(p);
    const char *q = st;
    while (cp_ptx_is_ident((unsigned char)*q))
      q++;
    if (q > st && *q == ':') /* a label */
      st = cp_ptx_skip_ws(q + 1);
    const char *semi = strchr(st, ';');
    const char *op = st, *pred = NULL;
    size_t pred_len = 0;
    int neg = 0;
    if (*op == '@') {
      op++;
      if (*op == '!') {
        neg = 1;
        op++;
      }
      pred = op;
      while (cp_ptx_is_ident((unsigned char)*op) || *op == '%')
        op++;
      pred_len = (size_t)(op - pred);
      op = cp_ptx_skip_ws(op);
    }
    const char *oe = op;
    while (cp_ptx_is_ident((unsigned char)*oe))
      oe++;
    size_t ol = (size_t)(oe - op);
    int is_exit = (ol == 3 && !memcmp(op, "ret", 3)) || (ol == 7 && !memcmp(op, "ret.uni", 7)) ||
                  (ol == 4 && !memcmp(op, "exit", 4));
    if (is_exit) {
      if (!semi)
        return cp_error_set(CPROTON_EPARSE, "line %u: '%.*s' without ';'", r->lineno, (int)ol, op);
      int depth = r->depth; /* braces before the exit on this line count too */
      for (const char *c = code; c < st; c++)
        depth += (*c == '{') - (*c == '}');
      cp_ptx_site site = {.kind = CP_SITE_EXIT, .line = r->lineno, .at = b + (size_t)(st - code),
                          .after = b + (size_t)(semi - code) + 1, .pred_neg = neg,
                          .nested = depth > 1};
      if (pred) {
        site.pred_off = b + (size_t)(pred - code);
        site.pred_len = pred_len;
      }
      int rc = push_site(r, &site);
      if (rc)
        return rc;
    }
    if (!semi)
      break;
    p = semi + 1;
  }
  return 0;
}

/* Bytes of a ".shared ... name[N]" declaration (element size from .bN). */
static uint32_t shared_bytes(const char *code) {
  const char *sh = strstr(code, ".shared");
  if (!sh || strstr(code, ".extern"))
    return 0;
  uint32_t elem = 1;
  const char *t = strstr(sh, ".b");
  if (!t)
    t = strstr(sh, ".u");
  if (t && isdigit((unsigned char)t[2]))
    elem = (uint32_t)strtoul(t + 2, NULL, 10) / 8;
  const char *br = strchr(sh, '[');
  if (!br)
    return elem ? elem : 1;
  unsigned long n = strtoul(br + 1, NULL, 10);
  if (n > (1ul << 24))
    n = 1ul << 24;
  return (uint32_t)n * (elem ? elem : 1);
}

static int first_word_is_decl(const char *code) {
  const char *p = cp_ptx_skip_ws(code);
  static const char *const decls[] = {".reg", ".local", ".shared", ".param", ".const", NULL};
  for (int i = 0; decls[i]; i++) {
    size_t l = strlen(decls[i]);
    if (!strncmp(p, decls[i], l) && !cp_ptx_is_ident((unsigned char)p[l]))
      return 1;
  }
  return 0;
}

/* The writer copies the text between sites in order: each site must lie
 * after the previous one and inside the body. A marker after the closing
 * '}' on its line would be written outside the kernel. */
static int check_site_order(const reader *r) {
  size_t prev = r->cur.prologue_at;
  for (size_t i = 0; i < r->cur.n_sites; i++) {
    const cp_ptx_site *s = &r->cur.sites[i];
    if (s->at < prev || s->at > r->cur.body_end)
      return cp_error_set(CPROTON_EPARSE, "line %u: marker or exit after the kernel's closing '}'", s->line);
    prev = s->kind == CP_SITE_EXIT ? s->after : s->at;
  }
  return 0;
}

static int end_kernel(reader *r) {
  cp_ptx_module *m = r->m;
  int rc = r->is_entry && r->cur.n_records ? check_site_order(r) : 0;
  if (rc || !r->cur.n_records || !r->is_entry) {
    free(r->cur.sites);
    memset(&r->cur, 0, sizeof r->cur);
    return rc;
  }
  if (m->n_kernels >= CP_PTX_MAX_KERNELS) {
    free(r->cur.sites);
    r->cur.sites = NULL;
    return cp_error_set(CPROTON_ELIMIT, "more than %u instrumented kernels", CP_PTX_MAX_KERNELS);
  }
  void *k;
  if (cp_grow(m->kernels, &m->cap_kernels, m->n_kernels + 1, sizeof *m->kernels, 4, &k)) {
    free(r->cur.sites);
    r->cur.sites = NULL;
    return cp_error_set(CPROTON_ENOMEM, "out of memory reading PTX");
  }
  m->kernels = k;
  m->kernels[m->n_kernels++] = r->cur;
  m->has_markers = 1;
  memset(&r->cur, 0, sizeof r->cur);
  return 0;
}

/* Finds ".entry" / ".func" at brace depth 0; returns its offset or -1. */
static long find_function(const char *code, int *is_entry) {
  for (const char *p = code; (p = strchr(p, '.')) != NULL; p++) {
    if (p > code && cp_ptx_is_ident((unsigned char)p[-1]))
      continue;
    if (!strncmp(p, ".entry", 6) && !cp_ptx_is_ident((unsigned char)p[6])) {
      *is_entry = 1;
      return p - code;
    }
    if (!strncmp(p, ".func", 5) && !cp_ptx_is_ident((unsigned char)p[5])) {
      *is_entry = 0;
      return p - code;
    }
  }
  return -1;
}

/* The header parser's findings into the current kernel. */
static int read_header(reader *r) {
  r->cur.h = (cp_ptx_header){0};
  return cp_ptx_read_header(r->header.data ? r->header.data : "", r->hstart,
                            r->is_entry, r->cur.line, &r->cur.h);
}

/* Header state: scan [from, len) of the current line for '{' or ';'. */
static int header_chars(reader *r, size_t b, size_t from, size_t len) {
  for (size_t i = from; i < len; i++) {
    char c = r->code[i];
    if (c == '(')
      r->paren++;
    else if (c == ')')
      r->paren--;
    else if (r->paren == 0 && (c == '{' || c == ';')) {
      if (cp_text_append(&r->header, r->code + from, i - from))
        return cp_error_set(CPROTON_ENOMEM, "out of memory reading PTX");
      if (c == ';') { /* a declaration only */
        r->st = ST_TOP;
        return 0;
      }
      int rc = read_header(r);
      if (rc)
        return rc;
      r->st = ST_BODY;
      r->depth = 1;
      r->pending = 1;
      for (size_t j = i + 1; j < len; j++)
        if (!isspace((unsigned char)r->code[j])) { /* code after '{' */
          r->cur.prologue_at = b + i + 1;
          r->pending = 0;
          break;
        }
      return 0;
    }
  }
  if (cp_text_append(&r->header, r->code + from, len - from) || cp_text_append(&r->header, "\n", 1))
    return cp_error_set(CPROTON_ENOMEM, "out of memory reading PTX");
  if (r->header.len > (1u << 20))
    return cp_error_set(CPROTON_ELIMIT, "line %u: function header longer than 1 MiB", r->lineno);
  return 0;
}

/* `.file N "path"` at module scope: remembers N and the path's basename. */
static int read_file_directive(reader *r, size_t b) {
  const char *c = cp_ptx_skip_ws(r->code);
  unsigned idx = 0;
  if (strncmp(c, ".file", 5) || !isspace((unsigned char)c[5]) || sscanf(c + 5, "%u", &idx) != 1)
    return 0;
  const char *q1 = strchr(c, '"'), *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
  if (!q2)
    return 0;
  const char *base = q1 + 1;
  for (const char *p = base; p < q2; p++)
    if (*p == '/')
      base = p + 1;
  void *nf;
  if (cp_grow(r->files, &r->cap_files, r->n_files + 1, sizeof *r->files, 8, &nf))
    return cp_error_set(CPROTON_ENOMEM, "out of memory reading PTX");
  r->files = nf;
  r->files[r->n_files++] = (struct src_file){idx, b + (size_t)(base - r->code), (size_t)(q2 - base)};
  return 0;
}

static int top_line(reader *r, size_t b, size_t len) {
  int is_entry = 0;
  int frc = r->depth == 0 ? read_file_directive(r, b) : 0;
  if (frc)
    return frc;
  long at = r->depth == 0 ? find_function(r->code, &is_entry) : -1;
  if (at < 0) {
    if (r->depth == 0)
      r->m->module_shared += shared_bytes(r->code);
    for (size_t i = 0; i < len; i++)
      r->depth += (r->code[i] == '{') - (r->code[i] == '}');
    if (r->depth < 0)
      return cp_error_set(CPROTON_EPARSE, "line %u: unbalanced '}'", r->lineno);
    return 0;
  }
  memset(&r->cur, 0, sizeof r->cur);
  r->loc_file = r->loc_line = 0;
  r->is_entry = is_entry;
  r->cur.line = r->lineno;
  r->st = ST_HEADER;
  r->paren = 0;
  r->hstart = b + (size_t)at;
  r->header.len = 0;
  if (r->header.data)
    r->header.data[0] = '\0';
  return header_chars(r, b, (size_t)at, len);
}

static int body_line(reader *r, size_t b, size_t e, long cmt) {
  size_t len = e - b;
  int rc;
  const char *c = cp_ptx_skip_ws(r->code);
  unsigned f = 0, l = 0;
  if (!strncmp(c, ".loc", 4) && isspace((unsigned char)c[4]) && sscanf(c + 4, "%u %u", &f, &l) == 2)
    r->loc_file = f, r->loc_line = l; /* where the next markers come from */
  if (*c) {
    if (r->pending && !first_word_is_decl(c)) {
      r->cur.prologue_at = b;
      r->pending = 0;
    }
    if (first_word_is_decl(c))
      r->cur.static_shared += shared_bytes(c);
    if (r->is_entry && (rc = read_exits(r, b)))
      return rc;
  }
  /* After the line's exits: a marker goes at the end of its line, so its
   * site comes after theirs and the writer copies the text in order. */
  if (cmt >= 0 && (rc = read_marker(r, b, e, cmt, &(int){0})))
    return rc;
  for (size_t i = 0; i < len; i++) {
    r->depth += (r->code[i] == '{') - (r->code[i] == '}');
    if (r->depth == 0) {
      if (r->pending)
        r->cur.prologue_at = b;
      r->cur.body_end = b + i;
      r->st = ST_TOP;
      return end_kernel(r);
    }
  }
  return 0;
}

static int read_lines(reader *r) {
  size_t b = 0;
  while (b < r->n) {
    const char *nl = memchr(r->s + b, '\n', r->n - b);
    size_t e = nl ? (size_t)(nl - r->s) : r->n;
    r->lineno++;
    if (memchr(r->s + b, '\0', e - b))
      return cp_error_set(CPROTON_EPARSE, "line %u: NUL byte in PTX text", r->lineno);
    long cmt = -1;
    int rc = blank_line(r, b, e, &cmt);
    if (!rc && r->st == ST_TOP) {
      if (cmt >= 0 && (rc = read_marker(r, b, e, cmt, &(int){0})))
        return rc;
      rc = top_line(r, b, e - b);
    } else if (!rc && r->st == ST_HEADER) {
      rc = header_chars(r, b, 0, e - b);
    } else if (!rc) {
      rc = body_line(r, b, e, cmt);
    }
    if (rc)
      return rc;
    b = e + 1;
  }
  if (r->st != ST_TOP)
    return cp_error_set(CPROTON_EPARSE, "line %u: function starting on line %u has no closing '}'",
                        r->lineno, r->cur.line);
  return 0;
}

int cp_ptx_read(const char *text, size_t size, cp_ptx_module *m) {
  if (size > CP_PTX_MAX_BYTES)
    return cp_error_set(CPROTON_ELIMIT, "PTX of %zu bytes exceeds the %u-byte limit", size, CP_PTX_MAX_BYTES);
  reader r = {.s = text, .n = size, .m = m};
  int rc = read_lines(&r);
  for (size_t k = 0; !rc && k < m->n_kernels; k++) /* sites -> source file names */
    for (size_t i = 0; i < m->kernels[k].n_sites; i++) {
      cp_ptx_site *st = &m->kernels[k].sites[i];
      for (size_t f = 0; st->src_line && f < r.n_files; f++)
        if (r.files[f].idx == st->src_file)
          st->src_name_off = r.files[f].off, st->src_name_len = r.files[f].len;
    }
  free(r.files);
  free(r.code);
  free(r.cur.sites);
  cp_text_free(&r.header);
  if (rc)
    cp_ptx_read_free(m);
  return rc;
}

const char *cp_ptx_site_where(const char *text, const cp_ptx_site *s, char *buf, size_t n) {
  if (s->src_line && s->src_name_len)
    snprintf(buf, n, "line %u (%.*s:%u)", s->line, (int)(s->src_name_len > 200 ? 200 : s->src_name_len),
             text + s->src_name_off, s->src_line);
  else
    snprintf(buf, n, "line %u", s->line);
  return buf;
}

void cp_ptx_read_free(cp_ptx_module *m) {
  for (size_t i = 0; i < m->n_kernels; i++)
    free(m->kernels[i].sites);
  free(m->kernels);
  memset(m, 0, sizeof *m);
}
