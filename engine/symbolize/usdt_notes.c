/* usdt_notes.c — USDT sites of an ELF image: notes, semaphores, argument fetch plans
 * (usdt_notes.h).
 *
 * A note of type 3 ("stapsdt") describes one site: three addresses (the site, the link-time
 * address of .stapsdt.base, the semaphore), then three NUL-terminated strings: provider, name,
 * arguments. Everything in it comes from a file the target (or anyone) may have crafted: sizes
 * are libelf's, checked against the section, strings must end inside the note, and a site must
 * fall in an executable loadable segment (its semaphore in a writable one).
 */
#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/tfile.h"
#include "symbolize/usdt_notes.h"

#define NT_STAPSDT 3

/* struct pt_regs of x86-64, the kernel's order (arch/x86/include/asm/ptrace.h). */
enum {
	PT_R15 = 0, PT_R14 = 8, PT_R13 = 16, PT_R12 = 24, PT_BP = 32, PT_BX = 40, PT_R11 = 48,
	PT_R10 = 56, PT_R9 = 64, PT_R8 = 72, PT_AX = 80, PT_CX = 88, PT_DX = 96, PT_SI = 104,
	PT_DI = 112, PT_IP = 128, PT_SP = 152,
};

int usdt_x86_reg_offset(const char *name)
{
	static const struct {
		const char *names[4]; /* 64, 32, 16, 8 bits */
		int off;
	} regs[] = {
		{ { "rax", "eax", "ax", "al" }, PT_AX },     { { "rbx", "ebx", "bx", "bl" }, PT_BX },
		{ { "rcx", "ecx", "cx", "cl" }, PT_CX },     { { "rdx", "edx", "dx", "dl" }, PT_DX },
		{ { "rsi", "esi", "si", "sil" }, PT_SI },    { { "rdi", "edi", "di", "dil" }, PT_DI },
		{ { "rbp", "ebp", "bp", "bpl" }, PT_BP },    { { "rsp", "esp", "sp", "spl" }, PT_SP },
		{ { "r8", "r8d", "r8w", "r8b" }, PT_R8 },    { { "r9", "r9d", "r9w", "r9b" }, PT_R9 },
		{ { "r10", "r10d", "r10w", "r10b" }, PT_R10 }, { { "r11", "r11d", "r11w", "r11b" }, PT_R11 },
		{ { "r12", "r12d", "r12w", "r12b" }, PT_R12 }, { { "r13", "r13d", "r13w", "r13b" }, PT_R13 },
		{ { "r14", "r14d", "r14w", "r14b" }, PT_R14 }, { { "r15", "r15d", "r15w", "r15b" }, PT_R15 },
	};
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int k = 0; k < 4; k++)
			if (strcmp(name, regs[i].names[k]) == 0)
				return regs[i].off;
	return -1;
}

/* A decimal or 0x-hex integer with an optional sign at *p; advances *p. */
static bool parse_int(const char **p, int64_t *out)
{
	const char *s = *p;
	bool neg = false;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (!isdigit((unsigned char)*s))
		return false;
	char *end;
	errno = 0;
	uint64_t v = strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	*p = end;
	return true;
}

static bool is_sym_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$';
}

