/* test_usdt.c — USDT notes and their arguments (engine/symbolize/usdt_notes.c), and the SQL
 * normalization of the PostgreSQL probe (engine/probes/pg_normalize.c).
 *
 * Arguments: every operand form the compilers emit (registers and their 8/16/32-bit names, memory
 * at a register with and without an offset, an indexed element, constants, a variable through
 * %rip with and without an offset) and the forms refused, each with its reason. Notes: the
 * fixture usdt_app (tests/unit/usdt.mk: gcc -O2, two probes behind semaphores, one argument read
 * through %rip, in the library it links) checked against nm's addresses; Debian's PostgreSQL 15 and Python 3.11 binaries
 * when installed (every site's arguments readable, the counts readelf -n gives); and hostile
 * copies of the fixture: a note whose strings run past its end, one whose size runs past its
 * section, one whose site lies outside the code: each skipped and counted, never trusted. Crafted
 * ELF files (written here: one site reading a variable through %rip, and a symbol table of one
 * name many times): 20,000 symbols sharing one 1 MiB name are not indexed at all (no operand can
 * name them; their sort took 5 s), and names of 95 bytes past the index's bytes cap are counted
 * and not indexed (the variable found before the cap, not after it, and its site says why).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <gelf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_path.h"
#include "probes/pg_normalize.h"
#include "target/tfile.h"
#include "symbolize/usdt_notes.h"

/* ---- arguments ----------------------------------------------------------------------------- */

static bool fake_lookup(void *arg, const char *name, uint64_t *addr)
{
	(void)arg;
	if (!strcmp(name, "CheckpointStats")) {
		*addr = 0x885000;
		return true;
	}
	if (!strcmp(name, "NBuffers")) {
		*addr = 0x886010;
		return true;
	}
	return false;
}

static void parse_ok(const char *text, struct diag_usdt_spec *spec)
{
	char why[128] = "";
	if (usdt_parse_args(text, 0x1000, fake_lookup, NULL, spec, why, sizeof(why)))
		fail_msg("\"%s\": %s", text, why);
}

static void test_args_forms(void **state)
{
	(void)state;
	struct diag_usdt_spec s;
	parse_ok("-4@%ebx 8@-144(%rbp) 4@(%r12) 1@$0 -4@$8192 2@12(%r12) 1@%dil 8@%rax", &s);
	assert_int_equal(s.nargs, 8);
	assert_int_equal(s.args[0].kind, DIAG_USDT_ARG_REG);
	assert_int_equal(s.args[0].reg_off, 40); /* pt_regs.bx */
	assert_int_equal(s.args[0].size, 4);
	assert_true(s.args[0].is_signed);
	assert_int_equal(s.args[1].kind, DIAG_USDT_ARG_REG_DEREF);
	assert_int_equal(s.args[1].reg_off, 32); /* bp */
	assert_int_equal(s.args[1].val_off, -144);
	assert_int_equal(s.args[1].size, 8);
	assert_false(s.args[1].is_signed);
	assert_int_equal(s.args[2].kind, DIAG_USDT_ARG_REG_DEREF);
	assert_int_equal(s.args[2].reg_off, 24); /* r12 */
	assert_int_equal(s.args[2].val_off, 0);
	assert_int_equal(s.args[3].kind, DIAG_USDT_ARG_CONST);
	assert_int_equal(s.args[3].val_off, 0);
	assert_int_equal(s.args[3].size, 1);
	assert_int_equal(s.args[4].kind, DIAG_USDT_ARG_CONST);
	assert_int_equal(s.args[4].val_off, 8192);
	assert_int_equal(s.args[5].val_off, 12);
	assert_int_equal(s.args[5].size, 2);
	assert_int_equal(s.args[6].reg_off, 112); /* di */
	assert_int_equal(s.args[7].reg_off, 80);  /* ax */

	/* a variable through %rip: its distance from the site (0x1000), the load address cancels */
	parse_ok("-4@40+CheckpointStats(%rip) -4@NBuffers(%rip) 4@CheckpointStats+4(%rip)", &s);
	assert_int_equal(s.nargs, 3);
	assert_int_equal(s.args[0].kind, DIAG_USDT_ARG_IP_DEREF);
	assert_int_equal(s.args[0].val_off, 0x885000 + 40 - 0x1000);
	assert_int_equal(s.args[1].val_off, 0x886010 - 0x1000);
	assert_int_equal(s.args[2].val_off, 0x885000 + 4 - 0x1000);

	/* an array element: base + index * scale + offset */
	parse_ok("8@(%rax,%rdx,8) -4@16(%rbx,%rcx,4)", &s);
	assert_int_equal(s.args[0].kind, DIAG_USDT_ARG_INDEX_DEREF);
	assert_int_equal(s.args[0].reg_off, 80);
	assert_int_equal(s.args[0].index_off, 96); /* dx */
	assert_int_equal(s.args[0].scale, 8);
	assert_int_equal(s.args[1].val_off, 16);
	assert_int_equal(s.args[1].index_off, 88); /* cx */
	assert_int_equal(s.args[1].scale, 4);

	/* no arguments; old notes without SIZE@: a long */
	parse_ok("", &s);
	assert_int_equal(s.nargs, 0);
	parse_ok("  %rdi  ", &s);
	assert_int_equal(s.nargs, 1);
	assert_int_equal(s.args[0].size, 8);
}

