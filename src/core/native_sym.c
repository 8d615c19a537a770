/* core/native_sym.c -- names for native return addresses: file:line from
 * libdw's line tables when libdw is usable, else the symbol table's or the
 * dynamic symbol table's function, else module+offset; C++ names demangled
 * with the C++ runtime's __cxa_demangle (names stay mangled without one).
 * libdw is optional twice: its headers at build time (CPROTON_HAVE_LIBDW,
 * docs/dependencies.md) and libdw.so.1 at run time (dlopen), so the
 * library loads and native stacks work on machines without it.
 * A return address points after its call: lookups use addr - 1, the call.
 * Not a hot path: core/native_addr.c's cp_native_symbolize only. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/native_sym.h"

#ifdef CPROTON_HAVE_LIBDW
#include <elfutils/libdwfl.h>

/* The libdw entry points used, found in libdw.so.1 at run time. */
typedef struct dw_api {
  Dwfl *(*begin)(const Dwfl_Callbacks *);
  void (*end)(Dwfl *);
  int (*proc_report)(Dwfl *, pid_t);
  int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *,
                                    Dwarf_Addr, void *), void *);
  Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
  const char *(*addrname)(Dwfl_Module *, GElf_Addr);
  Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
  const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *,
                          Dwarf_Word *);
  Dwarf_Die *(*nextcu)(Dwfl_Module *, Dwarf_Die *, Dwarf_Addr *);
  int (*haspc)(Dwarf_Die *, Dwarf_Addr);
  Dwarf_Line *(*getsrc_die)(Dwarf_Die *, Dwarf_Addr);
  int (*lineno)(Dwarf_Line *, int *);
  const char *(*linesrc)(Dwarf_Line *, Dwarf_Word *, Dwarf_Word *);
  Dwfl_Callbacks callbacks;
} dw_api;

static const char *dw_why = "libdw was not loaded yet";

#define DW_SYM(field, name)                                                    \
  (*(void **)&api.field = dlsym(h, name)) != NULL

static const dw_api *dw_load(void) {
  static int tried;
  static dw_api api;
  static const dw_api *ok;
  if (tried)
    return ok;
  tried = 1;
#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
  /* MemorySanitizer flags every value an uninstrumented libdw computes. */
  dw_why = "libdw is not used in a MemorySanitizer build";
  return NULL;
#endif
#endif
  void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    dw_why = "libdw.so.1 is not installed (Debian: libdw1)";
    return NULL;
  }
  if (DW_SYM(begin, "dwfl_begin") && DW_SYM(end, "dwfl_end") &&
      DW_SYM(proc_report, "dwfl_linux_proc_report") &&
      DW_SYM(report_end, "dwfl_report_end") &&
      DW_SYM(addrmodule, "dwfl_addrmodule") &&
      DW_SYM(addrname, "dwfl_module_addrname") &&
      DW_SYM(getsrc, "dwfl_module_getsrc") &&
      DW_SYM(lineinfo, "dwfl_lineinfo") &&
      DW_SYM(nextcu, "dwfl_module_nextcu") && DW_SYM(haspc, "dwarf_haspc") &&
      DW_SYM(getsrc_die, "dwarf_getsrc_die") && DW_SYM(lineno, "dwarf_lineno") &&
      DW_SYM(linesrc, "dwarf_linesrc") &&
      DW_SYM(callbacks.find_elf, "dwfl_linux_proc_find_elf") &&
      DW_SYM(callbacks.find_debuginfo, "dwfl_standard_find_debuginfo")) {
    dw_why = NULL;
    return ok = &api;
  }
  dw_why = "libdw.so.1 lacks the dwfl functions used";
  return NULL;
}

struct cp_native_sym {
  const dw_api *dw;
  Dwfl *dwfl;
};

cp_native_sym *cp_native_sym_open(void) {
  cp_native_sym *r = calloc(1, sizeof *r);
  if (!r || !(r->dw = dw_load()))
    return r;
  r->dwfl = r->dw->begin(&r->dw->callbacks);
  if (r->dwfl && (r->dw->proc_report(r->dwfl, getpid()) != 0 ||
                  r->dw->report_end(r->dwfl, NULL, NULL) != 0)) {
    r->dw->end(r->dwfl);
    r->dwfl = NULL;
  }
  return r;
}

