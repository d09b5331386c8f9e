/* usyms.c — user symbols (/proc/PID/maps + ELF via libelf).
 *
 * Owns: each process's merged mapping snapshots and perf map, and a cache of the ELF files they
 * map (load segments, function symbols demangled and copied out of libelf, .eh_frame function
 * ranges); finding a function's file offset by name (uprobe placement), with a precise reason
 * when it cannot.
 * Must not: print, hold global state, reopen a file per lookup, or return the name of a symbol
 * that does not contain the address (no "nearest symbol" guessing).
 *
 * Choices:
 * - ELF files are loaded eagerly when a snapshot (or usyms_add_mapping) first sees them,
 *   so symbolizing after the process exits needs no file access. Files, the maps, the vdso and
 *   the perf map are read by tfile.c (the mapped file through /proc/PID/map_files, else the path
 *   inside the target's root if it is the mapped inode; regular files only; on a worker a
 *   stalled file system cannot hold us on), into memory that libelf parses. .symtab;
 *   without one, .dynsym plus the .symtab of the separate debug file (build-id, .gnu_debuglink:
 *   local paths, verified; no debuginfod); without either, .eh_frame FDE ranges group unnamed
 *   code by function. [vdso] is read from /proc/PID/mem. Names are kept as the file has them and
 *   demangled when a lookup first returns one (kept for the run): a C++ binary has ~100k
 *   function symbols, a run's stacks name a few hundred (node: 33.5 -> 30.9 MiB peak RSS, and
 *   the demangling of all of them no longer on the load). The symbol table is read in order and
 *   the function names in string-table order, both tables given back to the system as the
 *   reading passes them (tfile_image_release): node's 10 MB of tables and the 6 MB of names
 *   copied out of them are never in memory together.
 * - JIT: the perf map names only addresses that no file-backed mapping covers.
 * - The runtime (JVM, Node) is told by a mapped file's basename only: a hint for advice, never
 *   a reason to trust a file.
 * - The files are the target's: a symbol table whose entry size is not the ELF class's symbol
 *   size, or whose extent is outside the file, is ignored as if absent (never sized from its
 *   header alone).
 * - A snapshot's mappings are merged into the sorted list in one pass (linear in old + new, after
 *   sorting the new ones), and files are found through a hash index: a target with tens of
 *   thousands of mappings costs O(n log n), not O(n^2).
 *
 * Why one file (~1,000 lines): the mapping snapshots, the ELF file cache and the lookups by address
 * and by name are one cache whose entries refer to each other (a snapshot's mappings point into
 * the files); the parsers it uses are their own files (ehframe.c, debuginfo.c, perfmap.c,
 * demangle.c).
 */
#include "symbolize/usyms.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/debuginfo.h"
#include "symbolize/demangle.h"
#include "symbolize/ehframe.h"
#include "common/hash.h"
#include "symbolize/perfmap.h"
#include "common/posindex.h"
#include "target/procfs.h"
#include "symbolize/symbols.h"
#include "target/tfile.h"

/* ---------------------------------------------------------------------------------------------
 * ELF files
 * ------------------------------------------------------------------------------------------- */

struct seg {
	uint64_t off, filesz, vaddr;
	int exec;
};

struct usym {
	uint64_t start, end;
	size_t name;
	enum usym_source src; /* USYM_SRC_SYMTAB or USYM_SRC_DEBUGINFO */
};

struct elf_file {
	char *path;         /* as mapped ("[vdso]" for the vdso) */
	const char *base;   /* basename of path, for "base+0xOFF" */
	uint64_t dev, ino;  /* cache key from maps; 0/0 = keyed by path (usyms_add_mapping) */
	int loaded;         /* segments and symbols read */
	int loaded_by;      /* the pid whose mapping it was read through */
	uint64_t size, mtime_ns; /* of the file read (0: not known): its identity beyond the key */
	int superseded;     /* its inode now holds another file: found no more, kept for old mappings */
	unsigned tried;     /* usyms generation of the last load attempt: one per snapshot */
	struct seg *segs;
	size_t nsegs;
	struct usym *syms;
	size_t nsyms;
	char *names;            /* as the file has them (mangled) */
	const char **demangled; /* per symbol, once looked up: its demangled name, or its name
				 * in names when it does not demangle; NULL: not yet (file_name) */
	struct fde_range *fdes; /* function ranges from .eh_frame, when no full symbol table */
	size_t nfdes;
	char build_id[2 * 64 + 1]; /* its GNU build-id in hex; "": none */
	int64_t vaddr_bias;  /* vaddr - file offset of its first executable segment */
	int in_our_root;     /* its path in our root is the mapped file: 1 yes, -1 no, 0 not asked */
};

struct tmpsym {
	uint64_t start, size;
	size_t name; /* syms_collect's first pass: the offset in the string table; then in names */
	int rank;
	enum usym_source src;
};

/* A gathered symbol becomes its file's entry in the same slot (syms_finish): the table is never
 * held twice. */
union symslot {
	struct tmpsym t;
	struct usym u;
};
_Static_assert(sizeof(union symslot) == sizeof(struct usym), "a slot is a struct usym's size");

