/* recipe.c — loads one recipe file (schemas/recipe.md).
 *
 * Owns: reading a recipe in one libyaml pass over its bytes: the events are checked as they come
 * (invalid YAML, anchors/aliases, complex keys, deep nesting, several documents, a top level that
 * is not a mapping and any key or value holding a NUL byte, a "\0" escape, are refused) and built
 * into one libyaml document. Everything else reads that document: duplicate keys; the fixed
 * schema (declared with libcyaml's schema macros, applied to the document here in libcyaml's
 * order and with its number parsing, so that libcyaml never parses the text again) into struct
 * recipe; strict number text, entry lines and the free-form `options`/`thresholds`; then the
 * semantic rules, including typed parameters and that every "${NAME}" names one. Finding recipes
 * is recipe_find.c's.
 * Must not: print, keep global state, or know which probe kinds or options exist (plan.c does).
 * Every error is one line, "PATH:LINE: FIELD: message", with DIAG_EXIT_USAGE.
 */
#include "recipe.h"

#include <ctype.h>
#include <cyaml/cyaml.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <yaml.h>

#define RECIPE_MAX_BYTES (1u << 20) /* recipes are a few KiB; refuse anything absurd */
#define RECIPE_MAX_DEPTH 16         /* the schema needs 4 levels */
#define DURATION_MAX_S 3600
#define PROBES_MAX 32

/* ---- fixed schema (libcyaml's schema format; apply_schema below reads a document by it) --- */

#define STR(key, flags, type, member, max) \
	CYAML_FIELD_STRING_PTR(key, (flags) | CYAML_FLAG_POINTER, type, member, 1, max)
#define OPT CYAML_FLAG_OPTIONAL
#define REQ CYAML_FLAG_DEFAULT

static const cyaml_schema_field_t filter_fields[] = {
	STR("pid", OPT, struct recipe_filters, pid, 16),
	STR("tid", OPT, struct recipe_filters, tid, 16),
	STR("comm", OPT, struct recipe_filters, comm, 15), /* TASK_COMM_LEN - 1 */
	STR("cgroup", OPT, struct recipe_filters, cgroup, 4096),
	STR("device", OPT, struct recipe_filters, device, 64),
	STR("local_port", OPT, struct recipe_filters, local_port, 16),
	STR("remote_port", OPT, struct recipe_filters, remote_port, 16),
	STR("remote_addr", OPT, struct recipe_filters, remote_addr, 64),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t attach_entry = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 1, 64),
};

/* `when:` of a probe, read as an enum into a 1-byte field. */
static const cyaml_strval_t when_values[] = { { "always", RECIPE_WHEN_ALWAYS },
					      { "target", RECIPE_WHEN_TARGET },
					      { "host", RECIPE_WHEN_HOST } };

static const cyaml_schema_field_t probe_fields[] = {
	STR("id", REQ, struct recipe_probe, id, 64),
	STR("kind", REQ, struct recipe_probe, kind, 64),
	CYAML_FIELD_ENUM("when", OPT | CYAML_FLAG_STRICT, struct recipe_probe, when, when_values,
			 CYAML_ARRAY_LEN(when_values)),
	CYAML_FIELD_MAPPING("filters", OPT, struct recipe_probe, filters, filter_fields),
	CYAML_FIELD_SEQUENCE_COUNT("attach", OPT | CYAML_FLAG_POINTER, struct recipe_probe, attach,
				   n_attach, &attach_entry, 0, 8),
	CYAML_FIELD_IGNORE("options", OPT), /* free-form: read from the libyaml document */
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t probe_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct recipe_probe, probe_fields),
};

/* `degrade: sample` sets the (1-byte) bool; `refuse` is the default. */
static const cyaml_strval_t degrade_values[] = { { "refuse", 0 }, { "sample", 1 } };

static const cyaml_schema_field_t budget_fields[] = {
	CYAML_FIELD_UINT("max_duration_s", REQ, struct recipe_budgets, max_duration_s),
	CYAML_FIELD_UINT("max_sample_hz", REQ, struct recipe_budgets, max_sample_hz),
	CYAML_FIELD_UINT("max_events_per_s", OPT, struct recipe_budgets, max_events_per_s),
	CYAML_FIELD_FLOAT("max_cpu_pct", REQ, struct recipe_budgets, max_cpu_pct),
	CYAML_FIELD_UINT("max_map_bytes", REQ, struct recipe_budgets, max_map_bytes),
	CYAML_FIELD_ENUM("degrade", OPT | CYAML_FLAG_STRICT, struct recipe_budgets, degrade_sample,
			 degrade_values, 2),
	CYAML_FIELD_UINT("preflight_ms", OPT, struct recipe_budgets, preflight_ms),
	CYAML_FIELD_UINT("max_chain_depth", OPT, struct recipe_budgets, max_chain_depth),
	CYAML_FIELD_UINT("max_chain_duration_s", OPT, struct recipe_budgets, max_chain_duration_s),
	CYAML_FIELD_END,
};

static const cyaml_strval_t param_type_values[] = {
	{ "integer", PARAM_INTEGER }, { "string", PARAM_STRING }, { "symbol", PARAM_SYMBOL },
	{ "pid", PARAM_PID }, { "duration", PARAM_DURATION },
};

/* Defaults and bounds are read as text and parsed strictly in check_params. */
static const cyaml_schema_field_t param_fields[] = {
	STR("name", REQ, struct recipe_param, name, 32),
	CYAML_FIELD_ENUM("type", CYAML_FLAG_STRICT, struct recipe_param, type, param_type_values,
			 CYAML_ARRAY_LEN(param_type_values)),
	STR("default", OPT, struct recipe_param, dflt, 4096),
	STR("min", OPT, struct recipe_param, min, 32),
	STR("max", OPT, struct recipe_param, max, 32),
	STR("description", OPT, struct recipe_param, description, 1024),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t param_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct recipe_param, param_fields),
};

static const cyaml_schema_value_t next_param_entry = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 3, 4096),
};

static const cyaml_schema_field_t next_fields[] = {
	STR("verdict", REQ, struct recipe_next, verdict, 64),
	STR("recipe", REQ, struct recipe_next, recipe, 64),
	CYAML_FIELD_SEQUENCE_COUNT("params", OPT | CYAML_FLAG_POINTER, struct recipe_next, params,
				   n_params, &next_param_entry, 0, 32),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t next_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct recipe_next, next_fields),
};

/* `target:` is read as an enum into a 1-byte field. */
static const cyaml_strval_t target_values[] = {
	{ "pid", RECIPE_TARGET_PID },
	{ "optional-pid", RECIPE_TARGET_PID_OPTIONAL },
	{ "processes", RECIPE_TARGET_PROCESSES },
	{ "optional-processes", RECIPE_TARGET_PROCESSES_OPTIONAL },
};

