/* preflight.h — the measured half of the budget check. The probes' own programs run in
 * count-only mode for the first preflight_ms of the collection (session.c drives that); this
 * module turns what they counted into a decision: go on, go on with some probes sampling 1 in N
 * (when the recipe declares `budgets.degrade: sample`), or refuse. Later, while the run lasts,
 * it decides from each of the governor's measuring windows whether the run must stop.
 *
 * Owns: the decisions, the overrides it returns, the refusal message, and the summary the report
 * and the dry run show (`overhead.preflight`).
 * Must not: touch the kernel, change the plan, or print.
 */
#ifndef DIAG_PREFLIGHT_H
#define DIAG_PREFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan.h"
#include "common/value.h"

enum rate_status {
	RATE_NOT_EVENT_DRIVEN = 0, /* no BPF programs (reads /proc): costs nothing per event */
	RATE_MEASURED,             /* counted by its own programs in count-only mode */
	RATE_UNMEASURED,           /* BPF programs that cannot run count-only: budget unknown */
	RATE_NOT_APPLICABLE,       /* not run: the target lacks what it needs (catalog.h: skipped) */
};

/* One probe in the pre-flight window: what session.c measured, then what preflight_decide set. */
struct preflight_rate {
	enum rate_status status;
	uint64_t passed;      /* program runs that passed the probe's filters: its events */
	uint64_t firings;     /* every run of its programs: what it costs */
	uint64_t bpf_ns;      /* run time of its programs in the window (0: statistics unavailable) */
	uint64_t fixed_ns;    /* what its hits cost beyond that run time: uprobe traps, the syscall
			       * slow path (engine/session/cost.h); sampling does not take it off */
	uint64_t trap_hits, slowed_syscalls; /* those hits */
	/* Set by preflight_decide: */
	double events_per_s, firings_per_s;
	double fixed_pct;      /* fixed_ns as a share (%) of the machine's CPUs */
	double trap_hits_per_s, slowed_syscalls_per_s;
	uint64_t sample_every; /* 1: every event; N: keep 1 in N at random */
	bool degraded;         /* sample_every was raised to fit the budget */
	bool dropped;          /* not to run: its hits' fixed cost alone is over the budget, and
				* other probes go on (the session detaches it before the collection) */
};

/* Window as measured: its wall time and whether the run-time statistics were on. */
struct preflight_window {
	unsigned planned_ms;
	double wall_s;
	bool bpf_stats;
	double per_trap_ns, per_syscall_ns; /* as measured on this machine (0: not measured) */
};

/* Applies the recipe's budgets to the rates (rates[plan->n_probes]): sets each rate's
 * events_per_s, firings_per_s and sample_every (the overrides the session applies), and drops
 * the probes whose hits' fixed cost (traps, slow paths: sampling does not lower it) puts the run
 * over max_cpu_pct when other probes can go on without them, costliest first, until what is left
 * of that cost is at most half the budget (refused when no such probe is left); the plan is not
 * changed. Over budget: a probe whose kind declares an OPT_ROLE_SAMPLE_EVERY option samples
 * when the recipe says `degrade: sample`, worst first; otherwise returns -1 with
 * DIAG_EXIT_REFUSED and a message with measured vs allowed rates and what to do.
 * *summary (may be NULL) receives an object for the report whatever the outcome. */
int preflight_decide(const struct plan *plan, const struct preflight_window *w,
		     struct preflight_rate *rates, struct value **summary, struct diag_err *err);

/* The pre-flight window of a plan in ms: the recipe's budgets.preflight_ms (250 when unset), at
 * most half the run's duration; 0 when no probe has event-driven BPF programs. */
unsigned preflight_window_ms(const struct plan *plan);

/* The live governor, after one measuring window in which the run cost the server window_pct of
 * the CPUs (-1: none measured): must the run stop over max_cpu_pct (budget)? One 50 ms window is a
 * burst, not a trend: two windows in a row over the budget stop it, or one over twice the
 * budget (a runaway). *over_before carries the previous window's answer between calls. */
bool governor_stops(double budget, double window_pct, bool *over_before);

/* One probe as the live governor sees it when a measuring window closes. */
struct governor_probe {
	double pct;            /* what it cost the server in the window (% of the CPUs): its
				* programs' run time and its hits' fixed cost */
	double fixed_pct;      /* of which its hits' fixed cost (traps, the syscall slow path):
				* what sampling cannot lower */
	bool running;          /* has BPF programs, attached (not stopped by the governor) */
	uint64_t sample_every; /* in force; raised by governor_decide when it degrades the probe */
	uint64_t max_every;    /* how far it may be raised; 0: it cannot sample */
	double pct_at_raise;   /* its share in the window that raised it (0: none pending) */
	uint64_t every_at_raise; /* its sample_every in that window */
	bool raised;           /* set by governor_decide: sample_every was raised by this call */
	bool can_drop_stacks;  /* takes stacks it can do without (probe_kind.drops_stacks) */
	bool drop_stacks;      /* set by governor_decide: drop its stacks now (then can_drop_stacks
				* is cleared) */
	bool goes_on;          /* no BPF programs, and results that stand without the others
				* (pg_activity's sampling; not proc_context's context): the run can go
				* on with it when the last probe with BPF programs is stopped */
};

enum governor_action {
	GOVERNOR_GO_ON,
	GOVERNOR_DEGRADE,    /* some probes' sample_every raised: apply them and go on */
	GOVERNOR_STOP_PROBE, /* stop one probe (*victim), keep its data so far, go on */
	GOVERNOR_STOP,       /* over the budget with one costly probe left: stop the run */
};

/* Budgets degrade before they stop. A window over max_cpu_pct (budget) first raises the
 * sample_every of the probes that can sample (under `degrade: sample`), the costliest first, by
 * one factor that would bring the window to half of what the budget leaves them. A sampled-out
 * event still costs its program's entry and filters: when the next window shows a raise did not
 * cut a probe's share by a quarter, or the two windows put its floor (share = floor +
 * per-sampled-event cost / sample_every, solved from both) so high that even max_every would
 * leave the window over, that probe is sampled no further. With nothing left to
 * raise, governor_stops' rule (two windows over, or one over twice the budget; a raise that did
 * not help counts as the first of the two) stops the
 * costliest probe while another with BPF programs still runs or one that goes on without them
 * (governor_probe.goes_on) is there (*victim: its index), else the run — unless, under `degrade: sample`, that probe can still drop its stacks: then it drops
 * them (GOVERNOR_DEGRADE, its drop_stacks set) and the next windows judge it again. */
enum governor_action governor_decide(double budget, bool degrade, double window_pct,
				     struct governor_probe *probes, unsigned n, bool *over_before,
				     unsigned *victim);

#endif
