/* preflight.c — measured event rates vs the recipe's budget (see preflight.h).
 * Must not: touch the kernel or the plan: the session measures and applies.
 */
#include "plan/preflight.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_PREFLIGHT_MS 250

/* ns of CPU in the window as a share (%) of the machine's CPUs. */
static double cpus_pct(const struct plan *plan, const struct preflight_window *w, double ns)
{
	return w->wall_s > 0 ? ns / 1e9 * 100.0 / (w->wall_s * plan->ncpus) : 0;
}

static char *human_rate(double r, char *buf, size_t len)
{
	if (r >= 1e6)
		snprintf(buf, len, "%.1fM/s", r / 1e6);
	else if (r >= 1e3)
		snprintf(buf, len, "%.1fk/s", r / 1e3);
	else
		snprintf(buf, len, "%.0f/s", r);
	return buf;
}

bool governor_stops(double budget, double window_pct, bool *over_before)
{
	if (budget <= 0 || window_pct < 0)
		return false;
	bool over = window_pct > budget;
	bool stop = over && (*over_before || window_pct > 2 * budget);
	*over_before = over;
	return stop;
}

static bool can_raise(const struct governor_probe *g)
{
	return g->running && g->max_every > g->sample_every && g->pct > 0;
}

/* Raises the sample_every of the probes at or above min_pct that can sample by the factor that
 * brings the window to half of what the budget leaves them; false when that factor cannot be
 * found (what they do not cover uses the budget already: their hits' fixed cost, which sampling
 * does not lower, counts there) or raises nothing. */
static bool governor_raise(double budget, double window_pct, double min_pct,
			   struct governor_probe *probes, unsigned n)
{
	double chosen = 0;
	for (unsigned i = 0; i < n; i++)
		if (can_raise(&probes[i]) && probes[i].pct >= min_pct)
			chosen += probes[i].pct - probes[i].fixed_pct;
	double rest = window_pct - chosen;
	if (chosen <= 0 || rest >= budget)
		return false;
	double factor = 2 * chosen / (budget - rest);
	if (factor < 2)
		factor = 2;
	bool raised = false;
	for (unsigned i = 0; i < n; i++) {
		struct governor_probe *g = &probes[i];
		if (!can_raise(g) || g->pct < min_pct)
			continue;
		uint64_t from = g->sample_every ? g->sample_every : 1;
		double want = ceil((double)from * factor);
		uint64_t every = want >= (double)g->max_every ? g->max_every : (uint64_t)want;
		if (every > g->sample_every) {
			g->every_at_raise = from;
			g->sample_every = every;
			g->pct_at_raise = g->pct;
			g->raised = raised = true;
		}
	}
	return raised;
}

/* Whether the window after a raise shows sampling spent for g: its share did not fall by a
 * quarter, or its share at max_every — from the two windows, share = floor + sampled / every —
 * would still leave this window over the budget. */
static bool sampling_spent(const struct governor_probe *g, double budget, double window_pct)
{
	if (g->pct > 0.75 * g->pct_at_raise)
		return true;
	double e0 = (double)g->every_at_raise, e1 = (double)g->sample_every;
	if (budget <= 0 || e0 <= 0 || e1 <= e0) /* e1 <= max_every: raised to at most that */
		return false;
	double sampled = (g->pct_at_raise - g->pct) / (1 / e0 - 1 / e1);
	double floor_pct = g->pct - sampled / e1;
	if (floor_pct < 0)
		floor_pct = 0;
	double at_max = floor_pct + sampled / (double)g->max_every;
	return window_pct - g->pct + at_max > budget;
}

