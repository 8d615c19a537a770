/* backend/fake/fake.h -- a deterministic test double for the backend
 * interface (cp_fake_*): launches are captured on the calling thread like
 * CUPTI's launch callback does, and delivered on flush like activity
 * buffers, so core, io and tool tests run without a GPU. */
#ifndef CP_BACKEND_FAKE_H
#define CP_BACKEND_FAKE_H

#include <stdint.h>

/* Records a launch of `kernel` on `device`/`stream` taking `duration_ns`;
 * its record is delivered at the next flush with start times that advance
 * deterministically. Errors: ENOMEM. Thread-safe. */
int cp_fake_launch(const char *kernel, uint64_t duration_ns, uint32_t device,
                   uint32_t stream);

/* Registers a fake device 0 (arch 90, 132 SMs) so device info appears. */
void cp_fake_add_device(uint32_t id);

#endif
