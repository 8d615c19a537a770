/* names_compaction.c -- the context tree and the scoped names are freed at
 * the last finalize (issue 16 item 13), and only when nothing holds them:
 * counts of live scoped strings and nodes return to their baseline, a frame
 * held across a finalize defers the compaction, an exited scope's id from
 * before it is refused, tensor-metric slots keep their scope path across
 * it, a launch site captured before it is never dereferenced, periodic
 * flushing's phase stores are reused safely, and threads recording (and
 * folding tensor metrics) while sessions come and go never touch freed
 * memory (`make tsan` and `make asan` run it). A plain
 * program, as tests/concurrency wants; exit status 0 = pass. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/fake/fake.h"
#include "backend/fake/workload.h"
#include "core/cct.h"
#include "core/session.h"
#include "core/strtab.h"
#include "core/tmetric.h"
#include "cproton/cproton.h"

/* gcc says __SANITIZE_*__, clang 14 only __has_feature (MSan: clang only) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#define SANITIZED (__has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
                   __has_feature(memory_sanitizer))
#else
#define SANITIZED 0
#endif

enum { N_NAMES = 100000, N_THREADS = 4, ROUNDS = 30 };

static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *dir = ".";

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      pthread_mutex_lock(&fail_lock);                                          \
      failures++;                                                              \
      fprintf(stderr, "names_compaction:%d: ", __LINE__);                      \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, " (%s)\n", cproton_last_error());                        \
      pthread_mutex_unlock(&fail_lock);                                        \
    }                                                                          \
  } while (0)

static int start(const char *backend) {
  char path[512];
  snprintf(path, sizeof path, "%s/names_compaction", dir);
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = path;
  o.backend = backend;
  int sid = -1;
  int rc = cproton_session_start(&o, &sid);
  CHECK(rc == 0, "session_start: %s", cproton_error_name(rc));
  return sid;
}

/* Resident memory in MB (10^6 bytes), as bench/names_memory_bench prints. */
static double rss_mb(void) {
  return (double)cp_fake_workload_rss_kib() * 1024.0 / 1e6;
}

static void enter_exit(const char *prefix, int n) {
  char name[64];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "%s%d", prefix, i);
    int rc = cproton_scope_enter(name, NULL);
    CHECK(rc == 0, "scope_enter %s", name);
    rc = cproton_scope_exit(name);
    CHECK(rc == 0, "scope_exit %s", name);
  }
}

/* n distinct names in a session (10^5; 10^6 in the names_memory test):
 * after its finalize no scoped string and no node but ROOT is left, and
 * resident memory is back within a few MB of the start (issue 16.13: 10^6
 * names kept 142 MB). */
static void test_counts_return(int n) {
  unsigned before = cp_session_compactions();
  double rss0 = rss_mb();
  int sid = start("none");
  enter_exit("name", n);
  CHECK(cp_strtab_scoped_count() == (size_t)n, "scoped count %zu",
        cp_strtab_scoped_count());
  CHECK(cp_cct_count() > (unsigned)n, "nodes %u", cp_cct_count());
  double rss1 = rss_mb();
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize");
  double rss2 = rss_mb();
  CHECK(cp_session_compactions() == before + 1, "no compaction");
  CHECK(cp_strtab_scoped_count() == 0, "scoped names left: %zu",
        cp_strtab_scoped_count());
  CHECK(cp_cct_count() == 1, "nodes left: %u", cp_cct_count());
#if !SANITIZED
  /* sanitizers keep freed memory in quarantine: counts only there */
  CHECK(rss2 - rss0 < 8.0 && rss2 - rss0 < (rss1 - rss0) / 4,
        "RSS %.1f -> %.1f -> %.1f MB", rss0, rss1, rss2);
#endif
  printf("names_compaction: %d names: RSS %.1f -> %.1f -> %.1f MB\n", n,
         rss0, rss1, rss2);
}

/* A scope open across the finalize holds its node: no compaction until it
 * exits and another session ends. States and ops hold theirs the same way. */
