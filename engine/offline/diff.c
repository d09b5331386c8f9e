/* diff.c — two reports compared (see diff.h), and the differential flame graph's file.
 * Must not: interpret a probe's results beyond the shared shapes, or judge the change.
 */
#include "offline/diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/flamegraph.h"
#include "report/outfile.h"
#include "report/report.h"
#include "common/util.h"
#include "verdict/verdict.h"

/* ---- verdicts ------------------------------------------------------------------------------ */

static const struct value *verdict_by_id(const struct value *verdicts, const char *id)
{
	for (size_t i = 0; verdicts && verdicts->type == V_ARR && i < verdicts->arr.len; i++) {
		const char *vid = value_get_str(verdicts->arr.items[i], "id");
		if (vid && !strcmp(vid, id))
			return verdicts->arr.items[i];
	}
	return NULL;
}

static void add_verdict(struct value *out, const struct value *b, const struct value *a)
{
	const struct value *v = a ? a : b;
	struct value *o = value_arr_push(out, value_obj());
	value_set_str(o, "id", value_get_str(v, "id"));
	const char *bs = b ? value_get_str(b, "severity") : NULL, *as = a ? value_get_str(a, "severity") : NULL;
	value_set_str(o, "before", bs ? bs : "-");
	value_set_str(o, "after", as ? as : "-");
	int ok1 = 0, ok2 = 0;
	enum severity sb = bs ? severity_parse(bs, &ok1) : SEV_OK, sa = as ? severity_parse(as, &ok2) : SEV_OK;
	const char *change = !b ? "new" : !a ? "gone" : sa > sb ? "worse" : sa < sb ? "better" : "same";
	value_set_str(o, "change", change);
	value_set_str(o, "title", value_get_str(v, "title") ? value_get_str(v, "title") : "");
}

static struct value *diff_verdicts(const struct value *before, const struct value *after)
{
	const struct value *vb = value_get(before, "verdicts"), *va = value_get(after, "verdicts");
	struct value *out = value_arr();
	for (size_t i = 0; va && va->type == V_ARR && i < va->arr.len; i++) {
		const char *id = value_get_str(va->arr.items[i], "id");
		if (id)
			add_verdict(out, verdict_by_id(vb, id), va->arr.items[i]);
	}
	for (size_t i = 0; vb && vb->type == V_ARR && i < vb->arr.len; i++) {
		const char *id = value_get_str(vb->arr.items[i], "id");
		if (id && !verdict_by_id(va, id))
			add_verdict(out, vb->arr.items[i], NULL);
	}
	return out;
}

/* ---- ruled out: what one run checked and found fine, by hypothesis id ------------------------- */

/* The item with this id in a report's ruled_out (absent in reports recorded before it existed). */
static const struct value *ruled_out_by_id(const struct value *items, const char *id)
{
	for (size_t i = 0; items && items->type == V_ARR && i < items->arr.len; i++) {
		const char *rid = value_get_str(items->arr.items[i], "id");
		if (rid && !strcmp(rid, id))
			return items->arr.items[i];
	}
	return NULL;
}

/* Each id ruled out in one run and not the other (its text from the run that has it), after's
 * first: an id no longer ruled out after a change is worth as much attention as a new verdict. */
static void add_ruled_out_changes(struct value *out, const struct value *from, const struct value *other,
				  const char *change)
{
	for (size_t i = 0; from && from->type == V_ARR && i < from->arr.len; i++) {
		const struct value *it = from->arr.items[i];
		const char *id = value_get_str(it, "id"), *text = value_get_str(it, "text");
		if (!id || ruled_out_by_id(other, id) || ruled_out_by_id(from, id) != it)
			continue; /* in both, or a repeated id */
		struct value *o = value_arr_push(out, value_obj());
		value_set_str(o, "id", id);
		value_set_str(o, "change", change);
		value_set_str(o, "text", text ? text : "");
	}
}

static struct value *diff_ruled_out(const struct value *before, const struct value *after)
{
	const struct value *rb = value_get(before, "ruled_out"), *ra = value_get(after, "ruled_out");
	struct value *out = value_arr();
	add_ruled_out_changes(out, ra, rb, "new");
	add_ruled_out_changes(out, rb, ra, "gone");
	return out;
}

/* ---- functions: each stack's leaf (its first user frame, else its first kernel frame) -------- */

