/* test_verdict.c — the Lua verdict layer: the sandbox, read-only results, answer checking, the
 * shared diag.lua helpers, the budget of the answer, the child process's deadline, and the answer's
 * way back through the pipe (every run that can goes both through verdict_run and
 * verdict_run_inprocess, which must agree). high-cpu's verdicts are test_high_cpu_lua.c's.
 * Needs DIAG_SRCDIR (the repository root); no root, no BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "verdict_harness.h"

/* ---- diag.lua and the proxies --------------------------------------------------------------- */

static const struct value *num_field(const struct value *obj, const char *key)
{
	const struct value *v = value_get(obj, key);
	if (!v)
		fail_msg("no field %s", key);
	return v;
}

static double num(const struct value *obj, const char *key)
{
	const struct value *v = num_field(obj, key);
	assert_true(v->type == V_INT || v->type == V_NUM);
	return v->type == V_INT ? (double)v->i : v->n;
}

static void test_diag_helpers(void **state)
{
	(void)state;
	struct value *res = value_obj();
	static const int64_t h[] = { 0, 1, 10, 16, 31, 80, 1024, 2047, 10 };
	value_obj_set(res, "hist", runq(3, h, 2000));
	struct value *obj = value_obj_set(res, "obj", value_obj());
	value_set_int(obj, "a", 1);
	value_set_int(obj, "b", 2);
	value_set_int(obj, "c", 3);
	struct value *arr = value_obj_set(res, "arr", value_arr());
	for (int i = 1; i <= 4; i++)
		value_arr_push(arr, value_int(i * 10));
	struct value *strs = value_obj_set(res, "strs", value_arr());
	value_arr_push(strs, value_str("x"));
	value_arr_push(strs, value_str("y"));
	struct value *th = value_obj();
	value_set_str(th, "n_int", "50");
	value_set_str(th, "n_float", "2.5");
	value_set_str(th, "s", "abc");

	struct outcome o;
	run_lua("tests/unit/lua/diag_helpers.lua", "lua/lib", res, th, NULL, 0, 0, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	const struct value *r = o.report->arr.items[0];

	assert_float_equal(num(r, "p0_one"), 4.0, 1e-9);
	assert_float_equal(num(r, "p50_one"), 5.5, 1e-9);
	assert_float_equal(num(r, "p99_one"), 6.97, 1e-9);
	assert_float_equal(num(r, "p100_one"), 7.0, 1e-9);
	assert_float_equal(num(r, "p50_split"), 1.0, 1e-9);
	assert_float_equal(num(r, "p75_split"), 2.5, 1e-9);
	assert_float_equal(num(r, "p99_split"), 2.98, 1e-9);
	/* 100 samples: p50 rank 50 is the 40th of 80 in [16,31]; p99 rank 99 the 9th of 10 in [1024,2047] */
	assert_float_equal(num(r, "p50_hist"), 16 + 15 * 40.0 / 80, 1e-9);
	assert_float_equal(num(r, "p99_hist"), 1024 + 1023 * 9.0 / 10, 1e-9);
	assert_int_equal(num_field(r, "total_hist")->i, 100);
	assert_true(num_field(r, "empty_is_nil")->b);

	static const char *const fmt[] = { "950", "12.3k", "2.1M", "1M", "2.5", "915k", "318 ms", "512 ns", "1.5 us",
					   "80.2 ms", "2.50 s", "87.4 ms", "72%", "3.4%", "<0.1%",
					   "0%", "2M/s", "n/a", "burn_hot()", "libc.so.6+0x1a2b",
					   "bpf_prog_1_x [bpf]" };
	const struct value *f = num_field(r, "fmt");
	assert_int_equal(f->arr.len, ARRAY_LEN(fmt));
	for (size_t i = 0; i < ARRAY_LEN(fmt); i++)
		assert_string_equal(f->arr.items[i]->s, fmt[i]);

	assert_string_equal(value_get_str(r, "top"), "b,a,c");
	assert_string_equal(value_get_str(r, "path"), "main → mid → leaf");
	assert_string_equal(value_get_str(r, "long_path"), "f5 → … → f2 → f1");
	assert_float_equal(num(r, "pct"), 25.0, 1e-9);
	assert_float_equal(num(r, "pct_zero"), 0.0, 1e-9);
	assert_float_equal(num(r, "rate"), 2.5, 1e-9);
	assert_string_equal(value_get_str(r, "cpu_one"), "user 1.20 s, system 0.30 s");
	assert_string_equal(value_get_str(r, "cpu_set"),
			    "user 0.00 s, system 0.05 s, and 2.72 s in 147 short-lived processes (forked by the "
			    "set, exited or exec'd away before a /proc reading)");
	/* proxies: pairs in insertion order, # and ipairs, identity, table.concat */
	assert_string_equal(value_get_str(r, "keys"), "a,b,c");
	assert_int_equal(num_field(r, "len")->i, 4);
	assert_int_equal(num_field(r, "sum")->i, 100);
	assert_true(num_field(r, "same")->b);
	assert_string_equal(value_get_str(r, "concat"), "x+y");
	/* thresholds typed from text */
	assert_int_equal(num_field(r, "th_int")->type, V_INT);
	assert_int_equal(num_field(r, "th_int")->i, 50);
	assert_int_equal(num_field(r, "th_float")->type, V_NUM);
	assert_float_equal(num_field(r, "th_float")->n, 2.5, 0);
	assert_string_equal(value_get_str(r, "th_str"), "abc");

	outcome_free(&o);
	value_free(res);
	value_free(th);
}

static void test_libs_in_name_order(void **state)
{
	(void)state;
	struct outcome o;
	run_lua("tests/unit/lua/uses_libs.lua", "tests/unit/lua/libs", NULL, NULL, NULL, 0, 0, &o);
	assert_int_equal(o.rc, 0);
	assert_string_equal(value_get_str(o.verdicts->arr.items[0], "title"), "42");
	outcome_free(&o);

	/* the libraries run in the order given: bb.lua alone cannot see aa's global */
	struct source_file lua, bb;
	source_of_file(&lua, "tests/unit/lua/uses_libs.lua");
	source_of_file(&bb, "tests/unit/lua/libs/bb.lua");
	struct verdict_input in = { .lua = &lua, .libs = &bb, .n_libs = 1 };
	run_input(&in, false, &o);
	assert_int_equal(o.rc, -1);
	assert_int_equal(o.err.code, DIAG_EXIT_RUNTIME);
	assert_contains(o.err.msg, "bb.lua:");
	source_drop(&lua);
	source_drop(&bb);
}

/* ---- the sandbox ------------------------------------------------------------------------- */

static struct value *sample_results(void)
{
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(10, 0));
	stack(p, 10, false, FRAMES("a", "main"), NOFRAMES);
	return res;
}