/* One "[-]SIZE@OPERAND" (text[0..len)) into *a. NULL, or what is wrong. */
static const char *parse_one(const char *text, size_t len, uint64_t site_vaddr,
			     usdt_sym_lookup lookup, void *arg, struct diag_usdt_arg *a)
{
	char buf[128];
	if (len >= sizeof(buf))
		return "too long";
	memcpy(buf, text, len);
	buf[len] = '\0';
	memset(a, 0, sizeof(*a));

	const char *p = buf, *at = strchr(buf, '@');
	a->size = 8; /* an argument without SIZE@ (old notes): a long */
	if (at) {
		bool neg = *p == '-';
		if (neg)
			p++;
		if (at - p != 1 || !strchr("1248", *p))
			return "its size is not 1, 2, 4 or 8";
		a->size = (uint8_t)(*p - '0');
		a->is_signed = neg;
		p = at + 1;
	}
	if (*p == '$') { /* a constant */
		p++;
		int64_t v;
		if (!parse_int(&p, &v) || *p)
			return "a constant that is not an integer";
		a->kind = DIAG_USDT_ARG_CONST;
		a->val_off = v;
		return NULL;
	}
	if (*p == '%') { /* a register */
		int off = usdt_x86_reg_offset(p + 1);
		if (off < 0)
			return "an unknown register (or a high byte: %ah..%dh, not fetched)";
		a->kind = DIAG_USDT_ARG_REG;
		a->reg_off = (uint16_t)off;
		return NULL;
	}
	/* memory: [OFF][+SYM[+-OFF]](%REG) or SYM(%rip), OFF+SYM(%rip) */
	const char *open = strchr(p, '(');
	if (!open || buf[len - 1] != ')')
		return "neither a constant, a register nor memory at a register";
	/* (%base) or (%base,%index,scale) */
	char regs[3][16] = { "", "", "" };
	size_t nregs = 0;
	const char *r = open + 1, *close = buf + len - 1;
	while (r < close && nregs < 3) {
		const char *comma = memchr(r, ',', (size_t)(close - r));
		const char *end = comma ? comma : close;
		size_t n = (size_t)(end - r);
		if (n == 0 || n >= sizeof(regs[0]))
			return "memory at something that is not a register";
		memcpy(regs[nregs], r, n);
		regs[nregs++][n] = '\0';
		r = comma ? comma + 1 : close;
	}
	if (r < close || (nregs != 1 && nregs != 3) || regs[0][0] != '%')
		return "memory at something that is not a register";
	char reg[sizeof(regs[0])];
	memcpy(reg, regs[0] + 1, sizeof(reg) - 1);
	reg[sizeof(reg) - 1] = '\0';
	int index_off = -1, scale = 1;
	if (nregs == 3) {
		if (regs[1][0] != '%' || (index_off = usdt_x86_reg_offset(regs[1] + 1)) < 0)
			return "an indexed memory operand whose index is not a register";
		scale = atoi(regs[2]);
		if ((scale != 1 && scale != 2 && scale != 4 && scale != 8) || regs[2][1])
			return "an indexed memory operand whose scale is not 1, 2, 4 or 8";
	}
	int64_t off = 0, more;
	char sym[USDT_SYM_MAX] = "";
	const char *q = p;
	while (q < open) {
		if (*q == '+' && q + 1 < open && !isdigit((unsigned char)q[1]) && q[1] != '-')
			q++; /* "+SYM" */
		if (isdigit((unsigned char)*q) || *q == '-' || *q == '+') {
			if (!parse_int(&q, &more))
				return "a memory offset that is not an integer";
			if (__builtin_add_overflow(off, more, &off))
				return "a memory offset out of range";
		} else if (is_sym_char(*q) && !sym[0]) {
			size_t n = 0;
			while (q < open && is_sym_char(*q) && n < sizeof(sym) - 1)
				sym[n++] = *q++;
			sym[n] = '\0';
			if (q < open && is_sym_char(*q))
				return "a symbol name too long";
		} else {
			return "a memory offset neither an integer nor a symbol";
		}
	}
	if (strcmp(reg, "rip") == 0) {
		if (index_off >= 0)
			return "an indexed memory operand relative to %rip";
		/* a bare offset is relative to the next instruction, which the note does not give */
		if (!sym[0])
			return "memory at %rip without a symbol";
		uint64_t addr = 0;
		if (!lookup || !lookup(arg, sym, &addr))
			return "a variable the file's symbol tables do not define (or define twice)";
		a->kind = DIAG_USDT_ARG_IP_DEREF;
		a->val_off = (int64_t)(addr + (uint64_t)off - site_vaddr); /* wraps: an address */
		return NULL;
	}
	if (sym[0])
		return "a symbol relative to a register other than %rip";
	int roff = usdt_x86_reg_offset(reg);
	if (roff < 0 || (reg[0] != 'r' && reg[0] != 'e'))
		return "memory at an unknown register";
	a->kind = index_off >= 0 ? DIAG_USDT_ARG_INDEX_DEREF : DIAG_USDT_ARG_REG_DEREF;
	a->reg_off = (uint16_t)roff;
	a->val_off = off;
	if (index_off >= 0) {
		a->index_off = (uint8_t)index_off;
		a->scale = (uint8_t)scale;
	}
	return NULL;
}

