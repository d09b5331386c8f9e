/* test_diff.c — diff_reports on two report trees built here: verdicts new, gone, worse, better and
 * the same; leaf functions whose share of a probe's weight moved (a stack without user frames
 * counted by its kernel leaf; small moves left out; largest move first); percentiles of log2
 * histograms before and after; probes in one report only are left out; and the text names a
 * hostile function name without its control bytes; ruled_out items new and gone by id, with and
 * without ruled_out in the reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offline/diff.h"
#include "common/json_parse.h"
#include "common/util.h"

static struct value *parse(const char *text)
{
	struct diag_err err = { 0 };
	struct value *v = json_parse(text, strlen(text), NULL, &err);
	if (!v)
		fail_msg("%s", err.msg);
	return v;
}

static const char *BEFORE =
	"{\"tool\":\"diagnose\",\"recipe\":{\"name\":\"high-cpu\"},"
	"\"verdicts\":[{\"id\":\"hot\",\"severity\":\"critical\",\"title\":\"hot in f\"},"
	"{\"id\":\"gc\",\"severity\":\"warning\",\"title\":\"gc\"},"
	"{\"id\":\"same\",\"severity\":\"info\",\"title\":\"s\"},"
	"{\"id\":\"up\",\"severity\":\"info\",\"title\":\"u\"}],"
	"\"results\":{\"p\":{\"stack_unit\":\"samples\",\"stacks\":["
	"{\"weight\":80,\"user\":[\"f\",\"main\"],\"kernel\":[]},"
	"{\"weight\":15,\"user\":[\"g\",\"main\"],\"kernel\":[]},"
	"{\"weight\":5,\"user\":[],\"kernel\":[\"do_sys\"]}]},"
	"\"h\":{\"unit\":\"us\",\"buckets\":[{\"lo\":8,\"hi\":15,\"count\":99},{\"lo\":1024,\"hi\":2047,\"count\":1}]},"
	"\"only_before\":{\"stacks\":[{\"weight\":1,\"user\":[\"x\"]}]}}}";

static const char *AFTER =
	"{\"tool\":\"diagnose\",\"recipe\":{\"name\":\"high-cpu\"},"
	"\"verdicts\":[{\"id\":\"new\",\"severity\":\"warning\",\"title\":\"new one\"},"
	"{\"id\":\"hot\",\"severity\":\"warning\",\"title\":\"hot in f\"},"
	"{\"id\":\"same\",\"severity\":\"info\",\"title\":\"s\"},"
	"{\"id\":\"up\",\"severity\":\"critical\",\"title\":\"u\"}],"
	"\"results\":{\"p\":{\"stack_unit\":\"samples\",\"stacks\":["
	"{\"weight\":20,\"user\":[\"f\",\"main\"],\"kernel\":[]},"
	"{\"weight\":60,\"user\":[\"g\",\"main\"],\"kernel\":[]},"
	"{\"weight\":19.5,\"user\":[\"h\\u001b[31m\"],\"kernel\":[]},"
	"{\"weight\":0.5,\"user\":[],\"kernel\":[\"do_sys\"]}]},"
	"\"h\":{\"unit\":\"us\",\"buckets\":[{\"lo\":8,\"hi\":15,\"count\":50},{\"lo\":1024,\"hi\":2047,\"count\":50}]}}}";

static const struct value *by(const struct value *arr, const char *key, const char *val)
{
	for (size_t i = 0; i < arr->arr.len; i++)
		if (!strcmp(value_get_str(arr->arr.items[i], key), val))
			return arr->arr.items[i];
	fail_msg("no %s = %s", key, val);
	return NULL;
}

static void test_diff(void **state)
{
	(void)state;
	struct value *b = parse(BEFORE), *a = parse(AFTER);
	struct value *d = diff_reports(b, a, 1.0, 10);

	const struct value *v = value_get(d, "verdicts");
	assert_int_equal(v->arr.len, 5);
	assert_string_equal(value_get_str(by(v, "id", "new"), "change"), "new");
	assert_string_equal(value_get_str(by(v, "id", "gc"), "change"), "gone");
	assert_string_equal(value_get_str(by(v, "id", "hot"), "change"), "better");
	assert_string_equal(value_get_str(by(v, "id", "up"), "change"), "worse");
	assert_string_equal(value_get_str(by(v, "id", "same"), "change"), "same");

	const struct value *f = value_get(value_get(d, "functions"), "p");
	assert_non_null(f);
	assert_null(value_get(value_get(d, "functions"), "only_before"));
	/* f 80% -> 20% (-60), g 15 -> 60 (+45), h 0 -> 19.5, do_sys 5 -> 0.5 (-4.5) */
	assert_int_equal(f->arr.len, 4);
	assert_string_equal(value_get_str(f->arr.items[0], "name"), "f");
	assert_true(value_get_num(f->arr.items[0], "delta_pct", 0) == -60);
	assert_string_equal(value_get_str(f->arr.items[1], "name"), "g");
	assert_true(value_get_num(by(f, "name", "do_sys"), "after_pct", 0) == 0.5);
	struct value *d2 = diff_reports(b, a, 10.0, 10); /* do_sys's 4.5-point move left out */
	assert_int_equal(value_get(value_get(d2, "functions"), "p")->arr.len, 3);
	value_free(d2);

	const struct value *h = value_get(value_get(d, "histograms"), "h");
	assert_non_null(h);
	assert_true(value_get_num(value_get(h, "before"), "p50", 0) < 16);
	assert_true(value_get_num(value_get(h, "after"), "p99", 0) >= 1024);
	assert_true(value_get_num(value_get(h, "after"), "p50", 0) <= 15);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	diff_write_text(d, out);
	fclose(out);
	assert_non_null(strstr(text, "worse   info      → critical  up"));
	assert_non_null(strstr(text, "h\\x1b[31m"));
	assert_null(strchr(text, 0x1b));
	free(text);
	value_free(d);
	value_free(a);
	value_free(b);
}

