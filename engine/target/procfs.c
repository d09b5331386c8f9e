/* procfs.c — pure parsers of /proc and cgroupfs text, iostat arithmetic, pressure over a window,
 * bounded time series and their slope (see procfs.h for the contract of each function).
 *
 * Owns: the text formats of the kernel files the /proc sampler reads, and the arithmetic on two
 * readings.
 * Must not: open files, allocate, print, or know about probes and results.
 *
 * Why one file (~900 lines): pure parsers, no state, nothing shared between sections but the
 * key-value helpers: every kernel text format the samplers rely on is in one place, beside one
 * unit test (tests/unit/test_proc_sampler.c) that feeds each its recorded text.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/procfs.h"

/* ---- generic "key value" lines ----------------------------------------------------------- */

bool procfs_key_u64(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		if (strncmp(line, key, klen) == 0 &&
		    (line[klen] == ':' || line[klen] == ' ' || line[klen] == '\t')) {
			const char *p = line + klen + (line[klen] == ':');
			while (*p == ' ' || *p == '\t')
				p++;
			if (!isdigit((unsigned char)*p))
				return false;
			char *end;
			uint64_t v = strtoull(p, &end, 10);
			while (*end == ' ' || *end == '\t')
				end++;
			if (strncmp(end, "kB", 2) == 0)
				v *= 1024;
			*out = v;
			return true;
		}
		line = next ? next + 1 : NULL;
	}
	return false;
}

static uint64_t key_or_zero(const char *text, const char *key, bool *has)
{
	uint64_t v = 0;
	bool found = procfs_key_u64(text, key, &v);
	if (has)
		*has = found;
	return found ? v : 0;
}

/* ---- /proc/PID/stat, status, smaps_rollup, io -------------------------------------------- */

char *procfs_next_line(char **cursor)
{
	char *line = *cursor;
	if (!line || !*line)
		return NULL;
	char *nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*cursor = nl + 1;
	} else {
		*cursor = line + strlen(line);
	}
	return line;
}

int procfs_parse_maps_line(const char *line, struct procfs_maps_line *out)
{
	unsigned long long start, end, off, ino;
	char perms[8];
	int n = 0;
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &out->major,
		   &out->minor, &ino, &n) < 7 || !n || end <= start)
		return -1;
	out->start = start;
	out->end = end;
	out->offset = off;
	out->inode = ino;
	out->exec = strchr(perms, 'x') != NULL;
	out->read = perms[0] == 'r';
	out->write = perms[0] && perms[1] == 'w';
	out->shared = strchr(perms, 's') != NULL;
	out->path = line + n;
	return 0;
}

int procfs_parse_stat(const char *text, struct procfs_stat *out)
{
	memset(out, 0, sizeof(*out));
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	if (!open || !close || close < open || close[1] != ' ')
		return -1;
	size_t len = (size_t)(close - open - 1);
	if (len >= sizeof(out->comm))
		len = sizeof(out->comm) - 1;
	memcpy(out->comm, open + 1, len);
	out->comm[len] = '\0';
	/* Fields after ")": 3 state ... 14 utime 15 stime ... 20 num_threads ... 22 starttime. */
	const char *p = close + 2;
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			return -1;
		if (field == 3)
			out->state = *p;
		else if (field == 4)
			out->ppid = (int)strtol(p, NULL, 10);
		else if (field == 14)
			out->utime_ticks = strtoull(p, NULL, 10);
		else if (field == 15)
			out->stime_ticks = strtoull(p, NULL, 10);
		else if (field == 20)
			out->threads = strtol(p, NULL, 10);
		else if (field == 22)
			out->start_ticks = strtoull(p, NULL, 10);
		p += strcspn(p, " \n");
	}
	return 0;
}