int usdt_parse_args(const char *text, uint64_t site_vaddr, usdt_sym_lookup lookup, void *arg,
		    struct diag_usdt_spec *spec, char *why, size_t why_len)
{
	memset(spec, 0, sizeof(*spec));
	const char *p = text;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return 0;
		const char *end = p;
		while (*end && *end != ' ' && *end != '\t')
			end++;
		if (spec->nargs == DIAG_USDT_MAX_ARGS) {
			snprintf(why, why_len, "more than %d arguments", DIAG_USDT_MAX_ARGS);
			return -1;
		}
		const char *bad = parse_one(p, (size_t)(end - p), site_vaddr, lookup, arg,
					    &spec->args[spec->nargs]);
		if (bad) {
			snprintf(why, why_len, "argument %u \"%.*s\": %s", spec->nargs,
				 (int)((end - p) > 48 ? 48 : (end - p)), p, bad);
			return -1;
		}
		spec->nargs++;
		p = end;
	}
}

/* ---- the file --------------------------------------------------------------------------- */

struct segs {
	GElf_Phdr ph[64];
	size_t n;
};

/* The file offset of vaddr in a loadable segment with flag (PF_X for code, PF_W for data); -1
 * when there is none. */
static int vaddr_offset(const struct segs *s, uint64_t vaddr, unsigned flag, uint64_t *off)
{
	for (size_t i = 0; i < s->n; i++) {
		const GElf_Phdr *ph = &s->ph[i];
		if ((ph->p_flags & flag) && vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr < ph->p_filesz) {
			*off = vaddr - ph->p_vaddr + ph->p_offset;
			return 0;
		}
	}
	return -1;
}

/* The defined symbols of .symtab and .dynsym, sorted by name, built on the first %rip operand
 * (once per file: a note with twelve such arguments, many notes, must not scan the tables each
 * time). Counts come from the section's size and the ELF symbol size, never from its sh_entsize.
 * Only names an operand can give are indexed (shorter than USDT_SYM_MAX, measured by a bounded
 * strnlen), at most USDT_SYM_INDEX_MAX of them and USDT_SYM_INDEX_BYTES of their names: the sort
 * compares at most USDT_SYM_MAX bytes a comparison, of a bounded number of names. The cap on
 * symbols alone let a file whose 20,000 symbols share one 1 MiB name (one string) cost 5 s of
 * strcmp. */
struct sym_entry {
	const char *name;
	uint64_t addr;
};

struct sym_tables {
	Elf *elf;
	Elf_Scn *scn[2]; /* .symtab, .dynsym */
	struct sym_entry *sorted;
	size_t n, name_bytes, too_long, cut;
	bool built;
};

static int by_name(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->addr < y->addr ? -1 : x->addr > y->addr);
}

