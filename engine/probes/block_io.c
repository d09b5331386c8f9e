/* block_io.c — catalog entry for engine/probes/block_io.bpf.c: block requests per disk (queue and service
 * time, depth, sizes, read/write/flush mix, IOPS and bytes, busy time) and who submitted them.
 *
 * Owns: picking the tp_btf or raw_tp program set (by loading it), the device filter's rodata,
 * who dirtied page cache on which device (the origin of writeback's requests),
 * sizing the maps, naming disks (/sys/dev/block/MAJ:MIN), and turning the per-disk and
 * per-submitter maps into rates and histograms over the window.
 * Must not: judge the numbers (the recipe's Lua does), or read /proc/diskstats (the proc_context
 * sampler does: its iostat figures are the cross-check of these).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "probes/block_io.h"
#include "block_io.skel.h"
#include "kernel/kernel.h"

/* Where issue times come from (block_io.bpf.c: issue_unknown). */
enum blk_issue_times {
	ISSUE_KERNEL,      /* the kernel's stamps: no issue program */
	ISSUE_TRACEPOINT,  /* the issue program from the start (no block_io_start) */
	ISSUE_LATE,        /* the kernel's, then the program too: a disk did not stamp them */
};

struct blk_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct block_io_bpf *skel;
	char missing[64];     /* optional tracepoints this kernel lacks */
	struct bpf_program *issue; /* the variant's block_rq_issue program */
	enum blk_issue_times issue_times;
	char issue_error[96]; /* why attaching it late failed ("" when it did not) */
};

PROBE_BPF_SKELETON(block_io)

static const struct option_spec blk_options[] = {
	{ .name = "max_in_flight", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 256, .max = 1u << 20,
	  /* a slot (rounded up to a power of two: up to twice as many), and a quarter of an
	   * overflow hash entry */
	  .bytes_per_entry = 2 * sizeof(struct blk_slot) + (8 + sizeof(struct blk_req) + 64) / 4,
	  .help = "requests tracked in flight at once (slots of a table, rounded up to a power of "
		  "two, and a quarter as many in an overflow hash for those whose slot is taken; "
		  "beyond them new requests are not timed: dropped)" },
	{ .name = "max_devices", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 64,
	  .min = 1, .max = 4096, .per_cpu = true,
	  /* each CPU's sums; the shared record and the index entry counted per CPU too (a little
	   * over) */
	  .bytes_per_entry = sizeof(struct blk_dev) + sizeof(struct blk_disk) + 2 * 4 + 64,
	  .help = "disks with statistics (fewer when the machine has fewer: twice the disks of "
		  "/sys/block and 16 more; each CPU keeps its own sums per disk)" },
	{ .name = "max_owners", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20,
	  /* an element of owners, an entry of owner_index and one of dirtiers (hash overhead ~64) */
	  .bytes_per_entry = sizeof(struct blk_owner) + 2 * sizeof(struct blk_owner_key) + 4 + 8 + 128,
	  .help = "distinct (submitter, disk) pairs counted, and as many (process, device) pairs "
		  "that dirty page cache" },
	{ .name = "top_owners", .type = OPT_UINT, .dflt = 20, .min = 1, .max = 1000,
	  .help = "submitters listed in the results, most requests first" },
	{ .name = "queue_depth", .type = OPT_BOOL, .dflt = 0,
	  .help = "count each disk's requests in flight: the depth a request finds when it enters "
		  "(devices[].depth), busy time and requests in flight at the end from the traced "
		  "requests (busy_pct, in_flight_at_end); off, /proc/diskstats's io_ticks say how busy a "
		  "disk is, and aqu-sz comes from the requests' times either way" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "time 1 request in N at random and scale (raised by the pre-flight under degrade: "
		  "sample; depth and busy time then describe the sampled requests only)" },
};

/* raw_tp first: every program reads the request through BPF_CORE_READ either way, and a tp_btf
 * argument needs a helper call to be hashed (block_io.bpf.c: addr_of). */
static const char *const blk_variants[] = { "raw_tp", "tp_btf", NULL };

static const char *const kind_names[BLK_NR_KINDS] = { "reads", "writes", "flushes", "discards",
						      "other" };

/* Tracepoints a kernel may lack: block_io_start (Linux 6.5) and writeback_dirty_folio (5.17;
 * writeback_dirty_page before). Their programs are left out rather than failing the probe. */
