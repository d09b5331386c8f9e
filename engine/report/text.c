/* text.c — the text report (see report.h): the header and its cost line, verdicts, what was
 * ruled out and not checked, the Lua's sections (tables fitted to the terminal, histograms,
 * text), and a dry run's plan.
 * Must not: know any probe's or symptom's meaning; it renders generic shapes. Must not write a
 * string of the report raw: any of them may carry text the target controls (comm, exe, symbol
 * names, through Lua into verdicts and sections): they go out through report_put_text
 * (utf8_safe_char).
 */
#include "report/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "recipe/recipe.h"

/* A rate as "130k/s". */
static void put_rate(FILE *out, double r)
{
	if (r >= 1e6)
		fprintf(out, "%.1fM/s", r / 1e6);
	else if (r >= 1e3)
		fprintf(out, "%.0fk/s", r / 1e3);
	else
		fprintf(out, "%.0f/s", r);
}

/* The header's cost: what the server paid, of the machine's CPUs, and what it went to; "BPF
 * overhead" alone for a report without it (an older one, read back). */
static void put_cost(FILE *out, const struct value *o)
{
	const struct value *c = value_get(o, "server");
	const struct value *pct = value_get(o, "bpf_cpu_pct");
	if (!c || c->type != V_OBJ) {
		if (pct && pct->type != V_NULL)
			fprintf(out, "BPF overhead %.3f%% of CPU", value_get_num(o, "bpf_cpu_pct", 0));
		else
			fputs("BPF overhead not measured", out);
		return;
	}
	const struct value *unit = value_get(c, "per_hit_ns");
	double traps = value_get_num(c, "uprobe_hits_per_s", 0) + value_get_num(c, "uretprobe_hits_per_s", 0);
	double sys = value_get_num(c, "slowed_syscalls_per_s", 0);
	double per_trap = unit ? value_get_num(unit, "uprobe", 0) : 0;
	double per_sys = unit ? value_get_num(unit, "syscall", 0) : 0;
	fprintf(out, "cost to the server %.2f%% of CPU (BPF %.2f%%", value_get_num(c, "server_cpu_pct", 0),
		value_get_num(c, "bpf_cpu_pct", 0));
	if (traps > 0) {
		fputs(", uprobe traps ", out);
		put_rate(out, traps);
		if (per_trap > 0)
			fprintf(out, " at %.1f us", per_trap / 1000);
	}
	if (sys > 0 && per_sys > 0) {
		fputs(", syscall slow path ", out);
		put_rate(out, sys);
		fprintf(out, " at %.0f ns", per_sys);
	}
	if (traps > 0 || (sys > 0 && per_sys > 0))
		fprintf(out, ": %.2f%%", value_get_num(c, "fixed_cpu_pct", 0));
	fprintf(out, ", diagnose %.2f%%)", value_get_num(c, "self_cpu_pct", 0));
}

/* The text report shows every string of the report through utf8_safe_char (util.h): a printable
 * UTF-8 character as it is; each byte of what utf8_char_unsafe names (C0 controls, newline and
 * tab included, DEL, C1 controls, the bidirectional controls, ...) or of anything that is not
 * UTF-8 as "\xNN". So no terminal escape sequence, no line break and no reordering of the
 * target's reaches the terminal. report_put_text prints one string so. */
void report_put_text(FILE *out, const char *s)
{
	char c[UTF8_SAFE_CHAR_MAX];
	while (s && *s) {
		s += utf8_safe_char(s, c);
		fputs(c, out);
	}
}

void report_put_error(const char *msg)
{
	fputs("diagnose: ", stderr);
	report_put_text(stderr, msg);
	fputc('\n', stderr);
}

/* s through utf8_safe_char into buf, cut at a whole character when it does not fit. */
static void text_copy(char *buf, size_t len, const char *s)
{
	char c[UTF8_SAFE_CHAR_MAX];
	size_t used = 0;
	buf[0] = '\0';
	for (size_t n; s && *s; s += n) {
		n = utf8_safe_char(s, c);
		size_t cl = strlen(c);
		if (used + cl >= len)
			break;
		memcpy(buf + used, c, cl + 1);
		used += cl;
	}
}

