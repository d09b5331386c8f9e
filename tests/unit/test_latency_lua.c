/* test_latency_lua.c — lua/latency.lua on trimmed incidents: reports that `diagnose latency --json`
 * wrote on the latency workloads (tests/fixtures/trimmed/latency/NAME.json: a process sleeping in
 * slow_op, four threads contending for one mutex, an idle thread pool; stacks and syscalls
 * trimmed), each checked against the probes' declared shapes, must give the verdicts they gave
 * live; and the same trees edited into causes the live tests do not produce yet (blocked on the
 * disk, starved of CPU) must be classified as such. No root, no BPF: the snippet runs in this
 * process (verdict_run_inprocess).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "common/json_parse.h"
#include "recipe/recipe.h"
#include "plan/shape.h"
#include "recipe/source.h"
#include "recorded_verdicts.h"
#include "runtime_stacks.h"
#include "verdict/verdict.h"

static struct value *load_incident(const char *name) { return trimmed_incident("latency", name); }

/* lua/latency.lua with recipes/latency.yaml's thresholds on a trimmed incident; the verdicts
 * (caller frees). */
static struct value *latency(const struct value *incident)
{
	return recorded_verdicts("latency", incident, NULL, false);
}

#define verdict verdict_at

static void assert_as_recorded(const char *name) { assert_recorded_verdicts("latency", name); }

static void test_sleep_recorded(void **state)
{
	(void)state;
	assert_as_recorded("sleep");
	struct value *fx = load_incident("sleep");
	struct value *v = latency(fx);
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "warning"); /* never critical */
	assert_non_null(strstr(value_get_str(verdict(v, 0), "title"), "slow_op()"));
	value_free(v);
	value_free(fx);
}

static void test_lock_recorded(void **state)
{
	(void)state;
	assert_as_recorded("lock");
	struct value *fx = load_incident("lock");
	struct value *v = latency(fx);
	const char *title = value_get_str(verdict(v, 0), "title");
	assert_non_null(strstr(title, "Lock contention"));
	/* the waiters' path, unwound through glibc, and the holder their wakers name */
	assert_non_null(strstr(title, "handle_request()"));
	assert_non_null(strstr(title, "held by compact_state()"));
	value_free(v);
	value_free(fx);
}

/* With no waker seen releasing the lock (the wakers probe's stacks emptied), the verdict still names the waiters' function and
 * says how to find the holder, without naming one. */
static void test_lock_without_wakers(void **state)
{
	(void)state;
	struct value *fx = load_incident("lock");
	struct value *wakers = (struct value *)value_get(value_get(fx, "results"), "wakers");
	assert_non_null(wakers);
	value_obj_set(wakers, "stacks", value_arr());
	struct value *v = latency(fx);
	const char *title = value_get_str(verdict(v, 0), "title");
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "lock-contention");
	assert_non_null(strstr(title, "handle_request()"));
	assert_null(strstr(title, "held by"));
	const struct value *steps = value_get(verdict(v, 0), "next_steps");
	assert_non_null(steps);
	assert_non_null(strstr(steps->arr.items[0]->s, "offwaketime"));
	value_free(v);
	value_free(fx);
}

static void test_idle_recorded(void **state)
{
	(void)state;
	assert_as_recorded("idle");
	struct value *fx = load_incident("idle");
	struct value *v = latency(fx);
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "info");
	value_free(v);
	value_free(fx);
}

/* The sleeping process's stacks, made uninterruptible in the block layer: disk-io. */
static void test_disk_from_edited_stacks(void **state)
{
	(void)state;
	struct value *fx = load_incident("sleep");
	struct value *stacks = (struct value *)value_get(value_get(value_get(fx, "results"), "offcpu"), "stacks");
	for (size_t i = 0; i < stacks->arr.len; i++) {
		struct value *s = stacks->arr.items[i];
		value_set_str(s, "tag", "uninterruptible");
		struct value *k = value_obj_set(s, "kernel", value_arr());
		value_arr_push(k, value_str("__schedule"));
		value_arr_push(k, value_str("io_schedule"));
		value_arr_push(k, value_str("folio_wait_bit_common"));
		value_arr_push(k, value_str("filemap_read"));
	}
	struct value *v = latency(fx);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "disk-io");
	assert_non_null(strstr(value_get_str(verdict(v, 0), "title"), "slow_op()"));
	value_free(v);
	value_free(fx);
}

