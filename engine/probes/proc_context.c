/* proc_context.c — catalog entry without BPF: the general /proc + cgroup sampler. What the
 * target and its host did over the collection window, in sections a recipe turns on with the
 * `sections` option (a comma list of cpu, memory, io, net; default "cpu").
 *
 * On a set of processes (--comm, --cgroup, --unit, --container: filter.pid_set), the process
 * figures are sums over the set: counters (CPU time, switches, I/O) add each process's delta from
 * when the set first covered it (from 0 for a process started during the window) to its last
 * reading (a process that exits keeps its part), plus the CPU time of processes that joined the
 * set at fork and exited before any reading saw them (the session counts it in the kernel), gauges
 * (RSS, threads) add the processes alive at each reading; smaps_rollup is not read; the cgroup
 * and network namespace are the first process's; pid is replaced by processes (how many).
 *
 * Without a pid filter (a `target: optional-pid` recipe run without --pid) it is host-wide: only
 * the files that describe the machine are read (pressure, /proc/diskstats, the host's network
 * counters through /proc/1/net: the host's namespace), and pid, comm and threads are replaced by
 * host: true.
 *
 * Owns: reading the files of each section at attach, at every session tick (about once a second)
 * and at the end, and turning the first and the last good reading into deltas over the window
 * (a target that exits keeps the window up to its last tick). Parsing and arithmetic are in
 * engine/target/procfs.c (pure functions on text); this file only reads files and builds results.
 * Must not: attach anything to the kernel, parse text itself, or report a value that describes
 * the time before the window as if it were the window (pressure is the total= delta, never avg10).
 *
 * Results (units in the names; counters are deltas over the window, gauges are the value at the
 * end of the window with a *_delta_* field; absent sources leave their fields out):
 *   always   pid, comm, threads, ncpus, wall_s, exited, sections ("cpu,memory"), readings
 *   cpu      utime_s, stime_s, cpu_pct (100 = one CPU), voluntary_ctxt_switches,
 *            unscanned_processes, unscanned_cpu_s (a set: processes too short-lived for any
 *            reading, their CPU time, included in cpu_pct but not in utime_s / stime_s),
 *            nonvoluntary_ctxt_switches (summed over threads),
 *            steal_pct (the machine's: share of all CPUs' time the hypervisor ran something
 *            else, from /proc/stat; host-wide too),
 *            psi {some_pct, full_pct (share of the window stalled, from total=), some_total_us,
 *                 full_total_us, some_avg10, some_avg60, full_avg10 (context only)},
 *            cgroup {version 1|2, path, dir, cpu_max ("QUOTA PERIOD" or "max PERIOD"),
 *                    nr_periods, nr_throttled, throttled_us} (not for the root cgroup)
 *   memory   memory {rss_bytes, rss_anon_bytes, rss_file_bytes, rss_shmem_bytes, swap_bytes,
 *              rss_peak_bytes, rss_delta_bytes, rss_anon_delta_bytes, rss_file_delta_bytes,
 *              rss_shmem_delta_bytes, swap_delta_bytes, rss_slope_bytes_per_s (least squares
 *              over the series), rss_series [{t_s, bytes}] (one point per reading, at most 512,
 *              decimated evenly when full), series_stride,
 *              smaps_rollup {rss_bytes, pss_bytes, pss_anon_bytes, pss_file_bytes,
 *                pss_shmem_bytes, shared_clean_bytes, shared_dirty_bytes, private_clean_bytes,
 *                private_dirty_bytes, anonymous_bytes, swap_bytes, swap_pss_bytes, and NAME_delta
 *                for each: NAME without _bytes + _delta_bytes} (read at the start and the end only),
 *              cgroup {version, path, dir, current_bytes, current_delta_bytes,
 *                current_slope_bytes_per_s, current_series [{t_s, bytes}], limited, max_bytes,
 *                high_bytes (v2), anon_bytes, file_bytes, anon_delta_bytes, file_delta_bytes,
 *                events {oom, oom_kill, high, max} (deltas; v1: oom_kill only), failcnt (v1
 *                delta), under_oom (v1)},
 *              pressure {some_pct, full_pct, some_total_us, full_total_us, some_avg10, full_avg10}}
 *   io       io {rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes,
 *              read_bytes_per_s, write_bytes_per_s,
 *              disks [{name, major, minor, r_s, w_s, rkb_s, wkb_s, rrqm_s, wrqm_s, r_await_ms,
 *                w_await_ms, rareq_kb, wareq_kb, aqu_sz, util_pct, reads, writes, read_bytes,
 *                write_bytes}] (as iostat -x; devices with I/O in the window only),
 *              cgroup {version, path, dir, rbytes, wbytes, rios, wios, limited,
 *                devices [{dev "MAJ:MIN", name, rbytes, wbytes, rios, wios, rbps_max,
 *                wbps_max, riops_max, wiops_max (limits of io.max / blkio.throttle.*, when set)}]},
 *              pressure {as memory's}}
 *   net      net {counters {Ip {...}, Tcp {...}, Udp {...}, TcpExt {...}, IpExt {...}} (the
 *              error counters that matter, kernel names, deltas; the target's network
 *              namespace: /proc/PID/net), tcp_retrans_pct (RetransSegs / OutSegs),
 *              softnet {processed, dropped, time_squeeze} (/proc/net/softnet_stat, all CPUs),
 *              interfaces [{name, rx_bytes, rx_packets, rx_errs, rx_drop, rx_fifo, rx_frame,
 *                tx_bytes, tx_packets, tx_errs, tx_drop, tx_fifo, tx_colls, tx_carrier}]}
 * The reference is schemas/recipe.md (probe kinds).
 *
 * Why one file (~1,400 lines): each section (cpu, memory, io, net) is a reader and its results
 * over the same readings (at attach, each tick, at the end) and the same set arithmetic; a quarter
 * of the file is the table of the results it declares. Parsing and arithmetic are procfs.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "target/tfile.h"
#include "target/procfs.h"
#include "target/target.h"

enum { SEC_CPU = 1, SEC_MEMORY = 2, SEC_IO = 4, SEC_NET = 8 };
static const char *const section_names[] = { "cpu", "memory", "io", "net" };

#define MAX_DISKS 128
#define MAX_CGIO 64
#define MAX_NETDEV 64
#define MAX_COUNTERS 640

struct mem_cgroup_reading {
	bool valid;
	uint64_t current, anon, file;
	uint64_t max, high;
	bool limited, high_limited, has_high, has_stat;
	uint64_t ev_oom, ev_oom_kill, ev_high, ev_max;
	uint64_t failcnt, under_oom; /* v1 */
};

struct reading {
	bool valid;
	uint64_t at_ns;
	struct procfs_stat stat;
	/* cpu */
	uint64_t vol_switches, invol_switches;
	bool has_psi_cpu, has_cpu_stat, has_cpu_times;
	struct procfs_psi psi_cpu;
	struct procfs_cpu_times cpu_times; /* the machine's (/proc/stat), for steal */
	uint64_t nr_periods, nr_throttled, throttled_us;
	/* memory */
	bool has_status, has_smaps, has_psi_mem;
	struct procfs_status status;
	struct procfs_smaps smaps;
	struct procfs_psi psi_mem;
	struct mem_cgroup_reading mcg;
	/* io */
	bool has_io, has_psi_io, has_cgio;
	struct procfs_io io;
	struct procfs_psi psi_io;
	size_t n_disks, n_cgio;
	struct procfs_disk disks[MAX_DISKS];
	struct procfs_cgio cgio[MAX_CGIO];
	/* net */
	size_t n_counters, n_netdev;
	bool has_softnet;
	struct procfs_softnet softnet;
	struct procfs_counter counters[MAX_COUNTERS];
	struct procfs_netdev netdev[MAX_NETDEV];
};

/* One process of a set: its cumulative counters when the set first covered it, and now. */
struct member {
	int pid;
	bool seen;
	struct procfs_stat stat0, stat;
	uint64_t vol0, invol0, vol, invol;
	struct procfs_io io0, io;
	bool has_io;
	bool born_in_window; /* started after the first reading: its counters count from 0 */
};

struct proc_priv {
	unsigned sections;
	struct member *members; /* a set of processes; NULL otherwise */
	size_t n_members;
	char sections_text[64];
	char comm[64];
	bool cpu_cg_ok, mem_cg_ok, io_cg_ok;
	struct procfs_cgroup cpu_cg, mem_cg, io_cg;
	char cpu_max[64];
	struct reading start, last, scratch;
	struct procfs_series rss, cg_current;
	unsigned readings; /* good readings taken, start and end included */
	bool exited;
	bool host; /* no pid filter: host-wide files only (diskstats, pressure, the host's net) */
	uint64_t window_start_ticks; /* a set: the first reading, in clock ticks after boot */
};

/* ---- the sections option ------------------------------------------------------------------ */

