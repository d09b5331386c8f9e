/* doctor.c — `diagnose doctor`: what this machine lets recipes do, found out by really trying.
 *
 * Owns: one check per kernel feature the recipes rely on, keyed by the feature's name (attach
 * types are probed by loading a two-instruction program, `r0 = 0; exit`, and attaching it to a
 * real hook), the one line per check that says what it found and what that means for recipes,
 * and one line per probe kind of the catalog: the features it declares it needs and which of
 * them are missing, and whether its real object loads here (doctor_load.c: so that "works" means
 * its relocations resolve and the verifier takes it; a new kind shows up with no edit here).
 * Must not: leave anything behind (every fd is closed on every path, so no program or link
 * survives a check; the perf events are opened disabled) or change the machine beyond mounting
 * tracefs when it is missing. Checks return their result; only doctor_run prints.
 */
#include "cli/doctor.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "cli/doctor_load.h"
#include "cli/doctor_recipes.h"
#include "kernel/hitcost.h"
#include "kernel/kernel.h"
#include "common/util.h"

enum status { ST_OK, ST_MISSING, ST_WARN };
static const char *const status_word[] = { "ok", "missing", "warn" };

/* What every check may read: found once by doctor_run, never changed by a check. */
struct ctx {
	struct btf *vmlinux; /* NULL without BTF */
	bool privileged;     /* kernel_check_privileges passed */
};

struct check {
	const char *name;
	enum status (*run)(const struct ctx *c, char *detail, size_t n);
	bool essential;          /* doctor exits 3 unless it is ok */
	const char *if_ok;       /* consequence for recipes */
	const char *if_not;
};

/* "not supported" for the kernel-internal ENOTSUPP (524) that strerror does not know. */
static const char *err_text(int e)
{
	return e == 524 ? "not supported by this kernel (ENOTSUPP)" : strerror(e);
}

static enum status fail_errno(char *detail, size_t n, const char *what, int e)
{
	snprintf(detail, n, "%s: %s", what, err_text(e));
	return ST_MISSING;
}

/* Reads a small integer from a file (sysctl or sysfs); -1 with errno set when unreadable. */
static int read_int(const char *path, long *value)
{
	char *text = read_file(path, NULL);
	if (!text)
		return -1;
	char *end;
	errno = 0;
	*value = strtol(text, &end, 10);
	int bad = end == text || errno;
	free(text);
	if (bad)
		errno = EINVAL;
	return bad ? -1 : 0;
}

/* Loads `r0 = 0; exit`; the fd, or -errno. */
static int load_nop(enum bpf_prog_type type, const char *name, struct bpf_prog_load_opts *opts)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(type, name, "GPL", insns, ARRAY_LEN(insns), opts);
	return fd < 0 ? -errno : fd;
}

/* Opens a disabled perf event and attaches prog_fd to it (BPF link, else the older ioctl), then
 * closes both. 0, or -errno with *stage naming the step that failed. */
static int try_perf_attach(struct perf_event_attr *attr, int pid, int cpu, int prog_fd,
			   const char **stage)
{
	attr->size = sizeof(*attr);
	attr->disabled = 1;
	*stage = "perf_event_open";
	int pfd = (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (prog_fd < 0) { /* counter only */
		close(pfd);
		return 0;
	}
	*stage = "attach";
	int rc = 0;
	int link = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, NULL);
	if (link >= 0)
		close(link);
	else if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog_fd) != 0)
		rc = -errno;
	close(pfd);
	return rc;
}

/* Loads a nop of the given type and attaches it to the perf event `what`; fills detail. */
static enum status prog_on_perf(enum bpf_prog_type type, const char *name,
				struct perf_event_attr *attr, int pid, int cpu, const char *what,
				char *detail, size_t n)
{
	int prog = load_nop(type, name, NULL);
	if (prog < 0)
		return fail_errno(detail, n, "program load", -prog);
	const char *stage;
	int rc = try_perf_attach(attr, pid, cpu, prog, &stage);
	close(prog);
	if (rc < 0) {
		snprintf(detail, n, "%s, %s: %s", what, stage, err_text(-rc));
		return ST_MISSING;
	}
	snprintf(detail, n, "program attached to %s", what);
	return ST_OK;
}

/* The PMU type number of a dynamic PMU (kprobe, uprobe); -1 with errno when there is none. */
static int pmu_type(const char *pmu)
{
	char path[128];
	long type;
	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", pmu);
	return read_int(path, &type) == 0 ? (int)type : -1;
}