static const cyaml_schema_field_t recipe_fields[] = {
	STR("name", REQ, struct recipe, name, RECIPE_NAME_MAX),
	STR("symptom", REQ, struct recipe, symptom, 200),
	STR("summary", REQ, struct recipe, summary, 200),
	STR("description", OPT, struct recipe, description, 4096),
	STR("lua", REQ, struct recipe, lua, 255),
	CYAML_FIELD_ENUM("target", OPT | CYAML_FLAG_STRICT, struct recipe, target,
			 target_values, ARRAY_LEN(target_values)),
	CYAML_FIELD_UINT("duration_s", REQ, struct recipe, duration_s),
	CYAML_FIELD_MAPPING("budgets", REQ, struct recipe, budgets, budget_fields),
	CYAML_FIELD_SEQUENCE_COUNT("probes", CYAML_FLAG_POINTER, struct recipe, probes, n_probes,
				   &probe_entry, 1, PROBES_MAX),
	CYAML_FIELD_IGNORE("thresholds", OPT), /* free-form: read from the libyaml document */
	CYAML_FIELD_SEQUENCE_COUNT("params", OPT | CYAML_FLAG_POINTER, struct recipe, params, n_params,
				   &param_entry, 0, 32),
	CYAML_FIELD_SEQUENCE_COUNT("next", OPT | CYAML_FLAG_POINTER, struct recipe, next, n_next,
				   &next_entry, 0, 32),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t recipe_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct recipe, recipe_fields),
};

_Static_assert(sizeof(((struct recipe *)0)->target) == 1, "target is written by libcyaml as a 1-byte enum");
_Static_assert(sizeof(((struct recipe_probe *)0)->when) == 1, "when is written by libcyaml as a 1-byte enum");

/* ---- loader state and error formatting ------------------------------------------------------- */

struct loader {
	const char *path;
	struct diag_err *err;
	yaml_document_t doc; /* the recipe, as read_yaml built it */
	bool have_doc;
};

/* One step of a field path: a mapping key (key != NULL) or a sequence index. */
struct step {
	const char *key;
	size_t key_len;
	unsigned idx;
};

#define PATH_MAX_STEPS 16

static int fail_line(struct loader *L, unsigned line, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
		 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n > 2 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
		      (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

static int fail_line(struct loader *L, unsigned line, const char *field, const char *fmt, ...)
{
	char msg[512], where[32] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line)
		snprintf(where, sizeof(where), ":%u", line);
	diag_fail(L->err, DIAG_EXIT_USAGE, "%s%s: %s%s%s", L->path, where, field ? field : "",
		  field && *field ? ": " : "", msg);
	/* Exactly one line of text, whatever bytes the recipe held and wherever a long value was
	 * cut: control characters and broken UTF-8 sequences become '?'. */
	for (char *p = L->err ? L->err->msg : NULL; p && *p;) {
		size_t n = utf8_len((const unsigned char *)p);
		if (!n || (n == 1 && ((unsigned char)*p < 0x20 || *p == 0x7f)))
			*p++ = '?';
		else
			p += n;
	}
	return -1;
}

const char *recipe_quote(char *buf, size_t len, const char *text)
{
	size_t n = strlen(text), cut = 37;
	while (n > 40 && cut && ((unsigned char)text[cut] & 0xc0) == 0x80) /* not mid-character */
		cut--;
	if (n > 40)
		snprintf(buf, len, "\"%.*s...\"", (int)cut, text);
	else
		snprintf(buf, len, "\"%s\"", text);
	return buf;
}

static unsigned node_line(const yaml_node_t *n)
{
	return n ? (unsigned)n->start_mark.line + 1 : 0;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *describe(const yaml_node_t *n, char *buf, size_t len)
{
	if (!n)
		return "nothing";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a sequence";
	return n->data.scalar.length ? recipe_quote(buf, len, scalar(n)) : "an empty value";
}

/* Follows steps from the document root (keys are unique: check_duplicates ran). Returns the node
 * reached (NULL if the path leaves the document) and the line of the last step found: a key's
 * line for a mapping key, an entry's line for an index. */
static yaml_node_t *resolve(struct loader *L, const struct step *s, unsigned n, unsigned *line)
{
	yaml_node_t *node = L->have_doc ? yaml_document_get_root_node(&L->doc) : NULL;
	*line = node_line(node);
	for (unsigned i = 0; i < n && node; i++) {
		yaml_node_t *next = NULL;
		if (s[i].key && node->type == YAML_MAPPING_NODE) {
			for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
			     p < node->data.mapping.pairs.top; p++) {
				yaml_node_t *k = yaml_document_get_node(&L->doc, p->key);
				if (k && k->type == YAML_SCALAR_NODE &&
				    k->data.scalar.length == s[i].key_len &&
				    !memcmp(k->data.scalar.value, s[i].key, s[i].key_len)) {
					next = yaml_document_get_node(&L->doc, p->value);
					*line = node_line(k);
					break;
				}
			}
		} else if (!s[i].key && node->type == YAML_SEQUENCE_NODE) {
			yaml_node_item_t *items = node->data.sequence.items.start;
			if (s[i].idx < (size_t)(node->data.sequence.items.top - items)) {
				next = yaml_document_get_node(&L->doc, items[s[i].idx]);
				*line = node_line(next);
			}
		}
		node = next;
	}
	return node;
}

static void path_text(const struct step *s, unsigned n, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < n && o < len; i++) {
		int w = s[i].key ? snprintf(buf + o, len - o, "%s%.*s", i ? "." : "",
					    (int)s[i].key_len, s[i].key)
				 : snprintf(buf + o, len - o, "[%u]", s[i].idx);
		o += w > 0 ? (size_t)w : 0;
	}
}

/* Parses "probes[2].filters.pid" (schema keys only: no dots inside keys). */
static unsigned parse_path(const char *path, struct step *s)
{
	unsigned n = 0;
	for (const char *p = path; *p && n < PATH_MAX_STEPS;) {
		if (*p == '.') {
			p++;
		} else if (*p == '[') {
			s[n++] = (struct step){ .idx = (unsigned)strtoul(p + 1, (char **)&p, 10) };
			p += *p == ']';
		} else {
			size_t k = strcspn(p, ".[");
			s[n++] = (struct step){ .key = p, .key_len = k };
			p += k;
		}
	}
	return n;
}

static int fail_path(struct loader *L, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_path(struct loader *L, const char *path, const char *fmt, ...)
{
	struct step s[PATH_MAX_STEPS] = { 0 };
	unsigned line;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	resolve(L, s, parse_path(path, s), &line);
	return fail_line(L, line, path, "%s", msg);
}

/* ---- the one YAML pass: libyaml events, checked, into a document ----------------------------- */

struct frame {
	bool map, want_key;
	unsigned count; /* entries started (sequence) */
	char key[64];   /* current key (mapping) */
	int node;       /* its node in L->doc */
	int key_node;   /* the current key's node (mapping) */
};

static void frames_path(const struct frame *f, unsigned depth, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < depth && o < len; i++) {
		int w = 0;
		if (f[i].map && f[i].key[0])
			w = snprintf(buf + o, len - o, "%s%s", o ? "." : "", f[i].key);
		else if (!f[i].map && f[i].count)
			w = snprintf(buf + o, len - o, "[%u]", f[i].count - 1);
		o += w > 0 ? (size_t)w : 0;
	}
}

