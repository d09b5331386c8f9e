/* cpu_profile.c — catalog entry for engine/probes/cpu_profile.bpf.c: on-CPU stack sampling.
 *
 * Owns: choosing the sampling event (the first variant that opens, in the recipe's order —
 * default cpu_clock, the software event; hw_cycles where a recipe prefers it and a PMU exists),
 * one perf event + BPF link per online CPU, and walking its counts map: each
 * (thread name, stack ids, count) goes to the shared stack table (stacks.h), weight = count =
 * samples (stack_unit "samples"). User-space unwinding (options user_unwind, leaf_fixup): the
 * `samples` ring buffer, sized from ring_buffer_kib, drained when a quarter full (the run loop
 * polls it), each tick and at collect into engine/probes/stack_sampler.c, which fixes and counts the
 * stacks (at most max_stack_counts distinct ones; more are counted in `dropped`). What the
 * target's runtime is (usyms.h: a JVM, Node) and how many entries its perf map had, for the
 * advice on naming JIT code; with option jvm_perfmap, `jcmd PID Compiler.perfmap` run before the
 * last symbol snapshot (engine/probes/jcmd.c, as the JVM's user) and what came of it.
 * Must not: run jcmd unless the option says so; read, symbolize, merge or order stacks itself (stacks.c does), unwind
 * (stack_sampler.c, unwind.c do), or interpret them (that is the recipe's Lua).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h" /* before the skeleton: it names struct diag_ctl */
#include "cpu_profile.skel.h"
#include "probes/cpu_profile.h"
#include "abi/diag_unwind.h"
#include "probes/jcmd.h"
#include "symbolize/python.h"
#include "probes/stack_sampler.h"
#include "symbolize/stacks.h"
#include "symbolize/usyms.h"

struct profile_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct cpu_profile_bpf *skel;
	int *cpus, n_cpus;
	struct stack_sampler *sampler; /* user-space unwinding (copy_bytes > 0): reads `samples` */
	char jvm_perfmap[800];         /* what running jcmd gave ("" : not run) */
};

PROBE_BPF_SKELETON(cpu_profile)


static const struct option_spec profile_options[] = {
	{ .name = "frequency_hz", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_HZ, .dflt = 99,
	  .min = 1, .max = 100000, .help = "samples per second on each CPU" },
	{ .name = "user_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1,
	  .help = "record user-space stacks" },
	{ .name = "kernel_stacks", .type = OPT_BOOL, .role = OPT_ROLE_STACKS, .dflt = 1, .max = 1,
	  .help = "record kernel stacks" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(__u32) + DIAG_STACK_DEPTH * sizeof(__u64),
	  .help = "distinct stacks kept, at most (a run sizes the map to what it can sample)" },
	{ .name = "max_stack_counts", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20, .bytes_per_entry = sizeof(struct profile_key) + sizeof(__u64) + 64,
	  .help = "distinct (thread name, user stack, kernel stack) counted, at most (sized as max_stacks)" },
	STACK_SAMPLER_UNWIND_OPTION("each sample", "fp"),
	{ .name = "leaf_fixup", .type = OPT_BOOL, .dflt = 1, .max = 1,
	  .help = "fp: recover the caller of a frameless leaf by CFI (copies leaf_stack_bytes)" },
	STACK_SAMPLER_PYTHON_OPTION,
	{ .name = "leaf_stack_bytes", .type = OPT_UINT, .dflt = 256, .min = 8, .max = 4096,
	  .help = "fp with leaf_fixup: bytes of user stack above sp copied per sample" },
	STACK_SAMPLER_STACK_BYTES_OPTION("each sample", 8192),
	{ .name = "ring_buffer_kib", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 1024,
	  .min = 4, .max = 262144, .bytes_per_entry = 1024,
	  .help = "KiB of ring buffer for samples unwound in user space (rounded up to a power of 2; "
		  "at most 256 in fp mode; drained when a quarter full; full: samples keep their "
		  "frame-pointer stack only)" },
	{ .name = "jvm_perfmap", .type = OPT_BOOL, .dflt = 0, .max = 1,
	  .help = "a JVM target (--pid): run jcmd PID Compiler.perfmap as its user when the "
		  "collection ends, so that its perf map names the JIT-compiled methods" },
};

#define LEAF_RING_MAX (256u * 1024) /* ring buffer bytes at most in fp + leaf fixup mode */

static const char *const profile_variants[] = { "cpu_clock", "hw_cycles", NULL };

