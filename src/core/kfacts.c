/* core/kfacts.c -- the table of facts per kernel name (core/kfacts.h):
 * an open-addressing hash table of kernels under one mutex, each with a
 * value and a "set" bit per fact of the fact table below, the hashes
 * of the distinct launch configurations seen (to count them), and the
 * launches and time of each compiled variant.
 *
 * Invariant: a fact, once set, never changes (the first launch or compile
 * wins), so every profile written later shows the same facts. Warm path:
 * cp_kfacts_launch_note runs per CUPTI kernel record: a record seen before
 * (same name string, same configuration) costs a per-thread cache probe and
 * a strcmp; a new one a lock and a hash of the name. The rest runs once per
 * compiled kernel or at finalize. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/error.h"
#include "core/fnv.h"
#include "cproton/cproton.h"
#include "core/kfacts.h"

/* The facts, as data: name and whether it holds text (docs/advisor.md). */
static const struct {
  const char *name;
  int is_str;
} facts[] = {
    {"kernel.regs", 0},       {"kernel.smem_static", 0},
    {"kernel.smem_dynamic", 0}, {"kernel.local_bytes", 0},
    {"kernel.grid", 0},       {"kernel.block", 0},
    {"kernel.configs", 0},    {"triton.num_warps", 0},
    {"triton.num_stages", 0}, {"triton.num_ctas", 0},
    {"triton.shared", 0},     {"triton.n_regs", 0},
    {"triton.n_spills", 0},   {"triton.tma", 0},
    {"triton.ld_bits", 0},    {"triton.st_bits", 0},
    {"triton.local_bytes", 0}, {"triton.mma", 1},
    {"triton.remarks", 1},    {"triton.config", 1},
    {"kernel.stack_bytes", 0}};
enum { N_FACTS = sizeof facts / sizeof *facts, F_CONFIGS = 6 };

/* A compiled variant of a kernel: its launches of one (threads, shared
 * memory, registers), whatever the grid (one variant at several problem
 * sizes), with their number and time. Atomics: the cache's fast path adds
 * without the lock. Allocated apart from the kernel, so a grown table
 * leaves the cache's pointers valid. */
typedef struct variant {
  int64_t threads, smem, regs;
  _Atomic uint64_t n, ns;
} variant;

typedef struct kernel {
  char *name; /* NULL: a free slot */
  uint64_t hash;
  uint32_t set; /* bit per fact */
  int64_t v[N_FACTS];
  char *s[N_FACTS];
  uint64_t configs[CP_KFACTS_MAX_CONFIGS];
  uint32_t n_configs;
  char *alias;    /* a frame's name: the kernel it holds (cp_kfacts_alias) */
  variant *var;   /* CP_KFACTS_MAX_VARIANTS of them, or NULL */
  uint32_t n_var; /* used; one more seen: var_full */
  int var_full;
} kernel;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static kernel *table;
static size_t cap, used;

/* What each thread last noted, by the address of the kernel's name: CUPTI
 * shares one name string among all records of a kernel, so a record whose
 * name and configuration were noted before is done without the lock or a
 * hash of the name (~100 bytes for C++ kernels). `copy` (the table's own
 * name, which never moves) guards against a name address reused by another
 * kernel; `gen` against cp_kfacts_reset. */
typedef struct seen {
  const char *ptr, *copy;
  uint64_t config; /* config_of and the variant's registers, static smem */
  variant *var;    /* the launch's variant (NULL: none kept) */
  unsigned gen;
} seen;
static _Thread_local seen cache[64];

/* What each thread last aliased, by the frame name's address (interned:
 * one address per name), guarded like `seen`. */
typedef struct aliased {
  const char *frame, *kernel, *fcopy, *kcopy;
  unsigned gen;
} aliased;
static _Thread_local aliased acache[64];
static _Atomic unsigned generation = 1;


static kernel *slot(kernel *t, size_t c, const char *name, uint64_t h) {
  size_t i = h & (c - 1);
  while (t[i].name && (t[i].hash != h || strcmp(t[i].name, name)))
    i = (i + 1) & (c - 1);
  return &t[i];
}

static int grow(void) {
  size_t c = cap ? 2 * cap : 64;
  kernel *t = calloc(c, sizeof *t);
  if (!t)
    return CPROTON_ENOMEM;
  for (size_t i = 0; i < cap; i++)
    if (table[i].name)
      *slot(t, c, table[i].name, table[i].hash) = table[i];
  free(table);
  table = t, cap = c;
  return CPROTON_OK;
}

/* The kernel's entry, added when new; NULL when out of memory. Locked. */
static kernel *find_or_add(const char *name) {
  uint64_t h = cp_fnv_str(name);
  kernel *k = cap ? slot(table, cap, name, h) : NULL;
  if (k && k->name)
    return k;
  if ((used + 1) * 2 > cap && grow())
    return NULL;
  k = slot(table, cap, name, h);
  if (!(k->name = strdup(name)))
    return NULL;
  k->hash = h;
  used++;
  return k;
}

