/* file_io.c — catalog entry for engine/probes/file_io.bpf.c: the target's syscalls that wait on storage
 * (fsync, fdatasync, sync_file_range, msync, syncfs, sync, read/write/pread/pwrite and their
 * vector forms), timed per process, syscall and fd, with the file each fd names and its device.
 *
 * A kind of its own rather than an option of syscall_stats: syscall_stats is the cheapest
 * per-syscall counter (one per-CPU increment per call, no per-thread state unless timed), the
 * high-cpu recipe relies on that; per-fd keys, histograms and call paths would cost every
 * recipe that uses it.
 *
 * Owns: the watch table (syscall numbers from the C library's <sys/syscall.h> at build time),
 * naming fds from /proc/PID/fd at every tick and at the end, while the process lives (a file
 * closed between two ticks stays unnamed: counted in `unnamed_fds`), the device of each file
 * (/proc/PID/fd/N's st_dev through /sys/dev/block), and turning the maps into results.
 * Must not: judge the numbers, or touch the files the fds name (a stat through the link would
 * ask their file system, which may hang): /proc's text only (the link is reported as text,
 * escaped by the report writer; the device comes from fdinfo's mount id).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "probes/file_io.h"
#include "file_io.skel.h"
#include "symbolize/stacks.h"

struct watched_call {
	long nr;
	const char *name;
	unsigned flags; /* FILE_IO_HAS_FD, FILE_IO_SYNC */
};

static const struct watched_call watched[] = {
#ifdef SYS_fsync
	{ SYS_fsync, "fsync", FILE_IO_HAS_FD | FILE_IO_SYNC },
#endif
#ifdef SYS_fdatasync
	{ SYS_fdatasync, "fdatasync", FILE_IO_HAS_FD | FILE_IO_SYNC },
#endif
#ifdef SYS_sync_file_range
	{ SYS_sync_file_range, "sync_file_range", FILE_IO_HAS_FD | FILE_IO_SYNC },
#endif
#ifdef SYS_msync
	{ SYS_msync, "msync", FILE_IO_SYNC },
#endif
#ifdef SYS_syncfs
	{ SYS_syncfs, "syncfs", FILE_IO_HAS_FD | FILE_IO_SYNC },
#endif
#ifdef SYS_sync
	{ SYS_sync, "sync", FILE_IO_SYNC },
#endif
#ifdef SYS_read
	{ SYS_read, "read", FILE_IO_HAS_FD },
#endif
#ifdef SYS_write
	{ SYS_write, "write", FILE_IO_HAS_FD },
#endif
#ifdef SYS_pread64
	{ SYS_pread64, "pread64", FILE_IO_HAS_FD },
#endif
#ifdef SYS_pwrite64
	{ SYS_pwrite64, "pwrite64", FILE_IO_HAS_FD },
#endif
#ifdef SYS_readv
	{ SYS_readv, "readv", FILE_IO_HAS_FD },
#endif
#ifdef SYS_writev
	{ SYS_writev, "writev", FILE_IO_HAS_FD },
#endif
#ifdef SYS_preadv
	{ SYS_preadv, "preadv", FILE_IO_HAS_FD },
#endif
#ifdef SYS_pwritev
	{ SYS_pwritev, "pwritev", FILE_IO_HAS_FD },
#endif
#ifdef SYS_preadv2
	{ SYS_preadv2, "preadv2", FILE_IO_HAS_FD },
#endif
#ifdef SYS_pwritev2
	{ SYS_pwritev2, "pwritev2", FILE_IO_HAS_FD },
#endif
};
_Static_assert(ARRAY_LEN(watched) <= FILE_IO_CLASSES, "one histogram per watched syscall");

/* An fd named from /proc while its process lived. */
struct fd_name {
	uint32_t tgid;
	int32_t fd;
	char *file;        /* the link's text; NULL: could not be read */
	char device[32];   /* block device of the file ("" when none: tmpfs, pipes, sockets) */
};

