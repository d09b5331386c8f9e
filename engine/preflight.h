/* preflight.h — the measured half of the budget check: before the real programs attach, count
 * for a short window how often each event-driven probe's tracepoints fire (filtered as the probe
 * will be), compare with the recipe's max_events_per_s, and refuse or degrade to in-kernel
 * 1-in-N sampling when the recipe allows it.
 *
 * Owns: the counting-only BPF object (bpf/preflight.bpf.c), the measurement and the decision.
 * Must not: attach the real probes, or print.
 */
#ifndef DIAG_PREFLIGHT_H
#define DIAG_PREFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "value.h"

struct preflight_rate {
	bool measured;        /* the probe has tracepoints to count */
	double events_per_s;  /* firings that pass the probe's filter */
	double firings_per_s; /* every firing: what the probe's programs will run on */
	uint64_t sample_every; /* 1 = no sampling; N = the plan now samples 1 in N */
};

/* Measures every probe of the plan for window_ms (all at once) into rates[plan->n_probes],
 * then applies the budget: over max_events_per_s in total, a probe that supports sampling gets
 * 1-in-N when the recipe declares `budgets.degrade: sample`; otherwise returns -1 with
 * DIAG_EXIT_REFUSED and a message with measured vs allowed rates and what to do.
 * *summary (may be NULL) receives an object for the report whatever the outcome. */
int preflight_run(struct plan *plan, unsigned window_ms, struct preflight_rate *rates,
		  struct value **summary, struct diag_err *err);

#endif
