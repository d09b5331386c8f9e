/* test_approval.c — the approvals lock format (parse, canonical write, round trip, every
 * malformed line reported as "LOCK:LINE: message"), updating and comparing entries, the policy
 * file parser and the audit record, and the writer refusing what the parser would reject. No
 * BPF; as root, also the stricter rules for audit paths the environment names. Run under
 * ASan/LSan to check that error paths leak nothing.
 *
 * Why one file (~810 lines): one module (engine/trust/approval.c), whose format and uses change
 * together.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "trust/approval.h"
#include "trust/audit.h"

#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

/* A lock as `diagnose approve` writes it. */
static const char CANONICAL[] =
	"# diagnose approved.lock: the recipes approved for production mode, with the SHA-256 of\n"
	"# every file and BPF object each one uses. Written by `diagnose approve NAME`, checked by\n"
	"# `diagnose verify` and by every production run. Review it together with the recipes.\n"
	"\n"
	"[recipe high-cpu]\n"
	"engine = 0.1.0\n"
	"approved_by = alice\n"
	"approved_at = 2026-11-29T11:00:00Z\n"
	"file lua/high-cpu.lua sha256=" H1 "\n"
	"file lua/lib/diag.lua sha256=" H2 "\n"
	"file recipes/high-cpu.yaml sha256=" H3 "\n"
	"bpf cpu_profile sha256=" H1 "\n"
	"bpf preflight sha256=" H2 "\n"
	"\n"
	"[recipe slow-io]\n"
	"engine = 0.1.0\n"
	"approved_by = Bob Smith\n"
	"approved_at = 2026-11-30T09:30:00Z\n"
	"file recipes/slow-io.yaml sha256=" H3 "\n"
	"\n"
	"[end]\n";

static struct approval_lock *parse_ok(const char *text)
{
	struct approval_lock *lock = NULL;
	struct diag_err err = { 0 };
	if (approval_lock_parse("test.lock", text, strlen(text), &lock, &err))
		fail_msg("parse: %s", err.msg);
	assert_non_null(lock);
	return lock;
}

static void test_parse_valid(void **state)
{
	(void)state;
	struct approval_lock *lock = parse_ok(CANONICAL);
	assert_int_equal(lock->n, 2);
	const struct approval_entry *e = approval_lock_find(lock, "high-cpu");
	assert_non_null(e);
	assert_string_equal(e->engine, "0.1.0");
	assert_string_equal(e->approved_by, "alice");
	assert_string_equal(e->approved_at, "2026-11-29T11:00:00Z");
	assert_int_equal(e->line, 5);
	assert_int_equal(e->n_items, 5);
	assert_int_equal(e->items[0].kind, APPROVAL_FILE);
	assert_string_equal(e->items[0].name, "lua/high-cpu.lua");
	assert_string_equal(e->items[0].sha256, H1);
	assert_int_equal(e->items[4].kind, APPROVAL_BPF);
	assert_string_equal(e->items[4].name, "preflight");
	e = approval_lock_find(lock, "slow-io");
	assert_non_null(e);
	assert_string_equal(e->approved_by, "Bob Smith");
	assert_null(approval_lock_find(lock, "nope"));
	approval_lock_free(lock);
}

static void test_round_trip(void **state)
{
	(void)state;
	/* canonical text → parse → format gives the same bytes */
	struct approval_lock *lock = parse_ok(CANONICAL);
	char *text = approval_lock_format(lock);
	assert_string_equal(text, CANONICAL);
	/* and again */
	struct approval_lock *again = parse_ok(text);
	char *text2 = approval_lock_format(again);
	assert_string_equal(text2, CANONICAL);
	free(text);
	free(text2);
	approval_lock_free(lock);
	approval_lock_free(again);

	/* blocks and lines out of order, extra comments and blank lines: written canonically */
	static const char messy[] =
		"# hand-merged\n"
		"[recipe slow-io]\n"
		"file recipes/slow-io.yaml sha256=" H3 "\n"
		"approved_at = 2026-11-30T09:30:00Z\n"
		"approved_by = Bob Smith\n"
		"engine = 0.1.0\n"
		"\n\n"
		"[recipe high-cpu]\n"
		"bpf preflight sha256=" H2 "\n"
		"# a comment inside a block\n"
		"file recipes/high-cpu.yaml sha256=" H3 "\n"
		"bpf cpu_profile sha256=" H1 "\n"
		"file lua/lib/diag.lua sha256=" H2 "\n"
		"file lua/high-cpu.lua sha256=" H1 "\n"
		"engine = 0.1.0\n"
		"approved_by = alice\n"
		"approved_at = 2026-11-29T11:00:00Z\n"
		"[end]\n"
		"# trailing comment\n";
	lock = parse_ok(messy);
	text = approval_lock_format(lock);
	assert_string_equal(text, CANONICAL);
	free(text);
	approval_lock_free(lock);

	/* an empty lock */
	lock = parse_ok("[end]\n");
	assert_int_equal(lock->n, 0);
	text = approval_lock_format(lock);
	approval_lock_free(lock);
	lock = parse_ok(text);
	assert_int_equal(lock->n, 0);
	free(text);
	approval_lock_free(lock);
}

