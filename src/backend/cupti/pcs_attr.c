/* backend/cupti/pcs_attr.c -- PC-sampling records -> pending (function,
 * line, correlation) counters -> metrics under calling contexts (rules in
 * pcs_attr.h). Invariant: every sample read from a buffer is delivered,
 * kept pending, or counted (lost / unattributed); none vanish silently.
 * Not a hot path except cp_pcs_note_launch (every launch in exact mode:
 * two hash probes under one mutex); the rest runs when ranges close and on
 * the record path. Called by pcsampling.c, records.c and unit tests. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/pcs_attr.h"
#include "core/error.h"
#include "core/strtab.h"

#define NAME(m) #m,
static const char *const metric_names[CP_PCS_N_METRICS] = {
    CP_PCS_METRICS(NAME)};
#undef NAME

const char *cp_pcs_metric_name(int k) {
  return k >= 0 && k < CP_PCS_N_METRICS ? metric_names[k] : NULL;
}

size_t cp_pcs_stalls_build(const char *const *names, const uint32_t *indices,
                           size_t n, cp_pcs_stalls *out) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < n && out->n < CP_PCS_MAX_STALLS; i++) {
    if (!names[i])
      continue;
    for (int k = 2; k < CP_PCS_N_METRICS; k++)
      if (strstr(names[i], metric_names[k])) {
        out->index[out->n] = indices[i];
        out->metric[out->n] = (uint8_t)k;
        out->not_issued[out->n] = strstr(names[i], "not_issued") != NULL;
        out->n++;
        break;
      }
  }
  return out->n;
}

/* ---- tables -------------------------------------------------------------- */

typedef struct pending {
  uint32_t fn, line, corr, used;
  uint64_t count[CP_PCS_N_METRICS];
} pending;

typedef struct site_entry {
  uint32_t fn, used;
  int32_t next; /* next site of the same function, -1 at the end */
  uint64_t weight;
  cp_launch_site site;
} site_entry;

typedef struct fn_entry {
  uint32_t fn, used;
  int32_t head, last; /* chain of sites; the heaviest site seen last */
  uint64_t total;
  uint32_t first; /* launches that ran in a range of their own */
} fn_entry;

struct cp_pcs {
  pthread_mutex_t lock;
  cp_corr *corr;
  cp_pcs_lines *lines;
  pending *pend;
  site_entry *sites;
  fn_entry *fns;
  size_t n_pend, n_sites, used_sites; /* n_*: power-of-two slot counts */
  uint32_t metric_id[CP_PCS_N_METRICS];
  cp_pcs_stats stats;
};

