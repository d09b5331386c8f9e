/* lua_value.c — converts what a snippet returned into struct value, within a budget.
 *
 * Owns: the node and text budget (shared subtables counted once per reference, copies of
 * read-only results included), the path of the value being converted for errors, the order of
 * keys in rebuilt objects, and NUL bytes in strings shown as "\\x00".
 * Must not: raise, allocate in Lua or run Lua code (it runs outside lua_pcall: raw accessors
 * only — lua_next, lua_rawgeti, lua_checkstack), or check what the answer means (answer.c).
 */
#include "verdict/lua_value.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "verdict/sandbox.h"

/* ---- Lua → struct value, without raising, allocating in Lua or running Lua code -----------
 * Everything produced counts against one budget of nodes and text bytes (struct budget), shared
 * subtables once per reference and copies of read-only results included: the answer is bounded
 * by the budget whatever shape the snippet builds (a DAG of shared tables is expanded, so it is
 * counted as expanded, and refused before it is built). */


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
		if (depth > VERDICT_MAX_DEPTH) {
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
	if (depth > VERDICT_MAX_DEPTH)
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
			struct value *item = lua_to_value(c, lua_gettop(L), depth + 1);
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
		struct value *v = take(c, 0, klen) ? lua_to_value(c, lua_gettop(L), depth + 1) : NULL;
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

struct value *lua_to_value(struct conv *c, int idx, int depth)
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
void lua_raw_field(lua_State *L, int idx, const char *name)
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
