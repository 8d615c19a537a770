/* tensor_metric_fuzz.c -- libFuzzer target for drained tensor-metric
 * buffers (cproton_tensor_metric_fold): the input's 64-bit words are
 * records {slot, value words} as the device copy kernel writes them, folded
 * into a live session with six reserved slots (int, double, "(pty)", a
 * second node, vectors of 3 doubles and 2 ints: slots 4 and 5). Arbitrary
 * slots, truncated records, padding words and NaN bits must give a status,
 * never a crash. */
#include <stdint.h>
#include <string.h>

#include "cproton/cproton.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size) {
  static int ready;
  if (!ready) {
    cproton_session_options o;
    cproton_session_options_init(&o);
    o.name = "/dev/null";
    o.backend = "none";
    int sid;
    uint64_t id;
    uint32_t slot;
    if (cproton_session_start(&o, &sid) ||
        cproton_tensor_metric_slot(0, "n", 0, &slot) ||
        cproton_tensor_metric_slot(0, "x", 1, &slot) ||
        cproton_tensor_metric_slot(0, "p (pty)", 0, &slot) ||
        cproton_scope_enter("s", &id) ||
        cproton_tensor_metric_slot(id, "n", 0, &slot) ||
        cproton_tensor_metric_slot_vector(id, "v", 1, 3, &slot) ||
        cproton_tensor_metric_slot_vector(id, "iv (pty)", 0, 2, &slot) ||
        cproton_scope_exit("s"))
      return 0;
    ready = 1;
  }
  uint64_t words[512];
  size_t n = size / sizeof(uint64_t);
  if (n > 512)
    n = 512;
  memcpy(words, d, n * sizeof(uint64_t));
  size_t folded = 0;
  cproton_tensor_metric_fold(words, n, &folded);
  cproton_tensor_metric_fold(words, n - n % 2, NULL);
  return 0;
}
