/* answer.h — checking a snippet's answer (internal to engine/verdict/).
 *
 * Owns: answer_check, run once by the child on what Lua returned and once by the parent on what
 * the child sent.
 * Must not: be included outside engine/verdict/.
 */
#ifndef DIAG_VERDICT_ANSWER_H
#define DIAG_VERDICT_ANSWER_H

#include "util.h"
#include "value.h"

/* Checks the answer as converted (takes ownership of raw verdicts and report; report NULL when
 * the snippet gave none) and builds the final one: verdicts rebuilt in contract order and sorted
 * worst first (stable), report sections each with a string kind. On failure returns -1, err a
 * one-line message "CHUNK: verdicts[I].FIELD: what", and frees both. */
int answer_check(const char *chunk, struct value *raw, struct value *rep,
		 struct value **verdicts, struct value **report, struct diag_err *err);

#endif
