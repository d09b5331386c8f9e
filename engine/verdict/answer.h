/* answer.h — what a recipe's snippet answers: its verdicts' severities, the answer's shape
 * (struct verdict_answer), and its check. Part of the verdict API (verdict.h includes it).
 *
 * Owns: severities by name, the worst of an array of verdicts, freeing an answer, and
 * answer_check, run once by the child on what Lua returned and once by the parent on what the
 * child sent (internal to engine/verdict/).
 * Must not: run Lua, or print.
 */
#ifndef DIAG_VERDICT_ANSWER_H
#define DIAG_VERDICT_ANSWER_H

#include "common/util.h"
#include "common/value.h"

enum severity { SEV_OK = 0, SEV_INFO = 1, SEV_WARNING = 2, SEV_CRITICAL = 3 };

/* What a snippet answered, checked; every member an array, owned by whoever holds the answer
 * (verdict_answer_free). */
struct verdict_answer {
	struct value *verdicts;  /* worst first (stable: the snippet's order within a severity) */
	struct value *report;    /* sections, possibly empty */
	struct value *ruled_out; /* {id, text} objects in the snippet's order, possibly empty */
	struct value *metrics;   /* {name, value, help}: the run's key figures, possibly empty */
};
void verdict_answer_free(struct verdict_answer *a);

enum severity severity_parse(const char *s, int *ok);
const char *severity_name(enum severity s);
/* Worst severity in an array of verdict objects (SEV_OK when empty). */
enum severity verdicts_worst(const struct value *verdicts);

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
