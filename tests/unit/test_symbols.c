/* test_symbols.c — kernel and user symbolization (engine/symbolize/ksyms.c, usyms.c).
 *
 * Kernel: fake kallsyms files (boundaries, aliases, modules, hidden addresses) and, when readable,
 * the real /proc/kallsyms. User: the fixtures of symbols.mk run as real child processes that print
 * the addresses of their functions; each is snapshotted alive and symbolized again after it exits.
 * Expected "file+0xOFF" strings are computed from the child's /proc/PID/maps, independently of
 * usyms.c. Needs no root (paths that need it accept only the exact fallback form).
 * Hostile inputs: copies of the library fixture with a symbol table's header falsified (entry
 * size 1, extent past the end of the file) are read as if that table were absent; a synthetic
 * maps text of 20,000 mappings, then an overlapping one, gives what a naive model of "newest
 * snapshot wins" gives.
 *
 * Why one file (~1,300 lines): it tests one module's two halves (ksyms.c, usyms.c) through the same
 * fixtures and child processes; each section below is one of its concerns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/debuginfo.h"
#include "symbolize/demangle.h"
#include "fixture_path.h"
#include "symbolize/ksyms.h"
#include "symbolize/symbols.h"
#include "symbolize/perfmap.h"
#include "symbolize/usyms.h"
#include "common/util.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* Hand-added mappings of a whole file from offset 0 at BASE_ADDR: address BASE_ADDR + o is file
 * offset o. */
#define BASE_ADDR UINT64_C(0x40000000)

static char tmpdir[64];
static uint64_t main_return; /* where main returns to: inside glibc's __libc_start_call_main */

