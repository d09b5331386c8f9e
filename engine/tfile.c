/* tfile.c — files a target names, opened where it cannot steer us and read where it cannot stall
 * us (see tfile.h).
 *
 * Choices:
 * - A worker thread per read, detached: the caller waits on the worker's eventfd (and the
 *   reader's stop descriptor) with poll, so a wait has a deadline whatever the read does. A job
 *   is shared by its waiter and its worker (two references); whoever finishes last frees it, so a
 *   worker left behind never touches the reader, which may be gone.
 * - Jobs left behind are kept by the reader (a reference each) until their worker finishes: while
 *   one is out, the file system it reads (the mapping's device) is not read again.
 * - ELF headers are parsed here only to know which byte ranges to read (bounded by the file);
 *   the sections wanted are the ones the engine's readers use: symbol tables and their strings,
 *   notes, .eh_frame(_hdr), .debug_frame, .gnu_debuglink, .gnu_debugdata, .stapsdt.base.
 */
#include "tfile.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#define OVERLAYFS_MAGIC 0x794c7630
#define TFILE_BUSY_MAX_NS 30000000000ull /* a worker that keeps running is waited for this long */
#define NOSHDR_LOAD_MAX ((uint64_t)64 << 20) /* a file without section headers: its CFI segment */

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
 * Opening (on the worker)
 * ------------------------------------------------------------------------------------------- */

