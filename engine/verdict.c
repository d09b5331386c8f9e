/* verdict.c — runs a recipe's Lua snippet in a fresh sandbox and checks what it returns.
 *
 * Owns: the sandboxed lua_State (capped allocator, instruction-count hook, the allowed standard
 * libraries minus the dangerous functions), loading lua/lib/NAME.lua and the snippet (text chunks
 * only), read-only proxies over struct value trees, and converting the returned verdicts and
 * report back to struct value, validated and sorted worst first.
 * Must not: print, read anything but the Lua files it is given, or interpret results: what a
 * number means is the snippet's business.
 *
 * Safety notes. Every Lua API call that can raise runs inside lua_pcall (sandbox_main), so an
 * error, the memory cap or the instruction limit always ends as a clean -1. The conversion back to
 * C runs outside it and therefore uses only raw accessors that neither raise, allocate nor run Lua
 * code (lua_next, lua_rawgeti, lua_checkstack). Lua runs __gc finalizers with hooks off, so
 * setmetatable refuses metatables with __gc. Not bounded: time spent inside one C library call,
 * e.g. a pathological string.find pattern (string.rep with an empty string is special-cased).
 */
#include "verdict.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

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
	char **lib_paths;
	size_t n_libs;
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

/* Loads and runs one text chunk, leaving its first result on the stack. */
static void run_chunk(lua_State *L, struct run_ctx *ctx, const char *path)
{
	ctx->current = path;
	if (luaL_loadfilex(L, path, "t") != LUA_OK)
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

	for (size_t i = 0; i < ctx->n_libs; i++) {
		run_chunk(L, ctx, ctx->lib_paths[i]);
		if (lua_istable(L, -1)) { /* lua/lib/diag.lua returning a table → global diag */
			lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
			lib_global_name(L, ctx->lib_paths[i]);
			lua_pushvalue(L, -3);
			lua_rawset(L, -3);
			lua_pop(L, 1);
		}
		lua_pop(L, 1);
	}
	run_chunk(L, ctx, ctx->in->lua_path);
	return 1;
}

static int is_lua_file(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return d->d_name[0] != '.' && n > 4 && strcmp(d->d_name + n - 4, ".lua") == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int list_libs(const char *dir, struct run_ctx *ctx, struct diag_err *err)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, is_lua_file, by_name);
	if (n < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "cannot read Lua library directory %s: %s", dir,
				 strerror(errno));
	ctx->lib_paths = xcalloc((size_t)n, sizeof(char *));
	for (int i = 0; i < n; i++) {
		ctx->lib_paths[i] = xasprintf("%s/%s", dir, ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	ctx->n_libs = (size_t)n;
	return 0;
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

/* ---- Lua → struct value, without raising, allocating in Lua or running Lua code ----------- */

struct conv {
	lua_State *L;
	const char *chunk;
	struct diag_err *err;
	char path[160]; /* where we are: "report[2].rows[1]" */
};

static struct value *conv_fail(struct conv *c, const char *what)
{
	diag_fail(c->err, DIAG_EXIT_RUNTIME, "%s: %s: %s", c->chunk, c->path, what);
	return NULL;
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

static struct value *table_to_value(struct conv *c, int idx, int depth)
{
	lua_State *L = c->L;
	idx = lua_absindex(L, idx);
	if (!lua_checkstack(L, 4))
		return conv_fail(c, "out of memory");
	const struct value *backing = proxy_target(L, idx);
	if (backing)
		return value_copy(backing);
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

	struct kv *kvs = xcalloc(count, sizeof(*kvs));
	size_t n = 0;
	int top = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		if (lua_type(L, -2) != LUA_TSTRING) {
			conv_fail(c, "a table mixes array items and named fields, or has holes");
			goto out;
		}
		const char *key = lua_tostring(L, -2);
		size_t mark = path_push_key(c, key);
		struct value *v = to_value(c, lua_gettop(L), depth + 1);
		c->path[mark] = '\0';
		if (!v)
			goto out;
		kvs[n++] = (struct kv){ key, v };
		lua_pop(L, 1);
	}
	qsort(kvs, n, sizeof(*kvs), kv_cmp);
	struct value *obj = value_obj();
	for (size_t i = 0; i < n; i++)
		value_obj_set(obj, kvs[i].key, kvs[i].val);
	free(kvs);
	return obj;
out:
	lua_settop(L, top);
	for (size_t i = 0; i < n; i++)
		value_free(kvs[i].val);
	free(kvs);
	return NULL;
}

static struct value *to_value(struct conv *c, int idx, int depth)
{
	lua_State *L = c->L;
	switch (lua_type(L, idx)) {
	case LUA_TBOOLEAN:
		return value_bool(lua_toboolean(L, idx));
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx))
			return value_int(lua_tointeger(L, idx));
		return value_num(lua_tonumber(L, idx));
	case LUA_TSTRING: {
		size_t len;
		const char *s = lua_tolstring(L, idx, &len);
		return value_strn(s, len);
	}
	case LUA_TTABLE:
		return table_to_value(c, idx, depth);
	default: {
		char what[64];
		snprintf(what, sizeof(what), "cannot use a %s value here", luaL_typename(L, idx));
		return conv_fail(c, what);
	}
	}
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

/* The snippet's return value is at the top of the stack. */
static int read_answer(lua_State *L, const char *chunk, struct value **verdicts,
		       struct value **report, struct diag_err *err)
{
	int t = lua_gettop(L);
	if (lua_type(L, t) != LUA_TTABLE || proxy_target(L, t))
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "%s: must return a table { verdicts = {...}, report = {...} }, got %s",
				 chunk, luaL_typename(L, t));

	struct conv c = { .L = L, .chunk = chunk, .err = err };
	struct value *raw = NULL, *rep = NULL, *out = NULL;

	raw_field(L, t, "verdicts");
	strcpy(c.path, "verdicts");
	if (lua_isnil(L, -1)) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts: missing", chunk);
		goto fail;
	}
	if (!(raw = to_value(&c, lua_gettop(L), 1)))
		goto fail;
	if (raw->type != V_ARR) {
		conv_fail(&c, "expected an array of verdicts");
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

	lua_settop(L, t);
	raw_field(L, t, "report");
	strcpy(c.path, "report");
	if (lua_isnil(L, -1)) {
		rep = value_arr();
	} else {
		if (!(rep = to_value(&c, lua_gettop(L), 1)))
			goto fail;
		if (rep->type != V_ARR) {
			conv_fail(&c, "expected an array of sections");
			goto fail;
		}
		for (size_t i = 0; i < rep->arr.len; i++) {
			if (!value_get_str(rep->arr.items[i], "kind")) {
				diag_fail(err, DIAG_EXIT_RUNTIME, "%s: report[%zu].kind: missing (a "
					  "section is a table with a string kind)", chunk, i + 1);
				goto fail;
			}
		}
	}
	lua_settop(L, t);
	value_free(raw);
	*verdicts = out;
	*report = rep;
	return 0;
fail:
	lua_settop(L, t);
	value_free(raw);
	value_free(out);
	value_free(rep);
	return -1;
}

