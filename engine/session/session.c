/* session.c — load, attach, run, detach, collect (see session.h).
 * Must not: print anything but the progress line, interpret data, or return with a link attached.
 *
 * Why one file (~1,100 lines): loading, attaching, the pre-flight, the run loop with its governor
 * and detaching all act on one struct session and its probes' links; in one file, "no return with
 * a link attached" is checked by reading one file. What stands apart is apart: the cost arithmetic
 * (cost.c), the pre-flight's decisions (plan/preflight.c), the watchdog, the process set.
 */
#include "session/session.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
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

#include "kernel/core_btf.h"
#include "session/cost.h"
#include "kernel/kernel_btf.h"
#include "kernel/tp_btf.h"
#include "kernel/uprobe_multi.h"
#include "abi/diag_bpf.h"
#include "kernel/kernel.h"
#include "symbolize/ksyms.h"
#include "session/procset.h"
#include "probes/runtime.h"
#include "plan/shape.h"
#include "target/tfile.h"
#include "symbolize/usyms.h"
#include "session/watchdog.h"

#define TICK_NS 1000000000ull        /* probe ticks; one governor window starts each tick */
#define STATS_WINDOW_NS 50000000ull /* how long BPF run-time statistics stay on per tick */
#define PROGRESS_NS 200000000ull
#define PLAN_MAX_PROBES_POLLED 16   /* streaming probes whose wake fd the run loop polls */
/* After the collection, the target's files are read (symbols) for at most this long: from the
 * window's end while the probes detach (their last samples unwound as they drain), then again
 * from the end of the detach (which waits out grace periods: seconds on an emulated rt kernel),
 * for the symbols of the results. */
#define SESSION_READ_AFTER_NS 4000000000ull
#define SESSION_READ_LATE_NS 1000000000ull
#define SESSION_READ_LOAD_NS 20000000000ull
/* The watchdog's limits: loading (the verifier on a slow machine takes its time), attaching; the collection past its end (the loop checks its deadline at
 * every turn: later than this, it is stuck); detaching (the kernel waits out an RCU grace period
 * per uprobe or perf event it releases: on a slow machine, PREEMPT_RT under emulation, tens of
 * them took more than the collection's 5 s); reading the results (symbolizing is CPU work after
 * the reads, bounded by the sizes of the maps, not by time). */
#define WATCHDOG_LOAD_NS 120000000000ull
#define WATCHDOG_ATTACH_NS 60000000000ull
#define WATCHDOG_COLLECT_LATE_NS 5000000000ull
#define WATCHDOG_DETACH_NS 60000000000ull
#define WATCHDOG_RESULTS_NS 60000000000ull
#define WATCHDOG_BEFORE_SYMBOLS_NS 30000000000ull /* jcmd: JCMD_TIMEOUT_NS and its reaping */

/* The overhead governor. BPF run-time statistics make every BPF program on the machine read the
 * clock twice per run (about +100 ns per event on a VM, more than our programs cost), so they are
 * switched on for a 50 ms window each second, and what the server paid in those windows is the
 * measurement (cost.h): our programs' run time, the traps and slow paths their hits cost beyond
 * it, and our own collecting thread's CPU. */
struct governor {
	int stats_fd;                 /* open while a window is measuring */
	bool unavailable;
	uint64_t window_start;
	uint64_t measured_ns, measured_wall; /* BPF run time, and wall, over the finished windows */
	double last_pct;              /* -1 until a window finished */
	bool over_before;             /* the last window was over the budget */
	/* Per loaded probe: what the governor decides from (its share in the last window, its
	 * sampling) and the stretches of its run at each sampling rate (live_sampling). */
	struct governor_probe *probes;
	struct live_sampling *live;
};

/* A probe's sampling while the run lasts: the governor may raise its sample_every; each
 * stretch's kept events count for the rate then in force (see apply_degrade, settle_scales). */
struct live_sampling {
	int opt;          /* its sample-every option's index; -1: it cannot sample */
	uint64_t kept0;   /* its sampled events when the rate in force took effect */
	double weighted;  /* the finished stretches' kept events times their rates */
	bool raised;      /* the governor raised its rate at least once */
	double stopped_s; /* > 0: the governor stopped it this far into the collection */
	double stacks_dropped_s; /* > 0: the governor dropped its stacks this far into it */
};

struct session {
	const struct plan *plan;
	struct probe *probes;
	unsigned n_loaded;
	int sig_fd, pid_fd;
	sigset_t old_mask;
	struct governor gov;
	struct procset set;       /* a set of processes (opts->target); map_fd -1 otherwise */
	struct tfile_reader *files; /* reads what the target names (tfile.h) */
	struct cost_meter cost;   /* what the run costs the server, window by window (cost.h) */
};

/* Whether p takes stacks the governor could drop: one of its OPT_ROLE_STACKS options is on. */
static bool takes_stacks(const struct probe *p)
{
	for (size_t i = 0; i < p->kind->n_options; i++)
		if (p->kind->options[i].role == OPT_ROLE_STACKS && p->cfg.opt[i])
			return true;
	return false;
}

static uint64_t sampled_events(struct probe *p)
{
	return p->kind->sampled_events ? p->kind->sampled_events(p) : probe_events(p);
}

/* After the pre-flight decided each probe's sampling: what the governor may raise. */
static void governor_init(struct session *s)
{
	struct governor *g = &s->gov;
	g->probes = xcalloc(s->n_loaded ? s->n_loaded : 1, sizeof(*g->probes));
	g->live = xcalloc(s->n_loaded ? s->n_loaded : 1, sizeof(*g->live));
	for (unsigned i = 0; i < s->n_loaded; i++) {
		struct probe *p = &s->probes[i];
		int opt = catalog_sample_option(p->kind);
		g->live[i].opt = opt;
		g->probes[i].running = p->kind->object && p->kind->object(p);
		g->probes[i].goes_on = !g->probes[i].running && !p->skipped && !p->kind->context_only;
		g->probes[i].can_drop_stacks = g->probes[i].running && p->kind->drops_stacks &&
					       takes_stacks(p);
		if (opt < 0 || probe_set_mode(p, false, p->cfg.opt[opt] ? p->cfg.opt[opt] : 1))
			continue; /* no switch: the governor cannot sample it */
		g->probes[i].sample_every = p->cfg.opt[opt] ? p->cfg.opt[opt] : 1;
		g->probes[i].max_every = p->kind->options[opt].max;
		g->live[i].kept0 = sampled_events(p);
	}
}

