/* bench/cupti_floor.c -- the floor any CUPTI-based profiler pays: a minimal
 * CUPTI subscriber with CONCURRENT_KERNEL activity records (buffers
 * recycled, records walked and discarded) and a no-op driver-API callback on
 * the kernel launch entry points. Used by bench/cupti_overhead.py and
 * bench/realworld.py; not part of the library.
 *
 *   cc -O2 -shared -fPIC -I/usr/local/cuda/include bench/cupti_floor.c \
 *      -o libcupti_floor.so -ldl
 *
 * Load it with ctypes and call floor_start("/path/to/libcupti.so") /
 * floor_stop() as often as you like (one subscription per start: the
 * library is dlopen'ed and CUPTI's buffer callbacks registered once, at the
 * first start), or set CUDA_INJECTION64_PATH to it (libcupti from
 * $CPROTON_CUPTI_LIB). libcupti is dlopen'ed, so this builds without it.
 * For the per-launch breakdown (docs/benchmarks.md), FLOOR_NO_CALLBACK=1
 * keeps only the activity records and FLOOR_NO_ACTIVITY=1 only the
 * callback: CUPTI's two costs, measured apart (read at every start).
 * FLOOR_GRAPH_TRACE=1 also enables CUPTI's graph trace
 * (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, one record per graph launch): the floor
 * of cproton's graph-level mode, and with FLOOR_NO_ACTIVITY=1 and
 * FLOOR_NO_CALLBACK=1 CUPTI's graph trace alone (bench/graph_crash.py runs
 * these to tell a crash in CUPTI from one in cproton).
 * Invariant: at most one subscription at a time (`running`); floor_stop
 * flushes every record of its subscription before it returns.
 * Hot path: on_callback (every launch: one plain increment, racy across
 * threads on purpose: a lock prefix would cost more than the floor's
 * callback itself), completed (every buffer). */
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
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
static int loaded, running, activity_on, graph_on;
static CUpti_SubscriberHandle sub;
static atomic_ullong n_records;
static unsigned long long n_callbacks;

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
  unsigned long long n = 0;
  while (valid && f.next_record(buf, valid, &rec) == CUPTI_SUCCESS)
    n++;
  atomic_fetch_add_explicit(&n_records, n, memory_order_relaxed);
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

/* dlopen, dlsym and the buffer callbacks, once per process: 0 or < 0. */
static int load(const char *cupti_path) {
  if (loaded)
    return 0;
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
  if (f.register_callbacks(requested, completed))
    return -3;
  loaded = 1;
  return 0;
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v == '1';
}

/* Subscribes (launch callbacks, kernel activity and graph trace, as the
 * environment says) and zeroes the record count: 0, or < 0 (-5: already
 * running, -6: CUPTI refused graph trace). */
int floor_start(const char *cupti_path) {
  int rc = load(cupti_path);
  if (rc)
    return rc;
  if (running)
    return -5;
  if (f.subscribe(&sub, on_callback, NULL))
    return -3;
  atomic_store(&n_records, 0);
  n_callbacks = 0;
  for (size_t i = 0;
       !env_on("FLOOR_NO_CALLBACK") && i < sizeof launches / sizeof *launches;
       i++)
    f.enable_callback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]);
  activity_on = !env_on("FLOOR_NO_ACTIVITY");
  graph_on = env_on("FLOOR_GRAPH_TRACE");
  if (graph_on && f.activity_enable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)) {
    f.unsubscribe(sub);
    return -6;
  }
  if (activity_on && f.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    if (graph_on)
      f.activity_disable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    f.unsubscribe(sub);
    return -4;
  }
  running = 1;
  return 0;
}

/* Flushes, disables, flushes what came in between, unsubscribes; returns
 * the records (kernels, graphs) of this subscription (-1 if none was running). The
 * caller synchronises the device first if it wants every kernel counted. */
long long floor_stop(void) {
  if (!running)
    return -1;
  if (activity_on || graph_on) {
    f.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (activity_on)
      f.activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (graph_on)
      f.activity_disable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    f.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  f.unsubscribe(sub);
  running = 0;
  return (long long)atomic_load(&n_records);
}

static void at_exit(void) { floor_stop(); }

int InitializeInjection(void) {
  if (floor_start(getenv("CPROTON_CUPTI_LIB")) == 0)
    atexit(at_exit);
  return 1;
}
