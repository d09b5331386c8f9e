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

#include "catalog.h"
#include "json_parse.h"
#include "recipe.h"
#include "shape.h"
#include "source.h"
#include "recorded_verdicts.h"
#include "verdict.h"

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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
