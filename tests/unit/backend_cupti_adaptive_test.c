/* backend_cupti_adaptive_test.c -- adaptive mode (backend/cupti/adaptive.c)
 * against the default mode on synthetic record streams: a fake driver
 * captures each launch through the real launch callback and makes a kernel
 * record with a chosen duration and grid; the records go through
 * records.c. Each stream (stable, drifting durations, alternating contexts
 * and grids, a flush in the middle) is profiled once record by record and
 * once in adaptive mode; counts and times must be identical node by node
 * (the error, measured here, is zero), with N times fewer deliveries. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/adaptive.h"
#include "backend/cupti/callbacks.h"
#include "backend/cupti/records.h"
#include "core/error.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "cupti_synth.h"
#include "testutil.h"

typedef CUpti_ActivityKernel10 krec;

#define MAX_RECS 60000
#define CBID CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel

static cp_cupti_state st;
static krec *recs;
static size_t n_recs;
static uint32_t next_id;
static uint64_t rng = 88172645463325252ull;

static uint64_t rand64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int fake_describe(uint32_t id, cp_device_info *d) {
  (void)id;
  snprintf(d->arch, sizeof d->arch, "90");
  return 0;
}

/* A launch of `name` with grid `grid` x 1 x 1 that runs `ns`. */
static void launch(const char *name, int grid, uint64_t ns) {
  uint32_t id = ++next_id;
  CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER,
                          .functionName = "cuLaunchKernel",
                          .correlationId = id};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, CBID, &d);
  cr_assert_lt(n_recs, MAX_RECS);
  krec *k = &recs[n_recs++];
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = name;
  k->correlationId = id;
  k->gridX = grid;
  k->gridY = k->gridZ = 1;
  k->blockX = 128;
  k->blockY = k->blockZ = 1;
  k->start = 1000 + 100ull * id;
  k->end = k->start + ns;
}

/* The records so far, in buffers of 512, then (adaptive) the backend's
 * flush of partial batches. */
static void drain(void) {
  for (size_t i = 0; i < n_recs; i += 512) {
    size_t m = n_recs - i < 512 ? n_recs - i : 512;
    cp_records_process(&st, (uint8_t *)&recs[i], m * sizeof(krec), cpt_next_kernel);
  }
  n_recs = 0;
  if (st.adaptive)
    cr_assert_eq(cp_adaptive_flush(st.adaptive), CPROTON_OK);
}

static void setup(void) {
  cp_session_reset_all();
  memset(&st, 0, sizeof st);
  st.corr = cp_corr_new(1u << 16);
  st.graphs = cp_graph_new(1024, 1024);
  st.hooks.describe_device = fake_describe;
  recs = calloc(MAX_RECS, sizeof *recs);
  n_recs = 0;
  next_id = 0;
}

static void teardown(void) {
  cp_adaptive_free(st.adaptive);
  cp_corr_free(st.corr);
  cp_graph_free(st.graphs);
  free(recs);
}

