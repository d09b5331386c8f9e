/* test_recipe.c — the recipe loader: the shipped recipe, the valid corpus, and every file of
 * tests/recipes/invalid/ failing with the message its first line announces ("# expect: TEXT").
 * Needs DIAG_SRCDIR (the repository root); run under ASan/LSan to check that errors leak nothing.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan/plan.h"
#include "recipe/load.h"
#include "recipe/recipe.h"
#include "recipe/recipe_find.h"

static const char *srcdir(void)
{
	const char *d = getenv("DIAG_SRCDIR");
	return d && *d ? d : ".";
}

static struct recipe *load_ok(const char *rel)
{
	char path[4096];
	struct recipe *r = NULL;
	struct diag_err err = { 0 };
	snprintf(path, sizeof(path), "%s/%s", srcdir(), rel);
	if (recipe_load(path, &r, &err) != 0)
		fail_msg("%s: %s", rel, err.msg);
	assert_non_null(r);
	assert_string_equal(r->path, path);
	return r;
}

/* 1-based line of the first line at or after `from` that contains needle, so that the test
 * follows edits of the shipped recipe while still checking the loader's line numbers. */
static unsigned line_of(const char *rel, const char *needle, unsigned from)
{
	char path[4096], buf[1024];
	snprintf(path, sizeof(path), "%s/%s", srcdir(), rel);
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	for (unsigned line = 1; fgets(buf, sizeof(buf), fp); line++)
		if (line >= from && strstr(buf, needle)) {
			fclose(fp);
			return line;
		}
	fclose(fp);
	fail_msg("%s: no line contains %s", rel, needle);
	return 0;
}

static void assert_kv(const struct recipe_kv *kv, unsigned n, const char *key, const char *value,
		      unsigned line)
{
	const struct recipe_kv *e = recipe_kv_find(kv, n, key);
	if (!e)
		fail_msg("no key %s", key);
	assert_string_equal(e->value, value);
	assert_int_equal(e->line, line);
}

#define HIGH_CPU "recipes/high-cpu.yaml"

