/* core/device.c -- a small table of the devices backends have seen.
 * Invariant: at most one entry per (type, id). Not a hot path: backends
 * register a device once, when they first see it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/device.h"
#include "core/log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cp_device_info devices[CP_MAX_DEVICES];
static int n_devices;

void cp_device_register(const cp_device_info *info) {
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < n_devices &&
         !(devices[i].type == info->type && devices[i].id == info->id))
    i++;
  if (i < CP_MAX_DEVICES) {
    devices[i] = *info;
    if (i == n_devices)
      n_devices++;
  }
  pthread_mutex_unlock(&lock);
  if (i >= CP_MAX_DEVICES)
    cp_warn("more than %d devices; device %u not described", CP_MAX_DEVICES,
            info->id);
}

static int by_type_id(const void *a, const void *b) {
  const cp_device_info *x = a, *y = b;
  if (x->type != y->type)
    return (int)x->type - (int)y->type;
  return x->id < y->id ? -1 : x->id > y->id;
}

int cp_device_list(cp_device_info *out, int max) {
  pthread_mutex_lock(&lock);
  int n = n_devices < max ? n_devices : max;
  memcpy(out, devices, (size_t)n * sizeof *out);
  pthread_mutex_unlock(&lock);
  qsort(out, (size_t)n, sizeof *out, by_type_id);
  for (int i = 1; i < n; i++) /* at most one entry per (type, id) */
    CP_ASSERT(by_type_id(&out[i - 1], &out[i]) < 0);
  return n;
}

void cp_device_reset(void) {
  pthread_mutex_lock(&lock);
  n_devices = 0;
  pthread_mutex_unlock(&lock);
}