static void test_write_read_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_approval.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/approved.lock", dir);
	struct diag_err err = { 0 };
	struct approval_lock *lock = parse_ok(CANONICAL), *back = NULL;
	assert_int_equal(approval_lock_write(lock, path, &err), 0);
	assert_int_equal(approval_lock_read(path, false, false, &back, &err), 0);
	char *a = approval_lock_format(lock), *b = approval_lock_format(back);
	assert_string_equal(a, b);
	size_t len;
	char *raw = read_file(path, &len);
	assert_string_equal(raw, CANONICAL);
	free(raw);
	free(a);
	free(b);
	approval_lock_free(back);
	unlink(path);
	/* missing: an error unless missing_ok */
	assert_int_equal(approval_lock_read(path, false, false, &back, &err), -1);
	assert_non_null(strstr(err.msg, "no approvals lock"));
	assert_int_equal(approval_lock_read(path, true, false, &back, &err), 0);
	assert_int_equal(back->n, 0);
	approval_lock_free(back);
	approval_lock_free(lock);
	free(path);
	rmdir(dir);
}

/* Builds a one-block lock from its body lines, with the header lines given. */
#define BLOCK_HEAD "[recipe high-cpu]\nengine = 0.1.0\napproved_by = alice\napproved_at = 2026-11-29T11:00:00Z\n"
#define YAML_LINE "file recipes/high-cpu.yaml sha256=" H3 "\n"

