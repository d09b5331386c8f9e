/* test_pg_lua.c — lua/postgres-slow.lua on trimmed incidents: reports `diagnose postgres-slow
 * --comm postgres --json` wrote on Debian 12's PostgreSQL 15 in tests/e2e/t_postgres_slow.sh
 * (KEEP_REPORTS; tests/fixtures/trimmed/postgres-slow/NAME.json): an UPDATE waiting for a row lock
 * with lock_timeout (lock), a sort spilling to disk (sort), a table scanned through too small
 * shared buffers (misses), point lookups and updates (control). Each gives what the live run gave;
 * then edits of them give the verdicts no e2e case reaches on a 2-CPU machine: the same
 * statement's time in LWLock waits (lwlock-wait, naming the tranche), in reads (read-wait), a
 * checkpoint meanwhile (checkpoint-stall), a deadlock, no statement at all (idle), a slow
 * statement twenty times the threshold (critical), and a ring that overflowed (incomplete-data).
 * pg_activity's trimmed incidents, from tests/e2e/t_pg_activity.sh: two UPDATEs blocked since
 * before the run behind an idle-in-transaction holder, and a pg_sleep (stuck), and the same server
 * idle (idle); their edits: a statement past in_flight_crit_s (critical), nothing long enough (idle,
 * in-flight ruled out), an LWLock, an I/O wait and no wait at all named as such, a server that
 * could not be read (incomplete-data, the rest unchanged); with pg's uprobes stopped over the
 * budget and a statement running in the samples: named from them, not idle (test_sampled).
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


static struct value *activity_of(struct value *fx)
{
	return (struct value *)value_get(value_get(fx, "results"), "activity");
}

/* The in-flight backend of pid in the incident's end snapshot. */
static struct value *flight_of(struct value *fx, int64_t pid)
{
	const struct value *arr = value_get(activity_of(fx), "in_flight");
	for (size_t i = 0; i < arr->arr.len; i++)
		if ((int64_t)value_get_num(arr->arr.items[i], "pid", 0) == pid)
			return arr->arr.items[i];
	fail_msg("no in-flight backend %lld", (long long)pid);
	return NULL;
}

/* The incident's first backend in a Lock wait on a transactionid, and its holder. */
static struct value *xid_waiter(struct value *fx, int64_t *holder)
{
	const struct value *arr = value_get(activity_of(fx), "in_flight");
	for (size_t i = 0; i < arr->arr.len; i++) {
		const char *e = value_get_str(arr->arr.items[i], "wait_event");
		if (e && !strcmp(e, "transactionid")) {
			const struct value *b = value_get(arr->arr.items[i], "blocked_by")->arr.items[0];
			*holder = b->type == V_INT ? b->i : (int64_t)b->n;
			return arr->arr.items[i];
		}
	}
	fail_msg("no backend waits for a transactionid");
	return NULL;
}

static void test_stuck(void **state)
{
	(void)state;
	assert_recorded_verdicts("postgres-slow", "stuck");
	assert_recorded_verdicts("postgres-slow", "idle");
	struct value *fx = incident("stuck");
	int64_t holder = 0;
	xid_waiter(fx, &holder);
	struct value *v = verdicts_of(fx);
	/* the lock waits first, each named with the UPDATE, the lock and its holder */
	const struct value *w = verdict_at(v, 0);
	assert_string_equal(value_get_str(w, "id"), "in-flight");
	assert_string_equal(value_get_str(w, "severity"), "warning"); /* 15 s: under in_flight_crit_s */
	assert_title_has(w, "UPDATE accounts SET balance = balance - ? WHERE id = ?; has been running for");
	assert_title_has(w, "waiting for a lock");
	assert_title_has(w, "held by pid");
	assert_title_has(verdict_at(v, 1), "waiting for a lock");
	assert_title_has(verdict_at(v, 2), "SELECT pg_sleep(?); has been running for");
	assert_title_has(verdict_at(v, 2), "waiting for pg_sleep()");
	assert_null(verdict_find(v, "idle"));
	assert_null(verdict_find(v, "ok"));
	/* the transactionid waiter's holder is idle in transaction: said, and its way out */
	bool named = false, step = false;
	char want_ev[64], want_step[64];
	snprintf(want_ev, sizeof(want_ev), "pid %lld (idle in transaction for", (long long)holder);
	snprintf(want_step, sizeof(want_step), "pg_terminate_backend(%lld)", (long long)holder);
	for (size_t i = 0; i < 2; i++) {
		named |= verdict_evidence_has(verdict_at(v, i), want_ev);
		step |= verdict_step_has(verdict_at(v, i), want_step);
	}
	assert_true(named && step);
	assert_true(verdict_evidence_has(w, "Already in flight when the window opened"));
	assert_true(verdict_evidence_has(w, "Sampled at 20 Hz over the window"));
	value_free(v);
	/* the report: the backends in flight, and by state and wait event */
	struct recorded_answer a = recorded_answer("postgres-slow", fx, NULL, true);
	bool table = false;
	for (size_t i = 0; i < a.report->arr.len; i++)
		table |= !strcmp(value_get_str(a.report->arr.items[i], "title"), "In flight at the window's end (pg_activity)");
	assert_true(table);
	recorded_answer_free(&a);

	/* past in_flight_crit_s: critical */
	struct value *f = xid_waiter(fx, &holder);
	value_set_num(f, "query_elapsed_s", 45);
	v = verdicts_of(fx);
	assert_string_equal(value_get_str(verdict_at(v, 0), "severity"), "critical");
	assert_title_has(verdict_at(v, 0), "has been running for 45.0 s");
	value_free(v);
	value_free(fx);
}

