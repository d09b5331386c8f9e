/* test_merge.c — merge_reports on four hosts' reports built here: verdicts grouped per (recipe,
 * id) with their host count and hosts, worst first then most hosts, each group's worst severity
 * and its title; each host's worst and exit code; a report without a host name known by its file;
 * outliers — a host whose run-queue p99 (from log2 buckets) or a number at the top of a probe's
 * results is ten times the fleet's median, none below that or with fewer than three hosts; and
 * the text without the control bytes a host name may carry; one host's two reports told apart;
 * ruled_out ids counted once per host, with and without ruled_out in the reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json_parse.h"
#include "offline/merge.h"
#include "common/util.h"

static struct value *report(const char *host, const char *verdicts, unsigned slow_count, double cpu)
{
	char text[2048];
	snprintf(text, sizeof(text),
		 "{\"tool\":\"diagnose\",%s\"recipe\":{\"name\":\"latency\"},\"verdicts\":[%s],"
		 "\"results\":{\"runq\":{\"unit\":\"us\",\"count\":100,\"buckets\":["
		 "{\"lo\":8,\"hi\":15,\"count\":%u},{\"lo\":16384,\"hi\":32767,\"count\":%u}]},"
		 "\"context\":{\"cpu_pct\":%g,\"comm\":\"w\"}}}",
		 host, verdicts, 100 - slow_count, slow_count, cpu);
	struct diag_err err = { 0 };
	struct value *v = json_parse(text, strlen(text), NULL, &err);
	if (!v)
		fail_msg("%s", err.msg);
	return v;
}

#define LOCK_W "{\"id\":\"lock-contention\",\"severity\":\"warning\",\"title\":\"lock in f\"}"
#define LOCK_C "{\"id\":\"lock-contention\",\"severity\":\"critical\",\"title\":\"lock in f, worse\"}"
#define STARVED "{\"id\":\"cpu-starved\",\"severity\":\"warning\",\"title\":\"starved\"}"
#define OK "{\"id\":\"ok\",\"severity\":\"ok\",\"title\":\"nothing\"}"

static void test_merge(void **state)
{
	(void)state;
	struct value *r[4] = {
		report("\"host\":{\"name\":\"web1\"},", LOCK_W, 0, 50),
		report("\"host\":{\"name\":\"web2\"},", LOCK_W, 0, 55),
		report("\"host\":{\"name\":\"web3\\u001b[2J\"},", LOCK_C "," STARVED, 5, 60), /* p99 in the slow slot */
		report("", OK, 0, 1000), /* no host name; cpu_pct ~18x the median */
	};
	const char *names[4] = { "a.json", "b.json", "c.json", "d.json" };
	struct value *m = merge_reports((const struct value *const *)r, names, 4, 10.0);

	const struct value *g = value_get(m, "verdicts");
	assert_int_equal(g->arr.len, 3);
	const struct value *first = g->arr.items[0];
	assert_string_equal(value_get_str(first, "id"), "lock-contention");
	assert_string_equal(value_get_str(first, "worst"), "critical");
	assert_string_equal(value_get_str(first, "title"), "lock in f, worse");
	assert_true(value_get_num(first, "count", 0) == 3);
	assert_string_equal(value_get(first, "hosts")->arr.items[0]->s, "web1");
	assert_string_equal(value_get_str(g->arr.items[1], "id"), "cpu-starved");
	assert_string_equal(value_get_str(g->arr.items[2], "id"), "ok");

	const struct value *h = value_get(m, "hosts");
	assert_string_equal(value_get_str(h->arr.items[3], "host"), "d.json");
	assert_true(value_get_num(h->arr.items[2], "exit", 0) == 5);
	assert_true(value_get_num(h->arr.items[0], "exit", 0) == 4);
	assert_true(value_get_num(h->arr.items[3], "exit", 0) == 0);

	const struct value *o = value_get(m, "outliers");
	int p99 = 0, cpu = 0;
	for (size_t i = 0; i < o->arr.len; i++) {
		const struct value *x = o->arr.items[i];
		if (!strcmp(value_get_str(x, "figure"), "p99")) {
			p99++;
			assert_non_null(strstr(value_get_str(x, "host"), "web3"));
			assert_true(value_get_num(x, "ratio", 0) >= 10);
		}
		if (!strcmp(value_get_str(x, "figure"), "cpu_pct")) {
			cpu++;
			assert_string_equal(value_get_str(x, "host"), "d.json");
		}
		assert_string_not_equal(value_get_str(x, "figure"), "count"); /* 100 everywhere */
	}
	assert_int_equal(p99, 1);
	assert_int_equal(cpu, 1);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	merge_write_text(m, out);
	fclose(out);
	assert_non_null(strstr(text, "CRITICAL    3/4  latency/lock-contention: lock in f, worse"));
	assert_non_null(strstr(text, "web3\\x1b[2J"));
	assert_null(strchr(text, 0x1b));
	free(text);
	value_free(m);

	/* one host twice (two runs, or a test fleet on one machine): told apart by file */
	const struct value *twice[2] = { r[0], r[0] };
	m = merge_reports(twice, names, 2, 10.0);
	assert_string_equal(value_get_str(value_get(m, "hosts")->arr.items[1], "host"), "web1 (b.json)");
	assert_true(value_get_num(value_get(m, "verdicts")->arr.items[0], "count", 0) == 2);
	value_free(m);

	/* two hosts: no median to stand out from */
	m = merge_reports((const struct value *const *)r + 2, names + 2, 2, 10.0);
	assert_int_equal(value_get(m, "outliers")->arr.len, 0);
	value_free(m);
	for (int i = 0; i < 4; i++)
		value_free(r[i]);
}

