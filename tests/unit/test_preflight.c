/* test_preflight.c — the budget decision on what the pre-flight counted (engine/plan/preflight.c):
 * rates per second from the window's counts, under budget untouched, over budget sampled (only
 * probes whose kind can sample, only with `degrade: sample`) or refused with a message naming the
 * worst probe, unmeasured and not-event-driven probes never counted as 0 events, the window at
 * most half the duration, and the plan never changed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "plan/preflight.h"

struct fixture {
	struct recipe recipe;
	struct recipe_probe rps[3];
	struct plan_probe pps[3];
	struct plan plan;
	struct preflight_rate rates[3];
};

/* Three probes: syscalls (syscall_stats: can sample), op (func_latency: cannot), ctx
 * (proc_context: no BPF). 100 ms window, budget 10k events/s. */
static void setup(struct fixture *f, bool degrade)
{
	static char *ids[] = { "syscalls", "op", "ctx" };
	static const char *kinds[] = { "syscall_stats", "func_latency", "proc_context" };
	memset(f, 0, sizeof(*f));
	f->recipe.budgets.max_events_per_s = 10000;
	f->recipe.budgets.degrade_sample = degrade;
	f->recipe.budgets.preflight_ms = 100;
	f->plan.recipe = &f->recipe;
	f->plan.ncpus = 2;
	f->plan.duration_s = 5;
	f->plan.probes = f->pps;
	f->plan.n_probes = 3;
	for (int i = 0; i < 3; i++) {
		f->rps[i].id = ids[i];
		f->pps[i].rp = &f->rps[i];
		f->pps[i].kind = catalog_find(kinds[i]);
		assert_non_null(f->pps[i].kind);
		for (size_t o = 0; o < f->pps[i].kind->n_options; o++)
			f->pps[i].cfg.opt[o] = f->pps[i].kind->options[o].dflt;
		f->rates[i].status = RATE_MEASURED;
	}
	f->rates[2].status = RATE_NOT_EVENT_DRIVEN;
}

static const struct preflight_window window = { .planned_ms = 100, .wall_s = 0.1, .bpf_stats = true };

static void test_under_budget(void **state)
{
	(void)state;
	struct fixture f;
	struct diag_err err = { 0 };
	struct value *sum = NULL;
	setup(&f, false);
	f.rates[0].passed = 500; /* 5k/s */
	f.rates[0].firings = 800;
	f.rates[0].bpf_ns = 2000000;
	f.rates[1].passed = 300; /* 3k/s */
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, &sum, &err), 0);
	assert_true(f.rates[0].events_per_s > 4999 && f.rates[0].events_per_s < 5001);
	assert_true(f.rates[0].firings_per_s > 7999 && f.rates[0].firings_per_s < 8001);
	assert_int_equal(f.rates[0].sample_every, 1);
	assert_false(f.rates[0].degraded);
	assert_int_equal((int)value_get_num(sum, "events_per_s", -1), 8000);
	const struct value *probes = value_get(sum, "probes");
	assert_string_equal(value_get_str(value_get(probes, "ctx"), "rate"), "not event-driven");
	assert_null(value_get(value_get(probes, "ctx"), "events_per_s"));
	assert_string_equal(value_get_str(value_get(probes, "op"), "rate"), "measured");
	/* 2 ms of BPF time in 0.1 s on 2 CPUs: 1% */
	assert_true(value_get_num(sum, "estimated_bpf_cpu_pct_min", 0) > 0.999 &&
		    value_get_num(sum, "estimated_bpf_cpu_pct_min", 0) < 1.001);
	value_free(sum);
}

static void test_over_budget_refused_without_degrade(void **state)
{
	(void)state;
	struct fixture f;
	struct diag_err err = { 0 };
	struct value *sum = NULL;
	setup(&f, false);
	f.rates[0].passed = 5000; /* 50k/s */
	f.rates[1].passed = 100;
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, &sum, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_REFUSED);
	assert_non_null(strstr(err.msg, "measured 51.0k/s events in a 100 ms pre-flight (mostly probe syscalls)"));
	assert_non_null(strstr(err.msg, "declare `degrade: sample`"));
	assert_int_equal(f.rates[0].sample_every, 1);
	assert_non_null(sum); /* the report still gets the measurement */
	value_free(sum);
}

