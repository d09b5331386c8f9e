/* verdict.c — runs a recipe's Lua snippet in a fresh sandbox, in a child process, and checks what
 * it returns.
 *
 * Owns: the sandboxed lua_State (capped allocator, instruction-count hook, the allowed standard
 * libraries minus the dangerous functions), loading lua/lib/NAME.lua and the snippet (text chunks
 * only), read-only proxies over struct value trees, converting the returned verdicts and report
 * back to struct value within a node and text budget, validated and sorted worst first; the child
 * process that does all of this under a deadline, and the pipe protocol that brings its answer
 * back (described above verdict_run).
 * Must not: print, read anything but the Lua sources it is given, interpret results (what a
 * number means is the snippet's business), or return with its child still alive.
 *
 * Safety notes. Every Lua API call that can raise runs inside lua_pcall (sandbox_main), so an
 * error, the memory cap or the instruction limit always ends as a clean -1. The conversion back to
 * C runs outside it and therefore uses only raw accessors that neither raise, allocate nor run Lua
 * code (lua_next, lua_rawgeti, lua_checkstack). A NUL byte inside a string (C strings end there)
 * comes back as the visible "\x00", never as a cut string. Lua runs __gc finalizers with hooks off,
 * so setmetatable refuses metatables with __gc. Time spent inside one C library call (a
 * backtracking string.find, string.rep, table.unpack over a proxy) is invisible to the instruction
 * hook: only the child's deadline bounds it, so verdict_run_inprocess is for tests and the fuzzer.
 */
#include "verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "json_parse.h"

#define HOOK_EVERY 10000      /* instructions between two hook calls */
#define MAX_DEPTH 16          /* nesting of the returned tables */

/* ---- the sandbox: allocator with a cap, instruction limit --------------------------------- */

struct sandbox {
	size_t used, limit;     /* bytes */
	size_t steps, max_steps; /* instructions */
	bool mem_hit;           /* the cap refused an allocation at least once */
};

/* lua_Alloc. When ptr is NULL, osize is a type tag, not a size: nothing was allocated before. */
static void *sandbox_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct sandbox *sb = ud;
	size_t old = ptr ? osize : 0;

	if (nsize == 0) {
		free(ptr);
		sb->used -= old;
		return NULL;
	}
	if (nsize > old && nsize - old > sb->limit - sb->used) {
		sb->mem_hit = true;
		return NULL;
	}
	void *p = realloc(ptr, nsize);
	if (!p)
		return NULL;
	sb->used = sb->used - old + nsize;
	return p;
}

static struct sandbox *sandbox_of(lua_State *L)
{
	void *ud;
	lua_getallocf(L, &ud);
	return ud;
}

static void count_hook(lua_State *L, lua_Debug *ar)
{
	struct sandbox *sb = sandbox_of(L);

	sb->steps += HOOK_EVERY;
	if (sb->steps <= sb->max_steps)
		return;
	/* From now on fire on every instruction: a pcall in the snippet may catch this error, but
	 * the first instruction after it raises again, so the limit cannot be swallowed. */
	lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
	lua_getinfo(L, "Sl", ar);
	if (ar->currentline > 0)
		lua_pushfstring(L, "%s:%d: instruction limit exceeded", ar->short_src, ar->currentline);
	else
		lua_pushfstring(L, "%s: instruction limit exceeded", ar->short_src);
	lua_error(L);
}

static lua_State *sandbox_new(struct sandbox *sb, size_t max_mem, size_t max_steps)
{
	*sb = (struct sandbox){ .limit = max_mem ? max_mem : VERDICT_DEFAULT_MAX_MEMORY,
				.max_steps = max_steps ? max_steps : VERDICT_DEFAULT_MAX_INSTRUCTIONS };
	lua_State *L = lua_newstate(sandbox_alloc, sb);
	if (L)
		lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_EVERY);
	return L;
}

