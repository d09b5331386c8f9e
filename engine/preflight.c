/* preflight.c — measured event rates vs the recipe's budget, before the real probes attach.
 * Must not: attach anything but the counting program, or leave it attached on any path.
 */
#include "preflight.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"
#include "preflight.skel.h"

#define MAX_TRACEPOINTS 8

struct counter {
	struct preflight_bpf *skel;
	struct bpf_link *links[MAX_TRACEPOINTS];
	size_t n_links;
};

static void counter_destroy(struct counter *c)
{
	for (size_t i = 0; i < c->n_links; i++)
		bpf_link__destroy(c->links[i]);
	preflight_bpf__destroy(c->skel);
	memset(c, 0, sizeof(*c));
}

static int counter_start(struct counter *c, const struct plan_probe *pp, struct diag_err *err)
{
	const char *names[MAX_TRACEPOINTS];
	size_t n = pp->kind->rate_tracepoints(&pp->cfg, names, MAX_TRACEPOINTS);
	c->skel = preflight_bpf__open();
	if (!c->skel)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pre-flight: opening BPF object: %s", strerror(errno));
	c->skel->rodata->target_tgid = (__u32)pp->cfg.target_pid;
	int rc = preflight_bpf__load(c->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pre-flight: loading the counter: %s", strerror(-rc));
	for (size_t i = 0; i < n; i++) {
		c->links[i] = bpf_program__attach_raw_tracepoint(c->skel->progs.count_firing, names[i]);
		if (!c->links[i])
			return diag_fail(err, DIAG_EXIT_RUNTIME, "pre-flight: attaching to %s: %s",
					 names[i], strerror(errno));
		c->n_links++;
	}
	return 0;
}

static void counter_read(struct counter *c, uint64_t *firings, uint64_t *passed)
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 vals[ncpus > 0 ? ncpus : 1];
	int fd = bpf_map__fd(c->skel->maps.firings);
	for (__u32 slot = 0; slot < 2; slot++) {
		uint64_t sum = 0;
		if (bpf_map_lookup_elem(fd, &slot, vals) == 0)
			for (int i = 0; i < ncpus; i++)
				sum += vals[i];
		*(slot ? passed : firings) = sum;
	}
}

