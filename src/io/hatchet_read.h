/* io/hatchet_read.h -- the Hatchet ("literal" JSON) tree reader
 * (cp_hatchet_read_*). Schema in docs/formats.md, limits in docs/viewer.md. */
#ifndef CP_IO_HATCHET_READ_H
#define CP_IO_HATCHET_READ_H

#include "io/hatchet_read_json.h"
#include "io/profile_model.h"

/* Parses one whole document `[root_node, device_info?]` from `lx` into the
 * empty profile `p` and builds its child index. Returns CPROTON_OK or
 * EPARSE/ELIMIT/EIO/ENOMEM with a "name:line:col: ..." message. On failure
 * `p` holds partial data and must only be freed. */
int cp_hatchet_read_document(cp_json_lexer *lx, cproton_profile *p);

#endif
