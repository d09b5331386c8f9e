/* lua_value.h — Lua values back to struct value, within the answer's budget (internal to
 * engine/verdict/).
 *
 * Owns: struct conv (the node and text budget still left, and where the conversion is, for
 * errors) and the two calls that read a snippet's answer out of the Lua stack.
 * Must not: be included outside engine/verdict/, raise a Lua error, allocate in Lua or run Lua.
 */
#ifndef DIAG_VERDICT_LUA_VALUE_H
#define DIAG_VERDICT_LUA_VALUE_H

#include <stddef.h>

#include <lua.h>

#include "common/util.h"
#include "common/value.h"

#define VERDICT_MAX_DEPTH 16 /* nesting of the returned tables */

struct conv {
	lua_State *L;
	const char *chunk;
	struct diag_err *err;
	size_t nodes_left, bytes_left; /* what the budget still allows */
	size_t max_nodes, max_bytes;
	char path[160]; /* where we are: "report[2].rows[1]" */
};

/* The value at idx as a struct value, at nesting depth `depth` (1 for a top-level field of the
 * answer), taken from the budget; NULL and err set ("CHUNK: PATH: what") when it does not fit,
 * is nested too deeply or holds a type JSON cannot carry. */
struct value *lua_to_value(struct conv *c, int idx, int depth);
/* Pushes t[name] (raw) for the table at idx, scanning so that no key string is allocated. */
void lua_raw_field(lua_State *L, int idx, const char *name);

#endif
