/* test_shape.c — the shape checker (engine/plan/shape.c) on small declarations, its exact messages,
 * and the catalog's own declarations: well-formed (every path's parent declared, as a container
 * of the right type; every feature a kind needs is one doctor checks) and mentioned in schemas/recipe.md (a declared field the reference does not
 * name fails here). Needs DIAG_SRCDIR (the repository root) for the documentation check; no root,
 * no BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "cli/doctor.h"
#include "plan/shape.h"
#include "common/util.h"

static const struct result_field demo[] = {
	{ "samples", RT_INTEGER, "samples", false, "samples" },
	{ "rate", RT_NUMBER, "per_s", false, "rate" },
	{ "tag", RT_STRING, NULL, true, "optional text" },
	{ "stacks", RT_ARRAY, NULL, false, "stacks" },
	{ "stacks[]", RT_OBJECT, NULL, false, "one stack" },
	{ "stacks[].user", RT_ARRAY, NULL, false, "frames" },
	{ "stacks[].user[]", RT_STRING, NULL, false, "a frame" },
	{ "stacks[].hot", RT_BOOLEAN, NULL, true, "flag" },
	{ "devs", RT_OBJECT, NULL, true, "per device" },
	{ "devs.*", RT_OBJECT, NULL, true, "one device" },
	{ "devs.*.reads", RT_INTEGER, "count", false, "reads" },
};

static struct value *good(void)
{
	struct value *r = value_obj();
	value_set_int(r, "samples", 3);
	value_set_int(r, "rate", 2); /* a number may be integral */
	struct value *stacks = value_obj_set(r, "stacks", value_arr());
	struct value *s = value_arr_push(stacks, value_obj());
	struct value *user = value_obj_set(s, "user", value_arr());
	value_arr_push(user, value_str("main"));
	s = value_arr_push(stacks, value_obj());
	value_obj_set(s, "user", value_arr());
	value_set_bool(s, "hot", true);
	struct value *devs = value_obj_set(r, "devs", value_obj());
	value_set_int(value_obj_set(devs, "sda", value_obj()), "reads", 7);
	return r;
}

static void expect(const struct value *r, const char *want)
{
	char msg[512];
	int rc = shape_check_fields(demo, ARRAY_LEN(demo), "p1", "demo_kind", r, msg, sizeof(msg));
	if (!want) {
		if (rc != 0)
			fail_msg("unexpected mismatch: %s", msg);
		return;
	}
	assert_int_equal(rc, -1);
	assert_string_equal(msg, want);
}

static void test_matches(void **state)
{
	(void)state;
	struct value *r = good();
	expect(r, NULL);
	value_set_str(r, "tag", "x"); /* optional, present */
	expect(r, NULL);
	value_free(r);
}

static void test_wrong_type(void **state)
{
	(void)state;
	struct value *r = good();
	value_set_num(r, "samples", 2.5);
	expect(r, "probe p1 (demo_kind): results.samples: expected integer, got number");
	value_free(r);

	r = good();
	value_set_str(r, "rate", "fast");
	expect(r, "probe p1 (demo_kind): results.rate: expected number, got string");
	value_free(r);

	r = good();
	struct value *s = (struct value *)value_get(r, "stacks")->arr.items[0];
	value_arr_push((struct value *)value_get(s, "user"), value_int(4));
	expect(r, "probe p1 (demo_kind): results.stacks[0].user[1]: expected string, got integer");
	value_free(r);

	r = good();
	struct value *dev = (struct value *)value_get(value_get(r, "devs"), "sda");
	value_obj_set(dev, "reads", value_null());
	expect(r, "probe p1 (demo_kind): results.devs.sda.reads: expected integer, got null");
	value_free(r);

	r = value_arr();
	expect(r, "probe p1 (demo_kind): results: expected object, got array");
	value_free(r);
}

