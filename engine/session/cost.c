/* cost.c — what a run costs the server, window by window (cost.h).
 * Must not: decide, switch BPF statistics, or print.
 *
 * Choices:
 * - A uretprobe's hits count its return only when its probe also has uprobe programs (the
 *   function's entry traps once for both); alone, each of its hits is an entry trap too.
 * - The syscall slow path is counted once per syscall of the machine, however many of our
 *   programs keep it on, and shared among the probes that do, by their number of such programs.
 *   The machine's syscalls are the runs of a program of ours that sees them all (raw_syscalls'
 *   sys_enter), else of a nop counter attached for the purpose (syscalls:sys_enter_mmap alone
 *   slows every syscall but counts only mmaps).
 * - diagnose's own CPU, for the governor, is the collecting thread's (draining and unwinding
 *   grow with the events; the symbol loader's one read of kallsyms and this file's own thread do
 *   not, and would look like a rate in the first window); for the report, the whole process's
 *   over the collection.
 */
#include "session/cost.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel/kernel.h"

#define COST_SELF_AFTER_NS 1000000000ull /* the collecting thread counts from the first second on */
#define COST_SYSCALL_READY 1u
#define COST_ALL_READY 2u

struct cost_prog {
	int fd;
	enum hit_class cls;
	bool slow_path;
	uint64_t cnt0, ns0;
};

struct cost_probe {
	struct cost_prog *progs;
	unsigned n_progs, n_slow;
	bool has_uprobe;
};

static uint64_t cpu_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cost_collection_start(struct cost_meter *m)
{
	m->self_mark = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	m->self_mark_ns = m->process0_ns = mono_ns();
	m->process0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
}

void cost_collection_end(struct cost_meter *m)
{
	if (!m->process0_ns)
		return;
	m->process_ns = (double)(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - m->process0);
	m->process_wall_ns = (double)(mono_ns() - m->process0_ns);
}

static void publish(struct cost_meter *m, unsigned bit)
{
	pthread_mutex_lock(&m->lock);
	m->ready |= bit;
	pthread_cond_broadcast(&m->ready_cond);
	pthread_mutex_unlock(&m->lock);
}

static void wait_for(struct cost_meter *m, unsigned bit)
{
	if (!m->started)
		return;
	pthread_mutex_lock(&m->lock);
	while (!(m->ready & bit))
		pthread_cond_wait(&m->ready_cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

/* The thread: the syscall figure first (it needs the slow path off: the probes wait to attach),
 * then the uprobe ones (a uprobe's release waits for grace periods: after publishing). */
static void *measure(void *arg)
{
	struct cost_meter *m = arg;
	struct hit_costs unit = { 0 };
	struct diag_err err = { 0 };
	bool failed = false;
	struct hitcost_held held = { .n = 0 };
	if (m->mask & (1u << HIT_SYSCALL))
		failed |= hitcost_measure(1u << HIT_SYSCALL, &unit, &held, &err) != 0;
	pthread_mutex_lock(&m->lock);
	m->unit.ns[HIT_SYSCALL] = unit.ns[HIT_SYSCALL];
	m->unit.measured[HIT_SYSCALL] = unit.measured[HIT_SYSCALL];
	pthread_mutex_unlock(&m->lock);
	publish(m, COST_SYSCALL_READY);
	unsigned up = m->mask & ((1u << HIT_UPROBE) | (1u << HIT_URETPROBE));
	if (up)
		failed |= hitcost_measure(up, &unit, &held, &err) != 0;
	pthread_mutex_lock(&m->lock);
	m->unit = unit;
	m->unit_failed = failed;
	if (failed)
		m->unit_err = err;
	pthread_mutex_unlock(&m->lock);
	publish(m, COST_ALL_READY);
	hitcost_release(&held); /* the uprobes' grace periods: after the figures are out */
	return NULL;
}

void cost_meter_init(struct cost_meter *m, struct probe *probes, unsigned n, int ncpus)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	m->ncpus = ncpus > 0 ? ncpus : 1;
	m->counter_link = m->counter_prog = -1;
	m->probes = xcalloc(n ? n : 1, sizeof(*m->probes));
	m->total_by_probe = xcalloc(n ? n : 1, sizeof(*m->total_by_probe));
	bool sees_all_syscalls = false;
	for (unsigned i = 0; i < n; i++) {
		struct probe *p = &probes[i];
		struct bpf_object *obj = p->kind->object ? p->kind->object(p) : NULL;
		struct bpf_program *prog;
		if (!obj)
			continue;
		struct cost_probe *cp = &m->probes[i];
		bpf_object__for_each_program(prog, obj) {
			int fd = bpf_program__fd(prog);
			if (fd < 0)
				continue; /* not loaded: an attach variant not chosen */
			cp->progs = xrealloc(cp->progs, (cp->n_progs + 1) * sizeof(*cp->progs));
			struct cost_prog *cg = &cp->progs[cp->n_progs++];
			*cg = (struct cost_prog){ .fd = fd, .cls = hitcost_class_of(prog),
						  .slow_path = hitcost_turns_slow_path_on(prog) };
			cp->n_slow += cg->slow_path;
			cp->has_uprobe |= cg->cls == HIT_UPROBE;
			m->slow_path |= cg->slow_path;
			sees_all_syscalls |= cg->cls == HIT_SYSCALL;
			m->mask |= cg->cls == HIT_OTHER ? 0 : 1u << cg->cls;
		}
	}
	if (m->slow_path)
		m->mask |= 1u << HIT_SYSCALL;
	m->counter_link = sees_all_syscalls ? -1 : -2; /* -2: wanted once attached */
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->ready_cond, NULL);
	m->started = m->mask && pthread_create(&m->thread, NULL, measure, m) == 0;
	if (!m->started)
		m->ready = COST_SYSCALL_READY | COST_ALL_READY;
}

