/* pg_normalize.h — a SQL statement's text with its constants taken out, so that the executions of
 * one statement with different values group together (as pg_stat_statements does, on the text).
 *
 * Owns: the rules: string constants ('...', E'...', $tag$...$tag$, B'...', X'...') and numbers
 * become ?, a list of constants "?, ?, ?" becomes "?, ...", comments go, white space runs become
 * one blank; identifiers, quoted identifiers, keywords, operators and parameters ($1) stay.
 * Must not: allocate, or read past `in`'s NUL (the text comes from the server's memory, cut).
 */
#ifndef DIAG_PG_NORMALIZE_H
#define DIAG_PG_NORMALIZE_H

#include <stddef.h>

/* Writes the normalized text of in (NUL-terminated) to out (out_len > 0, always terminated). */
void pg_normalize(const char *in, char *out, size_t out_len);

#endif
