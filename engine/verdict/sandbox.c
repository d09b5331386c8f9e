/* sandbox.c — the Lua state a verdict snippet runs in, and the read-only view of results it gets.
 *
 * Owns: the capped allocator, the instruction-count hook (which cannot be swallowed by a pcall),
 * the allowed standard libraries minus the dangerous functions (load*, dofile, require,
 * collectgarbage, rawset, print, string.dump; string.rep and setmetatable wrapped), and the
 * read-only proxies over struct value trees (the same node is always the same table).
 * Must not: run chunks, read the answer, or know what any result means.
 */
#include "verdict/sandbox.h"

#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "common/util.h"
#include "verdict/limits.h"

#define HOOK_EVERY 10000      /* instructions between two hook calls */

/* ---- the sandbox: allocator with a cap, instruction limit --------------------------------- */


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

lua_State *sandbox_new(struct sandbox *sb, size_t max_mem, size_t max_steps)
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

void sandbox_open_libs(lua_State *L)
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

const struct value *proxy_target(lua_State *L, int idx)
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

void proxy_push_value(lua_State *L, const struct value *v)
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
	proxy_push_value(L, v ? child_at(L, v, 2) : NULL);
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
		proxy_push_value(L, v->arr.items[pos]);
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
	proxy_push_value(L, v->obj.vals[pos]);
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

void proxies_init(lua_State *L)
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
