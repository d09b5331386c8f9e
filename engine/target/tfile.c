/* tfile.c — files a target names, opened where it cannot steer us and read where it cannot stall
 * us (see tfile.h).
 *
 * Choices:
 * - The reads happen in helper processes, not threads: a FUSE server that has taken a request
 *   is waited for by the kernel without interruption, even by SIGKILL, and a thread stuck there
 *   would keep the whole process from exiting after its report. A helper is forked with nothing
 *   of ours but one end of a socket pair (every other descriptor closed: no BPF link, no output
 *   file, no terminal), answers one request at a time, and sends what it read back in a memfd
 *   (SCM_RIGHTS); the caller waits on the socket (and the reader's stop descriptor) with poll,
 *   so a wait has a deadline whatever the read does. A helper left behind is killed (it dies when
 *   its wait allows), holds nothing, and no one waits for it.
 * - Helpers left behind are kept by the reader until they answer: while one is out, the file
 *   system it reads (the mapping's device) is not read again.
 * - ELF headers are parsed here only to know which byte ranges to read (bounded by the file);
 *   the sections wanted are the ones the engine's readers use: symbol tables and their strings,
 *   notes, .eh_frame(_hdr), .debug_frame, .gnu_debuglink, .gnu_debugdata, .stapsdt.base.
 * - A process's memory and page tables are read like its /proc files (their reads take its memory
 *   map's lock: a target holding it stalls a helper). Memory goes straight into the memfd that
 *   carries it back, and from it straight into the caller's buffer. Page tables are listed by the
 *   PAGEMAP_SCAN ioctl where the kernel has it (holes skipped in the kernel), else from pagemap's
 *   entries, 8 bytes a page, turned into runs in the helper: runs cross back, not entries.
 *
 * Why one file (~1,700 lines): every read of what a target names goes through one helper protocol
 * (the request, the memfd that carries the answer back, the deadlines, the helpers left behind),
 * and each kind of request (a /proc file, a mapped file's ELF ranges, memory, page tables, a
 * descriptor) is a short function on it. Split, the protocol's invariants (nothing of ours in a
 * helper, no wait without a deadline) would have to be kept by several files.
 */
#include "target/tfile.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define OVERLAYFS_MAGIC 0x794c7630
#define BTRFS_MAGIC 0x9123683e
#define TFILE_BUSY_MAX_NS 30000000000ull /* a helper that keeps running is waited for this long */
#define NOSHDR_LOAD_MAX ((uint64_t)64 << 20) /* a file without section headers: its CFI segment */

/* The PAGEMAP_SCAN ioctl of /proc/PID/pagemap (Linux 6.7, <linux/fs.h>; our own names: the
 * build's headers may predate it). */
struct pm_region {
	uint64_t start, end, categories;
};
struct pm_scan {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
		category_mask, category_anyof_mask, return_mask;
};
#define PM_PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan)
#define PM_IS_PRESENT (1u << 3)
#define PM_IS_SWAPPED (1u << 4)
#define PM_IS_PFNZERO (1u << 5)
#define PAGEMAP_PRESENT (1ull << 63) /* a pagemap entry's bits */
#define PAGEMAP_SWAPPED (1ull << 62)

int root_open(int pid, const char *path, int flags, uint64_t resolve)
{
	char rp[64] = "/";
	if (pid > 0)
		snprintf(rp, sizeof(rp), "/proc/%d/root", pid);
	int dfd = open(rp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | resolve,
	};
	int fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	int e = errno;
	close(dfd);
	if (fd < 0 && e == ENOSYS && pid <= 0 && !(resolve & RESOLVE_NO_SYMLINKS))
		return open(path, flags | O_CLOEXEC); /* kernel < 5.6: our own root is safe */
	errno = e;
	return fd;
}

/* ---------------------------------------------------------------------------------------------
 * Opening (in the helper)
 * ------------------------------------------------------------------------------------------- */

