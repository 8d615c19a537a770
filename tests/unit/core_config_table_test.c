/* core_config_table_test.c -- the configuration table: lookups, the typed
 * reader, and docs/cupti.md's environment table equal to the C table. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_table.h"
#include "cproton/cproton.h"

Test(core_config_table, names_are_unique_and_found) {
  for (size_t i = 0; i < cp_config_count(); i++) {
    const cp_config_row *r = cp_config_at(i);
    cr_assert_eq(cp_config_find(r->name), r, "%s listed twice", r->name);
    cr_assert(r->doc && *r->doc, "%s has no documentation", r->name);
  }
  cr_assert_null(cp_config_find("CPROTON_NO_SUCH"));
  cr_assert_null(cp_config_get("CPROTON_NO_SUCH"));
  cr_assert(strstr(cproton_last_error(), "CPROTON_NO_SUCH"));
}

/* The public reader (the Python extension's and the tools'): rows only. */
Test(core_config_table, public_reader_takes_rows_only) {
  setenv("NO_COLOR", "1", 1);
  cr_assert_str_eq(cproton_config_get("NO_COLOR"), "1");
  unsetenv("NO_COLOR");
  cr_assert_null(cproton_config_get("NO_COLOR"));
  setenv("CPROTON_NOT_A_ROW", "x", 1);
  cr_assert_null(cproton_config_get("CPROTON_NOT_A_ROW"));
  cr_assert(strstr(cproton_last_error(), "CPROTON_NOT_A_ROW is not in the configuration table"),
            "%s", cproton_last_error());
  unsetenv("CPROTON_NOT_A_ROW");
}

Test(core_config_table, bool_reader_validates) {
  int v = -1;
  unsetenv("CPROTON_NVTX");
  cr_assert_eq(cp_config_bool("CPROTON_NVTX", &v), CPROTON_OK);
  cr_assert_eq(v, 1);
  setenv("CPROTON_NVTX", "OFF", 1);
  cr_assert_eq(cp_config_bool("CPROTON_NVTX", &v), CPROTON_OK);
  cr_assert_eq(v, 0);
  setenv("CPROTON_NVTX", "maybe", 1);
  cr_assert_eq(cp_config_bool("CPROTON_NVTX", &v), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "CPROTON_NVTX='maybe'"));
  cr_assert_str_eq(cp_config_source("CPROTON_NVTX"), "environment");
  unsetenv("CPROTON_NVTX");
  cr_assert_str_eq(cp_config_source("CPROTON_NVTX"), "default");
}

/* Adds each `NAME` of a table line's first cell to `seen` (one char per row
 * of the C table); a name the C table lacks fails the test. */
static void doc_line(const char *line, char *seen) {
  const char *end = strchr(line + 1, '|');
  for (const char *p = line; end && (p = strchr(p, '`')) && p < end;) {
    const char *q = strchr(p + 1, '`');
    if (!q)
      break;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(q - p - 1), p + 1);
    const cp_config_row *r = cp_config_find(name);
    cr_assert_not_null(r, "docs/cupti.md lists %s, the C table does not", name);
    seen[r - cp_config_at(0)] = 1;
    p = q + 1;
  }
}

Test(core_config_table, cupti_doc_table_matches) {
  FILE *f = fopen(CP_SOURCE_DIR "/docs/cupti.md", "r");
  cr_assert_not_null(f);
  char line[4096], seen[128] = {0};
  int in_table = 0;
  cr_assert(cp_config_count() <= sizeof seen);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "| variable | meaning | default |", 32) == 0)
      in_table = 1;
    else if (in_table && line[0] != '|')
      break;
    else if (in_table && strncmp(line, "|---", 4) != 0)
      doc_line(line, seen);
  }
  fclose(f);
  cr_assert(in_table, "docs/cupti.md has no environment table");
  for (size_t i = 0; i < cp_config_count(); i++) {
    const cp_config_row *r = cp_config_at(i);
    if (r->docs & CP_CFG_DOC_CUPTI)
      cr_assert(seen[i], "%s is missing from docs/cupti.md", r->name);
  }
}

/* The rank rows in table order are the lists "{rank}" and "{local_rank}"
 * read (docs/cupti.md); Python and the injection both take them from here. */
Test(core_config_table, rank_rows_in_order) {
  const char *want_rank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                             "PMI_RANK", "LOCAL_RANK"};
  const char *want_local[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                              "SLURM_LOCALID", "MPI_LOCALRANKID"};
  size_t nr = 0, nl = 0;
  for (size_t i = 0; i < cp_config_count(); i++) {
    const cp_config_row *r = cp_config_at(i);
    if (r->docs & CP_CFG_RANK)
      cr_assert_str_eq(r->name, want_rank[nr++]);
    if (r->docs & CP_CFG_LOCAL_RANK)
      cr_assert_str_eq(r->name, want_local[nl++]);
  }
  cr_assert_eq(nr, 5);
  cr_assert_eq(nl, 4);
}
