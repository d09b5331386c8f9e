/* session.c — load, attach, run, detach, collect (see session.h).
 * Must not: print anything but the progress line, interpret data, or return with a link attached.
 */
#include "session.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "diag_bpf.h"
#include "kernel.h"
#include "symbols.h"

#define TICK_NS 1000000000ull        /* probe ticks; one governor window starts each tick */
#define STATS_WINDOW_NS 50000000ull /* how long BPF run-time statistics stay on per tick */
#define PROGRESS_NS 200000000ull

/* The overhead governor. BPF run-time statistics make every BPF program on the machine read the
 * clock twice per run (about +100 ns per event on a VM, more than our programs cost), so they are
 * switched on for a 50 ms window each second, and the CPU share our programs used in those
 * windows is the measurement. */
struct governor {
	int stats_fd;                 /* open while a window is measuring */
	bool unavailable;
	uint64_t window_start, window_ns0;
	uint64_t measured_ns, measured_wall; /* sums over the finished windows */
	double last_pct;              /* -1 until a window finished */
};

struct session {
	const struct plan *plan;
	struct probe *probes;
	unsigned n_loaded;
	int sig_fd, pid_fd;
	sigset_t old_mask;
	struct governor gov;
};

static void sum_runtime(struct session *s, uint64_t *ns)
{
	*ns = 0;
	for (unsigned i = 0; i < s->n_loaded; i++) {
		struct bpf_object *obj = s->probes[i].kind->object(&s->probes[i]);
		struct bpf_program *prog;
		if (!obj)
			continue;
		bpf_object__for_each_program(prog, obj) {
			uint64_t pns, pcnt;
			int fd = bpf_program__fd(prog);
			if (fd >= 0 && kernel_prog_runtime(fd, &pns, &pcnt) == 0)
				*ns += pns;
		}
	}
}

static void detach_all(struct session *s)
{
	for (unsigned i = 0; i < s->n_loaded; i++)
		if (s->probes[i].kind->detach)
			s->probes[i].kind->detach(&s->probes[i]);
}

static void destroy_probes(struct probe *probes, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		probes[i].kind->destroy(&probes[i]);
		free(probes[i].priv);
	}
	free(probes);
}

/* Opens and loads every probe of the plan (the verifier sees each program); nothing attached.
 * *n_loaded counts the probes to destroy, also on failure. */
static int load_probes(const struct plan *plan, struct probe **out, unsigned *n_loaded,
		       struct diag_err *err)
{
	struct probe *probes = xcalloc(plan->n_probes, sizeof(*probes));
	*out = probes;
	*n_loaded = 0;
	for (unsigned i = 0; i < plan->n_probes; i++) {
		struct probe *p = &probes[i];
		p->kind = plan->probes[i].kind;
		p->cfg = plan->probes[i].cfg;
		p->priv = xcalloc(1, p->kind->private_size ? p->kind->private_size : 1);
		*n_loaded = i + 1;
		if (p->kind->load(p, err))
			return diag_wrap(err, "probe %s (%s)", p->cfg.id, p->kind->name);
	}
	return 0;
}

static void destroy_all(struct session *s)
{
	destroy_probes(s->probes, s->n_loaded);
	s->probes = NULL;
	s->n_loaded = 0;
	if (s->gov.stats_fd >= 0)
		close(s->gov.stats_fd);
	if (s->pid_fd >= 0)
		close(s->pid_fd);
	if (s->sig_fd >= 0) {
		/* A signal that arrived after the loop (a second Ctrl-C while symbolizing) has been
		 * answered by stopping: consume it, so that restoring the mask does not kill the
		 * process before its report and audit line are written. */
		struct signalfd_siginfo si;
		while (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
		close(s->sig_fd);
	}
	s->gov.stats_fd = s->pid_fd = s->sig_fd = -1;
	sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
}

/* Signals become readable events on an fd, so the loop (and nothing else) decides when to stop,
 * and every stop goes through the same detach path. */
static int block_signals(struct session *s, struct diag_err *err)
{
	sigset_t mask;
	stop_signals(&mask);
	if (sigprocmask(SIG_BLOCK, &mask, &s->old_mask))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "sigprocmask: %s", strerror(errno));
	s->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sig_fd < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "signalfd: %s", strerror(errno));
	return 0;
}