/* ---- checks --------------------------------------------------------------------------------- */

static enum status check_kernel(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	struct utsname u;
	unsigned major = 0, minor = 0;
	if (uname(&u) != 0)
		return fail_errno(detail, n, "uname", errno);
	sscanf(u.release, "%u.%u", &major, &minor);
	snprintf(detail, n, "Linux %s %s", u.release, u.machine);
	return major > 5 || (major == 5 && minor >= 8) ? ST_OK : ST_WARN;
}

static enum status check_btf(const struct ctx *c, char *detail, size_t n)
{
	struct diag_err err;
	if (kernel_check_btf(&err) != 0) {
		snprintf(detail, n, "%s", err.msg);
		return ST_MISSING;
	}
	snprintf(detail, n, "/sys/kernel/btf/vmlinux%s", c->vmlinux ? "" : " present but unparsable");
	return c->vmlinux ? ST_OK : ST_WARN;
}

static enum status check_privileges(const struct ctx *c, char *detail, size_t n)
{
	struct diag_err err;
	if (kernel_check_privileges(&err) != 0) {
		snprintf(detail, n, "uid %u, %s", (unsigned)geteuid(), err.msg);
		return ST_MISSING;
	}
	snprintf(detail, n, "%s with CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)",
		 geteuid() == 0 ? "root" : "not root but");
	return c->privileged ? ST_OK : ST_MISSING;
}

static enum status check_tracefs(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	struct diag_err err;
	bool mounted_now;
	if (kernel_ensure_tracefs(&mounted_now, &err) != 0) {
		/* Unprivileged, a mounted tracefs only looks absent: its root is mode 0700. */
		char *mounts = read_file("/proc/self/mounts", NULL);
		bool mounted = mounts && strstr(mounts, " tracefs ");
		free(mounts);
		if (mounted)
			snprintf(detail, n, "mounted but not readable by uid %u", (unsigned)geteuid());
		else
			snprintf(detail, n, "%s", err.msg);
		return ST_MISSING;
	}
	snprintf(detail, n, mounted_now ? "was not mounted: mounted it on /sys/kernel/tracing"
					: "mounted");
	return ST_OK;
}

static enum status check_paranoid(const struct ctx *c, char *detail, size_t n)
{
	long v;
	if (read_int("/proc/sys/kernel/perf_event_paranoid", &v) != 0)
		return fail_errno(detail, n, "kernel.perf_event_paranoid", errno);
	snprintf(detail, n, "kernel.perf_event_paranoid = %ld%s", v,
		 c->privileged ? " (does not limit CAP_PERFMON)" : "");
	return c->privileged || v <= 1 ? ST_OK : ST_WARN;
}

static enum status check_jit(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	long v;
	if (read_int("/proc/sys/net/core/bpf_jit_enable", &v) != 0)
		return fail_errno(detail, n, "net.core.bpf_jit_enable", errno);
	snprintf(detail, n, "net.core.bpf_jit_enable = %ld", v);
	return v >= 1 ? ST_OK : ST_WARN;
}

static enum status check_unpriv(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	long v;
	if (read_int("/proc/sys/kernel/unprivileged_bpf_disabled", &v) != 0)
		return fail_errno(detail, n, "kernel.unprivileged_bpf_disabled", errno);
	snprintf(detail, n, "kernel.unprivileged_bpf_disabled = %ld (informational)", v);
	return ST_OK;
}

static enum status check_tracepoint(const struct ctx *c, char *detail, size_t n)
{
	static const char *const id_paths[] = {
		"/sys/kernel/tracing/events/sched/sched_switch/id",
		"/sys/kernel/debug/tracing/events/sched/sched_switch/id",
	};
	(void)c;
	long id = -1;
	for (size_t i = 0; i < ARRAY_LEN(id_paths) && id < 0; i++)
		if (read_int(id_paths[i], &id) != 0)
			id = -1;
	if (id < 0)
		return fail_errno(detail, n, "tracefs events/sched/sched_switch/id", errno);
	struct perf_event_attr attr = { .type = PERF_TYPE_TRACEPOINT, .config = (uint64_t)id,
					.sample_period = 1 };
	return prog_on_perf(BPF_PROG_TYPE_TRACEPOINT, "doctor_tp", &attr, -1, 0,
			    "sched/sched_switch", detail, n);
}