/* merge_read's limits hold for all the files together: each file fits alone, the sum does not
 * (in values, then in bytes); what was read is not kept; a file that is not a report is named. */
static struct value *parse(const char *text)
{
	struct diag_err err = { 0 };
	struct value *v = json_parse(text, strlen(text), NULL, &err);
	if (!v)
		fail_msg("%s", err.msg);
	return v;
}

#define RO_REPORT(host, items) \
	"{\"tool\":\"diagnose\",\"host\":{\"name\":\"" host "\"},\"recipe\":{\"name\":\"latency\"}," \
	"\"verdicts\":[],\"results\":{},\"ruled_out\":[" items "]}"
#define RO(id) "{\"id\":\"" id "\",\"text\":\"checked\"}"

/* Per (recipe, id), the hosts that ruled it out, each once, most hosts first; a report recorded
 * before ruled_out existed counts for none. */
static void test_merge_ruled_out(void **state)
{
	(void)state;
	struct value *r[4] = {
		parse(RO_REPORT("web1", RO("cpu-starvation") "," RO("disk-io"))),
		parse(RO_REPORT("web2", RO("disk-io") "," RO("disk-io"))),
		parse(RO_REPORT("web3\\u001b[2J", RO("disk-io"))),
		report("\"host\":{\"name\":\"old\"},", OK, 0, 50), /* no ruled_out key */
	};
	const char *names[4] = { "a.json", "b.json", "c.json", "d.json" };
	struct value *m = merge_reports((const struct value *const *)r, names, 4, 10.0);
	const struct value *ro = value_get(m, "ruled_out");
	assert_int_equal(ro->arr.len, 2);
	assert_string_equal(value_get_str(ro->arr.items[0], "id"), "disk-io");
	assert_string_equal(value_get_str(ro->arr.items[0], "recipe"), "latency");
	assert_true(value_get_num(ro->arr.items[0], "count", 0) == 3);
	assert_int_equal(value_get(ro->arr.items[0], "hosts")->arr.len, 3);
	assert_string_equal(value_get_str(ro->arr.items[1], "id"), "cpu-starvation");
	assert_true(value_get_num(ro->arr.items[1], "count", 0) == 1);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	merge_write_text(m, out);
	fclose(out);
	assert_non_null(strstr(text, "\nChecked and ruled out across hosts (most hosts first)\n"
				     "    3/4  latency/disk-io on web1, web2, web3\\x1b[2J\n"
				     "    1/4  latency/cpu-starvation on web1\n"));
	assert_null(strchr(text, 0x1b));
	free(text);
	value_free(m);

	/* only old reports: an empty array, no heading */
	m = merge_reports((const struct value *const *)&r[3], &names[3], 1, 10.0);
	assert_int_equal(value_get(m, "ruled_out")->arr.len, 0);
	text = NULL;
	out = open_memstream(&text, &len);
	merge_write_text(m, out);
	fclose(out);
	assert_null(strstr(text, "ruled out"));
	free(text);
	value_free(m);
	for (size_t i = 0; i < 4; i++)
		value_free(r[i]);
}