struct fio_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct file_io_bpf *skel;
	struct fd_name *names;
	size_t n_names, cap_names;
};

#define MAX_FD_NAMES 4096

PROBE_BPF_SKELETON(file_io)

static const struct option_spec fio_options[] = {
	{ .name = "stacks", .type = OPT_BOOL, .dflt = 1, .max = 1,
	  .help = "record the user call path of sync-class calls (fsync, fdatasync, ...)" },
	{ .name = "max_calls", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(struct file_io_key) + sizeof(struct file_io_val) + 64,
	  .help = "distinct (process, syscall, fd, call path) timed" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 1024,
	  .min = 16, .max = 1u << 16, .bytes_per_entry = sizeof(__u32) + DIAG_STACK_DEPTH * sizeof(__u64),
	  .help = "distinct call paths of sync-class calls kept" },
	{ .name = "top_n", .type = OPT_UINT, .dflt = 20, .min = 1, .max = 1000,
	  .help = "(process, syscall, fd) rows listed, most time first" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "time 1 call in N at random and scale (raised by the pre-flight under degrade: sample)" },
};

static const char *const fio_variants[] = { "raw_tp", NULL };

#define FILE_IO_THREADS_NO_TASK_STORAGE 16384 /* the hash's entries where task storage is missing */

static const struct watched_call *watched_by_nr(long nr)
{
	for (size_t i = 0; i < ARRAY_LEN(watched); i++)
		if (watched[i].nr == nr)
			return &watched[i];
	return NULL;
}

static int fio_load(struct probe *p, struct diag_err *err)
{
	struct fio_priv *fp = p->priv;
	if (!(fp->skel = file_io_skel_open(p, err)))
		return -1;
	for (size_t i = 0; i < ARRAY_LEN(watched); i++)
		if (watched[i].nr >= 0 && watched[i].nr < FILE_IO_NR_SLOTS)
			fp->skel->rodata->watch[watched[i].nr] =
				(__u8)((i + 1) | watched[i].flags);
	fp->skel->rodata->sync_stacks = probe_opt(p, "stacks") != 0;
	fp->skel->rodata->self_tgid = (__u32)getpid();
	bpf_map__set_max_entries(fp->skel->maps.calls, (__u32)probe_opt(p, "max_calls"));
	bpf_map__set_max_entries(fp->skel->maps.stacks, (__u32)probe_opt(p, "max_stacks"));
	/* Task storage (5.11+) keeps a watched call's start; without it an LRU hash by thread does. */
	fp->skel->rodata->in_call_in_hash = probe_thread_state(
		p, fp->skel->maps.in_call, fp->skel->maps.in_call_by_tid, true,
		FILE_IO_THREADS_NO_TASK_STORAGE, "a watched call's start");
	int rc = file_io_bpf__load(fp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading file I/O programs: %s (needs raw "
				 "tracepoints)", strerror(-rc));
	p->variant = "raw_tp";
	return 0;
}

static struct fd_name *find_name(struct fio_priv *fp, uint32_t tgid, int32_t fd)
{
	for (size_t i = 0; i < fp->n_names; i++)
		if (fp->names[i].tgid == tgid && fp->names[i].fd == fd)
			return &fp->names[i];
	return NULL;
}

/* The block device a file lives on, by name ("vda1", "loop0"); "" when none. */
static void device_of(dev_t dev, char *out, size_t len)
{
	char path[64], target[PATH_MAX];
	out[0] = '\0';
	if (major(dev) == 0)
		return; /* anonymous: tmpfs, overlay, proc, pipes, sockets */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) < len)
		memcpy(out, base, strlen(base) + 1);
}

/* MAJ:MIN of the mount an fd's file is on: "mnt_id:" of /proc/PID/fdinfo/FD, looked up in
 * /proc/PID/mountinfo ("ID PARENT MAJ:MIN ..."). */
