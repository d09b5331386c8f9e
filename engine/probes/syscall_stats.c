/* syscall_stats.c — catalog entry for engine/probes/syscall_stats.bpf.c: count of the target's system
 * calls by syscall, and with `timing: true` also their time and errors.
 *
 * Owns: choosing the program set (count-only or timed), loading/attaching it, summing the
 * per-CPU totals, and naming syscall numbers (table generated at build time from the C
 * library's <sys/syscall.h>).
 * Must not: judge the numbers.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "syscall_names.h"
#include "probes/syscall_stats.h"
#include "syscall_stats.skel.h"

struct syscalls_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct syscall_stats_bpf *skel;
	bool timed;
};

PROBE_BPF_SKELETON(syscall_stats)

/* Entry timestamps (timed mode) live in task local storage, one small record per thread that
 * made a syscall, so there is no map size to choose. */
static const struct option_spec syscall_options[] = {
	{ .name = "timing", .type = OPT_BOOL, .dflt = 0, .max = 1,
	  .help = "also time each syscall and count errors (adds a sys_exit program and two clock "
		  "reads per call)" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "count 1 in N calls at random and scale the counts (the budget pre-flight raises "
		  "it when the recipe says degrade: sample)" },
	{ .name = "per_cpu_slots", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES,
	  .dflt = SYSCALL_SLOTS, .min = SYSCALL_SLOTS, .max = SYSCALL_SLOTS,
	  .bytes_per_entry = sizeof(struct syscall_total), .per_cpu = true,
	  .help = "per-CPU totals, one per syscall number (fixed)" },
};

static const char *const syscall_variants[] = { "raw_tp", NULL };

#define SYSCALL_THREADS_NO_TASK_STORAGE 16384 /* the hash's entries where task storage is missing */

static int syscalls_load(struct probe *p, struct diag_err *err)
{
	struct syscalls_priv *sp = p->priv;
	if (!(sp->skel = syscall_stats_skel_open(p, err)))
		return -1;
	sp->timed = probe_opt(p, "timing") != 0;
	bpf_program__set_autoload(sp->skel->progs.count_sys_enter, !sp->timed);
	bpf_program__set_autoload(sp->skel->progs.timed_sys_enter, sp->timed);
	bpf_program__set_autoload(sp->skel->progs.timed_sys_exit, sp->timed);
	/* Task storage (5.11+) keeps a timed syscall's start; without it an LRU hash by thread does,
	 * an entry per thread inside a timed syscall. Counting alone needs neither. */
	sp->skel->rodata->in_syscall_in_hash = probe_thread_state(
		p, sp->skel->maps.in_syscall, sp->skel->maps.in_syscall_by_tid, sp->timed,
		SYSCALL_THREADS_NO_TASK_STORAGE, "a timed syscall's start");
	sp->skel->rodata->exit_nr = SYS_exit;
	sp->skel->rodata->exit_group_nr = SYS_exit_group;
	int rc = syscall_stats_bpf__load(sp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading syscall programs: %s (needs raw tracepoints)",
				 strerror(-rc));
	p->variant = "raw_tp";
	return 0;
}

struct syscall_row {
	unsigned nr;
	struct syscall_total t;
};

static int by_count_desc(const void *a, const void *b)
{
	const struct syscall_row *x = a, *y = b;
	return x->t.count < y->t.count ? 1 : x->t.count > y->t.count ? -1 : (int)x->nr - (int)y->nr;
}

/* Reads the per-CPU table in one batched call (one slot at a time on old kernels) and sums it
 * over CPUs. Returns the number of slots in rows[] (SYSCALL_SLOTS entries). */
static size_t read_totals(struct syscalls_priv *sp, struct syscall_row *rows)
{
	int fd = bpf_map__fd(sp->skel->maps.per_syscall);
	int ncpus = libbpf_num_possible_cpus();
	__u32 *keys = xcalloc(SYSCALL_SLOTS, sizeof(*keys)), out_batch, count = SYSCALL_SLOTS;
	struct syscall_total *all = xcalloc((size_t)SYSCALL_SLOTS * (size_t)ncpus, sizeof(*all));
	size_t n = 0;

	if (bpf_map_lookup_batch(fd, NULL, &out_batch, keys, all, &count, NULL) && errno != ENOENT) {
		count = 0;
		for (__u32 nr = 0; nr < SYSCALL_SLOTS; nr++)
			if (bpf_map_lookup_elem(fd, &nr, all + (size_t)count * (size_t)ncpus) == 0)
				keys[count++] = nr;
	}
	for (__u32 i = 0; i < count; i++) {
		struct syscall_row row = { .nr = keys[i] };
		const struct syscall_total *percpu = all + (size_t)i * (size_t)ncpus;
		for (int c = 0; c < ncpus; c++) {
			row.t.count += percpu[c].count;
			row.t.total_ns += percpu[c].total_ns;
			row.t.errors += percpu[c].errors;
		}
		if (row.t.count)
			rows[n++] = row;
	}
	free(keys);
	free(all);
	return n;
}


