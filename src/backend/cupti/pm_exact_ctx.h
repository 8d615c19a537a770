/* backend/cupti/pm_exact_ctx.h -- one CUDA context under CUPTI's range
 * profiler (cp_pm_exact_ctx_*): its host object and config image (the
 * metrics, scheduled into passes), its range profiler object and counter
 * data image (`ranges` auto ranges), armed (image initialised, SetConfig
 * with auto ranges and kernel replay, Start) and decoded (Stop,
 * DecodeData, each range evaluated and handed to pm_exact_map.c).
 * Every call is a vendor call through the loader's table, made with the
 * context current on the calling thread. Not thread-safe: pm_exact.c
 * holds its lock around every call. Not a hot path. */
#ifndef CP_BACKEND_CUPTI_PM_EXACT_CTX_H
#define CP_BACKEND_CUPTI_PM_EXACT_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cupti/loader.h"
#include "backend/cupti/pm_exact_map.h"

typedef struct cp_pm_exact_ctx {
  CUcontext ctx;
  int ok;      /* set up; 0: refused (kernel level only) */
  int started; /* between Start and Stop */
  int refuse;  /* setup failed for a reason that refuses a session
                  (cp_pm_exact_ctx_why), not for a lack of support */
  cp_pm_host_object *host;
  uint8_t *config;
  size_t config_size, passes;
  CUpti_RangeProfiler_Object *obj;
  uint8_t *image;
  size_t image_size, ranges;
  cp_pm_exact_queue q;
} cp_pm_exact_ctx;

/* The metric list a context is set up with: `names` are the Perfworks
 * names CUPTI evaluates, the kernel's duration last; `stored` the names
 * values are delivered under (one fewer: none for the duration). */
typedef struct cp_pm_exact_setup {
  const char **names;
  size_t n_names;
  const cp_pm_exact_names *stored;
  size_t ranges;
} cp_pm_exact_setup;

/* Sets up `ctx` (current on this thread) into *x and arms it. Errors:
 * EBACKEND with a message naming the failed call, CUPTI's error and why
 * (cp_pm_exact_ctx_why); an unknown counter is named. *x is left freed. */
int cp_pm_exact_ctx_setup(const cp_loader_api *api, CUcontext ctx,
                          const cp_pm_exact_setup *s, cp_pm_exact_ctx *x);

/* Checks that CUPTI knows every counter of `s` on device `device`'s chip,
 * without a context (the host API needs only the chip's name), so that a
 * session is refused at start even when no context exists yet. Returns
 * CPROTON_OK also when the chip's name is not available (nothing to check
 * against); EBACKEND naming the first counter CUPTI refuses. */
int cp_pm_exact_ctx_check(const cp_loader_api *api, uint32_t device,
                          const cp_pm_exact_setup *s);

/* Stops, decodes and delivers x's ranges (`graph`: counted, not
 * attributed), then re-arms unless `last`. Errors: EBACKEND (the queue's
 * launches counted as unmeasured). */
int cp_pm_exact_ctx_decode(const cp_loader_api *api, cp_pm_exact_ctx *x,
                           const cp_pm_exact_setup *s, int graph, int last,
                           cp_pm_exact_counts *c);

/* Disables the range profiler on x and frees it (no decode). */
void cp_pm_exact_ctx_free(const cp_loader_api *api, cp_pm_exact_ctx *x);

/* Why CUPTI may refuse the counters, for error `r` (NULL: no known
 * reason); *refuse_out: 1 when a session should be refused (privileges,
 * counters held by another tool), 0 when the device or driver just lacks
 * the feature (warn, profile kernels only). */
const char *cp_pm_exact_ctx_why(CUptiResult r, int *refuse_out);

#endif
