/* snippet.c — runs a recipe's Lua libraries and snippet in the sandbox, in this process.
 *
 * Owns: the two stages in one state (snippet.h): stage 1 sets `thresholds`, runs lua/lib/NAME.lua
 * in order (a library returning a table becomes the global NAME) and compiles the snippet, text
 * chunks only, loaded from the bytes that were hashed; stage 2 sets `results` and `run` and runs
 * the snippet; thresholds typed from YAML text; Lua errors as one-line messages;
 * verdict_run_inprocess and the syntax checks of lint.
 * Must not: fork (verdict.c does), print, or read anything but the sources it is given.
 *
 * Every Lua API call that can raise runs inside lua_pcall (run_stage), so an error, the memory
 * cap or the instruction limit always ends as a clean -1; reading the answer back runs outside it
 * (lua_value.c). Time inside one C library call is invisible to the instruction hook: only the
 * child's deadline (verdict_run) bounds it, so verdict_run_inprocess is for tests and the fuzzer.
 */

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "verdict/answer.h"
#include "verdict/lua_value.h"
#include "verdict/sandbox.h"
#include "verdict/snippet.h"

/* ---- running the chunks ----------------------------------------------------------------- */

struct run_ctx {
	const struct verdict_input *in;
	const struct value *results, *thresholds, *run;
	const char *current; /* chunk being run, for errors that carry no position */
};

static int message_handler(lua_State *L)
{
	if (lua_type(L, 1) == LUA_TSTRING)
		return 1;
	if (lua_type(L, 1) == LUA_TNUMBER || luaL_callmeta(L, 1, "__tostring")) {
		if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
			lua_tostring(L, -1);
			return 1;
		}
	}
	lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	return 1;
}

/* Loads one text chunk from the bytes that were hashed ("@PATH" names it in messages). */
static int load_source(lua_State *L, const struct source_file *f)
{
	lua_pushfstring(L, "@%s", f->path);
	int rc = luaL_loadbufferx(L, f->data, f->len, lua_tostring(L, -1), "t");
	lua_remove(L, -2);
	return rc;
}

/* Loads and runs one text chunk, leaving its first result on the stack. */
static void run_chunk(lua_State *L, struct run_ctx *ctx, const struct source_file *f)
{
	ctx->current = f->path;
	if (load_source(L, f) != LUA_OK)
		lua_error(L);
	lua_call(L, 0, 1);
}

static void lib_global_name(lua_State *L, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	lua_pushlstring(L, base, strlen(base) - 4); /* minus ".lua" */
}

/* Stage 1 (verdict_prepare): the state's libraries and the thresholds, each lua/lib/NAME.lua run in
 * order, the snippet compiled: returns the snippet's function. Nothing here sees results or run:
 * a library reads them when its functions are called, never while it loads. */
static int prepare_main(lua_State *L)
{
	struct run_ctx *ctx = lua_touserdata(L, 1);

	sandbox_open_libs(L);
	proxies_init(L);
	proxy_push_value(L, ctx->thresholds);
	lua_setglobal(L, "thresholds");

	for (size_t i = 0; i < ctx->in->n_libs; i++) {
		run_chunk(L, ctx, &ctx->in->libs[i]);
		if (lua_istable(L, -1)) { /* lua/lib/diag.lua returning a table → global diag */
			lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
			lib_global_name(L, ctx->in->libs[i].path);
			lua_pushvalue(L, -3);
			lua_rawset(L, -3);
			lua_pop(L, 1);
		}
		lua_pop(L, 1);
	}
	ctx->current = ctx->in->lua->path;
	if (load_source(L, ctx->in->lua) != LUA_OK)
		lua_error(L);
	return 1;
}

/* Stage 2 (verdict_answer): results and run as globals, the snippet (argument 2) called. */
static int answer_main(lua_State *L)
{
	struct run_ctx *ctx = lua_touserdata(L, 1);

	proxy_push_value(L, ctx->results);
	lua_setglobal(L, "results");
	proxy_push_value(L, ctx->run);
	lua_setglobal(L, "run");
	ctx->current = ctx->in->lua->path;
	lua_pushvalue(L, 2);
	lua_call(L, 0, 1);
	return 1;
}

