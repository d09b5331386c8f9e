/* wakeups.c — catalog entry for engine/probes/wakeups.bpf.c: who wakes the target's blocked threads, from
 * which call path, weighted by the part of their wait the waker accounts for (ns: the wait, less
 * any part during which the waker was blocked itself — that part is its own waker's: in a lock
 * convoy the holder, not the waiters that hand the lock on). The lock holder that releases a
 * contended mutex, the producer that fills a queue, the peer whose answer arrives, the timer.
 *
 * Owns: picking the tp_btf or raw_tp program set (by loading it), sizing its maps, and turning
 * (waker, its stacks, kind) → time into results: stacks (comm and frames: the waker's) tagged with
 * the kind of waker, and totals per kind. User-space unwinding of the wakers' stacks (option
 * user_unwind: dwarf) through engine/probes/stack_sampler.c, as off_cpu does.
 * Must not: judge the wakeups (the recipe's Lua does), or claim to know an interrupt's waker:
 * a wakeup from an interrupt is charged to whatever ran (its kernel stack shows the interrupt).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "symbolize/python.h"
#include "probes/stack_sampler.h"
#include "symbolize/stacks.h"
#include "probes/wakeups.h"
#include "wakeups.skel.h"

struct wake_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct wakeups_bpf *skel;
	struct stack_sampler *sampler; /* user-space unwinding (copy_bytes > 0): reads `samples` */
};

PROBE_BPF_SKELETON(wakeups)


static const struct option_spec wake_options[] = {
	{ .name = "min_block_us", .type = OPT_UINT, .dflt = 1, .min = 0, .max = 10000000,
	  .help = "wakeups of threads blocked for less are counted in `too_short`, not recorded" },
	{ .name = "user_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1, .help = "record the wakers' user stacks" },
	{ .name = "kernel_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1, .help = "record the wakers' kernel stacks" },
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 22, .bytes_per_entry = 2 * (4 + 8 + 64),
	  .help = "target threads blocked at the same time (and threads whose last wakeup is kept)" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20, .bytes_per_entry = sizeof(__u32) + DIAG_STACK_DEPTH * sizeof(__u64),
	  .help = "distinct stacks kept" },
	{ .name = "max_stack_counts", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(struct wake_key) + sizeof(struct wake_val) + 64,
	  .help = "distinct (waker, stacks, kind) timed" },
	STACK_SAMPLER_OPTIONS("each wakeup (the waker's)", "fp", 2048, 1024),
	STACK_SAMPLER_PYTHON_OPTION,
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "record 1 in N wakeups at random and scale (raised by the pre-flight under degrade: sample)" },
};

static const char *const wake_variants[] = { "tp_btf", "raw_tp", NULL };

static const char *const by_names[WAKE_BY_NR] = {
	[WAKE_BY_SAME] = "same-process", [WAKE_BY_OTHER] = "other-process", [WAKE_BY_KERNEL] = "kernel",
};

