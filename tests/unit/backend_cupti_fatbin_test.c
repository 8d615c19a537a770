/* backend_cupti_fatbin_test.c -- cubins found in fat binaries without a GPU
 * (backend/cupti/fatbin.c, loaded_cubins.c): synthetic containers (kinds,
 * architectures, compressed payloads, padding, malformed sizes), the
 * checked-in nvcc object tests/data/pcs/chase_fatbin.o (its cubin's line
 * table read through libcupti when one loads), and the loaded objects of
 * this process scanned once. The store's use of them for modules loaded
 * before sampling is in backend_cupti_pcs_test.c (pcs_lines.recover). */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <cupti_pcsampling.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cupti/cubin_info.h"
#include "backend/cupti/fatbin.h"
#include "backend/cupti/loaded_cubins.h"
#include "core/error.h"
#include "cproton/cproton.h"

/* ---- synthetic fat binaries ------------------------------------------------- */

typedef struct blob {
  uint8_t b[4096];
  size_t n;
  size_t container; /* offset of the open container's header */
} blob;

/* `bytes` little-endian bytes of v (zeros past its 8). */
static void put(blob *x, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    x->b[x->n++] = i < 8 ? (uint8_t)(v >> (8 * i)) : 0;
}

static void open_container(blob *x) {
  x->container = x->n;
  put(x, 0xBA55ED50u, 4), put(x, 1, 2), put(x, 16, 2), put(x, 0, 8);
}

static void close_container(blob *x) {
  uint64_t n = x->n - x->container - 16;
  for (int i = 0; i < 8; i++)
    x->b[x->container + 8 + i] = (uint8_t)(n >> (8 * i));
}

/* A minimal 64-bit ELF image: its header, no sections; `pad` bytes after. */
static void elf_payload(blob *x, size_t pad) {
  size_t at = x->n;
  memset(x->b + at, 0, 64 + pad);
  memcpy(x->b + at, "\177ELF\2\1\1", 7);
  x->n += 64 + pad;
}

/* An entry of `kind` for `arch`; elf: a plain ELF payload, else 40 bytes
 * of something else (compressed). */
static void entry(blob *x, int kind, unsigned arch, int elf) {
  put(x, (uint64_t)kind, 2), put(x, 0x101, 2), put(x, 64, 4);
  put(x, elf ? 64 + 8 : 40, 8);
  put(x, 0, 12), put(x, arch, 4);
  put(x, 0, 32); /* the rest of the 64-byte header */
  if (elf)
    elf_payload(x, 8);
  else
    for (int i = 0; i < 40; i++)
      put(x, 0x28 + i, 1);
}

static size_t sizes[8], n_sizes;
static int count(void *ctx, const void *cubin, size_t size,
                 uint64_t offset) {
  (void)offset;
  (void)ctx;
  cr_assert_eq(memcmp(cubin, "\177ELF", 4), 0);
  if (n_sizes < 8)
    sizes[n_sizes++] = size;
  return 0;
}

static void sample(blob *x) {
  memset(x, 0, sizeof *x);
  open_container(x);
  entry(x, 2, 90, 1); /* the sm_90 cubin */
  entry(x, 1, 90, 0); /* PTX */
  entry(x, 2, 80, 1); /* another architecture */
  close_container(x);
  put(x, 0, 8); /* padding between containers */
  open_container(x);
  entry(x, 2, 90, 0); /* a compressed cubin */
  close_container(x);
}

Test(fatbin, walk_picks_plain_cubins_of_the_arch) {
  blob x;
  sample(&x);
  cp_fatbin_stats st = {0};
  n_sizes = 0;
  cr_assert_eq(cp_fatbin_walk(x.b, x.n, 90, count, NULL, &st), CPROTON_OK,
               "%s", cp_error_message());
  cr_assert_eq(st.cubins, 1);
  cr_assert_eq(sizes[0], 64, "the ELF image's extent, not its padded payload");
  cr_assert_eq(st.other_arch, 1);
  cr_assert_eq(st.compressed, 1);
  memset(&st, 0, sizeof st);
  cr_assert_eq(cp_fatbin_walk(x.b, x.n, 0, count, NULL, &st), CPROTON_OK);
  cr_assert_eq(st.cubins, 2, "arch 0: every architecture");
}

