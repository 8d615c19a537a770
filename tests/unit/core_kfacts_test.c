/* core_kfacts_test.c -- the per-kernel facts table (core/kfacts.h) and
 * their place in the profile (docs/advisor.md): the first value of each
 * fact kept, distinct launch configurations counted, bad facts refused
 * with a message, and the facts written once on every frame of that
 * kernel (not summed per launch), never on ROOT or other kernels. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fake/fake.h"
#include "core/device.h"
#include "core/kfacts.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

static void reset(void) {
  cp_session_reset_all();
  cp_device_reset();
  cp_kfacts_reset();
}

static const cp_kfact *find(const cp_kfact *f, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(f[i].name, name))
      return &f[i];
  return NULL;
}

static cp_kfacts_launch launch(int64_t regs, uint32_t gx, uint32_t bx) {
  return (cp_kfacts_launch){.regs = regs, .smem_static = 1024,
                            .smem_dynamic = 0, .local_bytes = 16,
                            .grid = {gx, 2, 1}, .block = {bx, 1, 1}};
}

Test(core_kfacts, first_value_kept_and_configs_counted, .init = reset) {
  cp_kfacts_launch a = launch(40, 10, 128), b = launch(99, 20, 128);
  cr_assert_eq(cp_kfacts_launch_note("k", &a), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note("k", &a), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note("k", &b), CPROTON_OK);
  cr_assert_eq(cp_kfacts_set("k", "triton.num_warps", 4, NULL), CPROTON_OK);
  cr_assert_eq(cp_kfacts_set("k", "triton.num_warps", 8, NULL), CPROTON_OK);
  cr_assert_eq(cp_kfacts_set("k", "triton.mma", 0, "wgmma"), CPROTON_OK);
  cp_kfact f[CP_KFACTS_MAX];
  size_t n = cp_kfacts_get("k", f);
  cr_assert_eq(find(f, n, "kernel.regs")->value, 40);
  cr_assert_eq(find(f, n, "kernel.grid")->value, 20); /* 10 x 2 x 1 */
  cr_assert_eq(find(f, n, "kernel.block")->value, 128);
  cr_assert_eq(find(f, n, "kernel.local_bytes")->value, 16);
  cr_assert_eq(find(f, n, "kernel.configs")->value, 2);
  cr_assert_eq(find(f, n, "triton.num_warps")->value, 4);
  cr_assert_str_eq(find(f, n, "triton.mma")->str, "wgmma");
  cr_assert_eq(cp_kfacts_get("other", f), 0);
}

/* The per-thread cache of noted (name, configuration) pairs: a new
 * configuration of a cached name is still counted, and after a reset the
 * same name string is noted afresh (not skipped as seen). */
Test(core_kfacts, cache_counts_new_configs_and_forgets_on_reset, .init = reset) {
  static const char name[] = "cached_kernel";
  cp_kfacts_launch a = launch(40, 10, 128), b = launch(40, 11, 128);
  cp_kfact f[CP_KFACTS_MAX];
  for (int i = 0; i < 3; i++)
    cr_assert_eq(cp_kfacts_launch_note(name, &a), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note(name, &b), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note(name, &a), CPROTON_OK);
  size_t n = cp_kfacts_get(name, f);
  cr_assert_eq(find(f, n, "kernel.configs")->value, 2);
  cp_kfacts_reset();
  cr_assert_eq(cp_kfacts_launch_note(name, &a), CPROTON_OK);
  n = cp_kfacts_get(name, f);
  cr_assert_not_null(find(f, n, "kernel.regs"), "noted again after the reset");
  cr_assert_eq(find(f, n, "kernel.configs")->value, 1);
}

Test(core_kfacts, configs_saturate, .init = reset) {
  for (uint32_t g = 1; g <= 2 * CP_KFACTS_MAX_CONFIGS; g++) {
    cp_kfacts_launch l = launch(32, g, 64);
    cr_assert_eq(cp_kfacts_launch_note("many", &l), CPROTON_OK);
  }
  cp_kfact f[CP_KFACTS_MAX];
  size_t n = cp_kfacts_get("many", f);
  cr_assert_eq(find(f, n, "kernel.configs")->value, CP_KFACTS_MAX_CONFIGS);
}

static cp_kfacts_launch timed(uint32_t gx, uint32_t bx, int64_t smem,
                               uint64_t ns) {
  cp_kfacts_launch l = launch(40, gx, bx);
  l.smem_dynamic = smem, l.duration_ns = ns, l.timed = 1;
  return l;
}

