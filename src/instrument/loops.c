/* instrument/loops.c -- can a record marker of a kernel run more than once
 * per warp? (cp_ptx_records_in_loop). The pass sizes the buffer of a kernel
 * whose markers all run at most once exactly: one record slot per marker,
 * so nothing is ever overwritten and no launch copies back kilobytes of
 * unused segment per warp.
 *
 * In PTX a loop is a backward branch: `bra L` after the line defining label
 * L. A marker between the two can repeat. Indirect branches (brx.idx) count
 * as loops around everything. The scan is textual over the kernel body
 * (from its prologue to the first '}' in column 0), skipping // comments,
 * and conservative: anything it cannot read as a forward branch is a loop.
 * Not a hot path: once per kernel at compile time. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/grow.h"
#include "instrument/loops.h"

typedef struct label {
  size_t off, len, pos; /* name in the text; where it is defined */
} label;

static int is_name_char(int c) { return isalnum(c) || c == '_' || c == '$' || c == '.' || c == '%'; }

static size_t body_end(const char *t, size_t from, size_t size) {
  for (size_t i = from; i + 1 < size; i++)
    if (t[i] == '\n' && t[i + 1] == '}')
      return i + 1;
  return size;
}

/* The line [b, e) without its // comment. */
static size_t code_end(const char *t, size_t b, size_t e) {
  for (size_t i = b; i + 1 < e; i++)
    if (t[i] == '/' && t[i + 1] == '/')
      return i;
  return e;
}

/* "name:" at the start of a line (after blanks): a label definition. */
static int read_label(const char *t, size_t b, size_t e, label *out) {
  while (b < e && (t[b] == ' ' || t[b] == '\t'))
    b++;
  size_t s = b;
  while (b < e && is_name_char((unsigned char)t[b]))
    b++;
  if (b == s || b >= e || t[b] != ':')
    return 0;
  *out = (label){s, b - s, s};
  return 1;
}

/* A branch in [b, e): 1 with its target, 2 for an indirect branch, 0 none. */
static int read_branch(const char *t, size_t b, size_t e, size_t *off, size_t *len) {
  for (size_t i = b; i + 3 <= e; i++) {
    if ((i > b && is_name_char((unsigned char)t[i - 1])) || memcmp(t + i, "br", 2))
      continue;
    if (i + 3 <= e && !memcmp(t + i, "brx", 3))
      return 2;
    if (memcmp(t + i, "bra", 3) || (i + 3 < e && is_name_char((unsigned char)t[i + 3]) && t[i + 3] != '.'))
      continue;
    size_t j = i + 3;
    while (j < e && !isspace((unsigned char)t[j])) /* .uni */
      j++;
    while (j < e && isspace((unsigned char)t[j]))
      j++;
    size_t s = j;
    while (j < e && is_name_char((unsigned char)t[j]))
      j++;
    if (j == s)
      return 2;
    *off = s;
    *len = j - s;
    return 1;
  }
  return 0;
}

/* A record site inserted after `lo` (a label line's start: markers just
 * before the label end there) and before `hi`. */
static int site_between(const cp_ptx_kernel *k, size_t lo, size_t hi) {
  for (size_t i = 0; i < k->n_sites; i++)
    if (k->sites[i].kind == CP_SITE_RECORD && k->sites[i].at > lo && k->sites[i].at <= hi)
      return 1;
  return 0;
}

int cp_ptx_records_in_loop(const char *t, size_t size, const cp_ptx_kernel *k, int *in_loop) {
  size_t end = body_end(t, k->prologue_at, size), n = 0, cap = 0;
  label *labels = NULL;
  *in_loop = 0;
  for (size_t b = k->prologue_at; b < end && !*in_loop;) {
    size_t e = b;
    while (e < end && t[e] != '\n')
      e++;
    size_t ce = code_end(t, b, e), off = 0, len = 0;
    label l;
    if (read_label(t, b, ce, &l)) {
      void *p;
      if (n == cap) {
        if (cp_grow(labels, &cap, n + 1, sizeof *labels, 64, &p)) {
          free(labels);
          return cp_error_set(CPROTON_ENOMEM, "out of memory reading branches");
        }
        labels = p;
      }
      labels[n++] = l;
    }
    int br = read_branch(t, b, ce, &off, &len);
    if (br == 2)
      *in_loop |= site_between(k, k->prologue_at, end);
    for (size_t i = 0; br == 1 && i < n; i++)
      if (labels[i].len == len && !memcmp(t + labels[i].off, t + off, len))
        *in_loop |= site_between(k, labels[i].pos, b);
    b = e + 1;
  }
  free(labels);
  return 0;
}
