/* debuginfo.h — where a mapped ELF file's symbols and CFI can come from besides the file itself.
 *
 * Owns: an ELF file's GNU build-id and .gnu_debuglink; finding its separate debug file on local
 * paths, inside the target's root then ours (read by tfile.c)
 * (/usr/lib/debug/.build-id/xx/rest.debug; the debuglink name in the file's directory, in its
 * .debug/ subdirectory and under /usr/lib/debug + directory) and checking that it belongs to the
 * file (same build-id, or the debuglink's CRC when there is no build-id to compare).
 * Must not: use the network (no debuginfod), print, or return a debug file that does not match.
 */
#ifndef DIAG_DEBUGINFO_H
#define DIAG_DEBUGINFO_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "target/tfile.h"

/* The GNU build-id note of elf: copies at most max bytes to id and returns its length (0: none). */
size_t elf_build_id(Elf *elf, unsigned char *id, size_t max);

/* The verified separate debug file of elf, the file mapped at `path` in process pid (pid <= 0:
 * a path of our own file system), read by r with flags (TFILE_*): an image (tfile_image_free
 * it), or NULL. The
 * target's root is searched first, then ours. Candidates larger than DEBUGINFO_MAX_BYTES are not
 * used. */
#define DEBUGINFO_MAX_BYTES ((uint64_t)1 << 30)
struct tfile_image *debuginfo_find(struct tfile_reader *r, Elf *elf, int pid, const char *path,
				   unsigned flags);

#endif