int procfs_parse_status(const char *text, struct procfs_status *out)
{
	memset(out, 0, sizeof(*out));
	bool anon, file;
	out->vm_rss = key_or_zero(text, "VmRSS", &out->has_rss);
	out->rss_anon = key_or_zero(text, "RssAnon", &anon);
	out->rss_file = key_or_zero(text, "RssFile", &file);
	out->rss_shmem = key_or_zero(text, "RssShmem", NULL);
	out->has_rss_split = anon && file;
	out->vm_swap = key_or_zero(text, "VmSwap", &out->has_swap);
	out->vm_hwm = key_or_zero(text, "VmHWM", NULL);
	out->vol_switches = key_or_zero(text, "voluntary_ctxt_switches", NULL);
	out->invol_switches = key_or_zero(text, "nonvoluntary_ctxt_switches", NULL);
	out->threads = (long)key_or_zero(text, "Threads", NULL);
	return strncmp(text, "Name:", 5) == 0 ? 0 : -1;
}

const char *const procfs_smaps_kernel_names[SMAPS_N] = {
	[SMAPS_RSS] = "Rss", [SMAPS_PSS] = "Pss", [SMAPS_PSS_ANON] = "Pss_Anon",
	[SMAPS_PSS_FILE] = "Pss_File", [SMAPS_PSS_SHMEM] = "Pss_Shmem",
	[SMAPS_SHARED_CLEAN] = "Shared_Clean", [SMAPS_SHARED_DIRTY] = "Shared_Dirty",
	[SMAPS_PRIVATE_CLEAN] = "Private_Clean", [SMAPS_PRIVATE_DIRTY] = "Private_Dirty",
	[SMAPS_ANONYMOUS] = "Anonymous", [SMAPS_SWAP] = "Swap", [SMAPS_SWAP_PSS] = "SwapPss",
};
const char *const procfs_smaps_result_names[SMAPS_N] = {
	[SMAPS_RSS] = "rss_bytes", [SMAPS_PSS] = "pss_bytes", [SMAPS_PSS_ANON] = "pss_anon_bytes",
	[SMAPS_PSS_FILE] = "pss_file_bytes", [SMAPS_PSS_SHMEM] = "pss_shmem_bytes",
	[SMAPS_SHARED_CLEAN] = "shared_clean_bytes", [SMAPS_SHARED_DIRTY] = "shared_dirty_bytes",
	[SMAPS_PRIVATE_CLEAN] = "private_clean_bytes", [SMAPS_PRIVATE_DIRTY] = "private_dirty_bytes",
	[SMAPS_ANONYMOUS] = "anonymous_bytes", [SMAPS_SWAP] = "swap_bytes",
	[SMAPS_SWAP_PSS] = "swap_pss_bytes",
};

int procfs_parse_smaps_rollup(const char *text, struct procfs_smaps *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < SMAPS_N; i++)
		out->v[i] = key_or_zero(text, procfs_smaps_kernel_names[i], &out->has[i]);
	return out->has[SMAPS_RSS] ? 0 : -1;
}

int procfs_parse_io(const char *text, struct procfs_io *out)
{
	memset(out, 0, sizeof(*out));
	bool has;
	out->rchar = key_or_zero(text, "rchar", &has);
	if (!has)
		return -1;
	out->wchar = key_or_zero(text, "wchar", NULL);
	out->syscr = key_or_zero(text, "syscr", NULL);
	out->syscw = key_or_zero(text, "syscw", NULL);
	out->read_bytes = key_or_zero(text, "read_bytes", NULL);
	out->write_bytes = key_or_zero(text, "write_bytes", NULL);
	out->cancelled_write_bytes = key_or_zero(text, "cancelled_write_bytes", NULL);
	return 0;
}

/* ---- pressure ----------------------------------------------------------------------------- */

static bool psi_line(const char *line, double *avg10, double *avg60, uint64_t *total)
{
	unsigned long long t;
	if (sscanf(line, "avg10=%lf avg60=%lf avg300=%*f total=%llu", avg10, avg60, &t) != 3)
		return false;
	*total = t;
	return true;
}

int procfs_parse_psi(const char *text, struct procfs_psi *out)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(text, "some ", 5) != 0 ||
	    !psi_line(text + 5, &out->some_avg10, &out->some_avg60, &out->some_total_us))
		return -1;
	const char *full = strstr(text, "\nfull ");
	if (full)
		out->has_full = psi_line(full + 6, &out->full_avg10, &out->full_avg60, &out->full_total_us);
	return 0;
}

static double clamp_pct(double x)
{
	return x < 0 ? 0 : x > 100 ? 100 : x;
}

