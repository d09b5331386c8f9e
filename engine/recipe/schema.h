/* schema.h — a recipe's fixed schema (schemas/recipe.md), applied to its document (document.h)
 * into struct recipe.
 *
 * Owns: which fields a recipe has, their types, bounds and defaults; the first error of the
 * document against them, at its line.
 * Must not: read YAML text, check the rules between fields (recipe.c), print, or keep state.
 */
#ifndef DIAG_RECIPE_SCHEMA_H
#define DIAG_RECIPE_SCHEMA_H

#include "recipe/document.h"
#include "recipe/recipe.h"

#define PROBES_MAX 32 /* probes a recipe may declare */

/* The document's fixed part into a new *out, as libcyaml would read the same text (its field
 * order, its number parsing); freed by recipe_free, also after an error. 0, or -1 with L->err. */
int schema_apply(struct loader *L, struct recipe **out);
/* Numbers of the fixed part are decimal text: libcyaml (and so schema_apply) would also take
 * "5s", "0x10", "010" (octal) or "-1". 0, or -1 with L->err. */
int schema_strict_numbers(struct loader *L);

#endif