/* Bits of a comma list of section names; 0 when a name is unknown or the list is empty. */
static unsigned parse_sections(const char *text)
{
	unsigned bits = 0;
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, ",");
		while (len > 0 && *p == ' ')
			p++, len--;
		size_t l = len;
		while (l > 0 && p[l - 1] == ' ')
			l--;
		unsigned bit = 0;
		for (size_t i = 0; i < ARRAY_LEN(section_names); i++)
			if (l == strlen(section_names[i]) && strncmp(p, section_names[i], l) == 0)
				bit = 1u << i;
		if (!bit)
			return 0;
		bits |= bit;
		p += len;
		if (*p == ',')
			p++;
	}
	return bits;
}

static const char *check_sections(const char *text)
{
	return parse_sections(text) ? NULL
				    : "expected a comma-separated list of cpu, memory, io, net";
}

static const struct option_spec proc_options[] = {
	{ .name = "sections", .type = OPT_STRING, .dflt_str = "cpu", .check = check_sections,
	  .help = "what to sample: a comma list of cpu, memory, io, net" },
};
static const char *const proc_variants[] = { "procfs", NULL };

/* ---- reading the files -------------------------------------------------------------------- */

static char *read_pid_file(int pid, const char *name)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return read_file(path, NULL);
}

static char *read_in(const char *dir, const char *name)
{
	char path[768];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return read_file(path, NULL);
}

static bool read_psi(const char *path, struct procfs_psi *out)
{
	char *text = read_file(path, NULL);
	bool ok = text && procfs_parse_psi(text, out) == 0;
	free(text);
	return ok;
}

/* /proc/stat's first line only: the rest (a line per CPU, the interrupt counts) can be tens of
 * kilobytes on a large machine, read every second for nothing. */
static bool read_cpu_times(struct procfs_cpu_times *out)
{
	char buf[512];
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	if (!nl) /* a first line longer than the buffer: not the format we know */
		return false;
	*nl = '\0';
	return procfs_parse_cpu_times(buf, out) == 0;
}

static void read_switches(int pid, struct reading *r)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *dir = opendir(path);
	r->vol_switches = r->invol_switches = 0;
	if (!dir)
		return;
	for (struct dirent *de; (de = readdir(dir));) {
		if (de->d_name[0] == '.')
			continue;
		char spath[300];
		snprintf(spath, sizeof(spath), "/proc/%d/task/%s/status", pid, de->d_name);
		char *text = read_file(spath, NULL);
		struct procfs_status st;
		if (text && procfs_parse_status(text, &st) == 0) {
			r->vol_switches += st.vol_switches;
			r->invol_switches += st.invol_switches;
		}
		free(text); /* NULL: the thread exited meanwhile */
	}
	closedir(dir);
}

static void read_cpu_cgroup(const struct proc_priv *pp, struct reading *r)
{
	if (!pp->cpu_cg_ok)
		return;
	char *text = read_in(pp->cpu_cg.dir, "cpu.stat");
	if (!text)
		return;
	r->has_cpu_stat = procfs_key_u64(text, "nr_periods", &r->nr_periods);
	procfs_key_u64(text, "nr_throttled", &r->nr_throttled);
	uint64_t ns;
	if (pp->cpu_cg.version == 2)
		procfs_key_u64(text, "throttled_usec", &r->throttled_us);
	else if (procfs_key_u64(text, "throttled_time", &ns)) /* v1: nanoseconds */
		r->throttled_us = ns / 1000;
	free(text);
}

static void read_mem_cgroup(const struct proc_priv *pp, struct mem_cgroup_reading *m)
{
	memset(m, 0, sizeof(*m));
	if (!pp->mem_cg_ok)
		return;
	const char *dir = pp->mem_cg.dir;
	bool v2 = pp->mem_cg.version == 2;
	char *cur = read_in(dir, v2 ? "memory.current" : "memory.usage_in_bytes");
	if (!cur)
		return;
	bool unl;
	m->valid = procfs_parse_limit(cur, &m->current, &unl) == 0;
	free(cur);
	char *max = read_in(dir, v2 ? "memory.max" : "memory.limit_in_bytes");
	if (max && procfs_parse_limit(max, &m->max, &unl) == 0)
		m->limited = !unl;
	free(max);
	char *stat = read_in(dir, "memory.stat");
	if (stat) {
		/* v1: total_* include the children, as usage_in_bytes does. */
		m->has_stat = procfs_key_u64(stat, v2 ? "anon" : "total_rss", &m->anon);
		procfs_key_u64(stat, v2 ? "file" : "total_cache", &m->file);
		free(stat);
	}
	if (v2) {
		char *high = read_in(dir, "memory.high");
		if (high && procfs_parse_limit(high, &m->high, &unl) == 0) {
			m->has_high = true;
			m->high_limited = !unl;
		}
		free(high);
		char *ev = read_in(dir, "memory.events");
		if (ev) {
			procfs_key_u64(ev, "oom", &m->ev_oom);
			procfs_key_u64(ev, "oom_kill", &m->ev_oom_kill);
			procfs_key_u64(ev, "high", &m->ev_high);
			procfs_key_u64(ev, "max", &m->ev_max);
			free(ev);
		}
	} else {
		char *fc = read_in(dir, "memory.failcnt");
		if (fc) {
			m->failcnt = strtoull(fc, NULL, 10);
			free(fc);
		}
		char *oc = read_in(dir, "memory.oom_control");
		if (oc) {
			procfs_key_u64(oc, "oom_kill", &m->ev_oom_kill);
			procfs_key_u64(oc, "under_oom", &m->under_oom);
			free(oc);
		}
	}
}

static void read_io_cgroup(const struct proc_priv *pp, struct reading *r)
{
	if (!pp->io_cg_ok)
		return;
	if (pp->io_cg.version == 2) {
		char *text = read_in(pp->io_cg.dir, "io.stat");
		if (text) {
			r->has_cgio = true;
			r->n_cgio = procfs_parse_io_stat(text, r->cgio, MAX_CGIO);
			char *max = read_in(pp->io_cg.dir, "io.max"); /* absent in the root cgroup */
			r->n_cgio = procfs_parse_io_limits(max, NULL, NULL, NULL, NULL, r->cgio, r->n_cgio,
							   MAX_CGIO);
			free(max);
		}
		free(text);
		return;
	}
	char *bytes = read_in(pp->io_cg.dir, "blkio.throttle.io_service_bytes");
	char *ios = read_in(pp->io_cg.dir, "blkio.throttle.io_serviced");
	if (bytes || ios) {
		r->has_cgio = true;
		r->n_cgio = procfs_parse_blkio_v1(bytes, ios, r->cgio, MAX_CGIO);
		char *lim[4];
		static const char *const files[4] = {
			"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
			"blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device" };
		for (int i = 0; i < 4; i++)
			lim[i] = read_in(pp->io_cg.dir, files[i]);
		r->n_cgio = procfs_parse_io_limits(NULL, lim[0], lim[1], lim[2], lim[3], r->cgio,
						   r->n_cgio, MAX_CGIO);
		for (int i = 0; i < 4; i++)
			free(lim[i]);
	}
	free(bytes);
	free(ios);
}

/* Host-wide (no target): the files that describe the machine, not a process. */
static int take_host_reading(const struct proc_priv *pp, struct reading *r)
{
	char *text;
	if (pp->sections & SEC_CPU) {
		r->has_psi_cpu = read_psi("/proc/pressure/cpu", &r->psi_cpu);
		r->has_cpu_times = read_cpu_times(&r->cpu_times);
	}
	if (pp->sections & SEC_MEMORY)
		r->has_psi_mem = read_psi("/proc/pressure/memory", &r->psi_mem);
	if (pp->sections & SEC_IO) {
		text = read_file("/proc/diskstats", NULL);
		r->n_disks = text ? procfs_parse_diskstats(text, r->disks, MAX_DISKS) : 0;
		free(text);
		r->has_psi_io = read_psi("/proc/pressure/io", &r->psi_io);
	}
	if (pp->sections & SEC_NET) { /* the host's network namespace: pid 1's, not ours */
		text = read_file("/proc/1/net/snmp", NULL);
		if (text)
			r->n_counters = procfs_parse_snmp(text, r->counters, MAX_COUNTERS);
		free(text);
		text = read_file("/proc/1/net/netstat", NULL);
		if (text)
			r->n_counters += procfs_parse_snmp(text, r->counters + r->n_counters,
							   MAX_COUNTERS - r->n_counters);
		free(text);
		text = read_file("/proc/1/net/dev", NULL);
		r->n_netdev = text ? procfs_parse_netdev(text, r->netdev, MAX_NETDEV) : 0;
		free(text);
		text = read_file("/proc/net/softnet_stat", NULL); /* per CPU: the host's backlog */
		r->has_softnet = text && procfs_parse_softnet(text, &r->softnet) > 0;
		free(text);
	}
	r->at_ns = mono_ns();
	r->valid = true;
	return 0;
}

/* One reading of every enabled section; smaps_rollup (which walks the whole address space)
 * only when `full`. Fails only when the target's /proc/PID/stat is gone. */