void procfs_psi_window(const struct procfs_psi *a, const struct procfs_psi *b, double wall_s,
		       double *some_pct, double *full_pct)
{
	*some_pct = *full_pct = 0;
	if (wall_s <= 0)
		return;
	if (b->some_total_us >= a->some_total_us)
		*some_pct = clamp_pct((double)(b->some_total_us - a->some_total_us) / (wall_s * 1e6) * 100);
	if (a->has_full && b->has_full && b->full_total_us >= a->full_total_us)
		*full_pct = clamp_pct((double)(b->full_total_us - a->full_total_us) / (wall_s * 1e6) * 100);
}

/* ---- /proc/stat: the machine's CPU time, steal included -------------------------------------- */

int procfs_parse_cpu_times(const char *text, struct procfs_cpu_times *out)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(text, "cpu ", 4) != 0)
		return -1;
	const char *p = text + 4;
	uint64_t v[8];
	int n = 0;
	while (n < 8) {
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			break;
		char *end;
		errno = 0;
		unsigned long long x = strtoull(p, &end, 10);
		if (errno || end == p)
			return -1;
		v[n++] = x;
		p = end;
	}
	if (n < 4) /* user nice system idle: every kernel has them */
		return -1;
	for (int i = 0; i < n; i++)
		out->total_ticks += v[i];
	out->idle_ticks = v[3] + (n > 4 ? v[4] : 0); /* idle + iowait */
	out->has_steal = n >= 8;
	out->steal_ticks = out->has_steal ? v[7] : 0;
	return 0;
}

double procfs_steal_pct(const struct procfs_cpu_times *a, const struct procfs_cpu_times *b)
{
	if (!a->has_steal || !b->has_steal || b->total_ticks <= a->total_ticks ||
	    b->steal_ticks < a->steal_ticks)
		return -1;
	return clamp_pct((double)(b->steal_ticks - a->steal_ticks) /
			 (double)(b->total_ticks - a->total_ticks) * 100);
}

/* ---- /proc/diskstats and iostat -x --------------------------------------------------------- */

size_t procfs_parse_diskstats(const char *text, struct procfs_disk *out, size_t max)
{
	size_t n = 0;
	for (const char *line = text; line && *line && n < max;) {
		const char *next = strchr(line, '\n');
		struct procfs_disk d = { 0 };
		unsigned long long f[11];
		char name[32];
		if (sscanf(line, "%u %u %31s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &d.major, &d.minor, name, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6],
			   &f[7], &f[8], &f[9], &f[10]) == 14) {
			snprintf(d.name, sizeof(d.name), "%s", name);
			d.rd_ios = f[0], d.rd_merges = f[1], d.rd_sectors = f[2], d.rd_ticks = f[3];
			d.wr_ios = f[4], d.wr_merges = f[5], d.wr_sectors = f[6], d.wr_ticks = f[7];
			d.ios_in_progress = f[8], d.io_ticks = f[9], d.time_in_queue = f[10];
			out[n++] = d;
		}
		line = next ? next + 1 : NULL;
	}
	return n;
}

/* Counter deltas; a counter that went backwards (device re-added) counts as 0. */
static uint64_t d64(uint64_t a, uint64_t b)
{
	return b >= a ? b - a : 0;
}

