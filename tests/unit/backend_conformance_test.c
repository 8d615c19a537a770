/* backend_conformance_test.c -- what every backend that runs without a GPU
 * must do (backend/backend.h): a silent, cheap `available`; a start / flush
 * / stop life cycle that can run twice; a bad mode refused with EINVAL and
 * a message, before anything starts; mode_compatible reflexive; and a
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
      cr_assert_eq(b->start(NULL), CPROTON_OK, "%s: %s", cpu_backends[i],
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
    cr_assert(b->check_mode, "%s: a backend with modes checks them", checked[i].name);
    cr_assert_eq(b->check_mode(checked[i].bad_mode), CPROTON_EINVAL, "%s",
                 checked[i].name);
    cr_assert(strlen(cproton_last_error()) > 0, "%s: no message", checked[i].name);
    cr_assert_eq(b->check_mode(NULL), CPROTON_OK, "%s: the default mode", checked[i].name);
  }
}

Test(backend_conformance, mode_compatible_is_reflexive) {
  for (size_t i = 0; i < N_CHECKED; i++) {
    const cp_backend_ops *b = find(checked[i].name);
    if (!b->mode_compatible)
      continue; /* the session compares the strings */
    cr_assert(b->mode_compatible(NULL, NULL), "%s", checked[i].name);
    cr_assert(b->mode_compatible("", NULL), "%s: NULL == \"\"", checked[i].name);
  }
  const cp_backend_ops *s = find("skeleton");
  cr_assert(s->mode_compatible("default", ""), "same meaning, same mode");
  cr_assert(!s->mode_compatible("count", ""), "a different mode is refused");
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
