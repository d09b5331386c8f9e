/* runq_latency.c — catalog entry for engine/probes/runq_latency.bpf.c: run-queue wait of the target.
 *
 * Owns: picking the tp_btf or raw_tp program set (by loading it: the verifier is the feature
 * probe), attaching it, and reading the log2 histogram into results.
 * Must not: judge the latency (the recipe's Lua does).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "runq_latency.skel.h"

struct runq_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct runq_latency_bpf *skel;
};

PROBE_BPF_SKELETON(runq_latency)

static const struct option_spec runq_options[] = {
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 22, .bytes_per_entry = 4 + 8 + 64,
	  .help = "threads that can be waiting on a run queue at once" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "time 1 in N waits at random and scale the counts (raised by the pre-flight under "
		  "degrade: sample)" },
};

static const char *const runq_variants[] = { "tp_btf", "raw_tp", NULL };

static int runq_load(struct probe *p, struct diag_err *err)
{
	struct runq_priv *rp = p->priv;
	struct variant_tries tries = { "" };

	for (const char *const *v = p->cfg.variants; *v; v++) {
		if (!(rp->skel = runq_latency_skel_open(p, err)))
			return -1;
		bpf_map__set_max_entries(rp->skel->maps.wait_start, (__u32)probe_opt(p, "max_threads"));
		probe_bpf_select_variant(rp->skel->obj, *v);
		if (probe_variant_loaded(p, &tries, *v, runq_latency_bpf__load(rp->skel)))
			return 0;
	}
	return probe_no_variant(&tries, "run-queue latency", err);
}

static int runq_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct runq_priv *rp = p->priv;
	int hist_fd = bpf_map__fd(rp->skel->maps.hist_us);
	int totals_fd = bpf_map__fd(rp->skel->maps.totals);
	uint64_t total_ns, max_ns, count;
	(void)ctx;
	(void)err;

	struct value *res = value_obj();
	value_set_str(res, "unit", "us");
	struct value *buckets =
		probe_log2_buckets(hist_fd, DIAG_HIST_SLOTS, totals_fd, &count, &total_ns, &max_ns);
	double scale = probe_scale(p);
	if (scale > 1) { /* the distribution's shape is the sample's; the counts are scaled */
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
		for (size_t i = 0; i < buckets->arr.len; i++) {
			struct value *b = buckets->arr.items[i];
			value_set_int(b, "count", (int64_t)llround(value_get_num(b, "count", 0) * scale));
		}
	}
	value_set_int(res, "count", (int64_t)(count * scale));
	value_set_int(res, "total_us", (int64_t)(total_ns * scale / 1000));
	value_set_int(res, "max_us", (int64_t)(max_ns / 1000));
	value_set_int(res, "dropped", (int64_t)probe_stat_sum(rp->skel->obj, DIAG_STAT_MAP_FULL));
	value_obj_set(res, "buckets", buckets);
	*out = res;
	return 0;
}


static const struct result_field runq_results[] = {
	{ "unit", RT_STRING, NULL, false, "unit of the buckets and totals: \"us\"" },
	{ "sampled_1_in", RT_INTEGER, NULL, true, "1-in-N sampling of waits (counts scaled)" },
	{ "count", RT_INTEGER, "count", false, "waits measured (wakeup or preemption to running)" },
	{ "total_us", RT_INTEGER, "us", false, "time waited, summed" },
	{ "max_us", RT_INTEGER, "us", false, "longest wait" },
	{ "dropped", RT_INTEGER, "count", false, "waits not measured: more threads waiting than max_threads" },
	LOG2_BUCKET_FIELDS("buckets", "us"),
};
static const char *const runq_features[] = { "btf", "tp_btf|raw_tp", NULL };

const struct probe_kind probe_kind_runq_latency = {
	.name = "runq_latency",
	.summary = "time the target's threads wait runnable on a run queue (log2 histogram, us)",
	.options = runq_options,
	.n_options = ARRAY_LEN(runq_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = runq_variants,
	.private_size = sizeof(struct runq_priv),
	.results = runq_results,
	.n_results = ARRAY_LEN(runq_results),
	.features = runq_features,
	.load = runq_load,
	.attach = probe_bpf_attach_all,
	.detach = probe_bpf_detach,
	.collect = runq_collect,
	.destroy = probe_bpf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = runq_latency_bpf__elf_bytes,
};