void procfs_iostat(const struct procfs_disk *a, const struct procfs_disk *b, double itv_s,
		   struct procfs_iostat *o)
{
	memset(o, 0, sizeof(*o));
	uint64_t rd = d64(a->rd_ios, b->rd_ios), wr = d64(a->wr_ios, b->wr_ios);
	uint64_t rsec = d64(a->rd_sectors, b->rd_sectors), wsec = d64(a->wr_sectors, b->wr_sectors);
	o->reads = rd;
	o->writes = wr;
	o->read_bytes = rsec * 512;
	o->write_bytes = wsec * 512;
	/* Per-request figures do not depend on the interval. */
	o->r_await_ms = rd ? (double)d64(a->rd_ticks, b->rd_ticks) / (double)rd : 0;
	o->w_await_ms = wr ? (double)d64(a->wr_ticks, b->wr_ticks) / (double)wr : 0;
	o->rareq_kb = rd ? (double)rsec / 2.0 / (double)rd : 0;
	o->wareq_kb = wr ? (double)wsec / 2.0 / (double)wr : 0;
	if (itv_s <= 0)
		return;
	o->r_s = (double)rd / itv_s;
	o->w_s = (double)wr / itv_s;
	o->rkb_s = (double)rsec / 2.0 / itv_s;
	o->wkb_s = (double)wsec / 2.0 / itv_s;
	o->rrqm_s = (double)d64(a->rd_merges, b->rd_merges) / itv_s;
	o->wrqm_s = (double)d64(a->wr_merges, b->wr_merges) / itv_s;
	/* time_in_queue and io_ticks are milliseconds: per second of wall, /1000. */
	o->aqu_sz = (double)d64(a->time_in_queue, b->time_in_queue) / (itv_s * 1000.0);
	o->util_pct = clamp_pct((double)d64(a->io_ticks, b->io_ticks) / (itv_s * 1000.0) * 100.0);
}

/* ---- /proc/net/snmp, /proc/net/netstat, /proc/net/dev ------------------------------------ */

size_t procfs_parse_snmp(const char *text, struct procfs_counter *out, size_t max)
{
	size_t n = 0;
	const char *line = text;
	while (line && *line && n < max) {
		const char *nl1 = strchr(line, '\n');
		if (!nl1)
			break;
		const char *vals = nl1 + 1, *nl2 = strchr(vals, '\n');
		size_t glen = strcspn(line, ":\n");
		/* The value line must carry the same "Group:" prefix as the names line. */
		if (line[glen] != ':' || glen == 0 || glen >= sizeof(out->group) ||
		    strncmp(vals, line, glen + 1) != 0) {
			line = vals;
			continue;
		}
		const char *np = line + glen + 1, *vp = vals + glen + 1;
		const char *nend = nl1, *vend = nl2 ? nl2 : vals + strlen(vals);
		while (n < max) {
			while (np < nend && *np == ' ')
				np++;
			while (vp < vend && *vp == ' ')
				vp++;
			if (np >= nend || vp >= vend)
				break;
			size_t nlen = strcspn(np, " \n"), vlen = strcspn(vp, " \n");
			struct procfs_counter *c = &out[n++];
			memcpy(c->group, line, glen);
			c->group[glen] = '\0';
			size_t cl = nlen < sizeof(c->name) ? nlen : sizeof(c->name) - 1;
			memcpy(c->name, np, cl);
			c->name[cl] = '\0';
			c->value = *vp == '-' ? 0 : strtoull(vp, NULL, 10);
			np += nlen;
			vp += vlen;
		}
		line = nl2 ? nl2 + 1 : NULL;
	}
	return n;
}

const struct procfs_counter *procfs_counter_find(const struct procfs_counter *c, size_t n,
						 const char *group, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].group, group) == 0 && strcmp(c[i].name, name) == 0)
			return &c[i];
	return NULL;
}

size_t procfs_parse_netdev(const char *text, struct procfs_netdev *out, size_t max)
{
	size_t n = 0;
	for (const char *line = text; line && *line && n < max;) {
		const char *next = strchr(line, '\n');
		const char *colon = strchr(line, ':');
		if (colon && (!next || colon < next)) { /* the two header lines have no ':' */
			const char *name = line;
			while (*name == ' ')
				name++;
			size_t len = (size_t)(colon - name);
			unsigned long long f[16];
			if (len > 0 && len < sizeof(out->name) &&
			    sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
				   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9],
				   &f[10], &f[11], &f[12], &f[13], &f[14], &f[15]) == 16) {
				struct procfs_netdev *d = &out[n++];
				memset(d, 0, sizeof(*d));
				memcpy(d->name, name, len);
				d->name[len] = '\0';
				d->rx_bytes = f[0], d->rx_packets = f[1], d->rx_errs = f[2];
				d->rx_drop = f[3], d->rx_fifo = f[4], d->rx_frame = f[5];
				d->tx_bytes = f[8], d->tx_packets = f[9], d->tx_errs = f[10];
				d->tx_drop = f[11], d->tx_fifo = f[12], d->tx_colls = f[13];
				d->tx_carrier = f[14];
			}
		}
		line = next ? next + 1 : NULL;
	}
	return n;
}