/* Runs a fixture in one mode; expects an error containing each needle (NULL-terminated). */
static void expect_error(const char *fixture, const char *mode, size_t max_instr, ...)
{
	struct value *res = sample_results(), *th = value_obj();
	value_set_str(th, "mode", mode);
	char *rel = xasprintf("tests/unit/lua/%s", fixture);
	struct outcome o;
	run_lua(rel, "lua/lib", res, th, NULL, max_instr, 8u << 20, &o);
	if (o.rc != -1)
		fail_msg("mode %s: expected an error, got success", mode);
	assert_int_equal(o.err.code, DIAG_EXIT_RUNTIME);
	assert_null(o.verdicts);
	assert_null(o.report);
	va_list ap;
	va_start(ap, max_instr);
	for (const char *needle; (needle = va_arg(ap, const char *));)
		if (!strstr(o.err.msg, needle))
			fail_msg("mode %s: \"%s\" does not contain \"%s\"", mode, o.err.msg, needle);
	va_end(ap);
	free(rel);
	value_free(res);
	value_free(th);
}

static void test_sandbox_no_escape(void **state)
{
	(void)state;
	expect_error("hostile.lua", "os", 0, "hostile.lua:6:", "global 'os'", NULL);
	expect_error("hostile.lua", "io", 0, "hostile.lua:7:", "global 'io'", NULL);
	expect_error("hostile.lua", "debug", 0, "global 'debug'", NULL);
	expect_error("hostile.lua", "dump", 0, "hostile.lua:9:", "field 'dump'", NULL);
	expect_error("hostile.lua", "load", 0, "global 'load'", NULL);
	expect_error("hostile.lua", "dofile", 0, "global 'dofile'", NULL);
	expect_error("hostile.lua", "require", 0, "global 'require'", NULL);
	expect_error("hostile.lua", "collectgarbage", 0, "global 'collectgarbage'", NULL);
	expect_error("hostile.lua", "error_table", 0, "error object is a table value", NULL);
	if (access("/tmp/diag-pwned", F_OK) == 0)
		fail_msg("os.execute ran");
}

static void test_sandbox_limits(void **state)
{
	(void)state;
	expect_error("hostile.lua", "loop", 1000000, "hostile.lua:14: instruction limit exceeded",
		     NULL);
	expect_error("hostile.lua", "pcall_loop", 1000000, "instruction limit exceeded", NULL);
	expect_error("hostile.lua", "membomb", 0, "hostile.lua: memory limit exceeded", NULL);
	expect_error("hostile.lua", "bigrep", 0, "memory limit exceeded", NULL);

	/* Lua runs finalizers with hooks off: a looping one would hang lua_close */
	expect_error("hostile.lua", "gc_loop", 0, "__gc metamethods are not allowed", NULL);
	/* these must come back normally */
	static const char *const survive[] = { "gc_late", "empty_rep" };
	for (size_t i = 0; i < ARRAY_LEN(survive); i++) {
		struct value *th = value_obj();
		value_set_str(th, "mode", survive[i]);
		struct outcome o;
		run_lua("tests/unit/lua/hostile.lua", "lua/lib", NULL, th, NULL, 1000000, 0, &o);
		if (o.rc)
			fail_msg("%s: %s", survive[i], o.err.msg);
		assert_int_equal(o.verdicts->arr.len, 0);
		outcome_free(&o);
		value_free(th);
	}
}