static const char *file_type(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

#define PROC_MAGIC 0x9fa0
/* File systems whose files are the kernel's own (a read may drain a log or a trace pipe). */
static bool pseudo_fs(unsigned long type)
{
	static const unsigned long types[] = {
		PROC_MAGIC, 0x62656572 /* sysfs */, 0x64626720 /* debugfs */, 0x74726163 /* tracefs */,
		0x73636673 /* securityfs */, 0x27e0eb /* cgroup */, 0x63677270 /* cgroup2 */,
		0xcafe4a11 /* bpf */, 0x62656570 /* configfs */, 0xde5e81e4 /* efivarfs */,
		0x6165676c /* pstore */, 0x42494e4d /* binfmt_misc */,
	};
	for (size_t i = 0; i < ARRAY_LEN(types); i++)
		if (type == types[i])
			return true;
	return false;
}

static uint64_t dev_key(dev_t d)
{
	return (uint64_t)major(d) << 32 | minor(d);
}

/* Opens the file src names: O_PATH first (nothing but a regular file is opened for reading),
 * checked, then reopened read-only through our own descriptor. Returns the fd (and, with
 * keep_path, *path_fd the O_PATH one), or -1 with why. */
static int open_checked(const struct tfile_src *s, uint64_t max, struct stat *st, int *path_fd,
			char *why, size_t wlen)
{
	char p[PATH_MAX + 64];
	int pfd = -1;
	bool via_map = false;
	if (s->pid > 0 && s->end > s->start) {
		snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, s->pid, s->start, s->end);
		pfd = open(p, O_PATH | O_CLOEXEC);
		via_map = pfd >= 0;
	}
	if (pfd < 0 && s->path && s->path[0] == '/')
		pfd = s->operator_path && s->pid <= 0 ? open(s->path, O_PATH | O_CLOEXEC)
						      : root_open(s->pid, s->path, O_PATH, s->resolve);
	if (pfd < 0) {
		snprintf(why, wlen, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(pfd, st)) {
		snprintf(why, wlen, "cannot stat: %s", strerror(errno));
		close(pfd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, wlen, "%s, not read", file_type(st->st_mode));
		close(pfd);
		return -1;
	}
	if (s->ino && (uint64_t)st->st_ino != s->ino) {
		snprintf(why, wlen, "not the mapped file (inode %llu, the mapping's %llu)",
			 (unsigned long long)st->st_ino, (unsigned long long)s->ino);
		close(pfd);
		return -1;
	}
	struct statfs fs;
	if (fstatfs(pfd, &fs)) {
		snprintf(why, wlen, "cannot stat its file system: %s", strerror(errno));
		close(pfd);
		return -1;
	}
	if (pseudo_fs(fs.f_type) && !(s->proc && fs.f_type == PROC_MAGIC)) {
		snprintf(why, wlen, "on a pseudo file system (type 0x%lx): not read", (unsigned long)fs.f_type);
		close(pfd);
		return -1;
	}
	/* overlayfs and btrfs show a device of their own; the mapping, the layer's or the volume's */
	if (s->ino && !via_map && s->dev && dev_key(st->st_dev) != s->dev &&
	    fs.f_type != OVERLAYFS_MAGIC && fs.f_type != BTRFS_MAGIC) {
		snprintf(why, wlen, "not the mapped file (another device)");
		close(pfd);
		return -1;
	}
	if (s->check_owner && st->st_uid != 0 && st->st_uid != s->owner) {
		snprintf(why, wlen, "owned by uid %u, neither root nor the process's owner",
			 (unsigned)st->st_uid);
		close(pfd);
		return -1;
	}
	if (!s->proc && (uint64_t)st->st_size > max) {
		snprintf(why, wlen, "%llu bytes, over the %llu read", (unsigned long long)st->st_size,
			 (unsigned long long)max);
		close(pfd);
		return -1;
	}
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
	int fd = open(p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st2;
	if (fd >= 0 && (fstat(fd, &st2) || st2.st_ino != st->st_ino || st2.st_dev != st->st_dev)) {
		close(fd);
		fd = -1;
		errno = ESTALE;
	}
	if (fd < 0) {
		snprintf(why, wlen, "cannot open: %s", strerror(errno));
		close(pfd);
		return -1;
	}
	if (path_fd)
		*path_fd = pfd;
	else
		close(pfd);
	return fd;
}

/* ---------------------------------------------------------------------------------------------
 * ELF images (in the helper)
 * ------------------------------------------------------------------------------------------- */

static uint64_t rd(const unsigned char *p, int n, bool le)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[le ? i : n - 1 - i] << (8 * i);
	return v;
}

static void wr32(unsigned char *p, uint32_t v, bool le)
{
	for (int i = 0; i < 4; i++)
		p[le ? i : 3 - i] = (unsigned char)(v >> (8 * i));
}

struct elf_layout {
	bool is64, le;
	uint64_t phoff, shoff;
	uint64_t phentsize, phnum, shentsize, shnum, shstrndx;
};

struct shdr_info {
	uint32_t name, type, link;
	uint64_t offset, size;
};

static void shdr_at(const struct elf_layout *l, const unsigned char *b, struct shdr_info *s)
{
	s->name = (uint32_t)rd(b, 4, l->le);
	s->type = (uint32_t)rd(b + 4, 4, l->le);
	s->offset = l->is64 ? rd(b + 24, 8, l->le) : rd(b + 16, 4, l->le);
	s->size = l->is64 ? rd(b + 32, 8, l->le) : rd(b + 20, 4, l->le);
	s->link = (uint32_t)(l->is64 ? rd(b + 40, 4, l->le) : rd(b + 24, 4, l->le));
}

struct phdr_info {
	uint32_t type;
	uint64_t offset, filesz;
};

static void phdr_at(const struct elf_layout *l, const unsigned char *b, struct phdr_info *p)
{
	p->type = (uint32_t)rd(b, 4, l->le);
	p->offset = l->is64 ? rd(b + 8, 8, l->le) : rd(b + 4, 4, l->le);
	p->filesz = l->is64 ? rd(b + 32, 8, l->le) : rd(b + 16, 4, l->le);
}

/* The table at [off, off + n * entsize) is inside a file of `size` bytes. */
static bool table_fits(uint64_t off, uint64_t n, uint64_t entsize, uint64_t size)
{
	return off <= size && (!n || (entsize && n <= (size - off) / entsize));
}

static int elf_layout_read(const unsigned char *e, uint64_t size, struct elf_layout *l)
{
	if (size < 52 || memcmp(e, ELFMAG, SELFMAG) || (e[EI_CLASS] != ELFCLASS32 && e[EI_CLASS] != ELFCLASS64) ||
	    (e[EI_DATA] != ELFDATA2LSB && e[EI_DATA] != ELFDATA2MSB))
		return -1;
	l->is64 = e[EI_CLASS] == ELFCLASS64;
	l->le = e[EI_DATA] == ELFDATA2LSB;
	if (l->is64 && size < 64)
		return -1;
	bool le = l->le;
	l->phoff = l->is64 ? rd(e + 32, 8, le) : rd(e + 28, 4, le);
	l->shoff = l->is64 ? rd(e + 40, 8, le) : rd(e + 32, 4, le);
	l->phentsize = rd(e + (l->is64 ? 54 : 42), 2, le);
	l->phnum = rd(e + (l->is64 ? 56 : 44), 2, le);
	l->shentsize = rd(e + (l->is64 ? 58 : 46), 2, le);
	l->shnum = rd(e + (l->is64 ? 60 : 48), 2, le);
	l->shstrndx = rd(e + (l->is64 ? 62 : 50), 2, le);
	uint64_t want_sh = l->is64 ? 64 : 40, want_ph = l->is64 ? 56 : 32;
	if (l->shoff && l->shentsize != want_sh)
		l->shoff = l->shnum = 0; /* unusable section headers: as if stripped */
	if (l->phnum && l->phentsize != want_ph)
		l->phnum = 0;
	if (!table_fits(l->phoff, l->phnum, want_ph, size))
		l->phnum = 0;
	if (l->shoff && !table_fits(l->shoff, 1, want_sh, size))
		l->shoff = l->shnum = 0;
	return 0;
}

struct tfile_range {
	uint64_t off, len;
};

struct ranges {
	struct tfile_range *r;
	size_t n, cap;
};

static void range_add(struct ranges *rs, uint64_t off, uint64_t len, uint64_t size)
{
	if (off >= size || !len)
		return;
	if (len > size - off)
		len = size - off;
	if (rs->n == rs->cap)
		rs->r = xrealloc(rs->r, (rs->cap = rs->cap ? rs->cap * 2 : 32) * sizeof(*rs->r));
	rs->r[rs->n++] = (struct tfile_range){ off, len };
}

static int range_cmp(const void *a, const void *b)
{
	const struct tfile_range *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Sorted and merged: every byte is read once. */
static void ranges_merge(struct ranges *rs)
{
	if (!rs->n)
		return;
	qsort(rs->r, rs->n, sizeof(*rs->r), range_cmp);
	size_t k = 0;
	for (size_t i = 0; i < rs->n; i++) {
		if (k && rs->r[i].off <= rs->r[k - 1].off + rs->r[k - 1].len) {
			uint64_t end = rs->r[i].off + rs->r[i].len;
			if (end > rs->r[k - 1].off + rs->r[k - 1].len)
				rs->r[k - 1].len = end - rs->r[k - 1].off;
		} else {
			rs->r[k++] = rs->r[i];
		}
	}
	rs->n = k;
}

static bool read_ranges(int fd, unsigned char *img, const struct tfile_range *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (pread_full(fd, img + r[i].off, r[i].len, r[i].off) != r[i].len)
			return false;
	return true;
}

static bool wanted_name(const char *n)
{
	static const char *const names[] = { ".eh_frame", ".eh_frame_hdr", ".debug_frame",
					     ".zdebug_frame", ".gnu_debuglink", ".gnu_debugdata",
					     ".stapsdt.base" };
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (!strcmp(n, names[i]))
			return true;
	return false;
}

/* The section headers into the image (the wanted sections' ranges, and the table's, into rs),
 * every section not wanted marked SHT_NOBITS there; *table / *table_len: a copy of the marked
 * table (reading the ranges may read the table again, the copy goes back over it). */
static int image_sections(int fd, unsigned char *img, uint64_t size, const struct elf_layout *l,
			  struct ranges *rs, unsigned char **table, uint64_t *table_len, char *why,
			  size_t wlen)
{
	uint64_t shnum = l->shnum, shstrndx = l->shstrndx, ent = l->shentsize;
	struct shdr_info sh;
	if (pread_full(fd, img + l->shoff, ent, l->shoff) != ent)
		return snprintf(why, wlen, "section headers cut short"), -1;
	shdr_at(l, img + l->shoff, &sh);
	if (!shnum) /* extended numbering: the count is in section 0 */
		shnum = sh.size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh.link;
	if (!table_fits(l->shoff, shnum, ent, size) || shnum > 1u << 20)
		return snprintf(why, wlen, "section headers outside the file"), -1;
	if (pread_full(fd, img + l->shoff, shnum * ent, l->shoff) != shnum * ent)
		return snprintf(why, wlen, "section headers cut short"), -1;
	range_add(rs, l->shoff, shnum * ent, size);

	/* the section names first */
	struct shdr_info names = { 0 };
	if (shstrndx < shnum) {
		shdr_at(l, img + l->shoff + shstrndx * ent, &names);
		if (names.type != SHT_STRTAB || names.offset >= size || names.size > size - names.offset ||
		    pread_full(fd, img + names.offset, names.size, names.offset) != names.size)
			names.size = 0;
	}
	bool *keep = xcalloc(shnum ? shnum : 1, sizeof(*keep));
	for (uint64_t i = 0; i < shnum; i++) {
		shdr_at(l, img + l->shoff + i * ent, &sh);
		const char *n = "";
		if (names.size && sh.name < names.size &&
		    memchr(img + names.offset + sh.name, '\0', names.size - sh.name))
			n = (const char *)img + names.offset + sh.name;
		if (i == shstrndx || sh.type == SHT_SYMTAB || sh.type == SHT_DYNSYM || sh.type == SHT_NOTE ||
		    sh.type == SHT_SYMTAB_SHNDX || wanted_name(n)) {
			keep[i] = true;
			if ((sh.type == SHT_SYMTAB || sh.type == SHT_DYNSYM) && sh.link < shnum)
				keep[sh.link] = true; /* its strings */
		}
	}
	for (uint64_t i = 0; i < shnum; i++) {
		unsigned char *b = img + l->shoff + i * ent;
		shdr_at(l, b, &sh);
		if (sh.type == SHT_NULL || sh.type == SHT_NOBITS)
			continue;
		if (keep[i])
			range_add(rs, sh.offset, sh.size, size);
		else
			wr32(b + 4, SHT_NOBITS, l->le); /* its bytes are not read */
	}
	free(keep);
	*table_len = shnum * ent;
	*table = xmalloc(*table_len ? *table_len : 1);
	memcpy(*table, img + l->shoff, *table_len);
	return 0;
}

/* The image of the ELF file on fd (st: its status), built in a new memfd (see tfile.h): the
 * memfd, or -1 with why. */
static int image_build(int fd, const struct stat *st, uint64_t max_read, uint64_t *read, char *why,
		       size_t wlen)
{
	uint64_t size = (uint64_t)st->st_size;
	unsigned char head[64] = { 0 };
	struct elf_layout l;
	if (pread_full(fd, head, sizeof(head), 0) < 52 || elf_layout_read(head, size, &l)) {
		snprintf(why, wlen, "not an ELF file");
		return -1;
	}
	int mfd = memfd_create("diagnose-image", MFD_CLOEXEC);
	void *map = MAP_FAILED;
	if (mfd < 0 || ftruncate(mfd, (off_t)size) ||
	    (map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED) {
		snprintf(why, wlen, "no memory for a %llu-byte image", (unsigned long long)size);
		if (mfd >= 0)
			close(mfd);
		return -1;
	}
	unsigned char *img = map, *shdrs = NULL, *phdrs = NULL;
	uint64_t shdrs_len = 0, ehsize = l.is64 ? 64 : 52, phdrs_len = l.phnum * l.phentsize;
	struct ranges rs = { 0 };
	bool ok = true;
	range_add(&rs, 0, ehsize, size);
	if (phdrs_len) {
		range_add(&rs, l.phoff, phdrs_len, size);
		phdrs = xmalloc(phdrs_len);
		ok = pread_full(fd, phdrs, phdrs_len, l.phoff) == phdrs_len;
		if (!ok)
			snprintf(why, wlen, "program headers cut short");
	}
	if (ok && l.shoff && image_sections(fd, img, size, &l, &rs, &shdrs, &shdrs_len, why, wlen))
		ok = false;
	/* segments: notes, the CFI search table; without section headers, the segment holding it */
	for (uint64_t i = 0; ok && i < l.phnum; i++) {
		struct phdr_info ph, load;
		phdr_at(&l, phdrs + i * l.phentsize, &ph);
		if (ph.type == PT_NOTE || ph.type == PT_GNU_EH_FRAME)
			range_add(&rs, ph.offset, ph.filesz, size);
		if (ph.type != PT_GNU_EH_FRAME || l.shoff)
			continue;
		for (uint64_t k = 0; k < l.phnum; k++) {
			phdr_at(&l, phdrs + k * l.phentsize, &load);
			if (load.type == PT_LOAD && ph.offset >= load.offset &&
			    ph.offset - load.offset < load.filesz && load.filesz <= NOSHDR_LOAD_MAX)
				range_add(&rs, load.offset, load.filesz, size);
		}
	}
	if (ok) {
		ranges_merge(&rs);
		uint64_t total = 0;
		for (size_t i = 0; i < rs.n; i++)
			total += rs.r[i].len;
		*read = total;
		if (total > max_read) {
			snprintf(why, wlen, "its symbol tables and CFI are %llu bytes, over the %llu read",
				 (unsigned long long)total, (unsigned long long)max_read);
			ok = false;
		}
	}
	if (ok) {
		ok = read_ranges(fd, img, rs.r, rs.n);
		if (!ok)
			snprintf(why, wlen, "cut short while read (the file changed?)");
	}
	if (ok) { /* the headers as first read and parsed, with the NOBITS marks */
		memcpy(img, head, ehsize);
		if (phdrs_len)
			memcpy(img + l.phoff, phdrs, phdrs_len);
		if (shdrs_len)
			memcpy(img + l.shoff, shdrs, shdrs_len);
	}
	free(phdrs);
	free(shdrs);
	free(rs.r);
	munmap(map, (size_t)size);
	if (!ok) {
		close(mfd);
		return -1;
	}
	return mfd;
}

static uint32_t file_crc(int fd)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	for (uint64_t off = 0;;) {
		size_t n = pread_full(fd, buf, sizeof(buf), off);
		if (!n)
			break;
		c = crc32(c, buf, (uInt)n);
		off += n;
		if (n < sizeof(buf))
			break;
	}
	return (uint32_t)c;
}

void tfile_image_free(struct tfile_image *img)
{
	if (!img)
		return;
	if (img->bytes)
		munmap(img->bytes, img->size);
	if (img->memfd >= 0)
		close(img->memfd);
	if (img->fd >= 0)
		close(img->fd);
	free(img);
}

void tfile_image_release(struct tfile_image *img, size_t off, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (img->memfd < 0 || off >= img->size)
		return;
	if (len > img->size - off)
		len = img->size - off;
	size_t lo = (off + page - 1) / page * page, hi = (off + len) / page * page;
	if (hi <= lo)
		return;
	/* the memfd's pages freed (and unmapped from the image), then any copy libelf wrote */
	fallocate(img->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)lo, (off_t)(hi - lo));
	madvise(img->bytes + lo, hi - lo, MADV_DONTNEED);
}

Elf *tfile_image_elf(struct tfile_image *img)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	return elf_memory((char *)img->bytes, img->size);
}