/* The idle pool's run queue, made slow: cpu-starved, and no idle verdict beside it. */
static void test_starved_from_edited_runq(void **state)
{
	(void)state;
	struct value *fx = load_incident("idle");
	struct value *runq = (struct value *)value_get(value_get(fx, "results"), "runq");
	struct value *b = value_obj_set(runq, "buckets", value_arr());
	struct value *slot = value_arr_push(b, value_obj());
	value_set_int(slot, "lo", 65536); /* p99 >= 10 x runq_p99_warn_us */
	value_set_int(slot, "hi", 131071);
	value_set_int(slot, "count", 100);
	value_set_int(runq, "count", 100);
	value_set_int(runq, "total_us", 2000000);
	value_set_int(runq, "max_us", 120000);
	struct value *v = latency(fx);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "cpu-starved");
	for (size_t i = 0; i < v->arr.len; i++)
		assert_string_not_equal(value_get_str(verdict(v, i), "id"), "idle");
	value_free(v);
	value_free(fx);
}

/* Its control: a p99 over the warning but under ten times it, with the threads hardly ever
 * runnable (one preemption on a busy box), is no starvation: the idle verdict stays. */
static void test_not_starved_by_one_slow_wait(void **state)
{
	(void)state;
	struct value *fx = load_incident("idle");
	struct value *runq = (struct value *)value_get(value_get(fx, "results"), "runq");
	struct value *b = value_obj_set(runq, "buckets", value_arr());
	struct value *slot = value_arr_push(b, value_obj());
	value_set_int(slot, "lo", 8192);
	value_set_int(slot, "hi", 16383);
	value_set_int(slot, "count", 30);
	value_set_int(runq, "count", 30);
	value_set_int(runq, "total_us", 300000);
	value_set_int(runq, "max_us", 12000);
	struct value *v = latency(fx);
	assert_int_equal(v->arr.len, 1);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "idle");
	value_free(v);
	value_free(fx);
}

/* ---- real servers' waits, named by the wait table (synthetic stacks: runtime_stacks.h) -------- */

/* The idle pool's fixture (1.8 s, no CPU) with these stacks; latency's verdicts. */
static struct value *latency_on(int threads, const char *stacks)
{
	struct value *fx = incident_with_stacks("latency", "idle", threads, stacks);
	struct value *v = latency(fx);
	value_free(fx);
	return v;
}

static const struct value *find_verdict(const struct value *v, const char *id)
{
	for (size_t i = 0; i < v->arr.len; i++)
		if (!strcmp(value_get_str(verdict(v, i), "id"), id))
			return verdict(v, i);
	return NULL;
}

/* No verdict above info. */
static void assert_no_warning(const struct value *v)
{
	for (size_t i = 0; i < v->arr.len; i++) {
		const char *sev = value_get_str(verdict(v, i), "severity");
		if (!strcmp(sev, "warning") || !strcmp(sev, "critical"))
			fail_msg("%s %s: %s", sev, value_get_str(verdict(v, i), "id"), value_get_str(verdict(v, i), "title"));
	}
}

static void assert_title_has(const struct value *item, const char *text)
{
	assert_non_null(item);
	if (!strstr(value_get_str(item, "title"), text))
		fail_msg("%s: %s (want %s)", value_get_str(item, "id"), value_get_str(item, "title"), text);
}

/* Four backends: one waits 20% of the threads' time for a row lock (its UPDATE behind an open
 * transaction), the others wait for their clients: a lock wait in PostgreSQL's words, warning
 * (cause_pct_warn 10, crit 40), with the pg_blocking_pids query first. */
