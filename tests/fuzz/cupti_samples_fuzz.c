/* cupti_samples_fuzz.c -- libFuzzer target for PC-sample buffers
 * (backend/cupti/pcs_attr.c): the bytes describe up to 64 PC records in
 * CUPTI's layout (function name from a small table, CRC, offset,
 * correlation id, up to 8 stall reasons with arbitrary indices and counts),
 * fed to cp_pcs_add and attributed into a session, as the drain thread does.
 * Input: records of 24 bytes: fn(1) crc(1) pc(4) corr(2) nstall(1) pad(1)
 * then 7 x (index(1) samples(1)). */
#include <stdint.h>
#include <string.h>

#include "backend/cupti/corr.h"
#include "backend/cupti/pcs_attr.h"
#include "backend/cupti/pcs_lines.h"
#include "cproton/cproton.h"

static int crc(const void *c, size_t n, uint64_t *out) {
  (void)c;
  *out = n;
  return 0;
}

static int source(const void *c, size_t n, const char *fn, uint64_t pc,
                  uint32_t *line, char **file, char **dir) {
  (void)c, (void)n, (void)fn;
  *line = (uint32_t)(pc % 7);
  *file = pc % 3 ? strdup("f.py") : NULL;
  *dir = NULL;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size) {
  static cp_pcs *pcs;
  static cp_pcs_lines *lines;
  static cp_corr *corr;
  static const cp_pcs_line_hooks hooks = {crc, source, NULL};
  static const char *names[] = {"smsp__pcsamp_warps_issue_stalled_wait",
                                "smsp__pcsamp_warps_issue_stalled_barrier_not_issued",
                                "smsp__pcsamp_warps_issue_stalled_selected"};
  static const uint32_t idx[] = {1, 2, 3};
  static const char *fns[] = {"a", "b", "kernel_c", ""};
  if (!pcs) {
    lines = cp_pcs_lines_new(&hooks, 1 << 20);
    cp_pcs_lines_add(lines, "xy", 2);
    corr = cp_corr_new(64);
    pcs = cp_pcs_new(16, 16, corr, lines);
  }
  cp_pcs_stalls st;
  cp_pcs_stalls_build(names, idx, 3, &st);
  CUpti_PCSamplingPCData pc[64];
  CUpti_PCSamplingStallReason r[64][7];
  size_t n = 0;
  for (; n < 64 && (n + 1) * 24 <= size; n++) {
    const uint8_t *p = d + n * 24;
    memset(&pc[n], 0, sizeof pc[n]);
    pc[n].functionName = (char *)fns[p[0] % 4];
    pc[n].cubinCrc = p[1] % 3;
    pc[n].pcOffset = (uint64_t)p[2] | (uint64_t)p[3] << 8;
    pc[n].correlationId = (uint32_t)(p[6] | p[7] << 8) % 70;
    pc[n].stallReasonCount = p[8] % 8;
    pc[n].stallReason = r[n];
    for (size_t k = 0; k < 7; k++)
      r[n][k] = (CUpti_PCSamplingStallReason){p[10 + 2 * k] % 5, p[11 + 2 * k]};
    if (pc[n].stallReasonCount > 7)
      pc[n].stallReasonCount = 7;
  }
  CUpti_PCSamplingData data = {.size = sizeof data, .collectNumPcs = 64,
                               .totalNumPcs = n, .pPcData = pc,
                               .droppedSamples = size};
  cp_launch_site site = {.sessions = 0};
  cp_pcs_note_kernel(pcs, "a", &site, size);
  cp_pcs_add(pcs, &data, &st, size % 2 ? 0 : (uint32_t)size % 5);
  cp_pcs_attribute(pcs, size % 3 == 0);
  return 0;
}