int tfile_image_memfd(const struct tfile_image *img)
{
	return img->memfd >= 0 ? fcntl(img->memfd, F_DUPFD_CLOEXEC, 0) : -1;
}

/* ---------------------------------------------------------------------------------------------
 * The helper: a process that holds nothing of ours, and answers one request at a time
 * ------------------------------------------------------------------------------------------- */

enum req_kind { REQ_ELF, REQ_TEXT, REQ_MEM, REQ_PAGES, REQ_STAT, REQ_TEST_BLOCK, REQ_FD };

struct request {
	uint32_t kind, flags;
	struct tfile_src src; /* src.path points nowhere here: path is the copy */
	uint64_t max, mem_addr, mem_len; /* REQ_PAGES: max runs, [mem_addr, + mem_len), flags: how */
	char path[PATH_MAX];
};

struct response {
	int32_t rc;
	uint32_t nfds;        /* the memfd (content), then the O_PATH fd (TFILE_KEEP_FD) */
	uint64_t size;        /* content bytes (an image: the file's size) */
	uint64_t read;        /* bytes read of the file (an image's parts) */
	uint64_t dev, ino, mtime_ns;
	uint32_t crc, owner;
	uint64_t next; /* REQ_PAGES: where the pages examined end */
	uint32_t how;  /* REQ_PAGES: enum tfile_pages_how */
	char why[256];
};

/* A memfd holding len bytes of buf. */
static int memfd_of(const void *buf, size_t len)
{
	int mfd = memfd_create("diagnose-read", MFD_CLOEXEC);
	if (mfd >= 0 && write_full(mfd, buf, len) != len) {
		close(mfd);
		return -1;
	}
	return mfd;
}

