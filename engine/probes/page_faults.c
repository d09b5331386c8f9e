/* page_faults.c — catalog entry for engine/probes/page_faults.bpf.c: the target's user-mode page faults by
 * call path, weighted in bytes (one page per fault): where new memory is first touched.
 *
 * Owns: picking the tp_btf, raw_tp or tracepoint program set (by loading it), sizing its maps and
 * ring buffer, handing the streamed faults to engine/probes/stack_sampler.c (DWARF unwinding by default:
 * growth faults land inside the allocator, glibc has no frame pointers, and the caller of malloc
 * is what matters), scaling by the 1-in-N sampling, and turning counts into results.
 * Must not: unwind or symbolize itself (stack_sampler.c, stacks.c), or judge what the faults mean
 * (the recipe's Lua does: a fault is a touched page, not necessarily a leaked one).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h" /* before the skeleton: it names struct diag_ctl */
#include "page_faults.skel.h"
#include "probes/page_faults.h"
#include "abi/diag_unwind.h"
#include "symbolize/python.h"
#include "probes/stack_sampler.h"
#include "symbolize/stacks.h"

struct pf_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct page_faults_bpf *skel;
	struct stack_sampler *sampler; /* user-space unwinding (copy > 0): reads `samples` */
};

PROBE_BPF_SKELETON(page_faults)

static const struct option_spec pf_options[] = {
	{ .name = "user_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1,
	  .help = "record user-space stacks" },
	{ .name = "kernel_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1,
	  .help = "record kernel stacks" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 8192,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(__u32) + DIAG_STACK_DEPTH * sizeof(__u64),
	  .help = "distinct stacks kept" },
	{ .name = "max_stack_counts", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 8192,
	  .min = 64, .max = 1u << 20, .bytes_per_entry = sizeof(struct pf_key) + sizeof(__u64) + 64,
	  .help = "distinct (thread name, user stack, kernel stack) counted" },
	STACK_SAMPLER_UNWIND_OPTION("each fault", "dwarf"),
	{ .name = "leaf_fixup", .type = OPT_BOOL, .dflt = 1, .max = 1,
	  .help = "fp: recover the caller of a frameless leaf by CFI" },
	STACK_SAMPLER_STACK_BYTES_OPTION("each fault", 8192),
	STACK_SAMPLER_PYTHON_OPTION,
	STACK_SAMPLER_RING_OPTION(2048),
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "record 1 fault in N at random and scale (raised by the pre-flight under degrade: sample)" },
};

static const char *const pf_variants[] = { "tp_btf", "raw_tp", "tracepoint", NULL };

STACK_SAMPLER_PROBE_OPS(pf, struct pf_priv)

static int pf_load(struct probe *p, struct diag_err *err)
{
	struct pf_priv *pp = p->priv;
	struct variant_tries tries = { "" };
	const char *unwind = probe_opt_str(p, "user_unwind");
	bool dwarf = !unwind || !strcmp(unwind, "dwarf");
	bool leaf_fixup = !dwarf && probe_opt(p, "leaf_fixup");
	bool ustacks = probe_opt(p, "user_stacks") != 0;
	__u32 copy = !ustacks ? 0 : dwarf ? (__u32)probe_opt(p, "stack_bytes") : leaf_fixup ? 256 : 0;
	uint32_t ring = stack_sampler_ring_size(probe_opt(p, "ring_buffer_kib") * 1024);
	long page = sysconf(_SC_PAGESIZE);
	bool py_walk;
	struct python_procs *py = stack_sampler_python_plan(probe_opt(p, "python_frames") && ustacks,
							    p->cfg.filter.pid, copy, p->files, &py_walk);

	for (const char *const *v = p->cfg.variants; *v; v++) {
		if (!(pp->skel = page_faults_skel_open(p, err)))
			return -1;
		pp->skel->rodata->user_stacks = ustacks;
		pp->skel->rodata->kernel_stacks = probe_opt(p, "kernel_stacks") != 0;
		pp->skel->rodata->page_bytes = page > 0 ? (__u64)page : 4096;
		pp->skel->rodata->copy_bytes = copy;
		pp->skel->rodata->py_walk = py_walk;
		pp->skel->rodata->wake_bytes = ring / 4;
		bpf_map__set_max_entries(pp->skel->maps.stacks, (__u32)probe_opt(p, "max_stacks"));
		bpf_map__set_max_entries(pp->skel->maps.counts, (__u32)probe_opt(p, "max_stack_counts"));
		bpf_map__set_max_entries(pp->skel->maps.samples, copy || py_walk ? (__u32)ring : 4096);
		probe_bpf_select_variant(pp->skel->obj, *v);
		if (probe_variant_loaded(p, &tries, *v, page_faults_bpf__load(pp->skel)))
			break;
	}
	if (!p->variant) {
		python_procs_free(py);
		return probe_no_variant(&tries, "page faults", err);
	}
	if (copy || py_walk) {
		pp->sampler = stack_sampler_new(bpf_map__fd(pp->skel->maps.stacks), dwarf, leaf_fixup,
						(size_t)probe_opt(p, "max_stack_counts"), NULL, 0, 0, p->files);
		stack_sampler_python_start(pp->sampler, py, bpf_map__fd(pp->skel->maps.py_procs),
					   p->cfg.filter.pid);
		if (stack_sampler_open_ring(pp->sampler, bpf_map__fd(pp->skel->maps.samples)))
			return diag_fail(err, DIAG_EXIT_RUNTIME, "opening the samples ring buffer: %s",
					 strerror(errno));
	}
	return 0;
}

