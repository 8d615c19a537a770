/* tools/viewer/filter.c -- -i / -e / -t as Proton's filter_frames() does with
 * Hatchet queries, followed by a squash:
 *   -i R : MATCH ("*")->(".", p)->("*") WHERE p."name" =~ R
 *          (ancestors of a match, the match, its descendants)
 *   -e R : NOT MATCH (".", p)->("*")  (drops matches and their subtrees)
 *   -t X : ["*", {metric: ">= X"}]    (nodes meeting X and their ancestors)
 * Regexes match at the start of the name like Python's re.match; they are
 * POSIX extended regexes with \d and \D translated. Back-references are
 * refused: they are the one feature that makes glibc's matcher backtrack
 * (exponential time on names such as "aaaa...", e.g. ((a*)*)*\2b), and
 * without them matching stays polynomial in the name's length. Bounded
 * repetitions are refused when the pattern, with each {m,n} written out n
 * times (nested ones multiplied), would exceed VW_REGEX_MAX_ATOMS: glibc
 * copies the repeated expression that often, so "(a{1,32767})" took 28 s
 * and 8.4 GB to compile and match.
 * Called by main.c. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

/* Atoms of the pattern with every bounded repetition written out: one
 * level per open group, `last` = the size of the atom or group a bound
 * applies to. Overestimates (alternatives add up; `+` counts once), and
 * saturates above the limit so nothing overflows. */
#define VW_REGEX_MAX_ATOMS 1000
#define VW_REGEX_MAX_DEPTH 64

static unsigned long long cap_mul(unsigned long long a, unsigned long long b) {
  return b && a > (VW_REGEX_MAX_ATOMS + 1ull) / b ? VW_REGEX_MAX_ATOMS + 1ull
                                                   : a * b;
}

/* Length of the bracket expression at p: "[...]", "[]a]", "[^]a]",
 * "[[:alpha:]]". */
static size_t bracket_len(const char *p) {
  size_t i = 1;
  if (p[i] == '^')
    i++;
  if (p[i] == ']')
    i++;
  for (; p[i] && p[i] != ']'; i++)
    if (p[i] == '[' && p[i + 1] && strchr(":.=", p[i + 1])) {
      const char *end = strstr(p + i + 2, (char[]){p[i + 1], ']', 0});
      i = end ? (size_t)(end - p) + 1 : strlen(p) - 1;
    }
  return p[i] ? i + 1 : i;
}

/* The upper bound of "{m}", "{m,}", "{m,n}" at p (length in *len), or 0
 * when p is no bound; "{m,}" counts m + 1 copies, as glibc builds it. */
static unsigned long long bound_at(const char *p, size_t *len) {
  char *end;
  if (p[0] != '{' || p[1] < '0' || p[1] > '9')
    return 0;
  unsigned long long lo = strtoull(p + 1, &end, 10), hi = lo;
  if (*end == ',')
    hi = end[1] >= '0' && end[1] <= '9' ? strtoull(end + 1, &end, 10) : lo + 1;
  if (*end != '}')
    return 0;
  *len = (size_t)(end - p) + 1;
  return hi > lo ? hi : lo ? lo : 1;
}

static int too_many_atoms(const char *pattern) {
  unsigned long long total[VW_REGEX_MAX_DEPTH + 1] = {0},
                     last[VW_REGEX_MAX_DEPTH + 1] = {0};
  int d = 0;
  for (const char *p = pattern; *p;) {
    size_t len = 1;
    unsigned long long k;
    if (*p == '(' && d < VW_REGEX_MAX_DEPTH) {
      total[++d] = 0, last[d] = 0;
    } else if (*p == ')' && d > 0) {
      d--;
      last[d] = total[d + 1];
      total[d] = cap_mul(1, total[d] + last[d]);
    } else if ((k = bound_at(p, &len)) > 0) {
      total[d] = cap_mul(1, total[d] + cap_mul(last[d], k - 1));
      last[d] = cap_mul(last[d], k);
    } else if (*p != '|' && *p != '*' && *p != '+' && *p != '?' && *p != '^' &&
               *p != '$') {
      len = *p == '[' ? bracket_len(p) : *p == '\\' && p[1] ? 2 : 1;
      last[d] = 1;
      total[d] = cap_mul(1, total[d] + 1);
    }
    if (total[d] > VW_REGEX_MAX_ATOMS)
      return 1;
    p += len;
  }
  return d > 0 && total[0] + total[d] > VW_REGEX_MAX_ATOMS;
}

