/* test_io_lua.c — lua/io-saturation.lua on trimmed incidents: reports that `diagnose io-saturation
 * --json` wrote on the io_load workloads (tests/fixtures/trimmed/io-saturation/NAME.json, recorded
 * by tests/e2e/t_io.sh with IO_KEEP_REPORTS and trimmed by `tests/fixtures/record.sh --trim`:
 * submitter, syscall and stack lists cut), each checked against the probes' declared shapes, must
 * give the verdicts they gave live, naming what the live test asserts; and the same trees edited
 * into causes the live tests do not produce (a slow device at low depth, io.max on cgroup v2, a
 * sampled run, missing probes) must be classified as such. No root, no BPF: the snippet runs in
 * this process.
 * Must not: depend on the machine it runs on.
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
#include "verdict/verdict.h"

static struct value *load_incident(const char *name)
{
	return trimmed_incident("io-saturation", name);
}

/* lua/io-saturation.lua with recipes/io-saturation.yaml's thresholds on a trimmed incident; the
 * verdicts (caller frees). */
static struct value *io_verdicts(const struct value *incident)
{
	return recorded_verdicts("io-saturation", incident, NULL, true);
}

#define verdict verdict_at
#define find_verdict verdict_find
#define evidence_has verdict_evidence_has

/* The trimmed incident's live verdict ids, in order, are what the snippet gives on its results;
 * every verdict but ok and incomplete-data says which rule fired. */
static void assert_as_recorded(const char *name)
{
	struct value *fx = load_incident(name);
	struct value *v = io_verdicts(fx);
	const struct value *want = value_get(fx, "verdicts");
	if (v->arr.len != want->arr.len)
		fail_msg("%s: %zu verdicts, recorded %zu (first: %s)", name, v->arr.len, want->arr.len,
			 v->arr.len ? value_get_str(verdict(v, 0), "id") : "none");
	for (size_t i = 0; i < want->arr.len; i++) {
		assert_string_equal(value_get_str(verdict(v, i), "id"), want->arr.items[i]->s);
		const char *id = want->arr.items[i]->s;
		if (strcmp(id, "incomplete-data") != 0)
			assert_true(evidence_has(verdict(v, i), "rule: "));
	}
	value_free(v);
	value_free(fx);
}

/* The recorded run's own text: file names and pids differ from run to run. */
static const char *expected_str(const struct value *fx, const char *key)
{
	const char *s = value_get_str(value_get(fx, "expect"), key);
	if (!s)
		fail_msg("trimmed incident has no expect.%s", key);
	return s;
}

static void test_journal(void **state)
{
	(void)state;
	assert_as_recorded("journal");
	struct value *fx = load_incident("journal");
	struct value *v = io_verdicts(fx);
	const char *title = value_get_str(verdict(v, 0), "title");
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "sync-bound");
	assert_non_null(strstr(title, "fsync"));
	assert_non_null(strstr(title, expected_str(fx, "file")));
	assert_non_null(strstr(title, expected_str(fx, "device")));
	assert_true(evidence_has(verdict(v, 0), "journal_run"));
	value_free(v);
	value_free(fx);
}

static void test_journal_host(void **state)
{
	(void)state;
	assert_as_recorded("journal-host");
	struct value *fx = load_incident("journal-host");
	struct value *v = io_verdicts(fx);
	const struct value *s = find_verdict(v, "sync-bound");
	assert_non_null(s);
	assert_non_null(strstr(value_get_str(s, "title"), expected_str(fx, "file")));
	/* host-wide the frames are not symbolized: the verdict says how to get them */
	assert_true(evidence_has(s, "run with --pid"));
	value_free(v);
	value_free(fx);
}

static void test_logger_ok(void **state)
{
	(void)state;
	assert_as_recorded("logger");
	struct value *fx = load_incident("logger");
	struct value *v = io_verdicts(fx);
	assert_int_equal(v->arr.len, 1);
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "ok");
	value_free(v);
	value_free(fx);
	assert_as_recorded("logger-host");
}

static void test_randread_saturated(void **state)
{
	(void)state;
	assert_as_recorded("randread");
	assert_as_recorded("randread-host");
	struct value *fx = load_incident("randread");
	struct value *v = io_verdicts(fx);
	const char *title = value_get_str(verdict(v, 0), "title");
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "device-saturated");
	assert_non_null(strstr(title, expected_str(fx, "device")));
	assert_non_null(strstr(title, "io_load"));
	assert_non_null(find_verdict(v, "small-random-io"));
	value_free(v);
	value_free(fx);
}