/* ruled_out compared by id: new (only after), gone (only before), the same id in both not
 * listed whatever its text; a report recorded before ruled_out existed has none. */
static const char *RO_BEFORE =
	"{\"tool\":\"diagnose\",\"recipe\":{\"name\":\"latency\"},\"verdicts\":[],\"results\":{},"
	"\"ruled_out\":[{\"id\":\"cpu-starvation\",\"text\":\"run queue p99 40 us\"},"
	"{\"id\":\"disk-io\",\"text\":\"no I/O wait\"},{\"id\":\"disk-io\",\"text\":\"again\"}]}";
static const char *RO_AFTER =
	"{\"tool\":\"diagnose\",\"recipe\":{\"name\":\"latency\"},\"verdicts\":[],\"results\":{},"
	"\"ruled_out\":[{\"id\":\"cpu-starvation\",\"text\":\"run queue p99 60 us\"},"
	"{\"id\":\"lock-contention\",\"text\":\"no futex wait \\u001b[2Jover 1 ms\"}]}";
static const char *RO_NONE =
	"{\"tool\":\"diagnose\",\"recipe\":{\"name\":\"latency\"},\"verdicts\":[],\"results\":{}}";

static void test_diff_ruled_out(void **state)
{
	(void)state;
	struct value *b = parse(RO_BEFORE), *a = parse(RO_AFTER), *none = parse(RO_NONE);
	struct value *d = diff_reports(b, a, 1.0, 10);
	const struct value *ro = value_get(d, "ruled_out");
	assert_int_equal(ro->arr.len, 2);
	assert_string_equal(value_get_str(ro->arr.items[0], "id"), "lock-contention");
	assert_string_equal(value_get_str(ro->arr.items[0], "change"), "new");
	assert_string_equal(value_get_str(ro->arr.items[1], "id"), "disk-io");
	assert_string_equal(value_get_str(ro->arr.items[1], "change"), "gone");
	assert_string_equal(value_get_str(ro->arr.items[1], "text"), "no I/O wait");

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	diff_write_text(d, out);
	fclose(out);
	assert_non_null(strstr(text, "\nChecked and ruled out (new: only after, gone: only before)\n"
				     "  new     lock-contention: no futex wait \\x1b[2Jover 1 ms\n"
				     "  gone    disk-io: no I/O wait\n"));
	assert_null(strchr(text, 0x1b));
	free(text);
	value_free(d);

	/* against a report without ruled_out: everything new, or everything gone */
	d = diff_reports(none, a, 1.0, 10);
	ro = value_get(d, "ruled_out");
	assert_int_equal(ro->arr.len, 2);
	assert_string_equal(value_get_str(ro->arr.items[1], "change"), "new");
	value_free(d);
	d = diff_reports(b, none, 1.0, 10);
	assert_int_equal(value_get(d, "ruled_out")->arr.len, 2);
	value_free(d);
	/* neither has any: an empty array, and no heading */
	d = diff_reports(none, none, 1.0, 10);
	assert_int_equal(value_get(d, "ruled_out")->arr.len, 0);
	text = NULL;
	out = open_memstream(&text, &len);
	diff_write_text(d, out);
	fclose(out);
	assert_null(strstr(text, "ruled out"));
	free(text);
	value_free(d);
	value_free(none);
	value_free(a);
	value_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_diff_ruled_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