static const char *file_type(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : S_ISDIR(m) ? "a directory" : "not a regular file";
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
		pfd = root_open(s->pid, s->path, O_PATH, s->resolve);
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
	if (s->ino && !via_map && s->dev && dev_key(st->st_dev) != s->dev) {
		struct statfs fs; /* overlayfs shows its own device; the mapping, the layer's */
		if (fstatfs(pfd, &fs) || fs.f_type != OVERLAYFS_MAGIC) {
			snprintf(why, wlen, "not the mapped file (another device)");
			close(pfd);
			return -1;
		}
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

/* pread until len or the end of the file; the bytes read. */
static size_t read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* ---------------------------------------------------------------------------------------------
 * ELF images (on the worker)
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
		if (read_at(fd, img + r[i].off, r[i].len, r[i].off) != r[i].len)
			return false;
	return true;
}

static bool wanted_name(const char *n)
{
	static const char *const names[] = { ".eh_frame", ".eh_frame_hdr", ".debug_frame",
					     ".gnu_debuglink", ".gnu_debugdata", ".stapsdt.base" };
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
	if (read_at(fd, img + l->shoff, ent, l->shoff) != ent)
		return snprintf(why, wlen, "section headers cut short"), -1;
	shdr_at(l, img + l->shoff, &sh);
	if (!shnum) /* extended numbering: the count is in section 0 */
		shnum = sh.size;
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh.link;
	if (!table_fits(l->shoff, shnum, ent, size) || shnum > 1u << 20)
		return snprintf(why, wlen, "section headers outside the file"), -1;
	if (read_at(fd, img + l->shoff, shnum * ent, l->shoff) != shnum * ent)
		return snprintf(why, wlen, "section headers cut short"), -1;
	range_add(rs, l->shoff, shnum * ent, size);

	/* the section names first */
	struct shdr_info names = { 0 };
	if (shstrndx < shnum) {
		shdr_at(l, img + l->shoff + shstrndx * ent, &names);
		if (names.type != SHT_STRTAB || names.offset >= size || names.size > size - names.offset ||
		    read_at(fd, img + names.offset, names.size, names.offset) != names.size)
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

/* The image of the ELF file on fd (st: its status): see tfile.h. */
static struct tfile_image *image_read(int fd, const struct stat *st, char *why, size_t wlen)
{
	uint64_t size = (uint64_t)st->st_size;
	unsigned char head[64] = { 0 };
	struct elf_layout l;
	if (read_at(fd, head, sizeof(head), 0) < 52 || elf_layout_read(head, size, &l)) {
		snprintf(why, wlen, "not an ELF file");
		return NULL;
	}
	void *map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED) {
		snprintf(why, wlen, "no memory for a %llu-byte image", (unsigned long long)size);
		return NULL;
	}
	unsigned char *img = map, *shdrs = NULL, *phdrs = NULL;
	uint64_t shdrs_len = 0, ehsize = l.is64 ? 64 : 52, phdrs_len = l.phnum * l.phentsize;
	struct ranges rs = { 0 };
	bool ok = true;
	range_add(&rs, 0, ehsize, size);
	if (phdrs_len) {
		range_add(&rs, l.phoff, phdrs_len, size);
		phdrs = xmalloc(phdrs_len);
		ok = read_at(fd, phdrs, phdrs_len, l.phoff) == phdrs_len;
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
	if (!ok) {
		munmap(map, (size_t)size);
		free(rs.r);
		return NULL;
	}
	struct tfile_image *im = xcalloc(1, sizeof(*im));
	im->bytes = img;
	im->size = (size_t)size;
	im->ranges = rs.r;
	im->nranges = rs.n;
	im->fd = -1;
	return im;
}

static int file_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	for (uint64_t off = 0;;) {
		size_t n = read_at(fd, buf, sizeof(buf), off);
		if (!n)
			break;
		c = crc32(c, buf, (uInt)n);
		off += n;
		if (n < sizeof(buf))
			break;
	}
	*crc = (uint32_t)c;
	return 0;
}

void tfile_image_free(struct tfile_image *img)
{
	if (!img)
		return;
	if (img->bytes)
		munmap(img->bytes, img->size);
	if (img->fd >= 0)
		close(img->fd);
	free(img->ranges);
	free(img);
}

Elf *tfile_image_elf(struct tfile_image *img)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	return elf_memory((char *)img->bytes, img->size);
}

int tfile_image_memfd(const struct tfile_image *img)
{
	int fd = memfd_create("diagnose-image", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	bool ok = ftruncate(fd, (off_t)img->size) == 0;
	for (size_t i = 0; ok && i < img->nranges; i++) {
		const struct tfile_range *r = &img->ranges[i];
		for (uint64_t done = 0; ok && done < r->len;) {
			ssize_t n = pwrite(fd, img->bytes + r->off + done, r->len - done, (off_t)(r->off + done));
			ok = n > 0;
			done += ok ? (uint64_t)n : 0;
		}
	}
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}
/* ---------------------------------------------------------------------------------------------
 * Jobs: one read, shared by its waiter and its worker
 * ------------------------------------------------------------------------------------------- */

enum job_kind { JOB_ELF, JOB_TEXT, JOB_MEM, JOB_STAT, JOB_CALL };

struct job {
	atomic_int refs;
	atomic_bool finished;
	atomic_int tid;         /* the worker's thread, once it runs (0 before) */
	int done_fd;            /* eventfd, written by the worker when finished */
	enum job_kind kind;
	uint64_t dev;           /* the file system it reads (0: not known) */
	struct tfile_src src;
	char path[PATH_MAX];    /* src.path's copy */
	unsigned flags;
	size_t max;             /* text: the most read */
	uint64_t mem_addr;
	size_t mem_len;
	int (*fn)(void *);
	void *arg;
	/* results */
	int rc;
	char why[256];
	struct tfile_image *img;
	char *text;
	size_t text_len;
	uid_t owner;
	void *mem;
	uint64_t st_size, st_mtime_ns;
};

static void job_unref(struct job *j)
{
	if (atomic_fetch_sub(&j->refs, 1) != 1)
		return;
	if (j->done_fd >= 0)
		close(j->done_fd);
	tfile_image_free(j->img);
	free(j->text);
	free(j->mem);
	free(j);
}

static void job_run_elf(struct job *j)
{
	struct stat st;
	int path_fd = -1;
	int fd = open_checked(&j->src, TFILE_MAX_ELF_BYTES, &st,
			      j->flags & TFILE_KEEP_FD ? &path_fd : NULL, j->why, sizeof(j->why));
	if (fd < 0)
		return;
	j->img = image_read(fd, &st, j->why, sizeof(j->why));
	if (j->img) {
		j->img->dev = dev_key(st.st_dev);
		j->img->ino = (uint64_t)st.st_ino;
		j->img->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
		if (j->flags & TFILE_CRC)
			file_crc(fd, &j->img->crc);
		j->img->fd = path_fd;
		path_fd = -1;
		j->rc = 0;
	}
	if (path_fd >= 0)
		close(path_fd);
	close(fd);
}

static void job_run_text(struct job *j)
{
	struct stat st;
	int fd = open_checked(&j->src, UINT64_MAX, &st, NULL, j->why, sizeof(j->why));
	if (fd < 0)
		return;
	size_t cap = j->src.proc || (uint64_t)st.st_size >= j->max ? 65536 : (size_t)st.st_size + 1;
	size_t len = 0;
	if (cap > j->max + 1)
		cap = j->max + 1;
	char *buf = xmalloc(cap);
	while (len < j->max) { /* at most max bytes: a longer file is read that far */
		if (len + 1 >= cap) {
			cap = cap * 2 > j->max + 1 ? j->max + 1 : cap * 2;
			buf = xrealloc(buf, cap);
		}
		size_t want = cap - len - 1;
		if (want > j->max - len)
			want = j->max - len;
		ssize_t n = read(fd, buf + len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(j->why, sizeof(j->why), "cannot read: %s", strerror(errno));
			free(buf);
			close(fd);
			return;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	j->text = buf;
	j->text_len = len;
	j->owner = st.st_uid;
	j->rc = 0;
}

static void job_run_mem(struct job *j)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", j->src.pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(j->why, sizeof(j->why), "cannot open %s: %s", p, strerror(errno));
		return;
	}
	j->mem = xmalloc(j->mem_len ? j->mem_len : 1);
	if (read_at(fd, j->mem, j->mem_len, j->mem_addr) == j->mem_len)
		j->rc = 0;
	else
		snprintf(j->why, sizeof(j->why), "cannot read the memory of process %d", j->src.pid);
	close(fd);
}

static void job_run_stat(struct job *j)
{
	struct stat st;
	int fd = open_checked(&j->src, UINT64_MAX, &st, NULL, j->why, sizeof(j->why));
	if (fd < 0)
		return;
	close(fd);
	j->st_size = (uint64_t)st.st_size;
	j->st_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	j->rc = 0;
}

static void *worker_main(void *arg)
{
	struct job *j = arg;
	atomic_store(&j->tid, (int)syscall(SYS_gettid));
	j->rc = -1;
	switch (j->kind) {
	case JOB_ELF: job_run_elf(j); break;
	case JOB_TEXT: job_run_text(j); break;
	case JOB_MEM: job_run_mem(j); break;
	case JOB_STAT: job_run_stat(j); break;
	case JOB_CALL: j->rc = j->fn(j->arg); break;
	}
	atomic_store(&j->finished, true);
	uint64_t one = 1;
	if (write(j->done_fd, &one, sizeof(one)) < 0) { /* cannot fail: an eventfd far from full */
	}
	job_unref(j);
	return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The reader: waits, deadlines, workers left behind
 * ------------------------------------------------------------------------------------------- */

struct tfile_reader {
	pthread_mutex_t lock;
	uint64_t deadline_ns;
	int stop_fd;
	struct job *behind[TFILE_MAX_STALLED]; /* workers left behind, still reading */
	size_t n_behind;
	/* for the note */
	uint64_t stalled, stopped, late, refused_fs, refused_all;
	char first_stalled[PATH_MAX + 32];
};

struct tfile_reader *tfile_reader_new(void)
{
	struct tfile_reader *r = xcalloc(1, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->stop_fd = -1;
	return r;
}

void tfile_reader_free(struct tfile_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_behind; i++)
		job_unref(r->behind[i]); /* its worker frees it when (if ever) it finishes */
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void tfile_reader_set_deadline(struct tfile_reader *r, uint64_t deadline_ns)
{
	pthread_mutex_lock(&r->lock);
	r->deadline_ns = deadline_ns;
	pthread_mutex_unlock(&r->lock);
}

void tfile_reader_set_stop_fd(struct tfile_reader *r, int fd)
{
	pthread_mutex_lock(&r->lock);
	r->stop_fd = fd;
	pthread_mutex_unlock(&r->lock);
}

char *tfile_reader_note(struct tfile_reader *r)
{
	pthread_mutex_lock(&r->lock);
	char parts[5][320];
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

/* Drops the workers left behind that have finished since. Under the lock. */
static void reap_behind(struct tfile_reader *r)
{
	size_t k = 0;
	for (size_t i = 0; i < r->n_behind; i++) {
		if (atomic_load(&r->behind[i]->finished))
			job_unref(r->behind[i]);
		else
			r->behind[k++] = r->behind[i];
	}
	r->n_behind = k;
}

static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* Whether j's worker is running or runnable (state R): still working, not waiting in the kernel
 * for a file system that does not answer. A worker not started yet counts as runnable. */
static bool worker_running(struct job *j)
{
	int tid = atomic_load(&j->tid);
	if (!tid)
		return true;
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/self/task/%d/stat", tid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')'); /* "tid (comm) S ..." */
	return paren && paren[1] == ' ' && paren[2] == 'R';
}

/* Whether j may start now (0), else why not (-1, err). Under the lock. */
static int may_start(struct tfile_reader *r, const struct job *j, uint64_t now, struct diag_err *err)
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
		if (r->behind[i]->dev == j->dev) {
			r->refused_fs++;
			return diag_fail(err, TFILE_FAIL_WAIT, "its file system stalled a read before");
		}
	return 0;
}

/* Runs j on a worker and waits for it (see tfile.h). Takes the caller's reference to j: after
 * it returns 0, *done is j when finished (the caller reads the results, then job_unref). */
static int job_wait(struct tfile_reader *r, struct job *j, struct job **done, struct diag_err *err)
{
	*done = NULL;
	pthread_mutex_lock(&r->lock);
	uint64_t now = mono_ns(), deadline = r->deadline_ns;
	int stop_fd = r->stop_fd;
	int rc = may_start(r, j, now, err);
	pthread_mutex_unlock(&r->lock);
	if (rc) {
		job_unref(j);
		return -1;
	}
	j->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_store(&j->refs, 2);
	if (j->done_fd < 0 || pthread_create(&t, &attr, worker_main, j)) {
		pthread_attr_destroy(&attr);
		atomic_store(&j->refs, 1);
		job_unref(j);
		return diag_fail(err, TFILE_FAIL_WAIT, "cannot start a reader thread: %s", strerror(errno));
	}
	pthread_attr_destroy(&attr);
	uint64_t started = now, until = now + TFILE_WAIT_NS;
	if (deadline && deadline < until)
		until = deadline;
	enum { DONE, STOPPED, TIMED_OUT } how = TIMED_OUT;
	for (;;) {
		now = mono_ns();
		if (atomic_load(&j->finished)) {
			how = DONE;
			break;
		}
		if (now >= until && until != deadline && now - started < TFILE_BUSY_MAX_NS &&
		    worker_running(j)) {
			/* not waiting on the file: on a CPU, or for one (a loaded machine) */
			until = now + TFILE_WAIT_NS;
			if (deadline && deadline < until)
				until = deadline;
		}
		if (now >= until)
			break;
		struct pollfd p[2] = { { .fd = j->done_fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
		int n = poll(p, 2, (int)((until - now + 999999) / 1000000));
		if (n > 0 && (p[1].revents & POLLIN) && !atomic_load(&j->finished)) {
			how = STOPPED;
			break;
		}
	}
	if (how == DONE) {
		*done = j;
		return 0;
	}
	pthread_mutex_lock(&r->lock);
	if (how == STOPPED) {
		r->stopped++;
		diag_fail(err, TFILE_FAIL_WAIT, "a stop signal arrived while it was read");
	} else if (r->deadline_ns && now >= r->deadline_ns && until == r->deadline_ns) {
		r->late++;
		diag_fail(err, TFILE_FAIL_WAIT, "not read by the end of the run's time for reading files");
	} else {
		r->stalled++;
		if (!r->first_stalled[0])
			snprintf(r->first_stalled, sizeof(r->first_stalled), "%s", j->path[0] ? j->path : "?");
		diag_fail(err, TFILE_FAIL_WAIT, "no answer within %.1f s (a stalled file system?)",
			  TFILE_WAIT_NS / 1e9);
	}
	if (how != STOPPED && r->n_behind < TFILE_MAX_STALLED) {
		r->behind[r->n_behind++] = j; /* our reference: its file system waits for it */
		j = NULL;
	}
	pthread_mutex_unlock(&r->lock);
	if (j)
		job_unref(j);
	return -1;
}

static struct job *job_new(enum job_kind kind, const struct tfile_src *src)
{
	struct job *j = xcalloc(1, sizeof(*j));
	atomic_init(&j->refs, 1);
	atomic_init(&j->finished, false);
	atomic_init(&j->tid, 0);
	j->done_fd = -1;
	j->kind = kind;
	j->rc = -1;
	if (src) {
		j->src = *src;
		snprintf(j->path, sizeof(j->path), "%s", src->path ? src->path : "");
		j->src.path = j->path[0] ? j->path : NULL;
		j->dev = src->dev;
	}
	return j;
}

static int job_failed(struct job *j, const struct tfile_src *src, struct diag_err *err)
{
	diag_fail(err, TFILE_FAIL_FILE, "%s: %s", src && src->path ? src->path : "?", j->why);
	job_unref(j);
	return -1;
}

int tfile_read_elf(struct tfile_reader *r, const struct tfile_src *src, unsigned flags,
		   struct tfile_image **out, struct diag_err *err)
{
	struct job *j = job_new(JOB_ELF, src), *done;
	j->flags = flags;
	*out = NULL;
	if (job_wait(r, j, &done, err))
		return diag_wrap(err, "%s", src->path ? src->path : "a mapped file");
	if (done->rc)
		return job_failed(done, src, err);
	*out = done->img;
	done->img = NULL;
	job_unref(done);
	return 0;
}

char *tfile_read_text(struct tfile_reader *r, const struct tfile_src *src, size_t max, size_t *len,
		      uid_t *owner, struct diag_err *err)
{
	struct job *j = job_new(JOB_TEXT, src), *done;
	j->max = max;
	if (job_wait(r, j, &done, err)) {
		diag_wrap(err, "%s", src->path ? src->path : "?");
		return NULL;
	}
	if (done->rc) {
		job_failed(done, src, err);
		return NULL;
	}
	char *text = done->text;
	done->text = NULL;
	if (len)
		*len = done->text_len;
	if (owner)
		*owner = done->owner;
	job_unref(done);
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

int tfile_read_mem(struct tfile_reader *r, int pid, uint64_t addr, size_t len, void *buf,
		   struct diag_err *err)
{
	struct tfile_src src = { .pid = pid, .dev = 1ull << 63 | (uint64_t)(unsigned)pid };
	struct job *j = job_new(JOB_MEM, &src), *done;
	j->mem_addr = addr;
	j->mem_len = len;
	if (job_wait(r, j, &done, err))
		return diag_wrap(err, "the memory of process %d", pid);
	if (done->rc) {
		diag_fail(err, TFILE_FAIL_FILE, "%s", done->why);
		job_unref(done);
		return -1;
	}
	memcpy(buf, done->mem, len);
	job_unref(done);
	return 0;
}

int tfile_stat(struct tfile_reader *r, const struct tfile_src *src, uint64_t *size,
	       uint64_t *mtime_ns, struct diag_err *err)
{
	struct job *j = job_new(JOB_STAT, src), *done;
	if (job_wait(r, j, &done, err))
		return -1;
	if (done->rc)
		return job_failed(done, src, err);
	*size = done->st_size;
	*mtime_ns = done->st_mtime_ns;
	job_unref(done);
	return 0;
}

int tfile_reader_run(struct tfile_reader *r, uint64_t dev, int (*fn)(void *arg), void *arg,
		     struct diag_err *err)
{
	struct job *j = job_new(JOB_CALL, NULL), *done;
	j->dev = dev;
	j->fn = fn;
	j->arg = arg;
	if (job_wait(r, j, &done, err))
		return -1;
	int rc = done->rc;
	job_unref(done);
	return rc;
}
