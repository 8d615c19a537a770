/* instrument/pass.c -- the public face of the PTX pass (cproton_ptx_*):
 * checks options, reads the PTX, assigns scopes, sizes each kernel's buffer
 * and writes the instrumented text.
 *
 * Invariant: output = input with insertions, and each exit statement of an
 * instrumented kernel replaced by a branch to its one finalize block; other
 * bytes are copied verbatim and in order, so a module without markers comes
 * out byte for byte unchanged. The pass is a pure function of
 * (text, options): no globals, safe to run on many threads at once.
 * Not a hot path; called from the C API, the CLI and the Python extension. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cproton/instrument.h"
#include "instrument/layout.h"
#include "instrument/loops.h"
#include "instrument/lower.h"
#include "instrument/ptx_read.h"
#include "instrument/scope.h"

#define DEFAULT_MAX_SHARED 232448u
#define STATIC_SHARED_LIMIT 49152u
#define DEFAULT_GLOBAL_SEG 4096u
/* buffer_strategy=flush keeps every record it can: Proton's default global
 * segment (16 KiB per profiling unit, 2,048 records). */
#define FLUSH_GLOBAL_SEG 16384u
#define DEFAULT_SHARED_SEG 1024u
#define MIN_SHARED_SEG 64u

typedef struct kernel_out {
  char *name;
  cp_scope_table scopes;
  cproton_buffer_layout lay;
  cproton_ptx_stats stats;
} kernel_out;

struct cproton_ptx {
  char *text;
  size_t size;
  kernel_out *k;
  size_t n_kernels;
};

int cproton_ptx_options_init(cproton_ptx_options *o) {
  if (!o)
    return cp_error_set(CPROTON_EINVAL, "PTX options pointer is NULL");
  memset(o, 0, sizeof *o);
  o->counter = CPROTON_COUNTER_CLOCK64;
  o->buffer = CPROTON_BUFFER_SHARED;
  o->granularity = CPROTON_GRANULARITY_WARP;
  return CPROTON_OK;
}

static int check_options(const cproton_ptx_options *o) {
  if ((unsigned)o->counter > CPROTON_COUNTER_GLOBALTIMER)
    return cp_error_set(CPROTON_EINVAL, "unknown counter %d (clock, clock64 or globaltimer)", (int)o->counter);
  if ((unsigned)o->buffer > CPROTON_BUFFER_GLOBAL)
    return cp_error_set(CPROTON_EINVAL, "unknown buffer kind %d (shared or global)", (int)o->buffer);
  if ((unsigned)o->granularity >= CP_LAYOUT_N_GRANULARITIES)
    return cp_error_set(CPROTON_EINVAL,
                        "unknown granularity %d (warp, warpgroup, cta, warp_2/4/8 or warp_group_2/4/8)",
                        (int)o->granularity);
  if (o->num_warps > 32)
    return cp_error_set(CPROTON_EINVAL, "num_warps %u exceeds 32", o->num_warps);
  if (o->buffer_size > (1u << 30))
    return cp_error_set(CPROTON_EINVAL, "buffer_size %u exceeds 1 GiB", o->buffer_size);
  if ((unsigned)o->strategy > CPROTON_STRATEGY_FLUSH)
    return cp_error_set(CPROTON_EINVAL, "unknown buffer strategy %d (circular or flush)", (int)o->strategy);
  return 0;
}

static uint32_t prev_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p <= v / 2)
    p *= 2;
  return v ? p : 0;
}

/* Units, sampled units and the unit -> first warp map. */
static int size_units(const cp_ptx_kernel *k, const cproton_ptx_options *o, const char *kname,
                      cproton_buffer_layout *lay, uint32_t *mask_out) {
  uint32_t warps = o->num_warps;
  if (!warps) {
    uint64_t threads = (uint64_t)k->h.ntid[0] * (k->h.ntid[1] ? k->h.ntid[1] : 1) * (k->h.ntid[2] ? k->h.ntid[2] : 1);
    warps = (uint32_t)((threads + 31) / 32);
  }
  if (!warps)
    return cp_error_set(CPROTON_EINVAL, "kernel '%s' has no .reqntid/.maxntid; give num_warps "
                        "(cproton-instrument --num-warps N, or __launch_bounds__ in CUDA C)", kname);
  if (warps > 32)
    return cp_error_set(CPROTON_EUNSUPPORTED, "kernel '%s': %u warps per CTA; at most 32", kname, warps);
  uint32_t wpu = cp_layout_unit_warps((uint32_t)o->granularity);
  uint32_t total = (warps + wpu - 1) / wpu;
  uint32_t all = total >= 32 ? 0xffffffffu : (1u << total) - 1;
  uint32_t mask = o->sample_mask ? (o->sample_mask & all) : 0;
  if (o->sample_mask && !mask)
    return cp_error_set(CPROTON_EINVAL, "kernel '%s': sample mask 0x%x selects none of its %u units",
                        kname, o->sample_mask, total);
  if (mask == all)
    mask = 0;
  memset(lay->unit_warp, 0, sizeof lay->unit_warp);
  uint32_t n = 0;
  for (uint32_t u = 0; u < total; u++)
    if (!mask || (mask >> u & 1))
      lay->unit_warp[n++] = (uint8_t)(u * wpu);
  lay->n_units = n;
  *mask_out = mask;
  return 0;
}

