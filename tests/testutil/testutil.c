/* testutil.c -- see testutil.h. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/session.h"
#include "cproton/cproton.h"

const char *cpt_tmp_path(const char *stem) {
  static _Thread_local char paths[16][512];
  static _Thread_local int next;
  static char dir[256];
  if (!dir[0]) {
    /* a fresh directory per process, made exclusively: a name from the pid
     * alone met a directory an earlier process of the same pid had left
     * (pids are reused within one CI run), with its files in it */
    snprintf(dir, sizeof dir, "%s/cproton-test-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
      snprintf(dir, sizeof dir, "."); /* the test's own build folder */
  }
  char *p = paths[next++ % 16];
  snprintf(p, 512, "%s/%s", dir, stem);
  return p;
}

char *cpt_read_file(const char *path, size_t *size_out) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  buf[got] = '\0';
  if (size_out)
    *size_out = got;
  return buf;
}

json_t *cpt_load_json(const char *path) {
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  if (!j)
    fprintf(stderr, "%s:%d:%d: %s\n", path, err.line, err.column, err.text);
  return j;
}

json_t *cpt_parse_json(const char *text) {
  json_error_t err;
  json_t *j = json_loads(text, 0, &err);
  if (!j)
    fprintf(stderr, "json:%d:%d: %s\n", err.line, err.column, err.text);
  return j;
}

/* Compact, key-sorted text of a JSON value (NULL stays NULL). */
static char *canonical(json_t *j) {
  char *s = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
  json_decref(j);
  return s;
}

int cpt_json_file_matches(const char *path, const char *expected,
                          char **got_out, char **want_out) {
  *got_out = canonical(cpt_load_json(path));
  *want_out = canonical(cpt_parse_json(expected));
  return *got_out && *want_out && strcmp(*got_out, *want_out) == 0;
}

static void profile_flatten(json_t *n, const char *prefix, int with_time,
                            char *out, size_t size) {
  json_t *kids = json_object_get(n, "children"), *c;
  size_t i;
  json_array_foreach(kids, i, c) {
    const char *name = json_string_value(
        json_object_get(json_object_get(c, "frame"), "name"));
    char path[512];
    snprintf(path, sizeof path, "%s/%s", prefix, name ? name : "?");
    json_t *m = json_object_get(c, "metrics");
    json_t *count = json_object_get(m, "count");
    json_t *time = json_object_get(m, "time (ns)");
    size_t len = strlen(out);
    if (count && with_time)
      snprintf(out + len, size - len, "%s count=%lld time=%.0f\n", path,
               (long long)json_integer_value(count),
               time ? json_number_value(time) : -1.0);
    else if (count)
      snprintf(out + len, size - len, "%s=%lld\n", path,
               (long long)json_integer_value(count));
    profile_flatten(c, path, with_time, out, size);
  }
}

static int cmp_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char *cpt_profile_lines(json_t *profile, int with_time) {
  enum { SIZE = 1 << 16, LINES = 1024 };
  char *buf = calloc(1, SIZE), *lines[LINES], *out = calloc(1, SIZE + 2);
  size_t n = 0;
  if (!buf || !out) {
    free(buf);
    free(out);
    return NULL;
  }
  profile_flatten(json_array_get(profile, 0), "", with_time, buf, SIZE);
  for (char *p = strtok(buf, "\n"); p && n < LINES; p = strtok(NULL, "\n"))
    lines[n++] = p;
  qsort(lines, n, sizeof *lines, cmp_lines);
  for (size_t i = 0; i < n; i++) {
    strcat(out, lines[i]);
    strcat(out, "\n");
  }
  free(buf);
  return out;
}

void cpt_capture_in(const char *name, struct cp_launch_site *site) {
  cproton_scope_enter(name, NULL);
  cp_session_capture(site);
  cproton_scope_exit(name);
}

int cpt_start_session(const char *name, const char *backend, const char *data,
                      const char *mode) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = name;
  o.backend = backend;
  o.data = data;
  o.mode = mode;
  int sid = -1;
  return cproton_session_start(&o, &sid) == CPROTON_OK ? sid : -1;
}