static void parse_bad(const char *text, const char *why_part)
{
	struct diag_usdt_spec s;
	char why[128] = "";
	if (usdt_parse_args(text, 0x1000, fake_lookup, NULL, &s, why, sizeof(why)) == 0)
		fail_msg("\"%s\" was accepted", text);
	if (!strstr(why, why_part))
		fail_msg("\"%s\": \"%s\" does not say \"%s\"", text, why, why_part);
}

static void test_args_refused(void **state)
{
	(void)state;
	parse_bad("3@%eax", "argument 0 \"3@%eax\": its size is not 1, 2, 4 or 8");
	parse_bad("4@%ebx 1@%ah", "argument 1 \"1@%ah\": an unknown register");
	parse_bad("8@%xmm0", "an unknown register");
	parse_bad("8@8(,%rdx,8)", "not a register");
	parse_bad("8@(%rax,%rdx,3)", "scale is not 1, 2, 4 or 8");
	parse_bad("8@foo(%rbx)", "a symbol relative to a register other than %rip");
	parse_bad("8@Missing(%rip)", "symbol tables do not define");
	/* a bare offset from %rip is from the next instruction, which the note does not give */
	parse_bad("8@-8(%rip)", "memory at %rip without a symbol");
	parse_bad("8@9223372036854775807+1(%rax)", "a memory offset out of range");
	/* what could be fetched before the bad one still counts */
	struct diag_usdt_spec part;
	char why[128];
	assert_int_equal(usdt_parse_args("4@%ebx 8@%rdi 1@%ah", 0x1000, fake_lookup, NULL, &part, why, sizeof(why)), -1);
	assert_int_equal(part.nargs, 2);
	parse_bad("8@$x", "a constant that is not an integer");
	parse_bad("8@5", "neither a constant, a register nor memory");
	parse_bad("8@(%rax", "neither a constant");
	char many[256] = "";
	for (int i = 0; i < 13; i++)
		strcat(many, "8@%rax ");
	parse_bad(many, "more than 12 arguments");
	char longarg[200];
	memset(longarg, '1', sizeof(longarg) - 1);
	longarg[sizeof(longarg) - 1] = '\0';
	parse_bad(longarg, "too long");
}

/* ---- notes --------------------------------------------------------------------------------- */

static int read_notes(const char *path, struct usdt_notes *n)
{
	struct tfile_reader *r = tfile_reader_new();
	struct tfile_src src = { .path = path, .operator_path = true };
	struct tfile_image *img;
	struct diag_err err;
	int rc = tfile_read_elf(r, &src, 0, &img, &err);
	if (rc == 0) {
		rc = usdt_read_notes(img, path, n, &err);
		tfile_image_free(img);
	}
	if (rc)
		print_message("%s: %s\n", path, err.msg);
	tfile_reader_free(r);
	return rc;
}

