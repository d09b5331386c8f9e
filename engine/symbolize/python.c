/* python.c — CPython processes and their frames' names (see python.h).
 * Must not: print, guess a layout, or read the target but through tfile.
 */
#include "symbolize/python.h"

#include <errno.h>
#include <stddef.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "target/procfs.h"
#include "target/tfile.h"
#include "symbolize/unwind.h"
#include "common/util.h"

/* ---- layouts -------------------------------------------------------------------------------- */

struct py_version_layout {
	unsigned minor; /* 3.minor */
	struct diag_py_layout bpf;
	struct py_user_layout user;
};

/* From each version's headers (offsetof on x86-64, Py_BUILD_CORE: Include/internal/pycore_*.h,
 * Include/cpython/code.h); the same for every patch release of a minor version (3.11.2 and 3.11.7
 * checked). tests/unit/test_python.c compares them with the offsetof()s of the headers installed
 * on the machine (tests/unit/fixtures/pylayout.c, built by tests/unit/python.mk). */
static const struct py_version_layout LAYOUTS[] = {
	{ 11,
	  { .runtime_interp_head = 40, .interp_threads_head = 16, .tstate_next = 8,
	    .tstate_native_tid = 160, .tstate_frame = 56, .cframe_current_frame = 8,
	    .frame_code = 32, .frame_previous = 48, .frame_instr = 56, .frame_entry = 68,
	    .entry_kind = DIAG_PY_ENTRY_FLAG, .owner_cstack = 0 },
	  { .co_filename = 112, .co_qualname = 128, .co_firstlineno = 72, .co_linetable = 136,
	    .co_code_adaptive = 184, .ascii_data = 48, .compact_data = 72 } },
	{ 12,
	  { .runtime_interp_head = 40, .interp_threads_head = 72, .tstate_next = 8,
	    .tstate_native_tid = 144, .tstate_frame = 56, .cframe_current_frame = 0,
	    .frame_code = 0, .frame_previous = 8, .frame_instr = 56, .frame_entry = 70,
	    .entry_kind = DIAG_PY_ENTRY_SHIM, .owner_cstack = 3 },
	  { .co_filename = 112, .co_qualname = 128, .co_firstlineno = 68, .co_linetable = 136,
	    .co_code_adaptive = 192, .ascii_data = 40, .compact_data = 56 } },
	{ 13,
	  { .runtime_interp_head = 632, .interp_threads_head = 7344, .tstate_next = 8,
	    .tstate_native_tid = 160, .tstate_frame = 72, .cframe_current_frame = DIAG_PY_NONE,
	    .frame_code = 0, .frame_previous = 8, .frame_instr = 56, .frame_entry = 70,
	    .entry_kind = DIAG_PY_ENTRY_SHIM, .owner_cstack = 3 },
	  { .co_filename = 112, .co_qualname = 128, .co_firstlineno = 68, .co_linetable = 136,
	    .co_code_adaptive = 200, .ascii_data = 40, .compact_data = 56 } },
};

bool python_layout(unsigned minor, struct diag_py_layout *bpf, struct py_user_layout *user)
{
	for (size_t i = 0; i < ARRAY_LEN(LAYOUTS); i++)
		if (LAYOUTS[i].minor == minor) {
			*bpf = LAYOUTS[i].bpf;
			*user = LAYOUTS[i].user;
			return true;
		}
	return false;
}

/* 3.13's _Py_DebugOffsets (the first bytes of _PyRuntime): cookie, version, free_threaded, then
 * runtime_state {size, finalizing, interpreters_head} and interpreter_state {size, id, next,
 * threads_head}. */
#define DEBUG_OFFSETS_BYTES 80
#define DEBUG_COOKIE "xdebugpy"

/* ---- processes ------------------------------------------------------------------------------ */

#define NAME_MAX_CHARS 256      /* of a qualified name or a file name (longer ones are cut) */
#define LINETABLE_MAX 65536     /* bytes of a location table read */
#define CODE_CACHE_MAX 65536    /* code objects named per probe */

