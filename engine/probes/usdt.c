/* usdt.c — catalog entry for engine/probes/usdt.bpf.c: one USDT probe an application carries
 * ("provider:name" in `binary`: the target's executable, a library it maps, or a path), counted
 * per value of one of its arguments, or timed per thread from it to its `done` probe (Python's
 * gc__start → gc__done: the pauses of its garbage collector, by generation).
 *
 * Owns: the options and their checks, finding the probe's sites (engine/probes/usdt_attach.c:
 * the very file read, each site's fetch plan, its semaphore), attaching the done sites before the
 * start ones (so that no start is seen without the chance of its done), and turning the per-key
 * counts and histograms into results. `missing_ok`: a target whose binary lacks the probe (a
 * recipe for any process that uses it when it is there) gives results that say so, not an error.
 * Must not: know what a provider's arguments mean (the recipe's Lua does), or read more of a
 * string argument than USDT_KEY_STR bytes.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "probes/usdt.h"
#include "usdt.skel.h"
#include "probes/usdt_attach.h"

PROBE_BPF_SKELETON(usdt)

struct usdt_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct usdt_bpf *skel;
	struct usdt_binary bin;
	char provider[USDT_NAME_MAX], name[USDT_NAME_MAX];
	const char *done;     /* the done probe's name, or NULL */
	unsigned key_arg;     /* 0: none; N: argument N-1 */
	bool key_is_string;
	bool bin_open;        /* bin holds a descriptor and the notes */
	bool available;       /* the binary has the probe: attached */
	char why[sizeof(((struct diag_err *)0)->msg) + 64]; /* when not available: why */
	uint32_t start_sites, done_sites;
};

static const char *check_probe(const char *v)
{
	return usdt_check_probe_name(v);
}

static const char *check_done(const char *v)
{
	if (!*v)
		return NULL;
	for (const char *c = v; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '_'))
			return "expected the done probe's name (same provider), letters, digits and _";
	return strlen(v) < USDT_NAME_MAX ? NULL : "too long";
}

/* "", "argN" or "str:argN", N in 0..11; *arg gets N + 1 (0: none). */
static const char *parse_key(const char *v, unsigned *arg, bool *is_string)
{
	*arg = 0;
	*is_string = false;
	if (!*v)
		return NULL;
	if (strncmp(v, "str:", 4) == 0) {
		*is_string = true;
		v += 4;
	}
	if (strncmp(v, "arg", 3) != 0 || v[3] < '0' || v[3] > '9' ||
	    (v[4] && (v[4] < '0' || v[4] > '9' || v[5])))
		return "expected \"\" (no key), \"argN\" (an integer argument) or \"str:argN\" (the string "
		       "an argument points to), N from 0";
	unsigned n = (unsigned)atoi(v + 3);
	if (n >= DIAG_USDT_MAX_ARGS)
		return "a USDT probe has at most 12 arguments: arg0..arg11";
	*arg = n + 1;
	return NULL;
}

static const char *check_key(const char *v)
{
	unsigned a;
	bool s;
	return parse_key(v, &a, &s);
}

static const struct option_spec usdt_options[] = {
	{ .name = "binary", .type = OPT_STRING, .dflt_str = "target", .check = usdt_check_binary,
	  .help = "the file the probe is in: \"target\" (the target's executable), \"lib:NAME\" (the "
		  "first library the target maps whose name starts with NAME) or an absolute path" },
	{ .name = "probe", .type = OPT_STRING, .check = check_probe,
	  .help = "\"provider:name\", as diagnose show --usdt BINARY lists them (python:gc__start)" },
	{ .name = "done", .type = OPT_STRING, .dflt_str = "", .check = check_done,
	  .help = "a probe of the same provider that ends what `probe` starts, on the same thread: "
		  "each pair is timed (gc__done); empty: hits are counted" },
	{ .name = "key", .type = OPT_STRING, .dflt_str = "", .check = check_key,
	  .help = "what the results are per: \"argN\" (an integer argument of `probe`), \"str:argN\" "
		  "(the string it points to, at most 63 bytes), or empty (one line)" },
	{ .name = "missing_ok", .type = OPT_BOOL, .dflt = 0,
	  .help = "a binary without the probe gives results with available: false instead of an "
		  "error (a recipe for any process that uses the probe where it exists)" },
	{ .name = "max_keys", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 1024,
	  .min = 1, .max = 1u << 20, .bytes_per_entry = sizeof(struct usdt_key) + sizeof(struct usdt_stat) + 64,
	  /* the larger of the two key maps' entries: one of them is sized to 1 */
	  .help = "distinct keys kept; hits of others are counted as map_full" },
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = 4 + sizeof(struct usdt_open) + 64,
	  .help = "threads with a start open at once (timed pairs)" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 20, .help = "keep 1 start in N (the budget pre-flight may raise it)" },
};