/* Why the governor acted on probe i, for its note (caller frees): the window's BPF CPU, the
 * probe's share of it and the budget. */
static char *governor_why(const struct session *s, unsigned i, double window_pct)
{
	const struct governor_probe *g = &s->gov.probes[i];
	char fixed[96] = "";
	if (g->fixed_pct >= 0.005)
		snprintf(fixed, sizeof(fixed), " (%.2f%% its hits' traps and slow paths, which sampling "
			 "does not lower)", g->fixed_pct);
	return xasprintf("the governor: the run cost the server %.2f%% of the CPUs in a measuring "
			 "window, %.2f%% of it this probe's%s, over max_cpu_pct %g%%", window_pct, g->pct,
			 fixed, s->plan->recipe->budgets.max_cpu_pct);
}

/* The governor raised some probes' sampling, or dropped one's stacks: the stretch at the old
 * rate ends here, the new rate goes into the programs (and into the option collect() reads), the
 * stacks flag into their switch, and the notes say so. */
static void apply_degrade(struct session *s, double at_s, double window_pct, struct value *notes)
{
	struct governor *g = &s->gov;
	for (unsigned i = 0; i < s->n_loaded; i++) {
		struct probe *p = &s->probes[i];
		struct live_sampling *l = &g->live[i];
		if (g->probes[i].drop_stacks) {
			p->stacks_dropped = true;
			l->stacks_dropped_s = at_s > 0 ? at_s : 1e-3;
			uint64_t every = l->opt >= 0 && p->cfg.opt[l->opt] ? p->cfg.opt[l->opt] : 1;
			probe_set_mode(p, false, every);
			char *why = governor_why(s, i, window_pct);
			value_arr_push(notes, value_str_take(xasprintf(
				"%s: stacks dropped from %.1f s on (%s, sampling did not bring it under); its "
				"events after that have no call paths", p->cfg.id, at_s, why)));
			free(why);
		}
		if (!g->probes[i].raised || l->opt < 0)
			continue;
		uint64_t kept = sampled_events(p), old = p->cfg.opt[l->opt] ? p->cfg.opt[l->opt] : 1;
		l->weighted += (double)(kept - l->kept0) * (double)old;
		l->kept0 = kept;
		l->raised = true;
		p->cfg.opt[l->opt] = g->probes[i].sample_every;
		probe_set_mode(p, false, g->probes[i].sample_every);
		char *why = governor_why(s, i, window_pct);
		value_arr_push(notes, value_str_take(xasprintf("%s: sampled 1 in %" PRIu64 " from %.1f s on (%s)",
							       p->cfg.id, g->probes[i].sample_every, at_s, why)));
		free(why);
	}
}

/* Over the budget with nothing left to sample: the costliest probe stops (its links go, its
 * maps stay for collect, which reads them as covering the collection until now). */
static void stop_probe(struct session *s, unsigned i, double at_s, double window_pct,
		       struct value *notes)
{
	struct probe *p = &s->probes[i];
	probe_set_mode(p, true, 0);
	if (p->kind->detach)
		p->kind->detach(p);
	s->gov.live[i].stopped_s = at_s > 0 ? at_s : 1e-3;
	s->gov.probes[i].running = false;
	char *why = governor_why(s, i, window_pct);
	const struct live_sampling *l = &s->gov.live[i];
	value_arr_push(notes, value_str_take(xasprintf(
		"%s: stopped %.1f s into the collection (%s%s); %s", p->cfg.id, at_s, why,
		l->opt < 0 ? "" : l->raised ? ", sampling did not bring it under"
					    : ", sampling could not bring it under",
		s->gov.live[i].opt >= 0 ? "its figures are scaled from that time to the window: estimates"
					: "its figures cover that time only")));
	free(why);
}

/* The probes the pre-flight dropped (preflight.h): stopped before the collection starts, as the
 * governor stops one (their links go, the run goes on without them), and said why. */
static void drop_before_collection(struct session *s, const struct preflight_rate *rates,
				   struct value *notes)
{
	for (unsigned i = 0; i < s->n_loaded; i++) {
		if (!rates[i].dropped)
			continue;
		struct probe *p = &s->probes[i];
		probe_set_mode(p, true, 0);
		if (p->kind->detach)
			p->kind->detach(p);
		s->gov.live[i].stopped_s = 1e-3;
		s->gov.probes[i].running = false;
		value_arr_push(notes, value_str_take(xasprintf(
			"%s: not run: in the pre-flight its hits cost the server %.1f%% of the CPUs beyond its "
			"programs (%.0f uprobe traps/s, %.0f syscalls/s slowed), over max_cpu_pct %g%% whatever "
			"it samples; the run goes on with the other probes", p->cfg.id, rates[i].fixed_pct,
			rates[i].trap_hits_per_s, rates[i].slowed_syscalls_per_s,
			s->plan->recipe->budgets.max_cpu_pct)));
	}
}

/* The run is over: what one kept event stands for, over every stretch of a probe the governor
 * sampled more (the kept events of each at its rate, over all kept events). A probe it stopped
 * and that can scale stands for the whole window, sampled in time: its figures are scaled from
 * the time it ran to the window (estimates, as sampled ones are; the notes say so). */