struct pycode {
	int tgid;
	uint64_t code;
	bool ok;
	char *qualname, *filename;
	int first_line;
	uint8_t *table;
	size_t table_len;
};

struct pyproc {
	int tgid;
	int state; /* 1: Python, readable; 0: not Python; -1: Python, unreadable */
	unsigned long version;
	const struct py_version_layout *lay;
	uint64_t runtime, eval_lo, eval_hi, code_type;
};

struct python_procs {
	struct tfile_reader *files;
	struct pyproc *procs;
	size_t n_procs, cap_procs;
	struct pycode *codes; /* open addressing by (tgid, code); tgid 0: empty */
	size_t codes_size, n_codes;
	char runtime[160];    /* the first Python process's, for the report */
};

struct python_procs *python_procs_new(struct tfile_reader *files)
{
	struct python_procs *py = xcalloc(1, sizeof(*py));
	py->files = files;
	return py;
}

void python_procs_free(struct python_procs *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->codes_size; i++) {
		free(py->codes[i].qualname);
		free(py->codes[i].filename);
		free(py->codes[i].table);
	}
	free(py->codes);
	free(py->procs);
	free(py);
}

static struct pyproc *proc_find(const struct python_procs *py, int tgid)
{
	for (size_t i = 0; i < py->n_procs; i++)
		if (py->procs[i].tgid == tgid)
			return &py->procs[i];
	return NULL;
}

const char *python_procs_runtime(const struct python_procs *py)
{
	return py && py->runtime[0] ? py->runtime : NULL;
}

bool python_procs_is_eval(const struct python_procs *py, int tgid, uint64_t addr)
{
	const struct pyproc *p = py ? proc_find(py, tgid) : NULL;
	return p && p->state == 1 && addr >= p->eval_lo && addr < p->eval_hi;
}

/* The symbols of interest in one ELF image. */
struct py_syms {
	GElf_Sym runtime, version, eval, code_type;
	bool has_runtime, has_version, has_eval, has_code_type;
};

static void syms_scan(Elf *elf, struct py_syms *out)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		size_t n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || (name[0] != '_' && name[0] != 'P'))
				continue;
			if (!out->has_runtime && !strcmp(name, "_PyRuntime"))
				out->runtime = sym, out->has_runtime = true;
			else if (!out->has_version && !strcmp(name, "Py_Version"))
				out->version = sym, out->has_version = true;
			else if (!out->has_eval && !strcmp(name, "_PyEval_EvalFrameDefault"))
				out->eval = sym, out->has_eval = true;
			else if (!out->has_code_type && !strcmp(name, "PyCode_Type"))
				out->code_type = sym, out->has_code_type = true;
		}
	}
}

/* The load bias of the file whose lowest mapping in the process starts at map_start with file
 * offset map_off: its first PT_LOAD segment's page is mapped there. */
static int load_bias(Elf *elf, uint64_t map_start, uint64_t map_off, uint64_t *bias)
{
	size_t nph;
	if (elf_getphdrnum(elf, &nph))
		return -1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t page = 4096;
		uint64_t seg_off = ph.p_offset & ~(page - 1), seg_va = ph.p_vaddr & ~(page - 1);
		if (map_off != seg_off)
			return -1; /* the lowest mapping is not the first segment's */
		*bias = map_start - seg_va;
		return 0;
	}
	return -1;
}

static bool python_file(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "python3", 7) || !strncmp(base, "libpython3", 10);
}

/* One candidate file: where it is mapped first (lowest address) in the process. */
struct candidate {
	char path[512];
	uint64_t start, end, offset, dev, ino;
};

