/* test_generic_probes.c — the parts of the generic probe kinds that need no kernel: the option
 * checks of tracepoint_count ("category:event") and func_latency ("/binary:symbol"), and
 * elf_symbol_offset (engine/symbolize/usyms.c), which places func_latency's uprobes.
 *
 * The expected file offset of a function is computed independently of usyms.c: from the
 * function's run-time address in this very test and the /proc/self/maps line that covers it.
 * The fixtures of symbols.mk (size-0 label, stripped files) are used when built (`make unit`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_path.h"
#include "plan/catalog.h"
#include "symbolize/usyms.h"
#include "common/util.h"

/* ---- option checks ----------------------------------------------------------------------- */

static const char *(*option_check(const char *kind, const char *option))(const char *)
{
	const struct probe_kind *k = catalog_find(kind);
	assert_non_null(k);
	int i = catalog_option_index(k, option);
	assert_true(i >= 0);
	assert_int_equal(k->options[i].type, OPT_STRING);
	assert_null(k->options[i].dflt_str); /* required */
	assert_non_null(k->options[i].check);
	return k->options[i].check;
}

static void test_tracepoint_check(void **state)
{
	(void)state;
	const char *(*check)(const char *) = option_check("tracepoint_count", "tracepoint");
	const char *good[] = { "sched:sched_switch", "syscalls:sys_enter_write", "a:b", "9p:x_1" };
	const char *bad[] = { "", "sched", ":sched_switch", "sched:", ":", "Sched:sched_switch",
			      "sched:sched-switch", "sched:sched switch", "a:b:c", "sched/sched_switch",
			      "../x:y" };
	for (size_t i = 0; i < ARRAY_LEN(good); i++)
		if (check(good[i]))
			fail_msg("\"%s\" refused: %s", good[i], check(good[i]));
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		if (!check(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
	char *long_event = xasprintf("sched:%0200d", 0);
	assert_non_null(check(long_event));
	free(long_event);
}

static void test_function_check(void **state)
{
	(void)state;
	const char *(*check)(const char *) = option_check("func_latency", "function");
	const char *good[] = { "/usr/bin/app:main", "/lib/x86_64-linux-gnu/libc.so.6:malloc",
			       "/opt/app:_ZN3foo3barEv", "/a:b", "/odd:dir/app:f.cold",
			       "/app:$x" };
	const char *bad[] = { "", "app:main", "./app:main", "/usr/bin/app", "/usr/bin/app:",
			      ":main", "/:main", "/app:ns::f()", "/app:two words", "/app:f@GLIBC" };
	for (size_t i = 0; i < ARRAY_LEN(good); i++)
		if (check(good[i]))
			fail_msg("\"%s\" refused: %s", good[i], check(good[i]));
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		if (!check(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
}

/* ---- elf_symbol_offset ------------------------------------------------------------------- */

__attribute__((noinline, used)) int generic_probes_target(int x)
{
	return x * 7 + 3;
}

int generic_probes_data = 42;

/* File offset of a code address of this process, from /proc/self/maps. */
static uint64_t self_file_offset(uint64_t addr, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	char line[PATH_MAX + 128];
	uint64_t found = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		int n = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &n) < 3 || !n)
			continue;
		if (addr >= start && addr < end) {
			found = addr - start + off;
			snprintf(path, len, "%s", line + n);
			path[strcspn(path, "\n")] = '\0';
			break;
		}
	}
	fclose(f);
	assert_true(found != UINT64_MAX);
	return found;
}

static void test_offset_self(void **state)
{
	(void)state;
	char mapped[PATH_MAX], exe[PATH_MAX];
	uint64_t want = self_file_offset((uint64_t)(uintptr_t)generic_probes_target, mapped,
					 sizeof(mapped));
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_string_equal(mapped, exe);

	struct diag_err err = { 0 };
	uint64_t off = 0;
	if (elf_symbol_offset(exe, "generic_probes_target", &off, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(off, want);
}

/* elf_symbol_offset(path, name) fails with exit code 2 and a message containing `needle`. */
static void expect_failure(const char *path, const char *name, const char *needle)
{
	struct diag_err err = { 0 };
	uint64_t off = 12345;
	if (elf_symbol_offset(path, name, &off, &err) == 0)
		fail_msg("%s:%s found at 0x%" PRIx64, path, name, off);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	if (!strstr(err.msg, needle))
		fail_msg("%s:%s: message \"%s\" lacks \"%s\"", path, name, err.msg, needle);
	assert_int_equal(off, 12345); /* untouched */
}

static void test_offset_failures(void **state)
{
	(void)state;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';

	expect_failure(exe, "generic_probes_targte",
		       "probably inlined, static and stripped, or misspelled: check with nm -D / "
		       "readelf -s");
	expect_failure(exe, "generic_probes_data", "is not a function (type OBJECT");
	expect_failure(exe, "elf_end", "only imported"); /* from libelf.so */
	expect_failure("/nonexistent/app", "main", "/nonexistent/app: cannot open: No such file");

	char text[] = "/tmp/generic_probes_text.XXXXXX";
	int fd = mkstemp(text);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not ELF\n", 8), 8);
	close(fd);
	expect_failure(text, "main", ": not an ELF file");
	unlink(text);
}

static void test_offset_fixtures(void **state)
{
	(void)state;
	char pie[PATH_MAX];
	if (!fixture_path("symfix_pie")) {
		skip(); /* fixtures not built: `make unit` builds them */
		return;
	}
	snprintf(pie, sizeof(pie), "%s", fixture_path("symfix_pie"));
	struct diag_err err = { 0 };
	uint64_t off = 0;
	if (elf_symbol_offset(pie, "fx_sized", &off, &err))
		fail_msg("%s", err.msg);
	assert_true(off > 0);
	expect_failure(pie, "fx_nosize", "size 0");

	const char *stripped = fixture_path("symfix_pie_stripped");
	assert_non_null(stripped);
	expect_failure(stripped, "main_func", "(stripped: only .dynsym)");

	char lib[PATH_MAX], lib_stripped[PATH_MAX];
	assert_non_null(fixture_path("libsymfix.so"));
	snprintf(lib, sizeof(lib), "%s", fixture_path("libsymfix.so"));
	assert_non_null(fixture_path("libsymfix_stripped.so"));
	snprintf(lib_stripped, sizeof(lib_stripped), "%s", fixture_path("libsymfix_stripped.so"));
	uint64_t a = 0, b = 0;
	if (elf_symbol_offset(lib, "lib_exported", &a, &err) ||
	    elf_symbol_offset(lib_stripped, "lib_exported", &b, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(a, b); /* .symtab and .dynsym agree */
	if (elf_symbol_offset(lib, "lib_local", &a, &err))
		fail_msg("%s", err.msg);
	expect_failure(lib_stripped, "lib_local", "probably inlined, static and stripped");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracepoint_check),
		cmocka_unit_test(test_function_check),
		cmocka_unit_test(test_offset_self),
		cmocka_unit_test(test_offset_failures),
		cmocka_unit_test(test_offset_fixtures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