static const char *const usdt_variants[] = { "uprobe", NULL };

static const char *cfg_str(const struct probe_config *cfg, const struct probe_kind *kind, const char *name)
{
	int i = catalog_option_index(kind, name);
	return i >= 0 ? cfg->str[i] : NULL;
}

/* lint: the probe (and its done probe) in a binary named by a path this machine has */
static int usdt_lint(const struct probe_config *cfg, const struct probe_kind *kind, struct diag_err *err)
{
	const char *probe = cfg_str(cfg, kind, "probe");
	if (!probe || usdt_check_probe_name(probe))
		return 0; /* the option's own check says so */
	if (cfg->opt[catalog_option_index(kind, "missing_ok")])
		return 0; /* a binary without it is allowed */
	char provider[USDT_NAME_MAX];
	const char *colon = strchr(probe, ':');
	snprintf(provider, sizeof(provider), "%.*s", (int)(colon - probe), probe);
	return usdt_lint_probe(cfg_str(cfg, kind, "binary"), provider, colon + 1, cfg_str(cfg, kind, "done"), err);
}

static int usdt_load(struct probe *p, struct diag_err *err)
{
	struct usdt_priv *up = p->priv;
	const char *probe = probe_opt_str(p, "probe");
	const char *why = probe ? usdt_check_probe_name(probe) : "missing";
	if (why)
		return diag_fail(err, DIAG_EXIT_USAGE, "option probe: %s", why);
	const char *colon = strchr(probe, ':');
	snprintf(up->provider, sizeof(up->provider), "%.*s", (int)(colon - probe), probe);
	snprintf(up->name, sizeof(up->name), "%s", colon + 1);
	const char *done = probe_opt_str(p, "done");
	up->done = done && *done ? done : NULL;
	if (parse_key(probe_opt_str(p, "key"), &up->key_arg, &up->key_is_string))
		return diag_fail(err, DIAG_EXIT_USAGE, "option key: %s", probe_opt_str(p, "key"));
	bool missing_ok = probe_opt(p, "missing_ok") != 0;

	struct diag_err open_err;
	if (usdt_binary_open_for(&up->bin, p, probe_opt_str(p, "binary"), USDT_MAX_SPECS, &open_err)) {
		if (!missing_ok || (open_err.code != DIAG_EXIT_USAGE && open_err.code != DIAG_ERR_NOT_APPLICABLE)) {
			*err = open_err;
			return -1;
		}
		snprintf(up->why, sizeof(up->why), "%s", open_err.msg);
	} else {
		up->bin_open = true;
		const char *missing = !usdt_binary_sites(&up->bin, up->provider, up->name) ? up->name
				      : up->done && !usdt_binary_sites(&up->bin, up->provider, up->done) ? up->done
				      : NULL;
		if (missing) {
			snprintf(up->why, sizeof(up->why), "%s has no USDT probe %s:%s (diagnose show --usdt "
				 "%s lists those it has)", up->bin.path, up->provider, missing, up->bin.path);
			if (!missing_ok) /* the target has no such probe: the run goes on without this one */
				return diag_fail(err, DIAG_ERR_NOT_APPLICABLE, "%s", up->why);
		}
		up->available = !missing;
	}

	if (!(up->skel = usdt_skel_open(p, err)))
		return -1;
	up->skel->rodata->key_arg = up->key_arg;
	up->skel->rodata->key_is_string = up->key_is_string;
	up->skel->rodata->timed = up->done != NULL;
	__u32 max_keys = (__u32)probe_opt(p, "max_keys");
	bpf_map__set_max_entries(up->skel->maps.keys, up->key_is_string ? max_keys : 1);
	bpf_map__set_max_entries(up->skel->maps.num_keys, up->key_is_string ? 1 : max_keys);
	bpf_map__set_max_entries(up->skel->maps.open_starts, (__u32)probe_opt(p, "max_threads"));
	int rc = usdt_bpf__load(up->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the USDT program: %s", strerror(-rc));
	p->variant = "uprobe";
	return 0;
}

static int usdt_attach(struct probe *p, struct diag_err *err)
{
	struct usdt_priv *up = p->priv;
	if (!up->available)
		return 0;
	int specs = bpf_map__fd(up->skel->maps.usdt_specs);
	struct bpf_program *prog = up->skel->progs.usdt_fire;
	if (up->done && usdt_attach_probe(p, &up->bin, prog, specs, up->provider, up->done,
					  USDT_SITE_DONE, 0, &up->done_sites, err))
		return -1;
	if (usdt_attach_probe(p, &up->bin, prog, specs, up->provider, up->name, USDT_SITE_START,
			      up->key_arg, &up->start_sites, err))
		return -1;
	if (!up->start_sites || (up->done && !up->done_sites))
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: the sites of %s:%s have arguments this "
				 "probe cannot fetch (diagnose show --usdt %s says why)", up->bin.path,
				 up->provider, !up->start_sites ? up->name : up->done, up->bin.path);
	return 0;
}

