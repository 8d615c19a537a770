/* names_memory_bench.c -- resident memory of distinct scope names: 10^6
 * names entered with no session, then within a session and after its
 * finalize. Prints RSS (MB) at each step; docs/guarantees.md quotes it.
 * usage: names_memory_bench [N] */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cproton/cproton.h"
#include "backend/fake/workload.h" /* the RSS reader */

static double rss_mb(void) {
  return (double)cp_fake_workload_rss_kib() * 1024.0 / 1e6;
}

static void names(int n, const char *prefix) {
  char name[64];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "%s%d", prefix, i);
    cproton_scope_enter(name, NULL);
    cproton_scope_exit(name);
  }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000000;
  printf("start:                          %8.1f MB\n", rss_mb());
  names(n, "idle");
  printf("%d names, no session:      %8.1f MB\n", n, rss_mb());
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = "/tmp/names_memory_bench";
  o.backend = "none";
  int sid;
  if (cproton_session_start(&o, &sid)) {
    fprintf(stderr, "%s\n", cproton_last_error());
    return 1;
  }
  names(n, "live");
  printf("%d names, in a session:    %8.1f MB\n", n, rss_mb());
  cproton_session_finalize(sid, NULL);
  printf("after finalize:                 %8.1f MB\n", rss_mb());
  names(n, "idle2");
  printf("%d more names, no session: %8.1f MB\n", n, rss_mb());
  return 0;
}
