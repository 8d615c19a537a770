/* io/output.h -- creating output files safely (cp_output_*; the public
 * cproton_output_* of <cproton/output.h> wrap it for the tools).
 *
 * Every file cproton writes (profiles, traces, merged traces, the tools'
 * outputs) is written to a temporary sibling that this module creates
 * exclusively, then renamed over the destination. The rules
 * (docs/guarantees.md, "File safety"):
 *  - the temporary is a new name "<path>.tmp.<pid>.<8 random hex>", opened
 *    with O_CREAT|O_EXCL|O_NOFOLLOW: an existing file or a symbolic link
 *    planted there makes the next candidate be tried, never opened;
 *  - it gets the permission bits of the regular file it replaces, or 0666
 *    less the umask (applied by the kernel) for a new file;
 *  - the destination must be absent or a regular file: a directory, device
 *    node, FIFO, socket or symbolic link is refused (EINVAL naming it), at
 *    open and again just before the rename;
 *  - the caller removes the temporary on any failure (cp_output_discard). */
#ifndef CP_IO_OUTPUT_H
#define CP_IO_OUTPUT_H

#include <stddef.h>

/* Refuses `path` unless it is absent or a regular file (lstat: a symbolic
 * link is refused, not followed). Errors: EINVAL naming the path and what
 * it is, EIO (stat failed otherwise). */
int cp_output_check(const char *path);

/* Refuses `path` when it is the same file (st_dev, st_ino, links
 * followed) as one of the `n_inputs` paths of `inputs` (NULL entries
 * skipped; an input that cannot be stat'ed is skipped: reading it fails
 * later with its own message). Errors: EINVAL naming both. */
int cp_output_not_input(const char *path, const char *const *inputs,
                        size_t n_inputs);

/* cp_output_check, then creates the temporary sibling of `path` as above.
 * `*tmp_out` (malloc'ed, the caller frees it) names it, `*fd_out` is open
 * for writing (O_CLOEXEC; the caller closes it). Errors: EINVAL, EIO
 * naming the temporary, ENOMEM. */
int cp_output_create(const char *path, char **tmp_out, int *fd_out);

/* Renames `tmp` over `path` after checking `path` again. On failure `tmp`
 * stays (the caller discards it). Errors: EINVAL, EIO naming `path`. */
int cp_output_replace(const char *tmp, const char *path);

/* Removes the temporary `tmp` (NULL: nothing). */
void cp_output_discard(const char *tmp);

#endif
