/* incidents.c — `diagnose test`: recorded incidents replayed against their expectations (see
 * incidents.h).
 * Must not: load BPF, need root, write a file, or stop at the first failing case.
 */
#include "offline/incidents.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "offline/expect.h"
#include "recipe/recipe.h"
#include "offline/replay.h"
#include "report/report.h"
#include "common/util.h"
#include "common/value.h"

#define MAX_ENTRIES 10000 /* names read from one directory */

struct names {
	char **v;
	size_t n;
};

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct names){ 0 };
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n > t && !strcmp(s + n - t, tail);
}

/* The entries of dir that want() accepts (as want() rewrites them), sorted and distinct. 0, or -1
 * with err. */
static int list_dir(const char *dir, char *(*want)(int dfd, const char *name), struct names *out,
		    struct diag_err *err)
{
	*out = (struct names){ 0 };
	DIR *d = opendir(dir);
	if (!d)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: cannot list: %s", dir, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d))) {
		char *keep = e->d_name[0] == '.' ? NULL : want(dirfd(d), e->d_name);
		if (!keep)
			continue;
		if (out->n == MAX_ENTRIES) {
			free(keep);
			closedir(d);
			names_free(out);
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: more than %d entries", dir, MAX_ENTRIES);
		}
		out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
		out->v[out->n++] = keep;
	}
	closedir(d);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), by_name);
	size_t k = 0;
	for (size_t i = 0; i < out->n; i++) {
		if (k && !strcmp(out->v[k - 1], out->v[i]))
			free(out->v[i]);
		else
			out->v[k++] = out->v[i];
	}
	out->n = k;
	return 0;
}