static enum status check_raw_tp(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	int prog = load_nop(BPF_PROG_TYPE_RAW_TRACEPOINT, "doctor_raw_tp", NULL);
	if (prog < 0)
		return fail_errno(detail, n, "program load", -prog);
	int link = bpf_raw_tracepoint_open("sched_switch", prog);
	int e = errno;
	close(prog);
	if (link < 0)
		return fail_errno(detail, n, "attach to sched_switch", e);
	close(link);
	snprintf(detail, n, "program attached to sched_switch");
	return ST_OK;
}

/* A BPF_PROG_TYPE_TRACING program on the BTF type `target` of the given kind. */
static enum status tracing_prog(const struct ctx *c, const char *name, enum bpf_attach_type at,
				const char *target, int kind, char *detail, size_t n)
{
	if (!c->vmlinux) {
		snprintf(detail, n, "no vmlinux BTF to find %s in", target);
		return ST_MISSING;
	}
	int id = btf__find_by_name_kind(c->vmlinux, target, kind);
	if (id < 0) {
		snprintf(detail, n, "%s not in vmlinux BTF", target);
		return ST_MISSING;
	}
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = at, .attach_btf_id = id);
	int prog = load_nop(BPF_PROG_TYPE_TRACING, name, &opts);
	if (prog < 0) {
		snprintf(detail, n, "kernel refused a program for %s: %s", target, err_text(-prog));
		return ST_MISSING;
	}
	int link = bpf_raw_tracepoint_open(NULL, prog);
	int e = errno;
	close(prog);
	if (link < 0) {
		snprintf(detail, n, "attach to %s: %s", target, err_text(e));
		return ST_MISSING;
	}
	close(link);
	snprintf(detail, n, "program attached to %s", target);
	return ST_OK;
}

static enum status check_tp_btf(const struct ctx *c, char *detail, size_t n)
{
	return tracing_prog(c, "doctor_tp_btf", BPF_TRACE_RAW_TP, "btf_trace_sched_switch",
			    BTF_KIND_TYPEDEF, detail, n);
}

static enum status check_fentry(const struct ctx *c, char *detail, size_t n)
{
	return tracing_prog(c, "doctor_fentry", BPF_TRACE_FENTRY, "vfs_read", BTF_KIND_FUNC,
			    detail, n);
}

static enum status check_kprobe(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	int type = pmu_type("kprobe");
	if (type < 0) {
		snprintf(detail, n, "no kprobe PMU (kernel built without kprobes)");
		return ST_MISSING;
	}
	struct perf_event_attr attr = { .type = (uint32_t)type, .sample_period = 1,
					.config1 = (uint64_t)(uintptr_t)"vfs_read" };
	return prog_on_perf(BPF_PROG_TYPE_KPROBE, "doctor_kprobe", &attr, -1, 0,
			    "vfs_read", detail, n);
}


static enum status check_uprobe(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	int type = pmu_type("uprobe");
	if (type < 0) {
		snprintf(detail, n, "no uprobe PMU (kernel built without uprobes)");
		return ST_MISSING;
	}
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t offset;
	if (len < 0 || hitcost_self_offset((const void *)doctor_run, &offset) != 0)
		return fail_errno(detail, n, "locating our own executable", errno);
	exe[len] = '\0';
	struct perf_event_attr attr = { .type = (uint32_t)type, .sample_period = 1,
					.config1 = (uint64_t)(uintptr_t)exe, .config2 = offset };
	return prog_on_perf(BPF_PROG_TYPE_KPROBE, "doctor_uprobe", &attr, 0, -1,
			    "a function of our own executable", detail, n);
}

/* USDT probes guarded by a semaphore (PostgreSQL's, Python's) run only while it is raised: the
 * kernel raises it when a uprobe is attached with a reference counter (Linux 4.20+). */
static enum status check_uprobe_semaphore(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	if (access("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", F_OK) != 0) {
		snprintf(detail, n, "the uprobe PMU has no ref_ctr_offset (Linux before 4.20)");
		return ST_MISSING;
	}
	snprintf(detail, n, "uprobes raise USDT semaphores (ref_ctr_offset)");
	return ST_OK;
}

static enum status check_cpu_clock(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK, .freq = 1,
					.sample_freq = 49 };
	return prog_on_perf(BPF_PROG_TYPE_PERF_EVENT, "doctor_perf", &attr, -1, 0,
			    "a cpu-clock sampling event on cpu 0", detail, n);
}