/* string.rep(s, n) with s == "" and a huge n loops in C without running an instruction. */
static int safe_rep(lua_State *L)
{
	size_t l, lsep;
	luaL_checklstring(L, 1, &l);
	lua_Integer n = luaL_checkinteger(L, 2);
	luaL_optlstring(L, 3, "", &lsep);
	if (n > 0 && l + lsep == 0) {
		lua_pushliteral(L, "");
		return 1;
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return 1;
}

/* setmetatable refusing __gc: Lua runs finalizers with hooks off, so one that loops would never
 * meet the instruction limit. An object is only marked for finalization when its metatable has
 * __gc at setmetatable time, so checking here is enough. */
static int safe_setmetatable(lua_State *L)
{
	if (lua_type(L, 2) == LUA_TTABLE) {
		lua_pushliteral(L, "__gc");
		if (lua_rawget(L, 2) != LUA_TNIL)
			return luaL_error(L, "__gc metamethods are not allowed here");
		lua_pop(L, 1);
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return 1;
}

/* Replaces t[name] (t at the top of the stack) with f wrapping the original as upvalue 1. */
static void wrap(lua_State *L, const char *name, lua_CFunction f)
{
	lua_getfield(L, -1, name);
	lua_pushcclosure(L, f, 1);
	lua_setfield(L, -2, name);
}

static void open_libs(lua_State *L)
{
	static const luaL_Reg libs[] = {
		{ LUA_GNAME, luaopen_base },     { LUA_STRLIBNAME, luaopen_string },
		{ LUA_TABLIBNAME, luaopen_table }, { LUA_MATHLIBNAME, luaopen_math },
		{ LUA_UTF8LIBNAME, luaopen_utf8 },
	};
	/* rawset could plant keys in a read-only proxy; print writes to stdout. */
	static const char *const removed[] = { "dofile", "loadfile", "load", "require",
					       "collectgarbage", "rawset", "print" };

	for (size_t i = 0; i < ARRAY_LEN(libs); i++) {
		luaL_requiref(L, libs[i].name, libs[i].func, 1);
		lua_pop(L, 1);
	}
	for (size_t i = 0; i < ARRAY_LEN(removed); i++) {
		lua_pushnil(L);
		lua_setglobal(L, removed[i]);
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
	wrap(L, "setmetatable", safe_setmetatable);
	lua_getfield(L, -1, LUA_STRLIBNAME);
	lua_pushnil(L);
	lua_setfield(L, -2, "dump");
	wrap(L, "rep", safe_rep);
	lua_pop(L, 2);
}

/* ---- read-only proxies over struct value ---------------------------------------------------
 * A proxy is an empty table with the shared metatable. The registry holds two side tables:
 * `target` (weak keys) maps a proxy to its node as light userdata, `cache` (weak values) maps a
 * node back to its proxy, so the same node always shows up as the same table. */

static char mt_key, target_key, cache_key;

static const struct value *proxy_target(lua_State *L, int idx)
{
	idx = lua_absindex(L, idx);
	if (lua_type(L, idx) != LUA_TTABLE)
		return NULL;
	lua_rawgetp(L, LUA_REGISTRYINDEX, &target_key);
	lua_pushvalue(L, idx);
	lua_rawget(L, -2);
	const struct value *v = lua_touserdata(L, -1);
	lua_pop(L, 2);
	return v;
}

static void push_value(lua_State *L, const struct value *v);

static void push_proxy(lua_State *L, const struct value *v)
{
	lua_rawgetp(L, LUA_REGISTRYINDEX, &cache_key);
	if (lua_rawgetp(L, -1, v) == LUA_TTABLE) {
		lua_remove(L, -2);
		return;
	}
	lua_pop(L, 1);
	lua_newtable(L);
	lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_key);
	lua_setmetatable(L, -2);
	lua_pushvalue(L, -1);
	lua_rawsetp(L, -3, v);              /* cache[v] = proxy */
	lua_rawgetp(L, LUA_REGISTRYINDEX, &target_key);
	lua_pushvalue(L, -2);
	lua_pushlightuserdata(L, (void *)v);
	lua_rawset(L, -3);                  /* target[proxy] = v */
	lua_pop(L, 1);
	lua_remove(L, -2);
}

static void push_value(lua_State *L, const struct value *v)
{
	switch (v ? v->type : V_NULL) {
	case V_NULL: lua_pushnil(L); break;
	case V_BOOL: lua_pushboolean(L, v->b); break;
	case V_INT: lua_pushinteger(L, v->i); break;
	case V_NUM: lua_pushnumber(L, v->n); break;
	case V_STR: lua_pushstring(L, v->s); break;
	case V_ARR:
	case V_OBJ: push_proxy(L, v); break;
	}
}

/* The child of a container under the key at idx, or NULL. */
static const struct value *child_at(lua_State *L, const struct value *v, int idx)
{
	if (v->type == V_ARR) {
		int isint;
		lua_Integer i = lua_tointegerx(L, idx, &isint);
		if (lua_type(L, idx) == LUA_TNUMBER && isint && i >= 1 && (lua_Unsigned)i <= v->arr.len)
			return v->arr.items[i - 1];
		return NULL;
	}
	if (lua_type(L, idx) == LUA_TSTRING)
		return value_get(v, lua_tostring(L, idx));
	return NULL;
}

static int proxy_index(lua_State *L)
{
	const struct value *v = proxy_target(L, 1);
	push_value(L, v ? child_at(L, v, 2) : NULL);
	return 1;
}

static int proxy_newindex(lua_State *L)
{
	if (lua_type(L, 2) == LUA_TSTRING)
		return luaL_error(L, "attempt to set field '%s' of a read-only table", lua_tostring(L, 2));
	return luaL_error(L, "attempt to modify a read-only table");
}

static int proxy_len(lua_State *L)
{
	const struct value *v = proxy_target(L, 1);
	lua_pushinteger(L, v && v->type == V_ARR ? (lua_Integer)v->arr.len : 0);
	return 1;
}

/* The iterator __pairs hands out; upvalue 1 is the position after the last key returned, so a
 * generic for walks an object in O(1) per step (any other key falls back to a scan). */
static int proxy_next(lua_State *L)
{
	const struct value *v = proxy_target(L, 1);
	if (!v)
		return 0;
	size_t pos = 0;
	if (v->type == V_ARR) {
		if (!lua_isnil(L, 2))
			pos = (size_t)luaL_checkinteger(L, 2);
		if (pos >= v->arr.len)
			return 0;
		lua_pushinteger(L, (lua_Integer)pos + 1);
		push_value(L, v->arr.items[pos]);
		return 2;
	}
	if (!lua_isnil(L, 2)) {
		const char *key = luaL_checkstring(L, 2);
		pos = (size_t)lua_tointeger(L, lua_upvalueindex(1));
		if (pos == 0 || pos > v->obj.len || strcmp(v->obj.keys[pos - 1], key) != 0) {
			for (pos = 0; pos < v->obj.len && strcmp(v->obj.keys[pos], key) != 0; pos++)
				;
			pos++;
		}
	}
	if (pos >= v->obj.len)
		return 0;
	lua_pushinteger(L, (lua_Integer)pos + 1);
	lua_replace(L, lua_upvalueindex(1));
	lua_pushstring(L, v->obj.keys[pos]);
	push_value(L, v->obj.vals[pos]);
	return 2;
}

static int proxy_pairs(lua_State *L)
{
	lua_pushinteger(L, 0);
	lua_pushcclosure(L, proxy_next, 1);
	lua_pushvalue(L, 1);
	lua_pushnil(L);
	return 3;
}

static void proxies_init(lua_State *L)
{
	static const luaL_Reg mm[] = {
		{ "__index", proxy_index }, { "__newindex", proxy_newindex },
		{ "__len", proxy_len },     { "__pairs", proxy_pairs },
		{ NULL, NULL },
	};
	lua_newtable(L);
	luaL_setfuncs(L, mm, 0);
	lua_pushliteral(L, "read-only");
	lua_setfield(L, -2, "__metatable"); /* getmetatable() sees this; setmetatable() fails */
	lua_rawsetp(L, LUA_REGISTRYINDEX, &mt_key);

	static const char *const modes[] = { "k", "v" };
	char *keys[] = { &target_key, &cache_key };
	for (int i = 0; i < 2; i++) {
		lua_newtable(L);
		lua_newtable(L);
		lua_pushstring(L, modes[i]);
		lua_setfield(L, -2, "__mode");
		lua_setmetatable(L, -2);
		lua_rawsetp(L, LUA_REGISTRYINDEX, keys[i]);
	}
}

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

static int sandbox_main(lua_State *L)
{
	struct run_ctx *ctx = lua_touserdata(L, 1);

	open_libs(L);
	proxies_init(L);
	push_value(L, ctx->results);
	lua_setglobal(L, "results");
	push_value(L, ctx->thresholds);
	lua_setglobal(L, "thresholds");
	push_value(L, ctx->run);
	lua_setglobal(L, "run");

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
	run_chunk(L, ctx, ctx->in->lua);
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

/* ---- Lua → struct value, without raising, allocating in Lua or running Lua code -----------
 * Everything produced counts against one budget of nodes and text bytes (struct budget), shared
 * subtables once per reference and copies of read-only results included: the answer is bounded
 * by the budget whatever shape the snippet builds (a DAG of shared tables is expanded, so it is
 * counted as expanded, and refused before it is built). */

struct conv {
	lua_State *L;
	const char *chunk;
	struct diag_err *err;
	size_t nodes_left, bytes_left; /* what the budget still allows */
	size_t max_nodes, max_bytes;
	char path[160]; /* where we are: "report[2].rows[1]" */
};

static struct value *conv_fail(struct conv *c, const char *what)
{
	diag_fail(c->err, DIAG_EXIT_RUNTIME, "%s: %s: %s", c->chunk, c->path, what);
	return NULL;
}

/* Takes nodes and text bytes from the budget, or fails naming the limit. */
static bool take(struct conv *c, size_t nodes, size_t bytes)
{
	char what[96];
	if (nodes > c->nodes_left) {
		snprintf(what, sizeof(what), "result too large (over %zu nodes)", c->max_nodes);
		conv_fail(c, what);
		return false;
	}
	if (bytes > c->bytes_left) {
		snprintf(what, sizeof(what), "result too large (over %zu bytes of text)", c->max_bytes);
		conv_fail(c, what);
		return false;
	}
	c->nodes_left -= nodes;
	c->bytes_left -= bytes;
	return true;
}

/* Measures a read-only result tree (to be copied at depth `depth`) against what the budget
 * still allows, without allocating: stops as soon as it is over. */
static bool tree_fits(const struct value *v, int depth, size_t *nodes, size_t *bytes,
		      size_t max_nodes, size_t max_bytes, bool *too_deep)
{
	if (++*nodes > max_nodes)
		return false;
	switch (v->type) {
	case V_STR:
		*bytes += strlen(v->s);
		return *bytes <= max_bytes;
	case V_ARR:
	case V_OBJ:
		if (depth > MAX_DEPTH) {
			*too_deep = true;
			return false;
		}
		for (size_t i = 0; i < (v->type == V_ARR ? v->arr.len : v->obj.len); i++) {
			if (v->type == V_OBJ) {
				*bytes += strlen(v->obj.keys[i]);
				if (*bytes > max_bytes)
					return false;
			}
			const struct value *child = v->type == V_ARR ? v->arr.items[i] : v->obj.vals[i];
			if (!tree_fits(child, depth + 1, nodes, bytes, max_nodes, max_bytes, too_deep))
				return false;
		}
		return true;
	default:
		return true;
	}
}

/* A read-only result handed back: copied as is, once it is known to fit. */
static struct value *copy_result(struct conv *c, const struct value *v, int depth)
{
	size_t nodes = 0, bytes = 0;
	bool too_deep = false;
	if (!tree_fits(v, depth, &nodes, &bytes, c->nodes_left, c->bytes_left, &too_deep)) {
		if (too_deep)
			return conv_fail(c, "tables nested too deeply");
		if (nodes > c->nodes_left) /* take() names the limit that was hit */
			take(c, nodes, 0);
		else
			take(c, 0, bytes);
		return NULL;
	}
	take(c, nodes, bytes);
	return value_copy(v);
}

static size_t path_push_index(struct conv *c, size_t i)
{
	size_t len = strlen(c->path);
	snprintf(c->path + len, sizeof(c->path) - len, "[%zu]", i);
	return len;
}

static size_t path_push_key(struct conv *c, const char *k)
{
	size_t len = strlen(c->path);
	snprintf(c->path + len, sizeof(c->path) - len, ".%s", k);
	return len;
}

struct kv {
	const char *key;
	struct value *val;
};

/* Report sections read best with these keys first; the rest follow in name order (Lua's own
 * table order changes from run to run). */
static int key_rank(const char *k)
{
	static const char *const first[] = { "kind", "title", "unit", "columns", "lo", "hi" };
	for (size_t i = 0; i < ARRAY_LEN(first); i++)
		if (strcmp(k, first[i]) == 0)
			return (int)i;
	return (int)ARRAY_LEN(first);
}

static int kv_cmp(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	int rx = key_rank(x->key), ry = key_rank(y->key);
	return rx != ry ? rx - ry : strcmp(x->key, y->key);
}

static struct value *to_value(struct conv *c, int idx, int depth);

/* An object from sorted, distinct keys, built directly: value_obj_set is linear per key. */
static struct value *object_of(const struct kv *kvs, size_t n)
{
	struct value *obj = value_obj();
	if (!n)
		return obj;
	obj->obj.keys = xmalloc(n * sizeof(char *));
	obj->obj.vals = xmalloc(n * sizeof(struct value *));
	obj->obj.cap = n;
	for (size_t i = 0; i < n; i++) {
		obj->obj.keys[i] = xstrdup(kvs[i].key);
		obj->obj.vals[i] = kvs[i].val;
	}
	obj->obj.len = n;
	return obj;
}

static struct value *table_to_value(struct conv *c, int idx, int depth)
{
	lua_State *L = c->L;
	idx = lua_absindex(L, idx);
	if (!lua_checkstack(L, 4))
		return conv_fail(c, "out of memory");
	const struct value *backing = proxy_target(L, idx);
	if (backing)
		return copy_result(c, backing, depth);
	if (depth > MAX_DEPTH)
		return conv_fail(c, "tables nested too deeply (a cycle?)");

	size_t count = 0;
	lua_Integer max = 0;
	bool seq = true;
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		count++;
		if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1) {
			if (lua_tointeger(L, -2) > max)
				max = lua_tointeger(L, -2);
		} else {
			seq = false;
		}
		lua_pop(L, 1);
	}
	/* The table and each of its entries is a node: refuse before allocating for them. */
	if (count >= c->nodes_left) {
		take(c, count + 1, 0);
		return NULL;
	}
	take(c, 1, 0);

	if (seq && (size_t)max == count) {
		struct value *arr = value_arr();
		for (size_t i = 1; i <= count; i++) {
			lua_rawgeti(L, idx, (lua_Integer)i);
			size_t mark = path_push_index(c, i);
			struct value *item = to_value(c, lua_gettop(L), depth + 1);
			c->path[mark] = '\0';
			lua_pop(L, 1);
			if (!item) {
				value_free(arr);
				return NULL;
			}
			value_arr_push(arr, item);
		}
		return arr;
	}

	struct kv *kvs = xcalloc(count ? count : 1, sizeof(*kvs));
	size_t n = 0;
	int top = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		if (lua_type(L, -2) != LUA_TSTRING) {
			conv_fail(c, "a table mixes array items and named fields, or has holes");
			goto out;
		}
		size_t klen;
		const char *key = lua_tolstring(L, -2, &klen);
		if (strlen(key) != klen) {
			conv_fail(c, "a key holds a NUL byte");
			goto out;
		}
		size_t mark = path_push_key(c, key);
		struct value *v = take(c, 0, klen) ? to_value(c, lua_gettop(L), depth + 1) : NULL;
		c->path[mark] = '\0';
		if (!v)
			goto out;
		kvs[n++] = (struct kv){ key, v };
		lua_pop(L, 1);
	}
	/* Lua keys are distinct strings without NUL, so distinct C strings: no duplicates. */
	qsort(kvs, n, sizeof(*kvs), kv_cmp);
	struct value *obj = object_of(kvs, n);
	free(kvs);
	return obj;
out:
	lua_settop(L, top);
	for (size_t i = 0; i < n; i++)
		value_free(kvs[i].val);
	free(kvs);
	return NULL;
}

