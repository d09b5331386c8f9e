/* off_cpu.c — catalog entry for engine/probes/off_cpu.bpf.c: where and why the target's threads are off
 * the CPU, by call path, weighted by the time away (ns).
 *
 * Owns: picking the tp_btf or raw_tp program set (by loading it), sizing its maps, the time of
 * threads still away when the collection stops (added up to that moment, so a thread blocked for
 * the whole window is not missing), and turning (stacks, state) → time into results: stacks
 * tagged with the state, and totals per state. User-space unwinding (option user_unwind: dwarf):
 * the `samples` ring buffer, drained by the run loop into engine/probes/stack_sampler.c, which unwinds
 * each switch-out's stack copy and weighs it when its switch-in's record comes; threads still
 * away at the end are weighed here.
 * Must not: judge the time (the recipe's Lua does); the state says how a thread waited, not why.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "probes/off_cpu.h"
#include "off_cpu.skel.h"
#include "symbolize/python.h"
#include "probes/stack_sampler.h"
#include "symbolize/stacks.h"

struct off_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct off_cpu_bpf *skel;
	uint64_t detached_ns; /* CLOCK_MONOTONIC when the links were released */
	struct stack_sampler *sampler; /* user-space unwinding (copy_bytes > 0): reads `samples` */
};

PROBE_BPF_SKELETON(off_cpu)


static const struct option_spec off_options[] = {
	{ .name = "min_block_us", .type = OPT_UINT, .dflt = 1, .min = 0, .max = 10000000,
	  .help = "shorter times off the CPU are counted in `too_short`, not recorded" },
	{ .name = "user_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1, .help = "record user stacks" },
	{ .name = "kernel_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1, .help = "record kernel stacks" },
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 22, .bytes_per_entry = 4 + sizeof(struct off_cpu_away) + 64,
	  .help = "target threads off the CPU at the same time" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20, .bytes_per_entry = sizeof(__u32) + DIAG_STACK_DEPTH * sizeof(__u64),
	  .help = "distinct stacks kept" },
	{ .name = "max_stack_counts", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(struct off_cpu_key) + sizeof(struct off_cpu_val) + 64,
	  .help = "distinct (thread name, stacks, state) timed" },
	STACK_SAMPLER_OPTIONS("each switch-out", "fp", 2048, 1024),
	STACK_SAMPLER_PYTHON_OPTION,
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "record 1 in N intervals at random and scale (raised by the pre-flight under degrade: sample)" },
};

static const char *const off_variants[] = { "tp_btf", "raw_tp", NULL };

static const char *const state_names[OFF_NR_STATES] = {
	[OFF_RUNNABLE] = "runnable", [OFF_SLEEPING] = "sleeping",
	[OFF_UNINTERRUPTIBLE] = "uninterruptible", [OFF_OTHER] = "other",
};

static int off_load(struct probe *p, struct diag_err *err)
{
	struct off_priv *op = p->priv;
	struct variant_tries tries = { "" };
	struct python_procs *py = NULL;
	bool py_walk = false, dwarf = false;

	for (const char *const *v = p->cfg.variants; *v; v++) {
		if (!(op->skel = off_cpu_skel_open(p, err)))
			return -1;
		op->skel->rodata->min_block_ns = probe_opt(p, "min_block_us") * 1000;
		op->skel->rodata->user_stacks = probe_opt(p, "user_stacks") != 0;
		op->skel->rodata->kernel_stacks = probe_opt(p, "kernel_stacks") != 0;
		bpf_map__set_max_entries(op->skel->maps.away, (__u32)probe_opt(p, "max_threads"));
		bpf_map__set_max_entries(op->skel->maps.stacks, (__u32)probe_opt(p, "max_stacks"));
		bpf_map__set_max_entries(op->skel->maps.counts, (__u32)probe_opt(p, "max_stack_counts"));
		dwarf = stack_sampler_wants_dwarf(probe_opt_str(p, "user_unwind")) &&
			probe_opt(p, "user_stacks");
		op->skel->rodata->copy_bytes = dwarf ? (__u32)probe_opt(p, "stack_bytes") : 0;
		python_procs_free(py); /* a variant tried before */
		py = stack_sampler_python_plan(probe_opt(p, "python_frames") && probe_opt(p, "user_stacks"),
					       p->cfg.filter.pid, op->skel->rodata->copy_bytes,
					       p->files, &py_walk);
		op->skel->rodata->py_walk = py_walk;
		uint32_t ring = stack_sampler_ring_size(dwarf || py_walk ? probe_opt(p, "ring_buffer_kib") * 1024 : 0);
		bpf_map__set_max_entries(op->skel->maps.samples, ring);
		op->skel->rodata->wake_bytes = ring / 4;
		probe_bpf_select_variant(op->skel->obj, *v);
		if (probe_variant_loaded(p, &tries, *v, off_cpu_bpf__load(op->skel)))
			goto loaded;
	}
	python_procs_free(py);
	return probe_no_variant(&tries, "off-CPU time", err);
loaded:
	if (!op->skel->rodata->copy_bytes && !py_walk)
		return 0;
	op->sampler = stack_sampler_new(bpf_map__fd(op->skel->maps.stacks), dwarf, false,
					(size_t)probe_opt(p, "max_stack_counts"), state_names,
					OFF_NR_STATES, (size_t)probe_opt(p, "max_threads"), p->files);
	stack_sampler_python_start(op->sampler, py, bpf_map__fd(op->skel->maps.py_procs),
				   p->cfg.filter.pid);
	if (stack_sampler_open_ring(op->sampler, bpf_map__fd(op->skel->maps.samples)))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "opening the off-CPU samples ring buffer: %s",
				 strerror(errno));
	return 0;
}

