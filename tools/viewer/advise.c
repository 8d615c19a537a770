/* tools/viewer/advise.c -- the advisor's driver (docs/advisor.md): finds
 * the kernel frames of every profile (frames with `device_id`, not
 * intra-kernel scopes), joins them
 * by call path (a hash of the frame names from the root), gathers their
 * facts (compile facts, time, FLOPs and bytes, PC samples of their source
 * lines), lends per-kernel facts between kernels of one name, runs every
 * rule of the table (advise_rules.c) and prints the findings sorted by the
 * time they would save (advise_out.c).
 *
 * Invariant: nothing in a profile can make it fail: absent, mistyped or
 * absurd values are NaN facts, and a rule whose facts no kernel holds is
 * listed as unavailable. Linear in the nodes (one pass per profile, a hash
 * table of call paths). Called by main.c and tests/fuzz/advise_fuzz.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "viewer.h"

/* Metric names of the numeric facts, in av_fact order (docs/advisor.md). */
static const char *const fact_names[AF_N] = {
    "kernel.regs", "kernel.smem_static", "kernel.smem_dynamic",
    "kernel.local_bytes", "kernel.grid", "kernel.block", "kernel.configs",
    "triton.num_warps", "triton.num_stages", "triton.num_ctas",
    "triton.shared", "triton.n_regs", "triton.n_spills", "triton.tma",
    "triton.ld_bits", "triton.st_bits", "triton.local_bytes",
    "kernel.stack_bytes",
    "kernel.variants", "kernel.variant_launches", "kernel.variant_ns",
    "kernel.best_variant_ns", "kernel.best_variant_launches",
    "kernel.best_variant_threads", "kernel.best_variant_smem",
    "time (ns)", "count", "flops", "flops8", "flops16", "flops32", "flops64",
    "bytes", "host_syncs", "host_sync_ns",
    "pm_sampled_ns", "dram_throughput%*ns", "sm_throughput%*ns",
    "num_samples", "num_stalled_samples", "stalled_long_scoreboard", "stalled_short_scoreboard",
    "stalled_mio_throttle", "stalled_lg_throttle", "stalled_barrier",
    "stalled_math_pipe_throttle", "stalled_wait", "stalled_selected",
    "stalled_drain"};

static const char *const sfact_names[AS_N] = {"triton.mma", "triton.remarks",
                                              "triton.config"};

/* Metric keys of one profile (UINT32_MAX: absent). */
typedef struct keys {
  uint32_t f[AF_N], s[AS_N], device_id, cycles;
} keys;

static uint32_t key_of(const cproton_profile *p, const char *name) {
  uint32_t k;
  return cproton_profile_metric_find(p, name, &k) == CPROTON_OK ? k
                                                                : UINT32_MAX;
}

static void find_keys(const cproton_profile *p, keys *k) {
  for (int i = 0; i < AF_N; i++)
    k->f[i] = key_of(p, fact_names[i]);
  for (int i = 0; i < AS_N; i++)
    k->s[i] = key_of(p, sfact_names[i]);
  k->device_id = key_of(p, "device_id");
  k->cycles = key_of(p, "cycles");
}

/* A finite, non-negative number or NaN: facts are counts and sizes. */
static double num(const cproton_profile *p, uint32_t node, uint32_t key) {
  cproton_metric_value v;
  if (key == UINT32_MAX || cproton_profile_node_metric(p, node, key, &v) ||
      (v.kind != CPROTON_METRIC_INT && v.kind != CPROTON_METRIC_DOUBLE))
    return NAN;
  return isfinite(v.d) && v.d >= 0 ? v.d : NAN;
}

