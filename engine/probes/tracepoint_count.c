/* tracepoint_count.c — catalog entry for engine/probes/tracepoint_count.bpf.c: how often one tracepoint
 * fires, per (process, thread name). The one-liner `tracepoint:CAT:EV { @[comm] = count(); }`.
 *
 * Owns: checking the "category:event" option (its form at plan time, that the tracepoint exists
 * in tracefs before anything loads), attaching the generic program to it, and turning the counts
 * into results sorted by count.
 * Must not: read the tracepoint's fields, or judge the counts (the recipe's Lua does).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "tracepoint_count.skel.h"

#define TP_NAME_MAX 128 /* per part; tracefs names are far shorter */
#define COMM_LEN 16

/* Same layout as struct tpc_key in engine/probes/tracepoint_count.bpf.c (checked at load). */
struct tpc_key {
	uint32_t tgid;
	char comm[COMM_LEN];
};

struct tpc_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct tracepoint_count_bpf *skel;
	char category[TP_NAME_MAX], event[TP_NAME_MAX];
};

PROBE_BPF_SKELETON(tracepoint_count)

static const char *check_tracepoint(const char *value)
{
	const char *colon = strchr(value, ':');
	if (!colon)
		return "expected \"category:event\", e.g. sched:sched_switch (the directories of "
		       "/sys/kernel/tracing/events)";
	size_t cat = (size_t)(colon - value), ev = strlen(colon + 1);
	if (!cat || !ev)
		return "expected \"category:event\": both parts must be non-empty";
	if (cat >= TP_NAME_MAX || ev >= TP_NAME_MAX)
		return "category or event name too long";
	for (const char *c = value; *c; c++)
		if (c != colon && !((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return "expected \"category:event\" made of a-z, 0-9 and _";
	return NULL;
}

static const struct option_spec tpc_options[] = {
	{ .name = "tracepoint", .type = OPT_STRING, .check = check_tracepoint,
	  .help = "the tracepoint to count, \"category:event\" (e.g. syscalls:sys_enter_write)" },
	{ .name = "max_keys", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 10240,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = sizeof(struct tpc_key) + 8 + 64,
	  .help = "distinct (process, thread name) pairs counted; hits beyond are counted as dropped" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "count 1 in N hits at random and scale the counts (the budget pre-flight raises "
		  "it when the recipe says degrade: sample)" },
};

static const char *const tpc_variants[] = { "tracepoint", NULL };

/* Where tracefs is mounted (the engine mounts it when it is not). */
static const char *tracefs_root(void)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[64];
	struct stat st;
	for (size_t i = 0; i < ARRAY_LEN(roots); i++) {
		snprintf(path, sizeof(path), "%s/events", roots[i]);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return roots[i];
	}
	return NULL;
}

static int tpc_load(struct probe *p, struct diag_err *err)
{
	struct tpc_priv *tp = p->priv;
	const char *name = probe_opt_str(p, "tracepoint");
	const char *why = name ? check_tracepoint(name) : "missing";
	if (why)
		return diag_fail(err, DIAG_EXIT_USAGE, "option tracepoint: %s", why);
	const char *colon = strchr(name, ':');
	snprintf(tp->category, sizeof(tp->category), "%.*s", (int)(colon - name), name);
	snprintf(tp->event, sizeof(tp->event), "%s", colon + 1);

	const char *root = tracefs_root();
	if (!root)
		return diag_fail(err, DIAG_EXIT_REFUSED, "tracefs is not mounted (neither "
				 "/sys/kernel/tracing nor /sys/kernel/debug/tracing has events/)");
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/events/%s/%s", root, tp->category, tp->event);
	if (stat(path, &st) != 0) {
		snprintf(path, sizeof(path), "%s/events/%s", root, tp->category);
		if (stat(path, &st) != 0)
			snprintf(path, sizeof(path), "%s/events", root);
		return diag_fail(err, DIAG_EXIT_USAGE, "no tracepoint %s:%s (see %s)", tp->category,
				 tp->event, path);
	}

	if (!(tp->skel = tracepoint_count_skel_open(p, err)))
		return -1;
	if (bpf_map__key_size(tp->skel->maps.counts) != sizeof(struct tpc_key))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "internal: key layout differs from the BPF side");
	bpf_map__set_max_entries(tp->skel->maps.counts, (__u32)probe_opt(p, "max_keys"));
	int rc = tracepoint_count_bpf__load(tp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the tracepoint program: %s",
				 strerror(-rc));
	p->variant = "tracepoint";
	return 0;
}

static int tpc_attach(struct probe *p, struct diag_err *err)
{
	struct tpc_priv *tp = p->priv;
	char what[2 * TP_NAME_MAX + 16];
	snprintf(what, sizeof(what), "tracepoint %s:%s", tp->category, tp->event);
	return probe_bpf_link(p, bpf_program__attach_tracepoint(tp->skel->progs.tracepoint_cnt,
								tp->category, tp->event), what, err);
}

struct tpc_row {
	struct tpc_key key;
	uint64_t count;
};

static int row_cmp(const void *a, const void *b)
{
	const struct tpc_row *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->key.tgid != y->key.tgid)
		return x->key.tgid < y->key.tgid ? -1 : 1;
	return strncmp(x->key.comm, y->key.comm, COMM_LEN);
}