static enum status check_hw(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	struct perf_event_attr attr = { .type = PERF_TYPE_HARDWARE,
					.config = PERF_COUNT_HW_CPU_CYCLES, .sample_period = 1000000 };
	const char *stage;
	int rc = try_perf_attach(&attr, -1, 0, -1, &stage);
	if (rc == -ENOENT || rc == -EOPNOTSUPP) {
		snprintf(detail, n, "no hardware PMU (e.g. a VM)");
		return ST_MISSING;
	}
	if (rc < 0)
		return fail_errno(detail, n, "cpu-cycles counter", -rc);
	snprintf(detail, n, "cpu-cycles counter opened");
	return ST_OK;
}

static enum status check_stats(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	int fd = kernel_enable_bpf_stats();
	if (fd < 0)
		return fail_errno(detail, n, "bpf_enable_stats(BPF_STATS_RUN_TIME)", errno);
	close(fd); /* the kernel restores the previous setting */
	snprintf(detail, n, "run-time statistics can be turned on (and were turned off again)");
	return ST_OK;
}

/* What a hit costs the traced code on this machine beyond the program: a run measures it too,
 * for the budgets (engine/kernel/hitcost.h); a VM's traps can cost several times bare metal's. */
static enum status check_hit_costs(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	struct hit_costs hc = { 0 };
	struct hitcost_held held = { .n = 0 };
	struct diag_err err;
	int rc = hitcost_measure((1u << HIT_UPROBE) | (1u << HIT_URETPROBE) | (1u << HIT_SYSCALL), &hc,
				 &held, &err);
	hitcost_release(&held);
	if (rc) {
		snprintf(detail, n, "%s", err.msg);
		return ST_WARN;
	}
	snprintf(detail, n, "a uprobe trap %.1f us, a uretprobe's return %.1f us more, a syscall's slow "
		 "path %.0f ns while a syscall tracepoint is attached%s", hc.ns[HIT_UPROBE] / 1000,
		 hc.ns[HIT_URETPROBE] / 1000, hc.ns[HIT_SYSCALL],
		 hc.ns[HIT_SYSCALL] < 5 ? " (about 0: another tracer keeps the syscalls on it already)" : "");
	return ST_OK;
}

static enum status check_task_storage(const struct ctx *c, char *detail, size_t n)
{
	(void)c;
	struct btf *btf = btf__new_empty();
	if (!btf)
		return fail_errno(detail, n, "building BTF", errno);
	int key = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	int value = btf__add_int(btf, "long long", 8, BTF_INT_SIGNED);
	int rc = key < 0 || value < 0 ? -EINVAL : btf__load_into_kernel(btf);
	enum status st;
	if (rc < 0) {
		st = fail_errno(detail, n, "loading BTF", -rc);
	} else {
		LIBBPF_OPTS(bpf_map_create_opts, opts, .btf_fd = btf__fd(btf), .btf_key_type_id = key,
			    .btf_value_type_id = value, .map_flags = BPF_F_NO_PREALLOC);
		int map = bpf_map_create(BPF_MAP_TYPE_TASK_STORAGE, "doctor_task", 4, 8, 0, &opts);
		st = map < 0 ? fail_errno(detail, n, "task storage map", errno) : ST_OK;
		if (map >= 0) {
			close(map);
			snprintf(detail, n, "task storage map created");
		}
	}
	btf__free(btf); /* closes the kernel BTF fd too */
	return st;
}

/* Keyed by kernel feature: the names probe kinds list in their `features` (catalog.h). Texts say
 * what a result means for probes in general; which kinds it stops, doctor_run derives from the
 * catalog. */