static struct member *member_of(struct proc_priv *pp, int pid)
{
	for (size_t i = 0; i < pp->n_members; i++)
		if (pp->members[i].pid == pid)
			return &pp->members[i];
	pp->members = xrealloc(pp->members, (pp->n_members + 1) * sizeof(*pp->members));
	struct member *m = &pp->members[pp->n_members++];
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	return m;
}

/* b - a for a counter that only grows; 0 when it went back (a pid reused by another process). */
static uint64_t since(uint64_t a, uint64_t b)
{
	return b >= a ? b - a : 0;
}

/* A set of processes: the per-process figures of r become the set's (see the top comment).
 * Returns -1 when no process of the set is left. */
static int aggregate_set(struct probe *p, struct reading *r)
{
	struct proc_priv *pp = p->priv;
	const struct target *t = p->cfg.filter.target;
	struct procfs_status sum = { 0 };
	long threads = 0;
	size_t alive = 0;
	bool all_split = true, all_swap = true;
	if (pp->readings == 0) { /* the window starts now: processes started later are its own */
		struct timespec boot;
		clock_gettime(CLOCK_BOOTTIME, &boot);
		long hz = sysconf(_SC_CLK_TCK);
		pp->window_start_ticks = (uint64_t)boot.tv_sec * (uint64_t)hz +
					 (uint64_t)boot.tv_nsec * (uint64_t)hz / 1000000000u;
	}
	for (size_t i = 0; i < t->n_procs; i++) {
		if (!t->procs[i].alive)
			continue;
		int pid = t->procs[i].pid;
		struct procfs_stat st;
		char *text = read_pid_file(pid, "stat");
		int rc = text ? procfs_parse_stat(text, &st) : -1;
		free(text);
		if (rc < 0)
			continue; /* exited since the scan */
		struct reading one;
		read_switches(pid, &one);
		struct procfs_status status;
		text = read_pid_file(pid, "status");
		bool has_status = text && procfs_parse_status(text, &status) == 0 && status.has_rss;
		free(text);
		struct procfs_io io;
		text = (pp->sections & SEC_IO) ? read_pid_file(pid, "io") : NULL;
		bool has_io = text && procfs_parse_io(text, &io) == 0;
		free(text);
		bool fresh = false;
		struct member *m = member_of(pp, pid);
		if (!m->seen) {
			fresh = m->seen = true;
			m->stat0 = st;
			m->vol0 = one.vol_switches;
			m->invol0 = one.invol_switches;
			if (pp->readings > 0 && st.start_ticks >= pp->window_start_ticks) {
				/* born in the window: all it did is the window's */
				m->stat0.utime_ticks = m->stat0.stime_ticks = 0;
				m->vol0 = m->invol0 = 0;
				m->born_in_window = true;
			}
		}
		m->stat = st;
		m->vol = one.vol_switches;
		m->invol = one.invol_switches;
		if (has_io) {
			if (fresh || !m->has_io)
				m->io0 = m->born_in_window ? (struct procfs_io){ 0 } : io;
			m->io = io;
			m->has_io = true;
		}
		alive++;
		threads += st.threads;
		if (has_status) {
			sum.vm_rss += status.vm_rss;
			sum.rss_anon += status.rss_anon;
			sum.rss_file += status.rss_file;
			sum.rss_shmem += status.rss_shmem;
			sum.vm_swap += status.vm_swap;
			sum.vm_hwm += status.vm_hwm;
			all_split &= status.has_rss_split;
			all_swap &= status.has_swap;
		}
	}
	if (!alive)
		return -1;
	memset(&r->stat, 0, sizeof(r->stat));
	snprintf(r->stat.comm, sizeof(r->stat.comm), "%s", pp->comm);
	r->stat.threads = threads;
	r->vol_switches = r->invol_switches = 0;
	memset(&r->io, 0, sizeof(r->io));
	r->has_io = false;
	for (size_t i = 0; i < pp->n_members; i++) {
		const struct member *m = &pp->members[i];
		r->stat.utime_ticks += since(m->stat0.utime_ticks, m->stat.utime_ticks);
		r->stat.stime_ticks += since(m->stat0.stime_ticks, m->stat.stime_ticks);
		r->vol_switches += since(m->vol0, m->vol);
		r->invol_switches += since(m->invol0, m->invol);
		if (m->has_io) {
			r->has_io = true;
			r->io.rchar += since(m->io0.rchar, m->io.rchar);
			r->io.wchar += since(m->io0.wchar, m->io.wchar);
			r->io.syscr += since(m->io0.syscr, m->io.syscr);
			r->io.syscw += since(m->io0.syscw, m->io.syscw);
			r->io.read_bytes += since(m->io0.read_bytes, m->io.read_bytes);
			r->io.write_bytes += since(m->io0.write_bytes, m->io.write_bytes);
			r->io.cancelled_write_bytes += since(m->io0.cancelled_write_bytes, m->io.cancelled_write_bytes);
		}
	}
	sum.threads = threads;
	sum.has_rss = r->has_status = (pp->sections & SEC_MEMORY) != 0;
	sum.has_rss_split = all_split;
	sum.has_swap = all_swap;
	r->status = sum;
	r->has_smaps = false;
	return 0;
}

/* The process whose files stand for the target: the pid filter's, or a set's first one alive. */
static int reading_pid(const struct probe *p)
{
	if (p->cfg.filter.pid_set)
		return target_first_pid(p->cfg.filter.target);
	return p->cfg.filter.pid;
}

static int take_reading(struct probe *p, struct reading *r, bool full)
{
	struct proc_priv *pp = p->priv;
	int pid = reading_pid(p);
	char *text;
	memset(r, 0, sizeof(*r));
	if (pp->host)
		return take_host_reading(pp, r);
	text = read_pid_file(pid, "stat");
	int rc = text ? procfs_parse_stat(text, &r->stat) : -1;
	free(text);
	if (rc < 0 && !p->cfg.filter.pid_set) /* a set's first process gone: the others decide */
		return -1;
	if (pp->sections & SEC_CPU) {
		read_switches(pid, r);
		r->has_psi_cpu = read_psi("/proc/pressure/cpu", &r->psi_cpu);
		r->has_cpu_times = read_cpu_times(&r->cpu_times);
		read_cpu_cgroup(pp, r);
	}
	if (pp->sections & SEC_MEMORY) {
		text = read_pid_file(pid, "status");
		r->has_status = text && procfs_parse_status(text, &r->status) == 0 && r->status.has_rss;
		free(text);
		if (full) {
			/* it walks the address space under the process's lock: read where a
			 * target holding that lock cannot stall us (tfile.h) */
			struct diag_err ignore;
			text = tfile_read_proc(p->files, pid, "smaps_rollup", TFILE_MAX_TEXT_BYTES, NULL, &ignore);
			r->has_smaps = text && procfs_parse_smaps_rollup(text, &r->smaps) == 0;
			free(text);
		}
		r->has_psi_mem = read_psi("/proc/pressure/memory", &r->psi_mem);
		read_mem_cgroup(pp, &r->mcg);
	}
	if (pp->sections & SEC_IO) {
		text = read_pid_file(pid, "io");
		r->has_io = text && procfs_parse_io(text, &r->io) == 0;
		free(text);
		text = read_file("/proc/diskstats", NULL);
		r->n_disks = text ? procfs_parse_diskstats(text, r->disks, MAX_DISKS) : 0;
		free(text);
		r->has_psi_io = read_psi("/proc/pressure/io", &r->psi_io);
		read_io_cgroup(pp, r);
	}
	if (pp->sections & SEC_NET) {
		/* The target's network namespace, not ours. */
		text = read_pid_file(pid, "net/snmp");
		if (text)
			r->n_counters = procfs_parse_snmp(text, r->counters, MAX_COUNTERS);
		free(text);
		text = read_pid_file(pid, "net/netstat");
		if (text)
			r->n_counters += procfs_parse_snmp(text, r->counters + r->n_counters,
							   MAX_COUNTERS - r->n_counters);
		free(text);
		text = read_pid_file(pid, "net/dev");
		r->n_netdev = text ? procfs_parse_netdev(text, r->netdev, MAX_NETDEV) : 0;
		free(text);
		/* Per CPU, not per namespace: the host's backlog. */
		text = read_file("/proc/net/softnet_stat", NULL);
		r->has_softnet = text && procfs_parse_softnet(text, &r->softnet) > 0;
		free(text);
	}
	if (p->cfg.filter.pid_set && aggregate_set(p, r) < 0)
		return -1;
	r->at_ns = mono_ns();
	r->valid = true;
	return 0;
}

static void add_to_series(struct proc_priv *pp, const struct reading *r)
{
	double t = (double)(r->at_ns - pp->start.at_ns) / 1e9;
	pp->readings++;
	if (r->has_status)
		procfs_series_push(&pp->rss, t, (double)r->status.vm_rss);
	if (r->mcg.valid)
		procfs_series_push(&pp->cg_current, t, (double)r->mcg.current);
}

