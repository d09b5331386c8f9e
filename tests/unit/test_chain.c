/* test_chain.c — the declared chain (engine/run/chain_plan.c, chain_plan): recipes written to a temporary
 * recipes/ + lua/ directory, walked as lint and the first stage of --follow walk them: the steps
 * it lists, and each refusal — a follow-up that does not exist, a parameter it does not have, a
 * literal of the wrong type, a required parameter not given, a recipe that runs twice within the
 * depth — with the path of the recipe and entry at fault. No root, no BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/chain_plan.h"
#include "recipe/load.h"
#include "recipe/recipe.h"
#include "common/util.h"
#include "common/value.h"

static char root[64];

/* recipes/NAME.yaml: one cpu_profile probe, a `hz` parameter (required when req), the chain
 * budgets at depth, and the next: lines given. */
static void write_recipe(const char *name, unsigned depth, bool req, const char *next)
{
	char *path = xasprintf("%s/recipes/%s.yaml", root, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "name: %s\nsymptom: t\nsummary: t\nlua: x.lua\ntarget: pid\nduration_s: 2\n"
		"params:\n  - { name: hz, type: integer, %s min: 1, max: 99 }\n"
		"budgets:\n  max_duration_s: 60\n  max_sample_hz: 99\n  max_cpu_pct: 5\n"
		"  max_map_bytes: 100000000\n  max_chain_depth: %u\n  max_chain_duration_s: %u\n"
		"probes:\n  - { id: p, kind: cpu_profile, filters: { pid: target } }\n%s%s",
		name, req ? "" : "default: 9,", depth, depth ? 60 : 0, next ? "next:\n" : "", next ? next : "");
	fclose(f);
	free(path);
}

/* chain_plan on recipes/NAME.yaml: 0 with *rows, or -1 with err. */
static int plan_of(const char *name, struct value **rows, struct diag_err *err)
{
	char *path = xasprintf("%s/recipes/%s.yaml", root, name), *dir = xasprintf("%s/recipes", root);
	struct recipe *r = NULL;
	if (recipe_load(path, &r, err))
		fail_msg("%s", err->msg);
	int rc = chain_plan(r, dir, false, false, false, rows, err);
	recipe_free(r);
	free(path);
	free(dir);
	return rc;
}

static void expect_refused(const char *name, const char *what)
{
	struct value *rows = NULL;
	struct diag_err err = { 0 };
	if (plan_of(name, &rows, &err) == 0)
		fail_msg("%s: chain accepted", name);
	assert_null(rows);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	if (!strstr(err.msg, what))
		fail_msg("%s: %s (want %s)", name, err.msg, what);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/diag-chain-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	char *d = xasprintf("%s/recipes", root), *l = xasprintf("%s/lua", root), *x = xasprintf("%s/lua/x.lua", root);
	mkdir(d, 0755);
	mkdir(l, 0755);
	FILE *f = fopen(x, "w");
	fputs("return { verdicts = {} }\n", f);
	fclose(f);
	free(d);
	free(l);
	free(x);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char *cmd = xasprintf("rm -rf '%s'", root);
	int rc = system(cmd);
	free(cmd);
	return rc == 0 ? 0 : -1;
}

/* a → b (hz=50) → c, depth 2: both steps listed, in order, with their stage. */
static void test_walk(void **state)
{
	(void)state;
	write_recipe("c", 0, false, NULL);
	write_recipe("b", 1, false, "  - { verdict: slow, recipe: c }\n");
	write_recipe("a", 2, false, "  - { verdict: busy, recipe: b, params: [ \"hz=50\" ] }\n");
	struct value *rows = NULL;
	struct diag_err err = { 0 };
	if (plan_of("a", &rows, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(rows->arr.len, 2);
	const struct value *r0 = rows->arr.items[0], *r1 = rows->arr.items[1];
	assert_int_equal((int)value_get_num(r0, "stage", 0), 2);
	assert_string_equal(value_get_str(r0, "from"), "a");
	assert_string_equal(value_get_str(r0, "recipe"), "b");
	assert_string_equal(value_get_str(r0, "verdict"), "busy");
	assert_string_equal(value_get(r0, "params")->arr.items[0]->s, "hz=50");
	assert_int_equal((int)value_get_num(r1, "stage", 0), 3);
	assert_string_equal(value_get_str(r1, "from"), "b");
	assert_string_equal(value_get_str(r1, "recipe"), "c");
	assert_null(value_get(r0, "approved")); /* approvals not asked */
	value_free(rows);

	/* depth 1: b's own next: is not walked */
	write_recipe("a1", 1, false, "  - { verdict: busy, recipe: b }\n");
	assert_int_equal(plan_of("a1", &rows, &err), 0);
	assert_int_equal(rows->arr.len, 1);
	value_free(rows);
}

static void test_refusals(void **state)
{
	(void)state;
	write_recipe("c", 0, false, NULL);
	write_recipe("req", 0, true, NULL);
	write_recipe("missing", 1, false, "  - { verdict: v, recipe: nosuch }\n");
	expect_refused("missing", "missing.yaml: next[0].recipe: no recipe \"nosuch\"");
	write_recipe("unknown", 1, false, "  - { verdict: v, recipe: c, params: [ \"colour=red\" ] }\n");
	expect_refused("unknown", "unknown.yaml: next[0].params[0]: c has no parameter colour");
	write_recipe("typed", 1, false, "  - { verdict: v, recipe: c, params: [ \"hz=fast\" ] }\n");
	expect_refused("typed", "typed.yaml: next[0].params[0]: hz of c:");
	write_recipe("ranged", 1, false, "  - { verdict: v, recipe: c, params: [ \"hz=500\" ] }\n");
	expect_refused("ranged", "ranged.yaml: next[0].params[0]: hz of c:");
	write_recipe("required", 1, false, "  - { verdict: v, recipe: req }\n");
	expect_refused("required", "required.yaml: next[0]: req requires the parameter hz");
	/* a value from the verdict is not typed here (it is when the stage runs) but counts as given */
	write_recipe("fromverdict", 1, false, "  - { verdict: v, recipe: req, params: [ \"hz=${verdict.hz}\" ] }\n");
	struct value *rows = NULL;
	struct diag_err err = { 0 };
	if (plan_of("fromverdict", &rows, &err))
		fail_msg("%s", err.msg);
	value_free(rows);
}

static void test_cycles(void **state)
{
	(void)state;
	write_recipe("self", 1, false, "  - { verdict: v, recipe: self }\n");
	expect_refused("self", "self.yaml: next[0].recipe: self runs again within max_chain_depth 1 (a cycle: self → self)");
	write_recipe("pong", 1, false, "  - { verdict: v, recipe: ping }\n");
	write_recipe("ping", 2, false, "  - { verdict: v, recipe: pong }\n");
	/* found in pong's next:, said of ping's chain */
	expect_refused("ping", "ping.yaml: in the chain it could take: ");
	expect_refused("ping", "a cycle: ping → pong → ping");
	/* the same pair at depth 1 never comes back: no cycle within the depth */
	write_recipe("ping1", 1, false, "  - { verdict: v, recipe: pong }\n");
	struct value *rows = NULL;
	struct diag_err err = { 0 };
	if (plan_of("ping1", &rows, &err))
		fail_msg("%s", err.msg);
	value_free(rows);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_cycles),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
