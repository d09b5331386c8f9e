/* report.h — what the user reads: the JSON report (docs/architecture.md), the text report, and
 * folded stacks for flamegraph.pl, and which probe's stacks the stack outputs show (the SVG and
 * pprof writers are engine/report/flamegraph.c and engine/report/pprof.c).
 *
 * Owns: assembling the report tree (tool, recipe, target, timing, overhead, verdicts, ruled_out,
 * results)
 * and rendering it. Text rendering knows three generic section shapes that a recipe's Lua may
 * return (diag.table / diag.histogram / diag.text in lua/lib/diag.lua):
 *   {kind="table", title=, columns={...}, rows={{cell,...},...}}
 *   {kind="histogram", title=, unit=, buckets={{lo=,hi=,count=},...}}
 *   {kind="text", title=, lines={...}}
 * Must not: interpret results (no probe- or symptom-specific code here).
 */
#ifndef DIAG_REPORT_H
#define DIAG_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "plan/plan.h"
#include "session/session.h"
#include "common/value.h"

struct report_input {
	const struct plan *plan;
	const char *recipe_sha256;
	const struct session_out *session; /* NULL for a dry run */
	const struct value *verdicts;      /* array; may be NULL when Lua failed */
	const char *verdict_error;         /* why there are no verdicts, or NULL */
	const struct value *sections;      /* the Lua report sections (array), may be NULL */
	const struct value *ruled_out;     /* what the Lua checked and found fine: [{id, text}],
					    * may be NULL (the report then has an empty array) */
	const struct value *metrics;       /* the Lua's key figures: [{name, value, help}], may be NULL */
	const struct value *plan_summary;  /* dry run: what would run */
	const struct value *preflight;     /* measured event rates vs budget, may be NULL */
	const struct value *run;           /* what the Lua saw as `run`, may be NULL */
	const struct value *thresholds;    /* what the Lua saw as `thresholds`, may be NULL */
	double start_s;                    /* wall time before the session: recipe, plan, trust */
	double verdict_s;                  /* the Lua verdicts' wall time */
};

/* The JSON report tree (caller frees): everything the text report shows, sections included, so
 * that a report can be rendered again, replayed or diffed later. */
struct value *report_build(const struct report_input *in);
void report_write_json(const struct value *report, FILE *out);
/* A JSON report read back (replay, diff): at most 256 MiB, never through a symlink (source.h),
 * parsed with a node cap; an object with tool "diagnose" and objects "results" and "recipe".
 * NULL with err (DIAG_EXIT_USAGE, "PATH: why") otherwise. */
struct value *report_read(const char *path, struct diag_err *err);
/* What several reports read together may still take (merge): bytes of JSON and values, each
 * report also within report_read's own limits. report_read_within takes what the report used
 * from both; when the budget, not the file, ran out it fails with *over set to "bytes" or
 * "values" (NULL otherwise) and err "PATH: ..." for the caller to name its limit. */
struct report_budget {
	size_t bytes_left, values_left;
	const char *over;
};
struct value *report_read_within(const char *path, struct report_budget *b, struct diag_err *err);

/* Colour on out: a terminal, NO_COLOR unset or empty (no-color.org), TERM not "dumb". */
bool report_use_color(FILE *out);
/* Text report. Every string of the report and sections is printed with each byte of what
 * utf8_char_unsafe names (C0, DEL, C1, the bidirectional controls, ...) and of what is not UTF-8
 * shown as "\xNN": the report's own newlines are the only line breaks, no terminal escape
 * sequence gets through, and nothing reorders the text around it. report_put_text prints one
 * string so, for the other text outputs (diff, merge). */
void report_put_text(FILE *out, const char *s);
/* "diagnose: MESSAGE" on stderr, escaped so: an error may quote a path or name the target, a
 * recipe or another user controls (a cgroup directory, a comm). */
void report_put_error(const char *msg);
/* Renders a report tree (live or read back from JSON): its "sections" are the Lua ones. The
 * severity labels are coloured when report_use_color(out). Tables are sized to
 * report_text_width(out). */
void report_write_text(const struct value *report, FILE *out);
/* The same at a given width: tables at most width columns wide (0: no limit). A table too wide
 * has its text columns narrowed, the widest first, down to 12 columns (or their natural width),
 * and the cells that no longer fit elided in the middle ("std::vector<…>::push_back"), so a row
 * stays one line; numbers are never cut. */
void report_write_text_width(const struct value *report, FILE *out, int width);
/* How wide the text report may be on out: a terminal's width (TIOCGWINSZ); otherwise $COLUMNS
 * when it is a positive number (at least 20); otherwise 80 on a terminal, and 0 — no limit — for
 * a pipe or a file, so that what is saved or grepped keeps whole names. */
int report_text_width(FILE *out);
/* s as the text report shows it (controls and bytes that are not UTF-8 as "\xNN", never split),
 * into buf (NUL-terminated, cut at a whole character when len is short), elided in the middle
 * with "…" when it takes more than max columns (0: no limit): its start and its end, the start
 * getting the odd column. Returns the columns written (a code point is one column). */
size_t report_text_fit(const char *s, size_t max, char *buf, size_t len);
/* A dry run's plan (plan_to_value, with "preflight" and "refused" as the dry run adds them), as
 * text: each probe with its attach variant, filters, map memory and measured rate, and a line of
 * its options; the budgets against what was measured; and whether a real run would go or be
 * refused, and why. */
void report_write_plan_text(const struct value *plan, FILE *out);

/* The results of the ONE probe whose stacks the stack outputs (--folded, --flamegraph, --pprof)
 * show, so that units never mix: probe_id's results, or when probe_id is NULL the first probe in
 * results (recipe order) whose results carry a "stacks" array. NULL when there is none (or
 * probe_id's carry none). *id_out (when not NULL) is set to that probe's id, owned by results. */
const struct value *report_stack_probe(const struct value *results, const char *probe_id,
				       const char **id_out);
/* The stacks of report_stack_probe(results, probe_id) as folded lines. One line per stack,
 * root first: "comm;[tag];frame;...;frame weight", the number being the stack's "weight" (in
 * that probe's stack_unit); "[tag]" only for a stack with a tag. Kernel frames follow user
 * frames, suffixed "_[k]" as flamegraph.pl colours them. In names, ';' and ' ' become '_', and
 * bytes below 0x20, DEL and bytes that are not UTF-8 become "\xNN": one stack, one line.
 * out is the caller's (see outfile.h); write errors show in ferror(out). Returns the stacks
 * written, or -1 (nothing written) when that probe's results, or with probe_id NULL every
 * probe's, carry no stacks. */
int report_write_folded(const struct value *results, const char *probe_id, FILE *out);

#endif
