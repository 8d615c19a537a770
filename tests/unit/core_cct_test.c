/* core_cct_test.c -- interning and the context tree under concurrency. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/cct.h"
#include "core/strtab.h"

Test(core_strtab, same_name_same_id) {
  uint32_t a, b, c;
  cr_assert_eq(cp_strtab_intern("alpha", 5, &a), 0);
  cr_assert_eq(cp_strtab_intern("alphabet", 5, &b), 0);
  cr_assert_eq(cp_strtab_intern("beta", 4, &c), 0);
  cr_assert_eq(a, b);
  cr_assert_neq(a, c);
  cr_assert_str_eq(cp_strtab_str(a), "alpha");
  cr_assert_eq(cp_strtab_len(c), 4);
  cr_assert_null(cp_strtab_str(0));
  cr_assert_null(cp_strtab_str(0xFFFFFFF));
  cr_assert_neq(cp_strtab_intern(NULL, 0, &a), 0);
}

#define N_THREADS 4
#define N_NAMES 2000

static void *intern_many(void *arg) {
  uint32_t *ids = arg;
  char name[32];
  for (int i = 0; i < N_NAMES; i++) {
    snprintf(name, sizeof name, "name-%d", i);
    cp_strtab_intern(name, strlen(name), &ids[i]);
    cp_node *n = cp_cct_child(cp_cct_root(), ids[i]);
    cp_node *m = cp_cct_child(n, ids[i]);
    cr_assert_eq(m->parent, n);
  }
  return NULL;
}

Test(core_cct, racing_threads_agree_on_ids_and_nodes) {
  static uint32_t ids[N_THREADS][N_NAMES];
  pthread_t th[N_THREADS];
  for (int t = 0; t < N_THREADS; t++)
    pthread_create(&th[t], NULL, intern_many, ids[t]);
  for (int t = 0; t < N_THREADS; t++)
    pthread_join(th[t], NULL);
  for (int i = 0; i < N_NAMES; i++)
    for (int t = 1; t < N_THREADS; t++)
      cr_assert_eq(ids[t][i], ids[0][i]);
  /* each (ROOT, name) child exists exactly once in the child list */
  int seen = 0;
  for (cp_node *c = atomic_load(&cp_cct_root()->first_child); c;
       c = c->next_sibling)
    if (strncmp(cp_strtab_str(c->name), "name-", 5) == 0)
      seen++;
  cr_assert_eq(seen, N_NAMES);
}

Test(core_cct, ids_find_nodes) {
  cp_node *n = cp_cct_child_str(cp_cct_root(), "x");
  cp_node *k = cp_cct_child_str(n, "y");
  cr_assert_eq(cp_cct_node(k->id), k);
  cr_assert_eq(cp_cct_node(0), cp_cct_root());
  cr_assert_eq(k->depth, 2);
  cr_assert_lt(k->id, cp_cct_count());
}

/* Issue 24.15: the indexes of the tree and of the names double their
 * buckets as they grow, so a lookup walks a bounded run of items at any
 * size. With the former fixed 65,536 buckets, 2^20 entries made chains of
 * 16 on average (and ~22 us per new scope by the fifth million). */
#define N_GROWN (1u << 20)
#define LONGEST_RUN 32 /* Poisson(<= 2 * MAX_LOAD) never reaches it */

static void check_grown(const cp_sohash_stats *s, size_t n_items) {
  cr_assert(s->sorted, "the list is out of key order");
  cr_assert_eq(s->n_items, n_items, "%zu items in the index, want %zu",
               s->n_items, n_items);
  cr_assert_leq(s->n_items, (size_t)CP_SOHASH_MAX_LOAD * s->n_buckets,
                "%zu items in %zu buckets: the table did not grow",
                s->n_items, s->n_buckets);
  cr_assert_leq(s->longest_run, LONGEST_RUN, "a lookup walks %zu items",
                s->longest_run);
}

Test(core_cct, index_grows_with_the_tree) {
  /* 1024 outer nodes with 1023 children each: 2^20 nodes, 1024 names */
  uint32_t names[1024];
  char name[32];
  for (int i = 0; i < 1024; i++) {
    snprintf(name, sizeof name, "n%d", i);
    cr_assert_eq(cp_strtab_intern(name, strlen(name), &names[i]), 0);
  }
  for (int i = 0; i < 1024; i++) {
    cp_node *outer = cp_cct_child(cp_cct_root(), names[i]);
    for (int j = 0; j < 1023; j++)
      cr_assert_not_null(cp_cct_child(outer, names[(i + j + 1) % 1024]));
  }
  cp_sohash_stats s;
  cp_cct_stats(&s);
  check_grown(&s, N_GROWN);
  cr_assert_eq(cp_cct_count(), N_GROWN + 1);
  /* every node is found again, by (parent, name) and by id */
  for (uint32_t id = 1; id <= N_GROWN; id++) {
    cp_node *n = cp_cct_node(id);
    cr_assert_not_null(n);
    cr_assert_eq(cp_cct_child(n->parent, n->name), n);
  }
  cp_cct_reset();
  cp_cct_stats(&s);
  cr_assert_eq(s.n_items, 0);
  cr_assert_eq(s.n_markers, 1, "markers of freed buckets are still linked");
  cr_assert_eq(cp_cct_child(cp_cct_root(), names[7])->id, 1);
}

Test(core_strtab, scoped_names_grow_and_reset) {
  char name[32];
  for (int round = 0; round < 2; round++) {
    for (uint32_t i = 0; i < N_GROWN; i++) {
      uint32_t id;
      int len = snprintf(name, sizeof name, "scope-%u", i);
      cr_assert_eq(cp_strtab_intern_scoped(name, (size_t)len, &id), 0);
      cr_assert_eq(id, (1u << 24) | (i + 1), "name %u got id %#x", i, id);
    }
    cp_sohash_stats s;
    cp_strtab_stats(1, &s);
    check_grown(&s, N_GROWN);
    for (uint32_t i = 0; i < N_GROWN; i += 4099) {
      snprintf(name, sizeof name, "scope-%u", i);
      cr_assert_str_eq(cp_strtab_str((1u << 24) | (i + 1)), name);
    }
    cp_strtab_scoped_reset(); /* ids start again from 1 */
    cp_strtab_stats(1, &s);
    cr_assert_eq(s.n_items, 0);
    cr_assert_eq(cp_strtab_scoped_count(), 0);
  }
}

/* Kernel names are looked up by address first (cct.c's name cache): an
 * address reused for another name, as a freed and reallocated buffer is,
 * must still give that other name's node. */
Test(core_cct, a_reused_name_address_gives_the_new_name) {
  char buf[64];
  cp_node *root = cp_cct_root();
  snprintf(buf, sizeof buf, "kernel_alpha");
  cp_node *a = cp_cct_child_str(root, buf);
  cr_assert_eq(cp_cct_child_str(root, buf), a, "same address, same name");
  snprintf(buf, sizeof buf, "kernel_beta");
  cp_node *b = cp_cct_child_str(root, buf);
  cr_assert_neq(a, b);
  cr_assert_str_eq(cp_strtab_str(b->name), "kernel_beta");
  cr_assert_str_eq(cp_strtab_str(a->name), "kernel_alpha");
  const char *other = "kernel_alpha";
  cr_assert_eq(cp_cct_child_str(root, other), a, "another address, same name");
}