static void locate_cgroups(struct probe *p)
{
	struct proc_priv *pp = p->priv;
	char *text = read_pid_file(reading_pid(p), "cgroup");
	if (!text)
		return;
	/* Pure v2 mounts the unified hierarchy at /sys/fs/cgroup; hybrid hosts at .../unified. */
	const char *v2_root = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0
				      ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
	pp->cpu_cg_ok = procfs_cgroup_locate(text, "cpu", "/sys/fs/cgroup/cpu", v2_root,
					     &pp->cpu_cg) == 0 &&
			strcmp(pp->cpu_cg.path, "/") != 0; /* the root cgroup has no CPU limits */
	pp->mem_cg_ok = procfs_cgroup_locate(text, "memory", "/sys/fs/cgroup/memory", v2_root,
					     &pp->mem_cg) == 0;
	pp->io_cg_ok = procfs_cgroup_locate(text, "blkio", "/sys/fs/cgroup/blkio", v2_root,
					    &pp->io_cg) == 0;
	free(text);
	if (!pp->cpu_cg_ok)
		return;
	if (pp->cpu_cg.version == 2) {
		char *max = read_in(pp->cpu_cg.dir, "cpu.max");
		if (max) {
			snprintf(pp->cpu_max, sizeof(pp->cpu_max), "%.*s", (int)strcspn(max, "\n"), max);
			free(max);
		}
		return;
	}
	char *quota = read_in(pp->cpu_cg.dir, "cpu.cfs_quota_us");
	char *period = read_in(pp->cpu_cg.dir, "cpu.cfs_period_us");
	if (quota && period) {
		long long q = strtoll(quota, NULL, 10);
		unsigned long long per = strtoull(period, NULL, 10);
		if (q < 0)
			snprintf(pp->cpu_max, sizeof(pp->cpu_max), "max %llu", per);
		else
			snprintf(pp->cpu_max, sizeof(pp->cpu_max), "%lld %llu", q, per);
	}
	free(quota);
	free(period);
}

/* ---- probe operations --------------------------------------------------------------------- */

static int proc_load(struct probe *p, struct diag_err *err)
{
	struct proc_priv *pp = p->priv;
	const char *sections = probe_opt_str(p, "sections");
	pp->sections = parse_sections(sections ? sections : "cpu");
	if (!pp->sections)
		return diag_fail(err, DIAG_EXIT_USAGE, "proc_context: bad sections \"%s\"", sections);
	pp->host = p->cfg.filter.pid <= 0 && !p->cfg.filter.pid_set;
	pp->sections_text[0] = '\0';
	for (size_t i = 0; i < ARRAY_LEN(section_names); i++)
		if (pp->sections & (1u << i))
			snprintf(pp->sections_text + strlen(pp->sections_text),
				 sizeof(pp->sections_text) - strlen(pp->sections_text), "%s%s",
				 pp->sections_text[0] ? "," : "", section_names[i]);
	if (pp->host) {
		/* no target (a host-wide run of a `target: optional-pid` recipe) */
		pp->host = true;
		p->variant = "procfs";
		return 0;
	}
	int pid = reading_pid(p);
	char *text = read_pid_file(pid, "stat");
	int saved = errno;
	bool readable = text != NULL;
	struct procfs_stat st;
	int rc = text ? procfs_parse_stat(text, &st) : -1;
	free(text);
	/* The plan found the process: gone now means it exited before the collection started. */
	if (rc < 0 && !readable && saved == ENOENT)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d exited before collection started",
				 pid);
	if (rc < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d: %s", pid,
				 readable ? "unreadable /proc/PID/stat" : strerror(saved));
	snprintf(pp->comm, sizeof(pp->comm), "%s", st.comm);
	locate_cgroups(p);
	p->variant = "procfs";
	return 0;
}

static int proc_attach(struct probe *p, struct diag_err *err)
{
	struct proc_priv *pp = p->priv;
	if (take_reading(p, &pp->start, true) < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d exited before collection started",
				 reading_pid(p));
	pp->last = pp->start;
	add_to_series(pp, &pp->start);
	return 0;
}

static void proc_tick(struct probe *p)
{
	struct proc_priv *pp = p->priv;
	if (pp->exited || !pp->start.valid)
		return;
	if (take_reading(p, &pp->scratch, false) < 0) {
		pp->exited = true;
		return;
	}
	pp->last = pp->scratch;
	add_to_series(pp, &pp->last);
}

/* ---- results ------------------------------------------------------------------------------ */

static int64_t delta(uint64_t a, uint64_t b)
{
	return b >= a ? (int64_t)(b - a) : 0;
}

static int64_t gauge_delta(uint64_t a, uint64_t b)
{
	return (int64_t)b - (int64_t)a;
}

static struct value *pressure_value(const struct procfs_psi *a, const struct procfs_psi *b,
				    double wall)
{
	struct value *v = value_obj();
	double some, full;
	procfs_psi_window(a, b, wall, &some, &full);
	value_set_num(v, "some_pct", some);
	value_set_int(v, "some_total_us", delta(a->some_total_us, b->some_total_us));
	if (a->has_full && b->has_full) {
		value_set_num(v, "full_pct", full);
		value_set_int(v, "full_total_us", delta(a->full_total_us, b->full_total_us));
	}
	value_set_num(v, "some_avg10", b->some_avg10);
	value_set_num(v, "some_avg60", b->some_avg60);
	value_set_num(v, "full_avg10", b->full_avg10);
	return v;
}

static struct value *series_value(const struct procfs_series *s)
{
	struct value *arr = value_arr();
	for (size_t i = 0; i < s->n; i++) {
		struct value *pt = value_arr_push(arr, value_obj());
		value_set_num(pt, "t_s", s->t[i]);
		value_set_int(pt, "bytes", (int64_t)s->v[i]);
	}
	return arr;
}

static void cgroup_where(struct value *obj, const struct procfs_cgroup *cg)
{
	value_set_int(obj, "version", cg->version);
	value_set_str(obj, "path", cg->path);
	value_set_str(obj, "dir", cg->dir);
}

/* The machine's CPU time stolen by the hypervisor over the window, when /proc/stat tells. */
static void steal_result(const struct reading *a, const struct reading *b, struct value *res)
{
	double steal = a->has_cpu_times && b->has_cpu_times ? procfs_steal_pct(&a->cpu_times, &b->cpu_times) : -1;
	if (steal >= 0)
		value_set_num(res, "steal_pct", steal);
}

static void cpu_results(struct proc_priv *pp, const struct collect_ctx *ctx, const struct reading *a,
			const struct reading *b, double wall, struct value *res)
{
	long hz = sysconf(_SC_CLK_TCK);
	double ut = (double)delta(a->stat.utime_ticks, b->stat.utime_ticks) / (double)hz;
	double st = (double)delta(a->stat.stime_ticks, b->stat.stime_ticks) / (double)hz;
	double unscanned = 0;
	value_set_num(res, "utime_s", ut);
	value_set_num(res, "stime_s", st);
	if (pp->members) {
		unscanned = (double)ctx->set_unscanned_cpu_ns / 1e9;
		value_set_int(res, "unscanned_processes", (int64_t)ctx->set_unscanned);
		value_set_num(res, "unscanned_cpu_s", unscanned);
	}
	value_set_num(res, "cpu_pct", wall > 0 ? (ut + st + unscanned) / wall * 100.0 : 0);
	value_set_int(res, "voluntary_ctxt_switches", gauge_delta(a->vol_switches, b->vol_switches));
	value_set_int(res, "nonvoluntary_ctxt_switches",
		      gauge_delta(a->invol_switches, b->invol_switches));
	if (a->has_psi_cpu && b->has_psi_cpu)
		value_obj_set(res, "psi", pressure_value(&a->psi_cpu, &b->psi_cpu, wall));
	steal_result(a, b, res);
	if (a->has_cpu_stat && b->has_cpu_stat) {
		struct value *cg = value_obj_set(res, "cgroup", value_obj());
		cgroup_where(cg, &pp->cpu_cg);
		value_set_str(cg, "cpu_max", pp->cpu_max[0] ? pp->cpu_max : "max");
		value_set_int(cg, "nr_periods", delta(a->nr_periods, b->nr_periods));
		value_set_int(cg, "nr_throttled", delta(a->nr_throttled, b->nr_throttled));
		value_set_int(cg, "throttled_us", delta(a->throttled_us, b->throttled_us));
	}
}

