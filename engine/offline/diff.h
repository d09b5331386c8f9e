/* diff.h — `diagnose diff BEFORE.json AFTER.json`: what changed between two runs' reports (after a
 * fix, a deploy, a config change): verdicts that appeared, went away or changed severity; the
 * hypotheses one run ruled out and the other did not (by id; reports recorded before ruled_out
 * existed have none); the functions whose share of a stack probe's weight moved; the
 * percentiles of each histogram that moved. Text, or JSON with --json. With --flamegraph FILE.svg, also a differential flame graph of
 * one stack probe (--stacks-probe ID, default AFTER's first probe with stacks; flamegraph.h draws
 * it): both reports must have that probe's stacks, in the same unit.
 *
 * Owns: reading both reports (bounded, as replay does), comparing them (diff_reports: pure, on
 * value trees, for tests) and printing the comparison.
 * Must not: interpret a probe's results beyond the shared shapes (stacks with weights, log2
 * buckets), or judge the change (the verdicts of each run did).
 */
#ifndef DIAG_DIFF_H
#define DIAG_DIFF_H

#include <stdbool.h>
#include <stdio.h>

#include "common/value.h"

/* The comparison of two report trees (caller frees):
 *   {recipes: [before, after], verdicts: [{id, before, after, change: "new"|"gone"|"worse"|
 *    "better"|"same", title}], ruled_out: [{id, change: "new"|"gone", text}] (after's new
 *    ones first, each in its report's order), functions: {PROBE: [{name, before_pct,
 *    after_pct, delta_pct}]}
 *    (leaf functions whose share moved by at least min_pct points, largest move first, at most
 *    top), histograms: {PROBE: {unit, before: {count, p50, p99}, after: {...}}}} */
struct value *diff_reports(const struct value *before, const struct value *after, double min_pct,
			   unsigned top);
void diff_write_text(const struct value *diff, FILE *out);

struct diff_options {
	const char *before, *after; /* the reports' paths */
	bool json;
	const char *flamegraph;     /* --flamegraph FILE.svg, or NULL */
	const char *stacks_probe;   /* --stacks-probe ID, or NULL */
	bool force;                 /* --force: replace an existing FILE.svg */
};

/* The command: returns 0; 2 for a file that is not a report, or with --flamegraph a probe without
 * stacks in either report, units that differ, or an output file refused (outfile.h); 1 when the
 * SVG could not be written. Errors are printed here, one line each. */
int diff_run(const struct diff_options *o);

#endif
