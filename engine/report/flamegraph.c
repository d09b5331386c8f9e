/* flamegraph.c — the SVG flame graph of one probe's stacks (see flamegraph.h).
 *
 * Layout: a frame at depth d (root "all" at 0) sits FRAME_H px above the one below it; its x and
 * width are its offset and weight in the weight units of its parent's span, scaled to the drawing
 * width. Each frame is a <g class="f KIND"> with data-x (offset, in weight units), data-w (its
 * weight) and data-d (depth): the script redraws from those on zoom, so no coordinate is derived
 * from a name. Children are merged by (kind, name) and ordered by name, so the same stacks always
 * give the same picture.
 */
#include "report/flamegraph.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define SVG_W 1200
#define PAD 10
#define FRAME_H 16
#define TOP 70      /* title, subtitle, search box */
#define BOTTOM 44   /* details line, legend */
#define FONT_PX 11
#define CHAR_W 6.6  /* monospace advance at FONT_PX, for fitting labels */
#define MIN_PX 0.1  /* narrower frames are left out */

enum fkind { FK_ROOT, FK_COMM, FK_TAG, FK_USER, FK_KERNEL };
static const char *const fkind_class[] = { "r", "c", "t", "u", "k" };
static const char *const fkind_label[] = { "all stacks", "thread", "tag", "user frame",
					   "kernel frame" };

struct fnode {
	char *name;
	enum fkind kind;
	double w;  /* weight (a differential graph: AFTER's) */
	double wb; /* a differential graph: BEFORE's weight */
	struct fnode **kids;
	size_t n, cap;
};

static struct fnode *node_child(struct fnode *p, enum fkind kind, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->kids[i]->kind == kind && strcmp(p->kids[i]->name, name) == 0)
			return p->kids[i];
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 4;
		p->kids = xrealloc(p->kids, p->cap * sizeof(*p->kids));
	}
	struct fnode *c = xcalloc(1, sizeof(*c));
	c->name = xstrdup(name);
	c->kind = kind;
	p->kids[p->n++] = c;
	return c;
}

static void node_free(struct fnode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n->name);
	free(n);
}

