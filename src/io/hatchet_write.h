/* io/hatchet_write.h -- a session's tree as a Hatchet "literal" JSON
 * profile, the format Proton writes (docs/formats.md) (cp_hatchet_*). */
#ifndef CP_IO_HATCHET_WRITE_H
#define CP_IO_HATCHET_WRITE_H

#include "core/data.h"
#include "io/sink.h"

/* Writes `[root, device_info]` for the nodes `d` touched and their
 * ancestors. Keys are sorted and indented by 4 like Proton's files. With
 * `kernel_root` (a kernel-timing session) the root carries zeroed `count`
 * and `time (ns)` when some node has kernel metrics, as Proton writes its
 * inclusive-metric hints; a session that saw no kernel has none (Proton's
 * test_scope_exclusive checks an empty ROOT). Holds the data
 * lock while reading metrics. Errors: ENOMEM; sink errors surface at
 * cp_sink_close. */
int cp_hatchet_write(cp_sink *s, cp_data *d, int kernel_root);

#endif