static void cell_text(const struct value *v, char *buf, size_t len)
{
	if (!v)
		buf[0] = '\0';
	else if (v->type == V_STR)
		text_copy(buf, len, v->s);
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
#define MAX_CELL 1024 /* bytes of a cell as shown (escapes included); longer ones are cut */
#define MIN_COL 12    /* a text column is not narrowed below this (or its natural width) */

/* The columns a string takes: a code point is one (wide CJK characters are counted as one). */
static size_t text_cols(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}

size_t report_text_fit(const char *s, size_t max, char *buf, size_t len)
{
	/* Each unit is what utf8_safe_char makes of one character: a code point or a "\xNN" escape,
	 * which is never split. */
	size_t cap = 16, n = 0, total = 0, used = 0;
	size_t *at = xmalloc(cap * sizeof(*at)), *cols = xmalloc(cap * sizeof(*cols));
	char *esc = xmalloc(strlen(s ? s : "") * 4 + 1);
	char c[UTF8_SAFE_CHAR_MAX];
	for (const char *p = s; p && *p;) {
		p += utf8_safe_char(p, c);
		if (n == cap) {
			cap *= 2;
			at = xrealloc(at, cap * sizeof(*at));
			cols = xrealloc(cols, cap * sizeof(*cols));
		}
		at[n] = used;
		cols[n] = c[0] == '\\' && c[1] == 'x' ? strlen(c) : 1;
		total += cols[n++];
		size_t cl = strlen(c);
		memcpy(esc + used, c, cl);
		used += cl;
	}
	esc[used] = '\0';
	size_t head = n, tail = n; /* units [0, head) and [tail, n) are shown */
	bool elide = max > 0 && total > max;
	if (elide) {
		size_t room = max - 1, h = (room + 1) / 2, w = 0; /* 1: the ellipsis */
		for (head = 0; head < n && w + cols[head] <= h; head++)
			w += cols[head];
		size_t t = room - w;
		w = 0;
		for (tail = n; tail > head && w + cols[tail - 1] <= t; tail--)
			w += cols[tail - 1];
	}
	/* head, "…", tail into buf, cut at a unit when buf is too small */
	size_t out = 0, shown = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (i == head && elide) {
			if (out + 3 >= len)
				break;
			memcpy(buf + out, "\xe2\x80\xa6", 3);
			out += 3;
			shown++;
			i = tail;
			if (i >= n)
				break;
		}
		if (i >= head && i < tail)
			continue;
		size_t ul = (i + 1 < n ? at[i + 1] : used) - at[i];
		if (out + ul >= len)
			break;
		memcpy(buf + out, esc + at[i], ul);
		out += ul;
		shown += cols[i];
	}
	buf[out] = '\0';
	free(at);
	free(cols);
	free(esc);
	return shown;
}

int report_text_width(FILE *out)
{
	int fd = fileno(out);
	bool tty = fd >= 0 && isatty(fd);
	struct winsize ws;
	if (tty && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	const char *env = getenv("COLUMNS");
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (!*end && v > 0 && v <= 100000)
			return (int)v < 20 ? 20 : (int)v;
	}
	return tty ? 80 : 0;
}

/* A cell as shown: fitted to width columns (0: as it is), padded to pad columns on the side
 * that aligns it (right for numbers); pad 0 for the last column. */
static void put_cell(FILE *out, const struct value *v, size_t width, size_t pad, bool right)
{
	char buf[MAX_CELL];
	size_t cols;
	if (v && v->type == V_STR) {
		cols = report_text_fit(v->s, right ? 0 : width, buf, sizeof(buf));
	} else {
		cell_text(v, buf, sizeof(buf));
		cols = text_cols(buf);
	}
	if (right)
		for (size_t i = cols; i < pad; i++)
			fputc(' ', out);
	fputs(buf, out);
	if (!right)
		for (size_t i = cols; i < pad; i++)
			fputc(' ', out);
}

static size_t cell_cols(const struct value *v)
{
	char buf[MAX_CELL];
	if (v && v->type == V_STR)
		return report_text_fit(v->s, 0, buf, sizeof(buf));
	cell_text(v, buf, sizeof(buf));
	return text_cols(buf);
}

/* A table at most `limit` columns wide (0: no limit): text columns are narrowed, the widest first,
 * to MIN_COL at least, and their cells elided in the middle; numbers are never cut. */
