/* tools/viewer/escape.c -- frame names made safe for a terminal.
 *
 * A frame name comes from the profile, which anyone may have written: an
 * escape sequence in it (ESC, CSI) would clear the screen or move the cursor,
 * and a newline would fake a line of the tree. The tree, --print-sorted,
 * --lines and CSV outputs therefore show C0 controls, DEL and the C1 controls
 * (U+0080-U+009F) as visible escapes: \n, \r, \t, \xNN for the one-byte
 * ones, \u0080-\u009f for C1. Everything else, backslashes included, is shown
 * as it is, so ordinary names print exactly as Proton prints them (JSON
 * output keeps names exact through JSON's own escapes).
 * Called by render.c and lines.c, single-threaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

static const char short_escape[32] = {['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};

/* Bytes of the escape for the character at s (0: the byte stays as is);
 * out (when not NULL, >= 7 bytes) receives it. */
static size_t escape_at(const unsigned char *s, char *out, size_t *consumed) {
  char tmp[8];
  int n = 0;
  *consumed = 1;
  if (s[0] < 0x20 && short_escape[s[0]])
    n = snprintf(tmp, sizeof tmp, "\\%c", short_escape[s[0]]);
  else if (s[0] < 0x20 || s[0] == 0x7f)
    n = snprintf(tmp, sizeof tmp, "\\x%02x", s[0]);
  else if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) /* C1 in UTF-8 */
    n = snprintf(tmp, sizeof tmp, "\\u%04x", s[1]), *consumed = 2;
  if (n && out)
    memcpy(out, tmp, (size_t)n);
  return (size_t)n;
}

const char *vw_escape(const char *name, char **buf, size_t *cap) {
  const unsigned char *s = (const unsigned char *)name;
  size_t need = 1, used;
  int any = 0;
  for (size_t i = 0; s[i]; i += used) {
    size_t e = escape_at(s + i, NULL, &used);
    any |= e != 0;
    need += e ? e : 1;
  }
  if (!any)
    return name;
  if (need > *cap) {
    char *b = realloc(*buf, need);
    if (!b) {
      fprintf(stderr, "cproton-viewer: out of memory\n");
      exit(2);
    }
    *buf = b, *cap = need;
  }
  char *o = *buf;
  for (size_t i = 0; s[i]; i += used) {
    size_t e = escape_at(s + i, o, &used);
    if (!e)
      *o = (char)s[i];
    o += e ? e : 1;
  }
  *o = '\0';
  return *buf;
}
