/* backend/cupti/pool.c -- a mutex-protected stack of equal-size buffers.
 * Invariant: n_free + n_out == n_allocated <= n_max.
 * Not a hot path: one take/give per filled activity buffer (megabytes).
 * Called by backend/cupti/cupti_backend.c's buffer callbacks. */
#include <pthread.h>
#include <stdlib.h>

#include "backend/cupti/pool.h"
#include "core/check.h"
#include "core/error.h"

struct cp_pool {
  pthread_mutex_t lock;
  size_t size, n_max, n_allocated, n_free;
  uint8_t **free_list; /* n_max slots */
};

static uint8_t *alloc_buffer(size_t size) {
  void *p = NULL;
  return posix_memalign(&p, 64, size) == 0 ? p : NULL;
}

cp_pool *cp_pool_new(size_t size, size_t n_initial, size_t n_max) {
  if (n_max < 1)
    n_max = 1;
  if (n_initial > n_max)
    n_initial = n_max;
  cp_pool *p = calloc(1, sizeof *p);
  if (p)
    p->free_list = calloc(n_max, sizeof *p->free_list);
  if (!p || !p->free_list) {
    free(p);
    cp_error_set(CPROTON_ENOMEM, "out of memory for the activity buffer pool");
    return NULL;
  }
  pthread_mutex_init(&p->lock, NULL);
  p->size = (size + 7) & ~(size_t)7;
  p->n_max = n_max;
  while (p->n_free < n_initial) {
    uint8_t *b = alloc_buffer(p->size);
    if (!b) {
      cp_pool_free(p);
      cp_error_set(CPROTON_ENOMEM,
                   "out of memory for %zu activity buffers of "
                   "%zu bytes",
                   n_initial, size);
      return NULL;
    }
    p->free_list[p->n_free++] = b;
    p->n_allocated++;
  }
  return p;
}

void cp_pool_free(cp_pool *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->n_free; i++)
    free(p->free_list[i]);
  pthread_mutex_destroy(&p->lock);
  free(p->free_list);
  free(p);
}

uint8_t *cp_pool_take(cp_pool *p) {
  pthread_mutex_lock(&p->lock);
  uint8_t *b = NULL;
  if (p->n_free) {
    b = p->free_list[--p->n_free];
  } else if (p->n_allocated < p->n_max && (b = alloc_buffer(p->size))) {
    p->n_allocated++;
  }
  CP_ASSERT(p->n_free <= p->n_allocated && p->n_allocated <= p->n_max);
  pthread_mutex_unlock(&p->lock);
  return b;
}

void cp_pool_give(cp_pool *p, uint8_t *buf) {
  if (!buf)
    return;
  pthread_mutex_lock(&p->lock);
  if (p->n_free < p->n_max)
    p->free_list[p->n_free++] = buf;
  else
    free(buf); /* not ours: cannot happen with take/give pairs */
  CP_ASSERT(p->n_free <= p->n_allocated); /* n_free + n_out == n_allocated */
  pthread_mutex_unlock(&p->lock);
}

size_t cp_pool_buffer_size(const cp_pool *p) { return p->size; }

size_t cp_pool_out(cp_pool *p) {
  pthread_mutex_lock(&p->lock);
  size_t n = p->n_allocated - p->n_free;
  pthread_mutex_unlock(&p->lock);
  return n;
}
