/* name_lookups.c — catalog entry for engine/probes/name_lookups.bpf.c: the target's host name lookups
 * (getaddrinfo, gethostbyname*), timed in the libc it maps, by name asked for.
 *
 * Owns: finding that libc (the target's /proc/PID/maps; the file read through its mapping by
 * tfile.c and the uprobes placed on that very file, so that a process in a chroot or another
 * mount namespace gets its own; without a pid filter, the libc this process maps: the host's), the resolver functions' offsets in it (getaddrinfo must be there; the others
 * are probed where they exist), attaching a uretprobe then a uprobe to each with the function's
 * index as cookie (before Linux 5.15, which has no cookies: the entry program of that function), and turning the maps into results: a log2 histogram, totals and the names
 * looked up, slowest in total first.
 * Must not: judge the lookups (the recipe's Lua does), or read the target's memory itself.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "probes/name_lookups.h"
#include "name_lookups.skel.h"
#include "target/procfs.h"
#include "target/tfile.h"
#include "symbolize/usyms.h"

PROBE_BPF_SKELETON(name_lookups)

static const char *const fn_names[LOOKUP_NR_FNS] = {
	[LOOKUP_GETADDRINFO] = "getaddrinfo", [LOOKUP_GETHOSTBYNAME] = "gethostbyname",
	[LOOKUP_GETHOSTBYNAME2] = "gethostbyname2", [LOOKUP_GETHOSTBYNAME_R] = "gethostbyname_r",
	[LOOKUP_GETHOSTBYNAME2_R] = "gethostbyname2_r",
};

struct nl_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct name_lookups_bpf *skel;
	int libc_fd;                     /* an O_PATH descriptor of the very file read (-1: none) */
	char libc[64];                   /* as attached: /proc/self/fd/N of it */
	char libc_shown[PATH_MAX];       /* as the target names it */
	uint64_t offset[LOOKUP_NR_FNS];  /* 0: not in this libc */
	bool by_cookie;                  /* the entries tell their function by cookie (5.15+) */
	struct bpf_program *entry[LOOKUP_NR_FNS]; /* each function's entry program */
};

static const struct option_spec nl_options[] = {
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = 4 + sizeof(struct lookup_start) + 64,
	  .help = "threads that can be inside a lookup at once" },
	{ .name = "max_names", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 1024,
	  .min = 16, .max = 1u << 20,
	  .bytes_per_entry = sizeof(struct lookup_key) + sizeof(struct lookup_val) + 64,
	  .help = "distinct (name, function) pairs kept" },
	{ .name = "top", .type = OPT_UINT, .dflt = 20, .min = 1, .max = 1000,
	  .help = "names reported, slowest in total first" },
};

static const char *const nl_variants[] = { "uprobe", NULL };

/* The libc that process pid maps (pid <= 0: this process's), read through its mapping by r
 * (tfile.h): sets np->libc_shown (its path as the target names it), np->libc_fd and np->libc
 * (where the uprobes go: the very file read, not a path the target could remap) and *img. */
static int find_libc(struct nl_priv *np, struct tfile_reader *r, int pid, struct tfile_image **img,
		     struct diag_err *err)
{
	int self = pid > 0 ? pid : getpid();
	char *maps = tfile_read_proc(r, self, "maps", TFILE_MAX_TEXT_BYTES, NULL, err);
	if (!maps) {
		err->code = DIAG_EXIT_RUNTIME;
		return -1;
	}
	int found = -1;
	char *cursor = maps;
	for (char *line; found && (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || !m.exec || m.path[0] != '/')
			continue;
		const char *base = strrchr(m.path, '/') + 1;
		if (strncmp(base, "libc.so", 7) && !(!strncmp(base, "libc-", 5) && strstr(base, ".so")))
			continue;
		struct tfile_src src = { .pid = self, .start = m.start, .end = m.end, .path = m.path,
					 .dev = (uint64_t)m.major << 32 | m.minor, .ino = m.inode };
		if (tfile_read_elf(r, &src, TFILE_KEEP_FD, img, err)) {
			free(maps);
			err->code = DIAG_EXIT_RUNTIME;
			return diag_wrap(err, "reading the target's libc");
		}
		snprintf(np->libc_shown, sizeof(np->libc_shown), "%s", m.path);
		np->libc_fd = (*img)->fd;
		(*img)->fd = -1;
		snprintf(np->libc, sizeof(np->libc), "/proc/self/fd/%d", np->libc_fd);
		found = 0;
	}
	free(maps);
	if (found)
		return diag_fail(err, DIAG_ERR_NOT_APPLICABLE, "%s maps no libc (a static or non-glibc binary): "
				 "no resolver functions to probe", pid > 0 ? "the target" : "this process");
	return 0;
}

