/* host.c -- native instrumentation example: PTX from `nvcc -ptx kernels.cu`
 * -> cproton_ptx_instrument (what cproton-instrument does) -> cuModuleLoadData
 * -> launch with the profile buffer as the last parameter -> copy back ->
 * cproton_buffer_decode -> per-scope cycles. The CUDA driver is dlopen'ed, so
 * this builds without libcuda. It checks the record counts and nesting that
 * kernels.cu implies and exits non-zero when they differ.
 *
 * usage: native_instrument KERNELS.ptx [--buffer shared|global]
 *          [--counter clock|clock64|globaltimer] [--sample-warps 0,2] [--ctas N]
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cproton/cproton.h"

#define ITERS 8 /* as in kernels.cu */
#define THREADS 128

typedef CUresult (*f_init)(unsigned);
typedef CUresult (*f_devget)(CUdevice *, int);
typedef CUresult (*f_retain)(CUcontext *, CUdevice);
typedef CUresult (*f_setcur)(CUcontext);
typedef CUresult (*f_modload)(CUmodule *, const void *);
typedef CUresult (*f_getfn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*f_alloc)(CUdeviceptr *, size_t);
typedef CUresult (*f_htod)(CUdeviceptr, const void *, size_t);
typedef CUresult (*f_dtoh)(void *, CUdeviceptr, size_t);
typedef CUresult (*f_memset)(CUdeviceptr, unsigned char, size_t);
typedef CUresult (*f_launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
typedef CUresult (*f_sync)(void);

static struct {
  f_init init;
  f_devget devget;
  f_retain retain;
  f_setcur setcur;
  f_modload modload;
  f_getfn getfn;
  f_alloc alloc;
  f_htod htod;
  f_dtoh dtoh;
  f_memset memset8;
  f_launch launch;
  f_sync sync;
} cu;

static int load_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h)
    return -1;
  cu.init = (f_init)dlsym(h, "cuInit");
  cu.devget = (f_devget)dlsym(h, "cuDeviceGet");
  cu.retain = (f_retain)dlsym(h, "cuDevicePrimaryCtxRetain");
  cu.setcur = (f_setcur)dlsym(h, "cuCtxSetCurrent");
  cu.modload = (f_modload)dlsym(h, "cuModuleLoadData");
  cu.getfn = (f_getfn)dlsym(h, "cuModuleGetFunction");
  cu.alloc = (f_alloc)dlsym(h, "cuMemAlloc_v2");
  cu.htod = (f_htod)dlsym(h, "cuMemcpyHtoD_v2");
  cu.dtoh = (f_dtoh)dlsym(h, "cuMemcpyDtoH_v2");
  cu.memset8 = (f_memset)dlsym(h, "cuMemsetD8_v2");
  cu.launch = (f_launch)dlsym(h, "cuLaunchKernel");
  cu.sync = (f_sync)dlsym(h, "cuCtxSynchronize");
  return cu.init && cu.devget && cu.retain && cu.setcur && cu.modload && cu.getfn && cu.alloc && cu.htod &&
                 cu.dtoh && cu.memset8 && cu.launch && cu.sync
             ? 0
             : -1;
}

#define CK(call)                                                                                   \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "cproton: error: %s failed: CUDA error %d\n", #call, (int)r_);              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  if (b)
    b[n] = '\0';
  fclose(f);
  return b;
}

static void parse(int argc, char **argv, cproton_ptx_options *o, unsigned *ctas) {
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--buffer"))
      o->buffer = !strcmp(v, "global") ? CPROTON_BUFFER_GLOBAL : CPROTON_BUFFER_SHARED;
    else if (!strcmp(k, "--counter"))
      o->counter = !strcmp(v, "clock") ? CPROTON_COUNTER_CLOCK
                   : !strcmp(v, "globaltimer") ? CPROTON_COUNTER_GLOBALTIMER : CPROTON_COUNTER_CLOCK64;
    else if (!strcmp(k, "--ctas"))
      *ctas = (unsigned)atoi(v);
    else if (!strcmp(k, "--sample-warps"))
      for (const char *p = v; *p; p += *p == ',')
        o->sample_mask |= 1u << strtoul(p, (char **)&p, 10);
  }
}