static void put(kernel *k, int f, int64_t v) {
  CP_ASSERT(f >= 0 && f < N_FACTS);
  if (!(k->set >> f & 1))
    k->v[f] = v, k->set |= 1u << f;
}

static uint64_t config_of(const cp_kfacts_launch *l) {
  uint64_t h = CP_FNV_BASIS;
  const uint32_t w[7] = {l->grid[0], l->grid[1], l->grid[2], l->block[0],
                         l->block[1], l->block[2], (uint32_t)l->smem_dynamic};
  for (int i = 0; i < 7; i++)
    h = cp_fnv_mix(h, w[i]);
  return h;
}

static void count_config(kernel *k, uint64_t h) {
  for (uint32_t i = 0; i < k->n_configs; i++)
    if (k->configs[i] == h)
      return;
  if (k->n_configs < CP_KFACTS_MAX_CONFIGS)
    k->configs[k->n_configs++] = h;
  k->v[F_CONFIGS] = k->n_configs, k->set |= 1u << F_CONFIGS;
}

/* The variant of launch l in k, added when new; NULL when k has no room
 * (var_full) or memory. Locked. */
static variant *variant_of(kernel *k, const cp_kfacts_launch *l) {
  int64_t threads = (int64_t)l->block[0] * l->block[1] * l->block[2];
  int64_t smem = l->smem_static + l->smem_dynamic;
  for (uint32_t i = 0; i < k->n_var; i++)
    if (k->var[i].threads == threads && k->var[i].smem == smem &&
        k->var[i].regs == l->regs)
      return &k->var[i];
  if (!k->var && !(k->var = calloc(CP_KFACTS_MAX_VARIANTS, sizeof *k->var)))
    return NULL;
  if (k->n_var == CP_KFACTS_MAX_VARIANTS) {
    k->var_full = 1; /* its times would be partial: none are written */
    return NULL;
  }
  variant *v = &k->var[k->n_var++];
  v->threads = threads, v->smem = smem, v->regs = l->regs;
  return v;
}

static void time_variant(variant *v, const cp_kfacts_launch *l) {
  if (!v || !l->timed)
    return;
  atomic_fetch_add_explicit(&v->n, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&v->ns, l->duration_ns, memory_order_relaxed);
}

int cp_kfacts_launch_note(const char *kernel_name, const cp_kfacts_launch *l) {
  if (!kernel_name || !l)
    return CPROTON_EINVAL;
  /* the cache's key: the configuration and the variant (registers and
   * static shared memory tell compiled variants apart) */
  uint64_t cfg = config_of(l);
  uint64_t config = cp_fnv_mix(cp_fnv_mix(cfg, (uint64_t)l->regs), (uint64_t)l->smem_static);
  unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
  seen *c = &cache[((uintptr_t)kernel_name >> 4) & 63];
  if (c->ptr == kernel_name && c->config == config && c->gen == gen &&
      !strcmp(c->copy, kernel_name)) {
    time_variant(c->var, l); /* first values kept, config counted */
    return CPROTON_OK;
  }
  pthread_mutex_lock(&mu);
  kernel *k = find_or_add(kernel_name);
  if (k) {
    put(k, 0, l->regs), put(k, 1, l->smem_static);
    put(k, 2, l->smem_dynamic), put(k, 3, l->local_bytes);
    put(k, 4, (int64_t)l->grid[0] * l->grid[1] * l->grid[2]);
    put(k, 5, (int64_t)l->block[0] * l->block[1] * l->block[2]);
    count_config(k, cfg);
    variant *v = variant_of(k, l);
    time_variant(v, l);
    *c = (seen){kernel_name, k->name, config, v, gen};
  }
  pthread_mutex_unlock(&mu);
  return k ? CPROTON_OK : CPROTON_ENOMEM;
}

static int fact_index(const char *fact) {
  for (int f = 0; fact && f < N_FACTS; f++)
    if (!strcmp(facts[f].name, fact))
      return f;
  return -1;
}

int cp_kfacts_set(const char *kernel_name, const char *fact, int64_t value,
                  const char *str) {
  int f = fact_index(fact);
  if (!kernel_name || f < 0 || f == F_CONFIGS || f < 7 /* CUPTI's */)
    return cp_error_set(CPROTON_EINVAL, "kernel fact \"%s\": unknown, or not "
                        "one a caller may set (docs/advisor.md)",
                        fact ? fact : "(null)");
  if (facts[f].is_str != (str != NULL))
    return cp_error_set(CPROTON_EINVAL, "kernel fact \"%s\" holds %s", fact,
                        facts[f].is_str ? "text" : "a number");
  int rc = CPROTON_OK;
  pthread_mutex_lock(&mu);
  kernel *k = find_or_add(kernel_name);
  if (!k)
    rc = CPROTON_ENOMEM;
  else if (!(k->set >> f & 1) && str && !(k->s[f] = strdup(str)))
    rc = CPROTON_ENOMEM;
  else
    put(k, f, value);
  pthread_mutex_unlock(&mu);
  return rc;
}

