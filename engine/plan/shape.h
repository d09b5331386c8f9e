/* shape.h — results against their kind's declaration (catalog.h: struct result_field).
 *
 * Owns: walking a result tree and the declared fields of its kind: every node present must be
 * declared with its type (a number field accepts an integer: JSON cannot tell 2.0 from 2), every
 * field declared required must be present wherever its parent is, arrays' items are checked one
 * by one; and the text of the first mismatch. Also the names of the result types.
 * Must not: touch the kernel, print, or know any kind (it reads declarations only).
 */
#ifndef DIAG_SHAPE_H
#define DIAG_SHAPE_H

#include <stddef.h>

#include "plan/catalog.h"
#include "common/value.h"

/* "integer", "number", "string", "boolean", "array", "object". */
const char *shape_type_name(enum result_type t);

/* The declaration of path (exact text, "[]" and "*" as declared); NULL when there is none. */
const struct result_field *shape_find(const struct result_field *fields, size_t n,
				      const char *path);

/* Checks results against fields. Returns 0 when they match; else -1 and msg gets the first
 * mismatch, in the tree's order (an object's keys in order, each subtree first, then the
 * required fields it lacks in declaration order):
 *   "probe ID (KIND): results.PATH: expected TYPE, got TYPE"
 *   "probe ID (KIND): results.PATH: undeclared field"
 *   "probe ID (KIND): results.PATH: missing"
 * PATH is the node's own path: real keys and indices, e.g. "stacks[3].user[0]". */
int shape_check_fields(const struct result_field *fields, size_t n, const char *probe_id,
		       const char *kind_name, const struct value *results, char *msg, size_t len);

/* The same against kind's declaration. */
int shape_check(const struct probe_kind *kind, const char *probe_id, const struct value *results,
		char *msg, size_t len);

#endif
