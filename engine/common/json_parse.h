/* json_parse.h — reading JSON text (RFC 8259) into a struct value tree: recorded reports
 * (replay, diff, merge) and the verdict child's answer. The parser is Debian's jansson
 * (json_parse.c says what is done around it).
 *
 * Owns: a strict, bounded reader: grammar exactly as RFC 8259 (no comments, no trailing commas,
 * no single quotes, no NaN/Infinity, no leading zeros, no byte order mark), UTF-8 checked in
 * strings (overlong forms, surrogates and code points past U+10FFFF refused) unless raw_bytes,
 * \u escapes decoded with surrogate pairs required to pair up, duplicate object keys refused,
 * nesting depth and node count capped (checked before jansson builds past them). Integers (no
 * fraction, no exponent) that fit in int64_t become V_INT, every other number V_NUM; a number
 * outside the range of a double is refused. Rule for NUL: struct value strings are C strings,
 * so "\u0000" (in a string or a key) is refused rather than silently cut; a raw control byte
 * (below 0x20) is refused as the RFC says.
 * Must not: print, trust the input to be NUL-terminated or small, recurse deeper than max_depth,
 * or take more than about linear time in the input's length (jansson hashes object keys, with a
 * random seed).
 */
#ifndef DIAG_JSON_PARSE_H
#define DIAG_JSON_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/util.h"
#include "common/value.h"

#define JSON_DEFAULT_MAX_DEPTH 64

struct json_limits {
	size_t max_depth; /* nesting of arrays and objects; 0 = JSON_DEFAULT_MAX_DEPTH; held below
			   * jansson's compile-time JSON_PARSER_MAX_DEPTH (2048 in Debian 12) */
	size_t max_nodes; /* values in the tree (containers included); 0 = no cap but the text's length */
	bool raw_bytes;   /* accept string bytes that are not valid UTF-8, kept as they are
			   * (what json_write_bytes writes: the verdict child's pipe) */
	size_t *nodes_used; /* out, when not NULL: the values counted, also on failure (max_nodes
			     * when that cap is what stopped the parse): a budget over many texts */
};

/* Parses len bytes of text (need not end in NUL); lim NULL = the defaults above. Returns the tree
 * (caller frees with value_free), or NULL with err->code DIAG_EXIT_USAGE and a one-line message
 * "at byte N: what" for the caller to prefix with a name: N counted from 0, the start of the
 * token the message quotes ("... near 'token'", in printable ASCII) or of the value past a cap;
 * `what` is jansson's wording ("duplicate object key", "invalid token", ...) or ours for the caps
 * ("nested deeper than N levels", "more than N values"). */
struct value *json_parse(const char *text, size_t len, const struct json_limits *lim,
			 struct diag_err *err);

#endif
