/* session.h — one collection run of a plan on the live kernel.
 *
 * Owns: loading every probe, attaching, the budget pre-flight's measurement (the probes' own
 * programs in count-only mode for the first preflight_ms, then switched to full mode with the
 * sampling preflight.c decided, or detached when it refuses), the run loop (duration, SIGINT/SIGTERM/SIGHUP, target exit,
 * progress on a TTY, the overhead governor: BPF run-time statistics sampled in a 50 ms window
 * each second, since leaving them on costs every BPF program two clock reads per run), detaching on every exit
 * path, symbolizers, and collecting each probe's results.
 * Also the dry run's load-only pass, so that probes are loaded in one place.
 * Must not: interpret results or format reports.
 */
#ifndef DIAG_SESSION_H
#define DIAG_SESSION_H

#include <stdbool.h>

#include "plan/plan.h"
#include "plan/preflight.h"
#include "common/value.h"

struct session_opts {
	bool progress;      /* draw a progress line on stderr */
	const char *label;  /* for the progress line, e.g. the recipe name */
	unsigned preflight_ms; /* count-only window at the start of the duration; 0: none */
	struct watchdog *watchdog; /* armed for each stage with probes or the target's files in
				    * play (watchdog.h); NULL: none */
	struct tfile_reader *files; /* reads the target's files (tfile.h): the run's, made before
				     * its plan read through it (required) */
	struct target *target; /* a set of processes: the plan's (plan->target), which the run
				* rescans and updates (its members, whether forks were followed and
				* how many joined so: what the report says of it); NULL: none. The
				* plan itself is only read. */
	void (*at_window)(void *arg); /* called once, as the window opens (the probes attached):
				       * what it starts runs while they collect (run.c starts the
				       * verdict child there); NULL: nothing */
	void *at_window_arg;
};

/* Why a collection ended; stop_reason_name() gives the report's word
 * (docs/architecture.md, `stop_reason`). */
enum stop_reason {
	STOP_DURATION,      /* "duration": the window ran out */
	STOP_SIGNAL,        /* "signal": SIGINT, SIGTERM, SIGHUP or SIGQUIT */
	STOP_TARGET_EXITED, /* "target-exited" */
	STOP_OVER_BUDGET,   /* "over-budget": the governor measured max_cpu_pct exceeded */
};
const char *stop_reason_name(enum stop_reason r);

struct session_out {
	struct value *results;   /* object: probe id -> results */
	struct value *probes;    /* array: {id, kind, variant, note, events, dropped} */
	struct value *notes;     /* array of strings: fallbacks, failures, partial data */
	char started_at[32];     /* ISO 8601 UTC */
	double duration_s;       /* actual collection time */
	enum stop_reason stop_reason;
	double bpf_cpu_pct;      /* BPF run time / (wall * CPUs) in the governor's windows; -1 when
				    statistics were unavailable */
	double bpf_cpu_s;        /* that BPF run time in seconds (-1 likewise) */
	struct value *cost;      /* what the run cost the server (cost.h's cost_summary); NULL when
				    nothing was measured */
	uint64_t events;         /* events that passed the probes' filters */
	uint64_t dropped;        /* map-full + lost, over all probes */
	struct value *preflight; /* preflight.c's summary; NULL when there was none */
	struct preflight_rate *rates; /* per plan probe: measured rates and the sampling applied */
	struct session_phases {  /* where the session's wall time went, in seconds (0: not reached) */
		double load_s;    /* the probes opened, sized and loaded (kernel BTF, the verifier) */
		double attach_s;  /* their links made */
		double window_s;  /* the pre-flight and the collection: the run's duration */
		double detach_s;  /* the links released (uprobes wait for the kernel's grace periods) */
		double results_s; /* symbols read and the probes' results built */
	} phases;
};

/* Runs the plan (read only; the set of processes it names is opts->target). On failure before any data, returns -1 with err set and nothing attached; a
 * pre-flight refusal (DIAG_EXIT_REFUSED) leaves out->preflight set. session_out_free either way. */
int session_run(const struct plan *plan, const struct session_opts *opts, struct session_out *out,
		struct diag_err *err);
void session_out_free(struct session_out *out);

/* The dry run's half of a session: open and load every probe (the verifier sees every program,
 * attach variants are chosen), with target the plan's set of processes (plan->target, scanned
 * again; NULL: none); with preflight_ms, attach them in count-only mode for that window
 * and decide as a run would (*preflight gets the summary, *pf_err the refusal, if any); release
 * everything. *variants gets an object probe id -> {variant, note}. Returns -1 (err) when a
 * probe cannot load or attach; a refusal is not a failure of the dry run. */
int session_dry_run(const struct plan *plan, struct target *target, struct tfile_reader *files,
		    unsigned preflight_ms,
		    struct value **variants, struct value **preflight, struct diag_err *pf_err,
		    struct diag_err *err);

#endif
