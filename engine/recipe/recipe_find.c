/* recipe_find.c — finding recipes on disk (recipe_find.h).
 *
 * Owns: the recipe search path, names resolved to files with a "did you mean" for typos, and the
 * listing of a directory's recipes.
 * Must not: parse recipes, keep global state, or print.
 */
#include "recipe/recipe_find.h"

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recipe/document.h"
#include "common/privilege.h"
#include "recipe/recipe.h"

#ifndef DIAG_SHARE_DIR
#define DIAG_SHARE_DIR "/usr/local/share/diagnose"
#endif

static bool is_dir(const char *path)
{
	struct stat st;
	return path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int put(char *out, size_t out_len, const char *a, const char *b)
{
	int n = snprintf(out, out_len, "%s%s", a, b);
	return n >= 0 && (size_t)n < out_len ? 0 : -1;
}

/* Installed as PREFIX/bin/diagnose, the recipes are in PREFIX/share/diagnose/recipes: found from
 * the binary's own path, so that `make install PREFIX=/x` works whatever prefix the objects were
 * compiled with. DIAG_SHARE_DIR, the default prefix's, is the fallback (a binary run from
 * build/); the Makefile compiles no prefix in, so a build never depends on the last install. */
void recipe_installed_dir(char *out, size_t out_len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash && slash - exe >= 4 && strncmp(slash - 4, "/bin", 4) == 0) {
			slash[-4] = '\0'; /* PREFIX */
			int w = snprintf(out, out_len, "%s/share/diagnose/recipes", exe);
			if (w > 0 && (size_t)w < out_len && is_dir(out))
				return;
		}
	}
	snprintf(out, out_len, "%s", DIAG_SHARE_DIR "/recipes");
}

int recipe_dir_find(const char *explicit_dir, char *out, size_t out_len)
{
	if (explicit_dir) /* an explicit choice is not silently replaced by another directory */
		return is_dir(explicit_dir) ? put(out, out_len, explicit_dir, "") : -1;
	/* A user given capabilities chooses no directory of their own (privilege.h): the runs
	 * themselves take the installed recipes only (run.c); list and show look there too. */
	const char *env = privilege_on_behalf_of_user() ? NULL : getenv("DIAGNOSE_RECIPES");
	if (is_dir(env))
		return put(out, out_len, env, "");
	/* As root (often through sudo) the current directory is anyone's: a recipes/ there is not
	 * searched unless named with --recipes. */
	if (!privilege_strict() && is_dir("recipes"))
		return put(out, out_len, "recipes", "");
	char installed[PATH_MAX];
	recipe_installed_dir(installed, sizeof(installed));
	if (is_dir(installed))
		return put(out, out_len, installed, "");
	return -1;
}

/* As root the current directory's recipes/ is never searched: when there is one, say so, why,
 * and how to use it on purpose. "" when not root or there is none. */
static const char *root_cwd_note(void)
{
	if (!privilege_strict() || !is_dir("recipes"))
		return "";
	return "; ./recipes was not searched: as root, recipes are read only from --recipes, "
	       "$DIAGNOSE_RECIPES or the installed directory, since a directory others can write would "
	       "run their Lua as root; if you trust it, name it: --recipes ./recipes";
}

void recipe_dir_none(char *out, size_t out_len)
{
	char installed[PATH_MAX], env[160];
	recipe_installed_dir(installed, sizeof(installed));
	const char *e = getenv("DIAGNOSE_RECIPES");
	if (e && *e)
		snprintf(env, sizeof(env), "$DIAGNOSE_RECIPES=%.100s is not a directory", e);
	else
		snprintf(env, sizeof(env), "$DIAGNOSE_RECIPES is not set");
	snprintf(out, out_len, "no recipes directory (--recipes not given, %s, %sno %.512s)%s", env,
		 !privilege_strict() ? "no ./recipes, " : "", installed, root_cwd_note());
}

/* Edit distance (insertions, deletions, substitutions, and swaps of neighbours) between two
 * short names; names longer than 63 bytes count as far from everything. */
static size_t name_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return SIZE_MAX;
	size_t d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

int recipe_resolve(const char *symptom, const char *explicit_dir, char *out, size_t out_len,
		   struct diag_err *err)
{
	size_t n = strlen(symptom);
	char dir[4096], q[64];
	if (strchr(symptom, '/') || (n >= 5 && !strcmp(symptom + n - 5, ".yaml")))
		return put(out, out_len, symptom, "")
			       ? diag_fail(err, DIAG_EXIT_USAGE, "recipe path too long")
			       : 0;
	if (!recipe_name_ok(symptom))
		return diag_fail(err, DIAG_EXIT_USAGE,
				 "%s is not a recipe name ([a-z0-9-]+) or a path to a .yaml file",
				 recipe_quote(q, sizeof(q), symptom));
	if (recipe_dir_find(explicit_dir, dir, sizeof(dir))) {
		if (explicit_dir)
			return diag_fail(err, DIAG_EXIT_USAGE, "no recipe \"%s\": %s is not a directory",
					 symptom, explicit_dir);
		char none[1024];
		recipe_dir_none(none, sizeof(none));
		return diag_fail(err, DIAG_EXIT_USAGE, "no recipe \"%s\": %s", symptom, none);
	}
	int w = snprintf(out, out_len, "%s/%s.yaml", dir, symptom);
	if (w < 0 || (size_t)w >= out_len)
		return diag_fail(err, DIAG_EXIT_USAGE, "recipe path too long");
	struct stat st;
	if (stat(out, &st) == 0)
		return 0;

	char avail[512] = "", guess[80] = "";
	size_t count = 0, o = 0, best = SIZE_MAX;
	char **names = recipe_list_names(dir, &count);
	for (size_t i = 0; i < count; i++) {
		/* "did you mean": the nearest name, if a typo away (at most a third of the name) */
		size_t dist = name_distance(symptom, names[i]);
		if (dist < best && dist * 3 <= strlen(names[i]) && dist <= 3) {
			best = dist;
			snprintf(guess, sizeof(guess), "did you mean %.60s? ", names[i]);
		}
		if (o < sizeof(avail)) {
			int k = snprintf(avail + o, sizeof(avail) - o, "%s%s", i ? ", " : "", names[i]);
			o += k > 0 ? (size_t)k : 0;
		}
		free(names[i]);
	}
	free(names);
	if (o >= sizeof(avail))
		memcpy(avail + sizeof(avail) - 4, "...", 4);
	/* Root skipped ./recipes: when the recipe is there, that is what the caller is missing. */
	char here[PATH_MAX];
	snprintf(here, sizeof(here), "recipes/%s.yaml", symptom);
	bool in_cwd = !explicit_dir && stat(here, &st) == 0;
	return diag_fail(err, DIAG_EXIT_USAGE, "no recipe \"%s\" in %s/ (%s%s%s)%s", symptom, dir, guess,
			 count ? "available: " : "none there", avail, in_cwd ? root_cwd_note() : "");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **recipe_list_names(const char *dir, size_t *n_out)
{
	*n_out = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	size_t n = 0, cap = 8;
	char **names = xmalloc(cap * sizeof(*names));
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len <= 5 || strcmp(e->d_name + len - 5, ".yaml"))
			continue;
		if (e->d_type != DT_REG && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
			continue;
		if (n == cap)
			names = xrealloc(names, (cap *= 2) * sizeof(*names));
		names[n++] = xasprintf("%.*s", (int)(len - 5), e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	*n_out = n;
	return names;
}
