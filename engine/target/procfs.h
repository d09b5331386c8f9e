/* procfs.h — pure parsers of /proc and cgroupfs text, and the arithmetic done on two readings
 * (iostat -x figures, pressure over a window, a bounded time series and its least-squares slope).
 *
 * Owns: turning the text of /proc/PID/{stat,status,smaps_rollup,io,cgroup}, /proc/stat's cpu line,
 * /proc/pressure/{cpu,memory,io},
 * /proc/diskstats, /proc/net/{snmp,netstat,dev,softnet_stat}, /proc/slabinfo, /proc/vmstat, /proc/meminfo
 * and cgroup v1/v2 control files into numbers.
 * Must not: open files, allocate, or know about probes, results or recipes: every function takes
 * text (or readings) and returns values, so unit tests feed it recorded text.
 * Sizes are in bytes ("kB" fields are multiplied by 1024), times as the kernel gives them unless
 * the field name says otherwise.
 */
#ifndef DIAG_PROCFS_H
#define DIAG_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The number after `key` on the line that starts with exactly `key` followed by ':' or blanks
 * ("VmRSS:   123 kB", "nr_throttled 4", "oom_kill 0"); " kB" multiplies by 1024. Lines are
 * matched whole-key: "rss" does not match "rss_huge". Returns false when there is no such line. */
bool procfs_key_u64(const char *text, const char *key, uint64_t *out);

/* /proc/PID/stat: comm (between the first '(' and the last ')'), state, parent, utime and stime
 * in clock ticks, num_threads. Returns -1 on malformed text. */
struct procfs_stat {
	char comm[64];
	char state; /* 'R', 'S', 'Z' (exited, not reaped), 'X'... */
	int ppid;
	uint64_t utime_ticks, stime_ticks;
	long threads;
	uint64_t start_ticks; /* when the process started, in clock ticks after boot (boot time) */
};
int procfs_parse_stat(const char *text, struct procfs_stat *out);

/* The next line of a text being read in place: cuts it at its newline, moves *cursor past it;
 * NULL at the end of the text. */
char *procfs_next_line(char **cursor);

/* One line of /proc/PID/maps: "start-end perms offset major:minor inode [path]". */
struct procfs_maps_line {
	uint64_t start, end, offset, inode;
	unsigned major, minor;
	bool exec;        /* 'x' in perms */
	bool read, write; /* 'r', 'w' in perms */
	bool shared;      /* 's' in perms (else 'p': private, copy on write) */
	const char *path; /* inside the line; "" for an anonymous mapping */
};
/* -1 when the line is malformed or end <= start. */
int procfs_parse_maps_line(const char *line, struct procfs_maps_line *out);

/* /proc/PID/status (memory in bytes; a field a kernel lacks stays 0 and its bit clear). */
struct procfs_status {
	uint64_t vm_rss, rss_anon, rss_file, rss_shmem, vm_swap, vm_hwm;
	uint64_t vol_switches, invol_switches;
	long threads;
	bool has_rss, has_rss_split, has_swap;
};
int procfs_parse_status(const char *text, struct procfs_status *out);

/* /proc/PID/smaps_rollup, in bytes. */
enum procfs_smaps_field {
	SMAPS_RSS, SMAPS_PSS, SMAPS_PSS_ANON, SMAPS_PSS_FILE, SMAPS_PSS_SHMEM, SMAPS_SHARED_CLEAN,
	SMAPS_SHARED_DIRTY, SMAPS_PRIVATE_CLEAN, SMAPS_PRIVATE_DIRTY, SMAPS_ANONYMOUS,
	SMAPS_SWAP, SMAPS_SWAP_PSS, SMAPS_N
};
/* Kernel names ("Pss_Anon") and result names ("pss_anon_bytes"), indexed by the enum. */
extern const char *const procfs_smaps_kernel_names[SMAPS_N];
extern const char *const procfs_smaps_result_names[SMAPS_N];
struct procfs_smaps {
	uint64_t v[SMAPS_N];
	bool has[SMAPS_N];
};
int procfs_parse_smaps_rollup(const char *text, struct procfs_smaps *out);

/* /proc/PID/io. */
struct procfs_io {
	uint64_t rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes;
};
int procfs_parse_io(const char *text, struct procfs_io *out);

/* /proc/pressure/{cpu,memory,io} or a cgroup's *.pressure: "some" and "full" lines (a kernel
 * without a "full" line for cpu leaves has_full false). total in microseconds. */
struct procfs_psi {
	double some_avg10, some_avg60, full_avg10, full_avg60;
	uint64_t some_total_us, full_total_us;
	bool has_full;
};
int procfs_parse_psi(const char *text, struct procfs_psi *out);
/* Share of the window (percent) during which some / all tasks stalled: the delta of the total=
 * counters over wall_s. Clamped to 0..100. */
