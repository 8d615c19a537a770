/* io/hatchet_msgpack.h -- a session's tree as Hatchet MessagePack, the
 * "hatchet_msgpack" format of Proton 3.9 (cp_hatchet_msgpack_*). */
#ifndef CP_IO_HATCHET_MSGPACK_H
#define CP_IO_HATCHET_MSGPACK_H

#include "core/data.h"
#include "io/sink.h"

/* Writes the document cp_hatchet_write (io/hatchet_write.h) writes, as
 * MessagePack, with Proton 3.9's two rules for ROOT and devices: zeroed
 * kernel metrics on ROOT and device entries only when kernels were
 * recorded (`kernel_root` is therefore ignored). Holds the data lock while
 * reading metrics. Errors: ENOMEM; sink errors surface at cp_sink_close. */
int cp_hatchet_msgpack_write(cp_sink *s, cp_data *d, int kernel_root);

#endif
