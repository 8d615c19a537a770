/* io_output_test.c -- file safety (io/output.c, docs/guarantees.md "File
 * safety"): temporaries are created exclusively and never through a link,
 * only regular files are replaced, an output is never one of its inputs,
 * modes are kept, failures leave nothing behind.
 *
 * getrandom is wrapped (-Wl,--wrap=getrandom, tests/CMakeLists.txt) so a
 * test can make the next temporary names predictable and plant links at
 * them, as an attacker who guessed them would. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cproton/cproton.h"
#include "io/sink.h"
#include "testutil.h"

/* ---- predictable random names on demand -------------------------------- */

static int fixed_calls; /* this many next calls return FIXED; <0: forever */
#define FIXED 0x5eed1234u

ssize_t __real_getrandom(void *buf, size_t n, unsigned flags);
ssize_t __wrap_getrandom(void *buf, size_t n, unsigned flags) {
  if (fixed_calls != 0 && n == sizeof(uint32_t)) {
    fixed_calls -= fixed_calls > 0;
    uint32_t v = FIXED;
    memcpy(buf, &v, sizeof v);
    return (ssize_t)n;
  }
  return __real_getrandom(buf, n, flags);
}

/* ---- helpers ---------------------------------------------------------- */

static const char *victim(void) {
  const char *v = cpt_tmp_path("victim");
  FILE *f = fopen(v, "w");
  cr_assert(f);
  fputs("secret", f);
  fclose(f);
  chmod(v, 0600);
  return v;
}

static void assert_victim_untouched(const char *v) {
  char *text = cpt_read_file(v, NULL);
  cr_assert(text, "the victim is gone");
  cr_assert_str_eq(text, "secret", "the victim was overwritten");
  free(text);
  struct stat st;
  cr_assert_eq(lstat(v, &st), 0);
  cr_assert(S_ISREG(st.st_mode));
}

