/* test_blocked_lua.c — latency and triage on threads blocked since before the run (lua/lib/blocked.lua
 * over the thread_states probe's results), on trimmed incidents of tests/e2e/t_stuck.sh
 * (tests/fixtures/trimmed/{latency,triage}/: two threads deadlocked on two glibc mutexes, a mutex
 * held by a sleeping thread, a read on a FUSE file system that stopped answering, two Python
 * threads deadlocked on threading.Lock, an idle pool), each giving the verdicts it gave live, and
 * edits of them: a cycle of three threads, a cycle broken by an owner that is gone, the owner of a
 * priority-inheritance mutex read from its lock word, sixty idle threads added (the shares are of
 * the threads that matter: the verdicts do not weaken), threads blocked for less than
 * blocked_min_s (not taken as stuck), a FUSE request waited for interruptibly (still stuck), the
 * Python waits moved into Condition.wait (waiting for work: idle, not deadlocked), the end snapshot
 * not taken (blocked-unknown, neither idle nor deadlocked). No root, no BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "recorded_verdicts.h"

#define verdict verdict_at

static struct value *incident(const char *recipe, const char *name) { return trimmed_incident(recipe, name); }

/* The snapshot's threads of an incident (results.threads.threads), editable. */
static struct value *snap_threads(struct value *fx)
{
	struct value *t = (struct value *)value_get(value_get(value_get(fx, "results"), "threads"), "threads");
	assert_non_null(t);
	return t;
}

/* The thread tid of an incident's snapshot. */
static struct value *thread_of(struct value *fx, int64_t tid)
{
	struct value *t = snap_threads(fx);
	for (size_t i = 0; i < t->arr.len; i++)
		if ((int64_t)value_get_num(t->arr.items[i], "tid", -1) == tid)
			return t->arr.items[i];
	fail_msg("no thread %lld", (long long)tid);
	return NULL;
}

/* The threads of a snapshot waiting in futex(), in the incident's order. */
static size_t futex_threads(struct value *fx, struct value **out, size_t max)
{
	struct value *t = snap_threads(fx);
	size_t n = 0;
	for (size_t i = 0; i < t->arr.len && n < max; i++)
		if (value_get(t->arr.items[i], "futex"))
			out[n++] = t->arr.items[i];
	return n;
}

/* Sets futex.words[i] of thread th. */
static void set_word(struct value *th, size_t i, int64_t v)
{
	struct value *w = (struct value *)value_get(value_get(th, "futex"), "words");
	assert_non_null(w);
	assert_true(i < w->arr.len);
	value_free(w->arr.items[i]);
	w->arr.items[i] = value_int(v);
}

static int64_t tid_of(const struct value *th) { return (int64_t)value_get_num(th, "tid", -1); }

/* The thread of a snapshot with the user frame fn. */
static struct value *thread_in(struct value *fx, const char *fn)
{
	struct value *t = snap_threads(fx);
	for (size_t i = 0; i < t->arr.len; i++) {
		const struct value *user = value_get(t->arr.items[i], "user");
		for (size_t j = 0; user && j < user->arr.len; j++)
			if (!strcmp(user->arr.items[j]->s, fn))
				return t->arr.items[i];
	}
	fail_msg("no thread in %s", fn);
	return NULL;
}

static const char *title0(const struct value *v) { return value_get_str(verdict(v, 0), "title"); }

static void assert_has(const char *text, const char *needle)
{
	if (!text || !strstr(text, needle))
		fail_msg("\"%s\" lacks \"%s\"", text ? text : "(null)", needle);
}

/* Adds n copies of the incident's thread `like` with new thread ids (a parked pool), and as many
 * threads to the process's count. */
static void add_idle_threads(struct value *fx, int64_t like, int n)
{
	struct value *t = snap_threads(fx);
	const struct value *model = thread_of(fx, like);
	for (int i = 0; i < n; i++) {
		struct value *c = value_copy(model);
		value_set_int(c, "tid", 900000 + i);
		value_arr_push(t, c);
	}
	struct value *ctx = (struct value *)value_get(value_get(fx, "results"), "context");
	value_set_int(ctx, "threads", (int64_t)value_get_num(ctx, "threads", 1) + n);
}

/* ---- a deadlock ------------------------------------------------------------------------------ */

