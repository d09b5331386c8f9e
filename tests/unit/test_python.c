/* test_python.c — CPython frames (engine/symbolize/python.c): the layout table against the
 * offsetof()s of every CPython's headers on the machine (tests/unit/python.mk's pylayout_*
 * fixtures; Debian's python3.11-dev at least, which make deps installs), the location table's
 * lines against what CPython 3.11's own co_lines() said of two functions (one with a
 * comprehension, a try and lines without a location), a table cut short or of garbage (never
 * read past its end, never a line from nowhere), and a frame's packing into a stack slot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_path.h"
#include "symbolize/python.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* One pylayout fixture's output against the table. */
static void check_fixture(const char *path)
{
	char cmd[PATH_MAX + 400];
	snprintf(cmd, sizeof(cmd), "'%s'", path);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	char name[64];
	unsigned long value, minor = 0;
	struct diag_py_layout b;
	struct py_user_layout u;
	size_t checked = 0;
	while (fscanf(f, "%63s %lu", name, &value) == 2) {
		if (!strcmp(name, "minor")) {
			minor = value;
			if (!python_layout((unsigned)minor, &b, &u))
				fail_msg("%s: CPython 3.%lu has headers here but no layout in the table", path, minor);
			continue;
		}
		const struct { const char *name; unsigned long have; } fields[] = {
			{ "runtime_interp_head", b.runtime_interp_head },
			{ "interp_threads_head", b.interp_threads_head },
			{ "tstate_next", b.tstate_next },
			{ "tstate_native_tid", b.tstate_native_tid },
			{ "tstate_frame", b.tstate_frame },
			{ "cframe_current_frame", b.cframe_current_frame },
			{ "frame_code", b.frame_code },
			{ "frame_previous", b.frame_previous },
			{ "frame_instr", b.frame_instr },
			{ "frame_entry", b.frame_entry },
			{ "owner_cstack", b.owner_cstack },
			{ "co_filename", u.co_filename },
			{ "co_qualname", u.co_qualname },
			{ "co_firstlineno", u.co_firstlineno },
			{ "co_linetable", u.co_linetable },
			{ "co_code_adaptive", u.co_code_adaptive },
			{ "ascii_data", u.ascii_data },
			{ "compact_data", u.compact_data },
		};
		size_t i = 0;
		while (i < N(fields) && strcmp(fields[i].name, name))
			i++;
		if (i == N(fields))
			fail_msg("%s: unknown field %s", path, name);
		if (fields[i].have != value)
			fail_msg("CPython 3.%lu (%s): %s is %lu in its headers, %lu in python.c", minor, path,
				 name, value, fields[i].have);
		checked++;
	}
	assert_int_equal(pclose(f), 0);
	assert_true(minor >= 11 && checked >= 16);
	if (minor == 11) /* no cframe from 3.13, is_entry only in 3.11 */
		assert_int_equal(b.entry_kind, DIAG_PY_ENTRY_FLAG);
	else
		assert_int_equal(b.entry_kind, DIAG_PY_ENTRY_SHIM);
	assert_true((minor >= 13) == (b.cframe_current_frame == DIAG_PY_NONE));
}

static void layouts_match_headers(void **state)
{
	(void)state;
	const char *dir = fixture_path("");
	assert_non_null(dir);
	char base[PATH_MAX];
	snprintf(base, sizeof(base), "%s", dir);
	DIR *d = opendir(base);
	assert_non_null(d);
	size_t n = 0;
	bool debian = false;
	for (struct dirent *e; (e = readdir(d));) {
		if (strncmp(e->d_name, "pylayout_", 9))
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", base, e->d_name);
		check_fixture(path);
		debian |= !strcmp(e->d_name, "pylayout__usr_include_python3.11");
		n++;
	}
	closedir(d);
	if (!debian) /* make deps installs python3.11-dev: Debian 12's own CPython is always checked */
		fail_msg("no pylayout fixture for /usr/include/python3.11 (python3.11-dev): %zu others", n);
}