/* Entries of the test folder whose name starts with `prefix`. */
static int count_prefixed(const char *prefix) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s", cpt_tmp_path("x"));
  *strrchr(dir, '/') = '\0';
  DIR *d = opendir(dir);
  cr_assert(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

static void write_profile(const char *name) {
  int sid = cpt_start_session(name, "none", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  uint64_t id;
  cr_assert_eq(cproton_scope_enter("work", &id), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("work"), CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
}

static int is_profile(const char *path) {
  char *text = cpt_read_file(path, NULL);
  int ok = text && text[0] == '[' && strstr(text, "\"work\"");
  free(text);
  return ok;
}

/* ---- temporaries ---------------------------------------------------------- */

Test(io_output, planted_links_at_temporary_names_are_never_followed) {
  const char *v = victim();
  const char *name = cpt_tmp_path("shared");
  char path[600], old_tmp[640], new_tmp[640];
  snprintf(path, sizeof path, "%s.hatchet", name);
  /* the name finalize used before (issue 24.1) and the next one it tries */
  snprintf(old_tmp, sizeof old_tmp, "%s.tmp.%d", path, (int)getpid());
  snprintf(new_tmp, sizeof new_tmp, "%s.tmp.%d.%08x", path, (int)getpid(),
           FIXED);
  cr_assert_eq(symlink(v, old_tmp), 0);
  cr_assert_eq(symlink(v, new_tmp), 0);
  fixed_calls = 1;
  write_profile(name);
  assert_victim_untouched(v);
  struct stat st;
  cr_assert_eq(lstat(path, &st), 0);
  cr_assert(S_ISREG(st.st_mode), "the profile is a link");
  cr_assert(is_profile(path));
  cr_assert_eq(lstat(new_tmp, &st), 0, "the planted link was removed");
  cr_assert(S_ISLNK(st.st_mode));
  cr_assert_eq(count_prefixed("shared.hatchet.tmp."), 2, "a temporary was left");
}

Test(io_output, no_free_temporary_name_is_an_error_not_a_clobber) {
  const char *v = victim();
  const char *path = cpt_tmp_path("taken.json");
  char tmp[640];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d.%08x", path, (int)getpid(), FIXED);
  cr_assert_eq(symlink(v, tmp), 0);
  fixed_calls = -1; /* every name is the planted one */
  cp_sink *s;
  cr_assert_eq(cp_sink_file(path, 0, &s), CPROTON_EIO);
  fixed_calls = 0;
  cr_assert(strstr(cproton_last_error(), "every temporary name tried exists"),
            "%s", cproton_last_error());
  assert_victim_untouched(v);
  cr_assert_eq(access(path, F_OK), -1);
}

Test(io_output, a_failed_write_leaves_no_temporary) {
  const char *path = cpt_tmp_path("failed.json");
  cp_sink *s;
  cr_assert_eq(cp_sink_file(path, 1, &s), CPROTON_OK);
  cp_sink_puts(s, "partial");
  cr_assert_eq(cp_sink_close(s, 1, NULL, NULL), CPROTON_OK);
  cr_assert_eq(count_prefixed("failed.json"), 0);
}

/* ---- modes ------------------------------------------------------------------ */

static mode_t mode_of(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  return st.st_mode & 07777;
}

Test(io_output, a_replaced_file_keeps_its_mode_a_new_one_gets_the_umask) {
  umask(022);
  const char *name = cpt_tmp_path("private");
  char path[600];
  snprintf(path, sizeof path, "%s.hatchet", name);
  write_profile(name);
  cr_assert_eq(mode_of(path), 0644, "new file: %o", mode_of(path));
  chmod(path, 0600);
  write_profile(name);
  cr_assert_eq(mode_of(path), 0600, "replaced file: %o", mode_of(path));
  umask(077);
  unlink(path);
  write_profile(name);
  cr_assert_eq(mode_of(path), 0600, "umask 077: %o", mode_of(path));
}

/* ---- destinations ------------------------------------------------------- */

Test(io_output, only_regular_files_are_replaced) {
  const char *v = victim();
  const char *fifo = cpt_tmp_path("fifo.hatchet"),
             *dir = cpt_tmp_path("dir.hatchet"),
             *link = cpt_tmp_path("link.hatchet");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  cr_assert_eq(mkdir(dir, 0700), 0);
  cr_assert_eq(symlink(v, link), 0);
  const char *paths[] = {fifo, dir, link};
  const char *what[] = {"a FIFO", "a directory", "a symbolic link"};
  struct stat st;
  for (int i = 0; i < 3; i++) {
    cp_sink *s;
    cr_assert_eq(cp_sink_file(paths[i], 0, &s), CPROTON_EINVAL, "%s", paths[i]);
    cr_assert(strstr(cproton_last_error(), what[i]), "%s", cproton_last_error());
    cr_assert(strstr(cproton_last_error(), paths[i]));
  }
  cr_assert_eq(lstat(fifo, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
  cr_assert_eq(lstat(link, &st), 0);
  cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
  assert_victim_untouched(v);
}

Test(io_output, a_destination_that_turned_into_a_fifo_is_not_replaced) {
  const char *path = cpt_tmp_path("late.json");
  cp_sink *s;
  cr_assert_eq(cp_sink_file(path, 0, &s), CPROTON_OK);
  cp_sink_puts(s, "{}");
  cr_assert_eq(mkfifo(path, 0600), 0); /* meanwhile */
  cr_assert_eq(cp_sink_close(s, 0, NULL, NULL), CPROTON_EINVAL);
  struct stat st;
  cr_assert_eq(lstat(path, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode));
  cr_assert_eq(count_prefixed("late.json.tmp"), 0);
}

/* ---- inputs --------------------------------------------------------------- */

Test(io_output, a_merge_never_writes_over_its_input) {
  const char *in = cpt_tmp_path("in.pftrace"),
             *hard = cpt_tmp_path("hard.pftrace"),
             *fifo = cpt_tmp_path("out.pftrace");
  FILE *f = fopen(in, "w");
  fputs("not a trace", f);
  fclose(f);
  cr_assert_eq(link(in, hard), 0);
  const char *ins[] = {in};
  cr_assert_eq(cproton_trace_merge(ins, 1, in), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "is the input"), "%s",
            cproton_last_error());
  cr_assert_eq(cproton_trace_merge(ins, 1, hard), CPROTON_EINVAL);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  cr_assert_eq(cproton_trace_merge(ins, 1, fifo), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "a FIFO"), "%s", cproton_last_error());
  char *text = cpt_read_file(in, NULL);
  cr_assert_str_eq(text, "not a trace");
  free(text);
}

Test(io_output, public_handle) {
  cproton_output *o = (cproton_output *)1;
  cr_assert_eq(cproton_output_open(NULL, NULL, 0, &o), CPROTON_EINVAL);
  cr_assert_eq(cproton_output_open("x", NULL, 1, &o), CPROTON_EINVAL);
  cr_assert_eq(cproton_output_open("x", NULL, 0, NULL), CPROTON_EINVAL);
  cr_assert_null(cproton_output_stream(NULL));
  cr_assert_eq(cproton_output_close(NULL, 0), CPROTON_OK);
  const char *in = cpt_tmp_path("page.hatchet"), *out = cpt_tmp_path("page.svg");
  FILE *f = fopen(in, "w");
  fputs("[]", f);
  fclose(f);
  const char *ins[] = {NULL, in};
  cr_assert_eq(cproton_output_open(in, ins, 2, &o), CPROTON_EINVAL);
  cr_assert_eq(cproton_output_open(out, ins, 2, &o), CPROTON_OK);
  fputs("<svg/>", cproton_output_stream(o));
  cr_assert_eq(access(out, F_OK), -1, "visible before the close");
  cr_assert_eq(cproton_output_close(o, 0), CPROTON_OK);
  char *text = cpt_read_file(out, NULL);
  cr_assert_str_eq(text, "<svg/>");
  free(text);
  cr_assert_eq(cproton_output_open(out, NULL, 0, &o), CPROTON_OK);
  fputs("discarded", cproton_output_stream(o));
  cr_assert_eq(cproton_output_close(o, 1), CPROTON_OK);
  text = cpt_read_file(out, NULL);
  cr_assert_str_eq(text, "<svg/>");
  free(text);
  cr_assert_eq(count_prefixed("page.svg.tmp"), 0);
}

Test(io_output, a_refused_destination_keeps_the_session_for_a_retry) {
  const char *name = cpt_tmp_path("blocked");
  char path[600];
  snprintf(path, sizeof path, "%s.hatchet", name);
  cr_assert_eq(mkfifo(path, 0600), 0);
  int sid = cpt_start_session(name, "none", NULL, NULL);
  uint64_t id;
  cr_assert_eq(cproton_scope_enter("work", &id), CPROTON_OK);
  cr_assert_eq(cproton_scope_exit("work"), CPROTON_OK);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_EINVAL);
  cr_assert(strstr(cproton_last_error(), "is a FIFO"), "%s", cproton_last_error());
  cr_assert_eq(unlink(path), 0);
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  cr_assert(is_profile(path));
}
