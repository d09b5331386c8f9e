/* test_report.c — what the report writers do with text the target controls (comm, exe, symbol
 * names, and through Lua any verdict or section string): folded stacks stay one line per stack,
 * the text report lets no control byte or terminal escape through, JSON escapes every control
 * byte and DEL and stays valid UTF-8. Exact bytes are asserted. No root, no files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Output of a writer, captured. */
struct capture {
	FILE *f;
	char *buf;
	size_t len;
};

static void capture_start(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
}

static char *capture_end(struct capture *c)
{
	assert_int_equal(fclose(c->f), 0);
	return c->buf;
}

/* Fails when text holds a control byte other than the writer's newlines (allowed: newline only
 * when newlines is true), DEL, a C1 control or a byte that is not UTF-8. */
static void assert_clean(const char *text, bool newlines)
{
	for (const char *p = text; *p;) {
		unsigned char b = (unsigned char)*p;
		size_t n = utf8_char_len(p);
		if (!n)
			fail_msg("byte 0x%02x at %zu is not UTF-8 in:\n%s", b, (size_t)(p - text), text);
		if ((b < 0x20 && !(newlines && b == '\n')) || b == 0x7f ||
		    (n == 2 && b == 0xc2 && (unsigned char)p[1] < 0xa0))
			fail_msg("control 0x%02x at %zu in:\n%s", b, (size_t)(p - text), text);
		p += n;
	}
}

static struct value *str_array(const char *const *items)
{
	struct value *a = value_arr();
	for (; *items; items++)
		value_arr_push(a, value_str(*items));
	return a;
}

#define STRS(...) str_array((const char *const[]){ __VA_ARGS__, NULL })

/* ---- folded -------------------------------------------------------------------------------- */

static struct value *stack(const char *comm, struct value *user, struct value *kernel, int64_t n)
{
	struct value *s = value_obj();
	value_set_str(s, "comm", comm);
	value_obj_set(s, "user", user);
	if (kernel)
		value_obj_set(s, "kernel", kernel);
	value_set_int(s, "weight", n);
	value_set_int(s, "count", 1); /* the folded number is the weight */
	return s;
}

static void test_folded_one_line_per_stack(void **state)
{
	(void)state;
	struct value *results = value_obj();
	value_obj_set(results, "runq", value_obj()); /* no stacks: not the default */
	struct value *profile = value_obj_set(results, "profile", value_obj());
	struct value *stacks = value_obj_set(profile, "stacks", value_arr());
	/* frames leaf first, as the probes give them */
	value_arr_push(stacks, stack("evil\x1b[31m",
				     STRS("leaf\n* * * * * root evil\n", "main"),
				     STRS("do_sys\topen", "entry\r"), 3));
	value_arr_push(stacks, stack("ok", STRS("a;b c", "caf\xc3\xa9", "del\x7f\xff"), NULL, 1));

	struct capture c;
	capture_start(&c);
	assert_int_equal(report_write_folded(results, NULL, c.f), 2);
	char *out = capture_end(&c);
	assert_string_equal(out,
			    "evil\\x1b[31m;main;leaf\\x0a*_*_*_*_*_root_evil\\x0a;entry\\x0d_[k];"
			    "do_sys\\x09open_[k] 3\n"
			    "ok;del\\x7f\\xff;caf\xc3\xa9;a_b_c 1\n");
	assert_clean(out, true);
	value_free(results);
	free(out);
}

/* The one probe every stack output (--folded, --flamegraph, --pprof) shows. */
static void test_stack_probe_selection(void **state)
{
	(void)state;
	struct value *results = value_obj();
	value_obj_set(results, "runq", value_obj());
	struct value *a = value_obj_set(results, "oncpu", value_obj());
	value_obj_set(a, "stacks", value_arr());
	struct value *b = value_obj_set(results, "offcpu", value_obj());
	value_obj_set(b, "stacks", value_arr());
	const char *id = NULL;
	assert_ptr_equal(report_stack_probe(results, NULL, &id), a);
	assert_string_equal(id, "oncpu");
	assert_ptr_equal(report_stack_probe(results, "offcpu", &id), b);
	assert_string_equal(id, "offcpu");
	assert_null(report_stack_probe(results, "runq", NULL));
	assert_null(report_stack_probe(results, "nope", NULL));
	assert_null(report_stack_probe(NULL, NULL, NULL));
	value_free(results);
}