static void usdt_destroy(struct probe *p)
{
	struct usdt_priv *up = p->priv;
	if (up->bin_open)
		usdt_binary_close(&up->bin);
	up->bin_open = false;
	probe_bpf_destroy(p);
}

/* The per-CPU count of hits without a key (they are not in the stats map's events). */
static uint64_t hit_count_sum(struct usdt_priv *up)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t sum = 0;
	if (ncpus <= 0 || !up->skel)
		return 0;
	uint64_t *per = xcalloc((size_t)ncpus, sizeof(*per));
	__u32 z = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(up->skel->maps.hit_count), &z, per) == 0)
		for (int c = 0; c < ncpus; c++)
			sum += per[c];
	free(per);
	return sum;
}

static uint64_t usdt_events(struct probe *p)
{
	struct usdt_priv *up = p->priv;
	if (!up->skel)
		return 0;
	return probe_stat_sum(up->skel->obj, DIAG_STAT_EVENTS) + hit_count_sum(up);
}

struct usdt_line {
	struct usdt_key key;
	struct usdt_stat st;
};

static int by_weight(const void *a, const void *b)
{
	const struct usdt_line *x = a, *y = b;
	uint64_t wx = x->st.total_ns ? x->st.total_ns : x->st.count;
	uint64_t wy = y->st.total_ns ? y->st.total_ns : y->st.count;
	return wx < wy ? 1 : wx > wy ? -1 : 0;
}

static int usdt_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct usdt_priv *up = p->priv;
	(void)ctx;
	(void)err;
	struct value *res = value_obj();
	char probe[2 * USDT_NAME_MAX + 1];
	snprintf(probe, sizeof(probe), "%s:%s", up->provider, up->name);
	value_set_str(res, "probe", probe);
	if (up->done)
		value_set_str(res, "done", up->done);
	if (up->bin.path[0])
		value_set_str(res, "binary", up->bin.path);
	value_set_bool(res, "available", up->available);
	if (!up->available) {
		value_set_str(res, "why", up->why);
		*out = res;
		return 0;
	}
	struct bpf_object *obj = up->skel->obj;
	value_set_int(res, "sites", up->start_sites);
	if (up->done)
		value_set_int(res, "done_sites", up->done_sites);
	value_set_int(res, "sites_unreadable", up->bin.sites_unreadable + up->bin.sites_over_slots);
	value_set_str(res, "unit", up->done ? "ns" : "hits");
	value_set_int(res, "hits", (int64_t)usdt_events(p));
	if (up->done) {
		value_set_int(res, "timed", (int64_t)probe_stat_sum(obj, USDT_STAT_TIMED));
		value_set_int(res, "unmatched_done", (int64_t)probe_stat_sum(obj, USDT_STAT_UNMATCHED));
		value_set_int(res, "restarted", (int64_t)probe_stat_sum(obj, USDT_STAT_RESTARTED));
	}
	value_set_int(res, "map_full", (int64_t)probe_stat_sum(obj, DIAG_STAT_MAP_FULL));
	value_set_int(res, "unread_keys", (int64_t)probe_stat_sum(obj, DIAG_STAT_LOST));
	if (up->key_arg)
		value_set_str(res, "key", probe_opt_str(p, "key"));

	size_t cap = bpf_map__max_entries(up->key_is_string ? up->skel->maps.keys : up->skel->maps.num_keys), n = 0;
	struct usdt_line *lines = xcalloc(cap + 1, sizeof(*lines));
	bool first = true;
	if (!up->key_arg && !up->done) { /* the per-CPU count */
		lines[0].st.count = hit_count_sum(up);
		n = 1;
	} else if (up->key_is_string) {
		int fd = bpf_map__fd(up->skel->maps.keys);
		struct usdt_key k, next;
		while (n < cap && bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0) {
			first = false;
			k = next;
			if (bpf_map_lookup_elem(fd, &k, &lines[n].st) == 0) {
				lines[n].key = k;
				lines[n].key.str[USDT_KEY_STR - 1] = '\0';
				n++;
			}
		}
	} else {
		int fd = bpf_map__fd(up->skel->maps.num_keys);
		__s64 k, next;
		while (n < cap && bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0) {
			first = false;
			k = next;
			if (bpf_map_lookup_elem(fd, &k, &lines[n].st) == 0)
				lines[n++].key.num = k;
		}
	}
	qsort(lines, n, sizeof(*lines), by_weight);
	struct value *arr = value_obj_set(res, "keys", value_arr());
	for (size_t i = 0; i < n; i++) {
		struct value *v = value_arr_push(arr, value_obj());
		if (up->key_is_string)
			value_set_str(v, "key_text", lines[i].key.str);
		else if (up->key_arg)
			value_set_int(v, "key", lines[i].key.num);
		value_set_int(v, "count", (int64_t)lines[i].st.count);
		if (up->done) {
			value_set_int(v, "total_ns", (int64_t)lines[i].st.total_ns);
			value_set_int(v, "max_ns", (int64_t)lines[i].st.max_ns);
			value_obj_set(v, "buckets", probe_log2_slots_value((const uint64_t *)lines[i].st.slots, USDT_HIST_SLOTS));
		}
	}
	free(lines);
	*out = res;
	return 0;
}