static void test_results_read_only(void **state)
{
	(void)state;
	expect_error("hostile.lua", "write_top", 0, "hostile.lua:20:", "read-only", NULL);
	expect_error("hostile.lua", "write_nested", 0, "hostile.lua:21:", "read-only", NULL);
	expect_error("hostile.lua", "write_array", 0, "read-only", NULL);
	expect_error("hostile.lua", "rawset", 0, "global 'rawset'", NULL);
	expect_error("hostile.lua", "setmetatable", 0, "protected metatable", NULL);
	expect_error("hostile.lua", "table_insert", 0, "read-only", NULL);

	struct value *res = sample_results(), *th = value_obj();
	value_set_str(th, "mode", "getmetatable");
	struct outcome o;
	run_lua("tests/unit/lua/hostile.lua", "lua/lib", res, th, NULL, 0, 0, &o);
	assert_int_equal(o.rc, 0);
	assert_string_equal(value_get_str(o.verdicts->arr.items[0], "title"), "read-only");
	outcome_free(&o);
	value_free(res);
	value_free(th);
}

static void test_answer_checked(void **state)
{
	(void)state;
	expect_error("bad_return.lua", "not_table", 0, "must return a table", "got number", NULL);
	expect_error("bad_return.lua", "no_verdicts", 0, "verdicts: missing", NULL);
	expect_error("bad_return.lua", "verdicts_object", 0, "verdicts: expected an array", NULL);
	expect_error("bad_return.lua", "no_severity", 0, "verdicts[2].severity: missing", NULL);
	expect_error("bad_return.lua", "bad_severity", 0,
		     "verdicts[1].severity: \"fatal\" is not one of ok|info|warning|critical", NULL);
	expect_error("bad_return.lua", "evidence_number", 0,
		     "verdicts[2].evidence: item 2: expected a string, got a number", NULL);
	expect_error("bad_return.lua", "no_next_steps", 0, "verdicts[1].next_steps: missing", NULL);
	expect_error("bad_return.lua", "report_function", 0,
		     "report[1].f: cannot use a function value", NULL);
	expect_error("bad_return.lua", "report_cycle", 0, "nested too deeply", NULL);
	expect_error("bad_return.lua", "report_mixed", 0, "report[1].rows: a table mixes", NULL);
	expect_error("bad_return.lua", "report_no_kind", 0, "report[1].kind: missing", NULL);
}

