/* backend/cudadrv.c -- loads the CUDA driver with dlopen, resolves the
 * table in cudadrv.h, and translates driver errors.
 *
 * Invariant: the table is filled once (pthread_once) and never changes, so
 * readers need no lock. A machine without a driver gets ENODEVICE, never a
 * crash. Not a hot path. Called by the instrumentation runtime and the
 * CUPTI backend. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/cudadrv.h"
#include "core/device.h"
#include "core/error.h"

static cp_cudadrv table;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512];
static int loaded;

static void load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    snprintf(load_error, sizeof load_error, "cannot load libcuda.so.1: %s",
             dlerror());
    return;
  }
#define CP_X_LOAD(name, sym, params)                                           \
  *(void **)&table.name = dlsym(lib, sym);                                     \
  if (!table.name) {                                                           \
    snprintf(load_error, sizeof load_error, "libcuda.so.1 lacks %s", sym);     \
    return;                                                                    \
  }
  CP_CUDADRV_LIST(CP_X_LOAD)
#undef CP_X_LOAD
  if (table.cuInit(0) != 0) {
    snprintf(load_error, sizeof load_error, "cuInit failed: no usable GPU");
    return;
  }
  loaded = 1;
}

int cp_cudadrv_get(const cp_cudadrv **out) {
  pthread_once(&once, load);
  if (!loaded)
    return cp_error_set(CPROTON_ENODEVICE, "%s", load_error);
  *out = &table;
  return CPROTON_OK;
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