struct share {
	char *name;
	double before, after; /* weight */
};

struct shares {
	struct share *v;
	size_t n, cap;
	double total_before, total_after;
};

static void share_add(struct shares *s, const char *name, double w, bool after)
{
	size_t i;
	for (i = 0; i < s->n && strcmp(s->v[i].name, name); i++)
		;
	if (i == s->n) {
		if (s->n == s->cap)
			s->v = xrealloc(s->v, (s->cap = s->cap ? s->cap * 2 : 64) * sizeof(*s->v));
		s->v[s->n++] = (struct share){ xstrdup(name), 0, 0 };
	}
	if (after)
		s->v[i].after += w;
	else
		s->v[i].before += w;
}

static void shares_of(struct shares *s, const struct value *stacks, bool after)
{
	for (size_t i = 0; stacks && stacks->type == V_ARR && i < stacks->arr.len; i++) {
		const struct value *st = stacks->arr.items[i], *u = value_get(st, "user"), *k = value_get(st, "kernel");
		double w = value_get_num(st, "weight", 0);
		const char *leaf = u && u->type == V_ARR && u->arr.len && u->arr.items[0]->type == V_STR
					   ? u->arr.items[0]->s
				   : k && k->type == V_ARR && k->arr.len && k->arr.items[0]->type == V_STR
					   ? k->arr.items[0]->s
					   : "[no frames]";
		share_add(s, leaf, w, after);
		if (after)
			s->total_after += w;
		else
			s->total_before += w;
	}
}

static int by_move(const void *x, const void *y, void *totals)
{
	const struct share *a = x, *b = y;
	const double *t = totals;
	double da = fabs((t[1] > 0 ? a->after / t[1] : 0) - (t[0] > 0 ? a->before / t[0] : 0));
	double db = fabs((t[1] > 0 ? b->after / t[1] : 0) - (t[0] > 0 ? b->before / t[0] : 0));
	return da < db ? 1 : da > db ? -1 : strcmp(a->name, b->name);
}

static struct value *diff_functions(const struct value *rb, const struct value *ra, double min_pct,
				    unsigned top)
{
	struct value *out = value_obj();
	for (size_t p = 0; ra && ra->type == V_OBJ && p < ra->obj.len; p++) {
		const char *id = ra->obj.keys[p];
		const struct value *sa = value_get(ra->obj.vals[p], "stacks"), *sb = value_get(value_get(rb, id), "stacks");
		if (!sa || !sb)
			continue;
		struct shares s = { 0 };
		shares_of(&s, sb, false);
		shares_of(&s, sa, true);
		double totals[2] = { s.total_before, s.total_after };
		if (s.n > 1) /* s.v is NULL when neither run has a stack */
			qsort_r(s.v, s.n, sizeof(*s.v), by_move, totals);
		struct value *list = value_arr();
		for (size_t i = 0; i < s.n; i++) {
			double bp = totals[0] > 0 ? s.v[i].before * 100 / totals[0] : 0;
			double ap = totals[1] > 0 ? s.v[i].after * 100 / totals[1] : 0;
			if (list->arr.len < top && fabs(ap - bp) >= min_pct) {
				struct value *o = value_arr_push(list, value_obj());
				value_set_str(o, "name", s.v[i].name);
				value_set_num(o, "before_pct", round(bp * 10) / 10);
				value_set_num(o, "after_pct", round(ap * 10) / 10);
				value_set_num(o, "delta_pct", round((ap - bp) * 10) / 10);
			}
			free(s.v[i].name);
		}
		free(s.v);
		if (list->arr.len)
			value_obj_set(out, id, list);
		else
			value_free(list);
	}
	return out;
}

/* ---- histograms: log2 buckets [{lo, hi, count}], the percentile convention of lua/lib/diag.lua */

static double percentile(const struct value *buckets, double p, double *total_out)
{
	double total = 0, before = 0;
	for (size_t i = 0; i < buckets->arr.len; i++)
		total += value_get_num(buckets->arr.items[i], "count", 0);
	*total_out = total;
	if (total <= 0)
		return NAN;
	double r = p / 100 * total;
	for (size_t i = 0; i < buckets->arr.len; i++) {
		const struct value *b = buckets->arr.items[i];
		double c = value_get_num(b, "count", 0), lo = value_get_num(b, "lo", 0), hi = value_get_num(b, "hi", 0);
		if (c > 0 && before + c >= r)
			return lo + (hi - lo) * (r - before) / c;
		before += c;
	}
	return value_get_num(buckets->arr.items[buckets->arr.len - 1], "hi", 0);
}

