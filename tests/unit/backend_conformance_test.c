/* backend_conformance_test.c -- what every backend that runs without a GPU
 * must do (backend/backend.h): a silent, cheap `available`; a start / flush
 * / stop life cycle that can run twice; a bad mode refused with EINVAL and
 * a message, before anything starts; same_mode reflexive; a silent
 * probe; and a
 * session through the public API from start to a written profile. Run
 * against none, fake, skeleton (test builds) and instrumentation (its
 * `available` and mode checks; it needs a CUDA driver to start). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/session.h"
#include "cproton/cproton.h"

static int n_logged;
static void count_log(void *user, cproton_log_level level, const char *msg) {
  (void)user, (void)level, (void)msg;
  n_logged++;
}

static const char *const cpu_backends[] = {"none", "fake", "skeleton"};
#define N_CPU (sizeof cpu_backends / sizeof *cpu_backends)

/* Each backend with the mode it refuses (NULL: it takes any mode). */
static const struct {
  const char *name, *bad_mode;
} checked[] = {{"none", "pcsampling:interval=abc"},
               {"skeleton", "no-such-mode"},
               {"instrumentation", "default:reduce=warp"},
               {"fake", NULL}};
#define N_CHECKED (sizeof checked / sizeof *checked)

static const cp_backend_ops *find(const char *name) {
  const cp_backend_ops *b = cp_backend_find(name);
  cr_assert(b, "backend '%s' is not registered: %s", name, cproton_last_error());
  return b;
}

Test(backend_conformance, available_is_silent) {
  for (size_t i = 0; i < N_CHECKED; i++) {
    const cp_backend_ops *b = find(checked[i].name);
    n_logged = 0;
    cproton_log_set_handler(count_log, NULL, CPROTON_LOG_DEBUG);
    int a1 = b->available(), a2 = b->available();
    cproton_log_set_handler(NULL, NULL, CPROTON_LOG_WARN);
    cr_expect_eq(n_logged, 0, "%s: available() logged", checked[i].name);
    cr_expect_eq(a1, a2, "%s: available() changed its answer", checked[i].name);
  }
}

Test(backend_conformance, life_cycle_twice) {
  for (size_t i = 0; i < N_CPU; i++) {
    const cp_backend_ops *b = find(cpu_backends[i]);
    cr_assert(b->available(), "%s must run on the CPU", cpu_backends[i]);
    for (int round = 0; round < 2; round++) {
      cp_backend_config config;
      cr_assert_eq(cp_backend_parse_mode(b, NULL, 0, &config), CPROTON_OK);
      cr_assert_eq(b->start(&config), CPROTON_OK, "%s: %s", cpu_backends[i],
                   cproton_last_error());
      cr_assert_eq(b->flush(), CPROTON_OK, "%s: %s", cpu_backends[i],
                   cproton_last_error());
      cr_assert_eq(b->flush(), CPROTON_OK, "%s: a second flush", cpu_backends[i]);
      b->stop();
    }
  }
}

Test(backend_conformance, bad_mode_refused_with_message) {
  for (size_t i = 0; i < N_CHECKED; i++) {
    if (!checked[i].bad_mode)
      continue;
    const cp_backend_ops *b = find(checked[i].name);
    cp_backend_config config;
    cr_assert(b->parse_mode, "%s: a backend with modes parses them", checked[i].name);
    cr_assert_eq(cp_backend_parse_mode(b, checked[i].bad_mode, 0, &config),
                 CPROTON_EINVAL, "%s", checked[i].name);
    cr_assert(strlen(cproton_last_error()) > 0, "%s: no message", checked[i].name);
    cr_assert_eq(cp_backend_parse_mode(b, NULL, 0, &config), CPROTON_OK,
                 "%s: the default mode", checked[i].name);
  }
}

/* Both modes parsed once, as the session layer does, then compared. */
static int same(const cp_backend_ops *b, const char *x, const char *y) {
  cp_backend_config a, c;
  cr_assert_eq(cp_backend_parse_mode(b, x, 0, &a), CPROTON_OK, "%s", b->name);
  cr_assert_eq(cp_backend_parse_mode(b, y, 0, &c), CPROTON_OK, "%s", b->name);
  return cp_backend_same_mode(b, &a, &c);
}