static void serve_text(const struct request *rq, struct response *rs, int *fds)
{
	struct stat st;
	int fd = open_checked(&rq->src, UINT64_MAX, &st, NULL, rs->why, sizeof(rs->why));
	if (fd < 0)
		return;
	size_t cap = 65536, len = 0, max = (size_t)rq->max;
	char *buf = xmalloc(cap);
	while (len < max) { /* at most max bytes: a longer file is read that far */
		if (len == cap)
			buf = xrealloc(buf, cap = cap * 2 > max ? max : cap * 2);
		size_t want = cap - len < max - len ? cap - len : max - len;
		ssize_t n = read(fd, buf + len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(rs->why, sizeof(rs->why), "cannot read: %s", strerror(errno));
			free(buf);
			close(fd);
			return;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	fds[0] = memfd_of(buf, len);
	free(buf);
	if (fds[0] < 0) {
		snprintf(rs->why, sizeof(rs->why), "no memory for its text");
		return;
	}
	rs->nfds = 1;
	rs->size = rs->read = len;
	rs->owner = st.st_uid;
	rs->rc = 0;
}

/* REQ_FD: the descriptor that came with the request, read to its end (at most rq->max bytes)
 * straight into a memfd: a BPF iterator whose program copies a target's memory, which a stalled
 * file system under that memory can hold. */
static void serve_fd(const struct request *rq, int in, struct response *rs, int *fds)
{
	if (in < 0) {
		snprintf(rs->why, sizeof(rs->why), "no descriptor came with the request");
		return;
	}
	int m = memfd_create("diagnose-fd", MFD_CLOEXEC);
	if (m < 0) {
		snprintf(rs->why, sizeof(rs->why), "no memory for what it read");
		return;
	}
	enum { CHUNK = 65536 };
	char *buf = xmalloc(CHUNK);
	uint64_t len = 0;
	while (len < rq->max) {
		size_t want = rq->max - len < CHUNK ? (size_t)(rq->max - len) : CHUNK;
		ssize_t n = read(in, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(rs->why, sizeof(rs->why), "cannot read: %s", strerror(errno));
			break;
		}
		if (n == 0 || write_full(m, buf, (size_t)n) != (size_t)n)
			break;
		len += (uint64_t)n;
	}
	free(buf);
	if (rs->why[0]) {
		close(m);
		return;
	}
	fds[0] = m;
	rs->nfds = 1;
	rs->size = rs->read = len;
	rs->rc = 0;
}

/* len bytes of process pid's memory at addr, read straight into a memfd: 0 and *mfd, or -1. */
static int serve_mem(int pid, uint64_t addr, size_t len, int *mfd)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	int m = fd >= 0 ? memfd_create("diagnose-mem", MFD_CLOEXEC) : -1;
	void *map = MAP_FAILED;
	bool ok = m >= 0 && ftruncate(m, (off_t)len) == 0 &&
		  (!len || (map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0)) != MAP_FAILED) &&
		  (!len || pread_full(fd, map, len, addr) == len);
	if (map != MAP_FAILED)
		munmap(map, len);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		if (m >= 0)
			close(m);
		return -1;
	}
	*mfd = m;
	return 0;
}

/* Adds the page at addr (its TFILE_PAGE_* flags) to the runs: false when they are full. */
static bool run_add(struct tfile_page_run *runs, size_t max, size_t *n, uint64_t addr, uint64_t page,
		    uint32_t flags)
{
	if (*n && runs[*n - 1].end == addr && runs[*n - 1].flags == flags) {
		runs[*n - 1].end = addr + page;
		return true;
	}
	if (*n == max)
		return false;
	runs[(*n)++] = (struct tfile_page_run){ addr, addr + page, flags };
	return true;
}

/* The runs of present or swapped pages in [start, end) from pagemap's entries (8 bytes a page),
 * at most TFILE_PAGEMAP_MAX_PAGES examined: 0 and *next, or -1 with why. */
static int pages_from_entries(int fd, uint64_t start, uint64_t end, uint64_t page,
			      struct tfile_page_run *runs, size_t max, size_t *n, uint64_t *next,
			      char *why, size_t wlen)
{
	enum { CHUNK = 8192 };
	uint64_t *e = xmalloc(CHUNK * sizeof(*e));
	if ((end - start) / page > TFILE_PAGEMAP_MAX_PAGES)
		end = start + TFILE_PAGEMAP_MAX_PAGES * page;
	uint64_t addr = start;
	int rc = 0;
	while (addr < end) {
		uint64_t want = (end - addr) / page < CHUNK ? (end - addr) / page : CHUNK;
		errno = 0;
		size_t got = pread_full(fd, e, want * sizeof(*e), addr / page * sizeof(*e)) / sizeof(*e);
		if (!got) {
			snprintf(why, wlen, "cannot read its pagemap at 0x%" PRIx64 ": %s", addr,
				 errno ? strerror(errno) : "end of file");
			rc = -1;
			break;
		}
		bool full = false;
		for (size_t i = 0; i < got && !full; i++, addr += page) {
			uint32_t f = e[i] & PAGEMAP_PRESENT ? TFILE_PAGE_PRESENT
				     : e[i] & PAGEMAP_SWAPPED ? TFILE_PAGE_SWAPPED : 0;
			if (f && !run_add(runs, max, n, addr, page, f))
				full = true;
		}
		if (full) {
			addr -= page; /* the page that did not fit */
			break;
		}
	}
	free(e);
	*next = addr;
	return rc;
}

/* REQ_PAGES: see tfile_read_page_runs. */
static void serve_pages(const struct request *rq, struct response *rs, int *fds)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/pagemap", rq->src.pid);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start = rq->mem_addr, end = rq->mem_addr + rq->mem_len;
	size_t max = rq->max < 1 ? 1 : rq->max > TFILE_PAGE_RUNS_MAX ? TFILE_PAGE_RUNS_MAX : (size_t)rq->max;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(rs->why, sizeof(rs->why), "cannot open /proc/%d/pagemap: %s", rq->src.pid, strerror(errno));
		return;
	}
	struct tfile_page_run *runs = xcalloc(max, sizeof(*runs));
	size_t n = 0;
	uint64_t next = start;
	int rc = 1; /* not read yet */
	rs->how = TFILE_PAGES_ENTRIES;
	if (rq->flags == TFILE_PAGES_SCAN) {
		struct pm_region *v = xcalloc(max, sizeof(*v));
		struct pm_scan a = { .size = sizeof(a), .start = start, .end = end, .vec = (uint64_t)(uintptr_t)v,
				     .vec_len = max, .category_anyof_mask = PM_IS_PRESENT | PM_IS_SWAPPED,
				     .return_mask = PM_IS_PRESENT | PM_IS_SWAPPED | PM_IS_PFNZERO };
		int got = ioctl(fd, PM_PAGEMAP_SCAN, &a);
		if (got >= 0 && (size_t)got <= max && a.walk_end >= start && a.walk_end <= end) {
			for (int i = 0; i < got; i++)
				runs[i] = (struct tfile_page_run){
					v[i].start, v[i].end,
					(v[i].categories & PM_IS_PRESENT ? TFILE_PAGE_PRESENT : 0) |
					(v[i].categories & PM_IS_SWAPPED ? TFILE_PAGE_SWAPPED : 0) |
					(v[i].categories & PM_IS_PFNZERO ? TFILE_PAGE_ZERO : 0) };
			n = (size_t)got;
			next = a.walk_end;
			rs->how = TFILE_PAGES_SCAN;
			rc = 0;
		} else if (got >= 0 || (errno != ENOTTY && errno != EINVAL && errno != EOPNOTSUPP)) {
			snprintf(rs->why, sizeof(rs->why), "PAGEMAP_SCAN of process %d: %s", rq->src.pid,
				 got >= 0 ? "an answer out of range" : strerror(errno));
			rc = -1;
		} /* else a kernel before 6.7: the entries */
		free(v);
	}
	if (rc > 0)
		rc = pages_from_entries(fd, start, end, page, runs, max, &n, &next, rs->why, sizeof(rs->why));
	close(fd);
	if (!rc && (fds[0] = memfd_of(runs, n * sizeof(*runs))) < 0) {
		snprintf(rs->why, sizeof(rs->why), "no memory for its page runs");
		rc = -1;
	}
	free(runs);
	if (rc)
		return;
	rs->nfds = 1;
	rs->size = n * sizeof(*runs);
	rs->next = next;
	rs->rc = 0;
}