size_t procfs_parse_softnet(const char *text, struct procfs_softnet *out)
{
	size_t n = 0;
	memset(out, 0, sizeof(*out));
	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		unsigned long long processed, dropped, squeezed;
		if (sscanf(line, "%llx %llx %llx", &processed, &dropped, &squeezed) == 3) {
			out->processed += processed;
			out->dropped += dropped;
			out->time_squeeze += squeezed;
			n++;
		}
		line = next ? next + 1 : NULL;
	}
	return n;
}

/* ---- cgroups ------------------------------------------------------------------------------ */

/* Whether the comma-separated list [s, s+len) contains word. */
static bool list_has(const char *s, size_t len, const char *word)
{
	size_t wlen = strlen(word);
	for (const char *p = s, *end = s + len; p < end;) {
		size_t l = strcspn(p, ",");
		if (p + l > end)
			l = (size_t)(end - p);
		if (l == wlen && strncmp(p, word, wlen) == 0)
			return true;
		p += l + 1;
	}
	return false;
}

int procfs_cgroup_locate(const char *text, const char *controller, const char *v1_root,
			 const char *v2_root, struct procfs_cgroup *out)
{
	memset(out, 0, sizeof(*out));
	const char *v2 = NULL;
	size_t v2len = 0;
	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		size_t llen = next ? (size_t)(next - line) : strlen(line);
		const char *c1 = memchr(line, ':', llen);
		const char *c2 = c1 ? memchr(c1 + 1, ':', llen - (size_t)(c1 + 1 - line)) : NULL;
		if (c2) {
			const char *path = c2 + 1;
			size_t plen = llen - (size_t)(path - line);
			if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
				v2 = path, v2len = plen;
			} else if (list_has(c1 + 1, (size_t)(c2 - c1 - 1), controller) &&
				   plen < sizeof(out->path)) {
				out->version = 1;
				memcpy(out->path, path, plen);
				out->path[plen] = '\0';
				snprintf(out->dir, sizeof(out->dir), "%s%s", v1_root,
					 strcmp(out->path, "/") == 0 ? "" : out->path);
				return 0;
			}
		}
		line = next ? next + 1 : NULL;
	}
	if (!v2 || v2len >= sizeof(out->path))
		return -1;
	out->version = 2;
	memcpy(out->path, v2, v2len);
	out->path[v2len] = '\0';
	snprintf(out->dir, sizeof(out->dir), "%s%s", v2_root,
		 strcmp(out->path, "/") == 0 ? "" : out->path);
	return 0;
}

/* The mount point of the cgroup hierarchy whose controllers (v1: "cpu,cpuacct",
 * "name=systemd"; NULL: the v2 hierarchy) are ctl[0..ctl_len), mounted whole, into mnt. */
