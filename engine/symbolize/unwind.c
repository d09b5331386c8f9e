/* unwind.c — leaf-frame recovery by CFI and DWARF unwinding of copied stacks (see unwind.h).
 * Must not: print, hold global state, read the target's memory (only the copy of a sample), or
 * read past the copy or a file's bounds.
 *
 * Choices:
 * - CFI through libdw (dwarf_getcfi_elf for .eh_frame, dwarf_getcfi for .debug_frame), never a
 *   hand-written parser. The CFA rules followed: "rsp + N" (frameless: the return address is at
 *   a known offset from sp) and "rbp + N" (a frame: the frame-pointer walk is right); the return
 *   address rule must be "at CFA + M". Anything else is CFI_RA_UNKNOWN, not a guess.
 * - Files are cached per (device, inode) of the mapping, read by tfile.c into images (the mapped
 *   file through /proc/PID/map_files, on a worker a stalled file system cannot hold us on): the
 *   CFI is parsed from memory, never from the file. At most UNW_MAX_FILES files and
 *   UNW_MAX_PROCS processes: past that, lookups fail (counted by the caller as unresolved),
 *   memory stays bounded. A file not read for the wait's sake (a stall, a stop, the deadline) is
 *   tried again the next period; one that cannot be read (not ELF, not regular) is not.
 * - DWARF mode: one Dwfl per process, its modules from the maps text we read
 *   (dwfl_linux_proc_maps_report), rebuilt at most once a period when an address falls outside
 *   its modules. libdwfl opens nothing: its find_elf gets our image of the module's file, its
 *   find_debuginfo a memfd of the verified separate debug file (debuginfo.h) — never
 *   dwfl_standard_find_debuginfo, which opens target-named paths and asks debuginfod. Memory
 *   reads are served from the copy only.
 */
#include "symbolize/unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
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
#include "target/procfs.h"
#include "target/tfile.h"
#include "common/util.h"

#define UNW_MAX_FILES 512
#define UNW_MAX_PROCS 64
#define UNW_MAX_MAPS 65536
#define X86_64_RBP 6
#define X86_64_RSP 7
#define X86_64_RA 16

const char *frame_origin_name(enum frame_origin o)
{
	switch (o) {
	case FRAME_CFI: return "cfi";
	case FRAME_DWARF: return "dwarf";
	case FRAME_PY: return "python";
	default: return "fp";
	}
}

/* ---------------------------------------------------------------------------------------------
 * CFI of one ELF file
 * ------------------------------------------------------------------------------------------- */

struct useg {
	uint64_t off, filesz, vaddr;
	bool exec;
};

struct ufile {
	uint64_t dev, ino;
	struct tfile_image *img; /* the file's parts in memory (tfile.h) */
	struct tfile_image *debug; /* its separate debug file, once looked for (debug_tried) */
	bool debug_tried;
	Elf *elf;
	Dwarf_CFI *eh; /* ours (dwarf_cfi_end) */
	Dwarf *dw;     /* ours; owns its .debug_frame CFI */
	Dwarf_CFI *dbg;
	struct useg *segs;
	size_t nsegs;
};

static void ufile_close(struct ufile *f)
{
	if (f->eh)
		dwarf_cfi_end(f->eh);
	if (f->dw)
		dwarf_end(f->dw);
	if (f->elf)
		elf_end(f->elf);
	tfile_image_free(f->img);
	tfile_image_free(f->debug);
	free(f->segs);
	memset(f, 0, sizeof(*f));
}

/* The ELF file in img (taken over) with its segments and CFI; -1 when it is not ELF. */
static int ufile_open(struct ufile *f, struct tfile_image *img)
{
	GElf_Ehdr eh;
	size_t nph;
	f->img = img;
	if (elf_version(EV_CURRENT) == EV_NONE ||
	    !(f->elf = tfile_image_elf(img)) || elf_kind(f->elf) != ELF_K_ELF ||
	    !gelf_getehdr(f->elf, &eh) || elf_getphdrnum(f->elf, &nph)) {
		ufile_close(f);
		return -1;
	}
	f->segs = xcalloc(nph ? nph : 1, sizeof(*f->segs));
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			f->segs[f->nsegs++] = (struct useg){ ph.p_offset, ph.p_filesz, ph.p_vaddr,
							     !!(ph.p_flags & PF_X) };
	}
	f->eh = dwarf_getcfi_elf(f->elf);
	f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	f->dbg = f->dw ? dwarf_getcfi(f->dw) : NULL;
	return 0;
}