static void test_deadlock_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("latency", "deadlock");
	struct value *fx = incident("latency", "deadlock");
	int64_t audit = tid_of(thread_in(fx, "run_audit")), transfer = tid_of(thread_in(fx, "transfer_funds"));
	struct value *v = recorded_verdicts("latency", fx, NULL, true);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "deadlock");
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "critical");
	assert_has(title0(v), "transfer_funds()");
	assert_has(title0(v), "run_audit()");
	/* each mutex's owner: the other thread, by its function and id */
	char want[96];
	snprintf(want, sizeof(want), "held by run_audit() [thread %lld]", (long long)audit);
	assert_true(verdict_evidence_has(verdict(v, 0), want));
	snprintf(want, sizeof(want), "held by transfer_funds() [thread %lld]", (long long)transfer);
	assert_true(verdict_evidence_has(verdict(v, 0), want));
	value_free(v);
	value_free(fx);
}

/* Three threads in a cycle: the third a copy of the first, each waiting for the next one's mutex. */
static void test_deadlock_cycle_of_three(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "deadlock");
	struct value *ft[2];
	assert_int_equal(futex_threads(fx, ft, 2), 2);
	int64_t a = tid_of(ft[0]), b = tid_of(ft[1]), c = 777777;
	struct value *third = value_copy(ft[0]);
	value_set_int(third, "tid", c);
	value_arr_push(snap_threads(fx), third);
	set_word(ft[0], 2, b);
	set_word(ft[1], 2, c);
	set_word(third, 2, a);
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "deadlock");
	assert_has(title0(v), "in a cycle");
	assert_has(title0(v), "[thread 777777]");
	assert_true(verdict_evidence_has(verdict(v, 0), "The cycle: "));
	value_free(v);
	value_free(fx);
}

/* One owner gone (a thread id no thread has): no cycle; the first waits on a holder that is not
 * among the threads, the other on a thread that waits in turn. */
static void test_broken_cycle(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "deadlock");
	struct value *ft[2];
	assert_int_equal(futex_threads(fx, ft, 2), 2);
	set_word(ft[0], 2, 999999);
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_null(verdict_find(v, "deadlock"));
	const struct value *h = verdict_find(v, "held-lock");
	assert_non_null(h);
	const char *t = value_get_str(h, "title");
	if (!strstr(t, "not among the process's threads") && !strstr(t, "which itself waits for"))
		fail_msg("held-lock: %s", t);
	value_free(v);
	value_free(fx);
}

/* A priority-inheritance mutex: the owner is the lock word's low 30 bits (the waiters bit set),
 * __owner unused. */
static void test_pi_mutex_owner(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "deadlock");
	struct value *ft[2];
	assert_int_equal(futex_threads(fx, ft, 2), 2);
	for (int i = 0; i < 2; i++) {
		struct value *f = (struct value *)value_get(ft[i], "futex");
		value_set_int(f, "op", 6 | 128); /* FUTEX_LOCK_PI_PRIVATE */
		set_word(ft[i], 0, (int64_t)(0x80000000u | (uint32_t)tid_of(ft[1 - i])));
		set_word(ft[i], 2, 0);
		set_word(ft[i], 4, 32); /* PTHREAD_MUTEX_PRIO_INHERIT_NP */
	}
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "deadlock");
	value_free(v);
	value_free(fx);
}

/* Sixty parked threads more: the deadlock stays critical, and a lock held since before the run
 * keeps its severity (the shares are of the threads that matter, not of the pool). */
static void test_not_diluted_by_idle_threads(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "deadlock");
	int64_t main_tid = (int64_t)value_get_num(value_get(value_get(fx, "run"), "target"), "pid", -1);
	add_idle_threads(fx, main_tid, 60);
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "deadlock");
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "critical");
	value_free(v);
	value_free(fx);
	fx = incident("latency", "held-lock");
	main_tid = (int64_t)value_get_num(value_get(value_get(fx, "run"), "target"), "pid", -1);
	add_idle_threads(fx, main_tid, 60);
	v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "held-lock");
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "critical");
	value_free(v);
	value_free(fx);
}

/* Not run for 1 s only (under blocked_min_s): between two events, not stuck. */
static void test_short_blocks_are_not_stuck(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "deadlock");
	struct value *t = snap_threads(fx);
	for (size_t i = 0; i < t->arr.len; i++)
		value_set_int(t->arr.items[i], "blocked_ns", 1000000000);
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_null(verdict_find(v, "deadlock"));
	assert_null(verdict_find(v, "held-lock"));
	value_free(v);
	value_free(fx);
}