static bool cgroup_mount_of(const char *mountinfo, const char *ctl, size_t ctl_len, char *mnt,
			    size_t len)
{
	for (const char *line = mountinfo; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t n = eol ? (size_t)(eol - line) : strlen(line);
		char buf[4096], root[256], point[256], fstype[16], source[64], super[1024];
		if (n < sizeof(buf)) {
			memcpy(buf, line, n);
			buf[n] = '\0';
			char *sep = strstr(buf, " - ");
			int got = sep ? sscanf(sep + 3, "%15s %63s %1023s", fstype, source, super) : 0;
			if (got >= 2 && sscanf(buf, "%*s %*s %*s %255s %255s", root, point) == 2 &&
			    !strcmp(root, "/") && strlen(point) < len) {
				bool match = false;
				if (!ctl)
					match = !strcmp(fstype, "cgroup2");
				else if (!strcmp(fstype, "cgroup") && got == 3) {
					match = ctl_len > 0;
					for (const char *c = ctl, *end = ctl + ctl_len; match && c < end;) {
						size_t l = strcspn(c, ",");
						l = c + l > end ? (size_t)(end - c) : l;
						char word[128];
						if (l >= sizeof(word))
							return false;
						memcpy(word, c, l);
						word[l] = '\0';
						match = list_has(super, strlen(super), word);
						c += l + 1;
					}
				}
				if (match) {
					snprintf(mnt, len, "%s", point);
					return true;
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return false;
}

int procfs_cgroup_dirs(const char *mountinfo, const char *proc_cgroup, struct procfs_cgroup_dir *out,
		       size_t max)
{
	size_t k = 0;
	for (const char *line = proc_cgroup; line && *line && k < max;) {
		const char *next = strchr(line, '\n');
		size_t llen = next ? (size_t)(next - line) : strlen(line);
		const char *c1 = memchr(line, ':', llen);
		const char *c2 = c1 ? memchr(c1 + 1, ':', llen - (size_t)(c1 + 1 - line)) : NULL;
		if (!c2 || c2[1] != '/')
			return llen ? -1 : (int)k;
		const char *path = c2 + 1;
		size_t plen = llen - (size_t)(path - line), clen = (size_t)(c2 - c1 - 1);
		if (plen >= sizeof(out[k].path))
			return -1;
		bool v2 = c1 - line == 1 && line[0] == '0' && clen == 0;
		if (cgroup_mount_of(mountinfo, v2 ? NULL : c1 + 1, clen, out[k].mount,
				    sizeof(out[k].mount))) {
			memcpy(out[k].path, path, plen);
			out[k].path[plen] = '\0';
			k++;
		}
		line = next ? next + 1 : NULL;
	}
	return (int)k;
}

int procfs_parse_limit(const char *text, uint64_t *bytes, bool *unlimited)
{
	*bytes = 0;
	*unlimited = false;
	if (strncmp(text, "max", 3) == 0 && (text[3] == '\n' || text[3] == '\0')) {
		*unlimited = true;
		return 0;
	}
	if (!isdigit((unsigned char)*text))
		return -1;
	*bytes = strtoull(text, NULL, 10);
	*unlimited = *bytes >= (1ull << 62);
	return 0;
}

static struct procfs_cgio *cgio_slot(struct procfs_cgio *out, size_t *n, size_t max,
				     unsigned major, unsigned minor)
{
	for (size_t i = 0; i < *n; i++)
		if (out[i].major == major && out[i].minor == minor)
			return &out[i];
	if (*n >= max)
		return NULL;
	struct procfs_cgio *c = &out[(*n)++];
	memset(c, 0, sizeof(*c));
	c->major = major;
	c->minor = minor;
	return c;
}

size_t procfs_parse_io_stat(const char *text, struct procfs_cgio *out, size_t max)
{
	size_t n = 0;
	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		unsigned major, minor;
		int used = 0;
		if (sscanf(line, "%u:%u%n", &major, &minor, &used) == 2) {
			struct procfs_cgio *c = cgio_slot(out, &n, max, major, minor);
			if (!c)
				break;
			const char *end = next ? next : line + strlen(line);
			for (const char *p = line + used; p < end;) {
				while (p < end && *p == ' ')
					p++;
				const char *eq = memchr(p, '=', (size_t)(end - p));
				if (!eq)
					break;
				uint64_t v = strtoull(eq + 1, NULL, 10);
				size_t klen = (size_t)(eq - p);
				if (klen == 6 && strncmp(p, "rbytes", 6) == 0)
					c->rbytes = v;
				else if (klen == 6 && strncmp(p, "wbytes", 6) == 0)
					c->wbytes = v;
				else if (klen == 4 && strncmp(p, "rios", 4) == 0)
					c->rios = v;
				else if (klen == 4 && strncmp(p, "wios", 4) == 0)
					c->wios = v;
				p = eq + 1 + strcspn(eq + 1, " \n");
			}
		}
		line = next ? next + 1 : NULL;
	}
	return n;
}

static void blkio_v1_lines(const char *text, struct procfs_cgio *out, size_t *n, size_t max,
			   bool bytes)
{
	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		unsigned major, minor;
		char op[16];
		unsigned long long v;
		if (sscanf(line, "%u:%u %15s %llu", &major, &minor, op, &v) == 4) {
			struct procfs_cgio *c = cgio_slot(out, n, max, major, minor);
			if (c && strcmp(op, "Read") == 0)
				*(bytes ? &c->rbytes : &c->rios) = v;
			else if (c && strcmp(op, "Write") == 0)
				*(bytes ? &c->wbytes : &c->wios) = v;
		}
		line = next ? next + 1 : NULL;
	}
}

size_t procfs_parse_blkio_v1(const char *bytes_text, const char *ios_text, struct procfs_cgio *out,
			     size_t max)
{
	size_t n = 0;
	if (bytes_text)
		blkio_v1_lines(bytes_text, out, &n, max, true);
	if (ios_text)
		blkio_v1_lines(ios_text, out, &n, max, false);
	return n;
}

static uint64_t *limit_field(struct procfs_cgio *c, size_t f)
{
	switch (f) {
	case 0: return &c->rbps_max;
	case 1: return &c->wbps_max;
	case 2: return &c->riops_max;
	default: return &c->wiops_max;
	}
}

static void limit_lines_v1(const char *text, struct procfs_cgio *out, size_t *n, size_t max,
			   size_t field)
{
	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		unsigned major, minor;
		unsigned long long v;
		if (sscanf(line, "%u:%u %llu", &major, &minor, &v) == 3 && v) {
			struct procfs_cgio *c = cgio_slot(out, n, max, major, minor);
			if (c)
				*limit_field(c, field) = v;
		}
		line = next ? next + 1 : NULL;
	}
}

size_t procfs_parse_io_limits(const char *io_max, const char *rbps, const char *wbps,
			      const char *riops, const char *wiops, struct procfs_cgio *out, size_t n,
			      size_t max)
{
	static const char *const keys[] = { "rbps", "wbps", "riops", "wiops" };
	const char *v1[] = { rbps, wbps, riops, wiops };
	for (size_t f = 0; f < 4; f++)
		limit_lines_v1(v1[f], out, &n, max, f);
	for (const char *line = io_max; line && *line;) {
		const char *next = strchr(line, '\n');
		const char *end = next ? next : line + strlen(line);
		unsigned major, minor;
		int used = 0;
		if (sscanf(line, "%u:%u%n", &major, &minor, &used) == 2) {
			for (const char *p = line + used; p < end;) {
				while (p < end && *p == ' ')
					p++;
				const char *eq = memchr(p, '=', (size_t)(end - p));
				if (!eq)
					break;
				for (size_t f = 0; f < 4; f++) {
					size_t klen = strlen(keys[f]);
					if ((size_t)(eq - p) == klen && strncmp(p, keys[f], klen) == 0 &&
					    isdigit((unsigned char)eq[1])) {
						struct procfs_cgio *c = cgio_slot(out, &n, max, major, minor);
						if (c)
							*limit_field(c, f) = strtoull(eq + 1, NULL, 10);
					}
				}
				p = eq + 1 + strcspn(eq + 1, " \n");
			}
		}
		line = next ? next + 1 : NULL;
	}
	return n;
}

/* ---- time series -------------------------------------------------------------------------- */

void procfs_series_push(struct procfs_series *s, double t, double v)
{
	if (s->stride == 0)
		s->stride = 1;
	if (s->provisional) {
		s->n--;
		s->provisional = false;
	}
	s->pending++;
	bool keep = s->n == 0 || s->pending >= s->stride;
	if (keep) {
		s->pending = 0;
		/* Kept points are one stride apart. With an even count of them (PROCFS_SERIES_MAX - 2)
		 * plus this one, every other point from the first keeps the first and this one, and
		 * leaves them two strides apart. One slot stays free for a provisional point. */
		if (s->n >= PROCFS_SERIES_MAX - 2) {
			size_t j = 0;
			for (size_t i = 0; i < s->n; i += 2, j++) {
				s->t[j] = s->t[i];
				s->v[j] = s->v[i];
			}
			s->n = j;
			s->stride *= 2;
		}
	}
	s->t[s->n] = t;
	s->v[s->n] = v;
	s->n++;
	s->provisional = !keep;
}

bool procfs_slope(const double *t, const double *v, size_t n, double *slope)
{
	if (n < 2)
		return false;
	double mt = 0, mv = 0;
	for (size_t i = 0; i < n; i++) {
		mt += t[i];
		mv += v[i];
	}
	mt /= (double)n;
	mv /= (double)n;
	double sxy = 0, sxx = 0;
	for (size_t i = 0; i < n; i++) {
		sxy += (t[i] - mt) * (v[i] - mv);
		sxx += (t[i] - mt) * (t[i] - mt);
	}
	if (sxx <= 0)
		return false;
	*slope = sxy / sxx;
	return true;
}

/* ---- /proc/slabinfo, /proc/vmstat ---------------------------------------------------------- */

/* The next blank-separated token of [*p, end): its start and length; 0 when none is left. */
static size_t next_token(const char **p, const char *end, const char **tok)
{
	const char *q = *p;
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	*tok = q;
	while (q < end && *q != ' ' && *q != '\t')
		q++;
	*p = q;
	return (size_t)(q - *tok);
}

/* A token of digits only (no sign, no blank) into *v; false otherwise or on overflow. */
static bool token_u64(const char *tok, size_t len, uint64_t *v)
{
	if (len == 0 || len > 20)
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)tok[i]))
			return false;
		unsigned d = (unsigned)(tok[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

static bool token_is(const char *tok, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(tok, word, len) == 0;
}

/* One cache line [line, end) into *out; false when it is not one. */
static bool slab_line(const char *line, const char *end, struct procfs_slab *out)
{
	const char *p = line, *tok;
	size_t len = next_token(&p, end, &tok);
	if (len == 0 || len >= sizeof(out->name))
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out->name, tok, len);
	uint64_t *head[5] = { &out->active_objs, &out->num_objs, &out->objsize, &out->objperslab,
			      &out->pagesperslab };
	for (int i = 0; i < 5; i++) {
		len = next_token(&p, end, &tok);
		if (!token_u64(tok, len, head[i]))
			return false;
	}
	uint64_t ignored, *tail[3] = { &out->active_slabs, &out->num_slabs, &ignored };
	len = next_token(&p, end, &tok);
	if (!token_is(tok, len, ":"))
		return false;
	len = next_token(&p, end, &tok);
	if (!token_is(tok, len, "tunables"))
		return false;
	for (int i = 0; i < 3; i++) {
		len = next_token(&p, end, &tok);
		if (!token_u64(tok, len, &ignored))
			return false;
	}
	len = next_token(&p, end, &tok);
	if (!token_is(tok, len, ":"))
		return false;
	len = next_token(&p, end, &tok);
	if (!token_is(tok, len, "slabdata"))
		return false;
	for (int i = 0; i < 3; i++) {
		len = next_token(&p, end, &tok);
		if (!token_u64(tok, len, tail[i]))
			return false;
	}
	len = next_token(&p, end, &tok);
	return len == 0 && out->active_objs <= out->num_objs; /* nothing after the last column */
}

int procfs_parse_slabinfo(const char *text, struct procfs_slab *out, size_t max,
			  struct procfs_slabinfo *info)
{
	memset(info, 0, sizeof(*info));
	static const char header[] = "slabinfo - version: 2.";
	if (strncmp(text, header, strlen(header)) != 0)
		return -1;
	const char *line = strchr(text, '\n');
	while (line && *line) {
		line++;
		const char *end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (end > line && *line != '#') {
			struct procfs_slab s;
			if (!slab_line(line, end, &s))
				info->malformed++;
			else if (info->n < max)
				out[info->n++] = s;
			else
				info->overflow++;
		}
		line = *end ? end : NULL;
	}
	return 0;
}

uint64_t procfs_slab_bytes(const struct procfs_slab *s, uint64_t page_size)
{
	return s->num_slabs * s->pagesperslab * page_size;
}

uint64_t procfs_sum_prefixed(const char *text, const char *prefix, bool *found)
{
	size_t plen = strlen(prefix);
	uint64_t sum = 0;
	*found = false;
	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		if (strncmp(line, prefix, plen) == 0) {
			const char *p = line + plen;
			while (*p && *p != ' ' && *p != '\n')
				p++;
			while (*p == ' ')
				p++;
			if (isdigit((unsigned char)*p)) {
				sum += strtoull(p, NULL, 10);
				*found = true;
			}
		}
		line = next ? next + 1 : NULL;
	}
	return sum;
}
