/* core/device.h -- the devices seen by backends (cp_device_*). Device info
 * goes into every tree profile (docs/formats.md) and feeds the viewer's `util`. */
#ifndef CP_CORE_DEVICE_H
#define CP_CORE_DEVICE_H

#include <stdint.h>

#include "core/data.h"

#define CP_MAX_DEVICES 64

typedef struct cp_device_info {
  cp_device_type type;
  uint32_t id;
  char arch[16];              /* "90" for CUDA 9.0, "gfx942" for HIP */
  uint32_t num_sms;
  uint64_t clock_rate;        /* kHz */
  uint64_t memory_clock_rate; /* kHz */
  uint32_t bus_width;         /* bits */
} cp_device_info;

/* Records (or refreshes) a device. Thread-safe; not a hot path. Devices
 * beyond CP_MAX_DEVICES are ignored with a warning. */
void cp_device_register(const cp_device_info *info);

/* Copies up to `max` known devices into `out`, sorted by (type, id);
 * returns how many. Thread-safe. */
int cp_device_list(cp_device_info *out, int max);

/* Forgets every device (tests). */
void cp_device_reset(void);

#endif