/* The kernel.variant_* facts of k into out: only for a kernel timed as two
 * or more compiled variants (all of them kept): their number, launches and
 * time, and the fastest one per launch (its average, launches, threads and
 * shared memory), from which the advisor's autotune_slower rule tells what
 * pinning it saves. Returns how many. Locked. */
static size_t variant_facts(const kernel *k, cp_kfact *out) {
  uint64_t n = 0, ns = 0, timed = 0;
  const variant *best = NULL;
  for (uint32_t i = 0; !k->var_full && i < k->n_var; i++) {
    const variant *v = &k->var[i];
    uint64_t vn = atomic_load_explicit(&v->n, memory_order_relaxed);
    uint64_t vns = atomic_load_explicit(&v->ns, memory_order_relaxed);
    if (!vn)
      continue;
    timed++, n += vn, ns += vns;
    if (!best || (double)vns / vn < (double)best->ns / best->n)
      best = v;
  }
  if (timed < 2)
    return 0;
  uint64_t bn = atomic_load_explicit(&best->n, memory_order_relaxed);
  uint64_t bns = atomic_load_explicit(&best->ns, memory_order_relaxed);
  const cp_kfact f[] = {
      {"kernel.variants", (int64_t)timed, NULL},
      {"kernel.variant_launches", (int64_t)n, NULL},
      {"kernel.variant_ns", (int64_t)ns, NULL},
      {"kernel.best_variant_ns", (int64_t)(bns / bn), NULL},
      {"kernel.best_variant_launches", (int64_t)bn, NULL},
      {"kernel.best_variant_threads", best->threads, NULL},
      {"kernel.best_variant_smem", best->smem, NULL}};
  memcpy(out, f, sizeof f);
  return sizeof f / sizeof *f;
}
enum { N_VARIANT_FACTS = 7 };
_Static_assert(N_FACTS + N_VARIANT_FACTS <= CP_KFACTS_MAX,
               "cp_kfacts_get's out is too small for the variant facts");

int cp_kfacts_alias(const char *frame, const char *kernel_name) {
  if (!frame || !kernel_name || !strcmp(frame, kernel_name))
    return CPROTON_OK; /* not renamed: its own facts */
  unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
  aliased *c = &acache[((uintptr_t)frame >> 4) & 63];
  if (c->frame == frame && c->kernel == kernel_name && c->gen == gen &&
      !strcmp(c->fcopy, frame) && !strcmp(c->kcopy, kernel_name))
    return CPROTON_OK;
  pthread_mutex_lock(&mu);
  kernel *k = find_or_add(frame);
  int ok = k && (k->alias || (k->alias = strdup(kernel_name)));
  if (ok)
    *c = (aliased){frame, kernel_name, k->name, k->alias, gen};
  pthread_mutex_unlock(&mu);
  return ok ? CPROTON_OK : CPROTON_ENOMEM;
}

/* The entry whose facts `name` shows: its own, else its alias's. Locked. */
static kernel *facts_of(const char *name) {
  kernel *k = cap ? slot(table, cap, name, cp_fnv_str(name)) : NULL;
  if (!k || !k->name)
    return NULL;
  if (!k->set && !k->n_var && k->alias) {
    kernel *a = slot(table, cap, k->alias, cp_fnv_str(k->alias));
    return a->name ? a : k;
  }
  return k;
}

size_t cp_kfacts_get(const char *kernel_name, cp_kfact *out) {
  size_t n = 0;
  if (!kernel_name)
    return 0;
  pthread_mutex_lock(&mu);
  kernel *k = facts_of(kernel_name);
  /* variant times are of the name: through an alias they would mix the
   * kernel's launches under other frames (other sizes) into this one */
  int own = k && !strcmp(k->name, kernel_name);
  for (int f = 0; k && k->name && f < N_FACTS; f++)
    if (k->set >> f & 1)
      out[n++] = (cp_kfact){facts[f].name, k->v[f], k->s[f]};
  if (own)
    n += variant_facts(k, out + n);
  pthread_mutex_unlock(&mu);
  return n;
}

int cproton_kernel_fact(const char *kernel_name, const char *fact,
                        int64_t value, const char *text) {
  return cp_kfacts_set(kernel_name, fact, value, text);
}

void cp_kfacts_reset(void) {
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < cap; i++) {
    free(table[i].name);
    free(table[i].alias);
    free(table[i].var);
    for (int f = 0; f < N_FACTS; f++)
      free(table[i].s[f]);
  }
  free(table);
  table = NULL, cap = used = 0;
  atomic_fetch_add(&generation, 1); /* every thread's cache is stale */
  pthread_mutex_unlock(&mu);
}
