/* backend/fake/fake.c -- the fake backend: queued launches, delivered on
 * flush with a deterministic clock. A test double, not a product path.
 * Invariant: records are delivered in launch order. Not a hot path. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/fake/fake.h"
#include "core/clock.h"
#include "core/device.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/native.h"
#include "core/session.h"

typedef struct pending {
  cp_launch_site site;
  char *name;
  uint64_t duration_ns;
  uint32_t device, stream, correlation;
} pending;

/* The instance: all of the backend's state. */
static struct {
  pthread_mutex_t lock;
  pending *queue;
  size_t n_queue, cap_queue;
  uint64_t clock_ns;
  uint32_t next_correlation;
} self = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_correlation = 1};

int cp_fake_launch(const char *kernel, uint64_t duration_ns, uint32_t device,
                   uint32_t stream) {
  pending p = {.duration_ns = duration_ns, .device = device, .stream = stream};
  cp_native_floor(__builtin_return_address(0)); /* the caller is the app */
  cp_session_capture(&p.site);
  if (!p.site.sessions)
    return CPROTON_OK;
  if (!(p.name = strdup(kernel)))
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  pthread_mutex_lock(&self.lock);
  void *grown;
  if (self.n_queue == self.cap_queue) {
    if (cp_grow(self.queue, &self.cap_queue, self.n_queue + 1,
                sizeof *self.queue, 64, &grown)) {
      pthread_mutex_unlock(&self.lock);
      free(p.name);
      return cp_error_set(CPROTON_ENOMEM, "out of memory");
    }
    self.queue = grown;
  }
  p.correlation = self.next_correlation++;
  self.queue[self.n_queue++] = p;
  pthread_mutex_unlock(&self.lock);
  return CPROTON_OK;
}

void cp_fake_add_device(uint32_t id) {
  cp_device_info d = {.type = CP_DEVICE_CUDA, .id = id, .arch = "90",
                      .num_sms = 132, .clock_rate = 1980000,
                      .memory_clock_rate = 3201000, .bus_width = 6016};
  cp_device_register(&d);
}

static int fake_available(void) { return 1; }
static void fake_probe(cp_backend_probe *out) {
  *out = (cp_backend_probe){.runs = 1};
}
/* Takes any mode (no parse_mode): sessions compare the strings. */
static int fake_start(const cp_backend_config *config) {
  (void)config;
  return CPROTON_OK;
}

static int fake_flush(void) {
  pthread_mutex_lock(&self.lock);
  int rc = CPROTON_OK;
  /* Kernels run after their launch, on the shared timebase; durations stay
   * deterministic. */
  uint64_t now = cp_clock_now_ns();
  if (self.clock_ns < now)
    self.clock_ns = now;
  for (size_t i = 0; i < self.n_queue; i++) {
    pending *p = &self.queue[i];
    cp_kernel_record r = {.name = p->name, .start_ns = self.clock_ns,
                          .end_ns = self.clock_ns + p->duration_ns,
                          .device_id = p->device, .stream_id = p->stream,
                          .correlation_id = p->correlation,
                          .device_type = CP_DEVICE_CUDA};
    self.clock_ns += p->duration_ns + 1000;
    int r_rc = cp_session_deliver_kernel(&p->site, &r);
    rc = rc ? rc : r_rc;
    free(p->name);
  }
  self.n_queue = 0;
  pthread_mutex_unlock(&self.lock);
  return rc;
}

static void fake_stop(void) { fake_flush(); }

const cp_backend_ops cp_fake_backend = {
    .name = "fake",
    .available = fake_available,
    .probe = fake_probe,
    .start = fake_start,
    .flush = fake_flush,
    .stop = fake_stop,
    .times_kernels = 1,
};
