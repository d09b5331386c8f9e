/* flamegraph.h — one probe's stacks as a self-contained, interactive SVG flame graph
 * (--flamegraph FILE.svg), written by diagnose itself: no Perl, no network, no external script.
 *
 * Owns: merging the stacks of ONE probe's results (the shared shape of stacks.h; which probe is
 * report_stack_probe's choice, so units never mix) into a tree — root "all", then the thread
 * name, the stack's tag in brackets when it has one, user frames root first, then kernel frames
 * root first — and drawing it root at the bottom, each frame as wide as its weight; the probe's
 * unit in the title ("on-CPU samples", "off-CPU time", "bytes"); user, kernel, thread and tag
 * frames in colours of their own; and the small script of its own that gives hover details
 * (name, weight in a human unit, share of the total), click to zoom, reset, and a search box
 * that highlights matching frames and shows their share (FILE.svg#s=TEXT opens with a search,
 * FILE.svg#z=NAME zoomed to the widest frame of that name).
 * A differential graph (`diagnose diff --flamegraph`) merges two reports' stacks of the same
 * probe into one tree: frames as wide as AFTER's weights, coloured by how many points each frame's
 * share of its report's total moved — red where it grew, blue where it shrank, pale where it
 * stayed — and the hover details give before, after and the move.
 * Every name the target controls (comm, tag, symbols) is escaped for XML; no name ever goes into
 * the script: it reads them from the document's text.
 * Must not: pick the probe, open files, or interpret the stacks (hot paths are the Lua's).
 */
#ifndef DIAG_FLAMEGRAPH_H
#define DIAG_FLAMEGRAPH_H

#include <stdio.h>

#include "common/value.h"

/* What the probe's stack_unit weighs, for a title: "samples" → "on-CPU samples", "ns" →
 * "off-CPU time", "bytes" → "bytes"; any other unit is returned as it is ("" for NULL). */
const char *flamegraph_unit_title(const char *stack_unit);

/* Writes the SVG for probe_res (one probe's results: "stack_unit" and "stacks") to out. title
 * names the run (e.g. "high-cpu, probe profile (cpu_profile)"; NULL: none); it is escaped like
 * every other name. Frames narrower than 0.1 px at full width are left out (and counted in the
 * subtitle). probe_res NULL or without stacks still gives a valid SVG that says so, and returns
 * -1; otherwise returns the number of stacks drawn. Write errors show in ferror(out). */
int flamegraph_write(const struct value *probe_res, const char *title, FILE *out);

/* The differential graph of two results of the same probe (the caller checks that: same probe,
 * same stack_unit). Frames are drawn by after_res's weights (a frame BEFORE has and AFTER has not
 * is not drawn, and is counted in the subtitle); each frame's fill goes from grey (its share of
 * the total did not move) to red (grew) or blue (shrank), full at the largest move of a drawn
 * frame or 1 point, whichever is more; each <g> carries data-wb (BEFORE's weight) and data-delta
 * (the move, in points). Returns the number of AFTER's stacks, or -1 (a valid SVG that says so)
 * when AFTER has no stack with a weight. */
int flamegraph_write_diff(const struct value *before_res, const struct value *after_res,
			  const char *title, FILE *out);

#endif