static void test_sorted_and_values(void **state)
{
	(void)state;
	struct value *res = sample_results(), *th = value_obj();
	value_set_str(th, "mode", "sort");
	struct outcome o;
	run_lua("tests/unit/lua/bad_return.lua", NULL, res, th, NULL, 0, 0, &o);
	assert_int_equal(o.rc, 0);
	static const char *const order[] = { "b", "d", "c", "a", "e" }; /* stable, worst first */
	assert_int_equal(o.verdicts->arr.len, 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(id_at(&o, i), order[i]);
	/* keys in contract order */
	const struct value *v = o.verdicts->arr.items[0];
	assert_string_equal(v->obj.keys[0], "id");
	assert_string_equal(v->obj.keys[4], "next_steps");
	assert_int_equal(o.report->arr.len, 0);
	assert_int_equal(verdicts_worst(o.verdicts), SEV_CRITICAL);
	outcome_free(&o);

	value_set_str(th, "mode", "values");
	run_lua("tests/unit/lua/bad_return.lua", NULL, res, th, NULL, 0, 0, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	const struct value *r = o.report->arr.items[0];
	assert_string_equal(r->obj.keys[0], "kind"); /* kind first, then by name */
	assert_int_equal(num_field(r, "int")->type, V_INT);
	assert_int_equal(num_field(r, "neg")->i, -3);
	assert_int_equal(num_field(r, "float")->type, V_NUM);
	assert_int_equal(num_field(r, "whole_float")->type, V_NUM);
	assert_int_equal(num_field(r, "flag")->type, V_BOOL);
	assert_int_equal(num_field(r, "empty")->type, V_ARR);
	const struct value *nested = num_field(r, "nested");
	assert_int_equal(nested->arr.len, 2);
	assert_int_equal(nested->arr.items[1]->arr.items[0]->i, 3);
	/* a read-only result handed back is copied as is */
	assert_int_equal(value_get_num(num_field(r, "raw"), "samples", 0), 10);
	assert_string_equal(value_get(num_field(r, "raw"), "stacks")->arr.items[0]->obj.keys[0], "weight");
	outcome_free(&o);
	value_free(res);
	value_free(th);
}

static void test_syntax_and_loading(void **state)
{
	(void)state;
	expect_error("syntax.lua", "x", 0, "syntax.lua:3:", "unexpected symbol near '='", NULL);

	struct source_file f;
	struct diag_err err = { 0 };
	source_of_file(&f, "tests/unit/lua/syntax.lua");
	assert_int_equal(verdict_check_syntax(&f, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_contains(err.msg, "syntax.lua:3:");
	source_drop(&f);
	source_of_file(&f, "lua/high-cpu.lua");
	assert_int_equal(verdict_check_syntax(&f, &err), 0);
	source_drop(&f);
	source_of_file(&f, "lua/lib/diag.lua");
	assert_int_equal(verdict_check_syntax(&f, &err), 0);
	source_drop(&f);

	/* binary chunks are refused, even though nothing in the sandbox could produce one */
	source_of_text(&f, "binary.lua", "\x1bLua\x54\x00", 6);
	struct verdict_input in = { .lua = &f };
	struct outcome o;
	run_input(&in, false, &o);
	assert_int_equal(o.rc, -1);
	assert_contains(o.err.msg, "attempt to load a binary chunk");
	assert_int_equal(verdict_check_syntax(&f, &err), -1);
	source_drop(&f);

	/* the chunk runs from the bytes given, whatever the path says */
	source_of_text(&f, "/no/such/file.lua", "return { verdicts = {} }", 24);
	in.lua = &f;
	run_input(&in, false, &o);
	assert_int_equal(o.rc, 0);
	outcome_free(&o);
	source_drop(&f);
}

/* ---- bounds: the answer's size, time inside C calls --------------------------------------- */

/* Results of about n_stacks * 12 nodes, like a real profile's. */
static struct value *big_results(int n_stacks)
{
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(n_stacks, 0));
	for (int i = 0; i < n_stacks; i++)
		stack(p, 1, false, FRAMES("leaf", "mid", "main", "__libc_start_main", "_start"),
		      NOFRAMES);
	return res;
}

static long maxrss_kib(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return ru.ru_maxrss;
}

/* Fails unless no child of this process is left (none running, none unreaped). */
static void assert_no_child(void)
{
	errno = 0;
	pid_t r = waitpid(-1, NULL, WNOHANG);
	if (r != -1 || errno != ECHILD)
		fail_msg("a child process was left behind (waitpid: %d)", (int)r);
}

static void expect_text_error(const char *text, const struct value *results,
			      struct verdict_input *in, bool only_child, const char *needle)
{
	struct outcome o;
	run_text(text, results, in, only_child, &o);
	if (o.rc != -1)
		fail_msg("expected an error containing \"%s\", got success", needle);
	assert_int_equal(o.err.code, DIAG_EXIT_RUNTIME);
	assert_null(o.verdicts);
	assert_null(o.report);
	assert_null(o.ruled_out);
	assert_contains(o.err.msg, needle);
	assert_null(strchr(o.err.msg, '\n'));
	assert_no_child();
}

static void test_answer_budget(void **state)
{
	(void)state;
	struct value *res = big_results(2000); /* about 26,000 nodes */
	long self0 = maxrss_kib(RUSAGE_SELF);
	struct verdict_input in = { 0 };

	/* shared subtables: 4^12 tables once expanded */
	expect_text_error("local a = {}\n"
			  "for i = 1, 12 do a = { a, a, a, a } end\n"
			  "return { verdicts = {}, report = { { kind = 'text', dag = a } } }\n",
			  res, &in, false, "inline.lua: report[1].dag[1][1]");
	expect_text_error("local a = {}\n"
			  "for i = 1, 12 do a = { a, a, a, a } end\n"
			  "return { verdicts = {}, report = { { kind = 'text', dag = a } } }\n",
			  res, &in, false, "result too large (over 200000 nodes)");
	/* the read-only results, 2000 times */
	expect_text_error("local t = {}\n"
			  "for i = 1, 2000 do t[i] = results end\n"
			  "return { verdicts = {}, report = { t } }\n",
			  res, &in, false, "inline.lua: report[1][");
	expect_text_error("local t = {}\n"
			  "for i = 1, 2000 do t[i] = results end\n"
			  "return { verdicts = {}, report = { t } }\n",
			  res, &in, false, "]: result too large (over 200000 nodes)");
	/* the verdicts count too */
	expect_text_error("local e = {}\n"
			  "for i = 1, 200 do e[i] = results.profile end\n"
			  "return { verdicts = { { id = 'x', severity = 'ok', title = 't', evidence = e,\n"
			  "  next_steps = {} } } }\n",
			  res, &in, false, "inline.lua: verdicts[1].evidence[");
	/* text: one 1 MiB string, 100 times */
	expect_text_error("local s = ('x'):rep(1 << 20)\n"
			  "local t = {}\n"
			  "for i = 1, 100 do t[i] = s end\n"
			  "return { verdicts = {}, report = { { kind = 'text', lines = t } } }\n",
			  res, &in, false, "report[1].lines[16]: result too large (over 16777216 bytes of text)");
	/* keys are text too */
	expect_text_error("local t = {}\n"
			  "for i = 1, 20 do t[('k'):rep(1 << 20) .. i] = 1 end\n"
			  "return { verdicts = {}, report = { { kind = 'text', t = t } } }\n",
			  res, &in, false, "bytes of text");

	/* bounded memory: neither this process nor a child grew by anything near the expansion */
	long self1 = maxrss_kib(RUSAGE_SELF), child = maxrss_kib(RUSAGE_CHILDREN);
	if (self1 - self0 > 256 * 1024 || child > self1 + 256 * 1024)
		fail_msg("max RSS grew from %ld to %ld KiB (children: %ld KiB)", self0, self1, child);

	/* a caller's smaller budget */
	in.max_nodes = 10;
	expect_text_error("return { verdicts = {}, report = { { kind = 'text', lines = "
			  "{ 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j' } } } }",
			  res, &in, false, "report[1].lines: result too large (over 10 nodes)");
	struct outcome o;
	run_text("return { verdicts = {}, report = { { kind = 'text', lines = { 'a', 'b', 'c' } } } }",
		 res, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	outcome_free(&o);
	in.max_nodes = 0;
	in.max_text_bytes = 8;
	expect_text_error("return { verdicts = {}, report = { { kind = 'text', s = '123456789' } } }",
			  res, &in, false, "report[1].s: result too large (over 8 bytes of text)");
	value_free(res);
}

/* ruled_out: what the snippet checked and found fine, {id, text} in its order; optional. */
#define RO_VERDICT "verdicts = { { id = 'x', severity = 'ok', title = 't', evidence = {}, next_steps = {} } }"

static void test_ruled_out(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct verdict_input in = { 0 };
	struct outcome o;

	/* kept, in the snippet's order, through the child and in this process alike */
	run_text("return { " RO_VERDICT ", ruled_out = {\n"
		 "  { id = 'cpu-throttling', text = 'not throttled: 0 ms of 5.0 s' },\n"
		 "  { text = 'run queue p99 40 us', id = 'cpu-starvation' },\n"
		 "  { id = 'a-1', text = 'x\\1y' } } }", res, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	assert_int_equal(o.ruled_out->arr.len, 3);
	const struct value *r0 = o.ruled_out->arr.items[0], *r1 = o.ruled_out->arr.items[1];
	assert_string_equal(value_get_str(r0, "id"), "cpu-throttling");
	assert_string_equal(value_get_str(r0, "text"), "not throttled: 0 ms of 5.0 s");
	assert_string_equal(r1->obj.keys[0], "id"); /* rebuilt: id, then text */
	assert_string_equal(value_get_str(r1, "id"), "cpu-starvation");
	assert_string_equal(value_get_str(o.ruled_out->arr.items[2], "text"), "x\001y");
	outcome_free(&o);

	/* absent, or empty: an empty array */
	run_text("return { " RO_VERDICT " }", res, &in, false, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.ruled_out->type, V_ARR);
	assert_int_equal(o.ruled_out->arr.len, 0);
	outcome_free(&o);
	run_text("return { " RO_VERDICT ", ruled_out = {} }", res, &in, false, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.ruled_out->arr.len, 0);
	outcome_free(&o);

	/* wrong shapes: one line naming the item and the field */
	expect_text_error("return { " RO_VERDICT ", ruled_out = 'none' }", res, &in, false,
			  "inline.lua: ruled_out: expected an array of { id =, text = }, got a string");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { id = 'a', text = 'b' } }", res, &in,
			  false, "inline.lua: ruled_out: expected an array of { id =, text = }, got a table "
			  "with named fields");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { 'cpu' } }", res, &in, false,
			  "inline.lua: ruled_out[1]: expected a table { id =, text = }, got a string");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = 'b' },\n"
			  "  { id = 'b', text = 'c' }, { id = 'c', text = 4 } } }", res, &in, false,
			  "inline.lua: ruled_out[3].text: expected a string, got a number");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { text = 'b' } } }", res, &in, false,
			  "inline.lua: ruled_out[1].id: missing");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a' } } }", res, &in, false,
			  "inline.lua: ruled_out[1].text: missing");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = '' } } }", res, &in,
			  false, "inline.lua: ruled_out[1].text: empty");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'CPU throttling', text = 'b' } } }",
			  res, &in, false, "inline.lua: ruled_out[1].id: \"CPU throttling\" is not an id "
			  "([a-z0-9-]+, at most 64)");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = ('a'):rep(65), text = 'b' } } }",
			  res, &in, false, "ruled_out[1].id:");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = 'b\\nc' } } }", res,
			  &in, false, "inline.lua: ruled_out[1].text: must be one line");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', txt = 'b' } } }", res, &in,
			  false, "inline.lua: ruled_out[1]: unknown key \"txt\" (expected id, text)");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = string.len } } }", res,
			  &in, false, "inline.lua: ruled_out[1].text: cannot use a function value");

	/* within the answer's budget like the rest */
	expect_text_error("local t = {}\n"
			  "for i = 1, 100000 do t[i] = { id = 'a', text = 'b' } end\n"
			  "return { " RO_VERDICT ", ruled_out = t }", res, &in, false,
			  "inline.lua: ruled_out[");
	expect_text_error("local t = {}\n"
			  "for i = 1, 100000 do t[i] = { id = 'a', text = 'b' } end\n"
			  "return { " RO_VERDICT ", ruled_out = t }", res, &in, false,
			  "result too large (over 200000 nodes)");
	in.max_text_bytes = 64;
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = ('x'):rep(100) } } }",
			  res, &in, false, "ruled_out[1].text: result too large (over 64 bytes of text)");
	value_free(res);
}

