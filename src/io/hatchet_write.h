/* io/hatchet_write.h -- a session's tree as a Hatchet "literal" JSON
 * profile, the format Proton writes (docs/formats.md) (cp_hatchet_*). */
#ifndef CP_IO_HATCHET_WRITE_H
#define CP_IO_HATCHET_WRITE_H

#include "core/data.h"
#include "io/sink.h"

/* Writes `[root, device_info]` for the nodes `d` touched and their
 * ancestors. Keys are sorted and indented by 4 like Proton's files. ROOT
 * carries Proton 3.6's inclusive-metric hints: a 0 for every flexible
 * metric not marked "(exc)" (properties included) that a written node
 * holds, and, with `kernel_root` (a kernel-timing session), zeroed `count`
 * and `time (ns)` when some node has kernel metrics; a session with only
 * "(exc)" metrics and no kernel has an empty ROOT (Proton's
 * test_scope_exclusive). Holds the data lock while reading metrics.
 * Errors: ENOMEM; sink errors surface at cp_sink_close. */
int cp_hatchet_write(cp_sink *s, cp_data *d, int kernel_root);

#endif