static const struct usdt_site *site(const struct usdt_notes *n, const char *name)
{
	size_t idx[4];
	size_t k = usdt_find(n, NULL, name, idx, 4);
	return k == 1 ? &n->sites[idx[0]] : NULL;
}

/* The address nm gives a symbol of the file (an independent reading). */
static uint64_t nm_address(const char *path, const char *sym)
{
	char cmd[PATH_MAX + 64], line[512];
	snprintf(cmd, sizeof(cmd), "nm -P '%s' 2>/dev/null", path);
	FILE *f = popen(cmd, "r");
	uint64_t addr = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char name[256], type[8];
		unsigned long long a;
		if (sscanf(line, "%255s %7s %llx", name, type, &a) == 3 && !strcmp(name, sym))
			addr = a;
	}
	if (f)
		pclose(f);
	return addr;
}

static void test_fixture_notes(void **state)
{
	(void)state;
	const char *p = fixture_path("usdt_app");
	if (!p)
		skip();
	char path[PATH_MAX], lib[PATH_MAX];
	snprintf(path, sizeof(path), "%s", p);
	snprintf(lib, sizeof(lib), "%s", fixture_path("libusdtapp.so"));
	struct usdt_notes n, nl;
	assert_int_equal(read_notes(path, &n), 0);
	assert_int_equal(n.n, 2);
	assert_int_equal(n.skipped, 0);
	const struct usdt_site *start = site(&n, "request__start"), *done = site(&n, "request__done");
	assert_non_null(start);
	assert_non_null(done);
	assert_string_equal(start->provider, "app");
	/* semaphores where the program has them, at nm's addresses */
	assert_int_equal(start->sema_vaddr, nm_address(path, "app_request__start_semaphore"));
	assert_int_equal(done->sema_vaddr, nm_address(path, "app_request__done_semaphore"));
	assert_true(start->sema_offset != 0);
	assert_true(start->args_ok && done->args_ok);
	assert_int_equal(start->spec.nargs, 2);
	assert_int_equal(start->spec.args[1].kind, DIAG_USDT_ARG_INDEX_DEREF);

	/* the library: no semaphores; the sites in app_tick(), as nm places it */
	assert_int_equal(read_notes(lib, &nl), 0);
	assert_int_equal(nl.n, 2);
	const struct usdt_site *tick = site(&nl, "tick"), *config = site(&nl, "config");
	assert_non_null(tick);
	assert_non_null(config);
	assert_int_equal(tick->sema_vaddr, 0);
	assert_int_equal(tick->sema_offset, 0);
	uint64_t app_tick = nm_address(lib, "app_tick");
	assert_true(app_tick != 0);
	assert_true(tick->vaddr >= app_tick && tick->vaddr < app_tick + 64);
	assert_true(tick->offset != 0);
	/* config's argument through %rip, relative to its site */
	assert_true(config->args_ok);
	assert_int_equal(config->spec.nargs, 1);
	assert_int_equal(config->spec.args[0].kind, DIAG_USDT_ARG_IP_DEREF);
	assert_int_equal(config->spec.args[0].val_off,
			 (int64_t)(nm_address(lib, "app_limit") - config->vaddr));
	usdt_notes_free(&n);
	usdt_notes_free(&nl);
}

