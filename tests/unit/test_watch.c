/* test_watch.c — `diagnose watch`'s pieces that need no kernel: its intervals and sizes and what
 * stopping does with a run that does not end (watch.c), the Prometheus exposition's escaping and
 * names (prom.c: a label value cannot forge a line; what a target controls comes out valid UTF-8
 * without controls), and the history ring (ring.c): limits by count and bytes, the oldest dropped
 * first and never the newest, the index read back by the next watch, a run cut short removed, and
 * a state directory others could write to, or a symbolic link, refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watch/prom.h"
#include "prom_check.h"
#include "watch/ring.h"
#include "watch/watch.h"

static void test_intervals(void **state)
{
	(void)state;
	assert_true(watch_parse_interval("90") == 90);
	assert_true(watch_parse_interval("90s") == 90);
	assert_true(watch_parse_interval("5m") == 300);
	assert_true(watch_parse_interval("1h") == 3600);
	assert_true(watch_parse_interval("2.5s") == 2.5);
	assert_true(watch_parse_interval("0") < 0);
	assert_true(watch_parse_interval("-5") < 0);
	assert_true(watch_parse_interval("25h") < 0);
	assert_true(watch_parse_interval("5x") < 0);
	assert_true(watch_parse_interval("") < 0);
	assert_true(watch_parse_interval("s") < 0);
	assert_true(watch_parse_interval("0x10") < 0);
	uint64_t b;
	assert_true(watch_parse_bytes("1000", &b) && b == 1000);
	assert_true(watch_parse_bytes("64K", &b) && b == 65536);
	assert_true(watch_parse_bytes("256M", &b) && b == (uint64_t)256 << 20);
	assert_true(watch_parse_bytes("2G", &b) && b == (uint64_t)2 << 30);
	assert_false(watch_parse_bytes("0", &b));
	assert_false(watch_parse_bytes("K", &b));
	assert_false(watch_parse_bytes("12T", &b));
	assert_false(watch_parse_bytes("-1M", &b));
	assert_false(watch_parse_bytes("99999999999999999999", &b));
}

/* Stopping with a run that does not end: SIGTERM at once, SIGKILL after the grace period, left
 * behind (watch ends) when even SIGKILL has not ended it some seconds later. */
static void test_stop_steps(void **state)
{
	(void)state;
	const uint64_t s = 1000000000ull, t0 = 1000 * s;
	assert_int_equal(watch_stop_step(0, 0, t0), WATCH_STOP_TERM);
	assert_int_equal(watch_stop_step(t0, 0, t0), WATCH_STOP_WAIT);
	assert_int_equal(watch_stop_step(t0, 0, t0 + WATCH_STOP_GRACE_S * s - 1), WATCH_STOP_WAIT);
	assert_int_equal(watch_stop_step(t0, 0, t0 + WATCH_STOP_GRACE_S * s), WATCH_STOP_KILL);
	uint64_t k = t0 + WATCH_STOP_GRACE_S * s;
	assert_int_equal(watch_stop_step(t0, k, k + WATCH_KILL_WAIT_S * s - 1), WATCH_STOP_WAIT);
	assert_int_equal(watch_stop_step(t0, k, k + WATCH_KILL_WAIT_S * s), WATCH_STOP_LEAVE);
	assert_true(WATCH_STOP_GRACE_S >= 10 && WATCH_KILL_WAIT_S >= 2); /* a run's report needs time */
}