static void drop_missing(struct probe *p, struct bpf_object *obj, const char *variant)
{
	static const char *const optional[] = { "io_start", "dirty_folio" };
	static const char *const tracepoint[] = { "block_io_start", "writeback_dirty_folio" };
	static const char *const group[] = { "block", "writeback" };
	struct blk_priv *bp = p->priv;
	bp->missing[0] = '\0';
	/* tracefs (the run mounts it) lists the kernel's tracepoints; without it, assume they are
	 * there and let the load say otherwise. (Asking the kernel's BTF costs ~100 ms a name.) */
	if (!kernel_has_tracepoint("block"))
		return;
	for (size_t i = 0; i < ARRAY_LEN(optional); i++) {
		char tp[128];
		snprintf(tp, sizeof(tp), "%s/%s", group[i], tracepoint[i]);
		if (kernel_has_tracepoint(tp))
			continue;
		char name[64];
		snprintf(name, sizeof(name), "%s_%s", variant, optional[i]);
		struct bpf_program *prog = bpf_object__find_program_by_name(obj, name);
		if (prog)
			bpf_program__set_autoload(prog, false);
		size_t len = strlen(bp->missing);
		snprintf(bp->missing + len, sizeof(bp->missing) - len, "%s%s", len ? ", " : "", tracepoint[i]);
	}
}

/* Disks with statistics: max_devices, or fewer when this machine has fewer whole disks (those of
 * /sys/block, with room for as many again and 16 more plugged in during the run): each CPU keeps
 * its own sums per disk. */
static __u32 disk_slots(__u32 max_devices)
{
	DIR *dir = opendir("/sys/block");
	if (!dir)
		return max_devices;
	__u32 n = 0;
	for (struct dirent *e; (e = readdir(dir));)
		n += e->d_name[0] != '.';
	closedir(dir);
	n = 2 * n + 16;
	return n < max_devices ? n : max_devices;
}

static int blk_load(struct probe *p, struct diag_err *err)
{
	struct blk_priv *bp = p->priv;
	struct variant_tries tries = { "" };

	for (const char *const *v = p->cfg.variants; *v; v++) {
		if (!(bp->skel = block_io_skel_open(p, err)))
			return -1;
		bp->skel->rodata->filter_dev = p->cfg.filter.dev;
		__u32 in_flight = (__u32)probe_opt(p, "max_in_flight"), n_slots = 1;
		while (n_slots < in_flight)
			n_slots <<= 1;
		bpf_map__set_max_entries(bp->skel->maps.slots, n_slots);
		bp->skel->rodata->slot_mask = n_slots - 1;
		bpf_map__set_max_entries(bp->skel->maps.reqs, in_flight / 4 > 256 ? in_flight / 4 : 256);
		__u32 n_disks = disk_slots((__u32)probe_opt(p, "max_devices"));
		bpf_map__set_max_entries(bp->skel->maps.disks, n_disks);
		bpf_map__set_max_entries(bp->skel->maps.devs, n_disks);
		bpf_map__set_max_entries(bp->skel->maps.dev_index, n_disks);
		bp->skel->rodata->max_devices = n_disks;
		bpf_map__set_max_entries(bp->skel->maps.owners, (__u32)probe_opt(p, "max_owners"));
		bpf_map__set_max_entries(bp->skel->maps.owner_index, (__u32)probe_opt(p, "max_owners"));
		bp->skel->rodata->max_owners = (__u32)probe_opt(p, "max_owners");
		bp->skel->rodata->track_depth = probe_opt(p, "queue_depth") != 0;
		bpf_map__set_max_entries(bp->skel->maps.dirtiers, (__u32)probe_opt(p, "max_owners"));
		probe_bpf_select_variant(bp->skel->obj, *v);
		drop_missing(p, bp->skel->obj, *v);
		/* The issue program runs only where the kernel gives no issue times: from the start
		 * on a kernel without block_io_start (requests are first seen at issue there), else
		 * attached by the tick that sees a completion without one (blk_tick). */
		bool has_start = !strstr(bp->missing, "io_start");
		char name[64];
		snprintf(name, sizeof(name), "%s_rq_issue", *v);
		bp->issue = bpf_object__find_program_by_name(bp->skel->obj, name);
		if (bp->issue)
			bpf_program__set_autoattach(bp->issue, !has_start);
		bp->issue_times = has_start ? ISSUE_KERNEL : ISSUE_TRACEPOINT;
		bp->skel->rodata->count_at_start = has_start;
		if (probe_variant_loaded(p, &tries, *v, block_io_bpf__load(bp->skel))) {
			if (bp->missing[0]) {
				size_t len = strlen(p->note);
				snprintf(p->note + len, sizeof(p->note) - len, "%sno %s tracepoint on this kernel: %s",
					 len ? "; " : "", bp->missing,
					 strstr(bp->missing, "io_start") ? "submitters unknown (requests timed from insert or issue)"
									 : "no page-cache attribution");
			}
			return 0;
		}
	}
	return probe_no_variant(&tries, "block I/O", err);
}