static int wake_load(struct probe *p, struct diag_err *err)
{
	struct wake_priv *wp = p->priv;
	struct variant_tries tries = { "" };
	bool dwarf = stack_sampler_wants_dwarf(probe_opt_str(p, "user_unwind")) &&
		     probe_opt(p, "user_stacks");
	bool py_walk;
	struct python_procs *py = stack_sampler_python_plan(
		probe_opt(p, "python_frames") && probe_opt(p, "user_stacks"), p->cfg.filter.pid,
		dwarf ? (uint32_t)probe_opt(p, "stack_bytes") : 0, p->files, &py_walk);

	for (const char *const *v = p->cfg.variants; *v; v++) {
		if (!(wp->skel = wakeups_skel_open(p, err)))
			return -1;
		wp->skel->rodata->min_block_ns = probe_opt(p, "min_block_us") * 1000;
		wp->skel->rodata->user_stacks = probe_opt(p, "user_stacks") != 0;
		wp->skel->rodata->kernel_stacks = probe_opt(p, "kernel_stacks") != 0;
		wp->skel->rodata->copy_bytes = dwarf ? (__u32)probe_opt(p, "stack_bytes") : 0;
		wp->skel->rodata->py_walk = py_walk;
		uint32_t ring = stack_sampler_ring_size(dwarf || py_walk ? probe_opt(p, "ring_buffer_kib") * 1024 : 0);
		bpf_map__set_max_entries(wp->skel->maps.samples, ring);
		wp->skel->rodata->wake_bytes = ring / 4;
		bpf_map__set_max_entries(wp->skel->maps.blocked, (__u32)probe_opt(p, "max_threads"));
		bpf_map__set_max_entries(wp->skel->maps.woken, (__u32)probe_opt(p, "max_threads"));
		bpf_map__set_max_entries(wp->skel->maps.stacks, (__u32)probe_opt(p, "max_stacks"));
		bpf_map__set_max_entries(wp->skel->maps.counts, (__u32)probe_opt(p, "max_stack_counts"));
		probe_bpf_select_variant(wp->skel->obj, *v);
		if (probe_variant_loaded(p, &tries, *v, wakeups_bpf__load(wp->skel)))
			goto loaded;
	}
	python_procs_free(py);
	return probe_no_variant(&tries, "wakeups", err);
loaded:
	if (!dwarf && !py_walk)
		return 0;
	wp->sampler = stack_sampler_new(bpf_map__fd(wp->skel->maps.stacks), dwarf, false,
					(size_t)probe_opt(p, "max_stack_counts"), by_names, WAKE_BY_NR, 0, p->files);
	stack_sampler_python_start(wp->sampler, py, bpf_map__fd(wp->skel->maps.py_procs),
				   p->cfg.filter.pid);
	if (stack_sampler_open_ring(wp->sampler, bpf_map__fd(wp->skel->maps.samples)))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "opening the wakeups ring buffer: %s",
				 strerror(errno));
	return 0;
}

STACK_SAMPLER_PROBE_OPS(wake, struct wake_priv)

static void wake_destroy(struct probe *p)
{
	struct wake_priv *wp = p->priv;
	probe_bpf_destroy(p);
	stack_sampler_free(wp->sampler); /* NULL is fine */
	wp->sampler = NULL;
}

static int wake_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct wake_priv *wp = p->priv;
	int counts_fd = bpf_map__fd(wp->skel->maps.counts);
	int stacks_fd = bpf_map__fd(wp->skel->maps.stacks);
	double scale = probe_scale(p);
	uint64_t by_ns[WAKE_BY_NR] = { 0 }, by_count[WAKE_BY_NR] = { 0 };
	struct stack_table *table = stacks_new(ctx, bpf_map__max_entries(wp->skel->maps.counts) +
						    (wp->sampler ? (size_t)probe_opt(p, "max_stack_counts") : 0));
	(void)err;

	struct wake_key keys[2], *prev = NULL, *next = &keys[0];
	while (bpf_map_get_next_key(counts_fd, prev, next) == 0) {
		struct wake_val v;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(counts_fd, prev, &v) || prev->by >= WAKE_BY_NR)
			continue;
		char comm[sizeof(prev->comm) + 1];
		snprintf(comm, sizeof(comm), "%s", prev->comm);
		by_ns[prev->by] += v.total_ns * scale;
		by_count[prev->by] += v.count * scale;
		stacks_add_ids(table, stacks_fd, (int)prev->waker_tgid, comm, prev->user_stack_id, prev->kernel_stack_id,
			       prev->kernel_stack_id >= 0, v.total_ns * scale, v.count * scale,
			       by_names[prev->by]);
	}
	if (wp->sampler) {
		uint64_t sw[WAKE_BY_NR] = { 0 }, sc[WAKE_BY_NR] = { 0 }, w, n, k;
		stack_sampler_consume(wp->sampler); /* detached: what is left */
		stack_sampler_tag_sums(wp->sampler, sw, sc);
		for (int b = 0; b < WAKE_BY_NR; b++) {
			by_ns[b] += sw[b] * scale;
			by_count[b] += sc[b] * scale;
		}
		stack_sampler_flush(wp->sampler, table, probe_opt(p, "kernel_stacks"), scale, &w, &n, &k);
	}

	struct value *res = value_obj();
	value_set_int(res, "min_block_us", (int64_t)probe_opt(p, "min_block_us"));
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	struct value *by = value_obj_set(res, "by", value_obj());
	uint64_t total = 0, count = 0;
	for (int b = 0; b < WAKE_BY_NR; b++) {
		struct value *o = value_obj_set(by, by_names[b], value_obj());
		value_set_int(o, "ns", (int64_t)by_ns[b]);
		value_set_int(o, "count", (int64_t)by_count[b]);
		total += by_ns[b];
		count += by_count[b];
	}
	value_set_int(res, "total_ns", (int64_t)total);
	uint64_t chained = 0;
	int ncpus = libbpf_num_possible_cpus();
	if (ncpus > 0) {
		uint64_t per_cpu[ncpus];
		__u32 zero = 0;
		if (!bpf_map_lookup_elem(bpf_map__fd(wp->skel->maps.chained_ns), &zero, per_cpu))
			for (int c = 0; c < ncpus; c++)
				chained += per_cpu[c];
	}
	value_set_int(res, "chained_ns", (int64_t)(chained * scale));
	value_set_int(res, "wakeups", (int64_t)count);
	value_set_int(res, "too_short", (int64_t)probe_stat_sum(wp->skel->obj, WAKE_STAT_TOO_SHORT));
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(wp->skel->obj, DIAG_STAT_LOST));
	value_set_int(res, "dropped", (int64_t)(probe_stat_sum(wp->skel->obj, DIAG_STAT_MAP_FULL) +
						  stacks_refused(table) +
						  (wp->sampler ? stack_sampler_refused(wp->sampler) : 0)));
	stack_sampler_report(wp->sampler, res, wp->skel->rodata->copy_bytes,
			     probe_stat_sum(wp->skel->obj, WAKE_STAT_SENT),
			     probe_stat_sum(wp->skel->obj, WAKE_STAT_RING_FULL));
	stacks_finish(table, res, p->kind->stack_unit);
	*out = res;
	return 0;
}