/* An autotuned kernel: two compiled variants (threads, shared memory),
 * one at two grids (two problem sizes, one variant). Each variant's
 * launches and time are summed, through the cache's fast path too; the
 * fastest per launch is named; untimed records (not delivered) add nothing. */
Test(core_kfacts, variants_timed, .init = reset) {
  static const char name[] = "mm";
  cp_kfacts_launch slow = timed(4096, 128, 4096, 300), slow2 = timed(64, 128, 4096, 100);
  cp_kfacts_launch fast = timed(256, 256, 98304, 100), untimed = fast;
  untimed.timed = 0, untimed.duration_ns = 1000000;
  for (int i = 0; i < 3; i++)
    cr_assert_eq(cp_kfacts_launch_note(name, &slow), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note(name, &slow2), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note(name, &fast), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note(name, &fast), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note(name, &untimed), CPROTON_OK);
  cp_kfact f[CP_KFACTS_MAX];
  size_t n = cp_kfacts_get(name, f);
  cr_assert_eq(find(f, n, "kernel.variants")->value, 2);
  cr_assert_eq(find(f, n, "kernel.variant_launches")->value, 6);
  cr_assert_eq(find(f, n, "kernel.variant_ns")->value, 3 * 300 + 100 + 200);
  cr_assert_eq(find(f, n, "kernel.best_variant_ns")->value, 100);
  cr_assert_eq(find(f, n, "kernel.best_variant_launches")->value, 2);
  cr_assert_eq(find(f, n, "kernel.best_variant_threads")->value, 256);
  cr_assert_eq(find(f, n, "kernel.best_variant_smem")->value, 98304 + 1024);
}

/* One variant (however many grids) or more variants than are kept: no
 * variant facts (partial times would mislead). */
Test(core_kfacts, variants_only_when_complete, .init = reset) {
  cp_kfacts_launch a = timed(10, 128, 0, 5), b = timed(20, 128, 0, 9);
  cr_assert_eq(cp_kfacts_launch_note("one", &a), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note("one", &b), CPROTON_OK);
  cp_kfact f[CP_KFACTS_MAX];
  size_t n = cp_kfacts_get("one", f);
  cr_assert_null(find(f, n, "kernel.variants"));
  for (uint32_t t = 1; t <= CP_KFACTS_MAX_VARIANTS + 1; t++) {
    cp_kfacts_launch l = timed(10, 32 * t, 0, t);
    cr_assert_eq(cp_kfacts_launch_note("lots", &l), CPROTON_OK);
  }
  n = cp_kfacts_get("lots", f);
  cr_assert_null(find(f, n, "kernel.variants"));
  cr_assert_leq(n, CP_KFACTS_MAX);
}

/* A frame named by launch metadata shows the facts of the kernel it
 * holds; its own facts, once it has some, win; the first kernel noted for
 * a frame wins; a frame named like its kernel is no alias. */
Test(core_kfacts, alias_lends_facts, .init = reset) {
  cp_kfacts_launch a = launch(40, 10, 128), b = launch(99, 10, 64);
  cr_assert_eq(cp_kfacts_launch_note("mm", &a), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note("other", &b), CPROTON_OK);
  cr_assert_eq(cp_kfacts_alias("mm_2048", "mm"), CPROTON_OK);
  cr_assert_eq(cp_kfacts_alias("mm_2048", "mm"), CPROTON_OK); /* cached */
  cr_assert_eq(cp_kfacts_alias("mm_2048", "other"), CPROTON_OK);
  cr_assert_eq(cp_kfacts_alias("mm", "mm"), CPROTON_OK);
  cp_kfact f[CP_KFACTS_MAX];
  size_t n = cp_kfacts_get("mm_2048", f);
  cr_assert_eq(find(f, n, "kernel.regs")->value, 40, "the first kernel's");
  n = cp_kfacts_get("mm", f);
  cr_assert_eq(find(f, n, "kernel.regs")->value, 40);
  cr_assert_eq(cp_kfacts_set("mm_2048", "triton.num_warps", 8, NULL), CPROTON_OK);
  n = cp_kfacts_get("mm_2048", f);
  cr_assert_null(find(f, n, "kernel.regs"), "its own facts now");
  cr_assert_eq(find(f, n, "triton.num_warps")->value, 8);
  cr_assert_eq(cp_kfacts_alias(NULL, "mm"), CPROTON_OK);
  cr_assert_eq(cp_kfacts_get("unknown_frame", f), 0);
}