/* A Lua string as a C string. A NUL byte inside (where a C string would end) comes back as the
 * four characters "\x00", as the text report shows a control byte: nothing after it is lost,
 * and every output shows where it was. */
static struct value *string_value(struct conv *c, const char *s, size_t len)
{
	size_t nuls = 0;
	for (size_t i = 0; i < len; i++)
		nuls += s[i] == '\0';
	if (!take(c, 1, len + 3 * nuls))
		return NULL;
	if (!nuls)
		return value_strn(s, len);
	char *out = xmalloc(len + 3 * nuls + 1), *o = out;
	for (size_t i = 0; i < len; i++) {
		if (s[i]) {
			*o++ = s[i];
		} else {
			memcpy(o, "\\x00", 4);
			o += 4;
		}
	}
	*o = '\0';
	return value_str_take(out);
}

static struct value *to_value(struct conv *c, int idx, int depth)
{
	lua_State *L = c->L;
	int type = lua_type(L, idx);
	if (type == LUA_TTABLE)
		return table_to_value(c, idx, depth);
	if (type == LUA_TSTRING) {
		size_t len;
		const char *s = lua_tolstring(L, idx, &len);
		return string_value(c, s, len);
	}
	if (type != LUA_TBOOLEAN && type != LUA_TNUMBER) {
		char what[64];
		snprintf(what, sizeof(what), "cannot use a %s value here", luaL_typename(L, idx));
		return conv_fail(c, what);
	}
	if (!take(c, 1, 0))
		return NULL;
	if (type == LUA_TBOOLEAN)
		return value_bool(lua_toboolean(L, idx));
	if (lua_isinteger(L, idx))
		return value_int(lua_tointeger(L, idx));
	return value_num(lua_tonumber(L, idx));
}