static void write_table(const struct value *sec, FILE *out, int limit)
{
	const struct value *cols = value_get(sec, "columns"), *rows = value_get(sec, "rows");
	if (!cols || cols->type != V_ARR || !rows || rows->type != V_ARR)
		return;
	size_t ncols = cols->arr.len < MAX_COLS ? cols->arr.len : MAX_COLS;
	size_t width[MAX_COLS] = { 0 };
	bool numeric[MAX_COLS] = { false };
	/* Headers align like the column's first cell: numbers to the right. */
	const struct value *first = rows->arr.len ? rows->arr.items[0] : NULL;
	for (size_t c = 0; c < ncols; c++) {
		width[c] = cell_cols(cols->arr.items[c]);
		numeric[c] = first && first->type == V_ARR && c < first->arr.len &&
			     is_numeric_cell(first->arr.items[c]);
	}
	for (size_t r = 0; r < rows->arr.len; r++) {
		const struct value *row = rows->arr.items[r];
		for (size_t c = 0; row->type == V_ARR && c < ncols && c < row->arr.len; c++) {
			size_t w = cell_cols(row->arr.items[c]);
			if (w > width[c])
				width[c] = w;
		}
	}
	size_t total = 2;
	for (size_t c = 0; c < ncols; c++)
		total += width[c] + (c ? 2 : 0);
	while (limit > 0 && ncols && total > (size_t)limit) {
		size_t widest = ncols;
		for (size_t c = 0; c < ncols; c++)
			if (!numeric[c] && width[c] > MIN_COL && (widest == ncols || width[c] > width[widest]))
				widest = c;
		if (widest == ncols)
			break; /* nothing left to narrow: the line is longer than the terminal */
		width[widest]--;
		total--;
	}
	fputs("  ", out);
	for (size_t c = 0; c < ncols; c++) {
		if (c)
			fputs("  ", out);
		put_cell(out, cols->arr.items[c], width[c], c + 1 == ncols && !numeric[c] ? 0 : width[c],
			 numeric[c]);
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
			bool right = is_numeric_cell(v);
			if (c)
				fputs("  ", out);
			put_cell(out, v, width[c], c + 1 == ncols && !right ? 0 : width[c], right);
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
		char range[64], unit_text[32];
		text_copy(unit_text, sizeof(unit_text), unit);
		snprintf(range, sizeof(range), "%.0f .. %.0f %s", value_get_num(it, "lo", 0),
			 value_get_num(it, "hi", 0), unit_text);
		fprintf(out, "  %22s  %10.0f |", range, c);
		for (int k = 0; k < bar; k++)
			fputc('#', out);
		fputc('\n', out);
	}
}

static void write_section(const struct value *sec, FILE *out, int width)
{
	const char *kind = value_get_str(sec, "kind"), *title = value_get_str(sec, "title");
	if (!kind)
		return;
	fputc('\n', out);
	report_put_text(out, title);
	fputc('\n', out);
	if (strcmp(kind, "table") == 0) {
		write_table(sec, out, width);
	} else if (strcmp(kind, "histogram") == 0) {
		write_histogram(sec, out);
	} else if (strcmp(kind, "text") == 0) {
		const struct value *lines = value_get(sec, "lines");
		for (size_t i = 0; lines && lines->type == V_ARR && i < lines->arr.len; i++)
			if (lines->arr.items[i]->type == V_STR) {
				fputs("  ", out);
				report_put_text(out, lines->arr.items[i]->s);
				fputc('\n', out);
			}
	}
}

static void write_list(const struct value *list, const char *bullet, FILE *out)
{
	for (size_t i = 0; list && list->type == V_ARR && i < list->arr.len; i++)
		if (list->arr.items[i]->type == V_STR) {
			fprintf(out, "           %s ", bullet);
			report_put_text(out, list->arr.items[i]->s);
			fputc('\n', out);
		}
}

/* What the snippet checked and found fine, one line each (a report recorded before ruled_out
 * existed has none: no heading). */
static void write_ruled_out(const struct value *items, FILE *out)
{
	if (!items || items->type != V_ARR || !items->arr.len)
		return;
	fputs("\nChecked and ruled out:\n", out);
	for (size_t i = 0; i < items->arr.len; i++) {
		const char *text = value_get_str(items->arr.items[i], "text");
		if (!text)
			continue;
		fputs("  - ", out);
		report_put_text(out, text);
		fputc('\n', out);
	}
}

