/* test_flamegraph.c — the SVG flame graph writer (engine/report/flamegraph.c): the document is
 * well-formed XML (checked here by a small checker: balanced elements, quoted attributes, no raw
 * '<' or stray '&' in text, valid UTF-8 without control bytes) whatever names the target gives
 * (comm, symbols, tag: markup, quotes, control bytes, bytes that are not UTF-8, "]]>"); names
 * never reach the script; frame widths are proportional to weights and merged frames add up; the
 * title says the probe's unit, hover titles a human unit and share. The differential graph of two
 * small reports: a frame whose share grew is red, one that shrank blue, one that kept its share
 * grey (the same on the recorded reports of a CPU burner and its fix); widths are AFTER's; hover
 * gives before, after and the move; a frame of BEFORE only is not drawn but counted; hostile
 * names stay escaped. No root, no files but those recorded reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/flamegraph.h"
#include "report/report.h"

static char *render(const struct value *probe, const char *title, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	*rc = flamegraph_write(probe, title, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static struct value *str_array(const char *const *items)
{
	struct value *a = value_arr();
	for (; *items; items++)
		value_arr_push(a, value_str(*items));
	return a;
}
#define STRS(...) str_array((const char *const[]){ __VA_ARGS__, NULL })

static struct value *stack(const char *comm, struct value *user, struct value *kernel,
			   int64_t weight, const char *tag)
{
	struct value *s = value_obj();
	value_set_str(s, "comm", comm);
	value_obj_set(s, "user", user ? user : value_arr());
	value_obj_set(s, "kernel", kernel ? kernel : value_arr());
	value_set_int(s, "weight", weight);
	value_set_int(s, "count", 1);
	if (tag)
		value_set_str(s, "tag", tag);
	return s;
}

static struct value *probe(const char *unit)
{
	struct value *p = value_obj();
	value_set_str(p, "stack_unit", unit);
	value_obj_set(p, "stacks", value_arr());
	return p;
}

static struct value *stacks_of(struct value *p)
{
	return (struct value *)value_get(p, "stacks");
}

/* ---- a small XML well-formedness checker ------------------------------------------------- */