static int syntax_error(struct loader *L, const yaml_parser_t *p, const char *buf, size_t len)
{
	const yaml_mark_t *m = p->problem ? &p->problem_mark : &p->context_mark;
	const char *why = p->problem ? p->problem : "malformed YAML";
	if (m->index < len && buf[m->index] == '\t')
		return fail_line(L, (unsigned)m->line + 1, NULL,
				 "invalid YAML: tab character (indent with spaces)");
	if (p->context && p->problem && p->context_mark.line != m->line)
		return fail_line(L, (unsigned)m->line + 1, NULL, "invalid YAML: %s %s (from line %zu)",
				 why, p->context, p->context_mark.line + 1);
	if (p->context)
		return fail_line(L, (unsigned)m->line + 1, NULL, "invalid YAML: %s %s", why,
				 p->context);
	return fail_line(L, (unsigned)m->line + 1, NULL, "invalid YAML: %s", why);
}

/* The node of event ev added to the document, under its parent f[d - 1] (d = 0: the root), with
 * the event's position. Returns its id, 0 when libyaml refused it. */
static int add_node(struct loader *L, struct frame *f, unsigned d, const yaml_event_t *ev)
{
	yaml_document_t *doc = &L->doc;
	int id = ev->type == YAML_SCALAR_EVENT
			 ? yaml_document_add_scalar(doc, NULL, ev->data.scalar.value,
						    (int)ev->data.scalar.length, ev->data.scalar.style)
		 : ev->type == YAML_MAPPING_START_EVENT
			 ? yaml_document_add_mapping(doc, NULL, ev->data.mapping_start.style)
			 : yaml_document_add_sequence(doc, NULL, ev->data.sequence_start.style);
	if (!id)
		return 0;
	yaml_node_t *node = yaml_document_get_node(doc, id);
	node->start_mark = ev->start_mark;
	node->end_mark = ev->end_mark;
	if (!d)
		return id;
	struct frame *parent = &f[d - 1];
	if (!parent->map)
		return yaml_document_append_sequence_item(doc, parent->node, id) ? id : 0;
	if (!parent->want_key) { /* toggled already: this node is a key */
		parent->key_node = id;
		return id;
	}
	return yaml_document_append_mapping_pair(doc, parent->node, parent->key_node, id) ? id : 0;
}

/* A node event (scalar, alias, start of a sequence or mapping) at the current position. */
static int scan_node(struct loader *L, struct frame *f, unsigned *depth, const yaml_event_t *ev)
{
	unsigned line = (unsigned)ev->start_mark.line + 1, d = *depth;
	bool map = ev->type == YAML_MAPPING_START_EVENT, seq = ev->type == YAML_SEQUENCE_START_EVENT;
	bool is_scalar = ev->type == YAML_SCALAR_EVENT, bad_key = false;
	const yaml_char_t *anchor = ev->type == YAML_ALIAS_EVENT ? ev->data.alias.anchor
				    : is_scalar			  ? ev->data.scalar.anchor
				    : map			  ? ev->data.mapping_start.anchor
								  : ev->data.sequence_start.anchor;
	char path[256], q[64];

	if (!d && is_scalar && !ev->data.scalar.length)
		return fail_line(L, line, NULL, "empty recipe: expected a mapping");
	if (!d && !map)
		return fail_line(L, line, NULL, "expected a mapping at the top level, got %s",
				 seq ? "a sequence" : is_scalar ? "a scalar" : "an alias");
	if (d && f[d - 1].map) {
		struct frame *t = &f[d - 1];
		if (t->want_key) {
			snprintf(t->key, sizeof(t->key), "%s",
				 is_scalar ? (const char *)ev->data.scalar.value : "");
			bad_key = !is_scalar;
		}
		t->want_key = !t->want_key;
	} else if (d) {
		f[d - 1].count++;
	}
	/* A "\0" escape puts a NUL inside a scalar: every C string after it would be cut silently
	 * (a name, a filter, a threshold). One check here covers every key and value. */
	bool nul = is_scalar && memchr(ev->data.scalar.value, '\0', ev->data.scalar.length);
	if (nul && d && f[d - 1].map && !f[d - 1].want_key)
		f[d - 1].key[0] = '\0'; /* the NUL is in a key: name the mapping it is in */
	if (bad_key || nul || anchor || ((map || seq) && d == RECIPE_MAX_DEPTH))
		frames_path(f, d, path, sizeof(path));
	if (nul)
		return fail_line(L, line, path, "contains a NUL byte (\\0)");
	if (bad_key)
		return fail_line(L, line, path, "mapping keys must be scalars");
	if (anchor)
		return fail_line(L, line, path, "YAML %s are not allowed (found %c%s)",
				 ev->type == YAML_ALIAS_EVENT ? "aliases" : "anchors",
				 ev->type == YAML_ALIAS_EVENT ? '*' : '&',
				 recipe_quote(q, sizeof(q), (const char *)anchor));
	if ((map || seq) && d == RECIPE_MAX_DEPTH)
		return fail_line(L, line, path, "nested too deeply");
	int id = add_node(L, f, d, ev);
	if (!id)
		return fail_line(L, line, NULL, "cannot hold the YAML document");
	if (map || seq)
		f[(*depth)++] = (struct frame){ .map = map, .want_key = true, .node = id };
	return 0;
}

/* Reads buf, one libyaml event at a time, into L->doc: refuses what scan_node refuses, invalid
 * YAML and more than one document. */