static const char *str(const cproton_profile *p, uint32_t node, uint32_t key) {
  cproton_metric_value v;
  if (key == UINT32_MAX || cproton_profile_node_metric(p, node, key, &v) ||
      v.kind != CPROTON_METRIC_STRING)
    return NULL;
  return v.s;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

static uint64_t hash_str(uint64_t h, const char *s) {
  return hash_bytes(h, s, strlen(s));
}

/* Open-addressing table from a 64-bit key to a kernel index. */
typedef struct table {
  uint64_t *key;
  uint32_t *val, cap;
} table;

static int table_init(table *t, uint32_t n) {
  t->cap = 16;
  while (t->cap < 2 * (uint64_t)n + 16)
    t->cap *= 2;
  t->key = calloc(t->cap, sizeof *t->key);
  t->val = malloc(t->cap * sizeof *t->val);
  if (t->val)
    memset(t->val, 0xff, t->cap * sizeof *t->val);
  return t->key && t->val ? 0 : -1;
}

/* The slot of `k`: its value, or UINT32_MAX in a free slot. */
static uint32_t *table_slot(table *t, uint64_t k) {
  uint32_t i = (uint32_t)(k ^ (k >> 32)) & (t->cap - 1);
  while (t->val[i] != UINT32_MAX && t->key[i] != k)
    i = (i + 1) & (t->cap - 1);
  t->key[i] = k;
  return &t->val[i];
}

typedef struct run {
  av_kernel *k;
  uint32_t n, cap;
  table paths;
} run;

/* Kernel frames and frames with host synchronizations: an upper bound on
 * the av_kernels a profile makes. */
static uint32_t count_kernels(const cproton_profile *p, const keys *ks) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < cproton_profile_node_count(p); i++)
    n += !isnan(num(p, i, ks->device_id)) || str(p, i, ks->device_id) != NULL ||
         num(p, i, ks->f[AF_SYNCS]) > 0;
  return n;
}

static void new_kernel(av_kernel *k, const cproton_profile *p, uint32_t node) {
  memset(k, 0, sizeof *k);
  k->name = cproton_profile_node_name(p, node);
  k->p = p;
  k->node = node;
  for (int f = 0; f < AF_N; f++)
    k->f[f] = NAN;
}

/* The device of kernel frame `node`: its device_id among the profile's
 * device entries (by index; CUDA when the type is not written). */
static void find_device(av_kernel *k, const cproton_profile *p, uint32_t node,
                        uint32_t key) {
  char buf[32];
  const char *id = str(p, node, key);
  double d = num(p, node, key);
  if (!id && !isnan(d))
    snprintf(buf, sizeof buf, "%.0f", d), id = buf;
  for (uint32_t i = 0; id && i < cproton_profile_device_count(p); i++) {
    cproton_device_info info;
    if (cproton_profile_device(p, i, &info) == CPROTON_OK && info.index &&
        !strcmp(info.index, id)) {
      k->dev = info;
      k->has_dev = 1;
      return;
    }
  }
}

/* Adds a node's PC samples and stall reasons to k; returns its samples (NaN
   if none). Samples sit on the kernel frame itself when the kernel has no
   line table (nvcc without -lineinfo), on its line frames otherwise: both
   are the node's own (exclusive) counts, so they add. */
static double add_samples(av_kernel *k, const cproton_profile *p,
                          uint32_t node, const keys *ks) {
  double s = num(p, node, ks->f[AF_SAMPLES]);
  if (isnan(s))
    return s;
  for (int f = AF_SAMPLES; f < AF_N; f++) {
    double v = num(p, node, ks->f[f]);
    if (!isnan(v))
      k->f[f] = (isnan(k->f[f]) ? 0 : k->f[f]) + v;
  }
  return s;
}

/* Takes the facts of frame `node` that k lacks (the first profile wins). */
static void take_node(av_kernel *k, const cproton_profile *p, uint32_t node,
                      const keys *ks) {
  for (int f = 0; f < AF_N_NODE; f++)
    if (isnan(k->f[f]))
      k->f[f] = num(p, node, ks->f[f]);
  for (int s = 0; s < AS_N; s++)
    if (!k->s[s])
      k->s[s] = str(p, node, ks->s[s]);
  if (!k->has_dev)
    find_device(k, p, node, ks->device_id);
  add_samples(k, p, node, ks);
}

/* Adds a source line's samples (frames "file:line@function") to k; keeps
 * the line with most samples (hot) and the one with most long-scoreboard
 * samples (the load that waits most: the hot line may be the exit, where
 * stores drain). */