static int fd_mount_dev(uint32_t tgid, int32_t fd, unsigned *major, unsigned *minor)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/fdinfo/%d", tgid, fd);
	char *info = read_file(path, NULL);
	const char *m = info ? strstr(info, "mnt_id:") : NULL;
	int mnt_id = m ? atoi(m + 7) : -1;
	free(info);
	if (mnt_id < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/mountinfo", tgid);
	char *mounts = read_file(path, NULL);
	int rc = -1;
	for (const char *line = mounts; line && *line && rc; ) {
		int id;
		if (sscanf(line, "%d %*d %u:%u", &id, major, minor) == 3 && id == mnt_id)
			rc = 0;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	free(mounts);
	return rc;
}

/* Names (tgid, fd) from /proc now, once: the first name seen is the one reported. */
static void name_fd(struct fio_priv *fp, uint32_t tgid, int32_t fd)
{
	if (fd < 0 || find_name(fp, tgid, fd) || fp->n_names >= MAX_FD_NAMES)
		return;
	char path[64], target[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%u/fd/%d", tgid, fd);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return; /* closed, or the process is gone: try again at the next tick */
	target[n] = '\0';
	if (fp->n_names == fp->cap_names) {
		fp->cap_names = fp->cap_names ? 2 * fp->cap_names : 64;
		fp->names = xrealloc(fp->names, fp->cap_names * sizeof(*fp->names));
	}
	struct fd_name *nm = &fp->names[fp->n_names++];
	memset(nm, 0, sizeof(*nm));
	nm->tgid = tgid;
	nm->fd = fd;
	nm->file = xstrdup(target);
	/* The file's device without touching the file (a stat through the link would ask its file
	 * system, and a stuck FUSE or network mount would hang us): the mount id of
	 * /proc/PID/fdinfo/N and that mount's MAJ:MIN in /proc/PID/mountinfo. A block device node
	 * (/dev/..., on devtmpfs) names its own device: its st_rdev. */
	unsigned major, minor;
	struct statx st;
	/* the link's text is the target's (its own mount namespace may put anything under /dev):
	 * cached attributes only, no request to the file's file system */
	if (strncmp(target, "/dev/", 5) == 0 &&
	    statx(AT_FDCWD, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, STATX_TYPE, &st) == 0 &&
	    S_ISBLK(st.stx_mode))
		device_of(makedev(st.stx_rdev_major, st.stx_rdev_minor), nm->device, sizeof(nm->device));
	else if (fd_mount_dev(tgid, fd, &major, &minor) == 0)
		device_of(makedev(major, minor), nm->device, sizeof(nm->device));
}

static void name_all(struct fio_priv *fp)
{
	int fd = bpf_map__fd(fp->skel->maps.calls);
	struct file_io_key keys[2], *prev = NULL, *next = &keys[0];
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		name_fd(fp, prev->tgid, prev->fd);
	}
}

static void fio_tick(struct probe *p)
{
	struct fio_priv *fp = p->priv;
	if (fp->skel)
		name_all(fp);
}

struct call_row {
	uint32_t tgid;
	int32_t fd;
	unsigned nr;
	char comm[17];
	uint64_t count, total_ns, max_ns, bytes, errors;
};

static int by_time_desc(const void *a, const void *b)
{
	const struct call_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	if (x->tgid != y->tgid)
		return x->tgid > y->tgid ? 1 : -1;
	if (x->nr != y->nr)
		return x->nr > y->nr ? 1 : -1;
	return (x->fd > y->fd) - (x->fd < y->fd);
}

static const char *call_name(unsigned nr)
{
	const struct watched_call *w = watched_by_nr(nr);
	return w ? w->name : "?";
}

static int fio_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		       struct diag_err *err)
{
	struct fio_priv *fp = p->priv;
	int calls_fd = bpf_map__fd(fp->skel->maps.calls);
	int stacks_fd = bpf_map__fd(fp->skel->maps.stacks);
	double scale = probe_scale(p);
	size_t cap = bpf_map__max_entries(fp->skel->maps.calls), n = 0;
	struct call_row *rows = xcalloc(cap, sizeof(*rows));
	struct stack_table *table = stacks_new(ctx, cap);
	double wall = ctx->wall_s;
	uint64_t sync_calls = 0, sync_ns = 0, total_calls = 0;
	(void)err;

	name_all(fp); /* the last chance: the processes may still be alive */
	struct file_io_key keys[2], *prev = NULL, *next = &keys[0];
	while (bpf_map_get_next_key(calls_fd, prev, next) == 0) {
		struct file_io_val v;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(calls_fd, prev, &v))
			continue;
		const struct watched_call *w = watched_by_nr(prev->nr);
		char comm[sizeof(v.comm) + 1];
		snprintf(comm, sizeof(comm), "%s", v.comm);
		total_calls += v.count * scale;
		if (w && (w->flags & FILE_IO_SYNC)) {
			sync_calls += v.count * scale;
			sync_ns += v.total_ns * scale;
			if (prev->user_stack_id >= 0 || prev->user_stack_id == -14 /* -EFAULT */)
				stacks_add_ids(table, stacks_fd, (int)prev->tgid, comm, prev->user_stack_id, -1, false,
					       v.total_ns * scale, v.count * scale, w->name);
		}
		/* merge the call paths of one (tgid, syscall, fd) */
		struct call_row *r = NULL;
		for (size_t i = 0; i < n && !r; i++)
			if (rows[i].tgid == prev->tgid && rows[i].fd == prev->fd && rows[i].nr == prev->nr)
				r = &rows[i];
		if (!r) {
			if (n >= cap)
				continue;
			r = &rows[n++];
			r->tgid = prev->tgid;
			r->fd = prev->fd;
			r->nr = prev->nr;
			memcpy(r->comm, comm, sizeof(r->comm));
		}
		r->count += v.count * scale;
		r->total_ns += v.total_ns * scale;
		r->bytes += v.bytes * scale;
		r->errors += v.errors * scale;
		if (v.max_ns > r->max_ns)
			r->max_ns = v.max_ns;
	}
	qsort(rows, n, sizeof(*rows), by_time_desc);

	struct value *res = value_obj();
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_num(res, "wall_s", wall);
	value_set_int(res, "calls_total", (int64_t)total_calls);
	value_set_int(res, "sync_calls", (int64_t)sync_calls);
	value_set_int(res, "sync_total_us", (int64_t)(sync_ns / 1000));
	value_set_num(res, "sync_per_s", wall > 0 ? (double)sync_calls / wall : 0);

	/* per syscall: totals and the latency histogram */
	struct value *per = value_obj_set(res, "syscalls", value_arr());
	int hist_fd = bpf_map__fd(fp->skel->maps.hist_us);
	for (size_t c = 0; c < ARRAY_LEN(watched); c++) {
		uint64_t count = 0, total = 0, maxns = 0, bytes = 0, errors = 0;
		for (size_t i = 0; i < n; i++) {
			if (rows[i].nr != (unsigned)watched[c].nr)
				continue;
			count += rows[i].count;
			total += rows[i].total_ns;
			bytes += rows[i].bytes;
			errors += rows[i].errors;
			if (rows[i].max_ns > maxns)
				maxns = rows[i].max_ns;
		}
		if (!count)
			continue;
		struct value *s = value_arr_push(per, value_obj());
		value_set_str(s, "name", watched[c].name);
		value_set_bool(s, "sync", (watched[c].flags & FILE_IO_SYNC) != 0);
		value_set_int(s, "count", (int64_t)count);
		value_set_num(s, "per_s", wall > 0 ? (double)count / wall : 0);
		value_set_int(s, "total_us", (int64_t)(total / 1000));
		value_set_num(s, "avg_us", (double)total / 1000.0 / (double)count);
		value_set_int(s, "max_us", (int64_t)(maxns / 1000));
		value_set_int(s, "bytes", (int64_t)bytes);
		value_set_int(s, "errors", (int64_t)errors);
		struct value *buckets = value_obj_set(s, "buckets", value_arr());
		for (__u32 slot = 0; slot < FILE_IO_HIST_SLOTS; slot++) {
			__u32 idx = (__u32)c * FILE_IO_HIST_SLOTS + slot;
			__u64 cnt = 0;
			if (bpf_map_lookup_elem(hist_fd, &idx, &cnt) || !cnt)
				continue;
			struct value *b = value_arr_push(buckets, value_obj());
			value_set_int(b, "lo", slot == 0 ? 0 : (int64_t)1 << slot);
			value_set_int(b, "hi", ((int64_t)1 << (slot + 1)) - 1);
			value_set_int(b, "count", (int64_t)(cnt * scale));
		}
	}

	struct value *list = value_obj_set(res, "calls", value_arr());
	size_t top = probe_opt(p, "top_n"), unnamed = 0;
	for (size_t i = 0; i < n; i++) {
		const struct fd_name *nm = rows[i].fd >= 0 ? find_name(fp, rows[i].tgid, rows[i].fd) : NULL;
		if (rows[i].fd >= 0 && (!nm || !nm->file))
			unnamed++;
		if (i >= top)
			continue;
		struct value *c = value_arr_push(list, value_obj());
		value_set_str(c, "syscall", call_name(rows[i].nr));
		value_set_int(c, "tgid", rows[i].tgid);
		value_set_str(c, "comm", rows[i].comm);
		value_set_int(c, "fd", rows[i].fd);
		if (nm && nm->file)
			value_set_str(c, "file", nm->file);
		if (nm && nm->device[0])
			value_set_str(c, "device", nm->device);
		value_set_int(c, "count", (int64_t)rows[i].count);
		value_set_num(c, "per_s", wall > 0 ? (double)rows[i].count / wall : 0);
		value_set_int(c, "total_us", (int64_t)(rows[i].total_ns / 1000));
		value_set_num(c, "avg_us", rows[i].count ? (double)rows[i].total_ns / 1000.0 / (double)rows[i].count : 0);
		value_set_int(c, "max_us", (int64_t)(rows[i].max_ns / 1000));
		value_set_int(c, "bytes", (int64_t)rows[i].bytes);
		value_set_int(c, "errors", (int64_t)rows[i].errors);
	}
	value_set_int(res, "rows_total", (int64_t)n);
	value_set_int(res, "unnamed_fds", (int64_t)unnamed);
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(fp->skel->obj, DIAG_STAT_LOST));
	value_set_int(res, "dropped", (int64_t)(probe_stat_sum(fp->skel->obj, DIAG_STAT_MAP_FULL) +
						  stacks_refused(table)));
	stacks_finish(table, res, p->kind->stack_unit);
	free(rows);
	*out = res;
	return 0;
}