static void pf_destroy(struct probe *p)
{
	struct pf_priv *pp = p->priv;
	probe_bpf_destroy(p);
	stack_sampler_free(pp->sampler); /* NULL is fine */
	memset(pp, 0, sizeof(*pp));
}

static int pf_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		      struct diag_err *err)
{
	struct pf_priv *pp = p->priv;
	struct bpf_object *obj = pp->skel->obj;
	int counts_fd = bpf_map__fd(pp->skel->maps.counts);
	int stacks_fd = bpf_map__fd(pp->skel->maps.stacks);
	double scale = probe_scale(p);
	uint64_t page = pp->skel->rodata->page_bytes;
	bool kstacks = probe_opt(p, "kernel_stacks") != 0;
	struct stack_table *table = stacks_new(ctx, bpf_map__max_entries(pp->skel->maps.counts) +
							    (size_t)probe_opt(p, "max_stack_counts"));
	struct pf_key keys[2], *prev = NULL, *next = &keys[0];
	uint64_t faults = 0;
	(void)err;
	if (scale < 1)
		scale = 1;

	while (bpf_map_get_next_key(counts_fd, prev, next) == 0) {
		__u64 count;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(counts_fd, prev, &count))
			continue;
		faults += count;
		char comm[sizeof(prev->comm) + 1];
		snprintf(comm, sizeof(comm), "%s", prev->comm);
		stacks_add_ids(table, stacks_fd, (int)prev->tgid, comm, prev->user_stack_id, prev->kernel_stack_id,
			       kstacks && prev->kernel_stack_id >= 0, count * page * scale,
			       count * scale, NULL);
	}
	faults *= scale;
	if (pp->sampler) {
		uint64_t w, n, k;
		stack_sampler_consume(pp->sampler); /* detached: what is left */
		stack_sampler_flush(pp->sampler, table, kstacks, scale, &w, &n, &k);
		faults += n;
	}

	struct value *res = value_obj();
	value_set_str(res, "tracepoint", "exceptions:page_fault_user");
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_int(res, "page_bytes", (int64_t)page);
	value_set_int(res, "faults", (int64_t)faults);
	value_set_int(res, "bytes", (int64_t)(faults * page));
	value_set_int(res, "write_faults", (int64_t)(probe_stat_sum(obj, PF_STAT_WRITES) * scale));
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(obj, DIAG_STAT_LOST));
	value_set_int(res, "dropped", (int64_t)(probe_stat_sum(obj, DIAG_STAT_MAP_FULL) +
						  stacks_refused(table) +
						  (pp->sampler ? stack_sampler_refused(pp->sampler) : 0)));
	stack_sampler_report(pp->sampler, res, pp->skel->rodata->copy_bytes,
			     probe_stat_sum(obj, PF_STAT_SENT), probe_stat_sum(obj, PF_STAT_RING_FULL));
	stacks_finish(table, res, p->kind->stack_unit);
	*out = res;
	return 0;
}

static const struct result_field pf_results[] = {
	{ "tracepoint", RT_STRING, NULL, false, "\"exceptions:page_fault_user\"" },
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 fault in N recorded, figures scaled by N" },
	{ "page_bytes", RT_INTEGER, "bytes", false, "bytes per fault (the page size)" },
	{ "faults", RT_INTEGER, "count", false, "user-mode page faults of the target" },
	{ "bytes", RT_INTEGER, "bytes", false, "faults x page_bytes" },
	{ "write_faults", RT_INTEGER, "count", false, "faults on a write access" },
	{ "lost_stacks", RT_INTEGER, "count", false, "stacks that could not be walked or stored" },
	{ "dropped", RT_INTEGER, "count", false, "faults not counted by stack: a map or the unwinder's table was full" },
	STACK_SAMPLER_RESULT_FIELDS,
	STACK_RESULT_FIELDS,
};
static const char *const pf_features[] = { "btf", "tp_btf|raw_tp|tracepoint", NULL };

const struct probe_kind probe_kind_page_faults = {
	.name = "page_faults",
	.summary = "the target's user page faults by user + kernel stack (exceptions:page_fault_user); "
		   "weight: bytes (a page per fault)",
	.options = pf_options,
	.n_options = ARRAY_LEN(pf_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = pf_variants,
	.private_size = sizeof(struct pf_priv),
	.stack_unit = "bytes",
	.drops_stacks = true,
	.results = pf_results,
	.n_results = ARRAY_LEN(pf_results),
	.features = pf_features,
	.load = pf_load,
	.attach = probe_bpf_attach_all,
	.detach = probe_bpf_detach,
	.tick = pf_tick,
	.wake_fd = pf_wake_fd,
	.drain = pf_drain,
	.collect = pf_collect,
	.destroy = pf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = page_faults_bpf__elf_bytes,
};