static void test_throttled(void **state)
{
	(void)state;
	assert_as_recorded("throttled");
	assert_as_recorded("throttled-host");
	struct value *fx = load_incident("throttled");
	struct value *v = io_verdicts(fx);
	const struct value *t = find_verdict(v, "cgroup-throttled");
	assert_non_null(t);
	assert_non_null(strstr(value_get_str(t, "title"), "read_bps_device"));
	assert_non_null(strstr(value_get_str(t, "title"), expected_str(fx, "device")));
	assert_null(find_verdict(v, "held-above-device")); /* the cgroup rule says it already */
	value_free(v);
	value_free(fx);
}

/* The cgroup limit as v2 io.max would give it: the verdict names io.max. */
static void test_throttled_v2_edited(void **state)
{
	(void)state;
	struct value *fx = load_incident("throttled");
	struct value *cg = (struct value *)value_get(value_get(value_get(fx, "results"), "context"), "io");
	cg = (struct value *)value_get(cg, "cgroup");
	value_set_int(cg, "version", 2);
	struct value *v = io_verdicts(fx);
	const struct value *t = find_verdict(v, "cgroup-throttled");
	assert_non_null(t);
	assert_non_null(strstr(value_get_str(t, "title"), "io.max rbps"));
	value_free(v);
	value_free(fx);
}

/* The logger's disk, edited into a slow one: p99 of the service time at 64..127 ms, depth 1. */
static void test_slow_device_edited(void **state)
{
	(void)state;
	struct value *fx = load_incident("logger");
	struct value *devs = (struct value *)value_get(value_get(value_get(fx, "results"), "blk"), "devices");
	assert_true(devs->arr.len > 0);
	struct value *d = devs->arr.items[0];
	struct value *svc = (struct value *)value_get(d, "service");
	struct value *b = value_obj_set(svc, "buckets", value_arr());
	struct value *slot = value_arr_push(b, value_obj());
	value_set_int(slot, "lo", 65536);
	value_set_int(slot, "hi", 131071);
	value_set_int(slot, "count", 100);
	value_set_int(d, "ios", 100);
	value_set_num(d, "avg_in_queue_and_service", 0.5);
	value_set_num(d, "await_avg_us", 80000);
	struct value *depth = (struct value *)value_get(d, "depth");
	value_set_num(depth, "avg_at_entry", 1.0);
	struct value *v = io_verdicts(fx);
	const struct value *s = find_verdict(v, "device-slow");
	assert_non_null(s);
	assert_non_null(strstr(value_get_str(s, "title"), value_get_str(d, "name")));
	/* with --pid, a device the logger barely waits on is information, not a warning */
	assert_string_equal(value_get_str(s, "severity"), "info");
	assert_null(find_verdict(v, "ok"));
	value_free(v);

	/* without block_io's queue_depth (the recipe's default) no depth at entry: the mean depth
	 * over time (aqu-sz 0.5) says the same, and the evidence says where busy time came from */
	value_obj_drop(d, "depth");
	value_obj_drop(d, "busy_pct");
	v = io_verdicts(fx);
	s = find_verdict(v, "device-slow");
	assert_non_null(s);
	assert_non_null(strstr(value_get_str(s, "title"), "at a mean depth of 0.5"));
	assert_false(verdict_evidence_has(s, "depth at entry"));
	value_free(v);
	/* queueing (aqu-sz 8) is not a slow device */
	value_set_num(d, "avg_in_queue_and_service", 8);
	v = io_verdicts(fx);
	assert_null(find_verdict(v, "device-slow"));
	value_free(v);
	value_free(fx);
}

/* A sampled run and a missing probe: incomplete-data says both. */
static void test_incomplete_edited(void **state)
{
	(void)state;
	struct value *fx = load_incident("journal");
	struct value *res = (struct value *)value_get(fx, "results");
	value_set_int((struct value *)value_get(res, "blk"), "sampled_1_in", 4);
	/* the same results without the sampler's */
	value_obj_drop(res, "context");
	struct value *v = io_verdicts(fx);
	const struct value *inc = find_verdict(v, "incomplete-data");
	assert_non_null(inc);
	assert_non_null(strstr(value_get_str(inc, "title"), "blk sampled 1 in 4"));
	assert_non_null(strstr(value_get_str(inc, "title"), "context missing"));
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "sync-bound"); /* still found */
	value_free(v);
	value_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal),
		cmocka_unit_test(test_journal_host),
		cmocka_unit_test(test_logger_ok),
		cmocka_unit_test(test_randread_saturated),
		cmocka_unit_test(test_throttled),
		cmocka_unit_test(test_throttled_v2_edited),
		cmocka_unit_test(test_slow_device_edited),
		cmocka_unit_test(test_incomplete_edited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