static size_t name_len(const char *p)
{
	size_t n = 0;
	while (p[n] && (p[n] == ':' || p[n] == '-' || p[n] == '_' || p[n] == '.' ||
			(p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
			(p[n] >= '0' && p[n] <= '9')))
		n++;
	return n;
}

/* An entity reference at p ("&amp;", "&#39;", ...): its length, 0 when it is not one. */
static size_t entity_len(const char *p)
{
	static const char *const named[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	for (size_t i = 0; i < 5; i++)
		if (strncmp(p, named[i], strlen(named[i])) == 0)
			return strlen(named[i]);
	if (p[1] != '#')
		return 0;
	size_t n = 2;
	while (p[n] >= '0' && p[n] <= '9')
		n++;
	return n > 2 && p[n] == ';' ? n + 1 : 0;
}

static void assert_chars_ok(const char *doc)
{
	for (const char *p = doc; *p;) {
		unsigned char b = (unsigned char)*p;
		size_t n = utf8_char_len(p);
		if (!n)
			fail_msg("byte 0x%02x at %zu is not UTF-8", b, (size_t)(p - doc));
		if (n == 1 && ((b < 0x20 && b != '\n') || b == 0x7f))
			fail_msg("control byte 0x%02x at %zu", b, (size_t)(p - doc));
		p += n;
	}
}

/* Fails unless doc is one well-formed XML document whose root element is <svg>. */
static void assert_well_formed(const char *doc)
{
	const char *stack[64];
	size_t depth = 0, roots = 0;
	assert_chars_ok(doc);
	const char *p = doc;
	if (strncmp(p, "<?xml", 5) == 0) {
		p = strstr(p, "?>");
		assert_non_null(p);
		p += 2;
	}
	while (*p) {
		if (*p == '&') {
			if (!entity_len(p))
				fail_msg("stray '&' at %zu: %.30s", (size_t)(p - doc), p);
			p += entity_len(p);
			continue;
		}
		if (*p == '>')
			fail_msg("raw '>' in text at %zu", (size_t)(p - doc));
		if (*p != '<') {
			if (!depth && *p != '\n' && *p != ' ')
				fail_msg("text outside the root at %zu", (size_t)(p - doc));
			p++;
			continue;
		}
		if (strncmp(p, "<![CDATA[", 9) == 0) {
			assert_true(depth > 0);
			const char *e = strstr(p, "]]>");
			assert_non_null(e);
			p = e + 3;
			continue;
		}
		if (strncmp(p, "<!--", 4) == 0) {
			const char *e = strstr(p, "-->");
			assert_non_null(e);
			p = e + 3;
			continue;
		}
		if (p[1] == '/') {
			size_t n = name_len(p + 2);
			if (!depth || name_len(stack[depth - 1]) != n || strncmp(stack[depth - 1], p + 2, n))
				fail_msg("unbalanced </%.*s> at %zu", (int)n, p + 2, (size_t)(p - doc));
			depth--;
			p += 2 + n;
			assert_int_equal(*p, '>');
			p++;
			continue;
		}
		size_t n = name_len(p + 1);
		if (!n)
			fail_msg("raw '<' at %zu: %.30s", (size_t)(p - doc), p);
		const char *name = p + 1;
		if (!depth) {
			roots++;
			assert_int_equal(strncmp(name, "svg", 3), 0);
		}
		p += 1 + n;
		for (;;) { /* attributes */
			while (*p == ' ' || *p == '\n')
				p++;
			if (*p == '>' || (p[0] == '/' && p[1] == '>'))
				break;
			size_t an = name_len(p);
			if (!an || p[an] != '=' || (p[an + 1] != '"' && p[an + 1] != '\''))
				fail_msg("bad attribute at %zu: %.30s", (size_t)(p - doc), p);
			char q = p[an + 1];
			p += an + 2;
			while (*p && *p != q) {
				if (*p == '<')
					fail_msg("'<' in an attribute value at %zu", (size_t)(p - doc));
				if (*p == '&' && !entity_len(p))
					fail_msg("stray '&' in an attribute at %zu", (size_t)(p - doc));
				p++;
			}
			assert_int_equal(*p, q);
			p++;
		}
		if (*p == '/') {
			p += 2;
			continue;
		}
		p++;
		assert_true(depth < 64);
		stack[depth++] = name;
	}
	assert_int_equal(depth, 0);
	assert_int_equal(roots, 1);
}

/* The rect width of the frame whose hover title starts with "name\n". */
static double frame_width(const char *doc, const char *name, double *data_w)
{
	char key[256];
	snprintf(key, sizeof(key), "<title>%s\n", name);
	const char *t = strstr(doc, key);
	if (!t)
		fail_msg("no frame %s", name);
	const char *g = t;
	while (g > doc && strncmp(g, "<g class=", 9) != 0)
		g--;
	const char *dw = strstr(g, "data-w=\"");
	assert_non_null(dw);
	*data_w = strtod(dw + 8, NULL);
	const char *w = strstr(t, "width=\"");
	assert_non_null(w);
	return strtod(w + 7, NULL);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_hostile_names_escaped(void **state)
{
	(void)state;
	struct value *p = probe("samples");
	value_arr_push(stacks_of(p),
		       stack("<script>&\"'", STRS("<script>alert(\"x\")</script>&'", "]]>main"),
			     STRS("ctl\x01\x1b[31m", "bad\xff\xfe utf8", "nonchar\xef\xbf\xbe"), 5,
			     "blocked<&>"));
	value_arr_push(stacks_of(p), stack("caf\xc3\xa9", STRS("\xc2\x85next-line"), NULL, 1, NULL));
	/* a bidi override in a symbol would reverse what the reader sees */
	value_arr_push(stacks_of(p), stack("bidi\xe2\x81\xa7", STRS("rlo\xe2\x80\xae" "exe.txt"), NULL, 1, NULL));
	int rc;
	char *doc = render(p, "title <b>&amp;", &rc);
	assert_int_equal(rc, 3);
	assert_well_formed(doc);
	/* the only script is ours, and it ends once */
	assert_null(strstr(doc, "<script>"));
	const char *cdata_end = strstr(doc, "]]>");
	assert_non_null(cdata_end);
	assert_null(strstr(cdata_end + 3, "]]>"));
	assert_null(strstr(doc, "alert(\"x\")"));
	assert_non_null(strstr(doc, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"));
	assert_non_null(strstr(doc, "&lt;script&gt;&amp;&quot;&#39;\n"));
	assert_non_null(strstr(doc, "ctl\\x01\\x1b[31m"));
	assert_non_null(strstr(doc, "bad\\xff\\xfe utf8"));
	assert_non_null(strstr(doc, "nonchar\\xef\\xbf\\xbe"));
	assert_non_null(strstr(doc, "\\xc2\\x85next-line"));
	assert_non_null(strstr(doc, "rlo\\xe2\\x80\\xaeexe.txt"));
	assert_non_null(strstr(doc, "bidi\\xe2\\x81\\xa7"));
	assert_null(strstr(doc, "\xe2\x80\xae"));
	assert_null(strstr(doc, "\xe2\x81\xa7"));
	assert_non_null(strstr(doc, "[blocked&lt;&amp;&gt;]"));
	assert_non_null(strstr(doc, "caf\xc3\xa9"));
	assert_non_null(strstr(doc, "title &lt;b&gt;&amp;amp;"));
	/* kernel, user, thread and tag frames have classes (and colours) of their own */
	assert_non_null(strstr(doc, "<g class=\"f k\""));
	assert_non_null(strstr(doc, "<g class=\"f u\""));
	assert_non_null(strstr(doc, "<g class=\"f c\""));
	assert_non_null(strstr(doc, "<g class=\"f t\""));
	free(doc);
	value_free(p);
}

static void test_widths_proportional(void **state)
{
	(void)state;
	struct value *p = probe("samples");
	/* leaf first; "main" is shared and merges to 400 */
	value_arr_push(stacks_of(p), stack("app", STRS("fa", "main"), NULL, 300, NULL));
	value_arr_push(stacks_of(p), stack("app", STRS("fb", "main"), STRS("schedule"), 100, NULL));
	int rc;
	char *doc = render(p, "t", &rc);
	assert_int_equal(rc, 2);
	assert_well_formed(doc);
	double wa, wb, wm, wall, wk;
	double pa = frame_width(doc, "fa", &wa), pb = frame_width(doc, "fb", &wb);
	double pm = frame_width(doc, "main", &wm), pall = frame_width(doc, "all", &wall);
	double pk = frame_width(doc, "schedule", &wk);
	assert_true(wa == 300 && wb == 100 && wm == 400 && wall == 400 && wk == 100);
	assert_true(fabs(pall - 1180) < 0.01); /* the drawing width: 1200 less the margins */
	assert_true(fabs(pm - pall) < 0.01);
	assert_true(fabs(pa - 3 * pb) < 0.02);
	assert_true(fabs(pa + pb - pm) < 0.02);
	assert_true(fabs(pk - pb) < 0.01);
	/* hover details: name, kind, weight in a human unit, share */
	assert_non_null(strstr(doc, "<title>fa\nuser frame \xc2\xb7 300 samples \xc2\xb7 75.00%</title>"));
	assert_non_null(strstr(doc, "<title>schedule\nkernel frame \xc2\xb7 100 samples \xc2\xb7 25.00%</title>"));
	assert_non_null(strstr(doc, ">Flame graph: on-CPU samples \xe2\x80\x94 t</text>"));
	/* the interactive parts are there */
	assert_non_null(strstr(doc, "id=\"search\""));
	assert_non_null(strstr(doc, "id=\"reset\""));
	assert_non_null(strstr(doc, "function zoom("));
	assert_non_null(strstr(doc, "function search("));
	free(doc);
	value_free(p);
}

static void test_units_in_titles(void **state)
{
	(void)state;
	struct value *p = probe("ns");
	value_arr_push(stacks_of(p), stack("w", STRS("lock_wait"), STRS("schedule"), 1500000,
					   "blocked-uninterruptible"));
	value_arr_push(stacks_of(p), stack("w", STRS("sleep"), NULL, 500000, NULL));
	int rc;
	char *doc = render(p, NULL, &rc);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, ">Flame graph: off-CPU time</text>"));
	assert_non_null(strstr(doc, "<title>lock_wait\nuser frame \xc2\xb7 1.5 ms \xc2\xb7 75.00%</title>"));
	assert_non_null(strstr(doc, "total 2.0 ms in 2 distinct stacks"));
	assert_non_null(strstr(doc, "<title>[blocked-uninterruptible]\ntag"));
	free(doc);
	value_free(p);

	p = probe("bytes");
	value_arr_push(stacks_of(p), stack("w", STRS("grow"), NULL, 3 * 1024 * 1024, NULL));
	doc = render(p, NULL, &rc);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, ">Flame graph: bytes</text>"));
	assert_non_null(strstr(doc, "3.0 MiB \xc2\xb7 100.00%"));
	free(doc);
	value_free(p);
	assert_string_equal(flamegraph_unit_title("samples"), "on-CPU samples");
	assert_string_equal(flamegraph_unit_title("ns"), "off-CPU time");
}

static void test_no_stacks_still_svg(void **state)
{
	(void)state;
	int rc;
	char *doc = render(NULL, "x", &rc);
	assert_int_equal(rc, -1);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, "no stacks"));
	free(doc);
	struct value *p = probe("samples");
	doc = render(p, "x", &rc);
	assert_int_equal(rc, -1);
	assert_well_formed(doc);
	free(doc);
	value_free(p);
}