static void test_degrade_samples_only_what_can(void **state)
{
	(void)state;
	struct fixture f;
	struct diag_err err = { 0 };
	setup(&f, true);
	uint64_t before = f.pps[0].cfg.opt[1];
	f.rates[0].passed = 4000; /* 40k/s */
	f.rates[1].passed = 100;  /* 1k/s */
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, NULL, &err), 0);
	assert_true(f.rates[0].degraded);
	assert_int_equal(f.rates[0].sample_every, 5); /* ceil(41k / 10k) */
	assert_false(f.rates[1].degraded);
	assert_int_equal(f.rates[1].sample_every, 1);
	assert_int_equal(f.pps[0].cfg.opt[1], before); /* the plan is not changed */
}

/* A probe that cannot sample takes most of the budget: the ones that can must sample more than
 * the overall excess (40k + 8k fixed, 10k allowed: 1 in 20, not 1 in 5). */
static void test_degrade_leaves_room_for_the_fixed(void **state)
{
	(void)state;
	struct fixture f;
	struct diag_err err = { 0 };
	setup(&f, true);
	f.rates[0].passed = 4000; /* 40k/s, can sample */
	f.rates[1].passed = 800;  /* 8k/s, cannot */
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, NULL, &err), 0);
	assert_int_equal(f.rates[0].sample_every, 20);
	assert_int_equal(f.rates[1].sample_every, 1);
}

/* A probe under a quarter of the busiest is spared sampling, but not when the spared are over
 * the budget by themselves (a `yes | cat` reader under latency, CI: 400k syscalls/s, three probes
 * near 100k each, 200k allowed — refused before): then every probe that can sample does. */
static void test_degrade_does_not_spare_past_the_budget(void **state)
{
	(void)state;
	struct fixture f;
	struct diag_err err = { 0 };
	setup(&f, true);
	f.pps[2].kind = catalog_find("off_cpu");
	assert_non_null(f.pps[2].kind);
	assert_true(catalog_sample_option(f.pps[2].kind) >= 0);
	for (size_t o = 0; o < f.pps[2].kind->n_options; o++)
		f.pps[2].cfg.opt[o] = f.pps[2].kind->options[o].dflt;
	f.rates[2].status = RATE_MEASURED;
	f.rates[0].passed = 5000; /* 50k/s, the busiest */
	f.rates[2].passed = 1200; /* 12k/s: under a quarter of it, over the 10k allowed */
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, NULL, &err), 0);
	assert_true(f.rates[0].degraded && f.rates[2].degraded);
	assert_int_equal(f.rates[0].sample_every, 7); /* ceil(62k / 10k), both */
	assert_int_equal(f.rates[2].sample_every, 7);
	/* spared while the rest can fit: 1k/s next to 50k (1 in 6 for the busiest) */
	setup(&f, true);
	f.pps[2].kind = catalog_find("off_cpu");
	for (size_t o = 0; o < f.pps[2].kind->n_options; o++)
		f.pps[2].cfg.opt[o] = f.pps[2].kind->options[o].dflt;
	f.rates[2].status = RATE_MEASURED;
	f.rates[0].passed = 5000;
	f.rates[2].passed = 100;
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, NULL, &err), 0);
	assert_false(f.rates[2].degraded);
	assert_int_equal(f.rates[0].sample_every, 6);
}

static void test_degrade_impossible_refuses(void **state)
{
	(void)state;
	struct fixture f;
	struct diag_err err = { 0 };
	setup(&f, true);
	f.rates[0].passed = 10;
	f.rates[1].passed = 5000; /* the uprobe probe cannot sample */
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "mostly probe op"));
	assert_non_null(strstr(err.msg, "cannot sample"));
}