static void test_undeclared(void **state)
{
	(void)state;
	struct value *r = good();
	value_set_int(r, "exe", 1);
	expect(r, "probe p1 (demo_kind): results.exe: undeclared field");
	value_free(r);

	r = good();
	struct value *s = (struct value *)value_get(r, "stacks")->arr.items[1];
	value_set_str(s, "tag", "x"); /* declared at the top, not in a stack */
	expect(r, "probe p1 (demo_kind): results.stacks[1].tag: undeclared field");
	value_free(r);

	r = good();
	value_set_int(r, "tag", 1); /* the first mismatch in the tree's order wins */
	value_set_int(r, "zzz", 1);
	expect(r, "probe p1 (demo_kind): results.tag: expected string, got integer");
	value_free(r);
}

static void test_missing(void **state)
{
	(void)state;
	struct value *r = value_obj();
	value_set_int(r, "samples", 1);
	expect(r, "probe p1 (demo_kind): results.rate: missing");
	value_set_num(r, "rate", 1.5);
	expect(r, "probe p1 (demo_kind): results.stacks: missing");
	struct value *s = value_arr_push(value_obj_set(r, "stacks", value_arr()), value_obj());
	expect(r, "probe p1 (demo_kind): results.stacks[0].user: missing");
	value_obj_set(s, "user", value_arr());
	expect(r, NULL); /* devs is optional; an empty device object is not */
	value_obj_set(value_obj_set(r, "devs", value_obj()), "nvme0", value_obj());
	expect(r, "probe p1 (demo_kind): results.devs.nvme0.reads: missing");
	value_free(r);
}

/* Every declared path's parent is declared, as an object (".name", ".*") or an array ("[]"); no
 * path twice; types and meanings set; units are not empty strings. */
static void test_catalog_well_formed(void **state)
{
	(void)state;
	size_t n;
	const struct probe_kind *const *kinds = catalog_all(&n);
	for (size_t k = 0; k < n; k++) {
		const struct probe_kind *kind = kinds[k];
		if (!kind->results || kind->n_results == 0)
			fail_msg("%s declares no results", kind->name);
		if (!kind->features)
			fail_msg("%s declares no features list", kind->name);
		/* a kind whose stacks the governor may drop says which options take them */
		size_t stack_opts = 0;
		for (size_t i = 0; i < kind->n_options; i++)
			if (kind->options[i].role == OPT_ROLE_STACKS) {
				stack_opts++;
				if (kind->options[i].type != OPT_BOOL)
					fail_msg("%s: %s: a stacks option is a switch", kind->name,
						 kind->options[i].name);
			}
		if (kind->drops_stacks && !stack_opts)
			fail_msg("%s drops stacks but no option takes them", kind->name);
		for (const char *const *f = kind->features; *f; f++) {
			char *copy = xstrdup(*f);
			for (char *save = NULL, *c = strtok_r(copy, "|", &save); c;
			     c = strtok_r(NULL, "|", &save))
				if (!doctor_knows_feature(c))
					fail_msg("%s needs \"%s\": doctor has no such check", kind->name, c);
			free(copy);
		}
		for (size_t i = 0; i < kind->n_results; i++) {
			const struct result_field *f = &kind->results[i];
			if (!f->meaning || !f->meaning[0] || (f->unit && !f->unit[0]))
				fail_msg("%s: %s: meaning or unit empty", kind->name, f->path);
			if (shape_find(kind->results, kind->n_results, f->path) != f)
				fail_msg("%s: %s declared twice", kind->name, f->path);
			char *parent = xstrdup(f->path);
			size_t len = strlen(parent);
			enum result_type want;
			if (len > 2 && strcmp(parent + len - 2, "[]") == 0) {
				parent[len - 2] = '\0';
				want = RT_ARRAY;
			} else {
				char *dot = strrchr(parent, '.');
				if (!dot) {
					free(parent);
					continue; /* top level */
				}
				*dot = '\0';
				want = RT_OBJECT;
			}
			const struct result_field *p = shape_find(kind->results, kind->n_results, parent);
			if (!p || p->type != want)
				fail_msg("%s: %s: parent %s not declared as %s", kind->name, f->path,
					 parent, shape_type_name(want));
			free(parent);
		}
	}
}