static const struct check checks[] = {
	{ "kernel", check_kernel, false, "5.8 or later (which recipes run fully here: the recipe lines below)",
	  "older than 5.8: probes that need the BPF ring buffer or newer helpers will not load" },
	{ "btf", check_btf, true, "CO-RE probes relocate against this kernel",
	  "no probe can load: the engine needs CONFIG_DEBUG_INFO_BTF=y" },
	{ "privileges", check_privileges, true, "probes can be loaded and attached",
	  "no probe can be loaded, so no recipe can run" },
	{ "tracefs", check_tracefs, false, "tracepoint ids are readable",
	  "tracepoint probes cannot find their events" },
	{ "perf_paranoid", check_paranoid, false, "perf events can be opened on every CPU",
	  "without CAP_PERFMON only the caller's own processes can be sampled" },
	{ "bpf_jit", check_jit, false, "probes run as native code",
	  "probes run in the interpreter and cost several times more CPU" },
	{ "unpriv_bpf", check_unpriv, false, "diagnose runs privileged either way",
	  "diagnose runs privileged either way" },
	{ "tracepoint", check_tracepoint, false, "classic tracepoint probes work",
	  "probes attach raw_tp / tp_btf instead; classic tracepoint probes unavailable" },
	{ "raw_tp", check_raw_tp, true, "probes can attach raw tracepoints",
	  "probes that attach raw tracepoints (and the raw_tp fallbacks) cannot run" },
	{ "tp_btf", check_tp_btf, false, "probes can attach typed (BTF) tracepoints",
	  "probes fall back to raw_tp where they have that variant" },
	{ "fentry", check_fentry, false, "function entry/exit probes can attach",
	  "probes fall back to raw_tp/tp_btf; fentry-only probes unavailable" },
	{ "kprobe", check_kprobe, false, "kernel function probes can attach",
	  "probes fall back to tracepoints; kprobe-only probes unavailable" },
	{ "uprobe", check_uprobe, false, "user-space function probes can attach",
	  "user-space function probes unavailable" },
	{ "uprobe_semaphore", check_uprobe_semaphore, false, "USDT probes with a semaphore can be enabled",
	  "USDT probes guarded by a semaphore (PostgreSQL's, Python's) never fire: pg_statements and usdt on them cannot run" },
	{ "perf_event", check_cpu_clock, true, "stacks can be sampled with the cpu-clock event",
	  "no probe can sample stacks on a timer, so CPU profiling recipes cannot run" },
	{ "hw_counters", check_hw, false, "sampling can use hardware cycles",
	  "sampling uses the cpu-clock software event" },
	{ "bpf_stats", check_stats, false, "the overhead governor measures what probes cost",
	  "the overhead governor cannot measure probe CPU time (needs CAP_SYS_ADMIN, Linux 5.8+)" },
	{ "hit_costs", check_hit_costs, false, "what each probe hit costs the traced code is measured",
	  "the budgets count the probes' run time only, not their traps and slow paths" },
	{ "task_storage", check_task_storage, false, "probes can keep per-thread state in task storage",
	  "probes with task local storage cannot load (needs Linux 5.11+)" },
};

bool doctor_knows_feature(const char *feature)
{
	for (size_t i = 0; i < ARRAY_LEN(checks); i++)
		if (strcmp(checks[i].name, feature) == 0)
			return true;
	return false;
}

/* Whether one entry of a kind's features ("a" or "a|b": any one will do) works, by the results
 * of the checks (warn counts as working). */
static bool need_met(const char *need, const enum status *results)
{
	for (const char *p = need; *p;) {
		size_t len = strcspn(p, "|");
		for (size_t i = 0; i < ARRAY_LEN(checks); i++)
			if (strlen(checks[i].name) == len && strncmp(checks[i].name, p, len) == 0 &&
			    results[i] != ST_MISSING)
				return true;
		p += len + (p[len] == '|');
	}
	return false;
}

/* Appends need to buf as text: "a|b" as "a or b", after a comma when buf is not empty. */
static void append_need(char *buf, size_t size, const char *need)
{
	size_t len = strlen(buf);
	snprintf(buf + len, size - len, "%s", len ? ", " : "");
	for (const char *p = need; *p; p++) {
		len = strlen(buf);
		snprintf(buf + len, size - len, "%s", *p == '|' ? " or " : (char[]){ *p, '\0' });
	}
}

/* One line per probe kind: the features it declares, and those of them that are missing; when
 * none is (and doctor is privileged), whether the kind's real object loads here, into found[k]
 * (catalog order). Returns how many kinds' objects did not load. */