static int nl_load(struct probe *p, struct diag_err *err)
{
	struct nl_priv *np = p->priv;
	int pid = p->cfg.filter.pid;
	struct tfile_image *img = NULL;
	np->libc_fd = -1;
	if (find_libc(np, p->files, pid, &img, err))
		return -1;
	for (int f = 0; f < LOOKUP_NR_FNS; f++) {
		struct diag_err ignore = { 0 };
		if (elf_image_symbol_offset(img, np->libc_shown, fn_names[f], &np->offset[f], f ? &ignore : err))
			np->offset[f] = 0;
		if (!np->offset[f] && f == LOOKUP_GETADDRINFO) {
			tfile_image_free(img);
			return diag_wrap(err, "resolver functions in %s", np->libc_shown);
		}
	}
	tfile_image_free(img);
	if (!(np->skel = name_lookups_skel_open(p, err)))
		return -1;
	bpf_map__set_max_entries(np->skel->maps.inflight, (__u32)probe_opt(p, "max_threads"));
	bpf_map__set_max_entries(np->skel->maps.lookups, (__u32)probe_opt(p, "max_names"));
	/* which function an entry is: its link's cookie where the kernel has them (5.15), else a
	 * program per function (multi-uprobe links, 6.6, have cookies) */
	np->by_cookie = p->uprobe_multi ||
			(!probe_test_compat() &&
			 libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) != 0);
	struct bpf_program *per_fn[LOOKUP_NR_FNS] = {
		np->skel->progs.lookup_entry_0, np->skel->progs.lookup_entry_1,
		np->skel->progs.lookup_entry_2, np->skel->progs.lookup_entry_3,
		np->skel->progs.lookup_entry_4,
	};
	bpf_program__set_autoload(np->skel->progs.lookup_entry, np->by_cookie);
	for (int f = 0; f < LOOKUP_NR_FNS; f++) {
		bpf_program__set_autoload(per_fn[f], !np->by_cookie && np->offset[f]);
		np->entry[f] = np->by_cookie ? np->skel->progs.lookup_entry : per_fn[f];
	}
	int rc = name_lookups_bpf__load(np->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the uprobe programs: %s", strerror(-rc));
	p->variant = "uprobe";
	return 0;
}

static void nl_destroy(struct probe *p)
{
	struct nl_priv *np = p->priv;
	if (np->libc_fd >= 0) /* load ran first: it sets -1 before anything can fail */
		close(np->libc_fd);
	np->libc_fd = -1;
	probe_bpf_destroy(p);
}

static int nl_attach(struct probe *p, struct diag_err *err)
{
	struct nl_priv *np = p->priv;
	pid_t pid = p->cfg.filter.pid > 0 ? p->cfg.filter.pid : -1;
	/* Returns first for every function: a lookup entered after its uprobe is always seen
	 * returning (links are released last first: entries stop before returns). */
	for (int pass = 0; pass < 2; pass++) {
		for (int f = 0; f < LOOKUP_NR_FNS; f++) {
			if (!np->offset[f])
				continue;
			char what[PATH_MAX + 128];
			snprintf(what, sizeof(what), "a %s to %s:%s (file offset 0x%" PRIx64 ")",
				 pass == 0 ? "uretprobe" : "uprobe", np->libc_shown, fn_names[f], np->offset[f]);
			struct uprobe_site site = { .prog = pass == 0 ? np->skel->progs.lookup_return
								       : np->entry[f],
						    .path = np->libc, .offset = np->offset[f],
						    .cookie = np->by_cookie ? (uint64_t)f : 0, .pid = pid,
						    .retprobe = pass == 0 };
			if (probe_bpf_uprobe(p, &site, what, err))
				return -1;
		}
		if (probe_bpf_uprobes_flush(p, err))
			return -1;
	}
	return 0;
}

struct named {
	struct lookup_key key;
	struct lookup_val val;
};

static int by_total_desc(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	if (x->val.total_ns != y->val.total_ns)
		return x->val.total_ns < y->val.total_ns ? 1 : -1;
	int c = strncmp(x->key.name, y->key.name, sizeof(x->key.name));
	return c ? c : (int)x->key.fn - (int)y->key.fn;
}