/* co_linetable of
 *   def f(n):                                  # line 2
 *       total = 0
 *       for i in range(n):
 *           total = (total * 31 + i) % 1000003
 *       return total
 * as CPython 3.11.2 compiled it, and its co_lines(): (start, end, line) in bytes. */
static const uint8_t F_TABLE[] = {
	0x80, 0x00, 0xd8, 0x0c, 0x0d, 0x80, 0x45, 0xdd, 0x0d, 0x12, 0x90, 0x31, 0x89, 0x58,
	0x8c, 0x58, 0xf0, 0x00, 0x01, 0x05, 0x2b, 0xf0, 0x00, 0x01, 0x05, 0x2b, 0x88, 0x01,
	0xd8, 0x11, 0x16, 0x98, 0x12, 0x91, 0x1a, 0x98, 0x61, 0x91, 0x1e, 0xa0, 0x37, 0xd1,
	0x10, 0x2a, 0x88, 0x05, 0x88, 0x05, 0xd8, 0x0b, 0x10, 0x80, 0x4c,
};
static const int F_LINES[][3] = {
	{ 0, 2, 2 }, { 2, 4, 3 }, { 4, 6, 3 }, { 6, 18, 4 }, { 18, 20, 4 }, { 20, 24, 4 }, { 24, 34, 4 },
	{ 34, 36, 4 }, { 36, 38, 4 }, { 38, 40, 4 }, { 40, 42, 5 }, { 42, 44, 5 }, { 44, 48, 5 },
	{ 48, 50, 5 }, { 50, 54, 5 }, { 54, 56, 5 }, { 56, 60, 5 }, { 60, 62, 5 }, { 62, 64, 5 },
	{ 64, 66, 6 }, { 66, 68, 6 },
};

/*   def g(x):                                  # line 8
 *       try:
 *           y = [a
 *                for a in range(x)]
 *       except ValueError:
 *           return None
 *       return y
 * -1: no location (co_lines' None). */
static const uint8_t G_TABLE[] = {
	0x80, 0x00, 0xf0, 0x02, 0x04, 0x05, 0x14, 0xf0, 0x02, 0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01,
	0x0d, 0x20, 0xdd, 0x16, 0x1b, 0x98, 0x41, 0x91, 0x68, 0x94, 0x68, 0xf0, 0x03, 0x01, 0x0d,
	0x20, 0xf1, 0x00, 0x01, 0x0d, 0x20, 0xf4, 0x00, 0x01, 0x0d, 0x20, 0x88, 0x01, 0x88, 0x01,
	0xf8, 0xe5, 0x0b, 0x15, 0xf0, 0x00, 0x01, 0x05, 0x14, 0xf0, 0x00, 0x01, 0x05, 0x14, 0xf0,
	0x00, 0x01, 0x05, 0x14, 0xd8, 0x0f, 0x13, 0x88, 0x74, 0x88, 0x74, 0xf0, 0x03, 0x01, 0x05,
	0x14, 0xf8, 0xf8, 0xf8, 0xe0, 0x0b, 0x0c, 0x80, 0x48,
};
static const int G_LINES[][3] = {
	{ 0, 2, 8 }, { 2, 4, 9 }, { 4, 6, 10 }, { 6, 8, 10 }, { 8, 20, 11 }, { 20, 22, 11 },
	{ 22, 26, 11 }, { 26, 36, 11 }, { 36, 38, 10 }, { 38, 42, 10 }, { 42, 52, 10 },
	{ 52, 54, 10 }, { 54, 56, 10 }, { 56, 58, -1 }, { 58, 70, 12 }, { 70, 72, 12 },
	{ 72, 74, 12 }, { 74, 76, 12 }, { 76, 78, 13 }, { 78, 80, 13 }, { 80, 82, 13 },
	{ 82, 84, 12 }, { 84, 86, -1 }, { 86, 88, -1 }, { 88, 90, -1 }, { 90, 92, 14 },
	{ 92, 94, 14 },
};