static void test_held_defers(void) {
  unsigned before = cp_session_compactions();
  int sid = start("none");
  CHECK(cproton_scope_enter("outer", NULL) == 0, "enter outer");
  CHECK(cproton_op_enter("op") == 0, "op");
  enter_exit("inner", 100);
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize");
  CHECK(cp_session_compactions() == before, "compacted under an open scope");
  CHECK(cp_strtab_scoped_count() > 0, "scoped names freed under a scope");
  CHECK(cproton_scope_exit("outer") == 0, "exit outer after finalize");
  sid = start("none");
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize 2");
  CHECK(cp_session_compactions() == before, "compacted under an open op");
  CHECK(cproton_op_exit() == 0, "op exit");
  sid = start("none");
  CHECK(cproton_state_enter("state") == 0, "state");
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize 3");
  CHECK(cp_session_compactions() == before, "compacted under a state");
  CHECK(cproton_state_exit() == 0, "state exit");
  sid = start("none");
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize 4");
  CHECK(cp_session_compactions() == before + 1, "no compaction at the end");
  CHECK(cp_strtab_scoped_count() == 0, "scoped names left");
}

/* A scope id from before a compaction no longer finds its (freed) node;
 * names entered afterwards are recorded under their own names. */
static void test_stale_recent(void) {
  int sid = start("none");
  uint64_t id;
  CHECK(cproton_scope_enter("gone", &id) == 0, "enter");
  CHECK(cproton_scope_exit("gone") == 0, "exit");
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize");
  sid = start("none");
  int rc = cproton_metric_add_int(id, "late", 1);
  CHECK(rc == CPROTON_ENOTFOUND, "metric on a freed scope: %s",
        cproton_error_name(rc));
  uint64_t id2;
  CHECK(cproton_scope_enter("fresh", &id2) == 0, "enter fresh");
  CHECK(cproton_metric_add_int(id2, "m", 7) == 0, "metric fresh");
  CHECK(cproton_scope_exit("fresh") == 0, "exit fresh");
  char *json = NULL;
  CHECK(cproton_session_data_json(sid, &json, NULL) == 0, "json");
  CHECK(json && strstr(json, "\"fresh\"") && !strstr(json, "\"gone\""),
        "tree after compaction: %s", json ? json : "(null)");
  cproton_free(json);
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize 2");
}

static int stop_flag;

/* Distinct and repeated names, metrics, states, ops and kernel launches
 * while the main thread starts and finalizes sessions. */
static void *recorder(void *arg) {
  int index = (int)(size_t)arg;
  char name[64];
  for (unsigned i = 0; !__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE); i++) {
    snprintf(name, sizeof name, "t%d_%u", index, i % 5000);
    uint64_t id;
    int rc = i % 7 ? cproton_scope_enter(name, &id)
                   : cproton_cpu_timed_scope_enter(name, &id);
    CHECK(rc == 0, "enter %s", name);
    cproton_metric_add_int(id, "n", 1);
    cproton_metric_add_string(0, "s", name);
    CHECK(cproton_state_enter("st") == 0, "state");
    CHECK(cproton_op_enter(i % 2 ? "opA" : name) == 0, "op");
    cp_fake_launch("kernel", 10, 0, 0);
    CHECK(cproton_op_exit() == 0, "op exit");
    CHECK(cproton_state_exit() == 0, "state exit");
    CHECK(cproton_scope_exit(name) == 0, "exit %s", name);
    if (i % 8 == 0) { /* a slot and a fold racing the compaction */
      uint32_t slot;
      CHECK(cproton_scope_enter("tms", &id) == 0, "enter tms");
      CHECK(cproton_tensor_metric_slot(id, "tm", 0, &slot) == 0, "slot");
      uint64_t words[2] = {slot, 1};
      if (slot != CPROTON_TENSOR_METRIC_NONE)
        CHECK(cproton_tensor_metric_fold(words, 2, NULL) == 0, "fold");
      CHECK(cproton_scope_exit("tms") == 0, "exit tms");
    }
    if (i % 16 == 0) /* idle now and then: compactions happen while others run */
      usleep(20);
  }
  return NULL;
}