static int node_cmp(const void *a, const void *b)
{
	const struct fnode *x = *(const struct fnode *const *)a, *y = *(const struct fnode *const *)b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void node_sort(struct fnode *n)
{
	if (n->n > 1)
		qsort(n->kids, n->n, sizeof(*n->kids), node_cmp);
	for (size_t i = 0; i < n->n; i++)
		node_sort(n->kids[i]);
}

static void node_add(struct fnode *n, double w, bool before)
{
	if (before)
		n->wb += w;
	else
		n->w += w;
}

/* Frames root first: the arrays are leaf first. */
static struct fnode *add_frames(struct fnode *at, const struct value *frames, enum fkind kind,
				double w, bool before)
{
	if (!frames || frames->type != V_ARR)
		return at;
	for (size_t i = frames->arr.len; i-- > 0;) {
		if (frames->arr.items[i]->type != V_STR)
			continue;
		at = node_child(at, kind, frames->arr.items[i]->s);
		node_add(at, w, before);
	}
	return at;
}

/* Adds the stacks to the tree at root: their weights to w, or with before to wb. */
static void tree_add(struct fnode *root, const struct value *stacks, bool before)
{
	for (size_t i = 0; i < stacks->arr.len; i++) {
		const struct value *s = stacks->arr.items[i];
		double w = value_get_num(s, "weight", 0);
		if (!(w > 0))
			continue;
		const char *comm = value_get_str(s, "comm"), *tag = value_get_str(s, "tag");
		node_add(root, w, before);
		struct fnode *at = node_child(root, FK_COMM, comm ? comm : "?");
		node_add(at, w, before);
		if (tag && *tag) {
			char *t = xmalloc(strlen(tag) + 3);
			sprintf(t, "[%s]", tag);
			at = node_child(at, FK_TAG, t);
			node_add(at, w, before);
			free(t);
		}
		at = add_frames(at, value_get(s, "user"), FK_USER, w, before);
		add_frames(at, value_get(s, "kernel"), FK_KERNEL, w, before);
	}
}

static struct fnode *tree_new(void)
{
	struct fnode *root = xcalloc(1, sizeof(*root));
	root->name = xstrdup("all");
	root->kind = FK_ROOT;
	return root;
}

/* ---- XML text ------------------------------------------------------------------------------ */

/* One character of a name at s as XML text: the markup characters as entities; every byte XML
 * 1.0 forbids or a reader could not see or would be misled by (what utf8_char_unsafe names:
 * controls, DEL, C1 controls, bidirectional controls, U+FFFE/U+FFFF, ...) and every byte that is
 * not UTF-8 as the four characters "\xNN". Writes it when out is not NULL; returns the bytes of
 * s consumed in *adv and the characters it shows. */
static size_t xml_char(FILE *out, const char *s, size_t *adv)
{
	unsigned char b = (unsigned char)*s;
	size_t n = utf8_char_len(s);
	if (utf8_char_unsafe(s, n)) {
		size_t k = n ? n : 1;
		for (size_t i = 0; out && i < k; i++)
			fprintf(out, "\\x%02x", (unsigned char)s[i]);
		*adv = k;
		return 4 * k;
	}
	*adv = n;
	if (!out)
		return 1;
	switch (b) {
	case '&': fputs("&amp;", out); break;
	case '<': fputs("&lt;", out); break;
	case '>': fputs("&gt;", out); break;
	case '"': fputs("&quot;", out); break;
	case '\'': fputs("&#39;", out); break;
	default: fwrite(s, 1, n, out);
	}
	return 1;
}

static size_t xml_len(const char *s)
{
	size_t len = 0, adv;
	for (; *s; s += adv)
		len += xml_char(NULL, s, &adv);
	return len;
}

static void xml_text(FILE *out, const char *s)
{
	size_t adv;
	for (; *s; s += adv)
		xml_char(out, s, &adv);
}

/* At most max characters of s: all of it, or the start followed by "..", or nothing under 3. */
static void xml_text_fit(FILE *out, const char *s, size_t max)
{
	if (xml_len(s) <= max) {
		xml_text(out, s);
		return;
	}
	if (max < 3)
		return;
	size_t shown = 0, adv;
	for (; *s; s += adv) {
		size_t w = xml_char(NULL, s, &adv);
		if (shown + w > max - 2)
			break;
		xml_char(out, s, &adv);
		shown += w;
	}
	fputs("..", out);
}

/* ---- units --------------------------------------------------------------------------------- */

const char *flamegraph_unit_title(const char *u)
{
	if (!u)
		return "";
	if (strcmp(u, "samples") == 0)
		return "on-CPU samples";
	if (strcmp(u, "ns") == 0)
		return "off-CPU time";
	return u;
}

/* 1234567 → "1,234,567" */
static void put_grouped(FILE *out, double v)
{
	char digits[32];
	snprintf(digits, sizeof(digits), "%.0f", v < 0 ? 0 : v);
	size_t len = strlen(digits);
	for (size_t i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			fputc(',', out);
		fputc(digits[i], out);
	}
}

/* A weight in the unit of the stacks, for a reader. */
static void put_weight(FILE *out, double v, const char *unit)
{
	if (strcmp(unit, "samples") == 0) {
		put_grouped(out, v);
		fputs(v == 1 ? " sample" : " samples", out);
	} else if (strcmp(unit, "ns") == 0) {
		if (v < 1e3)
			fprintf(out, "%.0f ns", v);
		else if (v < 1e6)
			fprintf(out, "%.1f \xc2\xb5s", v / 1e3);
		else if (v < 1e9)
			fprintf(out, "%.1f ms", v / 1e6);
		else
			fprintf(out, "%.2f s", v / 1e9);
	} else if (strcmp(unit, "bytes") == 0) {
		if (v < 1024)
			fprintf(out, "%.0f B", v);
		else if (v < 1024.0 * 1024)
			fprintf(out, "%.1f KiB", v / 1024);
		else if (v < 1024.0 * 1024 * 1024)
			fprintf(out, "%.1f MiB", v / (1024.0 * 1024));
		else
			fprintf(out, "%.2f GiB", v / (1024.0 * 1024 * 1024));
	} else {
		put_grouped(out, v);
		fputc(' ', out);
		xml_text(out, unit);
	}
}

/* ---- drawing ------------------------------------------------------------------------------- */

/* A colour from the name, so a function keeps its colour between graphs; the hue range by kind. */
static void put_fill(FILE *out, const struct fnode *n)
{
	uint32_t h = 2166136261u;
	for (const char *c = n->name; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	double a = (h & 0xff) / 255.0, b = ((h >> 8) & 0xff) / 255.0;
	int r, g, bl;
	switch (n->kind) {
	case FK_USER: r = 205 + (int)(50 * a); g = 70 + (int)(120 * b); bl = 40 + (int)(30 * a); break;
	case FK_KERNEL: r = 60 + (int)(40 * a); g = 140 + (int)(60 * b); bl = 190 + (int)(60 * a); break;
	case FK_TAG: r = 170 + (int)(30 * a); g = 110 + (int)(30 * b); bl = 220; break;
	case FK_COMM: r = 150 + (int)(30 * b); g = 180 + (int)(30 * b); bl = 150 + (int)(30 * a); break;
	default: r = g = bl = 200;
	}
	fprintf(out, "rgb(%d,%d,%d)", r, g, bl);
}

/* A differential graph's colour: white-grey for a share that did not move, redder as it grew and
 * bluer as it shrank, full at `full` points. */
static void put_diff_fill(FILE *out, double delta, double full)
{
	double i = full > 0 ? fabs(delta) / full : 0;
	if (i > 1)
		i = 1;
	int hi = 225 + (int)lround(30 * i), lo = 225 - (int)lround(185 * i);
	if (delta > 0)
		fprintf(out, "rgb(%d,%d,%d)", hi, lo, lo);
	else
		fprintf(out, "rgb(%d,%d,%d)", lo, lo, hi);
}

struct draw {
	FILE *out;
	const char *unit;
	double total, scale; /* px per weight unit */
	int height;
	bool diff;           /* a differential graph: w is AFTER's weight, wb BEFORE's */
	double total_before; /* BEFORE's total weight */
	double full;         /* points of share moved at which the colour is full */
};

/* How many points a frame's share of its graph's total moved from BEFORE to AFTER. */
static double share_delta(const struct draw *dr, const struct fnode *n)
{
	double a = dr->total > 0 ? n->w / dr->total : 0;
	double b = dr->total_before > 0 ? n->wb / dr->total_before : 0;
	return 100 * (a - b);
}

/* The largest move of a drawn frame's share, in points. */
static double max_delta(const struct draw *dr, const struct fnode *n)
{
	double m = fabs(share_delta(dr, n));
	for (size_t i = 0; i < n->n; i++) {
		if (n->kids[i]->w * dr->scale < MIN_PX)
			continue;
		double k = max_delta(dr, n->kids[i]);
		if (k > m)
			m = k;
	}
	return m;
}

static unsigned max_depth(const struct fnode *n, double scale, unsigned d)
{
	unsigned m = d;
	for (size_t i = 0; i < n->n; i++) {
		if (n->kids[i]->w * scale < MIN_PX)
			continue;
		unsigned k = max_depth(n->kids[i], scale, d + 1);
		if (k > m)
			m = k;
	}
	return m;
}

/* Frames of n's subtree (n included) that have a weight of their own. */
static size_t count_nodes(const struct fnode *n)
{
	size_t c = n->w > 0;
	for (size_t i = 0; i < n->n; i++)
		c += count_nodes(n->kids[i]);
	return c;
}

/* Frames left out: too narrow, with everything above them. A differential graph's frames of
 * BEFORE only (no weight in AFTER) are not counted: count_gone counts them. */
static size_t count_omitted(const struct fnode *n, double scale)
{
	size_t c = 0;
	for (size_t i = 0; i < n->n; i++)
		c += n->kids[i]->w * scale < MIN_PX ? count_nodes(n->kids[i])
						   : count_omitted(n->kids[i], scale);
	return c;
}

/* Frames of BEFORE that AFTER does not have (so nothing to draw them by). */
static size_t count_gone(const struct fnode *n)
{
	size_t c = n->w > 0 ? 0 : 1;
	for (size_t i = 0; i < n->n; i++)
		c += count_gone(n->kids[i]);
	return c;
}

static void draw_node(struct draw *dr, const struct fnode *n, unsigned depth, double x)
{
	FILE *out = dr->out;
	double px = PAD + x * dr->scale, pw = n->w * dr->scale;
	double y = dr->height - BOTTOM - (double)(depth + 1) * FRAME_H;
	double delta = dr->diff ? share_delta(dr, n) : 0;
	fprintf(out, "<g class=\"f %s\" data-x=\"%.17g\" data-w=\"%.17g\" data-d=\"%u\"",
		fkind_class[n->kind], x, n->w, depth);
	if (dr->diff)
		fprintf(out, " data-wb=\"%.17g\" data-delta=\"%.4f\"", n->wb, delta);
	fputs("><title>", out);
	xml_text(out, n->name);
	fprintf(out, "\n%s \xc2\xb7 ", fkind_label[n->kind]);
	if (dr->diff) {
		fputs("before ", out);
		put_weight(out, n->wb, dr->unit);
		fprintf(out, " (%.2f%%) \xc2\xb7 after ", dr->total_before > 0 ? 100.0 * n->wb / dr->total_before : 0);
		put_weight(out, n->w, dr->unit);
		fprintf(out, " (%.2f%%) \xc2\xb7 %+.2f points", dr->total > 0 ? 100.0 * n->w / dr->total : 0,
			delta);
	} else {
		put_weight(out, n->w, dr->unit);
		fprintf(out, " \xc2\xb7 %.2f%%", dr->total > 0 ? 100.0 * n->w / dr->total : 0);
	}
	fprintf(out, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"",
		px, y, pw, FRAME_H - 1);
	if (dr->diff)
		put_diff_fill(out, delta, dr->full);
	else
		put_fill(out, n);
	fprintf(out, "\"/><text x=\"%.2f\" y=\"%.1f\">", px + 3, y + FRAME_H - 4.5);
	double fit = (pw - 6) / CHAR_W;
	xml_text_fit(out, n->name, fit > 0 ? (size_t)fit : 0);
	fputs("</text></g>\n", out);
	for (size_t i = 0; i < n->n; i++) {
		const struct fnode *k = n->kids[i];
		if (k->w * dr->scale >= MIN_PX)
			draw_node(dr, k, depth + 1, x);
		x += k->w;
	}
}

/* The script: layout from data-x/-w/-d, zoom, search, details. It holds no name of the target. */
static const char script[] =
	"var FG = {};\n"
	"function fg_init() {\n"
	"  var svg = document.documentElement;\n"
	"  FG.pad = +svg.getAttribute('data-pad'); FG.w = +svg.getAttribute('data-width') - 2 * FG.pad;\n"
	"  FG.total = +svg.getAttribute('data-total'); FG.unit = svg.getAttribute('data-unit');\n"
	"  FG.chw = +svg.getAttribute('data-charw');\n"
	"  FG.frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  FG.frames.forEach(function (g) {\n"
	"    g.fx = +g.getAttribute('data-x'); g.fw = +g.getAttribute('data-w'); g.fd = +g.getAttribute('data-d');\n"
	"    var t = g.querySelector('title').textContent; g.fname = t.split('\\n')[0]; g.finfo = t;\n"
	"    g.addEventListener('click', function () { zoom(g); });\n"
	"    g.addEventListener('mouseover', function () { details(g.finfo.replace('\\n', ' \\u2014 ')); });\n"
	"    g.addEventListener('mouseout', function () { details(''); });\n"
	"  });\n"
	"  document.getElementById('reset').addEventListener('click', function () { zoom(null); });\n"
	"  var s = document.getElementById('search');\n"
	"  if (s) s.addEventListener('input', function () { search(s.value); });\n"
	"  document.addEventListener('keydown', function (e) {\n"
	"    if (s && ((e.ctrlKey && e.key === 'f') || (e.key === '/' && document.activeElement !== s))) { e.preventDefault(); s.focus(); }\n"
	"    if (e.key === 'Escape') { if (s) s.value = ''; search(''); zoom(null); }\n"
	"  });\n"
	"  zoom(null);\n"
	"  /* FILE.svg#s=TEXT opens with that search, #z=NAME zoomed to the widest frame of that\n"
	"     name: links that show a function's share, or its callees */\n"
	"  var h = /^#s=(.*)$/.exec(location.hash), z = /^#z=(.*)$/.exec(location.hash);\n"
	"  if (s && h) { s.value = decodeURIComponent(h[1]); search(s.value); }\n"
	"  if (z) {\n"
	"    var name = decodeURIComponent(z[1]), best = null;\n"
	"    FG.frames.forEach(function (g) { if (g.fname === name && (!best || g.fw > best.fw)) best = g; });\n"
	"    if (best) zoom(best);\n"
	"  }\n"
	"}\n"
	"function details(text) { document.getElementById('details').textContent = text || ' '; }\n"
	"function human(v) {\n"
	"  if (FG.unit === 'samples') return Math.round(v).toLocaleString('en-US') + ' samples';\n"
	"  if (FG.unit === 'ns') return v < 1e3 ? v.toFixed(0) + ' ns' : v < 1e6 ? (v / 1e3).toFixed(1) + ' \\u00b5s' :\n"
	"    v < 1e9 ? (v / 1e6).toFixed(1) + ' ms' : (v / 1e9).toFixed(2) + ' s';\n"
	"  if (FG.unit === 'bytes') return v < 1024 ? v.toFixed(0) + ' B' : v < 1048576 ? (v / 1024).toFixed(1) + ' KiB' :\n"
	"    v < 1073741824 ? (v / 1048576).toFixed(1) + ' MiB' : (v / 1073741824).toFixed(2) + ' GiB';\n"
	"  return Math.round(v).toLocaleString('en-US') + ' ' + FG.unit;\n"
	"}\n"
	"function fit(g, width) {\n"
	"  var n = Math.floor((width - 6) / FG.chw), name = g.fname;\n"
	"  if (name.length <= n) return name;\n"
	"  return n < 3 ? '' : name.slice(0, n - 2) + '..';\n"
	"}\n"
	"/* Shows the span of frame z (null: everything): its ancestors across the width, its\n"
	"   descendants scaled to it, the rest hidden. */\n"
	"function zoom(z) {\n"
	"  var x0 = z ? z.fx : 0, span = z ? z.fw : FG.total, d0 = z ? z.fd : -1;\n"
	"  var scale = span > 0 ? FG.w / span : 0;\n"
	"  FG.frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect'), t = g.querySelector('text'), x, w;\n"
	"    if (g.fx + g.fw <= x0 || g.fx >= x0 + span) { g.style.display = 'none'; return; }\n"
	"    if (g.fd <= d0) { x = FG.pad; w = FG.w; } else { x = FG.pad + (g.fx - x0) * scale; w = g.fw * scale; }\n"
	"    g.style.display = '';\n"
	"    g.classList.toggle('above', g.fd < d0);\n"
	"    r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
	"    t.setAttribute('x', (x + 3).toFixed(2)); t.textContent = fit(g, w);\n"
	"  });\n"
	"  document.getElementById('reset').style.display = z ? '' : 'none';\n"
	"}\n"
	"/* Highlights the frames whose name holds term (case-insensitive) and shows their share: the\n"
	"   union of their spans, so a match nested in a match counts once. */\n"
	"function search(term) {\n"
	"  term = term.toLowerCase();\n"
	"  var spans = [];\n"
	"  FG.frames.forEach(function (g) {\n"
	"    var hit = term !== '' && g.fname.toLowerCase().indexOf(term) >= 0;\n"
	"    g.classList.toggle('hit', hit);\n"
	"    if (hit) spans.push([g.fx, g.fx + g.fw]);\n"
	"  });\n"
	"  var m = document.getElementById('matched');\n"
	"  if (term === '') { m.textContent = ' '; return; }\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  var sum = 0, end = -1;\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
	"    else if (s[1] > end) { sum += s[1] - end; end = s[1]; }\n"
	"  });\n"
	"  m.textContent = 'Matched: ' + (FG.total > 0 ? (100 * sum / FG.total).toFixed(2) : '0.00') + '% (' + human(sum) + ')';\n"
	"}\n";

static const char style[] =
	"text { font-family: 'DejaVu Sans Mono', monospace; font-size: 11px; fill: #000; }\n"
	"#title { font-size: 17px; font-family: sans-serif; }\n"
	"#subtitle, #details, #matched, .legend { font-size: 12px; }\n"
	"#reset { cursor: pointer; fill: #1a5fb4; font-size: 13px; }\n"
	"g.f { cursor: pointer; }\n"
	"g.f text { pointer-events: none; }\n"
	"g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	"g.f.above rect { opacity: 0.5; }\n"
	"g.f.hit rect { fill: rgb(230,0,230); }\n"
	"input { font: 12px sans-serif; width: 100%; box-sizing: border-box; }\n";

static void legend_box(FILE *out, int x, int y, const char *fill, const char *label)
{
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
		"<text class=\"legend\" x=\"%d\" y=\"%d\">%s</text>\n", x, y, fill, x + 16, y + 10, label);
}

/* The document for root (NULL: no stacks array; otherwise sorted), AFTER's stacks n_stacks, and
 * for a differential graph (diff) BEFORE's n_before. Returns n_stacks, or -1 when nothing has a
 * weight. */
static int write_svg(struct fnode *root, size_t n_stacks, bool diff, double total_before,
		     size_t n_before, const char *unit, const char *title, FILE *out)
{
	struct draw dr = { .out = out, .unit = unit, .diff = diff, .total_before = total_before };
	unsigned depth = 0;
	if (root) {
		dr.total = root->w;
		dr.scale = root->w > 0 ? (SVG_W - 2.0 * PAD) / root->w : 0;
		depth = root->w > 0 ? max_depth(root, dr.scale, 0) + 1 : 0;
	}
	dr.height = TOP + (int)depth * FRAME_H + BOTTOM + 8;

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", out);
	fprintf(out, "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" data-width=\"%d\" data-pad=\"%d\" "
		"data-charw=\"%.2f\" data-total=\"%.17g\" data-unit=\"", SVG_W, dr.height, SVG_W,
		dr.height, SVG_W, PAD, CHAR_W, dr.total);
	xml_text(out, unit);
	if (diff)
		fprintf(out, "\" data-total-before=\"%.17g", total_before);
	fputs("\" onload=\"fg_init()\">\n<style>\n", out);
	fputs(style, out);
	fputs("</style>\n<script type=\"text/ecmascript\"><![CDATA[\n", out);
	fputs(script, out);
	fputs("]]></script>\n", out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f6f6f0\"/>\n", SVG_W,
		dr.height);
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">%s: ",
		SVG_W / 2, diff ? "Differential flame graph" : "Flame graph");
	xml_text(out, flamegraph_unit_title(unit));
	if (title && *title) {
		fputs(" \xe2\x80\x94 ", out);
		xml_text(out, title);
	}
	fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\">", SVG_W / 2);

	if (!root || !(root->w > 0)) {
		fputs(!root ? "no stacks in this probe's results"
		      : diff ? "no stacks with a weight in the AFTER report" : "no stacks with a weight", out);
		fprintf(out, "</text>\n<text id=\"reset\" x=\"%d\" y=\"24\" style=\"display:none\"> </text>"
			"<text id=\"details\" x=\"%d\" y=\"60\"> </text><text id=\"matched\" x=\"%d\" "
			"y=\"60\"> </text>\n</svg>\n", PAD, PAD, SVG_W - PAD);
		return -1;
	}
	size_t omitted = count_omitted(root, dr.scale);
	if (diff) {
		dr.full = max_delta(&dr, root);
		if (dr.full < 1)
			dr.full = 1; /* a move under a point stays pale: noise between two runs */
		fputs("after: ", out);
		put_weight(out, root->w, unit);
		fprintf(out, " in %zu stacks; before: ", n_stacks);
		put_weight(out, total_before, unit);
		fprintf(out, " in %zu; widths: after; red: share grew, blue: shrank (full at %.1f points)",
			n_before, dr.full);
		size_t gone = count_gone(root);
		if (gone)
			fprintf(out, "; %zu frames of before only not drawn", gone);
	} else {
		fputs("total ", out);
		put_weight(out, root->w, unit);
		fprintf(out, " in %zu distinct stacks", n_stacks);
	}
	if (omitted)
		fprintf(out, "; %zu frames narrower than %.1f px left out", omitted, MIN_PX);
	fputs(" \xc2\xb7 click a frame to zoom, type to search</text>\n", out);
	fprintf(out, "<text id=\"reset\" x=\"%d\" y=\"24\" style=\"display:none\">Reset zoom</text>\n",
		PAD);
	fprintf(out, "<foreignObject x=\"%d\" y=\"8\" width=\"240\" height=\"26\">"
		"<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
		"placeholder=\"Search (/ or Ctrl-F)\"/></foreignObject>\n", SVG_W - PAD - 240);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"60\" text-anchor=\"end\"> </text>\n",
		SVG_W - PAD);
	fputs("<g id=\"frames\">\n", out);
	draw_node(&dr, root, 0, 0);
	fputs("</g>\n", out);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, dr.height - BOTTOM + 18);
	int ly = dr.height - 20;
	if (diff) {
		legend_box(out, PAD, ly, "rgb(255,40,40)", "share grew");
		legend_box(out, PAD + 110, ly, "rgb(40,40,255)", "share shrank");
		legend_box(out, PAD + 230, ly, "rgb(225,225,225)", "unchanged");
		legend_box(out, PAD + 340, ly, "rgb(230,0,230)", "search match");
	} else {
		legend_box(out, PAD, ly, "rgb(230,130,55)", "user");
		legend_box(out, PAD + 70, ly, "rgb(80,170,220)", "kernel");
		legend_box(out, PAD + 150, ly, "rgb(165,195,165)", "thread");
		legend_box(out, PAD + 230, ly, "rgb(185,125,220)", "tag (e.g. task state)");
		legend_box(out, PAD + 420, ly, "rgb(230,0,230)", "search match");
	}
	fputs("</svg>\n", out);
	return (int)n_stacks;
}