/* metrics: the run's key figures, built by diag.answer's a.metric or returned as they are;
 * through the child and in this process alike; wrong names, values and help refused naming the
 * item. */
static void test_metrics(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct verdict_input in = { 0 };
	struct outcome o;
	run_text("return { " RO_VERDICT ", metrics = {\n"
		 "  { name = 'runq_latency_p99_seconds', value = 0.0021, help = 'run-queue p99' },\n"
		 "  { help = 'share', value = 1, name = 'cpu_hottest_function_ratio' } } }", res, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	assert_int_equal(o.metrics->arr.len, 2);
	assert_string_equal(value_get_str(o.metrics->arr.items[0], "name"), "runq_latency_p99_seconds");
	assert_true(value_get_num(o.metrics->arr.items[0], "value", 0) == 0.0021);
	assert_string_equal(o.metrics->arr.items[1]->obj.keys[0], "name"); /* rebuilt: name, value, help */
	assert_true(value_get_num(o.metrics->arr.items[1], "value", 0) == 1);
	outcome_free(&o);
	run_text("return { " RO_VERDICT " }", res, &in, false, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.metrics->type, V_ARR);
	assert_int_equal(o.metrics->arr.len, 0);
	outcome_free(&o);

	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'runq p99', value = 1, help = 'x' } } }",
			  res, &in, false, "inline.lua: metrics[1].name: \"runq p99\" is not a metric name");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'runq_p99_us', value = 1, help = 'x' } } }",
			  res, &in, false, "metrics[1].name: \"runq_p99_us\" is not a metric name");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 'high', help = 'x' } } }",
			  res, &in, false, "inline.lua: metrics[1].value: expected a finite number, got string");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 1, help = 'x\\ny' } } }",
			  res, &in, false, "inline.lua: metrics[1].help: expected one line");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 1, help = 'x', unit = 'y' } } }",
			  res, &in, false, "inline.lua: metrics[1]: unknown key \"unit\"");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 1, help = 'x' },\n"
			  "  { name = 'a_ratio', value = 2, help = 'y' } } }", res, &in, false,
			  "inline.lua: metrics[2].name: \"a_ratio\" given twice");
	expect_text_error("return { " RO_VERDICT ", metrics = { name = 'a_ratio' } }", res, &in, false,
			  "inline.lua: metrics: expected an array");
	value_free(res);
}