/* Checks counts and nesting implied by kernels.cu; returns failures. */
static int check(const cproton_decoded *d, const cproton_buffer_layout *l, unsigned ctas) {
  int bad = 0;
  uint64_t units = (uint64_t)l->n_units * ctas;
  for (size_t i = 0; i < cproton_decoded_n_scopes(d); i++) {
    cproton_decoded_scope s;
    cproton_decoded_get_scope(d, i, &s);
    uint64_t want = units * (strcmp(s.name, "compute") ? 1 : ITERS);
    int par_ok = !strcmp(s.name, "kernel") ? s.parent == -1 : (s.parent >= 0 && !strcmp(l->scope_names[s.parent], "kernel"));
    printf("scope %-8s parent %2d count %8llu (want %llu) cycles %12llu normalized %.1f\n", s.name, s.parent,
           (unsigned long long)s.count, (unsigned long long)want, (unsigned long long)s.cycles, s.normalized_cycles);
    bad += s.count != want || !par_ok || s.cycles == 0;
  }
  for (size_t w = 0; w < cproton_decoded_n_warps(d); w++) {
    cproton_decoded_warp wp;
    cproton_decoded_get_warp(d, w, &wp);
    const cproton_decoded_event *outer = NULL;
    for (size_t e = 0; e < wp.n_events; e++)
      if (wp.events[e].depth == 0)
        outer = &wp.events[e];
    for (size_t e = 0; outer && e < wp.n_events; e++) {
      const cproton_decoded_event *ev = &wp.events[e];
      bad += ev != outer && (ev->depth != 1 || ev->start < outer->start || ev->end > outer->end);
    }
    bad += !outer;
  }
  printf("ctas %zu bad %zu warps %zu dropped %llu unpaired %llu\n", cproton_decoded_n_ctas(d),
         cproton_decoded_n_bad_ctas(d), cproton_decoded_n_warps(d),
         (unsigned long long)cproton_decoded_n_dropped(d), (unsigned long long)cproton_decoded_n_unpaired(d));
  bad += cproton_decoded_n_ctas(d) != ctas || cproton_decoded_n_dropped(d) || cproton_decoded_n_unpaired(d);
  bad += cproton_decoded_n_warps(d) != units;
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s KERNELS.ptx [--buffer shared|global] [--counter C] [--sample-warps L] [--ctas N]\n", argv[0]);
    return 2;
  }
  cproton_ptx_options o;
  cproton_ptx_options_init(&o);
  unsigned ctas = 264;
  parse(argc, argv, &o, &ctas);
  char *ptx = read_file(argv[1]);
  cproton_ptx *p;
  if (!ptx || cproton_ptx_instrument(ptx, strlen(ptx), &o, &p) != CPROTON_OK) {
    fprintf(stderr, "cproton: error: %s: %s\n", argv[1], ptx ? cproton_last_error() : "cannot read");
    return 1;
  }
  cproton_buffer_layout lay;
  cproton_ptx_kernel_layout(p, 0, &lay);
  if (load_driver()) {
    fprintf(stderr, "cproton: error: cannot load libcuda.so.1\n");
    return 1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CK(cu.init(0));
  CK(cu.devget(&dev, 0));
  CK(cu.retain(&ctx, dev));
  CK(cu.setcur(ctx));
  CK(cu.modload(&mod, cproton_ptx_text(p, NULL)));
  CK(cu.getfn(&fn, mod, cproton_ptx_kernel_name(p, 0)));
  int n = (int)(ctas * THREADS);
  size_t buf_size = (size_t)ctas * lay.per_cta_bytes;
  CUdeviceptr x, out, buf;
  CK(cu.alloc(&x, (size_t)n * 4));
  CK(cu.alloc(&out, (size_t)n * 4));
  CK(cu.alloc(&buf, buf_size));
  CK(cu.memset8(x, 0, (size_t)n * 4));
  CK(cu.memset8(buf, 0, buf_size));
  void *args[] = {&out, &x, &n, &buf};
  CK(cu.launch(fn, ctas, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
  CK(cu.sync());
  unsigned char *host = malloc(buf_size);
  CK(cu.dtoh(host, buf, buf_size));
  cproton_decoded *d;
  if (cproton_buffer_decode(host, buf_size, &lay, 0, &d) != CPROTON_OK) {
    fprintf(stderr, "cproton: error: decode: %s\n", cproton_last_error());
    return 1;
  }
  printf("kernel %s: %u ctas x %u B per CTA, %u units\n", cproton_ptx_kernel_name(p, 0), ctas, lay.per_cta_bytes,
         lay.n_units);
  int bad = check(d, &lay, ctas);
  printf("%s\n", bad ? "CHECK FAIL" : "CHECK OK");
  cproton_decoded_free(d);
  cproton_ptx_free(p);
  free(host);
  free(ptx);
  return bad ? 1 : 0;
}
