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