#define BY_FIELDS(k, what)                                                                        \
	{ "by." k, RT_OBJECT, NULL, false, what },                                                \
	{ "by." k ".ns", RT_INTEGER, "ns", false, "the woken threads' waits these wakers account for" }, \
	{ "by." k ".count", RT_INTEGER, "count", false, "wakeups" }

static const struct result_field wake_results[] = {
	{ "min_block_us", RT_INTEGER, "us", false, "shortest block whose wakeup is recorded" },
	{ "sampled_1_in", RT_INTEGER, NULL, true, "1-in-N sampling of wakeups (figures scaled)" },
	{ "by", RT_OBJECT, NULL, false, "wakeups by kind of waker" },
	BY_FIELDS("same-process", "a thread of the woken thread's own process (lock holder, producer)"),
	BY_FIELDS("other-process", "a thread of another process (peer, client)"),
	BY_FIELDS("kernel", "a kernel thread, or an interrupt over the idle task (timer, I/O)"),
	{ "total_ns", RT_INTEGER, "ns", false, "the waits all the wakers recorded account for" },
	{ "chained_ns", RT_INTEGER, "ns", false,
	  "parts of waits during which the waker was blocked itself: its own waker's" },
	{ "wakeups", RT_INTEGER, "count", false, "wakeups recorded" },
	{ "too_short", RT_INTEGER, "count", false, "wakeups after blocks under min_block_us" },
	{ "lost_stacks", RT_INTEGER, "count", false, "stacks that could not be walked or stored" },
	{ "dropped", RT_INTEGER, "count", false, "wakeups not recorded: a map was full" },
	STACK_SAMPLER_RESULT_FIELDS,
	STACK_RESULT_FIELDS,
};
static const char *const wake_features[] = { "btf", "tp_btf|raw_tp", NULL };

const struct probe_kind probe_kind_wakeups = {
	.name = "wakeups",
	.summary = "who wakes the target's blocked threads (the waker's stacks: a lock's holder, a "
		   "producer, a peer, a timer); weight: the part of the woken threads' wait each "
		   "waker accounts for, ns",
	.options = wake_options,
	.n_options = ARRAY_LEN(wake_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = wake_variants,
	.private_size = sizeof(struct wake_priv),
	.stack_unit = "ns",
	.drops_stacks = true,
	.results = wake_results,
	.n_results = ARRAY_LEN(wake_results),
	.features = wake_features,
	.load = wake_load,
	.attach = probe_bpf_attach_all,
	.detach = probe_bpf_detach,
	.tick = wake_tick,
	.wake_fd = wake_wake_fd,
	.drain = wake_drain,
	.collect = wake_collect,
	.destroy = wake_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = wakeups_bpf__elf_bytes,
};
