/* test_report.c — what the report writers do with text the target controls (comm, exe, symbol
 * names, and through Lua any verdict or section string): folded stacks stay one line per stack,
 * the text report lets no control byte or terminal escape through, JSON escapes every control
 * byte and DEL and stays valid UTF-8; tables sized to a width elide long names in the middle (an
 * escape never split, numbers never cut) and keep whole names with no limit. Exact bytes are
 * asserted. No root, no files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

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
	value_set_str(t, "started_as", "/usr/bin/redis-server\x1b[2J"); /* cmdline[0]: the target's */
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
		"diagnose high-cpu — pid 42 (x\\x1b]0;owned\\x07) /tmp/a\\x0anote: fake (started as "
		"/usr/bin/redis-server\\x1b[2J)\n",
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

/* What the snippet checked and found fine: its own heading after the verdicts, one line each,
 * escaped like every string a target or snippet controls; none (no heading) when empty or absent
 * (a report recorded before ruled_out existed). */
static void test_ruled_out_text(void **state)
{
	(void)state;
	struct value *r = hostile_report();
	struct value *ro = value_obj_set(r, "ruled_out", value_arr());
	struct value *a = value_arr_push(ro, value_obj());
	value_set_str(a, "id", "cpu-throttling");
	value_set_str(a, "text", "not throttled: 0 ms of 5.0 s");
	struct value *b = value_arr_push(ro, value_obj());
	value_set_str(b, "id", "cpu-starvation");
	value_set_str(b, "text", "run queue \x1b[2Jp99 40 us\nCRITICAL  fake");
	value_obj_set(r, "sections", hostile_sections());
	struct capture c;
	capture_start(&c);
	report_write_text(r, c.f);
	char *out = capture_end(&c);
	assert_clean(out, true);
	const char *want = "           -> del\\x7f\n\nChecked and ruled out:\n"
			   "  - not throttled: 0 ms of 5.0 s\n"
			   "  - run queue \\x1b[2Jp99 40 us\\x0aCRITICAL  fake\n\nHottest";
	if (!strstr(out, want))
		fail_msg("missing \"%s\" in:\n%s", want, out);
	assert_null(strstr(out, "\nCRITICAL"));
	free(out);

	value_obj_set(r, "ruled_out", value_arr());
	capture_start(&c);
	report_write_text(r, c.f);
	out = capture_end(&c);
	assert_null(strstr(out, "ruled out"));
	free(out);
	/* recorded before ruled_out existed: no key at all */
	struct value *old = hostile_report();
	capture_start(&c);
	report_write_text(old, c.f);
	out = capture_end(&c);
	assert_null(strstr(out, "ruled out"));
	free(out);
	value_free(old);
	value_free(r);
}

/* The JSON report always has ruled_out, right after the verdicts: what the snippet gave, in its
 * order, or an empty array (a dry run, a failed snippet). */
