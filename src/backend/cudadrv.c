/* backend/cudadrv.c -- loads the CUDA driver with dlopen, resolves the
 * table in cudadrv.h, and translates driver errors.
 *
 * The one place libcuda is loaded: the instrumentation runtime, the CUPTI
 * loader (backend/cupti/loader.c, which takes its driver functions from
 * this table) and both GPU backends' probe use it.
 * Invariant: the table is filled once (pthread_once) and never changes, so
 * readers need no lock; cuInit is called only by cp_cudadrv_get, never by
 * cp_cudadrv_load (the CUPTI injection runs inside cuInit). A machine
 * without a driver gets ENODEVICE, never a crash. Not a hot path. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/cudadrv.h"
#include "core/device.h"
#include "core/error.h"

static cp_cudadrv table;
static pthread_once_t once_open = PTHREAD_ONCE_INIT, once_init = PTHREAD_ONCE_INIT;
static char open_error[512], init_error[512];
static int opened, loaded; /* loaded: opened and cuInit succeeded */

int cp_cudadrv_open(const char *lib, cp_cudadrv *out) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
  if (!h)
    return cp_error_set(CPROTON_ENODEVICE, "cannot load %s: %s", lib,
                        dlerror());
#define CP_X_LOAD(name, sym, params)                                           \
  if (!(*(void **)&out->name = dlsym(h, sym)))                                 \
    return cp_error_set(CPROTON_ENODEVICE, "%s lacks %s", lib, sym);
  CP_CUDADRV_LIST(CP_X_LOAD)
#undef CP_X_LOAD
  return CPROTON_OK;
}

static void open_driver(void) {
  opened = cp_cudadrv_open("libcuda.so.1", &table) == CPROTON_OK;
  if (!opened)
    snprintf(open_error, sizeof open_error, "%s", cp_error_message());
}

/* cuInit once, after the table loaded. */
static void init_driver(void) {
  pthread_once(&once_open, open_driver);
  if (!opened)
    snprintf(init_error, sizeof init_error, "%s", open_error);
  else if (table.cuInit(0) != 0)
    snprintf(init_error, sizeof init_error, "cuInit failed: no usable GPU");
  else
    loaded = 1;
}

int cp_cudadrv_load(const cp_cudadrv **out) {
  pthread_once(&once_open, open_driver);
  if (!opened)
    return cp_error_set(CPROTON_ENODEVICE, "%s", open_error);
  *out = &table;
  return CPROTON_OK;
}

int cp_cudadrv_get(const cp_cudadrv **out) {
  pthread_once(&once_init, init_driver);
  if (!loaded)
    return cp_error_set(CPROTON_ENODEVICE, "%s", init_error);
  *out = &table;
  return CPROTON_OK;
}

void cp_cudadrv_probe(cp_backend_probe *out) {
  const cp_cudadrv *d;
  int n = 0;
  *out = (cp_backend_probe){0};
  if (cp_cudadrv_get(&d) != CPROTON_OK || d->cuDeviceGetCount(&n) != 0 ||
      n <= 0)
    return;
  out->devices = n;
  out->runs = 1;
}

int cp_cudadrv_error(cp_curesult r, const char *what) {
  const char *text = NULL;
  if (loaded)
    table.cuGetErrorString(r, &text);
  return cp_error_set(CPROTON_EBACKEND, "%s: CUDA error %d (%s)", what, r,
                      text ? text : "unknown");
}

int cp_cudadrv_describe(cp_cudevice dev, cp_device_info *out) {
  const cp_cudadrv *d;
  int rc = cp_cudadrv_get(&d);
  if (rc)
    return rc;
  int major = 0, minor = 0, sms = 0, clock = 0, mclock = 0, bus = 0;
  d->cuDeviceGetAttribute(&major, CP_CU_ATTR_COMPUTE_CAPABILITY_MAJOR, dev);
  d->cuDeviceGetAttribute(&minor, CP_CU_ATTR_COMPUTE_CAPABILITY_MINOR, dev);
  d->cuDeviceGetAttribute(&sms, CP_CU_ATTR_MULTIPROCESSOR_COUNT, dev);
  d->cuDeviceGetAttribute(&clock, CP_CU_ATTR_CLOCK_RATE, dev);
  d->cuDeviceGetAttribute(&mclock, CP_CU_ATTR_MEMORY_CLOCK_RATE, dev);
  d->cuDeviceGetAttribute(&bus, CP_CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH, dev);
  *out = (cp_device_info){.type = CP_DEVICE_CUDA, .id = (uint32_t)dev,
                          .num_sms = (uint32_t)sms,
                          .clock_rate = (uint64_t)clock,
                          .memory_clock_rate = (uint64_t)mclock,
                          .bus_width = (uint32_t)bus};
  snprintf(out->arch, sizeof out->arch, "%d", major * 10 + minor);
  return CPROTON_OK;
}

static atomic_ullong registered; /* bit d: device d registered */

int cp_cudadrv_register_device(cp_cudevice dev) {
  uint64_t bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
  if (bit && (atomic_load(&registered) & bit))
    return CPROTON_OK;
  cp_device_info info;
  int rc = cp_cudadrv_describe(dev, &info);
  if (!rc) {
    cp_device_register(&info);
    atomic_fetch_or(&registered, bit);
  }
  return rc;
}