/* Nothing in flight long enough: no in-flight verdict, said as ruled out; the samples still show
 * the UPDATEs waiting for their row locks the whole window (2 backends): lock-wait from them, not
 * idle; with nothing running in the samples either, idle. */
static void test_stuck_under_threshold(void **state)
{
	(void)state;
	struct value *fx = incident("stuck");
	const struct value *arr = value_get(activity_of(fx), "in_flight");
	for (size_t i = 0; i < arr->arr.len; i++)
		value_set_num(arr->arr.items[i], "query_elapsed_s", 4.9);
	struct recorded_answer a = recorded_answer("postgres-slow", fx, NULL, true);
	assert_null(verdict_find(a.verdicts, "in-flight"));
	const struct value *w = verdict_at(a.verdicts, 0);
	assert_string_equal(value_get_str(w, "id"), "lock-wait");
	assert_title_has(w, "UPDATE accounts SET balance = balance - ? WHERE id = ?; waits for a lock 100% of its sampled time (2.0 backends");
	assert_title_has(verdict_find(a.verdicts, "busy-statement"), "SELECT pg_sleep(?); keeps 1.0 backend busy with it on average (sampled: Timeout:PgSleep 100%)");
	assert_null(verdict_find(a.verdicts, "idle"));
	assert_non_null(ruled_out_find(&a, "in-flight"));
	recorded_answer_free(&a);
	value_obj_set(activity_of(fx), "statements", value_arr());
	a = recorded_answer("postgres-slow", fx, NULL, true);
	assert_string_equal(value_get_str(verdict_at(a.verdicts, 0), "id"), "idle");
	recorded_answer_free(&a);
	value_free(fx);
}

/* What it waits on, in words, for the wait classes the live run did not give. */
static void test_stuck_waits(void **state)
{
	(void)state;
	struct value *fx = incident("stuck");
	int64_t holder = 0;
	struct value *f = xid_waiter(fx, &holder);
	int64_t pid = (int64_t)value_get_num(f, "pid", 0);
	value_set_str(f, "wait_event_type", "LWLock");
	value_set_str(f, "wait_event", "WALWrite");
	value_obj_drop(f, "lock");
	value_obj_drop(f, "blocked_by");
	struct value *v = verdicts_of(fx);
	const struct value *w = verdict_at(v, 1); /* the other lock wait comes first */
	assert_title_has(w, "waiting for the LWLock WALWrite");
	assert_true(verdict_step_has(w, "EXPLAIN (ANALYZE, BUFFERS)"));
	value_free(v);
	value_set_str(f, "wait_event_type", "IO");
	value_set_str(f, "wait_event", "DataFileRead");
	v = verdicts_of(fx);
	assert_title_has(verdict_at(v, 1), "waiting for I/O (DataFileRead)");
	assert_true(verdict_step_has(verdict_at(v, 1), "diagnose io-saturation"));
	value_free(v);
	value_obj_drop(f, "wait_event_type");
	value_obj_drop(f, "wait_event");
	v = verdicts_of(fx);
	assert_title_has(verdict_at(v, 1), "and runs (no wait event");
	value_free(v);
	(void)flight_of(fx, pid);
	value_free(fx);
}

/* A server whose memory could not be read: said, and the rest as before. */
static void test_activity_unavailable(void **state)
{
	(void)state;
	struct value *fx = incident("stuck");
	struct value *act = activity_of(fx);
	struct value *res = (struct value *)value_get(fx, "results");
	struct value *none = value_obj();
	value_set_bool(none, "available", false);
	value_set_str(none, "unavailable", "PostgreSQL 12.4: its shared memory's layout is known for 13 to 17 only");
	value_obj_set(res, "activity", none);
	(void)act;
	struct value *v = verdicts_of(fx);
	assert_null(verdict_find(v, "in-flight"));
	assert_non_null(verdict_find(v, "idle"));
	const struct value *inc = verdict_find(v, "incomplete-data");
	assert_non_null(inc);
	assert_true(verdict_evidence_has(inc, "statements in flight are not seen"));
	value_free(v);
	value_free(fx);
	/* a report recorded before pg_activity existed: as it was (test_as_recorded), no note */
	fx = incident("lock");
	v = verdicts_of(fx);
	assert_null(verdict_find(v, "incomplete-data"));
	value_free(v);
	value_free(fx);
}

