/* backend/cupti/cubin_info.c -- the stack frame size of each function of a
 * cubin, from its `.nv.info` attributes and `.symtab` (layout in
 * cubin_info.h).
 *
 * Invariant: every read is checked against the image's size, without
 * overflow; a name is delivered only when NUL-terminated inside its string
 * table. Not a hot path: pcsampling.c calls it once per cubin it keeps. */
#include <string.h>

#include "backend/cupti/elf_bytes.h"
#include "backend/cupti/cubin_info.h"

#define EIATTR_FRAME_SIZE 0x11
#define EIFMT_SVAL 0x04


typedef struct section {
  uint64_t off, size, link, type;
} section;

typedef struct elf {
  const uint8_t *p;
  uint64_t size, shoff, shn, shsz;
} elf;

/* Section i's header; 0 when it lies outside the image. */
static int section_at(const elf *e, uint64_t i, section *s) {
  const uint8_t *h = e->p + e->shoff + i * e->shsz;
  *s = (section){cp_le_read(h + 0x18, 8), cp_le_read(h + 0x20, 8), cp_le_read(h + 0x28, 4),
                 cp_le_read(h + 4, 4)};
  return s->type == 8 /* NOBITS */ || cp_bytes_fit(s->off, s->size, e->size);
}

/* The first section of `type`, or named `name` when that is not NULL. */
static int find(const elf *e, const section *names, uint32_t type,
                const char *name, section *out) {
  size_t w = name ? strlen(name) + 1 : 0;
  for (uint64_t i = 0; i < e->shn; i++) {
    uint64_t at = cp_le_read(e->p + e->shoff + i * e->shsz, 4);
    if (!section_at(e, i, out))
      return 0;
    if (name ? at < names->size && names->size - at >= w &&
                   !memcmp(e->p + names->off + at, name, w)
             : out->type == type)
      return 1;
  }
  return 0;
}

/* Symbol `index`'s name in `strs`, or NULL. */
static const char *symbol(const elf *e, const section *syms,
                          const section *strs, uint64_t index) {
  if (index >= syms->size / 24)
    return NULL;
  uint64_t at = cp_le_read(e->p + syms->off + index * 24, 4);
  if (at >= strs->size)
    return NULL;
  const char *s = (const char *)e->p + strs->off + at;
  return memchr(s, 0, strs->size - at) ? s : NULL;
}

int cp_cubin_info_frames(const void *cubin, size_t size, cp_cubin_frame_fn fn,
                         void *ctx) {
  elf e = {cubin, size, 0, 0, 0};
  if (size < 64 || memcmp(e.p, "\177ELF", 4) || e.p[4] != 2 || e.p[5] != 1)
    return -1;
  e.shoff = cp_le_read(e.p + 0x28, 8), e.shn = cp_le_read(e.p + 0x3c, 2);
  e.shsz = cp_le_read(e.p + 0x3a, 2);
  uint64_t stri = cp_le_read(e.p + 0x3e, 2);
  section names, info, syms, strs;
  if (e.shsz < 64 || stri >= e.shn || !cp_bytes_fit(e.shoff, e.shn * e.shsz, size) ||
      !section_at(&e, stri, &names) || names.type == 8 ||
      !find(&e, &names, 0, ".nv.info", &info) ||
      !find(&e, &names, 2 /* SYMTAB */, NULL, &syms) ||
      !section_at(&e, syms.link < e.shn ? syms.link : stri, &strs) ||
      syms.link >= e.shn || info.type == 8 || strs.type == 8)
    return -1;
  const uint8_t *a = e.p + info.off;
  int n = 0;
  for (uint64_t o = 0; o + 2 <= info.size;) {
    uint8_t fmt = a[o], attr = a[o + 1];
    uint64_t len = fmt == 0x01 ? 2 : fmt == 0x02 || fmt == 0x03 ? 4 : 0;
    if (fmt == EIFMT_SVAL && o + 4 <= info.size)
      len = 4 + cp_le_read(a + o + 2, 2);
    if (!len || !cp_bytes_fit(o, len, info.size))
      return -1;
    if (fmt == EIFMT_SVAL && attr == EIATTR_FRAME_SIZE && len == 12) {
      const char *name = symbol(&e, &syms, &strs, cp_le_read(a + o + 4, 4));
      if (name && *name)
        fn(ctx, name, (uint32_t)cp_le_read(a + o + 8, 4)), n++;
    }
    o += len;
  }
  return n;
}
