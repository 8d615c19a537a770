/* backend/cupti/pool.h -- the activity-buffer pool (cp_pool_*): CUPTI asks
 * for a buffer (bufferRequested) whenever one fills, and hands it back full
 * (bufferCompleted). Buffers are allocated at start and recycled; the pool
 * grows up to a fixed maximum, past which a request is refused and CUPTI
 * counts the records it could not store as dropped. */
#ifndef CP_BACKEND_CUPTI_POOL_H
#define CP_BACKEND_CUPTI_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_pool cp_pool;

/* A pool of `n_initial` buffers of `size` bytes (8-byte aligned), growing to
 * at most `n_max`. NULL when out of memory (message set). */
cp_pool *cp_pool_new(size_t size, size_t n_initial, size_t n_max);

/* Frees the pool and the buffers it holds. Call only when no buffer is out
 * (after CUPTI's final flush). NULL is fine. */
void cp_pool_free(cp_pool *p);

/* A free buffer, or NULL when the pool is at its maximum and all are out.
 * Thread-safe (mutex; called once per filled buffer, not per launch). */
uint8_t *cp_pool_take(cp_pool *p);

/* Returns a buffer obtained from cp_pool_take. Thread-safe. */
void cp_pool_give(cp_pool *p, uint8_t *buf);

/* The size of each buffer. */
size_t cp_pool_buffer_size(const cp_pool *p);

/* Buffers currently handed out. */
size_t cp_pool_out(cp_pool *p);

#endif
