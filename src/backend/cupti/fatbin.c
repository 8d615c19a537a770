/* backend/cupti/fatbin.c -- finds the cubins of an ELF file's `.nv_fatbin`
 * section (layouts in fatbin.h): the section through the file's section
 * headers, then its containers and entries.
 *
 * Invariant: no read leaves the bytes read from the file; every offset is
 * checked against its enclosing size before use, without overflow. Not a
 * hot path: PC sampling calls it when a sample names a cubin it was never
 * given (pcsampling.c through loaded_cubins.c); tests and the fuzz target
 * call it on synthetic bytes. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cupti/elf_bytes.h"
#include "backend/cupti/fatbin.h"
#include "core/error.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define KIND_ELF 2
#define ELF_HDR 64  /* Elf64_Ehdr */
#define ELF_SHDR 64 /* Elf64_Shdr */


/* The extent of the ELF image at `p` (its headers and sections), or 0 when
 * it is not a 64-bit little-endian ELF image within `size` bytes. */
static size_t elf_extent(const uint8_t *p, size_t size) {
  if (size < ELF_HDR || memcmp(p, "\177ELF", 4) || p[4] != 2 || p[5] != 1)
    return 0;
  uint64_t phoff = cp_le_read(p + 0x20, 8), shoff = cp_le_read(p + 0x28, 8);
  uint64_t phn = cp_le_read(p + 0x38, 2) * cp_le_read(p + 0x36, 2);
  uint64_t shn = cp_le_read(p + 0x3c, 2), shsz = cp_le_read(p + 0x3a, 2);
  if (!cp_bytes_fit(phoff, phn, size) || !cp_bytes_fit(shoff, shn * shsz, size))
    return 0;
  uint64_t end = ELF_HDR;
  end = phoff + phn > end ? phoff + phn : end;
  end = shoff + shn * shsz > end ? shoff + shn * shsz : end;
  for (uint64_t i = 0; shsz >= ELF_SHDR && i < shn; i++) {
    const uint8_t *s = p + shoff + i * shsz;
    uint64_t off = cp_le_read(s + 0x18, 8), n = cp_le_read(s + 0x20, 8);
    if (cp_le_read(s + 4, 4) == 8 /* SHT_NOBITS */)
      continue;
    if (!cp_bytes_fit(off, n, size))
      return 0;
    end = off + n > end ? off + n : end;
  }
  return (size_t)end;
}

/* One container's entries, [off, end) of data. */
static int walk_entries(const uint8_t *d, uint64_t off, uint64_t end,
                        unsigned arch, cp_fatbin_cubin_fn fn, void *ctx,
                        cp_fatbin_stats *st, uint64_t base) {
  while (off < end) {
    if (!cp_bytes_fit(off, 16, end))
      return cp_error_set(CPROTON_EPARSE, "fatbin: offset %llu: truncated "
                          "entry header", (unsigned long long)off);
    uint64_t kind = cp_le_read(d + off, 2), h = cp_le_read(d + off + 4, 4);
    uint64_t n = cp_le_read(d + off + 8, 8);
    if (h < 16 || !cp_bytes_fit(off, h, end) || !cp_bytes_fit(off + h, n, end))
      return cp_error_set(CPROTON_EPARSE, "fatbin: offset %llu: entry of "
                          "%llu + %llu bytes overruns its container",
                          (unsigned long long)off, (unsigned long long)h,
                          (unsigned long long)n);
    const uint8_t *payload = d + off + h;
    size_t elf = 0;
    if (kind != KIND_ELF) {
      /* PTX and other kinds: not a cubin */
    } else if (arch && (h < 32 || cp_le_read(d + off + 28, 4) != arch)) {
      st->other_arch++;
    } else if (!(elf = elf_extent(payload, (size_t)n))) {
      st->compressed++;
    } else {
      st->cubins++;
      if (fn(ctx, payload, elf, base + off + h))
        return CPROTON_OK;
    }
    off += h + n;
  }
  return CPROTON_OK;
}

/* cp_fatbin_walk with offsets counted from `base`. */
static int walk(const uint8_t *d, size_t size, unsigned arch,
                cp_fatbin_cubin_fn fn, void *ctx, cp_fatbin_stats *st,
                uint64_t base) {
  uint64_t off = 0;
  while (off + 8 <= size) {
    if (cp_le_read(d + off, 8) == 0) { /* padding between containers */
      off += 8;
      continue;
    }
    if (!cp_bytes_fit(off, 16, size) || cp_le_read(d + off, 4) != FATBIN_MAGIC)
      return cp_error_set(CPROTON_EPARSE, "fatbin: offset %llu: not a fat "
                          "binary container", (unsigned long long)off);
    uint64_t h = cp_le_read(d + off + 6, 2), n = cp_le_read(d + off + 8, 8);
    if (h < 16 || !cp_bytes_fit(off, h, size) || !cp_bytes_fit(off + h, n, size))
      return cp_error_set(CPROTON_EPARSE, "fatbin: offset %llu: container "
                          "of %llu + %llu bytes overruns the section",
                          (unsigned long long)off, (unsigned long long)h,
                          (unsigned long long)n);
    int rc = walk_entries(d, off + h, off + h + n, arch, fn, ctx, st, base);
    if (rc)
      return rc;
    off += h + n;
  }
  return CPROTON_OK;
}