/* Events in a warp-specialized kernel (Triton's partitions set their
 * registers with setmaxnreg) whose units are more than one warp, or
 * sampled: a partition may hold no recording warp, so an event started or
 * ended there stays unpaired. Said in the kernel's warning (not refused:
 * events within the recording warps' partitions are fine). */
static int note_partitioned_events(const char *text, const cp_ptx_kernel *k, const cproton_ptx_options *o,
                                   const char *kname, cp_scope_table *t) {
  uint32_t wpu = cp_layout_unit_warps((uint32_t)o->granularity);
  size_t len = k->body_end > k->h.name_off ? k->body_end - k->h.name_off : 0;
  if (!cp_scope_has_events(t) || (wpu == 1 && !o->sample_mask) || !memmem(text + k->h.name_off, len, "setmaxnreg", 10))
    return 0;
  char why[512];
  snprintf(why, sizeof why, "kernel '%s': events in a warp-specialized kernel with %u warps per unit%s: "
           "a partition without a recording warp records nothing, and its events stay unpaired; use "
           "granularity=warp", kname, wpu, o->sample_mask ? " and sampled units" : "");
  return cp_scope_add_note(t, why);
}

/* Default segment of a kernel whose markers all run at most once per warp
 * (no marker in a loop): one slot per marker, so nothing is overwritten;
 * 0 when a marker can repeat (then the defaults below apply). */
static int exact_segment(const char *text, size_t size, const cp_ptx_kernel *k, const cproton_ptx_options *o,
                         uint32_t *seg) {
  int in_loop = 1;
  int rc = cp_ptx_records_in_loop(text, size, k, &in_loop);
  *seg = 0;
  if (rc || in_loop || k->n_records > (1u << 20))
    return rc;
  uint32_t min = o->buffer == CPROTON_BUFFER_SHARED ? MIN_SHARED_SEG : CP_LAYOUT_MIN_SEGMENT;
  uint32_t need = (uint32_t)k->n_records * CP_LAYOUT_RECORD_BYTES, s = min;
  while (s < need)
    s *= 2;
  *seg = s;
  return 0;
}

/* Segment size from the options and, for shared buffers, free memory. */
static int size_segments(const cp_ptx_module *m, const cp_ptx_kernel *k, const cproton_ptx_options *o,
                         const char *kname, uint32_t exact, cproton_buffer_layout *lay) {
  uint32_t n = lay->n_units, seg;
  uint32_t used = m->module_shared + k->static_shared;
  uint32_t static_cap = used < STATIC_SHARED_LIMIT ? STATIC_SHARED_LIMIT - used : 0;
  if (o->buffer_size) {
    seg = prev_pow2(o->buffer_size / n);
    if (seg < CP_LAYOUT_MIN_SEGMENT)
      return cp_error_set(CPROTON_EINVAL, "kernel '%s': buffer_size %u gives %u units less than %u bytes each",
                          kname, o->buffer_size, n, CP_LAYOUT_MIN_SEGMENT);
  } else if (o->buffer == CPROTON_BUFFER_GLOBAL) {
    seg = o->strategy == CPROTON_STRATEGY_FLUSH ? FLUSH_GLOBAL_SEG : DEFAULT_GLOBAL_SEG;
  } else {
    uint32_t max = o->max_shared_bytes ? o->max_shared_bytes : DEFAULT_MAX_SHARED;
    uint64_t taken = (uint64_t)used + o->existing_shared_bytes;
    uint32_t avail = taken < max ? (uint32_t)(max - taken) : 0;
    if (avail > static_cap)
      avail = static_cap;
    seg = prev_pow2(avail / n < DEFAULT_SHARED_SEG ? avail / n : DEFAULT_SHARED_SEG);
    if (seg < MIN_SHARED_SEG)
      return cp_error_set(CPROTON_ELIMIT, "kernel '%s': only %u bytes of shared memory free for the "
                          "profile buffer of %u units; use buffer=global", kname, avail, n);
  }
  if (o->buffer == CPROTON_BUFFER_SHARED && (uint64_t)seg * n > static_cap)
    return cp_error_set(CPROTON_ELIMIT, "kernel '%s': a %u-byte shared profile buffer exceeds the "
                        "%u bytes of static shared memory left; use a smaller buffer_size or buffer=global",
                        kname, seg * n, static_cap);
  if (!o->buffer_size && exact && exact < seg)
    seg = exact;
  lay->segment_bytes = seg;
  lay->header_bytes = cp_layout_header_bytes(n);
  uint64_t per_cta = (uint64_t)lay->header_bytes + (uint64_t)seg * n;
  if (per_cta > (1u << 30))
    return cp_error_set(CPROTON_ELIMIT, "kernel '%s': %llu bytes per CTA exceeds 1 GiB", kname,
                        (unsigned long long)per_cta);
  lay->per_cta_bytes = (uint32_t)per_cta;
  return 0;
}

