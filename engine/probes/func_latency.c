/* func_latency.c — catalog entry for engine/probes/func_latency.bpf.c: the latency of one user-space
 * function named "binary:symbol", as a log2 histogram in nanoseconds. The one-liner
 * `uprobe:BIN:SYM { @s[tid] = nsecs } uretprobe:BIN:SYM { @ = hist(nsecs - @s[tid]) }`, made
 * safe for recursion.
 *
 * Owns: checking the "binary:symbol" option (its form at plan time; before anything loads, that
 * the binary defines the symbol as a sized function, which is the usual reason a uprobe "never
 * fires"), attaching the uretprobe then the uprobe (so that no return is seen without the
 * chance of its entry), limited to the target process when the recipe filters by pid, and turning
 * the histogram into results.
 * Must not: resolve binaries by name or through the target's mount namespace (absolute paths
 * only), or judge the latency (the recipe's Lua does).
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
#include "probes/func_latency.h"
#include "func_latency.skel.h"
#include "target/tfile.h"
#include "symbolize/usyms.h"

#define SYMBOL_MAX 256

PROBE_BPF_SKELETON(func_latency)

struct fl_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct func_latency_bpf *skel;
	char binary[PATH_MAX];
	char symbol[SYMBOL_MAX];
	uint64_t offset;   /* of the function in the binary's file */
	int file_fd;       /* an O_PATH descriptor of the file read, until attached (-1: none) */
	char attach_path[64]; /* /proc/self/fd/N of it: the uprobes go on the very file read */
};

static int is_symbol_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '$';
}

/* "binary:symbol", split at the last ':' (a path may contain one; a symbol may not). */
static const char *check_function(const char *value)
{
	const char *colon = strrchr(value, ':');
	if (value[0] != '/' || !colon)
		return "expected \"/absolute/path/to/binary:symbol\" (e.g. /usr/bin/myapp:handle_request)";
	size_t bin = (size_t)(colon - value), sym = strlen(colon + 1);
	if (bin < 2 || !sym)
		return "expected \"/absolute/path/to/binary:symbol\": both parts must be non-empty";
	if (bin >= PATH_MAX)
		return "binary path too long";
	if (sym >= SYMBOL_MAX)
		return "symbol too long";
	for (const char *c = colon + 1; *c; c++)
		if (!is_symbol_char(*c))
			return "the symbol may contain only A-Z, a-z, 0-9, _, . and $ (C++: the mangled "
			       "name, as nm prints it without -C)";
	return NULL;
}

static const struct option_spec fl_options[] = {
	{ .name = "function", .type = OPT_STRING, .check = check_function,
	  .help = "the function to time, \"/absolute/path/to/binary:symbol\" (executable or shared "
		  "library; the symbol as nm -D / readelf -s show it)" },
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = 4 + sizeof(struct func_stack) + 64,
	  .help = "threads that can be inside the function at once; calls beyond are counted as lost" },
};

static const char *const fl_variants[] = { "uprobe", NULL };

static int fl_load(struct probe *p, struct diag_err *err)
{
	struct fl_priv *fp = p->priv;
	fp->file_fd = -1;
	const char *fn = probe_opt_str(p, "function");
	const char *why = fn ? check_function(fn) : "missing";
	if (why)
		return diag_fail(err, DIAG_EXIT_USAGE, "option function: %s", why);
	const char *colon = strrchr(fn, ':');
	snprintf(fp->binary, sizeof(fp->binary), "%.*s", (int)(colon - fn), fn);
	snprintf(fp->symbol, sizeof(fp->symbol), "%s", colon + 1);

	/* Before anything loads: a uprobe on a name the binary does not define never fires. The file
	 * is read as a target's would be (another user may own it: a FIFO, a file on a stalled file
	 * system, or one swapped after it was read cannot hold or steer us). */
	struct tfile_src src = { .path = fp->binary, .operator_path = true };
	struct tfile_image *img;
	if (tfile_read_elf(p->files, &src, TFILE_KEEP_FD, &img, err)) {
		err->code = DIAG_EXIT_USAGE;
		return diag_wrap(err, "cannot read the binary");
	}
	int rc = elf_image_symbol_offset(img, fp->binary, fp->symbol, &fp->offset, err);
	fp->file_fd = img->fd;
	img->fd = -1;
	tfile_image_free(img);
	if (rc)
		return -1;
	snprintf(fp->attach_path, sizeof(fp->attach_path), "/proc/self/fd/%d", fp->file_fd);

	if (!(fp->skel = func_latency_skel_open(p, err)))
		return -1;
	bpf_map__set_max_entries(fp->skel->maps.entries, (__u32)probe_opt(p, "max_threads"));
	rc = func_latency_bpf__load(fp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the uprobe programs: %s",
				 strerror(-rc));
	p->variant = "uprobe";
	return 0;
}

