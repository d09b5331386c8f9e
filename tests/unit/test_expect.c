/* test_expect.c — the .expect file of a recorded incident (engine/offline/expect.c): what it
 * accepts (comments, blanks, every statement), what it refuses with "FILE:LINE: what" (unknown
 * statements, bad ids, severities and exit codes, a second exit line, none, control bytes, long
 * lines, a file over the cap), and the comparison with a replay: a matching report passes, and a
 * deliberately wrong expectation — exit code, verdict list, ruled_out, evidence — fails, saying
 * what differed. No root, no BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offline/expect.h"
#include "common/json_parse.h"
#include "common/util.h"

static int parse(const char *text, struct expectations *e, struct diag_err *err)
{
	return expect_parse("x.expect", text, strlen(text), e, err);
}

static void expect_refused(const char *text, const char *want)
{
	struct expectations e;
	struct diag_err err = { 0 };
	if (parse(text, &e, &err) == 0)
		fail_msg("accepted: %s", text);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	if (!strstr(err.msg, want))
		fail_msg("\"%s\" does not contain \"%s\"", err.msg, want);
	assert_null(strchr(err.msg, '\n'));
	assert_int_equal(e.n_verdicts, 0);
}

static void test_parse_good(void **state)
{
	(void)state;
	struct expectations e;
	struct diag_err err = { 0 };
	const char *text = "# latency/lock.json: a mutex held by compact_state()\n"
			   "\n"
			   "exit 4   \n"
			   "verdict lock-contention warning\n"
			   "\tverdict  cpu-starved\tinfo\n"
			   "ruled_out cpu-throttling\n"
			   "evidence-contains lock-contention held by  compact_state() \n"
			   "   # indented comment";
	if (parse(text, &e, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(e.exit_code, 4);
	assert_int_equal(e.n_verdicts, 2);
	assert_string_equal(e.verdicts[1].id, "cpu-starved");
	assert_string_equal(e.verdicts[1].severity, "info");
	assert_int_equal(e.n_ruled_out, 1);
	assert_string_equal(e.ruled_out[0], "cpu-throttling");
	assert_int_equal(e.n_contains, 1);
	assert_string_equal(e.contains[0].text, "held by  compact_state()"); /* inner blanks kept */
	expect_free(&e);

	assert_int_equal(parse("exit 0\n", &e, &err), 0); /* no verdict: none expected */
	assert_int_equal(e.exit_code, 0);
	assert_int_equal(e.n_verdicts, 0);
	expect_free(&e);
}

