/* tfile.h — the files a target names (its executable and libraries, their separate debug files,
 * its perf map) and a target's /proc files (maps, mem, pagemap), opened and read so that the target can
 * neither steer a root run to another file nor stall it.
 *
 * Owns: the one way such a file is opened, and the reading of it by a helper process that a
 * caller waits for only so long (and of a descriptor of ours whose reading may wait on such a
 * file: tfile_read_fd).
 * - Opening: /proc/PID/map_files/START-END where the mapping exists (the mapped file itself, even
 *   deleted, replaced, bind-mounted over, or in a chroot or another mount namespace), else the
 *   path inside the target's root by openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) (its
 *   symlinks and ".." never leave that root); first as O_PATH, so that nothing but a regular file
 *   is ever opened for reading (a FIFO, socket or device is refused before any open of it runs),
 *   of at most a size cap, with the device and inode the mapping names, on no pseudo file system
 *   (procfs, sysfs, debugfs, tracefs...: a read there has side effects) but for a process's own
 *   /proc files; then reopened read-only and non-blocking through our own descriptor.
 * - Reading: into memory, by a helper process that holds nothing of ours (a FUSE server that has
 *   taken a request makes even SIGKILL wait: a thread of ours stuck there would hold our exit).
 *   An ELF file becomes an image of the parts the engine reads (headers, symbol and string
 *   tables, notes, call frame information), every other section marked SHT_NOBITS, so that
 *   parsing it (libelf, libdw, from memory) never touches the file again; a text file is read
 *   whole (up to a cap). At most TFILE_MAX_IMAGE_BYTES are read of one file, and
 *   TFILE_MAX_READER_BYTES by one reader in all. The helpers are forked by a zygote made with
 *   the reader, before a run maps anything of its own.
 * - Waiting: until the reader's deadline, at most TFILE_WAIT_NS per file while the helper waits in
 *   the kernel (one on a CPU or waiting for one, on a loaded machine, is waited for on), and never
 *   past a signal arriving on the reader's stop descriptor. A helper still waiting then (a FUSE
 *   server that does not answer, a dead NFS server, a disk that takes seconds) is left behind:
 *   nothing else on that file system is read while it is out, and after TFILE_MAX_STALLED such
 *   helpers nothing more is read at all.
 * Must not: parse ELF beyond its headers (libelf does, from the image), follow the network, write
 * any file, print, or hold global state.
 */
#ifndef DIAG_TFILE_H
#define DIAG_TFILE_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/util.h"

#define TFILE_WAIT_NS 1000000000ull         /* the longest wait for one file */
#define TFILE_MAX_STALLED 4                  /* helpers left behind before reading stops */
#define TFILE_MAX_ELF_BYTES ((uint64_t)64 << 30)   /* a file's size (most of it is not read) */
#define TFILE_MAX_IMAGE_BYTES ((uint64_t)512 << 20) /* read of one file: its tables and CFI */
#define TFILE_MAX_READER_BYTES ((uint64_t)2 << 30)  /* read by one reader in all */
#define TFILE_MAX_TEXT_BYTES ((size_t)64 << 20)

/* Which file. */
struct tfile_src {
	int pid;             /* the process that names it; <= 0: a path of our own root */
	uint64_t start, end; /* its mapping in pid (/proc/PID/map_files); end <= start: none */
	const char *path;    /* absolute, as pid names it; may be NULL with a mapping */
	uint64_t dev, ino;   /* the mapping's "major:minor inode" (dev: major << 32 | minor); ino 0:
			      * not checked */
	uint64_t resolve;    /* more RESOLVE_* flags for the path (RESOLVE_NO_SYMLINKS) */
	bool proc;           /* a /proc file (tfile_read_proc): no size, read to its end */
	bool operator_path;  /* a path the operator gave (a recipe's option), in our root: magic
			      * links (/proc/PID/root/..., /proc/PID/exe) are followed */
	bool check_owner;    /* the file must be root's or owner's (a perf map) */
	uid_t owner;
};

/* Opens path inside the root of process pid (pid <= 0: ours) as if chrooted there (symlinks and
 * ".." never leave it; no magic links), plus `resolve`. flags: open(2)'s. Returns the fd or -1
 * with errno set. Blocks as open(2) does: for files a target names, use the reader below. */