/* Pushes t[name] (raw) for the table at idx, scanning so that no key string is allocated. */
static void raw_field(lua_State *L, int idx, const char *name)
{
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), name) == 0) {
			lua_remove(L, -2);
			return;
		}
		lua_pop(L, 1);
	}
	lua_pushnil(L);
}

/* ---- checking the answer ---------------------------------------------------------------- */

static const char *type_word(const struct value *v)
{
	switch (v->type) {
	case V_NULL: return "nil";
	case V_BOOL: return "boolean";
	case V_INT:
	case V_NUM: return "number";
	case V_STR: return "string";
	default: return "table";
	}
}

static int field_fail(struct diag_err *err, const char *chunk, size_t i, const char *field,
		      const char *what)
{
	return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts[%zu].%s: %s", chunk, i, field, what);
}

static int check_string(const struct value *vd, const char *field, size_t i, const char *chunk,
			struct diag_err *err)
{
	const struct value *v = value_get(vd, field);
	char what[64];
	if (!v)
		return field_fail(err, chunk, i, field, "missing");
	if (v->type != V_STR) {
		snprintf(what, sizeof(what), "expected a string, got a %s", type_word(v));
		return field_fail(err, chunk, i, field, what);
	}
	if (!v->s[0])
		return field_fail(err, chunk, i, field, "empty");
	return 0;
}

