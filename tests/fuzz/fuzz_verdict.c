/* fuzz_verdict.c — libFuzzer harness for the Lua verdict layer (engine/verdict/): the sandbox,
 * the read-only result proxies and, above all, the bounded Lua → struct value conversion
 * (sandbox.c, snippet.c, lua_value.c, answer.c).
 *
 * Each input is a Lua snippet's bytes, run by verdict_run_inprocess (no fork: the fuzzer needs
 * the coverage) with small limits over a small results tree. Contract: no crash, leak or
 * undefined behaviour; on failure err.code is DIAG_EXIT_RUNTIME, the message is one non-empty
 * line without control characters, and nothing is returned; on success verdicts and report
 * are arrays, the verdicts well-formed and sorted worst first, every report section has a string
 * kind, the whole answer is within the node and text budget, and what value_write_json writes
 * of it is read back by json_parse (the way the real child's answer travels).
 *
 * In process, the only bound on time is the instruction limit, which does not see inside one C
 * library call (production's child process has a deadline for that). So that libFuzzer's
 * -timeout finds real hangs, not this known class, a prelude (run as a library before the
 * snippet) keeps pattern matching and table.unpack small: patterns of at most one quantifier on
 * subjects of at most 64 bytes, at most 256 values unpacked.
 *
 * Build and run: make fuzz FUZZ_TARGET=verdict (see tests/fuzz/README.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_parse.h"
#include "verdict/verdict.h"

#define NAME "fuzz.lua"
#define MAX_NODES 2000
#define MAX_TEXT (32u << 10)

#define FUZZ_NAME "fuzz_verdict"
#include "fuzz.h"

static const char prelude_text[] =
	"local byte, tostr, err = string.byte, tostring, error\n"
	"local function check(s, p, plain)\n"
	"  s, p = tostr(s), tostr(p)\n"
	"  if #s > 64 or #p > 32 then err('fuzz prelude: subject or pattern too long', 3) end\n"
	"  if plain then return end\n"
	"  local q = 0\n"
	"  for i = 1, #p do\n"
	"    local c = byte(p, i)\n"
	"    if c == 42 or c == 43 or c == 45 or c == 63 then q = q + 1 end\n"
	"  end\n"
	"  if q > 1 then err('fuzz prelude: more than one quantifier', 3) end\n"
	"end\n"
	"local find, match, gmatch, gsub = string.find, string.match, string.gmatch, string.gsub\n"
	"string.find = function(s, p, i, plain) check(s, p, plain) return find(s, p, i, plain) end\n"
	"string.match = function(s, p, i) check(s, p) return match(s, p, i) end\n"
	"string.gmatch = function(s, p, i) check(s, p) return gmatch(s, p, i) end\n"
	"string.gsub = function(s, p, r, n) check(s, p) return gsub(s, p, r, n) end\n"
	"local unpack = table.unpack\n"
	"table.unpack = function(t, i, j)\n"
	"  i = i or 1\n"
	"  j = j or #t\n"
	"  if j - i > 256 then err('fuzz prelude: too many values to unpack', 2) end\n"
	"  return unpack(t, i, j)\n"
	"end\n";

static struct value *results, *thresholds, *run;
static struct source_file prelude;

static void build_inputs(void)
{
	results = value_obj();
	struct value *p = value_obj_set(results, "profile", value_obj());
	value_set_int(p, "samples", 10);
	value_set_num(p, "ratio", 0.25);
	value_set_bool(p, "partial", false);
	struct value *stacks = value_obj_set(p, "stacks", value_arr());
	for (int i = 0; i < 3; i++) {
		struct value *s = value_arr_push(stacks, value_obj());
		value_set_int(s, "count", 3 - i);
		value_set_str(s, "comm", i ? "worker" : "bad\x01name\xff");
		struct value *u = value_obj_set(s, "user", value_arr());
		value_arr_push(u, value_str("leaf"));
		value_arr_push(u, value_str("main"));
	}
	value_obj_set(results, "empty", value_obj());
	value_obj_set(results, "none", value_null());
	thresholds = value_obj();
	value_set_str(thresholds, "mode", "values");
	value_set_str(thresholds, "n", "5");
	value_set_str(thresholds, "x", "2.5");
	run = value_obj();
	value_set_str(run, "stop_reason", "duration");
	value_set_num(run, "duration_s", 5.0);

	prelude.path = "fuzz_prelude.lua";
	prelude.data = (char *)prelude_text;
	prelude.len = sizeof(prelude_text) - 1;
}

static size_t count_nodes(const struct value *v, size_t *bytes)
{
	size_t n = 1;
	if (v->type == V_STR)
		*bytes += strlen(v->s);
	for (size_t i = 0; v->type == V_ARR && i < v->arr.len; i++)
		n += count_nodes(v->arr.items[i], bytes);
	for (size_t i = 0; v->type == V_OBJ && i < v->obj.len; i++) {
		*bytes += strlen(v->obj.keys[i]);
		n += count_nodes(v->obj.vals[i], bytes);
	}
	return n;
}

static void check_json_round_trip(const struct value *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f);
	value_write_json(v, f, -1);
	fclose(f);
	struct diag_err err = { 0 };
	struct json_limits lim = { .raw_bytes = true };
	struct value *back = json_parse(text, len, &lim, &err);
	if (!back)
		fprintf(stderr, "fuzz_verdict: json_parse: %s\n", err.msg);
	CHECK(back != NULL);
	value_free(back);
	free(text);
}

static void check_answer(const struct verdict_answer *a)
{
	const struct value *verdicts = a->verdicts, *report = a->report, *ruled_out = a->ruled_out;
	const struct value *metrics = a->metrics;
	CHECK(verdicts && verdicts->type == V_ARR);
	CHECK(metrics && metrics->type == V_ARR);
	CHECK(report && report->type == V_ARR);
	CHECK(ruled_out && ruled_out->type == V_ARR);
	enum severity prev = SEV_CRITICAL;
	for (size_t i = 0; i < verdicts->arr.len; i++) {
		const struct value *v = verdicts->arr.items[i];
		CHECK(v->type == V_OBJ && v->obj.len == 5);
		int ok;
		enum severity s = severity_parse(value_get_str(v, "severity"), &ok);
		CHECK(ok && s <= prev);
		prev = s;
		CHECK(value_get_str(v, "id") && value_get_str(v, "id")[0]);
		CHECK(value_get_str(v, "title") && value_get_str(v, "title")[0]);
		CHECK(value_get(v, "evidence")->type == V_ARR);
		CHECK(value_get(v, "next_steps")->type == V_ARR);
	}
	for (size_t i = 0; i < report->arr.len; i++)
		CHECK(value_get_str(report->arr.items[i], "kind") != NULL);
	for (size_t i = 0; i < ruled_out->arr.len; i++) {
		const struct value *r = ruled_out->arr.items[i];
		CHECK(r->type == V_OBJ && r->obj.len == 2);
		CHECK(value_get_str(r, "id") && value_get_str(r, "id")[0]);
		CHECK(value_get_str(r, "text") && !strchr(value_get_str(r, "text"), '\n'));
	}
	for (size_t i = 0; i < metrics->arr.len; i++) { /* {name, value, help}, the name a unit's */
		const struct value *m = metrics->arr.items[i];
		CHECK(m->type == V_OBJ && m->obj.len == 3);
		CHECK(value_get_str(m, "name") && value_get_str(m, "name")[0]);
		CHECK(value_get(m, "value") && value_get(m, "value")->type == V_NUM);
		CHECK(value_get_str(m, "help") && !strchr(value_get_str(m, "help"), '\n'));
	}
	size_t bytes = 0;
	size_t nodes = count_nodes(verdicts, &bytes) + count_nodes(report, &bytes) +
		       count_nodes(ruled_out, &bytes);
	CHECK(nodes <= MAX_NODES);
	CHECK(bytes <= MAX_TEXT);
	check_json_round_trip(verdicts);
	check_json_round_trip(report);
	check_json_round_trip(ruled_out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!results)
		build_inputs();
	/* The engine hands over a NUL-terminated copy (struct source_file); Lua is given the length. */
	struct source_file lua = { .path = NAME, .len = size };
	lua.data = malloc(size + 1);
	if (!lua.data)
		return 0;
	if (size)
		memcpy(lua.data, data, size);
	lua.data[size] = '\0';

	struct verdict_input in = {
		.lua = &lua, .libs = &prelude, .n_libs = 1, .results = results,
		.thresholds = thresholds, .run = run, .max_instructions = 20000,
		.max_memory_bytes = 256u << 10, .max_nodes = MAX_NODES, .max_text_bytes = MAX_TEXT,
	};
	struct verdict_answer answer = { (struct value *)1, (struct value *)1, (struct value *)1,
					 (struct value *)1 };
	struct diag_err err = { 0 };
	int rc = verdict_run_inprocess(&in, &answer, &err);
	if (rc == 0) {
		check_answer(&answer);
	} else {
		CHECK(rc == -1);
		CHECK(!answer.verdicts && !answer.report && !answer.ruled_out && !answer.metrics);
		CHECK(err.code == DIAG_EXIT_RUNTIME);
		CHECK(err.msg[0]);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		for (const char *p = err.msg; *p; p++) /* one line, whatever error() was given */
			CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
	}
	verdict_answer_free(&answer);
	free(lua.data);
	return 0;
}
