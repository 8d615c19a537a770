/* profile_touch.h -- reads every accessor of an opened profile, so the
 * profile-reader fuzz targets exercise the whole model they built. */
#ifndef CP_FUZZ_PROFILE_TOUCH_H
#define CP_FUZZ_PROFILE_TOUCH_H

#include "cproton/cproton.h"

static inline void cpf_touch_profile(const cproton_profile *p) {
  volatile size_t sink = 0;
  uint32_t n = cproton_profile_node_count(p);
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
    sink += info.arch[0] + info.type[0] + info.index[0];
  }
  (void)sink; /* clang 14 calls a volatile only added to "set but not used" */
}

#endif