/* The section of recipe.md from the level-3 heading `head` to the next heading of the same or a
 * higher level; NULL when there is none. */
static char *section(const char *doc, const char *head)
{
	const char *start = strstr(doc, head);
	if (!start)
		return NULL;
	const char *end = strstr(start + 4, "\n### ");
	const char *end2 = strstr(start + 4, "\n## ");
	if (!end || (end2 && end2 < end))
		end = end2;
	size_t len = end ? (size_t)(end - start) : strlen(start);
	char *s = xmalloc(len + 1);
	memcpy(s, start, len);
	s[len] = '\0';
	return s;
}

static bool is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool mentions_word(const char *text, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = text; (p = strstr(p, word)); p++)
		if ((p == text || !is_word(p[-1])) && !is_word(p[n]))
			return true;
	return false;
}

/* The documentation check: for each kind, every named component of every declared path ("*"
 * and "[]" aside) must appear as a word in the kind's section of schemas/recipe.md (`### `KIND``),
 * or, for the shared stack fields of kinds with a stack_unit (stacks, jit_frames, debug_hints), in "### Stacks
 * in results", and for
 * the unwinding fields (user_unwind, unwind.*) in "### Unwinding in results". A
 * mention, not a proof that the text is right: the declarations are the reference for types and
 * units, and `diagnose show` prints them. */
static void test_declared_fields_documented(void **state)
{
	(void)state;
	const char *root = getenv("DIAG_SRCDIR");
	char *path = xasprintf("%s/schemas/recipe.md", root ? root : ".");
	char *doc = read_file(path, NULL);
	if (!doc)
		fail_msg("cannot read %s", path);
	char *stacks = section(doc, "### Stacks in results");
	char *unwinding = section(doc, "### Unwinding in results");
	assert_non_null(stacks);
	assert_non_null(unwinding);
	size_t n;
	const struct probe_kind *const *kinds = catalog_all(&n);
	int undocumented = 0;
	for (size_t k = 0; k < n; k++) {
		const struct probe_kind *kind = kinds[k];
		char *head = xasprintf("### `%s`", kind->name);
		char *text = section(doc, head);
		free(head);
		if (!text) {
			fprintf(stderr, "schemas/recipe.md: no section \"### `%s`\"\n", kind->name);
			undocumented++;
			continue;
		}
		for (size_t i = 0; i < kind->n_results; i++) {
			char *copy = xstrdup(kind->results[i].path);
			for (char *save = NULL, *c = strtok_r(copy, ".", &save); c;
			     c = strtok_r(NULL, ".", &save)) {
				size_t len = strlen(c);
				if (len >= 2 && strcmp(c + len - 2, "[]") == 0)
					c[len - 2] = '\0';
				if (!c[0] || strcmp(c, "*") == 0 || mentions_word(text, c))
					continue;
				if (kind->stack_unit &&
				    (strncmp(kind->results[i].path, "stack", 5) == 0 ||
				     strncmp(kind->results[i].path, "jit_frames", 10) == 0 ||
				     strncmp(kind->results[i].path, "debug_hints", 11) == 0) &&
				    mentions_word(stacks, c))
					continue;
				if ((strncmp(kind->results[i].path, "unwind", 6) == 0 ||
				     strcmp(kind->results[i].path, "user_unwind") == 0) &&
				    mentions_word(unwinding, c))
					continue;
				fprintf(stderr, "schemas/recipe.md: %s: `%s` (of %s) not mentioned\n",
					kind->name, c, kind->results[i].path);
				undocumented++;
			}
			free(copy);
		}
		free(text);
	}
	free(stacks);
	free(unwinding);
	free(doc);
	free(path);
	if (undocumented)
		fail_msg("%d declared result fields not documented in schemas/recipe.md", undocumented);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches),
		cmocka_unit_test(test_wrong_type),
		cmocka_unit_test(test_undeclared),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_catalog_well_formed),
		cmocka_unit_test(test_declared_fields_documented),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