/* The ELF address (as linked) of file offset foff, via the PT_LOAD segment holding it. */
static bool ufile_vaddr(const struct ufile *f, uint64_t foff, uint64_t *pc)
{
	const struct useg *seg = NULL;
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct useg *s = &f->segs[i];
		if (foff >= s->off && foff - s->off < s->filesz && (!seg || (s->exec && !seg->exec)))
			seg = s;
	}
	if (!seg)
		return false;
	*pc = foff - seg->off + seg->vaddr;
	return true;
}

static enum cfi_ra cfi_rule(Dwarf_CFI *cfi, uint64_t pc, uint64_t *sp_offset)
{
	Dwarf_Frame *frame = NULL;
	if (!cfi || dwarf_cfi_addrframe(cfi, pc, &frame) != 0 || !frame)
		return CFI_RA_UNKNOWN;
	enum cfi_ra r = CFI_RA_UNKNOWN;
	Dwarf_Op *ops, ra_mem[3], *ra;
	size_t nops, nra;
	if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_bregx) {
		int64_t cfa_off = (int64_t)ops[0].number2;
		if (ops[0].number == X86_64_RBP) {
			r = CFI_RA_FRAME;
		} else if (ops[0].number == X86_64_RSP &&
			   dwarf_frame_register(frame, X86_64_RA, ra_mem, &ra, &nra) == 0 && nra == 2 &&
			   ra[0].atom == DW_OP_call_frame_cfa && ra[1].atom == DW_OP_plus_uconst) {
			int64_t at = cfa_off + (int64_t)ra[1].number; /* ra[1]: -8, as unsigned */
			if (at >= 0 && at < (1 << 20)) {
				*sp_offset = (uint64_t)at;
				r = CFI_RA_AT_SP;
			}
		}
	}
	free(frame);
	return r;
}

static enum cfi_ra ufile_rule(const struct ufile *f, uint64_t pc, uint64_t *sp_offset)
{
	enum cfi_ra r = cfi_rule(f->eh, pc, sp_offset);
	return r != CFI_RA_UNKNOWN ? r : cfi_rule(f->dbg, pc, sp_offset);
}

enum cfi_ra cfi_ra_rule_path(const char *path, uint64_t pc, uint64_t *sp_offset)
{
	struct ufile f = { 0 };
	struct tfile_reader *r = tfile_reader_new();
	struct tfile_src src = { .path = path };
	struct tfile_image *img;
	struct diag_err ignore;
	enum cfi_ra rule = CFI_RA_UNKNOWN;
	if (tfile_read_elf(r, &src, 0, &img, &ignore) == 0 && ufile_open(&f, img) == 0) {
		rule = ufile_rule(&f, pc, sp_offset);
		ufile_close(&f);
	}
	tfile_reader_free(r);
	return rule;
}

/* ---------------------------------------------------------------------------------------------
 * Processes: executable mappings
 * ------------------------------------------------------------------------------------------- */

struct umap {
	uint64_t start, end, off, dev, ino;
	char *path;
	struct ufile *file; /* NULL until first needed */
	unsigned tried;     /* the period of the last failed read (0: none); a file's own fault: ~0 */
};

struct uproc {
	int pid;
	struct umap *maps; /* sorted by start */
	size_t nmaps;
	char *maps_text;   /* the last maps read, for libdwfl's modules */
	unsigned read_period; /* period of the last read of /proc/PID/maps (0: never) */
	Dwfl *dwfl;
	unsigned dwfl_period;
	struct unwinder *unw; /* its unwinder, for libdwfl's callbacks */
};