static int read_yaml(struct loader *L, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	struct frame f[RECIPE_MAX_DEPTH];
	unsigned depth = 0, docs = 0, nodes = 0;
	int rc = 0;

	if (!yaml_parser_initialize(&p))
		return fail_line(L, 0, NULL, "cannot initialise the YAML parser");
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	for (bool done = false; !done && !rc;) {
		if (!yaml_parser_parse(&p, &ev)) {
			rc = syntax_error(L, &p, buf, len);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1)
				rc = fail_line(L, (unsigned)ev.start_mark.line + 1, NULL,
					       "only one YAML document is allowed");
			else if (!(L->have_doc = yaml_document_initialize(&L->doc, NULL, NULL, NULL,
									    1, 1)))
				rc = fail_line(L, 0, NULL, "cannot hold the YAML document");
			break;
		case YAML_ALIAS_EVENT:
		case YAML_SCALAR_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			nodes++;
			rc = scan_node(L, f, &depth, &ev);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	if (!rc && !nodes)
		rc = fail_line(L, 1, NULL, "empty recipe: expected a mapping");
	yaml_parser_delete(&p);
	return rc;
}

/* ---- the fixed schema applied to the document ---------------------------------------------- */

/* The fields are those of libcyaml's schema tables above, applied here in document order, as
 * libcyaml would apply them to the same text: within a mapping each key in turn (unknown: an
 * error) and its value, then the first required field missing (in schema order); within a
 * sequence each entry in turn (one past the maximum: an error), then the minimum. The first
 * error ends the load. */
struct apply {
	struct loader *L;
	struct step s[PATH_MAX_STEPS]; /* where the value being read is */
	unsigned n;
};

static const cyaml_schema_field_t *schema_field(const cyaml_schema_value_t *v, const char *key,
						size_t key_len)
{
	if (!v || v->type != CYAML_MAPPING)
		return NULL;
	for (const cyaml_schema_field_t *f = v->mapping.fields; f->key; f++)
		if (strlen(f->key) == key_len && !memcmp(f->key, key, key_len))
			return f;
	return NULL;
}

static const char *type_name(const cyaml_schema_value_t *v)
{
	switch (v->type) {
	case CYAML_UINT: return "an unsigned integer";
	case CYAML_FLOAT: return "a number";
	case CYAML_STRING: return "a string";
	case CYAML_MAPPING: return "a mapping";
	case CYAML_SEQUENCE: return "a sequence";
	case CYAML_ENUM: /* `target`, a probe's `when`, `budgets.degrade` */
		if (v->enumeration.strings == when_values)
			return "\"always\", \"target\" or \"host\"";
		if (v->enumeration.strings == degrade_values)
			return "\"refuse\" or \"sample\"";
		return "\"pid\", \"optional-pid\", \"processes\" or \"optional-processes\"";
	default: return "another type";
	}
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static bool push_step(struct apply *A, struct step step)
{
	if (A->n == PATH_MAX_STEPS)
		return false;
	A->s[A->n++] = step;
	return true;
}

/* An error at A's path: the line of its last step, the path as text. */
static int fail_here(struct apply *A, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail_here(struct apply *A, const char *fmt, ...)
{
	char path[256], msg[512];
	unsigned line;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	resolve(A->L, A->s, A->n, &line);
	path_text(A->s, A->n, path, sizeof(path));
	return fail_line(A->L, line, path, "%s", msg);
}

/* The value at A's path (node) is not what schema v takes. */
static int fail_value(struct apply *A, const cyaml_schema_value_t *v, const yaml_node_t *node)
{
	char q[64];
	if (v->type == CYAML_UINT && scalar(node) && all_digits(scalar(node)))
		return fail_here(A, "%s is too large", scalar(node));
	return fail_here(A, "expected %s, got %s", type_name(v), describe(node, q, sizeof(q)));
}

/* Writes value into the size-byte unsigned integer at data. */
static void write_uint(uint8_t *data, uint32_t size, uint64_t value)
{
	uint8_t u8 = (uint8_t)value;
	uint16_t u16 = (uint16_t)value;
	uint32_t u32 = (uint32_t)value;
	memcpy(data, size == 1 ? (void *)&u8 : size == 2 ? (void *)&u16 : size == 4 ? (void *)&u32
									       : (void *)&value,
	       size);
}

/* A scalar of type v (text; its node for messages) into data. Numbers as libcyaml takes them
 * (strtoull base 0, strtod): strict_numbers refuses the text it should not have taken. */
static int apply_scalar(struct apply *A, const cyaml_schema_value_t *v, const yaml_node_t *node,
			uint8_t *data)
{
	const char *text = scalar(node);
	char *end;
	switch (v->type) {
	case CYAML_STRING: {
		size_t n = strlen(text);
		if (n < v->string.min)
			return fail_here(A, "must not be empty");
		if (n > v->string.max)
			return fail_here(A, "too long (at most %u characters)", v->string.max);
		char *copy = xstrdup(text);
		memcpy(data, &copy, sizeof(copy));
		return 0;
	}
	case CYAML_UINT: {
		errno = 0;
		unsigned long long u = strtoull(text, &end, 0);
		uint64_t max = UINT64_MAX >> ((8 - v->data_size) * 8);
		if (end == text || errno == ERANGE || u > max)
			return fail_value(A, v, node);
		write_uint(data, v->data_size, u);
		return 0;
	}
	case CYAML_FLOAT: { /* double only: the schema has no float */
		double d = strtod(text, &end);
		if (end == text || v->data_size != sizeof(d))
			return fail_value(A, v, node);
		memcpy(data, &d, sizeof(d));
		return 0;
	}
	case CYAML_ENUM: /* CYAML_FLAG_STRICT, all of them: a listed name, exactly */
		for (uint32_t i = 0; i < v->enumeration.count; i++)
			if (!strcmp(text, v->enumeration.strings[i].str)) {
				write_uint(data, v->data_size, (uint64_t)v->enumeration.strings[i].val);
				return 0;
			}
		return fail_value(A, v, node);
	default:
		return fail_value(A, v, node);
	}
}

static int apply_value(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
		       uint8_t *data, const cyaml_schema_field_t *field, uint8_t *parent);

/* The entries of sequence node into the array at data (a pointer to it), their count into the
 * count field of field in parent. */
static int apply_sequence(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
			  uint8_t *data, const cyaml_schema_field_t *field, uint8_t *parent)
{
	yaml_node_item_t *items = node->data.sequence.items.start;
	uint32_t count = (uint32_t)(node->data.sequence.items.top - items), size = v->data_size;
	uint8_t *array = NULL;
	for (uint32_t i = 0; i < count; i++) {
		if (i == v->sequence.max)
			return fail_here(A, "at most %u entries are allowed", v->sequence.max);
		array = xrealloc(array, (size_t)(i + 1) * size);
		memset(array + (size_t)i * size, 0, size);
		memcpy(data, &array, sizeof(array));
		write_uint(parent + field->count_offset, field->count_size, i + 1);
		if (!push_step(A, (struct step){ .idx = i }))
			return fail_here(A, "nested too deeply");
		int rc = apply_value(A, v->sequence.entry, yaml_document_get_node(&A->L->doc, items[i]),
				     array + (size_t)i * size, NULL, NULL);
		A->n--;
		if (rc)
			return -1;
	}
	if (count < v->sequence.min)
		return fail_here(A, "needs at least %u entr%s", v->sequence.min,
				 v->sequence.min > 1 ? "ies" : "y");
	return 0;
}

/* The pairs of mapping node into the struct at data, by the fields of v. */
static int apply_mapping(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
			 uint8_t *data)
{
	bool seen[32] = { false }; /* by field: the schema's mappings have at most 13 */
	const cyaml_schema_field_t *fields = v->mapping.fields;
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&A->L->doc, p->key);
		const char *key = scalar(k); /* keys are scalars: read_yaml refused the others */
		const cyaml_schema_field_t *f = schema_field(v, key, strlen(key));
		if (!push_step(A, (struct step){ .key = key, .key_len = strlen(key) }))
			return fail_here(A, "nested too deeply");
		if (!f) {
			char allowed[256] = "";
			for (const cyaml_schema_field_t *g = fields; g->key; g++)
				snprintf(allowed + strlen(allowed), sizeof(allowed) - strlen(allowed),
					 "%s%s", allowed[0] ? ", " : "", g->key);
			return fail_here(A, "unknown key (expected one of: %s)", allowed);
		}
		seen[f - fields] = true;
		int rc = f->value.type == CYAML_IGNORE
				 ? 0
				 : apply_value(A, &f->value,
					       yaml_document_get_node(&A->L->doc, p->value),
					       data + f->data_offset, f, data);
		A->n--;
		if (rc)
			return -1;
	}
	for (const cyaml_schema_field_t *f = fields; f->key; f++) {
		if ((f->value.flags & CYAML_FLAG_OPTIONAL) || seen[f - fields])
			continue;
		char path[256];
		unsigned line;
		resolve(A->L, A->s, A->n, &line); /* the mapping's line: the field is not there */
		bool pushed = push_step(A, (struct step){ .key = f->key, .key_len = strlen(f->key) });
		path_text(A->s, A->n, path, sizeof(path));
		A->n -= pushed;
		return fail_line(A->L, line, path, "required field is missing");
	}
	return 0;
}

/* The value at node into data by schema v: a pointer (CYAML_FLAG_POINTER) gets its own
 * allocation, written at data. field and parent: the field and struct holding a sequence, whose
 * count the sequence sets. */
static int apply_value(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
		       uint8_t *data, const cyaml_schema_field_t *field, uint8_t *parent)
{
	yaml_node_type_t want = v->type == CYAML_MAPPING    ? YAML_MAPPING_NODE
				: v->type == CYAML_SEQUENCE ? YAML_SEQUENCE_NODE
							    : YAML_SCALAR_NODE;
	if (node->type != want)
		return fail_value(A, v, node);
	if (v->type == CYAML_SEQUENCE)
		return apply_sequence(A, v, node, data, field, parent);
	if (v->type != CYAML_MAPPING)
		return apply_scalar(A, v, node, data);
	if (v->flags & CYAML_FLAG_POINTER) {
		uint8_t *own = xcalloc(1, v->data_size);
		memcpy(data, &own, sizeof(own));
		data = own;
	}
	return apply_mapping(A, v, node, data);
}

/* The document's fixed part into a new *out (freed by recipe_free, also after an error). */
static int apply_schema(struct loader *L, struct recipe **out)
{
	struct apply A = { .L = L };
	return apply_value(&A, &recipe_schema, yaml_document_get_root_node(&L->doc), (uint8_t *)out,
			   NULL, NULL);
}

/* ---- the document: strict numbers, duplicate keys, free-form maps -------------------------- */

/* Numbers are decimal text: libcyaml would also take "5s", "0x10", "010" (octal) or "-1". */
static int strict_numbers(struct loader *L, yaml_node_t *node, const cyaml_schema_value_t *v,
			  char *path, size_t len)
{
	size_t o = strlen(path);
	const char *text = scalar(node);
	char q[64];
	if (!node || !v)
		return 0;
	if (v->type == CYAML_UINT && text &&
	    (!all_digits(text) || (text[0] == '0' && text[1])))
		return fail_line(L, node_line(node), path,
				 "expected an unsigned integer, got %s (decimal digits only)",
				 recipe_quote(q, sizeof(q), text));
	if (v->type == CYAML_FLOAT && text) {
		double d;
		if (!decimal_number(text, false, &d))
			return fail_line(L, node_line(node), path,
					 "expected a number, got %s (decimal notation only)",
					 recipe_quote(q, sizeof(q), text));
	}
	if (v->type == CYAML_SEQUENCE && node->type == YAML_SEQUENCE_NODE) {
		unsigned i = 0;
		for (yaml_node_item_t *it = node->data.sequence.items.start;
		     it < node->data.sequence.items.top; it++, i++) {
			snprintf(path + o, len - o, "[%u]", i);
			if (strict_numbers(L, yaml_document_get_node(&L->doc, *it),
					   v->sequence.entry, path, len))
				return -1;
		}
	}
	if (v->type == CYAML_MAPPING && node->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
		     p < node->data.mapping.pairs.top; p++) {
			const char *k = scalar(yaml_document_get_node(&L->doc, p->key));
			const cyaml_schema_field_t *f = k ? schema_field(v, k, strlen(k)) : NULL;
			if (!f)
				continue;
			snprintf(path + o, len - o, "%s%s", o ? "." : "", k);
			if (strict_numbers(L, yaml_document_get_node(&L->doc, p->value), &f->value,
					   path, len))
				return -1;
		}
	}
	path[o] = '\0';
	return 0;
}

