/* debuginfo.c — separate debug files, found on local paths and checked (see debuginfo.h).
 *
 * Owns: reading build-id notes and .gnu_debuglink sections, the debug file search order and its
 * verification.
 * Must not: print, use the network, open a file itself (every candidate is read by tfile.c: a
 * regular file of bounded size, inside the target's root, on a worker that cannot stall us),
 * hold state, or trust the target: the debuglink name is a file name (no '/', not "." or ".."),
 * and a candidate is used only when its build-id (or, when the file has none, the CRC the
 * debuglink records) matches.
 */
#include "symbolize/debuginfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The candidate at p (in the root of pid) if it is the debug file: the same build-id when the
 * file has one, else the CRC its debuglink records. */
static struct tfile_image *candidate(struct tfile_reader *r, int pid, const char *p,
				     const unsigned char *id, size_t idlen, int check_crc, uint32_t crc,
				     unsigned flags)
{
	/* a stall here holds the debug files of this root, not every root's */
	struct tfile_src src = { .pid = pid, .path = p, .dev = 1ull << 62 | (uint64_t)(unsigned)pid };
	struct tfile_image *img = NULL;
	struct diag_err ignore;
	if (tfile_read_elf(r, &src, flags | (idlen ? 0 : TFILE_CRC), &img, &ignore))
		return NULL;
	Elf *e = img->size <= DEBUGINFO_MAX_BYTES ? tfile_image_elf(img) : NULL;
	unsigned char cid[64];
	size_t clen = e && elf_kind(e) == ELF_K_ELF ? elf_build_id(e, cid, sizeof(cid)) : 0;
	int ok = e && elf_kind(e) == ELF_K_ELF &&
		 (idlen ? clen == idlen && !memcmp(cid, id, idlen) : check_crc && img->crc == crc);
	elf_end(e);
	if (!ok) {
		tfile_image_free(img);
		return NULL;
	}
	return img;
}

struct tfile_image *debuginfo_find(struct tfile_reader *r, Elf *elf, int pid, const char *path,
				   unsigned flags)
{
	unsigned char id[64];
	char link[NAME_MAX + 1], p[PATH_MAX + 64], hex[2 * sizeof(id) + 1];
	uint32_t crc = 0;
	size_t idlen = elf_build_id(elf, id, sizeof(id));
	int has_link = !elf_debuglink(elf, link, sizeof(link), &crc);
	const char *slash = path ? strrchr(path, '/') : NULL;
	int dirlen = slash && path[0] == '/' && slash - path < PATH_MAX ? (int)(slash - path) : -1;
	int roots[2] = { pid > 0 ? pid : 0, 0 };
	struct tfile_image *img = NULL;

	for (size_t i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	for (int k = 0; k < (pid > 0 ? 2 : 1) && !img; k++) {
		if (idlen >= 2) {
			snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
			img = candidate(r, roots[k], p, id, idlen, 0, 0, flags);
		}
		if (!has_link || dirlen < 0)
			continue;
		for (int w = 0; w < 3 && !img; w++) { /* DIR/name, DIR/.debug/name, /usr/lib/debug/DIR/name */
			snprintf(p, sizeof(p), "%s%.*s%s/%s", w == 2 ? "/usr/lib/debug" : "", dirlen, path,
				 w == 1 ? "/.debug" : "", link);
			img = candidate(r, roots[k], p, id, idlen, 1, crc, flags);
		}
	}
	return img;
}
