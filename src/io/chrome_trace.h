/* io/chrome_trace.h -- a session's timeline as Chrome trace-event JSON
 * (docs/formats.md), readable by Perfetto and chrome://tracing
 * (cp_chrome_trace_*). */
#ifndef CP_IO_CHROME_TRACE_H
#define CP_IO_CHROME_TRACE_H

#include "core/data.h"
#include "core/trace.h"
#include "io/sink.h"

/* Proton 3.6's layout ("chrome_trace"): one "X" event per kernel, "cat"
 * "kernel", on the lane of its (device, stream), with its calling context
 * in args.call_stack (["ROOT", ..., kernel]), plus the regions of
 * intra-kernel traces; no CPU scopes, flows or lane names (Proton's test
 * suite counts the events). Unlike Proton, which writes one JSON object per
 * stream on separate lines, the file is one JSON object. Times are
 * microseconds relative to the earliest event. `d` is unused today (kept for
 * per-node metrics in args). Errors: ENOMEM. */
int cp_chrome_trace_write(cp_sink *s, const cp_trace *t, cp_data *d);

/* Proton 3.9's layout, which cp_chrome_trace_write writes instead while the
 * library follows Proton 3.9 (core/compat.h) and the trace holds no
 * intra-kernel regions: CPU scopes ("scope", or "metric" with the scope's
 * metrics), flows launch->kernel, kernels with args.call_stack, lane
 * metadata, "baseTimeNanoseconds" (io/chrome_trace39.c has the layout and
 * how it differs from Proton's). `d` (locked while read) gives the metrics;
 * NULL writes none. Errors: ENOMEM, EIO reading a spilled trace. */
int cp_chrome_trace39_write(cp_sink *s, const cp_trace *t, cp_data *d);

/* cproton's full timeline ("chrome_timeline"): the above, plus one lane per
 * CPU thread with its scopes, flow arrows launch -> kernel, and metadata
 * naming processes and lanes. Errors: ENOMEM. */
int cp_chrome_trace_write_timeline(cp_sink *s, const cp_trace *t,
                                   const cp_data *d);

/* Writes `"call_stack":["ROOT", ..., node]` for context node `node_id`
 * (the key both Chrome layouts give kernels and scopes). */
void cp_chrome_put_stack(cp_sink *s, uint32_t node_id);

/* Writes one hardware-counter sample (a CP_EVENT_COUNTER event) as a
 * Chrome counter event, `{"ph":"C","cat":"counter","name":N,"pid":P,
 * "ts":T,"args":{"value":V}}`, T in us since `t0`: N is the counter's name
 * on the GPU's own pid (`with_device` 0), or "GPU <d> <counter>" where
 * every lane shares pid 0 (`with_device` 1). A viewer draws one track per
 * (pid, name), the value held until the next sample. */
void cp_chrome_put_counter(cp_sink *s, const cp_event *e, uint32_t pid,
                           int with_device, uint64_t t0);

#endif