static void test_time_limits(void **state)
{
	(void)state;
	struct value *res = sample_results();
	struct verdict_input in = { .max_instructions = 20000, .max_ms = 300 };
	static const char *const slow[] = {
		/* 16 MiB copied per call, a few instructions per loop */
		"local s = ('x'):rep(1 << 20)\nwhile true do local t = s:rep(16) end",
		/* a million __index calls per instruction */
		"while true do table.unpack(results.profile.stacks, 1, 999000) end",
		/* backtracking: minutes inside one call */
		"return string.find(('a'):rep(60), ('a*'):rep(7) .. 'b')",
	};
	for (size_t i = 0; i < ARRAY_LEN(slow); i++)
		expect_text_error(slow[i], res, &in, true,
				  "inline.lua: verdict phase over its time limit of 300 ms (killed)");

	/* signals the caller holds stay held in the child, which is killed all the same */
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &old);
	expect_text_error(slow[2], res, &in, true, "over its time limit of 300 ms (killed)");
	sigprocmask(SIG_SETMASK, &old, NULL);

	/* the instruction limit still ends a plain loop, with its own message */
	in.max_ms = 0;
	expect_text_error("while true do end", res, &in, false,
			  "inline.lua:1: instruction limit exceeded");
	value_free(res);
}

/* Sends sig to the first child of this process's main thread that shows up. */
struct killer {
	int sig;
	pid_t victim;
};

