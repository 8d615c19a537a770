/* backend/cupti/loader.c -- dlopen/dlsym of CUPTI; the driver's functions
 * are copied from the one driver table (backend/cudadrv.c).
 * Invariant: `api` is either fully resolved (return 0) or the caller must
 * treat it as unusable; no vendor symbol is reached any other way.
 * Not a hot path: called once per process, at the first backend start or
 * availability probe. Called by backend/cupti/cupti_backend.c. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backend/cudadrv.h"
#include "backend/cupti/loader.h"
#include "core/error.h"

static const char *const cupti_names[] = {"libcupti.so", "libcupti.so.13",
                                          "libcupti.so.12"};
#define N_NAMES (sizeof cupti_names / sizeof *cupti_names)

/* Appends `what` to the list of tried paths (truncated when long). */
static void note(char *tried, size_t size, const char *what) {
  size_t n = strlen(tried);
  for (const char *sep = n ? ", " : ""; *sep && n + 1 < size;)
    tried[n++] = *sep++;
  while (*what && n + 1 < size)
    tried[n++] = *what++;
  tried[n] = '\0';
}

static void *try_open(cp_loader_api *api, const char *path, char *tried,
                      size_t size) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h)
    snprintf(api->cupti_path, sizeof api->cupti_path, "%s", path);
  else
    note(tried, size, path);
  return h;
}

static void *open_cupti(const cp_cupti_config *c, cp_loader_api *api,
                        char *tried, size_t size) {
  char path[PATH_MAX];
  void *h = NULL;
  if (c->cupti_file[0] && (h = try_open(api, c->cupti_file, tried, size)))
    return h;
  for (size_t d = 0; d < c->n_dirs; d++)
    for (size_t i = 0; i < N_NAMES; i++) {
      snprintf(path, sizeof path, "%s/%s", c->dirs[d], cupti_names[i]);
      if ((h = try_open(api, path, tried, size)))
        return h;
    }
  return try_open(api, "libcupti.so", tried, size);
}

static int resolve(void *h, const char *lib, const char *name, void **out) {
  dlerror();
  *out = dlsym(h, name);
  if (!*out)
    return cp_error_set(CPROTON_EBACKEND, "%s lacks %s (too old?)", lib, name);
  return CPROTON_OK;
}

/* The driver functions come from the one driver table (cudadrv.c), loaded
 * without cuInit; their types there have the driver's ABI. */
static int driver(cp_loader_api *api) {
  const cp_cudadrv *d;
  if (cp_cudadrv_load(&d))
    return cp_error_set(CPROTON_ENODEVICE, "no NVIDIA driver: %s",
                        cp_error_message());
#define FROM_TABLE(f, field) memcpy(&api->f, &d->field, sizeof api->f);
  CP_LOADER_CUDA_FUNCS(FROM_TABLE)
#undef FROM_TABLE
  return CPROTON_OK;
}

int cp_loader_open(const cp_cupti_config *c, cp_loader_api *api) {
  memset(api, 0, sizeof *api);
  int rc = driver(api);
  if (rc)
    return rc;
  char tried[1024] = "";
  api->cupti_handle = open_cupti(c, api, tried, sizeof tried);
  if (!api->cupti_handle)
    return cp_error_set(CPROTON_EBACKEND,
                        "CUPTI not found (set CPROTON_CUPTI_LIB or CUDA_HOME; "
                        "tried %s)",
                        tried);
#define RESOLVE(f)                                                             \
  if (!rc)                                                                     \
    rc = resolve(api->cupti_handle, api->cupti_path, #f, (void **)&api->f);
  CP_LOADER_CUPTI_FUNCS(RESOLVE)
#undef RESOLVE
#define RESOLVE(f) api->f = (__typeof__(api->f))dlsym(api->cupti_handle, #f);
  CP_LOADER_CUPTI_OPTIONAL(RESOLVE)
  CP_LOADER_CUPTI_PM(RESOLVE)
  CP_LOADER_CUPTI_RANGE(RESOLVE)
#undef RESOLVE
  return rc;
}

const char *cp_loader_cupti_error(const cp_loader_api *api, CUptiResult r) {
  static _Thread_local char buf[32];
  const char *s = NULL;
  if (api->cuptiGetResultString &&
      api->cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s)
    return s;
  snprintf(buf, sizeof buf, "CUPTI error %d", (int)r);
  return buf;
}