static int load_and_attach(struct session *s, struct value *notes, struct diag_err *err)
{
	if (load_probes(s->plan, &s->probes, &s->n_loaded, err))
		return -1;
	for (unsigned i = 0; i < s->n_loaded; i++)
		if (s->probes[i].note[0])
			value_arr_push(notes, value_str_take(xasprintf("%s: %s", s->probes[i].cfg.id,
								       s->probes[i].note)));
	for (unsigned i = 0; i < s->n_loaded; i++) {
		struct probe *p = &s->probes[i];
		if (p->kind->attach(p, err))
			return diag_wrap(err, "probe %s (%s)", p->cfg.id, p->kind->name);
	}
	return 0;
}

static bool signal_arrived(int sig_fd)
{
	struct signalfd_siginfo si;
	return read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si);
}

static uint64_t events_so_far(struct session *s)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < s->n_loaded; i++)
		n += probe_events(&s->probes[i]);
	return n;
}

static void draw_progress(const struct session_opts *o, double elapsed, double total,
			  uint64_t events, double pct)
{
	fprintf(stderr, "\r\033[K%s: collecting %.1f / %.1f s, %llu events", o->label, elapsed,
		total, (unsigned long long)events);
	if (pct >= 0)
		fprintf(stderr, ", BPF CPU %.2f%%", pct);
	fflush(stderr);
}

static void governor_open_window(struct session *s, uint64_t now)
{
	struct governor *g = &s->gov;
	if (g->unavailable || g->stats_fd >= 0)
		return;
	g->stats_fd = kernel_enable_bpf_stats();
	if (g->stats_fd < 0) {
		g->unavailable = true;
		return;
	}
	sum_runtime(s, &g->window_ns0);
	g->window_start = now;
}

/* Closes the window; returns the CPU share (%) our programs used in it, -1 when none was open. */
static double governor_close_window(struct session *s, uint64_t now)
{
	struct governor *g = &s->gov;
	if (g->stats_fd < 0)
		return -1;
	uint64_t ns;
	sum_runtime(s, &ns);
	close(g->stats_fd);
	g->stats_fd = -1;
	uint64_t wall = now - g->window_start;
	if (wall == 0)
		return -1;
	g->measured_ns += ns - g->window_ns0;
	g->measured_wall += wall;
	g->last_pct = (double)(ns - g->window_ns0) * 100.0 / ((double)wall * s->plan->ncpus);
	return g->last_pct;
}

static enum stop_reason run_loop(struct session *s, const struct session_opts *o, uint64_t start_ns)
{
	const struct plan *plan = s->plan;
	uint64_t deadline = start_ns + (uint64_t)(plan->duration_s * 1e9);
	uint64_t next_tick = start_ns + TICK_NS;
	double budget = plan->recipe->budgets.max_cpu_pct;

