// cupti_app.cu -- the CUDA C workload of tests/gpu/cupti.sh. Known kernel
// counts under known scopes, long kernels timed with CUDA events, a CUDA
// graph captured once and replayed, two streams, two launching threads,
// every visible GPU.
//
//   cupti_app <out_prefix> [tree|trace]
//
// Built twice: with -DWITH_CPROTON it profiles itself through the C API
// (scopes = cproton scopes); without it, it is an unmodified program whose
// scopes are NVTX ranges, profiled through CUDA_INJECTION64_PATH.
// Writes <out_prefix>.expected.json (the counts the profile must show) and
// <out_prefix>.events.json (the CUDA-event time of each long kernel).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WITH_CPROTON
#include <cproton/cproton.h>
#define PUSH(name) cproton_scope_enter(name, NULL)
#define POP(name) cproton_scope_exit(name)
#else
#define PUSH(name) nvtxRangePushA(name)
#define POP(name) nvtxRangePop()
#endif

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                       \
              cudaGetErrorString(e_));                                         \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

enum { N_LOOP = 1000, N_INNER = 10, N_OUTER = 5, N_SPIN = 5, SPIN_NS = 2000000,
       N_REPLAY = 20, N_STREAM = 50, N_THREAD = 100 };

extern "C" __global__ void tiny(int *p) {
  if (p)
    p[threadIdx.x] += 1;
}
extern "C" __global__ void spin(long long ns) {
  long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < ns);
}
extern "C" __global__ void g_a(int *p) { p[threadIdx.x] *= 2; }
extern "C" __global__ void g_b(int *p) { p[threadIdx.x] -= 1; }
extern "C" __global__ void on_stream(int *p) { p[threadIdx.x] ^= 1; }
extern "C" __global__ void worker(int *p) { p[threadIdx.x] += 3; }
extern "C" __global__ void per_device(int *p) { p[threadIdx.x] += 5; }

static int *buf;

static void *thread_main(void *arg) {
  const char *scope = (const char *)arg;
  PUSH(scope);
  for (int i = 0; i < N_THREAD; i++)
    worker<<<1, 32>>>(buf);
  POP(scope);
  CHECK(cudaDeviceSynchronize());
  return NULL;
}

static void run_graph(FILE *exp) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  PUSH("capture");
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  g_a<<<1, 32, 0, s>>>(buf);
  g_a<<<1, 32, 0, s>>>(buf);
  g_b<<<1, 32, 0, s>>>(buf);
  CHECK(cudaStreamEndCapture(s, &g));
  POP("capture");
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  PUSH("replay");
  for (int i = 0; i < N_REPLAY; i++)
    CHECK(cudaGraphLaunch(ge, s));
  POP("replay");
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(ge));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaStreamDestroy(s));
  fprintf(exp, "  [\"replay/<captured_at>/capture/g_a\", %d],\n", 2 * N_REPLAY);
  fprintf(exp, "  [\"replay/<captured_at>/capture/g_b\", %d],\n", N_REPLAY);
}

static void run_spin(FILE *events) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  fprintf(events, "[");
  PUSH("timed");
  for (int i = 0; i < N_SPIN; i++) {
    CHECK(cudaEventRecord(a));
    spin<<<1, 1>>>(SPIN_NS);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    fprintf(events, "%s%.0f", i ? ", " : "", ms * 1e6);
  }
  POP("timed");
  fprintf(events, "]\n");
}

static void run_streams(void) {
  cudaStream_t s[2];
  for (int i = 0; i < 2; i++)
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
  PUSH("streams");
  for (int i = 0; i < N_STREAM; i++)
    for (int k = 0; k < 2; k++)
      on_stream<<<1, 32, 0, s[k]>>>(buf);
  POP("streams");
  for (int i = 0; i < 2; i++) {
    CHECK(cudaStreamSynchronize(s[i]));
    CHECK(cudaStreamDestroy(s[i]));
  }
}

static int run_devices(void) {
  int n = 0;
  CHECK(cudaGetDeviceCount(&n));
  PUSH("devices");
  for (int d = 0; d < n; d++) {
    int *p;
    CHECK(cudaSetDevice(d));
    CHECK(cudaMalloc(&p, 1024));
    per_device<<<1, 32>>>(p);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(p));
  }
  POP("devices");
  CHECK(cudaSetDevice(0));
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUT_PREFIX [tree|trace]\n", argv[0]);
    return 2;
  }
  char path[4096];
  CHECK(cudaFree(0)); // cuInit first: the injection sets up NVTX here
#ifdef WITH_CPROTON
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = argv[1];
  o.data = argc > 2 ? argv[2] : "tree";
  o.backend = "cupti";
  int sid;
  if (cproton_session_start(&o, &sid) != CPROTON_OK) {
    fprintf(stderr, "cproton: %s\n", cproton_last_error());
    return 2;
  }
#endif
  CHECK(cudaMalloc(&buf, 4096));
  snprintf(path, sizeof path, "%s.expected.json", argv[1]);
  FILE *exp = fopen(path, "w");
  snprintf(path, sizeof path, "%s.events.json", argv[1]);
  FILE *events = fopen(path, "w");
  if (!exp || !events)
    return 2;
  fprintf(exp, "[\n");
  PUSH("loop");
  for (int i = 0; i < N_LOOP; i++)
    tiny<<<1, 32>>>(buf);
  POP("loop");
  fprintf(exp, "  [\"loop/tiny\", %d],\n", N_LOOP);
  PUSH("outer");
  for (int i = 0; i < N_OUTER; i++)
    tiny<<<1, 32>>>(buf);
  PUSH("inner");
  for (int i = 0; i < N_INNER; i++)
    tiny<<<1, 32>>>(buf);
  POP("inner");
  POP("outer");
  fprintf(exp, "  [\"outer/tiny\", %d],\n  [\"outer/inner/tiny\", %d],\n",
          N_OUTER, N_INNER);
  run_spin(events);
  fprintf(exp, "  [\"timed/spin\", %d],\n", N_SPIN);
  run_graph(exp);
  run_streams();
  fprintf(exp, "  [\"streams/on_stream\", %d],\n", 2 * N_STREAM);
  pthread_t t[2];
  const char *names[2] = {"thread_a", "thread_b"};
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, thread_main, (void *)names[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  fprintf(exp, "  [\"thread_a/worker\", %d],\n  [\"thread_b/worker\", %d],\n",
          N_THREAD, N_THREAD);
  int n_dev = run_devices();
  fprintf(exp, "  [\"devices/per_device\", %d]\n]\n", n_dev);
  CHECK(cudaDeviceSynchronize());
  fclose(exp);
  fclose(events);
#ifdef WITH_CPROTON
  // a trace is written as cproton's full timeline (CPU lanes, flows)
  if (cproton_session_finalize(sid, strcmp(o.data, "trace") == 0
                                        ? "chrome_timeline"
                                        : NULL) != CPROTON_OK) {
    fprintf(stderr, "cproton: %s\n", cproton_last_error());
    return 2;
  }
#endif
  CHECK(cudaFree(buf));
  return 0;
}