static void test_merge_total_limits(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_merge.XXXXXX", paths[3][64];
	assert_non_null(mkdtemp(dir));
	size_t bytes = 0;
	for (int i = 0; i < 3; i++) { /* 8 + 100 values, some 300 bytes each */
		snprintf(paths[i], sizeof(paths[i]), "%s/h%d.json", dir, i);
		FILE *f = fopen(paths[i], "w");
		assert_non_null(f);
		fprintf(f, "{\"tool\":\"diagnose\",\"recipe\":{\"name\":\"x\"},\"verdicts\":[],"
			   "\"results\":{\"p\":{\"v\":[");
		for (int k = 0; k < 100; k++)
			fprintf(f, "%s%d", k ? "," : "", k);
		fputs("]}}}", f);
		bytes = (size_t)ftell(f);
		assert_int_equal(fclose(f), 0);
	}
	const char *const p[3] = { paths[0], paths[1], paths[2] };
	struct value *reports[3] = { 0 };
	struct diag_err err = { 0 };
	/* 108 values each: 324 fit, 323 do not, and the third file is the one named */
	assert_int_equal(merge_read(p, 3, 1u << 20, 324, reports, &err), 0);
	for (int i = 0; i < 3; i++) {
		assert_non_null(reports[i]);
		value_free(reports[i]);
		reports[i] = NULL;
	}
	assert_int_equal(merge_read(p, 3, 1u << 20, 323, reports, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	char *want = xasprintf("merge: the reports together hold more than 323 values (merge's limit for "
			       "all its inputs, not each file); reached in %s", paths[2]);
	assert_string_equal(err.msg, want);
	free(want);
	for (int i = 0; i < 3; i++)
		assert_null(reports[i]); /* nothing kept, nothing leaked */
	/* bytes: two files and one byte short of the third */
	assert_int_equal(merge_read(p, 3, 3 * bytes, 1000, reports, &err), 0);
	for (int i = 0; i < 3; i++)
		value_free(reports[i]);
	memset(reports, 0, sizeof(reports));
	assert_int_equal(merge_read(p, 3, 3 * bytes - 1, 1000, reports, &err), -1);
	want = xasprintf("merge: the reports together are over %zu bytes of JSON (merge's limit for all "
			 "its inputs, not each file); reached in %s", 3 * bytes - 1, paths[2]);
	assert_string_equal(err.msg, want);
	free(want);
	/* one file's own problem is still its own message */
	FILE *f = fopen(paths[1], "w");
	fputs("{\"tool\":\"other\"}", f);
	fclose(f);
	assert_int_equal(merge_read(p, 3, 1u << 20, 1000, reports, &err), -1);
	assert_non_null(strstr(err.msg, "h1.json: not a diagnose JSON report"));
	for (int i = 0; i < 3; i++)
		unlink(paths[i]);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_ruled_out),
		cmocka_unit_test(test_merge_total_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