static void test_unmeasured_is_not_zero(void **state)
{
	(void)state;
	struct fixture f;
	struct diag_err err = { 0 };
	struct value *sum = NULL;
	setup(&f, false);
	f.rates[1].status = RATE_UNMEASURED;
	f.rates[1].passed = 999999; /* ignored: not measured */
	assert_int_equal(preflight_decide(&f.plan, &window, f.rates, &sum, &err), 0);
	const struct value *op = value_get(value_get(sum, "probes"), "op");
	assert_string_equal(value_get_str(op, "rate"), "unmeasured");
	assert_null(value_get(op, "events_per_s"));
	value_free(sum);
}

static void test_window_ms(void **state)
{
	(void)state;
	struct fixture f;
	setup(&f, false);
	assert_int_equal(preflight_window_ms(&f.plan), 100);
	f.recipe.budgets.preflight_ms = 0;
	assert_int_equal(preflight_window_ms(&f.plan), 250);
	f.plan.duration_s = 0.3;
	assert_int_equal(preflight_window_ms(&f.plan), 150);
	f.plan.n_probes = 0; /* nothing event-driven: no pre-flight */
	assert_int_equal(preflight_window_ms(&f.plan), 0);
}

/* The governor stops on two windows in a row over the budget, or one over twice it; a lone
 * burst between quiet windows does not stop the run, and no window measured never does. */
static void test_governor_windows(void **state)
{
	(void)state;
	bool over = false;
	assert_false(governor_stops(5, 4.9, &over));
	assert_false(governor_stops(5, 7, &over)); /* a burst */
	assert_false(governor_stops(5, 3, &over)); /* gone */
	assert_false(governor_stops(5, 6, &over));
	assert_true(governor_stops(5, 6, &over));  /* sustained */
	over = false;
	assert_true(governor_stops(5, 10.5, &over)); /* runaway: at once */
	over = true;
	assert_false(governor_stops(5, -1, &over)); /* statistics unavailable */
	assert_false(governor_stops(0, 50, &over)); /* no budget */
}

/* Over the budget, the probes that can sample are sampled first, the costliest only (a probe
 * under a quarter of the dearest one keeps every event), by a factor that leaves half the
 * budget's room; nothing is stopped while something can still be sampled. */
static void test_governor_degrades_the_costliest_first(void **state)
{
	(void)state;
	struct governor_probe g[3] = {
		{ .pct = 18, .running = true, .sample_every = 1, .max_every = 65536 }, /* syscalls */
		{ .pct = 1, .running = true, .sample_every = 1, .max_every = 65536 },  /* runq */
		{ .pct = 1, .running = true },                                         /* a profile */
	};
	bool over = false;
	unsigned victim = 99;
	assert_int_equal(governor_decide(15, true, 20, g, 3, &over, &victim), GOVERNOR_DEGRADE);
	assert_true(g[0].raised);
	assert_false(g[1].raised);
	assert_int_equal(g[1].sample_every, 1);
	/* 18 must fit in half of what the 2 others leave of 15: 18 / 6.5 -> 3 */
	assert_int_equal(g[0].sample_every, 3);
	assert_false(over);
	assert_int_equal(victim, 99);
	/* it worked: under the budget, nothing more */
	g[0].pct = 6;
	assert_int_equal(governor_decide(15, true, 8, g, 3, &over, &victim), GOVERNOR_GO_ON);
	assert_int_equal(g[0].sample_every, 3);
	assert_int_equal(g[0].max_every, 65536); /* its share fell: it may be sampled more */
	/* without `degrade: sample` the old rule holds: two windows over stop the dearest probe */
	struct governor_probe h[2] = { { .pct = 18, .running = true, .sample_every = 1, .max_every = 8 },
				       { .pct = 1, .running = true } };
	over = false;
	assert_int_equal(governor_decide(15, false, 19, h, 2, &over, &victim), GOVERNOR_GO_ON);
	assert_int_equal(governor_decide(15, false, 19, h, 2, &over, &victim), GOVERNOR_STOP_PROBE);
	assert_int_equal(victim, 0);
	assert_int_equal(h[0].sample_every, 1);
}