/* Whether kernel `ko` sums in the kernel: asked for, no events (they pair
 * across warps, which only records allow) and few enough scopes for
 * registers. Otherwise it keeps records, and its layout says so (no
 * warning: front ends that asked for sums by default must not warn about
 * kernels that simply need records). */
static int wants_aggregate(const cproton_ptx_options *o, const kernel_out *ko) {
  return o->aggregate && !cp_scope_has_events(&ko->scopes) && ko->scopes.n <= CP_AGG_MAX_SCOPES;
}

/* The layout of a kernel that sums in the kernel: one slot per CTA. */
static void aggregate_layout(cproton_buffer_layout *lay, uint32_t n_scopes) {
  lay->aggregate = 1;
  lay->header_bytes = 0;
  lay->segment_bytes = 0;
  lay->per_cta_bytes = cp_layout_sum_slot_bytes(n_scopes);
}

/* Scopes, layout and lowering configuration of kernel `k`. */
static int plan_kernel(const char *text, size_t size, const cp_ptx_module *m, const cp_ptx_kernel *k,
                       const cproton_ptx_options *o, kernel_out *ko, cp_lower_cfg *cfg) {
  /* flush writes straight to the global buffer the runtime flushes after
   * each launch: there is no on-chip stage to flush from inside a kernel. */
  cproton_ptx_options eff = *o;
  if (eff.strategy == CPROTON_STRATEGY_FLUSH)
    eff.buffer = CPROTON_BUFFER_GLOBAL;
  o = &eff;
  ko->name = malloc(k->h.name_len + 1);
  if (!ko->name)
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  memcpy(ko->name, text + k->h.name_off, k->h.name_len);
  ko->name[k->h.name_len] = '\0';
  if (!k->h.param_len || !k->h.param_is_u64)
    return cp_error_set(CPROTON_EUNSUPPORTED,
                        "kernel '%s' (line %u): the last .param must be a 64-bit pointer to the profile "
                        "buffer (Triton >= 3.5 passes profile_scratch there; CUDA C kernels end their "
                        "parameter list with CPROTON_BUFFER_PARAM)", ko->name, k->line);
  int rc = cp_scope_assign(text, k, &ko->scopes);
  uint32_t mask = 0;
  cproton_buffer_layout *lay = &ko->lay;
  if (!rc)
    rc = size_units(k, o, ko->name, lay, &mask);
  int agg = !rc && wants_aggregate(o, ko);
  if (!rc && !agg)
    rc = note_partitioned_events(text, k, o, ko->name, &ko->scopes);
  uint32_t exact = 0;
  if (!rc && !agg)
    rc = exact_segment(text, size, k, o, &exact);
  if (!rc && !agg)
    rc = size_segments(m, k, o, ko->name, exact, lay);
  if (rc)
    return rc;
  if (agg)
    aggregate_layout(lay, ko->scopes.n);
  lay->counter = (uint32_t)o->counter;
  lay->granularity = (uint32_t)o->granularity;
  lay->buffer = (uint32_t)o->buffer;
  lay->n_scopes = ko->scopes.n;
  lay->scope_names = (const char *const *)ko->scopes.names;
  lay->scope_parents = ko->scopes.parents;
  *cfg = (cp_lower_cfg){.counter = o->counter, .buffer = o->buffer, .granularity = o->granularity,
                        .n_units = lay->n_units, .seg_bytes = lay->segment_bytes,
                        .header_bytes = lay->header_bytes, .per_cta_bytes = lay->per_cta_bytes,
                        .sample_mask = mask, .n_scopes = ko->scopes.n, .aggregate = agg,
                        .flow_verified = ko->scopes.flow_verified,
                        .param = text + k->h.param_off, .param_len = k->h.param_len,
                        .one_dim = k->h.ntid_required && k->h.ntid[1] <= 1 && k->h.ntid[2] <= 1 && !o->num_warps};
  return 0;
}

