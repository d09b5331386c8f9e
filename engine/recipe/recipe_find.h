/* recipe_find.h — where recipes are found: the search path (docs/commands.md), a recipe
 * name resolved to its file, and the names a directory holds.
 *
 * Owns: the order directories are searched in (--recipes, $DIAGNOSE_RECIPES unless run with
 * capabilities but not root, ./recipes unless root or capabilities, the installed directory), the installed directory found from the running binary's path,
 * and the messages that say where nothing was found ("did you mean", what is available).
 * Must not: read or parse a recipe (recipe.h does), or print: errors come back in diag_err with
 * DIAG_EXIT_USAGE.
 */
#ifndef DIAG_RECIPE_FIND_H
#define DIAG_RECIPE_FIND_H

#include <stddef.h>

#include "common/util.h"

/* The directory recipes are searched in, in the order of docs/commands.md: explicit dir (may be
 * NULL), $DIAGNOSE_RECIPES (not with capabilities but not root), ./recipes (not as root or with
 * capabilities: privilege_strict; the current directory is anyone's),
 * then the installed recipes (recipe_installed_dir). Writes the first one that exists. Returns -1
 * when none exists. An explicit dir is the only candidate: when it does not exist the answer is
 * -1, not another directory. */
int recipe_dir_find(const char *explicit_dir, char *out, size_t out_len);
/* Why recipe_dir_find found nothing, for a message: "no recipes directory (...)" naming each place
 * looked at, and, as root with a ./recipes here, that it was not searched, why, and the
 * `--recipes ./recipes` that would use it. */
void recipe_dir_none(char *out, size_t out_len);
/* The installed recipes directory, PREFIX/share/diagnose/recipes next to the running binary's
 * PREFIX/bin (else the compiled-in share directory): production's default trust root. */
void recipe_installed_dir(char *out, size_t out_len);

/* Resolves SYMPTOM (a recipe name, or a path containing '/' or ending in .yaml) to a file path.
 * When the name is not found, err says so and lists the recipes that exist. */
int recipe_resolve(const char *symptom, const char *explicit_dir, char *out, size_t out_len,
		   struct diag_err *err);

/* Names of the *.yaml files in dir (without .yaml), sorted. Caller frees each and the array. */
char **recipe_list_names(const char *dir, size_t *n_out);

#endif