static void test_high_cpu(void **state)
{
	(void)state;
	struct recipe *r = load_ok(HIGH_CPU);
	assert_string_equal(r->name, "high-cpu");
	assert_string_equal(r->symptom, "a process uses a lot of CPU, or is slow while busy");
	assert_non_null(r->summary);
	assert_non_null(r->description);
	assert_non_null(strchr(r->description, ' '));
	assert_string_equal(r->lua, "high-cpu.lua");
	assert_int_equal(r->target, RECIPE_TARGET_PROCESSES);
	assert_true(r->duration_s >= 1 && r->duration_s <= r->budgets.max_duration_s);
	assert_int_equal(r->budgets.max_duration_s, 60);
	assert_int_equal(r->budgets.max_sample_hz, 999);
	assert_int_equal(r->budgets.max_events_per_s, 1000000);
	assert_true(r->budgets.degrade_sample);
	assert_int_equal(r->budgets.preflight_ms, 100);
	assert_int_equal(r->n_params, 3);
	assert_string_equal(r->params[0].name, "hz");
	assert_int_equal(r->params[0].type, PARAM_INTEGER);
	assert_string_equal(r->params[0].dflt, "99");
	assert_string_equal(r->params[0].max, "999");
	assert_string_equal(r->params[1].name, "unwind"); /* the profile's user_unwind */
	assert_int_equal(r->params[1].type, PARAM_STRING);
	assert_string_equal(r->params[1].dflt, "fp");
	assert_string_equal(r->params[2].name, "jvm_perfmap"); /* the profile's jvm_perfmap */
	assert_int_equal(r->params[2].type, PARAM_STRING);
	assert_string_equal(r->params[2].dflt, "no");
	assert_true(r->budgets.max_cpu_pct == 15.0);
	assert_int_equal(r->budgets.max_map_bytes, 67108864);

	assert_int_equal(r->n_probes, 4);
	static const char *ids[] = { "profile", "runq", "syscalls", "context" };
	static const char *kinds[] = { "cpu_profile", "runq_latency", "syscall_stats", "proc_context" };
	for (unsigned i = 0; i < 4; i++) {
		char entry[64];
		snprintf(entry, sizeof(entry), "- id: %s", ids[i]);
		assert_string_equal(r->probes[i].id, ids[i]);
		assert_string_equal(r->probes[i].kind, kinds[i]);
		assert_string_equal(r->probes[i].filters.pid, "target");
		assert_null(r->probes[i].filters.comm);
		assert_int_equal(r->probes[i].line, line_of(HIGH_CPU, entry, 1));
	}
	const struct recipe_probe *p = &r->probes[0];
	assert_int_equal(p->n_options, 8);
	assert_kv(p->options, p->n_options, "python_frames", "true",
		  line_of(HIGH_CPU, "python_frames:", p->line));
	assert_kv(p->options, p->n_options, "jvm_perfmap", "${jvm_perfmap}",
		  line_of(HIGH_CPU, "jvm_perfmap:", p->line));
	assert_kv(p->options, p->n_options, "frequency_hz", "${hz}",
		  line_of(HIGH_CPU, "frequency_hz:", p->line));
	assert_kv(p->options, p->n_options, "user_unwind", "${unwind}",
		  line_of(HIGH_CPU, "user_unwind:", p->line));
	assert_kv(p->options, p->n_options, "user_stacks", "true",
		  line_of(HIGH_CPU, "user_stacks:", p->line));
	assert_string_equal(p->options[0].key, "frequency_hz"); /* file order is kept */
	assert_null(recipe_kv_find(p->options, p->n_options, "max_threads"));
	assert_int_equal(p->n_attach, 0);

	p = &r->probes[1];
	assert_int_equal(p->n_attach, 2);
	assert_string_equal(p->attach[0], "tp_btf");
	assert_string_equal(p->attach[1], "raw_tp");
	assert_kv(p->options, p->n_options, "max_threads", "16384",
		  line_of(HIGH_CPU, "max_threads:", p->line));
	assert_int_equal(r->probes[3].n_options, 0);

	assert_true(r->n_thresholds >= 5);
	assert_string_equal(r->thresholds[0].key, "busy_cpu_pct");
	unsigned t = line_of(HIGH_CPU, "thresholds:", 1);
	assert_kv(r->thresholds, r->n_thresholds, "busy_cpu_pct", "50",
		  line_of(HIGH_CPU, "busy_cpu_pct:", t));
	assert_kv(r->thresholds, r->n_thresholds, "runq_p99_crit_us", "50000",
		  line_of(HIGH_CPU, "runq_p99_crit_us:", t));
	assert_kv(r->thresholds, r->n_thresholds, "top_n", "10", line_of(HIGH_CPU, "top_n:", t));
	recipe_free(r);
}

static void test_valid_minimal(void **state)
{
	(void)state;
	struct recipe *r = load_ok("tests/recipes/valid/minimal.yaml");
	assert_string_equal(r->name, "minimal");
	assert_null(r->description);
	assert_int_equal(r->target, RECIPE_TARGET_NONE);
	assert_int_equal(r->budgets.max_events_per_s, 0);
	assert_int_equal(r->budgets.max_sample_hz, 0);
	assert_int_equal(r->n_probes, 1);
	assert_null(r->probes[0].filters.pid);
	assert_null(r->probes[0].filters.device);
	assert_int_equal(r->probes[0].n_attach, 0);
	assert_int_equal(r->probes[0].n_options, 0);
	assert_int_equal(r->n_thresholds, 0);
	recipe_free(r);
}

static void test_valid_optional_pid(void **state)
{
	(void)state;
	struct recipe *r = load_ok("tests/recipes/valid/optional-pid.yaml");
	assert_int_equal(r->target, RECIPE_TARGET_PID_OPTIONAL);
	assert_string_equal(r->probes[0].filters.pid, "target");
	recipe_free(r);
}

