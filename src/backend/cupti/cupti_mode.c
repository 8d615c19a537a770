/* backend/cupti/cupti_mode.c -- which mode family a CUPTI mode string
 * names, as a table: one row per family {name, grammar, parser,
 * comparison}; the row's parser reads the whole string. The one place the
 * CUPTI backend's mode strings are parsed: the session layer calls it once
 * per session (parse_mode), start and same_mode read its result.
 * Invariant: a string whose first word names no row is refused with the
 * grammar of every row. Pure; not a hot path; fuzzed by
 * tests/fuzz/cupti_mode_fuzz.c. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "backend/cupti/cupti_mode.h"
#include "core/error.h"

static int pcs_parse(const char *mode, cp_cupti_mode *out) {
  return cp_pcs_mode_parse(mode, &out->pcs);
}
static int pcs_same(const cp_cupti_mode *a, const cp_cupti_mode *b) {
  return cp_pcs_options_same(&a->pcs, &b->pcs);
}

static int pm_parse(const char *mode, cp_cupti_mode *out) {
  return cp_pm_mode_parse(mode, &out->pm);
}
static int pm_same(const cp_cupti_mode *a, const cp_cupti_mode *b) {
  return cp_pm_options_same(&a->pm, &b->pm);
}

static const struct {
  const char *name;    /* the first word, compared without case */
  const char *seps;    /* what ends the first word (the family's separators) */
  const char *grammar; /* shown when no row matches */
  cp_cupti_family family;
  int (*parse)(const char *mode, cp_cupti_mode *out);
  int (*same)(const cp_cupti_mode *a, const cp_cupti_mode *b);
} families[] = {
    {"pcsampling", ":,", CP_PCS_GRAMMAR, CP_CUPTI_PCSAMPLING, pcs_parse, pcs_same},
    {"pmsampling", ":", CP_PM_GRAMMAR, CP_CUPTI_PMSAMPLING, pm_parse, pm_same},
};
#define N_FAMILIES (sizeof families / sizeof *families)

static int unknown(const char *mode) {
  char valid[512] = "''";
  for (size_t i = 0; i < N_FAMILIES; i++) {
    size_t n = strlen(valid);
    snprintf(valid + n, sizeof valid - n, " or %s", families[i].grammar);
  }
  return cp_error_set(CPROTON_EINVAL, "cupti mode '%s': unknown mode at "
                      "offset 0 (valid: %s)", mode, valid);
}

int cp_cupti_mode_parse(const char *mode, cp_cupti_mode *out) {
  memset(out, 0, sizeof *out);
  int rc = cp_pcs_mode_parse(NULL, &out->pcs); /* every family's defaults */
  if (rc || !mode || !*mode)
    return rc;
  for (size_t i = 0; i < N_FAMILIES; i++)
    if (strcspn(mode, families[i].seps) == strlen(families[i].name) &&
        strncasecmp(mode, families[i].name, strlen(families[i].name)) == 0) {
      out->family = families[i].family;
      return families[i].parse(mode, out);
    }
  return unknown(mode);
}

int cp_cupti_mode_same(const cp_cupti_mode *a, const cp_cupti_mode *b) {
  if (a->family != b->family)
    return 0;
  for (size_t i = 0; i < N_FAMILIES; i++)
    if (families[i].family == a->family)
      return families[i].same(a, b);
  return 1; /* kernel timing has no options */
}

_Static_assert(sizeof(cp_cupti_mode) <= CP_BACKEND_OPTS_BYTES,
               "a CUPTI mode fits a backend configuration");

const cp_cupti_mode *cp_cupti_mode_of(const cp_backend_config *config) {
  return CP_BACKEND_OPTS(cp_cupti_mode, config);
}

int cp_cupti_mode_parse_config(const char *mode, cp_backend_config *out) {
  cp_cupti_mode m;
  int rc = cp_cupti_mode_parse(mode, &m);
  cp_backend_config_set(out, mode, &m, sizeof m);
  return rc;
}

int cp_cupti_mode_same_config(const cp_backend_config *a,
                              const cp_backend_config *b) {
  return cp_cupti_mode_same(cp_cupti_mode_of(a), cp_cupti_mode_of(b));
}
