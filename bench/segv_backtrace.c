/* bench/segv_backtrace.c -- a native backtrace of the thread that crashed,
 * for GPU diagnostics where gdb may be missing (glibc dropped catchsegv and
 * libSegFault.so). Preloaded into a child process:
 *
 *   cc -O1 -g -shared -fPIC bench/segv_backtrace.c -o libsegv_bt.so
 *   LD_PRELOAD=$PWD/libsegv_bt.so PYTHONFAULTHANDLER=1 python prog.py
 *
 * Its constructor installs a handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE and
 * SIGABRT that writes "native backtrace (signal N, thread T):" and
 * glibc's backtrace_symbols_fd() lines to stderr, then restores the default
 * action and re-raises, so the process still dies of the signal (its exit
 * status says which). Python's faulthandler, enabled later, installs its
 * own handler over this one and calls it after dumping the Python stacks.
 * Async-signal-safety: backtrace() is primed once in the constructor (its
 * first call loads libgcc_s, which is not safe inside a handler); the rest
 * writes with write(2) only. Not part of the library; used by
 * bench/graph_crash.py. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_FRAMES 64

static void put(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

/* Decimal text of `v` into `buf` (at least 21 bytes). */
static const char *decimal(unsigned long v, char *buf) {
  char *p = buf + 20;
  *p = '\0';
  do
    *--p = (char)('0' + v % 10);
  while ((v /= 10) && p > buf);
  return p;
}

static void on_fatal(int sig) {
  char a[21], b[21];
  void *frames[MAX_FRAMES];
  put("native backtrace (signal ");
  put(decimal((unsigned long)sig, a));
  put(", thread ");
  put(decimal((unsigned long)syscall(SYS_gettid), b));
  put("):\n");
  int n = backtrace(frames, MAX_FRAMES);
  backtrace_symbols_fd(frames, n, 2);
  put("end of native backtrace\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  void *prime[1];
  backtrace(prime, 1);
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    sigaction(sigs[i], &sa, NULL);
}