static void memory_results(struct proc_priv *pp, const struct reading *a, const struct reading *b,
			   double wall, struct value *res)
{
	struct value *m = value_obj_set(res, "memory", value_obj());
	if (a->has_status && b->has_status) {
		const struct procfs_status *x = &a->status, *y = &b->status;
		value_set_int(m, "rss_bytes", (int64_t)y->vm_rss);
		value_set_int(m, "rss_delta_bytes", gauge_delta(x->vm_rss, y->vm_rss));
		if (x->has_rss_split && y->has_rss_split) {
			value_set_int(m, "rss_anon_bytes", (int64_t)y->rss_anon);
			value_set_int(m, "rss_file_bytes", (int64_t)y->rss_file);
			value_set_int(m, "rss_shmem_bytes", (int64_t)y->rss_shmem);
			value_set_int(m, "rss_anon_delta_bytes", gauge_delta(x->rss_anon, y->rss_anon));
			value_set_int(m, "rss_file_delta_bytes", gauge_delta(x->rss_file, y->rss_file));
			value_set_int(m, "rss_shmem_delta_bytes", gauge_delta(x->rss_shmem, y->rss_shmem));
		}
		if (x->has_swap && y->has_swap) {
			value_set_int(m, "swap_bytes", (int64_t)y->vm_swap);
			value_set_int(m, "swap_delta_bytes", gauge_delta(x->vm_swap, y->vm_swap));
		}
		value_set_int(m, "rss_peak_bytes", (int64_t)y->vm_hwm);
		double slope;
		if (procfs_slope(pp->rss.t, pp->rss.v, pp->rss.n, &slope))
			value_set_num(m, "rss_slope_bytes_per_s", slope);
		value_obj_set(m, "rss_series", series_value(&pp->rss));
		value_set_int(m, "series_stride", pp->rss.stride ? pp->rss.stride : 1);
	}
	if (a->has_smaps && b->has_smaps) {
		struct value *s = value_obj_set(m, "smaps_rollup", value_obj());
		for (int i = 0; i < SMAPS_N; i++) {
			if (!a->smaps.has[i] || !b->smaps.has[i])
				continue;
			const char *name = procfs_smaps_result_names[i];
			value_set_int(s, name, (int64_t)b->smaps.v[i]);
			char dname[64]; /* "pss_anon_bytes" -> "pss_anon_delta_bytes" */
			snprintf(dname, sizeof(dname), "%.*s_delta_bytes",
				 (int)(strlen(name) - strlen("_bytes")), name);
			value_set_int(s, dname, gauge_delta(a->smaps.v[i], b->smaps.v[i]));
		}
	}
	/* the machine's memory at the end: the limit when the cgroup has none */
	char *meminfo = read_file("/proc/meminfo", NULL);
	uint64_t kb;
	if (meminfo && procfs_key_u64(meminfo, "MemAvailable", &kb))
		value_set_int(m, "machine_available_bytes", (int64_t)kb);
	if (meminfo && procfs_key_u64(meminfo, "MemTotal", &kb))
		value_set_int(m, "machine_total_bytes", (int64_t)kb);
	free(meminfo);
	if (a->mcg.valid && b->mcg.valid) {
		const struct mem_cgroup_reading *x = &a->mcg, *y = &b->mcg;
		struct value *cg = value_obj_set(m, "cgroup", value_obj());
		cgroup_where(cg, &pp->mem_cg);
		value_set_int(cg, "current_bytes", (int64_t)y->current);
		value_set_int(cg, "current_delta_bytes", gauge_delta(x->current, y->current));
		double slope;
		if (procfs_slope(pp->cg_current.t, pp->cg_current.v, pp->cg_current.n, &slope))
			value_set_num(cg, "current_slope_bytes_per_s", slope);
		value_obj_set(cg, "current_series", series_value(&pp->cg_current));
		value_set_bool(cg, "limited", y->limited);
		if (y->limited)
			value_set_int(cg, "max_bytes", (int64_t)y->max);
		if (y->has_high && y->high_limited)
			value_set_int(cg, "high_bytes", (int64_t)y->high);
		if (x->has_stat && y->has_stat) {
			value_set_int(cg, "anon_bytes", (int64_t)y->anon);
			value_set_int(cg, "file_bytes", (int64_t)y->file);
			value_set_int(cg, "anon_delta_bytes", gauge_delta(x->anon, y->anon));
			value_set_int(cg, "file_delta_bytes", gauge_delta(x->file, y->file));
		}
		struct value *ev = value_obj_set(cg, "events", value_obj());
		if (pp->mem_cg.version == 2) {
			value_set_int(ev, "oom", delta(x->ev_oom, y->ev_oom));
			value_set_int(ev, "oom_kill", delta(x->ev_oom_kill, y->ev_oom_kill));
			value_set_int(ev, "high", delta(x->ev_high, y->ev_high));
			value_set_int(ev, "max", delta(x->ev_max, y->ev_max));
		} else {
			value_set_int(ev, "oom_kill", delta(x->ev_oom_kill, y->ev_oom_kill));
			value_set_int(cg, "failcnt", delta(x->failcnt, y->failcnt));
			value_set_bool(cg, "under_oom", y->under_oom != 0);
		}
	}
	if (a->has_psi_mem && b->has_psi_mem)
		value_obj_set(m, "pressure", pressure_value(&a->psi_mem, &b->psi_mem, wall));
}

static const struct procfs_disk *find_disk(const struct reading *r, unsigned major, unsigned minor)
{
	for (size_t i = 0; i < r->n_disks; i++)
		if (r->disks[i].major == major && r->disks[i].minor == minor)
			return &r->disks[i];
	return NULL;
}

static const struct procfs_cgio *find_cgio(const struct reading *r, unsigned major, unsigned minor)
{
	for (size_t i = 0; i < r->n_cgio; i++)
		if (r->cgio[i].major == major && r->cgio[i].minor == minor)
			return &r->cgio[i];
	return NULL;
}

static void io_results(struct proc_priv *pp, const struct reading *a, const struct reading *b,
		       double wall, struct value *res)
{
	struct value *io = value_obj_set(res, "io", value_obj());
	if (a->has_io && b->has_io) {
		const struct procfs_io *x = &a->io, *y = &b->io;
		value_set_int(io, "rchar", delta(x->rchar, y->rchar));
		value_set_int(io, "wchar", delta(x->wchar, y->wchar));
		value_set_int(io, "syscr", delta(x->syscr, y->syscr));
		value_set_int(io, "syscw", delta(x->syscw, y->syscw));
		value_set_int(io, "read_bytes", delta(x->read_bytes, y->read_bytes));
		value_set_int(io, "write_bytes", delta(x->write_bytes, y->write_bytes));
		value_set_int(io, "cancelled_write_bytes",
			      delta(x->cancelled_write_bytes, y->cancelled_write_bytes));
		value_set_num(io, "read_bytes_per_s",
			      wall > 0 ? (double)delta(x->read_bytes, y->read_bytes) / wall : 0);
		value_set_num(io, "write_bytes_per_s",
			      wall > 0 ? (double)delta(x->write_bytes, y->write_bytes) / wall : 0);
	}
	struct value *disks = value_obj_set(io, "disks", value_arr());
	for (size_t i = 0; i < b->n_disks; i++) {
		const struct procfs_disk *y = &b->disks[i], *x = find_disk(a, y->major, y->minor);
		if (!x)
			continue;
		struct procfs_iostat s;
		procfs_iostat(x, y, wall, &s);
		if (s.reads + s.writes == 0 && y->io_ticks == x->io_ticks && !y->ios_in_progress)
			continue; /* idle during the window */
		struct value *d = value_arr_push(disks, value_obj());
		value_set_str(d, "name", y->name);
		value_set_int(d, "major", y->major);
		value_set_int(d, "minor", y->minor);
		value_set_num(d, "r_s", s.r_s);
		value_set_num(d, "w_s", s.w_s);
		value_set_num(d, "rkb_s", s.rkb_s);
		value_set_num(d, "wkb_s", s.wkb_s);
		value_set_num(d, "rrqm_s", s.rrqm_s);
		value_set_num(d, "wrqm_s", s.wrqm_s);
		value_set_num(d, "r_await_ms", s.r_await_ms);
		value_set_num(d, "w_await_ms", s.w_await_ms);
		value_set_num(d, "rareq_kb", s.rareq_kb);
		value_set_num(d, "wareq_kb", s.wareq_kb);
		value_set_num(d, "aqu_sz", s.aqu_sz);
		value_set_num(d, "util_pct", s.util_pct);
		value_set_int(d, "reads", (int64_t)s.reads);
		value_set_int(d, "writes", (int64_t)s.writes);
		value_set_int(d, "read_bytes", (int64_t)s.read_bytes);
		value_set_int(d, "write_bytes", (int64_t)s.write_bytes);
	}
	if (a->has_cgio && b->has_cgio) {
		struct value *cg = value_obj_set(io, "cgroup", value_obj());
		cgroup_where(cg, &pp->io_cg);
		struct value *devs = value_arr();
		int64_t rb = 0, wb = 0, ri = 0, wi = 0;
		bool limited = false;
		for (size_t i = 0; i < b->n_cgio; i++) {
			const struct procfs_cgio *y = &b->cgio[i];
			const struct procfs_cgio *x = find_cgio(a, y->major, y->minor);
			struct procfs_cgio zero = { 0 };
			if (!x)
				x = &zero; /* first I/O of the cgroup on that device */
			struct value *d = value_arr_push(devs, value_obj());
			char dev[32];
			snprintf(dev, sizeof(dev), "%u:%u", y->major, y->minor);
			value_set_str(d, "dev", dev);
			const struct procfs_disk *disk = find_disk(b, y->major, y->minor);
			if (disk)
				value_set_str(d, "name", disk->name);
			value_set_int(d, "rbytes", delta(x->rbytes, y->rbytes));
			value_set_int(d, "wbytes", delta(x->wbytes, y->wbytes));
			value_set_int(d, "rios", delta(x->rios, y->rios));
			value_set_int(d, "wios", delta(x->wios, y->wios));
			/* limits: gauges, as set at the end of the window */
			if (y->rbps_max)
				value_set_int(d, "rbps_max", (int64_t)y->rbps_max);
			if (y->wbps_max)
				value_set_int(d, "wbps_max", (int64_t)y->wbps_max);
			if (y->riops_max)
				value_set_int(d, "riops_max", (int64_t)y->riops_max);
			if (y->wiops_max)
				value_set_int(d, "wiops_max", (int64_t)y->wiops_max);
			limited |= y->rbps_max || y->wbps_max || y->riops_max || y->wiops_max;
			rb += delta(x->rbytes, y->rbytes);
			wb += delta(x->wbytes, y->wbytes);
			ri += delta(x->rios, y->rios);
			wi += delta(x->wios, y->wios);
		}
		value_set_int(cg, "rbytes", rb);
		value_set_int(cg, "wbytes", wb);
		value_set_int(cg, "rios", ri);
		value_set_int(cg, "wios", wi);
		value_set_bool(cg, "limited", limited);
		value_obj_set(cg, "devices", devs);
	}
	if (a->has_psi_io && b->has_psi_io)
		value_obj_set(io, "pressure", pressure_value(&a->psi_io, &b->psi_io, wall));
}

