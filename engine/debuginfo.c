/* debuginfo.c — separate debug files, found on local paths and checked (see debuginfo.h).
 *
 * Owns: root_open (openat2 RESOLVE_IN_ROOT under /proc/PID/root), reading build-id notes and
 * .gnu_debuglink sections, the debug file search order and its verification.
 * Must not: print, use the network, hold state, trust the target: the debuglink name is a file
 * name (no '/', not "." or ".."), every candidate is a regular file of bounded size opened
 * without blocking, and is used only when its build-id (or, lacking one, the CRC the debuglink
 * records) matches.
 */
#include "debuginfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

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

static size_t note_build_id(Elf_Data *d, unsigned char *id, size_t max)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;
	while (d && off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz) {
			size_t n = nh.n_descsz < max ? nh.n_descsz : max;
			memcpy(id, (const char *)d->d_buf + desc_off, n);
			return n;
		}
		off = next;
	}
	return 0;
}

size_t elf_build_id(Elf *elf, unsigned char *id, size_t max)
{
	Elf_Scn *scn = NULL;
	size_t n = 0, nph = 0;
	while (!n && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE)
			n = note_build_id(elf_getdata(scn, NULL), id, max);
	}
	if (n || elf_getphdrnum(elf, &nph))
		return n;
	for (size_t i = 0; !n && i < nph; i++) { /* no section headers: the PT_NOTE segments */
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE)
			n = note_build_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
							       ELF_T_NHDR), id, max);
	}
	return n;
}

/* The .gnu_debuglink of elf: the file name (a plain name, checked) and the CRC. Returns 0 or -1. */
static int elf_debuglink(Elf *elf, char *name, size_t len, uint32_t *crc)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sn;
		if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(sn, ".gnu_debuglink"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return -1;
		const unsigned char *b = d->d_buf;
		size_t n = strnlen((const char *)b, d->d_size), at = (n + 4) & ~(size_t)3;
		if (!n || n >= len || at + 4 > d->d_size || memchr(b, '/', n) ||
		    !strcmp((const char *)b, ".") || !strcmp((const char *)b, ".."))
			return -1;
		memcpy(name, b, n + 1);
		*crc = eh.e_ident[EI_DATA] == ELFDATA2MSB
			       ? (uint32_t)b[at] << 24 | (uint32_t)b[at + 1] << 16 | (uint32_t)b[at + 2] << 8 | b[at + 3]
			       : (uint32_t)b[at + 3] << 24 | (uint32_t)b[at + 2] << 16 | (uint32_t)b[at + 1] << 8 | b[at];
		return 0;
	}
	return -1;
}

/* zlib's CRC-32 (the one .gnu_debuglink records) of the whole file fd. */
static int file_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	off_t off = 0;
	for (;;) {
		ssize_t r = pread(fd, buf, sizeof(buf), off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r)
			break;
		c = crc32(c, buf, (uInt)r);
		off += r;
	}
	*crc = (uint32_t)c;
	return 0;
}

/* The candidate at p (in the root of pid) if it is the debug file: same build-id when both have
 * one, else (check_crc) the debuglink's CRC. */
static Elf *candidate(int pid, const char *p, const unsigned char *id, size_t idlen, int check_crc,
		      uint32_t crc, int *fdp)
{
	struct stat st;
	int fd = root_open(pid, p, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > DEBUGINFO_MAX_BYTES) {
		close(fd);
		return NULL;
	}
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	unsigned char cid[64];
	size_t clen = e && elf_kind(e) == ELF_K_ELF ? elf_build_id(e, cid, sizeof(cid)) : 0;
	uint32_t c = ~crc;
	int ok = e && elf_kind(e) == ELF_K_ELF &&
		 (idlen && clen ? clen == idlen && !memcmp(cid, id, idlen)
				: check_crc && !file_crc(fd, &c) && c == crc);
	if (!ok) {
		elf_end(e);
		close(fd);
		return NULL;
	}
	*fdp = fd;
	return e;
}

Elf *debuginfo_open(Elf *elf, int pid, const char *path, int *fd)
{
	unsigned char id[64];
	char link[NAME_MAX + 1], p[PATH_MAX + 64], hex[2 * sizeof(id) + 1];
	uint32_t crc = 0;
	size_t idlen = elf_build_id(elf, id, sizeof(id));
	int has_link = !elf_debuglink(elf, link, sizeof(link), &crc);
	const char *slash = path ? strrchr(path, '/') : NULL;
	int dirlen = slash && path[0] == '/' && slash - path < PATH_MAX ? (int)(slash - path) : -1;
	int roots[2] = { pid > 0 ? pid : 0, 0 };
	Elf *e = NULL;

	for (size_t i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	for (int r = 0; r < (pid > 0 ? 2 : 1) && !e; r++) {
		if (idlen >= 2) {
			snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
			e = candidate(roots[r], p, id, idlen, 0, 0, fd);
		}
		if (!has_link || dirlen < 0)
			continue;
		for (int k = 0; k < 3 && !e; k++) { /* DIR/name, DIR/.debug/name, /usr/lib/debug/DIR/name */
			snprintf(p, sizeof(p), "%s%.*s%s/%s", k == 2 ? "/usr/lib/debug" : "", dirlen, path,
				 k == 1 ? "/.debug" : "", link);
			e = candidate(roots[r], p, id, idlen, 1, crc, fd);
		}
	}
	return e;
}