/* Debian's binaries, as the recipes probe them. */
static void test_real_binaries(void **state)
{
	(void)state;
	const char *pg = "/usr/lib/postgresql/15/bin/postgres";
	bool any = false;
	struct usdt_notes n;
	if (access(pg, R_OK) == 0) {
		any = true;
		assert_int_equal(read_notes(pg, &n), 0);
		assert_int_equal(n.n, 71); /* readelf -n: 71 stapsdt notes */
		for (size_t i = 0; i < n.n; i++)
			if (!n.sites[i].args_ok)
				fail_msg("postgres %s: %s", n.sites[i].name, n.sites[i].args_error);
		size_t idx[8];
		assert_int_equal(usdt_find(&n, "postgresql", "lwlock__wait__start", idx, 8), 3);
		assert_int_equal(usdt_find(&n, "postgresql", "sort__start", idx, 8), 4);
		assert_int_equal(usdt_find(&n, "other", "sort__start", idx, 8), 0);
		const struct usdt_site *ck = site(&n, "checkpoint__done");
		assert_non_null(ck);
		assert_int_equal(ck->spec.nargs, 5);
		assert_int_equal(ck->spec.args[1].kind, DIAG_USDT_ARG_IP_DEREF); /* NBuffers */
		const struct usdt_site *q = site(&n, "query__start");
		assert_true(q->sema_offset != 0);
		assert_int_equal(q->spec.args[0].kind, DIAG_USDT_ARG_REG);
		usdt_notes_free(&n);
	}
	const char *py = "/usr/bin/python3.11";
	if (access(py, R_OK) == 0) {
		any = true;
		assert_int_equal(read_notes(py, &n), 0);
		const struct usdt_site *gc = site(&n, "gc__start");
		assert_non_null(gc);
		assert_true(gc->args_ok);
		assert_int_equal(gc->spec.args[0].reg_off, 152); /* 112(%rsp) */
		usdt_notes_free(&n);
	}
	if (!any)
		skip();
}

/* A copy of the fixture with its first note changed by edit(note bytes, section size). */
static int hostile_copy(const char *from, const char *to, void (*edit)(unsigned char *note, size_t size))
{
	int in = open(from, O_RDONLY);
	if (in < 0)
		return -1;
	off_t size = lseek(in, 0, SEEK_END);
	unsigned char *buf = malloc((size_t)size);
	if (pread(in, buf, (size_t)size, 0) != size) {
		close(in);
		free(buf);
		return -1;
	}
	close(in);
	elf_version(EV_CURRENT);
	Elf *e = elf_memory((char *)buf, (size_t)size);
	size_t shstrndx;
	elf_getshdrstrndx(e, &shstrndx);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".note.stapsdt"))
			edit(buf + sh.sh_offset, sh.sh_size);
	}
	elf_end(e);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int rc = out >= 0 && write(out, buf, (size_t)size) == size ? 0 : -1;
	if (out >= 0)
		close(out);
	free(buf);
	return rc;
}

/* The first note: 12 bytes of header, "stapsdt\0", then 24 bytes of addresses and the strings. */
static void strings_unterminated(unsigned char *note, size_t size)
{
	uint32_t descsz;
	memcpy(&descsz, note + 4, 4);
	(void)size;
	for (uint32_t i = 24; i < descsz; i++) /* no NUL anywhere in its strings */
		if (note[20 + i] == 0)
			note[20 + i] = 'A';
}

static void size_past_section(unsigned char *note, size_t size)
{
	uint32_t huge = (uint32_t)size * 4;
	memcpy(note + 4, &huge, 4);
}

static void site_outside_code(unsigned char *note, size_t size)
{
	(void)size;
	uint64_t nowhere = 0x7fffffff0000ull;
	memcpy(note + 20, &nowhere, 8);
}

static void test_hostile_notes(void **state)
{
	(void)state;
	const char *p = fixture_path("usdt_app");
	if (!p)
		skip();
	char from[PATH_MAX], to[PATH_MAX];
	snprintf(from, sizeof(from), "%s", p);
	snprintf(to, sizeof(to), "/tmp/diag-test-usdt.%d", (int)getpid());
	struct usdt_notes n;

	assert_int_equal(hostile_copy(from, to, strings_unterminated), 0);
	assert_int_equal(read_notes(to, &n), 0);
	assert_int_equal(n.n, 1); /* the first skipped, the other read */
	assert_int_equal(n.skipped, 1);
	usdt_notes_free(&n);

	assert_int_equal(hostile_copy(from, to, site_outside_code), 0);
	assert_int_equal(read_notes(to, &n), 0);
	assert_int_equal(n.n, 1);
	assert_int_equal(n.skipped, 1);
	usdt_notes_free(&n);

	/* a size past the section: libelf stops there; nothing is read beyond it */
	assert_int_equal(hostile_copy(from, to, size_past_section), 0);
	assert_int_equal(read_notes(to, &n), 0);
	assert_true(n.n < 2);
	usdt_notes_free(&n);
	unlink(to);

	/* not ELF at all */
	FILE *f = fopen(to, "w");
	fputs("#!/bin/sh\necho not an ELF file\n", f);
	fclose(f);
	assert_int_equal(read_notes(to, &n), -1);
	unlink(to);
}