static yaml_node_t *map_get(struct loader *L, yaml_node_t *map, const char *key,
			    yaml_node_t **key_node)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&L->doc, p->key);
		if (scalar(k) && !strcmp(scalar(k), key)) {
			*key_node = k;
			return yaml_document_get_node(&L->doc, p->value);
		}
	}
	return NULL;
}

struct keyref {
	const char *key;
	unsigned idx; /* position in the file's order */
};

static int cmp_keyref(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The first entry (in file order) whose key repeats an earlier one, or -1. Sorts k: n log n. */
static long find_dup(struct keyref *k, unsigned n)
{
	long dup = -1;
	qsort(k, n, sizeof(*k), cmp_keyref);
	for (unsigned i = 1; i < n; i++)
		if (!strcmp(k[i - 1].key, k[i].key) && (dup < 0 || k[i].idx < (unsigned)dup))
			dup = k[i].idx;
	return dup;
}

static const char *key_text(struct loader *L, const yaml_node_pair_t *pair)
{
	const char *k = scalar(yaml_document_get_node(&L->doc, pair->key));
	return k ? k : "";
}

/* Duplicate keys, in every mapping (the free-form maps would keep both, and the line lookups
 * assume one occurrence). Runs before the schema. Depth is bounded by read_yaml. */
static int check_duplicates(struct loader *L, yaml_node_t *node, char *path, size_t len)
{
	size_t o = strlen(path);
	int rc = 0;
	if (node->type == YAML_SEQUENCE_NODE) {
		unsigned i = 0;
		for (yaml_node_item_t *it = node->data.sequence.items.start;
		     !rc && it < node->data.sequence.items.top; it++, i++) {
			snprintf(path + o, len - o, "[%u]", i);
			rc = check_duplicates(L, yaml_document_get_node(&L->doc, *it), path, len);
		}
	} else if (node->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *pairs = node->data.mapping.pairs.start;
		unsigned n = (unsigned)(node->data.mapping.pairs.top - pairs);
		struct keyref *k = xcalloc(n, sizeof(*k));
		for (unsigned i = 0; i < n; i++) /* keys are scalars: read_yaml refused the others */
			k[i] = (struct keyref){ key_text(L, &pairs[i]), i };
		long d = find_dup(k, n);
		free(k);
		for (unsigned i = 0; !rc && i < n; i++) {
			snprintf(path + o, len - o, "%s%s", o ? "." : "", key_text(L, &pairs[i]));
			if ((long)i == d)
				rc = fail_line(L, node_line(yaml_document_get_node(&L->doc, pairs[i].key)),
					       path, "duplicate key");
			else
				rc = check_duplicates(L, yaml_document_get_node(&L->doc, pairs[i].value),
						      path, len);
		}
	}
	path[o] = '\0';
	return rc;
}

/* Reads a free-form mapping of scalars (probe options, thresholds). */
static int read_kv(struct loader *L, yaml_node_t *parent, const char *key, const char *path,
		   struct recipe_kv **out, unsigned *n_out)
{
	yaml_node_t *k = NULL, *m = map_get(L, parent, key, &k);
	char q[64];
	if (!m)
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return fail_line(L, node_line(k), path, "expected a mapping, got %s",
				 describe(m, q, sizeof(q)));
	size_t n = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
	struct recipe_kv *kv = xcalloc(n ? n : 1, sizeof(*kv));
	*out = kv;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(&L->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(&L->doc, p->value);
		if (!kn->data.scalar.length)
			return fail_line(L, node_line(kn), path, "empty key");
		if (!scalar(vn))
			return fail_line(L, node_line(kn), NULL, "%s.%s: expected a scalar value, got %s",
					 path, scalar(kn), describe(vn, q, sizeof(q)));
		if (!vn->data.scalar.length && vn->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			return fail_line(L, node_line(kn), NULL, "%s.%s: missing value", path,
					 scalar(kn));
		kv[*n_out] = (struct recipe_kv){ .key = xstrdup(scalar(kn)),
						 .value = xstrdup(scalar(vn)),
						 .line = node_line(kn) };
		++*n_out;
	}
	return 0;
}

/* ---- semantic rules ---------------------------------------------------------------------------- */

static bool matches(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return true;
}

bool recipe_name_ok(const char *s)
{
	return s && strlen(s) <= RECIPE_NAME_MAX && matches(s, "-");
}

static bool blank(const char *s)
{
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

/* A positive decimal that fits a pid_t. */
static bool is_pid(const char *s)
{
	return all_digits(s) && s[0] != '0' && strlen(s) <= 10 && strtoull(s, NULL, 10) <= INT32_MAX;
}

/* ---- parameters --------------------------------------------------------------------------------- */

/* Decimal, as every number of a recipe and of the command line (util.h). */
static bool parse_int64(const char *s, int64_t *out)
{
	return decimal_int(s, out);
}

const char *recipe_param_check(const struct recipe_param *p, const char *value)
{
	int64_t v, lo, hi;
	switch (p->type) {
	case PARAM_INTEGER:
	case PARAM_DURATION:
	case PARAM_PID:
		if (!parse_int64(value, &v))
			return p->type == PARAM_DURATION ? "expected whole seconds" : "expected an integer";
		if ((p->type != PARAM_INTEGER && v < 1) || (p->min && parse_int64(p->min, &lo) && v < lo))
			return "below the allowed minimum";
		if (p->max && parse_int64(p->max, &hi) && v > hi)
			return "above the allowed maximum";
		return NULL;
	case PARAM_SYMBOL: {
		const char *colon = strrchr(value, ':');
		if (value[0] != '/' || !colon || colon == value || !colon[1])
			return "expected /absolute/path/to/binary:symbol";
		return NULL;
	}
	case PARAM_STRING:
		return strlen(value) > 256 ? "longer than 256 characters" : NULL;
	}
	return "unknown type";
}

const struct recipe_param *recipe_param_find(const struct recipe *r, const char *name)
{
	for (unsigned i = 0; i < r->n_params; i++)
		if (!strcmp(r->params[i].name, name))
			return &r->params[i];
	return NULL;
}

const char *recipe_param_ref(const char *value, char *buf, size_t len)
{
	size_t n = value ? strlen(value) : 0;
	if (n < 4 || value[0] != '$' || value[1] != '{' || value[n - 1] != '}' || n - 3 >= len)
		return NULL;
	memcpy(buf, value + 2, n - 3);
	buf[n - 3] = '\0';
	return buf;
}

static bool chars_ok(const char *s, size_t n, const char *extra)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || strchr(extra, s[i])))
			return false;
	return true;
}

