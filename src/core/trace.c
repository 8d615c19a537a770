/* core/trace.c -- an append-only list of timeline events in fixed chunks.
 *
 * Invariant: chunks are never moved, so appends cost one copy; a cap
 * (CP_TRACE_MAX_EVENTS) bounds memory and counts what it drops instead of
 * failing the program. Not on the launch path: scope events come from user
 * threads in trace mode, kernel events from CUPTI's thread. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/trace.h"

#define CHUNK_EVENTS 4096
#define CP_TRACE_MAX_EVENTS (64u << 20)

typedef struct chunk {
  struct chunk *next;
  size_t n;
  cp_event events[CHUNK_EVENTS];
} chunk;

struct cp_trace {
  pthread_mutex_t lock;
  chunk *head, *tail;
  size_t count, dropped;
};

cp_trace *cp_trace_new(void) {
  cp_trace *t = calloc(1, sizeof *t);
  if (t)
    pthread_mutex_init(&t->lock, NULL);
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
  pthread_mutex_destroy(&t->lock);
  free(t);
}

void cp_trace_clear(cp_trace *t) {
  pthread_mutex_lock(&t->lock);
  free_chunks(t->head);
  t->head = t->tail = NULL;
  t->count = t->dropped = 0;
  pthread_mutex_unlock(&t->lock);
}

int cp_trace_append(cp_trace *t, const cp_event *e) {
  int rc = CPROTON_OK;
  pthread_mutex_lock(&t->lock);
  if (t->count >= CP_TRACE_MAX_EVENTS) {
    t->dropped++;
    rc = CPROTON_ELIMIT;
  } else if (!t->tail || t->tail->n == CHUNK_EVENTS) {
    chunk *c = malloc(sizeof *c);
    if (!c) {
      t->dropped++;
      rc = CPROTON_ENOMEM;
    } else {
      c->next = NULL;
      c->n = 0;
      if (t->tail)
        t->tail->next = c;
      else
        t->head = c;
      t->tail = c;
    }
  }
  if (rc == CPROTON_OK) {
    t->tail->events[t->tail->n++] = *e;
    t->count++;
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

int cp_trace_each(const cp_trace *t, int (*fn)(void *, const cp_event *),
                  void *user) {
  for (const chunk *c = t->head; c; c = c->next)
    for (size_t i = 0; i < c->n; i++) {
      int rc = fn(user, &c->events[i]);
      if (rc)
        return rc;
    }
  return 0;
}

size_t cp_trace_count(const cp_trace *t) { return t->count; }
size_t cp_trace_dropped(const cp_trace *t) { return t->dropped; }