static void build_index(struct sym_tables *t)
{
	t->built = true;
	size_t cap = 0, symsz = gelf_fsize(t->elf, ELF_T_SYM, 1, EV_CURRENT);
	for (int k = 0; k < 2 && symsz && !t->cut; k++) { /* .symtab, then .dynsym unless cut */
		GElf_Shdr sh;
		Elf_Data *d = t->scn[k] ? elf_getdata(t->scn[k], NULL) : NULL;
		if (!d || !gelf_getshdr(t->scn[k], &sh))
			continue;
		size_t n = d->d_size / symsz;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_name)
				continue;
			const char *name = elf_strptr(t->elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			size_t len = strnlen(name, USDT_SYM_MAX);
			if (len == USDT_SYM_MAX) {
				t->too_long++; /* no operand names it */
				continue;
			}
			if (t->n == USDT_SYM_INDEX_MAX || t->name_bytes + len + 1 > USDT_SYM_INDEX_BYTES) {
				t->cut += n - i; /* this one and the rest of the table, not looked at */
				break;
			}
			t->name_bytes += len + 1;
			if (t->n == cap) {
				cap = cap ? cap * 2 : 1024;
				t->sorted = xrealloc(t->sorted, cap * sizeof(*t->sorted));
			}
			t->sorted[t->n++] = (struct sym_entry){ name, sym.st_value };
		}
	}
	if (t->n)
		qsort(t->sorted, t->n, sizeof(*t->sorted), by_name);
}

