/* report.c — JSON, text and folded-stack output (see report.h).
 * Must not: know any probe's or symptom's meaning; it renders generic shapes.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "recipe.h"

struct value *report_build(const struct report_input *in)
{
	const struct plan *plan = in->plan;
	const struct session_out *s = in->session;
	struct value *r = value_obj();

	value_set_str(r, "tool", "diagnose");
	value_set_str(r, "version", DIAG_VERSION);
	struct value *rec = value_obj_set(r, "recipe", value_obj());
	value_set_str(rec, "name", plan->recipe->name);
	value_set_str(rec, "path", plan->recipe->path);
	value_set_str(rec, "sha256", in->recipe_sha256 ? in->recipe_sha256 : "");
	if (plan->target_pid > 0) {
		struct value *t = value_obj_set(r, "target", value_obj());
		value_set_int(t, "pid", plan->target_pid);
		value_set_str(t, "comm", plan->target_comm);
		value_set_str(t, "exe", plan->target_exe);
	} else {
		value_obj_set(r, "target", value_null());
	}
	if (plan->params)
		value_obj_set(r, "params", value_copy(plan->params));
	value_set_str(r, "started_at", s ? s->started_at : "");
	value_set_num(r, "duration_s", s ? round(s->duration_s * 1000) / 1000 : 0);
	value_set_str(r, "stop_reason", s ? s->stop_reason : "dry-run");
	struct value *o = value_obj_set(r, "overhead", value_obj());
	if (s && s->bpf_cpu_pct >= 0)
		value_set_num(o, "bpf_cpu_pct", round(s->bpf_cpu_pct * 1000) / 1000);
	else
		value_obj_set(o, "bpf_cpu_pct", value_null());
	value_set_int(o, "events", s ? (int64_t)s->events : 0);
	value_set_int(o, "dropped", s ? (int64_t)s->dropped : 0);
	if (in->preflight)
		value_obj_set(o, "preflight", value_copy(in->preflight));
	value_obj_set(r, "verdicts", in->verdicts ? value_copy(in->verdicts) : value_arr());
	if (in->verdict_error)
		value_set_str(r, "verdict_error", in->verdict_error);
	value_obj_set(r, "results", s && s->results ? value_copy(s->results) : value_obj());
	if (s) {
		value_obj_set(r, "probes", value_copy(s->probes));
		value_obj_set(r, "notes", value_copy(s->notes));
	}
	if (in->plan_summary)
		value_obj_set(r, "plan", value_copy(in->plan_summary));
	return r;
}

void report_write_json(const struct value *report, FILE *out)
{
	value_write_json(report, out, 2);
	fputc('\n', out);
}

/* ---- text ---------------------------------------------------------------------------------- */

static void cell_text(const struct value *v, char *buf, size_t len)
{
	if (!v)
		buf[0] = '\0';
	else if (v->type == V_STR)
		snprintf(buf, len, "%s", v->s);
	else if (v->type == V_INT)
		snprintf(buf, len, "%" PRId64, v->i);
	else if (v->type == V_NUM)
		snprintf(buf, len, "%.4g", v->n);
	else if (v->type == V_BOOL)
		snprintf(buf, len, "%s", v->b ? "yes" : "no");
	else
		snprintf(buf, len, "-");
}

static bool is_numeric_cell(const struct value *v)
{
	if (!v)
		return false;
	if (v->type == V_INT || v->type == V_NUM)
		return true;
	/* "12.5%", "2.1M", "350us" right-align too */
	return v->type == V_STR && v->s[0] >= '0' && v->s[0] <= '9';
}

#define MAX_COLS 12
#define MAX_CELL 96

