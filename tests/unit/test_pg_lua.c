/* test_pg_lua.c — lua/postgres-slow.lua on trimmed incidents: reports `diagnose postgres-slow
 * --comm postgres --json` wrote on Debian 12's PostgreSQL 15 in tests/e2e/t_postgres_slow.sh
 * (KEEP_REPORTS; tests/fixtures/trimmed/postgres-slow/NAME.json): an UPDATE waiting for a row lock
 * with lock_timeout (lock), a sort spilling to disk (sort), a table scanned through too small
 * shared buffers (misses), point lookups and updates (control). Each gives what the live run gave;
 * then edits of them give the verdicts no e2e case reaches on a 2-CPU machine: the same
 * statement's time in LWLock waits (lwlock-wait, naming the tranche), in reads (read-wait), a
 * checkpoint meanwhile (checkpoint-stall), a deadlock, no statement at all (idle), a slow
 * statement twenty times the threshold (critical), and a ring that overflowed (incomplete-data).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorded_verdicts.h"

static struct value *incident(const char *name)
{
	return trimmed_incident("postgres-slow", name);
}

static struct value *pg_of(struct value *fx)
{
	return (struct value *)value_get(value_get(fx, "results"), "pg");
}

static struct value *first_statement(struct value *fx)
{
	return value_get(pg_of(fx), "statements")->arr.items[0];
}

static struct value *verdicts_of(const struct value *fx)
{
	return recorded_verdicts("postgres-slow", fx, NULL, true);
}

static void assert_title_has(const struct value *v, const char *text)
{
	if (!v || !strstr(value_get_str(v, "title"), text))
		fail_msg("title \"%s\" lacks \"%s\"", v ? value_get_str(v, "title") : "(no verdict)", text);
}

static void test_as_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("postgres-slow", "lock");
	assert_recorded_verdicts("postgres-slow", "sort");
	assert_recorded_verdicts("postgres-slow", "misses");
	assert_recorded_verdicts("postgres-slow", "control");
}

static void test_lock(void **state)
{
	(void)state;
	struct value *fx = incident("lock");
	struct value *v = verdicts_of(fx);
	const struct value *w = verdict_at(v, 0);
	assert_string_equal(value_get_str(w, "id"), "lock-wait");
	assert_string_equal(value_get_str(w, "severity"), "critical"); /* its waits end in lock_timeout */
	assert_title_has(w, "UPDATE accounts SET balance = balance - ? WHERE id = ?");
	assert_title_has(w, "it waits for a lock");
	assert_true(verdict_evidence_has(w, "ended by an error (lock_timeout, deadlock, cancel)"));
	const struct value *steps = value_get(w, "next_steps");
	assert_non_null(strstr(steps->arr.items[0]->s, "pg_blocking_pids(pid)"));
	value_free(v);
	/* the report: the lock, with the statements that waited on it */
	struct recorded_answer a = recorded_answer("postgres-slow", fx, NULL, true);
	const struct value *locks = NULL;
	for (size_t i = 0; i < a.report->arr.len; i++)
		if (!strcmp(value_get_str(a.report->arr.items[i], "title"), "Locks waited for"))
			locks = a.report->arr.items[i];
	assert_non_null(locks);
	const struct value *row = value_get(locks, "rows")->arr.items[0];
	assert_non_null(strstr(row->arr.items[4]->s, "UPDATE accounts SET balance = balance - ? WHERE id = ?"));
	recorded_answer_free(&a);
	value_free(fx);
}

static void test_control(void **state)
{
	(void)state;
	struct value *fx = incident("control");
	struct recorded_answer a = recorded_answer("postgres-slow", fx, NULL, true);
	assert_string_equal(value_get_str(verdict_at(a.verdicts, 0), "id"), "ok");
	assert_int_equal(a.verdicts->arr.len, 1);
	assert_non_null(ruled_out_find(&a, "cache-misses"));
	assert_non_null(ruled_out_find(&a, "lock-wait"));
	/* report: the statements, and the server's figures */
	assert_string_equal(value_get_str(a.report->arr.items[0], "title"), "Statements by total time");
	recorded_answer_free(&a);
	value_free(fx);
}

/* The lock incident's statement with its time moved from lock waits to another wait. */
static struct value *moved(const char *to)
{
	struct value *fx = incident("lock");
	struct value *s = first_statement(fx);
	int64_t lock = (int64_t)value_get_num(s, "lock_ns", 0);
	value_set_int(s, "lock_ns", 0);
	value_set_int(s, "lock_waits", 0);
	value_set_int(s, "lock_waits_failed", 0);
	value_set_int(s, to, lock);
	return fx;
}

