/* core/native_addr.c -- the table of distinct return addresses seen in
 * native stacks: placeholder name ids, the profiler-module flag, and the
 * once-per-address symbolization (cp_native_symbolize).
 * Invariant: an address's name id never changes (kept-tier strings live
 * until exit), so entries survive the tree's resets; its label is set once.
 * Layout: open addressing over a power-of-two array, doubled at half full;
 * every access holds `lock`. Not a hot path: reached on new stacks only
 * (core/native.c) and when a profile is written (core/session.c). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"
#include "core/error.h"
#include "core/native_addr.h"
#include "core/native_sym.h"
#include "core/strtab.h"

typedef struct addr_entry {
  uintptr_t addr; /* 0: empty */
  uint32_t id;    /* placeholder name; 0 until named */
  uint8_t dropped;
  uint8_t labelled;
} addr_entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static addr_entry *tab;
static size_t cap, used, n_named, n_labelled;

/* Modules whose frames sit between the program and the launch callback. */
static const char *const dropped_prefixes[] = {
    "libcuda.so", "libcupti", "libcudart", "libnvidia-", "libcproton"};

static int module_dropped(uintptr_t addr) {
  Dl_info info;
  if (!dladdr((void *)addr, &info) || !info.dli_fname)
    return 0;
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  for (size_t i = 0; i < sizeof dropped_prefixes / sizeof *dropped_prefixes;
       i++)
    if (strncmp(base, dropped_prefixes[i], strlen(dropped_prefixes[i])) == 0)
      return 1;
  return 0;
}

static size_t slot_of(uintptr_t a, size_t mask) {
  return (size_t)((a * 0x9e3779b97f4a7c15ull) >> 17) & mask;
}

static int grow(void) {
  size_t ncap = cap ? cap * 2 : 1024;
  addr_entry *n = calloc(ncap, sizeof *n);
  if (!n)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for native frames");
  for (size_t i = 0; i < cap; i++)
    if (tab[i].addr) {
      size_t j = slot_of(tab[i].addr, ncap - 1);
      while (n[j].addr)
        j = (j + 1) & (ncap - 1);
      n[j] = tab[i];
    }
  free(tab);
  tab = n, cap = ncap;
  return CPROTON_OK;
}

/* The entry of `a`, made on first sight. Caller: lock. */
static addr_entry *entry(uintptr_t a) {
  if ((used + 1) * 2 > cap && grow())
    return NULL;
  size_t j = slot_of(a, cap - 1);
  while (tab[j].addr && tab[j].addr != a)
    j = (j + 1) & (cap - 1);
  if (!tab[j].addr) {
    tab[j] = (addr_entry){.addr = a, .dropped = (uint8_t)module_dropped(a)};
    used++;
  }
  return &tab[j];
}

int cp_native_addr_dropped(uintptr_t addr) {
  pthread_mutex_lock(&lock);
  addr_entry *e = entry(addr);
  int d = e && e->dropped;
  pthread_mutex_unlock(&lock);
  return d;
}

int cp_native_addr_name(uintptr_t addr, uint32_t *id_out) {
  pthread_mutex_lock(&lock);
  addr_entry *e = entry(addr);
  int rc = e ? CPROTON_OK : CPROTON_ENOMEM;
  if (e && !e->id) {
    char name[32];
    int n = snprintf(name, sizeof name, "native:0x%llx",
                     (unsigned long long)addr);
    rc = cp_strtab_intern(name, (size_t)n, &e->id);
    n_named += rc == CPROTON_OK;
  }
  if (!rc)
    *id_out = e->id;
  pthread_mutex_unlock(&lock);
  return rc;
}

void cp_native_addr_counts(uint64_t *named, uint64_t *symbolized) {
  pthread_mutex_lock(&lock);
  *named = n_named;
  *symbolized = n_labelled;
  pthread_mutex_unlock(&lock);
}

/* ---- labels: unique per address ---------------------------------------------
 * Sibling names in a profile are unique (docs/formats.md), and each address
 * is one frame: two call sites that get the same name (an unrolled loop, two
 * calls on one line) are told apart by " #2", " #3", ... in address order
 * within a pass, later passes continuing the count. */
typedef struct label_count {
  char *label; /* NULL: empty */
  uint32_t count;
} label_count;

static label_count *labels;
static size_t labels_cap, labels_used;


static int labels_grow(void) {
  size_t ncap = labels_cap ? labels_cap * 2 : 1024;
  label_count *n = calloc(ncap, sizeof *n);
  if (!n)
    return -1;
  for (size_t i = 0; i < labels_cap; i++)
    if (labels[i].label) {
      size_t j = cp_fnv_str(labels[i].label) & (ncap - 1);
      while (n[j].label)
        j = (j + 1) & (ncap - 1);
      n[j] = labels[i];
    }
  free(labels);
  labels = n, labels_cap = ncap;
  return 0;
}

/* How many addresses had `label` before, counting this one; 0: no memory. */
static uint32_t label_use(const char *label) {
  if ((labels_used + 1) * 2 > labels_cap && labels_grow())
    return 0;
  size_t j = cp_fnv_str(label) & (labels_cap - 1);
  while (labels[j].label && strcmp(labels[j].label, label) != 0)
    j = (j + 1) & (labels_cap - 1);
  if (!labels[j].label) {
    if (!(labels[j].label = strdup(label)))
      return 0;
    labels_used++;
  }
  return ++labels[j].count;
}

static int by_address(const void *a, const void *b) {
  uintptr_t x = (*(addr_entry *const *)a)->addr;
  uintptr_t y = (*(addr_entry *const *)b)->addr;
  return x < y ? -1 : x > y;
}

/* The named entries without a label, in address order (caller frees). */
static addr_entry **unlabelled(size_t *n_out) {
  addr_entry **v = malloc((n_named - n_labelled) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; v && i < cap; i++)
    if (tab[i].id && !tab[i].labelled)
      v[n++] = &tab[i];
  if (v)
    qsort(v, n, sizeof *v, by_address);
  *n_out = n;
  return v;
}

void cp_native_symbolize(void) {
  pthread_mutex_lock(&lock);
  size_t n = 0;
  addr_entry **v = n_labelled < n_named ? unlabelled(&n) : NULL;
  cp_native_sym *r = v ? cp_native_sym_open() : NULL;
  char label[1024];
  for (size_t i = 0; i < n; i++) {
    cp_native_sym_label(r, v[i]->addr, label, sizeof label - 16);
    uint32_t k = label_use(label);
    char *end = label + strlen(label);
    if (k > 1)
      snprintf(end, 16, " #%u", k);
    else if (k == 0) /* no memory to count: the address keeps it unique */
      snprintf(end, 16, " @%llx", (unsigned long long)v[i]->addr);
    v[i]->labelled = cp_strtab_set_label(v[i]->id, label) == CPROTON_OK;
    n_labelled += v[i]->labelled;
  }
  cp_native_sym_close(r);
  free(v);
  pthread_mutex_unlock(&lock);
}