/* The two lowerings, by cfg->aggregate: records (instrument/lower.c) and
 * in-kernel sums (instrument/lower_agg.c). */
static const struct lowering {
  void (*prologue)(cp_text *, cp_lower_cfg *);
  void (*record)(cp_text *, cp_lower_cfg *, uint32_t, int);
  void (*finalize)(cp_text *, cp_lower_cfg *);
} lowerings[2] = {
    {cp_lower_prologue, cp_lower_record, cp_lower_finalize},
    {cp_lower_agg_prologue, cp_lower_agg_record, cp_lower_agg_finalize},
};

/* The kernel's shared finalize block at input offset `at`, on its own lines.
 * After an unconditional last exit at the body's top level (a label in a
 * nested { } block is invisible outside it) it stays inside the function's
 * debug range (labels such as $L__func_end0 follow that exit). */
static int place_finalize(cp_text *out, const char *text, size_t *pos, size_t at, kernel_out *ko,
                          cp_lower_cfg *cfg) {
  if (at > *pos) {
    cp_text_append(out, text + *pos, at - *pos);
    *pos = at;
  }
  cp_text_puts(out, at > 0 && text[at - 1] != '\n' ? "\n" : "");
  lowerings[cfg->aggregate != 0].finalize(out, cfg);
  ko->stats.finalize_instrs = cfg->n_instrs;
  return 1;
}

/* Writes kernel `k`'s insertions; *pos is the input offset copied so far. */
static void write_kernel(cp_text *out, const char *text, size_t *pos, const cp_ptx_kernel *k,
                         kernel_out *ko, cp_lower_cfg *cfg) {
  cp_text_append(out, text + *pos, k->prologue_at - *pos);
  *pos = k->prologue_at;
  const struct lowering *lw = &lowerings[cfg->aggregate != 0];
  lw->prologue(out, cfg);
  ko->stats.prologue_instrs = cfg->n_instrs;
  uint32_t n_exit = 0;
  int placed = 0;
  size_t last_exit = SIZE_MAX;
  for (size_t i = 0; i < k->n_sites; i++)
    if (k->sites[i].kind == CP_SITE_EXIT)
      last_exit = i;
  for (size_t i = 0; i < k->n_sites; i++) {
    const cp_ptx_site *s = &k->sites[i];
    if (s->kind == CP_SITE_RECORD) {
      cp_text_append(out, text + *pos, s->at - *pos);
      *pos = s->at;
      if (s->at > 0 && text[s->at - 1] != '\n')
        cp_text_puts(out, "\n");
      lw->record(out, cfg, ko->scopes.site_scope[i], s->is_end);
      ko->stats.n_records++;
      ko->stats.record_instrs = cfg->n_instrs;
      continue;
    }
    /* The exit statement becomes the branch: keeping it as well would
     * double the exit edges, which slows ptxas down tenfold. */
    cp_text_append(out, text + *pos, s->at - *pos);
    cp_lower_exit_branch(out, s->pred_len ? text + s->pred_off : NULL, s->pred_len, s->pred_neg);
    *pos = s->after;
    n_exit++;
    if (i == last_exit && !s->pred_len && !s->nested)
      placed = place_finalize(out, text, pos, s->after, ko, cfg);
  }
  /* Otherwise before the closing brace, where code falling off the body's
   * end falls into it. The reader keeps only kernels whose '}' it saw. */
  if (!placed)
    place_finalize(out, text, pos, k->body_end, ko, cfg);
  ko->stats.n_exits = n_exit;
}