	governor_open_window(s, start_ns);
	for (;;) {
		uint64_t now = mono_ns();
		if (now >= deadline)
			return STOP_DURATION;
		uint64_t wake = deadline < next_tick ? deadline : next_tick;
		if (s->gov.stats_fd >= 0 && s->gov.window_start + STATS_WINDOW_NS < wake)
			wake = s->gov.window_start + STATS_WINDOW_NS;
		if (o->progress && wake > now && wake - now > PROGRESS_NS)
			wake = now + PROGRESS_NS;
		/* A turn of the loop can come late (a stopped process, a saturated CPU): a wake time
		 * already past means "do not wait", never a wrapped-around timeout. */
		int timeout_ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
		struct pollfd fds[2] = { { .fd = s->sig_fd, .events = POLLIN },
					 { .fd = s->pid_fd, .events = POLLIN } };
		int rc = poll(fds, s->pid_fd >= 0 ? 2 : 1, timeout_ms);
		if (rc < 0 && errno != EINTR) /* ENOMEM: end like an interruption (the contract's */
			return STOP_SIGNAL;       /* stop reasons have no other fitting value) */
		if (rc > 0 && (fds[0].revents & POLLIN) && signal_arrived(s->sig_fd))
			return STOP_SIGNAL;
		if (rc > 0 && s->pid_fd >= 0 && (fds[1].revents & POLLIN))
			return STOP_TARGET_EXITED;
		now = mono_ns();
		if (s->gov.stats_fd >= 0 && now >= s->gov.window_start + STATS_WINDOW_NS) {
			double pct = governor_close_window(s, now);
			if (budget > 0 && pct > budget)
				return STOP_OVER_BUDGET;
		}
		if (now >= next_tick) {
			for (unsigned i = 0; i < s->n_loaded; i++)
				if (s->probes[i].kind->tick)
					s->probes[i].kind->tick(&s->probes[i]);
			governor_open_window(s, mono_ns());
			next_tick += TICK_NS;
			if (next_tick <= now) /* we were stopped for a while: do not catch up */
				next_tick = now + TICK_NS;
		}
		if (o->progress)
			draw_progress(o, (double)(now - start_ns) / 1e9, plan->duration_s,
				      events_so_far(s), s->gov.last_pct);
	}
}

/* Kernel symbols are only needed after the run, and reading /proc/kallsyms takes tens of
 * milliseconds of kernel time: it happens on a thread while the probes collect. */
struct ksyms_loader {
	pthread_t thread;
	bool started;
	struct ksyms *ksyms;
	struct diag_err err;
};

static void *ksyms_loader_main(void *arg)
{
	struct ksyms_loader *l = arg;
	l->ksyms = ksyms_load(NULL, &l->err);
	return NULL;
}

static void ksyms_loader_start(struct ksyms_loader *l)
{
	l->started = pthread_create(&l->thread, NULL, ksyms_loader_main, l) == 0;
	if (!l->started)
		ksyms_loader_main(l);
}

static struct ksyms *ksyms_loader_join(struct ksyms_loader *l)
{
	if (l->started)
		pthread_join(l->thread, NULL);
	l->started = false;
	return l->ksyms;
}

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

const char *stop_reason_name(enum stop_reason r)
{
	static const char *const names[] = {
		[STOP_DURATION] = "duration",
		[STOP_SIGNAL] = "signal",
		[STOP_TARGET_EXITED] = "target-exited",
		[STOP_OVER_BUDGET] = "over-budget",
	};
	return (unsigned)r < ARRAY_LEN(names) ? names[r] : "?";
}

int session_run(const struct plan *plan, const struct session_opts *opts, struct session_out *out,
		struct diag_err *err)
{
	struct session s = { .plan = plan, .sig_fd = -1, .pid_fd = -1,
			     .gov = { .stats_fd = -1, .last_pct = -1 } };
	struct ksyms_loader kl = { 0 };
	struct ksyms *ksyms = NULL;
	struct usyms *usyms = NULL;
	struct diag_err soft;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->notes = value_arr();
	sigemptyset(&s.old_mask);
	if (block_signals(&s, err))
		goto done;

	if (plan->target_pid > 0) {
		usyms = usyms_new(plan->target_pid);
		if (usyms_snapshot(usyms, &soft))
			value_arr_push(out->notes, value_str(soft.msg));
		s.pid_fd = (int)syscall(SYS_pidfd_open, plan->target_pid, 0);
		if (s.pid_fd < 0 && errno == ESRCH) {
			diag_fail(err, DIAG_EXIT_RUNTIME, "process %d exited before collection started",
				  plan->target_pid);
			goto done;
		}
		if (s.pid_fd < 0)
			value_arr_push(out->notes, value_str_take(xasprintf(
				"target exit is not detected (pidfd_open: %s): the run lasts its full duration",
				strerror(errno))));
	}