static void take_line(av_kernel *k, const cproton_profile *p, uint32_t node,
                      const keys *ks) {
  double s = add_samples(k, p, node, ks);
  if (isnan(s))
    return;
  double l = num(p, node, ks->f[AF_S_LSB]);
  l = isnan(l) ? 0 : l;
  const char *name = cproton_profile_node_name(p, node);
  if (s > k->hot_samples)
    k->hot_samples = s, k->hot_line = name, k->hot_lsb = l;
  if (l > k->mem_lsb)
    k->mem_samples = s, k->mem_line = name, k->mem_lsb = l;
}

/* One profile: every kernel frame joined into r by call path, every source
 * line's samples added to the kernel frame above it. */
static int scan(run *r, const cproton_profile *p, int index) {
  keys ks;
  find_keys(p, &ks);
  uint32_t n = cproton_profile_node_count(p);
  uint64_t *path = malloc((size_t)(n ? n : 1) * sizeof *path);
  uint32_t *owner = malloc((size_t)(n ? n : 1) * sizeof *owner);
  if (!path || !owner) {
    free(path), free(owner);
    return vw_fail("out of memory");
  }
  for (uint32_t i = 0; i < n; i++) {
    uint32_t par = cproton_profile_node_parent(p, i);
    int ok_par = par < i; /* pre-order; anything else is no parent */
    const char *name = cproton_profile_node_name(p, i);
    path[i] = hash_str(ok_par ? path[par] : 0xcbf29ce484222325ull, name);
    owner[i] = ok_par ? owner[par] : UINT32_MAX;
    int is_line = strchr(name, '@') && !isnan(num(p, i, ks.f[AF_SAMPLES]));
    /* intra-kernel scopes carry device_id too: below a kernel frame, or
     * with `cycles` (Proton leaves their kernel frame without metrics) */
    int is_kernel = !is_line && owner[i] == UINT32_MAX &&
                    isnan(num(p, i, ks.cycles)) &&
                    (!isnan(num(p, i, ks.device_id)) || str(p, i, ks.device_id));
    /* a calling context where the host waited on the GPU (host_sync) */
    int is_host = !is_kernel && !is_line && owner[i] == UINT32_MAX &&
                  num(p, i, ks.f[AF_SYNCS]) > 0;
    if (is_kernel || is_host) {
      uint32_t *slot = table_slot(&r->paths, path[i]);
      if (*slot == UINT32_MAX && r->n < r->cap)
        new_kernel(&r->k[*slot = r->n++], p, i);
      if (*slot != UINT32_MAX) {
        av_kernel *k = &r->k[*slot];
        if (!k->seen_in)
          k->parent = ok_par ? path[par] : 0;
        k->seen_in |= index < 64 ? 1ull << index : 0;
        take_node(k, p, i, &ks);
        r->k[*slot].host |= is_host;
        owner[i] = is_kernel ? *slot : UINT32_MAX;
      }
    } else if (is_line && owner[i] != UINT32_MAX) {
      take_line(&r->k[owner[i]], p, i, &ks);
    }
  }
  free(path), free(owner);
  return 0;
}

/* A kernel frame that only one profile holds (a candidate for a join). */
static int single(const av_kernel *k) {
  return !k->host && k->seen_in && !(k->seen_in & (k->seen_in - 1)) &&
         k->f[AF_COUNT] > 0;
}

static int has_static(const av_kernel *k) {
  for (int f = 0; f < AF_N_STATIC; f++)
    if (!isnan(k->f[f]))
      return 1;
  for (int s = 0; s < AS_N; s++)
    if (k->s[s])
      return 1;
  return 0;
}

/* Joins a and b, one kernel under two names, into the frame of the earlier
 * profile (its time and path win, as for a path join); the name becomes
 * the one its compile facts are filed under (the compiled kernel's, not
 * the launch_metadata name); samples add. */