static void test_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		const char *want; /* the whole message must start with this */
	} cases[] = {
		{ BLOCK_HEAD YAML_LINE "[end]", "test.lock:6: truncated: the last line has no newline" },
		{ BLOCK_HEAD YAML_LINE, "test.lock:6: truncated: no `[end]` line" },
		{ "", "test.lock:1: truncated: no `[end]` line" },
		{ BLOCK_HEAD "file recipes/high-cp", "test.lock:5: truncated: the last line has no newline" },
		{ BLOCK_HEAD YAML_LINE "[end]\r\n", "test.lock:6: carriage return" },
		{ "[recipe high-cpu]\r\n", "test.lock:1: carriage return" },
		{ "engine = 0.1.0\n[end]\n", "test.lock:1: expected `[recipe NAME]` before this line" },
		{ "[recipe High_CPU]\n", "test.lock:1: recipe name must match [a-z0-9-]+" },
		{ "[recipe high-cpu\n", "test.lock:1: expected `[recipe NAME]`" },
		{ "[recipe ]\n", "test.lock:1: recipe name must match" },
		{ "[recipes high-cpu]\n", "test.lock:1: unknown section" },
		{ BLOCK_HEAD YAML_LINE BLOCK_HEAD YAML_LINE "[end]\n",
		  "test.lock:6: [recipe high-cpu] appears twice (first at line 1)" },
		{ BLOCK_HEAD "approver = bob\n" YAML_LINE "[end]\n", "test.lock:5: unknown key \"approver\"" },
		{ BLOCK_HEAD "engine = 0.2.0\n" YAML_LINE "[end]\n", "test.lock:5: engine set twice" },
		{ BLOCK_HEAD "engine =\n", "test.lock:5: expected `KEY = VALUE`" },
		{ "[recipe a]\nengine = 0.1.0\napproved_by = \n", "test.lock:3: trailing space" },
		{ "[recipe a]\nengine = 0.1.0\napproved_by =  x\n", "test.lock:3: approved_by: empty or invalid" },
		{ "[recipe a]\napproved_at = 2026-11-29 11:00:00\n", "test.lock:2: approved_at: expected YYYY-MM-DDTHH:MM:SSZ" },
		{ "[recipe a]\nengine = 0.1.0\napproved_by = a\tb\n", "test.lock:3: approved_by: empty or invalid" },
		{ BLOCK_HEAD "file lua/x.lua sha256=" "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789\n",
		  "test.lock:5: sha256 must be 64 lowercase hex digits" },
		{ BLOCK_HEAD "file lua/x.lua sha256=123\n", "test.lock:5: sha256 must be 64" },
		{ BLOCK_HEAD "file lua/x.lua sha256=" H1 "0\n", "test.lock:5: sha256 must be 64" },
		{ BLOCK_HEAD "file lua/x.lua\n", "test.lock:5: expected `file NAME sha256=HEX`" },
		{ BLOCK_HEAD "file lua/x.lua sha1=" H1 "\n", "test.lock:5: expected `file NAME sha256=HEX`" },
		{ BLOCK_HEAD "bpf cpu-profile sha256=" H1 "\n", "test.lock:5: invalid bpf name" },
		{ BLOCK_HEAD "file /etc/passwd sha256=" H1 "\n", "test.lock:5: invalid file name" },
		{ BLOCK_HEAD "file lua/../../x sha256=" H1 "\n", "test.lock:5: invalid file name" },
		{ BLOCK_HEAD "file ../x sha256=" H1 "\n", "test.lock:5: invalid file name" },
		{ BLOCK_HEAD YAML_LINE YAML_LINE, "test.lock:6: file recipes/high-cpu.yaml listed twice" },
		{ BLOCK_HEAD YAML_LINE "[end]\n[recipe b]\n", "test.lock:7: text after [end]" },
		{ BLOCK_HEAD YAML_LINE "[end]\n[end]\n", "test.lock:7: text after [end]" },
		{ "[recipe a]\nengine = 0.1.0\napproved_by = x\n" YAML_LINE "[end]\n",
		  "test.lock:1: [recipe a]: missing approved_at" },
		{ "[recipe a]\napproved_by = x\napproved_at = 2026-11-29T11:00:00Z\n" YAML_LINE "[end]\n",
		  "test.lock:1: [recipe a]: missing engine" },
		{ BLOCK_HEAD "file lua/x.lua sha256=" H1 "\n[end]\n",
		  "test.lock:1: [recipe high-cpu]: no `file ... .yaml` line" },
		{ BLOCK_HEAD YAML_LINE "[recipe b]\n[end]\n", "test.lock:6: [recipe b]: missing engine" },
		{ BLOCK_HEAD YAML_LINE "garbage\n", "test.lock:6: expected `KEY = VALUE`" },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct approval_lock *lock = (struct approval_lock *)1;
		struct diag_err err = { 0 };
		int rc = approval_lock_parse("test.lock", cases[i].text, strlen(cases[i].text), &lock, &err);
		if (rc != -1)
			fail_msg("case %zu parsed, want \"%s\"", i, cases[i].want);
		assert_null(lock);
		assert_int_equal(err.code, DIAG_EXIT_USAGE);
		if (strncmp(err.msg, cases[i].want, strlen(cases[i].want)))
			fail_msg("case %zu: got \"%s\", want \"%s...\"", i, err.msg, cases[i].want);
	}
	/* a NUL byte inside a line */
	static const char nul[] = "[recipe a]\nengine = 0.\0001.0\n";
	struct approval_lock *lock;
	struct diag_err err = { 0 };
	assert_int_equal(approval_lock_parse("test.lock", nul, sizeof(nul) - 1, &lock, &err), -1);
	assert_string_equal(err.msg, "test.lock:2: NUL byte");
	/* every truncation of a valid lock is an error or, cut at a line boundary before [end],
	 * still an error: never a silently shorter lock */
	for (size_t n = 0; n + 1 < strlen(CANONICAL); n++) {
		if (approval_lock_parse("test.lock", CANONICAL, n, &lock, &err) == 0)
			fail_msg("a lock truncated to %zu bytes parsed", n);
		assert_non_null(strstr(err.msg, "truncated"));
	}
}

static struct approval_entry computed(const char *yaml_sha, const char *engine)
{
	struct approval_entry e = { 0 };
	e.recipe = xstrdup("high-cpu");
	e.engine = xstrdup(engine);
	e.n_items = 3;
	e.items = xcalloc(3, sizeof(*e.items));
	e.items[0] = (struct approval_item){ .kind = APPROVAL_FILE, .name = xstrdup("lua/high-cpu.lua") };
	strcpy(e.items[0].sha256, H1);
	e.items[1] = (struct approval_item){ .kind = APPROVAL_FILE, .name = xstrdup("recipes/high-cpu.yaml") };
	strcpy(e.items[1].sha256, yaml_sha);
	e.items[2] = (struct approval_item){ .kind = APPROVAL_BPF, .name = xstrdup("cpu_profile") };
	strcpy(e.items[2].sha256, H2);
	return e;
}