/* The probes a run went on without: the target lacks what they need (no libc for the resolver
 * probe, no USDT probe, no allocator of its own), or they did not load on this kernel or machine
 * (a feature, a tracepoint, a PMU missing): what they would have checked is not checked. */
static void write_skipped(const struct value *probes, const char *field, const char *heading, FILE *out)
{
	bool any = false;
	for (size_t i = 0; probes && probes->type == V_ARR && i < probes->arr.len; i++) {
		const struct value *p = probes->arr.items[i];
		const char *why = value_get_str(p, field);
		if (!why)
			continue;
		if (!any)
			fputs(heading, out);
		any = true;
		fputs("  - ", out);
		report_put_text(out, value_get_str(p, "id"));
		fputs(" (", out);
		report_put_text(out, value_get_str(p, "kind"));
		fputs("): ", out);
		report_put_text(out, why);
		fputc('\n', out);
	}
}

static void write_not_checked(const struct value *probes, FILE *out)
{
	write_skipped(probes, "load_error", "\nDegraded (these probes did not load here; what they measure is not checked):\n", out);
	write_skipped(probes, "not_applicable", "\nNot checked (nothing for these probes to apply to in this target):\n", out);
}

static void human_bytes(char *buf, size_t len, double b)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB" };
	int u = 0;
	while (b >= 1024 && u < 3) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

static void human_count(char *buf, size_t len, double n)
{
	if (n >= 1e6)
		snprintf(buf, len, "%.1fM", n / 1e6);
	else if (n >= 1e4)
		snprintf(buf, len, "%.1fk", n / 1e3);
	else
		snprintf(buf, len, "%.0f", n);
}