void procfs_psi_window(const struct procfs_psi *a, const struct procfs_psi *b, double wall_s,
		       double *some_pct, double *full_pct);

/* /proc/stat's first line, "cpu  user nice system idle iowait irq softirq steal guest
 * guest_nice", all CPUs summed, in clock ticks. total is the sum of the first eight (guest time is
 * already in user and nice); steal is the time the hypervisor ran something else while a vCPU
 * of this machine wanted to run (0 on bare metal, absent before Linux 2.6.11: has_steal false).
 * Returns -1 when the text does not start with a "cpu " line of at least four numbers. */
struct procfs_cpu_times {
	uint64_t total_ticks, idle_ticks, steal_ticks;
	bool has_steal;
};
int procfs_parse_cpu_times(const char *text, struct procfs_cpu_times *out);
/* Share (percent, 0..100) of all CPUs' time between two readings that the hypervisor stole;
 * -1 when it cannot be told (no steal column, no ticks elapsed, counters went back). */
double procfs_steal_pct(const struct procfs_cpu_times *a, const struct procfs_cpu_times *b);

/* /proc/diskstats: one line per device. */
struct procfs_disk {
	unsigned major, minor;
	char name[32];
	uint64_t rd_ios, rd_merges, rd_sectors, rd_ticks;     /* ticks in ms */
	uint64_t wr_ios, wr_merges, wr_sectors, wr_ticks;
	uint64_t ios_in_progress, io_ticks, time_in_queue;    /* io_ticks: ms busy; weighted ms */
};
/* Parses up to max devices; returns how many. */
size_t procfs_parse_diskstats(const char *text, struct procfs_disk *out, size_t max);
/* What `iostat -x` prints for a device between readings a and b, itv_s seconds apart. */
struct procfs_iostat {
	double r_s, w_s, rkb_s, wkb_s, rrqm_s, wrqm_s;
	double r_await_ms, w_await_ms, rareq_kb, wareq_kb, aqu_sz, util_pct;
	uint64_t reads, writes, read_bytes, write_bytes; /* deltas */
};
void procfs_iostat(const struct procfs_disk *a, const struct procfs_disk *b, double itv_s,
		   struct procfs_iostat *out);

/* /proc/net/snmp and /proc/net/netstat: pairs of lines "Group: Name1 Name2 ..." and
 * "Group: v1 v2 ...". Negative values (e.g. Tcp MaxConn -1) are stored as 0. */
struct procfs_counter {
	char group[16];
	char name[48];
	uint64_t value;
};
size_t procfs_parse_snmp(const char *text, struct procfs_counter *out, size_t max);
/* The counter group:name among n, or NULL. */
const struct procfs_counter *procfs_counter_find(const struct procfs_counter *c, size_t n,
						 const char *group, const char *name);

/* /proc/net/dev. */
struct procfs_netdev {
	char name[32];
	uint64_t rx_bytes, rx_packets, rx_errs, rx_drop, rx_fifo, rx_frame;
	uint64_t tx_bytes, tx_packets, tx_errs, tx_drop, tx_fifo, tx_colls, tx_carrier;
};
size_t procfs_parse_netdev(const char *text, struct procfs_netdev *out, size_t max);

/* /proc/net/softnet_stat (one line per CPU, hexadecimal columns): packets processed, dropped
 * (the backlog queue was full: netdev_max_backlog) and time_squeeze (net_rx_action ran out of
 * budget with work left), summed over CPUs. Returns the CPUs read (0: none). */
struct procfs_softnet {
	uint64_t processed, dropped, time_squeeze;
};
size_t procfs_parse_softnet(const char *text, struct procfs_softnet *out);

/* Where a controller's files are for a process, from /proc/PID/cgroup: a v1 hierarchy that
 * lists the controller wins (hybrid hosts: /sys/fs/cgroup/CONTROLLER + path), else the v2
 * unified line "0::path" under v2_root (/sys/fs/cgroup on pure v2, /sys/fs/cgroup/unified on
 * hybrid hosts). v1_root is the controller's v1 mount (/sys/fs/cgroup/memory; /sys/fs/cgroup/cpu
 * is a link to cpu,cpuacct where they share a hierarchy). Returns -1 when neither applies. */
struct procfs_cgroup {
	int version;     /* 1 or 2 */
	char path[512];  /* as in /proc/PID/cgroup, e.g. "/system.slice/x.service" */
	char dir[640];   /* the directory holding its control files */
};
int procfs_cgroup_locate(const char *text, const char *controller, const char *v1_root,
			 const char *v2_root, struct procfs_cgroup *out);