static void test_set_and_diff(void **state)
{
	(void)state;
	struct approval_lock *lock = parse_ok("[end]\n");
	struct approval_entry e = computed(H3, "0.1.0");
	assert_int_equal(approval_lock_set(lock, &e, "alice", "2026-11-29T11:00:00Z"), 1);
	assert_null(e.recipe); /* taken */
	char *first = approval_lock_format(lock);

	/* same content, other approver and date: the entry is kept as it was */
	e = computed(H3, "0.1.0");
	assert_int_equal(approval_lock_set(lock, &e, "bob", "2026-12-01T00:00:00Z"), 0);
	char *second = approval_lock_format(lock);
	assert_string_equal(first, second);

	/* no difference */
	e = computed(H3, "0.1.0");
	assert_null(approval_diff(approval_lock_find(lock, "high-cpu"), &e, "; "));
	approval_entry_free(&e);

	/* a changed file and a new engine */
	e = computed(H1, "0.2.0");
	char *d = approval_diff(approval_lock_find(lock, "high-cpu"), &e, "\n");
	assert_non_null(d);
	assert_string_equal(d, "engine: approved with 0.1.0, this binary is 0.2.0\n"
			       "recipes/high-cpu.yaml: sha256 approved abcdef012345, now 111111111111");
	free(d);
	/* an unreadable file is named with why */
	free(e.items[0].error);
	e.items[0].error = xstrdup("cannot read x: No such file or directory");
	e.items[0].sha256[0] = '\0';
	assert_string_equal(approval_entry_error(&e), "cannot read x: No such file or directory");
	d = approval_diff(approval_lock_find(lock, "high-cpu"), &e, "|");
	assert_non_null(strstr(d, "lua/high-cpu.lua: cannot read x"));
	free(d);
	approval_entry_free(&e);

	/* items present on one side only */
	e = computed(H3, "0.1.0");
	free(e.items[2].name);
	e.items[2].name = xstrdup("runq_latency");
	d = approval_diff(approval_lock_find(lock, "high-cpu"), &e, "|");
	assert_string_equal(d, "bpf object cpu_profile (built into this binary): approved (sha256 "
			       "222222222222) but no longer used or present|bpf object runq_latency (built "
			       "into this binary): used now but not approved (sha256 222222222222)");
	free(d);

	/* a changed entry is replaced, with the new approver and date */
	assert_int_equal(approval_lock_set(lock, &e, "carol", "2026-12-02T00:00:00Z"), 1);
	const struct approval_entry *now = approval_lock_find(lock, "high-cpu");
	assert_string_equal(now->approved_by, "carol");
	assert_string_equal(now->approved_at, "2026-12-02T00:00:00Z");

	/* a second recipe is added in name order */
	e = computed(H3, "0.1.0");
	free(e.recipe);
	e.recipe = xstrdup("a-first");
	assert_int_equal(approval_lock_set(lock, &e, "dave", "2026-12-03T00:00:00Z"), 1);
	assert_int_equal(lock->n, 2);
	assert_string_equal(lock->entries[0].recipe, "a-first");
	char *text = approval_lock_format(lock);
	struct approval_lock *back = parse_ok(text);
	char *text2 = approval_lock_format(back);
	assert_string_equal(text, text2);
	free(text);
	free(text2);
	approval_lock_free(back);
	free(first);
	free(second);
	approval_lock_free(lock);
}

static void test_adhoc(void **state)
{
	(void)state;
	assert_false(approval_is_adhoc("high-cpu"));
	assert_true(approval_is_adhoc("./high-cpu"));
	assert_true(approval_is_adhoc("high-cpu.yaml"));
	assert_true(approval_is_adhoc("/tmp/x/high-cpu.yaml"));
}

/* ---- policy + audit -------------------------------------------------------------------------- */

static int parse_policy_as(const char *text, bool from_env, struct policy *p, struct diag_err *err)
{
	char path[] = "/tmp/test_policy.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	int rc = policy_parse_file(path, from_env, p, err);
	if (rc == 0)
		assert_string_equal(p->files[p->n_files - 1], path);
	unlink(path);
	return rc;
}

static int parse_policy(const char *text, struct policy *p, struct diag_err *err)
{
	memset(p, 0, sizeof(*p));
	return parse_policy_as(text, false, p, err);
}