static void serve(const struct request *rq, int in, struct response *rs, int *fds)
{
	struct stat st;
	int fd = -1;
	rs->rc = -1;
	switch (rq->kind) {
	case REQ_ELF:
		fd = open_checked(&rq->src, TFILE_MAX_ELF_BYTES, &st, rq->flags & TFILE_KEEP_FD ? &fds[1] : NULL,
				  rs->why, sizeof(rs->why));
		if (fd < 0)
			return;
		if (st.st_size < 52) { /* not even an ELF header: nothing is read */
			snprintf(rs->why, sizeof(rs->why), "not an ELF file");
			close(fd);
			if (fds[1] >= 0)
				close(fds[1]);
			fds[1] = -1;
			return;
		}
		fds[0] = image_build(fd, &st, rq->max, &rs->read, rs->why, sizeof(rs->why));
		if (fds[0] < 0 && fds[1] >= 0) {
			close(fds[1]);
			fds[1] = -1;
		}
		if (fds[0] >= 0) {
			rs->size = (uint64_t)st.st_size;
			rs->dev = dev_key(st.st_dev);
			rs->ino = (uint64_t)st.st_ino;
			rs->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
			rs->crc = rq->flags & TFILE_CRC ? file_crc(fd) : 0;
			rs->nfds = fds[1] >= 0 ? 2 : 1;
			rs->rc = 0;
		}
		close(fd);
		return;
	case REQ_TEXT:
		serve_text(rq, rs, fds);
		return;
	case REQ_MEM:
		if (rq->mem_len <= TFILE_MAX_TEXT_BYTES &&
		    !serve_mem(rq->src.pid, rq->mem_addr, (size_t)rq->mem_len, &fds[0])) {
			rs->nfds = 1;
			rs->size = rq->mem_len;
			rs->rc = 0;
		} else {
			snprintf(rs->why, sizeof(rs->why), "cannot read the memory of process %d at 0x%" PRIx64
				 " (%" PRIu64 " bytes)", rq->src.pid, rq->mem_addr, rq->mem_len);
		}
		return;
	case REQ_PAGES:
		serve_pages(rq, rs, fds);
		return;
	case REQ_STAT:
		fd = open_checked(&rq->src, UINT64_MAX, &st, NULL, rs->why, sizeof(rs->why));
		if (fd < 0)
			return;
		close(fd);
		rs->size = (uint64_t)st.st_size;
		rs->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
		rs->rc = 0;
		return;
	case REQ_FD:
		serve_fd(rq, in, rs, fds);
		return;
	case REQ_TEST_BLOCK: /* for tests: an open that waits for ever (a FIFO without a writer) */
		fd = open(rq->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		rs->rc = 0;
		return;
	}
}

static void helper_main(int sock)
{
	struct request rq;
	for (;;) {
		/* a REQ_FD request carries the descriptor to read */
		char in_ctl[CMSG_SPACE(sizeof(int))];
		struct iovec in_iov = { &rq, sizeof(rq) };
		struct msghdr in_m = { .msg_iov = &in_iov, .msg_iovlen = 1, .msg_control = in_ctl,
				       .msg_controllen = sizeof(in_ctl) };
		int in = -1;
		ssize_t n = recvmsg(sock, &in_m, MSG_CMSG_CLOEXEC);
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&in_m); n > 0 && c; c = CMSG_NXTHDR(&in_m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len >= CMSG_LEN(sizeof(int)))
				memcpy(&in, CMSG_DATA(c), sizeof(int));
		if (n != (ssize_t)sizeof(rq))
			_exit(0); /* the reader is gone, or left us behind */
		rq.path[sizeof(rq.path) - 1] = '\0';
		rq.src.path = rq.path[0] ? rq.path : NULL;
		struct response rs = { .rc = -1 };
		int fds[2] = { -1, -1 };
		serve(&rq, rq.kind == REQ_FD ? in : -1, &rs, fds);
		if (in >= 0)
			close(in);
		if (rs.rc)
			rs.nfds = 0;
		char ctl[CMSG_SPACE(2 * sizeof(int))];
		memset(ctl, 0, sizeof(ctl));
		struct iovec iov = { &rs, sizeof(rs) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (rs.nfds) {
			m.msg_control = ctl;
			m.msg_controllen = CMSG_SPACE(rs.nfds * sizeof(int));
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(rs.nfds * sizeof(int));
			memcpy(CMSG_DATA(c), fds, rs.nfds * sizeof(int));
		}
		ssize_t sent = sendmsg(sock, &m, MSG_NOSIGNAL);
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (sent < 0)
			_exit(0);
	}
}

/* A helper, as its reader holds it. */
struct helper {
	pid_t pid;
	int sock;
	int pidfd;    /* -1 when the kernel has none (before 5.3) */
	uint64_t dev; /* left behind: the file system it waits on */
};

/* Only the descriptors 0-2 (on /dev/null) and `keep` (moved to 3) stay open. */
static void keep_only(int keep)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
	    (keep != 3 && dup2(keep, 3) < 0))
		_exit(1);
	if (syscall(SYS_close_range, 4u, ~0u, 0u) == 0)
		return;
	DIR *d = opendir("/proc/self/fd"); /* kernels before 5.9 */
	if (!d)
		_exit(1);
	int fds[4096], n = 0, self = dirfd(d);
	for (struct dirent *e; (e = readdir(d)) && n < (int)ARRAY_LEN(fds);) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd > 3 && fd != self)
			fds[n++] = fd;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* The zygote: forked when the reader is made, before the run has a BPF object, a ring buffer or
 * an image mapped, it forks the helpers (a fork of the run itself would map all of those into a
 * helper, and one left behind in a read that never returns would keep them alive after we exit).
 * Asked with one byte, it answers with the helper's pid and, as descriptors, the reader's end of
 * its socket and a pidfd of it. Exits when the reader's end closes. */
static void zygote_main(int sock)
{
	signal(SIGCHLD, SIG_IGN); /* the helpers are reaped as they exit */
	for (;;) {
		char c;
		if (recv(sock, &c, 1, 0) != 1)
			_exit(0);
		int sv[2], fds[2] = { -1, -1 };
		pid_t pid = -1;
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
			pid = fork();
			if (pid == 0) {
				close(sock);
				close(sv[0]);
				keep_only(sv[1]);
				helper_main(3);
			}
			close(sv[1]);
			fds[0] = sv[0];
			fds[1] = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
		}
		int32_t answer = pid;
		char ctl[CMSG_SPACE(2 * sizeof(int))];
		memset(ctl, 0, sizeof(ctl));
		struct iovec iov = { &answer, sizeof(answer) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		int nfds = pid > 0 ? (fds[1] >= 0 ? 2 : 1) : 0;
		if (nfds) {
			m.msg_control = ctl;
			m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
			struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
			memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
		}
		ssize_t sent = sendmsg(sock, &m, MSG_NOSIGNAL);
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (sent < 0)
			_exit(0);
	}
}

/* Starts the zygote: 0 with *pid and *sock, or -1. */
static int zygote_start(pid_t *pid, int *sock)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid_t p = fork();
	if (p < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (p == 0) {
		prctl(PR_SET_NAME, "diagnose-read"); /* what ps and pgrep show of it and its helpers */
		close(sv[0]);
		keep_only(sv[1]);
		zygote_main(3);
	}
	close(sv[1]);
	*pid = p;
	*sock = sv[0];
	return 0;
}