/* Function symbols gathered from one or more symbol tables, their names copied into one arena. */
struct symset {
	union symslot *v;
	size_t n, cap;
	char *names;
	size_t len, names_cap;
};

static int tmpsym_cmp(const void *a, const void *b, void *arg)
{
	const char *names = arg;
	const struct tmpsym *x = &((const union symslot *)a)->t, *y = &((const union symslot *)b)->t;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(names + x->name, names + y->name);
}

static int name_off_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	size_t x = ((const union symslot *)a)->t.name, y = ((const union symslot *)b)->t.name;
	return x < y ? -1 : x > y;
}

/* The number of entries of symbol table section scn, with its header and data; 0 when scn is
 * NULL or malformed: entry size other than the size of a symbol of the file's class (an entry
 * size of 1 would claim 24 times more symbols than bytes), contents outside the file, or more
 * entries than gelf_getsym can index. */
static size_t symtab_entries(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, Elf_Data **data)
{
	size_t file_size = 0, sym_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!scn || !sym_size || !gelf_getshdr(scn, sh) || sh->sh_entsize != sym_size ||
	    !elf_rawfile(elf, &file_size) || sh->sh_offset > file_size ||
	    sh->sh_size > file_size - sh->sh_offset || sh->sh_size / sym_size > INT_MAX ||
	    !(*data = elf_getdata(scn, NULL)))
		return 0;
	size_t bytes = sh->sh_size < (*data)->d_size ? sh->sh_size : (*data)->d_size;
	return bytes / sym_size;
}

#define SYMS_RELEASE_STEP (256u << 10) /* bytes of a table read before they are given back */

/* Gives back the image's bytes [from, to) (img NULL: nothing to give back). */
static void release(struct tfile_image *img, uint64_t from, uint64_t to)
{
	if (img && to > from)
		tfile_image_release(img, (size_t)from, (size_t)(to - from));
}

/* The reading of a table at base has passed pos: what lies before it goes back in steps of
 * SYMS_RELEASE_STEP (*done: how far it went back). */
static void release_passed(struct tfile_image *img, uint64_t base, size_t *done, size_t pos)
{
	if (pos - *done >= SYMS_RELEASE_STEP) {
		release(img, base + *done, base + pos);
		*done = pos;
	}
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* Whether the bytes of sections a and b (a symbol table and its strings) may be given back: none
 * of them is what libelf reads after (the ELF header, the program and section headers, the
 * section names' table), as a crafted file could arrange. */
static bool tables_releasable(Elf *elf, size_t b_index, const GElf_Shdr *a, const GElf_Shdr *b)
{
	GElf_Ehdr eh;
	size_t shstrndx, shnum, ehsize;
	Elf_Scn *names;
	GElf_Shdr nsh;
	if (!gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx) || elf_getshdrnum(elf, &shnum) ||
	    !(ehsize = gelf_fsize(elf, ELF_T_EHDR, 1, EV_CURRENT)) ||
	    b_index == shstrndx ||
	    !(names = elf_getscn(elf, shstrndx)) || !gelf_getshdr(names, &nsh))
		return false;
	const GElf_Shdr *t[2] = { a, b };
	for (int i = 0; i < 2; i++) {
		uint64_t off = t[i]->sh_offset, len = t[i]->sh_size;
		if (overlaps(off, len, 0, ehsize > eh.e_ehsize ? ehsize : eh.e_ehsize) || /* not the file's word */
		    overlaps(off, len, eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize) ||
		    overlaps(off, len, eh.e_shoff, (uint64_t)shnum * eh.e_shentsize) ||
		    overlaps(off, len, nsh.sh_offset, nsh.sh_size))
			return false;
	}
	return true;
}

/* Adds the function symbols of symbol table section scn of elf (src: where they come from) to s,
 * their names copied. The symbol table is read in order, then the names in string-table order:
 * with img (the image elf reads), both tables are given back to it as the reading passes them, so
 * that a 99 MB binary's 10 MB of tables are never all in memory beside the copies. Returns how
 * many. */
static size_t syms_collect(struct symset *s, Elf *elf, Elf_Scn *scn, enum usym_source src,
			   struct tfile_image *img)
{
	GElf_Shdr sh, strsh;
	Elf_Data *d, *strd;
	Elf_Scn *strscn;
	size_t n = symtab_entries(elf, scn, &sh, &d), first = s->n;
	if (!n || !(strscn = elf_getscn(elf, sh.sh_link)) || !gelf_getshdr(strscn, &strsh) ||
	    strsh.sh_type != SHT_STRTAB || !(strd = elf_getdata(strscn, NULL)) || !strd->d_buf)
		return 0;
	const char *strs = strd->d_buf;
	size_t strs_len = strd->d_size;
	if (img && !tables_releasable(elf, sh.sh_link, &sh, &strsh))
		img = NULL;
	if (s->cap - s->n < n)
		s->v = xrealloc(s->v, (s->cap = s->n + n) * sizeof(*s->v));
	size_t sym_size = sh.sh_entsize, released = 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		release_passed(img, sh.sh_offset, &released, i * sym_size);
		if (!gelf_getsym(d, (int)i, &sym))
			continue;
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_size ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_name || sym.st_name >= strs_len)
			continue;
		int brank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		s->v[s->n++].t = (struct tmpsym){ sym.st_value, sym.st_size, sym.st_name, brank, src };
	}
	release(img, sh.sh_offset, sh.sh_offset + sh.sh_size);

	/* the names, in string-table order: each copied once however many symbols share it */
	union symslot *v = s->v + first;
	size_t k = s->n - first, m = 0, prev_off = SIZE_MAX, prev_name = 0;
	sort_in_place(v, k, sizeof(*v), name_off_cmp, NULL);
	released = 0;
	for (size_t i = 0; i < k; i++) {
		struct tmpsym t = v[i].t;
		if (t.name != prev_off) {
			release_passed(img, strsh.sh_offset, &released, t.name);
			const char *name = strs + t.name;
			const char *end = memchr(name, '\0', strs_len - t.name);
			if (!end || end == name)
				continue; /* not terminated in the table, or empty */
			size_t l = (size_t)(end - name) + 1;
			if (s->names_cap - s->len < l) {
				while (s->names_cap - s->len < l)
					s->names_cap = s->names_cap ? s->names_cap * 2 : 64 << 10;
				s->names = xrealloc(s->names, s->names_cap);
			}
			memcpy(s->names + s->len, name, l);
			prev_off = t.name;
			prev_name = s->len;
			s->len += l;
		}
		t.rank += leading_underscores(s->names + prev_name) * 4;
		t.name = prev_name;
		v[m++].t = t;
	}
	if (m) /* none found: the strings may serve another table (.dynsym's, in an odd file) */
		release(img, strsh.sh_offset, strsh.sh_offset + strsh.sh_size);
	s->n = first + m;
	return m;
}

