/* core/trace.c -- an append-only list of timeline events that spills to
 * disk, so a long trace costs bounded memory.
 *
 * Layout: appends fill one buffer of BUF_EVENTS records; a full buffer is
 * written to the spill file (created on first need beside the output, in
 * `spill_dir`, and unlinked at once so nothing is left behind) and reused.
 * When no spill file can be made the full buffers stay in memory, as before.
 * Readers see the spilled records first, then the buffers, in append order.
 *
 *   memory:  [buffer 0 .. BUF_EVENTS) + (no spill: list of full buffers)
 *   disk:    cp_event records, host endianness, never read by another
 *            process (it dies with the trace)
 *
 * Invariant: memory is at most one buffer (~3.5 MiB) once spilling works;
 * a cap (CP_TRACE_MAX_EVENTS) bounds the disk and counts what it drops
 * instead of failing the program. Not on the launch path: scope events come
 * from user threads in trace mode, kernel events from CUPTI's thread; a
 * spill write (one buffer) happens under the lock every BUF_EVENTS appends.
 * Readers (finalize, cproton_session_data) may run while appends go on:
 * they copy READ_EVENTS records at a time under the same lock, by append
 * position, and see the events held when their read began. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/error.h"
#include "core/kernel_times.h"
#include "core/trace.h"

#define BUF_EVENTS 65536
#define READ_EVENTS 4096
#define CP_TRACE_MAX_EVENTS (64u << 20)

typedef struct chunk {
  struct chunk *next;
  size_t n;
  cp_event events[BUF_EVENTS];
} chunk;

struct cp_trace {
  pthread_mutex_t lock;
  chunk *head, *tail; /* head..tail: full buffers kept (no spill) + current */
  int fd;             /* spill file, -1 when none yet; -2 when it failed */
  size_t spilled;     /* records in the spill file */
  size_t count, dropped;
  char *spill_dir;
};

void cp_event_align(cp_event *e) {
  if (e->kind != CP_EVENT_REGION || !e->u.region.launch_ns)
    return;
  int64_t shift =
      cp_ktimes_shift(e->u.region.kernel_name, e->u.region.launch_ns);
  e->start_ns = (uint64_t)((int64_t)e->start_ns + shift);
  e->end_ns = (uint64_t)((int64_t)e->end_ns + shift);
  e->u.region.launch_ns = 0;
}

/* The bytes of each kind's payload, by cp_event_kind. */
static const size_t payload_size[] = {
    [CP_EVENT_SCOPE] = sizeof(cp_event_scope),
    [CP_EVENT_KERNEL] = sizeof(cp_event_kernel),
    [CP_EVENT_REGION] = sizeof(cp_event_region),
    [CP_EVENT_COUNTER] = sizeof(cp_event_counter),
};

/* `*e` with only what its kind defines: the header and the live payload;
 * the union's other bytes (which an initializer of a smaller member leaves
 * indeterminate) and the reserved header bytes become 0, so what reaches
 * the spill file is fully initialized. */
static void clean_copy(cp_event *dst, const cp_event *e) {
  memset(dst, 0, sizeof *dst);
  dst->start_ns = e->start_ns;
  dst->end_ns = e->end_ns;
  dst->name = e->name;
  dst->node = e->node;
  dst->kind = e->kind;
  if (e->kind < sizeof payload_size / sizeof *payload_size)
    memcpy(&dst->u, &e->u, payload_size[e->kind]);
}

cp_trace *cp_trace_new(void) {
  cp_trace *t = calloc(1, sizeof *t);
  if (t) {
    pthread_mutex_init(&t->lock, NULL);
    t->fd = -1;
  }
  return t;
}

static void free_chunks(chunk *c) {
  while (c) {
    chunk *next = c->next;
    free(c);
    c = next;
  }
}

void cp_trace_free(cp_trace *t) {
  if (!t)
    return;
  free_chunks(t->head);
  if (t->fd >= 0)
    close(t->fd);
  pthread_mutex_destroy(&t->lock);
  free(t->spill_dir);
  free(t);
}

int cp_trace_set_spill_dir(cp_trace *t, const char *dir) {
  char *copy = dir ? strdup(dir) : NULL;
  if (dir && !copy)
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  pthread_mutex_lock(&t->lock);
  free(t->spill_dir);
  t->spill_dir = copy;
  pthread_mutex_unlock(&t->lock);
  return CPROTON_OK;
}

void cp_trace_clear(cp_trace *t) {
  pthread_mutex_lock(&t->lock);
  if (t->head) { /* keep one buffer: the next session reuses it */
    free_chunks(t->head->next);
    t->head->next = NULL;
    t->head->n = 0;
    t->tail = t->head;
  }
  if (t->fd >= 0 && ftruncate(t->fd, 0) != 0) {
    close(t->fd);
    t->fd = -1;
  }
  t->spilled = t->count = t->dropped = 0;
  pthread_mutex_unlock(&t->lock);
}

/* An anonymous file in `dir`: created, then unlinked. -2 on failure. */
static int open_in(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/.cproton-trace-XXXXXX", dir) >=
      (int)sizeof path)
    return -2;
  int fd = mkstemp(path);
  if (fd < 0)
    return -2;
  unlink(path);
  return fd;
}