static void check_lines(const uint8_t *table, size_t len, int first, const int (*lines)[3], size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int off = lines[i][0]; off < lines[i][1]; off += 2)
			if (python_linetable_line(table, len, first, (uint64_t)off) != lines[i][2])
				fail_msg("offset %d: line %d, want %d", off,
					 python_linetable_line(table, len, first, (uint64_t)off), lines[i][2]);
	/* past the last instruction: no line */
	assert_int_equal(python_linetable_line(table, len, first, (uint64_t)lines[n - 1][1]), -1);
}

static void linetable_lines(void **state)
{
	(void)state;
	check_lines(F_TABLE, sizeof(F_TABLE), 2, F_LINES, N(F_LINES));
	check_lines(G_TABLE, sizeof(G_TABLE), 8, G_LINES, N(G_LINES));
}

static void linetable_hostile(void **state)
{
	(void)state;
	/* cut anywhere: the lines before the cut are still right, nothing past it is made up */
	for (size_t cut = 0; cut < sizeof(G_TABLE); cut++) {
		uint8_t *t = malloc(cut ? cut : 1); /* exact size: ASan sees any read past it */
		memcpy(t, G_TABLE, cut);
		for (size_t i = 0; i < N(G_LINES); i++) {
			int line = python_linetable_line(t, cut, 8, (uint64_t)G_LINES[i][0]);
			assert_true(line == -1 || line == G_LINES[i][2]);
		}
		free(t);
	}
	/* a varint that never ends, a table that does not start an entry */
	const uint8_t endless[] = { 0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f };
	assert_int_equal(python_linetable_line(endless, sizeof(endless), 1, 0), -1);
	const uint8_t not_entry[] = { 0x01, 0x02 };
	assert_int_equal(python_linetable_line(not_entry, sizeof(not_entry), 1, 0), -1);
	/* garbage: any answer, no crash, no read past the end */
	srand(7);
	for (int round = 0; round < 2000; round++) {
		size_t len = (size_t)(rand() % 40) + 1;
		uint8_t *t = malloc(len);
		for (size_t i = 0; i < len; i++)
			t[i] = (uint8_t)rand();
		(void)python_linetable_line(t, len, rand() % 1000, (uint64_t)(rand() % 200));
		free(t);
	}
	/* a line below 0 is no line */
	const uint8_t below[] = { 0xe8, 0x03 /* svarint -1 */ };
	assert_int_equal(python_linetable_line(below, sizeof(below), 0, 0), -1);
}

static void frame_packing(void **state)
{
	(void)state;
	uint64_t code, instr;
	python_frame_unpack(python_frame_pack(0x7f12345678a8ull, 0x7f12345678a8ull + 184 + 42),
			    &code, &instr);
	assert_true(code == 0x7f12345678a8ull && instr == 0x7f12345678a8ull + 184 + 42);
	/* an instruction too far from its code object (or before it): no line, same code */
	python_frame_unpack(python_frame_pack(0x7f0000001000ull, 0x7f0000001000ull + (1ull << 21)),
			    &code, &instr);
	assert_true(code == 0x7f0000001000ull && instr == 0);
	python_frame_unpack(python_frame_pack(0x7f0000001000ull, 0x10), &code, &instr);
	assert_true(code == 0x7f0000001000ull && instr == 0);
	/* two lines of one code object: two slots; two code objects: two slots */
	assert_true(python_frame_pack(0x1000, 0x1000 + 200) != python_frame_pack(0x1000, 0x1000 + 202));
	assert_true(python_frame_pack(0x1000, 0x1000 + 200) != python_frame_pack(0x1008, 0x1008 + 200));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layouts_match_headers),
		cmocka_unit_test(linetable_lines),
		cmocka_unit_test(linetable_hostile),
		cmocka_unit_test(frame_packing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