static int tpc_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		       struct diag_err *err)
{
	struct tpc_priv *tp = p->priv;
	int fd = bpf_map__fd(tp->skel->maps.counts);
	size_t n = 0, cap = 64;
	struct tpc_row *rows = xmalloc(cap * sizeof(*rows));
	struct tpc_key key, next;
	void *prev = NULL;
	(void)err;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		uint64_t c = 0;
		if (bpf_map_lookup_elem(fd, &next, &c) == 0 && c) {
			if (n == cap)
				rows = xrealloc(rows, (cap *= 2) * sizeof(*rows));
			rows[n++] = (struct tpc_row){ next, c };
		}
		key = next;
		prev = &key;
	}
	/* Sampled 1 in N: scale back to estimates of the real numbers. */
	double scale = probe_scale(p);
	for (size_t i = 0; i < n; i++)
		rows[i].count *= scale;
	qsort(rows, n, sizeof(*rows), row_cmp);

	uint64_t total = probe_stat_sum(tp->skel->obj, DIAG_STAT_EVENTS) * scale;
	struct value *res = value_obj();
	value_set_str(res, "tracepoint", probe_opt_str(p, "tracepoint"));
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_int(res, "total", (int64_t)total);
	value_set_num(res, "per_s", ctx->wall_s > 0 ? (double)total / ctx->wall_s : 0);
	value_set_int(res, "dropped", (int64_t)probe_stat_sum(tp->skel->obj, DIAG_STAT_MAP_FULL));
	struct value *keys = value_obj_set(res, "keys", value_arr());
	for (size_t i = 0; i < n; i++) {
		char comm[COMM_LEN + 1];
		snprintf(comm, sizeof(comm), "%.*s", COMM_LEN, rows[i].key.comm);
		struct value *k = value_arr_push(keys, value_obj());
		value_set_int(k, "pid", rows[i].key.tgid);
		value_set_str(k, "comm", comm);
		value_set_int(k, "count", (int64_t)rows[i].count);
	}
	free(rows);
	*out = res;
	return 0;
}

static const struct result_field tpc_results[] = {
	{ "tracepoint", RT_STRING, NULL, false, "the tracepoint counted, \"category:event\"" },
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 hit in N counted, counts scaled by N" },
	{ "total", RT_INTEGER, "count", false, "hits that passed the filters" },
	{ "per_s", RT_NUMBER, "per_s", false, "total over the collection time" },
	{ "dropped", RT_INTEGER, "count", false, "hits not kept by key: the map was full" },
	{ "keys", RT_ARRAY, NULL, false, "per (process, thread name), most hits first" },
	{ "keys[]", RT_OBJECT, NULL, false, "one process and thread name" },
	{ "keys[].pid", RT_INTEGER, NULL, false, "process id (tgid)" },
	{ "keys[].comm", RT_STRING, NULL, false, "thread name" },
	{ "keys[].count", RT_INTEGER, "count", false, "hits" },
};
static const char *const tpc_features[] = { "btf", "tracefs", "tracepoint", NULL };

const struct probe_kind probe_kind_tracepoint_count = {
	.name = "tracepoint_count",
	.summary = "count the hits of one tracepoint (\"category:event\") per process and thread name",
	.options = tpc_options,
	.n_options = ARRAY_LEN(tpc_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = tpc_variants,
	.private_size = sizeof(struct tpc_priv),
	.results = tpc_results,
	.n_results = ARRAY_LEN(tpc_results),
	.features = tpc_features,
	.load = tpc_load,
	.attach = tpc_attach,
	.detach = probe_bpf_detach,
	.collect = tpc_collect,
	.destroy = probe_bpf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = tracepoint_count_bpf__elf_bytes,
};
