/* basic.c -- the README's C example: a session, nested scopes with metrics,
 * a state, threads, and the written profile. With a GPU and the CUPTI
 * backend the kernels a program launches land under these scopes; here the
 * scopes alone are recorded when no GPU is present.
 * Usage: example_basic [output-name] [data: tree|trace] */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <cproton/cproton.h>

static void work(int n) {
  volatile double x = 0;
  for (int i = 0; i < n * 1000; i++)
    x += i * 0.5;
  (void)x; /* clang 14 calls a volatile only added to "set but not used" */
}

static void *worker(void *arg) {
  uint64_t id;
  cproton_scope_enter("worker", &id);
  work(200);
  cproton_metric_add_int(id, "items", (int64_t)(long)arg);
  cproton_scope_exit("worker");
  return NULL;
}

int main(int argc, char **argv) {
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = argc > 1 ? argv[1] : "basic";
  o.data = argc > 2 ? argv[2] : "tree";
  int sid;
  if (cproton_session_start(&o, &sid) != CPROTON_OK) {
    fprintf(stderr, "basic: %s\n", cproton_last_error());
    return 1;
  }
  for (int step = 0; step < 3; step++) {
    uint64_t id, fwd;
    cproton_scope_enter("step", &id);
    cproton_scope_enter("forward", &fwd); /* as in the README */
    work(100);
    cproton_metric_add_double(fwd, "flops", 1.5e9);
    cproton_scope_exit("forward");
    cproton_state_enter("backward");
    work(50);
    cproton_state_exit();
    cproton_metric_add_double(id, "loss (pty)", 1.0 / (step + 1));
    cproton_scope_exit("step");
  }
  pthread_t th[2];
  for (long i = 0; i < 2; i++)
    pthread_create(&th[i], NULL, worker, (void *)(i + 1));
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  char path[512];
  cproton_session_output_path(sid, path, sizeof path);
  if (cproton_session_finalize(sid, NULL) != CPROTON_OK) {
    fprintf(stderr, "basic: %s\n", cproton_last_error());
    return 1;
  }
  printf("basic: wrote %s.%s\n", path,
         o.data[1] == 'r' && o.data[2] == 'a' ? "chrome_trace" : "hatchet");
  return 0;
}
