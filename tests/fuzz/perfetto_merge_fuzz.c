/* perfetto_merge_fuzz.c -- libFuzzer target for the trace merger's parser:
 * arbitrary bytes read as a Trace (packets through cp_pb_next) and each
 * packet rewritten by cp_perfetto_merge_packet, as `cproton-viewer
 * --merge-traces` does; then the whole file through cproton_trace_merge. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "cproton/cproton.h"
#include "io/pb.h"
#include "io/perfetto_merge.h"

static void rewrite_all(const uint8_t *data, size_t size) {
  cp_pb out = {0};
  cp_merge_map m = {1, 3};
  size_t pos = 0;
  cp_pb_field f;
  char err[256];
  while (cp_pb_next(data, size, &pos, 0, &f, err, sizeof err) == 1) {
    if (f.type != CP_PB_LEN)
      continue;
    cp_pb_reset(&out);
    if (cp_perfetto_merge_packet(f.data, f.len, 0, &m, &out, err,
                                 sizeof err) == 0 && !out.oom) {
      /* the rewrite must itself be readable protobuf */
      size_t p2 = 0;
      cp_pb_field g;
      while (cp_pb_next(out.b, out.n, &p2, 0, &g, err, sizeof err) == 1)
        ;
    }
  }
  cp_pb_free(&out);
}

static void merge_file(const uint8_t *data, size_t size) {
  char in[64], out[64];
  snprintf(in, sizeof in, "/tmp/cproton-merge-fuzz-%d.in", (int)getpid());
  snprintf(out, sizeof out, "/tmp/cproton-merge-fuzz-%d.out", (int)getpid());
  FILE *f = fopen(in, "wb");
  if (!f)
    return;
  fwrite(data, 1, size, f);
  fclose(f);
  const char *inputs[2] = {in, in};
  cproton_trace_merge(inputs, 2, out);
  unlink(in);
  unlink(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rewrite_all(data, size);
  merge_file(data, size);
  return 0;
}