/* Looks at the file c names for _PyRuntime: 1 and p filled, 0 when it has none, -1 with why. */
static int probe_file(struct python_procs *py, struct pyproc *p, const struct candidate *c,
		      char *why, size_t why_len)
{
	struct tfile_src src = { .pid = p->tgid, .start = c->start, .end = c->end, .path = c->path,
				 .dev = c->dev, .ino = c->ino };
	struct tfile_image *img;
	struct diag_err err;
	if (tfile_read_elf(py->files, &src, 0, &img, &err))
		return 0; /* not readable: not ours to judge */
	Elf *elf = tfile_image_elf(img);
	struct py_syms s = { 0 };
	uint64_t bias = 0;
	int rc = 0;
	if (elf)
		syms_scan(elf, &s);
	if (!elf || !s.has_runtime)
		goto out;
	rc = -1;
	if (!s.has_version || !s.has_eval) {
		snprintf(why, why_len, "CPython without Py_Version (before 3.11): native frames only");
		goto out;
	}
	if (load_bias(elf, c->start, c->offset, &bias)) {
		snprintf(why, why_len, "CPython: its mapping is not one we can read");
		goto out;
	}
	uint64_t version = 0;
	if (tfile_read_mem(py->files, p->tgid, bias + s.version.st_value, sizeof(version), &version,
			   &err)) {
		snprintf(why, why_len, "CPython: its version could not be read (%.80s)", err.msg);
		goto out;
	}
	unsigned major = (version >> 24) & 0xff, minor = (version >> 16) & 0xff,
		 micro = (version >> 8) & 0xff;
	p->version = (unsigned long)version;
	for (size_t i = 0; i < ARRAY_LEN(LAYOUTS); i++)
		if (major == 3 && LAYOUTS[i].minor == minor)
			p->lay = &LAYOUTS[i];
	if (!p->lay) {
		snprintf(why, why_len, "CPython %u.%u.%u: no known layout, native frames only", major,
			 minor, micro);
		goto out;
	}
	p->runtime = bias + s.runtime.st_value;
	if (minor >= 13) { /* the interpreter's own word on its layout */
		uint8_t dbg[DEBUG_OFFSETS_BYTES];
		uint64_t f[DEBUG_OFFSETS_BYTES / 8];
		if (tfile_read_mem(py->files, p->tgid, p->runtime, sizeof(dbg), dbg, &err)) {
			snprintf(why, why_len, "CPython %u.%u.%u: its debug offsets could not be read",
				 major, minor, micro);
			goto out;
		}
		memcpy(f, dbg, sizeof(f));
		if (memcmp(dbg, DEBUG_COOKIE, 8) || f[2] /* free_threaded */ ||
		    f[5] != p->lay->bpf.runtime_interp_head || f[9] != p->lay->bpf.interp_threads_head) {
			snprintf(why, why_len, "CPython %u.%u.%u%s: its debug offsets differ from the "
				 "known layout, native frames only", major, minor, micro,
				 f[2] ? " (free-threaded)" : "");
			goto out;
		}
	}
	p->eval_lo = bias + s.eval.st_value;
	p->eval_hi = p->eval_lo + (s.eval.st_size ? s.eval.st_size : 1);
	p->code_type = s.has_code_type ? bias + s.code_type.st_value : 0;
	snprintf(why, why_len, "CPython %u.%u.%u", major, minor, micro);
	rc = 1;
out:
	if (elf)
		elf_end(elf);
	tfile_image_free(img);
	return rc;
}

