/* merge.h — `diagnose merge REPORT.json...`: one fleet view from many hosts' reports (the same
 * approved recipe run on each host, e.g. by the Ansible playbook): per verdict, how many hosts
 * and which, worst first; per hypothesis checked and ruled out, how many hosts ruled it out;
 * outliers — a host whose figure is far from the fleet's median (the one host with a run-queue
 * p99 ten times the others'); and a table of the hosts. Text, or JSON with --json.
 *
 * Owns: reading the reports (report_read_within) within limits for all of them together,
 * grouping them (merge_reports: pure, on value trees, for tests), and printing the fleet view.
 * Must not: interpret a probe's results beyond shared shapes (log2 buckets, numbers at the top of
 * a probe's results), or judge a host (each host's verdicts did).
 */
#ifndef DIAG_MERGE_H
#define DIAG_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/util.h"
#include "common/value.h"

/* reports[i] came from names[i] (its file, for messages and when it names no host). Returns
 *   {hosts: [{host, file, recipe, worst, verdicts: [id...], exit}],
 *    verdicts: [{recipe, id, worst, count, hosts: [...], title}] (worst first, then most hosts),
 *    ruled_out: [{recipe, id, count, hosts: [...]}] (what hosts checked and found fine, each
 *    host once per id; most hosts first; none from reports recorded before ruled_out existed),
 *    outliers: [{host, recipe, probe, figure, value, median, ratio}] (ratio >= outlier_ratio,
 *    at least 3 hosts with the figure, largest ratio first)} */
struct value *merge_reports(const struct value *const *reports, const char *const *names, size_t n,
			    double outlier_ratio);
void merge_write_text(const struct value *merged, FILE *out);

/* What merge reads in all, whatever the number of files: every value it parses costs some 60
 * bytes of memory, so the whole fleet view stays within about half a gigabyte (a report of one
 * recipe with stacks holds some 15 thousand values, one without about a thousand). */
#define MERGE_MAX_BYTES ((size_t)256 << 20)
#define MERGE_MAX_VALUES ((size_t)8 * 1000 * 1000)

/* Reads paths[0..n) into reports[] (each a report: report_read's checks), within max_bytes of
 * JSON and max_values values for all of them together. 0, or -1 with err (DIAG_EXIT_USAGE; a
 * total over a limit: "merge: the reports together ...; reached in PATH") and nothing kept. */
int merge_read(const char *const *paths, size_t n, size_t max_bytes, size_t max_values,
	       struct value **reports, struct diag_err *err);

/* The command: 0, or 2 when a file is not a report (named) or the reports are over merge's
 * limits (MERGE_MAX_*). The worst verdict's exit code is not
 * returned: a fleet view is information; `hosts[].exit` keeps each host's. */
int merge_run(const char *const *paths, size_t n, bool json);

#endif
