/* snippet.h — the verdict phase's two stages in one Lua state (internal to engine/verdict/).
 *
 * Owns: the declarations of snippet.c's staged run: verdict_prepare makes the sandbox, runs the
 * libraries and compiles the snippet before any result exists (verdict.c's child does it while
 * the collection goes on); verdict_answer then runs the snippet on the results.
 * Must not: be included outside engine/verdict/ (the engine's API is verdict.h).
 */
#ifndef DIAG_VERDICT_SNIPPET_H
#define DIAG_VERDICT_SNIPPET_H

#include "verdict/verdict.h"

struct verdict_state;

/* Stage 1: in->lua, in->libs, in->thresholds and the limits are used (in must outlive the state;
 * in->results and in->run are not). Never NULL: a failure is kept and given by verdict_answer. */
struct verdict_state *verdict_prepare(const struct verdict_input *in);
/* Stage 2, once: the snippet on results and run (NULL: empty objects, which must outlive the
 * call). As verdict_run_inprocess: 0 with *out set, or -1 with err. */
int verdict_answer(struct verdict_state *st, const struct value *results, const struct value *run,
		   struct verdict_answer *out, struct diag_err *err);
void verdict_state_free(struct verdict_state *st);

#endif
