/* sandbox.h — the verdict phase's Lua state (internal to engine/verdict/).
 *
 * Owns: what the sandbox files share: struct sandbox (the allocator's cap and the instruction
 * count), making a state, opening the allowed libraries, and the read-only proxies that hand
 * struct value trees to Lua.
 * Must not: be included outside engine/verdict/ (the engine's API is verdict.h).
 */
#ifndef DIAG_VERDICT_SANDBOX_H
#define DIAG_VERDICT_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

#include "common/value.h"

struct sandbox {
	size_t used, limit;     /* bytes */
	size_t steps, max_steps; /* instructions */
	bool mem_hit;           /* the cap refused an allocation at least once */
};

/* A fresh state with the capped allocator and the instruction hook (0: the defaults of
 * verdict.h); NULL when even that cannot be allocated. */
lua_State *sandbox_new(struct sandbox *sb, size_t max_mem, size_t max_steps);
/* base, string, table, math, utf8, minus what could escape or hang (may raise: call in pcall). */
void sandbox_open_libs(lua_State *L);

/* The proxies' metatable and side tables in the registry (may raise: call in pcall). */
void proxies_init(lua_State *L);
/* Pushes v: scalars as Lua values, containers as read-only proxies (nil for NULL). */
void proxy_push_value(lua_State *L, const struct value *v);
/* The node behind the proxy at idx, or NULL when it is not one. Raw accessors only. */
const struct value *proxy_target(lua_State *L, int idx);

#endif