struct unwinder {
	struct tfile_reader *reader;
	bool own_reader;
	unsigned period;
	struct uproc procs[UNW_MAX_PROCS];
	size_t nprocs;
	struct ufile *files[UNW_MAX_FILES];
	size_t nfiles;
	const struct user_sample *cur; /* the sample being unwound (DWARF callbacks) */
	uint64_t *ips;
	size_t max, n;
};

struct unwinder *unwinder_new(struct tfile_reader *reader)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));
	u->period = 1;
	u->reader = reader ? reader : tfile_reader_new();
	u->own_reader = !reader;
	return u;
}

static void maps_free(struct uproc *p)
{
	for (size_t i = 0; i < p->nmaps; i++)
		free(p->maps[i].path);
	free(p->maps);
	free(p->maps_text);
	p->maps = NULL;
	p->maps_text = NULL;
	p->nmaps = 0;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nprocs; i++) {
		maps_free(&u->procs[i]);
		if (u->procs[i].dwfl)
			dwfl_end(u->procs[i].dwfl);
	}
	for (size_t i = 0; i < u->nfiles; i++) {
		ufile_close(u->files[i]);
		free(u->files[i]);
	}
	if (u->own_reader)
		tfile_reader_free(u->reader);
	free(u);
}

void unwinder_new_period(struct unwinder *u)
{
	u->period++;
}

