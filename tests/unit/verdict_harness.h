/* verdict_harness.h — what the verdict layer's tests share (test_verdict.c, test_high_cpu_lua.c):
 * result trees built by hand (a profile, its stacks, the run queue),
 * a recipe's snippet and libraries loaded from the repository (DIAG_SRCDIR) and run both in a
 * child (verdict_run) and in this process (verdict_run_inprocess), which must agree, and lookups
 * in the verdicts they return.
 * Must not: know any verdict (the tests do).
 */
#ifndef DIAG_TEST_VERDICT_HARNESS_H
#define DIAG_TEST_VERDICT_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "plan/catalog.h"
#include "recipe/recipe.h"
#include "plan/shape.h"
#include "recorded_shape.h"
#include "verdict/verdict.h"

/* ---- building result trees ------------------------------------------------------------- */

static inline char *src(const char *rel)
{
	const char *root = getenv("DIAG_SRCDIR");
	return xasprintf("%s/%s", root ? root : ".", rel);
}

/* A NULL-terminated list of frame names, leaf first. */
#define FRAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NOFRAMES ((const char *const[]){ NULL })

static inline struct value *frames(const char *const *names)
{
	struct value *a = value_arr();
	for (; *names; names++)
		value_arr_push(a, value_str(*names));
	return a;
}

static inline struct value *profile(int64_t samples, int64_t kernel)
{
	struct value *p = value_obj();
	value_set_str(p, "event", "cpu_clock");
	value_set_int(p, "frequency_hz", 99);
	value_set_int(p, "samples", samples);
	value_set_int(p, "user_samples", samples - kernel);
	value_set_int(p, "kernel_samples", kernel);
	value_set_int(p, "lost_stacks", 0);
	value_set_int(p, "dropped", 0);
	value_set_str(p, "user_unwind", "fp");
	struct value *u = value_obj_set(p, "unwind", value_obj());
	value_set_bool(u, "leaf_fixup", true);
	static const char *const counts[] = { "copy_bytes", "sent", "ring_full", "unwound",
					      "copied_bytes_avg", "copies_cut", "fixed_leaves",
					      "leaf_frame_ok", "leaf_unknown", "dwarf_complete",
					      "dwarf_truncated", "dwarf_failed", "dwarf_spliced",
					      "unweighed" };
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		value_set_int(u, counts[i], 0);
	value_set_str(p, "stack_unit", "samples");
	value_obj_set(p, "stacks", value_arr());
	return p;
}

static inline void stack(struct value *prof, int64_t count, bool in_kernel, const char *const *user,
		  const char *const *kernel)
{
	struct value *s = value_arr_push((struct value *)value_get(prof, "stacks"), value_obj());
	value_set_int(s, "weight", count); /* cpu_profile: weight = count = samples */
	value_set_int(s, "count", count);
	value_set_str(s, "comm", "burner");
	value_set_bool(s, "in_kernel", in_kernel);
	value_obj_set(s, "user", frames(user));
	value_obj_set(s, "kernel", frames(kernel));
}

/* buckets: n triples lo, hi, count */
static inline struct value *runq(int n, const int64_t *b, int64_t max_us)
{
	struct value *r = value_obj(), *bk = value_arr();
	int64_t count = 0, total = 0;
	value_set_str(r, "unit", "us");
	for (int i = 0; i < n; i++) {
		struct value *x = value_arr_push(bk, value_obj());
		value_set_int(x, "lo", b[3 * i]);
		value_set_int(x, "hi", b[3 * i + 1]);
		value_set_int(x, "count", b[3 * i + 2]);
		count += b[3 * i + 2];
		total += b[3 * i + 2] * (b[3 * i] + b[3 * i + 1]) / 2;
	}
	value_set_int(r, "count", count);
	value_set_int(r, "total_us", total);
	value_set_int(r, "max_us", max_us);
	value_set_int(r, "dropped", 0);
	value_obj_set(r, "buckets", bk);
	return r;
}

/* ---- running ---------------------------------------------------------------------------- */

/* A source as the caller of verdict_run hands it over: bytes read once, with a path. */
static inline void source_of_text(struct source_file *f, const char *path, const char *text, size_t len)
{
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(path);
	f->data = xmalloc(len + 1);
	memcpy(f->data, text, len);
	f->data[len] = '\0';
	f->len = len;
}

static inline void source_of_file(struct source_file *f, const char *rel)
{
	char *path = src(rel);
	size_t len;
	char *data = read_file(path, &len);
	if (!data)
		fail_msg("cannot read %s", path);
	source_of_text(f, path, data, len);
	free(data);
	free(path);
}

static inline void source_drop(struct source_file *f)
{
	free(f->path);
	free(f->data);
}

static inline int lua_name(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 4 && strcmp(d->d_name + n - 4, ".lua") == 0;
}