static void settle_scales(struct session *s, double window_s)
{
	for (unsigned i = 0; s->gov.live && i < s->n_loaded; i++) {
		struct probe *p = &s->probes[i];
		struct live_sampling *l = &s->gov.live[i];
		if (l->opt < 0 || (!l->raised && l->stopped_s <= 0))
			continue;
		uint64_t kept = sampled_events(p), every = p->cfg.opt[l->opt] ? p->cfg.opt[l->opt] : 1;
		double weighted = l->weighted + (double)(kept - l->kept0) * (double)every;
		p->sample_scale = kept ? weighted / (double)kept : (double)every;
		if (l->stopped_s > 0 && l->stopped_s < window_s)
			p->sample_scale *= window_s / l->stopped_s;
		if (p->sample_scale < 1)
			p->sample_scale = 1;
	}
}

static void detach_all(struct session *s)
{
	/* The window is over: every program stops collecting first (count-only), then the links
	 * go, one by one. Releasing a uprobe waits for the kernel's grace periods (~100 ms each on
	 * 6.x: 2 s for a recipe with 20 USDT sites), and what fires meanwhile is not the window's
	 * (a server finishing 50,000 statements a second would fill a ring with them). */
	for (unsigned i = 0; i < s->n_loaded; i++)
		probe_set_mode(&s->probes[i], true, 0);
	/* the state at the window's edge before any release delays it */
	for (unsigned i = 0; i < s->n_loaded; i++)
		if (s->probes[i].kind->window_end && !(s->gov.live && s->gov.live[i].stopped_s > 0))
			s->probes[i].kind->window_end(&s->probes[i]);
	for (unsigned i = 0; i < s->n_loaded; i++)
		if (s->probes[i].kind->detach && !(s->gov.live && s->gov.live[i].stopped_s > 0))
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

/* The kernel's BTF read once into *kernel (kept for the probes' loads: kernel_btf_close after
 * them; left empty when there is no object or it cannot be read), cut into *core to the objects
 * of the plan's probes and the process-set follower's, and tp_btf programs' attach ids learnt
 * from it (tp_btf.h). */
static int build_core_btf(const struct plan *plan, struct kernel_btf *kernel, struct core_btf *core,
			  struct diag_err *err)
{
	struct core_btf_obj *objs = xcalloc(plan->n_probes + 1, sizeof(*objs));
	size_t n = 0;
	for (unsigned i = 0; i < plan->n_probes; i++)
		if (plan->probes[i].kind->bpf_bytes)
			objs[n].bytes = plan->probes[i].kind->bpf_bytes(&objs[n].size), n++;
	if (plan->target)
		objs[n].bytes = procset_bpf_bytes(&objs[n].size), n++;
	memset(kernel, 0, sizeof(*kernel));
	int rc = n ? kernel_btf_open(kernel, err) : 0;
	if (n && !rc) {
		rc = core_btf_build(kernel, objs, n, core, err);
		tp_btf_learn(kernel);
	}
	free(objs);
	return rc;
}

/* A probe whose load found that the target lacks what it needs: it does nothing from then on. */
static int na_attach(struct probe *p, struct diag_err *err)
{
	(void)p, (void)err;
	return 0;
}
static void na_destroy(struct probe *p)
{
	(void)p;
}
static struct bpf_object *na_object(struct probe *p)
{
	(void)p;
	return NULL;
}
static uint64_t na_events(struct probe *p)
{
	(void)p;
	return 0;
}
static const struct probe_kind not_applicable_kind = {
	.name = "not applicable", .attach = na_attach, .destroy = na_destroy, .object = na_object,
	.events = na_events,
};

/* Opens and loads every probe of the plan (the verifier sees each program); nothing attached.
 * *n_loaded counts the probes to destroy, also on failure. core_btf: the path of the BTF to
 * relocate against (NULL: the kernel's); kernel: the run's read of the kernel's BTF (empty: none). */
static int load_probes(const struct plan *plan, int targets_fd, struct tfile_reader *files,
		       const char *core_btf, const struct kernel_btf *kernel, struct probe **out,
		       unsigned *n_loaded, struct diag_err *err)
{
	struct probe *probes = xcalloc(plan->n_probes, sizeof(*probes));
	/* the tests' older-kernel programs (runtime.h) have no multi-uprobe links either (6.6) */
	bool uprobe_multi = !probe_test_compat() && uprobe_multi_supported(kernel->n ? kernel : NULL);
	*out = probes;
	*n_loaded = 0;
	for (unsigned i = 0; i < plan->n_probes; i++) {
		struct probe *p = &probes[i];
		p->kind = plan->probes[i].kind;
		p->cfg = plan->probes[i].cfg;
		p->cfg.filter.targets_fd = targets_fd;
		p->files = files;
		p->core_btf = core_btf;
		p->kernel_btf = kernel->n ? kernel : NULL;
		p->uprobe_multi = uprobe_multi;
		p->priv = xcalloc(1, p->kind->private_size ? p->kind->private_size : 1);
		*n_loaded = i + 1;
		uint64_t t0 = mono_ns();
		int rc = p->kind->load(p, err);
		p->load_s = (double)(mono_ns() - t0) / 1e9;
		if (rc && err->code == DIAG_EXIT_USAGE) /* bad input (an option, a path): said, not skipped */
			return diag_wrap(err, "probe %s (%s)", p->cfg.id, p->kind->name);
		if (rc) { /* the target or the kernel lacks what it needs: released; the run goes on */
			p->kind->destroy(p);
			p->kind = &not_applicable_kind;
			p->skipped = true;
			p->load_failed = err->code != DIAG_ERR_NOT_APPLICABLE;
			snprintf(p->skip_why, sizeof(p->skip_why), "%s", err->msg);
			err->code = 0;
		}
	}
	/* a recipe is not run for its context probes alone: refused (exit 3) when a probe of it did
	 * not load here, else (the target lacks what every probe needs) a usage error */
	const struct probe *first = NULL, *unloaded = NULL;
	unsigned left = 0;
	for (unsigned i = 0; i < plan->n_probes; i++) {
		if (probes[i].skipped) {
			first = first ? first : &probes[i];
			unloaded = unloaded || !probes[i].load_failed ? unloaded : &probes[i];
		} else {
			left += !plan->probes[i].kind->context_only;
		}
	}
	if (unloaded && !left)
		return diag_fail(err, DIAG_EXIT_REFUSED, "nothing of recipe %s loads here: probe %s (%s): %s",
				 plan->recipe->name, unloaded->cfg.id, plan->probes[unloaded - probes].kind->name,
				 unloaded->skip_why);
	if (first && !left)
		return diag_fail(err, DIAG_EXIT_USAGE, "nothing of recipe %s applies to this target: %s",
				 plan->recipe->name, first->skip_why);
	return 0;
}

static void destroy_all(struct session *s)
{
	cost_meter_free(&s->cost);
	destroy_probes(s->probes, s->n_loaded);
	s->probes = NULL;
	s->n_loaded = 0;
	if (s->gov.stats_fd >= 0)
		close(s->gov.stats_fd);
	free(s->gov.probes);
	free(s->gov.live);
	s->gov.probes = NULL;
	s->gov.live = NULL;
	if (s->pid_fd >= 0)
		close(s->pid_fd);
	if (s->files) /* it waits on the signals no more */
		tfile_reader_set_stop_fd(s->files, -1);
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

/* Puts every loaded probe in count-only mode (measuring) or in full mode with its configured
 * sampling, before it attaches; rates[i].status says which probes the pre-flight can measure. */
static void set_start_mode(struct probe *probes, unsigned n, bool measuring, struct preflight_rate *rates)
{
	for (unsigned i = 0; i < n; i++) {
		struct probe *p = &probes[i];
		int opt = catalog_sample_option(p->kind);
		uint64_t every = opt >= 0 ? p->cfg.opt[opt] : 1;
		int rc = probe_set_mode(p, measuring, every);
		bool has_bpf = p->kind->object && p->kind->object(p);
		rates[i] = (struct preflight_rate){
			.status = p->skipped ? RATE_NOT_APPLICABLE
				  : !has_bpf ? RATE_NOT_EVENT_DRIVEN : rc == 0 ? RATE_MEASURED : RATE_UNMEASURED,
			.sample_every = every ? every : 1,
		};
	}
}

static int attach_probes(struct probe *probes, unsigned n, struct diag_err *err)
{
	for (unsigned i = 0; i < n; i++) {
		struct probe *p = &probes[i];
		/* uprobe sites a kind left gathered for a multi-uprobe link: attached with it */
		if (p->kind->attach(p, err) || (p->kind->object && probe_bpf_uprobes_flush(p, err)))
			return diag_wrap(err, "probe %s (%s)", p->cfg.id, p->kind->name);
	}
	return 0;
}

/* Waits until deadline for a stop: 0 when the time ran out, else the reason. sig_fd / pid_fd may
 * be -1. */
static int wait_window(uint64_t deadline, int sig_fd, int pid_fd, enum stop_reason *why)
{
	for (;;) {
		uint64_t now = mono_ns();
		if (now >= deadline)
			return 0;
		struct pollfd fds[2] = { { .fd = sig_fd, .events = POLLIN }, { .fd = pid_fd, .events = POLLIN } };
		int rc = poll(fds, 2, (int)((deadline - now + 999999) / 1000000));
		if (rc > 0 && (fds[0].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				*why = STOP_SIGNAL;
				return -1;
			}
		}
		if (rc > 0 && (fds[1].revents & POLLIN)) {
			*why = STOP_TARGET_EXITED;
			return -1;
		}
	}
}

/* The pre-flight: the probes are attached in count-only mode; counts their programs' runs for
 * window_ms (their run time too, with BPF statistics on for the window), decides, and switches
 * the measured probes to full mode with the sampling decided (and the probes' own copy of their
 * options, which collect() reads to scale). Returns 0 to go on, -1 with err when refused, 1 when
 * a stop arrived during the window (*why). */
static int preflight(const struct plan *plan, struct probe *probes, unsigned n, unsigned window_ms,
		     int sig_fd, int pid_fd, struct cost_meter *cost, struct preflight_rate *rates,
		     struct value **summary, enum stop_reason *why, struct diag_err *err)
{
	struct preflight_window w = { .planned_ms = window_ms };
	int stats_fd = kernel_enable_bpf_stats();
	struct cost_share *share = xcalloc(n ? n : 1, sizeof(*share));
	struct cost_window cw;
	w.bpf_stats = stats_fd >= 0;
	cost_window_begin(cost);
	uint64_t t0 = mono_ns();
	int stopped = wait_window(t0 + (uint64_t)window_ms * 1000000ull, sig_fd, pid_fd, why);
	uint64_t wall = mono_ns() - t0;
	w.wall_s = (double)wall / 1e9;
	cost_window_end(cost, (double)wall, &cw, share, false);
	for (unsigned i = 0; i < n; i++) {
		if (rates[i].status != RATE_MEASURED)
			continue;
		probe_count_only_totals(&probes[i], &rates[i].firings, &rates[i].passed);
		rates[i].bpf_ns = w.bpf_stats ? (uint64_t)share[i].bpf_ns : 0;
		/* what sampling cannot take off: its hits' traps and slow paths */
		rates[i].fixed_ns = w.bpf_stats ? (uint64_t)share[i].fixed_ns : 0;
		rates[i].trap_hits = (uint64_t)(share[i].hits[HIT_UPROBE] + share[i].hits[HIT_URETPROBE]);
		rates[i].slowed_syscalls = (uint64_t)share[i].hits[HIT_SYSCALL];
	}
	w.per_trap_ns = cost->unit.ns[HIT_UPROBE];
	w.per_syscall_ns = cost->unit.ns[HIT_SYSCALL];
	free(share);
	if (stats_fd >= 0)
		close(stats_fd);
	if (stopped)
		return 1;
	if (preflight_decide(plan, &w, rates, summary, err))
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int opt = catalog_sample_option(probes[i].kind);
		if (rates[i].status != RATE_MEASURED)
			continue;
		if (opt >= 0)
			probes[i].cfg.opt[opt] = rates[i].sample_every;
		probe_set_mode(&probes[i], false, rates[i].sample_every);
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
	cost_window_begin(&s->cost);
	g->window_start = now;
}

/* Closes the window; returns the share (%) of the CPUs the run cost the server in it (our
 * programs, their hits' traps and slow paths, our collecting thread), each probe's part into the
 * governor's probes[i].pct; -1 when none was open. */
static double governor_close_window(struct session *s, uint64_t now)
{
	struct governor *g = &s->gov;
	if (g->stats_fd < 0)
		return -1;
	uint64_t wall = now - g->window_start;
	struct cost_share share[s->n_loaded ? s->n_loaded : 1];
	struct cost_window w;
	cost_window_end(&s->cost, (double)wall, &w, share, wall > 0);
	close(g->stats_fd);
	g->stats_fd = -1;
	if (wall == 0)
		return -1;
	for (unsigned i = 0; g->probes && i < s->n_loaded; i++) {
		g->probes[i].pct = cost_pct(&s->cost, &w, share[i].bpf_ns + share[i].fixed_ns);
		g->probes[i].fixed_pct = cost_pct(&s->cost, &w, share[i].fixed_ns);
	}
	g->measured_ns += (uint64_t)w.bpf_ns;
	g->measured_wall += wall;
	g->last_pct = cost_pct(&s->cost, &w, cost_total_ns(&w));
	return g->last_pct;
}

static enum stop_reason run_loop(struct session *s, const struct session_opts *o, uint64_t start_ns,
				 uint64_t deadline, struct value *notes)
{
	const struct plan *plan = s->plan;
	uint64_t next_tick = start_ns + TICK_NS;
	double budget = plan->recipe->budgets.max_cpu_pct;
	bool degrade = plan->recipe->budgets.degrade_sample;

	/* signals, the target's pidfd, a set's exec notices, then the probes' wake fds (streaming
	 * probes) */
	enum { FIXED_FDS = 3 };
	struct pollfd fds[FIXED_FDS + PLAN_MAX_PROBES_POLLED];
	struct probe *woken[PLAN_MAX_PROBES_POLLED];
	nfds_t n_wake = 0;
	for (unsigned i = 0; i < s->n_loaded && n_wake < PLAN_MAX_PROBES_POLLED; i++) {
		struct probe *p = &s->probes[i];
		int fd = p->kind->wake_fd && p->kind->drain ? p->kind->wake_fd(p) : -1;
		if (fd >= 0) {
			fds[FIXED_FDS + n_wake] = (struct pollfd){ .fd = fd, .events = POLLIN };
			woken[n_wake++] = p;
		}
	}
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
		if (s->set.target && procset_due_ns(&s->set) < wake)
			wake = procset_due_ns(&s->set);
		/* A turn of the loop can come late (a stopped process, a saturated CPU): a wake time
		 * already past means "do not wait", never a wrapped-around timeout. */
		int timeout_ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
		fds[0] = (struct pollfd){ .fd = s->sig_fd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = s->pid_fd, .events = POLLIN }; /* -1: ignored by poll */
		fds[2] = (struct pollfd){ .fd = s->set.target ? procset_wake_fd(&s->set) : -1, .events = POLLIN };
		int rc = poll(fds, FIXED_FDS + n_wake, timeout_ms);
		if (rc < 0 && errno != EINTR) /* ENOMEM: end like an interruption (the contract's */
			return STOP_SIGNAL;       /* stop reasons have no other fitting value) */
		if (rc > 0 && (fds[0].revents & POLLIN) && signal_arrived(s->sig_fd))
			return STOP_SIGNAL;
		if (rc > 0 && s->pid_fd >= 0 && (fds[1].revents & POLLIN))
			return STOP_TARGET_EXITED;
		for (nfds_t w = 0; rc > 0 && w < n_wake; w++)
			if (fds[FIXED_FDS + w].revents & POLLIN)
				woken[w]->kind->drain(woken[w]);
		now = mono_ns();
		if (s->set.target) {
			if (rc > 0 && (fds[2].revents & POLLIN))
				procset_drain(&s->set);
			procset_settle(&s->set, now);
		}
		if (s->gov.stats_fd >= 0 && now >= s->gov.window_start + STATS_WINDOW_NS) {
			double pct = governor_close_window(s, now);
			unsigned victim = 0;
			double at_s = (double)(now - start_ns) / 1e9;
			switch (governor_decide(budget, degrade, pct, s->gov.probes, s->n_loaded,
						&s->gov.over_before, &victim)) {
			case GOVERNOR_STOP:
				return STOP_OVER_BUDGET;
			case GOVERNOR_DEGRADE:
				apply_degrade(s, at_s, pct, notes);
				break;
			case GOVERNOR_STOP_PROBE:
				stop_probe(s, victim, at_s, pct, notes);
				break;
			case GOVERNOR_GO_ON:
				break;
			}
		}
		if (now >= next_tick) {
			/* a set of processes: new ones join the kernel's set, gone ones leave it; the
			 * run ends like a --pid run's when none is left */
			if (s->set.target && procset_refresh(&s->set) == 0)
				return STOP_TARGET_EXITED;
			for (unsigned i = 0; i < s->n_loaded; i++)
				if (s->probes[i].kind->tick)
					s->probes[i].kind->tick(&s->probes[i]);
			governor_open_window(s, mono_ns());
			next_tick += TICK_NS;
			if (next_tick <= now) /* we were stopped for a while: do not catch up */
				next_tick = now + TICK_NS;
		}
		if (o->progress)
			draw_progress(o, (double)(now - start_ns) / 1e9, (double)(deadline - start_ns) / 1e9,
				      events_so_far(s), s->gov.last_pct);
	}
}

/* Symbols are only needed after the run, and reading /proc/kallsyms takes tens of milliseconds
 * of kernel time, the target's mappings and ELF files a few more: both happen on a thread while
 * the probes collect, not before. The thread owns nothing else; the caller reads the results
 * after joining it. */
struct ksyms_loader {
	pthread_t thread;
	bool started;
	struct ksyms *ksyms;
	struct diag_err err;
	struct usyms *usyms;     /* the target's start snapshot, taken there (may be NULL) */
	bool usyms_failed;
	struct diag_err usyms_err;
};

static void *ksyms_loader_main(void *arg)
{
	struct ksyms_loader *l = arg;
	if (l->usyms)
		l->usyms_failed = usyms_snapshot(l->usyms, &l->usyms_err) != 0;
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

static struct usyms *set_usyms(const void *arg, int tgid)
{
	return procset_usyms(arg, tgid);
}

/* The kernel's set of the target's processes, made before any probe loads (they share it). */
static int procset_refresh_open(struct procset *ps, struct target *t, struct tfile_reader *files,
				struct diag_err *err)
{
	if (procset_open(ps, t, files, err))
		return -1;
	if (procset_refresh(ps) == 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s %s: every process exited before collection started",
				 target_kind_flag(t->kind), t->text);
	return 0;
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
			     .gov = { .stats_fd = -1, .last_pct = -1 }, .set = { .map_fd = -1 },
			     .files = opts->files };
	struct ksyms_loader kl = { 0 };
	struct core_btf core = { .fd = -1 };
	struct kernel_btf kernel = { 0 };
	struct ksyms *ksyms = NULL;
	struct usyms *usyms = NULL;
	struct diag_err soft;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->notes = value_arr();
	sigemptyset(&s.old_mask);
	if (block_signals(&s, err))
		goto done;
	/* A read of a target's file never holds a stop: the wait ends when a signal arrives. */
	tfile_reader_set_stop_fd(s.files, s.sig_fd);

	if (plan->target_pid > 0) {
		struct elf_cache *files = elf_cache_new(s.files);
		usyms = usyms_new_in(plan->target_pid, files);
		elf_cache_release(files); /* the symbolizer holds it */
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

	/* Loading starts with the kernel's BTF, read once and cut to what the run's objects
	 * relocate against (core_btf.h); without it each object reads the whole. */
	uint64_t load_ns = mono_ns();
	if (build_core_btf(plan, &kernel, &core, &soft))
		value_arr_push(out->notes, value_str_take(xasprintf(
			"each probe read the kernel's whole BTF: cutting it failed (%s)", soft.msg)));
	if (opts->target) {
		if (procset_refresh_open(&s.set, opts->target, s.files, err))
			goto done;
		s.set.core_btf = core.fd >= 0 ? core.path : NULL;
		if (procset_follow_forks(&s.set, &soft))
			value_arr_push(out->notes, value_str_take(xasprintf(
				"processes forked by the set join it at the next rescan (up to 1 s later), not at fork: %s",
				soft.msg)));
		else
			s.set.target->follows_forks = true;
	}
	/* Loading reads the files uprobes go on (a target's libc, its allocator): until then at most.
	 * The verifier's time is ours, but a stage that stalls past its limit ends the run. */
	tfile_reader_set_deadline(s.files, mono_ns() + SESSION_READ_LOAD_NS);
	watchdog_arm(opts->watchdog, "loading the probes", mono_ns() + WATCHDOG_LOAD_NS);
	if (load_probes(plan, s.set.map_fd, s.files, core.fd >= 0 ? core.path : NULL, &kernel, &s.probes,
			&s.n_loaded, err))
		goto done;
	core_btf_close(&core);
	kernel_btf_close(&kernel);
	tfile_reader_set_deadline(s.files, 0); /* set again when the collection starts */
	for (unsigned i = 0; i < s.n_loaded; i++) {
		const struct probe *p = &s.probes[i];
		if (p->note[0])
			value_arr_push(out->notes, value_str_take(xasprintf("%s: %s", p->cfg.id, p->note)));
		if (p->degraded && !p->skipped)
			value_arr_push(out->notes, value_str_take(xasprintf(
				"degraded: probe %s (%s) loads %s", p->cfg.id, plan->probes[i].kind->name,
				p->degraded)));
		if (p->load_failed) /* what the run loses on this kernel: said, never silent */
			value_arr_push(out->notes, value_str_take(xasprintf(
				"degraded: probe %s (%s) did not load here, what it measures is not checked: %s",
				p->cfg.id, plan->probes[i].kind->name, p->skip_why)));
	}
	out->rates = xcalloc(plan->n_probes ? plan->n_probes : 1, sizeof(*out->rates));
	set_start_mode(s.probes, s.n_loaded, opts->preflight_ms > 0, out->rates);
	/* what a hit costs here, measured before anything of ours slows the syscalls (cost.h) */
	cost_meter_init(&s.cost, s.probes, s.n_loaded, plan->ncpus);
	cost_meter_wait_unattached(&s.cost);
	uint64_t attach_ns = mono_ns();
	out->phases.load_s = (double)(attach_ns - load_ns) / 1e9;
	watchdog_arm(opts->watchdog, "attaching the probes", attach_ns + WATCHDOG_ATTACH_NS);
	if (attach_probes(s.probes, s.n_loaded, err))
		goto done;
	char *cost_note;
	cost_meter_attached(&s.cost, &cost_note);
	if (cost_note)
		value_arr_push(out->notes, value_str_take(cost_note));
	/* The duration counts from here; its first preflight_ms measure, the rest collects. No read
	 * of a target's file holds the collection more than a second past it (the loop's last turn
	 * may still unwind what it drains). */
	uint64_t window_ns = mono_ns();
	out->phases.attach_s = (double)(window_ns - attach_ns) / 1e9;
	uint64_t deadline = window_ns + (uint64_t)(plan->duration_s * 1e9);
	/* What the caller starts as the window opens (a fork: the verdict child) comes before the
	 * symbol loader's thread, so that no thread of ours holds an allocator's lock as it forks
	 * (glibc's fork takes malloc's; the sanitizers' allocator in Debian 12's GCC does not). */
	if (opts->at_window)
		opts->at_window(opts->at_window_arg);
	/* After loading: libbpf has freed the kernel BTF it parsed, so the two never peak together. */
	kl.usyms = usyms;
	ksyms_loader_start(&kl);
	tfile_reader_set_deadline(s.files, deadline + SESSION_READ_LATE_NS);
	watchdog_arm(opts->watchdog, "the collection", deadline + WATCHDOG_COLLECT_LATE_NS);
	bool stopped_early = false;
	if (opts->preflight_ms) {
		int pf = preflight(plan, s.probes, s.n_loaded, opts->preflight_ms, s.sig_fd, s.pid_fd,
				   &s.cost, out->rates, &out->preflight, &out->stop_reason, err);
		if (pf < 0) {
			detach_all(&s);
			goto done;
		}
		stopped_early = pf > 0;
	}
	utc_now(out->started_at, sizeof(out->started_at));
	uint64_t start_ns = mono_ns();
	cost_collection_start(&s.cost);
	if (!stopped_early) {
		governor_init(&s);
		drop_before_collection(&s, out->rates, out->notes);
	}
	if (!stopped_early)
		out->stop_reason = run_loop(&s, opts, start_ns, deadline, out->notes);
	uint64_t end_ns = mono_ns();
	/* What the collection still holds (the last samples, drained as the probes detach) and the
	 * symbols read the target's files until then at the latest. */
	tfile_reader_set_deadline(s.files, end_ns + SESSION_READ_AFTER_NS);
	governor_close_window(&s, end_ns);
	cost_collection_end(&s.cost);
	uint64_t detach_ns = mono_ns();
	out->phases.window_s = (double)(detach_ns - window_ns) / 1e9;
	watchdog_arm(opts->watchdog, "detaching the probes", detach_ns + WATCHDOG_DETACH_NS);
	detach_all(&s);
	uint64_t results_ns = mono_ns();
	tfile_reader_set_deadline(s.files, results_ns + SESSION_READ_AFTER_NS);
	out->phases.detach_s = (double)(results_ns - detach_ns) / 1e9;
	settle_scales(&s, (double)(end_ns - start_ns) / 1e9);
	watchdog_arm(opts->watchdog, "reading the results", mono_ns() + WATCHDOG_RESULTS_NS);
	if (opts->progress)
		fputs("\r\033[K", stderr);

	out->duration_s = (double)(end_ns - start_ns) / 1e9;
	out->events = events_so_far(&s);
	out->bpf_cpu_pct = s.gov.measured_wall ? (double)s.gov.measured_ns * 100.0 /
						 ((double)s.gov.measured_wall * plan->ncpus)
					       : -1;
	out->bpf_cpu_s = s.gov.measured_wall ? (double)s.gov.measured_ns / 1e9 : -1;
	{
		const char *ids[s.n_loaded ? s.n_loaded : 1];
		for (unsigned i = 0; i < s.n_loaded; i++)
			ids[i] = s.probes[i].cfg.id;
		out->cost = cost_summary(&s.cost, ids);
	}
	if (s.gov.unavailable)
		value_arr_push(out->notes, value_str("BPF run-time statistics unavailable: overhead not measured, governor off"));

	ksyms = ksyms_loader_join(&kl);
	if (!ksyms)
		value_arr_push(out->notes, value_str_take(xasprintf("kernel frames not symbolized: %s", kl.err.msg)));
	if (kl.usyms_failed)
		value_arr_push(out->notes, value_str(kl.usyms_err.msg));
	/* What the probes have the target write for its symbols (a JVM's perf map, when asked),
	 * before the end snapshot reads them. */
	for (unsigned i = 0; usyms && out->stop_reason != STOP_TARGET_EXITED && i < s.n_loaded; i++) {
		struct probe *p = &s.probes[i];
		char note[512] = "";
		if (!p->kind->before_symbols)
			continue;
		watchdog_arm(opts->watchdog, "asking the target for its symbols",
			     mono_ns() + WATCHDOG_BEFORE_SYMBOLS_NS);
		p->kind->before_symbols(p, plan->target_pid, usyms, note, sizeof(note));
		if (note[0])
			value_arr_push(out->notes, value_str_take(xasprintf("%s: %s", p->cfg.id, note)));
		watchdog_arm(opts->watchdog, "reading the results", mono_ns() + WATCHDOG_RESULTS_NS);
	}
	/* The end snapshot lets us symbolize code mapped during the run; a dead target keeps the
	 * start snapshot (taken on the loader thread, joined above). */
	if (usyms && out->stop_reason != STOP_TARGET_EXITED)
		usyms_snapshot(usyms, &soft);
	if (s.set.target) {
		procset_snapshot_all(&s.set);
		s.set.target->joined_at_fork = procset_joined_at_fork(&s.set);
	}
	if (s.set.unsymbolized)
		value_arr_push(out->notes, value_str_take(xasprintf(
			"user frames of %zu processes of the set beyond the first %d are addresses, not "
			"names (a symbolizer per process, up to that many)",
			s.set.unsymbolized, PROCSET_MAX_SYMBOLIZED)));
	if (s.set.target && procset_notices_lost(&s.set))
		value_arr_push(out->notes, value_str_take(xasprintf(
			"user frames of %" PRIu64 " exec'd children of the set are addresses, not names: "
			"their exec notices found the ring full", procset_notices_lost(&s.set))));
	struct collect_ctx ctx = { .ksyms = ksyms, .usyms = usyms, .wall_s = out->duration_s,
				   .ncpus = plan->ncpus };
	if (s.set.target) {
		ctx.usyms_of = set_usyms;
		ctx.usyms_arg = &s.set;
		procset_unscanned(&s.set, &ctx.set_unscanned, &ctx.set_unscanned_cpu_ns);
	}
	out->results = value_obj();
	out->probes = value_arr();
	for (unsigned i = 0; i < s.n_loaded; i++) {
		struct probe *p = &s.probes[i];
		struct value *res = NULL;
		struct bpf_object *obj = p->kind->object(p);
		struct value *info = value_arr_push(out->probes, value_obj());
		value_set_str(info, "id", p->cfg.id);
		if (p->skipped) { /* no results: results.ID is nil for the verdicts */
			value_set_str(info, "kind", plan->probes[i].kind->name);
			value_set_str(info, p->load_failed ? "load_error" : "not_applicable", p->skip_why);
			continue;
		}
		value_set_str(info, "kind", p->kind->name);
		value_set_str(info, "variant", p->variant ? p->variant : "");
		value_set_num(info, "load_s", round(p->load_s * 1e4) / 1e4);
		if (p->note[0])
			value_set_str(info, "note", p->note);
		if (p->uprobe_links)
			value_set_str(info, "uprobe_links", p->uprobe_links);
		if (p->degraded)
			value_set_str(info, "degraded", p->degraded);
		if (obj) {
			uint64_t lost = probe_stat_sum(obj, DIAG_STAT_MAP_FULL) + probe_stat_sum(obj, DIAG_STAT_LOST);
			value_set_int(info, "events", (int64_t)probe_events(p));
			value_set_int(info, "dropped", (int64_t)lost);
			out->dropped += lost;
		}
		char shape[512];
		/* a probe the governor stopped: scaled to the window when it samples (settle_scales),
		 * else read as covering the time it ran */
		struct collect_ctx pctx = ctx;
		if (s.gov.live && s.gov.live[i].stopped_s > 0 && s.gov.live[i].stopped_s < ctx.wall_s) {
			value_set_num(info, "stopped_at_s", round(s.gov.live[i].stopped_s * 1000) / 1000);
			if (s.gov.live[i].opt < 0)
				pctx.wall_s = s.gov.live[i].stopped_s;
			else
				value_set_bool(info, "scaled_to_window", true);
		}
		if (s.gov.live && s.gov.live[i].stacks_dropped_s > 0)
			value_set_num(info, "stacks_dropped_at_s", round(s.gov.live[i].stacks_dropped_s * 1000) / 1000);
		if (p->kind->collect(p, &pctx, &res, &soft) == 0) {
			if (shape_check(p->kind, p->cfg.id, res, shape, sizeof(shape)))
				value_arr_push(out->notes, value_str_take(xasprintf("probe %s: results do not match the declared shape: %s", p->cfg.id, shape)));
			value_obj_set(out->results, p->cfg.id, res);
		} else
			value_arr_push(out->notes, value_str_take(xasprintf("probe %s: no results: %s", p->cfg.id, soft.msg)));
	}
	char *unread = tfile_reader_note(s.files);
	if (unread)
		value_arr_push(out->notes, value_str_take(unread));
	out->phases.results_s = (double)(mono_ns() - results_ns) / 1e9;
	rc = 0;
done:
	ksyms_free(ksyms_loader_join(&kl)); /* before freeing what the thread may still use, and
					     * before the signal fd its reads wait on closes */
	destroy_all(&s);
	core_btf_close(&core); /* a load that failed left them open */
	kernel_btf_close(&kernel);
	usyms_free(usyms);
	procset_close(&s.set);
	tfile_reader_set_deadline(s.files, 0); /* the caller's: the collection's deadline is over */
	watchdog_arm(opts->watchdog, NULL, 0);
	if (rc) { /* a refusal keeps its pre-flight summary for the report */
		struct value *pf = out->preflight;
		out->preflight = NULL;
		session_out_free(out);
		out->preflight = pf;
	}
	return rc;
}

int session_dry_run(const struct plan *plan, struct target *target, struct tfile_reader *files,
		    unsigned preflight_ms, struct value **variants, struct value **preflight_summary, struct diag_err *pf_err,
		    struct diag_err *err)
{
	struct probe *probes;
	unsigned n;
	struct preflight_rate *rates = xcalloc(plan->n_probes ? plan->n_probes : 1, sizeof(*rates));
	struct procset set = { .map_fd = -1 };
	int rc = target ? procset_refresh_open(&set, target, files, err) : 0;
	probes = NULL;
	n = 0;
	struct core_btf core = { .fd = -1 };
	struct kernel_btf kernel = { 0 };
	struct diag_err soft;
	if (rc == 0 && build_core_btf(plan, &kernel, &core, &soft))
		core.fd = -1; /* each probe reads the kernel's whole BTF */
	if (rc == 0)
		rc = load_probes(plan, set.map_fd, files, core.fd >= 0 ? core.path : NULL, &kernel, &probes, &n,
				 err);
	core_btf_close(&core);
	kernel_btf_close(&kernel);
	*variants = *preflight_summary = NULL;
	if (rc == 0) {
		*variants = value_obj();
		for (unsigned i = 0; i < n; i++) {
			struct value *v = value_obj_set(*variants, probes[i].cfg.id, value_obj());
			value_set_str(v, "variant", probes[i].variant ? probes[i].variant : "");
			if (probes[i].note[0])
				value_set_str(v, "note", probes[i].note);
			if (probes[i].skipped) /* as a run's probes[] says it */
				value_set_str(v, probes[i].load_failed ? "load_error" : "not_applicable",
					      probes[i].skip_why);
		}
	}
	if (rc == 0 && preflight_ms) {
		enum stop_reason why;
		struct cost_meter cost;
		char *cost_note;
		set_start_mode(probes, n, true, rates);
		cost_meter_init(&cost, probes, n, plan->ncpus);
		cost_meter_wait_unattached(&cost);
		rc = attach_probes(probes, n, err);
		if (rc == 0) {
			cost_meter_attached(&cost, &cost_note);
			free(cost_note);
			preflight(plan, probes, n, preflight_ms, -1, -1, &cost, rates, preflight_summary, &why,
				  pf_err);
		}
		for (unsigned i = 0; i < n; i++)
			if (probes[i].kind->detach)
				probes[i].kind->detach(&probes[i]);
		cost_meter_free(&cost);
	}
	destroy_probes(probes, n);
	procset_close(&set);
	free(rates);
	return rc;
}

void session_out_free(struct session_out *out)
{
	value_free(out->results);
	value_free(out->probes);
	value_free(out->notes);
	value_free(out->preflight);
	value_free(out->cost);
	free(out->rates);
	out->results = out->probes = out->notes = out->preflight = out->cost = NULL;
	out->rates = NULL;
}