void cost_meter_wait_unattached(struct cost_meter *m)
{
	wait_for(m, COST_SYSCALL_READY);
}

void cost_meter_attached(struct cost_meter *m, char **note)
{
	*note = NULL;
	if (m->counter_link != -2)
		return;
	m->counter_link = -1;
	if (!m->slow_path)
		return;
	struct diag_err err;
	m->counter_link = hitcost_syscall_counter_open(&m->counter_prog, &err);
	if (m->counter_link < 0)
		*note = xasprintf("the slow path syscalls take while a syscall tracepoint is attached is "
				  "not in the run's cost: %s", err.msg);
}

void cost_window_begin(struct cost_meter *m)
{
	for (unsigned i = 0; i < m->n; i++)
		for (unsigned k = 0; k < m->probes[i].n_progs; k++) {
			struct cost_prog *cg = &m->probes[i].progs[k];
			if (kernel_prog_runtime(cg->fd, &cg->ns0, &cg->cnt0))
				cg->ns0 = cg->cnt0 = 0;
		}
	uint64_t ns;
	if (m->counter_prog >= 0 && kernel_prog_runtime(m->counter_prog, &ns, &m->counter_cnt0))
		m->counter_cnt0 = 0;
}

static void add_share(struct cost_share *to, const struct cost_share *s)
{
	to->bpf_ns += s->bpf_ns;
	to->fixed_ns += s->fixed_ns;
	for (int c = 0; c < HIT_N; c++)
		to->hits[c] += s->hits[c];
}

void cost_window_end(struct cost_meter *m, double wall_ns, struct cost_window *w,
		     struct cost_share *by_probe, bool account)
{
	struct cost_share local[m->n ? m->n : 1];
	struct cost_share *share = by_probe ? by_probe : local;
	memset(w, 0, sizeof(*w));
	memset(share, 0, (m->n ? m->n : 1) * sizeof(*share));
	w->wall_ns = wall_ns;
	if (m->self_mark_ns) { /* the collecting thread's share of the interval, on this window */
		uint64_t cpu = cpu_ns(CLOCK_THREAD_CPUTIME_ID), now = mono_ns();
		/* over an interval that starts after the first second: the first drains (what the
		 * pre-flight left, the symbol loader's start) are a burst, not a rate */
		if (now > m->self_mark_ns && m->self_mark_ns - m->process0_ns >= COST_SELF_AFTER_NS)
			w->self_ns = (double)(cpu - m->self_mark) * wall_ns / (double)(now - m->self_mark_ns);
		m->self_mark = cpu;
		m->self_mark_ns = now;
	}
	double syscalls = -1;
	for (unsigned i = 0; i < m->n; i++)
		for (unsigned k = 0; k < m->probes[i].n_progs; k++) {
			struct cost_prog *cg = &m->probes[i].progs[k];
			uint64_t ns, cnt;
			if (kernel_prog_runtime(cg->fd, &ns, &cnt) || ns < cg->ns0 || cnt < cg->cnt0)
				continue;
			share[i].bpf_ns += (double)(ns - cg->ns0);
			if (cg->cls != HIT_SYSCALL)
				share[i].hits[cg->cls] += (double)(cnt - cg->cnt0);
			else if ((double)(cnt - cg->cnt0) > syscalls)
				syscalls = (double)(cnt - cg->cnt0); /* sys_enter and sys_exit: once */
		}
	uint64_t ns, cnt;
	if (m->counter_prog >= 0 && kernel_prog_runtime(m->counter_prog, &ns, &cnt) == 0 &&
	    cnt >= m->counter_cnt0)
		syscalls = (double)(cnt - m->counter_cnt0);
	wait_for(m, COST_ALL_READY);
	const double *unit = m->unit.ns;
	unsigned slow_progs = 0;
	for (unsigned i = 0; i < m->n; i++)
		slow_progs += m->probes[i].n_slow;
	w->syscalls = syscalls > 0 ? syscalls : 0;
	for (unsigned i = 0; i < m->n; i++) {
		struct cost_share *s = &share[i];
		double up = s->hits[HIT_UPROBE], ret = s->hits[HIT_URETPROBE];
		s->fixed_ns = up * unit[HIT_UPROBE] + ret * unit[HIT_URETPROBE];
		if (!m->probes[i].has_uprobe) /* its returns' entries trap too */
			s->fixed_ns += ret * unit[HIT_UPROBE];
		if (slow_progs && m->probes[i].n_slow) {
			s->hits[HIT_SYSCALL] = w->syscalls * m->probes[i].n_slow / slow_progs;
			s->fixed_ns += s->hits[HIT_SYSCALL] * unit[HIT_SYSCALL];
		}
		w->bpf_ns += s->bpf_ns;
		w->fixed_ns += s->fixed_ns;
		for (int c = 0; c < HIT_N; c++)
			w->hits[c] += s->hits[c];
		if (account)
			add_share(&m->total_by_probe[i], s);
	}
	if (account) {
		m->total.wall_ns += w->wall_ns;
		m->total.bpf_ns += w->bpf_ns;
		m->total.fixed_ns += w->fixed_ns;
		m->total.self_ns += w->self_ns;
		m->total.syscalls += w->syscalls;
		for (int c = 0; c < HIT_N; c++)
			m->total.hits[c] += w->hits[c];
	}
}