static void test_policy(void **state)
{
	(void)state;
	struct policy p;
	struct diag_err err = { 0 };
	assert_int_equal(parse_policy("# comment\nmode: production\naudit_file: /var/log/diagnose/audit.jsonl\n",
				      &p, &err), 0);
	assert_true(p.production);
	assert_int_equal(p.n_audit_files, 1);
	assert_string_equal(p.audit_files[0], "/var/log/diagnose/audit.jsonl");
	assert_null(p.recipes_dir);
	policy_free(&p);

	assert_int_equal(parse_policy("---\nmode: \"development\"\nrecipes_dir: /srv/recipes\n", &p, &err), 0);
	assert_false(p.production);
	assert_string_equal(p.recipes_dir, "/srv/recipes");
	policy_free(&p);

	static const struct {
		const char *text, *want; /* want: after "PATH" */
	} bad[] = {
		{ "mode: prod\n", ":1: mode: expected production or development, got \"prod\"" },
		{ "mode: production\nmode: development\n", ":2: key given twice: \"mode\"" },
		{ "mode: production\nextra: 1\n", ":2: unknown key (known: mode, audit_file, recipes_dir): \"extra\"" },
		{ "mode: production\naudit_file: relative.jsonl\n", ":2: audit_file: expected an absolute path" },
		{ "mode: [production]\n", ":1: expected a single text value for \"mode\"" },
		{ "mode: &a production\n", ":1: expected a single text value" },
		{ "- mode: production\n", ":1: the policy must be a mapping" },
		{ "", ":1: empty policy" },
		{ "audit_file: /x\n", ": mode: missing" },
		{ "mode: production\n---\nmode: development\n", ":2: only one YAML document is allowed" },
		{ "mode: production\n  x: [\n", ":" },
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		memset(&err, 0, sizeof(err));
		if (parse_policy(bad[i].text, &p, &err) != -1)
			fail_msg("policy case %zu parsed", i);
		assert_int_equal(err.code, DIAG_EXIT_USAGE);
		const char *rest = strstr(err.msg, "/tmp/test_policy.");
		assert_non_null(rest);
		rest += strlen("/tmp/test_policy.XXXXXX");
		if (strncmp(rest, bad[i].want, strlen(bad[i].want)))
			fail_msg("policy case %zu: got \"%s\", want \"...%s\"", i, err.msg, bad[i].want);
		policy_free(&p);
	}
}

/* A policy $DIAGNOSE_POLICY names only restricts: production on, audit files added (marked as
 * chosen by the environment), never a recipes_dir the system policy did not set. */