/* Thresholds come as text from YAML: numbers become numbers, the rest stays text. */
static struct value *typed_thresholds(const struct value *th)
{
	struct value *out = value_obj();
	if (!th || th->type != V_OBJ)
		return out;
	for (size_t i = 0; i < th->obj.len; i++) {
		const struct value *v = th->obj.vals[i];
		struct value *c = NULL;
		if (v->type == V_STR && v->s[0]) {
			char *end;
			errno = 0;
			long long ll = strtoll(v->s, &end, 10);
			if (!*end && !errno) {
				c = value_int(ll);
			} else {
				double d = strtod(v->s, &end);
				if (!*end && isfinite(d))
					c = value_num(d);
			}
		}
		value_obj_set(out, th->obj.keys[i], c ? c : value_copy(v));
	}
	return out;
}
/* The answer's optional field `name` of the table at t into *out (NULL when absent), within the
 * budget. 0, or -1 with err. */
static int read_field(struct conv *c, int t, const char *name, struct value **out)
{
	lua_State *L = c->L;
	*out = NULL;
	lua_raw_field(L, t, name);
	snprintf(c->path, sizeof(c->path), "%s", name);
	if (!lua_isnil(L, -1))
		*out = lua_to_value(c, lua_gettop(L), 1);
	bool failed = !lua_isnil(L, -1) && !*out;
	lua_settop(L, t);
	return failed ? -1 : 0;
}

/* The snippet's return value is at the top of the stack. */
static int read_answer(lua_State *L, const struct verdict_input *in, struct verdict_answer *out,
		       struct diag_err *err)
{
	const char *chunk = in->lua->path;
	int t = lua_gettop(L);
	if (lua_type(L, t) != LUA_TTABLE || proxy_target(L, t))
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "%s: must return a table { verdicts = {...}, report = {...} }, got %s",
				 chunk, luaL_typename(L, t));

	struct conv c = { .L = L, .chunk = chunk, .err = err };
	c.max_nodes = c.nodes_left = in->max_nodes ? in->max_nodes : VERDICT_DEFAULT_MAX_NODES;
	c.max_bytes = c.bytes_left = in->max_text_bytes ? in->max_text_bytes
							: VERDICT_DEFAULT_MAX_TEXT_BYTES;
	struct verdict_answer raw = { 0 };
	if (read_field(&c, t, "verdicts", &raw.verdicts))
		return -1;
	if (!raw.verdicts)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts: missing", chunk);
	if (read_field(&c, t, "report", &raw.report) || read_field(&c, t, "ruled_out", &raw.ruled_out) ||
	    read_field(&c, t, "metrics", &raw.metrics)) {
		verdict_answer_free(&raw);
		return -1;
	}
	return answer_check(chunk, &raw, out, err);
}

/* ---- in this process ----------------------------------------------------------------------- */

/* A Lua error as a message: the snippet chose its bytes, NULs included (kept as spaces, not as
 * the end of the text), and it may be empty. */
static void lua_error_message(struct diag_err *err, const char *chunk, const char *msg, size_t len)
{
	char buf[sizeof(err->msg)];
	size_t n = 0;
	for (size_t i = 0; msg && i < len && n + 1 < sizeof(buf); i++)
		buf[n++] = msg[i] ? msg[i] : ' ';
	buf[n] = '\0';
	if (!msg)
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: error in error handling", chunk);
	else if (!n)
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: error with an empty message", chunk);
	else
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s", buf);
}

static const struct value empty_obj = { .type = V_OBJ };

/* A state between its stages: the snippet's function at stack index 1 once prepared. */
struct verdict_state {
	struct sandbox sb;
	lua_State *L;
	struct run_ctx ctx;
	struct value *thresholds; /* typed: what ctx.thresholds points to */
	struct diag_err failed;   /* stage 1's error, given back by verdict_answer; code 0 when none */
};