#define DEMANGLED_MAX (USYM_NAME_MAX - 1) /* longer (deep templates): stays mangled */

/* The gathered symbols into f: one per start address (the preferred alias), the names' arena
 * kept as it is (file_name demangles them when looked up; the names of aliases not kept stay in
 * it: ~10% of a C++ binary's). Empties s. */
static void syms_finish(struct elf_file *f, struct symset *s)
{
	union symslot *v = s->v;
	size_t k = s->n, m = 0;
	sort_in_place(v, k, sizeof(*v), tmpsym_cmp, s->names);
	for (size_t i = 0; i < k; i++) {
		struct tmpsym t = v[i].t; /* read before slot m <= i is written */
		if (m && t.start == v[m - 1].u.start)
			continue;
		v[m++].u = (struct usym){ t.start, t.start + t.size, t.name, t.src };
	}
	if (m) {
		f->names = xrealloc(s->names, s->len); /* its own size: kept for the run */
		f->syms = (struct usym *)xrealloc(v, m * sizeof(*v));
		f->nsyms = m;
	} else {
		free(v);
		free(s->names);
	}
	memset(s, 0, sizeof(*s));
}

/* Symbol i's name, demangled (names longer than DEMANGLED_MAX demangled stay as they are). */
static const char *file_name(struct elf_file *f, size_t i)
{
	if (!f->demangled)
		f->demangled = xcalloc(f->nsyms, sizeof(*f->demangled));
	if (!f->demangled[i]) {
		const char *raw = f->names + f->syms[i].name;
		char *d = demangle(raw, DEMANGLED_MAX);
		f->demangled[i] = d ? d : raw;
	}
	return f->demangled[i];
}

/* The PT_LOAD segments of an ELF file into f. Returns -1 when elf is not a usable ELF file. */
static int elf_load_segs(struct elf_file *f, Elf *elf)
{
	GElf_Ehdr eh;
	size_t nph;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph))
		return -1;
	f->segs = xmalloc((nph ? nph : 1) * sizeof(*f->segs));
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			f->segs[f->nsegs++] =
				(struct seg){ ph.p_offset, ph.p_filesz, ph.p_vaddr, !!(ph.p_flags & PF_X) };
	}
	return 0;
}

/* The .symtab and .dynsym sections: NULL when absent or malformed (see symtab_entries); *bad
 * (may be NULL) tells whether a malformed one was ignored. */
static void elf_symtabs(Elf *elf, Elf_Scn **symtab, Elf_Scn **dynsym, int *bad)
{
	Elf_Scn *scn = NULL;
	int malformed = 0;
	*symtab = *dynsym = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, check;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (sh.sh_size && !symtab_entries(elf, scn, &check, &d)) {
			malformed = 1;
			continue;
		}
		if (sh.sh_type == SHT_SYMTAB)
			*symtab = scn;
		else
			*dynsym = scn;
	}
	if (bad)
		*bad = malformed;
}

/* Segments and symbols of elf into f: its .symtab; without one, its .dynsym and the .symtab of
 * its separate debug file (searched in the root of pid by r, see debuginfo.h; r NULL: not looked
 * for); still without a full symbol table, the function ranges of its .eh_frame. */