void report_write_plan_text(const struct value *plan, FILE *out)
{
	const struct value *probes = value_get(plan, "probes"), *pf = value_get(plan, "preflight");
	const struct value *rates = value_get(pf, "probes"), *b = value_get(plan, "budgets");
	char bytes[32], max[32], rate[32], rmax[32];
	fprintf(out, "\nPlan: %.3g s of collection\n", value_get_num(plan, "duration_s", 0));
	fprintf(out, "  %-12s %-16s %-12s %-22s %10s  %s\n", "probe", "kind", "attach", "filters",
		"maps", "pre-flight (events/s)");
	for (size_t i = 0; probes && i < probes->arr.len; i++) {
		const struct value *p = probes->arr.items[i], *f = value_get(p, "filters");
		char filters[128] = "", id[64], kind[64], variant[64];
		for (size_t k = 0; f && f->type == V_OBJ && k < f->obj.len; k++) {
			char v[48];
			const struct value *fv = f->obj.vals[k];
			if (fv->type == V_STR)
				text_copy(v, sizeof(v), fv->s);
			else
				snprintf(v, sizeof(v), "%.0f", fv->type == V_INT ? (double)fv->i : fv->n);
			snprintf(filters + strlen(filters), sizeof(filters) - strlen(filters), "%s%s=%s",
				 k ? " " : "", f->obj.keys[k], v);
		}
		if (value_get(p, "filter_pid"))
			snprintf(filters + strlen(filters), sizeof(filters) - strlen(filters), " (%.0f)",
				 value_get_num(p, "filter_pid", 0));
		text_copy(id, sizeof(id), value_get_str(p, "id"));
		text_copy(kind, sizeof(kind), value_get_str(p, "kind"));
		text_copy(variant, sizeof(variant), value_get_str(p, "variant") ? value_get_str(p, "variant") : "-");
		human_bytes(bytes, sizeof(bytes), value_get_num(p, "map_bytes", 0));
		const struct value *r = value_get(rates, id);
		const char *how = value_get_str(r, "rate");
		char measured[96] = "not measured";
		if (how && !strcmp(how, "measured")) {
			human_count(rate, sizeof(rate), value_get_num(r, "events_per_s", 0));
			snprintf(measured, sizeof(measured), "%s", rate);
			if (value_get(r, "sample_every") && value_get_num(r, "sample_every", 1) > 1)
				snprintf(measured + strlen(measured), sizeof(measured) - strlen(measured),
					 ", sampled 1 in %.0f", value_get_num(r, "sample_every", 1));
		} else if (how) {
			text_copy(measured, sizeof(measured), how);
		}
		fprintf(out, "  %-12s %-16s %-12s %-22s %10s  %s\n", id, kind, variant, filters, bytes, measured);
		const struct value *opts = value_get(p, "options");
		if (opts && opts->type == V_OBJ && opts->obj.len) {
			fputs("      options:", out);
			for (size_t k = 0; k < opts->obj.len; k++) {
				const struct value *ov = opts->obj.vals[k];
				fprintf(out, " %s=", opts->obj.keys[k]);
				if (ov->type == V_STR)
					report_put_text(out, ov->s);
				else
					fprintf(out, "%.0f", ov->type == V_INT ? (double)ov->i : ov->n);
			}
			fputc('\n', out);
		}
		if (value_get_str(p, "note")) {
			fputs("      note: ", out);
			report_put_text(out, value_get_str(p, "note"));
			fputc('\n', out);
		}
	}
	if (b) {
		human_bytes(bytes, sizeof(bytes), value_get_num(plan, "map_bytes", 0));
		human_bytes(max, sizeof(max), value_get_num(b, "max_map_bytes", 0));
		fprintf(out, "Budgets: maps %s of %s; duration at most %.0f s", bytes, max,
			value_get_num(b, "max_duration_s", 0));
		if (pf && value_get(pf, "events_per_s")) {
			human_count(rate, sizeof(rate), value_get_num(pf, "events_per_s", 0));
			human_count(rmax, sizeof(rmax), value_get_num(b, "max_events_per_s", 0));
			fprintf(out, "; events %s/s of %s/s (over it: %s)", rate,
				value_get_num(b, "max_events_per_s", 0) ? rmax : "unlimited",
				value_get_str(b, "degrade") ? value_get_str(b, "degrade") : "refuse");
		}
		fprintf(out, "; cost to the server at most %.3g%% of CPU", value_get_num(b, "max_cpu_pct", 0));
		if (pf && value_get(pf, "estimated_server_cpu_pct_min"))
			fprintf(out, " (at least %.3g%% estimated from the pre-flight: BPF %.3g%%, traps "
				"and slow paths %.3g%%)", value_get_num(pf, "estimated_server_cpu_pct_min", 0),
				value_get_num(pf, "estimated_bpf_cpu_pct_min", 0),
				value_get_num(pf, "fixed_cpu_pct", 0));
		else if (pf && value_get(pf, "estimated_bpf_cpu_pct_min"))
			fprintf(out, " (at least %.3g%% estimated from the pre-flight)",
				value_get_num(pf, "estimated_bpf_cpu_pct_min", 0));
		fputs("\n", out);
	}
	const char *refused = value_get_str(plan, "refused");
	const char *pf_state = value_get_str(plan, "preflight");
	if (refused) {
		fputs("A real run would be REFUSED: ", out);
		report_put_text(out, refused);
		fputc('\n', out);
	} else if (value_get_str(plan, "preflight_error")) {
		fputs("The pre-flight failed: ", out);
		report_put_text(out, value_get_str(plan, "preflight_error"));
		fputc('\n', out);
	} else {
		fputs("A real run would go ahead", out);
		if (pf_state) { /* a string: why it was not measured */
			fputs(" as far as can be told without the pre-flight: ", out);
			report_put_text(out, pf_state);
		}
		fputs(".\n", out);
	}
}

/* SGR colours of the severity labels (the labels are ours: no target bytes in an escape). */
static const char *severity_color(const char *sev)
{
	if (!strcmp(sev, "CRITICAL"))
		return "\033[1;31m";
	if (!strcmp(sev, "WARNING"))
		return "\033[1;33m";
	if (!strcmp(sev, "INFO"))
		return "\033[36m";
	if (!strcmp(sev, "OK"))
		return "\033[32m";
	return NULL;
}

bool report_use_color(FILE *out)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
	return isatty(fileno(out)) && !(no && *no) && !(term && !strcmp(term, "dumb"));
}

void report_write_text(const struct value *r, FILE *out)
{
	report_write_text_width(r, out, report_text_width(out));
}