static int check_strings(const struct value *vd, const char *field, size_t i, const char *chunk,
			 struct diag_err *err)
{
	const struct value *v = value_get(vd, field);
	char what[96];
	if (!v)
		return field_fail(err, chunk, i, field, "missing (use {} for none)");
	if (v->type != V_ARR) {
		snprintf(what, sizeof(what), "expected an array of strings, got a %s", type_word(v));
		return field_fail(err, chunk, i, field, what);
	}
	for (size_t k = 0; k < v->arr.len; k++) {
		if (v->arr.items[k]->type != V_STR) {
			snprintf(what, sizeof(what), "item %zu: expected a string, got a %s", k + 1,
				 type_word(v->arr.items[k]));
			return field_fail(err, chunk, i, field, what);
		}
	}
	return 0;
}

static bool name_ok(const char *s, size_t max, bool dash)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (size_t k = 0; k < n; k++)
		if (!((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= '0' && s[k] <= '9') ||
		      s[k] == (dash ? '-' : '_')))
			return false;
	return true;
}

/* The optional follow-up a verdict names: next = { recipe = "latency", params = { k = "v" } }
 * (recipe a name, params the recipe's own parameters as strings or numbers; an empty table for
 * none). Rebuilt with params as strings; chain.c runs it under --follow. */
static struct value *check_next(const struct value *n, size_t i, const char *chunk,
				struct diag_err *err)
{
	char what[160];
	if (n->type != V_OBJ) {
		snprintf(what, sizeof(what), "expected a table { recipe =, params = }, got a %s", type_word(n));
		field_fail(err, chunk, i, "next", what);
		return NULL;
	}
	for (size_t k = 0; k < n->obj.len; k++)
		if (strcmp(n->obj.keys[k], "recipe") != 0 && strcmp(n->obj.keys[k], "params") != 0) {
			snprintf(what, sizeof(what), "unknown key \"%.40s\" (expected recipe, params)",
				 n->obj.keys[k]);
			field_fail(err, chunk, i, "next", what);
			return NULL;
		}
	const char *recipe = value_get_str(n, "recipe");
	if (!recipe || !name_ok(recipe, 64, true)) {
		field_fail(err, chunk, i, "next.recipe", "expected a recipe name ([a-z0-9-]+, at most 64)");
		return NULL;
	}
	struct value *out = value_obj();
	value_set_str(out, "recipe", recipe);
	struct value *params = value_obj_set(out, "params", value_obj());
	const struct value *p = value_get(n, "params");
	if (p && !(p->type == V_ARR && p->arr.len == 0)) {
		if (p->type != V_OBJ) {
			snprintf(what, sizeof(what), "expected a table of NAME = value, got a %s", type_word(p));
			field_fail(err, chunk, i, "next.params", what);
			value_free(out);
			return NULL;
		}
		for (size_t k = 0; k < p->obj.len; k++) {
			const char *key = p->obj.keys[k];
			const struct value *pv = p->obj.vals[k];
			if (!name_ok(key, 64, false)) {
				field_fail(err, chunk, i, "next.params", "a key is not a parameter name ([a-z0-9_]+)");
				value_free(out);
				return NULL;
			}
			if (pv->type == V_STR && pv->s[0])
				value_set_str(params, key, pv->s);
			else if (pv->type == V_INT)
				value_obj_set(params, key, value_str_take(xasprintf("%lld", (long long)pv->i)));
			else if (pv->type == V_NUM && pv->n >= -9e15 && pv->n <= 9e15 &&
				 pv->n == (double)(long long)pv->n)
				value_obj_set(params, key, value_str_take(xasprintf("%lld", (long long)pv->n)));
			else {
				snprintf(what, sizeof(what), "%.64s: expected a non-empty string or an integer", key);
				field_fail(err, chunk, i, "next.params", what);
				value_free(out);
				return NULL;
			}
		}
	}
	return out;
}

/* One verdict, checked and rebuilt with its keys in contract order. */
static struct value *check_verdict(const struct value *vd, size_t i, const char *chunk,
				   struct diag_err *err)
{
	if (vd->type != V_OBJ) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts[%zu]: expected a table with id, "
			  "severity, title, evidence, next_steps; got a %s", chunk, i, type_word(vd));
		return NULL;
	}
	if (check_string(vd, "id", i, chunk, err) || check_string(vd, "severity", i, chunk, err))
		return NULL;
	int ok;
	severity_parse(value_get_str(vd, "severity"), &ok);
	if (!ok) {
		char what[96];
		snprintf(what, sizeof(what), "\"%.40s\" is not one of ok|info|warning|critical",
			 value_get_str(vd, "severity"));
		field_fail(err, chunk, i, "severity", what);
		return NULL;
	}
	if (check_string(vd, "title", i, chunk, err) || check_strings(vd, "evidence", i, chunk, err) ||
	    check_strings(vd, "next_steps", i, chunk, err))
		return NULL;

	static const char *const keys[] = { "id", "severity", "title", "evidence", "next_steps" };
	struct value *out = value_obj();
	for (size_t k = 0; k < ARRAY_LEN(keys); k++)
		value_obj_set(out, keys[k], value_copy(value_get(vd, keys[k])));
	const struct value *next = value_get(vd, "next");
	if (next && next->type != V_NULL) {
		struct value *n = check_next(next, i, chunk, err);
		if (!n) {
			value_free(out);
			return NULL;
		}
		value_obj_set(out, "next", n);
	}
	return out;
}

static enum severity verdict_sev(const struct value *v)
{
	int ok;
	enum severity s = severity_parse(value_get_str(v, "severity"), &ok);
	return ok ? s : SEV_OK;
}