static int umap_cmp(const void *a, const void *b)
{
	const struct umap *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Reads /proc/PID/maps (through the reader: its reading takes the process's locks): its
 * file-backed executable mappings. */
static void maps_read(struct unwinder *u, struct uproc *p)
{
	struct diag_err ignore;
	char *buf = tfile_read_proc(u->reader, p->pid, "maps", TFILE_MAX_TEXT_BYTES, NULL, &ignore);
	if (!buf)
		return;
	maps_free(p);
	p->maps_text = xstrdup(buf);
	size_t cap = 0;
	char *cursor = buf;
	for (char *line; p->nmaps < UNW_MAX_MAPS && (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || !m.exec || m.path[0] != '/')
			continue;
		if (p->nmaps == cap)
			p->maps = xrealloc(p->maps, (cap = cap ? cap * 2 : 64) * sizeof(*p->maps));
		p->maps[p->nmaps++] = (struct umap){ m.start, m.end, m.offset,
						     ((uint64_t)m.major << 32) | m.minor, m.inode,
						     xstrdup(m.path), NULL, false };
	}
	free(buf);
	if (p->nmaps) /* none: the process is exiting, or between exec and its first mapping */
		qsort(p->maps, p->nmaps, sizeof(*p->maps), umap_cmp);
}

static struct uproc *proc_get(struct unwinder *u, int pid)
{
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	if (u->nprocs == UNW_MAX_PROCS || pid <= 0)
		return NULL;
	struct uproc *p = &u->procs[u->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

static struct umap *maps_find(struct uproc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < p->maps[lo - 1].end ? &p->maps[lo - 1] : NULL;
}

/* The mapping of addr in process pid, reading the maps again (once a period) when unknown. */
static struct umap *proc_map(struct unwinder *u, int pid, uint64_t addr)
{
	struct uproc *p = proc_get(u, pid);
	if (!p)
		return NULL;
	struct umap *m = maps_find(p, addr);
	if (!m && p->read_period != u->period) {
		p->read_period = u->period;
		maps_read(u, p);
		m = maps_find(p, addr);
	}
	return m;
}

static struct ufile *map_file(struct unwinder *u, int pid, struct umap *m)
{
	if (m->file || (m->tried && (m->tried == ~0u || m->tried == u->period)))
		return m->file;
	for (size_t i = 0; i < u->nfiles; i++)
		if (u->files[i]->dev == m->dev && u->files[i]->ino == m->ino)
			return m->file = u->files[i];
	if (u->nfiles == UNW_MAX_FILES)
		return NULL;
	struct tfile_src src = { .pid = pid, .start = m->start, .end = m->end, .path = m->path,
				 .dev = m->dev, .ino = m->ino };
	struct tfile_image *img;
	struct diag_err err;
	if (tfile_read_elf(u->reader, &src, 0, &img, &err)) {
		m->tried = err.code == TFILE_FAIL_WAIT ? u->period : ~0u;
		return NULL;
	}
	struct ufile *f = xcalloc(1, sizeof(*f));
	if (ufile_open(f, img)) {
		free(f);
		m->tried = ~0u;
		return NULL;
	}
	f->dev = m->dev;
	f->ino = m->ino;
	u->files[u->nfiles++] = f;
	return m->file = f;
}

/* ---------------------------------------------------------------------------------------------
 * Leaf-frame recovery
 * ------------------------------------------------------------------------------------------- */

int unwind_leaf_callers(struct unwinder *u, int pid, const struct user_sample *s, uint64_t *callers,
			size_t max)
{
	uint64_t ip = s->ip, sp = s->sp;
	size_t n = 0;
	while (n < max) {
		/* past the leaf, a return address: its call instruction is just before it */
		uint64_t at = n ? ip - 1 : ip, pc, off = 0;
		struct umap *m = proc_map(u, pid, at);
		struct ufile *f = m ? map_file(u, pid, m) : NULL;
		if (!f || !ufile_vaddr(f, at - m->start + m->off, &pc))
			return n ? (int)n : -1;
		enum cfi_ra rule = ufile_rule(f, pc, &off);
		if (rule == CFI_RA_FRAME)
			return (int)n;
		if (rule != CFI_RA_AT_SP || sp - s->sp > s->len || s->len - (sp - s->sp) < sizeof(uint64_t) ||
		    off > s->len - (sp - s->sp) - sizeof(uint64_t))
			return n ? (int)n : -1; /* no rule we follow, or the word was not copied */
		uint64_t ra;
		memcpy(&ra, s->stack + (sp - s->sp) + off, sizeof(ra));
		if (!ra)
			return n ? (int)n : -1;
		callers[n++] = ra;
		sp += off + sizeof(uint64_t); /* the caller's sp: the CFA, just above the return address */
		ip = ra;
	}
	return (int)n;
}

int unwind_leaf_caller(struct unwinder *u, int pid, const struct user_sample *s, uint64_t *caller)
{
	return unwind_leaf_callers(u, pid, s, caller, 1);
}

/* ---------------------------------------------------------------------------------------------
 * DWARF unwinding (libdwfl over the copy)
 * ------------------------------------------------------------------------------------------- */

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl, (void)arg, (void)thread_argp;
	return 0; /* threads are named by dwfl_getthread_frames, never listed */
}

static bool dw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl, (void)tid;
	*thread_argp = arg;
	return true;
}

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	const struct unwinder *u = arg;
	const struct user_sample *s = u->cur;
	(void)dwfl;
	if (!s || addr < s->sp || s->len < sizeof(*result) ||
	    addr - s->sp > s->len - sizeof(*result))
		return false; /* outside the copy: the live stack has moved on */
	memcpy(result, s->stack + (addr - s->sp), sizeof(*result));
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct unwinder *u = arg;
	Dwarf_Word regs[2] = { u->cur->bp, u->cur->sp }; /* DWARF x86-64: 6 rbp, 7 rsp */
	if (!dwfl_thread_state_registers(thread, X86_64_RBP, 2, regs))
		return false;
	dwfl_thread_state_register_pc(thread, u->cur->ip);
	return true;
}

static const Dwfl_Thread_Callbacks dw_thread_callbacks = {
	.next_thread = dw_next_thread,
	.get_thread = dw_get_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

/* The cached file of the mapping of process p inside [low, high) (a module of its Dwfl). */
static struct ufile *module_file(struct unwinder *u, struct uproc *p, Dwarf_Addr low, Dwarf_Addr high,
				 struct umap **mapped)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].start >= low && p->maps[i].start < high) {
			*mapped = &p->maps[i];
			return map_file(u, p->pid, &p->maps[i]);
		}
	return NULL;
}

/* A module's file: our image of the mapped file (libdwfl elf_ends the handle; the image is the
 * unwinder's). The module's userdata is its process (set by dw_tag_module). */