Test(fatbin, malformed_sizes_are_refused_with_the_offset) {
  blob x;
  sample(&x);
  cp_fatbin_stats st = {0};
  blob y = x;
  y.b[8] = 0xff, y.b[15] = 0x7f; /* the first container's size: huge */
  cr_assert_eq(cp_fatbin_walk(y.b, y.n, 90, count, NULL, &st), CPROTON_EPARSE);
  cr_assert(strstr(cp_error_message(), "offset 0"), "%s", cp_error_message());
  y = x;
  y.b[16 + 15] = 0x7f; /* the first entry's payload size overruns */
  cr_assert_eq(cp_fatbin_walk(y.b, y.n, 90, count, NULL, &st), CPROTON_EPARSE);
  cr_assert(strstr(cp_error_message(), "offset 16"), "%s", cp_error_message());
  y = x;
  y.b[0] = 0x51; /* not a container */
  cr_assert_eq(cp_fatbin_walk(y.b, y.n, 90, count, NULL, &st), CPROTON_EPARSE);
  for (size_t cut = 1; cut < x.n; cut += 7) /* truncated anywhere: no crash */
    cp_fatbin_walk(x.b, cut, 90, count, NULL, &st);
}

/* ---- a real nvcc object ----------------------------------------------------- */

static void *cupti;

static void *open_cupti(void) {
  const char *env = getenv("CPROTON_CUPTI_LIB");
  const char *tries[] = {env, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                         "/usr/local/cuda/lib64/libcupti.so", "libcupti.so"};
  for (size_t i = 0; i < 4 && !cupti; i++)
    if (tries[i])
      cupti = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
  return cupti;
}

#define CHASE "_Z5chasePKiPfii"

/* Line 7 of chase.cu (the load loop) among the cubin's PCs. */
static int has_load_line(const void *cubin, size_t size) {
  __typeof__(&cuptiGetSassToSourceCorrelation) f =
      (__typeof__(f))dlsym(cupti, "cuptiGetSassToSourceCorrelation");
  int found = 0;
  for (uint64_t pc = 0; f && pc < size && !found; pc += 16) {
    CUpti_GetSassToSourceCorrelationParams p = {
        .size = CUpti_GetSassToSourceCorrelationParamsSize, .cubin = cubin,
        .functionName = CHASE, .cubinSize = size, .pcOffset = pc};
    if (f(&p) == CUPTI_SUCCESS) {
      found = p.lineNumber == 7 && p.fileName && strstr(p.fileName, "chase.cu");
      free(p.fileName), free(p.dirName);
    }
  }
  return found;
}

static int lines_found;
static int check_lines(void *ctx, const void *cubin, size_t size,
                 uint64_t offset) {
  (void)offset;
  (void)ctx;
  lines_found += has_load_line(cubin, size);
  return 0;
}

Test(fatbin, nvcc_object_holds_the_cubin) {
  const char *path = CP_SOURCE_DIR "/tests/data/pcs/chase_fatbin.o";
  cp_fatbin_stats st = {0};
  n_sizes = 0;
  cr_assert_eq(cp_fatbin_scan_file(path, 90, 1 << 20, count, NULL, &st),
               CPROTON_OK, "%s", cp_error_message());
  cr_assert_eq(st.cubins, 1);
  cr_assert_gt(sizes[0], 4096);
  memset(&st, 0, sizeof st);
  cr_assert_eq(cp_fatbin_scan_file(path, 80, 1 << 20, count, NULL, &st), 0);
  cr_assert_eq(st.cubins, 0);
  cr_assert_eq(st.other_arch, 1);
  memset(&st, 0, sizeof st);
  cr_assert_eq(cp_fatbin_scan_file(path, 90, 1024, count, NULL, &st), 0);
  cr_assert_eq(st.skipped, 1, "a section over the limit is counted, not read");
  if (!open_cupti())
    cr_skip_test("no libcupti here: the cubin's line table is not read");
  lines_found = 0;
  cp_fatbin_scan_file(path, 90, 1 << 20, check_lines, NULL, &st);
  cr_assert_eq(lines_found, 1, "the load loop's line (chase.cu:7)");
}

Test(fatbin, files_without_cubins) {
  cp_fatbin_stats st = {0};
  cr_assert_eq(cp_fatbin_scan_file(CP_SOURCE_DIR "/tests/data/pcs/chase.cu", 90,
                                   1 << 20, count, NULL, &st), CPROTON_OK);
  cr_assert_eq(cp_fatbin_scan_file("/proc/self/exe", 90, 1 << 20, count, NULL,
                                   &st), CPROTON_OK);
  cr_assert_eq(st.cubins, 0);
  cr_assert_eq(cp_fatbin_scan_file(CP_SOURCE_DIR "/tests/data/pcs/none.o", 90,
                                   1 << 20, count, NULL, &st), CPROTON_EIO);
  cr_assert(strstr(cp_error_message(), "none.o"), "%s", cp_error_message());
}

