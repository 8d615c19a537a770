/* core_native_test.c -- native call stacks (context "native", core/native.c)
 * on the fake backend: a library with known call paths
 * (tests/testutil/native_frames.c, -O0 -g -fno-inline) launches from
 * outer -> middle -> inner; the profile has those frames, outermost first,
 * between the scope and the kernel, named file:line@function with the call
 * sites' lines; repeated launches from one site are one unwind path (table
 * hits, no new stack); the same library stripped gives module+offset
 * frames; the backend's and the profiler's own frames never appear; both
 * unwinders (libunwind, glibc's backtrace()) give the same frames. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "backend/fake/fake.h"
#include "core/native.h"
#include "cproton/cproton.h"
#include "testutil.h"

typedef int (*launch_fn)(const char *kernel, uint64_t duration_ns,
                         uint32_t device, uint32_t stream);
typedef int (*run_fn)(launch_fn launch, int reps);
typedef void (*lines_fn)(int out[3]);

static const launch_fn launch = cp_fake_launch;

static void *open_app(const char *lib, run_fn *run, lines_fn *lines) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", CP_NATIVE_LIB_DIR, lib);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  cr_assert(h, "dlopen %s: %s", path, dlerror());
  *(void **)run = dlsym(h, "native_frames_run");
  *(void **)lines = dlsym(h, "native_frames_lines");
  cr_assert(*run && *lines);
  return h;
}

/* Names from the root's child down to the node named `kernel` (depth
 * first); returns the depth found, 0 if none. */
static size_t path_to(json_t *node, const char *kernel, const char **names,
                      size_t depth) {
  const char *name =
      json_string_value(json_object_get(json_object_get(node, "frame"), "name"));
  names[depth] = name;
  if (name && strcmp(name, kernel) == 0)
    return depth + 1;
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(node, "children"), i, c) {
    size_t d = path_to(c, kernel, names, depth + 1);
    if (d)
      return d;
  }
  return 0;
}

/* Runs `reps` launches of `lib`'s call path inside scope "step" and
 * returns the kernel's path (names[0] = ROOT). */
static size_t profile(const char *lib, int reps, const char **names,
                      json_t **root, int lines[3], cp_native_stats *delta) {
  run_fn run;
  lines_fn get_lines;
  void *h = open_app(lib, &run, &get_lines);
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = cpt_tmp_path(lib);
  o.backend = "fake";
  o.context = "native";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK, "%s",
               cproton_last_error());
  cp_native_stats before, after;
  cp_native_get_stats(&before);
  cr_assert_eq(cproton_scope_enter("step", NULL), CPROTON_OK);
  cr_assert_eq(run(launch, reps), 0);
  cr_assert_eq(cproton_scope_exit("step"), CPROTON_OK);
  cp_native_get_stats(&after);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  get_lines(lines);
  *delta = (cp_native_stats){.unwinds = after.unwinds - before.unwinds,
                             .hits = after.hits - before.hits,
                             .misses = after.misses - before.misses,
                             .full = after.full - before.full};
  char path[4096];
  snprintf(path, sizeof path, "%s.hatchet", o.name);
  json_t *j = cpt_load_json(path);
  cr_assert(j);
  *root = j;
  dlclose(h);
  return path_to(json_array_get(j, 0), "k_inner", names, 0);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void check_frames(void) {
  const char *names[256];
  json_t *j;
  int lines[3];
  cp_native_stats d;
  size_t depth = profile("libnative_frames.so", 1, names, &j, lines, &d);
  cr_assert_geq(depth, 6, "kernel not found under native frames");
  cr_assert_str_eq(names[1], "step");
  /* the kernel's parents, innermost first: inner, middle, outer */
  const char *fns[3] = {"@inner", "@middle", "@outer"};
  for (int i = 0; i < 3; i++) {
    const char *got = names[depth - 2 - i];
    char want[64];
    snprintf(want, sizeof want, "native_frames.c:%d%s", lines[2 - i], fns[i]);
    cr_expect(ends_with(got, want), "frame %d: '%s', want '...%s'", i, got,
              want);
  }
  /* no fake-backend or profiler frame between inner and the kernel */
  cr_expect(strstr(names[depth - 2], "@inner") != NULL);
  for (size_t i = 1; i < depth - 1; i++)
    cr_expect(strstr(names[i], "native:0x") == NULL &&
                  strstr(names[i], "cp_fake_launch") == NULL,
              "frame '%s' is unnamed or the profiler's", names[i]);
  json_decref(j);
}