/* While attached (a probe the governor stopped is still ticked: it has no links then), the issue
 * program once a completion came without an issue time. */
static void blk_tick(struct probe *p)
{
	struct blk_priv *bp = p->priv;
	if (!bp->bpf.n_links || bp->issue_times != ISSUE_KERNEL || !bp->skel->bss->issue_unknown ||
	    !bp->issue || bp->issue_error[0])
		return;
	struct diag_err err;
	if (probe_bpf_link(p, tp_btf_attach(bp->issue), bpf_program__name(bp->issue), &err)) {
		snprintf(bp->issue_error, sizeof(bp->issue_error), "%.95s", err.msg);
		return;
	}
	bp->issue_times = ISSUE_LATE;
}

/* The kernel's name of a disk ("vda", "loop3"), from /sys/dev/block/MAJ:MIN; "MAJ:MIN" when
 * there is none. */
static void disk_name(unsigned major, unsigned minor, char *out, size_t len)
{
	char path[64], target[PATH_MAX];
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major, minor);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		const char *slash = strrchr(target, '/');
		const char *base = slash ? slash + 1 : target;
		if (strlen(base) < len) {
			memcpy(out, base, strlen(base) + 1);
			return;
		}
	}
	snprintf(out, len, "%u:%u", major, minor);
}

/* A log2 histogram array into {count, buckets[]} with [lo, hi] in the unit of the values. */
static struct value *hist_value(const __u64 *hist, double scale, uint64_t *count)
{
	struct value *buckets = value_arr();
	*count = 0;
	for (unsigned slot = 0; slot < BLK_HIST_SLOTS; slot++) {
		if (!hist[slot])
			continue;
		struct value *b = value_arr_push(buckets, value_obj());
		value_set_int(b, "lo", slot == 0 ? 0 : (int64_t)1 << slot);
		value_set_int(b, "hi", ((int64_t)1 << (slot + 1)) - 1);
		value_set_int(b, "count", (int64_t)(hist[slot] * scale));
		*count += hist[slot] * scale;
	}
	return buckets;
}

static struct value *timing_value(const __u64 *hist, double scale, uint64_t sum_ns, uint64_t max_ns)
{
	struct value *t = value_obj();
	uint64_t count;
	struct value *buckets = hist_value(hist, scale, &count);
	value_set_int(t, "count", (int64_t)count);
	value_set_int(t, "total_us", (int64_t)(sum_ns * scale / 1000));
	value_set_num(t, "avg_us", count ? (double)(sum_ns * scale) / 1000.0 / (double)count : 0);
	value_set_int(t, "max_us", (int64_t)(max_ns / 1000));
	value_obj_set(t, "buckets", buckets);
	return t;
}

struct dev_row {
	__u32 dev;
	struct blk_disk disk;
	struct blk_dev d; /* the CPUs' sums */
	uint64_t ios, entered; /* completed; counted at entry (queue_depth) */
};

/* The CPUs' records of one disk (n of them) added up into *sum: counts and histograms summed,
 * maxima the largest. */