/* A statement the samples show: its waits as given ({type, event, samples}; type NULL: running). */
static void sampled_statement(struct value *fx, double avg_backends, const char *const waits[][2],
			      const int *samples, size_t n_waits)
{
	struct value *st = value_obj_set(activity_of(fx), "statements", value_arr());
	struct value *s = value_arr_push(st, value_obj());
	value_set_str(s, "query", "SELECT count(*) FROM big WHERE v LIKE ?;");
	int total = 0;
	for (size_t i = 0; i < n_waits; i++)
		total += samples[i];
	value_set_int(s, "samples", total);
	value_set_num(s, "avg_backends", avg_backends);
	struct value *w = value_obj_set(s, "waits", value_arr());
	for (size_t i = 0; i < n_waits; i++) {
		struct value *one = value_arr_push(w, value_obj());
		if (waits[i][0]) {
			value_set_str(one, "wait_event_type", waits[i][0]);
			value_set_str(one, "wait_event", waits[i][1]);
		}
		value_set_int(one, "samples", samples[i]);
	}
}

/* The idle server's incident, pg's uprobes stopped at_s into the window over the budget (0.001:
 * the pre-flight dropped them), and a scan the backends' samples show running all along: never
 * idle; the statement named from its samples, by its largest kind of wait when that is
 * wait_share_pct or more (a warning), else busy (info); too few backends busy: idle stands. */
static void test_sampled(void **state)
{
	(void)state;
	struct value *fx = incident("idle");
	struct value *run = (struct value *)value_get(fx, "run");
	struct value *stop = value_obj_set(value_obj_set(run, "stopped", value_obj()), "pg", value_obj());
	value_set_num(stop, "at_s", 0.05);
	value_set_bool(stop, "scaled", false);
	const char *const running_waits[][2] = { { NULL, NULL }, { "IO", "DataFileRead" }, { "IPC", "ExecuteGather" } };
	sampled_statement(fx, 1.67, running_waits, (const int[]){ 77, 14, 9 }, 3);
	struct value *v = verdicts_of(fx);
	assert_null(verdict_find(v, "idle"));
	const struct value *w = verdict_find(v, "busy-statement");
	assert_non_null(w);
	assert_string_equal(value_get_str(w, "severity"), "info");
	assert_title_has(w, "SELECT count(*) FROM big WHERE v LIKE ?;");
	assert_title_has(w, "1.7 backends busy with it on average (sampled: running 77%, IO:DataFileRead 14%");
	assert_true(verdict_evidence_has(w, "pg's uprobes were stopped 0.1 s into the window over max_cpu_pct"));
	assert_true(verdict_evidence_has(w, "IO:DataFileRead 14%"));
	assert_non_null(verdict_find(v, "incomplete-data"));
	value_free(v);

	/* reads dominate: read-wait, a warning, the wait event named */
	const char *const read_waits[][2] = { { "IO", "DataFileRead" }, { NULL, NULL } };
	sampled_statement(fx, 1.2, read_waits, (const int[]){ 60, 40 }, 2);
	v = verdicts_of(fx);
	w = verdict_at(v, 0);
	assert_string_equal(value_get_str(w, "id"), "read-wait");
	assert_string_equal(value_get_str(w, "severity"), "warning");
	assert_title_has(w, "reads blocks from the kernel 60% of its sampled time (DataFileRead");
	value_free(v);

	/* the pre-flight dropped the uprobes; lock waits dominate: lock-wait */
	value_set_num(stop, "at_s", 0.001);
	const char *const lock_waits[][2] = { { "Lock", "transactionid" }, { NULL, NULL } };
	sampled_statement(fx, 2, lock_waits, (const int[]){ 90, 10 }, 2);
	v = verdicts_of(fx);
	w = verdict_at(v, 0);
	assert_string_equal(value_get_str(w, "id"), "lock-wait");
	assert_string_equal(value_get_str(w, "severity"), "warning");
	assert_true(verdict_evidence_has(w, "pg's uprobes were not run over max_cpu_pct"));
	value_free(v);

	/* a statement that kept 0.1 backends busy: idle stands */
	sampled_statement(fx, 0.1, running_waits, (const int[]){ 4, 1, 1 }, 3);
	v = verdicts_of(fx);
	assert_non_null(verdict_find(v, "idle"));
	assert_null(verdict_find(v, "busy-statement"));
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
		cmocka_unit_test(test_stuck),
		cmocka_unit_test(test_stuck_under_threshold),
		cmocka_unit_test(test_stuck_waits),
		cmocka_unit_test(test_activity_unavailable),
		cmocka_unit_test(test_sampled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