static struct value *summary(const struct value *buckets)
{
	struct value *o = value_obj();
	double n;
	double p50 = percentile(buckets, 50, &n), p99 = percentile(buckets, 99, &n);
	value_set_int(o, "count", (int64_t)n);
	if (n > 0) {
		value_set_num(o, "p50", round(p50));
		value_set_num(o, "p99", round(p99));
	}
	return o;
}

static struct value *diff_histograms(const struct value *rb, const struct value *ra)
{
	struct value *out = value_obj();
	for (size_t p = 0; ra && ra->type == V_OBJ && p < ra->obj.len; p++) {
		const char *id = ra->obj.keys[p];
		const struct value *ba = value_get(ra->obj.vals[p], "buckets"), *bb = value_get(value_get(rb, id), "buckets");
		if (!ba || !bb || ba->type != V_ARR || bb->type != V_ARR)
			continue;
		struct value *h = value_obj_set(out, id, value_obj());
		const char *unit = value_get_str(ra->obj.vals[p], "unit");
		value_set_str(h, "unit", unit ? unit : "");
		value_obj_set(h, "before", summary(bb));
		value_obj_set(h, "after", summary(ba));
	}
	return out;
}

struct value *diff_reports(const struct value *before, const struct value *after, double min_pct,
			   unsigned top)
{
	struct value *d = value_obj();
	struct value *rec = value_obj_set(d, "recipes", value_arr());
	const char *nb = value_get_str(value_get(before, "recipe"), "name");
	const char *na = value_get_str(value_get(after, "recipe"), "name");
	value_arr_push(rec, value_str(nb ? nb : ""));
	value_arr_push(rec, value_str(na ? na : ""));
	value_obj_set(d, "verdicts", diff_verdicts(before, after));
	value_obj_set(d, "ruled_out", diff_ruled_out(before, after));
	const struct value *rb = value_get(before, "results"), *ra = value_get(after, "results");
	value_obj_set(d, "functions", diff_functions(rb, ra, min_pct, top));
	value_obj_set(d, "histograms", diff_histograms(rb, ra));
	return d;
}

/* ---- text ------------------------------------------------------------------------------------- */

void diff_write_text(const struct value *d, FILE *out)
{
	const struct value *rec = value_get(d, "recipes");
	fputs("diagnose diff — ", out);
	report_put_text(out, rec->arr.items[0]->s);
	fputs(" → ", out);
	report_put_text(out, rec->arr.items[1]->s);
	fputs("\n\nVerdicts\n", out);
	const struct value *vs = value_get(d, "verdicts");
	if (!vs->arr.len)
		fputs("  (none in either run)\n", out);
	for (size_t i = 0; i < vs->arr.len; i++) {
		const struct value *v = vs->arr.items[i];
		fprintf(out, "  %-7s %-9s → %-9s %s: ", value_get_str(v, "change"), value_get_str(v, "before"),
			value_get_str(v, "after"), value_get_str(v, "id"));
		report_put_text(out, value_get_str(v, "title"));
		fputc('\n', out);
	}
	const struct value *ro = value_get(d, "ruled_out");
	if (ro && ro->arr.len)
		fputs("\nChecked and ruled out (new: only after, gone: only before)\n", out);
	for (size_t i = 0; ro && i < ro->arr.len; i++) {
		const struct value *r = ro->arr.items[i];
		fprintf(out, "  %-7s ", value_get_str(r, "change"));
		report_put_text(out, value_get_str(r, "id"));
		fputs(": ", out);
		report_put_text(out, value_get_str(r, "text"));
		fputc('\n', out);
	}
	const struct value *fs = value_get(d, "functions");
	for (size_t p = 0; p < fs->obj.len; p++) {
		fputs("\nShares that moved (", out);
		report_put_text(out, fs->obj.keys[p]);
		fputs(": leaf functions, % of the probe's weight)\n", out);
		const struct value *list = fs->obj.vals[p];
		for (size_t i = 0; i < list->arr.len; i++) {
			const struct value *f = list->arr.items[i];
			fprintf(out, "  %6.1f%% → %6.1f%%  (%+.1f)  ", value_get_num(f, "before_pct", 0),
				value_get_num(f, "after_pct", 0), value_get_num(f, "delta_pct", 0));
			report_put_text(out, value_get_str(f, "name"));
			fputc('\n', out);
		}
	}
	const struct value *hs = value_get(d, "histograms");
	if (hs->obj.len)
		fputs("\nHistograms (p50, p99)\n", out);
	for (size_t p = 0; p < hs->obj.len; p++) {
		const struct value *h = hs->obj.vals[p], *b = value_get(h, "before"), *a = value_get(h, "after");
		const char *unit = value_get_str(h, "unit");
		fputs("  ", out);
		report_put_text(out, hs->obj.keys[p]);
		fprintf(out, ": p50 %.0f → %.0f %s, p99 %.0f → %.0f %s (%.0f → %.0f values)\n",
			value_get_num(b, "p50", NAN), value_get_num(a, "p50", NAN), unit,
			value_get_num(b, "p99", NAN), value_get_num(a, "p99", NAN), unit,
			value_get_num(b, "count", 0), value_get_num(a, "count", 0));
	}
}