/* The first entry whose name is past `name` (after: the first not before it). */
static size_t name_bound(const struct sym_tables *t, const char *name, bool after)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->sorted[mid].name, name);
		if (c < 0 || (after && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A defined symbol named `name`, one address (several equal ones: one; different ones: none).
 * The entries of one name are sorted by address: its first and last tell (a table of one name
 * many times costs two binary searches, not a walk). */
static bool lookup_symbol(void *arg, const char *name, uint64_t *addr)
{
	struct sym_tables *t = arg;
	if (!t->built)
		build_index(t);
	if (strnlen(name, USDT_SYM_MAX) == USDT_SYM_MAX)
		return false;
	size_t first = name_bound(t, name, false), end = name_bound(t, name, true);
	if (first == end)
		return false;
	*addr = t->sorted[first].addr;
	return t->sorted[end - 1].addr == *addr; /* else two different variables of that name */
}

/* Copies the NUL-terminated string at desc[*pos..size) into out; false when it does not end
 * inside the note or does not fit. */
static bool take_string(const char *desc, size_t size, size_t *pos, char *out, size_t out_len)
{
	const char *s = desc + *pos;
	const char *nul = *pos < size ? memchr(s, '\0', size - *pos) : NULL;
	if (!nul || (size_t)(nul - s) >= out_len)
		return false;
	memcpy(out, s, (size_t)(nul - s) + 1);
	*pos += (size_t)(nul - s) + 1;
	return true;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

int usdt_read_notes(struct tfile_image *img, const char *path, struct usdt_notes *out,
		    struct diag_err *err)
{
	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "libelf: %s", elf_errmsg(-1));
	Elf *elf = tfile_image_elf(img);
	GElf_Ehdr eh;
	size_t nph, shstrndx;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &nph) || elf_getshdrstrndx(elf, &shstrndx)) {
		if (elf)
			elf_end(elf);
		return diag_fail(err, DIAG_EXIT_USAGE, "%s is not an ELF file", path);
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		elf_end(elf);
		return diag_fail(err, DIAG_EXIT_USAGE, "%s is not a 64-bit x86-64 ELF file: its USDT "
				 "arguments cannot be read on this machine", path);
	}
	struct segs segs = { .n = 0 };
	for (size_t i = 0; i < nph && segs.n < sizeof(segs.ph) / sizeof(segs.ph[0]); i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			segs.ph[segs.n++] = ph;
	}
	struct sym_tables syms = { .elf = elf };
	uint64_t base_addr = 0;
	bool has_base = false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB)
			syms.scn[0] = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			syms.scn[1] = scn;
		else if (name && strcmp(name, ".stapsdt.base") == 0) {
			base_addr = sh.sh_addr;
			has_base = true;
		}
	}
	size_t cap = 0;
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		const char *sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".note.stapsdt") != 0)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		size_t pos = 0, next;
		GElf_Nhdr nh;
		size_t name_off, desc_off;
		while (pos < d->d_size && (next = gelf_getnote(d, pos, &nh, &name_off, &desc_off)) > 0) {
			pos = next;
			const char *owner = (const char *)d->d_buf + name_off;
			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 || memcmp(owner, "stapsdt", 8) != 0)
				continue;
			const char *desc = (const char *)d->d_buf + desc_off;
			size_t size = nh.n_descsz, at = 24;
			struct usdt_site site = { .args_ok = false };
			uint64_t addrs[3];
			if (size < 24 + 3) {
				out->skipped++;
				continue;
			}
			memcpy(addrs, desc, sizeof(addrs));
			if (!take_string(desc, size, &at, site.provider, sizeof(site.provider)) ||
			    !take_string(desc, size, &at, site.name, sizeof(site.name)) ||
			    !site.provider[0] || !site.name[0] || !printable(site.provider) ||
			    !printable(site.name)) {
				out->skipped++;
				continue;
			}
			if (out->n == USDT_MAX_SITES) { /* before any parsing: a file of a million notes */
				out->skipped++;
				continue;
			}
			/* arguments too long to keep: the site is there, its arguments not fetched */
			const char *why_args = NULL;
			if (!take_string(desc, size, &at, site.args_text, sizeof(site.args_text))) {
				site.args_text[0] = '\0';
				why_args = "its arguments' text is too long (or not terminated) to read";
			} else if (!printable(site.args_text)) {
				site.args_text[0] = '\0';
				why_args = "its arguments' text is not printable";
			}
			site.vaddr = addrs[0];
			site.sema_vaddr = addrs[2];
			if (has_base && addrs[1]) { /* prelinked: the file moved by base_addr - addrs[1] */
				site.vaddr += base_addr - addrs[1];
				if (site.sema_vaddr)
					site.sema_vaddr += base_addr - addrs[1];
			}
			if (vaddr_offset(&segs, site.vaddr, PF_X, &site.offset) ||
			    (site.sema_vaddr &&
			     vaddr_offset(&segs, site.sema_vaddr, PF_W, &site.sema_offset))) {
				out->skipped++;
				continue;
			}
			if (why_args) {
				site.args_ok = false;
				snprintf(site.args_error, sizeof(site.args_error), "%s", why_args);
			} else {
				site.args_ok = usdt_parse_args(site.args_text, site.vaddr, lookup_symbol, &syms,
							       &site.spec, site.args_error,
							       sizeof(site.args_error)) == 0;
				char *v = site.args_ok || !syms.cut
						  ? NULL
						  : strstr(site.args_error, "a variable the file's");
				if (v) /* not found: perhaps among those not indexed */
					snprintf(v, sizeof(site.args_error) - (size_t)(v - site.args_error),
						 "a variable not among the symbols indexed (%zu more past its caps)",
						 syms.cut);
			}
			if (out->n == cap) {
				cap = cap ? cap * 2 : 64;
				out->sites = xrealloc(out->sites, cap * sizeof(*out->sites));
			}
			out->sites[out->n++] = site;
		}
	}
	out->sym_indexed = syms.n;
	out->sym_name_bytes = syms.name_bytes;
	out->sym_too_long = syms.too_long;
	out->sym_cut = syms.cut;
	free(syms.sorted);
	elf_end(elf);
	return 0;
}

void usdt_notes_free(struct usdt_notes *n)
{
	free(n->sites);
	memset(n, 0, sizeof(*n));
}

size_t usdt_find(const struct usdt_notes *n, const char *provider, const char *name, size_t *idx,
		 size_t max)
{
	size_t found = 0;
	for (size_t i = 0; i < n->n; i++) {
		const struct usdt_site *s = &n->sites[i];
		if (strcmp(s->name, name) != 0 || (provider && strcmp(s->provider, provider) != 0))
			continue;
		if (found < max)
			idx[found] = i;
		found++;
	}
	return found;
}
