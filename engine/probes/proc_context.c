/* proc_context.c — catalog entry without BPF: the target's CPU accounting and scheduling
 * context from /proc and cgroupfs over the collection window.
 *
 * Owns: reading utime/stime and thread count (/proc/PID/stat), voluntary and involuntary context
 * switches summed over threads (/proc/PID/task/TID/status), CPU pressure (/proc/pressure/cpu) and
 * the target cgroup's CPU throttling (cpu.stat, cpu.max), at attach and at the end; the last good
 * reading is refreshed every tick so a target that exits still has a window.
 * Must not: attach anything to the kernel.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"

struct proc_reading {
	bool valid;
	uint64_t at_ns;
	double utime_s, stime_s;
	long threads;
	uint64_t vol_switches, invol_switches;
	bool has_psi;
	double psi_some_avg10, psi_some_avg60, psi_full_avg10;
	uint64_t psi_some_total_us;
	bool has_cpu_stat;
	uint64_t nr_periods, nr_throttled, throttled_us;
};

struct proc_priv {
	char comm[64];
	char cgroup[512]; /* path under /sys/fs/cgroup, "" when unknown */
	char cpu_max[64];
	struct proc_reading start, last;
	bool exited;
};

static const struct option_spec proc_options[] = { { .name = NULL } };
static const char *const proc_variants[] = { "procfs", NULL };

static int read_stat(int pid, struct proc_reading *r, char *comm, size_t comm_len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	char *text = read_file(path, NULL);
	if (!text)
		return -1;
	char *open = strchr(text, '('), *close = strrchr(text, ')');
	if (!open || !close || close < open) {
		free(text);
		return -1;
	}
	if (comm) {
		size_t len = (size_t)(close - open - 1);
		if (len >= comm_len)
			len = comm_len - 1;
		memcpy(comm, open + 1, len);
		comm[len] = '\0';
	}
	/* Fields after ")": 3 state ... 14 utime 15 stime ... 20 num_threads. */
	unsigned long long utime = 0, stime = 0;
	long threads = 0;
	int field = 3;
	char *save = NULL;
	for (char *tok = strtok_r(close + 2, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save), field++) {
		if (field == 14)
			utime = strtoull(tok, NULL, 10);
		else if (field == 15)
			stime = strtoull(tok, NULL, 10);
		else if (field == 20) {
			threads = strtol(tok, NULL, 10);
			break;
		}
	}
	free(text);
	long hz = sysconf(_SC_CLK_TCK);
	r->utime_s = (double)utime / (double)hz;
	r->stime_s = (double)stime / (double)hz;
	r->threads = threads;
	return 0;
}

static uint64_t status_field(const char *text, const char *name)
{
	const char *p = strstr(text, name);
	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

static void read_switches(int pid, struct proc_reading *r)
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
		if (!text)
			continue; /* the thread exited meanwhile */
		r->vol_switches += status_field(text, "\nvoluntary_ctxt_switches:");
		r->invol_switches += status_field(text, "\nnonvoluntary_ctxt_switches:");
		free(text);
	}
	closedir(dir);
}

static void read_psi(struct proc_reading *r)
{
	char *text = read_file("/proc/pressure/cpu", NULL);
	r->has_psi = false;
	if (!text)
		return;
	unsigned long long total = 0;
	if (sscanf(text, "some avg10=%lf avg60=%lf avg300=%*f total=%llu", &r->psi_some_avg10,
		   &r->psi_some_avg60, &total) == 3) {
		r->has_psi = true;
		r->psi_some_total_us = total;
		char *full = strstr(text, "full avg10=");
		r->psi_full_avg10 = full ? strtod(full + 11, NULL) : 0;
	}
	free(text);
}

static void read_cpu_stat(const char *cgroup, struct proc_reading *r)
{
	r->has_cpu_stat = false;
	if (!cgroup[0])
		return;
	char path[600];
	snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.stat", cgroup);
	char *text = read_file(path, NULL);
	if (!text)
		return;
	r->has_cpu_stat = true;
	r->nr_periods = status_field(text, "nr_periods ");
	r->nr_throttled = status_field(text, "nr_throttled ");
	r->throttled_us = status_field(text, "throttled_usec ");
	free(text);
}

static int take_reading(struct probe *p, struct proc_reading *r)
{
	struct proc_priv *pp = p->priv;
	struct proc_reading fresh = { 0 };
	if (read_stat(p->cfg.target_pid, &fresh, NULL, 0) < 0)
		return -1;
	read_switches(p->cfg.target_pid, &fresh);
	read_psi(&fresh);
	read_cpu_stat(pp->cgroup, &fresh);
	fresh.at_ns = mono_ns();
	fresh.valid = true;
	*r = fresh;
	return 0;
}