static const char *fixture(const char *name)
{
	const char *path = fixture_path(name);
	if (!path)
		fail_msg("fixture %s missing: build it with `make unit`", name);
	return path;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *buf = read_file(from, &len);
	assert_non_null(buf);
	FILE *f = fopen(to, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
	assert_int_equal(chmod(to, 0755), 0);
}

/* A fixture program running as a child, with the addresses it printed. */
struct child {
	pid_t pid;
	int in; /* its stdin: closing it makes it exit */
	uint64_t main_func, fx_sized, lib_exported, lib_local;
};

static void child_start(struct child *c, const char *exe)
{
	int in[2], out[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execl(exe, exe, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	memset(c, 0, sizeof(*c));
	c->pid = pid;
	c->in = in[1];
	FILE *f = fdopen(out[0], "r");
	assert_non_null(f);
	char line[256], name[64];
	void *p;
	while (fgets(line, sizeof(line), f) && strcmp(line, "ready\n")) {
		assert_int_equal(sscanf(line, "%63s %p", name, &p), 2);
		uint64_t a = (uint64_t)(uintptr_t)p;
		if (!strcmp(name, "main_func"))
			c->main_func = a;
		else if (!strcmp(name, "fx_sized"))
			c->fx_sized = a;
		else if (!strcmp(name, "lib_exported"))
			c->lib_exported = a;
		else if (!strcmp(name, "lib_local"))
			c->lib_local = a;
	}
	fclose(f);
	assert_true(c->main_func && c->fx_sized && c->lib_exported && c->lib_local);
}

static void child_stop(struct child *c)
{
	int status;
	close(c->in);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
}

/* The mapping of pid holding addr, read from /proc/PID/maps by the test itself. */
struct map {
	uint64_t start, end, off;
	char path[PATH_MAX];
};

static int find_map(int pid, uint64_t addr, struct map *m)
{
	char p[64], line[PATH_MAX + 128];
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, o;
		int n = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &s, &e, &o, &n) < 3)
			continue;
		if (addr >= s && addr < e) {
			m->start = s, m->end = e, m->off = o;
			snprintf(m->path, sizeof(m->path), "%s", line + n);
			m->path[strcspn(m->path, "\n")] = '\0';
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* "basename+0xOFF" for addr as the mapping of pid gives it. */
static void expect_offset_form(int pid, uint64_t addr, const char *base, char *out, size_t len)
{
	struct map m;
	assert_true(find_map(pid, addr, &m));
	snprintf(out, len, "%s+0x%" PRIx64, base, addr - m.start + m.off);
}

static void assert_sym(struct usyms *us, uint64_t addr, const char *want, int want_ret)
{
	char buf[256];
	int r = usyms_symbolize(us, addr, buf, sizeof(buf));
	if (strcmp(buf, want) || r != want_ret)
		fail_msg("0x%" PRIx64 ": got \"%s\" (%d), want \"%s\" (%d)", addr, buf, r, want,
			 want_ret);
}

/* assert_sym, and the name's source. */
static void assert_sym_src(struct usyms *us, uint64_t addr, const char *want, int want_ret,
			   enum usym_source want_src)
{
	char buf[256];
	enum usym_source src = (enum usym_source)99;
	int r = usyms_symbolize_src(us, addr, buf, sizeof(buf), &src);
	if (strcmp(buf, want) || r != want_ret || src != want_src)
		fail_msg("0x%" PRIx64 ": got \"%s\" (%d, source %d), want \"%s\" (%d, source %d)",
			 addr, buf, r, (int)src, want, want_ret, (int)want_src);
}

/* ---- kernel -------------------------------------------------------------------------------- */

static const char fake_kallsyms[] =
	/* deliberately out of order, with data symbols and aliases */
	"0000000000002000 t mod_func\t[mymod]\n"
	"0000000000001000 T _stext\n"
	"0000000000001000 T first_func\n"
	"0000000000001010 t second_func\n"
	"0000000000001020 D some_data\n"
	"0000000000001040 W weak_func\n"
	"0000000000001100 T _etext\n"
	"0000000000001200 T __irqentry_text_end\n"
	"0000000000001040 t __weak_func_alias\n"
	"0000000000002100 t mod_last\t[mymod]\n"
	"0000000000003000 t other_first\t[other]\n"
	"0000000000003010 t other_last\t[other]\n";

/* The same symbols in address order, as the kernel lists them (the loader merges aliases as they
 * come and does not sort): each alias pair in both orders, a line too long to be one (skipped),
 * the last line without its newline. */
static const char *in_order_kallsyms(void)
{
	static char text[8192];
	char longname[5001];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "0000000000001000 T _stext\n"
		 "0000000000001000 T first_func\n"
		 "0000000000001010 t second_func\n"
		 "0000000000001020 D some_data\n"
		 "0000000000001040 W weak_func\n"
		 "0000000000001040 t __weak_func_alias\n"
		 "0000000000001100 T _etext\n"
		 "0000000000001200 T __irqentry_text_end\n"
		 "0000000000002000 t mod_func\t[mymod]\n"
		 "0000000000002050 t %s\n"
		 "0000000000002100 t mod_last\t[mymod]\n"
		 "0000000000003000 t other_first\t[other]\n"
		 "0000000000003010 t other_last\t[other]",
		 longname);
	return text;
}

static void check_fake_ksyms(const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/kallsyms", tmpdir);
	write_text(path, text);
	struct diag_err err = { 0 };
	struct ksyms *ks = ksyms_load(path, &err);
	assert_non_null(ks);
	uint64_t off = 99;
	static const struct {
		uint64_t addr;
		const char *name;
		uint64_t off;
	} cases[] = {
		{ 0x0fff, NULL, 0 },
		{ 0x1000, "first_func", 0 }, /* preferred over _stext */
		{ 0x100f, "first_func", 0xf },
		{ 0x1010, "second_func", 0 },
		{ 0x1030, "second_func", 0x20 }, /* data symbols are not boundaries */
		{ 0x1040, "weak_func", 0 },
		{ 0x10ff, "weak_func", 0xbf },
		{ 0x1100, NULL, 0 }, /* _etext covers nothing */
		{ 0x1fff, NULL, 0 },
		{ 0x1200, NULL, 0 }, /* neither does a *_text_end marker */
		{ 0x2000, "mod_func [mymod]", 0 },
		{ 0x20ff, "mod_func [mymod]", 0xff },
		{ 0x2100, "mod_last [mymod]", 0 },
		{ 0x2100 + 0xeff, "mod_last [mymod]", 0xeff }, /* next module is within the tail */
		{ 0x3000, "other_first [other]", 0 },
		{ 0x3010 + 0xffff, "other_last [other]", 0xffff },
		{ 0x3010 + 0x10000, NULL, 0 }, /* past the tail of the last symbol */
		{ UINT64_MAX, NULL, 0 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const char *got = ksyms_lookup(ks, cases[i].addr, &off);
		if (!cases[i].name) {
			if (got)
				fail_msg("0x%" PRIx64 ": got %s, want none", cases[i].addr, got);
			continue;
		}
		if (!got || strcmp(got, cases[i].name) || off != cases[i].off)
			fail_msg("0x%" PRIx64 ": got %s+0x%" PRIx64 ", want %s+0x%" PRIx64,
				 cases[i].addr, got ? got : "(none)", off, cases[i].name, cases[i].off);
	}
	assert_string_equal(ksyms_lookup(ks, 0x1011, NULL), "second_func");
	ksyms_free(ks);
	unlink(path);
}

static void test_ksyms_fake(void **state)
{
	(void)state;
	check_fake_ksyms(fake_kallsyms);
	check_fake_ksyms(in_order_kallsyms());
}

/* sort_in_place against qsort: random keys with many repeats, already sorted, reversed, tiny. */
struct sort_item {
	uint64_t key;
	uint32_t tie, pad;
};

static int sort_item_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_item *x = a, *y = b;
	(void)arg;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->tie < y->tie ? -1 : x->tie > y->tie;
}

static int sort_item_cmp2(const void *a, const void *b)
{
	return sort_item_cmp(a, b, NULL);
}

static void test_sort_in_place(void **state)
{
	(void)state;
	const size_t sizes[] = { 0, 1, 2, 17, 1000, 100000 };
	uint64_t rnd = 88172645463325252ull;
	for (size_t s = 0; s < ARRAY_LEN(sizes); s++)
		for (int shape = 0; shape < 3; shape++) {
			size_t n = sizes[s];
			struct sort_item *a = xcalloc(n ? n : 1, sizeof(*a)), *b = xcalloc(n ? n : 1, sizeof(*b));
			for (size_t i = 0; i < n; i++) {
				rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
				a[i].key = shape == 0 ? rnd % (n / 4 + 1) : shape == 1 ? i : n - i;
				a[i].tie = (uint32_t)(rnd >> 40);
			}
			memcpy(b, a, n * sizeof(*a));
			sort_in_place(a, n, sizeof(*a), sort_item_cmp, NULL);
			qsort(b, n, sizeof(*b), sort_item_cmp2);
			for (size_t i = 0; i < n; i++)
				if (sort_item_cmp(&a[i], &b[i], NULL))
					fail_msg("n %zu shape %d: element %zu differs", n, shape, i);
			free(a);
			free(b);
		}
}

static void test_ksyms_restricted(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof(path), "%s/kallsyms_zero", tmpdir);
	write_text(path, "0000000000000000 T _stext\n"
			 "0000000000000000 t foo\n"
			 "0000000000000000 T bar\t[mod]\n");
	struct diag_err err = { 0 };
	assert_null(ksyms_load(path, &err));
	assert_int_equal(err.code, DIAG_EXIT_RUNTIME);
	assert_non_null(strstr(err.msg, "kptr_restrict"));
	unlink(path);

	memset(&err, 0, sizeof(err));
	assert_null(ksyms_load("/nonexistent/kallsyms", &err));
	assert_int_equal(err.code, DIAG_EXIT_RUNTIME);
	assert_non_null(strstr(err.msg, "/nonexistent/kallsyms"));

	snprintf(path, sizeof(path), "%s/kallsyms_data", tmpdir);
	write_text(path, "0000000000001000 D only_data\n");
	memset(&err, 0, sizeof(err));
	assert_null(ksyms_load(path, &err));
	assert_int_equal(err.code, DIAG_EXIT_RUNTIME);
	unlink(path);
}

static void test_ksyms_proc(void **state)
{
	(void)state;
	struct diag_err err = { 0 };
	uint64_t t0 = mono_ns();
	struct ksyms *ks = ksyms_load(NULL, &err);
	uint64_t ms = (mono_ns() - t0) / 1000000;
	if (!ks) {
		print_message("  /proc/kallsyms not usable (%s)\n", err.msg);
		skip();
	}
	print_message("  /proc/kallsyms loaded in %" PRIu64 " ms\n", ms);
	assert_true(ms < 1000); /* ~50 ms of it is the kernel generating the file */

	/* The address of "schedule", found by the test itself. */
	FILE *f = fopen("/proc/kallsyms", "r");
	assert_non_null(f);
	char line[512], name[256], type;
	unsigned long long addr = 0, a;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && !strcmp(name, "schedule") &&
		    (type == 'T' || type == 't')) {
			addr = a;
			break;
		}
	fclose(f);
	assert_true(addr != 0);
	uint64_t off = 0;
	const char *got = ksyms_lookup(ks, addr + 1, &off);
	assert_non_null(got);
	assert_string_equal(got, "schedule");
	assert_int_equal(off, 1);

	/* A function of a loaded module keeps the module's name: "function [module]". */
	f = fopen("/proc/kallsyms", "r");
	assert_non_null(f);
	char mod[128] = "";
	addr = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s [%127[^]]]", &a, &type, name, mod) == 4 &&
		    (type == 'T' || type == 't') && a && strncmp(mod, "__builtin", 9) &&
		    strcmp(mod, "bpf")) {
			addr = a;
			break;
		}
	fclose(f);
	if (addr) {
		char want[512];
		snprintf(want, sizeof(want), "%s [%s]", name, mod);
		got = ksyms_lookup(ks, addr, &off);
		assert_non_null(got);
		/* another symbol at the same address may be preferred, but never another module */
		if (strcmp(got, want) && !strstr(got, want + strlen(name)))
			fail_msg("module symbol at 0x%llx: got \"%s\", want \"%s\"", addr, got, want);
		print_message("  module symbol: %s\n", got);
	} else {
		print_message("  no module loaded: module names checked on fake kallsyms only\n");
	}
	ksyms_free(ks);
}