/* ---- a lock held, a stuck read, Python, idle --------------------------------------------------- */

static void test_held_lock_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("latency", "held-lock");
	struct value *fx = incident("latency", "held-lock");
	int64_t holder = tid_of(thread_in(fx, "rotate_logs"));
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	char want[64];
	snprintf(want, sizeof(want), "rotate_logs() [thread %lld]", (long long)holder);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "held-lock");
	assert_has(title0(v), "append_record()");
	assert_has(title0(v), want);
	assert_has(title0(v), "sleeps");
	assert_null(verdict_find(v, "idle"));
	assert_true(verdict_step_has(verdict(v, 0), "release it before sleeping"));
	value_free(v);
	value_free(fx);
}

static void test_fuse_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("latency", "fuse-stuck");
	struct value *fx = incident("latency", "fuse-stuck");
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "stuck-in-kernel");
	assert_has(title0(v), "/mnt/data/app.conf");
	assert_has(title0(v), "fuse.stallfs");
	assert_has(title0(v), "load_config()");
	assert_true(verdict_step_has(verdict(v, 0), "/sys/fs/fuse/connections/"));
	value_free(v);
	value_free(fx);
}

/* The same read waited for interruptibly in FUSE's request (a reader the page lock does not hold):
 * still stuck, by its kernel frames. */
static void test_fuse_interruptible(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "fuse-stuck");
	struct value *t = snap_threads(fx)->arr.items[0];
	value_set_str(t, "state", "S");
	value_set_str(t, "tag", "sleeping");
	struct value *k = value_obj_set(t, "kernel", value_arr());
	const char *frames[] = { "request_wait_answer", "__fuse_simple_request", "fuse_do_readfolio",
				 "fuse_read_folio", "filemap_read", "vfs_read", "ksys_read" };
	for (size_t i = 0; i < ARRAY_LEN(frames); i++)
		value_arr_push(k, value_str(frames[i]));
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "stuck-in-kernel");
	assert_null(strstr(title0(v), "uninterruptible"));
	value_free(v);
	value_free(fx);
}

static void test_python_deadlock_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("latency", "py-deadlock");
	struct value *fx = incident("latency", "py-deadlock");
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "likely-deadlock");
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "critical");
	assert_has(title0(v), "transfer (");
	assert_has(title0(v), "audit_books (");
	assert_true(verdict_evidence_has(verdict(v, 0), "py_locks.py:"));
	value_free(v);
	value_free(fx);
}

/* The same threads inside threading's Condition.wait: waiting for work, not a lock. */
static void test_python_condition_is_idle(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "py-deadlock");
	struct value *t = snap_threads(fx);
	for (size_t i = 0; i < t->arr.len; i++) {
		const struct value *user = value_get(t->arr.items[i], "user");
		const struct value *from = value_get(t->arr.items[i], "user_from");
		for (size_t j = 0; user && from && j < user->arr.len && j < from->arr.len; j++)
			if (!strcmp(from->arr.items[j]->s, "python")) { /* the innermost Python frame */
				free(user->arr.items[j]->s);
				user->arr.items[j]->s = xstrdup("Condition.wait (/usr/lib/python3.11/threading.py:320)");
				break;
			}
	}
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_null(verdict_find(v, "likely-deadlock"));
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "idle");
	value_free(v);
	value_free(fx);
}

static void test_idle_snapshot_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("latency", "idle-snapshot");
	struct value *fx = incident("latency", "idle-snapshot");
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_int_equal(v->arr.len, 1);
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "info");
	assert_has(title0(v), "a condition variable in wait_for_job()");
	value_free(v);
	value_free(fx);
}

/* ---- triage ---------------------------------------------------------------------------------- */

static void test_triage_deadlock_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("triage", "deadlock");
	struct value *fx = incident("triage", "deadlock");
	struct value *v = recorded_verdicts("triage", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "deadlock");
	assert_string_equal(value_get_str(value_get(verdict(v, 0), "next"), "recipe"), "latency");
	assert_has(title0(v), "transfer_funds()");
	assert_has(title0(v), "run_audit()");
	value_free(v);
	value_free(fx);
}