Test(backend_conformance, same_mode_is_reflexive) {
  for (size_t i = 0; i < N_CHECKED; i++) {
    const cp_backend_ops *b = find(checked[i].name);
    cr_assert(same(b, NULL, NULL), "%s", checked[i].name);
    cr_assert(same(b, "", NULL), "%s: NULL == \"\"", checked[i].name);
  }
  const cp_backend_ops *s = find("skeleton");
  cr_assert(same(s, "default", ""), "same meaning, same mode");
  cr_assert(!same(s, "count", ""), "a different mode is refused");
}

/* Every backend answers probe (silently); a CPU backend always runs, a
 * GPU backend runs exactly where the driver reports a device. */
Test(backend_conformance, probe_is_silent) {
  static const char *const all[] = {"none", "fake", "skeleton", "instrumentation"};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
    const cp_backend_ops *b = find(all[i]);
    cr_assert(b->probe, "%s has no probe", all[i]);
    n_logged = 0;
    cproton_log_set_handler(count_log, NULL, CPROTON_LOG_DEBUG);
    cp_backend_probe p = {-1, -1};
    b->probe(&p);
    cproton_log_set_handler(NULL, NULL, CPROTON_LOG_WARN);
    cr_expect_eq(n_logged, 0, "%s: probe logged", all[i]);
    cr_assert(p.devices >= 0, "%s", all[i]);
    if (i < 3)
      cr_assert(p.runs, "%s runs on the CPU", all[i]);
    else
      cr_assert_eq(p.runs, p.devices > 0, "%s", all[i]);
  }
}

/* Through the public API: a session on each CPU backend records a scope
 * and writes its profile; a bad mode is refused with a message. */
Test(backend_conformance, session_start_to_profile) {
  char dir[] = "/tmp/cp_conformXXXXXX";
  cr_assert(mkdtemp(dir));
  for (size_t i = 0; i < N_CPU; i++) {
    char path[256], file[300];
    snprintf(path, sizeof path, "%s/%s", dir, cpu_backends[i]);
    cproton_session_options o;
    cproton_session_options_init(&o);
    o.name = path, o.backend = cpu_backends[i];
    int id;
    cr_assert_eq(cproton_session_start(&o, &id), CPROTON_OK, "%s: %s",
                 cpu_backends[i], cproton_last_error());
    uint64_t scope;
    cr_assert_eq(cproton_scope_enter("conform", &scope), CPROTON_OK);
    cr_assert_eq(cproton_scope_exit("conform"), CPROTON_OK);
    cr_assert_eq(cproton_session_finalize(id, "hatchet"), CPROTON_OK, "%s: %s",
                 cpu_backends[i], cproton_last_error());
    snprintf(file, sizeof file, "%s.hatchet", path);
    cr_assert_eq(access(file, R_OK), 0, "%s: no %s", cpu_backends[i], file);
    unlink(file);
  }
  rmdir(dir);
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.backend = "skeleton", o.mode = "no-such-mode";
  int id;
  int rc = cproton_session_start(&o, &id);
  cr_assert(rc == CPROTON_EINVAL || rc == CPROTON_EPARSE, "rc %d", rc);
  cr_assert(strstr(cproton_last_error(), "no-such-mode"), "%s", cproton_last_error());
  cr_assert_eq(cproton_session_count(), 0);
}

/* The public probe answers from the backends' probes; the session layer
 * says from a session's parsed mode whether it wants loaded cubins. */