static void join(av_kernel *a, av_kernel *b) {
  av_kernel *to = a->seen_in < b->seen_in ? a : b, *from = to == a ? b : a;
  if (has_static(from) && !has_static(to))
    to->name = from->name;
  for (int f = 0; f < AF_N; f++)
    if (isnan(to->f[f]))
      to->f[f] = from->f[f];
    else if (f >= AF_N_NODE && !isnan(from->f[f]))
      to->f[f] += from->f[f]; /* samples add, like a path join's */
  for (int s = 0; s < AS_N; s++)
    to->s[s] = to->s[s] ? to->s[s] : from->s[s];
  if (!to->has_dev && from->has_dev)
    to->dev = from->dev, to->has_dev = 1;
  if (from->hot_samples > to->hot_samples)
    to->hot_line = from->hot_line, to->hot_samples = from->hot_samples,
    to->hot_lsb = from->hot_lsb;
  if (from->mem_lsb > to->mem_lsb)
    to->mem_line = from->mem_line, to->mem_samples = from->mem_samples,
    to->mem_lsb = from->mem_lsb;
  to->seen_in |= from->seen_in;
  from->dead = 1;
}

/* (parent path, launch count): the count's bits, as equal counts are
 * equal doubles (whole numbers read from the same kind of field). */
static uint64_t join_key(const av_kernel *k) {
  double count = k->f[AF_COUNT];
  return hash_bytes(k->parent ^ 0x9e3779b97f4a7c15ull, &count, sizeof count);
}

/* One kernel under two names: Triton's launch hook names a kernel frame by
 * its launch_metadata "name" (e.g. matmul_kernel_2048x2048x2048) where a
 * profile without the hook (pcsampling) names it matmul_kernel, so the path
 * join misses it and the kernel's time was counted twice. Frames each held
 * by one profile, below the same call path with the same launch count, are
 * joined when that (path, count) has exactly two of them, from different
 * profiles; anything ambiguous stays apart. Linear: a table by (path, count). */
static int join_renamed(run *r) {
  table t;
  uint32_t *cnt = NULL;
  if (table_init(&t, r->n) || !(cnt = calloc(t.cap, sizeof *cnt)))
    return free(t.key), free(t.val), vw_fail("out of memory");
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < r->n; i++) {
      av_kernel *k = &r->k[i];
      if (!single(k))
        continue;
      uint32_t *slot = table_slot(&t, join_key(k));
      uint32_t *c = &cnt[slot - t.val];
      if (*slot == UINT32_MAX)
        *slot = i;
      if (!pass) {
        *c += *c < 3;
        continue;
      }
      av_kernel *o = &r->k[*slot];
      if (*c == 2 && o != k && !o->dead && single(o) &&
          o->seen_in != k->seen_in && o->parent == k->parent &&
          o->f[AF_COUNT] == k->f[AF_COUNT])
        join(o, k);
    }
  free(cnt), free(t.key), free(t.val);
  return 0;
}

/* Per-kernel facts (CUPTI's and Triton's) are facts about the kernel, not
 * the call path: a kernel lacking them takes them from one of its name. */
static int lend_by_name(run *r) {
  table names;
  if (table_init(&names, r->n))
    return vw_fail("out of memory");
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < r->n; i++) {
      av_kernel *k = &r->k[i];
      if (k->dead)
        continue;
      uint32_t *slot = table_slot(&names, hash_str(0x84222325ull, k->name));
      if (*slot == UINT32_MAX)
        *slot = i;
      av_kernel *d = &r->k[*slot];
      av_kernel *to = pass ? k : d, *from = pass ? d : k;
      if (strcmp(d->name, k->name))
        continue; /* a hash collision: no lending */
      if (pass)
        k->frames = d->frames;
      else
        d->frames++;
      for (int f = 0; f < AF_N_STATIC; f++)
        if (isnan(to->f[f]))
          to->f[f] = from->f[f];
      for (int s = 0; s < AS_N; s++)
        if (!to->s[s])
          to->s[s] = from->s[s];
    }
  free(names.key), free(names.val);
  return 0;
}

static int groups_of(const av_kernel *k) {
  const double *f = k->f;
  if (k->host)
    return AG_SYNC; /* a calling context: only host_sync judges it */
  int g = f[AF_TIME] > 0 ? AG_TIME : 0;
  if (!isnan(f[AF_REGS]) || !isnan(f[AF_GRID]))
    g |= AG_CUPTI | AG_CONF;
  if (!isnan(f[AF_T_WARPS]))
    g |= AG_TRITON | AG_CONF;
  if (f[AF_SAMPLES] > 0)
    g |= AG_PCS;
  if (k->hot_samples > 0)
    g |= AG_LINES;
  if (f[AF_SYNCS] > 0)
    g |= AG_SYNC;
  for (int i = AF_FLOPS; i <= AF_BYTES; i++)
    g |= !isnan(f[i]) ? AG_ROOF : 0;
  return g;
}