static void dev_sum(const struct blk_dev *percpu, int n, struct blk_dev *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (int c = 0; c < n; c++) {
		const struct blk_dev *d = &percpu[c];
		for (int i = 0; i < BLK_HIST_SLOTS; i++) {
			sum->queue_hist[i] += d->queue_hist[i];
			sum->service_hist[i] += d->service_hist[i];
			sum->size_hist[i] += d->size_hist[i];
			sum->depth_hist[i] += d->depth_hist[i];
		}
		for (int k = 0; k < BLK_NR_KINDS; k++) {
			sum->ios[k] += d->ios[k];
			sum->bytes[k] += d->bytes[k];
		}
		sum->queue_ns += d->queue_ns;
		sum->service_ns += d->service_ns;
		sum->await_ns += d->await_ns;
		sum->sync += d->sync;
		sum->fua += d->fua;
		sum->preflush += d->preflush;
		sum->errors += d->errors;
		sum->sequential += d->sequential;
		sum->depth_sum += d->depth_sum;
		if (d->queue_max_ns > sum->queue_max_ns)
			sum->queue_max_ns = d->queue_max_ns;
		if (d->service_max_ns > sum->service_max_ns)
			sum->service_max_ns = d->service_max_ns;
		if (d->depth_max > sum->depth_max)
			sum->depth_max = d->depth_max;
	}
}

static int by_busy_desc(const void *a, const void *b)
{
	const struct dev_row *x = a, *y = b;
	if (x->disk.busy_ns != y->disk.busy_ns)
		return x->disk.busy_ns < y->disk.busy_ns ? 1 : -1;
	if (x->d.await_ns != y->d.await_ns) /* without queue_depth: time in flight (aqu-sz) */
		return x->d.await_ns < y->d.await_ns ? 1 : -1;
	return x->ios < y->ios ? 1 : x->ios > y->ios ? -1 : (x->dev > y->dev) - (x->dev < y->dev);
}

struct owner_row {
	struct blk_owner o;
	uint64_t ios;
};

static int by_ios_desc(const void *a, const void *b)
{
	const struct owner_row *x = a, *y = b;
	if (x->ios != y->ios)
		return x->ios < y->ios ? 1 : -1;
	if (x->o.key.tgid != y->o.key.tgid)
		return x->o.key.tgid > y->o.key.tgid ? 1 : -1;
	return (x->o.key.dev > y->o.key.dev) - (x->o.key.dev < y->o.key.dev);
}