/* Variant times are the name's: an alias frame shows the kernel's compile
 * facts but not its variants (launches under other frames would mix in). */
Test(core_kfacts, alias_shows_no_variants, .init = reset) {
  cp_kfacts_launch a = timed(10, 128, 0, 300), b = timed(10, 256, 0, 100);
  cr_assert_eq(cp_kfacts_launch_note("mm", &a), CPROTON_OK);
  cr_assert_eq(cp_kfacts_launch_note("mm", &b), CPROTON_OK);
  cr_assert_eq(cp_kfacts_alias("mm_1024", "mm"), CPROTON_OK);
  cp_kfact f[CP_KFACTS_MAX];
  size_t n = cp_kfacts_get("mm", f);
  cr_assert_eq(find(f, n, "kernel.variants")->value, 2);
  n = cp_kfacts_get("mm_1024", f);
  cr_assert_not_null(find(f, n, "kernel.regs"));
  cr_assert_null(find(f, n, "kernel.variants"));
}

Test(core_kfacts, bad_facts_refused, .init = reset) {
  cr_assert_eq(cp_kfacts_set("k", "triton.bogus", 1, NULL), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "triton.bogus"));
  cr_assert_eq(cp_kfacts_set("k", "kernel.regs", 1, NULL), CPROTON_EINVAL);
  cr_assert_eq(cp_kfacts_set("k", "triton.mma", 1, NULL), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "text"));
  cr_assert_eq(cp_kfacts_set("k", "triton.n_regs", 0, "x"), CPROTON_EINVAL);
  cr_assert_eq(cp_kfacts_set(NULL, "triton.n_regs", 1, NULL), CPROTON_EINVAL);
  cp_kfact f[CP_KFACTS_MAX];
  cr_assert_eq(cp_kfacts_get("k", f), 0);
}

/* The session's profile in `format`: k's two frames carry its facts. */
static void expect_facts_on_k(int sid, const char *format) {
  char *buf = NULL;
  size_t len = 0;
  cr_assert_eq(cproton_session_data(sid, 0, format, &buf, &len), CPROTON_OK);
  cproton_profile *p;
  cr_assert_eq(cproton_profile_parse(buf, len, "kf", &p), CPROTON_OK, "%s",
               cproton_last_error());
  int with = 0;
  for (uint32_t i = 0; i < cproton_profile_node_count(p); i++) {
    cproton_metric_value v, m;
    if (cproton_profile_node_metric_by_name(p, i, "kernel.regs", &v))
      continue;
    with++;
    cr_assert_str_eq(cproton_profile_node_name(p, i), "k");
    cr_assert_eq(v.i, 40);
    cr_assert_eq(cproton_profile_node_metric_by_name(p, i, "triton.mma", &m),
                 CPROTON_OK);
    cr_assert_str_eq(m.s, "mma");
  }
  cr_assert_eq(with, 2, "%s: the two frames of k, not ROOT nor other", format);
  cproton_profile_close(p);
  free(buf);
}

/* The facts of "k" on both of its frames, once, whatever the launches. */
Test(core_kfacts, written_once_per_kernel_frame, .init = reset) {
  int sid = cpt_start_session(cpt_tmp_path("kf"), "fake", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  cp_kfacts_launch a = launch(40, 10, 128);
  cr_assert_eq(cp_kfacts_launch_note("k", &a), CPROTON_OK);
  cr_assert_eq(cp_kfacts_set("k", "triton.mma", 0, "mma"), CPROTON_OK);
  uint64_t id;
  for (int s = 0; s < 2; s++) {
    cr_assert_eq(cproton_scope_enter(s ? "b" : "a", &id), CPROTON_OK);
    for (int i = 0; i < 3; i++)
      cr_assert_eq(cp_fake_launch("k", 100, 0, 7), CPROTON_OK);
    cr_assert_eq(cp_fake_launch("other", 100, 0, 7), CPROTON_OK);
    cr_assert_eq(cproton_scope_exit(s ? "b" : "a"), CPROTON_OK);
  }
  expect_facts_on_k(sid, "hatchet");
  expect_facts_on_k(sid, "hatchet_msgpack");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK);
}