static void test_racing(void) {
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++)
    pthread_create(&th[i], NULL, recorder, (void *)(size_t)i);
  for (int r = 0; r < ROUNDS; r++) {
    int sid = start(r % 2 ? "fake" : "none");
    usleep(2000);
    CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize round %d", r);
    usleep(500);
  }
  __atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < N_THREADS; i++)
    pthread_join(th[i], NULL);
  unsigned before = cp_session_compactions();
  int sid = start("none");
  CHECK(cproton_session_finalize(sid, NULL) == 0, "last finalize");
  CHECK(cp_session_compactions() == before + 1, "no compaction after the race");
  /* what stays: the recorders' tensor-metric slots' path, ROOT/tms */
  unsigned kept = cp_tmetric_count() ? 1 : 0;
  CHECK(cp_strtab_scoped_count() == kept, "scoped names left: %zu",
        cp_strtab_scoped_count());
  CHECK(cp_cct_count() == 1 + kept, "nodes left: %u", cp_cct_count());
}

static void fold(uint32_t slot, uint64_t value) {
  uint64_t words[2] = {slot, value};
  size_t n = 0;
  int rc = cproton_tensor_metric_fold(words, 2, &n);
  CHECK(rc == 0, "fold slot %u: %s", slot, cproton_error_name(rc));
}

static void expect_json(int sid, const char *const *want, const char *what) {
  char *json = NULL;
  CHECK(cproton_session_data_json(sid, &json, NULL) == 0, "json");
  size_t k = 0; /* without the indentation (no name here has a space) */
  for (size_t i = 0; json && json[i]; i++)
    if (json[i] != ' ' && json[i] != '\n')
      json[k++] = json[i];
  if (json)
    json[k] = 0;
  for (; json && *want; want++)
    CHECK(strstr(json, *want), "%s: no %s in %s", what, *want, json);
  cproton_free(json);
}

/* Tensor-metric slots name nodes, and their ids live on in device buffers
 * and captured graphs: the compaction re-creates their paths, so records
 * folded in later sessions land on the same scopes and read no freed node
 * (ASan), while every other name is freed. */
static void test_tensor_metric_slots(void) {
  int sid = start("none");
  uint64_t outer, inner;
  uint32_t s_inner, s_op, s_root;
  CHECK(cproton_scope_enter("step", &outer) == 0, "enter step");
  CHECK(cproton_scope_enter("inner", &inner) == 0, "enter inner");
  CHECK(cproton_tensor_metric_slot(inner, "tokens", 0, &s_inner) == 0, "slot");
  CHECK(cproton_op_enter("matmul") == 0, "op");
  CHECK(cproton_tensor_metric_slot(CPROTON_CURRENT_OP, "flops", 1, &s_op) == 0,
        "op slot");
  CHECK(cproton_op_exit() == 0, "op exit");
  enter_exit("junk", 1000); /* under inner: freed at the finalize */
  CHECK(cproton_scope_exit("inner") == 0, "exit inner");
  CHECK(cproton_scope_exit("step") == 0, "exit step");
  CHECK(cproton_tensor_metric_slot(0, "loss", 1, &s_root) == 0, "root slot");
  unsigned before = cp_session_compactions();
  size_t scoped_before = cp_strtab_scoped_count();
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize");
  CHECK(cp_session_compactions() == before + 1, "no compaction");
  /* kept: step, inner, matmul (plus whatever earlier tests' slots keep) */
  CHECK(cp_strtab_scoped_count() <= scoped_before - 1000, "scoped %zu -> %zu",
        scoped_before, cp_strtab_scoped_count());
  for (int round = 0; round < 2; round++) {
    fold(s_inner, 100); /* no session: folded into nothing */
    sid = start("none");
    enter_exit("other", 1000); /* new nodes where the old ones were */
    fold(s_inner, 5);
    fold(s_inner, 6);
    fold(s_op, 0x4000000000000000ull); /* 2.0 */
    fold(s_root, 0x3ff0000000000000ull); /* 1.0 */
    const char *want[] = {"\"step\"", "\"inner\"", "\"matmul\"",
                          "\"tokens\":11", "\"flops\":2", "\"loss\":1",
                          NULL};
    expect_json(sid, want, round ? "after two compactions" : "after one");
    before = cp_session_compactions();
    CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize %d", round);
    CHECK(cp_session_compactions() == before + 1, "no compaction %d", round);
  }
}