double cost_total_ns(const struct cost_window *w)
{
	return w->bpf_ns + w->fixed_ns + w->self_ns;
}

double cost_pct(const struct cost_meter *m, const struct cost_window *w, double ns)
{
	return w->wall_ns > 0 ? ns * 100.0 / (w->wall_ns * m->ncpus) : 0;
}

static double round3(double x)
{
	return round(x * 1000) / 1000;
}

struct value *cost_summary(const struct cost_meter *m, const char *const *ids)
{
	const struct cost_window *t = &m->total;
	if (t->wall_ns <= 0)
		return NULL;
	struct value *v = value_obj();
	double secs = t->wall_ns / 1e9;
	value_set_num(v, "bpf_cpu_pct", round3(cost_pct(m, t, t->bpf_ns)));
	value_set_num(v, "fixed_cpu_pct", round3(cost_pct(m, t, t->fixed_ns)));
	/* the whole process over the collection (its threads, the start-up reads included) */
	double self_pct = m->process_wall_ns > 0 ? m->process_ns * 100.0 / (m->process_wall_ns * m->ncpus)
						 : cost_pct(m, t, t->self_ns);
	value_set_num(v, "self_cpu_pct", round3(self_pct));
	value_set_num(v, "server_cpu_pct", round3(cost_pct(m, t, t->bpf_ns + t->fixed_ns) + self_pct));
	value_set_num(v, "measured_s", round3(secs));
	value_set_num(v, "uprobe_hits_per_s", round(t->hits[HIT_UPROBE] / secs));
	value_set_num(v, "uretprobe_hits_per_s", round(t->hits[HIT_URETPROBE] / secs));
	value_set_num(v, "slowed_syscalls_per_s", round(t->syscalls / secs));
	struct value *unit = value_obj_set(v, "per_hit_ns", value_obj());
	static const char *const names[HIT_N] = { [HIT_UPROBE] = "uprobe", [HIT_URETPROBE] = "uretprobe",
						  [HIT_SYSCALL] = "syscall" };
	for (int c = HIT_UPROBE; c < HIT_N; c++)
		if (m->unit.measured[c])
			value_set_num(unit, names[c], round(m->unit.ns[c]));
	if (m->unit_failed)
		value_set_str(v, "per_hit_note", m->unit_err.msg);
	struct value *by = value_obj_set(v, "probes", value_obj());
	for (unsigned i = 0; i < m->n; i++) {
		const struct cost_share *s = &m->total_by_probe[i];
		if (!m->probes[i].n_progs)
			continue;
		value_set_num(by, ids[i], round3(cost_pct(m, t, s->bpf_ns + s->fixed_ns)));
	}
	return v;
}

void cost_meter_free(struct cost_meter *m)
{
	if (!m->probes) /* never initialized (zeroed), or freed already */
		return;
	if (m->started)
		pthread_join(m->thread, NULL);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->ready_cond);
	if (m->counter_link >= 0)
		close(m->counter_link);
	if (m->counter_prog >= 0)
		close(m->counter_prog);
	for (unsigned i = 0; i < m->n; i++)
		free(m->probes[i].progs);
	free(m->probes);
	free(m->total_by_probe);
	memset(m, 0, sizeof(*m));
}
