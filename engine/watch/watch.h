/* watch.h — `diagnose watch`: a recipe (triage by default) run on a schedule against one
 * selection, within a global CPU budget, its follow-up run while the fault lasts, the last runs
 * kept on disk, and Prometheus metrics of what it found and what it cost.
 *
 * Owns: the schedule (--every; --runs bounds it), the budget (--max-cpu-pct of one CPU over a
 * sliding --budget-window: each run's measured cost, its process's CPU — user and system, the
 * Lua child's included — plus its BPF programs' run time, and watch's own CPU but for what its
 * metrics endpoint costs, counted apart: no client of it can spend the budget; a run whose
 * expected cost would go over is skipped and counted), the follow-ups (a verdict at or above
 * --follow-at with a follow-up, as --follow picks it; one per verdict per --follow-every), each
 * run in a child process (one run_recipe: its own policy, approval, audit and budgets; its probes
 * released by its exit whatever happens), the metrics (served by httpd.c, written for
 * node_exporter's textfile collector), and the signals (SIGTERM/SIGINT: the running run stopped
 * early, its partial report kept, then exit — a run that does not stop is killed, or left behind
 * if even that does not end it; SIGHUP: the schedule now).
 * Must not: collect or judge anything itself (a run does), or keep a run's memory after it ends.
 */
#ifndef DIAG_WATCH_H
#define DIAG_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/run.h"

struct watch_options {
	struct run_options run;  /* the selection (--pid, --comm, ...), --recipes, --production,
				  * --param: what every run gets */
	const char *recipe;      /* --recipe, default triage */
	double every_s;          /* --every, default 60 */
	const char *state_dir;   /* --state-dir, default /var/lib/diagnose/watch */
	double max_cpu_pct;      /* --max-cpu-pct, % of one CPU, default 1 */
	double budget_window_s;  /* --budget-window, default 3600 */
	int follow_at;           /* --follow-at: 2 warning (default), 3 critical, 0 never */
	double follow_every_s;   /* --follow-every: one follow-up per verdict per this, default 600 */
	size_t keep;             /* --keep: runs kept, default 100 */
	uint64_t keep_bytes;     /* --keep-bytes, default 256 MiB */
	const char *listen;      /* --listen ADDR:PORT, default 127.0.0.1:9464; "none": no endpoint */
	const char *textfile;    /* --textfile FILE.prom; NULL: none */
	uint64_t max_runs;       /* --runs N: N scheduled runs, then exit; 0: until stopped */
};

/* Defaults of everything above but run. */
void watch_options_default(struct watch_options *o);

/* "90", "90s", "5m", "1h": seconds (> 0, at most a day). -1 when not one. */
double watch_parse_interval(const char *s);
/* "1000", "64K", "256M", "2G": bytes. false when not one. */
bool watch_parse_bytes(const char *s, uint64_t *out);

/* Stopping, watch sends the run in progress SIGTERM (it ends its collection early, its report
 * kept); a run that has not ended WATCH_STOP_GRACE_S later gets SIGKILL; one still not reaped
 * WATCH_KILL_WAIT_S after that (stuck in the kernel) is left behind, its pid and state said, and
 * watch ends anyway (exit 1). watch_stop_step is that decision: term_ns and kill_ns when each was
 * sent (0: not yet), now_ns on the same clock (mono_ns). */
#define WATCH_STOP_GRACE_S 15
#define WATCH_KILL_WAIT_S 5
enum watch_stop_step { WATCH_STOP_TERM, WATCH_STOP_WAIT, WATCH_STOP_KILL, WATCH_STOP_LEAVE };
enum watch_stop_step watch_stop_step(uint64_t term_ns, uint64_t kill_ns, uint64_t now_ns);

/* Runs until stopped or --runs are done. Returns 0, or the exit code of a first run that could
 * not start at all (2 usage or invalid recipe, 3 refused: not approved in production), or 1 when
 * stopping left a run behind. */
int watch_run(const struct watch_options *o);

#endif