/* A launch site captured before a compaction holds freed nodes: delivered
 * afterwards (a decoder thread or a CUPTI buffer late), it must reach no
 * session and read nothing, even in a session started in the same slot. */
static void test_stale_site(void) {
  int sid = start("none");
  cp_launch_site site;
  CHECK(cproton_scope_enter("launcher", NULL) == 0, "enter");
  cp_session_capture(&site);
  CHECK(site.sessions != 0 && site.node[CP_CONTEXT_SHADOW], "captured");
  CHECK(cproton_scope_exit("launcher") == 0, "exit");
  unsigned before = cp_session_compactions();
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize");
  CHECK(cp_session_compactions() == before + 1, "no compaction");
  sid = start("none");
  enter_exit("fresh", 100);
  cp_kernel_record r = {.name = "late_kernel", .start_ns = 1, .end_ns = 2};
  CHECK(cp_session_deliver_kernel(&site, &r) == 0, "deliver");
  uint32_t names[1], metric;
  cp_strtab_intern("region", 6, &names[0]);
  cp_strtab_intern("cycles", 6, &metric);
  CHECK(cp_session_deliver_path_metric(&site, "late_kernel", names, 1, metric,
                                       (cp_value){CP_VALUE_INT, {.i = 1}}) ==
            0,
        "deliver path metric");
  char *json = NULL;
  CHECK(cproton_session_data_json(sid, &json, NULL) == 0, "json");
  CHECK(json && !strstr(json, "late_kernel") && !strstr(json, "launcher"),
        "a stale site reached the new session: %s", json ? json : "(null)");
  cproton_free(json);
  CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize 2");
}

/* Periodic flushing: the stores of written phases are trimmed by the
 * compaction and reused by the next session in the slot. */
static void test_phases(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/names_compaction_phases", dir);
  for (int round = 0; round < 2; round++) {
    cproton_session_options o;
    cproton_session_options_init(&o);
    o.name = path;
    o.backend = "fake";
    o.mode = "periodic_flushing";
    int sid = -1;
    CHECK(cproton_session_start(&o, &sid) == 0, "start phases");
    for (int ph = 0; ph < 3; ph++) {
      char prefix[32];
      snprintf(prefix, sizeof prefix, "r%dp%d_", round, ph);
      CHECK(cproton_scope_enter(prefix, NULL) == 0, "enter");
      cp_fake_launch("k", 10, 0, 0);
      enter_exit(prefix, 200);
      CHECK(cproton_scope_exit(prefix) == 0, "exit");
      CHECK(cproton_session_advance_phase(sid, NULL) == 0, "advance");
    }
    unsigned before = cp_session_compactions();
    CHECK(cproton_session_finalize(sid, NULL) == 0, "finalize phases");
    CHECK(cp_session_compactions() == before + 1, "no compaction");
  }
}

/* usage: names_compaction DIR [memory N]: with "memory", only the RSS
 * check with N names (tests/CMakeLists.txt: names_memory, 10^6). */
int main(int argc, char **argv) {
  dir = argc > 1 ? argv[1] : ".";
  if (argc > 3 && strcmp(argv[2], "memory") == 0) {
    test_counts_return(atoi(argv[3]));
    return failures != 0;
  }
  test_counts_return(N_NAMES);
  test_held_defers();
  test_stale_recent();
  test_stale_site();
  test_phases();
  test_racing();
  test_tensor_metric_slots();
  printf("names_compaction: %d failures (%u compactions)\n", failures,
         cp_session_compactions());
  return failures != 0;
}