static void write_table(const struct value *sec, FILE *out)
{
	const struct value *cols = value_get(sec, "columns"), *rows = value_get(sec, "rows");
	if (!cols || cols->type != V_ARR || !rows || rows->type != V_ARR)
		return;
	size_t ncols = cols->arr.len < MAX_COLS ? cols->arr.len : MAX_COLS;
	int width[MAX_COLS] = { 0 };
	char buf[MAX_CELL];
	for (size_t c = 0; c < ncols; c++) {
		cell_text(cols->arr.items[c], buf, sizeof(buf));
		width[c] = (int)strlen(buf);
	}
	for (size_t r = 0; r < rows->arr.len; r++) {
		const struct value *row = rows->arr.items[r];
		for (size_t c = 0; row->type == V_ARR && c < ncols && c < row->arr.len; c++) {
			cell_text(row->arr.items[c], buf, sizeof(buf));
			if ((int)strlen(buf) > width[c])
				width[c] = (int)strlen(buf);
		}
	}
	/* Headers align like the column's first cell: numbers to the right. */
	const struct value *first = rows->arr.len ? rows->arr.items[0] : NULL;
	fputs("  ", out);
	for (size_t c = 0; c < ncols; c++) {
		const struct value *v = first && first->type == V_ARR && c < first->arr.len
						? first->arr.items[c] : NULL;
		cell_text(cols->arr.items[c], buf, sizeof(buf));
		if (c)
			fputs("  ", out);
		if (is_numeric_cell(v))
			fprintf(out, "%*s", width[c], buf);
		else if (c + 1 == ncols)
			fputs(buf, out);
		else
			fprintf(out, "%-*s", width[c], buf);
	}
	fputc('\n', out);
	if (rows->arr.len == 0)
		fputs("  (none)\n", out);
	for (size_t r = 0; r < rows->arr.len; r++) {
		const struct value *row = rows->arr.items[r];
		if (row->type != V_ARR)
			continue;
		fputs("  ", out);
		for (size_t c = 0; c < ncols; c++) {
			const struct value *v = c < row->arr.len ? row->arr.items[c] : NULL;
			cell_text(v, buf, sizeof(buf));
			bool last = c + 1 == ncols;
			if (c)
				fputs("  ", out);
			if (is_numeric_cell(v))
				fprintf(out, "%*s", width[c], buf);
			else if (last)
				fputs(buf, out);
			else
				fprintf(out, "%-*s", width[c], buf);
		}
		fputc('\n', out);
	}
}

static void write_histogram(const struct value *sec, FILE *out)
{
	const struct value *b = value_get(sec, "buckets");
	const char *unit = value_get_str(sec, "unit");
	if (!b || b->type != V_ARR || b->arr.len == 0) {
		fputs("  (no events)\n", out);
		return;
	}
	double max = 0;
	for (size_t i = 0; i < b->arr.len; i++) {
		double c = value_get_num(b->arr.items[i], "count", 0);
		if (c > max)
			max = c;
	}
	for (size_t i = 0; i < b->arr.len; i++) {
		const struct value *it = b->arr.items[i];
		double c = value_get_num(it, "count", 0);
		int bar = max > 0 ? (int)lround(c / max * 40) : 0;
		char range[64];
		snprintf(range, sizeof(range), "%.0f .. %.0f %s", value_get_num(it, "lo", 0),
			 value_get_num(it, "hi", 0), unit ? unit : "");
		fprintf(out, "  %22s  %10.0f |", range, c);
		for (int k = 0; k < bar; k++)
			fputc('#', out);
		fputc('\n', out);
	}
}

static void write_section(const struct value *sec, FILE *out)
{
	const char *kind = value_get_str(sec, "kind"), *title = value_get_str(sec, "title");
	if (!kind)
		return;
	fprintf(out, "\n%s\n", title ? title : "");
	if (strcmp(kind, "table") == 0) {
		write_table(sec, out);
	} else if (strcmp(kind, "histogram") == 0) {
		write_histogram(sec, out);
	} else if (strcmp(kind, "text") == 0) {
		const struct value *lines = value_get(sec, "lines");
		for (size_t i = 0; lines && lines->type == V_ARR && i < lines->arr.len; i++)
			if (lines->arr.items[i]->type == V_STR)
				fprintf(out, "  %s\n", lines->arr.items[i]->s);
	}
}

static void write_list(const struct value *list, const char *bullet, FILE *out)
{
	for (size_t i = 0; list && list->type == V_ARR && i < list->arr.len; i++)
		if (list->arr.items[i]->type == V_STR)
			fprintf(out, "           %s %s\n", bullet, list->arr.items[i]->s);
}

