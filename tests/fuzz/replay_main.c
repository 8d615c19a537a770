/* replay_main.c -- runs a libFuzzer target over every file of a corpus
 * folder, so that the checked-in corpus is a regression test under plain gcc
 * and the sanitizer build. Usage: <target>_replay DIR|FILE... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf)
    return 1;
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

static int run_path(const char *path, int *count) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: no such corpus %s\n", path);
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) {
    ++*count;
    return run_file(path);
  }
  DIR *d = opendir(path);
  struct dirent *e;
  int rc = 0;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    rc |= run_path(sub, count);
  }
  if (d)
    closedir(d);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++)
    rc |= run_path(argv[i], &count);
  printf("replay: %d inputs, %s\n", count, rc ? "errors" : "ok");
  return rc;
}