static int instrument(const char *text, size_t size, const cproton_ptx_options *o, cproton_ptx *p) {
  cp_ptx_module m = {0};
  int rc = cp_ptx_read(text, size, &m);
  if (rc)
    return rc;
  cp_text out = {0};
  size_t pos = 0;
  p->k = calloc(m.n_kernels ? m.n_kernels : 1, sizeof *p->k);
  if (!p->k)
    rc = cp_error_set(CPROTON_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < m.n_kernels; i++) {
    cp_lower_cfg cfg;
    p->n_kernels = i + 1;
    rc = plan_kernel(text, size, &m, &m.kernels[i], o, &p->k[i], &cfg);
    if (!rc)
      write_kernel(&out, text, &pos, &m.kernels[i], &p->k[i], &cfg);
  }
  cp_ptx_read_free(&m);
  if (!rc && cp_text_append(&out, text + pos, size - pos))
    rc = cp_error_set(CPROTON_ENOMEM, "out of memory writing PTX");
  if (rc) {
    cp_text_free(&out);
    return rc;
  }
  p->text = out.data;
  p->size = out.len;
  return 0;
}

/* Names the pass emits; input that already uses one would collide. */
static const struct {
  const char *mark, *what;
} reserved[] = {
    {"%cpr_", "PTX already instrumented (it uses %cpr_ registers)"},
    {"__cproton_smem", "PTX already instrumented (it declares __cproton_smem)"},
    {"$cpr_", "the prefix $cpr_ is reserved for the labels cproton adds; rename the input's labels"},
};

/* Offset of the first reserved name in the input, its table row in *which;
 * -1 if none. */
static long find_reserved(const char *text, size_t size, size_t *which) {
  long first = -1;
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
    size_t l = strlen(reserved[i].mark);
    for (const char *s = text; size >= l && (s = memchr(s, reserved[i].mark[0], size - (size_t)(s - text) - l + 1));
         s++)
      if (!memcmp(s, reserved[i].mark, l)) {
        if (first < 0 || s - text < first)
          first = (long)(s - text), *which = i;
        break;
      }
  }
  return first;
}

static int check_reserved(const char *text, size_t size) {
  size_t which = 0;
  long at = find_reserved(text, size, &which);
  if (at < 0)
    return 0;
  uint32_t line = 1;
  for (long i = 0; i < at; i++)
    line += text[i] == '\n';
  return cp_error_set(CPROTON_EUNSUPPORTED, "line %u: %s", line, reserved[which].what);
}

int cproton_ptx_instrument(const char *ptx, size_t size, const cproton_ptx_options *o, cproton_ptx **out) {
  cproton_ptx_options def;
  if (!ptx || !out)
    return cp_error_set(CPROTON_EINVAL, "cproton_ptx_instrument: NULL ptx or out");
  *out = NULL;
  if (!o) {
    cproton_ptx_options_init(&def);
    o = &def;
  }
  int rc = check_options(o);
  if (rc)
    return rc;
  rc = check_reserved(ptx, size);
  if (rc)
    return rc;
  cproton_ptx *p = calloc(1, sizeof *p);
  if (!p)
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  rc = instrument(ptx, size, o, p);
  if (rc) {
    cproton_ptx_free(p);
    return rc;
  }
  *out = p;
  return CPROTON_OK;
}

const char *cproton_ptx_text(const cproton_ptx *p, size_t *size_out) {
  if (size_out)
    *size_out = p ? p->size : 0;
  return p ? p->text : NULL;
}

size_t cproton_ptx_n_kernels(const cproton_ptx *p) { return p ? p->n_kernels : 0; }

const char *cproton_ptx_kernel_name(const cproton_ptx *p, size_t k) {
  return p && k < p->n_kernels ? p->k[k].name : NULL;
}

int cproton_ptx_kernel_layout(const cproton_ptx *p, size_t k, cproton_buffer_layout *lay) {
  if (!p || !lay || k >= p->n_kernels)
    return cp_error_set(CPROTON_EINVAL, "cproton_ptx_kernel_layout: no kernel %zu", k);
  *lay = p->k[k].lay;
  return CPROTON_OK;
}

int cproton_ptx_kernel_stats(const cproton_ptx *p, size_t k, cproton_ptx_stats *st) {
  if (!p || !st || k >= p->n_kernels)
    return cp_error_set(CPROTON_EINVAL, "cproton_ptx_kernel_stats: no kernel %zu", k);
  *st = p->k[k].stats;
  return CPROTON_OK;
}

const char *cproton_ptx_kernel_warning(const cproton_ptx *p, size_t k) {
  return p && k < p->n_kernels ? p->k[k].scopes.note : NULL;
}

void cproton_ptx_free(cproton_ptx *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->n_kernels; i++) {
    free(p->k[i].name);
    cp_scope_free(&p->k[i].scopes);
  }
  free(p->k);
  free(p->text);
  free(p);
}