int python_procs_probe(struct python_procs *py, int tgid, struct diag_py_proc *out)
{
	struct pyproc *p = proc_find(py, tgid);
	if (p) {
		if (p->state == 1 && out)
			*out = (struct diag_py_proc){ .runtime = p->runtime, .l = p->lay->bpf };
		return p->state;
	}
	if (py->n_procs == py->cap_procs)
		py->procs = xrealloc(py->procs, (py->cap_procs = py->cap_procs ? 2 * py->cap_procs : 16) *
						    sizeof(*py->procs));
	p = &py->procs[py->n_procs++];
	*p = (struct pyproc){ .tgid = tgid };
	struct diag_err err;
	char *maps = tfile_read_proc(py->files, tgid, "maps", TFILE_MAX_TEXT_BYTES, NULL, &err);
	if (!maps)
		return 0;
	/* the files that may hold the runtime, each at its lowest mapping */
	struct candidate cands[4];
	size_t n = 0;
	char *cursor = maps;
	for (char *line; (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || m.path[0] != '/' || !python_file(m.path) ||
		    strlen(m.path) >= sizeof(cands[0].path))
			continue;
		size_t k = 0;
		while (k < n && strcmp(cands[k].path, m.path))
			k++;
		if (k < n && cands[k].start <= m.start)
			continue;
		if (k == n) {
			if (n == ARRAY_LEN(cands))
				continue;
			n++;
		}
		cands[k] = (struct candidate){ .start = m.start, .end = m.end, .offset = m.offset,
					       .dev = (uint64_t)m.major << 32 | m.minor, .ino = m.inode };
		snprintf(cands[k].path, sizeof(cands[k].path), "%s", m.path);
	}
	free(maps);
	char why[sizeof(py->runtime)] = "";
	for (size_t k = 0; k < n && p->state == 0; k++)
		p->state = probe_file(py, p, &cands[k], why, sizeof(why));
	if (p->state && !py->runtime[0])
		snprintf(py->runtime, sizeof(py->runtime), "%s", why);
	if (p->state == 1 && out)
		*out = (struct diag_py_proc){ .runtime = p->runtime, .l = p->lay->bpf };
	return p->state;
}

/* ---- a thread's frames read from user space ------------------------------------------------- */

/* One pointer-sized word of process tgid at addr: 0 and *v, or -1 (bad set). */
static int read_word(struct python_procs *py, int tgid, uint64_t addr, uint64_t *v, bool *bad)
{
	struct diag_err err;
	if (*bad || !addr || tfile_read_mem(py->files, tgid, addr, sizeof(*v), v, &err)) {
		*bad = true;
		return -1;
	}
	return 0;
}

int python_thread_frames(struct python_procs *py, int tgid, int tid, struct diag_py_rec *r)
{
	struct diag_py_proc pp;
	if (python_procs_probe(py, tgid, &pp) != 1)
		return -1;
	const struct diag_py_layout *l = &pp.l;
	memset(r, 0, offsetof(struct diag_py_rec, f));
	r->rec = DIAG_REC_PY;
	r->tid = (uint32_t)tid;
	bool bad = false;
	uint64_t interp = 0, ts = 0, native = 0;
	read_word(py, tgid, pp.runtime + l->runtime_interp_head, &interp, &bad);
	read_word(py, tgid, interp + l->interp_threads_head, &ts, &bad);
	for (int i = 0; i < DIAG_PY_MAX_THREADS && ts && !bad; i++) {
		if (read_word(py, tgid, ts + l->tstate_native_tid, &native, &bad) == 0 && native == (uint64_t)(uint32_t)tid)
			break;
		read_word(py, tgid, ts + l->tstate_next, &ts, &bad);
	}
	if (bad || !ts || native != (uint64_t)(uint32_t)tid) {
		r->flags = DIAG_PY_NO_TSTATE;
		return 0;
	}
	uint64_t frame = 0, hash = 0xcbf29ce484222325ull;
	read_word(py, tgid, ts + l->tstate_frame, &frame, &bad);
	if (l->cframe_current_frame != DIAG_PY_NONE)
		read_word(py, tgid, frame + l->cframe_current_frame, &frame, &bad);
	for (int i = 0; i < DIAG_PY_MAX_FRAMES * 2 && frame && !bad; i++) { /* shims take no slot */
		if (r->n >= DIAG_PY_MAX_FRAMES) {
			r->flags |= DIAG_PY_CUT;
			break;
		}
		uint64_t code = 0, instr = 0, prev = 0;
		uint8_t entry = 0;
		struct diag_err err;
		read_word(py, tgid, frame + l->frame_code, &code, &bad);
		read_word(py, tgid, frame + l->frame_instr, &instr, &bad);
		read_word(py, tgid, frame + l->frame_previous, &prev, &bad);
		if (!bad && tfile_read_mem(py->files, tgid, frame + l->frame_entry, 1, &entry, &err))
			bad = true;
		if (bad)
			break;
		frame = prev;
		if (l->entry_kind == DIAG_PY_ENTRY_SHIM && entry == l->owner_cstack) {
			if (r->n > 0)
				r->f[r->n - 1].code |= DIAG_PY_FRAME_ENTRY;
			continue;
		}
		struct diag_py_frame *f = &r->f[r->n++];
		f->code = code & ~7ull;
		if (l->entry_kind == DIAG_PY_ENTRY_FLAG && entry)
			f->code |= DIAG_PY_FRAME_ENTRY;
		f->instr = instr;
		hash = (hash ^ f->code ^ (instr << 1)) * 0x100000001b3ull;
	}
	if (bad)
		r->flags |= DIAG_PY_BAD_READ;
	r->hash = r->n ? (hash ? hash : 1) : 0;
	return 0;
}

