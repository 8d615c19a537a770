/* session_race.c -- threads racing the session table, scopes, metrics and
 * the context tree, as a plain program (no Criterion: its forked workers
 * cannot start under ThreadSanitizer). `make tsan` runs it under TSan with
 * halt_on_error, so any data race fails the test; every build checks the
 * counts afterwards. Exit status 0 = pass. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fake/fake.h"
#include "core/cct.h"
#include "core/session.h"
#include "cproton/cproton.h"

enum { N_SCOPE = 8, N_SESSION = 3, ROUNDS = 40, ITERS = 2000 };

static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, int rc) {
  pthread_mutex_lock(&fail_lock);
  failures++;
  fprintf(stderr, "session_race: %s: %s (%s)\n", what, cproton_error_name(rc),
          cproton_last_error());
  pthread_mutex_unlock(&fail_lock);
}

typedef struct racer {
  int index, stop;
  const char *dir;
} racer;

/* Scopes, metrics, states and kernels while sessions come and go. */
static void *scope_racer(void *arg) {
  racer *r = arg;
  char name[32];
  snprintf(name, sizeof name, "scope%d", r->index % 3);
  while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
    uint64_t id;
    int rc = cproton_scope_enter(name, &id);
    if (rc) {
      fail("scope_enter", rc);
      return NULL;
    }
    cproton_metric_add_int(id, "n", 1);
    cproton_state_enter("state");
    cp_fake_launch("kernel", 100, 0, 0);
    cproton_state_exit();
    if ((rc = cproton_scope_exit(name)))
      fail("scope_exit", rc);
  }
  return NULL;
}

/* Starts and finalizes its own sessions, reusing slots other threads read. */
static void *session_racer(void *arg) {
  racer *r = arg;
  char path[512];
  for (int i = 0; i < ROUNDS; i++) {
    cproton_session_options o;
    cproton_session_options_init(&o);
    snprintf(path, sizeof path, "%s/race_%d", r->dir, r->index);
    o.name = path;
    o.backend = "fake";
    int sid, rc = cproton_session_start(&o, &sid);
    if (rc == CPROTON_ELIMIT)
      continue;
    if (rc) {
      fail("session_start", rc);
      continue;
    }
    if ((rc = cproton_session_finalize(sid, NULL)))
      fail("session_finalize", rc);
  }
  return NULL;
}

/* New children of one parent from every thread: the hint is published by
 * one thread and read by the others. */
static void *tree_racer(void *arg) {
  racer *r = arg;
  char name[32];
  for (int i = 0; i < ITERS; i++) {
    snprintf(name, sizeof name, "n%d", (i + r->index) % 64);
    cp_node *n = cp_cct_child_str(cp_cct_root(), name);
    if (!n)
      fail("cct_child", CPROTON_ENOMEM);
    else if (n->parent != cp_cct_root() || strcmp(name, cproton_last_error()) == 0)
      fail("cct parent", CPROTON_EINVAL);
  }
  return NULL;
}

static void *count_racer(void *arg) {
  (void)arg;
  for (int i = 0; i < ITERS; i++) {
    uint64_t id;
    if (cproton_scope_enter("counted", &id) || cproton_metric_add_int(id, "n", 1) ||
        cproton_scope_exit("counted"))
      fail("counted scope", CPROTON_EINVAL);
  }
  return NULL;
}

static void run(void *(*fn)(void *), int n, racer *rs, int join_stop) {
  pthread_t th[16];
  for (int i = 0; i < n; i++)
    pthread_create(&th[i], NULL, fn, &rs[i]);
  if (!join_stop)
    for (int i = 0; i < n; i++)
      pthread_join(th[i], NULL);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  racer scopes[N_SCOPE], sessions[N_SESSION], trees[N_SCOPE];
  pthread_t th[N_SCOPE];
  for (int i = 0; i < N_SCOPE; i++) {
    scopes[i] = (racer){.index = i, .dir = dir};
    trees[i] = (racer){.index = i, .dir = dir};
    pthread_create(&th[i], NULL, scope_racer, &scopes[i]);
  }
  for (int i = 0; i < N_SESSION; i++)
    sessions[i] = (racer){.index = i, .dir = dir};
  run(session_racer, N_SESSION, sessions, 0);
  run(tree_racer, N_SCOPE, trees, 0);
  for (int i = 0; i < N_SCOPE; i++)
    __atomic_store_n(&scopes[i].stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < N_SCOPE; i++)
    pthread_join(th[i], NULL);
  if (cproton_session_count() != 0)
    fail("sessions left", CPROTON_ESTATE);
  /* the counts: in one session, every thread's metric adds arrive */
  cproton_session_options o;
  cproton_session_options_init(&o);
  char path[512];
  snprintf(path, sizeof path, "%s/race_count", dir);
  o.name = path;
  o.backend = "fake";
  int sid, rc = cproton_session_start(&o, &sid);
  if (rc)
    fail("count session", rc);
  for (int i = 0; i < N_SCOPE; i++)
    pthread_create(&th[i], NULL, count_racer, NULL);
  for (int i = 0; i < N_SCOPE; i++)
    pthread_join(th[i], NULL);
  char *json = NULL, want[64];
  snprintf(want, sizeof want, "\"n\": %d", N_SCOPE * ITERS);
  if (!rc && (cproton_session_data_json(sid, &json, NULL) || !strstr(json, want)))
    fail("metric total", CPROTON_EINVAL);
  cproton_free(json);
  cproton_session_finalize(sid, NULL);
  printf("session_race: %d failures\n", failures);
  return failures != 0;
}