static void test_postgres_row_lock(void **state)
{
	(void)state;
	struct value *v = latency_on(4, "[" STACK("postgres", K_EPOLL, PG_ROW_LOCK, 3, 1500000000) ","
				     STACK("postgres", K_EPOLL, PG_CLIENT_READ, 9, 5400000000) "]");
	const struct value *lock = verdict(v, 0);
	assert_string_equal(value_get_str(lock, "id"), "lock-contention");
	assert_string_equal(value_get_str(lock, "severity"), "warning");
	assert_title_has(lock, "Lock wait: threads wait 20% of their time for a heavyweight lock (row or transaction) in LockAcquireExtended ← XactLockTableWait");
	const struct value *steps = value_get(lock, "next_steps");
	/* PostgreSQL's own recipe first, and as the follow-up; then pg_stat_activity's blockers */
	assert_non_null(strstr(steps->arr.items[0]->s, "Run next: diagnose postgres-slow --pid"));
	assert_string_equal(value_get_str(value_get(lock, "next"), "recipe"), "postgres-slow");
	assert_non_null(strstr(steps->arr.items[1]->s, "pg_blocking_pids(pid)"));
	assert_null(find_verdict(v, "idle")); /* a finding: not idle */
	value_free(v);
	/* under the threshold (5%): ruled out, the backends idle for their clients */
	v = latency_on(4, "[" STACK("postgres", K_EPOLL, PG_ROW_LOCK, 1, 360000000) ","
			  STACK("postgres", K_EPOLL, PG_CLIENT_READ, 9, 6500000000) "]");
	assert_no_warning(v);
	assert_title_has(find_verdict(v, "idle"), "for the client's next command (the backend is idle in its session) in secure_read ← pq_getbyte");
	value_free(v);
}

/* The control: the same backends, no holder: idle for their clients (info), whether the build
 * keeps ReadCommand or inlines it; the background writer between rounds is idle too. */
static void test_postgres_idle_control(void **state)
{
	(void)state;
	struct value *v = latency_on(3, "[" STACK("postgres", K_EPOLL, PG_CLIENT_READ, 9, 3000000000) ","
				     STACK("postgres", K_EPOLL, PG_CLIENT_READ_FULL, 6, 1500000000) ","
				     STACK("postgres", K_EPOLL, PG_BGWRITER, 9, 900000000) "]");
	assert_no_warning(v);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "idle");
	assert_title_has(verdict(v, 0), "for the client's next command");
	value_free(v);
}

/* An nginx worker parked in its event loop: event-loop, info, never idle or a warning. */
static void test_nginx_event_loop(void **state)
{
	(void)state;
	struct value *v = latency_on(2, "[" STACK("nginx", K_EPOLL, NGINX_WORKER, 400, 3400000000) "]");
	assert_no_warning(v);
	const struct value *loop = verdict(v, 0);
	assert_string_equal(value_get_str(loop, "id"), "event-loop");
	assert_string_equal(value_get_str(loop, "severity"), "info");
	assert_title_has(loop, "events (the worker's event loop) in ngx_process_events_and_timers");
	assert_title_has(loop, "needs the peers probe (peer_wait)");
	value_free(v);
}

/* The worker of test_nginx_event_loop with the peers probe's results (as peer_wait reports them,
 * trimmed): it serves 127.0.0.1:8080 and waits on an upstream at 127.0.0.1:9000 answering in
 * UP_LO..UP_HI ns. */
#define NGINX_PEERS(UP_LO, UP_HI)                                                                  \
	"{\"unit\":\"ns\",\"waits\":1200,\"sockets\":20,\"seeded\":9,\"inferred\":0,\"dropped\":0,"  \
	"\"peers\":[{\"role\":\"server\",\"family\":\"tcp\",\"peer\":\"127.0.0.1:8080\",\"port\":8080," \
	"\"count\":600,\"total_ns\":31000000000,\"max_ns\":60000000,\"open\":6,\"open_oldest_ns\":20000000," \
	"\"buckets\":[{\"lo\":" #UP_LO ",\"hi\":" #UP_HI ",\"count\":600}]},"                        \
	"{\"role\":\"client\",\"family\":\"tcp\",\"peer\":\"127.0.0.1:9000\",\"port\":9000,"       \
	"\"count\":600,\"total_ns\":30000000000,\"max_ns\":58000000,\"open\":6,\"open_oldest_ns\":20000000," \
	"\"buckets\":[{\"lo\":" #UP_LO ",\"hi\":" #UP_HI ",\"count\":600}]}]}"