/* Stable insertion sort, worst first: a snippet's order is kept within one severity. */
static void sort_worst_first(struct value *arr)
{
	for (size_t i = 1; i < arr->arr.len; i++) {
		struct value *v = arr->arr.items[i];
		enum severity s = verdict_sev(v);
		size_t j = i;
		for (; j > 0 && verdict_sev(arr->arr.items[j - 1]) < s; j--)
			arr->arr.items[j] = arr->arr.items[j - 1];
		arr->arr.items[j] = v;
	}
}

/* Checks the answer as converted (takes ownership of raw verdicts and report; report NULL when
 * the snippet gave none) and builds the final one. Run by the child on what Lua returned, and
 * again by the parent on what the child sent. */
static int check_answer(const char *chunk, struct value *raw, struct value *rep,
			struct value **verdicts, struct value **report, struct diag_err *err)
{
	struct value *out = NULL;
	if (raw->type != V_ARR) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts: expected an array of verdicts", chunk);
		goto fail;
	}
	out = value_arr();
	for (size_t i = 0; i < raw->arr.len; i++) {
		struct value *v = check_verdict(raw->arr.items[i], i + 1, chunk, err);
		if (!v)
			goto fail;
		value_arr_push(out, v);
	}
	sort_worst_first(out);

	if (!rep)
		rep = value_arr();
	if (rep->type != V_ARR) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: report: expected an array of sections", chunk);
		goto fail;
	}
	for (size_t i = 0; i < rep->arr.len; i++) {
		if (!value_get_str(rep->arr.items[i], "kind")) {
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: report[%zu].kind: missing (a section is a "
				  "table with a string kind)", chunk, i + 1);
			goto fail;
		}
	}
	value_free(raw);
	*verdicts = out;
	*report = rep;
	return 0;
fail:
	value_free(raw);
	value_free(out);
	value_free(rep);
	return -1;
}

/* The snippet's return value is at the top of the stack. */
static int read_answer(lua_State *L, const struct verdict_input *in, struct value **verdicts,
		       struct value **report, struct diag_err *err)
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
	struct value *raw = NULL, *rep = NULL;

	raw_field(L, t, "verdicts");
	strcpy(c.path, "verdicts");
	if (lua_isnil(L, -1)) {
		lua_settop(L, t);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts: missing", chunk);
	}
	raw = to_value(&c, lua_gettop(L), 1);
	lua_settop(L, t);
	if (!raw)
		return -1;

	raw_field(L, t, "report");
	strcpy(c.path, "report");
	if (!lua_isnil(L, -1) && !(rep = to_value(&c, lua_gettop(L), 1))) {
		lua_settop(L, t);
		value_free(raw);
		return -1;
	}
	lua_settop(L, t);
	return check_answer(chunk, raw, rep, verdicts, report, err);
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

int verdict_run_inprocess(const struct verdict_input *in, struct value **verdicts,
			  struct value **report, struct diag_err *err)
{
	*verdicts = *report = NULL;
	struct run_ctx ctx = { .in = in, .results = in->results ? in->results : &empty_obj,
			       .run = in->run ? in->run : &empty_obj };
	struct value *th = typed_thresholds(in->thresholds);
	ctx.thresholds = th;

	struct sandbox sb;
	int rc = -1;
	lua_State *L = sandbox_new(&sb, in->max_memory_bytes, in->max_instructions);
	if (!L) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot create a Lua state (memory cap %zu bytes)",
			  in->lua->path, sb.limit);
		goto out;
	}
	lua_pushcfunction(L, message_handler);
	lua_pushcfunction(L, sandbox_main);
	lua_pushlightuserdata(L, &ctx);
	int status = lua_pcall(L, 1, 1, 1);
	if (status == LUA_ERRMEM) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s", ctx.current ? ctx.current : in->lua->path,
			  sb.mem_hit ? "memory limit exceeded" : "out of memory");
	} else if (status != LUA_OK) {
		size_t len = 0;
		const char *msg = lua_tolstring(L, -1, &len);
		lua_error_message(err, in->lua->path, msg, len);
	} else {
		rc = read_answer(L, in, verdicts, report, err);
	}
	lua_close(L);
out:
	value_free(th);
	return rc; /* diag_fail keeps messages on one line, without control characters */
}

/* ---- in a child process ---------------------------------------------------------------------
 * Protocol: the parent makes a pipe and forks. The child closes every descriptor but the pipe's
 * write end (BPF objects, perf events, the signalfd, the audit file: it needs none), asks to be
 * killed when the parent dies, sets RLIMIT_CPU (the wall-clock limit rounded up, plus one second),
 * RLIMIT_AS (its current size plus room for the Lua cap and the answer; not under ASan, whose
 * shadow memory is huge) and RLIMIT_CORE 0, runs verdict_run_inprocess, writes one JSON document
 * — {"verdicts":[...],"report":[...]} or {"error":"message"} — and leaves with _exit (no atexit
 * handler, no flush of stdio buffers inherited from the parent). Blocked signals stay blocked:
 * Ctrl-C is for the parent to answer, and SIGKILL needs no permission.
 * The parent reads with poll until end of file or the deadline, at most a size derived from the
 * budget, then reaps the child; over the deadline or the size it kills it (SIGKILL) and reaps
 * it. Only an exit status of 0 counts: the document is then parsed (strict JSON, depth and node
 * caps) and checked again as if it came from Lua. Whatever goes wrong ends in -1 and err. */

#if defined(__SANITIZE_ADDRESS__)
#define VERDICT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VERDICT_ASAN 1
#endif
#endif

#define WIRE_SLACK_NODES 8          /* the document around the answer */
#define WIRE_SLACK_BYTES (64u << 10) /* its keys and the error message */

/* JSON as value_write_json writes it, but lossless: strings and keys keep bytes that are not
 * UTF-8 (json_write_bytes; the parent reads them with raw_bytes), and numbers are exact: %.17g,
 * a whole double keeping a ".0" so that it comes back as V_NUM, not V_INT. Non-finite numbers
 * become null, as in the JSON report. */