/* ---- frames --------------------------------------------------------------------------------- */

#define PACK_CODE_BITS 44
#define PACK_DELTA_MAX (1ull << 20)

uint64_t python_frame_pack(uint64_t code, uint64_t instr)
{
	uint64_t delta = instr > code && instr - code < PACK_DELTA_MAX ? instr - code : 0;
	return (code >> 3 & ((1ull << PACK_CODE_BITS) - 1)) | delta << PACK_CODE_BITS;
}

void python_frame_unpack(uint64_t slot, uint64_t *code, uint64_t *instr)
{
	*code = (slot & ((1ull << PACK_CODE_BITS) - 1)) << 3;
	uint64_t delta = slot >> PACK_CODE_BITS;
	*instr = delta ? *code + delta : 0;
}

/* An unsigned varint of the location table (6 bits a byte, 0x40: more follow). */
static bool lt_varint(const uint8_t *t, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 6) {
		if (*pos >= len)
			return false;
		uint8_t b = t[(*pos)++];
		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64)) {
			*out = v;
			return true;
		}
	}
	return false;
}

int python_linetable_line(const uint8_t *t, size_t len, int first_line, uint64_t offset)
{
	uint64_t unit = offset / 2, addr = 0;
	int64_t line = first_line;
	size_t pos = 0;
	while (pos < len) {
		uint8_t b = t[pos++];
		if (!(b & 0x80))
			return -1; /* not the start of an entry: a table we do not understand */
		unsigned code = (b >> 3) & 15, length = (b & 7) + 1;
		int64_t delta = 0;
		uint64_t v;
		bool none = false;
		switch (code) {
		case 15: /* no location */
			none = true;
			break;
		case 14: /* long form: line delta, end line delta, column, end column */
		case 13: /* no column: line delta */
			if (!lt_varint(t, len, &pos, &v))
				return -1;
			delta = v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
			for (int k = 0; code == 14 && k < 3; k++)
				if (!lt_varint(t, len, &pos, &v))
					return -1;
			break;
		case 10: case 11: case 12: /* one line: delta code - 10, then two column bytes */
			delta = code - 10;
			pos += 2;
			break;
		default: /* short forms: same line, one column byte */
			pos += 1;
			break;
		}
		line += delta;
		if (unit < addr + length)
			return none || line < 0 || line > INT32_MAX ? -1 : (int)line;
		addr += length;
	}
	return -1;
}

/* A Python str at addr, as UTF-8 (compact strings only; at most NAME_MAX_CHARS characters);
 * NULL when it cannot be read or is not one. */
