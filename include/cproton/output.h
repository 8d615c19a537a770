/* cproton/output.h -- writing an output file the way cproton writes its
 * profiles: never through a link, never over anything but a regular file,
 * never over one of the inputs, never partially. Included by
 * <cproton/cproton.h>; the tools (cproton-viewer --svg, cproton-instrument
 * -o) write through it.
 *
 *   cproton_output *o;
 *   const char *in[] = {"run.hatchet"};
 *   if (cproton_output_open("run.svg", in, 1, &o) != CPROTON_OK)
 *     return fprintf(stderr, "%s\n", cproton_last_error()), 1;
 *   fputs("<svg/>", cproton_output_stream(o));
 *   if (cproton_output_close(o, 0) != CPROTON_OK)   // renamed into place
 *     fprintf(stderr, "%s\n", cproton_last_error());
 *
 * The bytes go to a temporary sibling "<path>.tmp.<pid>.<random hex>"
 * created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW: a name that exists, a
 * planted symbolic link included, is skipped, never opened), with the
 * permission bits of the regular file it will replace or 0666 less the
 * umask, and renamed over `path` only when every write succeeded.
 * Threads: distinct handles may be used on distinct threads at once. */
#ifndef CPROTON_OUTPUT_H
#define CPROTON_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "cproton/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An output file being written (opaque; cproton_output_close frees it). */
typedef struct cproton_output cproton_output;

/* Opens `path` for writing through a new temporary sibling. Refuses a
 * `path` that exists and is not a regular file (a directory, device node,
 * FIFO, socket or symbolic link: nothing but regular files is ever
 * replaced) and a `path` that is the same file (device and inode, links
 * followed) as one of the `n_inputs` paths in `inputs` (NULL entries are
 * skipped; `inputs` may be NULL when `n_inputs` is 0). On success `*out`
 * is a handle the caller owns until cproton_output_close. Errors: EINVAL
 * (NULL arguments, a refused path: the message names it and what it is, or
 * the input it equals), EIO (the temporary could not be created), ENOMEM. */
CPROTON_API int cproton_output_open(const char *path,
                                    const char *const *inputs,
                                    size_t n_inputs, cproton_output **out);

/* The stream to write to, owned by `o` (never fclose it); NULL for NULL. */
CPROTON_API FILE *cproton_output_stream(cproton_output *o);

/* Closes the stream. Unless `discard` is non-zero or a write failed, checks
 * `path` again (absent or a regular file) and renames the temporary over
 * it; otherwise removes the temporary, leaving `path` as it was. Frees `o`
 * in every case; NULL returns CPROTON_OK. Errors: EIO (a write, the flush
 * or the rename failed; the message names the path), EINVAL (`path` became
 * something other than a regular file meanwhile). */
CPROTON_API int cproton_output_close(cproton_output *o, int discard);

#ifdef __cplusplus
}
#endif

#endif