static void wire_write(const struct value *v, FILE *f)
{
	char buf[40];
	switch (v->type) {
	case V_STR:
		json_write_bytes(f, v->s);
		break;
	case V_NUM:
		if (!isfinite(v->n)) {
			fputs("null", f);
			break;
		}
		snprintf(buf, sizeof(buf), "%.17g", v->n);
		fputs(buf, f);
		if (!strpbrk(buf, ".eE"))
			fputs(".0", f);
		break;
	case V_ARR:
		fputc('[', f);
		for (size_t i = 0; i < v->arr.len; i++) {
			if (i)
				fputc(',', f);
			wire_write(v->arr.items[i], f);
		}
		fputc(']', f);
		break;
	case V_OBJ:
		fputc('{', f);
		for (size_t i = 0; i < v->obj.len; i++) {
			if (i)
				fputc(',', f);
			json_write_bytes(f, v->obj.keys[i]);
			fputc(':', f);
			wire_write(v->obj.vals[i], f);
		}
		fputc('}', f);
		break;
	default:
		value_write_json(v, f, -1);
		break;
	}
}

static size_t sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* The most text a child's document can take within the budget: every text byte escaped as
 * \uNNNN, every node with its punctuation and a 24-character number. */
static size_t wire_cap(size_t max_nodes, size_t max_bytes)
{
	return sat_add(sat_add(sat_mul(max_bytes, 6), sat_mul(max_nodes, 40)), WIRE_SLACK_BYTES);
}

static void child_limits(const struct verdict_input *in, unsigned max_ms, size_t max_nodes,
			 size_t max_bytes)
{
	rlim_t cpu = max_ms / 1000 + 2; /* rounded up, plus at least one second */
	setrlimit(RLIMIT_CPU, &(struct rlimit){ cpu, cpu + 1 });
	setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
#ifndef VERDICT_ASAN
	/* What is mapped now (the parent's heap, libraries), plus twice the Lua cap (realloc of
	 * the largest block), the answer as C values and as JSON, and room for the C library. */
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	if (pages) {
		size_t lua = in->max_memory_bytes ? in->max_memory_bytes : VERDICT_DEFAULT_MAX_MEMORY;
		size_t as = sat_mul(pages, (size_t)sysconf(_SC_PAGESIZE));
		as = sat_add(as, sat_mul(lua, 2));
		as = sat_add(as, sat_mul(max_nodes, 256));
		as = sat_add(as, sat_mul(max_bytes, 4));
		as = sat_add(as, 128u << 20);
		if (as < RLIM_INFINITY)
			setrlimit(RLIMIT_AS, &(struct rlimit){ as, as });
	}
#else
	(void)in;
	(void)max_nodes;
	(void)max_bytes;
#endif
}

static _Noreturn void child_main(const struct verdict_input *in, pid_t parent, int wfd,
				 unsigned max_ms, size_t max_nodes, size_t max_bytes)
{
	/* Never outlive the parent's call: dies with it (checked once, in case it is already gone). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "diagnose-lua"); /* what ps and pgrep show of it */
	if (getppid() != parent)
		_exit(3);
	if (wfd > 3)
		close_range(3, (unsigned)wfd - 1, 0);
	close_range((unsigned)wfd + 1, ~0u, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXCPU, SIG_DFL);
	sigset_t fatal;
	sigemptyset(&fatal);
	sigaddset(&fatal, SIGXCPU);
	sigaddset(&fatal, SIGSEGV);
	sigaddset(&fatal, SIGBUS);
	sigaddset(&fatal, SIGFPE);
	sigaddset(&fatal, SIGILL);
	sigaddset(&fatal, SIGABRT);
	sigprocmask(SIG_UNBLOCK, &fatal, NULL);
	child_limits(in, max_ms, max_nodes, max_bytes);

	struct value *verdicts, *report;
	struct diag_err err = { 0 };
	struct value *doc = value_obj();
	if (verdict_run_inprocess(in, &verdicts, &report, &err) == 0) {
		value_obj_set(doc, "verdicts", verdicts);
		value_obj_set(doc, "report", report);
	} else {
		value_set_str(doc, "error", err.msg);
	}
	FILE *f = fdopen(wfd, "w");
	if (!f)
		_exit(1);
	wire_write(doc, f);
	_exit(fclose(f) == 0 ? 0 : 1);
}

static const char *signal_name(int sig)
{
	static const struct {
		int sig;
		const char *name;
	} names[] = {
		{ SIGKILL, "SIGKILL" }, { SIGXCPU, "SIGXCPU" }, { SIGSEGV, "SIGSEGV" },
		{ SIGBUS, "SIGBUS" },   { SIGABRT, "SIGABRT" }, { SIGFPE, "SIGFPE" },
		{ SIGILL, "SIGILL" },   { SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },
		{ SIGHUP, "SIGHUP" },   { SIGQUIT, "SIGQUIT" }, { SIGPIPE, "SIGPIPE" },
		{ SIGSYS, "SIGSYS" },   { SIGXFSZ, "SIGXFSZ" }, { SIGTRAP, "SIGTRAP" },
	};
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (names[i].sig == sig)
			return names[i].name;
	return NULL;
}

/* What a child's end means, as a message. */
static int child_status_fail(const char *chunk, int status, struct diag_err *err)
{
	if (WIFEXITED(status))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase failed (exit status %d)",
				 chunk, WEXITSTATUS(status));
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	const char *name = signal_name(sig);
	const char *why = sig == SIGXCPU ? " (over its CPU time limit)"
			: sig == SIGKILL ? " (out of memory, or over its CPU time limit)"
			: sig == SIGABRT ? " (out of memory?)" : "";
	if (name)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase killed by %s%s", chunk, name, why);
	return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase killed by signal %d", chunk, sig);
}