	if (load_and_attach(&s, out->notes, err))
		goto done;
	/* After loading: libbpf has freed the kernel BTF it parsed, so the two never peak together. */
	ksyms_loader_start(&kl);

	utc_now(out->started_at, sizeof(out->started_at));
	uint64_t start_ns = mono_ns();
	out->stop_reason = run_loop(&s, opts, start_ns);
	uint64_t end_ns = mono_ns();
	governor_close_window(&s, end_ns);
	detach_all(&s);
	if (opts->progress)
		fputs("\r\033[K", stderr);

	out->duration_s = (double)(end_ns - start_ns) / 1e9;
	out->events = events_so_far(&s);
	out->bpf_cpu_pct = s.gov.measured_wall ? (double)s.gov.measured_ns * 100.0 /
						 ((double)s.gov.measured_wall * plan->ncpus)
					       : -1;
	if (s.gov.unavailable)
		value_arr_push(out->notes, value_str("BPF run-time statistics unavailable: overhead not measured, governor off"));

	/* The end snapshot lets us symbolize code mapped during the run; a dead target keeps the
	 * start snapshot. */
	if (usyms && out->stop_reason != STOP_TARGET_EXITED)
		usyms_snapshot(usyms, &soft);

	ksyms = ksyms_loader_join(&kl);
	if (!ksyms)
		value_arr_push(out->notes, value_str_take(xasprintf("kernel frames not symbolized: %s", kl.err.msg)));
	struct collect_ctx ctx = { .ksyms = ksyms, .usyms = usyms, .wall_s = out->duration_s,
				   .ncpus = plan->ncpus };
	out->results = value_obj();
	out->probes = value_arr();
	for (unsigned i = 0; i < s.n_loaded; i++) {
		struct probe *p = &s.probes[i];
		struct value *res = NULL;
		struct bpf_object *obj = p->kind->object(p);
		struct value *info = value_arr_push(out->probes, value_obj());
		value_set_str(info, "id", p->cfg.id);
		value_set_str(info, "kind", p->kind->name);
		value_set_str(info, "variant", p->variant ? p->variant : "");
		if (p->note[0])
			value_set_str(info, "note", p->note);
		if (obj) {
			uint64_t lost = probe_stat_sum(obj, DIAG_STAT_MAP_FULL) + probe_stat_sum(obj, DIAG_STAT_LOST);
			value_set_int(info, "events", (int64_t)probe_events(p));
			value_set_int(info, "dropped", (int64_t)lost);
			out->dropped += lost;
		}
		if (p->kind->collect(p, &ctx, &res, &soft) == 0)
			value_obj_set(out->results, p->cfg.id, res);
		else
			value_arr_push(out->notes, value_str_take(xasprintf("probe %s: no results: %s", p->cfg.id, soft.msg)));
	}
	rc = 0;
done:
	destroy_all(&s);
	usyms_free(usyms);
	ksyms_free(ksyms_loader_join(&kl));
	if (rc)
		session_out_free(out);
	return rc;
}

int session_load_only(const struct plan *plan, struct value **variants, struct diag_err *err)
{
	struct probe *probes;
	unsigned n;
	int rc = load_probes(plan, &probes, &n, err);
	if (rc == 0) {
		*variants = value_obj();
		for (unsigned i = 0; i < n; i++) {
			struct value *v = value_obj_set(*variants, probes[i].cfg.id, value_obj());
			value_set_str(v, "variant", probes[i].variant ? probes[i].variant : "");
			if (probes[i].note[0])
				value_set_str(v, "note", probes[i].note);
		}
	}
	destroy_probes(probes, n);
	return rc;
}

void session_out_free(struct session_out *out)
{
	value_free(out->results);
	value_free(out->probes);
	value_free(out->notes);
	out->results = out->probes = out->notes = NULL;
}