void report_write_text_width(const struct value *r, FILE *out, int width)
{
	bool color = report_use_color(out);
	const struct value *sections = value_get(r, "sections");
	const struct value *rec = value_get(r, "recipe"), *t = value_get(r, "target");
	const struct value *o = value_get(r, "overhead");
	fputs("diagnose ", out);
	report_put_text(out, value_get_str(rec, "name"));
	const struct value *procs = t ? value_get(t, "processes") : NULL;
	if (t && t->type == V_OBJ && procs && procs->type == V_ARR) {
		/* a set of processes: the selection, then the pids it covered */
		fputs(" — ", out);
		report_put_text(out, value_get_str(t, "selection"));
		fputc(' ', out);
		report_put_text(out, value_get_str(t, "name"));
		fprintf(out, ": %zu process%s (", procs->arr.len, procs->arr.len == 1 ? "" : "es");
		for (size_t i = 0; i < procs->arr.len && i < 8; i++)
			fprintf(out, "%s%.0f", i ? " " : "pid ", value_get_num(procs->arr.items[i], "pid", 0));
		fputs(procs->arr.len > 8 ? " ...) " : ") ", out);
		report_put_text(out, value_get_str(t, "exe"));
	} else if (t && t->type == V_OBJ) {
		fprintf(out, " — pid %.0f (", value_get_num(t, "pid", 0));
		report_put_text(out, value_get_str(t, "comm"));
		fputs(") ", out);
		report_put_text(out, value_get_str(t, "exe"));
	}
	if (t && t->type == V_OBJ && value_get_str(t, "started_as")) { /* a symlink's name, argv[0] */
		fputs(" (started as ", out);
		report_put_text(out, value_get_str(t, "started_as"));
		fputc(')', out);
	}
	fputc('\n', out);
	const char *stop = value_get_str(r, "stop_reason");
	if (stop && strcmp(stop, "dry-run") == 0) {
		fputs("dry run: probes loaded through the verifier, not attached; only the pre-flight's "
		      "counting program was attached, for its window; nothing collected\n", out);
	} else {
		fprintf(out, "collected %.2f s (stopped: ", value_get_num(r, "duration_s", 0));
		report_put_text(out, stop);
		fputs("); ", out);
		put_cost(out, o);
		fprintf(out, ", %.0f events, %.0f dropped\n", value_get_num(o, "events", 0),
			value_get_num(o, "dropped", 0));
	}
	const struct value *rp = value_get(r, "replayed");
	if (rp && rp->type == V_OBJ) {
		fputs("replayed: verdicts of ", out);
		report_put_text(out, value_get_str(rp, "lua"));
		fputs(" on the results recorded in ", out);
		report_put_text(out, value_get_str(rp, "from"));
		fputc('\n', out);
	}
	const struct value *notes = value_get(r, "notes");
	for (size_t i = 0; notes && notes->type == V_ARR && i < notes->arr.len; i++) {
		if (notes->arr.items[i]->type != V_STR)
			continue;
		fputs("note: ", out);
		report_put_text(out, notes->arr.items[i]->s);
		fputc('\n', out);
	}

	const char *verr = value_get_str(r, "verdict_error");
	if (verr) {
		fputs("\nno verdicts: ", out);
		report_put_text(out, verr);
		fputc('\n', out);
	}
	const struct value *verdicts = value_get(r, "verdicts");
	if (verdicts && verdicts->type == V_ARR && verdicts->arr.len)
		fputc('\n', out);
	for (size_t i = 0; verdicts && verdicts->type == V_ARR && i < verdicts->arr.len; i++) {
		const struct value *v = verdicts->arr.items[i];
		char sev[16];
		text_copy(sev, sizeof(sev), value_get_str(v, "severity"));
		for (char *c = sev; *c; c++)
			*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
		const char *on = color ? severity_color(sev) : NULL;
		fprintf(out, "%s%-9s%s  ", on ? on : "", sev, on ? "\033[0m" : "");
		report_put_text(out, value_get_str(v, "title"));
		fputs("  [", out);
		report_put_text(out, value_get_str(v, "id"));
		fputs("]\n", out);
		write_list(value_get(v, "evidence"), "-", out);
		write_list(value_get(v, "next_steps"), "->", out);
	}
	write_ruled_out(value_get(r, "ruled_out"), out);
	write_not_checked(value_get(r, "probes"), out);
	for (size_t i = 0; sections && sections->type == V_ARR && i < sections->arr.len; i++)
		write_section(sections->arr.items[i], out, width);
	if (verr) {
		fputs("\nraw results (JSON):\n", out);
		value_write_json(value_get(r, "results"), out, 2);
		fputc('\n', out);
	}
}