static int open_spill(cp_trace *t) {
  if (t->fd == -1) {
    t->fd = t->spill_dir ? open_in(t->spill_dir) : -2;
    if (t->fd < 0)
      t->fd = open_in(P_tmpdir);
  }
  return t->fd >= 0;
}

static int write_all(int fd, const void *p, size_t n, off_t off) {
  const char *c = p;
  while (n) {
    ssize_t k = pwrite(fd, c, n, off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    c += k;
    off += k;
    n -= (size_t)k;
  }
  return 0;
}

/* The current buffer is full: spill it, or keep it and start another. */
static int make_room(cp_trace *t) {
  if (t->tail && open_spill(t)) {
    /* spilling decided at the first full buffer: memory stays one buffer */
    CP_ASSERT(t->head == t->tail);
    if (write_all(t->fd, t->tail->events, t->tail->n * sizeof(cp_event),
                  (off_t)(t->spilled * sizeof(cp_event)))) {
      t->dropped += t->tail->n;
      t->count -= t->tail->n;
      t->tail->n = 0;
      return cp_error_set(CPROTON_EIO, "trace spill write failed: %s",
                          strerror(errno));
    }
    t->spilled += t->tail->n;
    t->tail->n = 0;
    return CPROTON_OK;
  }
  chunk *c = malloc(sizeof *c);
  if (!c)
    return CPROTON_ENOMEM;
  c->next = NULL;
  c->n = 0;
  if (t->tail)
    t->tail->next = c;
  else
    t->head = c;
  t->tail = c;
  return CPROTON_OK;
}

int cp_trace_append(cp_trace *t, const cp_event *e) {
  int rc = CPROTON_OK;
  pthread_mutex_lock(&t->lock);
  if (t->count >= CP_TRACE_MAX_EVENTS)
    rc = CPROTON_ELIMIT;
  else if (!t->tail || t->tail->n == BUF_EVENTS)
    rc = make_room(t);
  if (rc == CPROTON_OK) {
    CP_ASSERT(t->tail && t->tail->n < BUF_EVENTS); /* make_room made room */
    clean_copy(&t->tail->events[t->tail->n++], e);
    t->count++;
  } else {
    t->dropped++;
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

/* Copies up to `max` events from append position `at` into `buf`, under
 * the lock: positions below `spilled` are in the spill file, the rest in
 * the buffers (one reused buffer once spilling works, else a list that only
 * grows). Returns the number copied (0: nothing at `at` any more) or -1 on
 * a read error. A reader never holds the lock while its callback runs, so
 * an append (a late scope exit, a kernel record) waits one copy at most. */
static long copy_at(cp_trace *t, size_t at, cp_event *buf, size_t max) {
  long n = 0;
  pthread_mutex_lock(&t->lock);
  size_t left = at < t->count ? t->count - at : 0;
  size_t want = left < max ? left : max;
  if (want && at < t->spilled) {
    size_t k = t->spilled - at < want ? t->spilled - at : want;
    ssize_t got = pread(t->fd, buf, k * sizeof *buf, (off_t)(at * sizeof *buf));
    n = got == (ssize_t)(k * sizeof *buf) ? (long)k : -1;
  } else if (want) {
    size_t skip = at - t->spilled;
    const chunk *c = t->head;
    while (c && skip >= c->n) {
      skip -= c->n;
      c = c->next;
    }
    size_t k = c ? c->n - skip : 0;
    k = k < want ? k : want;
    if (k)
      memcpy(buf, c->events + skip, k * sizeof *buf);
    n = (long)k;
  }
  pthread_mutex_unlock(&t->lock);
  return n;
}

int cp_trace_each(const cp_trace *ct, int (*fn)(void *, const cp_event *),
                  void *user) {
  cp_trace *t = (cp_trace *)ct; /* the lock is not part of the trace's value */
  cp_event *buf = malloc(READ_EVENTS * sizeof *buf);
  if (!buf)
    return cp_error_set(CPROTON_ENOMEM, "out of memory reading a trace");
  pthread_mutex_lock(&t->lock);
  size_t end = t->count; /* the events held when the read began */
  pthread_mutex_unlock(&t->lock);
  int rc = 0;
  for (size_t at = 0; at < end && !rc;) {
    size_t max = end - at < READ_EVENTS ? end - at : READ_EVENTS;
    long n = copy_at(t, at, buf, max);
    if (n < 0)
      rc = cp_error_set(CPROTON_EIO, "trace spill read failed");
    if (n <= 0)
      break;
    for (long i = 0; i < n && !rc; i++) {
      cp_event_align(&buf[i]); /* regions move onto their CUPTI kernel */
      rc = fn(user, &buf[i]);
    }
    at += (size_t)n;
  }
  free(buf);
  return rc;
}

static size_t read_locked(const cp_trace *ct, const size_t *field) {
  cp_trace *t = (cp_trace *)ct;
  pthread_mutex_lock(&t->lock);
  size_t v = *field;
  pthread_mutex_unlock(&t->lock);
  return v;
}

size_t cp_trace_count(const cp_trace *t) { return read_locked(t, &t->count); }
size_t cp_trace_dropped(const cp_trace *t) { return read_locked(t, &t->dropped); }
size_t cp_trace_spilled(const cp_trace *t) { return read_locked(t, &t->spilled); }