static size_t pow2(size_t n) {
  size_t p = 64;
  while (p < n)
    p <<= 1;
  return p;
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

cp_pcs *cp_pcs_new(size_t n_pending, size_t n_sites, cp_corr *corr,
                   cp_pcs_lines *lines) {
  cp_pcs *p = calloc(1, sizeof *p);
  if (p) {
    p->n_pend = pow2(2 * n_pending);
    p->n_sites = pow2(2 * n_sites);
    p->pend = calloc(p->n_pend, sizeof *p->pend);
    p->sites = calloc(p->n_sites, sizeof *p->sites);
    p->fns = calloc(p->n_sites, sizeof *p->fns);
  }
  int rc = p && p->pend && p->sites && p->fns ? CPROTON_OK : CPROTON_ENOMEM;
  for (int k = 0; !rc && k < CP_PCS_N_METRICS; k++)
    rc = cp_strtab_intern(metric_names[k], strlen(metric_names[k]),
                          &p->metric_id[k]);
  if (rc) {
    cp_pcs_free(p);
    cp_error_set(CPROTON_ENOMEM, "out of memory for PC sampling tables");
    return NULL;
  }
  pthread_mutex_init(&p->lock, NULL);
  p->corr = corr;
  p->lines = lines;
  return p;
}

void cp_pcs_free(cp_pcs *p) {
  if (!p)
    return;
  free(p->pend);
  free(p->sites);
  free(p->fns);
  free(p);
}

void cp_pcs_clear(cp_pcs *p) {
  pthread_mutex_lock(&p->lock);
  memset(p->pend, 0, p->n_pend * sizeof *p->pend);
  memset(p->sites, 0, p->n_sites * sizeof *p->sites);
  memset(p->fns, 0, p->n_sites * sizeof *p->fns);
  p->used_sites = 0;
  memset(&p->stats, 0, sizeof p->stats);
  pthread_mutex_unlock(&p->lock);
}

static int intern(const char *s, uint32_t *id) {
  return s && *s ? cp_strtab_intern(s, strlen(s), id) : -1;
}

/* ---- the record path: sites per function ----------------------------------- */

static fn_entry *fn_slot(cp_pcs *p, uint32_t fn, int create) {
  size_t mask = p->n_sites - 1;
  for (size_t i = mix(fn) & mask, k = 0; k < p->n_sites; i = (i + 1) & mask, k++) {
    if (p->fns[i].used && p->fns[i].fn == fn)
      return &p->fns[i];
    if (!p->fns[i].used) {
      if (!create)
        return NULL;
      p->fns[i] = (fn_entry){.fn = fn, .used = 1, .head = -1, .last = -1};
      return &p->fns[i];
    }
  }
  return NULL;
}

static int same_site(const cp_launch_site *a, const cp_launch_site *b) {
  return a->sessions == b->sessions && a->epoch == b->epoch &&
         !memcmp(a->node, b->node, sizeof a->node) &&
         !memcmp(a->is_op, b->is_op, sizeof a->is_op);
}

static uint64_t site_hash(uint32_t fn, const cp_launch_site *s) {
  uint64_t h = fn * 0x9E3779B97F4A7C15ull ^ s->sessions ^ (uint64_t)s->epoch << 32;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    h = mix(h ^ (uint64_t)(uintptr_t)s->node[k] ^ s->is_op[k]);
  return h;
}

static site_entry *site_slot(cp_pcs *p, uint32_t fn, const cp_launch_site *s,
                             fn_entry *f) {
  size_t mask = p->n_sites - 1;
  for (size_t i = site_hash(fn, s) & mask, k = 0; k < p->n_sites;
       i = (i + 1) & mask, k++) {
    site_entry *e = &p->sites[i];
    if (e->used && e->fn == fn && same_site(&e->site, s))
      return e;
    if (!e->used) {
      if (p->used_sites * 2 >= p->n_sites)
        return NULL;
      *e = (site_entry){.fn = fn, .used = 1, .next = f->head, .site = *s};
      f->head = (int32_t)i;
      p->used_sites++;
      return e;
    }
  }
  return NULL;
}

#define SUBPARTITIONS 4 /* per SM since Volta; each samples its own warps */

uint64_t cp_pcs_kernel_weight(uint64_t ns, uint64_t blocks, uint32_t threads,
                              uint32_t sms) {
  if (!sms || !blocks || !threads)
    return ns;
  uint64_t warps = (threads + 31u) / 32u;
  uint64_t per_block = warps < SUBPARTITIONS ? warps : SUBPARTITIONS;
  uint64_t cap = (uint64_t)sms * SUBPARTITIONS;
  uint64_t busy = blocks > cap ? cap : blocks * per_block;
  return ns * (busy < cap ? busy : cap);
}

void cp_pcs_note_kernel(cp_pcs *p, const char *name,
                        const cp_launch_site *site, uint64_t ns) {
  uint32_t fn;
  if (intern(name, &fn))
    return;
  pthread_mutex_lock(&p->lock);
  fn_entry *f = fn_slot(p, fn, 1);
  site_entry *e = f ? site_slot(p, fn, site, f) : NULL;
  if (e) {
    e->weight += ns ? ns : 1;
    f->total += ns ? ns : 1;
  } else {
    p->stats.sites_full++; /* its samples go to the function's other sites */
  }
  pthread_mutex_unlock(&p->lock);
}

int cp_pcs_note_launch(cp_pcs *p, uint32_t fn, const cp_launch_site *site,
                       int force) {
  int rc = 0;
  pthread_mutex_lock(&p->lock);
  fn_entry *f = fn_slot(p, fn, 1);
  site_entry *e = f ? site_slot(p, fn, site, f) : NULL;
  if (!e) {
    p->stats.sites_full++;
    rc = -1;
  } else if (!force && f->total > e->weight) {
    rc = 1; /* another site of fn has weight in this period */
  } else {
    e->weight++;
    f->total++;
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

int cp_pcs_take_first(cp_pcs *p, uint32_t fn, uint32_t limit) {
  pthread_mutex_lock(&p->lock);
  fn_entry *f = fn_slot(p, fn, 1);
  int take = f && f->first < limit;
  if (take)
    f->first++;
  pthread_mutex_unlock(&p->lock);
  return take;
}

/* ---- ranges closed: PC records -> pending ------------------------------- */

static int stall_slot(const cp_pcs_stalls *st, uint32_t index) {
  for (size_t i = 0; i < st->n; i++)
    if (st->index[i] == index)
      return (int)i;
  return -1;
}

static pending *pend_slot(cp_pcs *p, uint32_t fn, uint32_t line,
                          uint32_t corr) {
  size_t mask = p->n_pend - 1;
  uint64_t h = mix(fn ^ (uint64_t)line << 20 ^ (uint64_t)corr << 40);
  for (size_t i = h & mask, k = 0; k < 256; i = (i + 1) & mask, k++) {
    pending *e = &p->pend[i];
    if (e->used && e->fn == fn && e->line == line && e->corr == corr)
      return e;
    if (!e->used) {
      *e = (pending){.fn = fn, .line = line, .corr = corr, .used = 1};
      return e;
    }
  }
  return NULL;
}

static void add_pc(cp_pcs *p, const CUpti_PCSamplingPCData *pc,
                   const cp_pcs_stalls *st, uint32_t corr) {
  uint64_t c[CP_PCS_N_METRICS] = {0};
  for (size_t j = 0; pc->stallReason && j < pc->stallReasonCount; j++) {
    uint32_t s = pc->stallReason[j].samples;
    int k = stall_slot(st, pc->stallReason[j].pcSamplingStallReasonIndex);
    c[0] += s;
    if (k < 0)
      p->stats.unknown_stall += s;
    else if (!st->not_issued[k])
      c[1] += s, c[st->metric[k]] += s;
  }
  uint32_t fn, line = 0;
  if (!c[0])
    return;
  p->stats.samples += c[0];
  if (intern(pc->functionName, &fn)) {
    p->stats.lost += c[0];
    return;
  }
  if (p->lines)
    line = cp_pcs_lines_resolve(p->lines, pc->cubinCrc, pc->functionName,
                                pc->pcOffset);
  p->stats.with_line += line ? c[0] : 0;
  pending *e = pend_slot(p, fn, line, corr ? corr : pc->correlationId);
  if (!e) {
    p->stats.lost += c[0];
    return;
  }
  for (int k = 0; k < CP_PCS_N_METRICS; k++)
    e->count[k] += c[k];
}

void cp_pcs_add(cp_pcs *p, const CUpti_PCSamplingData *d,
                const cp_pcs_stalls *stalls, uint32_t corr) {
  pthread_mutex_lock(&p->lock);
  for (size_t i = 0; d->pPcData && i < d->totalNumPcs; i++)
    add_pc(p, &d->pPcData[i], stalls, corr);
  p->stats.dropped += d->droppedSamples;
  p->stats.non_user += d->nonUsrKernelsTotalSamples;
  p->stats.buffer_full += d->hardwareBufferFull != 0;
  pthread_mutex_unlock(&p->lock);
}

/* ---- attribution ---------------------------------------------------------- */

/* The launch is unknown: every live session, under ROOT. */
static const cp_launch_site unknown_site = {.sessions = UINT32_MAX,
                                            .epoch = UINT32_MAX};

static int deliver(cp_pcs *p, const cp_launch_site *s, uint32_t fn,
                   uint32_t line, const uint64_t *c) {
  const char *kernel = cp_strtab_str(fn);
  int rc = CPROTON_OK;
  for (int k = 0; k < CP_PCS_N_METRICS && !rc; k++)
    rc = cp_session_deliver_path_metric(
        s, kernel, &line, line ? 1 : 0, p->metric_id[k],
        (cp_value){.kind = CP_VALUE_INT, .u.i = (int64_t)c[k]});
  if (rc)
    p->stats.lost += c[0];
  return rc;
}

/* Proton writes every metric on ROOT, zeroed. */
static int deliver_root(cp_pcs *p) {
  cp_launch_site root = unknown_site;
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    root.is_op[k] = 1;
  uint64_t zero[CP_PCS_N_METRICS] = {0};
  return deliver(p, &root, 0, 0, zero) ? CPROTON_ENOMEM : CPROTON_OK;
}

static int deliver_unknown(cp_pcs *p, const pending *e) {
  p->stats.unattributed += e->count[0];
  return deliver(p, &unknown_site, e->fn, e->line, e->count);
}

/* Splits `e` among f's sites by weight; the remainder of each counter goes
 * to the heaviest site. */
static int split(cp_pcs *p, const fn_entry *f, const pending *e) {
  int heaviest = f->head, rc = CPROTON_OK, n = 0;
  for (int i = f->head; i >= 0; i = p->sites[i].next)
    if (p->sites[i].weight > p->sites[heaviest].weight)
      heaviest = i;
  uint64_t rest[CP_PCS_N_METRICS];
  memcpy(rest, e->count, sizeof rest);
  for (int i = f->head; i >= 0; i = p->sites[i].next) {
    const site_entry *s = &p->sites[i];
    if (!s->weight || i == heaviest)
      continue;
    uint64_t c[CP_PCS_N_METRICS];
    double share = (double)s->weight / (double)f->total;
    for (int k = 0; k < CP_PCS_N_METRICS; k++)
      rest[k] -= c[k] = (uint64_t)((double)e->count[k] * share);
    if (c[0]) {
      int r = deliver(p, &s->site, e->fn, e->line, c);
      rc = rc ? rc : r;
      n++;
    }
  }
  p->stats.apportioned += n ? e->count[0] : 0;
  int r = deliver(p, &p->sites[heaviest].site, e->fn, e->line, rest);
  return rc ? rc : r;
}

/* One pending entry; 1 when it was delivered (or dropped by design). */
static int attribute_one(cp_pcs *p, pending *e, int final, int *rc) {
  int r = CPROTON_OK;
  if (e->corr) {
    cp_launch_site s;
    if (!p->corr || !cp_corr_peek(p->corr, e->corr, &s))
      r = deliver_unknown(p, e);
    else if (s.sessions)
      r = deliver(p, &s, e->fn, e->line, e->count);
  } else {
    fn_entry *f = fn_slot(p, e->fn, 0);
    if (f && f->total)
      r = split(p, f, e);
    else if (!final)
      return 0;
    else if (f && f->last >= 0)
      r = deliver(p, &p->sites[f->last].site, e->fn, e->line, e->count);
    else
      r = deliver_unknown(p, e);
  }
  *rc = *rc ? *rc : r;
  return 1;
}

/* After a pass: weights restart; each function remembers its heaviest site
 * for samples that arrive after all of its kernels' records. */
static void reset_weights(cp_pcs *p) {
  for (size_t i = 0; i < p->n_sites; i++) {
    fn_entry *f = &p->fns[i];
    if (!f->used || !f->total)
      continue;
    for (int j = f->head; j >= 0; j = p->sites[j].next) {
      if (f->last < 0 || p->sites[j].weight > p->sites[f->last].weight)
        f->last = j;
    }
    for (int j = f->head; j >= 0; j = p->sites[j].next)
      p->sites[j].weight = 0;
    f->total = 0;
  }
}

/* One pass over the pending entries (all, or only launch-tagged ones);
 * caller holds the lock. */
static int attribute_pass(cp_pcs *p, int final, int tagged_only) {
  int rc = CPROTON_OK, any = 0;
  for (size_t i = 0; i < p->n_pend; i++) {
    pending *e = &p->pend[i];
    if (e->used && (!tagged_only || e->corr) &&
        attribute_one(p, e, final, &rc)) {
      e->used = 0;
      any = 1;
    }
  }
  if (any) {
    /* re-insert what stayed: deleting from open addressing breaks probes */
    for (size_t i = 0; i < p->n_pend; i++) {
      pending *e = &p->pend[i];
      if (!e->used)
        continue;
      pending keep = *e;
      e->used = 0;
      pending *n = pend_slot(p, keep.fn, keep.line, keep.corr);
      memcpy(n->count, keep.count, sizeof keep.count);
    }
    int r = deliver_root(p);
    rc = rc ? rc : r;
  }
  return rc;
}

int cp_pcs_attribute(cp_pcs *p, int final) {
  pthread_mutex_lock(&p->lock);
  int rc = attribute_pass(p, final, 0);
  reset_weights(p);
  pthread_mutex_unlock(&p->lock);
  return rc;
}

int cp_pcs_attribute_tagged(cp_pcs *p) {
  pthread_mutex_lock(&p->lock);
  int rc = attribute_pass(p, 0, 1);
  pthread_mutex_unlock(&p->lock);
  return rc;
}

void cp_pcs_get_stats(cp_pcs *p, cp_pcs_stats *out) {
  pthread_mutex_lock(&p->lock);
  *out = p->stats;
  pthread_mutex_unlock(&p->lock);
}