static int online_cpus(int **out)
{
	int n = cpu_list_read("/sys/devices/system/cpu/online", out);
	if (n > 0)
		return n;
	long cnt = sysconf(_SC_NPROCESSORS_ONLN); /* no sysfs: assume 0..N-1 */
	*out = xcalloc(cnt > 0 ? (size_t)cnt : 1, sizeof(int));
	for (long c = 0; c < cnt; c++)
		(*out)[c] = (int)c;
	return cnt > 0 ? (int)cnt : 0;
}

static int open_sampling_event(const char *variant, uint64_t hz, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = hz,
	};
	if (strcmp(variant, "hw_cycles") == 0) {
		attr.type = PERF_TYPE_HARDWARE;
		attr.config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
	}
	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

STACK_SAMPLER_PROBE_OPS(profile, struct profile_priv)

/* A map's entries for this run: the option's value is the most it may hold. A run samples at
 * most hz on each CPU for its window: two stack ids a sample (user, kernel) and one count key.
 * The stack map is a hash table that loses a stack landing on a taken bucket (lost_stacks), so it
 * gets 4 buckets per id it may store (a quarter taken at the very worst, when no two samples
 * share a stack); the counts chain their collisions, one entry per sample is enough. Both are
 * preallocated and charged to the run when created (the stack map 1 KiB an entry: 16 MiB at
 * 16384, 5 ms on this machine), which a 1 s run at 99 Hz, 400 ids at most, has no use for.
 * per_sample: the entries a sample may need (8 for the stack map: 2 ids x 4
 * buckets; 1 for the counts). */
static __u32 profile_map_entries(const struct probe *p, int n_cpus, const char *option,
				 unsigned per_sample)
{
	uint64_t most = probe_opt(p, option);
	double want = (double)per_sample * probe_opt(p, "frequency_hz") * n_cpus * p->cfg.window_s;
	if (p->cfg.window_s <= 0 || want >= (double)most)
		return (__u32)most;
	uint64_t n = 1024;
	while ((double)n < want)
		n <<= 1;
	return (__u32)(n < most ? n : most);
}