void cp_native_sym_close(cp_native_sym *r) {
  if (r && r->dwfl)
    r->dw->end(r->dwfl);
  free(r);
}

/* The source line of `pc` by walking the module's compile units: libdw
 * before 0.191 finds lines through .debug_aranges only, which clang does not
 * emit, so clang-built code would have no file:line (CI's clang job). */
static const char *dw_line_by_cu(const dw_api *dw, Dwfl_Module *m,
                                 uintptr_t pc, int *line) {
  Dwarf_Addr bias = 0;
  for (Dwarf_Die *cu = dw->nextcu(m, NULL, &bias); cu;
       cu = dw->nextcu(m, cu, &bias)) {
    if (dw->haspc(cu, pc - bias) <= 0)
      continue;
    Dwarf_Line *l = dw->getsrc_die(cu, pc - bias);
    if (l && dw->lineno(l, line) == 0)
      return dw->linesrc(l, NULL, NULL);
  }
  return NULL;
}

/* The function and source line of `pc` from libdw; 0 when it has none. */
static int dw_lookup(cp_native_sym *r, uintptr_t pc, const char **fn,
                     const char **file, int *line) {
  Dwfl_Module *m = r && r->dwfl ? r->dw->addrmodule(r->dwfl, pc) : NULL;
  if (!m)
    return 0;
  *fn = r->dw->addrname(m, pc);
  Dwfl_Line *l = r->dw->getsrc(m, pc);
  *file = l ? r->dw->lineinfo(l, NULL, line, NULL, NULL, NULL)
            : dw_line_by_cu(r->dw, m, pc, line);
  return *fn || *file;
}

int cp_native_lines_available(const char **why) {
  dw_load();
  *why = dw_why;
  return dw_why == NULL;
}
#else
struct cp_native_sym {
  int unused;
};
cp_native_sym *cp_native_sym_open(void) { return NULL; }
void cp_native_sym_close(cp_native_sym *r) { free(r); }
static int dw_lookup(cp_native_sym *r, uintptr_t pc, const char **fn,
                     const char **file, int *line) {
  return 0;
}
int cp_native_lines_available(const char **why) {
  *why = "built without libdw's headers (Debian: libdw-dev)";
  return 0;
}
#endif

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The C++ runtime's demangler: the program's own if it has one (a C++
 * program), else libstdc++'s if installed; NULL leaves names mangled. */
static demangle_fn demangler(void) {
  static int tried;
  static demangle_fn fn;
  if (tried)
    return fn;
  tried = 1;
  *(void **)&fn = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  void *h = fn ? NULL : dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
  if (h)
    *(void **)&fn = dlsym(h, "__cxa_demangle");
  return fn;
}

/* `name` demangled into a malloc'ed string, or NULL (not C++, or none). */
static char *demangle(const char *name) {
  demangle_fn fn = name && strncmp(name, "_Z", 2) == 0 ? demangler() : NULL;
  int status = -1;
  char *out = fn ? fn(name, NULL, NULL, &status) : NULL;
  if (out && status != 0) {
    free(out);
    out = NULL;
  }
  return out;
}

static const char *base_name(const char *path) {
  const char *s = path ? strrchr(path, '/') : NULL;
  return s ? s + 1 : path ? path : "?";
}

void cp_native_sym_label(cp_native_sym *r, uintptr_t addr, char *buf,
                         size_t size) {
  const char *fn = NULL, *file = NULL;
  int line = 0;
  Dl_info info = {0};
  int in_module = dladdr((void *)addr, &info) && info.dli_fname;
  if (!dw_lookup(r, addr - 1, &fn, &file, &line) && info.dli_sname &&
      info.dli_saddr)
    fn = info.dli_sname; /* dynamic symbols only */
  char *pretty = demangle(fn);
  const char *f = pretty ? pretty : fn;
  uintptr_t base = in_module ? (uintptr_t)info.dli_fbase : 0;
  if (file && line > 0)
    snprintf(buf, size, "%s:%d@%s", file, line, f ? f : "??");
  else if (f)
    snprintf(buf, size, "%s@%s", f, base_name(in_module ? info.dli_fname
                                                         : NULL));
  else
    snprintf(buf, size, "%s+0x%llx", base_name(in_module ? info.dli_fname
                                                         : NULL),
             (unsigned long long)(addr - base));
  free(pretty);
}
