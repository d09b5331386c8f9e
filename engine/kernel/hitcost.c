/* hitcost.c — the fixed cost per hit of an attachment, measured on this machine (hitcost.h).
 * Must not: keep a program or link past hitcost_release, print, or hold global state.
 *
 * Choices:
 * - What is timed is our own thread's CPU time (CLOCK_THREAD_CPUTIME_ID): a trap or a syscall's
 *   slow path runs on the thread that hit it, and time the thread spent preempted by the machine's
 *   other work is not counted. A uprobe figure is the least of several batches, untraced before
 *   the attachment, traced while it is there; their difference is the cost per hit (the syscall
 *   figure: below).
 * - The uprobe is a nop program on a function of ours, for this process only (perf_event_open's
 *   pid 0): nothing else on the machine traps. A uretprobe's figure is what its return adds to the
 *   entry's trap (a function traced at both ends traps once at its entry: timed with the entry's
 *   uprobe still there, the difference is the return's part); the syscall figure is
 *   the whole slow path a syscall takes while any syscall tracepoint is attached (entry and exit),
 *   with a nop on raw_syscalls' sys_enter.
 * - The syscall figure is the median of rounds, each an untraced and a traced batch side by side
 *   (their order alternating), not the least traced batch less the least untraced one: on a busy
 *   VM the two least batches come from moments far apart, and that difference read 0 or less in
 *   2 runs of 15 under load; the rounds' median did in 1 of 26, and a second set of rounds, taken
 *   only then, covers that one. A re-attachment waits ~10 ms for the kernel, so the rounds are few.
 */
#include "kernel/hitcost.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 7
#define UPROBE_CALLS 400   /* a batch: ~1 ms at 2 us a trap */
#define SYSCALL_CALLS 3000 /* a batch: ~2 ms at 600 ns a call (a VM's syscall) */
#define SYSCALL_ROUNDS 5   /* a set of rounds; a second set only when the first's median is <= 0 */

/* The function a measuring uprobe goes on: kept out of line, and not folded into its caller. */
__attribute__((noinline, used)) int hitcost_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static bool prefix(const char *s, const char *p)
{
	return s && strncmp(s, p, strlen(p)) == 0;
}

bool hitcost_turns_slow_path_on(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	return prefix(sec, "raw_tp/sys_enter") || prefix(sec, "raw_tp/sys_exit") ||
	       prefix(sec, "raw_tracepoint/sys_enter") || prefix(sec, "raw_tracepoint/sys_exit") ||
	       prefix(sec, "tp_btf/sys_enter") || prefix(sec, "tp_btf/sys_exit") ||
	       prefix(sec, "tracepoint/raw_syscalls/") || prefix(sec, "tp/raw_syscalls/") ||
	       prefix(sec, "tracepoint/syscalls/") || prefix(sec, "tp/syscalls/");
}

enum hit_class hitcost_class_of(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	if (prefix(sec, "uretprobe"))
		return HIT_URETPROBE;
	if (prefix(sec, "uprobe") || prefix(sec, "usdt"))
		return HIT_UPROBE;
	/* a program that sees every syscall: its runs are the machine's syscalls */
	if (hitcost_turns_slow_path_on(prog) && !prefix(sec, "tracepoint/syscalls/") &&
	    !prefix(sec, "tp/syscalls/"))
		return HIT_SYSCALL;
	return HIT_OTHER;
}

int hitcost_self_offset(const void *fn, uint64_t *offset)
{
	uintptr_t addr = (uintptr_t)fn;
	char *maps = read_file("/proc/self/maps", NULL);
	if (!maps)
		return -1;
	int rc = -1;
	for (char *line = maps; line && *line && rc;) {
		unsigned long start, end, off;
		if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &off) == 3 && addr >= start && addr < end) {
			*offset = addr - start + off;
			rc = 0;
		}
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	free(maps);
	if (rc)
		errno = ENOENT;
	return rc;
}

/* Loads `r0 = 0; exit` of type; the fd, or -1 with errno. */
static int load_nop(enum bpf_prog_type type, const char *name)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	return bpf_prog_load(type, name, "GPL", insns, ARRAY_LEN(insns), NULL);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double min_of(const double *v, size_t n)
{
	double m = v[0];
	for (size_t i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum loop { LOOP_CALL, LOOP_SYSCALL };

/* Per call, in ns of our CPU: the least of `batches` batches of n calls (what the machine's
 * other work adds to a batch — interrupts, a migration, a cold cache — only ever adds). */
static double time_calls(enum loop what, unsigned n, unsigned batches)
{
	int (*volatile fn)(int) = hitcost_target;
	double per[BATCHES];
	batches = batches < 1 ? 1 : batches > BATCHES ? BATCHES : batches;
	for (unsigned b = 0; b < batches; b++) {
		uint64_t t0 = thread_cpu_ns();
		int acc = 0;
		for (unsigned i = 0; i < n; i++)
			acc += what == LOOP_CALL ? fn((int)i) : (int)syscall(SYS_getppid);
		__asm__ volatile("" : : "r"(acc));
		per[b] = (double)(thread_cpu_ns() - t0) / n;
	}
	return min_of(per, batches);
}

/* The uprobe PMU's type and the config bit that makes a probe a return probe; -1 when absent. */
static int uprobe_pmu(int *ret_bit)
{
	char *type = read_file("/sys/bus/event_source/devices/uprobe/type", NULL);
	char *fmt = read_file("/sys/bus/event_source/devices/uprobe/format/retprobe", NULL);
	int t = type ? atoi(type) : -1;
	*ret_bit = fmt && sscanf(fmt, "config:%d", ret_bit) == 1 ? *ret_bit : 0;
	free(type);
	free(fmt);
	return t;
}

/* A nop on hitcost_target of this process (a return probe with ret), attached: the perf event's
 * fd (the program's in *prog), or -1 with err. */
static int attach_self_uprobe(bool ret, int *prog, struct diag_err *err)
{
	char exe[4096];
	uint64_t offset;
	int ret_bit, type = uprobe_pmu(&ret_bit);
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (type < 0 || len <= 0 || hitcost_self_offset((const void *)hitcost_target, &offset))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "hit cost: no uprobe on our own code (%s)",
				 type < 0 ? "no uprobe PMU" : strerror(errno));
	exe[len] = '\0';
	*prog = load_nop(BPF_PROG_TYPE_KPROBE, "diag_hitcost_up");
	if (*prog < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "hit cost: loading a nop: %s", strerror(errno));
	struct perf_event_attr attr = { .size = sizeof(attr), .type = (uint32_t)type, .sample_period = 1,
					.config = ret ? 1ull << ret_bit : 0,
					.config1 = (uint64_t)(uintptr_t)exe, .config2 = offset };
	int pfd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0 || ioctl(pfd, PERF_EVENT_IOC_SET_BPF, *prog) || ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0)) {
		int e = errno;
		if (pfd >= 0)
			close(pfd);
		close(*prog);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "hit cost: a uprobe on our own code: %s", strerror(e));
	}
	return pfd;
}