/* ---- text ---------------------------------------------------------------------------------- */

static struct value *hostile_report(void)
{
	struct value *r = value_obj();
	struct value *rec = value_obj_set(r, "recipe", value_obj());
	value_set_str(rec, "name", "high-cpu");
	struct value *t = value_obj_set(r, "target", value_obj());
	value_set_int(t, "pid", 42);
	value_set_str(t, "comm", "x\x1b]0;owned\x07");
	value_set_str(t, "exe", "/tmp/a\nnote: fake");
	value_set_str(r, "stop_reason", "duration");
	value_set_num(r, "duration_s", 1);
	struct value *o = value_obj_set(r, "overhead", value_obj());
	value_obj_set(o, "bpf_cpu_pct", value_null());
	value_set_int(o, "events", 0);
	value_set_int(o, "dropped", 0);
	value_obj_set(r, "notes", STRS("clear\x1b[2J"));
	struct value *vs = value_obj_set(r, "verdicts", value_arr());
	struct value *v = value_arr_push(vs, value_obj());
	value_set_str(v, "severity", "warning");
	value_set_str(v, "id", "user-cpu\r");
	value_set_str(v, "title", "Hot \x1b[31mred\x1b[0m\nCRITICAL  FAKE VERDICT");
	value_obj_set(v, "evidence", STRS("e1\nINJECTED", "csi \xc2\x9b" "2J and \x9b"));
	value_obj_set(v, "next_steps", STRS("del\x7f"));
	return r;
}

static struct value *hostile_sections(void)
{
	struct value *secs = value_arr();
	struct value *tab = value_arr_push(secs, value_obj());
	value_set_str(tab, "kind", "table");
	value_set_str(tab, "title", "Hottest\x1b[8m");
	value_obj_set(tab, "columns", STRS("function", "share"));
	struct value *rows = value_obj_set(tab, "rows", value_arr());
	value_arr_push(rows, STRS("\x1b[1mcell\nrow", "50%"));
	struct value *hist = value_arr_push(secs, value_obj());
	value_set_str(hist, "kind", "histogram");
	value_set_str(hist, "title", "h");
	value_set_str(hist, "unit", "us\x1b[K");
	struct value *b = value_arr_push(value_obj_set(hist, "buckets", value_arr()), value_obj());
	value_set_int(b, "lo", 0);
	value_set_int(b, "hi", 1);
	value_set_int(b, "count", 2);
	struct value *txt = value_arr_push(secs, value_obj());
	value_set_str(txt, "kind", "text");
	value_set_str(txt, "title", "t");
	value_obj_set(txt, "lines", STRS("\r\nline"));
	return secs;
}