/* The results of the stack probe the differential flame graph draws: probe_id's (NULL: AFTER's
 * first probe with stacks, as a run picks it), in both reports, with the same stack unit. */
static int pick_stack_probes(const struct diff_options *o, const struct value *b,
			     const struct value *a, const struct value **pb, const struct value **pa,
			     const char **id, struct diag_err *err)
{
	*pa = report_stack_probe(value_get(a, "results"), o->stacks_probe, id);
	if (!*pa) {
		if (o->stacks_probe)
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: no stacks of probe %s", o->after,
					 o->stacks_probe);
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: no probe with stacks", o->after);
	}
	*pb = report_stack_probe(value_get(b, "results"), *id, NULL);
	if (!*pb)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: no stacks of probe %s (both reports must "
				 "have the probe the graph compares)", o->before, *id);
	const char *ub = value_get_str(*pb, "stack_unit"), *ua = value_get_str(*pa, "stack_unit");
	ub = ub ? ub : "samples";
	ua = ua ? ua : "samples";
	if (strcmp(ub, ua))
		return diag_fail(err, DIAG_EXIT_USAGE, "probe %s weighs its stacks in %s in %s but in %s in "
				 "%s: a differential flame graph needs one unit", *id, ub, o->before, ua,
				 o->after);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* The graph's title: the recipe, the probe and both files (their names: the title has one line). */
static char *svg_title(const struct diff_options *o, const struct value *a, const char *id)
{
	const char *recipe = value_get_str(value_get(a, "recipe"), "name");
	return xasprintf("%s, probe %s: %s \xe2\x86\x92 %s", recipe ? recipe : "?", id,
			 base_name(o->before), base_name(o->after));
}

int diff_run(const struct diff_options *o)
{
	struct diag_err err = { 0 };
	struct value *b = report_read(o->before, &err), *a = b ? report_read(o->after, &err) : NULL;
	const struct value *pb = NULL, *pa = NULL;
	const char *id = NULL;
	struct outfile *svg = NULL;
	/* the graph's probes are checked, and its file created, before anything is printed */
	if (a && o->flamegraph &&
	    (pick_stack_probes(o, b, a, &pb, &pa, &id, &err) ||
	     !(svg = outfile_create("--flamegraph", o->flamegraph, o->force, &err)))) {
		value_free(a);
		a = NULL;
	}
	if (!a) {
		value_free(b);
		report_put_error(err.msg);
		return err.code ? err.code : DIAG_EXIT_USAGE;
	}
	struct value *d = diff_reports(b, a, 1.0, 10);
	if (o->json) {
		value_write_json(d, stdout, 2);
		fputc('\n', stdout);
	} else {
		diff_write_text(d, stdout);
	}
	int code = DIAG_EXIT_OK;
	if (svg) {
		char *title = svg_title(o, a, id);
		flamegraph_write_diff(pb, pa, title, outfile_stream(svg));
		free(title);
		if (outfile_close(svg, &err)) {
			report_put_error(err.msg);
			code = err.code ? err.code : DIAG_EXIT_RUNTIME;
		}
	}
	value_free(d);
	value_free(a);
	value_free(b);
	return code;
}