Test(backend_conformance, public_probe_and_cubins) {
  cproton_probe_info p;
  cr_assert_eq(cproton_backend_probe("skeleton", &p), CPROTON_OK);
  cr_assert_str_eq(p.backend, "skeleton");
  cr_assert(p.runs);
  cr_assert_eq(cproton_backend_probe("no-such", &p), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "no-such"), "%s", cproton_last_error());
  cr_assert_eq(cproton_backend_probe(NULL, &p), CPROTON_OK);
  cr_assert(p.runs);
  cr_assert(strcmp(p.backend, "none") == 0 || p.devices > 0, "%s, %d devices",
            p.backend, p.devices);
  cr_assert_eq(cproton_backend_probe(NULL, NULL), CPROTON_EINVAL);

  static const struct {
    const char *backend, *mode;
    int wants;
  } cases[] = {{"none", "pcsampling:interval=1000", 1},
               {"none", NULL, 0},
               {"skeleton", "count", 0},
               /* where no driver loads it falls back to "none": its
                * configuration is still read by the backend that parsed it */
               {"instrumentation", "default:granularity=cta", 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cproton_session_options o;
    cproton_session_options_init(&o);
    o.name = "/tmp/cp_conform_cubins", o.backend = cases[i].backend;
    o.mode = cases[i].mode;
    int id, wants = -1;
    cr_assert_eq(cproton_session_start(&o, &id), CPROTON_OK, "%s", cproton_last_error());
    cr_assert_eq(cproton_session_wants_loaded_cubins(id, &wants), CPROTON_OK);
    if (cp_backend_default_candidate() || !cases[i].wants) /* CUPTI built: PC sampling */
      cr_assert_eq(wants, cases[i].wants, "%s '%s'", cases[i].backend, cases[i].mode);
    else
      cr_assert_eq(wants, 0, "no PC sampling without CUPTI");
    cr_assert_eq(cproton_session_finalize(id, NULL), CPROTON_OK);
    cr_assert_eq(cproton_session_wants_loaded_cubins(id, &wants), CPROTON_ENOTFOUND);
  }
  unlink("/tmp/cp_conform_cubins.hatchet");
}

/* An in-kernel backend says so with a flag and describes its parsed mode;
 * the front end reads a session's parse (no second parse), and a mode the
 * session's data kind cannot run is refused at start. */
Test(backend_conformance, instrumentation_hook_from_the_session_parse) {
  static const char *const all[] = {"none", "fake", "skeleton", "instrumentation"};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
    const cp_backend_ops *b = find(all[i]);
    cr_assert_eq(!!b->instruments_kernels, !!b->instr_mode_info, "%s", all[i]);
  }
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = "/tmp/cp_conform_instr", o.backend = "instrumentation";
  o.mode = "default:reduce=kernel:granularity=warpgroup";
  int id, wants = -1;
  cproton_log_set_handler(count_log, NULL, CPROTON_LOG_WARN); /* no driver: falls back */
  cr_assert_eq(cproton_session_start(&o, &id), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cproton_session_wants_instrumentation_hook(id, &wants), CPROTON_OK);
  cr_assert_eq(wants, 1);
  cproton_instr_mode_info got, parsed;
  cr_assert_eq(cproton_session_instr_mode(id, &got), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cproton_instr_mode_parse(o.mode, 0, &parsed), CPROTON_OK);
  cr_assert_eq(memcmp(&got, &parsed, sizeof got), 0, "the session's parse is the parser's");
  cr_assert_str_eq(got.canonical, "default:reduce=kernel:granularity=warp_group");
  cr_assert(got.sums_in_kernel && !got.sums_in_kernel_host_buffer);
  cr_assert_eq(cproton_session_finalize(id, NULL), CPROTON_OK);
  cr_assert_eq(cproton_session_instr_mode(id, &got), CPROTON_ENOTFOUND);

  o.backend = "none", o.mode = NULL;
  cr_assert_eq(cproton_session_start(&o, &id), CPROTON_OK, "%s", cproton_last_error());
  cr_assert_eq(cproton_session_wants_instrumentation_hook(id, &wants), CPROTON_OK);
  cr_assert_eq(wants, 0);
  cr_assert_eq(cproton_session_instr_mode(id, &got), CPROTON_EINVAL);
  cr_assert_eq(cproton_session_finalize(id, NULL), CPROTON_OK);

  /* in-kernel sums keep no records, which a trace needs: refused at start */
  o.backend = "instrumentation", o.mode = "default:reduce=kernel", o.data = "trace";
  cr_assert_eq(cproton_session_start(&o, &id), CPROTON_EPARSE);
  cr_assert(strstr(cproton_last_error(), "which traces need"), "%s", cproton_last_error());
  cr_assert_eq(cproton_session_count(), 0);
  cproton_log_set_handler(NULL, NULL, CPROTON_LOG_WARN);
  unlink("/tmp/cp_conform_instr.hatchet");
}