/* ---- a crafted symbol table ---------------------------------------------------------------- */

#define CRAFT_TEXT 0x401000ull
#define CRAFT_DATA 0x402000ull
#define CRAFT_SITE (CRAFT_TEXT + 0x10)
#define CRAFT_SEMA (CRAFT_DATA + 0x8)
#define CRAFT_VAR (CRAFT_DATA + 0x10)

static void put(unsigned char *buf, size_t *off, const void *p, size_t len)
{
	memcpy(buf + *off, p, len);
	*off += len;
}

/* Writes an x86-64 ELF executable at path: one USDT site, app:probe, behind a semaphore, whose
 * argument reads the variable sema_var through %rip ("8@sema_var(%rip)"), and a .symtab of
 * `many` symbols that all share one name of name_len bytes (one string, every st_name its
 * offset), sema_var first (var_first) or last. 0, or -1. */
static int write_crafted(const char *path, size_t many, size_t name_len, bool var_first)
{
	static const char shstr[] = "\0.text\0.data\0.note.stapsdt\0.symtab\0.strtab\0.shstrtab";
	enum {
		SH_TEXT = 1,
		SH_DATA = 7,
		SH_NOTE = 13,
		SH_SYMTAB = 27,
		SH_STRTAB = 35,
		SH_SHSTRTAB = 43
	};
	static const char args[] = "8@sema_var(%rip)";
	size_t nsyms = many + 2; /* the null symbol, the many, sema_var */
	size_t note_desc = 24 + sizeof("app") + sizeof("probe") + sizeof(args);
	size_t note_size = 12 + 8 + ((note_desc + 3) & ~(size_t)3);
	size_t off_note = 0x3000, off_sym = (off_note + note_size + 7) & ~(size_t)7;
	size_t off_str = off_sym + nsyms * sizeof(Elf64_Sym);
	size_t str_size = 1 + name_len + 1 + sizeof("sema_var");
	size_t off_shstr = off_str + str_size, off_sh = (off_shstr + sizeof(shstr) + 7) & ~(size_t)7;
	size_t size = off_sh + 7 * sizeof(Elf64_Shdr);
	unsigned char *buf = calloc(1, size);
	if (!buf)
		return -1;
	Elf64_Ehdr eh = { .e_type = ET_EXEC,
			  .e_machine = EM_X86_64,
			  .e_version = EV_CURRENT,
			  .e_entry = CRAFT_TEXT,
			  .e_phoff = sizeof(Elf64_Ehdr),
			  .e_shoff = off_sh,
			  .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_phentsize = sizeof(Elf64_Phdr),
			  .e_phnum = 2,
			  .e_shentsize = sizeof(Elf64_Shdr),
			  .e_shnum = 7,
			  .e_shstrndx = 6 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	size_t off = 0;
	put(buf, &off, &eh, sizeof(eh));
	Elf64_Phdr ph[2] = {
		{ .p_type = PT_LOAD,
		  .p_flags = PF_R | PF_X,
		  .p_offset = 0x1000,
		  .p_vaddr = CRAFT_TEXT,
		  .p_paddr = CRAFT_TEXT,
		  .p_filesz = 0x100,
		  .p_memsz = 0x100,
		  .p_align = 0x1000 },
		{ .p_type = PT_LOAD,
		  .p_flags = PF_R | PF_W,
		  .p_offset = 0x2000,
		  .p_vaddr = CRAFT_DATA,
		  .p_paddr = CRAFT_DATA,
		  .p_filesz = 0x100,
		  .p_memsz = 0x100,
		  .p_align = 0x1000 },
	};
	put(buf, &off, ph, sizeof(ph));
	/* the note: its header, "stapsdt", the site, no .stapsdt.base, the semaphore, the strings */
	off = off_note;
	uint32_t nh[3] = { 8, (uint32_t)note_desc, 3 };
	uint64_t addrs[3] = { CRAFT_SITE, 0, CRAFT_SEMA };
	put(buf, &off, nh, sizeof(nh));
	put(buf, &off, "stapsdt", 8);
	put(buf, &off, addrs, sizeof(addrs));
	put(buf, &off, "app", sizeof("app"));
	put(buf, &off, "probe", sizeof("probe"));
	put(buf, &off, args, sizeof(args));
	/* the symbols */
	off = off_sym + sizeof(Elf64_Sym);
	Elf64_Sym var = { .st_name = (uint32_t)(1 + name_len + 1),
			  .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			  .st_shndx = 2,
			  .st_value = CRAFT_VAR,
			  .st_size = 8 };
	Elf64_Sym same = { .st_name = 1,
			   .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			   .st_shndx = 2,
			   .st_value = CRAFT_DATA + 0x40,
			   .st_size = 8 };
	if (var_first)
		put(buf, &off, &var, sizeof(var));
	for (size_t i = 0; i < many; i++)
		put(buf, &off, &same, sizeof(same));
	if (!var_first)
		put(buf, &off, &var, sizeof(var));
	off = off_str + 1;
	memset(buf + off, 'A', name_len);
	off += name_len + 1;
	put(buf, &off, "sema_var", sizeof("sema_var"));
	off = off_shstr;
	put(buf, &off, shstr, sizeof(shstr));
	Elf64_Shdr sh[7] = {
		{ 0 },
		{ .sh_name = SH_TEXT,
		  .sh_type = SHT_PROGBITS,
		  .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
		  .sh_addr = CRAFT_TEXT,
		  .sh_offset = 0x1000,
		  .sh_size = 0x100,
		  .sh_addralign = 16 },
		{ .sh_name = SH_DATA,
		  .sh_type = SHT_PROGBITS,
		  .sh_flags = SHF_ALLOC | SHF_WRITE,
		  .sh_addr = CRAFT_DATA,
		  .sh_offset = 0x2000,
		  .sh_size = 0x100,
		  .sh_addralign = 8 },
		{ .sh_name = SH_NOTE, .sh_type = SHT_NOTE, .sh_offset = off_note, .sh_size = note_size, .sh_addralign = 4 },
		{ .sh_name = SH_SYMTAB,
		  .sh_type = SHT_SYMTAB,
		  .sh_offset = off_sym,
		  .sh_size = nsyms * sizeof(Elf64_Sym),
		  .sh_link = 5,
		  .sh_info = 1,
		  .sh_addralign = 8,
		  .sh_entsize = sizeof(Elf64_Sym) },
		{ .sh_name = SH_STRTAB,
		  .sh_type = SHT_STRTAB,
		  .sh_offset = off_str,
		  .sh_size = str_size,
		  .sh_addralign = 1 },
		{ .sh_name = SH_SHSTRTAB,
		  .sh_type = SHT_STRTAB,
		  .sh_offset = off_shstr,
		  .sh_size = sizeof(shstr),
		  .sh_addralign = 1 },
	};
	off = off_sh;
	put(buf, &off, sh, sizeof(sh));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int rc = fd >= 0 && write(fd, buf, size) == (ssize_t)size ? 0 : -1;
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/* 20,000 symbols sharing one 1 MiB name (the parse sorted them by name with strcmp: 5 s): names
 * no operand can name (USDT_SYM_MAX) are never indexed, so the index holds sema_var alone and
 * the site's argument still reads it. */
static void test_long_symbol_names(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/diag-test-usdt-syms.%d", (int)getpid());
	assert_int_equal(write_crafted(path, 20000, 1 << 20, false), 0);
	struct usdt_notes n;
	assert_int_equal(read_notes(path, &n), 0);
	unlink(path);
	assert_int_equal(n.n, 1);
	const struct usdt_site *s = site(&n, "probe");
	assert_non_null(s);
	assert_int_equal(s->sema_vaddr, CRAFT_SEMA);
	assert_int_equal(s->sema_offset, 0x2008);
	if (!s->args_ok)
		fail_msg("app:probe: %s", s->args_error);
	assert_int_equal(s->spec.nargs, 1);
	assert_int_equal(s->spec.args[0].kind, DIAG_USDT_ARG_IP_DEREF);
	assert_int_equal(s->spec.args[0].val_off, (int64_t)(CRAFT_VAR - CRAFT_SITE));
	assert_int_equal(n.sym_indexed, 1); /* sema_var only */
	assert_int_equal(n.sym_name_bytes, sizeof("sema_var"));
	assert_int_equal(n.sym_too_long, 20000);
	assert_int_equal(n.sym_cut, 0);
	usdt_notes_free(&n);
}

/* Names an operand could name (95 bytes), more of them than the index's bytes cap holds: those
 * past it are not indexed, and counted; a variable before the cap is found, one after it is not,
 * and its site says why. */
static void test_symbol_index_caps(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/diag-test-usdt-caps.%d", (int)getpid());
	size_t many = USDT_SYM_INDEX_BYTES / USDT_SYM_MAX + 1000;
	struct usdt_notes n;
	for (int var_first = 1; var_first >= 0; var_first--) {
		assert_int_equal(write_crafted(path, many, USDT_SYM_MAX - 1, var_first), 0);
		assert_int_equal(read_notes(path, &n), 0);
		unlink(path);
		const struct usdt_site *s = site(&n, "probe");
		assert_non_null(s);
		assert_true(n.sym_name_bytes <= USDT_SYM_INDEX_BYTES);
		assert_true(n.sym_cut >= 1000);
		assert_int_equal(n.sym_indexed + n.sym_cut, many + 1);
		if (var_first) {
			assert_true(s->args_ok);
			assert_int_equal(s->spec.args[0].val_off, (int64_t)(CRAFT_VAR - CRAFT_SITE));
		} else {
			assert_false(s->args_ok);
			if (!strstr(s->args_error, "not among the symbols indexed"))
				fail_msg("app:probe: %s", s->args_error);
		}
		usdt_notes_free(&n);
	}
}

/* ---- SQL normalization ---------------------------------------------------------------------- */

static void norm_is(const char *in, const char *want)
{
	char out[512];
	pg_normalize(in, out, sizeof(out));
	if (strcmp(out, want))
		fail_msg("normalize(\"%s\") = \"%s\", want \"%s\"", in, out, want);
}

static void test_normalize(void **state)
{
	(void)state;
	norm_is("UPDATE accounts SET balance = balance - 1 WHERE id = 42;",
		"UPDATE accounts SET balance = balance - ? WHERE id = ?;");
	norm_is("select * from t where name = 'O''Brien' and x > 1.5e-3",
		"select * from t where name = ? and x > ?");
	norm_is("SELECT * FROM t WHERE id IN (1, 2, 3, 4) AND k = E'a\\'b'",
		"SELECT * FROM t WHERE id IN (?, ...) AND k = ?");
	norm_is("INSERT INTO t VALUES (1, 'a'), (2, 'b')", "INSERT INTO t VALUES (?, ...), (?, ...)");
	norm_is("SELECT $1, col2, t2.x3 FROM tab1 t2", "SELECT $1, col2, t2.x3 FROM tab1 t2");
	norm_is("SELECT $$it's$$ || $tag$a$b$tag$", "SELECT ? || ?");
	norm_is("  SELECT\n\t1 -- the answer\n  /* c */ FROM \"My 42\"  ", "SELECT ? FROM \"My 42\"");
	norm_is("SELECT md5(g::text) FROM generate_series(1, 200000) g ORDER BY 1",
		"SELECT md5(g::text) FROM generate_series(?, ...) g ORDER BY ?");
	norm_is("SELECT 'unterminated", "SELECT ?");
	norm_is("", "");
	char small[8];
	pg_normalize("SELECT 12345 FROM long_table_name", small, sizeof(small));
	assert_string_equal(small, "SELECT"); /* cut, its trailing blank trimmed */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args_forms),        cmocka_unit_test(test_args_refused),
		cmocka_unit_test(test_fixture_notes),     cmocka_unit_test(test_real_binaries),
		cmocka_unit_test(test_hostile_notes),     cmocka_unit_test(test_long_symbol_names),
		cmocka_unit_test(test_symbol_index_caps), cmocka_unit_test(test_normalize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
