/* backend_cupti_ranks_test.c -- the injection entry point's multi-process
 * rules: where {rank} and {local_rank} come from, and the session options
 * the injection starts with. CPU only: the configuration is read from the
 * environment, nothing touches CUDA. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <stdlib.h>

#include "backend/cupti/config.h"

static const char *const vars[] = {
    "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", NULL};

static void clear_env(void) {
  for (const char *const *v = vars; *v; v++)
    unsetenv(*v);
}

static cp_inject_config read_config(void) {
  cp_inject_config c;
  cp_inject_config_from_env(&c);
  return c;
}

Test(backend_cupti_ranks, no_launcher_variables, .init = clear_env) {
  cp_inject_config c = read_config();
  cr_assert_eq(c.rank, -1);
  cr_assert_eq(c.local_rank, -1);
}

Test(backend_cupti_ranks, each_launcher_is_understood, .init = clear_env) {
  static const struct {
    const char *var;
    int is_local;
  } launchers[] = {{"RANK", 0},         {"OMPI_COMM_WORLD_RANK", 0},
                   {"SLURM_PROCID", 0}, {"PMI_RANK", 0},
                   {"LOCAL_RANK", 1},   {"OMPI_COMM_WORLD_LOCAL_RANK", 1},
                   {"SLURM_LOCALID", 1}, {"MPI_LOCALRANKID", 1}};
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
    clear_env();
    setenv(launchers[i].var, "7", 1);
    cp_inject_config c = read_config();
    cr_assert_eq(launchers[i].is_local ? c.local_rank : c.rank, 7, "%s",
                 launchers[i].var);
  }
}

Test(backend_cupti_ranks, global_rank_wins_over_local, .init = clear_env) {
  setenv("LOCAL_RANK", "1", 1);
  setenv("SLURM_PROCID", "9", 1);
  cr_assert_eq(read_config().rank, 9);
  setenv("RANK", "5", 1);
  cp_inject_config c = read_config();
  cr_assert_eq(c.rank, 5, "RANK is the most specific");
  cr_assert_eq(c.local_rank, 1);
  clear_env();
  setenv("LOCAL_RANK", "3", 1);
  cr_assert_eq(read_config().rank, 3, "a lone LOCAL_RANK is the rank");
}

Test(backend_cupti_ranks, garbage_is_no_rank, .init = clear_env) {
  setenv("RANK", "x1", 1);
  setenv("PMI_RANK", "-2", 1);
  setenv("SLURM_PROCID", "4", 1);
  cr_assert_eq(read_config().rank, 4, "bad values are skipped");
}
#endif