static void test_lwlock_wait(void **state)
{
	(void)state;
	struct value *fx = moved("lwlock_ns");
	struct value *lw = (struct value *)value_get(pg_of(fx), "lwlock_waits");
	struct value *t = value_arr_push(lw, value_obj());
	value_set_str(t, "tranche", "WALWrite");
	value_set_int(t, "count", 900);
	value_set_int(t, "total_ns", 3000000000);
	value_set_int(t, "max_ns", 9000000);
	struct value *v = verdicts_of(fx);
	const struct value *w = verdict_at(v, 0);
	assert_string_equal(value_get_str(w, "id"), "lwlock-wait");
	assert_title_has(w, "it waits for LWLocks");
	assert_title_has(w, "(WALWrite most)");
	assert_true(verdict_evidence_has(w, "WALWrite"));
	value_free(v);

	/* and a checkpoint finished meanwhile: its writes stall them */
	struct value *ck = (struct value *)value_get(pg_of(fx), "checkpoints");
	value_set_int(ck, "count", 1);
	value_set_int(ck, "total_ns", 2500000000);
	value_set_int(ck, "max_ns", 2500000000);
	value_set_int(ck, "buffers_written", 4000);
	v = verdicts_of(fx);
	const struct value *c = verdict_find(v, "checkpoint-stall");
	assert_non_null(c);
	assert_string_equal(value_get_str(c, "severity"), "warning");
	assert_true(verdict_evidence_has(c, "1 checkpoint finished in the window"));
	value_free(v);
	value_free(fx);
}

static void test_read_wait(void **state)
{
	(void)state;
	struct value *fx = moved("read_ns");
	value_set_int(first_statement(fx), "reads", 5000);
	struct value *v = verdicts_of(fx);
	const struct value *w = verdict_at(v, 0);
	assert_string_equal(value_get_str(w, "id"), "read-wait");
	assert_title_has(w, "it reads blocks from the kernel");
	assert_title_has(w, "5k blocks");
	/* no checkpoint in this window: none named */
	assert_null(verdict_find(v, "checkpoint-stall"));
	assert_null(verdict_find(v, "checkpoint"));
	value_free(v);
	value_free(fx);
}

static void test_sort_critical(void **state)
{
	(void)state;
	struct value *fx = incident("sort");
	struct value *s = first_statement(fx);
	struct value *v = verdicts_of(fx);
	const struct value *w = verdict_at(v, 0);
	assert_string_equal(value_get_str(w, "id"), "slow-statement");
	assert_title_has(w, "its sorts spill to disk");
	assert_string_equal(value_get_str(w, "severity"), "warning");
	value_free(v);
	/* twenty times slow_statement_ms on average: critical */
	value_set_int(s, "total_ns", (int64_t)value_get_num(s, "count", 1) * 1100000000ll);
	value_set_int(s, "max_ns", 1200000000ll);
	v = verdicts_of(fx);
	assert_string_equal(value_get_str(verdict_at(v, 0), "severity"), "critical");
	value_free(v);
	value_free(fx);
}

static void test_deadlock_idle_partial(void **state)
{
	(void)state;
	struct value *fx = incident("control");
	struct value *pg = pg_of(fx);
	value_set_int(pg, "deadlocks", 2);
	value_set_int(pg, "ring_full", 300);
	struct value *v = verdicts_of(fx);
	assert_non_null(verdict_find(v, "deadlocks"));
	const struct value *inc = verdict_find(v, "incomplete-data");
	assert_non_null(inc);
	assert_title_has(inc, "ring full");
	value_free(v);

	/* nothing finished: idle, not ok */
	value_set_int(pg, "deadlocks", 0);
	value_set_int(pg, "ring_full", 0);
	value_set_int(pg, "statements_finished", 0);
	value_obj_set(pg, "statements", value_arr());
	v = verdicts_of(fx);
	assert_string_equal(value_get_str(verdict_at(v, 0), "id"), "idle");
	assert_null(verdict_find(v, "ok"));
	value_free(v);
	value_free(fx);
}

static void test_misses(void **state)
{
	(void)state;
	struct value *fx = incident("misses");
	struct value *v = verdicts_of(fx);
	const struct value *w = verdict_find(v, "cache-misses");
	assert_non_null(w);
	assert_string_equal(value_get_str(w, "severity"), "warning");
	assert_title_has(w, "Reads miss the buffer cache");
	value_free(v);
	value_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_as_recorded),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_control),
		cmocka_unit_test(test_lwlock_wait),
		cmocka_unit_test(test_read_wait),
		cmocka_unit_test(test_sort_critical),
		cmocka_unit_test(test_deadlock_idle_partial),
		cmocka_unit_test(test_misses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