/* ---- user ---------------------------------------------------------------------------------- */

/* A running PIE with its library: names while alive, the same names after it exited. */
static void check_running(const char *exe, const char *base)
{
	struct child c;
	child_start(&c, fixture(exe));
	struct usyms *us = usyms_new(c.pid);
	struct diag_err err = { 0 };
	assert_int_equal(usyms_snapshot(us, &err), 0);

	char hole[128], past[128];
	expect_offset_form(c.pid, c.fx_sized + 16, base, hole, sizeof(hole));
	expect_offset_form(c.pid, c.fx_sized + 63, base, past, sizeof(past));
	for (int round = 0; round < 2; round++) {
		assert_sym(us, c.main_func, "main_func", 1);
		assert_sym(us, c.main_func + 4, "main_func", 1);
		assert_sym(us, c.fx_sized, "fx_sized", 1);
		assert_sym(us, c.fx_sized + 15, "fx_sized", 1);
		assert_sym(us, c.fx_sized + 16, hole, 0); /* size-0 label fx_nosize: no match */
		assert_sym(us, c.fx_sized + 63, past, 0);
		assert_sym(us, c.lib_exported, "lib_exported", 1);
		assert_sym(us, c.lib_local, "lib_local", 1);
		assert_sym(us, 0x10, "[unknown]", 0);
		assert_sym(us, UINT64_MAX - 4096, "[unknown]", 0);
		if (round == 0) {
			child_stop(&c);
			/* The process is gone: a new snapshot fails, the old one still serves. */
			assert_int_equal(usyms_snapshot(us, &err), -1);
			assert_int_equal(err.code, DIAG_EXIT_RUNTIME);
		}
	}
	usyms_free(us);
}

static void test_usyms_pie(void **state)
{
	(void)state;
	check_running("symfix_pie", "symfix_pie");
}

static void test_usyms_nopie(void **state)
{
	(void)state;
	check_running("symfix_nopie", "symfix_nopie");
}

/* Stripped executable: its functions become "file+0xOFF", the library's keep their names. */
static void test_usyms_stripped(void **state)
{
	(void)state;
	struct child c;
	child_start(&c, fixture("symfix_pie_stripped"));
	struct usyms *us = usyms_new(c.pid);
	struct diag_err err = { 0 };
	assert_int_equal(usyms_snapshot(us, &err), 0);
	char want[128], want2[128];
	/* Inside a compiled function: grouped under the function's entry, from its .eh_frame FDE. */
	expect_offset_form(c.pid, c.main_func, "symfix_pie_stripped", want, sizeof(want));
	assert_sym_src(us, c.main_func, want, 0, USYM_SRC_FDE);
	assert_sym_src(us, c.main_func + 3, want, 0, USYM_SRC_FDE);
	/* fx_sized is bare assembly without CFI: no FDE, so the address itself, nothing guessed */
	expect_offset_form(c.pid, c.fx_sized + 4, "symfix_pie_stripped", want2, sizeof(want2));
	assert_sym_src(us, c.fx_sized + 4, want2, 0, USYM_SRC_NONE);
	assert_sym_src(us, c.lib_exported, "lib_exported", 1, USYM_SRC_SYMTAB);
	assert_sym(us, c.lib_exported, "lib_exported", 1);
	assert_sym(us, c.lib_local, "lib_local", 1);
	child_stop(&c);
	assert_sym(us, c.main_func, want, 0);
	usyms_free(us);
}

/* Hand-built layout: the live library's mappings, replayed onto its stripped copy (strip keeps the
 * loadable layout). .dynsym still names the exported function; the local one is an offset. Then a
 * newer overlapping mapping replaces part of an older one. */
/* A file whose symbol and string tables span several of the steps in which they are given back
 * as they are read (usyms.c syms_collect): every one of its 20,000 functions is still named,
 * as libelf reads the file itself. */
static void test_usyms_large_tables(void **state)
{
	(void)state;
	const char *lib = fixture("libsymmany.so");
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	GElf_Phdr exec = { 0 };
	size_t nph = 0;
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			exec = ph;
	}
	assert_true(exec.p_filesz > 0);
	const uint64_t base = 0x7f0000000000ull;
	struct usyms *us = usyms_new(0);
	usyms_add_mapping(us, base + exec.p_offset, base + exec.p_offset + exec.p_filesz, exec.p_offset, lib);
	size_t checked = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		assert_true(sh.sh_size > (256u << 10)); /* over a release step (its strings: four) */
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_size || !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) ||
			    strncmp(name, "many_function_", 14))
				continue;
			assert_sym(us, base + exec.p_offset + (sym.st_value - exec.p_vaddr) + sym.st_size / 2, name, 1);
			checked++;
		}
	}
	assert_int_equal(checked, 20000);
	usyms_free(us);
	elf_end(elf);
	close(fd);
}

