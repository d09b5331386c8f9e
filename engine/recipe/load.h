/* load.h — one recipe file read into struct recipe (recipe.h) and checked against the schema
 * (schemas/recipe.md) and its rules.
 *
 * Owns: the load in its order: the document (document.h), the fixed schema (schema.h), duplicate
 * keys, strict numbers, the free-form maps, the rules between fields.
 * Must not: know which probe kinds exist or what their options mean (plan.c checks that against
 * the catalog), run anything, or print: errors come back as "FILE:LINE: field: message" in
 * diag_err with DIAG_EXIT_USAGE.
 */
#ifndef DIAG_RECIPE_LOAD_H
#define DIAG_RECIPE_LOAD_H

#include <stddef.h>

#include "common/util.h"
#include "recipe/recipe.h"

/* Loads and schema-checks one recipe. On error returns -1, *out = NULL, err->code =
 * DIAG_EXIT_USAGE and err->msg = "PATH:LINE: FIELD: what is wrong" (LINE omitted when unknown,
 * FIELD omitted for errors of the whole document, such as invalid YAML). */
int recipe_load(const char *path, struct recipe **out, struct diag_err *err);
/* The same for a recipe already in memory: data holds len bytes (need not end in NUL); name
 * stands for the path in messages and in r->path. Used by recipe_load and by the fuzzer. */
int recipe_load_buffer(const char *name, const char *data, size_t len, struct recipe **out,
		       struct diag_err *err);

#endif