static char *exposition(void (*fn)(FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fn(f);
	fclose(f);
	return buf;
}

static void write_forged(FILE *f)
{
	/* a verdict id or target a recipe or target controls, trying to start a line of its own */
	const char *l[] = { "verdict", "x\"} 1\ndiagnose_fake 1", "target", "a\\b", "bad-label", "v" };
	prom_family(f, "diagnose_verdict", "gauge", "help with \\ and\nnewline");
	prom_sample(f, "diagnose_verdict", l, 3, 1);
	prom_sample(f, "diagnose_ratio", NULL, 0, 0.25);
	prom_sample(f, "diagnose_big", NULL, 0, 1e20);
	prom_sample(f, "diagnose_nan", NULL, 0, 0.0 / 0.0);
	prom_sample(f, "diagnose_inf", NULL, 0, -1.0 / 0.0);
}

static void test_prom(void **state)
{
	(void)state;
	char *t = exposition(write_forged);
	/* the newline is made "\x0a" (the one rule: utf8_safe_char), whose backslash is escaped */
	assert_string_equal(t, "# HELP diagnose_verdict help with \\\\ and\\\\x0anewline\n"
			       "# TYPE diagnose_verdict gauge\n"
			       "diagnose_verdict{verdict=\"x\\\"} 1\\\\x0adiagnose_fake 1\",target=\"a\\\\b\"} 1\n"
			       "diagnose_ratio 0.25\n"
			       "diagnose_big 1e+20\n"
			       "diagnose_nan NaN\n"
			       "diagnose_inf -Inf\n");
	size_t line;
	const char *why = prom_check(t, strlen(t), &line);
	if (why)
		fail_msg("line %zu: %s:\n%s", line, why, t);
	free(t);
	assert_true(prom_metric_name_ok("diagnose_watch_runs_total"));
	assert_true(prom_metric_name_ok("a:b_c"));
	assert_false(prom_metric_name_ok("9lives"));
	assert_false(prom_metric_name_ok("high-cpu"));
	assert_false(prom_metric_name_ok(""));
}

/* A target's comm (prctl PR_SET_NAME takes any bytes): quotes and backslashes, bytes that are not
 * UTF-8, a carriage return, a terminal's escape sequence, C1's CSI, a right-to-left override. */
#define HOSTILE_COMM "x\"}\xff\xfe\r{a=\"\\"
#define HOSTILE_MORE "\x1b[31m\xc2\x9b\xe2\x80\xae\xc3\xa9\xe6\x97\xa5"

static void write_hostile(FILE *f)
{
	const char *l[] = { "recipe", "triage", "target", "process:" HOSTILE_COMM, "verdict", HOSTILE_MORE };
	prom_family(f, "diagnose_cpu_usage_ratio", "gauge", "help " HOSTILE_COMM HOSTILE_MORE "\n");
	prom_sample(f, "diagnose_cpu_usage_ratio", l, 3, 0.5);
}

/* Label values and help text are valid UTF-8 without controls, whatever a target or a recipe
 * gives: each byte that is not UTF-8 or is a control "\xNN" (as the text report shows it), that
 * backslash escaped for Prometheus; what is UTF-8 and visible (é, 日) kept. Prometheus refuses a
 * whole scrape over one invalid UTF-8 label value. */
static void test_prom_utf8(void **state)
{
	(void)state;
	char *t = exposition(write_hostile);
	size_t line;
	const char *why = prom_check(t, strlen(t), &line);
	if (why)
		fail_msg("line %zu: %s:\n%s", line, why, t);
	assert_string_equal(t, "# HELP diagnose_cpu_usage_ratio help x\"}\\\\xff\\\\xfe\\\\x0d{a=\"\\\\"
			       "\\\\x1b[31m\\\\xc2\\\\x9b\\\\xe2\\\\x80\\\\xae\xc3\xa9\xe6\x97\xa5\\\\x0a\n"
			       "# TYPE diagnose_cpu_usage_ratio gauge\n"
			       "diagnose_cpu_usage_ratio{recipe=\"triage\",target=\"process:x\\\"}"
			       "\\\\xff\\\\xfe\\\\x0d{a=\\\"\\\\\",verdict=\"\\\\x1b[31m\\\\xc2\\\\x9b"
			       "\\\\xe2\\\\x80\\\\xae\xc3\xa9\xe6\x97\xa5\"} 0.5\n");
	free(t);
}

/* A run with n bytes in one file, committed with its verdict. */
static uint64_t add_run(struct ring *r, const char *recipe, size_t n)
{
	struct ring_entry e;
	struct diag_err err;
	int fd = ring_begin(r, recipe, &e, &err);
	assert_true(fd >= 0);
	int f = openat(fd, "report.json", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(f >= 0);
	char *buf = calloc(1, n);
	assert_int_equal(write(f, buf, n), (ssize_t)n);
	free(buf);
	close(f);
	f = openat(fd, "stderr.txt", O_WRONLY | O_CREAT | O_EXCL, 0600); /* empty: removed */
	close(f);
	close(fd);
	e.exit_code = 4;
	snprintf(e.worst_severity, sizeof(e.worst_severity), "warning");
	snprintf(e.worst_id, sizeof(e.worst_id), "cpu-bound");
	assert_int_equal(ring_commit(r, &e, &err), 0);
	return e.seq;
}

static void test_ring(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_watch.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *sd = NULL;
	assert_true(asprintf(&sd, "%s/state", dir) > 0);
	struct ring r;
	struct diag_err err;
	assert_int_equal(ring_open(&r, sd, 3, 0, &err), 0);
	for (int i = 0; i < 5; i++)
		add_run(&r, i == 2 ? "high/cpu" : "triage", 100);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.entries[0].seq, 3);
	assert_string_equal(r.entries[0].dir, "runs/000003-high_cpu"); /* its name, in a file name */
	assert_int_equal(r.entries[0].bytes, 100);                    /* the empty file went */
	struct stat st;
	char *p = NULL;
	assert_true(asprintf(&p, "%s/runs/000002-triage", sd) > 0);
	assert_int_not_equal(stat(p, &st), 0); /* dropped with its files */
	free(p);
	/* a run cut short: its directory, never indexed */
	struct ring_entry cut;
	int fd = ring_begin(&r, "triage", &cut, &err);
	assert_true(fd >= 0);
	close(fd);
	ring_close(&r);

	/* the next watch: the index read back, the cut run removed, numbering goes on */
	assert_int_equal(ring_open(&r, sd, 3, 250, &err), 0);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.entries[2].seq, 5);
	assert_string_equal(r.entries[2].worst_id, "cpu-bound");
	assert_true(asprintf(&p, "%s/%s", sd, cut.dir) > 0);
	assert_int_not_equal(stat(p, &st), 0);
	free(p);
	assert_true(r.next_seq > cut.seq);
	/* bytes: 250 hold two runs of 100; one of 1000 alone is kept (never the newest dropped) */
	add_run(&r, "triage", 100);
	assert_int_equal(r.n, 2);
	add_run(&r, "triage", 1000);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.entries[0].bytes, 1000);
	ring_close(&r);

	/* others may write to it: refused; a symbolic link: refused */
	assert_int_equal(chmod(sd, 0770), 0);
	assert_int_not_equal(ring_open(&r, sd, 3, 0, &err), 0);
	assert_non_null(strstr(err.msg, "others may write"));
	assert_int_equal(chmod(sd, 0700), 0);
	char *link = NULL;
	assert_true(asprintf(&link, "%s/link", dir) > 0);
	assert_int_equal(symlink(sd, link), 0);
	assert_int_not_equal(ring_open(&r, link, 3, 0, &err), 0);
	assert_non_null(strstr(err.msg, "not a directory"));
	/* an index that is not ours: said, not guessed at */
	char *idx = NULL;
	assert_true(asprintf(&idx, "%s/index.json", sd) > 0);
	FILE *f = fopen(idx, "w");
	fputs("{\"runs\": [", f);
	fclose(f);
	assert_int_not_equal(ring_open(&r, sd, 3, 0, &err), 0);
	assert_non_null(strstr(err.msg, "index.json: unreadable"));

	char *cmd = NULL;
	assert_true(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(idx);
	free(link);
	free(sd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intervals),
		cmocka_unit_test(test_stop_steps),
		cmocka_unit_test(test_prom),
		cmocka_unit_test(test_prom_utf8),
		cmocka_unit_test(test_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