static void kill_and_reap(pid_t pid)
{
	int status;
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

static int ms_until(uint64_t deadline)
{
	uint64_t now = mono_ns();
	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Reads the child's document until end of file. Returns 0, or -1 with *timed_out or *too_big
 * set, or errno-style failure (err set). */
static int read_child(int rfd, uint64_t deadline, size_t cap, char **buf, size_t *len,
		      bool *timed_out, bool *too_big, struct diag_err *err)
{
	size_t size = 0;
	*buf = NULL;
	*len = 0;
	for (;;) {
		int left = ms_until(deadline);
		if (left == 0) {
			*timed_out = true;
			return -1;
		}
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		int r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "poll: %s", strerror(errno));
		if (r == 0)
			continue;
		if (*len == size) {
			if (size > cap) {
				*too_big = true;
				return -1;
			}
			size = size ? size * 2 : 64u << 10;
			if (size > cap + 1)
				size = cap + 1;
			*buf = xrealloc(*buf, size);
		}
		ssize_t n = read(rfd, *buf + *len, size - *len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "reading the verdict phase's answer: %s",
					 strerror(errno));
		if (n == 0)
			return 0;
		*len += (size_t)n;
		if (*len > cap) {
			*too_big = true;
			return -1;
		}
	}
}

/* Waits for a child that closed its pipe. Returns its status, or -1 once over the deadline
 * (the child is then killed and reaped). */
static int reap(pid_t pid, uint64_t deadline, int *status)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			/* SIGCHLD ignored by the caller: the child reaped itself, status unknown. */
			*status = 0;
			return 0;
		}
		if (mono_ns() >= deadline) {
			kill_and_reap(pid);
			return -1;
		}
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
}

/* The child's document, parsed and checked. */
static int read_document(const struct verdict_input *in, const char *text, size_t len,
			 size_t max_nodes, struct value **verdicts, struct value **report,
			 struct diag_err *err)
{
	const char *chunk = in->lua->path;
	struct json_limits lim = { .max_depth = MAX_DEPTH + 2,
				   .max_nodes = sat_add(max_nodes, WIRE_SLACK_NODES),
				   .raw_bytes = true /* Lua strings and target names are any bytes */ };
	struct diag_err perr = { 0 };
	struct value *doc = json_parse(text, len, &lim, &perr);
	if (!doc)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent a malformed answer: %s",
				 chunk, perr.msg);
	int rc = -1;
	const struct value *msg = value_get(doc, "error");
	struct value *vs = (struct value *)value_get(doc, "verdicts");
	struct value *rep = (struct value *)value_get(doc, "report");
	if (doc->type != V_OBJ) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent a malformed answer: not an object",
			  chunk);
	} else if (msg) {
		if (msg->type == V_STR && msg->s[0])
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s", msg->s);
		else
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase failed without a message",
				  chunk);
	} else if (!vs || !rep) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent a malformed answer: no verdicts "
			  "or report", chunk);
	} else {
		/* Take both out of the document, then check them as the child did. */
		for (size_t i = 0; i < doc->obj.len; i++)
			if (doc->obj.vals[i] == vs || doc->obj.vals[i] == rep)
				doc->obj.vals[i] = NULL;
		rc = check_answer(chunk, vs, rep, verdicts, report, err);
	}
	value_free(doc);
	return rc;
}

int verdict_run(const struct verdict_input *in, struct value **verdicts, struct value **report,
		struct diag_err *err)
{
	*verdicts = *report = NULL;
	const char *chunk = in->lua->path;
	unsigned max_ms = in->max_ms ? in->max_ms : VERDICT_DEFAULT_MAX_MS;
	size_t max_nodes = in->max_nodes ? in->max_nodes : VERDICT_DEFAULT_MAX_NODES;
	size_t max_bytes = in->max_text_bytes ? in->max_text_bytes : VERDICT_DEFAULT_MAX_TEXT_BYTES;
	uint64_t deadline = mono_ns() + (uint64_t)max_ms * 1000000;

	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot start the verdict phase: pipe: %s",
				 chunk, strerror(errno));
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot start the verdict phase: fork: %s",
				 chunk, strerror(e));
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(in, parent, fds[1], max_ms, max_nodes, max_bytes);
	}
	close(fds[1]);

	char *buf;
	size_t len;
	bool timed_out = false, too_big = false;
	int status, rc = -1;
	size_t cap = wire_cap(max_nodes, max_bytes);
	struct diag_err rerr = { 0 };
	if (read_child(fds[0], deadline, cap, &buf, &len, &timed_out, &too_big, &rerr)) {
		kill_and_reap(pid);
		if (timed_out)
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase over its time limit of %u ms "
				  "(killed)", chunk, max_ms);
		else if (too_big)
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent more than %zu bytes "
				  "(killed)", chunk, cap);
		else
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s", chunk, rerr.msg);
	} else if (reap(pid, deadline, &status)) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase over its time limit of %u ms "
			  "(killed)", chunk, max_ms);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		child_status_fail(chunk, status, err);
	} else {
		rc = read_document(in, buf, len, max_nodes, verdicts, report, err);
	}
	close(fds[0]);
	free(buf);
	return rc;
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

static const char *const sev_names[] = { "ok", "info", "warning", "critical" };

enum severity severity_parse(const char *s, int *ok)
{
	for (size_t i = 0; s && i < ARRAY_LEN(sev_names); i++) {
		if (strcmp(s, sev_names[i]) == 0) {
			if (ok)
				*ok = 1;
			return (enum severity)i;
		}
	}
	if (ok)
		*ok = 0;
	return SEV_OK;
}

const char *severity_name(enum severity s)
{
	return (unsigned)s < ARRAY_LEN(sev_names) ? sev_names[s] : "?";
}

enum severity verdicts_worst(const struct value *verdicts)
{
	enum severity worst = SEV_OK;
	if (!verdicts || verdicts->type != V_ARR)
		return worst;
	for (size_t i = 0; i < verdicts->arr.len; i++)
		if (verdict_sev(verdicts->arr.items[i]) > worst)
			worst = verdict_sev(verdicts->arr.items[i]);
	return worst;
}