STACK_SAMPLER_PROBE_OPS(off, struct off_priv)

static void off_destroy(struct probe *p)
{
	struct off_priv *op = p->priv;
	probe_bpf_destroy(p);
	stack_sampler_free(op->sampler); /* NULL is fine */
	op->sampler = NULL;
}

static void off_detach(struct probe *p)
{
	struct off_priv *op = p->priv;
	struct timespec ts;
	probe_bpf_detach(p);
	clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock bpf_ktime_get_ns() reads */
	op->detached_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int off_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		       struct diag_err *err)
{
	struct off_priv *op = p->priv;
	int counts_fd = bpf_map__fd(op->skel->maps.counts);
	int stacks_fd = bpf_map__fd(op->skel->maps.stacks);
	int away_fd = bpf_map__fd(op->skel->maps.away);
	double scale = probe_scale(p);
	uint64_t state_ns[OFF_NR_STATES] = { 0 }, state_count[OFF_NR_STATES] = { 0 }, ongoing = 0;
	struct stack_table *table = stacks_new(ctx, bpf_map__max_entries(op->skel->maps.counts) +
						    bpf_map__max_entries(op->skel->maps.away) +
						    (op->sampler ? (size_t)probe_opt(p, "max_stack_counts") : 0));
	(void)err;
	stack_sampler_consume(op->sampler); /* detached: the last switch-ins' weights */

	struct off_cpu_key keys[2], *prev = NULL, *next = &keys[0];
	while (bpf_map_get_next_key(counts_fd, prev, next) == 0) {
		struct off_cpu_val v;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(counts_fd, prev, &v) || prev->state >= OFF_NR_STATES)
			continue;
		char comm[sizeof(prev->comm) + 1];
		snprintf(comm, sizeof(comm), "%s", prev->comm);
		state_ns[prev->state] += v.total_ns * scale;
		state_count[prev->state] += v.count * scale;
		stacks_add_ids(table, stacks_fd, (int)prev->tgid, comm, prev->user_stack_id, prev->kernel_stack_id,
			       prev->kernel_stack_id >= 0, v.total_ns * scale, v.count * scale,
			       state_names[prev->state]);
	}
	/* Threads still away at the end: their time so far belongs to the window too. */
	__u32 tids[2], *tprev = NULL, *tnext = &tids[0];
	while (bpf_map_get_next_key(away_fd, tprev, tnext) == 0) {
		struct off_cpu_away a;
		tprev = tnext;
		tnext = tnext == &tids[0] ? &tids[1] : &tids[0];
		if (bpf_map_lookup_elem(away_fd, tprev, &a) || a.state >= OFF_NR_STATES ||
		    a.ts > op->detached_ns)
			continue;
		uint64_t ns = op->detached_ns - a.ts;
		ongoing++;
		/* its unwound stack waits in the sampler (weighed unscaled: scaled at flush) */
		if (a.cookie && op->sampler && !stack_sampler_settle(op->sampler, *tprev, a.cookie, ns))
			continue;
		char comm[sizeof(a.comm) + 1];
		snprintf(comm, sizeof(comm), "%s", a.comm);
		state_ns[a.state] += ns * scale;
		state_count[a.state] += scale;
		stacks_add_ids(table, stacks_fd, (int)a.tgid, comm, a.user_stack_id, a.kernel_stack_id,
			       a.kernel_stack_id >= 0, ns * scale, scale, state_names[a.state]);
	}
	if (op->sampler) {
		uint64_t sw[OFF_NR_STATES] = { 0 }, sc[OFF_NR_STATES] = { 0 }, w, n, k;
		stack_sampler_tag_sums(op->sampler, sw, sc);
		for (int s = 0; s < OFF_NR_STATES; s++) {
			state_ns[s] += sw[s] * scale;
			state_count[s] += sc[s] * scale;
		}
		stack_sampler_flush(op->sampler, table, probe_opt(p, "kernel_stacks"), scale, &w, &n, &k);
	}

	struct value *res = value_obj();
	value_set_int(res, "min_block_us", (int64_t)probe_opt(p, "min_block_us"));
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	struct value *states = value_obj_set(res, "states", value_obj());
	uint64_t total = 0;
	for (int s = 0; s < OFF_NR_STATES; s++) {
		struct value *st = value_obj_set(states, state_names[s], value_obj());
		value_set_int(st, "ns", (int64_t)state_ns[s]);
		value_set_int(st, "count", (int64_t)state_count[s]);
		value_set_int(st, "short_ns", (int64_t)(probe_percpu_sum(bpf_map__fd(op->skel->maps.short_ns), (unsigned)s) * scale));
		total += state_ns[s];
	}
	value_set_int(res, "total_ns", (int64_t)total);
	value_set_int(res, "ongoing", (int64_t)ongoing);
	value_set_int(res, "too_short", (int64_t)probe_stat_sum(op->skel->obj, OFF_STAT_TOO_SHORT));
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(op->skel->obj, DIAG_STAT_LOST));
	value_set_int(res, "dropped", (int64_t)(probe_stat_sum(op->skel->obj, DIAG_STAT_MAP_FULL) +
						  stacks_refused(table) +
						  (op->sampler ? stack_sampler_refused(op->sampler) : 0)));
	stack_sampler_report(op->sampler, res, op->skel->rodata->copy_bytes,
			     probe_stat_sum(op->skel->obj, OFF_STAT_SENT),
			     probe_stat_sum(op->skel->obj, OFF_STAT_RING_FULL));
	stacks_finish(table, res, p->kind->stack_unit);
	*out = res;
	return 0;
}