static void elf_load(struct elf_file *f, Elf *elf, struct tfile_image *img, struct tfile_reader *r,
		     int pid)
{
	Elf_Scn *symtab, *dynsym;
	struct symset set = { 0 };
	if (elf_load_segs(f, elf))
		return;
	elf_symtabs(elf, &symtab, &dynsym, NULL);
	int full = syms_collect(&set, elf, symtab, USYM_SRC_SYMTAB, img) > 0;
	struct tfile_image *dimg = NULL;
	Elf *delf = NULL;
	if (!full) {
		syms_collect(&set, elf, dynsym, USYM_SRC_SYMTAB, NULL); /* its strings: the dynamic
									  * linking's, read again */
		if (r && (dimg = debuginfo_find(r, elf, pid, f->path, TFILE_KEEP_MEMFD)) &&
		    (delf = tfile_image_elf(dimg))) {
			Elf_Scn *dsymtab, *ddynsym;
			elf_symtabs(delf, &dsymtab, &ddynsym, NULL);
			full = syms_collect(&set, delf, dsymtab, USYM_SRC_DEBUGINFO, dimg) > 0;
		}
	}
	syms_finish(f, &set);
	unsigned char id[64];
	size_t idlen = elf_build_id(elf, id, sizeof(id));
	for (size_t i = 0; i < idlen; i++)
		snprintf(f->build_id + 2 * i, 3, "%02x", id[i]);
	for (size_t i = 0; i < f->nsegs; i++)
		if (f->segs[i].exec) {
			f->vaddr_bias = (int64_t)(f->segs[i].vaddr - f->segs[i].off);
			break;
		}
	elf_end(delf);
	tfile_image_free(dimg);
	if (!full)
		f->nfdes = ehframe_ranges(elf, &f->fdes);
	f->loaded = 1;
}

/* The vdso has no file: its ELF image is the mapping itself, read through /proc/PID/mem. */
static void vdso_load(struct elf_file *f, struct tfile_reader *r, int pid, uint64_t start, uint64_t end)
{
	size_t len = end - start;
	struct diag_err ignore;
	char *img = len <= (64u << 20) ? xmalloc(len) : NULL;
	if (img && tfile_read_mem(r, pid, start, len, img, &ignore) == 0) {
		Elf *elf = elf_memory(img, len);
		elf_load(f, elf, NULL, NULL, pid);
		elf_end(elf);
	}
	free(img);
}

/* Reads f, mapped at [start, end) by pid (pid <= 0: f->path in our own root), through r: the
 * mapped file itself, or the path inside pid's root when it is the same inode (tfile.h). */
static void file_load(struct elf_file *f, struct tfile_reader *r, int pid, uint64_t start, uint64_t end)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	if (!strcmp(f->path, "[vdso]")) {
		vdso_load(f, r, pid, start, end);
		return;
	}
	struct tfile_src src = { .pid = pid, .start = pid > 0 ? start : 0, .end = pid > 0 ? end : 0,
				 .path = f->path, .dev = f->dev, .ino = f->ino };
	struct tfile_image *img;
	struct diag_err err;
	int rc = tfile_read_elf(r, &src, TFILE_KEEP_MEMFD, &img, &err); /* its tables given back as read */
	if (rc && pid > 0 && err.code == TFILE_FAIL_FILE && f->path[0] == '/') {
		/* the process gone (or never ours: a hand-added mapping): the path in our own root,
		 * only if it is the same file */
		struct tfile_src ours = { .path = f->path, .dev = f->dev, .ino = f->ino };
		rc = tfile_read_elf(r, &ours, TFILE_KEEP_MEMFD, &img, &err);
	}
	if (rc)
		return;
	f->size = img->size;
	f->mtime_ns = img->mtime_ns;
	f->loaded_by = pid;
	Elf *elf = tfile_image_elf(img);
	elf_load(f, elf, img, r, pid);
	elf_end(elf);
	tfile_image_free(img);
}

/* Whether the file another process maps at [start, end) is still the one f was read from: a
 * deleted file's inode can come back as another file within a run (configure's conftest, a
 * rebuilt binary), and a cache shared by a set's processes outlives the first file. Unknown
 * (no map_files, the process gone) counts as the same. */
static int file_still_same(struct tfile_reader *r, const struct elf_file *f, int pid, uint64_t start,
			   uint64_t end)
{
	if (!f->size || pid <= 0 || pid == f->loaded_by)
		return 1;
	struct tfile_src src = { .pid = pid, .start = start, .end = end };
	uint64_t size, mtime;
	struct diag_err ignore;
	if (tfile_stat(r, &src, &size, &mtime, &ignore))
		return 1;
	return size == f->size && mtime == f->mtime_ns;
}

static void file_free(struct elf_file *f)
{
	free(f->path);
	free(f->segs);
	for (size_t i = 0; f->demangled && i < f->nsyms; i++)
		if (f->demangled[i] && f->demangled[i] != f->names + f->syms[i].name)
			free((char *)f->demangled[i]);
	free(f->demangled);
	free(f->syms);
	free(f->names);
	free(f->fdes);
	free(f);
}

/* Name of the function at file offset foff (*src: where it comes from), or NULL; then, when an
 * .eh_frame FDE covers foff, *src is USYM_SRC_FDE and *entry the file offset of its start. */
