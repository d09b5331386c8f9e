/* watchdog.h — the last bound on a run: when a stage outlives its limit, the probes come off and
 * the process ends.
 *
 * Every read of what a target names has a deadline (tfile.h), so a run normally ends on time
 * whatever the target does; the watchdog is for what no deadline was placed on. A stage (the
 * collection, reading its results) is armed with a limit; when the limit passes and the stage is
 * still going, the watchdog's thread closes every BPF link, program and perf event descriptor of
 * the process (the kernel detaches them at once, whatever the stuck thread holds), says so on
 * stderr, lets its owner write its last words (the audit record), and exits the process with
 * DIAG_EXIT_RUNTIME. What was collected is lost: the run was abandoned.
 * Owns: its thread, the limit, the emergency exit.
 * Must not: be armed while the run writes its report to stdout (a reader that is slow to read a
 * pipe is not a stuck run), take locks the stuck thread may hold (it writes stderr with write(2)),
 * or fire twice.
 */
#ifndef DIAG_WATCHDOG_H
#define DIAG_WATCHDOG_H

#include <stdint.h>

struct watchdog;

/* A watchdog, not armed. last_words(arg, why) runs on its thread when it fires, after the probes
 * are detached and before the exit (may be NULL). NULL when its thread cannot start. */
struct watchdog *watchdog_start(void (*last_words)(void *arg, const char *why), void *arg);
/* The stage now going on (a constant string) must end by deadline (mono_ns()); deadline 0
 * disarms. NULL w: nothing. */
void watchdog_arm(struct watchdog *w, const char *stage, uint64_t deadline_ns);
/* Stops and frees the watchdog (disarmed first: a fire in progress ends the process). */
void watchdog_stop(struct watchdog *w);

/* Closes every BPF link, program and perf event descriptor of this process; returns how many. */
int watchdog_detach_all(void);

#endif