static void test_policy_from_env(void **state)
{
	(void)state;
	struct policy p;
	struct diag_err err = { 0 };
	memset(&p, 0, sizeof(p));
	assert_int_equal(parse_policy_as("mode: development\n", false, &p, &err), 0);
	assert_int_equal(parse_policy_as("mode: production\naudit_file: /var/log/d/a.jsonl\n", true, &p, &err), 0);
	assert_true(p.production);
	assert_int_equal(p.n_audit_files, 1);
	assert_true(p.audit_from_env[0]);
	policy_free(&p);

	/* it cannot turn production off */
	assert_int_equal(parse_policy_as("mode: production\naudit_file: /var/log/d/s.jsonl\n", false, &p, &err), 0);
	assert_int_equal(parse_policy_as("mode: development\n", true, &p, &err), 0);
	assert_true(p.production);
	assert_false(p.audit_from_env[0]);
	policy_free(&p);

	/* nor set or move the trust root */
	memset(&p, 0, sizeof(p));
	memset(&err, 0, sizeof(err));
	assert_int_equal(parse_policy_as("mode: production\nrecipes_dir: /srv/recipes\n", true, &p, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_non_null(strstr(err.msg, ":2: recipes_dir: only /etc/diagnose/policy.yaml sets production's trust root"));
	assert_null(p.recipes_dir);
	policy_free(&p);
	assert_int_equal(parse_policy_as("mode: production\nrecipes_dir: /srv/a\n", false, &p, &err), 0);
	assert_int_equal(parse_policy_as("mode: production\nrecipes_dir: /srv/a\n", true, &p, &err), 0);
	assert_string_equal(p.recipes_dir, "/srv/a"); /* naming the same one moves nothing */
	memset(&err, 0, sizeof(err));
	assert_int_equal(parse_policy_as("mode: production\nrecipes_dir: /srv/b\n", true, &p, &err), -1);
	assert_non_null(strstr(err.msg, "recipes_dir: only"));
	assert_string_equal(p.recipes_dir, "/srv/a");
	policy_free(&p);

	/* a policy on a pseudo file system is not read, whoever owns it */
	memset(&p, 0, sizeof(p));
	memset(&err, 0, sizeof(err));
	assert_int_equal(policy_parse_file("/proc/self/environ", true, &p, &err), -1);
	assert_non_null(strstr(err.msg, "/proc/self/environ: on procfs"));
	policy_free(&p);
}

static void test_audit_record(void **state)
{
	(void)state;
	struct value *report = value_obj();
	struct value *t = value_obj_set(report, "target", value_obj());
	value_set_int(t, "pid", 42);
	value_set_str(t, "comm", "server");
	value_set_str(t, "exe", "/usr/bin/server");
	value_set_num(report, "duration_s", 1.5);
	value_set_str(report, "stop_reason", "duration");
	value_set_num(value_obj_set(report, "overhead", value_obj()), "bpf_cpu_pct", 0.25);
	struct value *vs = value_obj_set(report, "verdicts", value_arr());
	value_set_str(value_arr_push(vs, value_obj()), "severity", "info");
	value_set_str(value_arr_push(vs, value_obj()), "severity", "critical");
	struct audit_event ev = { .action = "run", .symptom = "high-cpu", .recipe_name = "high-cpu",
				  .recipe_path = "recipes/high-cpu.yaml", .recipe_sha256 = H1,
				  .approved = true, .pid = 42, .duration_s = 1.5, .report = report,
				  .exit_code = 5 };
	struct value *r = audit_record(&ev, true);
	assert_string_equal(value_get_str(r, "mode"), "production");
	assert_string_equal(value_get_str(r, "action"), "run");
	assert_true(value_get(r, "approved")->b);
	assert_int_equal(value_get(r, "uid")->i, (int64_t)getuid());
	assert_string_equal(value_get_str(value_get(r, "recipe"), "sha256"), H1);
	assert_int_equal(value_get(value_get(r, "params"), "pid")->i, 42);
	assert_string_equal(value_get_str(value_get(r, "target"), "comm"), "server");
	assert_string_equal(value_get_str(r, "stop_reason"), "duration");
	assert_string_equal(value_get_str(r, "worst_verdict"), "critical");
	assert_true(value_get_num(r, "bpf_cpu_pct", -1) == 0.25);
	assert_int_equal(value_get(r, "exit")->i, 5);

	/* one line of JSON, through a file as the audit trail writes it (a new NAME.jsonl in a
	 * directory of our own: as root, where the environment may name one) */
	char dir[] = "/tmp/test_audit.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/audit.jsonl", dir);
	setenv("DIAGNOSE_AUDIT_FILE", path, 1);
	struct audit au;
	struct diag_err err = { 0 };
	assert_int_equal(audit_open(&au, NULL, false, &err), 0);
	ev.reason = "a \"quoted\"\nreason";
	ev.report = NULL;
	ev.action = "refused";
	assert_int_equal(audit_write(&au, &ev, &err), 0);
	assert_int_equal(audit_write(&au, &ev, &err), 0);
	audit_close(&au);
	size_t len;
	char *text = read_file(path, &len);
	assert_non_null(text);
	char *nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_ptr_equal(strchr(nl + 1, '\n'), text + len - 1); /* exactly two lines */
	assert_non_null(strstr(text, "\"reason\":\"a \\\"quoted\\\"\\nreason\""));
	assert_non_null(strstr(text, "\"target\":null"));
	free(text);
	/* the file is an audit log now: appended to again */
	assert_int_equal(audit_open(&au, NULL, false, &err), 0);
	assert_int_equal(au.n, 1);
	audit_close(&au);
	/* production takes its audit files from the policy alone: the variable is ignored, said */
	int prc = audit_open(&au, NULL, true, &err);
	assert_int_equal(prc, au.syslog_fd >= 0 ? 0 : -1); /* no audit file: syslog must be reachable */
	assert_int_equal(au.n, 0);
	assert_non_null(au.env_ignored);
	assert_string_equal(au.env_ignored, path);
	audit_close(&au);
	struct policy pol = { .n_audit_files = 1, .audit_files = { path } };
	memset(&err, 0, sizeof(err));
	assert_int_equal(audit_open(&au, &pol, true, &err), 0);
	assert_int_equal(au.n, 1);
	assert_null(au.env_ignored); /* the policy names that file itself: nothing to say */
	audit_close(&au);
	unlink(path);
	rmdir(dir);
	free(path);
	/* an audit file that cannot be opened */
	setenv("DIAGNOSE_AUDIT_FILE", "/nonexistent-dir/audit.jsonl", 1);
	memset(&err, 0, sizeof(err));
	assert_int_equal(audit_open(&au, NULL, false, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_REFUSED);
	assert_non_null(strstr(err.msg, "/nonexistent-dir/audit.jsonl"));
	audit_close(&au);
	unsetenv("DIAGNOSE_AUDIT_FILE");
	value_free(r);
	value_free(report);
}

/* Audit files are appended to as root: never through a symlink, never someone else's file. */
static void test_audit_file_checks(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_audit_dir.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *target = xasprintf("%s/target", dir), *link = xasprintf("%s/link.jsonl", dir);
	char *loose = xasprintf("%s/loose.jsonl", dir);
	FILE *f = fopen(target, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(symlink(target, link), 0);
	struct audit au;
	struct diag_err err = { 0 };
	setenv("DIAGNOSE_AUDIT_FILE", link, 1);
	assert_int_equal(audit_open(&au, NULL, false, &err), -1);
	assert_non_null(strstr(err.msg, "a symbolic link (not followed)"));
	audit_close(&au);
	f = fopen(loose, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(loose, 0666), 0);
	setenv("DIAGNOSE_AUDIT_FILE", loose, 1);
	memset(&err, 0, sizeof(err));
	assert_int_equal(audit_open(&au, NULL, false, &err), -1);
	assert_non_null(strstr(err.msg, "group- or world-writable"));
	audit_close(&au);
	/* A FIFO must be refused at once, not waited on. */
	unlink(loose);
	assert_int_equal(mkfifo(loose, 0600), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(audit_open(&au, NULL, false, &err), -1);
	/* (with no reader, opening it for writing fails at once with ENXIO; with one, fstat says
	 * it is not a regular file) */
	assert_non_null(strstr(err.msg, loose));
	audit_close(&au);
	unsetenv("DIAGNOSE_AUDIT_FILE");
	struct stat st;
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0); /* nothing went through the link */
	unlink(target);
	unlink(link);
	unlink(loose);
	rmdir(dir);
	free(target);
	free(link);
	free(loose);
}

static int open_env(const char *path, bool production, struct audit *au, struct diag_err *err)
{
	setenv("DIAGNOSE_AUDIT_FILE", path, 1);
	memset(err, 0, sizeof(*err));
	int rc = audit_open(au, NULL, production, err);
	unsetenv("DIAGNOSE_AUDIT_FILE");
	return rc;
}

static void expect_refused(const char *path, const char *why)
{
	struct audit au;
	struct diag_err err;
	if (open_env(path, false, &au, &err) != -1 || !strstr(err.msg, why))
		fail_msg("%s: want refused with \"%s\", got \"%s\"", path, why, err.msg);
	assert_int_equal(au.n, 0);
	audit_close(&au);
}

/* As root, an audit path the environment names cannot aim root's appends at code or
 * configuration: NAME.jsonl only, in a directory root alone can change, new or an audit log. */
static void test_audit_env_paths(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* the rules are root's; as anyone else a file is written with their own rights */
	char dir[] = "/tmp/test_audit_env.XXXXXX";
	assert_non_null(mkdtemp(dir)); /* root's, 0700, in a root-owned sticky /tmp: allowed */
	char *p[8];
	p[0] = xasprintf("%s/zz.sh", dir);
	p[1] = xasprintf("%s/passwd.jsonl", dir);
	p[2] = xasprintf("%s/audit.jsonl", dir);
	p[3] = xasprintf("%s/hard.jsonl", dir);
	p[4] = xasprintf("%s/ww", dir);
	p[5] = xasprintf("%s/ww/audit.jsonl", dir);
	p[6] = xasprintf("%s/link", dir);
	p[7] = xasprintf("%s/link/new.jsonl", dir);

	expect_refused(p[0], "must be called NAME.jsonl");
	expect_refused("relative.jsonl", "not an absolute path");
	FILE *f = fopen(p[1], "w");
	assert_non_null(f);
	fputs("root:x:0:0:root:/root:/bin/bash\n", f);
	fclose(f);
	expect_refused(p[1], "is not a diagnose audit log");

	/* created new, 0640; then, an audit log, appended to */
	struct audit au;
	struct diag_err err;
	assert_int_equal(open_env(p[2], false, &au, &err), 0);
	assert_int_equal(au.n, 1);
	struct audit_event ev = { .action = "run", .symptom = "x" };
	assert_int_equal(audit_write(&au, &ev, &err), 0);
	audit_close(&au);
	struct stat st;
	assert_int_equal(stat(p[2], &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(open_env(p[2], false, &au, &err), 0);
	assert_int_equal(au.n, 1);
	audit_close(&au);
	assert_int_equal(link(p[2], p[3]), 0);
	expect_refused(p[3], "other hard links");
	expect_refused(p[2], "other hard links");
	unlink(p[3]);

	/* a directory others can write, or a path through a symbolic link */
	assert_int_equal(mkdir(p[4], 0777), 0);
	assert_int_equal(chmod(p[4], 0777), 0);
	expect_refused(p[5], "group- or world-writable");
	assert_int_equal(access(p[5], F_OK), -1);
	assert_int_equal(symlink(dir, p[6]), 0);
	expect_refused(p[7], "is not a real path");
	char *dots = xasprintf("%s/ww/../new.jsonl", dir);
	expect_refused(dots, "is not a real path");
	free(dots);

	/* a policy's own audit_file (root wrote the policy) keeps the ordinary rules */
	char *log = xasprintf("%s/ww/trail.log", dir);
	struct policy pol = { .n_audit_files = 1, .audit_files = { log } };
	memset(&err, 0, sizeof(err));
	assert_int_equal(audit_open(&au, &pol, false, &err), 0);
	assert_int_equal(au.n, 1);
	audit_close(&au);
	/* ... unless the environment chose the policy */
	pol.audit_from_env[0] = true;
	memset(&err, 0, sizeof(err));
	assert_int_equal(audit_open(&au, &pol, false, &err), -1);
	assert_non_null(strstr(err.msg, "audit_file of $DIAGNOSE_POLICY"));
	audit_close(&au);
	unlink(log);
	free(log);

	unlink(p[6]);
	rmdir(p[4]);
	unlink(p[2]);
	unlink(p[1]);
	rmdir(dir);
	for (size_t i = 0; i < ARRAY_LEN(p); i++)
		free(p[i]);
}

/* The lock writer and its parser agree on what the lock can hold: an entry approval_entry_problem
 * accepts is one the parser reads back, and one it refuses the writer does not write. */
static void test_writer_agrees_with_parser(void **state)
{
	(void)state;
	static const struct {
		int field; /* 0 a file name, 1 the recipe name, 2 the approver */
		const char *value;
	} cases[] = {
		{ 0, "lua/lib/a b.lua" }, { 0, "lua/lib/ok.lua" },   { 0, "../lua/x.lua" },
		{ 0, "lua/\tx.lua" },     { 0, "lua/lib/\xc3\xa9.lua" }, { 0, "lua/a/../../x.lua" },
		{ 0, "/etc/x.lua" },      { 0, "lua/lib/x\x7f.lua" },   { 1, "High-CPU" },
		{ 1, "ok-name-2" },       { 1, "a b" },
		{ 1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }, /* 65 */
		{ 2, " padded" },         { 2, "alice smith" },         { 2, "x\x1b[31m" },
	};
	char dir[] = "/tmp/test_lock_agree.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *lock_path = xasprintf("%s/approved.lock", dir);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct approval_lock *lock, *back = NULL;
		struct diag_err err = { 0 };
		assert_int_equal(approval_lock_parse("x", CANONICAL, strlen(CANONICAL), &lock, &err), 0);
		struct approval_entry *e = &lock->entries[0];
		char **slot = cases[i].field == 0 ? &e->items[1].name : cases[i].field == 1 ? &e->recipe
												: &e->approved_by;
		free(*slot);
		*slot = xstrdup(cases[i].value);
		char why[400] = "";
		bool ok = approval_entry_problem(e, why, sizeof(why)) == 0;
		char *text = approval_lock_format(lock);
		bool parsed = approval_lock_parse("x", text, strlen(text), &back, &err) == 0;
		if (ok != parsed)
			fail_msg("case %zu \"%s\": writer says %s, parser says %s (%s)", i, cases[i].value,
				 ok ? "valid" : why, parsed ? "valid" : err.msg, why);
		memset(&err, 0, sizeof(err));
		unlink(lock_path);
		assert_int_equal(approval_lock_write(lock, lock_path, &err), ok ? 0 : -1);
		assert_int_equal(access(lock_path, F_OK), ok ? 0 : -1); /* refused: nothing written */
		if (!ok)
			assert_non_null(strstr(err.msg, "cannot go in the approvals lock"));
		free(text);
		approval_lock_free(back);
		approval_lock_free(lock);
	}
	unlink(lock_path);
	rmdir(dir);
	free(lock_path);
}

/* Writing the lock replaces a symlink planted at its path instead of writing through it, and
 * leaves no temporary file behind. */
static void test_lock_write_symlink(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_lock_dir.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *victim = xasprintf("%s/victim", dir), *lock_path = xasprintf("%s/approved.lock", dir);
	FILE *f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);
	assert_int_equal(symlink(victim, lock_path), 0);
	struct approval_lock *lock;
	struct diag_err err = { 0 };
	assert_int_equal(approval_lock_parse("x", CANONICAL, strlen(CANONICAL), &lock, &err), 0);
	assert_int_equal(approval_lock_write(lock, lock_path, &err), 0);
	size_t len;
	char *text = read_file(victim, &len);
	assert_string_equal(text, "precious\n");
	free(text);
	struct stat st;
	assert_int_equal(lstat(lock_path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0644);
	text = read_file(lock_path, &len);
	assert_string_equal(text, CANONICAL);
	free(text);
	DIR *d = opendir(dir);
	int entries = 0;
	for (struct dirent *e; (e = readdir(d));)
		entries += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(entries, 2); /* victim + lock: no temporary left */
	approval_lock_free(lock);
	unlink(victim);
	unlink(lock_path);
	rmdir(dir);
	free(victim);
	free(lock_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_write_read_file),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_set_and_diff),
		cmocka_unit_test(test_adhoc),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_policy_from_env),
		cmocka_unit_test(test_audit_record),
		cmocka_unit_test(test_audit_file_checks),
		cmocka_unit_test(test_audit_env_paths),
		cmocka_unit_test(test_writer_agrees_with_parser),
		cmocka_unit_test(test_lock_write_symlink),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