int cp_fatbin_walk(const uint8_t *d, size_t size, unsigned arch,
                   cp_fatbin_cubin_fn fn, void *ctx, cp_fatbin_stats *st) {
  return walk(d, size, arch, fn, ctx, st, 0);
}

/* Exactly n bytes at off, into a new buffer *out. 0 or an error code. */
static int read_at(int fd, const char *path, uint64_t off, uint64_t n,
                   uint8_t **out) {
  uint8_t *b = malloc(n ? (size_t)n : 1);
  if (!b)
    return cp_error_set(CPROTON_ENOMEM, "%s: out of memory reading %llu "
                        "bytes", path, (unsigned long long)n);
  for (uint64_t got = 0; got < n;) {
    ssize_t r = pread(fd, b + got, (size_t)(n - got), (off_t)(off + got));
    if (r <= 0) {
      free(b);
      return cp_error_set(CPROTON_EIO, "%s: cannot read %llu bytes at %llu",
                          path, (unsigned long long)n,
                          (unsigned long long)off);
    }
    got += (uint64_t)r;
  }
  *out = b;
  return 0;
}

/* The section named `want` among the headers `sh`: 1 (off, n set), 0. */
static int pick(const uint8_t *sh, uint64_t shn, uint64_t shsz,
                const uint8_t *names, uint64_t names_n, const char *want,
                uint64_t *off, uint64_t *n) {
  size_t w = strlen(want) + 1;
  for (uint64_t i = 0; i < shn; i++) {
    const uint8_t *s = sh + i * shsz;
    uint64_t name = cp_le_read(s, 4);
    if (name < names_n && names_n - name >= w && !memcmp(names + name, want, w)) {
      *off = cp_le_read(s + 0x18, 8), *n = cp_le_read(s + 0x20, 8);
      return 1;
    }
  }
  return 0;
}

/* Offset and size of the `.nv_fatbin` section: 1 found, 0 none, <0 error. */
static int find_section(int fd, const char *path, uint64_t fsize,
                        uint64_t *off, uint64_t *n) {
  uint8_t eh[ELF_HDR];
  if (fsize < ELF_HDR || pread(fd, eh, ELF_HDR, 0) != ELF_HDR ||
      memcmp(eh, "\177ELF", 4) || eh[4] != 2 || eh[5] != 1)
    return 0; /* not a 64-bit little-endian ELF file: no cubins here */
  uint64_t shoff = cp_le_read(eh + 0x28, 8), shn = cp_le_read(eh + 0x3c, 2);
  uint64_t shsz = cp_le_read(eh + 0x3a, 2), stri = cp_le_read(eh + 0x3e, 2);
  if (shn == 0 || shsz < ELF_SHDR || stri >= shn)
    return 0; /* no section headers (or extended numbering): none found */
  if (!cp_bytes_fit(shoff, shn * shsz, fsize))
    return cp_error_set(CPROTON_EPARSE, "%s: section headers past the end "
                        "of the file", path);
  uint8_t *sh = NULL, *names = NULL;
  int rc = read_at(fd, path, shoff, shn * shsz, &sh);
  if (rc)
    return rc;
  const uint8_t *str = sh + stri * shsz;
  uint64_t str_off = cp_le_read(str + 0x18, 8), str_n = cp_le_read(str + 0x20, 8);
  if (!cp_bytes_fit(str_off, str_n, fsize) || str_n > (1u << 24))
    rc = cp_error_set(CPROTON_EPARSE, "%s: section names out of the file",
                      path);
  else if (!(rc = read_at(fd, path, str_off, str_n, &names)) &&
           (rc = pick(sh, shn, shsz, names, str_n, ".nv_fatbin", off, n)) &&
           !cp_bytes_fit(*off, *n, fsize))
    rc = cp_error_set(CPROTON_EPARSE, "%s: .nv_fatbin past the end of the "
                      "file", path);
  free(names);
  free(sh);
  return rc;
}

int cp_fatbin_scan_file(const char *path, unsigned arch, size_t max_bytes,
                        cp_fatbin_cubin_fn fn, void *ctx, cp_fatbin_stats *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb)) {
    if (fd >= 0)
      close(fd);
    return cp_error_set(CPROTON_EIO, "%s: cannot open", path);
  }
  uint64_t off = 0, n = 0;
  uint8_t *data = NULL;
  int rc = find_section(fd, path, (uint64_t)sb.st_size, &off, &n);
  if (rc == 1 && n > max_bytes) {
    st->skipped++;
    rc = 0;
  } else if (rc == 1 && !(rc = read_at(fd, path, off, n, &data)) &&
             (rc = walk(data, (size_t)n, arch, fn, ctx, st, off))) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", cp_error_message());
    rc = cp_error_set(rc, "%s: %s", path, msg);
  }
  free(data);
  close(fd);
  return rc < 0 ? rc : 0;
}

int cp_fatbin_read(const char *path, uint64_t off, uint64_t n, uint8_t **out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cp_error_set(CPROTON_EIO, "%s: cannot open", path);
  int rc = read_at(fd, path, off, n, out);
  close(fd);
  return rc;
}