static int profile_load(struct probe *p, struct diag_err *err)
{
	struct profile_priv *pp = p->priv;
	uint64_t hz = probe_opt(p, "frequency_hz");

	pp->n_cpus = online_cpus(&pp->cpus);
	if (pp->n_cpus <= 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "cannot tell which CPUs are online");
	/* Pick the event by opening it for real on one CPU: the only test that does not lie. Each
	 * variant's failure is kept for the message: an event missing here (ENOENT: no PMU) and one
	 * refused (EACCES, EPERM: perf_event_paranoid, CAP_PERFMON) want different advice. */
	char why[256] = "";
	bool missing = false, refused = false;
	for (const char *const *v = p->cfg.variants; *v; v++) {
		int fd = open_sampling_event(*v, hz, pp->cpus[0]);
		if (fd >= 0) {
			close(fd);
			p->variant = *v;
			break;
		}
		int e = errno;
		missing |= e == ENOENT;
		refused |= e == EACCES || e == EPERM;
		size_t len = strlen(why);
		snprintf(why + len, sizeof(why) - len, "%s%s: %s", len ? "; " : "", *v, strerror(e));
		if (strcmp(*v, "hw_cycles") == 0 && v[1] && !p->note[0]) /* the next one is tried */
			snprintf(p->note, sizeof(p->note),
				 "hardware cycles counter unavailable (%s: no PMU, e.g. a VM): "
				 "sampling with the cpu-clock software event", strerror(e));
	}
	if (!p->variant)
		return diag_fail(err, DIAG_EXIT_REFUSED, "cannot open a perf sampling event (%s)%s%s",
				 why[0] ? why : "no variant",
				 missing ? ": an event that does not exist here (hardware cycles: no PMU, e.g. a VM)" : "",
				 refused ? "; check perf_event_paranoid and CAP_PERFMON" : "");

	if (!(pp->skel = cpu_profile_skel_open(p, err)))
		return -1;
	pp->skel->rodata->user_stacks = probe_opt(p, "user_stacks") != 0;
	pp->skel->rodata->kernel_stacks = probe_opt(p, "kernel_stacks") != 0;
	bpf_map__set_max_entries(pp->skel->maps.stacks, profile_map_entries(p, pp->n_cpus, "max_stacks", 8));
	bpf_map__set_max_entries(pp->skel->maps.counts, profile_map_entries(p, pp->n_cpus, "max_stack_counts", 1));
	bool dwarf = stack_sampler_wants_dwarf(probe_opt_str(p, "user_unwind"));
	bool leaf_fixup = !dwarf && probe_opt(p, "leaf_fixup");
	__u32 copy = dwarf ? (__u32)probe_opt(p, "stack_bytes")
		     : leaf_fixup ? (__u32)probe_opt(p, "leaf_stack_bytes") : 0;
	pp->skel->rodata->copy_bytes = probe_opt(p, "user_stacks") ? copy : 0;
	bool py_walk;
	struct python_procs *py = stack_sampler_python_plan(
		probe_opt(p, "python_frames") && probe_opt(p, "user_stacks"), p->cfg.filter.pid,
		pp->skel->rodata->copy_bytes, p->files, &py_walk);
	pp->skel->rodata->py_walk = py_walk;
	/* fp + leaf fixup records are ~350 bytes: a quarter of 256 KiB holds ~190 of them, more
	 * than a drain interval brings at 999 Hz on 2 CPUs; dwarf copies need the whole option. */
	uint64_t want = probe_opt(p, "ring_buffer_kib") * 1024;
	if (!dwarf && want > LEAF_RING_MAX)
		want = LEAF_RING_MAX;
	uint32_t ring = stack_sampler_ring_size(want);
	bpf_map__set_max_entries(pp->skel->maps.samples, (__u32)ring);
	pp->skel->rodata->wake_bytes = ring / 4;
	int rc = cpu_profile_bpf__load(pp->skel);
	if (rc) {
		python_procs_free(py);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "loading BPF program: %s", strerror(-rc));
	}
	if (pp->skel->rodata->copy_bytes || py_walk) {
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

static int profile_attach(struct probe *p, struct diag_err *err)
{
	struct profile_priv *pp = p->priv;
	uint64_t hz = probe_opt(p, "frequency_hz");

	for (int i = 0; i < pp->n_cpus; i++) {
		int fd = open_sampling_event(p->variant, hz, pp->cpus[i]);
		if (fd < 0) {
			if (errno == ENODEV) /* went offline meanwhile */
				continue;
			return diag_fail(err, DIAG_EXIT_RUNTIME, "perf_event_open on CPU %d: %s",
					 pp->cpus[i], strerror(errno));
		}
		/* The link owns the event's fd from here (libbpf closes it on destroy); a failed
		 * attach leaves it ours. Closing it again later could close an fd number another
		 * thread (the kallsyms reader) has been given meanwhile. */
		struct bpf_link *link = bpf_program__attach_perf_event(pp->skel->progs.on_cpu_sample, fd);
		if (!link) {
			int e = errno;
			close(fd);
			errno = e;
		}
		char what[32];
		snprintf(what, sizeof(what), "to CPU %d", pp->cpus[i]);
		if (probe_bpf_link(p, link, what, err))
			return -1;
	}
	return 0;
}

static void profile_destroy(struct probe *p)
{
	struct profile_priv *pp = p->priv;
	probe_bpf_destroy(p);
	stack_sampler_free(pp->sampler); /* NULL is fine */
	free(pp->cpus);
	memset(pp, 0, sizeof(*pp));
}

static void profile_before_symbols(struct probe *p, int pid, const struct usyms *us, char *note,
				   size_t len)
{
	struct profile_priv *pp = p->priv;
	char what[512];
	struct diag_err err;
	if (!probe_opt(p, "jvm_perfmap"))
		return;
	if (jcmd_perfmap(pid, us, p->files, mono_ns() + JCMD_TIMEOUT_NS, what, sizeof(what), &err) == 0)
		snprintf(pp->jvm_perfmap, sizeof(pp->jvm_perfmap), "ran: %s", what);
	else
		snprintf(pp->jvm_perfmap, sizeof(pp->jvm_perfmap), "failed: %.*s", 760, err.msg);
	snprintf(note, len, "jvm_perfmap: %s", pp->jvm_perfmap);
}

static int profile_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			   struct diag_err *err)
{
	struct profile_priv *pp = p->priv;
	int counts_fd = bpf_map__fd(pp->skel->maps.counts);
	int stacks_fd = bpf_map__fd(pp->skel->maps.stacks);
	/* a row per counts map entry, and one per distinct unwound stack */
	struct stack_table *table = stacks_new(ctx, bpf_map__max_entries(pp->skel->maps.counts) +
							    (size_t)probe_opt(p, "max_stack_counts"));
	struct profile_key keys[2], *prev = NULL, *next = &keys[0];
	uint64_t samples = 0, in_kernel = 0;
	(void)err;

	while (bpf_map_get_next_key(counts_fd, prev, next) == 0) {
		__u64 count;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(counts_fd, prev, &count))
			continue;
		/* Only -EFAULT means "no kernel stack" (the sample was in user mode); a stack that
		 * could not be stored (-EEXIST, -ENOMEM) was still taken in the kernel. */
		bool kernel = probe_opt(p, "kernel_stacks") && prev->kernel_stack_id != -EFAULT;
		samples += count;
		in_kernel += kernel ? count : 0;
		char comm[sizeof(prev->comm) + 1];
		snprintf(comm, sizeof(comm), "%s", prev->comm);
		stacks_add_ids(table, stacks_fd, (int)prev->tgid, comm, prev->user_stack_id, prev->kernel_stack_id,
			       kernel, count, count, NULL);
	}
	if (pp->sampler) {
		uint64_t w, n, k;
		stack_sampler_consume(pp->sampler); /* detached: what is left */
		stack_sampler_flush(pp->sampler, table, probe_opt(p, "kernel_stacks"), 1, &w, &n, &k);
		samples += n;
		in_kernel += k;
	}

	struct value *res = value_obj();
	value_set_str(res, "event", p->variant);
	value_set_int(res, "frequency_hz", (int64_t)probe_opt(p, "frequency_hz"));
	value_set_int(res, "samples", (int64_t)samples);
	value_set_int(res, "user_samples", (int64_t)(samples - in_kernel));
	value_set_int(res, "kernel_samples", (int64_t)in_kernel);
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(pp->skel->obj, DIAG_STAT_LOST));
	/* the table holds the map's max_entries: it refuses nothing unless the map grew meanwhile */
	value_set_int(res, "dropped", (int64_t)(probe_stat_sum(pp->skel->obj, DIAG_STAT_MAP_FULL) +
						  stacks_refused(table) +
						  (pp->sampler ? stack_sampler_refused(pp->sampler) : 0)));
	stack_sampler_report(pp->sampler, res, pp->skel->rodata->copy_bytes,
			     probe_stat_sum(pp->skel->obj, PROFILE_STAT_SENT),
			     probe_stat_sum(pp->skel->obj, PROFILE_STAT_RING_FULL));
	if (ctx->usyms) {
		const char *runtime = usyms_runtime(ctx->usyms);
		if (runtime)
			value_set_str(res, "runtime", runtime);
		size_t entries = usyms_perfmap_entries(ctx->usyms);
		if (entries)
			value_set_int(res, "perf_map_entries", (int64_t)entries);
	}
	if (probe_opt(p, "jvm_perfmap"))
		value_set_str(res, "jvm_perfmap", pp->jvm_perfmap[0] ? pp->jvm_perfmap
					: ctx->usyms ? "not run: the target exited"
						     : "not run: only for a --pid target");
	stacks_finish(table, res, p->kind->stack_unit); /* weight = count = samples */
	*out = res;
	return 0;
}

