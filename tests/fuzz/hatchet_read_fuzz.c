/* hatchet_read_fuzz.c -- libFuzzer target for the Hatchet reader: parse
 * arbitrary bytes through the public API and touch every accessor. */
#include <stddef.h>
#include <stdint.h>

#include "cproton/cproton.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cproton_profile *p = NULL;
  if (cproton_profile_parse((const char *)data, size, "fuzz", &p) != CPROTON_OK)
    return 0;
  uint32_t n = cproton_profile_node_count(p);
  volatile size_t sink = 0;
  for (uint32_t i = 0; i < n; i++) {
    sink += cproton_profile_node_name(p, i)[0];
    sink += cproton_profile_node_parent(p, i) + cproton_profile_node_depth(p, i);
    for (uint32_t c = 0; c < cproton_profile_node_child_count(p, i); c++)
      sink += cproton_profile_node_child(p, i, c);
    for (uint32_t m = 0; m < cproton_profile_node_metric_count(p, i); m++) {
      uint32_t key;
      cproton_metric_value v;
      cproton_profile_node_metric_at(p, i, m, &key, &v);
      sink += cproton_profile_metric_name(p, key)[0];
      if (v.kind == CPROTON_METRIC_STRING)
        sink += v.s[0];
    }
  }
  for (uint32_t d = 0; d < cproton_profile_device_count(p); d++) {
    cproton_device_info info;
    cproton_profile_device(p, d, &info);
    sink += info.arch[0] + info.type[0];
  }
  cproton_profile_close(p);
  return 0;
}