static const char *file_lookup(struct elf_file *f, uint64_t foff, enum usym_source *src,
			       uint64_t *entry)
{
	*src = USYM_SRC_NONE;
	const struct seg *seg = NULL;
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct seg *s = &f->segs[i];
		if (foff >= s->off && foff - s->off < s->filesz && (!seg || (s->exec && !seg->exec)))
			seg = s;
	}
	if (!seg)
		return NULL;
	uint64_t va = foff - seg->off + seg->vaddr;
	size_t lo = upper_bound_u64(f->syms, f->nsyms, sizeof(f->syms[0]),
				    offsetof(struct usym, start), va); /* first starting after va */
	if (lo && va < f->syms[lo - 1].end) {
		*src = f->syms[lo - 1].src;
		return file_name(f, lo - 1);
	}
	lo = upper_bound_u64(f->fdes, f->nfdes, sizeof(f->fdes[0]), offsetof(struct fde_range, start), va);
	if (lo && va < f->fdes[lo - 1].end && f->fdes[lo - 1].start >= seg->vaddr) {
		*src = USYM_SRC_FDE;
		*entry = f->fdes[lo - 1].start - seg->vaddr + seg->off;
	}
	return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * a function by name (where to place a uprobe)
 * ------------------------------------------------------------------------------------------- */

/* What the symbol tables say about one name. */
struct sym_search {
	const char *name;
	uint64_t addr[2];   /* distinct addresses of defined, sized functions (2 = ambiguous) */
	size_t naddr;
	int undefined;      /* seen as an undefined (imported) symbol */
	int unsized;        /* seen as a function of size 0 */
	int ifunc;          /* seen as an IFUNC (its value is the resolver) */
	int other_type;     /* seen as a non-function symbol: its STT_* type + 1 */
};

static void sym_search_scn(struct sym_search *q, Elf *elf, Elf_Scn *scn)
{
	GElf_Shdr sh;
	Elf_Data *d;
	size_t n = symtab_entries(elf, scn, &sh, &d);
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			continue;
		const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || strcmp(name, q->name))
			continue;
		int type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF)
			q->undefined = 1;
		else if (type == STT_GNU_IFUNC)
			q->ifunc = 1;
		else if (type != STT_FUNC)
			q->other_type = type + 1;
		else if (!s.st_size)
			q->unsized = 1;
		else {
			int seen = 0;
			for (size_t k = 0; k < q->naddr; k++)
				seen |= q->addr[k] == s.st_value;
			if (!seen && q->naddr < ARRAY_LEN(q->addr))
				q->addr[q->naddr++] = s.st_value;
		}
	}
}

static const char *stt_name(int type)
{
	switch (type) {
	case STT_NOTYPE: return "NOTYPE";
	case STT_OBJECT: return "OBJECT (data)";
	case STT_SECTION: return "SECTION";
	case STT_FILE: return "FILE";
	case STT_COMMON: return "COMMON (data)";
	case STT_TLS: return "TLS (thread-local data)";
	default: return "not a function";
	}
}

int elf_image_symbol_offset(struct tfile_image *img, const char *path, const char *name,
			    uint64_t *offset, struct diag_err *err)
{
	struct elf_file f = { 0 };
	struct sym_search q = { .name = name };
	Elf_Scn *symtab, *dynsym;
	int rc = -1, malformed = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "libelf: %s", elf_errmsg(-1));
	Elf *elf = tfile_image_elf(img);
	if (elf_load_segs(&f, elf)) {
		diag_fail(err, DIAG_EXIT_USAGE, "%s is not an ELF file", path);
		goto out;
	}
	elf_symtabs(elf, &symtab, &dynsym, &malformed);
	sym_search_scn(&q, elf, symtab);
	sym_search_scn(&q, elf, dynsym);

	if (q.naddr > 1) {
		diag_fail(err, DIAG_EXIT_USAGE, "symbol \"%s\" names several functions in %s (static "
			  "functions of the same name in different files): ambiguous", name, path);
	} else if (q.naddr == 1) {
		const struct seg *seg = NULL;
		for (size_t i = 0; i < f.nsegs; i++) {
			const struct seg *s = &f.segs[i];
			if (q.addr[0] >= s->vaddr && q.addr[0] - s->vaddr < s->filesz &&
			    (!seg || (s->exec && !seg->exec)))
				seg = s;
		}
		if (!seg)
			diag_fail(err, DIAG_EXIT_USAGE, "function \"%s\" of %s is at 0x%" PRIx64
				  ", outside every loadable segment of the file", name, path, q.addr[0]);
		else {
			*offset = q.addr[0] - seg->vaddr + seg->off;
			rc = 0;
		}
	} else if (q.ifunc) {
		diag_fail(err, DIAG_EXIT_USAGE, "symbol \"%s\" of %s is an indirect function (IFUNC): "
			  "its address is the resolver that picks an implementation at load time; probe "
			  "the implementation instead (see readelf -s %s)", name, path, path);
	} else if (q.unsized) {
		diag_fail(err, DIAG_EXIT_USAGE, "symbol \"%s\" of %s is a function of size 0 (an "
			  "assembly label?): refusing to place a probe on it", name, path);
	} else if (q.other_type) {
		diag_fail(err, DIAG_EXIT_USAGE, "symbol \"%s\" of %s is not a function (type %s)", name,
			  path, stt_name(q.other_type - 1));
	} else if (q.undefined) {
		diag_fail(err, DIAG_EXIT_USAGE, "symbol \"%s\" is only imported by %s, not defined "
			  "there: probe the shared library that defines it", name, path);
	} else {
		diag_fail(err, DIAG_EXIT_USAGE, "no function \"%s\" in the symbol tables of %s%s: "
			  "probably inlined, static and stripped, or misspelled: check with nm -D / "
			  "readelf -s", name, path,
			  malformed ? " (a malformed symbol table, wrong entry size or outside the "
				      "file, was ignored)"
			  : symtab ? "" : " (stripped: only .dynsym)");
	}