enum governor_action governor_decide(double budget, bool degrade, double window_pct,
				     struct governor_probe *probes, unsigned n, bool *over_before,
				     unsigned *victim)
{
	bool no_help = false;
	for (unsigned i = 0; i < n; i++) {
		struct governor_probe *g = &probes[i];
		g->raised = g->drop_stacks = false;
		/* the window after a raise: a probe whose share did not fall by a quarter, or whose
		 * floor is over what the budget leaves it, costs what its programs' entry costs,
		 * sampled or not */
		if (g->pct_at_raise > 0 && window_pct >= 0) {
			if (sampling_spent(g, budget, window_pct)) {
				g->max_every = g->sample_every;
				no_help = true;
			}
			g->pct_at_raise = 0;
		}
	}
	if (budget <= 0 || window_pct < 0 || window_pct <= budget) {
		governor_stops(budget, window_pct, over_before);
		return GOVERNOR_GO_ON;
	}
	if (degrade) {
		/* the costliest first: the probes using at least a quarter of what the dearest one
		 * that can sample uses; all of those that can sample when that is not enough */
		double dearest = 0;
		for (unsigned i = 0; i < n; i++)
			if (can_raise(&probes[i]) && probes[i].pct > dearest)
				dearest = probes[i].pct;
		if (governor_raise(budget, window_pct, dearest / 4, probes, n) ||
		    governor_raise(budget, window_pct, 0, probes, n)) {
			*over_before = false; /* the next window measures the new rates */
			return GOVERNOR_DEGRADE;
		}
	}
	if (no_help) /* the window before raised it: this is the second one over in a row */
		*over_before = true;
	if (!governor_stops(budget, window_pct, over_before))
		return GOVERNOR_GO_ON;
	unsigned dearest = n, running = 0;
	bool goes_on = false;
	for (unsigned i = 0; i < n; i++) {
		goes_on |= probes[i].goes_on;
		if (!probes[i].running)
			continue;
		running++;
		if (dearest == n || probes[i].pct > probes[dearest].pct)
			dearest = i;
	}
	if (dearest == n)
		return GOVERNOR_STOP;
	/* sampled as far as it helps: its stacks (their walk, copy and send) go before it does */
	if (degrade && probes[dearest].can_drop_stacks) {
		probes[dearest].can_drop_stacks = false;
		probes[dearest].drop_stacks = true;
		*over_before = false;
		return GOVERNOR_DEGRADE;
	}
	if (running < 2 && !goes_on)
		return GOVERNOR_STOP;
	*victim = dearest;
	*over_before = false;
	return GOVERNOR_STOP_PROBE;
}

unsigned preflight_window_ms(const struct plan *plan)
{
	bool any = false;
	for (unsigned i = 0; i < plan->n_probes; i++)
		any |= plan->probes[i].kind->object != NULL;
	if (!any)
		return 0;
	unsigned ms = plan->recipe->budgets.preflight_ms ? plan->recipe->budgets.preflight_ms
							 : DEFAULT_PREFLIGHT_MS;
	double half = plan->duration_s * 500.0;
	return ms > half ? (unsigned)half : ms;
}

static struct value *summarize(const struct plan *plan, const struct preflight_window *w,
			       const struct preflight_rate *rates, double total)
{
	const struct recipe_budgets *b = &plan->recipe->budgets;
	struct value *s = value_obj();
	double bpf_ns = 0, fixed_ns = 0;
	value_set_int(s, "window_ms", w->planned_ms);
	value_set_num(s, "events_per_s", round(total));
	value_set_int(s, "max_events_per_s", (int64_t)b->max_events_per_s);
	struct value *list = value_obj_set(s, "probes", value_obj());
	for (unsigned i = 0; i < plan->n_probes; i++) {
		struct value *p = value_obj_set(list, plan->probes[i].rp->id, value_obj());
		switch (rates[i].status) {
		case RATE_MEASURED:
			value_set_str(p, "rate", "measured");
			value_set_num(p, "events_per_s", round(rates[i].events_per_s));
			value_set_num(p, "firings_per_s", round(rates[i].firings_per_s));
			bpf_ns += (double)rates[i].bpf_ns;
			fixed_ns += (double)rates[i].fixed_ns;
			if (rates[i].trap_hits)
				value_set_num(p, "trap_hits_per_s", round((double)rates[i].trap_hits / w->wall_s));
			if (rates[i].slowed_syscalls)
				value_set_num(p, "slowed_syscalls_per_s",
					      round((double)rates[i].slowed_syscalls / w->wall_s));
			if (rates[i].fixed_ns)
				value_set_num(p, "fixed_cpu_pct", round(cpus_pct(plan, w, (double)rates[i].fixed_ns) * 1000) / 1000);
			break;
		case RATE_UNMEASURED:
			value_set_str(p, "rate", "unmeasured");
			break;
		case RATE_NOT_EVENT_DRIVEN:
			value_set_str(p, "rate", "not event-driven");
			break;
		case RATE_NOT_APPLICABLE:
			value_set_str(p, "rate", "not applicable");
			break;
		}
		if (plan->probes[i].sample_hz)
			value_set_num(p, "events_per_s_max", (double)plan->probes[i].sample_hz * plan->ncpus);
		if (rates[i].sample_every > 1)
			value_set_int(p, "sample_every", (int64_t)rates[i].sample_every);
		if (rates[i].dropped)
			value_set_bool(p, "dropped", true);
	}
	/* The probes' own programs, counting only: a lower bound for what full mode costs; and what
	 * their hits cost beyond it (traps, the syscall slow path), which sampling does not lower. */
	if (w->bpf_stats && w->wall_s > 0) {
		value_set_num(s, "estimated_bpf_cpu_pct_min", round(cpus_pct(plan, w, bpf_ns) * 1000) / 1000);
		value_set_num(s, "fixed_cpu_pct", round(cpus_pct(plan, w, fixed_ns) * 1000) / 1000);
		value_set_num(s, "estimated_server_cpu_pct_min",
			      round(cpus_pct(plan, w, bpf_ns + fixed_ns) * 1000) / 1000);
		if (w->per_trap_ns > 0)
			value_set_num(s, "per_trap_ns", round(w->per_trap_ns));
		if (w->per_syscall_ns > 0)
			value_set_num(s, "per_syscall_ns", round(w->per_syscall_ns));
	}
	return s;
}