static void fio_destroy(struct probe *p)
{
	struct fio_priv *fp = p->priv;
	probe_bpf_destroy(p);
	for (size_t i = 0; i < fp->n_names; i++)
		free(fp->names[i].file);
	free(fp->names);
	fp->names = NULL;
	fp->n_names = fp->cap_names = 0;
	fp->skel = NULL;
}

static const struct result_field fio_results[] = {
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 call in N timed, counts scaled by N" },
	{ "wall_s", RT_NUMBER, "s", false, "the window the rates are over" },
	{ "calls_total", RT_INTEGER, "count", false, "watched calls completed" },
	{ "sync_calls", RT_INTEGER, "count", false, "fsync, fdatasync, sync_file_range, msync, syncfs, sync calls" },
	{ "sync_total_us", RT_INTEGER, "us", false, "time in them, summed over threads" },
	{ "sync_per_s", RT_NUMBER, "per_s", false, "sync calls per second" },
	{ "syscalls", RT_ARRAY, NULL, false, "per watched syscall called, in the watch table's order" },
	{ "syscalls[]", RT_OBJECT, NULL, false, "one syscall" },
	{ "syscalls[].name", RT_STRING, NULL, false, "its name" },
	{ "syscalls[].sync", RT_BOOLEAN, NULL, false, "a sync-class call" },
	{ "syscalls[].count", RT_INTEGER, "count", false, "calls" },
	{ "syscalls[].per_s", RT_NUMBER, "per_s", false, "calls per second" },
	{ "syscalls[].total_us", RT_INTEGER, "us", false, "time in the calls" },
	{ "syscalls[].avg_us", RT_NUMBER, "us", false, "mean" },
	{ "syscalls[].max_us", RT_INTEGER, "us", false, "slowest call" },
	{ "syscalls[].bytes", RT_INTEGER, "bytes", false, "bytes returned (read/write family)" },
	{ "syscalls[].errors", RT_INTEGER, "count", false, "calls that returned an error" },
	LOG2_BUCKET_FIELDS("syscalls[].buckets", "us"),
	{ "calls", RT_ARRAY, NULL, false, "per (process, syscall, fd), most time first (top_n)" },
	{ "calls[]", RT_OBJECT, NULL, false, "one process's calls on one fd" },
	{ "calls[].syscall", RT_STRING, NULL, false, "syscall name" },
	{ "calls[].tgid", RT_INTEGER, NULL, false, "process" },
	{ "calls[].comm", RT_STRING, NULL, false, "thread name of its first call" },
	{ "calls[].fd", RT_INTEGER, NULL, false, "file descriptor (-1: the call takes none)" },
	{ "calls[].file", RT_STRING, NULL, true, "what the fd named in /proc/PID/fd, when it could be read" },
	{ "calls[].device", RT_STRING, NULL, true, "block device of the file, when it has one" },
	{ "calls[].count", RT_INTEGER, "count", false, "calls" },
	{ "calls[].per_s", RT_NUMBER, "per_s", false, "calls per second" },
	{ "calls[].total_us", RT_INTEGER, "us", false, "time in the calls" },
	{ "calls[].avg_us", RT_NUMBER, "us", false, "mean" },
	{ "calls[].max_us", RT_INTEGER, "us", false, "slowest call" },
	{ "calls[].bytes", RT_INTEGER, "bytes", false, "bytes returned" },
	{ "calls[].errors", RT_INTEGER, "count", false, "calls that returned an error" },
	{ "rows_total", RT_INTEGER, "count", false, "distinct (process, syscall, fd) seen" },
	{ "unnamed_fds", RT_INTEGER, "count", false, "rows whose fd could not be named (closed before a tick, process gone)" },
	{ "lost_stacks", RT_INTEGER, "count", false, "call paths that could not be walked or stored" },
	{ "dropped", RT_INTEGER, "count", false, "calls not counted: a map was full" },
	STACK_RESULT_FIELDS,
};
static const char *const fio_features[] = { "btf", "raw_tp", NULL }; /* task storage: optional (a hash by thread) */

const struct probe_kind probe_kind_file_io = {
	.name = "file_io",
	.summary = "syscalls that wait on storage (fsync family, read/write family): latency "
		   "histograms, rates, the file and device of each fd, call paths of sync calls",
	.options = fio_options,
	.n_options = ARRAY_LEN(fio_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = fio_variants,
	.private_size = sizeof(struct fio_priv),
	.stack_unit = "ns",
	.results = fio_results,
	.n_results = ARRAY_LEN(fio_results),
	.features = fio_features,
	.load = fio_load,
	.attach = probe_bpf_attach_all,
	.detach = probe_bpf_detach,
	.tick = fio_tick,
	.collect = fio_collect,
	.destroy = fio_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = file_io_bpf__elf_bytes,
};