static void test_triage_fuse_recorded(void **state)
{
	(void)state;
	assert_recorded_verdicts("triage", "fuse-stuck");
	struct value *fx = incident("triage", "fuse-stuck");
	struct value *v = recorded_verdicts("triage", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "stuck-in-kernel");
	assert_string_equal(value_get_str(value_get(verdict(v, 0), "next"), "recipe"), "latency");
	assert_has(title0(v), "/mnt/data/app.conf");
	value_free(v);
	value_free(fx);
}

/* Without the snapshot (a report recorded before it, or a probe that did not run): the old
 * verdict, idle with the threads blocked throughout, never a snapshot finding. */
static void test_without_snapshot(void **state)
{
	(void)state;
	struct value *fx = incident("latency", "deadlock");
	value_obj_drop((struct value *)value_get(fx, "results"), "threads");
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "idle");
	value_free(v);
	value_free(fx);
}

/* The incident as a run whose end snapshot was not taken (its read ran past the collection's
 * deadline: seen on 6.1-rt under emulation, the uprobes' release first): the threads' list is
 * empty and `why` says so. */
static struct value *without_end_snapshot(const char *recipe, const char *name)
{
	struct value *fx = incident(recipe, name);
	struct value *res = (struct value *)value_get(value_get(fx, "results"), "threads");
	struct value *end = (struct value *)value_get(value_get(res, "snapshots"), "end");
	assert_non_null(end);
	value_set_int(end, "threads", 0);
	value_set_str(res, "why", "the task iterator could not be read: past its deadline");
	value_set_str(res, "not_taken", "the task iterator could not be read: past its deadline");
	value_obj_set(res, "threads", value_arr());
	value_set_int(res, "threads_reported", 0);
	return fx;
}

/* Threads blocked throughout with the snapshot missing: parked or deadlocked is not known, and
 * neither latency nor triage calls them idle (nor deadlocked). */
static void test_snapshot_not_taken(void **state)
{
	(void)state;
	struct value *fx = without_end_snapshot("latency", "deadlock");
	struct value *v = recorded_verdicts("latency", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "blocked-unknown");
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "warning");
	assert_has(title0(v), "past its deadline");
	for (size_t i = 0; i < v->arr.len; i++)
		assert_string_not_equal(value_get_str(verdict(v, i), "id"), "idle");
	value_free(v);
	value_free(fx);

	fx = without_end_snapshot("triage", "deadlock");
	v = recorded_verdicts("triage", fx, NULL, false);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "blocked-unknown");
	assert_string_equal(value_get_str(value_get(verdict(v, 0), "next"), "recipe"), "latency");
	for (size_t i = 0; i < v->arr.len; i++) {
		assert_string_not_equal(value_get_str(verdict(v, i), "id"), "idle");
		assert_string_not_equal(value_get_str(verdict(v, i), "id"), "deadlock");
	}
	value_free(v);
	value_free(fx);

	/* the target exited: nothing is left to be stuck, and the old verdict stands */
	fx = without_end_snapshot("latency", "deadlock");
	value_set_str((struct value *)value_get(fx, "run"), "stop_reason", "target-exited");
	v = recorded_verdicts("latency", fx, NULL, false);
	for (size_t i = 0; i < v->arr.len; i++)
		assert_string_not_equal(value_get_str(verdict(v, i), "id"), "blocked-unknown");
	value_free(v);
	value_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadlock_recorded),
		cmocka_unit_test(test_deadlock_cycle_of_three),
		cmocka_unit_test(test_broken_cycle),
		cmocka_unit_test(test_pi_mutex_owner),
		cmocka_unit_test(test_not_diluted_by_idle_threads),
		cmocka_unit_test(test_short_blocks_are_not_stuck),
		cmocka_unit_test(test_held_lock_recorded),
		cmocka_unit_test(test_fuse_recorded),
		cmocka_unit_test(test_fuse_interruptible),
		cmocka_unit_test(test_python_deadlock_recorded),
		cmocka_unit_test(test_python_condition_is_idle),
		cmocka_unit_test(test_idle_snapshot_recorded),
		cmocka_unit_test(test_triage_deadlock_recorded),
		cmocka_unit_test(test_triage_fuse_recorded),
		cmocka_unit_test(test_without_snapshot),
		cmocka_unit_test(test_snapshot_not_taken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