static const struct result_field off_results[] = {
	{ "min_block_us", RT_INTEGER, "us", false, "shortest time off the CPU recorded" },
	{ "sampled_1_in", RT_INTEGER, NULL, true, "1-in-N sampling of intervals (figures scaled)" },
	{ "states", RT_OBJECT, NULL, false, "time off the CPU by the state the thread left in" },
	{ "states.runnable", RT_OBJECT, NULL, false, "preempted while runnable: run-queue time" },
	{ "states.runnable.ns", RT_INTEGER, "ns", false, "time" },
	{ "states.runnable.count", RT_INTEGER, "count", false, "intervals" },
	{ "states.runnable.short_ns", RT_INTEGER, "ns", true, "time in intervals under min_block_us (counted, not recorded)" },
	{ "states.sleeping", RT_OBJECT, NULL, false, "TASK_INTERRUPTIBLE: locks, sleeps, poll, sockets" },
	{ "states.sleeping.ns", RT_INTEGER, "ns", false, "time" },
	{ "states.sleeping.count", RT_INTEGER, "count", false, "intervals" },
	{ "states.sleeping.short_ns", RT_INTEGER, "ns", true, "time in intervals under min_block_us (counted, not recorded)" },
	{ "states.uninterruptible", RT_OBJECT, NULL, false, "TASK_UNINTERRUPTIBLE: disk I/O, faults" },
	{ "states.uninterruptible.ns", RT_INTEGER, "ns", false, "time" },
	{ "states.uninterruptible.count", RT_INTEGER, "count", false, "intervals" },
	{ "states.uninterruptible.short_ns", RT_INTEGER, "ns", true, "time in intervals under min_block_us (counted, not recorded)" },
	{ "states.other", RT_OBJECT, NULL, false, "any other state (stopped, traced, dead)" },
	{ "states.other.ns", RT_INTEGER, "ns", false, "time" },
	{ "states.other.count", RT_INTEGER, "count", false, "intervals" },
	{ "states.other.short_ns", RT_INTEGER, "ns", true, "time in intervals under min_block_us (counted, not recorded)" },
	{ "total_ns", RT_INTEGER, "ns", false, "time off the CPU over all states" },
	{ "ongoing", RT_INTEGER, "count", false, "threads still off the CPU at the end (counted up to it)" },
	{ "too_short", RT_INTEGER, "count", false, "intervals under min_block_us, not recorded" },
	{ "lost_stacks", RT_INTEGER, "count", false, "stacks that could not be walked or stored" },
	{ "dropped", RT_INTEGER, "count", false, "intervals not recorded: a map was full" },
	STACK_SAMPLER_RESULT_FIELDS,
	STACK_RESULT_FIELDS,
};
static const char *const off_features[] = { "btf", "tp_btf|raw_tp", NULL };

const struct probe_kind probe_kind_off_cpu = {
	.name = "off_cpu",
	.summary = "time the target's threads spend off the CPU, by stack and state (runnable, "
		   "sleeping, uninterruptible); weight: ns",
	.options = off_options,
	.n_options = ARRAY_LEN(off_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = off_variants,
	.private_size = sizeof(struct off_priv),
	.stack_unit = "ns",
	.drops_stacks = true,
	.results = off_results,
	.n_results = ARRAY_LEN(off_results),
	.features = off_features,
	.load = off_load,
	.attach = probe_bpf_attach_all,
	.detach = off_detach,
	.tick = off_tick,
	.wake_fd = off_wake_fd,
	.drain = off_drain,
	.collect = off_collect,
	.destroy = off_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = off_cpu_bpf__elf_bytes,
};