/* The TCP/IP counters worth a delta: errors, drops, retransmits, resets, and the totals they
 * are a share of. */
static const char *const net_counters[] = {
	"Ip:InReceives", "Ip:InHdrErrors", "Ip:InAddrErrors", "Ip:InDiscards", "Ip:OutRequests",
	"Ip:OutDiscards", "Ip:OutNoRoutes", "Ip:ReasmFails", "Ip:FragFails",
	"Tcp:ActiveOpens", "Tcp:PassiveOpens", "Tcp:AttemptFails", "Tcp:EstabResets",
	"Tcp:InSegs", "Tcp:OutSegs", "Tcp:RetransSegs", "Tcp:InErrs", "Tcp:OutRsts",
	"Tcp:InCsumErrors",
	"Udp:InDatagrams", "Udp:OutDatagrams", "Udp:NoPorts", "Udp:InErrors", "Udp:RcvbufErrors",
	"Udp:SndbufErrors", "Udp:InCsumErrors",
	"TcpExt:ListenOverflows", "TcpExt:ListenDrops", "TcpExt:TCPTimeouts",
	"TcpExt:TCPLostRetransmit", "TcpExt:TCPFastRetrans", "TcpExt:TCPSlowStartRetrans",
	"TcpExt:TCPSynRetrans", "TcpExt:TCPRetransFail", "TcpExt:TCPAbortOnData",
	"TcpExt:TCPAbortOnClose", "TcpExt:TCPAbortOnMemory", "TcpExt:TCPAbortOnTimeout",
	"TcpExt:TCPAbortOnLinger", "TcpExt:TCPAbortFailed", "TcpExt:TCPMemoryPressures",
	"TcpExt:TCPBacklogDrop", "TcpExt:TCPRcvQDrop", "TcpExt:TCPZeroWindowDrop",
	"TcpExt:TCPOFODrop", "TcpExt:PruneCalled", "TcpExt:RcvPruned", "TcpExt:OfoPruned",
	"TcpExt:TCPReqQFullDrop", "TcpExt:TCPReqQFullDoCookies", "TcpExt:SyncookiesSent",
	"TcpExt:SyncookiesFailed", "TcpExt:EmbryonicRsts", "TcpExt:TCPSackFailures",
	"IpExt:InNoRoutes", "IpExt:InTruncatedPkts", "IpExt:InCsumErrors",
};

static void net_results(const struct reading *a, const struct reading *b, struct value *res)
{
	struct value *net = value_obj_set(res, "net", value_obj());
	struct value *counters = value_obj_set(net, "counters", value_obj());
	for (size_t i = 0; i < ARRAY_LEN(net_counters); i++) {
		char group[16];
		const char *colon = strchr(net_counters[i], ':');
		snprintf(group, sizeof(group), "%.*s", (int)(colon - net_counters[i]), net_counters[i]);
		const struct procfs_counter *x = procfs_counter_find(a->counters, a->n_counters, group,
								     colon + 1);
		const struct procfs_counter *y = procfs_counter_find(b->counters, b->n_counters, group,
								     colon + 1);
		if (!x || !y)
			continue; /* not in this kernel */
		struct value *g = (struct value *)value_get(counters, group);
		if (!g)
			g = value_obj_set(counters, group, value_obj());
		value_set_int(g, colon + 1, delta(x->value, y->value));
	}
	const struct value *tcp = value_get(counters, "Tcp");
	double out = value_get_num(tcp, "OutSegs", 0), retr = value_get_num(tcp, "RetransSegs", 0);
	if (tcp)
		value_set_num(net, "tcp_retrans_pct", out > 0 ? retr / out * 100.0 : 0);
	if (a->has_softnet && b->has_softnet) {
		struct value *sn = value_obj_set(net, "softnet", value_obj());
		value_set_int(sn, "processed", delta(a->softnet.processed, b->softnet.processed));
		value_set_int(sn, "dropped", delta(a->softnet.dropped, b->softnet.dropped));
		value_set_int(sn, "time_squeeze", delta(a->softnet.time_squeeze, b->softnet.time_squeeze));
	}
	struct value *ifs = value_obj_set(net, "interfaces", value_arr());
	for (size_t i = 0; i < b->n_netdev; i++) {
		const struct procfs_netdev *y = &b->netdev[i], *x = NULL;
		for (size_t j = 0; j < a->n_netdev && !x; j++)
			if (strcmp(a->netdev[j].name, y->name) == 0)
				x = &a->netdev[j];
		if (!x)
			continue;
		struct value *d = value_arr_push(ifs, value_obj());
		value_set_str(d, "name", y->name);
#define NETDEV_FIELD(f) value_set_int(d, #f, delta(x->f, y->f))
		NETDEV_FIELD(rx_bytes);
		NETDEV_FIELD(rx_packets);
		NETDEV_FIELD(rx_errs);
		NETDEV_FIELD(rx_drop);
		NETDEV_FIELD(rx_fifo);
		NETDEV_FIELD(rx_frame);
		NETDEV_FIELD(tx_bytes);
		NETDEV_FIELD(tx_packets);
		NETDEV_FIELD(tx_errs);
		NETDEV_FIELD(tx_drop);
		NETDEV_FIELD(tx_fifo);
		NETDEV_FIELD(tx_colls);
		NETDEV_FIELD(tx_carrier);
#undef NETDEV_FIELD
	}
}

static int proc_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct proc_priv *pp = p->priv;
	if (!pp->start.valid)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "no reading of process %d", reading_pid(p));
	/* The last reading of the window, with smaps_rollup this time. */
	if (!pp->exited) {
		if (take_reading(p, &pp->scratch, true) == 0) {
			pp->last = pp->scratch;
			add_to_series(pp, &pp->last);
		} else {
			pp->exited = true;
		}
	}
	const struct reading *a = &pp->start, *b = &pp->last;
	double wall = (double)(b->at_ns - a->at_ns) / 1e9;

	struct value *res = value_obj();
	if (pp->host) {
		value_set_bool(res, "host", true);
	} else {
		if (p->cfg.filter.pid_set)
			value_set_int(res, "processes", (int64_t)pp->n_members);
		else
			value_set_int(res, "pid", p->cfg.filter.pid);
		value_set_str(res, "comm", pp->comm);
		value_set_int(res, "threads", b->stat.threads);
	}
	value_set_str(res, "sections", pp->sections_text);
	value_set_num(res, "wall_s", wall);
	value_set_int(res, "ncpus", ctx->ncpus);
	value_set_bool(res, "exited", pp->exited);
	value_set_int(res, "readings", pp->readings);
	if ((pp->sections & SEC_CPU) && !pp->host)
		cpu_results(pp, ctx, a, b, wall, res);
	else if (pp->sections & SEC_CPU) {
		if (a->has_psi_cpu && b->has_psi_cpu)
			value_obj_set(res, "psi", pressure_value(&a->psi_cpu, &b->psi_cpu, wall));
		steal_result(a, b, res);
	}
	if (pp->sections & SEC_MEMORY)
		memory_results(pp, a, b, wall, res);
	if (pp->sections & SEC_IO)
		io_results(pp, a, b, wall, res);
	if (pp->sections & SEC_NET)
		net_results(a, b, res);
	*out = res;
	return 0;
}

/* ---- results declared (catalog.h: struct result_field) --------------------------------------- */