/* Findings are sorted through pointers: each is ~600 bytes. Cause findings
 * first, then the bound rows' (av_rule.bound), each by saving. */
static int by_saving(const void *a, const void *b) {
  const av_finding *x = *(const av_finding *const *)a;
  const av_finding *y = *(const av_finding *const *)b;
  if (av_rules[x->rule].bound != av_rules[y->rule].bound)
    return av_rules[x->rule].bound - av_rules[y->rule].bound;
  if (x->saving != y->saving)
    return x->saving < y->saving ? 1 : -1;
  int c = strcmp(x->k->name, y->k->name);
  return c ? c : strcmp(av_rules[x->rule].id, av_rules[y->rule].id);
}

/* Every rule on every kernel with time; a finding must save >= 1%. */
static int evaluate(run *r, const av_ctx *c, av_finding **out, size_t *n_out,
                    int *have) {
  size_t n = 0, cap = 64;
  av_finding *f = malloc(cap * sizeof *f);
  if (!f)
    return vw_fail("out of memory");
  for (uint32_t i = 0; i < r->n; i++) {
    av_kernel *k = &r->k[i];
    if (k->dead)
      continue;
    k->groups = groups_of(k);
    for (int q = 0; q < av_n_rules; q++) {
      int needs = av_rules[q].needs;
      if ((k->groups & needs) != needs)
        continue;
      have[q] = 1;
      if (n == cap) {
        av_finding *g = realloc(f, (cap *= 2) * sizeof *f);
        if (!g)
          return free(f), vw_fail("out of memory");
        f = g;
      }
      memset(&f[n], 0, sizeof f[n]);
      f[n].rule = q, f[n].k = k, f[n].base = k->f[AF_TIME];
      if (av_rules[q].check(k, c, &f[n]) && f[n].saving > 0 &&
          f[n].saving >= 0.01 * f[n].base && f[n].saving < f[n].base)
        n++;
    }
  }
  *out = f, *n_out = n;
  return 0;
}

int vw_advise(const cproton_profile *const *profiles, int n, int json,
              FILE *out) {
  run r = {0};
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    keys ks;
    find_keys(profiles[i], &ks);
    total += count_kernels(profiles[i], &ks);
  }
  r.cap = total > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)total;
  r.k = malloc((size_t)(r.cap ? r.cap : 1) * sizeof *r.k);
  int have[64] = {0}, rc = -1;
  av_finding *f = NULL;
  const av_finding **sorted = NULL;
  size_t n_f = 0;
  if (!r.k || table_init(&r.paths, r.cap)) {
    vw_fail("out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++)
    if (scan(&r, profiles[i], i))
      goto out;
  if ((n > 1 && join_renamed(&r)) || lend_by_name(&r)) /* joins: 2+ files */
    goto out;
  av_ctx c = {0, r.k, r.n};
  for (uint32_t i = 0; i < r.n; i++)
    c.total_time += r.k[i].f[AF_TIME] > 0 && !r.k[i].host && !r.k[i].dead
                        ? r.k[i].f[AF_TIME]
                        : 0;
  if (evaluate(&r, &c, &f, &n_f, have))
    goto out;
  int unavail[64];
  for (int q = 0; q < av_n_rules; q++)
    unavail[q] = !have[q];
  if (!(sorted = malloc((n_f ? n_f : 1) * sizeof *sorted))) {
    vw_fail("out of memory");
    goto out;
  }
  for (size_t i = 0; i < n_f; i++)
    sorted[i] = &f[i];
  qsort(sorted, n_f, sizeof *sorted, by_saving);
  (json ? av_print_json : av_print_text)(sorted, n_f, unavail, &c, out);
  rc = 0;
out:
  free(sorted);
  free(f);
  free(r.k);
  free(r.paths.key), free(r.paths.val);
  return rc;
}
