/* prom.h — Prometheus's text exposition format (version 0.0.4): metric families and samples.
 *
 * Owns: the format's rules — a family's # HELP and # TYPE lines once, before its samples; metric
 * and label names checked ([a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]*); label values
 * and help text valid UTF-8 without controls whatever they hold — made safe text by the rule every
 * output shares (util.h's utf8_safe_char: each byte that is not UTF-8 or is a control, newline
 * included, as "\xNN", as the text report shows it), then escaped for the format (backslash, and
 * in label values the double quote) — so that text a target or a recipe controls can neither
 * forge a line nor make Prometheus refuse the scrape (it refuses invalid UTF-8); numbers as
 * Prometheus reads them (NaN, +Inf, -Inf).
 * Must not: decide which metrics exist or hold state between two expositions.
 */
#ifndef DIAG_PROM_H
#define DIAG_PROM_H

#include <stdbool.h>
#include <stdio.h>

/* Whether name is a valid metric name. */
bool prom_metric_name_ok(const char *name);

/* # HELP and # TYPE (type: "gauge", "counter") of a family. */
void prom_family(FILE *out, const char *name, const char *type, const char *help);

/* One sample: name{k1="v1",...} value. labels: n_labels pairs (key, value); a key that is not a
 * valid label name is skipped, a NULL value written as "". */
void prom_sample(FILE *out, const char *name, const char *const *labels, size_t n_labels, double value);

#endif