static void test_usyms_hand_built(void **state)
{
	(void)state;
	struct child c;
	child_start(&c, fixture("symfix_pie"));
	struct map m;
	assert_true(find_map(c.pid, c.lib_exported, &m));
	assert_true(find_map(c.pid, c.lib_local, &m));
	char stripped[PATH_MAX], unstripped[PATH_MAX], want[128];
	snprintf(stripped, sizeof(stripped), "%s", fixture("libsymfix_stripped.so"));
	snprintf(unstripped, sizeof(unstripped), "%s", fixture("libsymfix.so"));
	child_stop(&c);

	struct usyms *us = usyms_new(0);
	usyms_add_mapping(us, m.start, m.end, m.off, stripped);
	snprintf(want, sizeof(want), "libsymfix_stripped.so+0x%" PRIx64,
		 c.lib_local - m.start + m.off);
	assert_sym(us, c.lib_exported, "lib_exported", 1);
	assert_sym(us, c.lib_local, want, 0);
	assert_sym(us, m.start - 1, "[unknown]", 0);
	assert_sym(us, m.end, "[unknown]", 0);

	/* Newer: the unstripped file over the page holding lib_local only. */
	uint64_t pg = (c.lib_local & ~(uint64_t)4095), pg_off = pg - m.start + m.off;
	usyms_add_mapping(us, pg, pg + 4096, pg_off, unstripped);
	assert_sym(us, c.lib_local, "lib_local", 1);
	if (m.start < pg) { /* the older mapping's left part keeps its file and offsets */
		snprintf(want, sizeof(want), "libsymfix_stripped.so+0x%" PRIx64, m.off);
		assert_sym(us, m.start, want, 0);
	}
	if (pg + 4096 < m.end) {
		snprintf(want, sizeof(want), "libsymfix_stripped.so+0x%" PRIx64,
			 pg + 4096 - m.start + m.off);
		assert_sym(us, pg + 4096, want, 0);
	}
	/* An offset no PT_LOAD holds: offset form, not a name. */
	usyms_add_mapping(us, 0x1000, 0x2000, 0x7fff0000, unstripped);
	assert_sym(us, 0x1010, "libsymfix.so+0x7fff0010", 0);

	/* Repeated lookups are served from the cache and stay right. */
	char buf[64];
	for (int i = 0; i < 1000; i++) {
		usyms_symbolize(us, c.lib_exported + (uint64_t)(i & 7), buf, sizeof(buf));
		assert_string_equal(buf, "lib_exported");
	}
	usyms_free(us);
}

/* The files are deleted, and the executable's path now holds a different program, while the
 * process runs. map_files (root) still reaches the mapped files; without it, the name must not
 * come from the replacement: the only acceptable answers are the right name or the offset form. */
static void test_usyms_deleted(void **state)
{
	(void)state;
	char exe[128], lib[128], other[128];
	snprintf(exe, sizeof(exe), "%s/symfix_pie", tmpdir);
	snprintf(lib, sizeof(lib), "%s/libsymfix.so", tmpdir);
	snprintf(other, sizeof(other), "%s/other", tmpdir);
	copy_file(fixture("symfix_pie"), exe);
	copy_file(fixture("libsymfix.so"), lib);
	copy_file(fixture("symfix_nopie"), other);
	struct child c;
	child_start(&c, exe);
	assert_int_equal(unlink(lib), 0);
	assert_int_equal(rename(other, exe), 0);

	struct usyms *us = usyms_new(c.pid);
	struct diag_err err = { 0 };
	assert_int_equal(usyms_snapshot(us, &err), 0);
	char buf[128], off_form[128];
	static const char *names[] = { "main_func", "fx_sized", "lib_exported", "lib_local" };
	uint64_t addrs[] = { c.main_func, c.fx_sized, c.lib_exported, c.lib_local };
	for (size_t i = 0; i < ARRAY_LEN(addrs); i++) {
		expect_offset_form(c.pid, addrs[i], i < 2 ? "symfix_pie" : "libsymfix.so", off_form,
				   sizeof(off_form));
		int r = usyms_symbolize(us, addrs[i], buf, sizeof(buf));
		if (!(r == 1 && !strcmp(buf, names[i])) && !(r == 0 && !strcmp(buf, off_form)))
			fail_msg("%s: got \"%s\" (%d)", names[i], buf, r);
		if (geteuid() == 0)
			assert_string_equal(buf, names[i]);
	}
	child_stop(&c);
	unlink(exe);
	usyms_free(us);
}

/* Our own vdso, read from /proc/self/mem. */
static void test_usyms_vdso(void **state)
{
	(void)state;
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		skip();
	struct usyms *us = usyms_new(getpid());
	struct diag_err err = { 0 };
	assert_int_equal(usyms_snapshot(us, &err), 0);
	assert_sym(us, base, "[vdso]+0x0", 0); /* the ELF header is no function */
	void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	if (fn) /* the weak alias wins over the __vdso_ name */
		assert_sym(us, (uint64_t)(uintptr_t)fn + 1, "clock_gettime", 1);
	else
		print_message("  vdso clock_gettime not found through dlsym; header checked only\n");
	if (h)
		dlclose(h);
	usyms_free(us);
}