/* pressure_value's object under `name`. */
#define PRESSURE_FIELDS(name)                                                                     \
	{ name, RT_OBJECT, NULL, true, "pressure over the window (/proc/pressure/...)" },          \
	{ name ".some_pct", RT_NUMBER, "pct", false, "share of the window with some tasks stalled" }, \
	{ name ".full_pct", RT_NUMBER, "pct", true, "share of the window with all tasks stalled" },  \
	{ name ".some_total_us", RT_INTEGER, "us", false, "delta of the some total= counter" },     \
	{ name ".full_total_us", RT_INTEGER, "us", true, "delta of the full total= counter" },      \
	{ name ".some_avg10", RT_NUMBER, "pct", false, "context only: avg10 at the end" },          \
	{ name ".some_avg60", RT_NUMBER, "pct", false, "context only: avg60 at the end" },          \
	{ name ".full_avg10", RT_NUMBER, "pct", false, "context only: full avg10 at the end" }

/* cgroup_where's fields of a cgroup object `name`. */
#define CGROUP_WHERE_FIELDS(name)                                                                 \
	{ name ".version", RT_INTEGER, NULL, false, "cgroup version, 1 or 2" },                    \
	{ name ".path", RT_STRING, NULL, false, "the cgroup as /proc/PID/cgroup names it" },       \
	{ name ".dir", RT_STRING, NULL, false, "the directory read" }

/* series_value's array `name`. */
#define SERIES_FIELDS(name, opt, what)                                                            \
	{ name, RT_ARRAY, NULL, opt, what " at each reading (at most 512 points)" },                \
	{ name "[]", RT_OBJECT, NULL, false, "one reading" },                                       \
	{ name "[].t_s", RT_NUMBER, "s", false, "time since the first reading" },                    \
	{ name "[].bytes", RT_INTEGER, "bytes", false, "the value then" }