static void test_parse_refused(void **state)
{
	(void)state;
	expect_refused("verdict a ok\n", "x.expect: no exit line");
	expect_refused("", "x.expect: no exit line");
	expect_refused("exit 4\nverdikt a ok\n", "x.expect:2: unknown statement \"verdikt\"");
	expect_refused("exit 4\nexit 5\n", "x.expect:2: a second exit line");
	expect_refused("exit four\n", "x.expect:1: exit: expected a number from 0 to 255, got \"four\"");
	expect_refused("exit 256\n", "x.expect:1: exit: expected a number");
	expect_refused("exit 04\n", "x.expect:1: exit: expected a number");
	expect_refused("exit\n", "x.expect:1: exit: expected a number");
	expect_refused("exit 4 5\n", "x.expect:1: exit takes one number; unexpected \"5\"");
	expect_refused("exit 4\nverdict\n", "x.expect:2: verdict: missing ID");
	expect_refused("exit 4\nverdict a\n", "x.expect:2: verdict a: expected a severity");
	expect_refused("exit 4\nverdict a fatal\n", "got \"fatal\"");
	expect_refused("exit 4\nverdict a ok extra\n", "x.expect:2: verdict takes ID SEVERITY");
	expect_refused("exit 4\nverdict caf\xc3\xa9 ok\n", "x.expect:2: verdict: \"caf");
	expect_refused("exit 4\nruled_out a b\n", "x.expect:2: ruled_out takes one ID");
	expect_refused("exit 4\nruled_out\n", "x.expect:2: ruled_out: missing ID");
	expect_refused("exit 4\nevidence-contains a\n", "x.expect:2: evidence-contains a: missing TEXT");
	expect_refused("exit 4\r\n", "x.expect:1: a control character (byte 0x0d) at column 7");
	expect_refused("exit 4\nverdict a ok\x1b[2J\n", "x.expect:2: a control character (byte 0x1b)");

	char id[EXPECT_MAX_ID + 2];
	memset(id, 'a', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	char *long_id = xasprintf("exit 0\nruled_out %s\n", id);
	expect_refused(long_id, "x.expect:2: ruled_out: \"aaaa");
	free(long_id);
	char *line = xmalloc(EXPECT_MAX_LINE + 16);
	memset(line, '#', EXPECT_MAX_LINE + 1);
	strcpy(line + EXPECT_MAX_LINE + 1, "\nexit 0\n");
	expect_refused(line, "x.expect:1: line longer than 1024 bytes");
	free(line);

	/* bytes after a NUL are still read: the NUL is refused, not taken for the end */
	struct expectations e;
	struct diag_err err = { 0 };
	assert_int_equal(expect_parse("x.expect", "exit 0\n\0verdict a ok\n", 21, &e, &err), -1);
	assert_non_null(strstr(err.msg, "x.expect:2: a control character (byte 0x00)"));
	size_t big = EXPECT_MAX_BYTES + 1;
	char *huge = xcalloc(big, 1);
	assert_int_equal(expect_parse("x.expect", huge, big, &e, &err), -1);
	assert_non_null(strstr(err.msg, "x.expect: over 65536 bytes"));
	free(huge);
}

static struct value *report(void)
{
	static const char text[] =
		"{\"verdicts\":[{\"id\":\"lock-contention\",\"severity\":\"warning\","
		"\"title\":\"Lock contention in worker()\",\"evidence\":[\"held by compact_state()\"]},"
		"{\"id\":\"cpu-starved\",\"severity\":\"info\",\"title\":\"t\",\"evidence\":[]}],"
		"\"ruled_out\":[{\"id\":\"cpu-throttling\",\"text\":\"0 ms\"}]}";
	struct diag_err err = { 0 };
	struct value *v = json_parse(text, strlen(text), NULL, &err);
	if (!v)
		fail_msg("%s", err.msg);
	return v;
}

/* The lines expect_compare gives for this .expect text against report(), as one string. */
static char *check(const char *text, int exit_code, const char *error)
{
	struct expectations e;
	struct diag_err err = { 0 };
	if (parse(text, &e, &err))
		fail_msg("%s", err.msg);
	struct value *r = error ? NULL : report();
	struct value *d = expect_compare(&e, exit_code, r, error);
	char *all = xstrdup("");
	for (size_t i = 0; i < d->arr.len; i++) {
		char *next = xasprintf("%s%s\n", all, d->arr.items[i]->s);
		free(all);
		all = next;
	}
	value_free(d);
	value_free(r);
	expect_free(&e);
	return all;
}

#define GOOD "exit 4\nverdict lock-contention warning\nverdict cpu-starved info\n"

static void test_check(void **state)
{
	(void)state;
	char *d = check(GOOD "ruled_out cpu-throttling\nevidence-contains lock-contention compact_state()\n"
			"evidence-contains lock-contention in worker\n", 4, NULL);
	assert_string_equal(d, ""); /* everything as expected */
	free(d);

	/* deliberately wrong: each difference said */
	d = check(GOOD, 5, NULL);
	assert_string_equal(d, "exit: expected 4, got 5\n");
	free(d);
	d = check("exit 4\nverdict lock-contention critical\nverdict cpu-starved info\nverdict gone ok\n",
		  4, NULL);
	assert_string_equal(d, "verdicts differ (- expected, + given):\n"
			       "- verdict lock-contention critical\n"
			       "+ verdict lock-contention warning\n"
			       "  verdict cpu-starved info\n"
			       "- verdict gone ok\n");
	free(d);
	d = check("exit 4\nverdict cpu-starved info\nverdict lock-contention warning\n", 4, NULL);
	assert_non_null(strstr(d, "verdicts differ")); /* the order counts */
	free(d);
	d = check(GOOD "ruled_out disk-io\n", 4, NULL);
	assert_string_equal(d, "ruled_out disk-io: not ruled out (the replay ruled out cpu-throttling)\n");
	free(d);
	d = check(GOOD "evidence-contains lock-contention flush()\nevidence-contains nope x\n", 4, NULL);
	assert_string_equal(d, "evidence-contains lock-contention flush(): not in the verdict's title "
			       "or evidence\nevidence-contains nope x: no verdict nope\n");
	free(d);
	/* the Lua failed: said, and nothing else matches */
	d = check("exit 1\n", 1, "lua/latency.lua:3: boom");
	assert_string_equal(d, "the replay failed: lua/latency.lua:3: boom\n");
	free(d);
	d = check(GOOD, 1, "lua/latency.lua:3: boom");
	assert_non_null(strstr(d, "exit: expected 4, got 1\nverdicts differ"));
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_refused),
		cmocka_unit_test(test_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