int preflight_decide(const struct plan *plan, const struct preflight_window *w,
		     struct preflight_rate *rates, struct value **summary, struct diag_err *err)
{
	const struct recipe_budgets *b = &plan->recipe->budgets;
	double secs = w->wall_s > 0 ? w->wall_s : 1e-3, total = 0;
	int rc = 0;

	for (unsigned i = 0; i < plan->n_probes; i++) {
		struct preflight_rate *r = &rates[i];
		int opt = catalog_sample_option(plan->probes[i].kind);
		r->sample_every = opt >= 0 && plan->probes[i].cfg.opt[opt] > 1 ? plan->probes[i].cfg.opt[opt] : 1;
		if (r->status != RATE_MEASURED)
			continue;
		r->events_per_s = (double)r->passed / secs;
		r->firings_per_s = (double)r->firings / secs;
		r->fixed_pct = cpus_pct(plan, w, (double)r->fixed_ns);
		r->trap_hits_per_s = (double)r->trap_hits / secs;
		r->slowed_syscalls_per_s = (double)r->slowed_syscalls / secs;
		total += r->events_per_s / (double)r->sample_every;
	}

	/* What the probes' hits cost beyond their programs (uprobe traps, the syscall slow path):
	 * sampling does not lower it, only fewer hits do. Over the CPU budget by itself, with no
	 * probe that costs none of it to go on with (the live governor stops a costly probe and goes
	 * on with the others): refused now rather than stopped a few windows in. */
	double fixed = 0, worst_fixed = 0;
	unsigned worst_i = 0, others = 0;
	for (unsigned i = 0; i < plan->n_probes; i++) {
		if (rates[i].status != RATE_MEASURED) { /* it goes on whatever the others cost */
			others += rates[i].status != RATE_NOT_APPLICABLE;
			continue;
		}
		fixed += (double)rates[i].fixed_ns;
		others += rates[i].fixed_ns == 0;
		if ((double)rates[i].fixed_ns > worst_fixed)
			worst_fixed = (double)rates[i].fixed_ns, worst_i = i;
	}
	/* Others to go on with: the costliest such probes are dropped, until what is left of that
	 * cost is at most half the budget (the rest is the programs', and diagnose's). */
	if (b->max_cpu_pct > 0 && w->bpf_stats && others && cpus_pct(plan, w, fixed) > b->max_cpu_pct) {
		while (cpus_pct(plan, w, fixed) > b->max_cpu_pct / 2) {
			unsigned dearest = plan->n_probes;
			for (unsigned i = 0; i < plan->n_probes; i++)
				if (rates[i].status == RATE_MEASURED && !rates[i].dropped && rates[i].fixed_ns &&
				    (dearest == plan->n_probes || rates[i].fixed_ns > rates[dearest].fixed_ns))
					dearest = i;
			if (dearest == plan->n_probes)
				break;
			rates[dearest].dropped = true;
			fixed -= (double)rates[dearest].fixed_ns;
			total -= rates[dearest].events_per_s / (double)rates[dearest].sample_every;
		}
	}
	if (b->max_cpu_pct > 0 && w->bpf_stats && !others && cpus_pct(plan, w, fixed) > b->max_cpu_pct) {
		const struct preflight_rate *r = &rates[worst_i];
		char traps[32], sys[32];
		human_rate((double)r->trap_hits / secs, traps, sizeof(traps));
		human_rate((double)r->slowed_syscalls / secs, sys, sizeof(sys));
		diag_fail(err, DIAG_EXIT_REFUSED,
			  "over budget: the probes' hits would cost the server %.1f%% of the CPUs beyond "
			  "their programs (probe %s: %s uprobe traps at %.1f us each, %s syscalls slowed "
			  "at %.0f ns), max_cpu_pct allows %g%%; sampling does not lower it: narrow the "
			  "target (--pid of one process), turn off the probe's busiest sites (its options), "
			  "or raise max_cpu_pct",
			  cpus_pct(plan, w, fixed), plan->probes[worst_i].rp->id, traps,
			  w->per_trap_ns / 1000, sys, w->per_syscall_ns, b->max_cpu_pct);
		if (summary)
			*summary = summarize(plan, w, rates, total);
		return -1;
	}

