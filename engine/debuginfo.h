/* debuginfo.h — where a mapped ELF file's symbols can come from besides the file itself.
 *
 * Owns: opening a path inside a process's root directory without leaving it (containers: the
 * target's absolute symlinks resolve inside its root, never on the host); an ELF file's GNU
 * build-id and .gnu_debuglink; finding its separate debug file on local paths
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

/* Opens the absolute path inside the root directory of process pid (pid <= 0: our own root) as
 * if chrooted there: symlinks and ".." never leave that root (openat2 RESOLVE_IN_ROOT), plus
 * `resolve` (more RESOLVE_* flags). Returns the fd, or -1 with errno set. */
int root_open(int pid, const char *path, int flags, uint64_t resolve);

/* The GNU build-id note of elf: copies at most max bytes to id and returns its length (0: none). */
size_t elf_build_id(Elf *elf, unsigned char *id, size_t max);

/* The verified separate debug file of elf, the file mapped at `path` in process pid (pid <= 0:
 * a path of our own file system): an Elf handle over *fd (close both when done), or NULL. The
 * target's root is searched first, then ours. Candidates larger than DEBUGINFO_MAX_BYTES are not
 * read. */
#define DEBUGINFO_MAX_BYTES ((uint64_t)1 << 30)
Elf *debuginfo_open(Elf *elf, int pid, const char *path, int *fd);

#endif