static void test_text_escapes_controls(void **state)
{
	(void)state;
	struct value *r = hostile_report();
	value_obj_set(r, "sections", hostile_sections());
	struct capture c;
	capture_start(&c);
	report_write_text(r, c.f);
	char *out = capture_end(&c);
	assert_clean(out, true);
	static const char *const want[] = {
		"diagnose high-cpu — pid 42 (x\\x1b]0;owned\\x07) /tmp/a\\x0anote: fake\n",
		"note: clear\\x1b[2J\n",
		"WARNING    Hot \\x1b[31mred\\x1b[0m\\x0aCRITICAL  FAKE VERDICT  [user-cpu\\x0d]\n",
		"           - e1\\x0aINJECTED\n",
		"           - csi \\xc2\\x9b2J and \\x9b\n",
		"           -> del\\x7f\n",
		"\nHottest\\x1b[8m\n",
		"  \\x1b[1mcell\\x0arow",
		"0 .. 1 us\\x1b[K",
		"  \\x0d\\x0aline\n",
	};
	for (size_t i = 0; i < ARRAY_LEN(want); i++)
		if (!strstr(out, want[i]))
			fail_msg("missing \"%s\" in:\n%s", want[i], out);
	/* No injected line: each line starts with what the writer put there. */
	assert_null(strstr(out, "\nCRITICAL"));
	assert_null(strstr(out, "\nINJECTED"));
	assert_null(strstr(out, "\nnote: fake"));
	assert_null(strstr(out, "\nrow"));
	assert_null(strstr(out, "\nline"));
	value_free(r);
	free(out);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static char *json_string(const char *s)
{
	struct capture c;
	capture_start(&c);
	json_write_string(c.f, s);
	return capture_end(&c);
}

static void assert_json_string(const char *s, const char *want)
{
	char *got = json_string(s);
	if (strcmp(got, want))
		fail_msg("got %s, want %s", got, want);
	assert_clean(got, false);
	free(got);
}

static void test_json_escapes(void **state)
{
	(void)state;
	assert_json_string("plain caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80",
			   "\"plain caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80\"");
	assert_json_string("q\" b\\ n\n r\r t\t", "\"q\\\" b\\\\ n\\n r\\r t\\t\"");
	assert_json_string("del\x7f esc\x1b[31m bel\x07 us\x1f",
			   "\"del\\u007f esc\\u001b[31m bel\\u0007 us\\u001f\"");
	/* C1 controls and the JavaScript line separators, though valid UTF-8, are escaped. */
	assert_json_string("c1 \xc2\x85\xc2\x9b\xc2\x9f nbsp \xc2\xa0 ls \xe2\x80\xa8 ps \xe2\x80\xa9",
			   "\"c1 \\u0085\\u009b\\u009f nbsp \xc2\xa0 ls \\u2028 ps \\u2029\"");
	/* Not UTF-8: each byte of a malformed sequence becomes U+FFFD. */
	assert_json_string("\xff", "\"\\ufffd\"");
	assert_json_string("a\x80z", "\"a\\ufffdz\"");
	assert_json_string("\xc0\xaf", "\"\\ufffd\\ufffd\"");              /* overlong '/' */
	assert_json_string("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");   /* surrogate */
	assert_json_string("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
	assert_json_string("\xe2\x86", "\"\\ufffd\\ufffd\"");              /* truncated at the end */
	assert_json_string("\xe2\x86z", "\"\\ufffd\\ufffdz\"");            /* truncated mid-string */
	assert_json_string("\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\"");

	/* The lossless variant for a raw_bytes reader: only the bytes that are not UTF-8 differ. */
	struct capture c;
	capture_start(&c);
	json_write_bytes(c.f, "\xff\xfe a\x7f \xc3\xa9\n");
	char *raw = capture_end(&c);
	assert_string_equal(raw, "\"\xff\xfe a\\u007f \xc3\xa9\\n\"");
	free(raw);

	/* Keys too, through the whole report. */
	struct value *v = value_obj();
	value_set_str(v, "k\x7f\xfe", "v\x01");
	capture_start(&c);
	value_write_json(v, c.f, -1);
	char *out = capture_end(&c);
	assert_string_equal(out, "{\"k\\u007f\\ufffd\":\"v\\u0001\"}");
	free(out);
	value_free(v);
}

static void test_utf8_char_len(void **state)
{
	(void)state;
	assert_int_equal(utf8_char_len(""), 0);
	assert_int_equal(utf8_char_len("a"), 1);
	assert_int_equal(utf8_char_len("\x01"), 1);
	assert_int_equal(utf8_char_len("\xc3\xa9"), 2);
	assert_int_equal(utf8_char_len("\xe2\x86\x92"), 3);
	assert_int_equal(utf8_char_len("\xf0\x9f\x98\x80"), 4);
	assert_int_equal(utf8_char_len("\xc3"), 0); /* stops at the NUL */
	assert_int_equal(utf8_char_len("\xc1\xbf"), 0);
	assert_int_equal(utf8_char_len("\xe0\x9f\xbf"), 0);
	assert_int_equal(utf8_char_len("\xf0\x8f\xbf\xbf"), 0);
	assert_int_equal(utf8_char_len("\xf5\x80\x80\x80"), 0);
	assert_int_equal(utf8_char_len("\xbf"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_one_line_per_stack),
		cmocka_unit_test(test_stack_probe_selection),
		cmocka_unit_test(test_text_escapes_controls),
		cmocka_unit_test(test_json_escapes),
		cmocka_unit_test(test_utf8_char_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
