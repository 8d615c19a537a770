/* ptx_golden.c -- the PTX pass tests' fixtures and golden files: inputs in
 * tests/data/ptx/, expected outputs in tests/data/instrument/
 * (CPROTON_UPDATE_GOLDEN=1 rewrites them). Used by instrument_pass_test and
 * instrument_sums_test. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"
#include "testutil.h"

char *cpt_ptx_fixture(const char *name, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, CP_DATA_DIR "/ptx/%s.ptx", name);
  char *t = cpt_read_file(path, n);
  cr_assert_not_null(t, "missing fixture %s", path);
  return t;
}

void cpt_ptx_golden(const char *fx, const char *variant, const cproton_ptx_options *o) {
  size_t n, gn, on;
  char *in = cpt_ptx_fixture(fx, &n);
  cproton_ptx *p = NULL;
  cr_assert_eq(cproton_ptx_instrument(in, n, o, &p), CPROTON_OK, "instrument failed: %s", cproton_last_error());
  const char *out = cproton_ptx_text(p, &on);
  char path[512];
  snprintf(path, sizeof path, CP_DATA_DIR "/instrument/%s.%s.ptx", fx, variant);
  if (getenv("CPROTON_UPDATE_GOLDEN")) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite(out, 1, on, f);
    fclose(f);
  }
  char *g = cpt_read_file(path, &gn);
  cr_assert_not_null(g, "missing golden %s (CPROTON_UPDATE_GOLDEN=1 writes it)", path);
  cr_assert(gn == on && !memcmp(g, out, on), "%s differs from the golden file", path);
  free(g);
  cproton_ptx_free(p);
  free(in);
}