static int compile(regex_t *re, const char *pattern) {
  if (too_many_atoms(pattern))
    return vw_fail("bad regular expression \"%s\": its repetitions {m,n} "
                   "written out exceed %d atoms (they make matching slow "
                   "and memory-hungry)", pattern, VW_REGEX_MAX_ATOMS);
  size_t n = strlen(pattern);
  char *s = malloc(n * 5 + 8), *o = s;
  if (!s)
    return vw_fail("out of memory");
  o += sprintf(o, "^(");
  for (size_t i = 0; i < n; i++) {
    if (pattern[i] == '\\' && pattern[i + 1] >= '1' && pattern[i + 1] <= '9') {
      free(s);
      return vw_fail("bad regular expression \"%s\": back-references (\\%c) are not supported "
                     "(they can take exponential time)", pattern, pattern[i + 1]);
    }
    if (pattern[i] == '\\' && pattern[i + 1] == '\\') { /* an escaped backslash */
      *o++ = pattern[i++];
      *o++ = pattern[i];
    } else if (pattern[i] == '\\' && (pattern[i + 1] == 'd' || pattern[i + 1] == 'D')) {
      o += sprintf(o, pattern[i + 1] == 'd' ? "[0-9]" : "[^0-9]");
      i++;
    } else {
      *o++ = pattern[i];
    }
  }
  strcpy(o, ")");
  int rc = regcomp(re, s, REG_EXTENDED | REG_NOSUB);
  free(s);
  if (rc) {
    char msg[256];
    regerror(rc, re, msg, sizeof msg);
    return vw_fail("bad regular expression \"%s\": %s", pattern, msg);
  }
  return 0;
}

/* under[i]: node i or an ancestor matched; below[i]: i or a descendant did. */
static void spread(const vw_tree *t, const uint8_t *hit, uint8_t *under,
                   uint8_t *below) {
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t par = t->nodes[i].parent;
    under[i] = hit[i] || (par != VW_NONE && under[par]);
    below[i] = hit[i];
  }
  for (uint32_t i = t->n; i-- > 0;) {
    uint32_t par = t->nodes[i].parent;
    if (par != VW_NONE && below[i])
      below[par] = 1;
  }
}

static int by_regex(vw_tree *t, const char *pattern, int include) {
  regex_t re;
  if (compile(&re, pattern))
    return -1;
  size_t n = t->n ? t->n : 1;
  uint8_t *hit = calloc(n, 1), *under = calloc(n, 1), *below = calloc(n, 1);
  if (!hit || !under || !below) {
    free(hit), free(under), free(below), regfree(&re);
    return vw_fail("out of memory");
  }
  for (uint32_t i = 0; i < t->n; i++)
    hit[i] = regexec(&re, t->nodes[i].name, 0, NULL, 0) == 0;
  spread(t, hit, under, below);
  for (uint32_t i = 0; i < t->n; i++)
    hit[i] = include ? (under[i] || below[i]) : !under[i];
  vw_tree_keep(t, hit);
  free(hit), free(under), free(below);
  regfree(&re);
  return 0;
}

static int by_threshold(vw_tree *t, double threshold, int col) {
  size_t n = t->n ? t->n : 1;
  uint8_t *hit = calloc(n, 1), *under = calloc(n, 1), *below = calloc(n, 1);
  if (!hit || !under || !below) {
    free(hit), free(under), free(below);
    return vw_fail("out of memory");
  }
  for (uint32_t i = 0; i < t->n; i++)
    hit[i] = t->cols[col].v[i] >= threshold; /* NaN fails */
  spread(t, hit, under, below);
  vw_tree_keep(t, below);
  free(hit), free(under), free(below);
  return 0;
}

int vw_filter(vw_tree *t, const char *include, const char *exclude,
              double threshold, int metric_col) {
  if (include && by_regex(t, include, 1))
    return -1;
  if (exclude && by_regex(t, exclude, 0))
    return -1;
  if (threshold != 0 && threshold == threshold &&
      by_threshold(t, threshold, metric_col))
    return -1;
  return 0;
}