int root_open(int pid, const char *path, int flags, uint64_t resolve);

struct tfile_reader;

/* A reader (thread-safe: a run's threads share one). */
struct tfile_reader *tfile_reader_new(void);
void tfile_reader_free(struct tfile_reader *r);
/* From now on no wait goes past deadline (mono_ns(); 0: none). */
void tfile_reader_set_deadline(struct tfile_reader *r, uint64_t deadline_ns);
/* The deadline now (0: none): a reader of a part of the run's time sets its own and puts this back. */
uint64_t tfile_reader_deadline(struct tfile_reader *r);
/* A descriptor that becomes readable when the run is asked to stop (its signalfd; -1: none):
 * a wait ends there, and the signal is left for its owner to read. */
void tfile_reader_set_stop_fd(struct tfile_reader *r, int fd);
/* That descriptor (-1: none), for a caller that waits on something else of the target's (jcmd). */
int tfile_reader_stop_fd(struct tfile_reader *r);
/* Whether a caller's own work between reads (scanning what it read) may go on: 0, or -1 with err
 * (code TFILE_FAIL_WAIT) once the deadline has passed or the stop descriptor is readable, as the
 * next read would fail. Reads nothing, counts nothing in the note. */
int tfile_reader_check(struct tfile_reader *r, struct diag_err *err);
/* What was not read and why, in one line for the report's notes (NULL when everything asked for
 * was read, or failed for reasons of its own: not a regular file, too large, gone). */
char *tfile_reader_note(struct tfile_reader *r);

/* Why a read failed: the file's own fault (it stays unread), or the wait's (a stall, a stop, the
 * deadline: it may be tried again later). */
enum tfile_fail { TFILE_FAIL_FILE = 1, TFILE_FAIL_WAIT = 2 };

/* An ELF file's parts the engine reads, at their file offsets in `bytes` (the rest reads as
 * zeros), the sections not read marked SHT_NOBITS. */
struct tfile_image {
	unsigned char *bytes;        /* a private mapping of memfd */
	size_t size;                 /* the file's size */
	int memfd;                   /* the image, with TFILE_KEEP_MEMFD; else -1 */
	uint64_t dev, ino, mtime_ns; /* of the file read (dev as in struct tfile_src) */
	uint32_t crc;                /* zlib CRC-32 of the whole file, with TFILE_CRC */
	int fd;                      /* with TFILE_KEEP_FD: an O_PATH descriptor of it, else -1 */
};

#define TFILE_CRC 1u        /* also the CRC of the whole file (a .gnu_debuglink check) */
#define TFILE_KEEP_FD 2u    /* keep an O_PATH descriptor (to attach a uprobe to this very file) */
#define TFILE_KEEP_MEMFD 4u /* keep the image's memfd (tfile_image_memfd; else it is closed) */

/* Reads the ELF file src names. 0 and *out, or -1 with err (code: enum tfile_fail). */
int tfile_read_elf(struct tfile_reader *r, const struct tfile_src *src, unsigned flags,
		   struct tfile_image **out, struct diag_err *err);
/* A libelf handle over the image (elf_end it; the image outlives it). */
Elf *tfile_image_elf(struct tfile_image *img);
/* Gives the image's whole pages within [off, off + len) back to the system (they read as zeros
 * after): for an image read with TFILE_KEEP_MEMFD, whose memfd holds them; else nothing. */
void tfile_image_release(struct tfile_image *img, size_t off, size_t len);
/* A descriptor of the image (a memfd: for libraries that want one), or -1. */
int tfile_image_memfd(const struct tfile_image *img);
void tfile_image_free(struct tfile_image *img);

/* Reads the text file src names, its first max bytes at most (NUL-terminated; *len without the NUL; *st
 * *owner gets its owner's uid when not NULL). NULL with err (code: enum tfile_fail) on failure. */
char *tfile_read_text(struct tfile_reader *r, const struct tfile_src *src, size_t max, size_t *len,
		      uid_t *owner, struct diag_err *err);

/* The size and modification time of the file src names (opened as tfile_read_elf would; not
 * read). 0, or -1 with err. */