static int print_kinds(FILE *out, const enum status *results, bool privileged, struct kind_found *found)
{
	size_t n;
	int failed = 0;
	const struct probe_kind *const *kinds = catalog_all(&n);
	for (size_t k = 0; k < n; k++) {
		char needs[256] = "", missing[256] = "";
		found[k] = (struct kind_found){ .name = kinds[k]->name, .load = KIND_LOADED };
		for (const char *const *f = kinds[k]->features; f && *f; f++) {
			append_need(needs, sizeof(needs), *f);
			if (!need_met(*f, results))
				append_need(missing, sizeof(missing), *f);
		}
		if (missing[0]) {
			fprintf(out, "%-8skind %-17s needs %s: missing %s, recipes using it run without it\n",
				status_word[ST_MISSING], kinds[k]->name, needs, missing);
			found[k].load = KIND_FAILED;
			snprintf(found[k].why, sizeof(found[k].why), "needs %s", missing);
			continue;
		}
		if (!needs[0]) {
			fprintf(out, "%-8skind %-17s needs no kernel feature: nothing to check\n",
				status_word[ST_OK], kinds[k]->name);
			continue;
		}
		char variant[64], why[512] = "not loaded: needs root";
		enum kind_load l = privileged ? doctor_load_kind(kinds[k], variant, sizeof(variant), why, sizeof(why))
					      : KIND_NOT_TRIED;
		if (l == KIND_LOADED)
			fprintf(out, "%-8skind %-17s needs %s: every one works; its object loads (%s)\n",
				status_word[ST_OK], kinds[k]->name, needs, variant);
		else if (l == KIND_DEGRADED)
			fprintf(out, "%-8skind %-17s needs %s: every one works; its object loads (%s), "
				"degraded: %s\n", status_word[ST_WARN], kinds[k]->name, needs, variant, why);
		else if (l == KIND_NOT_TRIED)
			fprintf(out, "%-8skind %-17s needs %s: every one works; %s\n", status_word[ST_OK],
				kinds[k]->name, needs, why);
		else
			fprintf(out, "%-8skind %-17s needs %s: every one works, but its object does not load: %s; "
				"recipes using it run without it\n", status_word[ST_MISSING], kinds[k]->name, needs, why);
		found[k].load = l;
		if (l != KIND_LOADED)
			snprintf(found[k].why, sizeof(found[k].why), "%s", why);
		failed += l == KIND_FAILED;
	}
	return failed;
}

int doctor_run(FILE *out, const char *recipes_dir)
{
	struct diag_err err;
	kernel_set_libbpf_verbose(false);
	struct ctx c = { .privileged = kernel_check_privileges(&err) == 0 };
	c.vmlinux = btf__load_vmlinux_btf(); /* NULL without BTF */
	int counts[3] = { 0 };
	enum status results[ARRAY_LEN(checks)];
	bool essentials_ok = true;
	for (size_t i = 0; i < ARRAY_LEN(checks); i++) {
		char detail[512] = "";
		enum status st = checks[i].run(&c, detail, sizeof(detail));
		results[i] = st;
		counts[st]++;
		if (checks[i].essential && st != ST_OK)
			essentials_ok = false;
		fprintf(out, "%-8s%-14s%s: %s\n", status_word[st], checks[i].name, detail,
			st == ST_OK ? checks[i].if_ok : checks[i].if_not);
	}
	btf__free(c.vmlinux);
	size_t n_kinds;
	catalog_all(&n_kinds);
	struct kind_found *found = xcalloc(n_kinds ? n_kinds : 1, sizeof(*found));
	int unloadable = print_kinds(out, results, c.privileged, found);
	struct recipe_tally tally;
	doctor_print_recipes(out, recipes_dir, found, n_kinds, &tally);
	free(found);
	char kinds_note[64] = "", recipes_note[160] = "";
	if (unloadable)
		snprintf(kinds_note, sizeof(kinds_note), "; %d probe kinds' objects do not load", unloadable);
	if (tally.found_dir)
		snprintf(recipes_note, sizeof(recipes_note),
			 "; recipes: %u run fully, %u run (some probes not tried), %u degraded, %u cannot run%s",
			 tally.runs, tally.untried, tally.degraded, tally.cannot_run,
			 tally.invalid ? " (and some invalid)" : "");
	bool recipes_ok = tally.cannot_run == 0;
	fprintf(out, "doctor: %d ok, %d missing, %d warn%s%s; %s\n", counts[ST_OK], counts[ST_MISSING],
		counts[ST_WARN], kinds_note, recipes_note,
		!essentials_ok ? "BTF, privileges, perf_event or raw_tp missing (exit 3)"
		: !recipes_ok  ? "a recipe cannot run here (exit 3)"
			       : "BTF, privileges, perf_event and raw_tp work (exit 0)");
	return essentials_ok && recipes_ok ? DIAG_EXIT_OK : DIAG_EXIT_REFUSED;
}