/* ---- stack frames from .nv.info --------------------------------------------- */

static char frame_names[4][32];
static uint32_t frame_bytes[4];
static int n_frames;
static void note(void *ctx, const char *name, uint32_t bytes) {
  (void)ctx;
  if (n_frames < 4) {
    snprintf(frame_names[n_frames], 32, "%s", name);
    frame_bytes[n_frames++] = bytes;
  }
}

static uint8_t *kept;
static size_t kept_size;
static int keep_first(void *ctx, const void *cubin, size_t size,
                 uint64_t offset) {
  (void)offset;
  (void)ctx;
  kept = malloc(size), kept_size = size;
  memcpy(kept, cubin, size);
  return 1;
}

/* tests/data/pcs/local.cu: ptxas -v says "128 bytes stack frame" for
 * poly_local, 0 for poly_shared; CUPTI's records said 0 for both. */
Test(cubin_info, frames_as_ptxas_reports_them) {
  cp_fatbin_stats st = {0};
  cr_assert_eq(cp_fatbin_scan_file(CP_SOURCE_DIR "/tests/data/pcs/local_fatbin.o",
                                   90, 1 << 20, keep_first, NULL, &st), 0);
  cr_assert_not_null(kept);
  n_frames = 0;
  cr_assert_eq(cp_cubin_info_frames(kept, kept_size, note, NULL), 2);
  for (int i = 0; i < 2; i++)
    cr_assert_eq(frame_bytes[i], strcmp(frame_names[i], "poly_local") ? 0u : 128u,
                 "%s: %u", frame_names[i], frame_bytes[i]);
  for (size_t cut = 0; cut < kept_size; cut += 61) /* truncated: no crash */
    cp_cubin_info_frames(kept, cut, note, NULL);
  cr_assert_eq(cp_cubin_info_frames("not an elf image", 16, note, NULL), -1);
  free(kept);
  kept = NULL;
}

/* CUPTI's CRC is its business: the size names a cubin here. */
static int size_crc(const void *cubin, size_t size, uint64_t *crc) {
  (void)cubin;
  *crc = 0xC0B1000000ull + size;
  return 0;
}

static size_t found_size;
static uint64_t found_offset;
static int found(void *ctx, const void *cubin, size_t size, uint64_t offset) {
  (void)ctx;
  cr_assert_eq(memcmp(cubin, "\177ELF", 4), 0, "read back from its file");
  found_size = size, found_offset = offset;
  return 0;
}

/* A module loaded before PC sampling: its object is read once, its cubin
 * indexed by CRC and read back when a sample names that CRC. */
Test(loaded_cubins, cubin_of_a_loaded_object_found_by_crc) {
#ifdef CP_FATBIN_HOLDER
  void *h = dlopen(CP_FATBIN_HOLDER, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(h, "%s", dlerror());
  cp_loaded_cubins *s = cp_loaded_cubins_new(size_crc, 90, 1 << 20);
  cp_fatbin_stats st = {0};
  size_t failed = 0, objects, cubins;
  found_size = 0;
  cr_assert_eq(cp_loaded_cubins_find(s, 0xC0B1000000ull + 10304, found, NULL,
                                     &st, &failed), 1);
  cr_assert_eq(found_size, 10304, "chase_fatbin.o's sm_90 cubin");
  cr_assert_gt(found_offset, 0);
  cr_assert_eq(failed, 0, "%s", cp_error_message());
  cp_loaded_cubins_counts(s, &objects, &cubins);
  cr_assert_gt(objects, 2, "the program, libc and the holder at least");
  cr_assert_eq(cubins, 1);
  cr_assert_eq(cp_loaded_cubins_find(s, 0xC0B1000000ull + 1, found, NULL, &st,
                                     &failed), 0, "no such cubin");
  size_t again;
  cp_loaded_cubins_counts(s, &again, &cubins);
  cr_assert_eq(again, objects, "no object read twice");
  cp_loaded_cubins_free(s);
  cp_loaded_cubins_free(NULL);
  dlclose(h);
#else
  cr_skip_test("no objcopy: no library holding a fat binary");
#endif
}

#else
Test(fatbin, needs_cupti_headers) { cr_skip_test("built without CUPTI headers"); }
#endif
