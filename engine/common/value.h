/* value.h — a small JSON-like tree: how results, verdicts and report sections travel between
 * the probes, the Lua verdict layer and the report writers.
 *
 * Owns: building, reading, freeing trees and writing them as JSON.
 * Must not: know what any key means. Objects keep insertion order (reports stay stable).
 * A container owns its children: value_obj_set / value_arr_push take ownership of the child.
 */
#ifndef DIAG_VALUE_H
#define DIAG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h" /* utf8_char_len, utf8_char_unsafe: the one rule the JSON writer follows */

enum value_type { V_NULL, V_BOOL, V_INT, V_NUM, V_STR, V_ARR, V_OBJ };

struct value {
	enum value_type type;
	union {
		bool b;
		int64_t i;
		double n;
		char *s;
		struct {
			struct value **items;
			size_t len, cap;
		} arr;
		struct {
			char **keys;
			struct value **vals;
			size_t len, cap;
		} obj;
	};
};

struct value *value_null(void);
struct value *value_bool(bool b);
struct value *value_int(int64_t i);
struct value *value_num(double n);
struct value *value_str(const char *s);
struct value *value_strn(const char *s, size_t len);
/* Takes ownership of a malloc'ed string. */
struct value *value_str_take(char *s);
struct value *value_arr(void);
struct value *value_obj(void);
void value_free(struct value *v);
struct value *value_copy(const struct value *v);

/* Replaces an existing key. Returns the child for chaining. */
struct value *value_obj_set(struct value *obj, const char *key, struct value *child);
struct value *value_arr_push(struct value *arr, struct value *child);

/* Shorthands for the common leaf cases. */
void value_set_int(struct value *obj, const char *key, int64_t i);
void value_set_num(struct value *obj, const char *key, double n);
void value_set_str(struct value *obj, const char *key, const char *s);
void value_set_bool(struct value *obj, const char *key, bool b);

/* Lookups return NULL when absent or of another type. */
const struct value *value_get(const struct value *obj, const char *key);
const char *value_get_str(const struct value *obj, const char *key);
/* Numeric lookup accepting V_INT or V_NUM; returns dflt when absent. */
double value_get_num(const struct value *obj, const char *key, double dflt);

/* JSON. indent < 0: compact on one line; otherwise pretty with that many spaces per level. */
void value_write_json(const struct value *v, FILE *out, int indent);
/* Writes s as a JSON string literal (with quotes), in ASCII plus valid UTF-8 only, whatever the
 * bytes of s (strings may come from the target: symbol names, comm, paths):
 * - '"', '\\', \n, \r, \t as two-character escapes; every other character utf8_char_unsafe
 *   names (controls, DEL, C1 controls, bidirectional controls, U+2028/U+2029, U+FFFE/U+FFFF) as
 *   \uNNNN;
 * - each byte that does not begin a well-formed UTF-8 sequence (stray continuation byte, overlong
 *   form, surrogate, above U+10FFFF, truncated sequence) as \ufffd (U+FFFD REPLACEMENT
 *   CHARACTER), one per byte: the output is valid JSON, the original bytes are not recoverable. */
void json_write_string(FILE *out, const char *s);
/* The same, except that bytes that are not UTF-8 are written as they are: lossless, for a reader
 * that accepts them (json_parse with raw_bytes, e.g. the verdict child's pipe); not a JSON
 * document for anyone else, so never for a report. */
void json_write_bytes(FILE *out, const char *s);

#endif
