/* perfmap.h — names of JIT-compiled code from a process's perf map file (/tmp/perf-PID.map, as
 * written by Node --perf-basic-prof, Python -X perf, Java agents, LuaJIT...).
 *
 * Owns: parsing "START SIZE NAME" lines (hex, no 0x needed) into a sorted table, and reading the
 * file of a process: /tmp/perf-NSPID.map inside the process's root (NSPID: its pid in its own pid
 * namespace), a regular file that is not a symbolic link, owned by root or by the process's
 * owner, of at most PERFMAP_MAX_BYTES (read that far, no further) and PERFMAP_MAX_LINES entries.
 * Must not: print, block on a FIFO, or be consulted for addresses that a file-backed mapping
 * covers (the caller's rule: a perf map names anonymous code only).
 */
#ifndef DIAG_PERFMAP_H
#define DIAG_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define PERFMAP_MAX_BYTES ((size_t)64 << 20)
#define PERFMAP_MAX_LINES ((size_t)1 << 20)
#define PERFMAP_MAX_NAME 512 /* longer names are cut */

struct perfmap;

/* The entries of a perf map text of len bytes (not NUL-terminated), at most max_lines of them.
 * Malformed lines and empty ranges are skipped; where entries overlap, the later line wins (a JIT
 * reuses memory). Never NULL. */
struct perfmap *perfmap_parse(const char *text, size_t len, size_t max_lines);
/* The perf map of process pid, read by r, or NULL when it has none (or none that passes the checks). */
struct tfile_reader;
struct perfmap *perfmap_read(struct tfile_reader *r, int pid);
/* The name of the entry covering addr, or NULL. */
const char *perfmap_lookup(const struct perfmap *pm, uint64_t addr);
size_t perfmap_count(const struct perfmap *pm);
void perfmap_free(struct perfmap *pm);

#endif