static void *kill_first_child(void *arg)
{
	struct killer *k = arg;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	for (int tries = 0; tries < 4000 && !k->victim; tries++) {
		FILE *f = fopen(path, "r");
		int pid = 0;
		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid > 0) {
			usleep(50 * 1000); /* let it reach the snippet */
			kill(pid, k->sig);
			k->victim = pid;
		} else {
			usleep(1000);
		}
	}
	return NULL;
}

/* A child ended by a signal (here sent from outside, as RLIMIT_CPU or the OOM killer would) is
 * a clean error naming it. */
static void test_child_killed(void **state)
{
	(void)state;
	char children[64];
	snprintf(children, sizeof(children), "/proc/self/task/%d/children", (int)getpid());
	if (access(children, R_OK)) /* CONFIG_PROC_CHILDREN */
		skip();
	struct killer k = { .sig = SIGXCPU };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, kill_first_child, &k), 0);
	struct verdict_input in = { .max_ms = 20000 };
	expect_text_error("return string.find(('a'):rep(60), ('a*'):rep(7) .. 'b')", NULL, &in, true,
			  "inline.lua: verdict phase killed by SIGXCPU (over its CPU time limit)");
	pthread_join(t, NULL);
	assert_true(k.victim > 0);
}

/* What comes back through the pipe is what the snippet returned. */
static void test_answer_through_child(void **state)
{
	(void)state;
	struct verdict_input in = { 0 };
	struct outcome o;
	run_text("return { verdicts = { { id = 'b', severity = 'info', title = 'x\\1y\\127z',\n"
		 "  evidence = { '\\255\\254 not UTF-8', 'caf\\195\\169', 'lock\\0at 0x10\\0' },\n"
		 "  next_steps = {} } },\n"
		 "  report = { { kind = 'text', third = 0.1 + 0.2, whole = 2.0, big = 1e300,\n"
		 "    int = math.mininteger, inf = 1/0, s = 'a\\0b' } } }",
		 NULL, &in, true, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	const struct value *v = o.verdicts->arr.items[0];
	assert_string_equal(value_get_str(v, "title"), "x\001y\177z");
	assert_string_equal(value_get(v, "evidence")->arr.items[0]->s, "\377\376 not UTF-8");
	assert_string_equal(value_get(v, "evidence")->arr.items[1]->s, "caf\303\251");
	/* a NUL does not cut the string: it comes back as the visible \x00, the rest kept */
	assert_string_equal(value_get(v, "evidence")->arr.items[2]->s, "lock\\x00at 0x10\\x00");
	const struct value *r = o.report->arr.items[0];
	assert_int_equal(value_get(r, "third")->type, V_NUM);
	assert_true(value_get(r, "third")->n == 0.1 + 0.2); /* exact, not %.6g */
	assert_int_equal(value_get(r, "whole")->type, V_NUM);
	assert_true(value_get(r, "big")->n == 1e300);
	assert_int_equal(value_get(r, "int")->type, V_INT);
	assert_true(value_get(r, "int")->i == INT64_MIN);
	assert_int_equal(value_get(r, "inf")->type, V_NULL); /* as the JSON report writes it */
	assert_string_equal(value_get_str(r, "s"), "a\\x00b"); /* not cut at the NUL, as in process */
	outcome_free(&o);
	assert_no_child();

	/* 16 levels of tables come back, 17 do not (report, section, then t) */
	run_text("local t = {} for i = 1, 13 do t = { t } end\n"
		 "return { verdicts = {}, report = { { kind = 'x', t = t } } }", NULL, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	outcome_free(&o);
	expect_text_error("local t = {} for i = 1, 14 do t = { t } end\n"
			  "return { verdicts = {}, report = { { kind = 'x', t = t } } }", NULL, &in, false,
			  "inline.lua: report[1].t[1][1][1][1][1][1][1][1][1][1][1][1][1][1]: "
			  "tables nested too deeply");

	/* errors are one line, in the child as in process */
	expect_text_error("error('first\\nsecond\\27[31m')", NULL, &in, false, "first?second?[31m");
	expect_text_error("error('\\0x\\0y', 0)", NULL, &in, false, " x y");
	expect_text_error("error('', 0)", NULL, &in, false, "inline.lua: error with an empty message");
	/* keys must be C strings */
	expect_text_error("return { verdicts = {}, report = { { kind = 'x', ['a\\0b'] = 1 } } }", NULL,
			  &in, false, "report[1]: a key holds a NUL byte");
}

/* The child started before its results exist (as the engine does when the window opens): it
 * answers on the results handed to it later, as verdict_run does; one cancelled is gone; one
 * stuck before the results arrive (a library's load in one C call) is killed at the deadline
 * counted from verdict_finish, and results larger than a pipe's buffer do not block the parent. */
static void test_started_early(void **state)
{
	(void)state;
	const char *text = "return { verdicts = { { id = 'n', severity = 'info', title = 'stacks ' .. "
			   "#results.profile.stacks .. ' run ' .. run.recipe .. ' mode ' .. thresholds.mode,"
			   " evidence = {}, next_steps = {} } } }";
	struct source_file lua;
	source_of_text(&lua, "inline.lua", text, strlen(text));
	struct value *th = value_obj();
	value_set_str(th, "mode", "user");
	struct verdict_input in = { .lua = &lua, .thresholds = th };
	struct value *res = sample_results(), *run = value_obj();
	value_set_str(run, "recipe", "high-cpu");

	struct verdict_child ch;
	struct verdict_answer a;
	struct diag_err err = { 0 };
	assert_int_equal(verdict_start(&in, &ch, &err), 0);
	usleep(100 * 1000); /* the collection */
	if (verdict_finish(&ch, res, run, &a, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(value_get_str(a.verdicts->arr.items[0], "title"), "stacks 1 run high-cpu mode user");
	verdict_answer_free(&a);
	assert_no_child();

	/* cancelled: killed and reaped */
	assert_int_equal(verdict_start(&in, &ch, &err), 0);
	verdict_cancel(&ch);
	assert_no_child();

	/* ended before its results came (the OOM killer, an operator): the results written to no
	 * one, its end said */
	assert_int_equal(verdict_start(&in, &ch, &err), 0);
	kill(ch.pid, SIGKILL);
	/* dead before the write (its pipe without a reader): the write's SIGPIPE must not reach this
	 * process, whose disposition is the default one */
	siginfo_t dead;
	assert_int_equal(waitid(P_PID, (id_t)ch.pid, &dead, WEXITED | WNOWAIT), 0);
	assert_int_equal(verdict_finish(&ch, res, run, &a, &err), -1);
	assert_contains(err.msg, "inline.lua: verdict phase killed by SIGKILL");
	assert_null(a.verdicts);
	assert_no_child();

	/* never started: an error, nothing killed, no descriptor closed */
	struct verdict_child none = VERDICT_CHILD_NONE;
	assert_int_equal(verdict_finish(&none, res, run, &a, &err), -1);
	assert_contains(err.msg, "not started");
	verdict_cancel(&none);

	/* a snippet that does not compile: the error comes with the answer, not before */
	struct source_file bad;
	source_of_text(&bad, "inline.lua", "return {", 8);
	struct verdict_input bad_in = { .lua = &bad };
	assert_int_equal(verdict_start(&bad_in, &ch, &err), 0);
	assert_int_equal(verdict_finish(&ch, res, run, &a, &err), -1);
	assert_contains(err.msg, "inline.lua:1:");
	assert_null(a.verdicts);
	assert_no_child();
	source_drop(&bad);

	/* a library stuck in one C call while it loads; 1 MiB of results to write meanwhile */
	struct source_file lib;
	const char *stuck = "local found = string.find(('a'):rep(60), ('a*'):rep(7) .. 'b')\nreturn {}";
	source_of_text(&lib, "lua/lib/stuck.lua", stuck, strlen(stuck));
	struct verdict_input slow_in = { .lua = &lua, .libs = &lib, .n_libs = 1, .max_ms = 300 };
	struct value *big = value_obj();
	char *blob = xmalloc(1u << 20);
	memset(blob, 'x', (1u << 20) - 1);
	blob[(1u << 20) - 1] = 0;
	value_set_str(big, "blob", blob);
	free(blob);
	assert_int_equal(verdict_start(&slow_in, &ch, &err), 0);
	assert_int_equal(verdict_finish(&ch, big, run, &a, &err), -1);
	assert_contains(err.msg, "inline.lua: verdict phase over its time limit of 300 ms (killed)");
	assert_no_child();
	source_drop(&lib);

	value_free(big);
	value_free(res);
	value_free(run);
	value_free(th);
	source_drop(&lua);
}

static void test_severity_names(void **state)
{
	(void)state;
	int ok;
	assert_int_equal(severity_parse("warning", &ok), SEV_WARNING);
	assert_true(ok);
	severity_parse("fatal", &ok);
	assert_false(ok);
	assert_string_equal(severity_name(SEV_CRITICAL), "critical");
	assert_int_equal(verdicts_worst(NULL), SEV_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diag_helpers),
		cmocka_unit_test(test_libs_in_name_order),
		cmocka_unit_test(test_sandbox_no_escape),
		cmocka_unit_test(test_sandbox_limits),
		cmocka_unit_test(test_results_read_only),
		cmocka_unit_test(test_answer_checked),
		cmocka_unit_test(test_sorted_and_values),
		cmocka_unit_test(test_syntax_and_loading),
		cmocka_unit_test(test_answer_budget),
		cmocka_unit_test(test_ruled_out),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_time_limits),
		cmocka_unit_test(test_child_killed),
		cmocka_unit_test(test_answer_through_child),
		cmocka_unit_test(test_started_early),
		cmocka_unit_test(test_severity_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
