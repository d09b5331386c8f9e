/* answer.h — checking a snippet's answer (internal to engine/verdict/).
 *
 * Owns: answer_check, run once by the child on what Lua returned and once by the parent on what
 * the child sent.
 * Must not: be included outside engine/verdict/.
 */
#ifndef DIAG_VERDICT_ANSWER_H
#define DIAG_VERDICT_ANSWER_H

#include "common/util.h"
#include "common/value.h"
#include "verdict/verdict.h"

/* Checks the answer as converted and builds the final one in *out: verdicts rebuilt in contract
 * order and sorted worst first (stable), report sections each with a string kind, ruled_out
 * items {id, text} and metrics {name, value, help} in the snippet's order. raw->verdicts is
 * required; raw->report, raw->ruled_out and raw->metrics are NULL when the snippet gave none
 * (then empty arrays). Takes everything in
 * raw (left all NULL). On failure returns -1, *out all NULL, err a one-line message
 * "CHUNK: verdicts[I].FIELD: what" (or ruled_out[I].FIELD, metrics[I].FIELD, report[I].kind). */
int answer_check(const char *chunk, struct verdict_answer *raw, struct verdict_answer *out,
		 struct diag_err *err);

#endif