/* Frames too narrow to see are left out (and said), not drawn as thousands of slivers. */
static void test_narrow_frames_left_out(void **state)
{
	(void)state;
	struct value *p = probe("samples");
	value_arr_push(stacks_of(p), stack("a", STRS("big"), NULL, 1000000, NULL));
	value_arr_push(stacks_of(p), stack("a", STRS("tiny", "mid"), NULL, 1, NULL));
	int rc;
	char *doc = render(p, NULL, &rc);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, "<title>big\n"));
	assert_null(strstr(doc, "<title>tiny\n"));
	assert_non_null(strstr(doc, "2 frames narrower than 0.1 px left out"));
	free(doc);
	value_free(p);
}

/* ---- differential ------------------------------------------------------------------------- */

static char *render_diff(const struct value *before, const struct value *after, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	*rc = flamegraph_write_diff(before, after, "high-cpu, probe profile: a \xe2\x86\x92 b", f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The fill and data-delta of the frame whose hover title starts with "name\n". */
static void frame_fill(const char *doc, const char *name, char *fill, size_t len, double *delta)
{
	char key[256];
	snprintf(key, sizeof(key), "<title>%s\n", name);
	const char *t = strstr(doc, key);
	if (!t)
		fail_msg("no frame %s", name);
	const char *g = t;
	while (g > doc && strncmp(g, "<g class=", 9) != 0)
		g--;
	const char *d = strstr(g, "data-delta=\"");
	assert_true(d && d < t);
	*delta = strtod(d + 12, NULL);
	const char *f = strstr(t, "fill=\"");
	assert_non_null(f);
	f += 6;
	size_t n = strcspn(f, "\"");
	assert_true(n < len);
	memcpy(fill, f, n);
	fill[n] = '\0';
}

static void test_diff_colours(void **state)
{
	(void)state;
	/* before: 80% in slow_path, 20% in fast_path, 0 in newcomer; a gone() frame of its own */
	struct value *b = probe("samples"), *a = probe("samples");
	value_arr_push(stacks_of(b), stack("app", STRS("slow_path", "main"), NULL, 760, NULL));
	value_arr_push(stacks_of(b), stack("app", STRS("fast_path", "main"), NULL, 200, NULL));
	value_arr_push(stacks_of(b), stack("app", STRS("gone", "main"), NULL, 40, NULL));
	/* after (the fix): 10% in slow_path, 60% in fast_path, 30% in newcomer<&> */
	value_arr_push(stacks_of(a), stack("app", STRS("slow_path", "main"), NULL, 50, NULL));
	value_arr_push(stacks_of(a), stack("app", STRS("fast_path", "main"), NULL, 300, NULL));
	value_arr_push(stacks_of(a), stack("app", STRS("newcomer<&>", "main"), NULL, 150, NULL));
	int rc;
	char *doc = render_diff(b, a, &rc);
	assert_int_equal(rc, 3);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, ">Differential flame graph: on-CPU samples \xe2\x80\x94 "
				    "high-cpu, probe profile: a \xe2\x86\x92 b</text>"));
	char fill[64];
	double delta;
	int r, g, bl, r2, g2, bl2;
	/* fast_path: 20% -> 60% (+40 of a full 66): red; 40/66 of the way from grey, to the unit */
	frame_fill(doc, "fast_path", fill, sizeof(fill), &delta);
	assert_true(fabs(delta - 40) < 1e-6);
	assert_string_equal(fill, "rgb(243,113,113)");
	/* slow_path: 76% -> 10% (-66): the largest move of all, full blue */
	frame_fill(doc, "slow_path", fill, sizeof(fill), &delta);
	assert_true(fabs(delta + 66) < 1e-6);
	assert_string_equal(fill, "rgb(40,40,255)");
	/* newcomer: 0 -> 30% (+30): red, paler than fast_path */
	frame_fill(doc, "newcomer&lt;&amp;&gt;", fill, sizeof(fill), &delta);
	assert_true(fabs(delta - 30) < 1e-6);
	assert_int_equal(sscanf(fill, "rgb(%d,%d,%d)", &r, &g, &bl), 3);
	assert_int_equal(sscanf("rgb(243,113,113)", "rgb(%d,%d,%d)", &r2, &g2, &bl2), 3);
	assert_true(r > g && g == bl && r < r2 && g > g2 && g < 225);
	/* main and the thread hold 100% in both: unchanged grey */
	frame_fill(doc, "main", fill, sizeof(fill), &delta);
	assert_true(fabs(delta) < 1e-6);
	assert_string_equal(fill, "rgb(225,225,225)");
	/* widths are AFTER's weights */
	double w, pall = frame_width(doc, "all", &w);
	assert_true(w == 500);
	double pf = frame_width(doc, "fast_path", &w);
	assert_true(w == 300 && fabs(pf - 0.6 * pall) < 0.02);
	/* hover: before, after, the move */
	assert_non_null(strstr(doc, "<title>fast_path\nuser frame \xc2\xb7 before 200 samples (20.00%) "
				    "\xc2\xb7 after 300 samples (60.00%) \xc2\xb7 +40.00 points</title>"));
	/* gone() has no width in AFTER: not drawn, counted */
	assert_null(strstr(doc, "<title>gone\n"));
	assert_non_null(strstr(doc, "1 frames of before only not drawn"));
	assert_non_null(strstr(doc, "full at 66.0 points"));
	assert_non_null(strstr(doc, "share grew"));
	free(doc);

	/* small moves stay pale: full colour at no less than 1 point */
	value_free(b);
	value_free(a);
	b = probe("ns");
	a = probe("ns");
	value_arr_push(stacks_of(b), stack("w", STRS("x"), NULL, 9990, NULL));
	value_arr_push(stacks_of(b), stack("w", STRS("y"), NULL, 10, NULL));
	value_arr_push(stacks_of(a), stack("w", STRS("x"), NULL, 9995, NULL));
	value_arr_push(stacks_of(a), stack("w", STRS("y"), NULL, 5, NULL));
	doc = render_diff(b, a, &rc);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, ">Differential flame graph: off-CPU time"));
	frame_fill(doc, "x", fill, sizeof(fill), &delta);
	assert_true(fabs(delta - 0.05) < 1e-6);
	assert_int_equal(sscanf(fill, "rgb(%d,%d,%d)", &r, &g, &bl), 3);
	assert_true(r > 225 && r < 235 && g > 210);
	free(doc);

	/* AFTER without stacks: still a document, that says so */
	value_free(a);
	a = probe("ns");
	doc = render_diff(b, a, &rc);
	assert_int_equal(rc, -1);
	assert_well_formed(doc);
	assert_non_null(strstr(doc, "no stacks with a weight in the AFTER report"));
	free(doc);
	value_free(a);
	value_free(b);
}