/* `next:`: declared follow-ups. Their recipes and parameter types are checked against the
 * follow-up recipes by lint and when the chain runs (chain.c): here, the form only. */
static int check_next(struct loader *L, const struct recipe *r)
{
	char path[96], q[64];
	if (r->n_next && !r->budgets.max_chain_depth)
		return fail_path(L, "next", "follow-ups declared but budgets.max_chain_depth is 0: "
				 "they could never run");
	for (unsigned i = 0; i < r->n_next; i++) {
		const struct recipe_next *n = &r->next[i];
		snprintf(path, sizeof(path), "next[%u].verdict", i);
		if (!chars_ok(n->verdict, strlen(n->verdict), "-_"))
			return fail_path(L, path, "expected a verdict id ([a-z0-9_-]+), got %s",
					 recipe_quote(q, sizeof(q), n->verdict));
		for (unsigned k = 0; k < i; k++)
			if (!strcmp(r->next[k].verdict, n->verdict))
				return fail_path(L, path, "verdict %s has a follow-up already (next[%u])",
						 recipe_quote(q, sizeof(q), n->verdict), k);
		snprintf(path, sizeof(path), "next[%u].recipe", i);
		if (!chars_ok(n->recipe, strlen(n->recipe), "-"))
			return fail_path(L, path, "expected a recipe name ([a-z0-9-]+, never a path), got %s",
					 recipe_quote(q, sizeof(q), n->recipe));
		for (unsigned k = 0; k < n->n_params; k++) {
			const char *p = n->params[k], *eq = strchr(p, '=');
			snprintf(path, sizeof(path), "next[%u].params[%u]", i, k);
			if (!eq || !chars_ok(p, (size_t)(eq - p), "_") || !eq[1])
				return fail_path(L, path, "expected NAME=VALUE (NAME [a-z0-9_]+), got %s",
						 recipe_quote(q, sizeof(q), p));
			if ((eq - p == 3 && !strncmp(p, "pid", 3)) || (eq - p == 8 && !strncmp(p, "duration", 8)))
				return fail_path(L, path, "%.*s: a chain keeps its target, and each stage its own "
						 "duration", (int)(eq - p), p);
			const char *ref = strstr(eq + 1, "${");
			if (ref && (strncmp(ref, "${verdict.", 10) || !strchr(ref, '}') ||
				    !chars_ok(ref + 10, (size_t)(strchr(ref, '}') - ref - 10), "_") ||
				    ref != eq + 1 || strchr(ref, '}')[1]))
				return fail_path(L, path, "a value is literal text or exactly ${verdict.KEY} "
						 "(the verdict's next.params.KEY), got %s", recipe_quote(q, sizeof(q), eq + 1));
		}
	}
	return 0;
}