static uint64_t syscalls_events(struct probe *p)
{
	struct syscalls_priv *sp = p->priv;
	struct syscall_row *rows = xcalloc(SYSCALL_SLOTS, sizeof(*rows));
	uint64_t events = 0;
	if (sp->skel)
		for (size_t i = 0, n = read_totals(sp, rows); i < n; i++)
			events += rows[i].t.count;
	free(rows);
	return events;
}

static int syscalls_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			    struct diag_err *err)
{
	struct syscalls_priv *sp = p->priv;
	struct syscall_row *rows = xcalloc(SYSCALL_SLOTS, sizeof(*rows));
	size_t n = read_totals(sp, rows);
	uint64_t total = 0, total_ns = 0;
	(void)ctx;
	(void)err;

	/* Sampled 1 in N: scale back to estimates of the real numbers. */
	double scale = probe_scale(p);
	for (size_t i = 0; i < n; i++) {
		rows[i].t.count *= scale;
		rows[i].t.total_ns *= scale;
		rows[i].t.errors *= scale;
		total += rows[i].t.count;
		total_ns += rows[i].t.total_ns;
	}
	qsort(rows, n, sizeof(*rows), by_count_desc);

	struct value *res = value_obj();
	value_set_bool(res, "timed", sp->timed);
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_int(res, "total", (int64_t)total);
	if (sp->timed)
		value_set_int(res, "total_ns", (int64_t)total_ns);
	value_set_int(res, "dropped", (int64_t)probe_stat_sum(sp->skel->obj, DIAG_STAT_MAP_FULL));
	struct value *list = value_obj_set(res, "syscalls", value_arr());
	for (size_t i = 0; i < n; i++) {
		struct value *s = value_arr_push(list, value_obj());
		char fallback[32];
		const char *name = rows[i].nr < ARRAY_LEN(syscall_names) ? syscall_names[rows[i].nr] : NULL;
		if (rows[i].nr == SYSCALL_SLOTS - 1)
			name = "other"; /* the overflow slot: numbers beyond the table, -1, x32 calls */
		if (!name) {
			snprintf(fallback, sizeof(fallback), "syscall_%u", rows[i].nr);
			name = fallback;
		}
		value_set_str(s, "name", name);
		value_set_int(s, "nr", rows[i].nr == SYSCALL_SLOTS - 1 ? -1 : (int64_t)rows[i].nr);
		value_set_int(s, "count", (int64_t)rows[i].t.count);
		if (sp->timed) {
			value_set_int(s, "total_ns", (int64_t)rows[i].t.total_ns);
			value_set_int(s, "errors", (int64_t)rows[i].t.errors);
		}
	}
	free(rows);
	*out = res;
	return 0;
}

static const struct result_field syscall_results[] = {
	{ "timed", RT_BOOLEAN, NULL, false, "timing: true: total_ns and errors are present" },
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 call in N counted, counts scaled by N" },
	{ "total", RT_INTEGER, "count", false, "calls, all syscalls" },
	{ "total_ns", RT_INTEGER, "ns", true, "timed only: time in syscalls, summed" },
	{ "dropped", RT_INTEGER, "count", false, "calls not counted: map full" },
	{ "syscalls", RT_ARRAY, NULL, false, "per syscall called, most calls first" },
	{ "syscalls[]", RT_OBJECT, NULL, false, "one syscall" },
	{ "syscalls[].name", RT_STRING, NULL, false, "its name (syscall_NR when unknown, \"other\" for the overflow slot)" },
	{ "syscalls[].nr", RT_INTEGER, NULL, false, "its number (-1 for \"other\")" },
	{ "syscalls[].count", RT_INTEGER, "count", false, "calls" },
	{ "syscalls[].total_ns", RT_INTEGER, "ns", true, "timed only: time in the calls" },
	{ "syscalls[].errors", RT_INTEGER, "count", true, "timed only: calls that returned an error" },
};
/* task_storage is not needed: the timed mode keeps its entries in a hash by thread without it. */
static const char *const syscall_features[] = { "btf", "raw_tp", NULL };

const struct probe_kind probe_kind_syscall_stats = {
	.name = "syscall_stats",
	.summary = "the target's system calls by syscall: counts; time and errors with timing: true",
	.options = syscall_options,
	.n_options = ARRAY_LEN(syscall_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = syscall_variants,
	.private_size = sizeof(struct syscalls_priv),
	.results = syscall_results,
	.n_results = ARRAY_LEN(syscall_results),
	.features = syscall_features,
	.load = syscalls_load,
	.attach = probe_bpf_attach_all, /* sys_enter, and sys_exit when timed */
	.detach = probe_bpf_detach,
	.collect = syscalls_collect,
	.events = syscalls_events,
	.destroy = probe_bpf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = syscall_stats_bpf__elf_bytes,
};