/* A probe whose share does not fall by a quarter after a raise costs its programs' entry, sampled
 * or not: it is sampled no further, and that window over (the second in a row) stops it, the
 * dearest, not the run, while another probe with programs runs; the last one stops the run. */
static void test_governor_stops_a_probe_sampling_cannot_help(void **state)
{
	(void)state;
	struct governor_probe g[2] = {
		{ .pct = 20, .running = true, .sample_every = 1, .max_every = 65536 },
		{ .pct = 0.5, .running = true },
	};
	bool over = false;
	unsigned victim = 99;
	assert_int_equal(governor_decide(15, true, 20.5, g, 2, &over, &victim), GOVERNOR_DEGRADE);
	uint64_t raised_to = g[0].sample_every;
	assert_true(raised_to > 1);
	g[0].pct = 19.5; /* sampled out, still paid for: the second window over, it stops */
	assert_int_equal(governor_decide(15, true, 20, g, 2, &over, &victim), GOVERNOR_STOP_PROBE);
	assert_int_equal(g[0].max_every, raised_to);
	assert_int_equal(victim, 0);
	g[0].running = false;
	g[0].pct = 0;
	/* the last probe with programs: over twice the budget at once stops the run */
	g[1].pct = 40;
	assert_int_equal(governor_decide(15, true, 40, g, 2, &over, &victim), GOVERNOR_STOP);
	/* no measurement, no decision */
	assert_int_equal(governor_decide(15, true, -1, g, 2, &over, &victim), GOVERNOR_GO_ON);
}

/* A probe that takes stacks it can do without: sampled first; when sampling does not help, its
 * stacks go (a degrade, not a stop); over again after that, it stops. Without `degrade: sample`
 * its stacks are kept and it stops as before. */
static void test_governor_drops_stacks_before_it_stops(void **state)
{
	(void)state;
	struct governor_probe g[2] = {
		{ .pct = 20, .running = true, .sample_every = 1, .max_every = 65536, .can_drop_stacks = true },
		{ .pct = 0.5, .running = true },
	};
	bool over = false;
	unsigned victim = 99;
	assert_int_equal(governor_decide(15, true, 20.5, g, 2, &over, &victim), GOVERNOR_DEGRADE);
	assert_true(g[0].raised);
	assert_false(g[0].drop_stacks);
	g[0].pct = 19.5; /* sampling did not help: its stacks go, it runs on */
	assert_int_equal(governor_decide(15, true, 20, g, 2, &over, &victim), GOVERNOR_DEGRADE);
	assert_true(g[0].drop_stacks);
	assert_false(g[0].raised);
	assert_false(g[0].can_drop_stacks);
	assert_int_equal(victim, 99);
	/* the stacks were most of it: under the budget, nothing more */
	g[0].pct = 6;
	assert_int_equal(governor_decide(15, true, 6.5, g, 2, &over, &victim), GOVERNOR_GO_ON);
	assert_false(g[0].drop_stacks);
	/* over again twice: nothing left to shed, it stops */
	g[0].pct = 19;
	assert_int_equal(governor_decide(15, true, 19.5, g, 2, &over, &victim), GOVERNOR_GO_ON);
	assert_int_equal(governor_decide(15, true, 19.5, g, 2, &over, &victim), GOVERNOR_STOP_PROBE);
	assert_int_equal(victim, 0);
	/* the last probe with programs drops its stacks rather than stop the run at once */
	struct governor_probe h[1] = { { .pct = 40, .running = true, .can_drop_stacks = true } };
	over = false;
	assert_int_equal(governor_decide(15, true, 40, h, 1, &over, &victim), GOVERNOR_DEGRADE);
	assert_true(h[0].drop_stacks);
	assert_int_equal(governor_decide(15, true, 40, h, 1, &over, &victim), GOVERNOR_STOP);
	/* without degrade: sample, stacks stay and the probe stops */
	struct governor_probe k[2] = { { .pct = 18, .running = true, .can_drop_stacks = true },
				       { .pct = 1, .running = true } };
	over = false;
	assert_int_equal(governor_decide(15, false, 19, k, 2, &over, &victim), GOVERNOR_GO_ON);
	assert_int_equal(governor_decide(15, false, 19, k, 2, &over, &victim), GOVERNOR_STOP_PROBE);
	assert_false(k[0].drop_stacks);
	/* the last probe with programs, its cost its traps (fixed), beside one that samples without
	 * BPF (pg_activity): that probe stops, the run goes on */
	struct governor_probe m[2] = { { .pct = 30, .fixed_pct = 28, .running = true }, { .goes_on = true } };
	over = false;
	assert_int_equal(governor_decide(5, true, 31, m, 2, &over, &victim), GOVERNOR_STOP_PROBE);
	assert_int_equal(victim, 0);
	m[1].goes_on = false; /* beside context only: the run stops */
	over = false;
	assert_int_equal(governor_decide(5, true, 31, m, 2, &over, &victim), GOVERNOR_STOP);
}