static void test_usyms_empty(void **state)
{
	(void)state;
	struct usyms *us = usyms_new(getpid());
	char buf[4];
	assert_int_equal(usyms_symbolize(us, 0x1234, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "[un"); /* truncated, terminated */
	usyms_add_mapping(us, 0x1000, 0x2000, 0, "/nonexistent/libx.so");
	char big[64];
	assert_int_equal(usyms_symbolize(us, 0x1234, big, sizeof(big)), 0);
	assert_string_equal(big, "libx.so+0x234");
	usyms_free(us);
}

/* A return address is named by the function holding the call, the byte before it: at a
 * function's entry it belongs to what precedes (a call to a noreturn function ending the
 * previous function), never to the function that starts there. */
static void test_usyms_return_address(void **state)
{
	(void)state;
	char lib[PATH_MAX], buf[256], want[128];
	uint64_t local = 0;
	struct diag_err err = { 0 };
	snprintf(lib, sizeof(lib), "%s", fixture("libsymfix.so"));
	assert_int_equal(elf_symbol_offset(lib, "lib_local", &local, &err), 0);
	struct usyms *us = usyms_new(0);
	usyms_add_mapping(us, BASE_ADDR, BASE_ADDR + (64u << 20), 0, lib);
	enum usym_source src;
	assert_int_equal(usyms_symbolize_ret(us, BASE_ADDR + local + 1, buf, sizeof(buf), &src), 1);
	assert_string_equal(buf, "lib_local");
	assert_sym(us, BASE_ADDR + local, "lib_local", 1); /* a sampled ip: its own function */
	usyms_symbolize_ret(us, BASE_ADDR + local, buf, sizeof(buf), &src);
	assert_string_not_equal(buf, "lib_local");
	snprintf(want, sizeof(want), "libsymfix.so+0x%" PRIx64, local);
	if (src == USYM_SRC_NONE) /* padding before it: the offset form shows the address itself */
		assert_string_equal(buf, want);
	print_message("  return address at lib_local's entry: %s\n", buf);
	assert_int_equal(usyms_symbolize_ret(us, 0, buf, sizeof(buf), &src), 0);
	assert_string_equal(buf, "[unknown]");
	usyms_free(us);
}

/* Two processes of one program, its library at other addresses in each (ASLR), symbolized through
 * one cache: the file is read once, each names its own addresses, and either outlives the other. */
static void test_usyms_shared_cache(void **state)
{
	(void)state;
	char lib[PATH_MAX];
	uint64_t local = 0;
	struct diag_err err = { 0 };
	snprintf(lib, sizeof(lib), "%s", fixture("libsymfix.so"));
	assert_int_equal(elf_symbol_offset(lib, "lib_local", &local, &err), 0);
	const uint64_t other = BASE_ADDR + (256u << 20);
	struct elf_cache *files = elf_cache_new(NULL);
	struct usyms *a = usyms_new_in(101, files), *b = usyms_new_in(102, files);
	usyms_add_mapping(a, BASE_ADDR, BASE_ADDR + (64u << 20), 0, lib);
	usyms_add_mapping(b, other, other + (64u << 20), 0, lib);
	assert_int_equal(elf_cache_files(files), 1);
	assert_sym(a, BASE_ADDR + local, "lib_local", 1);
	assert_sym(b, other + local, "lib_local", 1);
	assert_sym(a, other + local, "[unknown]", 0); /* a's own layout, not b's */
	elf_cache_release(files); /* the symbolizers hold it */
	usyms_free(a);
	assert_sym(b, other + local, "lib_local", 1);
	usyms_free(b);
}

/* ---- debug files, demangling, perf maps ---------------------------------------------------- */

/* glibc's __libc_start_call_main (a static function: not in libc.so.6's .dynsym) is named from
 * Debian's libc6-dbg, found by build-id. */
static void test_debuginfo_libc(void **state)
{
	(void)state;
	struct usyms *us = usyms_new(getpid());
	struct diag_err err = { 0 };
	assert_int_equal(usyms_snapshot(us, &err), 0);
	char buf[256];
	enum usym_source src;
	int r = usyms_symbolize_src(us, main_return, buf, sizeof(buf), &src);
	struct map m;
	assert_true(find_map(getpid(), main_return, &m));
	print_message("  main returns into %s (%s)\n", buf, m.path);
	if (access("/usr/lib/debug/.build-id", F_OK) && src != USYM_SRC_DEBUGINFO) {
		usyms_free(us);
		print_message("  no /usr/lib/debug/.build-id (libc6-dbg not installed)\n");
		skip();
	}
	assert_int_equal(r, 1);
	assert_string_equal(buf, "__libc_start_call_main");
	assert_int_equal(src, USYM_SRC_DEBUGINFO);
	/* an exported function of libc still comes from the same tables */
	uint64_t w = (uint64_t)(uintptr_t)&write;
	usyms_symbolize_src(us, w, buf, sizeof(buf), &src);
	assert_true(src == USYM_SRC_SYMTAB || src == USYM_SRC_DEBUGINFO);
	assert_non_null(strstr(buf, "write"));
	usyms_free(us);
}

static void copy_into(const char *name, const char *to)
{
	char from[PATH_MAX];
	snprintf(from, sizeof(from), "%s", fixture(name));
	copy_file(from, to);
}

/* A stripped library whose symbols are in a debug file named by .gnu_debuglink (no build-id: the
 * CRC verifies it), in the .debug/ subdirectory, then next to it; a debug file whose CRC does not
 * match is not used. */
static void test_debuglink(void **state)
{
	(void)state;
	char lib[128], dir[128], dbg[160], flat[160], want[128];
	uint64_t local = 0, exported = 0;
	struct diag_err err = { 0 };
	assert_int_equal(elf_symbol_offset(fixture("libsymfix_nobid.so"), "lib_local", &local, &err), 0);
	assert_int_equal(elf_symbol_offset(fixture("libsymfix_nobid.so"), "lib_exported", &exported,
					   &err), 0);
	snprintf(lib, sizeof(lib), "%s/libsymfix_dbglink.so", tmpdir);
	snprintf(dir, sizeof(dir), "%s/.debug", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/libsymfix_dbglink.debug", dir);
	snprintf(flat, sizeof(flat), "%s/libsymfix_dbglink.debug", tmpdir);
	copy_into("libsymfix_dbglink.so", lib);
	snprintf(want, sizeof(want), "libsymfix_dbglink.so+0x%" PRIx64, local);
	for (int round = 0; round < 4; round++) {
		if (round == 1) { /* in .debug/ */
			assert_int_equal(mkdir(dir, 0755), 0);
			copy_into(".debug/libsymfix_dbglink.debug", dbg);
		} else if (round == 2) { /* next to the library */
			assert_int_equal(rename(dbg, flat), 0);
		} else if (round == 3) { /* one byte more: another CRC */
			FILE *f = fopen(flat, "a");
			assert_non_null(f);
			fputc(0, f);
			fclose(f);
		}
		struct usyms *us = usyms_new(0);
		usyms_add_mapping(us, BASE_ADDR, BASE_ADDR + (64u << 20), 0, lib);
		if (round == 1 || round == 2) {
			assert_sym_src(us, BASE_ADDR + local, "lib_local", 1, USYM_SRC_DEBUGINFO);
			assert_sym_src(us, BASE_ADDR + local + 1, "lib_local", 1, USYM_SRC_DEBUGINFO);
		} else {
			assert_sym_src(us, BASE_ADDR + local + 1, want, 0, USYM_SRC_FDE);
		}
		assert_sym(us, BASE_ADDR + exported, "lib_exported", 1); /* .dynsym: always */
		usyms_free(us);
	}
	unlink(flat);
	rmdir(dir);
	unlink(lib);
}

/* With build-ids on both sides, the build-id decides: a debuglink to the file's own debug file
 * is used; one to another build's debug file is refused although its CRC matches. */
static void test_debuglink_build_id(void **state)
{
	(void)state;
	uint64_t local = 0;
	struct diag_err err = { 0 };
	assert_int_equal(elf_symbol_offset(fixture("libsymfix.so"), "lib_local", &local, &err), 0);
	static const struct {
		const char *lib, *debug;
		int named;
	} cases[] = {
		{ "libsymfix_rightlink.so", "libsymfix_right.debug", 1 },
		{ "libsymfix_wronglink.so", "libsymfix_wrong.debug", 0 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char lib[160], dbg[160], from[64], want[128];
		snprintf(lib, sizeof(lib), "%s/%s", tmpdir, cases[i].lib);
		snprintf(dbg, sizeof(dbg), "%s/%s", tmpdir, cases[i].debug);
		snprintf(from, sizeof(from), "dbg/%s", cases[i].debug);
		copy_into(cases[i].lib, lib);
		copy_into(from, dbg);
		struct usyms *us = usyms_new(0);
		usyms_add_mapping(us, BASE_ADDR, BASE_ADDR + (64u << 20), 0, lib);
		if (cases[i].named) {
			assert_sym_src(us, BASE_ADDR + local + 1, "lib_local", 1, USYM_SRC_DEBUGINFO);
		} else {
			snprintf(want, sizeof(want), "%s+0x%" PRIx64, cases[i].lib, local);
			assert_sym_src(us, BASE_ADDR + local + 1, want, 0, USYM_SRC_FDE);
		}
		usyms_free(us);
		unlink(lib);
		unlink(dbg);
	}
}

static void test_demangle(void **state)
{
	(void)state;
	static const struct {
		const char *mangled, *want;
	} cases[] = {
		{ "_ZN3foo3barIiEEvT_", "void foo::bar<int>(int)" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
		  "std::vector<int, std::allocator<int> >::push_back(int const&)" },
		{ "_ZN4shop8ChecksumImE6updateEPKhm",
		  "shop::Checksum<unsigned long>::update(unsigned char const*, unsigned long)" },
		{ "_ZNK3Foo3getEv", "Foo::get() const" },
		/* Rust legacy: the trailing hash element is dropped */
		{ "_ZN4core3fmt5Write9write_fmt17h0123456789abcdefE", "core::fmt::Write::write_fmt" },
		{ "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0a1b2c3d4e5f6a7bE",
		  "std::rt::lang_start::{{closure}}" },
		/* Rust v0: no crate disambiguator in the name */
		{ "_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar" },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char *d = demangle(cases[i].mangled, 1024);
		if (!d || strcmp(d, cases[i].want))
			fail_msg("%s: got \"%s\", want \"%s\"", cases[i].mangled, d ? d : "(null)",
				 cases[i].want);
		free(d);
	}
	static const char *const keep[] = { "main", "_start", "_Z", "_Zjunk", "_R", "__libc_start_call_main" };
	for (size_t i = 0; i < ARRAY_LEN(keep); i++)
		assert_null(demangle(keep[i], 1024));
	assert_null(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi", 20)); /* over the bound */
}

static void test_perfmap_parse(void **state)
{
	(void)state;
	char longname[1200];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	char *text = xasprintf("1000 10 foo\n"
			       "garbage line\n"
			       "2000 0 zero_size\n"
			       "0x3000 20 bar baz(int)\r\n"
			       "3010 20 newer\n"
			       "fffffffffffffff8 10 wraps\n"
			       "4000 10 \n"
			       "5000 10 %s\n"
			       "1ffffffffffffffff 1 overflow\n"
			       "6000 10 after_limit\n",
			       longname);
	struct perfmap *pm = perfmap_parse(text, strlen(text), 9);
	static const struct {
		uint64_t addr;
		const char *want;
	} cases[] = {
		{ 0xfff, NULL }, { 0x1000, "foo" }, { 0x100f, "foo" }, { 0x1010, NULL },
		{ 0x2000, NULL }, { 0x3000, "bar baz(int)" }, { 0x300f, "bar baz(int)" },
		{ 0x3010, "newer" }, { 0x302f, "newer" }, { 0x3030, NULL }, { 0x4000, NULL },
		{ UINT64_MAX - 2, NULL }, { 0x6000, NULL },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const char *got = perfmap_lookup(pm, cases[i].addr);
		if (!got != !cases[i].want || (got && strcmp(got, cases[i].want)))
			fail_msg("0x%" PRIx64 ": got %s, want %s", cases[i].addr, got ? got : "(none)",
				 cases[i].want ? cases[i].want : "(none)");
	}
	const char *cut = perfmap_lookup(pm, 0x5000);
	assert_non_null(cut);
	assert_int_equal(strlen(cut), PERFMAP_MAX_NAME);
	assert_int_equal(perfmap_count(pm), 4);
	perfmap_free(pm);
	free(text);

	pm = perfmap_parse("", 0, 10);
	assert_null(perfmap_lookup(pm, 0));
	perfmap_free(pm);
}

/* Our own perf map names an anonymous executable mapping's code; not code a file mapping covers;
 * and not at all when the map file is a symbolic link. */
static void test_perfmap_process(void **state)
{
	(void)state;
	char path[64], real[160];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(real, sizeof(real), "%s/real.map", tmpdir);
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	uint64_t jit = (uint64_t)(uintptr_t)code, libc = (uint64_t)(uintptr_t)&write;
	char *text = xasprintf("%" PRIx64 " 40 LazyCompile:*hot /app/x.js:1\n%" PRIx64 " 10 not_libc\n",
			       jit, libc);
	write_text(path, text);
	struct usyms *us = usyms_new(getpid());
	struct diag_err err = { 0 };
	assert_int_equal(usyms_snapshot(us, &err), 0);
	assert_sym_src(us, jit + 0x3f, "LazyCompile:*hot /app/x.js:1", 1, USYM_SRC_PERFMAP);
	assert_sym_src(us, jit + 0x40, "[unknown]", 0, USYM_SRC_NONE);
	char buf[128];
	usyms_symbolize(us, libc, buf, sizeof(buf));
	assert_string_not_equal(buf, "not_libc");
	usyms_free(us);

	/* a symbolic link is not followed */
	unlink(path);
	write_text(real, text);
	assert_int_equal(symlink(real, path), 0);
	us = usyms_new(getpid());
	assert_int_equal(usyms_snapshot(us, &err), 0);
	assert_sym(us, jit, "[unknown]", 0);
	usyms_free(us);
	unlink(path);
	unlink(real);
	free(text);
	munmap(code, 4096);
}

/* A process whose root is tmpdir (chroot: what a container's mount namespace looks like from the
 * host, for paths). Files are read inside its root: its absolute symlinks and ".." resolve there,
 * never to the host's files. Mappings are added by hand at addresses the child does not map, so
 * /proc/PID/map_files has nothing and the root path is what is used. Needs root (chroot). */
static void test_usyms_in_root(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("  chroot needs root\n");
		skip();
	}
	char p[PATH_MAX], host_lib[PATH_MAX];
	snprintf(host_lib, sizeof(host_lib), "%s", fixture("libsymfix.so"));
	snprintf(p, sizeof(p), "%s/inside.so", tmpdir);
	copy_file(host_lib, p);
	snprintf(p, sizeof(p), "%s/escape.so", tmpdir); /* absolute: the host's library */
	assert_int_equal(symlink(host_lib, p), 0);
	snprintf(p, sizeof(p), "%s/link.so", tmpdir); /* absolute, inside the root */
	assert_int_equal(symlink("/inside.so", p), 0);

	int ready[2], hold[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(ready[0]);
		close(hold[1]);
		if (chroot(tmpdir) || chdir("/"))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		while (read(hold[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);

	uint64_t local = 0;
	struct diag_err err = { 0 };
	assert_int_equal(elf_symbol_offset(host_lib, "lib_local", &local, &err), 0);
	static const struct {
		const char *path, *want; /* want NULL: the offset form */
	} cases[] = {
		{ "/inside.so", "lib_local" },
		{ "/link.so", "lib_local" },
		{ "/escape.so", NULL },          /* would be the host's file if followed */
		{ "/../../inside.so", "lib_local" }, /* ".." stops at the root */
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct usyms *us = usyms_new(pid);
		usyms_add_mapping(us, BASE_ADDR, BASE_ADDR + (64u << 20), 0, cases[i].path);
		char want[128];
		if (cases[i].want)
			snprintf(want, sizeof(want), "%s", cases[i].want);
		else
			snprintf(want, sizeof(want), "%s+0x%" PRIx64, strrchr(cases[i].path, '/') + 1, local);
		assert_sym(us, BASE_ADDR + local, want, cases[i].want != NULL);
		usyms_free(us);
	}
	int fd = root_open(pid, "/escape.so", O_RDONLY, 0);
	assert_int_equal(fd, -1);
	fd = root_open(pid, "/../../../inside.so", O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);

	close(hold[1]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(p, sizeof(p), "%s/link.so", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/escape.so", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/inside.so", tmpdir);
	unlink(p);
}

/* ---- hostile ELF headers and many mappings ------------------------------------------------- */

/* Copies the 64-bit ELF file from to `to`, changing the entry size (entsize != 0) or the size
 * (size != 0) of its section of type sh_type. */
static void copy_patched(const char *from, const char *to, uint32_t sh_type, uint64_t entsize,
			 uint64_t size)
{
	size_t len;
	char *buf = read_file(from, &len);
	assert_non_null(buf);
	assert_true(len > sizeof(Elf64_Ehdr));
	Elf64_Ehdr eh;
	memcpy(&eh, buf, sizeof(eh));
	assert_int_equal(eh.e_ident[EI_CLASS], ELFCLASS64);
	assert_true(eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) <= len);
	int patched = 0;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		char *at = buf + eh.e_shoff + i * sizeof(Elf64_Shdr);
		memcpy(&sh, at, sizeof(sh));
		if (sh.sh_type != sh_type)
			continue;
		if (entsize)
			sh.sh_entsize = entsize;
		if (size)
			sh.sh_size = size;
		memcpy(at, &sh, sizeof(sh));
		patched++;
	}
	assert_int_equal(patched, 1);
	FILE *f = fopen(to, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
}

/* The whole file mapped from offset 0 at BASE: address BASE + o is file offset o. */
#define BASE BASE_ADDR

static void assert_file_sym(const char *path, uint64_t foff, const char *want, int want_ret)
{
	struct usyms *us = usyms_new(0);
	usyms_add_mapping(us, BASE, BASE + (64u << 20), 0, path);
	assert_sym(us, BASE + foff, want, want_ret);
	usyms_free(us);
}

/* An entry size of 1 claims 24 times more symbols than the section has bytes (and the old code
 * allocated for that many): such a table is ignored, .dynsym serves instead. */
static void test_symtab_bad_header(void **state)
{
	(void)state;
	char good[PATH_MAX], stripped[PATH_MAX], bad[128], want[128];
	snprintf(good, sizeof(good), "%s", fixture("libsymfix.so"));
	snprintf(stripped, sizeof(stripped), "%s", fixture("libsymfix_stripped.so"));
	struct diag_err err = { 0 };
	uint64_t local = 0, exported = 0, off = 0;
	assert_int_equal(elf_symbol_offset(good, "lib_local", &local, &err), 0);
	assert_int_equal(elf_symbol_offset(good, "lib_exported", &exported, &err), 0);
	assert_file_sym(good, local, "lib_local", 1); /* the unpatched copy has both */

	static const struct {
		const char *name;
		uint64_t entsize, size;
	} cases[] = {
		{ "libbad_entsize.so", 1, 0 },
		{ "libbad_size.so", 0, (uint64_t)1 << 40 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		snprintf(bad, sizeof(bad), "%s/%s", tmpdir, cases[i].name);
		copy_patched(good, bad, SHT_SYMTAB, cases[i].entsize, cases[i].size);
		snprintf(want, sizeof(want), "%s+0x%" PRIx64, cases[i].name, local);
		assert_file_sym(bad, local, want, 0);
		assert_file_sym(bad, exported, "lib_exported", 1); /* from .dynsym */
		memset(&err, 0, sizeof(err));
		assert_int_equal(elf_symbol_offset(bad, "lib_local", &off, &err), -1);
		assert_int_equal(err.code, DIAG_EXIT_USAGE);
		if (!strstr(err.msg, "malformed symbol table"))
			fail_msg("%s", err.msg);
		assert_int_equal(elf_symbol_offset(bad, "lib_exported", &off, &err), 0);
		assert_int_equal(off, exported);
		unlink(bad);
	}

	/* The same on .dynsym of the stripped copy: nothing left to name the function. */
	snprintf(bad, sizeof(bad), "%s/libbad_dynsym.so", tmpdir);
	copy_patched(stripped, bad, SHT_DYNSYM, 1, 0);
	snprintf(want, sizeof(want), "libbad_dynsym.so+0x%" PRIx64, exported);
	assert_file_sym(bad, exported, want, 0);
	assert_int_equal(elf_symbol_offset(bad, "lib_exported", &off, &err), -1);
	unlink(bad);
}

#define NFILES 2000
#define PER_FILE 10
#define NMAPS (NFILES * PER_FILE)
#define MAP_START(i) (UINT64_C(0x10000000) + (uint64_t)(i) * 0x3000) /* 0x1000 mapped, 0x2000 gap */
#define MAP_OFF(i) ((uint64_t)((i) % PER_FILE) * 0x1000)

/* What a naive model says addr symbolizes to, after snapshot one and, when two is set, snapshot
 * two (one mapping of new.so at MAP_START(i) + 0x800 .. + 0x3800 for every third i, offset
 * 0x7000): the newest mapping covering addr wins. */
static void model(uint64_t addr, int two, char *buf, size_t len)
{
	if (addr >= MAP_START(0) && addr < MAP_START(NMAPS)) {
		uint64_t i = (addr - MAP_START(0)) / 0x3000;
		for (int64_t k = (int64_t)i; two && k >= (int64_t)i - 1 && k >= 0; k--) {
			uint64_t s = MAP_START(k) + 0x800;
			if (k % 3 == 0 && addr >= s && addr < s + 0x3000) {
				snprintf(buf, len, "new.so+0x%" PRIx64, 0x7000 + (addr - s));
				return;
			}
		}
		if (addr - MAP_START(i) < 0x1000) {
			snprintf(buf, len, "lib%04" PRIu64 ".so+0x%" PRIx64, i / PER_FILE,
				 MAP_OFF(i) + (addr - MAP_START(i)));
			return;
		}
	}
	snprintf(buf, len, "[unknown]");
}

static char *maps_text(int two)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	fprintf(f, "00400000-00401000 r--p 00000000 08:01 77 /usr/bin/ignored-not-executable\n"
		   "7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\n");
	for (int i = 0; i < NMAPS; i++) {
		if (two && i % 3)
			continue;
		if (two)
			fprintf(f, "%" PRIx64 "-%" PRIx64 " r-xp 00007000 00:00 0 %s/new.so\n",
				MAP_START(i) + 0x800, MAP_START(i) + 0x3800, tmpdir);
		else /* files that do not exist: named by path, offsets shown */
			fprintf(f, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " 00:00 0 %s/lib%04d.so\n",
				MAP_START(i), MAP_START(i) + 0x1000, MAP_OFF(i), tmpdir, i / PER_FILE);
	}
	fclose(f);
	return text;
}

static void check_model(struct usyms *us, int two)
{
	char got[128], want[128];
	for (int i = 0; i < NMAPS; i += 7) {
		static const uint64_t probes[] = { 0, 0x10, 0x7ff, 0x800, 0xfff, 0x1000, 0x2fff };
		for (size_t k = 0; k < ARRAY_LEN(probes); k++) {
			uint64_t addr = MAP_START(i) + probes[k];
			model(addr, two, want, sizeof(want));
			usyms_symbolize(us, addr, got, sizeof(got));
			if (strcmp(got, want))
				fail_msg("0x%" PRIx64 " (mapping %d%s): got %s, want %s", addr, i,
					 two ? ", after the second snapshot" : "", got, want);
		}
	}
}

/* 20,000 executable mappings of 2,000 files in one snapshot, then 6,667 newer ones, each
 * covering the right half of one older mapping, the gap and the left part of the next; checked
 * against the model. Timing is printed, not asserted: the merge is linear after sorting. */
static void test_usyms_many_mappings(void **state)
{
	(void)state;
	char *one = maps_text(0), *two = maps_text(1);
	struct usyms *us = usyms_new(0);
	uint64_t t0 = mono_ns();
	usyms_snapshot_text(us, one);
	uint64_t t1 = mono_ns();
	usyms_snapshot_text(us, two);
	uint64_t t2 = mono_ns();
	print_message("  %d mappings in %" PRIu64 " ms, %d overlapping ones merged in %" PRIu64
		      " ms\n", NMAPS, (t1 - t0) / 1000000, (NMAPS + 2) / 3, (t2 - t1) / 1000000);
	check_model(us, 1);
	usyms_free(us);

	us = usyms_new(0);
	usyms_snapshot_text(us, one);
	check_model(us, 0);
	assert_sym(us, 0x00400000, "[unknown]", 0); /* not executable: not kept */
	usyms_free(us);
	free(one);
	free(two);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_symbols.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) /* also after a failed test left files behind */
{
	(void)state;
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	return rmdir(tmpdir);
}

int main(void)
{
	main_return = (uint64_t)(uintptr_t)__builtin_return_address(0);
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ksyms_fake),
		cmocka_unit_test(test_sort_in_place),
		cmocka_unit_test(test_ksyms_restricted),
		cmocka_unit_test(test_ksyms_proc),
		cmocka_unit_test(test_usyms_pie),
		cmocka_unit_test(test_usyms_nopie),
		cmocka_unit_test(test_usyms_stripped),
		cmocka_unit_test(test_usyms_large_tables),
		cmocka_unit_test(test_usyms_hand_built),
		cmocka_unit_test(test_usyms_deleted),
		cmocka_unit_test(test_usyms_vdso),
		cmocka_unit_test(test_usyms_empty),
		cmocka_unit_test(test_usyms_return_address),
		cmocka_unit_test(test_usyms_in_root),
		cmocka_unit_test(test_debuginfo_libc),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_debuglink_build_id),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_perfmap_parse),
		cmocka_unit_test(test_perfmap_process),
		cmocka_unit_test(test_symtab_bad_header),
		cmocka_unit_test(test_usyms_many_mappings),
		cmocka_unit_test(test_usyms_shared_cache),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