/* Every cgroup a process is in, each hierarchy's: from its /proc/PID/cgroup text (lines
 * "ID:CONTROLLERS:PATH") and our /proc/self/mountinfo's cgroup and cgroup2 mounts of the whole
 * hierarchy (root "/"): a v1 line's hierarchy is the "cgroup" mount whose super options name
 * each of its controllers (or its name=...), the "0::PATH" line the "cgroup2" mount. A line whose
 * hierarchy is not mounted here is left out. At most max; returns how many, or -1 when a line or
 * a mount point does not fit. The caller opens `path` beneath `mount` (PATH is "/"-rooted). */
struct procfs_cgroup_dir {
	char mount[256]; /* e.g. "/sys/fs/cgroup/memory", "/sys/fs/cgroup" */
	char path[512];  /* e.g. "/system.slice/x.service" */
};
int procfs_cgroup_dirs(const char *mountinfo, const char *proc_cgroup, struct procfs_cgroup_dir *out,
		       size_t max);

/* A limit file: "max" (v2) or a v1 value of at least 2^62 (PAGE_COUNTER_MAX) is unlimited.
 * Returns -1 on malformed text. */
int procfs_parse_limit(const char *text, uint64_t *bytes, bool *unlimited);

/* cgroup I/O per device. v2: io.stat lines "MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=..".
 * v1: blkio.throttle.io_service_bytes and io_serviced ("MAJ:MIN Read N" ... "Total N"). */
struct procfs_cgio {
	unsigned major, minor;
	uint64_t rbytes, wbytes, rios, wios;
	/* limits (procfs_parse_io_limits); 0: none */
	uint64_t rbps_max, wbps_max, riops_max, wiops_max;
};
size_t procfs_parse_io_stat(const char *text, struct procfs_cgio *out, size_t max);
size_t procfs_parse_blkio_v1(const char *bytes_text, const char *ios_text, struct procfs_cgio *out,
			     size_t max);
/* cgroup I/O limits per device, merged into out[0..n) (a device with a limit and no I/O gets a
 * slot of its own); returns the new count. v2: io.max lines "MAJ:MIN rbps=N|max wbps=..
 * riops=.. wiops=..". v1: blkio.throttle.read_bps_device, write_bps_device, read_iops_device,
 * write_iops_device, lines "MAJ:MIN N". Any text may be NULL. */
size_t procfs_parse_io_limits(const char *io_max, const char *rbps, const char *wbps,
			      const char *riops, const char *wiops, struct procfs_cgio *out, size_t n,
			      size_t max);

/* /proc/slabinfo, version 2.x: one cache per line,
 *   NAME ACTIVE_OBJS NUM_OBJS OBJSIZE OBJPERSLAB PAGESPERSLAB : tunables L B S : slabdata ACTIVE_SLABS NUM_SLABS SHARED
 * Returns -1 when the text is not slabinfo 2.x (its first line), else 0 with info filled. A line
 * that is not such a cache line (a field missing, not a number, a name of 64 bytes or more) is
 * skipped and counted in info->malformed; cache lines past max are counted in info->overflow. */
#define PROCFS_SLAB_NAME 64
struct procfs_slab {
	char name[PROCFS_SLAB_NAME];
	uint64_t active_objs, num_objs, objsize, objperslab, pagesperslab;
	uint64_t active_slabs, num_slabs;
};
struct procfs_slabinfo {
	size_t n;         /* caches written to out[] */
	size_t malformed; /* lines skipped */
	size_t overflow;  /* cache lines past max */
};
int procfs_parse_slabinfo(const char *text, struct procfs_slab *out, size_t max,
			  struct procfs_slabinfo *info);
/* Memory a cache holds: its slabs' pages (num_slabs * pagesperslab * page_size). */
uint64_t procfs_slab_bytes(const struct procfs_slab *s, uint64_t page_size);

/* The sum of every "KEY VALUE" line whose key starts with prefix (/proc/vmstat "pgscan_kswapd",
 * "pgscan_direct", ... for "pgscan_"); *found says whether any line matched. */
uint64_t procfs_sum_prefixed(const char *text, const char *prefix, bool *found);

/* A bounded time series: at most PROCFS_SERIES_MAX points; when full, every other point is
 * dropped and only every stride-th later push is kept (stride doubles), so the points stay
 * evenly spread over the whole window. A push between kept ones is held as a provisional last
 * point (replaced by the next push), so the series always ends at the latest reading.
 * Zero-initialised is empty. */
#define PROCFS_SERIES_MAX 512
struct procfs_series {
	double t[PROCFS_SERIES_MAX], v[PROCFS_SERIES_MAX];
	size_t n;
	unsigned stride;  /* keep one push in stride (1 until the first decimation) */
	unsigned pending; /* pushes since the last kept one */
	bool provisional; /* the last point is a push between kept ones: the next push replaces it */
};
void procfs_series_push(struct procfs_series *s, double t, double v);
/* Least-squares slope of v over t (units of v per unit of t); false with fewer than two
 * distinct times. */
bool procfs_slope(const double *t, const double *v, size_t n, double *slope);

#endif
