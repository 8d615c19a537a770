/* core/native_sym.h -- names for native return addresses (cp_native_sym_*):
 * "file:line@function" with libdw's line tables, else "function+0xOFF@module"
 * from the symbol table, else "module+0xOFF"; C++ names demangled. One
 * resolver per symbolization pass (it reads /proc/self/maps once). Not a
 * hot path: cp_native_symbolize only. */
#ifndef CP_CORE_NATIVE_SYM_H
#define CP_CORE_NATIVE_SYM_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_native_sym cp_native_sym;

/* Whether file:line comes with the frames (libdw found at build and run
 * time); when not, `*why` says why. */
int cp_native_lines_available(const char **why);

/* A resolver for this process's modules as loaded now; NULL when out of
 * memory (then cp_native_sym_label still works with dladdr alone). */
cp_native_sym *cp_native_sym_open(void);
void cp_native_sym_close(cp_native_sym *r); /* accepts NULL */

/* Writes the name of the frame whose return address is `addr` into `buf`
 * (cut to `size`). `r` may be NULL. */
void cp_native_sym_label(cp_native_sym *r, uintptr_t addr, char *buf,
                         size_t size);

#endif
