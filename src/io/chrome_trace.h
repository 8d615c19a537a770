/* io/chrome_trace.h -- a session's timeline as Chrome trace-event JSON
 * (docs/formats.md), readable by Perfetto and chrome://tracing
 * (cp_chrome_trace_*). */
#ifndef CP_IO_CHROME_TRACE_H
#define CP_IO_CHROME_TRACE_H

#include "core/data.h"
#include "core/trace.h"
#include "io/sink.h"

/* Streams every event of `t` into `s`: one lane per CPU thread (scopes),
 * one per (device, stream) (kernels), flow arrows launch -> kernel, and
 * metadata naming processes and lanes. Times are microseconds relative to
 * the earliest event. `d` is unused today (kept for per-node metrics in
 * args). Errors: ENOMEM. */
int cp_chrome_trace_write(cp_sink *s, const cp_trace *t, const cp_data *d);

#endif