static int sample_option(const struct probe_kind *k)
{
	for (size_t i = 0; i < k->n_options; i++)
		if (k->options[i].role == OPT_ROLE_SAMPLE_EVERY)
			return (int)i;
	return -1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
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

int preflight_run(struct plan *plan, unsigned window_ms, struct preflight_rate *rates,
		  struct value **summary, struct diag_err *err)
{
	const struct recipe_budgets *b = &plan->recipe->budgets;
	struct counter *counters = xcalloc(plan->n_probes, sizeof(*counters));
	double total = 0, secs = 0, counter_ns = 0;
	int rc = 0, stats_fd = -1;

	/* Measure all probes over the same window. */
	for (unsigned i = 0; i < plan->n_probes; i++) {
		struct plan_probe *pp = &plan->probes[i];
		rates[i] = (struct preflight_rate){ .sample_every = 1 };
		if (!pp->kind->rate_tracepoints)
			continue;
		if (counter_start(&counters[i], pp, err)) {
			diag_wrap(err, "probe %s", pp->rp->id);
			rc = -1;
			goto out;
		}
		rates[i].measured = true;
	}
	/* Run-time statistics during the window price the counting program itself: a lower bound
	 * for what the real probes will cost, shown by --dry-run as the estimated overhead. Every
	 * counter is read just before and just after the same window, so the time spent starting
	 * the counters one after another is not counted. */
	uint64_t (*before)[2] = xcalloc(plan->n_probes, sizeof(*before));
	stats_fd = kernel_enable_bpf_stats();
	for (unsigned i = 0; i < plan->n_probes; i++)
		if (rates[i].measured)
			counter_read(&counters[i], &before[i][0], &before[i][1]);
	uint64_t t0 = mono_ns();
	sleep_ms(window_ms);
	for (unsigned i = 0; i < plan->n_probes; i++) {
		uint64_t firings = 0, passed = 0;
		if (!rates[i].measured)
			continue;
		counter_read(&counters[i], &firings, &passed);
		rates[i].firings_per_s = (double)(firings - before[i][0]);
		rates[i].events_per_s = (double)(passed - before[i][1]);
	}
	secs = (double)(mono_ns() - t0) / 1e9;
	for (unsigned i = 0; i < plan->n_probes; i++) {
		uint64_t run_ns = 0, runs = 0;
		if (!rates[i].measured)
			continue;
		rates[i].firings_per_s /= secs;
		rates[i].events_per_s /= secs;
		if (stats_fd >= 0 &&
		    kernel_prog_runtime(bpf_program__fd(counters[i].skel->progs.count_firing), &run_ns, &runs) == 0)
			counter_ns += (double)run_ns;
		counter_destroy(&counters[i]);
	}
	free(before);
	if (stats_fd >= 0)
		close(stats_fd);

	/* Sampling probes cost a known rate: at most hz on each CPU. */
	for (unsigned i = 0; i < plan->n_probes; i++)
		total += rates[i].measured ? rates[i].events_per_s
					   : (double)plan->probes[i].sample_hz * plan->ncpus;

	if (b->max_events_per_s && total > (double)b->max_events_per_s) {
		/* Degrade the measured probes that can sample, worst first, if the recipe says so. */
		double over = total / (double)b->max_events_per_s;
		bool degraded = false;
		for (unsigned i = 0; b->degrade_sample && i < plan->n_probes; i++) {
			int opt = sample_option(plan->probes[i].kind);
			if (!rates[i].measured || opt < 0 || rates[i].events_per_s <= 0)
				continue;
			uint64_t n = (uint64_t)ceil(over);
			if (n > plan->probes[i].kind->options[opt].max)
				n = plan->probes[i].kind->options[opt].max;
			plan->probes[i].cfg.opt[opt] = n;
			rates[i].sample_every = n;
			total -= rates[i].events_per_s * (1.0 - 1.0 / (double)n);
			degraded = true;
		}
		if (!degraded || total > (double)b->max_events_per_s * 1.01) {
			char got[32], max[32];
			const char *worst = NULL;
			double worst_rate = -1;
			for (unsigned i = 0; i < plan->n_probes; i++)
				if (rates[i].measured && rates[i].events_per_s > worst_rate) {
					worst_rate = rates[i].events_per_s;
					worst = plan->probes[i].rp->id;
				}
			diag_fail(err, DIAG_EXIT_REFUSED,
				  "over budget: measured %s events in a %u ms pre-flight (mostly probe %s), "
				  "max_events_per_s allows %s; narrow the filter (filters.pid / comm), lower "
				  "the sampling rate, or declare `degrade: sample` in the recipe's budgets",
				  human_rate(total, got, sizeof(got)), window_ms, worst ? worst : "?",
				  human_rate((double)b->max_events_per_s, max, sizeof(max)));
			rc = -1;
		}
	}
out:
	if (summary) {
		struct value *s = value_obj();
		value_set_int(s, "window_ms", window_ms);
		value_set_num(s, "events_per_s", round(total));
		value_set_int(s, "max_events_per_s", (int64_t)b->max_events_per_s);
		if (secs > 0 && counter_ns > 0)
			value_set_num(s, "estimated_bpf_cpu_pct_min",
				      round(counter_ns / 1e9 * 100.0 / (secs * plan->ncpus) * 1000) / 1000);
		struct value *list = value_obj_set(s, "probes", value_obj());
		for (unsigned i = 0; i < plan->n_probes; i++) {
			struct value *p = value_obj_set(list, plan->probes[i].rp->id, value_obj());
			if (rates[i].measured) {
				value_set_num(p, "events_per_s", round(rates[i].events_per_s));
				value_set_num(p, "firings_per_s", round(rates[i].firings_per_s));
			} else if (plan->probes[i].sample_hz) {
				value_set_num(p, "events_per_s_max", (double)plan->probes[i].sample_hz * plan->ncpus);
			}
			if (rates[i].sample_every > 1)
				value_set_int(p, "sample_every", (int64_t)rates[i].sample_every);
		}
		*summary = s;
	}
	for (unsigned i = 0; i < plan->n_probes; i++)
		counter_destroy(&counters[i]);
	free(counters);
	return rc;
}
