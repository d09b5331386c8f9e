/* merge.h — `diagnose merge REPORT.json...`: one fleet view from many hosts' reports (the same
 * approved recipe run on each host, e.g. by the Ansible playbook): per verdict, how many hosts
 * and which, worst first; outliers — a host whose figure is far from the fleet's median (the one
 * host with a run-queue p99 ten times the others'); and a table of the hosts. Text, or JSON with
 * --json.
 *
 * Owns: reading the reports (report_read), grouping them (merge_reports: pure, on value trees, for
 * tests), and printing the fleet view.
 * Must not: interpret a probe's results beyond shared shapes (log2 buckets, numbers at the top of
 * a probe's results), or judge a host (each host's verdicts did).
 */
#ifndef DIAG_MERGE_H
#define DIAG_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "value.h"

/* reports[i] came from names[i] (its file, for messages and when it names no host). Returns
 *   {hosts: [{host, file, recipe, worst, verdicts: [id...], exit}],
 *    verdicts: [{recipe, id, worst, count, hosts: [...], title}] (worst first, then most hosts),
 *    outliers: [{host, recipe, probe, figure, value, median, ratio}] (ratio >= outlier_ratio,
 *    at least 3 hosts with the figure, largest ratio first)} */
struct value *merge_reports(const struct value *const *reports, const char *const *names, size_t n,
			    double outlier_ratio);
void merge_write_text(const struct value *merged, FILE *out);

/* The command: 0, or 2 when a file is not a report (named). The worst verdict's exit code is not
 * returned: a fleet view is information; `hosts[].exit` keeps each host's. */
int merge_run(const char *const *paths, size_t n, bool json);

#endif
