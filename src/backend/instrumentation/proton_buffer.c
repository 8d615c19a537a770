/* backend/instrumentation/proton_buffer.c -- re-encodes a cproton profile
 * buffer (instrument/layout.h) in the binary trace layout of Proton's
 * InstrumentationHook.host_buffer (cproton_buffer_to_proton), so that code
 * written against Proton's host buffer reads cproton's records.
 *
 *   header (u32 each): version 1, header_offset 4, header_size,
 *     payload_offset, payload_size, device_type (1 = CUDA), block_num,
 *     total_unit, scratch_mem_size, uid_num, uid_vec[uid_num]
 *   payload: block_num blocks of scratch_mem_size bytes:
 *     u32 preamble 0xdeadbeef, u32 block id, u32 SM id, u32 buf_size,
 *     u64 init time, u64 pre-finalize time, u64 post-finalize time,
 *     u32 count[total_unit] (words written: 2 per record),
 *     uid_num segments of buf_size / uid_num bytes, records of
 *     u32 tag (bit 31 end, bits 23..30 scope id, bits 0..10 counter
 *     bits 32..42) and u32 counter bits 0..31.
 *
 * Segments are written in record order (oldest surviving record first), so
 * a reader that walks a segment from its start sees them chronologically;
 * the counts keep the records written, so a reader still sees how many
 * were dropped. A CTA that never finalized gets a zero block (no
 * preamble). Not a hot path: a debugging aid, one launch at a time. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cproton/instrument.h"
#include "instrument/layout.h"

#define PROTON_VERSION 1u
#define PROTON_PREAMBLE 0xdeadbeefu
#define PROTON_BLOCK_HEADER 40u
#define PROTON_MAX_SCOPE 255u  /* 8 bits of scope id in a tag */
#define PROTON_CLK_HI 0x7ffull /* 11 high counter bits in a tag */

static uint32_t rd32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void wr32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> 8 * i);
}

static void wr64(unsigned char *p, uint64_t v) {
  wr32(p, (uint32_t)v);
  wr32(p + 4, (uint32_t)(v >> 32));
}

/* One record in Proton's encoding. */
static void put_record(unsigned char *p, uint64_t v) {
  uint32_t scope = (uint32_t)(v >> CP_LAYOUT_SCOPE_SHIFT) & 0x7fffu;
  uint64_t ctr = v & ((1ull << CP_LAYOUT_SCOPE_SHIFT) - 1);
  uint32_t tag = (uint32_t)(v >> CP_LAYOUT_END_BIT) << 31 | (scope & PROTON_MAX_SCOPE) << 23 |
                 (uint32_t)(ctr >> 32 & PROTON_CLK_HI);
  wr32(p, tag);
  wr32(p + 4, (uint32_t)ctr);
}

static int check_args(const cproton_buffer_layout *l, size_t size, uint32_t total_units) {
  if (l->aggregate)
    return cp_error_set(CPROTON_EINVAL, "layout: the kernel sums in the kernel (aggregate) and writes no "
                        "records; compile it with records for a host buffer");
  if (l->n_units == 0 || l->n_units > CP_LAYOUT_MAX_UNITS || l->per_cta_bytes == 0 ||
      l->header_bytes != cp_layout_header_bytes(l->n_units) ||
      (uint64_t)l->per_cta_bytes != (uint64_t)l->header_bytes + (uint64_t)l->n_units * l->segment_bytes)
    return cp_error_set(CPROTON_EINVAL, "layout: %u units of %u bytes do not make %u-byte CTA slices", l->n_units,
                        l->segment_bytes, l->per_cta_bytes);
  if (size == 0 || size % l->per_cta_bytes)
    return cp_error_set(CPROTON_EPARSE, "profile buffer of %zu bytes is not a whole number of %u-byte CTA slices",
                        size, l->per_cta_bytes);
  if (l->n_scopes > PROTON_MAX_SCOPE + 1)
    return cp_error_set(CPROTON_EUNSUPPORTED, "%u scopes: Proton's buffer layout has 8-bit scope ids (at most %u)",
                        l->n_scopes, PROTON_MAX_SCOPE + 1);
  for (uint32_t u = 0; u < l->n_units; u++)
    if (l->unit_warp[u] >= total_units)
      return cp_error_set(CPROTON_EINVAL, "unit %u records warp %u but the kernel has %u warps", u,
                          l->unit_warp[u], total_units);
  return 0;
}