static int nl_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		      struct diag_err *err)
{
	struct nl_priv *np = p->priv;
	struct bpf_object *obj = np->skel->obj;
	int fd = bpf_map__fd(np->skel->maps.lookups);
	uint64_t count, total_ns, max_ns;
	(void)ctx;
	(void)err;

	struct value *res = value_obj();
	value_set_str(res, "libc", np->libc_shown);
	struct value *fns = value_obj_set(res, "functions", value_arr());
	for (int f = 0; f < LOOKUP_NR_FNS; f++)
		if (np->offset[f])
			value_arr_push(fns, value_str(fn_names[f]));
	value_set_str(res, "unit", "ns");
	struct value *buckets = probe_log2_buckets(bpf_map__fd(np->skel->maps.hist_ns), LOOKUP_HIST_SLOTS,
						   bpf_map__fd(np->skel->maps.totals), &count,
						   &total_ns, &max_ns);
	value_set_int(res, "count", (int64_t)count);
	value_set_int(res, "total_ns", (int64_t)total_ns);
	value_set_int(res, "max_ns", (int64_t)max_ns);
	value_set_int(res, "unmatched_returns", (int64_t)probe_stat_sum(obj, LOOKUP_STAT_UNMATCHED));
	value_set_int(res, "dropped", (int64_t)probe_stat_sum(obj, DIAG_STAT_MAP_FULL));
	value_obj_set(res, "buckets", buckets);

	size_t cap = bpf_map__max_entries(np->skel->maps.lookups), n = 0;
	struct named *all = xcalloc(cap ? cap : 1, sizeof(*all));
	struct lookup_key keys[2], *prev = NULL, *next = &keys[0];
	uint64_t failed = 0;
	while (n < cap && bpf_map_get_next_key(fd, prev, next) == 0) {
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(fd, prev, &all[n].val) || prev->fn >= LOOKUP_NR_FNS)
			continue;
		all[n].key = *prev;
		failed += all[n].val.failed;
		n++;
	}
	qsort(all, n, sizeof(*all), by_total_desc);
	value_set_int(res, "failed", (int64_t)failed);
	value_set_int(res, "names", (int64_t)n);
	struct value *list = value_obj_set(res, "lookups", value_arr());
	for (size_t i = 0; i < n && i < probe_opt(p, "top"); i++) {
		struct value *o = value_arr_push(list, value_obj());
		char name[LOOKUP_NAME_LEN + 1];
		snprintf(name, sizeof(name), "%.*s", LOOKUP_NAME_LEN, all[i].key.name);
		value_set_str(o, "name", name); /* the target's bytes: escaped by every writer */
		value_set_str(o, "function", fn_names[all[i].key.fn]);
		value_set_int(o, "count", (int64_t)all[i].val.count);
		value_set_int(o, "total_ns", (int64_t)all[i].val.total_ns);
		value_set_int(o, "max_ns", (int64_t)all[i].val.max_ns);
		value_set_int(o, "failed", (int64_t)all[i].val.failed);
	}
	free(all);
	*out = res;
	return 0;
}

static const struct result_field nl_results[] = {
	{ "libc", RT_STRING, NULL, false, "the libc probed, as the target maps it" },
	{ "functions", RT_ARRAY, NULL, false, "the resolver functions found and probed in it" },
	{ "functions[]", RT_STRING, NULL, false, "getaddrinfo, gethostbyname, ..." },
	{ "unit", RT_STRING, NULL, false, "unit of the buckets and totals: \"ns\"" },
	{ "count", RT_INTEGER, "count", false, "lookups timed" },
	{ "total_ns", RT_INTEGER, "ns", false, "time in lookups, summed" },
	{ "max_ns", RT_INTEGER, "ns", false, "longest lookup" },
	{ "failed", RT_INTEGER, "count", false, "lookups that failed (an EAI_* code, or no host)" },
	{ "names", RT_INTEGER, "count", false, "distinct (name, function) pairs seen" },
	{ "unmatched_returns", RT_INTEGER, "count", false, "returns without a recorded entry" },
	{ "dropped", RT_INTEGER, "count", false, "lookups not recorded: a map was full" },
	LOG2_BUCKET_FIELDS("buckets", "ns"),
	{ "lookups", RT_ARRAY, NULL, false, "the names looked up, slowest in total first (at most top)" },
	{ "lookups[]", RT_OBJECT, NULL, false, "one (name, function)" },
	{ "lookups[].name", RT_STRING, NULL, false, "the host name asked for (at most 63 bytes)" },
	{ "lookups[].function", RT_STRING, NULL, false, "the resolver function called" },
	{ "lookups[].count", RT_INTEGER, "count", false, "lookups" },
	{ "lookups[].total_ns", RT_INTEGER, "ns", false, "time, summed" },
	{ "lookups[].max_ns", RT_INTEGER, "ns", false, "the longest" },
	{ "lookups[].failed", RT_INTEGER, "count", false, "failures" },
};
static const char *const nl_features[] = { "uprobe", NULL };

const struct probe_kind probe_kind_name_lookups = {
	.name = "name_lookups",
	.summary = "host name lookups of the target (getaddrinfo, gethostbyname*) timed in its libc, "
		   "by name asked for",
	.options = nl_options,
	.n_options = ARRAY_LEN(nl_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = nl_variants,
	.private_size = sizeof(struct nl_priv),
	.results = nl_results,
	.n_results = ARRAY_LEN(nl_results),
	.features = nl_features,
	.load = nl_load,
	.attach = nl_attach,
	.detach = probe_bpf_detach,
	.collect = nl_collect,
	.destroy = nl_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = name_lookups_bpf__elf_bytes,
};
