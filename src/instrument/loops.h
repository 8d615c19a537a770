/* instrument/loops.h -- whether a kernel's record markers can repeat
 * (cp_ptx_records_in_loop), for exact buffer sizing. */
#ifndef CP_INSTRUMENT_LOOPS_H
#define CP_INSTRUMENT_LOOPS_H

#include <stddef.h>

#include "instrument/ptx_read.h"

/* Sets *in_loop to 1 when a record site of `k` lies inside a loop of its
 * body (between a label and a later branch back to it) or the body has an
 * indirect branch, else 0. Returns 0 or ENOMEM. */
int cp_ptx_records_in_loop(const char *text, size_t size, const cp_ptx_kernel *k, int *in_loop);

#endif
