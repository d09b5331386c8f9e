/* document.h — a recipe file's YAML as one checked libyaml document, and errors placed in it:
 * what the schema (schema.h) and the rules (recipe.c) read the recipe from.
 *
 * Owns: the loader's state (the file's path, its error, the document), the one libyaml pass into
 * the document, a field path ("probes[2].filters.pid") to its node and line, and the one-line
 * error "PATH:LINE: FIELD: message" with DIAG_EXIT_USAGE.
 * Must not: know the recipe's schema or its rules, print, or keep global state.
 */
#ifndef DIAG_RECIPE_DOCUMENT_H
#define DIAG_RECIPE_DOCUMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "common/util.h"

struct loader {
	const char *path;
	struct diag_err *err;
	yaml_document_t doc; /* the recipe, as doc_read built it */
	bool have_doc;
};

/* One step of a field path: a mapping key (key != NULL) or a sequence index. */
struct step {
	const char *key;
	size_t key_len;
	unsigned idx;
};

#define PATH_MAX_STEPS 16

/* Reads buf, one libyaml event at a time, into L->doc (have_doc set): refuses invalid YAML,
 * anchors and aliases, keys that are not scalars, a NUL byte in a key or value, nesting deeper
 * than the schema's, and more than one document. 0, or -1 with L->err. */
int doc_read(struct loader *L, const char *buf, size_t len);

/* Fills L->err with "PATH:LINE: FIELD: message" (LINE 0: none; FIELD NULL or "": none) as one
 * line of text, and returns -1. */
int doc_fail_line(struct loader *L, unsigned line, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same at a field path ("probes[2].filters.pid", schema keys only), at the line the document
 * has it (or its nearest parent's). */
int doc_fail_path(struct loader *L, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A node's line (1-based; 0 for NULL). */
unsigned doc_line(const yaml_node_t *n);
/* A scalar node's text; NULL for NULL or another node. */
const char *doc_scalar(const yaml_node_t *n);
/* What a node is, for a message: "a mapping", "a sequence", "an empty value", "nothing", or the
 * scalar quoted (recipe_quote) in buf. */
const char *doc_describe(const yaml_node_t *n, char *buf, size_t len);
/* Follows steps from the document root (keys are unique: the duplicates were refused first).
 * Returns the node reached (NULL if the path leaves the document) and the line of the last step
 * found: a key's line for a mapping key, an entry's line for an index. */
yaml_node_t *doc_resolve(struct loader *L, const struct step *s, unsigned n, unsigned *line);
/* The steps as a field path. */
void doc_path_text(const struct step *s, unsigned n, char *buf, size_t len);
/* The value of key in mapping map (NULL: map is no mapping or has no such key), its key's node
 * in *key_node. */
yaml_node_t *doc_map_get(struct loader *L, yaml_node_t *map, const char *key,
			 yaml_node_t **key_node);
/* s is one or more decimal digits (leading zeros too). */
bool doc_digits(const char *s);

/* TEXT in double quotes for a message, cut short (at a character boundary) when over 40 bytes:
 * buf (at least 64 bytes) receives it. Returns buf. */
const char *recipe_quote(char *buf, size_t len, const char *text);

#endif
