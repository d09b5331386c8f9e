/* test_doctor_recipes.c — what doctor says a recipe runs here (engine/cli/doctor_recipes.c), on
 * the shipped recipes with the probe kinds' loads made up as an older kernel gives them: every
 * kind loads → runs fully; a kind only a run's option can load → runs, not tried; the profile's
 * kind fails → degraded, naming the probe, its kind and why; every kind but /proc reads fails →
 * cannot run; syscall_stats, file_io and peer_wait fail (as on 5.10, before their fallbacks)
 * → latency and triage degraded, not refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/doctor_recipes.h"
#include "plan/catalog.h"
#include "recipe/load.h"
#include "recipe/recipe.h"

static struct recipe *shipped(const char *name)
{
	char path[PATH_MAX];
	const char *src = getenv("DIAG_SRCDIR");
	snprintf(path, sizeof(path), "%s/recipes/%s.yaml", src ? src : ".", name);
	struct recipe *r = NULL;
	struct diag_err err;
	assert_int_equal(recipe_load(path, &r, &err), 0);
	return r;
}

/* Every kind of the catalog loaded, then those named in `failed` (NULL-terminated) failed. */
static struct kind_found *kinds_with(const char *const *failed, enum kind_load how, size_t *n)
{
	const struct probe_kind *const *all = catalog_all(n);
	struct kind_found *k = calloc(*n, sizeof(*k));
	assert_non_null(k);
	for (size_t i = 0; i < *n; i++) {
		k[i].name = all[i]->name;
		k[i].load = KIND_LOADED;
		for (const char *const *f = failed; f && *f; f++)
			if (strcmp(*f, all[i]->name) == 0) {
				k[i].load = how;
				snprintf(k[i].why, sizeof(k[i].why), "made up: %s", *f);
			}
	}
	return k;
}

static enum recipe_fit fit(const char *recipe, const char *const *failed, enum kind_load how, char *lost,
			   size_t lost_size)
{
	size_t n;
	struct kind_found *k = kinds_with(failed, how, &n);
	struct recipe *r = shipped(recipe);
	enum recipe_fit f = doctor_recipe_fit(r, k, n, lost, lost_size);
	recipe_free(r);
	free(k);
	return f;
}

static void every_kind_loads(void **state)
{
	(void)state;
	char lost[1024];
	assert_int_equal(fit("high-cpu", NULL, KIND_FAILED, lost, sizeof(lost)), RECIPE_RUNS);
	assert_string_equal(lost, "");
}

static void a_kind_not_tried(void **state)
{
	(void)state;
	char lost[1024];
	const char *const untried[] = { "cpu_profile", NULL };
	assert_int_equal(fit("high-cpu", untried, KIND_NOT_TRIED, lost, sizeof(lost)), RECIPE_UNTRIED);
	assert_string_equal(lost, "");
}

static void the_profile_fails(void **state)
{
	(void)state;
	char lost[1024];
	const char *const failed[] = { "cpu_profile", NULL };
	assert_int_equal(fit("high-cpu", failed, KIND_FAILED, lost, sizeof(lost)), RECIPE_DEGRADED);
	assert_string_equal(lost, "without probe profile (cpu_profile): made up: cpu_profile");
}

static void only_proc_reads_left(void **state)
{
	(void)state;
	char lost[1024];
	const char *const failed[] = { "cpu_profile", "runq_latency", "syscall_stats", NULL };
	assert_int_equal(fit("high-cpu", failed, KIND_FAILED, lost, sizeof(lost)), RECIPE_CANNOT_RUN);
	assert_non_null(strstr(lost, "probe profile (cpu_profile)"));
	assert_non_null(strstr(lost, "; without probe runq (runq_latency)"));
	assert_non_null(strstr(lost, "; without probe syscalls (syscall_stats)"));
}

static void a_probe_of_each_fails(void **state)
{
	(void)state;
	char lost[2048];
	const char *const failed[] = { "syscall_stats", "file_io", "peer_wait", NULL };
	assert_int_equal(fit("latency", failed, KIND_FAILED, lost, sizeof(lost)), RECIPE_DEGRADED);
	assert_non_null(strstr(lost, "probe syscalls (syscall_stats): made up"));
	assert_non_null(strstr(lost, "(peer_wait): made up"));
	assert_int_equal(fit("triage", failed, KIND_FAILED, lost, sizeof(lost)), RECIPE_DEGRADED);
	assert_non_null(strstr(lost, "(peer_wait): made up"));
}

/* A kind that loads short of something on this kernel (its twins without bpf_loop): the recipe
 * runs degraded, and says what each such probe loads; never "cannot run". */
static void a_kind_degraded(void **state)
{
	(void)state;
	char lost[2048];
	const char *const degraded[] = { "cpu_profile", "runq_latency", "syscall_stats", NULL };
	assert_int_equal(fit("high-cpu", degraded, KIND_DEGRADED, lost, sizeof(lost)), RECIPE_DEGRADED);
	assert_non_null(strstr(lost, "probe profile (cpu_profile) loads made up: cpu_profile"));
	assert_null(strstr(lost, "without"));
}

/* A list of what is lost longer than its buffer is cut, never overrun. */
static void lost_is_bounded(void **state)
{
	(void)state;
	char lost[40];
	const char *const failed[] = { "cpu_profile", "runq_latency", "syscall_stats", NULL };
	assert_int_equal(fit("high-cpu", failed, KIND_FAILED, lost, sizeof(lost)), RECIPE_CANNOT_RUN);
	assert_true(strlen(lost) < sizeof(lost));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_kind_loads), cmocka_unit_test(a_kind_not_tried),
		cmocka_unit_test(the_profile_fails), cmocka_unit_test(only_proc_reads_left),
		cmocka_unit_test(a_probe_of_each_fails), cmocka_unit_test(a_kind_degraded),
		cmocka_unit_test(lost_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