void report_write_text(const struct value *r, const struct value *sections, FILE *out)
{
	const struct value *rec = value_get(r, "recipe"), *t = value_get(r, "target");
	const struct value *o = value_get(r, "overhead");
	fprintf(out, "diagnose %s", value_get_str(rec, "name"));
	if (t && t->type == V_OBJ)
		fprintf(out, " — pid %.0f (%s) %s", value_get_num(t, "pid", 0),
			value_get_str(t, "comm"), value_get_str(t, "exe"));
	fputc('\n', out);
	const char *stop = value_get_str(r, "stop_reason");
	if (strcmp(stop, "dry-run") == 0) {
		fputs("dry run: probes loaded through the verifier, not attached; only the pre-flight's "
		      "counting program was attached, for its window; nothing collected\n", out);
	} else {
		fprintf(out, "collected %.2f s (stopped: %s); BPF overhead ", value_get_num(r, "duration_s", 0), stop);
		const struct value *pct = value_get(o, "bpf_cpu_pct");
		if (pct && pct->type != V_NULL)
			fprintf(out, "%.3f%% of CPU", value_get_num(o, "bpf_cpu_pct", 0));
		else
			fputs("not measured", out);
		fprintf(out, ", %.0f events, %.0f dropped\n", value_get_num(o, "events", 0),
			value_get_num(o, "dropped", 0));
	}
	const struct value *notes = value_get(r, "notes");
	for (size_t i = 0; notes && notes->type == V_ARR && i < notes->arr.len; i++)
		fprintf(out, "note: %s\n", notes->arr.items[i]->s);

	const char *verr = value_get_str(r, "verdict_error");
	if (verr)
		fprintf(out, "\nno verdicts: %s\n", verr);
	const struct value *verdicts = value_get(r, "verdicts");
	if (verdicts && verdicts->arr.len)
		fputc('\n', out);
	for (size_t i = 0; verdicts && i < verdicts->arr.len; i++) {
		const struct value *v = verdicts->arr.items[i];
		char sev[16];
		snprintf(sev, sizeof(sev), "%s", value_get_str(v, "severity"));
		for (char *c = sev; *c; c++)
			*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
		fprintf(out, "%-9s  %s  [%s]\n", sev, value_get_str(v, "title"), value_get_str(v, "id"));
		write_list(value_get(v, "evidence"), "-", out);
		write_list(value_get(v, "next_steps"), "->", out);
	}
	for (size_t i = 0; sections && sections->type == V_ARR && i < sections->arr.len; i++)
		write_section(sections->arr.items[i], out);
	if (verr) {
		fputs("\nraw results (JSON):\n", out);
		value_write_json(value_get(r, "results"), out, 2);
		fputc('\n', out);
	}
}

/* ---- folded stacks -------------------------------------------------------------------------- */

static void write_frames_root_first(const struct value *frames, const char *suffix, FILE *out)
{
	if (!frames || frames->type != V_ARR)
		return;
	for (size_t i = frames->arr.len; i-- > 0;) {
		if (frames->arr.items[i]->type != V_STR)
			continue;
		fputc(';', out);
		for (const char *c = frames->arr.items[i]->s; *c; c++)
			fputc(*c == ';' || *c == ' ' ? '_' : *c, out);
		fputs(suffix, out);
	}
}

int report_write_folded(const struct value *results, const char *path, struct diag_err *err)
{
	FILE *out = fopen(path, "w");
	if (!out)
		return diag_fail(err, DIAG_EXIT_USAGE, "--folded %s: %s", path, strerror(errno));
	int written = 0;
	for (size_t p = 0; results && results->type == V_OBJ && p < results->obj.len; p++) {
		const struct value *stacks = value_get(results->obj.vals[p], "stacks");
		for (size_t i = 0; stacks && stacks->type == V_ARR && i < stacks->arr.len; i++) {
			const struct value *s = stacks->arr.items[i];
			const char *comm = value_get_str(s, "comm");
			for (const char *c = comm ? comm : "?"; *c; c++)
				fputc(*c == ';' || *c == ' ' ? '_' : *c, out);
			write_frames_root_first(value_get(s, "user"), "", out);
			write_frames_root_first(value_get(s, "kernel"), "_[k]", out);
			fprintf(out, " %.0f\n", value_get_num(s, "count", 0));
			written++;
		}
	}
	if (fclose(out) != 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "--folded %s: %s", path, strerror(errno));
	return written;
}
