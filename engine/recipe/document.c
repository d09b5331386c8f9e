/* document.c — a recipe file's YAML as one checked libyaml document, and errors placed in it.
 * Contract: document.h.
 *
 * Owns: the one libyaml pass over a recipe's bytes: the events are checked as they come (invalid
 * YAML, anchors/aliases, complex keys, deep nesting, several documents, a top level that is not a
 * mapping and any key or value holding a NUL byte, a "\0" escape, are refused) and built into one
 * libyaml document; finding a field path in it and its line; the one-line error
 * "PATH:LINE: FIELD: message" (control characters and broken UTF-8 shown as '?').
 * Must not: know the recipe's schema (schema.c) or its rules (recipe.c), print, or keep global
 * state.
 */
#include "recipe/document.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECIPE_MAX_DEPTH 16 /* the schema needs 4 levels */

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

int doc_fail_line(struct loader *L, unsigned line, const char *field, const char *fmt, ...)
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

unsigned doc_line(const yaml_node_t *n)
{
	return n ? (unsigned)n->start_mark.line + 1 : 0;
}

const char *doc_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

const char *doc_describe(const yaml_node_t *n, char *buf, size_t len)
{
	if (!n)
		return "nothing";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a sequence";
	return n->data.scalar.length ? recipe_quote(buf, len, doc_scalar(n)) : "an empty value";
}

/* Follows steps from the document root (keys are unique: check_duplicates ran). Returns the node
 * reached (NULL if the path leaves the document) and the line of the last step found: a key's
 * line for a mapping key, an entry's line for an index. */
yaml_node_t *doc_resolve(struct loader *L, const struct step *s, unsigned n, unsigned *line)
{
	yaml_node_t *node = L->have_doc ? yaml_document_get_root_node(&L->doc) : NULL;
	*line = doc_line(node);
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
					*line = doc_line(k);
					break;
				}
			}
		} else if (!s[i].key && node->type == YAML_SEQUENCE_NODE) {
			yaml_node_item_t *items = node->data.sequence.items.start;
			if (s[i].idx < (size_t)(node->data.sequence.items.top - items)) {
				next = yaml_document_get_node(&L->doc, items[s[i].idx]);
				*line = doc_line(next);
			}
		}
		node = next;
	}
	return node;
}

void doc_path_text(const struct step *s, unsigned n, char *buf, size_t len)
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

int doc_fail_path(struct loader *L, const char *path, const char *fmt, ...)
{
	struct step s[PATH_MAX_STEPS] = { 0 };
	unsigned line;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	doc_resolve(L, s, parse_path(path, s), &line);
	return doc_fail_line(L, line, path, "%s", msg);
}

bool doc_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

yaml_node_t *doc_map_get(struct loader *L, yaml_node_t *map, const char *key,
			    yaml_node_t **key_node)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&L->doc, p->key);
		if (doc_scalar(k) && !strcmp(doc_scalar(k), key)) {
			*key_node = k;
			return yaml_document_get_node(&L->doc, p->value);
		}
	}
	return NULL;
}

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
		return doc_fail_line(L, (unsigned)m->line + 1, NULL,
				     "invalid YAML: tab character (indent with spaces)");
	if (p->context && p->problem && p->context_mark.line != m->line)
		return doc_fail_line(L, (unsigned)m->line + 1, NULL, "invalid YAML: %s %s (from line %zu)",
				     why, p->context, p->context_mark.line + 1);
	if (p->context)
		return doc_fail_line(L, (unsigned)m->line + 1, NULL, "invalid YAML: %s %s", why,
				     p->context);
	return doc_fail_line(L, (unsigned)m->line + 1, NULL, "invalid YAML: %s", why);
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
		return doc_fail_line(L, line, NULL, "empty recipe: expected a mapping");
	if (!d && !map)
		return doc_fail_line(L, line, NULL, "expected a mapping at the top level, got %s",
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
		return doc_fail_line(L, line, path, "contains a NUL byte (\\0)");
	if (bad_key)
		return doc_fail_line(L, line, path, "mapping keys must be scalars");
	if (anchor)
		return doc_fail_line(L, line, path, "YAML %s are not allowed (found %c%s)",
				     ev->type == YAML_ALIAS_EVENT ? "aliases" : "anchors",
				     ev->type == YAML_ALIAS_EVENT ? '*' : '&',
				     recipe_quote(q, sizeof(q), (const char *)anchor));
	if ((map || seq) && d == RECIPE_MAX_DEPTH)
		return doc_fail_line(L, line, path, "nested too deeply");
	int id = add_node(L, f, d, ev);
	if (!id)
		return doc_fail_line(L, line, NULL, "cannot hold the YAML document");
	if (map || seq)
		f[(*depth)++] = (struct frame){ .map = map, .want_key = true, .node = id };
	return 0;
}

/* Reads buf, one libyaml event at a time, into L->doc: refuses what scan_node refuses, invalid
 * YAML and more than one document. */
int doc_read(struct loader *L, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	struct frame f[RECIPE_MAX_DEPTH];
	unsigned depth = 0, docs = 0, nodes = 0;
	int rc = 0;

	if (!yaml_parser_initialize(&p))
		return doc_fail_line(L, 0, NULL, "cannot initialise the YAML parser");
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
				rc = doc_fail_line(L, (unsigned)ev.start_mark.line + 1, NULL,
						   "only one YAML document is allowed");
			else if (!(L->have_doc = yaml_document_initialize(&L->doc, NULL, NULL, NULL,
									    1, 1)))
				rc = doc_fail_line(L, 0, NULL, "cannot hold the YAML document");
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
		rc = doc_fail_line(L, 1, NULL, "empty recipe: expected a mapping");
	yaml_parser_delete(&p);
	return rc;
}