/* Block of CTA slice `p` at `b` (zeroed by the caller). */
static void put_block(unsigned char *b, const unsigned char *p, const cproton_buffer_layout *l,
                      uint32_t total_units) {
  if (rd32(p + CP_HDR_MAGIC) != CP_LAYOUT_MAGIC || rd32(p + CP_HDR_N_UNITS) != l->n_units ||
      rd32(p + CP_HDR_SEG_BYTES) != l->segment_bytes)
    return; /* never finalized or not this layout: no preamble */
  uint64_t cap = l->segment_bytes / CP_LAYOUT_RECORD_BYTES;
  wr32(b, PROTON_PREAMBLE);
  wr32(b + 4, rd32(p + CP_HDR_CTA));
  wr32(b + 8, rd32(p + CP_HDR_SM));
  wr32(b + 12, l->n_units * l->segment_bytes);
  wr64(b + 16, rd64(p + CP_HDR_START_TIME));
  wr64(b + 24, rd64(p + CP_HDR_FIN_TIME));
  wr64(b + 32, rd64(p + CP_HDR_END_TIME));
  unsigned char *segs = b + PROTON_BLOCK_HEADER + 4u * total_units;
  for (uint32_t u = 0; u < l->n_units; u++) {
    uint64_t written = rd32(p + CP_HDR_COUNTS + 4 * u);
    uint64_t kept = written < cap ? written : cap;
    wr32(b + PROTON_BLOCK_HEADER + 4u * l->unit_warp[u], (uint32_t)(2 * written));
    const unsigned char *seg = p + l->header_bytes + (size_t)u * l->segment_bytes;
    unsigned char *out = segs + (size_t)u * l->segment_bytes;
    for (uint64_t k = written - kept; k < written; k++)
      put_record(out + (k - (written - kept)) * CP_LAYOUT_RECORD_BYTES,
                 rd64(seg + (k % cap) * CP_LAYOUT_RECORD_BYTES));
  }
}

int cproton_buffer_to_proton(const void *data, size_t size, const cproton_buffer_layout *layout,
                             uint32_t total_units, void **out, size_t *out_size) {
  if (!data || !layout || !out || !out_size)
    return cp_error_set(CPROTON_EINVAL, "cproton_buffer_to_proton: NULL argument");
  *out = NULL;
  *out_size = 0;
  int rc = check_args(layout, size, total_units);
  if (rc)
    return rc;
  size_t n_blocks = size / layout->per_cta_bytes, n_uid = layout->n_units;
  size_t block = PROTON_BLOCK_HEADER + 4u * (size_t)total_units + (size_t)n_uid * layout->segment_bytes;
  size_t header = 40 + 4 * n_uid;
  if (n_blocks > UINT32_MAX / block)
    return cp_error_set(CPROTON_ELIMIT, "%zu CTAs of %zu bytes exceed Proton's 32-bit payload size", n_blocks,
                        block);
  unsigned char *b = calloc(1, header + n_blocks * block);
  if (!b)
    return cp_error_set(CPROTON_ENOMEM, "out of memory for a %zu-byte host buffer", header + n_blocks * block);
  uint32_t fields[] = {PROTON_VERSION, 4, (uint32_t)header, (uint32_t)header, (uint32_t)(n_blocks * block),
                       1 /* CUDA */, (uint32_t)n_blocks, total_units, (uint32_t)block, (uint32_t)n_uid};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
    wr32(b + 4 * i, fields[i]);
  for (size_t u = 0; u < n_uid; u++)
    wr32(b + 40 + 4 * u, layout->unit_warp[u]);
  const unsigned char *in = data;
  for (size_t i = 0; i < n_blocks; i++)
    put_block(b + header + i * block, in + i * (size_t)layout->per_cta_bytes, layout, total_units);
  *out = b;
  *out_size = header + n_blocks * block;
  return CPROTON_OK;
}