out:
	free(f.segs);
	elf_end(elf);
	return rc;
}

int elf_symbol_offset(const char *path, const char *name, uint64_t *offset, struct diag_err *err)
{
	struct tfile_reader *r = tfile_reader_new();
	struct tfile_src src = { .path = path };
	struct tfile_image *img;
	int rc = -1;
	if (tfile_read_elf(r, &src, 0, &img, err) == 0) {
		rc = elf_image_symbol_offset(img, path, name, offset, err);
		tfile_image_free(img);
	} else {
		err->code = DIAG_EXIT_USAGE; /* the message names the file and why */
	}
	tfile_reader_free(r);
	return rc;
}

/* ---------------------------------------------------------------------------------------------
 * mappings
 * ------------------------------------------------------------------------------------------- */

struct mapping {
	uint64_t start, end, off;
	struct elf_file *file;
};

/* The ELF files of one or more symbolizers, each read once (processes that map the same file
 * share its symbols). */
struct elf_cache {
	unsigned refs;        /* the creator's and each symbolizer's */
	struct tfile_reader *reader; /* reads the files (tfile.h) */
	bool own_reader;
	unsigned generation;  /* one per snapshot or hand-added mapping, of any sharer */
	struct elf_file **files;
	size_t nfiles, capfiles;
	struct posindex index; /* files by file_key_hash */
};

struct usyms {
	int pid;
	struct elf_cache *cache;
	struct mapping *maps; /* sorted by start, disjoint */
	size_t nmaps;
	struct perfmap *perfmap; /* JIT code names, re-read at each usyms_snapshot */
};

struct elf_cache *elf_cache_new(struct tfile_reader *reader)
{
	struct elf_cache *c = xcalloc(1, sizeof(*c));
	c->refs = 1;
	c->reader = reader ? reader : tfile_reader_new();
	c->own_reader = !reader;
	return c;
}

void elf_cache_release(struct elf_cache *c)
{
	if (!c || --c->refs)
		return;
	for (size_t i = 0; i < c->nfiles; i++)
		file_free(c->files[i]);
	free(c->files);
	posindex_free(&c->index);
	if (c->own_reader)
		tfile_reader_free(c->reader);
	free(c);
}

size_t elf_cache_files(const struct elf_cache *c)
{
	return c->nfiles;
}

struct usyms *usyms_new_in(int pid, struct elf_cache *cache)
{
	struct usyms *us = xcalloc(1, sizeof(*us));
	us->pid = pid;
	if (cache) {
		cache->refs++;
		us->cache = cache;
	} else {
		us->cache = elf_cache_new(NULL);
	}
	return us;
}

struct usyms *usyms_new(int pid)
{
	return usyms_new_in(pid, NULL);
}

/* Cache key: (dev, ino) from maps, or the path for hand-added mappings and [vdso] (ino 0; dev
 * then 0, or the vdso's size). Keyed (hash.h): the paths are a target's. */
static uint64_t file_key_hash(const char *path, uint64_t dev, uint64_t ino)
{
	struct hash_state h;
	hash_init(&h);
	hash_u64(&h, dev);
	hash_u64(&h, ino);
	if (!ino)
		hash_str(&h, path);
	return hash_final(&h);
}

static int file_key_eq(const struct elf_file *f, const char *path, uint64_t dev, uint64_t ino)
{
	if (f->superseded)
		return 0;
	return ino ? f->ino == ino && f->dev == dev : !f->ino && f->dev == dev && !strcmp(f->path, path);
}

static struct elf_file *file_find(const struct elf_cache *us, const char *path, uint64_t dev,
				  uint64_t ino)
{
	uint64_t h = file_key_hash(path, dev, ino);
	for (size_t cur = 0, i; (i = posindex_next(&us->index, h, &cur)) != POSINDEX_END;)
		if (file_key_eq(us->files[i], path, dev, ino))
			return us->files[i];
	return NULL;
}

/* The cached file for (path, dev, ino), loaded now if it was not yet (or failed in an earlier
 * snapshot: a load is tried once per snapshot). */
static struct elf_file *file_get(struct usyms *owner, const char *path, uint64_t dev, uint64_t ino,
				 uint64_t start, uint64_t end)
{
	struct elf_cache *us = owner->cache;
	struct elf_file *f = file_find(us, path, dev, ino);
	if (f && f->loaded && ino && !file_still_same(us->reader, f, owner->pid, start, end)) {
		f->superseded = 1; /* mappings made before keep it; this one gets the new file */
		f = NULL;
	}
	if (!f) {
		f = xcalloc(1, sizeof(*f));
		f->path = xstrdup(path);
		const char *slash = strrchr(f->path, '/');
		f->base = slash ? slash + 1 : f->path;
		f->dev = dev;
		f->ino = ino;
		if (us->nfiles == us->capfiles) {
			us->capfiles = us->capfiles ? us->capfiles * 2 : 16;
			us->files = xrealloc(us->files, us->capfiles * sizeof(*us->files));
		}
		posindex_add(&us->index, file_key_hash(path, dev, ino), us->nfiles);
		us->files[us->nfiles++] = f;
	}
	if (!f->loaded && f->tried != us->generation) {
		f->tried = us->generation;
		file_load(f, us->reader, owner->pid, start, end);
	}
	return f;
}