/* libunwind (libunwind.so.8, the default when installed: `make test`'s
 * packages include it) */
Test(core_native, frames_with_file_line_outermost_first) {
  cr_assert_str_eq(cp_native_unwinder(), "libunwind",
                   "libunwind.so.8 not found (Debian: libunwind8)");
  check_frames();
}

/* the fallback without libunwind: glibc's backtrace() */
Test(core_native, frames_with_backtrace_fallback) {
  cr_assert_eq(cp_native_set_unwinder("backtrace"), 0);
  check_frames();
}

Test(core_native, repeated_launches_are_one_stack) {
  const char *names[256];
  json_t *j;
  int lines[3];
  cp_native_stats d;
  size_t depth = profile("libnative_frames.so", 100, names, &j, lines, &d);
  cr_assert_gt(depth, 0);
  cr_expect_eq(d.unwinds, 100);
  cr_expect_eq(d.misses, 1, "new stacks: %llu", (unsigned long long)d.misses);
  cr_expect_eq(d.hits, 99, "hits: %llu", (unsigned long long)d.hits);
  cr_expect_eq(d.full, 0);
  json_decref(j);
}

Test(core_native, stripped_module_gives_module_offset) {
  const char *names[256];
  json_t *j;
  int lines[3];
  cp_native_stats d;
  size_t depth =
      profile("libnative_frames_stripped.so", 1, names, &j, lines, &d);
  cr_assert_geq(depth, 6);
  for (int i = 0; i < 3; i++) {
    const char *got = names[depth - 2 - i];
    cr_expect(strncmp(got, "libnative_frames_stripped.so+0x", 31) == 0,
              "frame %d: '%s', want module+offset", i, got);
  }
  json_decref(j);
}

/* Sibling names stay unique (docs/formats.md): the second call site on
 * the same line is "file:line@function #2". */
Test(core_native, call_sites_on_one_line_get_distinct_names) {
  run_fn run;
  lines_fn get_lines;
  void *h = open_app("libnative_frames.so", &run, &get_lines);
  int (*twice)(launch_fn) = (int (*)(launch_fn))dlsym(h, "native_frames_twice");
  cr_assert(twice);
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = cpt_tmp_path("native_twice");
  o.backend = "fake";
  o.context = "native";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_OK);
  cr_assert_eq(twice(launch), 0);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
  char path[4096];
  snprintf(path, sizeof path, "%s.hatchet", o.name);
  json_t *j = cpt_load_json(path);
  const char *names[256];
  size_t depth = path_to(json_array_get(j, 0), "k_twice", names, 0);
  cr_assert_geq(depth, 3);
  json_t *n = json_array_get(j, 0); /* down to the parent of the two */
  for (size_t d = 1; d < depth - 2; d++) {
    size_t i;
    json_t *c, *next = NULL;
    json_array_foreach(json_object_get(n, "children"), i, c) {
      const char *nm = json_string_value(
          json_object_get(json_object_get(c, "frame"), "name"));
      if (strcmp(nm, names[d]) == 0)
        next = c;
    }
    n = next;
    cr_assert(n);
  }
  json_t *kids = json_object_get(n, "children");
  cr_assert_eq(json_array_size(kids), 2, "want two call-site frames");
  const char *a = json_string_value(json_object_get(
      json_object_get(json_array_get(kids, 0), "frame"), "name"));
  const char *b = json_string_value(json_object_get(
      json_object_get(json_array_get(kids, 1), "frame"), "name"));
  cr_expect_str_neq(a, b);
  cr_expect(strstr(a, "@native_frames_twice") && strstr(b, "@native_frames_twice"),
            "'%s' / '%s'", a, b);
  cr_expect(ends_with(a, " #2") != ends_with(b, " #2"), "'%s' / '%s'", a, b);
  json_decref(j);
  dlclose(h);
}

Test(core_native, unknown_context_lists_native) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = cpt_tmp_path("native_bad");
  o.backend = "fake";
  o.context = "natve";
  int sid;
  cr_assert_eq(cproton_session_start(&o, &sid), CPROTON_EINVAL);
  cr_expect(strstr(cproton_last_error(), "native") != NULL, "%s",
            cproton_last_error());
}