/* The switch storm of t_budgets at max_cpu_pct 0.5: raised to 1 in 94, the off-CPU probe's share
 * fell from 23.4% to 3.0% — by more than a quarter, but the two windows put its floor (what each
 * event costs sampled out) near 2.8%, over the budget at any sample_every: sampling is spent
 * after one raise and its stacks go next, not four raises later. */
static void test_governor_sees_the_floor_of_sampling(void **state)
{
	(void)state;
	struct governor_probe g[1] = {
		{ .pct = 23.44, .running = true, .sample_every = 1, .max_every = 1 << 20,
		  .can_drop_stacks = true },
	};
	bool over = false;
	unsigned victim = 99;
	assert_int_equal(governor_decide(0.5, true, 23.44, g, 1, &over, &victim), GOVERNOR_DEGRADE);
	assert_true(g[0].raised);
	g[0].sample_every = 94; /* what the session applied */
	g[0].pct = 3.01;
	assert_int_equal(governor_decide(0.5, true, 3.01, g, 1, &over, &victim), GOVERNOR_DEGRADE);
	assert_false(g[0].raised);
	assert_true(g[0].drop_stacks);
	assert_int_equal(g[0].max_every, 94);
	/* the same fall with a floor under the budget: sampled on */
	struct governor_probe h[1] = {
		{ .pct = 23.44, .running = true, .sample_every = 1, .max_every = 1 << 20,
		  .can_drop_stacks = true },
	};
	over = false;
	assert_int_equal(governor_decide(3, true, 23.44, h, 1, &over, &victim), GOVERNOR_DEGRADE);
	uint64_t first = h[0].sample_every; /* 16 */
	h[0].pct = 3.01; /* at 1 in 16 its floor is ~1.7%: under the budget of 3 */
	assert_int_equal(governor_decide(3, true, 3.01, h, 1, &over, &victim), GOVERNOR_DEGRADE);
	assert_true(h[0].raised);
	assert_true(h[0].sample_every > first);
	assert_false(h[0].drop_stacks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_under_budget),
		cmocka_unit_test(test_over_budget_refused_without_degrade),
		cmocka_unit_test(test_degrade_samples_only_what_can),
		cmocka_unit_test(test_degrade_does_not_spare_past_the_budget),
		cmocka_unit_test(test_degrade_leaves_room_for_the_fixed),
		cmocka_unit_test(test_degrade_impossible_refuses),
		cmocka_unit_test(test_unmeasured_is_not_zero),
		cmocka_unit_test(test_window_ms),
		cmocka_unit_test(test_governor_windows),
		cmocka_unit_test(test_governor_degrades_the_costliest_first),
		cmocka_unit_test(test_governor_stops_a_probe_sampling_cannot_help),
		cmocka_unit_test(test_governor_drops_stacks_before_it_stops),
		cmocka_unit_test(test_governor_sees_the_floor_of_sampling),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