static void test_ruled_out_json(void **state)
{
	(void)state;
	struct recipe rec = { .path = "recipes/x.yaml", .name = "x" };
	struct plan plan = { .recipe = &rec };
	struct report_input in = { .plan = &plan };
	struct value *r = report_build(&in);
	const struct value *ro = value_get(r, "ruled_out");
	assert_non_null(ro);
	assert_int_equal(ro->type, V_ARR);
	assert_int_equal(ro->arr.len, 0);
	value_free(r);

	struct value *given = value_arr();
	struct value *a = value_arr_push(given, value_obj());
	value_set_str(a, "id", "disk-saturation");
	value_set_str(a, "text", "util 3% \"quoted\"");
	in.ruled_out = given;
	r = report_build(&in);
	size_t k;
	for (k = 0; k < r->obj.len && strcmp(r->obj.keys[k], "ruled_out"); k++)
		;
	assert_true(k > 0 && k < r->obj.len);
	assert_string_equal(r->obj.keys[k - 1], "verdicts");
	struct capture c;
	capture_start(&c);
	report_write_json(r, c.f);
	char *out = capture_end(&c);
	const char *want = "\"ruled_out\": [\n    {\n      \"id\": \"disk-saturation\",\n"
			   "      \"text\": \"util 3% \\\"quoted\\\"\"\n    }\n  ]";
	if (!strstr(out, want))
		fail_msg("missing %s in:\n%s", want, out);
	free(out);
	value_free(r);
	value_free(given);
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

/* The bidirectional formatting controls (U+061C, U+200E, U+200F, U+202A..U+202E,
 * U+2066..U+2069) reorder what a terminal, an editor or a browser shows ("Trojan Source"): a comm
 * or symbol holding U+202E must not reach any output raw. One rule for all of them: text and
 * folded as "\xNN" per byte, JSON as \uNNNN, like the C1 controls. */
#define RLO "\xe2\x80\xae" /* U+202E RIGHT-TO-LEFT OVERRIDE */
#define BIDI_ALL "\xd8\x9c\xe2\x80\x8e\xe2\x80\x8f\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad" \
		 RLO "\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9"

static void assert_no_bidi(const char *text)
{
	static const char *const bidi[] = { "\xd8\x9c", "\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa",
					    "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", RLO,
					    "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9" };
	for (size_t i = 0; i < ARRAY_LEN(bidi); i++)
		if (strstr(text, bidi[i]))
			fail_msg("bidi control %zu passes raw in:\n%s", i, text);
}

static void test_bidi_controls_escaped(void **state)
{
	(void)state;
	/* every one of them is unsafe, their neighbours are not */
	assert_true(utf8_char_unsafe(RLO, 3));
	assert_true(utf8_char_unsafe("\xd8\x9c", 2));
	assert_true(utf8_char_unsafe("\xe2\x81\xa9", 3));
	assert_false(utf8_char_unsafe("\xe2\x80\xaf", 3)); /* U+202F narrow no-break space */
	assert_false(utf8_char_unsafe("\xe2\x81\xaa", 3)); /* U+206A: deprecated, not bidi */
	assert_false(utf8_char_unsafe("\xd8\x9b", 2));     /* U+061B Arabic semicolon */
	assert_false(utf8_char_unsafe("\xc3\xa9", 2));

	/* JSON: as \uNNNN, each */
	assert_json_string("evil" BIDI_ALL "gpj.exe",
			   "\"evil\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067"
			   "\\u2068\\u2069gpj.exe\"");

	/* text: comm, verdict title and evidence as \xNN per byte */
	struct value *r = value_obj();
	value_set_str(value_obj_set(r, "recipe", value_obj()), "name", "high-cpu");
	struct value *t = value_obj_set(r, "target", value_obj());
	value_set_int(t, "pid", 42);
	value_set_str(t, "comm", "svc" RLO "nimda");
	struct value *v = value_arr_push(value_obj_set(r, "verdicts", value_arr()), value_obj());
	value_set_str(v, "id", "user-cpu");
	value_set_str(v, "severity", "warning");
	value_set_str(v, "title", "Hot " RLO "cod_kcehc");
	value_obj_set(v, "evidence", STRS("all" BIDI_ALL "of them"));
	struct capture c;
	capture_start(&c);
	report_write_text(r, c.f);
	char *out = capture_end(&c);
	assert_no_bidi(out);
	if (!strstr(out, "svc\\xe2\\x80\\xaenimda") || !strstr(out, "Hot \\xe2\\x80\\xaecod_kcehc") ||
	    !strstr(out, "all\\xd8\\x9c\\xe2\\x80\\x8e") || !strstr(out, "\\xe2\\x81\\xa9of them"))
		fail_msg("bidi controls not shown as \\xNN in:\n%s", out);
	free(out);
	value_free(r);

	/* folded: comm and frames */
	struct value *results = value_obj();
	struct value *stacks = value_obj_set(value_obj_set(results, "profile", value_obj()), "stacks",
					     value_arr());
	value_arr_push(stacks, stack("w" RLO "x", STRS("leaf" RLO "fael"), STRS("k\xe2\x81\xa6"), 1));
	capture_start(&c);
	assert_int_equal(report_write_folded(results, NULL, c.f), 1);
	out = capture_end(&c);
	assert_string_equal(out, "w\\xe2\\x80\\xaex;leaf\\xe2\\x80\\xaefael;k\\xe2\\x81\\xa6_[k] 1\n");
	free(out);
	value_free(results);
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

/* ---- tables sized to the terminal ---------------------------------------------------------- */

static void assert_fit(const char *s, size_t max, const char *want, size_t want_cols)
{
	char buf[256];
	size_t cols = report_text_fit(s, max, buf, sizeof(buf));
	if (strcmp(buf, want) || cols != want_cols)
		fail_msg("fit(\"%s\", %zu) = \"%s\" (%zu columns), want \"%s\" (%zu)", s, max, buf, cols,
			 want, want_cols);
}

static void test_text_fit_elides_middle(void **state)
{
	(void)state;
	assert_fit("abcdefghij", 0, "abcdefghij", 10);
	assert_fit("abcdefghij", 10, "abcdefghij", 10);
	assert_fit("abcdefghij", 9, "abcd\xe2\x80\xa6ghij", 9);
	assert_fit("abcdefghij", 6, "abc\xe2\x80\xa6ij", 6);
	assert_fit("abcdefghij", 5, "ab\xe2\x80\xa6ij", 5);
	assert_fit("abcdefghij", 1, "\xe2\x80\xa6", 1);
	assert_fit("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 20, "/usr/lib/x\xe2\x80\xa6" "dc++.so.6", 20);
	assert_fit("std::vector<std::basic_string<char>, std::allocator<std::basic_string<char> > >::push_back",
		   40, "std::vector<std::bas\xe2\x80\xa6har> > >::push_back", 40);
	/* a code point is one column, never split */
	assert_fit("\xce\xb1\xce\xb2\xce\xb3\xce\xb4\xce\xb5\xce\xb6\xce\xb7\xce\xb8", 5,
		   "\xce\xb1\xce\xb2\xe2\x80\xa6\xce\xb7\xce\xb8", 5);
	/* a control byte is shown as \xNN, and the escape is never cut in two */
	assert_fit("\x1b" "abcdef", 0, "\\x1babcdef", 10);
	assert_fit("\x1b" "abcdef", 6, "\xe2\x80\xa6" "bcdef", 6);
	assert_fit("abcdef\x1b", 6, "abc\xe2\x80\xa6", 4);
	/* a short buffer cuts at a whole character */
	char small[5];
	report_text_fit("\xce\xb1\xce\xb2\xce\xb3", 0, small, sizeof(small));
	assert_string_equal(small, "\xce\xb1\xce\xb2");
}

/* Columns of a line: code points. */
static size_t line_cols(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

static void test_table_sized_to_width(void **state)
{
	(void)state;
	static const char *const fn =
		"std::_Hashtable<std::basic_string<char>, std::pair<const std::basic_string<char>, int> >::_M_find_before_node";
	static const char *const lib = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30";
	struct value *r = value_obj();
	value_set_str(r, "tool", "diagnose");
	value_set_str(value_obj_set(r, "recipe", value_obj()), "name", "high-cpu");
	value_obj_set(r, "verdicts", value_arr());
	struct value *t = value_arr_push(value_obj_set(r, "sections", value_arr()), value_obj());
	value_set_str(t, "kind", "table");
	value_set_str(t, "title", "Hottest functions");
	value_obj_set(t, "columns", STRS("function", "samples", "share", "file"));
	struct value *rows = value_obj_set(t, "rows", value_arr());
	struct value *row = value_arr_push(rows, value_arr());
	value_arr_push(row, value_str(fn));
	value_arr_push(row, value_int(123456));
	value_arr_push(row, value_str("87.5%"));
	value_arr_push(row, value_str(lib));
	row = value_arr_push(rows, value_arr());
	value_arr_push(row, value_str("main"));
	value_arr_push(row, value_int(7));
	value_arr_push(row, value_str("0.1%"));
	value_arr_push(row, value_str("/srv/app"));

	/* 80 columns: every line fits, the long names are elided in the middle, numbers whole */
	struct capture c;
	capture_start(&c);
	report_write_text_width(r, c.f, 80);
	char *out = capture_end(&c);
	const char *tbl = strstr(out, "Hottest functions\n");
	assert_non_null(tbl);
	size_t lines = 0;
	for (const char *l = tbl; *l;) {
		size_t len = strcspn(l, "\n");
		if (line_cols(l, len) > 80)
			fail_msg("line of %zu columns at 80: %.*s", line_cols(l, len), (int)len, l);
		lines++;
		l += len + (l[len] == '\n');
	}
	assert_int_equal(lines, 4); /* title, header, two rows: nothing wrapped */
	/* function (109) and file (45) narrowed to 30 each: 15 columns of the start, 14 of the end */
	assert_non_null(strstr(tbl, "  std::_Hashtable\xe2\x80\xa6" "nd_before_node  "));
	assert_non_null(strstr(tbl, "\xe2\x80\xa6"));
	assert_null(strstr(tbl, fn));
	assert_non_null(strstr(tbl, "123456"));
	assert_non_null(strstr(tbl, "87.5%"));
	assert_non_null(strstr(tbl, "  /usr/lib/x86_64\xe2\x80\xa6" "dc++.so.6.0.30\n")); /* its end kept */
	/* the columns line up: "samples" ends where 123456 and 7 end */
	const char *hdr = strstr(tbl, "\n") + 1, *r1 = strstr(hdr, "\n") + 1, *r2 = strstr(r1, "\n") + 1;
	size_t hs = line_cols(hdr, (size_t)(strstr(hdr, "samples") + 7 - hdr));
	size_t s1 = line_cols(r1, (size_t)(strstr(r1, "123456") + 6 - r1));
	size_t s2 = line_cols(r2, (size_t)(strstr(r2, " 7 ") + 2 - r2));
	assert_int_equal(hs, s1);
	assert_int_equal(hs, s2);
	free(out);

	/* no limit (a pipe, a file): whole names */
	capture_start(&c);
	report_write_text_width(r, c.f, 0);
	out = capture_end(&c);
	assert_non_null(strstr(out, fn));
	assert_non_null(strstr(out, lib));
	assert_null(strstr(out, "\xe2\x80\xa6"));
	free(out);

	/* narrower than the numbers need: text columns stop at 12, the line is longer, not wrapped */
	capture_start(&c);
	report_write_text_width(r, c.f, 20);
	out = capture_end(&c);
	assert_non_null(strstr(out, "123456"));
	assert_null(strstr(out, "_M_find_before_node"));
	free(out);

	/* the width: $COLUMNS for what is not a terminal, else no limit */
	FILE *f = tmpfile();
	assert_non_null(f);
	setenv("COLUMNS", "132", 1);
	assert_int_equal(report_text_width(f), 132);
	setenv("COLUMNS", "5", 1);
	assert_int_equal(report_text_width(f), 20);
	setenv("COLUMNS", "wide", 1);
	assert_int_equal(report_text_width(f), 0);
	unsetenv("COLUMNS");
	assert_int_equal(report_text_width(f), 0);
	fclose(f);
	value_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_one_line_per_stack),
		cmocka_unit_test(test_stack_probe_selection),
		cmocka_unit_test(test_text_escapes_controls),
		cmocka_unit_test(test_ruled_out_text),
		cmocka_unit_test(test_ruled_out_json),
		cmocka_unit_test(test_json_escapes),
		cmocka_unit_test(test_bidi_controls_escaped),
		cmocka_unit_test(test_utf8_char_len),
		cmocka_unit_test(test_text_fit_elides_middle),
		cmocka_unit_test(test_table_sized_to_width),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