/* One stage under lua_pcall with the message handler; its result left at the stack's top. 0, or
 * -1 with err set (the Lua error, the memory cap). */
static int run_stage(struct verdict_state *st, lua_CFunction stage, int extra_arg, struct diag_err *err)
{
	lua_State *L = st->L;
	int base = lua_gettop(L);
	lua_pushcfunction(L, message_handler);
	lua_pushcfunction(L, stage);
	lua_pushlightuserdata(L, &st->ctx);
	int nargs = 1;
	if (extra_arg) {
		lua_pushvalue(L, extra_arg);
		nargs++;
	}
	int status = lua_pcall(L, nargs, 1, base + 1);
	lua_remove(L, base + 1); /* the handler */
	if (status == LUA_OK)
		return 0;
	const char *chunk = st->ctx.in->lua->path;
	if (status == LUA_ERRMEM) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s", st->ctx.current ? st->ctx.current : chunk,
			  st->sb.mem_hit ? "memory limit exceeded" : "out of memory");
	} else {
		size_t len = 0;
		const char *msg = lua_tolstring(L, -1, &len);
		lua_error_message(err, chunk, msg, len);
	}
	lua_settop(L, base);
	return -1;
}

struct verdict_state *verdict_prepare(const struct verdict_input *in)
{
	struct verdict_state *st = xcalloc(1, sizeof(*st));
	st->thresholds = typed_thresholds(in->thresholds);
	st->ctx = (struct run_ctx){ .in = in, .thresholds = st->thresholds };
	st->L = sandbox_new(&st->sb, in->max_memory_bytes, in->max_instructions);
	if (!st->L)
		diag_fail(&st->failed, DIAG_EXIT_RUNTIME, "%s: cannot create a Lua state (memory cap %zu bytes)",
			  in->lua->path, st->sb.limit);
	else
		run_stage(st, prepare_main, 0, &st->failed); /* the snippet's function at index 1 */
	return st;
}

int verdict_answer(struct verdict_state *st, const struct value *results, const struct value *run,
		   struct verdict_answer *out, struct diag_err *err)
{
	*out = (struct verdict_answer){ 0 };
	if (st->failed.code) {
		*err = st->failed;
		return -1;
	}
	st->ctx.results = results ? results : &empty_obj;
	st->ctx.run = run ? run : &empty_obj;
	if (run_stage(st, answer_main, 1, err))
		return -1;
	return read_answer(st->L, st->ctx.in, out, err);
}

void verdict_state_free(struct verdict_state *st)
{
	if (!st)
		return;
	if (st->L)
		lua_close(st->L);
	value_free(st->thresholds);
	free(st);
}

int verdict_run_inprocess(const struct verdict_input *in, struct verdict_answer *out,
			  struct diag_err *err)
{
	struct verdict_state *st = verdict_prepare(in);
	int rc = verdict_answer(st, in->results, in->run, out, err);
	verdict_state_free(st);
	return rc; /* diag_fail keeps messages on one line, without control characters */
}

static int check_main(lua_State *L)
{
	if (load_source(L, lua_touserdata(L, 1)) != LUA_OK)
		lua_error(L);
	return 0;
}

int verdict_check_syntax(const struct source_file *lua, struct diag_err *err)
{
	struct sandbox sb;
	lua_State *L = sandbox_new(&sb, 0, 0);
	if (!L)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot create a Lua state", lua->path);
	lua_pushcfunction(L, check_main);
	lua_pushlightuserdata(L, (void *)lua);
	int status = lua_pcall(L, 1, 0, 0);
	int rc = 0;
	if (status != LUA_OK) {
		const char *msg = lua_tostring(L, -1);
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s", msg ? msg : "cannot load");
	}
	lua_close(L);
	return rc;
}

int verdict_check_sources(const struct recipe_sources *src, struct diag_err *err)
{
	for (size_t i = 0; i < src->n_libs; i++)
		if (verdict_check_syntax(&src->libs[i], err))
			return -1;
	return verdict_check_syntax(&src->lua, err);
}