/* A new helper from the zygote (zsock): 0, or -1. */
static int helper_spawn(int zsock, struct helper *h)
{
	char c = 1;
	if (zsock < 0 || send(zsock, &c, 1, MSG_NOSIGNAL) != 1)
		return -1;
	int32_t answer = -1;
	char ctl[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { &answer, sizeof(answer) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	int fds[2] = { -1, -1 };
	ssize_t n = recvmsg(zsock, &m, MSG_CMSG_CLOEXEC);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); n > 0 && cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds, CMSG_DATA(cm), (k > 2 ? 2 : k) * sizeof(int));
		}
	if (n != (ssize_t)sizeof(answer) || answer <= 0 || fds[0] < 0) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return -1;
	}
	*h = (struct helper){ .pid = answer, .sock = fds[0], .pidfd = fds[1] };
	return 0;
}

/* Ends a helper: killed (through its pidfd: never another process that got its pid), then its
 * socket closed. The zygote reaps it; one in an unkillable wait dies when its wait ends. */
static void helper_end(struct helper *h)
{
	if (h->pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0);
		close(h->pidfd);
	} else {
		kill(h->pid, SIGKILL);
	}
	close(h->sock);
	h->pidfd = h->sock = -1;
}

/* Whether the helper is running or runnable (state R): still working, not waiting in the
 * kernel for a file system that does not answer. */
static bool helper_running(const struct helper *h)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", h->pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')'); /* "pid (comm) S ..." */
	return paren && paren[1] == ' ' && paren[2] == 'R';
}

/* ---------------------------------------------------------------------------------------------
 * The reader: helpers, waits, deadlines
 * ------------------------------------------------------------------------------------------- */

#define TFILE_IDLE_HELPERS 2

struct tfile_reader {
	pthread_mutex_t lock;
	uint64_t deadline_ns;
	int stop_fd;
	pid_t zygote;
	int zygote_pidfd;           /* its pidfd, to wait for its end without polling (-1: none) */
	int zsock;                  /* to the zygote (-1: none could start) */
	pthread_mutex_t spawn_lock; /* one request to the zygote at a time */
	uint64_t bytes_left;        /* of TFILE_MAX_READER_BYTES, for every image and text read */
	struct helper idle[TFILE_IDLE_HELPERS];
	size_t n_idle;
	struct helper behind[TFILE_MAX_STALLED]; /* left behind, still waiting */
	size_t n_behind;
	/* for the note */
	uint64_t stalled, stopped, late, refused_fs, refused_all, over_bytes;
	char first_stalled[PATH_MAX + 32];
};

struct tfile_reader *tfile_reader_new(void)
{
	struct tfile_reader *r = xcalloc(1, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->spawn_lock, NULL);
	r->stop_fd = -1;
	r->bytes_left = TFILE_MAX_READER_BYTES;
	r->zygote_pidfd = -1;
	if (zygote_start(&r->zygote, &r->zsock))
		r->zsock = -1;
	else
		r->zygote_pidfd = (int)syscall(SYS_pidfd_open, r->zygote, 0);
	return r;
}

void tfile_reader_free(struct tfile_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_idle; i++)
		helper_end(&r->idle[i]);
	for (size_t i = 0; i < r->n_behind; i++)
		helper_end(&r->behind[i]);
	if (r->zsock >= 0) {
		close(r->zsock); /* it exits at the end of its socket: reaped once it has, 100 ms at most */
		int status;
		child_wait(r->zygote, r->zygote_pidfd, mono_ns() + 100 * 1000000ull, &status);
	}
	if (r->zygote_pidfd >= 0)
		close(r->zygote_pidfd);
	pthread_mutex_destroy(&r->spawn_lock);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void tfile_reader_set_deadline(struct tfile_reader *r, uint64_t deadline_ns)
{
	pthread_mutex_lock(&r->lock);
	r->deadline_ns = deadline_ns;
	pthread_mutex_unlock(&r->lock);
}

uint64_t tfile_reader_deadline(struct tfile_reader *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t d = r->deadline_ns;
	pthread_mutex_unlock(&r->lock);
	return d;
}

void tfile_reader_set_stop_fd(struct tfile_reader *r, int fd)
{
	pthread_mutex_lock(&r->lock);
	r->stop_fd = fd;
	pthread_mutex_unlock(&r->lock);
}

int tfile_reader_stop_fd(struct tfile_reader *r)
{
	pthread_mutex_lock(&r->lock);
	int fd = r->stop_fd;
	pthread_mutex_unlock(&r->lock);
	return fd;
}

char *tfile_reader_note(struct tfile_reader *r)
{
	pthread_mutex_lock(&r->lock);
	char parts[6][320];
	size_t n = 0;
	if (r->stalled)
		snprintf(parts[n++], sizeof(parts[0]), "%llu stalled (no answer within %.1f s: a FUSE or "
			 "network file system?%s%.80s)", (unsigned long long)r->stalled, TFILE_WAIT_NS / 1e9,
			 r->first_stalled[0] ? " the first: " : "", r->first_stalled);
	if (r->refused_fs)
		snprintf(parts[n++], sizeof(parts[0]), "%llu on a file system that had stalled",
			 (unsigned long long)r->refused_fs);
	if (r->refused_all)
		snprintf(parts[n++], sizeof(parts[0]), "%llu after %d stalls", (unsigned long long)r->refused_all,
			 TFILE_MAX_STALLED);
	if (r->stopped)
		snprintf(parts[n++], sizeof(parts[0]), "%llu cut short by a stop signal",
			 (unsigned long long)r->stopped);
	if (r->late)
		snprintf(parts[n++], sizeof(parts[0]), "%llu past the run's time for reading files",
			 (unsigned long long)r->late);
	if (r->over_bytes)
		snprintf(parts[n++], sizeof(parts[0]), "%llu after %llu MiB read in all",
			 (unsigned long long)r->over_bytes, (unsigned long long)(TFILE_MAX_READER_BYTES >> 20));
	pthread_mutex_unlock(&r->lock);
	if (!n)
		return NULL;
	char *note = xstrdup("files named by the target not read: ");
	for (size_t i = 0; i < n; i++) {
		char *next = xasprintf("%s%s%s", note, i ? ", " : "", parts[i]);
		free(note);
		note = next;
	}
	char *full = xasprintf("%s; their frames are addresses, not names", note);
	free(note);
	return full;
}

static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
}

int tfile_reader_check(struct tfile_reader *r, struct diag_err *err)
{
	pthread_mutex_lock(&r->lock);
	uint64_t deadline = r->deadline_ns;
	int stop_fd = r->stop_fd;
	pthread_mutex_unlock(&r->lock);
	if (deadline && mono_ns() >= deadline)
		return diag_fail(err, TFILE_FAIL_WAIT, "past the run's time for reading files");
	if (fd_readable(stop_fd))
		return diag_fail(err, TFILE_FAIL_WAIT, "a stop signal arrived");
	return 0;
}

/* Ends the helpers left behind that have answered since (or died). Under the lock. */
static void reap_behind(struct tfile_reader *r)
{
	size_t k = 0;
	for (size_t i = 0; i < r->n_behind; i++) {
		if (fd_readable(r->behind[i].sock))
			helper_end(&r->behind[i]);
		else
			r->behind[k++] = r->behind[i];
	}
	r->n_behind = k;
}

