/* instrument/ptx_header.c -- the PTX reader's parser of one function
 * header (ptx_header.h): the name, the last .param (where the pass appends its
 * buffer pointer) and .reqntid/.maxntid launch bounds, as byte offsets
 * into the caller's text. Input is untrusted: names and bounds are capped.
 * Not a hot path; called by ptx_read.c once per function. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "instrument/ptx_header.h"

/* Parses up to three comma-separated numbers after `dir` in `h`. */
static void read_ntid(const char *h, const char *dir, uint32_t ntid[3]) {
  const char *p = strstr(h, dir);
  if (!p)
    return;
  p += strlen(dir);
  for (int i = 0; i < 3; i++) {
    p = cp_ptx_skip_ws(p);
    if (!isdigit((unsigned char)*p))
      break;
    unsigned long v = strtoul(p, (char **)&p, 10);
    ntid[i] = v > 4096 ? 4096 : (uint32_t)v;
    p = cp_ptx_skip_ws(p);
    if (*p != ',')
      break;
    p++;
  }
}

/* The last parameter in params text [a, e) of the blanked header `h`. */
static void read_last_param(cp_ptx_header *k, size_t hstart, const char *h, const char *a,
                            const char *e) {
  const char *last = a;
  for (const char *p = a; p < e; p++)
    if (*p == ',')
      last = p + 1;
  const char *t = e;
  while (t > last && isspace((unsigned char)t[-1]))
    t--;
  const char *nb = t;
  while (nb > last && (cp_ptx_is_ident((unsigned char)nb[-1]) || nb[-1] == ']' || nb[-1] == '[' ||
                       isdigit((unsigned char)nb[-1])))
    nb--;
  if (nb == t)
    return;
  k->param_off = hstart + (size_t)(nb - h);
  k->param_len = (size_t)(t - nb);
  int is64 = 0;
  for (const char *p = last; p < nb; p++)
    if (*p == '.' && (!strncmp(p, ".u64", 4) || !strncmp(p, ".b64", 4) || !strncmp(p, ".s64", 4)) &&
        !cp_ptx_is_ident((unsigned char)p[4]))
      is64 = 1;
  k->param_is_u64 = is64 && !memchr(nb, '[', (size_t)(t - nb));
}

int cp_ptx_read_header(const char *h, size_t hstart, int is_entry, uint32_t line,
                       cp_ptx_header *k) {
  const char *p = strstr(h, is_entry ? ".entry" : ".func");
  p = cp_ptx_skip_ws(p + (is_entry ? 6 : 5));
  if (*p == '(') { /* .func return parameters */
    int d = 0;
    for (; *p; p++) {
      d += *p == '(';
      d -= *p == ')';
      if (!d)
        break;
    }
    if (*p)
      p = cp_ptx_skip_ws(p + 1);
  }
  const char *nm = p;
  while (cp_ptx_is_ident((unsigned char)*p) && *p != '.')
    p++;
  if (p == nm || (size_t)(p - nm) > 1024)
    return cp_error_set(CPROTON_EPARSE, "line %u: function without a name", line);
  k->name_off = hstart + (size_t)(nm - h);
  k->name_len = (size_t)(p - nm);
  p = cp_ptx_skip_ws(p);
  const char *after = p;
  if (*p == '(') {
    const char *close = strchr(p, ')');
    if (!close)
      return cp_error_set(CPROTON_EPARSE, "line %u: unterminated parameter list", line);
    read_last_param(k, hstart, h, p + 1, close);
    after = close + 1;
  }
  read_ntid(after, ".reqntid", k->ntid);
  k->ntid_required = k->ntid[0] != 0;
  if (!k->ntid[0])
    read_ntid(after, ".maxntid", k->ntid);
  return 0;
}