int hitcost_syscall_counter_open(int *prog_fd, struct diag_err *err)
{
	*prog_fd = load_nop(BPF_PROG_TYPE_RAW_TRACEPOINT, "diag_syscalls");
	if (*prog_fd < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "syscall counter: loading a nop: %s", strerror(errno));
	int link = bpf_raw_tracepoint_open("sys_enter", *prog_fd);
	if (link < 0) {
		int e = errno;
		close(*prog_fd);
		*prog_fd = -1;
		return diag_fail(err, DIAG_EXIT_RUNTIME, "syscall counter: raw_syscalls:sys_enter: %s",
				 strerror(e));
	}
	return link;
}

static void hold(struct hitcost_held *held, int fd)
{
	if (held->n < ARRAY_LEN(held->fd))
		held->fd[held->n++] = fd;
	else
		close(fd);
}

void hitcost_release(struct hitcost_held *held)
{
	for (unsigned i = 0; i < held->n; i++)
		close(held->fd[i]);
	held->n = 0;
}

/* A round: an untraced batch of syscalls and a traced one (a nop on raw_syscalls' sys_enter),
 * in the order `traced_first` says: the traced one's extra per call; 0, or -1 with err. */
static int syscall_round(bool traced_first, double *extra, struct diag_err *err)
{
	int prog, link;
	double plain = traced_first ? 0 : time_calls(LOOP_SYSCALL, SYSCALL_CALLS, 1);
	if ((link = hitcost_syscall_counter_open(&prog, err)) < 0)
		return -1;
	double traced = time_calls(LOOP_SYSCALL, SYSCALL_CALLS, 1);
	close(link); /* a tracepoint's release does not wait: the slow path goes off now */
	close(prog);
	if (traced_first)
		plain = time_calls(LOOP_SYSCALL, SYSCALL_CALLS, 1);
	*extra = traced - plain;
	return 0;
}

/* The syscall slow path's cost per call: the median of a set of rounds, a second set joining
 * the first when its median is not above 0 (what the machine's other work did to one round). */
static int syscall_slow_path_ns(double *ns, struct diag_err *err)
{
	double extra[2 * SYSCALL_ROUNDS];
	unsigned n = 0;
	for (unsigned set = 0; set < 2; set++) {
		for (unsigned r = 0; r < SYSCALL_ROUNDS; r++, n++)
			if (syscall_round(n % 2, &extra[n], err))
				return -1;
		double copy[2 * SYSCALL_ROUNDS];
		memcpy(copy, extra, n * sizeof(*extra));
		*ns = median_of(copy, n);
		if (*ns > 0)
			break;
	}
	return 0;
}

int hitcost_measure(unsigned mask, struct hit_costs *out, struct hitcost_held *held,
		    struct diag_err *err)
{
	int rc = 0;
	if (mask & ((1u << HIT_UPROBE) | (1u << HIT_URETPROBE))) {
		int prog, ev;
		double base = time_calls(LOOP_CALL, UPROBE_CALLS, BATCHES), entry = -1;
		if ((ev = attach_self_uprobe(false, &prog, err)) >= 0) {
			entry = time_calls(LOOP_CALL, UPROBE_CALLS, BATCHES) - base;
			hold(held, ev);
			hold(held, prog);
			out->ns[HIT_UPROBE] = entry > 0 ? entry : 0;
			out->measured[HIT_UPROBE] = true;
		} else {
			rc = -1;
		}
		if (entry >= 0 && (mask & (1u << HIT_URETPROBE)) && (ev = attach_self_uprobe(true, &prog, err)) >= 0) {
			double both = time_calls(LOOP_CALL, UPROBE_CALLS, BATCHES) - base;
			hold(held, ev);
			hold(held, prog);
			out->ns[HIT_URETPROBE] = both > entry ? both - entry : 0;
			out->measured[HIT_URETPROBE] = true;
		} else if (mask & (1u << HIT_URETPROBE)) {
			rc = -1;
		}
	}
	if (mask & (1u << HIT_SYSCALL)) {
		double ns;
		if (syscall_slow_path_ns(&ns, err) == 0) {
			out->ns[HIT_SYSCALL] = ns > 0 ? ns : 0;
			out->measured[HIT_SYSCALL] = true;
		} else {
			rc = -1;
		}
	}
	return rc;
}
