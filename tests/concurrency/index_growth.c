/* index_growth.c -- threads racing the growth of the string table's and the
 * context tree's indexes (core/sohash.c): four threads intern the same
 * names and create the same nodes in different orders while both tables
 * double from 256 buckets to 2^16 and 2^17, and a fifth reads back what they
 * publish. A plain program (`make tsan` runs it under ThreadSanitizer with
 * halt_on_error); every build checks afterwards that all threads got the
 * same ids and nodes, that each name and node exists once, and that the
 * lists are sorted with bounded runs. Two rounds, with the quiescent reset
 * between them. Exit status 0 = pass. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cct.h"
#include "core/strtab.h"

enum { N_NAMES = 60000, N_THREADS = 4, LONGEST_RUN = 32 };

static uint32_t ids[N_THREADS][N_NAMES];
static cp_node *nodes[N_THREADS][N_NAMES];
static _Atomic int published; /* names thread 0 has finished */
static _Atomic int stop;
static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "index_growth: " __VA_ARGS__);                           \
      fputc('\n', stderr);                                                     \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static int name_of(int round, int i, char *buf, size_t size) {
  return snprintf(buf, size, "r%d-name-%d", round, i);
}

typedef struct racer {
  int t, round;
} racer;

/* Every name, in an order of its own (a stride coprime with N_NAMES): an
 * intern and two nodes, (ROOT, name) and under it (node, name). */
static void *insert_all(void *arg) {
  static const long stride[N_THREADS] = {1, 7, 11, 13};
  racer *r = arg;
  char name[48];
  for (int j = 0; j < N_NAMES; j++) {
    int i = (int)((j * stride[r->t] + r->t * 7919L) % N_NAMES);
    int len = name_of(r->round, i, name, sizeof name);
    if (cp_strtab_intern_scoped(name, (size_t)len, &ids[r->t][i]))
      return NULL; /* the check after join reports it */
    cp_node *n = cp_cct_child(cp_cct_root(), ids[r->t][i]);
    nodes[r->t][i] = n ? cp_cct_child(n, ids[r->t][i]) : NULL;
    if (r->t == 0)
      atomic_store_explicit(&published, j + 1, memory_order_release);
  }
  return NULL;
}

/* Reads back, by id and by key, what thread 0 has published. */
static void *read_back(void *arg) {
  int round = *(int *)arg, bad = 0;
  char name[48];
  while (!atomic_load(&stop)) {
    int n = atomic_load_explicit(&published, memory_order_acquire);
    for (int i = n > 64 ? n - 64 : 0; i < n; i++) {
      int len = name_of(round, i, name, sizeof name);
      uint32_t id;
      const char *s = cp_strtab_str(ids[0][i]);
      if (!s || strcmp(s, name) || cp_strtab_intern_scoped(name, (size_t)len, &id) ||
          id != ids[0][i] || cp_cct_child(cp_cct_root(), id) != nodes[0][i]->parent)
        bad++;
    }
    /* Let the writers run: under valgrind, which runs one thread at a time,
     * a reader that never yields took whole time slices from them (CI's
     * valgrind job went from seconds to ~12 minutes). */
    sched_yield();
  }
  return (void *)(long)bad;
}

static void check_index(const char *what, const cp_sohash_stats *s, size_t n) {
  CHECK(s->sorted, "%s: the list is out of key order", what);
  CHECK(s->n_items == n, "%s: %zu items, want %zu", what, s->n_items, n);
  CHECK(s->n_items <= CP_SOHASH_MAX_LOAD * s->n_buckets,
        "%s: %zu items in %zu buckets", what, s->n_items, s->n_buckets);
  CHECK(s->longest_run <= LONGEST_RUN, "%s: a run of %zu items", what,
        s->longest_run);
}

static void check_round(int round) {
  for (int i = 0; i < N_NAMES; i++)
    for (int t = 1; t < N_THREADS; t++)
      if (ids[t][i] != ids[0][i] || nodes[t][i] != nodes[0][i] || !nodes[t][i]) {
        CHECK(0, "round %d, name %d: thread %d disagrees", round, i, t);
        return;
      }
  CHECK(cp_strtab_scoped_count() == N_NAMES, "%zu scoped names",
        cp_strtab_scoped_count());
  cp_sohash_stats s;
  cp_strtab_stats(1, &s);
  check_index("names", &s, N_NAMES);
  cp_cct_stats(&s);
  check_index("tree", &s, 2 * N_NAMES);
  int children = 0;
  for (cp_node *c = atomic_load(&cp_cct_root()->first_child); c;
       c = c->next_sibling)
    children++;
  CHECK(children == N_NAMES, "ROOT has %d children", children);
  for (int i = 0; i < N_NAMES; i++)
    CHECK(cp_cct_node(nodes[0][i]->id) == nodes[0][i], "node %d by id", i);
}

int main(void) {
  for (int round = 0; round < 2; round++) {
    pthread_t th[N_THREADS], reader;
    racer r[N_THREADS];
    atomic_store(&published, 0);
    atomic_store(&stop, 0);
    pthread_create(&reader, NULL, read_back, &round);
    for (int t = 0; t < N_THREADS; t++) {
      r[t] = (racer){t, round};
      pthread_create(&th[t], NULL, insert_all, &r[t]);
    }
    for (int t = 0; t < N_THREADS; t++)
      pthread_join(th[t], NULL);
    atomic_store(&stop, 1);
    void *bad;
    pthread_join(reader, &bad);
    CHECK(bad == NULL, "round %d: %ld bad reads", round, (long)bad);
    check_round(round);
    cp_cct_reset(); /* quiescent: every thread has joined */
    cp_strtab_scoped_reset();
  }
  printf("index_growth: %d names x %d threads x 2 rounds, %d failures\n",
         N_NAMES, N_THREADS, failures);
  return failures ? 1 : 0;
}