static const struct result_field usdt_results[] = {
	{ "probe", RT_STRING, NULL, false, "\"provider:name\" as the recipe names it" },
	{ "done", RT_STRING, NULL, true, "the done probe's name (timed pairs)" },
	{ "binary", RT_STRING, NULL, true, "the file probed, as the target maps it or the recipe names it" },
	{ "available", RT_BOOLEAN, NULL, false, "the binary has the probe and it was attached" },
	{ "why", RT_STRING, NULL, true, "not available: why (missing_ok)" },
	{ "sites", RT_INTEGER, "count", true, "sites of the probe attached (an inlined probe has several)" },
	{ "done_sites", RT_INTEGER, "count", true, "sites of the done probe attached" },
	{ "sites_unreadable", RT_INTEGER, "count", true, "sites skipped: arguments this probe cannot fetch" },
	{ "unit", RT_STRING, NULL, true, "\"ns\" (timed pairs) or \"hits\"" },
	{ "hits", RT_INTEGER, "count", true, "hits of the probe kept (1 in sample_every)" },
	{ "timed", RT_INTEGER, "count", true, "pairs timed" },
	{ "unmatched_done", RT_INTEGER, "count", true, "done without a start on its thread (started before attach)" },
	{ "restarted", RT_INTEGER, "count", true, "starts that replaced an open one (its done never came)" },
	{ "map_full", RT_INTEGER, "count", true, "hits or pairs not kept: max_keys or max_threads reached" },
	{ "unread_keys", RT_INTEGER, "count", true, "hits whose key argument could not be read" },
	{ "key", RT_STRING, NULL, true, "what the keys are (argN, str:argN)" },
	{ "keys", RT_ARRAY, NULL, true, "one line per key value (one in all without a key), heaviest first" },
	{ "keys[]", RT_OBJECT, NULL, false, "one key" },
	{ "keys[].key", RT_INTEGER, NULL, true, "key argN: its value" },
	{ "keys[].key_text", RT_STRING, NULL, true, "key str:argN: the string (at most 63 bytes)" },
	{ "keys[].count", RT_INTEGER, "count", false, "hits, or pairs timed" },
	{ "keys[].total_ns", RT_INTEGER, "ns", true, "timed: summed" },
	{ "keys[].max_ns", RT_INTEGER, "ns", true, "timed: longest" },
	{ "keys[].buckets", RT_ARRAY, NULL, true, "timed: non-empty log2 slots, shortest first" },
	{ "keys[].buckets[]", RT_OBJECT, NULL, false, "one slot: values in [lo, hi]" },
	{ "keys[].buckets[].lo", RT_INTEGER, "ns", false, "lowest value of the slot (0 or a power of 2)" },
	{ "keys[].buckets[].hi", RT_INTEGER, "ns", false, "highest value of the slot" },
	{ "keys[].buckets[].count", RT_INTEGER, "count", false, "values that fell in the slot" },
};
static const char *const usdt_features[] = { "btf", "uprobe", "uprobe_semaphore", NULL };

const struct probe_kind probe_kind_usdt = {
	.name = "usdt",
	.summary = "one USDT probe of an application (\"provider:name\"), counted per argument or "
		   "timed to its done probe (log2 histogram, ns)",
	.options = usdt_options,
	.n_options = ARRAY_LEN(usdt_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = usdt_variants,
	.private_size = sizeof(struct usdt_priv),
	.results = usdt_results,
	.n_results = ARRAY_LEN(usdt_results),
	.features = usdt_features,
	.lint = usdt_lint,
	.load = usdt_load,
	.attach = usdt_attach,
	.detach = probe_bpf_detach,
	.collect = usdt_collect,
	.destroy = usdt_destroy,
	.events = usdt_events,
	.object = probe_bpf_object,
	.bpf_bytes = usdt_bpf__elf_bytes,
};