	if (b->max_events_per_s && total > (double)b->max_events_per_s) {
		/* Degrade the measured probes that can sample, if the recipe says so: the events of
		 * those that cannot (or are at their option's maximum already) are fixed, the others
		 * are scaled by one factor so that the sum fits. A probe capped by its maximum joins
		 * the fixed part and the factor is found again. */
		bool degraded = false, capped[plan->n_probes], spared[plan->n_probes];
		memset(capped, 0, sizeof(capped));
		/* the costliest first: a probe under a quarter of the busiest one's rate is spared
		 * sampling (80 run-queue waits a second next to 2.5M syscalls) — unless what cannot
		 * sample, or is spared, is over the budget by itself: then every probe that can sample
		 * does (a `yes | cat` reader: 400k syscalls/s and three probes near 100k each) */
		double busiest = 0;
		for (unsigned i = 0; i < plan->n_probes; i++)
			if (rates[i].status == RATE_MEASURED && !rates[i].dropped &&
			    catalog_sample_option(plan->probes[i].kind) >= 0 && rates[i].events_per_s > busiest)
				busiest = rates[i].events_per_s;
		bool sparing = false;
		for (unsigned i = 0; i < plan->n_probes; i++) {
			spared[i] = rates[i].status == RATE_MEASURED && !rates[i].dropped &&
				    rates[i].events_per_s < busiest / 4;
			sparing |= spared[i];
		}
		for (int round = 0; b->degrade_sample && round < 5; round++) {
			double fixed = 0, scalable = 0;
			for (unsigned i = 0; i < plan->n_probes; i++) {
				if (rates[i].status != RATE_MEASURED || rates[i].dropped || rates[i].events_per_s <= 0)
					continue;
				double rate = rates[i].events_per_s / (double)rates[i].sample_every;
				if (catalog_sample_option(plan->probes[i].kind) < 0 || capped[i] || (sparing && spared[i]))
					fixed += rate;
				else
					scalable += rate;
			}
			if (sparing && fixed >= (double)b->max_events_per_s) {
				sparing = false; /* sampling the busiest alone cannot do it */
				continue;
			}
			if (scalable <= 0 || fixed >= (double)b->max_events_per_s)
				break;
			double factor = scalable / ((double)b->max_events_per_s - fixed);
			if (factor <= 1)
				break;
			bool capped_now = false;
			for (unsigned i = 0; i < plan->n_probes; i++) {
				const struct probe_kind *k = plan->probes[i].kind;
				int opt = catalog_sample_option(k);
				if (rates[i].status != RATE_MEASURED || rates[i].dropped || opt < 0 || capped[i] ||
				    (sparing && spared[i]) || rates[i].events_per_s <= 0)
					continue;
				uint64_t n = (uint64_t)ceil(factor * (double)rates[i].sample_every - 1e-9);
				if (n >= k->options[opt].max) {
					n = k->options[opt].max;
					capped[i] = capped_now = true;
				}
				if (n <= rates[i].sample_every)
					continue;
				total -= rates[i].events_per_s *
					 (1.0 / (double)rates[i].sample_every - 1.0 / (double)n);
				rates[i].sample_every = n;
				rates[i].degraded = degraded = true;
			}
			if (!capped_now)
				break;
		}
		if (!degraded || total > (double)b->max_events_per_s * 1.01) {
			char got[32], max[32];
			const char *worst = NULL;
			double worst_rate = -1;
			for (unsigned i = 0; i < plan->n_probes; i++)
				if (rates[i].status == RATE_MEASURED && rates[i].events_per_s > worst_rate) {
					worst_rate = rates[i].events_per_s;
					worst = plan->probes[i].rp->id;
				}
			diag_fail(err, DIAG_EXIT_REFUSED,
				  "over budget: measured %s events in a %u ms pre-flight (mostly probe %s), "
				  "max_events_per_s allows %s; narrow the filter (filters.pid / comm), lower "
				  "the sampling rate, or %s",
				  human_rate(total, got, sizeof(got)), w->planned_ms, worst ? worst : "?",
				  human_rate((double)b->max_events_per_s, max, sizeof(max)),
				  b->degrade_sample ? "raise the budget (`degrade: sample` is declared, but "
						      "the probes over it cannot sample enough)"
						    : "declare `degrade: sample` in the recipe's budgets");
			rc = -1;
		}
	}
	if (summary)
		*summary = summarize(plan, w, rates, total);
	return rc;
}
