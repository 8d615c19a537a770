/* tools/viewer/util.c -- the `util` metric: max(FLOP time, byte time) at the
 * device's peak divided by the measured time, with peaks from the profile's
 * device info as triton/profiler/specs.py computes them.
 *
 * Invariant: one table per vendor (CUDA by arch, AMD by gfx name); a missing
 * entry is an error naming the file and the arch, never a guess.
 * Called by derive.c; uses timecol.c, never derive.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "viewer.h"

static const struct {
  const char *arch;
  double bps, fp8_flops_per_clock_per_cu;
} amd[] = {{"gfx90a", 3.2e12, 1024}, {"gfx942", 5.3e12, 4096},
           {"gfx950", 8.0e12, 8192}};

static int amd_entry(const char *arch) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(arch, amd[i].arch))
      return i;
  return -1;
}

/* specs.max_flops(); -1 with vw_errmsg for unknown devices. */
int vw_peak_flops(const char *file, const cproton_device_info *d,
                     int width, double *out) {
  double w = width / 8.0, sms = d->num_sms, clk = d->clock_rate_khz;
  if (!strcmp(d->type, "HIP")) {
    int a = amd_entry(d->arch);
    if (a < 0)
      return vw_fail("%s: util: unsupported AMD arch \"%s\"", file, d->arch);
    *out = amd[a].fp8_flops_per_clock_per_cu * sms * clk * 1e3 / w;
    return 0;
  }
  if (strcmp(d->type, "CUDA"))
    return vw_fail("%s: util: unsupported device type \"%s\"", file,
                   d->type);
  if (!strcmp(d->arch, "80"))
    *out = 624e12 / w;
  else if (!strcmp(d->arch, "89"))
    *out = (330.3 * 1e12) / w;
  else if (!strcmp(d->arch, "90"))
    *out = ((sms / 114 * clk / (1755 * 1e3) * 1513) * 1e12) / w;
  else if (!strcmp(d->arch, "100"))
    *out = (sms * 16384 * (clk / 1e3) * 1e6) / w;
  else
    return vw_fail("%s: util: unsupported CUDA arch \"%s\"", file, d->arch);
  return 0;
}

/* specs.max_bps(). */
int vw_peak_bps(const char *file, const cproton_device_info *d,
                   double *out) {
  if (!strcmp(d->type, "CUDA")) {
    *out = 2 * d->bus_width_bits * d->memory_clock_rate_khz * 1e3 / 8;
    return 0;
  }
  int a = strcmp(d->type, "HIP") ? -1 : amd_entry(d->arch);
  if (a < 0)
    return vw_fail("%s: util: no peak bandwidth for %s arch \"%s\"", file,
                   d->type, d->arch);
  *out = amd[a].bps;
  return 0;
}

int vw_device_peaks(const char *file, const cproton_device_info *d, int width,
                    double *flops, double *bps) {
  return vw_peak_flops(file, d, width, flops) || vw_peak_bps(file, d, bps) ? -1 : 0;
}

static int has_column(const vw_tree *t, const char *name) {
  for (int i = 0; i < t->n_exc_raw; i++)
    if (!strcmp(t->exc_raw[i], name))
      return 1;
  for (int i = 0; i < t->n_inc_raw; i++)
    if (!strcmp(t->inc_raw[i], name))
      return 1;
  return 0;
}

/* Adds one device's minimal FLOP and byte times to ft/bt. */
static int add_device(vw_tree *t, const cproton_device_info *d,
                      const char **ids, double *ft, double *bt) {
  static const int widths[] = {8, 16, 32, 64};
  for (int k = 0; k < 4; k++) {
    char name[16];
    snprintf(name, sizeof name, "flops%d", widths[k]);
    if (!has_column(t, name))
      continue;
    double peak = 0;
    int c = vw_col_get(t, name);
    if (c < 0 || vw_peak_flops(t->file, d, widths[k], &peak))
      return -1;
    for (uint32_t i = 0; i < t->n; i++) {
      const char *id = ids[i];
      double v = t->cols[c].v[i];
      if (id && !strcmp(id, d->index))
        ft[i] += (isnan(v) ? 0 : v) / peak;
    }
  }
  double peak = 0;
  if (vw_peak_bps(t->file, d, &peak))
    return -1;
  int c = has_column(t, "bytes") ? vw_col_get(t, "bytes") : -1;
  for (uint32_t i = 0; i < t->n; i++) {
    const char *id = ids[i];
    if (id && !strcmp(id, d->index))
      bt[i] += c >= 0 ? t->cols[c].v[i] / peak : NAN;
  }
  return 0;
}

int vw_util(vw_tree *t) {
  int c = vw_col_find(t, "util");
  if (c >= 0)
    return c;
  size_t n = t->n ? t->n : 1;
  double *ft = calloc(n, sizeof *ft), *bt = calloc(n, sizeof *bt);
  double *sec = calloc(n, sizeof *sec);
  char *store = NULL;
  const char **ids = vw_node_strs(t, "device_id", &store);
  int rc = -1;
  if (!ft || !bt || !sec)
    goto out;
  for (uint32_t d = 0; d < cproton_profile_device_count(t->p); d++) {
    cproton_device_info info;
    cproton_profile_device(t->p, d, &info);
    if (add_device(t, &info, ids, ft, bt))
      goto out;
  }
  if (vw_derive_time_seconds(t, sec))
    goto out;
  c = vw_col_new(t, "util", -1);
  for (uint32_t i = 0; i < t->n; i++) {
    double m = bt[i] > ft[i] ? bt[i] : ft[i]; /* Python max(): NaN loses */
    t->cols[c].v[i] = ids[i] ? m / sec[i] : NAN;
  }
  rc = c;
out:
  free(ids);
  free(store);
  free(ft);
  free(bt);
  free(sec);
  return rc;
}