/* Whether a read on file system dev may start now (0), else why not (-1, err). Under the lock. */
static int may_start(struct tfile_reader *r, uint64_t dev, uint64_t now, struct diag_err *err)
{
	reap_behind(r);
	if (r->deadline_ns && now >= r->deadline_ns) {
		r->late++;
		return diag_fail(err, TFILE_FAIL_WAIT, "past the run's time for reading files");
	}
	if (fd_readable(r->stop_fd)) {
		r->stopped++;
		return diag_fail(err, TFILE_FAIL_WAIT, "a stop signal arrived");
	}
	if (r->n_behind == TFILE_MAX_STALLED) {
		r->refused_all++;
		return diag_fail(err, TFILE_FAIL_WAIT, "%d reads have stalled: nothing more is read",
				 TFILE_MAX_STALLED);
	}
	for (size_t i = 0; i < r->n_behind; i++)
		if (r->behind[i].dev == dev) {
			r->refused_fs++;
			return diag_fail(err, TFILE_FAIL_WAIT, "its file system stalled a read before");
		}
	return 0;
}

/* Receives a helper's response and its descriptors. 0, or -1 (the helper is gone). */
static int recv_response(int sock, struct response *rs, int *fds)
{
	char ctl[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { rs, sizeof(*rs) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	fds[0] = fds[1] = -1;
	ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); n > 0 && c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds, CMSG_DATA(c), (k > 2 ? 2 : k) * sizeof(int));
		}
	if (n != (ssize_t)sizeof(*rs) || (rs->rc == 0 && (rs->nfds > 2 || (rs->nfds && fds[0] < 0)))) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		fds[0] = fds[1] = -1;
		return -1;
	}
	rs->why[sizeof(rs->why) - 1] = '\0';
	return 0;
}