static int check_params(struct loader *L, const struct recipe *r)
{
	char path[64], q[64];
	for (unsigned i = 0; i < r->n_params; i++) {
		const struct recipe_param *p = &r->params[i];
		int64_t lo, hi;
#define AT(field) (snprintf(path, sizeof(path), "params[%u].%s", i, field), path)
		if (!matches(p->name, "_"))
			return fail_path(L, AT("name"), "must match [a-z0-9_]+, got %s",
					 recipe_quote(q, sizeof(q), p->name));
		if (!strcmp(p->name, "pid") || !strcmp(p->name, "duration"))
			return fail_path(L, AT("name"), "%s is built in (--pid, --duration)", p->name);
		if (recipe_param_find(r, p->name) != p)
			return fail_path(L, AT("name"), "duplicate parameter %s", recipe_quote(q, sizeof(q), p->name));
		if (p->min && !parse_int64(p->min, &lo))
			return fail_path(L, AT("min"), "expected an integer, got %s", recipe_quote(q, sizeof(q), p->min));
		if (p->max && !parse_int64(p->max, &hi))
			return fail_path(L, AT("max"), "expected an integer, got %s", recipe_quote(q, sizeof(q), p->max));
		if ((p->min || p->max) && (p->type == PARAM_STRING || p->type == PARAM_SYMBOL))
			return fail_path(L, AT("min"), "only integer, pid and duration parameters have bounds");
		if (p->min && p->max && lo > hi)
			return fail_path(L, AT("max"), "%s is below min %s", p->max, p->min);
		const char *why = p->dflt ? recipe_param_check(p, p->dflt) : NULL;
		if (why)
			return fail_path(L, AT("default"), "%s: %s", recipe_quote(q, sizeof(q), p->dflt), why);
#undef AT
	}
	return 0;
}

/* Every "${NAME}" in options, thresholds and filters names a declared parameter. */
static int check_ref(struct loader *L, const struct recipe *r, const char *value, unsigned line,
		     const char *path)
{
	char name[64];
	if (!recipe_param_ref(value, name, sizeof(name)) || recipe_param_find(r, name) ||
	    !strcmp(name, "pid") || !strcmp(name, "duration"))
		return 0;
	return fail_line(L, line, path, "refers to ${%s}, which is not a declared parameter", name);
}

static int check_refs(struct loader *L, const struct recipe *r)
{
	char path[160];
	for (unsigned i = 0; i < r->n_probes; i++) {
		const struct recipe_probe *p = &r->probes[i];
		for (unsigned k = 0; k < p->n_options; k++) {
			snprintf(path, sizeof(path), "probes[%u].options.%s", i, p->options[k].key);
			if (check_ref(L, r, p->options[k].value, p->options[k].line, path))
				return -1;
		}
		snprintf(path, sizeof(path), "probes[%u].filters", i);
		const struct recipe_filters *f = &p->filters;
		const char *const texts[] = { f->pid, f->tid, f->comm, f->cgroup, f->device,
					      f->local_port, f->remote_port, f->remote_addr };
		for (size_t t = 0; t < ARRAY_LEN(texts); t++)
			if (check_ref(L, r, texts[t], p->line, path))
				return -1;
	}
	for (unsigned k = 0; k < r->n_thresholds; k++) {
		snprintf(path, sizeof(path), "thresholds.%s", r->thresholds[k].key);
		if (check_ref(L, r, r->thresholds[k].value, r->thresholds[k].line, path))
			return -1;
	}
	return 0;
}

static int check_probe(struct loader *L, const struct recipe *r, unsigned i)
{
	const struct recipe_probe *p = &r->probes[i];
	const struct recipe_filters *f = &p->filters;
	char path[64], q[64];
#define AT(field) (snprintf(path, sizeof(path), "probes[%u].%s", i, field), path)
	if (!matches(p->id, "_-"))
		return fail_path(L, AT("id"), "must match [a-z0-9_-]+, got %s",
				 recipe_quote(q, sizeof(q), p->id));
	if (blank(p->kind))
		return fail_path(L, AT("kind"), "must not be blank");
	char ref[64];
	if (f->pid && strcmp(f->pid, "target") && !is_pid(f->pid) &&
	    !recipe_param_ref(f->pid, ref, sizeof(ref)))
		return fail_path(L, AT("filters.pid"),
				 "expected \"target\" or a positive integer, got %s",
				 recipe_quote(q, sizeof(q), f->pid));
	if (f->pid && !strcmp(f->pid, "target") && r->target == RECIPE_TARGET_NONE)
		return fail_path(L, AT("filters.pid"),
				 "\"target\" needs `target: pid` or `target: optional-pid` at the top level");
	if (p->when != RECIPE_WHEN_ALWAYS && r->target != RECIPE_TARGET_PID_OPTIONAL)
		return fail_path(L, AT("when"),
				 "\"target\" and \"host\" need `target: optional-pid` at the top level "
				 "(only its runs may have a target or not)");
	if (f->tid && !is_pid(f->tid))
		return fail_path(L, AT("filters.tid"), "expected a positive integer, got %s",
				 recipe_quote(q, sizeof(q), f->tid));
	for (unsigned a = 0; a < p->n_attach; a++)
		if (blank(p->attach[a])) {
			snprintf(path, sizeof(path), "probes[%u].attach[%u]", i, a);
			return fail_path(L, path, "must not be blank");
		}
#undef AT
	return 0;
}

