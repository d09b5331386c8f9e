/* cost.h — what a run costs the server it diagnoses, measured in windows: the probes' programs'
 * run time (the kernel's BPF run-time statistics), the fixed cost of each hit that the run time
 * does not see (a uprobe's trap, a uretprobe's return, the slow path every syscall of the machine
 * takes while a syscall tracepoint is attached; per hit as measured on this machine: hitcost.h),
 * and diagnose's own CPU (draining, unwinding, symbolizing: CPU the server's threads do not get):
 * the thread that collects, in each window (its share over the interval since the last window:
 * it grows with the events drained), and the whole process over the run, for the report.
 *
 * Owns: the list of each probe's programs and their hit classes, the run counts and run times at
 * a window's start, a counter of the machine's syscalls when the probes turn the slow path on
 * without seeing every syscall, the measurement of the per-hit costs (a thread, started before
 * the probes attach: the syscall figure needs the slow path off), and the sums over the run.
 * Must not: decide anything (preflight.c and the governor do), turn BPF statistics on or off
 * (the session opens the windows), or print.
 */
#ifndef DIAG_COST_H
#define DIAG_COST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plan/catalog.h"
#include "kernel/hitcost.h"
#include "common/value.h"

/* One probe's share of a window. */
struct cost_share {
	double bpf_ns;            /* its programs' run time */
	double hits[HIT_N];       /* runs of its programs by class (HIT_SYSCALL: syscalls it slowed) */
	double fixed_ns;          /* what those hits cost beyond the run time */
};

/* One window, or the sum of many. */
struct cost_window {
	double wall_ns;           /* the window's wall time */
	double bpf_ns, fixed_ns;  /* over every probe */
	double self_ns;           /* diagnose's collecting thread's CPU, its share of the interval since
				   * the window before put on this window's wall time */
	double hits[HIT_N];
	double syscalls;          /* the machine's syscalls, when the slow path was on */
};

struct cost_meter {
	unsigned n;               /* probes */
	struct cost_probe *probes;
	bool slow_path;           /* some program turns the syscall slow path on */
	int counter_link, counter_prog; /* the machine's syscalls (-1: not needed, or none) */
	uint64_t counter_cnt0;
	uint64_t self_mark, self_mark_ns; /* the collecting thread's CPU, and when, at the last mark */
	uint64_t process0, process0_ns;   /* the process's CPU when the collection started */
	double process_ns, process_wall_ns; /* over the collection, when it ended */
	int ncpus;
	/* the per-hit costs: measured by a thread (costs_ready, then joined at the end) */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t ready_cond;
	unsigned ready;           /* COST_SYSCALL_READY | COST_ALL_READY */
	unsigned mask;            /* the classes measured */
	struct hit_costs unit;
	struct diag_err unit_err;
	bool unit_failed;
	/* over the run (the governor's windows) */
	struct cost_window total;
	struct cost_share *total_by_probe;
};

/* The probes' programs listed, their classes found, and the measurement of the classes they use
 * started on a thread. Call after the probes are loaded and before they attach; then
 * cost_meter_wait_unattached() before attaching (the syscall figure is taken with the slow path
 * off). ncpus: the machine's, for shares. */
void cost_meter_init(struct cost_meter *m, struct probe *probes, unsigned n, int ncpus);
/* Waits until nothing of the measurement needs the probes unattached. */
void cost_meter_wait_unattached(struct cost_meter *m);
/* After attaching: the syscall counter, when the probes slow every syscall without counting them
 * all. A note into *note (caller frees) when it cannot be had (then the slow path is not
 * counted), else NULL. */
void cost_meter_attached(struct cost_meter *m, char **note);

/* The collection starts, on the thread that collects: its CPU counts from here. */
void cost_collection_start(struct cost_meter *m);
/* The collection ended: the process's CPU over it, for the summary. */
void cost_collection_end(struct cost_meter *m);

/* A window opens: its counts and times taken (BPF statistics must be on). */
void cost_window_begin(struct cost_meter *m);
/* The window closes after wall_ns: *w and by_probe[n] (may be NULL) get its figures; they are
 * added to the run's totals when account. Waits for the per-hit costs if they are still being
 * measured. */
void cost_window_end(struct cost_meter *m, double wall_ns, struct cost_window *w,
		     struct cost_share *by_probe, bool account);

/* Shares of the machine's CPUs (%): a window's total, its parts. */
double cost_pct(const struct cost_meter *m, const struct cost_window *w, double ns);
double cost_total_ns(const struct cost_window *w);

/* The report's figures over the run: {server_cpu_pct, bpf_cpu_pct, fixed_cpu_pct, self_cpu_pct,
 * uprobe_hits_per_s, ..., per_hit_ns: {uprobe, uretprobe, syscall}, probes: {id: pct}}; NULL
 * when no window was measured. ids: the probes' ids. */
struct value *cost_summary(const struct cost_meter *m, const char *const *ids);

/* Joins the thread and releases everything (the counter's link included); nothing for a meter
 * zeroed and never initialized. */
void cost_meter_free(struct cost_meter *m);

#endif