int tfile_stat(struct tfile_reader *r, const struct tfile_src *src, uint64_t *size,
	       uint64_t *mtime_ns, struct diag_err *err);

/* Reads /proc/PID/NAME (maps, status...: files whose reading takes the process's locks) whole, at
 * most max bytes, NUL-terminated (*len: without the NUL). NULL with err on failure. */
char *tfile_read_proc(struct tfile_reader *r, int pid, const char *name, size_t max, size_t *len,
		      struct diag_err *err);

/* Reads len bytes of process pid's memory at addr (/proc/PID/mem) into buf, at most
 * TFILE_MAX_TEXT_BYTES at once. 0, or -1 with err. A page that is not in memory is brought in to
 * be read (an anonymous one never touched maps the zero page, a swapped one is swapped in): read
 * only what tfile_read_page_runs says is present when that matters. These reads are not counted
 * in the reader's TFILE_MAX_READER_BYTES (each is refused when less than len is left of it): a
 * caller reading much bounds itself. */
int tfile_read_mem(struct tfile_reader *r, int pid, uint64_t addr, size_t len, void *buf,
		   struct diag_err *err);

/* Pages of a process as its page tables have them (/proc/PID/pagemap). */
#define TFILE_PAGE_PRESENT 1u /* in memory */
#define TFILE_PAGE_SWAPPED 2u /* swapped out: reading it would swap it in */
#define TFILE_PAGE_ZERO 4u    /* present, the shared zero page (reads as zeros; with PAGEMAP_SCAN) */
struct tfile_page_run {
	uint64_t start, end; /* [start, end), page-aligned */
	uint32_t flags;      /* TFILE_PAGE_* */
};
/* How the page tables were read: the PAGEMAP_SCAN ioctl (Linux 6.7+: holes are skipped by the
 * kernel, a call costs what is in memory), or pagemap's entries, 8 bytes per page of the range
 * (older kernels; at most TFILE_PAGEMAP_MAX_PAGES pages examined by one call). */
enum tfile_pages_how { TFILE_PAGES_SCAN = 0, TFILE_PAGES_ENTRIES = 1 };
#define TFILE_PAGEMAP_MAX_PAGES ((uint64_t)1 << 18)
#define TFILE_PAGE_RUNS_MAX 8192 /* runs returned by one call at most */

/* The runs of pages of process pid in [start, end) (page-aligned) that are present or swapped out,
 * in address order (a page neither present nor swapped is not in memory: never written, or a
 * file's page the kernel dropped), at most max (<= TFILE_PAGE_RUNS_MAX) of them: *n runs, and
 * *next, where the pages examined end (end when all of [start, end) was, else ask again from
 * there). want: TFILE_PAGES_SCAN tries the ioctl first and reads the entries where the kernel
 * lacks it; TFILE_PAGES_ENTRIES reads the entries (tests). Returns how it was read (enum
 * tfile_pages_how), or -1 with err (code: enum tfile_fail). */
int tfile_read_page_runs(struct tfile_reader *r, int pid, uint64_t start, uint64_t end,
			 enum tfile_pages_how want, struct tfile_page_run *runs, size_t max, size_t *n,
			 uint64_t *next, struct diag_err *err);

/* Reads descriptor fd of ours to its end, at most max bytes, in a helper (fd goes to it with the
 * request): what a read of ours could otherwise wait on for ever, such as a BPF task iterator
 * whose program copies a target's memory (a page of a file on a stalled file system is read in
 * to be copied). domain: its stall domain (a read that stalled keeps others of the same domain
 * from starting, as a file system does); what: its name in errors and the note. The bytes
 * (NUL-terminated, *len without the NUL), or NULL with err (code: enum tfile_fail). Counted in
 * the reader's TFILE_MAX_READER_BYTES. */
void *tfile_read_fd(struct tfile_reader *r, int fd, uint64_t domain, const char *what, size_t max,
		    size_t *len, struct diag_err *err);

/* For tests: a read on file system dev that opens the FIFO at `fifo` for reading and waits (the
 * helper blocks until someone opens it for writing): 0 when it ended in time, else -1 with err. */
int tfile_reader_test_block(struct tfile_reader *r, uint64_t dev, const char *fifo,
			    struct diag_err *err);

#endif