static const struct result_field profile_results[] = {
	{ "event", RT_STRING, NULL, false, "the sampling event in use (cpu_clock or hw_cycles)" },
	{ "frequency_hz", RT_INTEGER, "per_s", false, "samples per second on each CPU" },
	{ "samples", RT_INTEGER, "samples", false, "samples of the target" },
	{ "user_samples", RT_INTEGER, "samples", false, "samples taken in user mode" },
	{ "kernel_samples", RT_INTEGER, "samples", false, "samples taken in kernel mode" },
	{ "lost_stacks", RT_INTEGER, "count", false, "stacks that could not be stored" },
	{ "dropped", RT_INTEGER, "samples", false, "samples not counted: the counts map was full" },
	{ "runtime", RT_STRING, NULL, true,
	  "the target's language runtime, from the files it maps: jvm (libjvm.so) or node" },
	{ "perf_map_entries", RT_INTEGER, "count", true,
	  "entries of the target's perf map (/tmp/perf-PID.map) when it has one" },
	{ "jvm_perfmap", RT_STRING, NULL, true,
	  "with option jvm_perfmap: \"ran: JCMD PID Compiler.perfmap as uid U gid G\", "
	  "\"failed: WHY\" or \"not run: WHY\"" },
	STACK_SAMPLER_RESULT_FIELDS,
	STACK_RESULT_FIELDS,
};
static const char *const profile_features[] = { "btf", "perf_event", NULL };

const struct probe_kind probe_kind_cpu_profile = {
	.name = "cpu_profile",
	.summary = "on-CPU stacks (user + kernel) sampled at a fixed frequency on every CPU",
	.options = profile_options,
	.n_options = ARRAY_LEN(profile_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = profile_variants,
	.private_size = sizeof(struct profile_priv),
	.results = profile_results,
	.n_results = ARRAY_LEN(profile_results),
	.features = profile_features,
	.stack_unit = "samples",
	.load = profile_load,
	.attach = profile_attach,
	.detach = probe_bpf_detach,
	.tick = profile_tick,
	.wake_fd = profile_wake_fd,
	.drain = profile_drain,
	.before_symbols = profile_before_symbols,
	.collect = profile_collect,
	.destroy = profile_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = cpu_profile_bpf__elf_bytes,
};