static const struct result_field proc_results[] = {
	{ "pid", RT_INTEGER, NULL, true, "the target (absent host-wide and for a set of processes)" },
	{ "processes", RT_INTEGER, "count", true, "a set of processes (--comm, --cgroup, ...): how many the figures add up" },
	{ "comm", RT_STRING, NULL, true, "the target's name (absent host-wide)" },
	{ "host", RT_BOOLEAN, NULL, true, "true when run without a target: host-wide files only" },
	{ "sections", RT_STRING, NULL, false, "the sections read, canonical order" },
	{ "threads", RT_INTEGER, "count", true, "threads at the end (absent host-wide)" },
	{ "wall_s", RT_NUMBER, "s", false, "the window: first to last reading" },
	{ "ncpus", RT_INTEGER, "count", false, "online CPUs" },
	{ "exited", RT_BOOLEAN, NULL, false, "the target exited during the window" },
	{ "readings", RT_INTEGER, "count", false, "good readings, first and last included" },
	/* cpu */
	{ "utime_s", RT_NUMBER, "s", true, "cpu: user CPU time in the window" },
	{ "stime_s", RT_NUMBER, "s", true, "cpu: system CPU time in the window" },
	{ "cpu_pct", RT_NUMBER, "pct", true, "cpu: (utime + stime + unscanned_cpu) / wall_s; 100 = one CPU" },
	{ "unscanned_processes", RT_INTEGER, "count", true,
	  "cpu, a set: processes that joined at fork and exited (or left at exec) before any reading saw them" },
	{ "unscanned_cpu_s", RT_NUMBER, "s", true, "cpu, a set: their CPU time (in cpu_pct)" },
	{ "voluntary_ctxt_switches", RT_INTEGER, "count", true, "cpu: summed over threads" },
	{ "nonvoluntary_ctxt_switches", RT_INTEGER, "count", true, "cpu: summed over threads" },
	PRESSURE_FIELDS("psi"),
	{ "steal_pct", RT_NUMBER, "pct", true,
	  "cpu: share of all CPUs' time the hypervisor stole over the window (/proc/stat steal; 0 on bare metal)" },
	{ "cgroup", RT_OBJECT, NULL, true, "cpu: the target's cpu cgroup (not the root one)" },
	CGROUP_WHERE_FIELDS("cgroup"),
	{ "cgroup.cpu_max", RT_STRING, NULL, false, "\"QUOTA PERIOD\" or \"max PERIOD\"" },
	{ "cgroup.nr_periods", RT_INTEGER, "count", false, "delta of cpu.stat nr_periods" },
	{ "cgroup.nr_throttled", RT_INTEGER, "count", false, "delta of cpu.stat nr_throttled" },
	{ "cgroup.throttled_us", RT_INTEGER, "us", false, "time throttled in the window" },
	/* memory */
	{ "memory", RT_OBJECT, NULL, true, "memory section" },
	{ "memory.rss_bytes", RT_INTEGER, "bytes", true, "VmRSS at the end" },
	{ "memory.machine_available_bytes", RT_INTEGER, "bytes", true, "the machine's MemAvailable at the end (/proc/meminfo)" },
	{ "memory.machine_total_bytes", RT_INTEGER, "bytes", true, "the machine's MemTotal" },
	{ "memory.rss_delta_bytes", RT_INTEGER, "bytes", true, "VmRSS change over the window" },
	{ "memory.rss_anon_bytes", RT_INTEGER, "bytes", true, "RssAnon at the end" },
	{ "memory.rss_anon_delta_bytes", RT_INTEGER, "bytes", true, "RssAnon change over the window" },
	{ "memory.rss_file_bytes", RT_INTEGER, "bytes", true, "RssFile at the end" },
	{ "memory.rss_file_delta_bytes", RT_INTEGER, "bytes", true, "RssFile change over the window" },
	{ "memory.rss_shmem_bytes", RT_INTEGER, "bytes", true, "RssShmem at the end" },
	{ "memory.rss_shmem_delta_bytes", RT_INTEGER, "bytes", true, "RssShmem change over the window" },
	{ "memory.swap_bytes", RT_INTEGER, "bytes", true, "VmSwap at the end" },
	{ "memory.swap_delta_bytes", RT_INTEGER, "bytes", true, "VmSwap change over the window" },
	{ "memory.rss_peak_bytes", RT_INTEGER, "bytes", true, "VmHWM" },
	{ "memory.rss_slope_bytes_per_s", RT_NUMBER, "bytes_per_s", true, "least-squares slope of rss_series" },
	SERIES_FIELDS("memory.rss_series", true, "VmRSS"),
	{ "memory.series_stride", RT_INTEGER, "count", true, "readings per point of the series" },
	{ "memory.smaps_rollup", RT_OBJECT, NULL, true, "/proc/PID/smaps_rollup at the end, first and last reading" },
	{ "memory.smaps_rollup.rss_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.rss_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.pss_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.pss_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.pss_anon_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.pss_anon_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.pss_file_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.pss_file_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.pss_shmem_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.pss_shmem_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.shared_clean_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.shared_clean_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.shared_dirty_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.shared_dirty_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.private_clean_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.private_clean_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.private_dirty_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.private_dirty_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.anonymous_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.anonymous_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.swap_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.swap_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.smaps_rollup.swap_pss_bytes", RT_INTEGER, "bytes", true, "at the end" },
	{ "memory.smaps_rollup.swap_pss_delta_bytes", RT_INTEGER, "bytes", true, "change over the window" },
	{ "memory.cgroup", RT_OBJECT, NULL, true, "the target's memory cgroup" },
	CGROUP_WHERE_FIELDS("memory.cgroup"),
	{ "memory.cgroup.current_bytes", RT_INTEGER, "bytes", false, "usage at the end" },
	{ "memory.cgroup.current_delta_bytes", RT_INTEGER, "bytes", false, "usage change over the window" },
	{ "memory.cgroup.current_slope_bytes_per_s", RT_NUMBER, "bytes_per_s", true, "least-squares slope of current_series" },
	SERIES_FIELDS("memory.cgroup.current_series", false, "usage"),
	{ "memory.cgroup.limited", RT_BOOLEAN, NULL, false, "a memory limit is set" },
	{ "memory.cgroup.max_bytes", RT_INTEGER, "bytes", true, "the limit, when limited" },
	{ "memory.cgroup.high_bytes", RT_INTEGER, "bytes", true, "v2 memory.high, when set" },
	{ "memory.cgroup.anon_bytes", RT_INTEGER, "bytes", true, "memory.stat anon at the end" },
	{ "memory.cgroup.anon_delta_bytes", RT_INTEGER, "bytes", true, "its change over the window" },
	{ "memory.cgroup.file_bytes", RT_INTEGER, "bytes", true, "memory.stat file at the end" },
	{ "memory.cgroup.file_delta_bytes", RT_INTEGER, "bytes", true, "its change over the window" },
	{ "memory.cgroup.events", RT_OBJECT, NULL, false, "memory events in the window" },
	{ "memory.cgroup.events.oom", RT_INTEGER, "count", true, "v2: delta of oom" },
	{ "memory.cgroup.events.oom_kill", RT_INTEGER, "count", false, "delta of oom_kill" },
	{ "memory.cgroup.events.high", RT_INTEGER, "count", true, "v2: delta of high" },
	{ "memory.cgroup.events.max", RT_INTEGER, "count", true, "v2: delta of max" },
	{ "memory.cgroup.failcnt", RT_INTEGER, "count", true, "v1: delta of memory.failcnt" },
	{ "memory.cgroup.under_oom", RT_BOOLEAN, NULL, true, "v1: memory.oom_control under_oom" },
	PRESSURE_FIELDS("memory.pressure"),
	/* io */
	{ "io", RT_OBJECT, NULL, true, "io section" },
	{ "io.rchar", RT_INTEGER, "bytes", true, "delta of /proc/PID/io rchar" },
	{ "io.wchar", RT_INTEGER, "bytes", true, "delta of /proc/PID/io wchar" },
	{ "io.syscr", RT_INTEGER, "count", true, "delta of /proc/PID/io syscr" },
	{ "io.syscw", RT_INTEGER, "count", true, "delta of /proc/PID/io syscw" },
	{ "io.read_bytes", RT_INTEGER, "bytes", true, "delta of /proc/PID/io read_bytes" },
	{ "io.write_bytes", RT_INTEGER, "bytes", true, "delta of /proc/PID/io write_bytes" },
	{ "io.cancelled_write_bytes", RT_INTEGER, "bytes", true, "delta of /proc/PID/io cancelled_write_bytes" },
	{ "io.read_bytes_per_s", RT_NUMBER, "bytes_per_s", true, "read_bytes over wall_s" },
	{ "io.write_bytes_per_s", RT_NUMBER, "bytes_per_s", true, "write_bytes over wall_s" },
	{ "io.disks", RT_ARRAY, NULL, false, "devices of /proc/diskstats with I/O in the window" },
	{ "io.disks[]", RT_OBJECT, NULL, false, "one device, as iostat -x computes it" },
	{ "io.disks[].name", RT_STRING, NULL, false, "device name" },
	{ "io.disks[].major", RT_INTEGER, NULL, false, "major number" },
	{ "io.disks[].minor", RT_INTEGER, NULL, false, "minor number" },
	{ "io.disks[].r_s", RT_NUMBER, "per_s", false, "reads completed per second" },
	{ "io.disks[].w_s", RT_NUMBER, "per_s", false, "writes completed per second" },
	{ "io.disks[].rkb_s", RT_NUMBER, "kb_per_s", false, "kB read per second" },
	{ "io.disks[].wkb_s", RT_NUMBER, "kb_per_s", false, "kB written per second" },
	{ "io.disks[].rrqm_s", RT_NUMBER, "per_s", false, "reads merged per second" },
	{ "io.disks[].wrqm_s", RT_NUMBER, "per_s", false, "writes merged per second" },
	{ "io.disks[].r_await_ms", RT_NUMBER, "ms", false, "average read time" },
	{ "io.disks[].w_await_ms", RT_NUMBER, "ms", false, "average write time" },
	{ "io.disks[].rareq_kb", RT_NUMBER, "kb", false, "average read size" },
	{ "io.disks[].wareq_kb", RT_NUMBER, "kb", false, "average write size" },
	{ "io.disks[].aqu_sz", RT_NUMBER, "count", false, "average queue length" },
	{ "io.disks[].util_pct", RT_NUMBER, "pct", false, "share of the window busy" },
	{ "io.disks[].reads", RT_INTEGER, "count", false, "reads in the window" },
	{ "io.disks[].writes", RT_INTEGER, "count", false, "writes in the window" },
	{ "io.disks[].read_bytes", RT_INTEGER, "bytes", false, "read bytes in the window" },
	{ "io.disks[].write_bytes", RT_INTEGER, "bytes", false, "write bytes in the window" },
	{ "io.cgroup", RT_OBJECT, NULL, true, "the target's io (v2) or blkio (v1) cgroup" },
	CGROUP_WHERE_FIELDS("io.cgroup"),
	{ "io.cgroup.rbytes", RT_INTEGER, "bytes", false, "delta, all devices" },
	{ "io.cgroup.wbytes", RT_INTEGER, "bytes", false, "delta, all devices" },
	{ "io.cgroup.rios", RT_INTEGER, "count", false, "delta, all devices" },
	{ "io.cgroup.wios", RT_INTEGER, "count", false, "delta, all devices" },
	{ "io.cgroup.devices", RT_ARRAY, NULL, false, "per device the cgroup did I/O on" },
	{ "io.cgroup.devices[]", RT_OBJECT, NULL, false, "one device" },
	{ "io.cgroup.devices[].dev", RT_STRING, NULL, false, "\"MAJ:MIN\"" },
	{ "io.cgroup.devices[].name", RT_STRING, NULL, true, "device name, when known" },
	{ "io.cgroup.devices[].rbytes", RT_INTEGER, "bytes", false, "delta on this device" },
	{ "io.cgroup.devices[].wbytes", RT_INTEGER, "bytes", false, "delta on this device" },
	{ "io.cgroup.devices[].rios", RT_INTEGER, "count", false, "delta on this device" },
	{ "io.cgroup.devices[].wios", RT_INTEGER, "count", false, "delta on this device" },
	{ "io.cgroup.limited", RT_BOOLEAN, NULL, true, "an I/O limit is set on some device (io.max, blkio.throttle.*); absent in reports from before limits were read" },
	{ "io.cgroup.devices[].rbps_max", RT_INTEGER, "bytes_per_s", true, "read bytes/s limit, when set" },
	{ "io.cgroup.devices[].wbps_max", RT_INTEGER, "bytes_per_s", true, "write bytes/s limit, when set" },
	{ "io.cgroup.devices[].riops_max", RT_INTEGER, "per_s", true, "read IOPS limit, when set" },
	{ "io.cgroup.devices[].wiops_max", RT_INTEGER, "per_s", true, "write IOPS limit, when set" },
	PRESSURE_FIELDS("io.pressure"),
	/* net */
	{ "net", RT_OBJECT, NULL, true, "net section (the target's network namespace)" },
	{ "net.counters", RT_OBJECT, NULL, false, "TCP/IP counters by group (Ip, Tcp, Udp, TcpExt, IpExt)" },
	{ "net.counters.*", RT_OBJECT, NULL, true, "one group of /proc/PID/net/snmp or netstat" },
	{ "net.counters.*.*", RT_INTEGER, "count", true, "delta of the counter of that kernel name" },
	{ "net.tcp_retrans_pct", RT_NUMBER, "pct", true, "RetransSegs / OutSegs over the window" },
	{ "net.softnet", RT_OBJECT, NULL, true, "/proc/net/softnet_stat summed over CPUs (the host's, not per namespace)" },
	{ "net.softnet.processed", RT_INTEGER, "count", false, "packets processed, delta over the window" },
	{ "net.softnet.dropped", RT_INTEGER, "count", false, "packets dropped: a CPU's backlog was full (netdev_max_backlog)" },
	{ "net.softnet.time_squeeze", RT_INTEGER, "count", false, "times packet processing ran out of budget with work left" },
	{ "net.interfaces", RT_ARRAY, NULL, false, "per interface of /proc/PID/net/dev" },
	{ "net.interfaces[]", RT_OBJECT, NULL, false, "one interface" },
	{ "net.interfaces[].name", RT_STRING, NULL, false, "interface name" },
	{ "net.interfaces[].rx_bytes", RT_INTEGER, "bytes", false, "delta over the window" },
	{ "net.interfaces[].rx_packets", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].rx_errs", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].rx_drop", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].rx_fifo", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].rx_frame", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].tx_bytes", RT_INTEGER, "bytes", false, "delta over the window" },
	{ "net.interfaces[].tx_packets", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].tx_errs", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].tx_drop", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].tx_fifo", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].tx_colls", RT_INTEGER, "count", false, "delta over the window" },
	{ "net.interfaces[].tx_carrier", RT_INTEGER, "count", false, "delta over the window" },
};
/* No BPF: /proc and cgroupfs only. */
static const char *const proc_features[] = { NULL };

static void proc_destroy(struct probe *p)
{
	struct proc_priv *pp = p->priv;
	free(pp->members);
	pp->members = NULL;
	pp->n_members = 0;
}
static struct bpf_object *proc_object(struct probe *p) { (void)p; return NULL; }

const struct probe_kind probe_kind_proc_context = {
	.name = "proc_context",
	.context_only = true,
	.summary = "The target's CPU, memory, I/O and network over the window, and its cgroup's "
		   "(/proc, cgroupfs; sections chosen by the recipe)",
	.options = proc_options,
	.n_options = ARRAY_LEN(proc_options),
	.filters = FILTER_PID,
	.variants = proc_variants,
	.private_size = sizeof(struct proc_priv),
	.results = proc_results,
	.n_results = ARRAY_LEN(proc_results),
	.features = proc_features,
	.load = proc_load,
	.attach = proc_attach,
	.tick = proc_tick,
	.collect = proc_collect,
	.destroy = proc_destroy,
	.object = proc_object,
};