/* Sends rq to a helper, request and descriptor: a REQ_FD request carries `out` (SCM_RIGHTS). */
static bool send_request(int sock, const struct request *rq, int out)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	memset(ctl, 0, sizeof(ctl));
	struct iovec iov = { (void *)rq, sizeof(*rq) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (out >= 0) {
		m.msg_control = ctl;
		m.msg_controllen = sizeof(ctl);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &out, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(*rq);
}

/* Sends rq (with descriptor out for REQ_FD, else -1) to a helper and waits for its answer (see
 * tfile.h): 0 with *rs and fds, or -1 with err (code: enum tfile_fail). */
static int ask_with(struct tfile_reader *r, struct request *rq, int out, struct response *rs, int *fds,
		    struct diag_err *err)
{
	uint64_t dev = rq->src.dev;
	if (!dev && rq->src.proc) /* each process's /proc files stall on their own */
		dev = 1ull << 63 | (uint64_t)(unsigned)rq->src.pid;
	struct helper h;
	pthread_mutex_lock(&r->lock);
	uint64_t now = mono_ns(), deadline = r->deadline_ns;
	int stop_fd = r->stop_fd;
	int rc = may_start(r, dev, now, err);
	if (!rc && (rq->kind == REQ_ELF || rq->kind == REQ_TEXT || rq->kind == REQ_MEM || rq->kind == REQ_FD)) {
		uint64_t cap = rq->kind == REQ_ELF ? TFILE_MAX_IMAGE_BYTES
			       : rq->kind == REQ_TEXT || rq->kind == REQ_FD ? rq->max
			       : rq->mem_len;
		if (!r->bytes_left) {
			r->over_bytes++;
			rc = diag_fail(err, TFILE_FAIL_WAIT, "%llu bytes read in all: nothing more is read",
				       (unsigned long long)TFILE_MAX_READER_BYTES);
		} else if (rq->kind == REQ_MEM && rq->mem_len > r->bytes_left) {
			r->over_bytes++;
			rc = diag_fail(err, TFILE_FAIL_WAIT, "over what is left to read");
		} else {
			rq->max = cap < r->bytes_left ? cap : r->bytes_left;
		}
	}
	bool have = !rc && r->n_idle;
	if (have)
		h = r->idle[--r->n_idle];
	pthread_mutex_unlock(&r->lock);
	if (rc)
		return -1;
	for (int attempt = 0;; attempt++) {
		if (!have) {
			pthread_mutex_lock(&r->spawn_lock);
			int spawned = helper_spawn(r->zsock, &h);
			pthread_mutex_unlock(&r->spawn_lock);
			if (spawned)
				return diag_fail(err, TFILE_FAIL_WAIT, "cannot start a reader process: %s", strerror(errno));
		}
		have = true;
		if (send_request(h.sock, rq, out))
			break;
		helper_end(&h); /* an idle one that died: once more with a new one */
		have = false;
		if (attempt)
			return diag_fail(err, TFILE_FAIL_WAIT, "the reader process died");
	}
	uint64_t started = now, until = now + TFILE_WAIT_NS;
	if (deadline && deadline < until)
		until = deadline;
	enum { DONE, STOPPED, TIMED_OUT } how = TIMED_OUT;
	for (;;) {
		now = mono_ns();
		if (now >= until && until != deadline && now - started < TFILE_BUSY_MAX_NS && helper_running(&h)) {
			until = now + TFILE_WAIT_NS; /* on a CPU, or waiting for one: not stalled */
			if (deadline && deadline < until)
				until = deadline;
		}
		if (now >= until)
			break;
		struct pollfd p[2] = { { .fd = h.sock, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
		int n = poll(p, 2, (int)((until - now + 999999) / 1000000));
		if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			how = DONE;
			break;
		}
		if (n > 0 && (p[1].revents & POLLIN)) {
			how = STOPPED;
			break;
		}
	}
	if (how == DONE) {
		if (recv_response(h.sock, rs, fds)) {
			helper_end(&h);
			return diag_fail(err, TFILE_FAIL_WAIT, "the reader process died");
		}
		pthread_mutex_lock(&r->lock);
		r->bytes_left -= rs->read < r->bytes_left ? rs->read : r->bytes_left;
		if (r->n_idle < TFILE_IDLE_HELPERS)
			r->idle[r->n_idle++] = h;
		else
			helper_end(&h);
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	pthread_mutex_lock(&r->lock);
	if (how == STOPPED) {
		r->stopped++;
		diag_fail(err, TFILE_FAIL_WAIT, "a stop signal arrived while it was read");
	} else if (deadline && now >= deadline && until == deadline) {
		r->late++;
		diag_fail(err, TFILE_FAIL_WAIT, "not read by the end of the run's time for reading files");
	} else {
		r->stalled++;
		if (!r->first_stalled[0])
			snprintf(r->first_stalled, sizeof(r->first_stalled), "%s", rq->path[0] ? rq->path : "?");
		diag_fail(err, TFILE_FAIL_WAIT, "no answer within %.1f s (a stalled file system?)",
			  TFILE_WAIT_NS / 1e9);
	}
	/* only a helper waiting past its own limit blocks its file system: one cut by the deadline
	 * (the collection ended) or a stop is merely ended */
	bool keep = how == TIMED_OUT && !(deadline && until == deadline) && r->n_behind < TFILE_MAX_STALLED;
	if (keep) { /* its file system waits for it */
		h.dev = dev;
		r->behind[r->n_behind++] = h;
	}
	pthread_mutex_unlock(&r->lock);
	if (!keep)
		helper_end(&h);
	return -1;
}

static int ask(struct tfile_reader *r, struct request *rq, struct response *rs, int *fds,
	       struct diag_err *err)
{
	return ask_with(r, rq, -1, rs, fds, err);
}

static void request_init(struct request *rq, enum req_kind kind, const struct tfile_src *src)
{
	memset(rq, 0, sizeof(*rq));
	rq->kind = kind;
	if (src) {
		rq->src = *src;
		snprintf(rq->path, sizeof(rq->path), "%s", src->path ? src->path : "");
	}
	rq->src.path = NULL;
}

static const char *shown(const struct tfile_src *src)
{
	return src && src->path ? src->path : "a mapped file";
}

int tfile_read_elf(struct tfile_reader *r, const struct tfile_src *src, unsigned flags,
		   struct tfile_image **out, struct diag_err *err)
{
	struct request rq;
	struct response rs;
	int fds[2];
	*out = NULL;
	request_init(&rq, REQ_ELF, src);
	rq.flags = flags;
	if (ask(r, &rq, &rs, fds, err))
		return diag_wrap(err, "%s", shown(src));
	if (rs.rc)
		return diag_fail(err, TFILE_FAIL_FILE, "%s: %s", shown(src), rs.why);
	void *map = mmap(NULL, (size_t)rs.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fds[0], 0);
	if (map == MAP_FAILED) {
		close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		return diag_fail(err, TFILE_FAIL_FILE, "%s: cannot map its image: %s", shown(src), strerror(errno));
	}
	struct tfile_image *img = xcalloc(1, sizeof(*img));
	img->bytes = map;
	img->size = (size_t)rs.size;
	if (!(flags & TFILE_KEEP_MEMFD)) { /* the mapping holds the image: a descriptor less */
		close(fds[0]);
		fds[0] = -1;
	}
	img->memfd = fds[0];
	img->fd = fds[1];
	img->dev = rs.dev;
	img->ino = rs.ino;
	img->mtime_ns = rs.mtime_ns;
	img->crc = rs.crc;
	*out = img;
	return 0;
}

/* The content of a response's memfd, NUL-terminated; closes the fds. */
static char *response_bytes(const struct response *rs, int *fds)
{
	char *buf = xmalloc(rs->size + 1);
	size_t got = pread_full(fds[0], buf, (size_t)rs->size, 0);
	buf[got] = '\0';
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (got != rs->size) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *tfile_read_text(struct tfile_reader *r, const struct tfile_src *src, size_t max, size_t *len,
		      uid_t *owner, struct diag_err *err)
{
	struct request rq;
	struct response rs;
	int fds[2];
	request_init(&rq, REQ_TEXT, src);
	rq.max = max;
	if (ask(r, &rq, &rs, fds, err)) {
		diag_wrap(err, "%s", shown(src));
		return NULL;
	}
	if (rs.rc) {
		diag_fail(err, TFILE_FAIL_FILE, "%s: %s", shown(src), rs.why);
		return NULL;
	}
	char *text = response_bytes(&rs, fds);
	if (!text) {
		diag_fail(err, TFILE_FAIL_FILE, "%s: its text was cut short", shown(src));
		return NULL;
	}
	if (len)
		*len = (size_t)rs.size;
	if (owner)
		*owner = rs.owner;
	return text;
}

char *tfile_read_proc(struct tfile_reader *r, int pid, const char *name, size_t max, size_t *len,
		      struct diag_err *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	/* each process's /proc files stall (on its memory map's lock) apart from any file system */
	struct tfile_src src = { .path = path, .proc = true, .dev = 1ull << 63 | (uint64_t)(unsigned)pid };
	return tfile_read_text(r, &src, max, len, NULL, err);
}

/* Asks a helper for kind (REQ_MEM, REQ_PAGES: flags and max its own) over [addr, addr + len) of
 * process pid's memory (its own stall domain: the process's memory map's lock), what for the
 * errors ("the memory"). 0 with *rs and fds (the caller reads fds[0] and closes both: close_pair),
 * or -1 with err. */
static int ask_target(struct tfile_reader *r, enum req_kind kind, int pid, uint64_t addr, uint64_t len,
		      uint32_t flags, uint64_t max, struct request *rq, struct response *rs, int *fds,
		      const char *what, struct diag_err *err)
{
	struct tfile_src src = { .pid = pid, .dev = 1ull << 63 | (uint64_t)(unsigned)pid };
	request_init(rq, kind, &src);
	rq->mem_addr = addr;
	rq->mem_len = len;
	rq->flags = flags;
	rq->max = max;
	if (ask(r, rq, rs, fds, err))
		return diag_wrap(err, "%s of process %d", what, pid);
	if (rs->rc)
		return diag_fail(err, TFILE_FAIL_FILE, "%s", rs->why);
	return 0;
}

static void close_pair(int *fds)
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int tfile_read_mem(struct tfile_reader *r, int pid, uint64_t addr, size_t len, void *buf,
		   struct diag_err *err)
{
	struct request rq;
	struct response rs;
	int fds[2];
	if (ask_target(r, REQ_MEM, pid, addr, len, 0, 0, &rq, &rs, fds, "the memory", err))
		return -1;
	size_t got = rs.size == len ? pread_full(fds[0], buf, len, 0) : 0; /* straight into buf */
	close_pair(fds);
	if (rs.size != len || got != len)
		return diag_fail(err, TFILE_FAIL_FILE, "the memory of process %d: cut short", pid);
	return 0;
}

int tfile_read_page_runs(struct tfile_reader *r, int pid, uint64_t start, uint64_t end,
			 enum tfile_pages_how want, struct tfile_page_run *runs, size_t max, size_t *n,
			 uint64_t *next, struct diag_err *err)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	*n = 0;
	*next = start;
	if (start % page || end % page || end < start || !max || max > TFILE_PAGE_RUNS_MAX)
		return diag_fail(err, TFILE_FAIL_FILE, "page runs of process %d: a bad range or count", pid);
	if (end == start)
		return want;
	struct request rq;
	struct response rs;
	int fds[2];
	if (ask_target(r, REQ_PAGES, pid, start, end - start, (uint32_t)want, max, &rq, &rs, fds,
		       "the page tables", err))
		return -1;
	size_t k = (size_t)(rs.size / sizeof(*runs));
	bool ok = rs.size % sizeof(*runs) == 0 && k <= max &&
		  pread_full(fds[0], runs, (size_t)rs.size, 0) == rs.size && rs.next <= end &&
		  (rs.next > start || k) && (rs.how == TFILE_PAGES_SCAN || rs.how == TFILE_PAGES_ENTRIES);
	for (size_t i = 0; ok && i < k; i++) /* in order, inside what was examined */
		ok = runs[i].start < runs[i].end && runs[i].start >= (i ? runs[i - 1].end : start) &&
		     runs[i].end <= rs.next && !(runs[i].start % page) && !(runs[i].end % page);
	close_pair(fds);
	if (!ok)
		return diag_fail(err, TFILE_FAIL_FILE, "the page tables of process %d: a malformed answer", pid);
	*n = k;
	*next = rs.next;
	return (int)rs.how;
}

int tfile_stat(struct tfile_reader *r, const struct tfile_src *src, uint64_t *size,
	       uint64_t *mtime_ns, struct diag_err *err)
{
	struct request rq;
	struct response rs;
	int fds[2];
	request_init(&rq, REQ_STAT, src);
	if (ask(r, &rq, &rs, fds, err))
		return -1;
	if (rs.rc)
		return diag_fail(err, TFILE_FAIL_FILE, "%s: %s", shown(src), rs.why);
	*size = rs.size;
	*mtime_ns = rs.mtime_ns;
	return 0;
}

void *tfile_read_fd(struct tfile_reader *r, int fd, uint64_t domain, const char *what, size_t max,
		    size_t *len, struct diag_err *err)
{
	struct request rq;
	struct response rs;
	int fds[2];
	request_init(&rq, REQ_FD, &(struct tfile_src){ .path = what, .dev = domain });
	rq.max = max;
	if (ask_with(r, &rq, fd, &rs, fds, err)) {
		diag_wrap(err, "%s", what);
		return NULL;
	}
	if (rs.rc) {
		diag_fail(err, TFILE_FAIL_FILE, "%s: %s", what, rs.why);
		return NULL;
	}
	char *bytes = response_bytes(&rs, fds);
	if (!bytes) {
		diag_fail(err, TFILE_FAIL_FILE, "%s: cut short", what);
		return NULL;
	}
	*len = (size_t)rs.size;
	return bytes;
}

int tfile_reader_test_block(struct tfile_reader *r, uint64_t dev, const char *fifo,
			    struct diag_err *err)
{
	struct request rq;
	struct response rs;
	int fds[2];
	request_init(&rq, REQ_TEST_BLOCK, &(struct tfile_src){ .path = fifo, .dev = dev });
	return ask(r, &rq, &rs, fds, err);
}
