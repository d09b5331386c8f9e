/* recorded_shape.h — the check the Lua verdict tests share: recorded results (trees built by a
 * test or read from a recorded report) must look like what the probes emit, each probe's tree
 * against its kind's declaration (catalog.h, shape.h), the kinds being those of the recipe.
 * Must not: run Lua, or read anything but the recipe.
 */
#ifndef DIAG_TEST_RECORDED_SHAPE_H
#define DIAG_TEST_RECORDED_SHAPE_H

#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "recipe/load.h"
#include "recipe/recipe.h"
#include "plan/shape.h"

/* recipe_rel is relative to $DIAG_SRCDIR (default "."), e.g. "recipes/latency.yaml"; fails the
 * test (cmocka fail_msg) on a probe id the recipe lacks or a tree unlike its kind's. */
static inline void assert_recorded_shape(const char *recipe_rel, const struct value *results)
{
	const char *root = getenv("DIAG_SRCDIR");
	char *path = xasprintf("%s/%s", root ? root : ".", recipe_rel);
	struct recipe *r;
	struct diag_err err;
	if (recipe_load(path, &r, &err))
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < results->obj.len; i++) {
		const struct recipe_probe *rp = NULL;
		for (unsigned k = 0; k < r->n_probes && !rp; k++)
			if (strcmp(r->probes[k].id, results->obj.keys[i]) == 0)
				rp = &r->probes[k];
		if (!rp)
			fail_msg("recorded results for \"%s\": not a probe of %s", results->obj.keys[i],
				 r->name);
		char msg[512];
		if (shape_check(catalog_find(rp->kind), rp->id, results->obj.vals[i], msg, sizeof(msg)))
			fail_msg("recorded results unlike the probe's: %s", msg);
	}
	recipe_free(r);
	free(path);
}

#endif