/* The two recorded reports of tests/fixtures/reports/high-cpu: the CPU burner, then its checksum
 * made 64 times cheaper (record.sh). compute_checksum's share shrank: blue; parse_headers' grew:
 * red; what both runs share (main, the thread) stayed grey. */
static void test_diff_recorded_reports(void **state)
{
	(void)state;
	char path[2][PATH_MAX];
	const char *root = getenv("DIAG_SRCDIR");
	snprintf(path[0], sizeof(path[0]), "%s/tests/fixtures/reports/high-cpu/burner.json", root ? root : ".");
	snprintf(path[1], sizeof(path[1]), "%s/tests/fixtures/reports/high-cpu/burner-fixed.json",
		 root ? root : ".");
	struct diag_err err = { 0 };
	struct value *b = report_read(path[0], &err), *a = b ? report_read(path[1], &err) : NULL;
	if (!a)
		fail_msg("%s", err.msg);
	const struct value *pb = value_get(value_get(b, "results"), "profile");
	const struct value *pa = value_get(value_get(a, "results"), "profile");
	assert_non_null(pb);
	assert_non_null(pa);
	int rc;
	char *doc = render_diff(pb, pa, &rc);
	assert_true(rc > 0);
	assert_well_formed(doc);
	char fill[64];
	double delta;
	int r, g, bl;
	frame_fill(doc, "compute_checksum", fill, sizeof(fill), &delta);
	assert_int_equal(sscanf(fill, "rgb(%d,%d,%d)", &r, &g, &bl), 3);
	if (!(delta < -20 && bl > r + 60 && r == g))
		fail_msg("compute_checksum: %+.1f points, %s: not blue", delta, fill);
	frame_fill(doc, "parse_headers", fill, sizeof(fill), &delta);
	assert_int_equal(sscanf(fill, "rgb(%d,%d,%d)", &r, &g, &bl), 3);
	if (!(delta > 20 && r > bl + 60 && g == bl))
		fail_msg("parse_headers: %+.1f points, %s: not red", delta, fill);
	frame_fill(doc, "main", fill, sizeof(fill), &delta);
	if (!(fabs(delta) < 0.5))
		fail_msg("main moved %+.2f points", delta);
	free(doc);
	value_free(a);
	value_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_names_escaped),
		cmocka_unit_test(test_widths_proportional),
		cmocka_unit_test(test_units_in_titles),
		cmocka_unit_test(test_no_stacks_still_svg),
		cmocka_unit_test(test_narrow_frames_left_out),
		cmocka_unit_test(test_diff_colours),
		cmocka_unit_test(test_diff_recorded_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