static struct value *devices_value(struct blk_priv *bp, double scale, double wall,
				   uint64_t *total_ios)
{
	int disks_fd = bpf_map__fd(bp->skel->maps.disks), devs_fd = bpf_map__fd(bp->skel->maps.devs);
	int ncpus = libbpf_num_possible_cpus();
	size_t cap = bpf_map__max_entries(bp->skel->maps.disks), n = 0;
	struct dev_row *rows = xcalloc(cap, sizeof(*rows));
	struct blk_dev *percpu = xcalloc(ncpus > 0 ? (size_t)ncpus : 1, sizeof(*percpu));
	for (__u32 slot = 0; ncpus > 0 && slot < cap; slot++) {
		if (bpf_map_lookup_elem(disks_fd, &slot, &rows[n].disk) || !rows[n].disk.dev ||
		    bpf_map_lookup_elem(devs_fd, &slot, percpu))
			continue; /* a slot not handed out, or lost in a race */
		dev_sum(percpu, ncpus, &rows[n].d);
		rows[n].dev = rows[n].disk.dev;
		for (int k = 0; k < BLK_NR_KINDS; k++)
			rows[n].ios += rows[n].d.ios[k];
		for (int s = 0; s < BLK_HIST_SLOTS; s++)
			rows[n].entered += rows[n].d.depth_hist[s];
		/* a disk has a slot from its first request's start, wanted or not (the device filter
		 * is checked after): listed once a request of it was counted */
		if (rows[n].entered || rows[n].ios)
			n++;
	}
	free(percpu);
	qsort(rows, n, sizeof(*rows), by_busy_desc);
	struct value *arr = value_arr();
	*total_ios = 0;
	for (size_t i = 0; i < n; i++) {
		const struct blk_dev *d = &rows[i].d;
		unsigned major = rows[i].dev >> 20, minor = rows[i].dev & ((1u << 20) - 1);
		char name[64], devt[32];
		disk_name(major, minor, name, sizeof(name));
		snprintf(devt, sizeof(devt), "%u:%u", major, minor);
		uint64_t ios = rows[i].ios * scale, bytes = 0;
		*total_ios += ios;
		struct value *v = value_arr_push(arr, value_obj());
		value_set_str(v, "name", name);
		value_set_str(v, "dev", devt);
		value_set_int(v, "ios", (int64_t)ios);
		for (int k = 0; k < BLK_NR_KINDS; k++) {
			value_set_int(v, kind_names[k], (int64_t)(d->ios[k] * scale));
			bytes += d->bytes[k] * scale;
		}
		value_set_int(v, "bytes", (int64_t)bytes);
		value_set_int(v, "read_bytes", (int64_t)(d->bytes[BLK_READ] * scale));
		value_set_int(v, "write_bytes", (int64_t)(d->bytes[BLK_WRITE] * scale));
		value_set_num(v, "iops", wall > 0 ? (double)ios / wall : 0);
		value_set_num(v, "bytes_per_s", wall > 0 ? (double)bytes / wall : 0);
		value_set_num(v, "avg_size_bytes", ios ? (double)bytes / (double)ios : 0);
		value_set_int(v, "sync", (int64_t)(d->sync * scale));
		value_set_int(v, "fua", (int64_t)(d->fua * scale));
		value_set_int(v, "preflush", (int64_t)(d->preflush * scale));
		value_set_int(v, "errors", (int64_t)(d->errors * scale));
		value_set_num(v, "sequential_pct", rows[i].ios ? (double)d->sequential * 100.0 / (double)rows[i].ios : 0);
		if (bp->skel->rodata->track_depth) {
			const struct blk_disk *disk = &rows[i].disk;
			value_set_int(v, "in_flight_at_end", disk->inflight > 0 ? disk->inflight : 0);
			value_set_num(v, "busy_pct", wall > 0 ? (double)disk->busy_ns / 1e9 / wall * 100.0 : 0);
		}
		value_set_num(v, "avg_in_service", wall > 0 ? (double)(d->service_ns * scale) / 1e9 / wall : 0);
		value_set_num(v, "avg_in_queue_and_service",
			      wall > 0 ? (double)(d->await_ns * scale) / 1e9 / wall : 0);
		value_set_num(v, "await_avg_us", rows[i].ios ? (double)d->await_ns / 1000.0 / (double)rows[i].ios : 0);
		value_obj_set(v, "queue", timing_value(d->queue_hist, scale, d->queue_ns, d->queue_max_ns));
		value_obj_set(v, "service", timing_value(d->service_hist, scale, d->service_ns, d->service_max_ns));
		uint64_t c;
		struct value *size = value_obj_set(v, "size", value_obj());
		value_obj_set(size, "buckets", hist_value(d->size_hist, scale, &c));
		if (bp->skel->rodata->track_depth) {
			struct value *depth = value_obj_set(v, "depth", value_obj());
			value_set_int(depth, "max", (int64_t)d->depth_max);
			value_set_num(depth, "avg_at_entry", rows[i].entered ? (double)d->depth_sum / (double)rows[i].entered : 0);
			value_obj_set(depth, "buckets", hist_value(d->depth_hist, 1, &c));
		}
	}
	free(rows);
	return arr;
}

static struct value *owners_value(struct blk_priv *bp, double scale, size_t top,
				  uint64_t *listed_out, uint64_t *n_out)
{
	int fd = bpf_map__fd(bp->skel->maps.owners);
	size_t cap = bpf_map__max_entries(bp->skel->maps.owners), n = 0;
	uint64_t used = bp->skel->bss->owners_used;
	if (used < cap)
		cap = (size_t)used;
	struct owner_row *rows = xcalloc(cap ? cap : 1, sizeof(*rows));
	for (__u32 i = 0; i < cap; i++) {
		struct owner_row *r = &rows[n];
		if (bpf_map_lookup_elem(fd, &i, &r->o) || !r->o.key.dev)
			continue; /* an index lost in a race (its key stays zero) */
		r->ios = 0;
		for (int k = 0; k < BLK_NR_KINDS; k++)
			r->ios += r->o.kinds[k];
		if (r->ios)
			n++;
	}
	qsort(rows, n, sizeof(*rows), by_ios_desc);
	struct value *arr = value_arr();
	*n_out = n;
	*listed_out = 0;
	for (size_t i = 0; i < n && i < top; i++) {
		const struct blk_owner *o = &rows[i].o;
		unsigned major = o->key.dev >> 20, minor = o->key.dev & ((1u << 20) - 1);
		char name[64], comm[sizeof(o->key.comm) + 1];
		disk_name(major, minor, name, sizeof(name));
		snprintf(comm, sizeof(comm), "%s", o->key.comm);
		struct value *v = value_arr_push(arr, value_obj());
		value_set_int(v, "tgid", o->key.tgid);
		value_set_str(v, "comm", o->key.tgid ? comm : "[unknown]");
		value_set_str(v, "device", name);
		value_set_int(v, "ios", (int64_t)(rows[i].ios * scale));
		value_set_int(v, "bytes", (int64_t)(o->bytes * scale));
		value_set_int(v, "reads", (int64_t)(o->kinds[BLK_READ] * scale));
		value_set_int(v, "writes", (int64_t)(o->kinds[BLK_WRITE] * scale));
		value_set_int(v, "flushes", (int64_t)(o->kinds[BLK_FLUSH] * scale));
		value_set_int(v, "queue_us", (int64_t)(o->queue_ns * scale / 1000));
		value_set_int(v, "service_us", (int64_t)(o->service_ns * scale / 1000));
		(*listed_out)++;
	}
	free(rows);
	return arr;
}

