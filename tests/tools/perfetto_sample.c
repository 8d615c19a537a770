/* perfetto_sample.c -- writes the synthetic timeline of trace_sample.h as a
 * Perfetto trace, for tests/python/test_perfetto.py (which decodes it with
 * Perfetto's own generated classes), and prints the writer's statistics.
 *
 *   perfetto_sample OUT.pftrace [CTAS WARPS REPS] [RANK [WINDOW]]
 */
#include <stdio.h>
#include <stdlib.h>

#include "io/perfetto.h"
#include "trace_sample.h"

int main(int argc, char **argv) {
  if (argc != 2 && (argc < 5 || argc > 7)) {
    fprintf(stderr,
            "usage: perfetto_sample OUT [CTAS WARPS REPS] [RANK [WINDOW]]\n");
    return 2;
  }
  cpt_sample_shape shape = {2, 4, 8};
  if (argc >= 5)
    shape = (cpt_sample_shape){(uint32_t)atoi(argv[2]),
                               (uint32_t)atoi(argv[3]),
                               (uint32_t)atoi(argv[4])};
  cp_trace *t = cp_trace_new();
  size_t n = cpt_trace_sample(t, &shape);
  cp_sink *s;
  if (!t || cp_sink_file(argv[1], 0, &s))
    return 1;
  cp_perfetto_info info = {.pid = 4242, .rank = argc >= 6 ? atoi(argv[5]) : -1,
                           .name = "sample",
                           .window = argc == 7 ? (size_t)atoi(argv[6]) : 0};
  cp_perfetto_stats st;
  int rc = cp_perfetto_write(s, t, &info, &st);
  rc = rc ? rc : cp_sink_close(s, 0, NULL, NULL);
  cp_trace_free(t);
  if (rc)
    return 1;
  printf("{\"appended\": %zu, \"events\": %zu, \"region_events\": %zu, "
         "\"region_bytes\": %zu, \"tracks\": %zu, \"replays\": %zu, "
         "\"counters\": %zu, \"bytes\": %zu}\n",
         n, st.events, st.region_events, st.region_bytes, st.tracks,
         st.replays, st.counters, st.bytes);
  return 0;
}
