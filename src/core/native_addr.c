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

#include "core/error.h"
#include "core/native.h"
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

void cp_native_symbolize(void) {
  pthread_mutex_lock(&lock);
  if (n_labelled == n_named) {
    pthread_mutex_unlock(&lock);
    return;
  }
  cp_native_sym *r = cp_native_sym_open();
  char label[1024];
  for (size_t i = 0; i < cap; i++) {
    addr_entry *e = &tab[i];
    if (!e->id || e->labelled)
      continue;
    cp_native_sym_label(r, e->addr, label, sizeof label);
    e->labelled = cp_strtab_set_label(e->id, label) == CPROTON_OK;
    n_labelled += e->labelled;
  }
  cp_native_sym_close(r);
  pthread_mutex_unlock(&lock);
}