static int dw_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	struct uproc *p = *userdata;
	Dwarf_Addr low, high;
	struct umap *m;
	(void)name, (void)base;
	*elfp = NULL;
	if (!p || !p->unw || !dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL))
		return -1;
	struct ufile *f = module_file(p->unw, p, low, high, &m);
	if (!f || !(*elfp = tfile_image_elf(f->img)))
		return -1;
	*file_name = strdup(m->path);
	return -1;
}

/* The verified separate debug file of a module, as a memfd of its image (libdwfl wants a
 * descriptor): found by debuginfo.h on local paths, never asked of debuginfod. */
static int dw_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct uproc *p = *userdata;
	Dwarf_Addr low, high;
	struct umap *m;
	(void)modname, (void)base, (void)file_name, (void)debuglink_file, (void)debuglink_crc;
	if (!p || !p->unw || !dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL))
		return -1;
	struct ufile *f = module_file(p->unw, p, low, high, &m);
	if (!f)
		return -1;
	if (!f->debug_tried) {
		f->debug_tried = true;
		f->debug = debuginfo_find(p->unw->reader, f->elf, p->pid, m->path, TFILE_KEEP_MEMFD);
	}
	int fd = f->debug ? tfile_image_memfd(f->debug) : -1;
	if (fd >= 0)
		*debuginfo_file_name = strdup(m->path);
	return fd;
}

static int dw_tag_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			 void *arg)
{
	(void)mod, (void)name, (void)start;
	*userdata = arg;
	return DWARF_CB_OK;
}

static const Dwfl_Callbacks dw_callbacks = {
	.find_elf = dw_find_elf,
	.find_debuginfo = dw_find_debuginfo,
};

static int dw_frame(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;
	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	if (u->n == u->max)
		return DWARF_CB_ABORT;
	u->ips[u->n++] = pc;
	return DWARF_CB_OK;
}

/* The process's Dwfl, (re)built when addr is outside its modules (at most once a period). */
static Dwfl *proc_dwfl(struct unwinder *u, int pid, uint64_t addr)
{
	struct uproc *p = proc_get(u, pid);
	if (!p)
		return NULL;
	if (p->dwfl && (dwfl_addrmodule(p->dwfl, addr) || p->dwfl_period == u->period))
		return p->dwfl;
	if (p->dwfl)
		dwfl_end(p->dwfl);
	p->dwfl = NULL;
	p->dwfl_period = u->period;
	p->unw = u;
	if (p->read_period != u->period) { /* the modules from maps read this period */
		p->read_period = u->period;
		maps_read(u, p);
	}
	FILE *maps = p->maps_text ? fmemopen(p->maps_text, strlen(p->maps_text), "r") : NULL;
	if (!maps || !(p->dwfl = dwfl_begin(&dw_callbacks))) {
		if (maps)
			fclose(maps);
		return NULL;
	}
	int reported = dwfl_linux_proc_maps_report(p->dwfl, maps);
	fclose(maps);
	if (reported != 0 || dwfl_report_end(p->dwfl, NULL, NULL) != 0 ||
	    dwfl_getmodules(p->dwfl, dw_tag_module, p, 0) != 0 ||
	    !dwfl_attach_state(p->dwfl, NULL, pid, &dw_thread_callbacks, u)) {
		dwfl_end(p->dwfl);
		p->dwfl = NULL;
	}
	return p->dwfl;
}

int unwind_dwarf(struct unwinder *u, int pid, int tid, const struct user_sample *s, uint64_t *ips,
		 size_t max, size_t *n)
{
	*n = 0;
	Dwfl *dwfl = proc_dwfl(u, pid, s->ip);
	if (!dwfl || !max)
		return -1;
	u->cur = s;
	u->ips = ips;
	u->max = max;
	u->n = 0;
	int rc = dwfl_getthread_frames(dwfl, tid, dw_frame, u);
	u->cur = NULL;
	*n = u->n;
	if (u->n <= 1)
		return -1;
	return rc == 0 ? 0 : 1;
}
