/* bench/cupti_floor.c -- the floor any CUPTI-based profiler pays: a minimal
 * CUPTI subscriber with CONCURRENT_KERNEL activity records (buffers
 * recycled, records walked and discarded) and a no-op driver-API callback on
 * the kernel launch entry points. Used by bench/cupti_overhead.py; not part
 * of the library.
 *
 *   cc -O2 -shared -fPIC -I/usr/local/cuda/include bench/cupti_floor.c \
 *      -o libcupti_floor.so -ldl
 *
 * Load it with ctypes and call floor_start("/path/to/libcupti.so") /
 * floor_stop(), or set CUDA_INJECTION64_PATH to it (libcupti from
 * $CPROTON_CUPTI_LIB). libcupti is dlopen'ed, so this builds without it.
 * For the per-launch breakdown (docs/benchmarks.md), FLOOR_NO_CALLBACK=1
 * keeps only the activity records and FLOOR_NO_ACTIVITY=1 only the
 * callback: CUPTI's two costs, measured apart. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF_SIZE (4u << 20)

static struct {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
                           void *);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle,
                                 CUpti_CallbackDomain, CUpti_CallbackId);
  CUptiResult (*activity_enable)(CUpti_ActivityKind);
  CUptiResult (*activity_disable)(CUpti_ActivityKind);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                    CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*flush_all)(uint32_t);
} f;
static CUpti_SubscriberHandle sub;
static unsigned long long n_records, n_callbacks;

static void CUPTIAPI on_callback(void *u, CUpti_CallbackDomain d,
                                 CUpti_CallbackId id, const void *data) {
  n_callbacks++;
}

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max) {
  *buf = aligned_alloc(64, BUF_SIZE);
  *size = *buf ? BUF_SIZE : 0;
  *max = 0;
}

static void CUPTIAPI completed(CUcontext c, uint32_t s, uint8_t *buf,
                               size_t size, size_t valid) {
  CUpti_Activity *rec = NULL;
  while (valid && f.next_record(buf, valid, &rec) == CUPTI_SUCCESS)
    n_records++;
  free(buf);
}

static const CUpti_CallbackId launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
};

int floor_start(const char *cupti_path) {
  void *h =
      dlopen(cupti_path && *cupti_path ? cupti_path : "libcupti.so", RTLD_NOW);
  if (!h)
    return -1;
  void **slots[] = {
      (void **)&f.subscribe,        (void **)&f.unsubscribe,
      (void **)&f.enable_callback,  (void **)&f.activity_enable,
      (void **)&f.activity_disable, (void **)&f.register_callbacks,
      (void **)&f.next_record,      (void **)&f.flush_all};
  const char *names[] = {"cuptiSubscribe",
                         "cuptiUnsubscribe",
                         "cuptiEnableCallback",
                         "cuptiActivityEnable",
                         "cuptiActivityDisable",
                         "cuptiActivityRegisterCallbacks",
                         "cuptiActivityGetNextRecord",
                         "cuptiActivityFlushAll"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!(*slots[i] = dlsym(h, names[i])))
      return -2;
  if (f.register_callbacks(requested, completed) ||
      f.subscribe(&sub, on_callback, NULL))
    return -3;
  const char *no_cb = getenv("FLOOR_NO_CALLBACK");
  const char *no_act = getenv("FLOOR_NO_ACTIVITY");
  for (size_t i = 0; !(no_cb && *no_cb == '1') &&
                     i < sizeof launches / sizeof *launches; i++)
    f.enable_callback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]);
  if (no_act && *no_act == '1')
    return 0;
  return f.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ? -4 : 0;
}

/* Flushes and unsubscribes; returns the number of kernel records seen. */
long long floor_stop(void) {
  f.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  f.activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  f.unsubscribe(sub);
  return (long long)n_records;
}

static void at_exit(void) { floor_stop(); }

int InitializeInjection(void) {
  if (floor_start(getenv("CPROTON_CUPTI_LIB")) == 0)
    atexit(at_exit);
  return 1;
}