static int check_recipe(struct loader *L, const struct recipe *r)
{
	char q[64];
	if (!recipe_name_ok(r->name))
		return fail_path(L, "name", "must match [a-z0-9-]+, got %s",
				 recipe_quote(q, sizeof(q), r->name));
	if (blank(r->symptom))
		return fail_path(L, "symptom", "must not be blank");
	if (blank(r->summary))
		return fail_path(L, "summary", "must not be blank");
	size_t n = strlen(r->lua);
	if (n < 5 || strcmp(r->lua + n - 4, ".lua"))
		return fail_path(L, "lua", "must name a .lua file, got %s", recipe_quote(q, sizeof(q), r->lua));
	if (r->lua[0] == '/' || !strncmp(r->lua, "../", 3) || strstr(r->lua, "/../"))
		return fail_path(L, "lua", "must be a relative path inside the lua directory, got %s",
				 recipe_quote(q, sizeof(q), r->lua));
	const struct recipe_budgets *b = &r->budgets;
	if (b->max_duration_s < 1 || b->max_duration_s > DURATION_MAX_S)
		return fail_path(L, "budgets.max_duration_s", "%" PRIu32 " is out of range (1..%u)",
				 b->max_duration_s, DURATION_MAX_S);
	if (r->duration_s < 1 || r->duration_s > DURATION_MAX_S)
		return fail_path(L, "duration_s", "%" PRIu32 " is out of range (1..%u)", r->duration_s,
				 DURATION_MAX_S);
	if (r->duration_s > b->max_duration_s)
		return fail_path(L, "duration_s",
				 "%" PRIu32 " exceeds budgets.max_duration_s (%" PRIu32 ")",
				 r->duration_s, b->max_duration_s);
	if (!(b->max_cpu_pct > 0 && b->max_cpu_pct <= 100))
		return fail_path(L, "budgets.max_cpu_pct", "%g is out of range (0 < x <= 100)",
				 b->max_cpu_pct);
	if (!b->max_map_bytes)
		return fail_path(L, "budgets.max_map_bytes", "must be at least 1");
	if (b->preflight_ms && (b->preflight_ms < 10 || b->preflight_ms > 5000))
		return fail_path(L, "budgets.preflight_ms", "%" PRIu32 " is out of range (10..5000)",
				 b->preflight_ms);
	if (b->max_chain_depth > CHAIN_DEPTH_MAX)
		return fail_path(L, "budgets.max_chain_depth", "%" PRIu32 " is out of range (0..%u)",
				 b->max_chain_depth, CHAIN_DEPTH_MAX);
	if (b->max_chain_duration_s > DURATION_MAX_S)
		return fail_path(L, "budgets.max_chain_duration_s", "%" PRIu32 " is out of range (1..%u)",
				 b->max_chain_duration_s, DURATION_MAX_S);
	if (b->max_chain_depth && b->max_chain_duration_s < r->duration_s)
		return fail_path(L, "budgets.max_chain_duration_s",
				 b->max_chain_duration_s ? "%" PRIu32 " is shorter than duration_s: a chain "
				 "could not even run this recipe" : "%" PRIu32 ": required when max_chain_depth "
				 "is set (the whole chain's time, this run included)", b->max_chain_duration_s);

	if (check_next(L, r))
		return -1;

	if (check_params(L, r) || check_refs(L, r))
		return -1;
	struct keyref ids[PROBES_MAX];
	for (unsigned i = 0; i < r->n_probes; i++) {
		if (check_probe(L, r, i))
			return -1;
		ids[i] = (struct keyref){ r->probes[i].id, i };
	}
	long d = find_dup(ids, r->n_probes);
	if (d >= 0) {
		char path[32];
		snprintf(path, sizeof(path), "probes[%ld].id", d);
		return fail_path(L, path, "duplicate probe id %s",
				 recipe_quote(q, sizeof(q), r->probes[d].id));
	}
	return 0;
}

/* After the schema: strict numbers, lines, free-form maps, then the semantic rules. */
static int read_document(struct loader *L, struct recipe *r)
{
	yaml_node_t *root = yaml_document_get_root_node(&L->doc), *k = NULL;
	char path[256] = "";
	if (strict_numbers(L, root, &recipe_schema, path, sizeof(path)))
		return -1;
	yaml_node_t *probes = map_get(L, root, "probes", &k);
	for (unsigned i = 0; probes && i < r->n_probes; i++) {
		yaml_node_t *item = yaml_document_get_node(&L->doc, probes->data.sequence.items.start[i]);
		struct recipe_probe *p = &r->probes[i];
		p->line = node_line(item);
		snprintf(path, sizeof(path), "probes[%u].options", i);
		if (read_kv(L, item, "options", path, &p->options, &p->n_options))
			return -1;
	}
	if (read_kv(L, root, "thresholds", "thresholds", &r->thresholds, &r->n_thresholds))
		return -1;
	return check_recipe(L, r);
}

int recipe_load(const char *path, struct recipe **out, struct diag_err *err)
{
	size_t len = 0;
	*out = NULL;
	char *buf = read_file(path, &len);
	if (!buf)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: cannot read recipe: %s", path,
				 strerror(errno));
	int rc = recipe_load_buffer(path, buf, len, out, err);
	free(buf);
	return rc;
}

int recipe_load_buffer(const char *path, const char *buf, size_t len, struct recipe **out,
		       struct diag_err *err)
{
	struct loader L = { .path = path, .err = err };
	struct recipe *r = NULL;
	int rc = -1;

	*out = NULL;
	if (len > RECIPE_MAX_BYTES)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: too large for a recipe (%zu bytes, limit %u)",
				 path, len, RECIPE_MAX_BYTES);
	char where[256] = "";
	if (read_yaml(&L, buf, len) ||
	    check_duplicates(&L, yaml_document_get_root_node(&L.doc), where, sizeof(where)) ||
	    apply_schema(&L, &r))
		goto out;
	r->path = xstrdup(path);
	if (read_document(&L, r))
		goto out;
	*out = r;
	r = NULL;
	rc = 0;
out:
	recipe_free(r);
	if (L.have_doc)
		yaml_document_delete(&L.doc);
	return rc;
}

static void free_kv(struct recipe_kv *kv, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

void recipe_free(struct recipe *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->n_probes; i++) {
		struct recipe_probe *p = &r->probes[i];
		free(p->id);
		free(p->kind);
		free(p->filters.pid);
		free(p->filters.tid);
		free(p->filters.comm);
		free(p->filters.cgroup);
		free(p->filters.device);
		free(p->filters.local_port);
		free(p->filters.remote_port);
		free(p->filters.remote_addr);
		for (unsigned a = 0; a < p->n_attach; a++)
			free(p->attach[a]);
		free(p->attach);
		free_kv(p->options, p->n_options);
	}
	free(r->probes);
	free_kv(r->thresholds, r->n_thresholds);
	for (unsigned i = 0; i < r->n_params; i++) {
		free(r->params[i].name);
		free(r->params[i].dflt);
		free(r->params[i].min);
		free(r->params[i].max);
		free(r->params[i].description);
	}
	free(r->params);
	for (unsigned i = 0; i < r->n_next; i++) {
		free(r->next[i].verdict);
		free(r->next[i].recipe);
		for (unsigned k = 0; k < r->next[i].n_params; k++)
			free(r->next[i].params[k]);
		free(r->next[i].params);
	}
	free(r->next);
	free(r->path);
	free(r->name);
	free(r->symptom);
	free(r->summary);
	free(r->description);
	free(r->lua);
	free(r);
}

const struct recipe_kv *recipe_kv_find(const struct recipe_kv *kv, unsigned n, const char *key)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key))
			return &kv[i];
	return NULL;
}