static char *profile(void (*stream)(void), unsigned n, const char *name,
                     uint64_t *batched) {
  const char *path = cpt_tmp_path(name);
  int sid = cpt_start_session(path, "none", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  if (n)
    cr_assert_eq(cp_adaptive_new(n, &st.adaptive), CPROTON_OK);
  rng = 88172645463325252ull;
  stream();
  drain();
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  uint64_t batches = 0;
  *batched = 0;
  if (st.adaptive) {
    cp_adaptive_counts(st.adaptive, batched, &batches);
    cp_adaptive_free(st.adaptive);
    st.adaptive = NULL;
  }
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  json_t *j = cpt_load_json(full);
  cr_assert_not_null(j);
  char *lines = cpt_profile_lines(j, 1);
  json_decref(j);
  return lines;
}

/* Profiles `stream` record by record and with N = 16; they must match. */
static void check_exact(void (*stream)(void), const char *name,
                        uint64_t min_batched) {
  char a[64], b[64];
  snprintf(a, sizeof a, "%s_exact", name);
  snprintf(b, sizeof b, "%s_adaptive", name);
  uint64_t batched;
  char *exact = profile(stream, 0, a, &batched);
  char *adaptive = profile(stream, 16, b, &batched);
  cr_assert_str_eq(adaptive, exact);
  cr_assert_geq(batched, min_batched, "%llu records batched",
                (unsigned long long)batched);
  cr_assert_eq(atomic_load(&st.stats.unattributed), 0);
  free(exact);
  free(adaptive);
}

/* ---- streams ------------------------------------------------------------- */

/* One kernel at one site, the same duration: the training-step loop. */
static void stable_stream(void) {
  cproton_scope_enter("step", NULL);
  for (int i = 0; i < 5000; i++)
    launch("gemm", 132, 2000);
  cproton_scope_exit("step");
}

Test(backend_cupti_adaptive, stable_stream_is_exact, .init = setup,
     .fini = teardown) {
  check_exact(stable_stream, "ad_stable", 4900);
}

/* Durations that drift (a slow ramp plus noise): a sampled scale would be
 * off; summed batches are not. */
static void drifting_stream(void) {
  cproton_scope_enter("step", NULL);
  for (int i = 0; i < 5000; i++)
    launch("attn", 64, 1000 + (uint64_t)i / 3 + rand64() % 997);
  cproton_scope_exit("step");
}

Test(backend_cupti_adaptive, drifting_durations_are_exact, .init = setup,
     .fini = teardown) {
  check_exact(drifting_stream, "ad_drift", 4900);
}

/* Two contexts alternating every launch, two kernels, the grid changing
 * every 7th launch, a third context entered rarely (never stable), and
 * records delivered (and batches flushed) in the middle. */
static void alternating_stream(void) {
  for (int i = 0; i < 6000; i++) {
    const char *scope = i % 2 ? "fwd" : "bwd";
    cproton_scope_enter(scope, NULL);
    launch(i % 3 ? "gemm" : "softmax", i % 7 ? 132 : 66,
           500 + rand64() % 4000);
    if (i % 1000 == 999) {
      cproton_scope_enter("rare", NULL);
      launch("gemm", 132, 777);
      cproton_scope_exit("rare");
    }
    cproton_scope_exit(scope);
    if (i == 3001)
      drain();
  }
}

Test(backend_cupti_adaptive, alternating_contexts_are_exact, .init = setup,
     .fini = teardown) {
  check_exact(alternating_stream, "ad_alt", 5000);
}

/* Deliveries: N records of a stable key make one. */
Test(backend_cupti_adaptive, one_delivery_per_n_records, .init = setup,
     .fini = teardown) {
  uint64_t batched, batches;
  char *p = profile(stable_stream, 100, "ad_count", &batched);
  cr_assert(strstr(p, "/step/gemm count=5000 time=10000000\n"), "%s", p);
  free(p);
  cr_assert_eq(cp_adaptive_new(100, &st.adaptive), CPROTON_OK);
  cp_adaptive_counts(st.adaptive, &batched, &batches);
  cr_assert_eq(batched + batches, 0);
  cp_adaptive_free(st.adaptive);
  st.adaptive = NULL;
  /* 5000 - 8 singly, then 4992 records in 49 full batches and 1 of 92 */
  char *q = profile(stable_stream, 100, "ad_count2", &batched);
  cr_assert_eq(batched, 5000 - CP_ADAPTIVE_STABLE);
  free(q);
}

Test(backend_cupti_adaptive, n_out_of_range_is_refused, .init = setup,
     .fini = teardown) {
  cp_adaptive *a = NULL;
  cr_assert_eq(cp_adaptive_new(1, &a), CPROTON_EINVAL);
  cr_assert_null(a);
  cr_assert(strstr(cproton_last_error(), "2..65536"), "%s",
            cproton_last_error());
  cr_assert_eq(cp_adaptive_new(CP_ADAPTIVE_MAX + 1, &a), CPROTON_EINVAL);
  cr_assert_eq(cp_adaptive_new(UINT32_MAX, &a), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "not a number"), "%s",
            cproton_last_error());
}

#else
Test(backend_cupti_adaptive, skipped_without_cupti_headers) {
  cr_skip_test("CUPTI headers not found at configure time");
}
#endif