static void find_cgroup(struct probe *p)
{
	struct proc_priv *pp = p->priv;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", p->cfg.target_pid);
	char *text = read_file(path, NULL);
	if (!text)
		return;
	char *line = strstr(text, "0::"); /* cgroup v2 unified hierarchy */
	if (line) {
		line += 3;
		size_t len = strcspn(line, "\n");
		if (len < sizeof(pp->cgroup)) {
			memcpy(pp->cgroup, line, len);
			pp->cgroup[len] = '\0';
		}
		if (strcmp(pp->cgroup, "/") == 0)
			pp->cgroup[0] = '\0'; /* the root cgroup has no cpu.stat limits */
	}
	free(text);
	if (pp->cgroup[0]) {
		char mpath[600];
		snprintf(mpath, sizeof(mpath), "/sys/fs/cgroup%s/cpu.max", pp->cgroup);
		char *max = read_file(mpath, NULL);
		if (max) {
			snprintf(pp->cpu_max, sizeof(pp->cpu_max), "%.*s", (int)strcspn(max, "\n"), max);
			free(max);
		}
	}
}

static int proc_load(struct probe *p, struct diag_err *err)
{
	struct proc_priv *pp = p->priv;
	if (p->cfg.target_pid <= 0)
		return diag_fail(err, DIAG_EXIT_USAGE, "proc_context needs a target pid");
	struct proc_reading r;
	if (read_stat(p->cfg.target_pid, &r, pp->comm, sizeof(pp->comm)) < 0)
		return diag_fail(err, DIAG_EXIT_USAGE, "process %d: %s", p->cfg.target_pid,
				 strerror(errno));
	find_cgroup(p);
	p->variant = "procfs";
	return 0;
}

static int proc_attach(struct probe *p, struct diag_err *err)
{
	struct proc_priv *pp = p->priv;
	if (take_reading(p, &pp->start) < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "process %d exited", p->cfg.target_pid);
	pp->last = pp->start;
	return 0;
}

static void proc_tick(struct probe *p)
{
	struct proc_priv *pp = p->priv;
	if (!pp->exited && take_reading(p, &pp->last) < 0)
		pp->exited = true;
}

static int proc_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct proc_priv *pp = p->priv;
	if (!pp->start.valid)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "no reading of process %d", p->cfg.target_pid);
	proc_tick(p);
	const struct proc_reading *a = &pp->start, *b = &pp->last;
	double wall = (double)(b->at_ns - a->at_ns) / 1e9;
	double cpu = (b->utime_s - a->utime_s) + (b->stime_s - a->stime_s);

	struct value *res = value_obj();
	value_set_int(res, "pid", p->cfg.target_pid);
	value_set_str(res, "comm", pp->comm);
	value_set_int(res, "threads", b->threads);
	value_set_num(res, "wall_s", wall);
	value_set_num(res, "utime_s", b->utime_s - a->utime_s);
	value_set_num(res, "stime_s", b->stime_s - a->stime_s);
	value_set_num(res, "cpu_pct", wall > 0 ? cpu / wall * 100.0 : 0);
	value_set_int(res, "ncpus", ctx->ncpus);
	value_set_int(res, "voluntary_ctxt_switches", (int64_t)(b->vol_switches - a->vol_switches));
	value_set_int(res, "nonvoluntary_ctxt_switches",
		      (int64_t)(b->invol_switches - a->invol_switches));
	value_set_bool(res, "exited", pp->exited);
	if (a->has_psi && b->has_psi) {
		struct value *psi = value_obj_set(res, "psi", value_obj());
		value_set_num(psi, "some_avg10", b->psi_some_avg10);
		value_set_num(psi, "some_avg60", b->psi_some_avg60);
		value_set_num(psi, "full_avg10", b->psi_full_avg10);
		value_set_int(psi, "some_total_us", (int64_t)(b->psi_some_total_us - a->psi_some_total_us));
	}
	if (a->has_cpu_stat && b->has_cpu_stat) {
		struct value *cg = value_obj_set(res, "cgroup", value_obj());
		value_set_str(cg, "path", pp->cgroup);
		value_set_str(cg, "cpu_max", pp->cpu_max[0] ? pp->cpu_max : "max");
		value_set_int(cg, "nr_periods", (int64_t)(b->nr_periods - a->nr_periods));
		value_set_int(cg, "nr_throttled", (int64_t)(b->nr_throttled - a->nr_throttled));
		value_set_int(cg, "throttled_us", (int64_t)(b->throttled_us - a->throttled_us));
	}
	*out = res;
	return 0;
}

static void proc_destroy(struct probe *p) { (void)p; }
static struct bpf_object *proc_object(struct probe *p) { (void)p; return NULL; }

const struct probe_kind probe_kind_proc_context = {
	.name = "proc_context",
	.summary = "CPU time, threads, context switches, CPU pressure and cgroup throttling (/proc)",
	.options = proc_options,
	.n_options = 0,
	.filters = FILTER_PID,
	.variants = proc_variants,
	.private_size = sizeof(struct proc_priv),
	.load = proc_load,
	.attach = proc_attach,
	.tick = proc_tick,
	.collect = proc_collect,
	.destroy = proc_destroy,
	.object = proc_object,
};