static const char *stack_unit(const struct value *probe_res)
{
	const char *unit = value_get_str(probe_res, "stack_unit");
	return unit ? unit : "samples";
}

int flamegraph_write(const struct value *probe_res, const char *title, FILE *out)
{
	const struct value *stacks = value_get(probe_res, "stacks");
	struct fnode *root = NULL;
	size_t n = 0;
	if (stacks && stacks->type == V_ARR) {
		root = tree_new();
		tree_add(root, stacks, false);
		node_sort(root);
		n = stacks->arr.len;
	}
	int rc = write_svg(root, n, false, 0, 0, stack_unit(probe_res), title, out);
	node_free(root);
	return rc;
}

int flamegraph_write_diff(const struct value *before_res, const struct value *after_res,
			  const char *title, FILE *out)
{
	const struct value *sa = value_get(after_res, "stacks"), *sb = value_get(before_res, "stacks");
	struct fnode *root = NULL;
	size_t na = 0, nb = 0;
	double total_before = 0;
	if (sa && sa->type == V_ARR) {
		root = tree_new();
		tree_add(root, sa, false);
		na = sa->arr.len;
		if (sb && sb->type == V_ARR) {
			tree_add(root, sb, true);
			nb = sb->arr.len;
		}
		total_before = root->wb;
		node_sort(root);
	}
	int rc = write_svg(root, na, true, total_before, nb, stack_unit(after_res), title, out);
	node_free(root);
	return rc;
}
