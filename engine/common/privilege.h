/* privilege.h — on whose behalf this process runs, and with what: root (euid 0, sudo included), or
 * a user holding capabilities (a binary given cap_bpf,cap_perfmon+ep by setcap, or ambient
 * capabilities), or a plain user.
 *
 * Owns: the one answer to "which trust rules apply" that recipe search, the audit trail, the
 * plan and the target scan all ask, and the kernel's own answer to "could the caller ptrace this
 * process".
 * - Root: files that decide what runs (recipes, policy, audit files) must be root's alone, ./recipes
 *   is not searched (the current directory is anyone's under sudo).
 * - Capabilities without root (PRIV_CAPS): root's rules, and more, because the caller is a user
 *   who was given tracing, not root's trust: only the installed recipes (no --recipes, no
 *   $DIAGNOSE_RECIPES, no ./recipes), no $DIAGNOSE_POLICY or $DIAGNOSE_AUDIT_FILE, and a target
 *   process only where the caller could ptrace it (the kernel's check, our credentials:
 *   CAP_SYS_PTRACE, when held, lets every process through); no host-wide run without
 *   CAP_SYS_PTRACE.
 * - A set-user-ID root binary (euid 0, another real uid) is refused outright (PRIV_SETUID): its
 *   credentials would pass every check made on the caller's behalf.
 * Must not: cache the answer (capabilities can be dropped mid-run), print, or hold global state.
 */
#ifndef DIAG_PRIVILEGE_H
#define DIAG_PRIVILEGE_H

#include <stdbool.h>

enum privilege {
	PRIV_USER = 0, /* neither root nor any capability: BPF will be refused by the kernel */
	PRIV_ROOT,     /* euid 0 and real uid 0 (root, sudo) */
	PRIV_CAPS,     /* a non-root uid holding capabilities */
	PRIV_SETUID,   /* euid 0 for another real uid: never trusted */
};

enum privilege privilege_now(void);
/* Root's rules for the files that decide what runs: PRIV_ROOT or PRIV_CAPS (or PRIV_SETUID). */
bool privilege_strict(void);
/* PRIV_CAPS: the installed recipes only, no environment, targets the caller could ptrace. */
bool privilege_on_behalf_of_user(void);
/* Whether this process holds CAP_SYS_PTRACE (every process may be a target). */
bool privilege_ptrace_any(void);
/* The kernel's answer, with our credentials: whether /proc/PID/mem opens for reading
 * (PTRACE_MODE_ATTACH: the same uid and a dumpable process, or CAP_SYS_PTRACE; Yama's scope
 * applies). Opening reads nothing. */
bool privilege_can_ptrace(int pid);

#endif
