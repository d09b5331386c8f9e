/* outfile.h — files that diagnose writes at the user's request (--output, --folded, --flamegraph,
 * --pprof), possibly as root on behalf of a sudo user.
 *
 * Owns: creating such a file without following a symbolic link, without overwriting anything
 * unless asked to (--force), and so that the path never names an incomplete file: the content
 * goes to a temporary file in the same directory, renamed to the path when complete (a reader
 * never sees half a file, a killed run leaves no empty file that the next run would refuse, a
 * symlink at the path is replaced, never followed); mode 0644, and, under sudo (euid 0, SUDO_UID
 * and SUDO_GID set), the invoking user's rights: the path is created, replaced or removed only
 * where that user could do it, and the file is theirs.
 * Must not: print, decide what goes into the file, or write anything but a regular file: an
 * existing directory, FIFO, socket or device at the path is refused.
 */
#ifndef DIAG_OUTFILE_H
#define DIAG_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/util.h"

struct outfile;

/* Prepares the file for path: checks what is there now and creates the temporary file next to it
 * (".NAME.XXXXXX", O_CREAT|O_EXCL|O_NOFOLLOW). label names the source of the path in messages,
 * e.g. "--output" ("--output PATH: why"); NULL gives "PATH: why".
 *   force false: anything already at path (file, symlink, directory...) is refused now: "exists;
 *                use --force to overwrite"; and at outfile_close, what appeared there meanwhile
 *                is not replaced either.
 *   force true:  a directory, FIFO, socket or device at path is refused; a regular file or a
 *                symlink there is replaced (not written through) by outfile_close.
 * Under sudo, the directory must be writable by the invoking user ("Permission denied"
 * otherwise), and --force cannot replace what that user could not (sticky /tmp).
 * The path gets its file only from outfile_close; a run that ends without content calls
 * outfile_discard, which removes the temporary file.
 * Returns NULL with err set (DIAG_EXIT_USAGE; DIAG_EXIT_RUNTIME for chown/chmod) on failure.
 */
struct outfile *outfile_create(const char *label, const char *path, bool force,
			       struct diag_err *err);
/* Where to write the content. Write errors are reported by outfile_close. */
FILE *outfile_stream(const struct outfile *of);
/* Completes the file: flushes and fsyncs it, then renames it to the target (without force, only
 * if nothing appeared there meanwhile: "appeared while the file was written; not replaced"). On
 * any failure (including an earlier write error on the stream) the temporary file is removed and
 * -1 returned with err set (DIAG_EXIT_RUNTIME). Frees of in every case; of NULL returns 0. */
int outfile_close(struct outfile *of, struct diag_err *err);
/* Abandons the file: removes what outfile_create made, frees of. NULL is a no-op. */
void outfile_discard(struct outfile *of);

#endif