/* ---- public ----------------------------------------------------------------------------- */

static const struct value empty_obj = { .type = V_OBJ };

int verdict_run(const struct verdict_input *in, struct value **verdicts, struct value **report,
		struct diag_err *err)
{
	*verdicts = *report = NULL;
	struct run_ctx ctx = { .in = in, .results = in->results ? in->results : &empty_obj,
			       .run = in->run ? in->run : &empty_obj };
	if (in->lib_dir && list_libs(in->lib_dir, &ctx, err))
		return -1;
	struct value *th = typed_thresholds(in->thresholds);
	ctx.thresholds = th;

	struct sandbox sb;
	int rc = -1;
	lua_State *L = sandbox_new(&sb, in->max_memory_bytes, in->max_instructions);
	if (!L) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot create a Lua state (memory cap %zu bytes)",
			  in->lua_path, sb.limit);
		goto out;
	}
	lua_pushcfunction(L, message_handler);
	lua_pushcfunction(L, sandbox_main);
	lua_pushlightuserdata(L, &ctx);
	int status = lua_pcall(L, 1, 1, 1);
	if (status == LUA_ERRMEM) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s", ctx.current ? ctx.current : in->lua_path,
			  sb.mem_hit ? "memory limit exceeded" : "out of memory");
	} else if (status != LUA_OK) {
		const char *msg = lua_tostring(L, -1);
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s", msg ? msg : "error in error handling");
	} else {
		rc = read_answer(L, in->lua_path, verdicts, report, err);
	}
	lua_close(L);
out:
	value_free(th);
	for (size_t i = 0; i < ctx.n_libs; i++)
		free(ctx.lib_paths[i]);
	free(ctx.lib_paths);
	return rc;
}

static int check_main(lua_State *L)
{
	if (luaL_loadfilex(L, lua_touserdata(L, 1), "t") != LUA_OK)
		lua_error(L);
	return 0;
}

int verdict_check_syntax(const char *lua_path, struct diag_err *err)
{
	struct sandbox sb;
	lua_State *L = sandbox_new(&sb, 0, 0);
	if (!L)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot create a Lua state", lua_path);
	lua_pushcfunction(L, check_main);
	lua_pushlightuserdata(L, (void *)lua_path);
	int status = lua_pcall(L, 1, 0, 0);
	int rc = 0;
	if (status != LUA_OK) {
		const char *msg = lua_tostring(L, -1);
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s", msg ? msg : "cannot load");
	}
	lua_close(L);
	return rc;
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