struct dirty_row {
	struct blk_owner_key k;
	uint64_t bytes;
};

static int by_folios_desc(const void *a, const void *b)
{
	const struct dirty_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->k.tgid != y->k.tgid)
		return x->k.tgid > y->k.tgid ? 1 : -1;
	return (x->k.dev > y->k.dev) - (x->k.dev < y->k.dev);
}

/* Who dirtied page cache, on which device: the origin of the writeback threads' requests. */
static struct value *dirtiers_value(struct blk_priv *bp, double scale, size_t top, double wall)
{
	int fd = bpf_map__fd(bp->skel->maps.dirtiers);
	size_t cap = bpf_map__max_entries(bp->skel->maps.dirtiers), n = 0;
	struct dirty_row *rows = xcalloc(cap, sizeof(*rows));
	struct blk_owner_key keys[2], *prev = NULL, *next = &keys[0];
	while (n < cap && bpf_map_get_next_key(fd, prev, next) == 0) {
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		__u64 v;
		if (bpf_map_lookup_elem(fd, prev, &v))
			continue;
		rows[n].k = *prev;
		rows[n++].bytes = v * scale;
	}
	qsort(rows, n, sizeof(*rows), by_folios_desc);
	struct value *arr = value_arr();
	for (size_t i = 0; i < n && i < top; i++) {
		unsigned major = rows[i].k.dev >> 20, minor = rows[i].k.dev & ((1u << 20) - 1);
		char name[64], comm[sizeof(rows[i].k.comm) + 1];
		disk_name(major, minor, name, sizeof(name));
		snprintf(comm, sizeof(comm), "%s", rows[i].k.comm);
		struct value *v = value_arr_push(arr, value_obj());
		value_set_int(v, "tgid", rows[i].k.tgid);
		value_set_str(v, "comm", comm);
		value_set_str(v, "device", name);
		value_set_int(v, "bytes", (int64_t)rows[i].bytes);
		value_set_num(v, "bytes_per_s", wall > 0 ? (double)rows[i].bytes / wall : 0);
	}
	free(rows);
	return arr;
}

static int blk_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		       struct diag_err *err)
{
	struct blk_priv *bp = p->priv;
	double scale = probe_scale(p);
	uint64_t total_ios, listed, n_owners;
	(void)err;

	struct value *res = value_obj();
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_num(res, "wall_s", ctx->wall_s);
	if (p->cfg.filter.dev)
		value_set_str(res, "device_filter", p->cfg.filter.device);
	struct value *devices = devices_value(bp, scale, ctx->wall_s, &total_ios);
	value_set_int(res, "ios", (int64_t)total_ios);
	value_obj_set(res, "devices", devices);
	struct value *owners = owners_value(bp, scale, probe_opt(p, "top_owners"), &listed, &n_owners);
	value_set_int(res, "owners_total", (int64_t)n_owners);
	value_obj_set(res, "owners", owners);
	value_obj_set(res, "dirtiers", dirtiers_value(bp, scale, probe_opt(p, "top_owners"), ctx->wall_s));
	value_set_int(res, "unowned", (int64_t)(probe_stat_sum(bp->skel->obj, BLK_STAT_UNOWNED) * scale));
	static const char *const issue_times[] = {
		[ISSUE_KERNEL] = "kernel", [ISSUE_TRACEPOINT] = "tracepoint", [ISSUE_LATE] = "kernel, then tracepoint" };
	value_set_str(res, "issue_times", issue_times[bp->issue_times]);
	if (bp->issue_error[0])
		value_set_str(res, "issue_error", bp->issue_error);
	value_set_int(res, "unsplit", (int64_t)(probe_stat_sum(bp->skel->obj, BLK_STAT_UNSPLIT) * scale));
	value_set_int(res, "vanished", (int64_t)probe_stat_sum(bp->skel->obj, BLK_STAT_VANISHED));
	value_set_int(res, "dropped", (int64_t)probe_stat_sum(bp->skel->obj, DIAG_STAT_MAP_FULL));
	*out = res;
	return 0;
}