/* The libraries of a directory in name order, as the engine reads them (NULL dir: none). */
static inline struct source_file *libs_of(const char *rel_dir, size_t *n)
{
	*n = 0;
	if (!rel_dir)
		return NULL;
	char *dir = src(rel_dir);
	struct dirent **names;
	int k = scandir(dir, &names, lua_name, alphasort);
	if (k < 0)
		fail_msg("cannot list %s", dir);
	struct source_file *libs = xcalloc((size_t)k + 1, sizeof(*libs));
	for (int i = 0; i < k; i++) {
		char *rel = xasprintf("%s/%s", rel_dir, names[i]->d_name);
		source_of_file(&libs[i], rel);
		free(rel);
		free(names[i]);
	}
	free(names);
	free(dir);
	*n = (size_t)k;
	return libs;
}

struct outcome {
	int rc;
	struct value *verdicts, *report, *ruled_out, *metrics;
	struct diag_err err;
};

static inline void outcome_free(struct outcome *o)
{
	value_free(o->verdicts);
	value_free(o->report);
	value_free(o->ruled_out);
	value_free(o->metrics);
}

static inline int run_into(int (*runner)(const struct verdict_input *, struct verdict_answer *,
				  struct diag_err *),
		    const struct verdict_input *in, struct outcome *o)
{
	struct verdict_answer a;
	o->rc = runner(in, &a, &o->err);
	o->verdicts = a.verdicts;
	o->report = a.report;
	o->ruled_out = a.ruled_out;
	o->metrics = a.metrics;
	return o->rc;
}

static inline char *json_of(const struct value *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (v)
		value_write_json(v, f, -1);
	fclose(f);
	return buf;
}

/* Runs in a child (verdict_run), and, unless only_child, in this process too: both must give
 * the same answer or the same error (so LeakSanitizer sees the conversion's paths as well). */
static inline void run_input(const struct verdict_input *in, bool only_child, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	run_into(verdict_run, in, o);
	if (only_child)
		return;
	struct outcome p = { 0 };
	run_into(verdict_run_inprocess, in, &p);
	if (p.rc != o->rc)
		fail_msg("child: %d (%s), in process: %d (%s)", o->rc, o->err.msg, p.rc, p.err.msg);
	if (o->rc) {
		assert_string_equal(o->err.msg, p.err.msg);
	} else {
		char *a = json_of(o->verdicts), *b = json_of(p.verdicts);
		assert_string_equal(a, b);
		free(a);
		free(b);
		a = json_of(o->report);
		b = json_of(p.report);
		assert_string_equal(a, b);
		free(a);
		free(b);
		a = json_of(o->ruled_out);
		b = json_of(p.ruled_out);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	outcome_free(&p);
}

/* wall clock for run_lua; 0 = the default (each test file its own copy: a test that sets it
 * puts it back) */
static unsigned run_max_ms;

static inline void run_lua(const char *rel_lua, const char *rel_lib, const struct value *results,
		    const struct value *thresholds, const struct value *run, size_t max_instr,
		    size_t max_mem, struct outcome *o)
{
	struct source_file lua;
	size_t n_libs;
	source_of_file(&lua, rel_lua);
	struct source_file *libs = libs_of(rel_lib, &n_libs);
	struct verdict_input in = { .lua = &lua, .libs = libs, .n_libs = n_libs, .results = results,
				    .thresholds = thresholds, .run = run, .max_ms = run_max_ms,
				    .max_instructions = max_instr, .max_memory_bytes = max_mem };
	run_input(&in, false, o);
	source_drop(&lua);
	for (size_t i = 0; i < n_libs; i++)
		source_drop(&libs[i]);
	free(libs);
}

/* Runs a snippet given as text, named "inline.lua", with diag.lua loaded. */
static inline void run_text(const char *text, const struct value *results, struct verdict_input *in,
		     bool only_child, struct outcome *o)
{
	struct source_file lua;
	size_t n_libs;
	source_of_text(&lua, "inline.lua", text, strlen(text));
	struct source_file *libs = libs_of("lua/lib", &n_libs);
	in->lua = &lua;
	in->libs = libs;
	in->n_libs = n_libs;
	in->results = results;
	run_input(in, only_child, o);
	source_drop(&lua);
	for (size_t i = 0; i < n_libs; i++)
		source_drop(&libs[i]);
	free(libs);
}


static inline const struct value *verdict(const struct outcome *o, const char *id)
{
	for (size_t i = 0; i < o->verdicts->arr.len; i++)
		if (strcmp(value_get_str(o->verdicts->arr.items[i], "id"), id) == 0)
			return o->verdicts->arr.items[i];
	return NULL;
}

static inline const char *id_at(const struct outcome *o, size_t i)
{
	assert_true(i < o->verdicts->arr.len);
	return value_get_str(o->verdicts->arr.items[i], "id");
}

static inline void assert_contains(const char *haystack, const char *needle)
{
	if (!haystack || !strstr(haystack, needle))
		fail_msg("\"%s\" does not contain \"%s\"", haystack ? haystack : "(null)", needle);
}

#endif