/* A directory (not a symlink to one) named like a recipe. */
static char *recipe_dir_entry(int dfd, const char *name)
{
	struct stat st;
	if (!recipe_name_ok(name) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
		return NULL;
	return xstrdup(name);
}

/* NAME of NAME.json or NAME.expect. */
static char *case_entry(int dfd, const char *name)
{
	(void)dfd;
	const char *ext = ends_with(name, ".json") ? ".json" : ends_with(name, ".expect") ? ".expect" : NULL;
	return ext ? xasprintf("%.*s", (int)(strlen(name) - strlen(ext)), name) : NULL;
}

static bool is_file(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The case's outcome as lines (an array of strings; empty: it passed). */
static struct value *run_case(const char *recipe, const char *json, const char *expect,
			      const struct incidents_options *o)
{
	struct diag_err err = { 0 };
	struct expectations e;
	if (!is_file(json)) {
		struct value *d = value_arr();
		value_arr_push(d, value_str_take(xasprintf("%s: missing (an expectations file without "
							   "its recorded report)", json)));
		return d;
	}
	if (!is_file(expect)) {
		struct value *d = value_arr();
		value_arr_push(d, value_str_take(xasprintf("%s: missing (a recorded incident needs its "
							   "expectations: tests/fixtures/record.sh writes them)",
							   expect)));
		return d;
	}
	if (expect_read(expect, &e, &err)) {
		struct value *d = value_arr();
		value_arr_push(d, value_str(err.msg));
		return d;
	}
	struct replay_options ro = { .report_path = json, .recipes_dir = o->recipes_dir };
	struct value *report = NULL;
	struct value *d;
	if (replay_report(&ro, &report, &err)) {
		/* The Lua failing is an outcome a case may expect (exit 1); a report that cannot be
		 * replayed is not. */
		d = expect_compare(&e, err.code ? err.code : DIAG_EXIT_RUNTIME, NULL, err.msg);
	} else {
		d = expect_compare(&e, replay_exit_code(value_get(report, "verdicts")), report, NULL);
		const char *name = value_get_str(value_get(report, "recipe"), "name");
		if (strcmp(name, recipe))
			value_arr_push(d, value_str_take(xasprintf("%s: recorded by recipe %s, not %s (a "
								   "recorded incident sits in its recipe's "
								   "directory)", json, name, recipe)));
	}
	value_free(report);
	expect_free(&e);
	return d;
}

static void print_case(const char *recipe, const char *name, const struct value *diffs)
{
	fputs(diffs->arr.len ? "FAIL  " : "ok    ", stdout);
	report_put_text(stdout, recipe);
	fputc('/', stdout);
	report_put_text(stdout, name);
	fputc('\n', stdout);
	for (size_t i = 0; i < diffs->arr.len; i++) {
		fputs("      ", stdout);
		report_put_text(stdout, diffs->arr.items[i]->s);
		fputc('\n', stdout);
	}
}

/* Every case of dir/recipe; counts them and the failed ones. */
static int test_recipe(const char *dir, const char *recipe, const struct incidents_options *o,
		       size_t *cases, size_t *failed, struct diag_err *err)
{
	char *rdir = xasprintf("%s/%s", dir, recipe);
	struct names names;
	if (list_dir(rdir, case_entry, &names, err)) {
		free(rdir);
		return -1;
	}
	for (size_t i = 0; i < names.n; i++) {
		char *json = xasprintf("%s/%s.json", rdir, names.v[i]);
		char *expect = xasprintf("%s/%s.expect", rdir, names.v[i]);
		struct value *d = run_case(recipe, json, expect, o);
		print_case(recipe, names.v[i], d);
		fflush(stdout);
		++*cases;
		*failed += d->arr.len != 0;
		value_free(d);
		free(json);
		free(expect);
	}
	names_free(&names);
	free(rdir);
	return 0;
}

/* The recipes to test: the arguments, each with its directory, or every recipe directory. */
static int recipes_of(const char *dir, const struct incidents_options *o, struct names *out,
		      struct diag_err *err)
{
	if (!o->n_recipes)
		return list_dir(dir, recipe_dir_entry, out, err);
	*out = (struct names){ xcalloc(o->n_recipes, sizeof(char *)), 0 };
	for (size_t i = 0; i < o->n_recipes; i++) {
		const char *r = o->recipes[i];
		char *path = recipe_name_ok(r) ? xasprintf("%s/%s", dir, r) : NULL;
		struct stat st;
		bool ok = path && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
		free(path);
		if (!ok) {
			names_free(out);
			return diag_fail(err, DIAG_EXIT_USAGE, "test %.64s: %s", r, recipe_name_ok(r)
					 ? "no directory of recorded incidents for it in --dir"
					 : "not a recipe name ([a-z0-9-]+)");
		}
		out->v[out->n++] = xstrdup(r);
	}
	return 0;
}

int incidents_test(const struct incidents_options *o)
{
	struct diag_err err = { 0 };
	const char *dir = o->dir ? o->dir : INCIDENTS_DEFAULT_DIR;
	struct stat st;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		diag_fail(&err, DIAG_EXIT_USAGE, "test: %s is not a directory (--dir DIR: the recorded "
			  "incidents, DIR/RECIPE/NAME.json and NAME.expect)", dir);
		report_put_error(err.msg);
		return DIAG_EXIT_USAGE;
	}
	struct names recipes;
	if (recipes_of(dir, o, &recipes, &err)) {
		report_put_error(err.msg);
		return DIAG_EXIT_USAGE;
	}
	size_t cases = 0, failed = 0;
	int code = DIAG_EXIT_OK;
	for (size_t i = 0; i < recipes.n; i++)
		if (test_recipe(dir, recipes.v[i], o, &cases, &failed, &err)) {
			report_put_error(err.msg);
			failed++;
		}
	names_free(&recipes);
	if (!cases) {
		fputs("test: no recorded incidents in ", stdout);
		report_put_text(stdout, dir);
		fputc('\n', stdout);
		code = DIAG_EXIT_RUNTIME;
	} else {
		printf("test: %zu recorded incident%s, %zu failed\n", cases, cases == 1 ? "" : "s", failed);
	}
	if (failed)
		code = DIAG_EXIT_RUNTIME;
	fflush(stdout);
	return code;
}
