/* tools/viewer/demangle.c -- optional C++ name demangling for --demangle.
 * Uses libstdc++'s __cxa_demangle found with dlopen/dlsym at run time, so the
 * viewer links no C++ runtime; when libstdc++ is absent names stay mangled
 * (docs/viewer.md). Called by render.c, single-threaded. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn resolve(void) {
  static int tried;
  static demangle_fn fn;
  if (tried)
    return fn;
  tried = 1;
  const char *libs[] = {"libstdc++.so.6", "libc++abi.so.1", "libc++.so.1"};
  for (size_t i = 0; i < 3 && !fn; i++) {
    void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (h)
      *(void **)&fn = dlsym(h, "__cxa_demangle");
  }
  return fn;
}

/* Returns the demangled form of `name` in *buf (grown as needed, owned by
 * the caller) or `name` itself when it is not a mangled C++ name. */
const char *vw_demangle(const char *name, char **buf, size_t *cap) {
  if (strncmp(name, "_Z", 2) != 0)
    return name;
  demangle_fn fn = resolve();
  if (!fn)
    return name;
  int status = 0;
  char *out = fn(name, NULL, NULL, &status);
  if (status != 0 || !out)
    return name;
  size_t n = strlen(out) + 1;
  if (n > *cap) {
    char *b = realloc(*buf, n);
    if (!b) {
      free(out);
      return name;
    }
    *buf = b;
    *cap = n;
  }
  memcpy(*buf, out, n);
  free(out);
  return *buf;
}
