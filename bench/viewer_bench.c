/* viewer_bench.c -- load + render time and peak RSS for a synthetic 1M-node
 * profile (target: < 1 s, < 500 MB), and the advisor on it (--advise,
 * target < 2 s: issue 26; every kernel has FLOPs and bytes, so the roofline
 * rules fire on most of them and the report is long).
 *
 * usage: viewer_bench [VIEWER_BINARY] [NODES]
 * Writes a Proton-shaped profile (ROOT -> scopes -> kernels, 4 metrics per
 * kernel, one node per line) to $TMPDIR, times cproton_profile_open() in this
 * process, then, if a viewer binary is given, runs it with output to
 * /dev/null and reports its wall time and max RSS. Not run by ctest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cproton/cproton.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long write_profile(const char *path, long nodes) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  long scopes = 1000, per = (nodes - 1) / scopes - 1, n = 1;
  fprintf(f, "[{\"frame\": {\"name\": \"ROOT\", \"type\": \"function\"}, "
             "\"metrics\": {\"count\": 0, \"time (ns)\": 0, \"flops16\": 0, "
             "\"bytes\": 0}, \"children\": [\n");
  for (long s = 0; s < scopes; s++) {
    fprintf(f, "%s{\"frame\": {\"name\": \"scope_%ld\", \"type\": \"function\"},"
               " \"metrics\": {}, \"children\": [\n", s ? ",\n" : "", s);
    n++;
    for (long k = 0; k < per; k++, n++)
      fprintf(f, "%s{\"frame\": {\"name\": \"kernel_%ld_%ld\", \"type\": "
                 "\"function\"}, \"metrics\": {\"count\": %ld, \"device_id\": "
                 "\"0\", \"device_type\": \"CUDA\", \"time (ns)\": %ld, "
                 "\"flops16\": %ld.5, \"bytes\": %ld}, \"children\": []}",
              k ? ",\n" : "", s, k % 97, 1 + k % 7, 1000 + k, k * 1000, k * 64);
    fprintf(f, "]}");
  }
  fprintf(f, "]}, {\"CUDA\": {\"0\": {\"arch\": \"90\", \"bus_width\": 6016, "
             "\"clock_rate\": 1980000, \"memory_clock_rate\": 3201000, "
             "\"num_sms\": 132}}}]\n");
  fclose(f);
  return n;
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6))
      kb = strtol(line + 6, NULL, 10);
  if (f)
    fclose(f);
  return kb;
}

int main(int argc, char **argv) {
  long want = argc > 2 ? atol(argv[2]) : 1000000;
  char path[512];
  snprintf(path, sizeof path, "%s/cproton_viewer_bench.hatchet",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  double t0 = now();
  long n = access(path, R_OK) == 0 && getenv("KEEP") ? want : write_profile(path, want);
  if (n < 0) {
    perror(path);
    return 1;
  }
  double t1 = now();
  cproton_profile *p;
  if (cproton_profile_open(path, &p) != CPROTON_OK) {
    fprintf(stderr, "%s\n", cproton_last_error());
    return 1;
  }
  double t2 = now();
  printf("nodes: %ld (file %s written in %.2f s)\n", n, path, t1 - t0);
  printf("library load: %.3f s, %u nodes, peak RSS %.1f MB\n", t2 - t1,
         cproton_profile_node_count(p), rss_kb() / 1024.0);
  cproton_profile_close(p);
  if (argc > 1) {
    const char *modes[][4] = {{"-m", "time/ms", NULL}, {"-m", "util,tflop16/s", NULL},
                              {"--advise", "--json", NULL}};
    for (int m = 0; m < 3; m++) {
      fflush(stdout);
      double s = now();
      pid_t pid = fork();
      if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
          _exit(127);
        execl(argv[1], argv[1], "--no-color", modes[m][0], modes[m][1], path,
              (char *)NULL);
        _exit(127);
      }
      int status;
      struct rusage ru;
      wait4(pid, &status, 0, &ru);
      printf("viewer %s %s: %.3f s (load + derive/advise + render), max RSS %.1f MB,"
             " exit %d\n", modes[m][0], modes[m][1], now() - s,
             ru.ru_maxrss / 1024.0, WEXITSTATUS(status));
    }
  }
  if (!getenv("KEEP"))
    remove(path);
  return 0;
}