static int fl_attach(struct probe *p, struct diag_err *err)
{
	struct fl_priv *fp = p->priv;
	pid_t pid = p->cfg.filter.pid > 0 ? p->cfg.filter.pid : -1;

	char where[PATH_MAX + SYMBOL_MAX + 64];
	snprintf(where, sizeof(where), "%s:%s (file offset 0x%" PRIx64 ")", fp->binary, fp->symbol,
		 fp->offset);
	/* Return first: a call entered after this is always seen returning; the links are
	 * released last first, so entries stop before returns. */
	char what[sizeof(where) + 16];
	snprintf(what, sizeof(what), "a uretprobe to %s", where);
	struct uprobe_site ret = { .prog = fp->skel->progs.func_lat_return, .path = fp->attach_path,
				   .offset = fp->offset, .pid = pid, .retprobe = true };
	struct uprobe_site entry = { .prog = fp->skel->progs.func_lat_entry, .path = fp->attach_path,
				     .offset = fp->offset, .pid = pid };
	if (probe_bpf_uprobe(p, &ret, what, err) || probe_bpf_uprobes_flush(p, err))
		return -1;
	snprintf(what, sizeof(what), "a uprobe to %s", where);
	return probe_bpf_uprobe(p, &entry, what, err) || probe_bpf_uprobes_flush(p, err) ? -1 : 0;
}

static void fl_destroy(struct probe *p)
{
	struct fl_priv *fp = p->priv;
	if (fp->file_fd >= 0) /* load ran first: it sets -1 before anything can fail */
		close(fp->file_fd);
	fp->file_fd = -1;
	probe_bpf_destroy(p);
}

static int fl_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		      struct diag_err *err)
{
	struct fl_priv *fp = p->priv;
	struct bpf_object *obj = fp->skel->obj;
	int hist_fd = bpf_map__fd(fp->skel->maps.hist_ns);
	int totals_fd = bpf_map__fd(fp->skel->maps.totals);
	uint64_t total_ns, max_ns, count;
	(void)ctx;
	(void)err;

	struct value *res = value_obj();
	value_set_str(res, "function", probe_opt_str(p, "function"));
	value_set_str(res, "unit", "ns");
	struct value *buckets =
		probe_log2_buckets(hist_fd, FUNC_HIST_SLOTS, totals_fd, &count, &total_ns, &max_ns);
	uint64_t depth = probe_stat_sum(obj, DIAG_STAT_LOST);
	uint64_t full = probe_stat_sum(obj, DIAG_STAT_MAP_FULL);
	uint64_t abandoned = probe_stat_sum(obj, FUNC_STAT_ABANDONED);

	value_set_int(res, "calls", (int64_t)probe_stat_sum(obj, DIAG_STAT_EVENTS));
	value_set_int(res, "count", (int64_t)count);
	value_set_int(res, "total_ns", (int64_t)total_ns);
	value_set_int(res, "max_ns", (int64_t)max_ns);
	value_set_int(res, "lost", (int64_t)(depth + full + abandoned));
	struct value *why = value_obj_set(res, "lost_by_reason", value_obj());
	value_set_int(why, "too_deep", (int64_t)depth);
	value_set_int(why, "map_full", (int64_t)full);
	value_set_int(why, "no_return", (int64_t)abandoned);
	value_set_int(res, "unmatched_returns", (int64_t)probe_stat_sum(obj, FUNC_STAT_UNMATCHED));
	value_set_int(res, "max_depth", FUNC_MAX_DEPTH);
	value_obj_set(res, "buckets", buckets);
	*out = res;
	return 0;
}

static const struct result_field fl_results[] = {
	{ "function", RT_STRING, NULL, false, "the function timed, \"/path/binary:symbol\"" },
	{ "unit", RT_STRING, NULL, false, "unit of the buckets and totals: \"ns\"" },
	{ "calls", RT_INTEGER, "count", false, "calls entered" },
	{ "count", RT_INTEGER, "count", false, "calls timed (entered and returned)" },
	{ "total_ns", RT_INTEGER, "ns", false, "time in the timed calls, summed" },
	{ "max_ns", RT_INTEGER, "ns", false, "longest timed call" },
	{ "lost", RT_INTEGER, "count", false, "calls not timed: the sum of lost_by_reason" },
	{ "lost_by_reason", RT_OBJECT, NULL, false, "lost calls by cause" },
	{ "lost_by_reason.too_deep", RT_INTEGER, "count", false, "nested deeper than max_depth" },
	{ "lost_by_reason.map_full", RT_INTEGER, "count", false, "more threads inside than max_threads" },
	{ "lost_by_reason.no_return", RT_INTEGER, "count", false, "entered, never seen returning" },
	{ "unmatched_returns", RT_INTEGER, "count", false, "returns without a recorded entry" },
	{ "max_depth", RT_INTEGER, "count", false, "nesting timed per thread" },
	LOG2_BUCKET_FIELDS("buckets", "ns"),
};
static const char *const fl_features[] = { "btf", "uprobe", NULL };

const struct probe_kind probe_kind_func_latency = {
	.name = "func_latency",
	.summary = "time each call of one user function (\"/path/binary:symbol\"; log2 histogram, ns)",
	.options = fl_options,
	.n_options = ARRAY_LEN(fl_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = fl_variants,
	.private_size = sizeof(struct fl_priv),
	.results = fl_results,
	.n_results = ARRAY_LEN(fl_results),
	.features = fl_features,
	.load = fl_load,
	.attach = fl_attach,
	.detach = probe_bpf_detach,
	.collect = fl_collect,
	.destroy = fl_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = func_latency_bpf__elf_bytes,
};