static char *read_str(struct python_procs *py, int tgid, const struct py_user_layout *u, uint64_t addr)
{
	uint8_t head[80];
	struct diag_err err;
	if (!addr || tfile_read_mem(py->files, tgid, addr, u->compact_data, head, &err))
		return NULL;
	int64_t length;
	uint32_t state;
	memcpy(&length, head + 16, sizeof(length));
	memcpy(&state, head + 32, sizeof(state));
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	bool cut = length > NAME_MAX_CHARS;
	size_t chars = cut ? NAME_MAX_CHARS : (size_t)length;
	uint64_t data = addr + (ascii ? u->ascii_data : u->compact_data);
	uint8_t *raw = xmalloc(chars * kind + 1);
	if (chars && tfile_read_mem(py->files, tgid, data, chars * kind, raw, &err)) {
		free(raw);
		return NULL;
	}
	char *out = xmalloc(chars * 4 + 4), *o = out;
	for (size_t i = 0; i < chars; i++) {
		uint32_t c = kind == 1 ? raw[i] : 0;
		if (kind == 2)
			c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else if (kind == 4)
			memcpy(&c, raw + 4 * i, 4);
		if (c >= 0xd800 && c < 0xe000)
			c = 0xfffd; /* a lone surrogate: not UTF-8 */
		if (c < 0x80) {
			*o++ = (char)(c ? c : '?');
		} else if (c < 0x800) {
			*o++ = (char)(0xc0 | c >> 6);
			*o++ = (char)(0x80 | (c & 63));
		} else if (c < 0x10000) {
			*o++ = (char)(0xe0 | c >> 12);
			*o++ = (char)(0x80 | (c >> 6 & 63));
			*o++ = (char)(0x80 | (c & 63));
		} else if (c < 0x110000) {
			*o++ = (char)(0xf0 | c >> 18);
			*o++ = (char)(0x80 | (c >> 12 & 63));
			*o++ = (char)(0x80 | (c >> 6 & 63));
			*o++ = (char)(0x80 | (c & 63));
		} else {
			*o++ = '?';
		}
	}
	*o = '\0';
	free(raw);
	return out;
}

/* Reads code object `code` of process p into c (c->ok false when it is not one). */
static void read_code(struct python_procs *py, const struct pyproc *p, uint64_t code, struct pycode *c)
{
	const struct py_user_layout *u = &p->lay->user;
	uint8_t obj[256];
	struct diag_err err;
	size_t head = u->co_code_adaptive;
	if (head > sizeof(obj) || tfile_read_mem(py->files, p->tgid, code, head, obj, &err))
		return;
	uint64_t type, filename, qualname, linetable;
	int32_t first_line;
	memcpy(&type, obj + 8, 8);
	if (p->code_type && type != p->code_type)
		return; /* not a code object (a torn frame, or not the executable of a frame) */
	memcpy(&filename, obj + u->co_filename, 8);
	memcpy(&qualname, obj + u->co_qualname, 8);
	memcpy(&linetable, obj + u->co_linetable, 8);
	memcpy(&first_line, obj + u->co_firstlineno, 4);
	c->qualname = read_str(py, p->tgid, u, qualname);
	c->filename = read_str(py, p->tgid, u, filename);
	c->first_line = first_line;
	c->ok = c->qualname != NULL;
	uint8_t bytes_head[32];
	int64_t size;
	if (!linetable || tfile_read_mem(py->files, p->tgid, linetable, sizeof(bytes_head), bytes_head, &err))
		return;
	memcpy(&size, bytes_head + 16, sizeof(size));
	if (size <= 0 || size > LINETABLE_MAX)
		return;
	c->table = xmalloc((size_t)size);
	if (tfile_read_mem(py->files, p->tgid, linetable + 32, (size_t)size, c->table, &err)) {
		free(c->table);
		c->table = NULL;
		return;
	}
	c->table_len = (size_t)size;
}

/* Keyed (hash.h): the code objects' addresses are the target's (under a fixed multiplier,
 * objects 2^k bytes apart shared a slot of a table of 2^k). */
static uint64_t code_hash(int tgid, uint64_t code)
{
	struct hash_state h;
	hash_init(&h);
	hash_u64(&h, (uint32_t)tgid);
	hash_u64(&h, code);
	return hash_final(&h);
}