/* The ids of a plan's probes, comma-separated. */
static void plan_ids(const struct recipe *r, int pid, bool check_target, char *out, size_t len)
{
	struct plan_args a = { .pid = pid, .check_target = check_target };
	struct plan *p = NULL;
	struct diag_err err = { 0 };
	if (plan_build(r, &a, &p, &err))
		fail_msg("plan_build: %s", err.msg);
	out[0] = '\0';
	for (unsigned i = 0; i < p->n_probes; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", p->probes[i].rp->id);
	plan_free(p);
}

/* `when:` — a run with --pid plans the probes for a target, a host-wide run those for the host,
 * both the others; lint, show and approve (no target checked) plan every probe. */
static void test_valid_when(void **state)
{
	(void)state;
	struct recipe *r = load_ok("tests/recipes/valid/when.yaml");
	assert_int_equal(r->probes[0].when, RECIPE_WHEN_ALWAYS);
	assert_int_equal(r->probes[1].when, RECIPE_WHEN_TARGET);
	assert_int_equal(r->probes[2].when, RECIPE_WHEN_HOST);
	assert_int_equal(r->probes[3].when, RECIPE_WHEN_ALWAYS);
	char ids[256];
	plan_ids(r, getpid(), true, ids, sizeof(ids));
	assert_string_equal(ids, "always,with-pid,explicit");
	plan_ids(r, 0, true, ids, sizeof(ids));
	assert_string_equal(ids, "always,host-wide,explicit");
	plan_ids(r, 0, false, ids, sizeof(ids));
	assert_string_equal(ids, "always,with-pid,host-wide,explicit");
	recipe_free(r);
}

static void test_valid_full(void **state)
{
	(void)state;
	struct recipe *r = load_ok("tests/recipes/valid/full.yaml");
	assert_string_equal(r->symptom, "requests are slow: where does the time go?");
	assert_string_equal(r->description, "A literal block.\nSecond line.\n");
	assert_string_equal(r->lua, "lib/full.lua");
	assert_int_equal(r->duration_s, 3600);
	assert_true(r->budgets.max_cpu_pct == 0.5);
	assert_int_equal(r->budgets.max_events_per_s, 100000);
	const struct recipe_filters *f = &r->probes[0].filters;
	assert_string_equal(f->tid, "4242");
	assert_string_equal(f->comm, "nginx");
	assert_string_equal(f->cgroup, "/sys/fs/cgroup/system.slice/nginx.service");
	assert_string_equal(f->device, "/dev/vda");
	assert_null(f->remote_port);
	assert_string_equal(r->probes[0].attach[0], "uprobe_multi");
	assert_kv(r->probes[0].options, r->probes[0].n_options, "symbol",
		  "/usr/sbin/nginx:ngx_http_process_request", 23);
	assert_kv(r->probes[0].options, r->probes[0].n_options, "empty_string", "", 25);
	assert_string_equal(r->probes[1].filters.pid, "1");
	assert_int_equal(r->probes[1].n_options, 0);
	assert_kv(r->thresholds, r->n_thresholds, "label", "slow path", 32);
	recipe_free(r);
}

/* Every file in tests/recipes/invalid/ must fail, with exit code 2, one line, the path first, and
 * the text of its "# expect: " line (which carries the line number). */
static void test_invalid_corpus(void **state)
{
	(void)state;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/tests/recipes/invalid", srcdir());
	size_t n = 0;
	char **names = recipe_list_names(dir, &n);
	assert_non_null(names);
	assert_true(n >= 40); /* the corpus did not silently vanish */
	unsigned bad = 0;
	for (size_t i = 0; i < n; i++) {
		char path[4200], expect[512] = "";
		snprintf(path, sizeof(path), "%s/%s.yaml", dir, names[i]);
		FILE *fp = fopen(path, "r");
		assert_non_null(fp);
		if (!fgets(expect, sizeof(expect), fp) || strncmp(expect, "# expect: ", 10))
			fail_msg("%s: first line must be \"# expect: TEXT\"", path);
		fclose(fp);
		expect[strcspn(expect, "\n")] = '\0';
		const char *want = expect + 10;

		struct recipe *r = (struct recipe *)&r; /* must be reset to NULL */
		struct diag_err err = { .code = -7 };
		int rc = recipe_load(path, &r, &err);
		bool ok = rc == -1 && r == NULL && err.code == DIAG_EXIT_USAGE &&
			  !strncmp(err.msg, path, strlen(path)) && strstr(err.msg, want) &&
			  !strchr(err.msg, '\n');
		if (!ok) {
			print_error("%s.yaml: rc=%d code=%d\n  want: %s\n  got:  %s\n", names[i], rc,
				    err.code, want, rc ? err.msg : "(loaded)");
			bad++;
		}
		if (!rc)
			recipe_free(r);
		free(names[i]);
	}
	free(names);
	assert_int_equal(bad, 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static void test_missing_and_empty_file(void **state)
{
	(void)state;
	struct recipe *r = NULL;
	struct diag_err err = { 0 };
	assert_int_equal(recipe_load("/nonexistent/x.yaml", &r, &err), -1);
	assert_null(r);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_string_equal(err.msg, "/nonexistent/x.yaml: cannot read recipe: No such file or directory");

	char tmp[] = "/tmp/test_recipe_XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd); /* zero bytes */
	assert_int_equal(recipe_load(tmp, &r, &err), -1);
	assert_non_null(strstr(err.msg, ":1: empty recipe"));
	unlink(tmp);
	recipe_free(NULL);
}

static void test_list_resolve(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_recipe_dir_XXXXXX", p[4200], out[4200];
	assert_non_null(mkdtemp(dir));
	static const char *files[] = { "zeta.yaml", "alpha.yaml", ".hidden.yaml", "notes.txt", ".yaml" };
	for (unsigned i = 0; i < ARRAY_LEN(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		write_file(p, "x: 1\n");
	}
	snprintf(p, sizeof(p), "%s/sub.yaml", dir);
	assert_int_equal(mkdir(p, 0700), 0); /* a directory is not a recipe */

	size_t n = 0;
	char **names = recipe_list_names(dir, &n);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "alpha");
	assert_string_equal(names[1], "zeta");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	assert_null(recipe_list_names("/nonexistent", &n));
	assert_int_equal(n, 0);

	struct diag_err err = { 0 };
	assert_int_equal(recipe_dir_find(dir, out, sizeof(out)), 0);
	assert_string_equal(out, dir);
	assert_int_equal(recipe_dir_find("/nonexistent", out, sizeof(out)), -1);
	setenv("DIAGNOSE_RECIPES", dir, 1);
	assert_int_equal(recipe_dir_find(NULL, out, sizeof(out)), 0);
	assert_string_equal(out, dir);
	unsetenv("DIAGNOSE_RECIPES");

	assert_int_equal(recipe_resolve("alpha", dir, out, sizeof(out), &err), 0);
	snprintf(p, sizeof(p), "%s/alpha.yaml", dir);
	assert_string_equal(out, p);
	assert_int_equal(recipe_resolve("some/where.yaml", dir, out, sizeof(out), &err), 0);
	assert_string_equal(out, "some/where.yaml");
	assert_int_equal(recipe_resolve("mine.yaml", NULL, out, sizeof(out), &err), 0);
	assert_string_equal(out, "mine.yaml");

	assert_int_equal(recipe_resolve("foo", dir, out, sizeof(out), &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	snprintf(p, sizeof(p), "no recipe \"foo\" in %s/ (available: alpha, zeta)", dir);
	assert_string_equal(err.msg, p);
	/* a typo away from a name: suggested; far from every name: not */
	assert_int_equal(recipe_resolve("apha", dir, out, sizeof(out), &err), -1);
	assert_non_null(strstr(err.msg, "(did you mean alpha? available: alpha, zeta)"));
	assert_int_equal(recipe_resolve("zeat", dir, out, sizeof(out), &err), -1);
	assert_non_null(strstr(err.msg, "(did you mean zeta? available"));
	assert_int_equal(recipe_resolve("omega", dir, out, sizeof(out), &err), -1);
	assert_null(strstr(err.msg, "did you mean"));
	assert_int_equal(recipe_resolve("Bad Name", dir, out, sizeof(out), &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_int_equal(recipe_resolve("foo", "/nonexistent", out, sizeof(out), &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent is not a directory"));
	assert_int_equal(recipe_resolve("alpha", dir, out, 8, &err), -1); /* out too small */

	/* The repository's own recipes directory, as `diagnose` run from the root sees it. */
	snprintf(p, sizeof(p), "%s/recipes", srcdir());
	assert_int_equal(recipe_resolve("high-cpu", p, out, sizeof(out), &err), 0);

	static const char *rm[] = { "zeta.yaml", "alpha.yaml", ".hidden.yaml", "notes.txt", ".yaml" };
	for (unsigned i = 0; i < ARRAY_LEN(rm); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, rm[i]);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/sub.yaml", dir);
	rmdir(p);
	rmdir(dir);
}

/* Typed parameters: values are checked against type and bounds; "${name}" names a parameter. */
static void test_params(void **state)
{
	(void)state;
	struct recipe_param hz = { .name = "hz", .type = PARAM_INTEGER, .min = "1", .max = "999" };
	assert_null(recipe_param_check(&hz, "99"));
	assert_non_null(recipe_param_check(&hz, "0"));
	assert_non_null(recipe_param_check(&hz, "1000"));
	assert_non_null(recipe_param_check(&hz, "9x"));
	/* decimal, as recipe numbers: not hex, signed, blank, octal-looking or in exponent form */
	for (const char *const *t = (const char *const[]){ "0x63", "+99", " 99", "99 ", "099", "9.9e1",
							   "", NULL }; *t; t++)
		if (!recipe_param_check(&hz, *t))
			fail_msg("hz=\"%s\" accepted", *t);
	struct recipe_param delta = { .name = "delta", .type = PARAM_INTEGER, .min = "-5" };
	assert_null(recipe_param_check(&delta, "-5"));
	assert_non_null(recipe_param_check(&delta, "-6"));
	assert_non_null(recipe_param_check(&delta, "--5"));
	struct recipe_param fn = { .name = "fn", .type = PARAM_SYMBOL };
	assert_null(recipe_param_check(&fn, "/usr/bin/app:handle_request"));
	assert_non_null(recipe_param_check(&fn, "app:handle_request"));
	assert_non_null(recipe_param_check(&fn, "/usr/bin/app:"));
	struct recipe_param pid = { .name = "other", .type = PARAM_PID };
	assert_non_null(recipe_param_check(&pid, "-4"));
	char buf[32];
	assert_string_equal(recipe_param_ref("${hz}", buf, sizeof(buf)), "hz");
	assert_null(recipe_param_ref("$hz", buf, sizeof(buf)));
	assert_null(recipe_param_ref("x${hz}", buf, sizeof(buf)));
}

/* The one number rule of recipes and the command line (util.h). */
static void test_decimal_numbers(void **state)
{
	(void)state;
	uint64_t u;
	int64_t i;
	double d;
	assert_true(decimal_uint("0", 9, &u) && u == 0);
	assert_true(decimal_uint("18446744073709551615", UINT64_MAX, &u) && u == UINT64_MAX);
	assert_false(decimal_uint("18446744073709551616", UINT64_MAX, &u));
	assert_true(decimal_uint("2147483647", INT32_MAX, &u));
	assert_false(decimal_uint("2147483648", INT32_MAX, &u));
	static const char *const bad_uint[] = { "", "0x10", "010", "+1", "-1", " 1", "1 ", "1.0", "1e1", NULL };
	for (const char *const *t = bad_uint; *t; t++)
		if (decimal_uint(*t, UINT64_MAX, &u))
			fail_msg("decimal_uint(\"%s\") accepted", *t);
	assert_true(decimal_int("-9223372036854775808", &i) && i == INT64_MIN);
	assert_true(decimal_int("9223372036854775807", &i) && i == INT64_MAX);
	assert_false(decimal_int("9223372036854775808", &i));
	assert_false(decimal_int("-0x1", &i));
	static const char *const good_num[] = { "5", "0.5", "2.5", "1e1", "1E+1", "5e-1", "05", NULL };
	for (const char *const *t = good_num; *t; t++)
		if (!decimal_number(*t, false, &d))
			fail_msg("decimal_number(\"%s\") refused", *t);
	assert_true(decimal_number("2.5", false, &d) && d == 2.5);
	static const char *const bad_num[] = { "", "0x10", "0x1p3", "inf", "infinity", "nan", "+1", "-1",
					       " 1", "1 ", ".5", "5.", "1e", "1e+", "1e999", "1,5", NULL };
	for (const char *const *t = bad_num; *t; t++)
		if (decimal_number(*t, false, &d))
			fail_msg("decimal_number(\"%s\") accepted", *t);
	assert_true(decimal_number("-0.5", true, &d) && d == -0.5);
	assert_false(decimal_number("-0x1", true, &d));
	assert_false(decimal_number("+1", true, &d));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_high_cpu),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_decimal_numbers),
		cmocka_unit_test(test_valid_minimal),
		cmocka_unit_test(test_valid_optional_pid),
		cmocka_unit_test(test_valid_when),
		cmocka_unit_test(test_valid_full),
		cmocka_unit_test(test_invalid_corpus),
		cmocka_unit_test(test_missing_and_empty_file),
		cmocka_unit_test(test_list_resolve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