static int map_cmp(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The part [start, end) of mapping o, its file offset moved along. */
static struct mapping map_part(const struct mapping *o, uint64_t start, uint64_t end)
{
	return (struct mapping){ start, end, o->off + (start - o->start), o->file };
}

/* Merges the mappings of one snapshot, add[0..nadd) (any order; reordered here), into us->maps:
 * where they overlap older mappings the new ones win, and an older mapping keeps only the parts
 * they do not cover. Should add overlap itself, the one starting later wins. O(nadd log nadd)
 * for the sort, then linear in nmaps + nadd: a mapping is split only by the new ones it
 * overlaps, and the two sorted, disjoint lists overlap in at most nmaps + nadd pairs. */
static void maps_merge(struct usyms *us, struct mapping *add, size_t nadd)
{
	if (!nadd) /* a process between exec and its first mapping, or exiting: nothing to add */
		return;
	qsort(add, nadd, sizeof(*add), map_cmp);
	size_t k = 0;
	for (size_t i = 0; i < nadd; i++) {
		if (k && add[k - 1].end > add[i].start)
			add[k - 1].end = add[i].start;
		if (k && add[k - 1].end <= add[k - 1].start)
			k--;
		add[k++] = add[i];
	}
	nadd = k;
	if (!nadd)
		return;

	/* The older mappings minus the new ones, in order: at most nmaps + nadd parts. */
	const struct mapping *old = us->maps;
	struct mapping *kept = xmalloc((us->nmaps + nadd) * sizeof(*kept));
	size_t nkept = 0, j = 0;
	for (size_t i = 0; i < us->nmaps; i++) {
		const struct mapping *o = &old[i];
		while (j < nadd && add[j].end <= o->start)
			j++;
		uint64_t at = o->start;
		for (size_t a = j; a < nadd && add[a].start < o->end; a++) {
			if (add[a].start > at)
				kept[nkept++] = map_part(o, at, add[a].start);
			if (add[a].end > at)
				at = add[a].end;
		}
		if (at < o->end)
			kept[nkept++] = map_part(o, at, o->end);
	}

	struct mapping *merged = xmalloc((nkept + nadd) * sizeof(*merged));
	size_t n = 0, ik = 0, ia = 0;
	while (ik < nkept || ia < nadd) {
		bool take_kept = ia == nadd || (ik < nkept && kept[ik].start < add[ia].start);
		merged[n++] = take_kept ? kept[ik++] : add[ia++];
	}
	free(kept);
	free(us->maps);
	us->maps = merged;
	us->nmaps = n;
}

void usyms_add_mapping(struct usyms *us, uint64_t start, uint64_t end, uint64_t file_offset,
		       const char *path)
{
	if (end <= start || !path)
		return;
	us->cache->generation++;
	struct mapping m = { start, end, file_offset, file_get(us, path, 0, 0, start, end) };
	maps_merge(us, &m, 1);
}

/* One snapshot from the text of a maps file, modified in place (lines cut at their newline). */
static void maps_parse(struct usyms *us, char *buf)
{
	struct mapping *add = NULL;
	size_t nadd = 0, cap = 0;
	us->cache->generation++;
	char *cursor = buf;
	for (char *line; (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || !m.exec)
			continue;
		char *path = line + (m.path - line); /* the line is ours to cut */
		size_t plen = strlen(path);
		static const char deleted[] = " (deleted)";
		if (plen > sizeof(deleted) - 1 && !strcmp(path + plen - (sizeof(deleted) - 1), deleted))
			path[plen - (sizeof(deleted) - 1)] = '\0';
		if (path[0] != '/' && strcmp(path, "[vdso]"))
			continue;
		/* every native process maps the same vdso; a compat (32-bit) one maps another, of
		 * another size: the size keys it */
		uint64_t dev = path[0] == '/' ? ((uint64_t)m.major << 32) | m.minor : m.end - m.start;
		struct elf_file *f = file_get(us, path, dev, path[0] == '/' ? m.inode : 0, m.start, m.end);
		if (nadd == cap)
			add = xrealloc(add, (cap = cap ? cap * 2 : 64) * sizeof(*add));
		add[nadd++] = (struct mapping){ m.start, m.end, m.offset, f };
	}
	maps_merge(us, add, nadd);
	free(add);
}

int usyms_snapshot(struct usyms *us, struct diag_err *err)
{
	char *buf = tfile_read_proc(us->cache->reader, us->pid, "maps", TFILE_MAX_TEXT_BYTES, NULL, err);
	if (!buf) {
		err->code = DIAG_EXIT_RUNTIME;
		return -1;
	}
	maps_parse(us, buf);
	free(buf);
	struct perfmap *pm = perfmap_read(us->cache->reader, us->pid);
	if (pm || !us->perfmap) { /* a map file that went away keeps the names read before */
		perfmap_free(us->perfmap);
		us->perfmap = pm;
	}
	return 0;
}

void usyms_snapshot_text(struct usyms *us, const char *maps)
{
	char *buf = xstrdup(maps);
	maps_parse(us, buf);
	free(buf);
}

/* The name of addr; ret: addr is a return address, whose call instruction (what names the
 * frame) ends at addr, so the function is the one holding addr - 1 (a call to a noreturn
 * function can be its caller's last instruction: addr is then the next function's entry). The
 * offset form still shows addr itself. */
static int symbolize(struct usyms *us, uint64_t addr, int ret, char *buf, size_t len,
		     enum usym_source *src)
{
	enum usym_source dummy;
	if (!src)
		src = &dummy;
	*src = USYM_SRC_NONE;
	uint64_t at = ret && addr ? addr - 1 : addr;
	size_t lo = upper_bound_u64(us->maps, us->nmaps, sizeof(us->maps[0]),
				    offsetof(struct mapping, start), at); /* first starting after */
	const struct mapping *m = lo ? &us->maps[lo - 1] : NULL;
	if (!m || at >= m->end) { /* no file mapped here: JIT code, if its perf map says so */
		const char *jit = perfmap_lookup(us->perfmap, at);
		if (jit) {
			*src = USYM_SRC_PERFMAP;
			snprintf(buf, len, "%s", jit);
			return 1;
		}
		snprintf(buf, len, "[unknown]");
		return 0;
	}
	uint64_t foff = at - m->start + m->off, entry = 0;
	const char *name = file_lookup(m->file, foff, src, &entry);
	if (name) {
		snprintf(buf, len, "%s", name);
		return 1;
	}
	snprintf(buf, len, "%s+0x%" PRIx64, m->file->base,
		 *src == USYM_SRC_FDE ? entry : foff + (at != addr));
	return 0;
}

int usyms_symbolize_src(struct usyms *us, uint64_t addr, char *buf, size_t len,
			enum usym_source *src)
{
	return symbolize(us, addr, 0, buf, len, src);
}

int usyms_symbolize_ret(struct usyms *us, uint64_t addr, char *buf, size_t len,
			enum usym_source *src)
{
	return symbolize(us, addr, 1, buf, len, src);
}

int usyms_symbolize(struct usyms *us, uint64_t addr, char *buf, size_t len)
{
	return symbolize(us, addr, 0, buf, len, NULL);
}

int usyms_mapped_file(const struct usyms *us, const char *base, const char **path, uint64_t *dev,
		      uint64_t *ino)
{
	for (size_t i = 0; i < us->nmaps; i++) {
		const struct elf_file *f = us->maps[i].file;
		if (f && f->path[0] == '/' && !strcmp(f->base, base)) {
			*path = f->path;
			*dev = f->dev;
			*ino = f->ino;
			return 0;
		}
	}
	return -1;
}

const char *usyms_runtime(const struct usyms *us)
{
	const char *path;
	uint64_t dev, ino;
	if (!usyms_mapped_file(us, "libjvm.so", &path, &dev, &ino))
		return "jvm";
	static const char *const node[] = { "node", "nodejs" };
	for (size_t i = 0; i < us->nmaps; i++) {
		const struct elf_file *f = us->maps[i].file;
		if (!f || f->path[0] != '/')
			continue;
		for (size_t k = 0; k < ARRAY_LEN(node); k++)
			if (!strcmp(f->base, node[k]) ||
			    (!strncmp(f->base, "libnode.so", 10) && (!f->base[10] || f->base[10] == '.')))
				return "node";
	}
	return NULL;
}

size_t usyms_perfmap_entries(const struct usyms *us)
{
	return perfmap_count(us->perfmap);
}

int usyms_file_at(struct usyms *us, uint64_t addr, int ret, struct usym_file *out)
{
	uint64_t at = ret && addr ? addr - 1 : addr;
	size_t lo = upper_bound_u64(us->maps, us->nmaps, sizeof(us->maps[0]),
				    offsetof(struct mapping, start), at);
	const struct mapping *m = lo ? &us->maps[lo - 1] : NULL;
	if (!m || at >= m->end || !m->file->loaded || m->file->path[0] != '/')
		return -1;
	struct elf_file *f = m->file;
	if (!f->in_our_root) { /* asked once per file: the same inode at the same path in our root */
		struct tfile_src src = { .path = f->path, .dev = f->dev, .ino = f->ino };
		uint64_t size, mtime;
		struct diag_err ignore;
		f->in_our_root = tfile_stat(us->cache->reader, &src, &size, &mtime, &ignore) ? -1 : 1;
	}
	*out = (struct usym_file){ .path = f->path, .base = f->base, .build_id = f->build_id,
				   .vaddr_bias = f->vaddr_bias, .in_our_root = f->in_our_root > 0 };
	return 0;
}

void usyms_free(struct usyms *us)
{
	if (!us)
		return;
	elf_cache_release(us->cache);
	free(us->maps);
	perfmap_free(us->perfmap);
	free(us);
}