#define TIMING_FIELDS(name, what)                                                                  \
	{ name, RT_OBJECT, NULL, false, what " (log2 histogram, us)" },                              \
	{ name ".count", RT_INTEGER, "count", false, "requests timed" },                              \
	{ name ".total_us", RT_INTEGER, "us", false, "summed" },                                      \
	{ name ".avg_us", RT_NUMBER, "us", false, "mean" },                                           \
	{ name ".max_us", RT_INTEGER, "us", false, "longest" },                                       \
	LOG2_BUCKET_FIELDS(name ".buckets", "us")

static const struct result_field blk_results[] = {
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 request in N timed, counts scaled by N" },
	{ "wall_s", RT_NUMBER, "s", false, "the window the rates are over" },
	{ "device_filter", RT_STRING, NULL, true, "the device filter, when set" },
	{ "ios", RT_INTEGER, "count", false, "requests completed, all disks" },
	{ "devices", RT_ARRAY, NULL, false, "per whole disk with requests, busiest first" },
	{ "devices[]", RT_OBJECT, NULL, false, "one disk" },
	{ "devices[].name", RT_STRING, NULL, false, "disk name (/sys/dev/block), else MAJ:MIN" },
	{ "devices[].dev", RT_STRING, NULL, false, "\"MAJ:MIN\"" },
	{ "devices[].ios", RT_INTEGER, "count", false, "requests completed" },
	{ "devices[].reads", RT_INTEGER, "count", false, "read requests" },
	{ "devices[].writes", RT_INTEGER, "count", false, "write requests" },
	{ "devices[].flushes", RT_INTEGER, "count", false, "cache flush requests (REQ_OP_FLUSH)" },
	{ "devices[].discards", RT_INTEGER, "count", false, "discard, write-zeroes, secure-erase requests" },
	{ "devices[].other", RT_INTEGER, "count", false, "other operations" },
	{ "devices[].bytes", RT_INTEGER, "bytes", false, "bytes of all requests" },
	{ "devices[].read_bytes", RT_INTEGER, "bytes", false, "bytes read" },
	{ "devices[].write_bytes", RT_INTEGER, "bytes", false, "bytes written" },
	{ "devices[].iops", RT_NUMBER, "per_s", false, "requests per second over the window" },
	{ "devices[].bytes_per_s", RT_NUMBER, "bytes_per_s", false, "bytes per second over the window" },
	{ "devices[].avg_size_bytes", RT_NUMBER, "bytes", false, "mean request size" },
	{ "devices[].sync", RT_INTEGER, "count", false, "requests flagged REQ_SYNC" },
	{ "devices[].fua", RT_INTEGER, "count", false, "requests flagged REQ_FUA" },
	{ "devices[].preflush", RT_INTEGER, "count", false, "requests flagged REQ_PREFLUSH" },
	{ "devices[].errors", RT_INTEGER, "count", false, "requests completed with an error" },
	{ "devices[].sequential_pct", RT_NUMBER, "pct", false, "completed requests starting at the sector where the disk's previous completed one ended" },
	{ "devices[].in_flight_at_end", RT_INTEGER, "count", true, "with queue_depth: traced requests queued or in service when the probe stopped" },
	{ "devices[].busy_pct", RT_NUMBER, "pct", true, "with queue_depth: share of the window with a traced request queued or in service (as the kernel's io_ticks, %util, count it)" },
	{ "devices[].avg_in_service", RT_NUMBER, "count", false, "mean requests in service (service time / window)" },
	{ "devices[].avg_in_queue_and_service", RT_NUMBER, "count", false, "mean requests queued or in service (iostat aqu-sz)" },
	{ "devices[].await_avg_us", RT_NUMBER, "us", false, "mean time from start to completion (iostat await)" },
	TIMING_FIELDS("devices[].queue", "from accounting start to issue to the driver"),
	TIMING_FIELDS("devices[].service", "from issue to completion"),
	{ "devices[].size", RT_OBJECT, NULL, false, "request sizes" },
	LOG2_BUCKET_FIELDS("devices[].size.buckets", "bytes"),
	{ "devices[].depth", RT_OBJECT, NULL, true, "with queue_depth: requests on the disk (queued or in service) when one enters, itself included" },
	{ "devices[].depth.max", RT_INTEGER, "count", false, "deepest" },
	{ "devices[].depth.avg_at_entry", RT_NUMBER, "count", false, "mean at entry" },
	LOG2_BUCKET_FIELDS("devices[].depth.buckets", "count"),
	{ "owners_total", RT_INTEGER, "count", false, "distinct (submitter, disk) pairs" },
	{ "owners", RT_ARRAY, NULL, false, "submitters, most requests first (top_owners of them)" },
	{ "owners[]", RT_OBJECT, NULL, false, "one submitter on one disk" },
	{ "owners[].tgid", RT_INTEGER, NULL, false, "process that submitted (0: unknown)" },
	{ "owners[].comm", RT_STRING, NULL, false, "its thread name then, [unknown] when not known" },
	{ "owners[].device", RT_STRING, NULL, false, "disk name" },
	{ "owners[].ios", RT_INTEGER, "count", false, "requests completed" },
	{ "owners[].bytes", RT_INTEGER, "bytes", false, "their bytes" },
	{ "owners[].reads", RT_INTEGER, "count", false, "read requests" },
	{ "owners[].writes", RT_INTEGER, "count", false, "write requests" },
	{ "owners[].flushes", RT_INTEGER, "count", false, "flush requests" },
	{ "owners[].queue_us", RT_INTEGER, "us", false, "queue time summed" },
	{ "owners[].service_us", RT_INTEGER, "us", false, "service time summed" },
	{ "dirtiers", RT_ARRAY, NULL, false, "processes that dirtied page cache (buffered writes), most first (top_owners of them)" },
	{ "dirtiers[]", RT_OBJECT, NULL, false, "one process on one device" },
	{ "dirtiers[].tgid", RT_INTEGER, NULL, false, "process" },
	{ "dirtiers[].comm", RT_STRING, NULL, false, "its thread name then" },
	{ "dirtiers[].device", RT_STRING, NULL, false, "the device of the files (disk or partition name)" },
	{ "dirtiers[].bytes", RT_INTEGER, "bytes", false, "page cache dirtied (whole folios: a page, or a large folio)" },
	{ "dirtiers[].bytes_per_s", RT_NUMBER, "bytes_per_s", false, "over the window" },
	{ "unowned", RT_INTEGER, "count", false, "requests first seen at insert or issue: submitter unknown (flushes, writeback)" },
	{ "issue_times", RT_STRING, NULL, false, "where issue times came from: \"kernel\" (the request's own stamp, on queues with request statistics), \"tracepoint\" (block_rq_issue, on a kernel without block_io_start), \"kernel, then tracepoint\" (attached when a completion came without a stamp)" },
	{ "issue_error", RT_STRING, NULL, true, "why the block_rq_issue program could not be attached late" },
	{ "unsplit", RT_INTEGER, "count", false, "completions with no issue time (before the issue tracepoint was attached): counted, their queue and service time not split" },
	{ "vanished", RT_INTEGER, "count", false, "issued requests whose address was reused with no completion event: timed no further, in flight until then" },
	{ "dropped", RT_INTEGER, "count", false, "requests not counted: a map was full" },
};
static const char *const blk_features[] = { "btf", "tp_btf|raw_tp", NULL };

const struct probe_kind probe_kind_block_io = {
	.name = "block_io",
	.summary = "block requests per disk: queue and service time, depth, sizes, mix, IOPS, bytes, "
		   "busy time, and their submitters (block tracepoints)",
	.options = blk_options,
	.n_options = ARRAY_LEN(blk_options),
	.filters = FILTER_DEVICE | FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = blk_variants,
	.private_size = sizeof(struct blk_priv),
	.results = blk_results,
	.n_results = ARRAY_LEN(blk_results),
	.features = blk_features,
	.load = blk_load,
	.attach = probe_bpf_attach_all,
	.detach = probe_bpf_detach,
	.tick = blk_tick,
	.collect = blk_collect,
	.destroy = probe_bpf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = block_io_bpf__elf_bytes,
};