/* The cached code object (read now when first asked for); NULL once the cache is full. */
static struct pycode *code_get(struct python_procs *py, const struct pyproc *p, uint64_t code)
{
	if ((py->n_codes + 1) * 2 > py->codes_size) {
		if (py->n_codes >= CODE_CACHE_MAX)
			goto find_only;
		struct pycode *old = py->codes;
		size_t old_size = py->codes_size;
		py->codes_size = old_size ? old_size * 2 : 256;
		py->codes = xcalloc(py->codes_size, sizeof(*py->codes));
		for (size_t i = 0; i < old_size; i++) {
			if (!old[i].tgid)
				continue;
			size_t mask = py->codes_size - 1, j = code_hash(old[i].tgid, old[i].code) & mask;
			while (py->codes[j].tgid)
				j = (j + 1) & mask;
			py->codes[j] = old[i];
		}
		free(old);
	}
find_only:;
	size_t mask = py->codes_size - 1, j = code_hash(p->tgid, code) & mask;
	for (; py->codes[j].tgid; j = (j + 1) & mask)
		if (py->codes[j].tgid == p->tgid && py->codes[j].code == code)
			return &py->codes[j];
	if ((py->n_codes + 1) * 2 > py->codes_size)
		return NULL;
	struct pycode *c = &py->codes[j];
	*c = (struct pycode){ .tgid = p->tgid, .code = code };
	py->n_codes++;
	read_code(py, p, code, c);
	return c;
}

int python_frame_name(struct python_procs *py, int tgid, uint64_t code, uint64_t instr, char *buf,
		      size_t len)
{
	const struct pyproc *p = py ? proc_find(py, tgid) : NULL;
	struct pycode *c = p && p->state == 1 ? code_get(py, p, code) : NULL;
	if (!c || !c->ok) {
		snprintf(buf, len, "[python 0x%llx]", (unsigned long long)code);
		return 0;
	}
	int line = -1;
	uint64_t start = code + p->lay->user.co_code_adaptive;
	if (instr >= start && c->table)
		line = python_linetable_line(c->table, c->table_len, c->first_line, instr - start);
	const char *file = c->filename ? c->filename : "?";
	if (line >= 0)
		snprintf(buf, len, "%s (%s:%d)", c->qualname, file, line);
	else
		snprintf(buf, len, "%s (%s)", c->qualname, file);
	return 1;
}

size_t python_splice(const struct python_procs *py, int tgid, const struct diag_py_frame *f,
		     uint32_t nf, uint64_t *ips, uint8_t *from, size_t n, size_t max, bool *unplaced)
{
	uint64_t *out = xmalloc((max ? max : 1) * sizeof(*out));
	uint8_t *out_from = xmalloc(max ? max : 1);
	size_t k = 0, g = 0, last_py = SIZE_MAX;
	*unplaced = false;
	for (size_t i = 0; i < n && k < max; i++) {
		if (g >= nf || !python_procs_is_eval(py, tgid, ips[i])) {
			out[k] = ips[i];
			out_from[k++] = from[i];
			continue;
		}
		while (g < nf && k < max) {
			bool entry = f[g].code & DIAG_PY_FRAME_ENTRY;
			out[k] = python_frame_pack(f[g].code & ~7ull, f[g].instr);
			out_from[k++] = FRAME_PY;
			g++;
			if (entry)
				break;
		}
		last_py = k;
	}
	if (g < nf) { /* outer Python frames whose loop frames the native walk missed */
		*unplaced = true;
		size_t at = last_py != SIZE_MAX ? last_py : k, left = nf - g;
		if (at + left > max)
			left = max - at;
		size_t keep = k - at;
		if (at + left + keep > max)
			keep = max - at - left;
		memmove(&out[at + left], &out[at], keep * sizeof(*out));
		memmove(&out_from[at + left], &out_from[at], keep);
		for (size_t j = 0; j < left; j++, g++) {
			out[at + j] = python_frame_pack(f[g].code & ~7ull, f[g].instr);
			out_from[at + j] = FRAME_PY;
		}
		k = at + left + keep;
	}
	memcpy(ips, out, k * sizeof(*ips));
	memcpy(from, out_from, k);
	free(out);
	free(out_from);
	return k;
}

int python_stack_namer(void *arg, int tgid, uint64_t slot, char *buf, size_t len)
{
	uint64_t code, instr;
	python_frame_unpack(slot, &code, &instr);
	return python_frame_name(arg, tgid, code, instr, buf, len);
}