static struct value *latency_with_peers(int threads, const char *stacks, const char *peers_json)
{
	struct value *fx = incident_with_stacks("latency", "idle", threads, stacks);
	struct value *res = (struct value *)value_get(fx, "results");
	struct diag_err err;
	struct value *peers = json_parse(peers_json, strlen(peers_json), NULL, &err);
	if (!peers)
		fail_msg("peers: %s", err.msg);
	value_obj_set(res, "peers", peers);
	struct value *v = latency(fx);
	value_free(fx);
	return v;
}

/* With the peers probe, the parked worker whose requests wait 48-56 ms on its upstream is
 * slow-upstream, naming the peer and its p50; the control, the upstream answering in 0.2-0.3
 * ms, stays an event loop waiting for work, the upstream named as fast. */
static void test_nginx_slow_upstream(void **state)
{
	(void)state;
	struct value *v = latency_with_peers(2, "[" STACK("nginx", K_EPOLL, NGINX_WORKER, 400, 3400000000) "]",
					     NGINX_PEERS(48000000, 56000000));
	const struct value *up = find_verdict(v, "slow-upstream");
	assert_non_null(up);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "slow-upstream");
	assert_string_not_equal(value_get_str(up, "severity"), "info");
	assert_title_has(up, "Requests wait on upstream 127.0.0.1:9000: p50 52");
	assert_null(find_verdict(v, "idle"));
	assert_null(find_verdict(v, "event-loop"));
	value_free(v);

	v = latency_with_peers(2, "[" STACK("nginx", K_EPOLL, NGINX_WORKER, 400, 3400000000) "]",
			       NGINX_PEERS(200000, 300000));
	assert_no_warning(v);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "event-loop");
	assert_title_has(verdict(v, 0), "its upstreams answer fast (127.0.0.1:9000 in p50 250");
	value_free(v);
}

/* Java threads parked briefly and often (a contended ReentrantLock): park-wait; the control, the
 * same parks long (an idle pool): idle. */
static void test_jvm_park(void **state)
{
	(void)state;
	struct value *v = latency_on(4, "[" STACK("java", K_FUTEX, JVM_PARK, 20000, 2000000000) "]");
	const struct value *park = verdict(v, 0);
	assert_string_equal(value_get_str(park, "id"), "park-wait");
	assert_string_equal(value_get_str(park, "severity"), "warning");
	assert_title_has(park, "LockSupport.park (a java.util.concurrent lock or condition) in Parker::park ← Unsafe_Park");
	assert_non_null(strstr(value_get(park, "next_steps")->arr.items[0]->s, "jstack -l "));
	value_free(v);
	v = latency_on(4, "[" STACK("java", K_FUTEX, JVM_PARK, 40, 6000000000) "]");
	assert_no_warning(v);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "idle");
	value_free(v);
}

/* CPython threads waiting for the GIL: gil-wait; the control, workers waiting on their queue
 * (long lock waits): idle. */
static void test_cpython_gil(void **state)
{
	(void)state;
	struct value *v = latency_on(4, "[" STACK("python3", K_FUTEX, PY_GIL, 30000, 2200000000) "]");
	const struct value *gil = verdict(v, 0);
	assert_string_equal(value_get_str(gil, "id"), "gil-wait");
	assert_string_equal(value_get_str(gil, "severity"), "warning");
	assert_title_has(gil, "GIL contention: threads wait 30% of their time for the GIL (take_gil) in PyEval_RestoreThread ← _PyEval_EvalFrameDefault");
	value_free(v);
	v = latency_on(4, "[" STACK("python3", K_FUTEX, PY_QUEUE_WAIT, 60, 6500000000) "]");
	assert_no_warning(v);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "idle");
	value_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sleep_recorded),
		cmocka_unit_test(test_lock_recorded),
		cmocka_unit_test(test_lock_without_wakers),
		cmocka_unit_test(test_idle_recorded),
		cmocka_unit_test(test_disk_from_edited_stacks),
		cmocka_unit_test(test_starved_from_edited_runq),
		cmocka_unit_test(test_not_starved_by_one_slow_wait),
		cmocka_unit_test(test_postgres_row_lock),
		cmocka_unit_test(test_postgres_idle_control),
		cmocka_unit_test(test_nginx_event_loop),
		cmocka_unit_test(test_nginx_slow_upstream),
		cmocka_unit_test(test_jvm_park),
		cmocka_unit_test(test_cpython_gil),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
