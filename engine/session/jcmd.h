/* jcmd.h — asking a JVM to write its perf map: `jcmd PID Compiler.perfmap` (JDK 17+ writes
 * /tmp/perf-PID.map in the JVM's own /tmp), run as the JVM's own user, on the operator's request
 * only (high-cpu's --param jvm_perfmap=yes).
 *
 * Owns: choosing the jcmd binary (the JVM's own bin/jcmd when the libjvm.so the process maps is
 * the same file in our root, else /usr/bin/jcmd; every directory of its real path and the file
 * itself root's and writable by root only), running it as the owner of /proc/PID (refused when
 * that is not the effective uid and gid the process runs as: a process that is not dumpable has
 * a /proc of root's) (its groups reduced to that gid, then setgid, setuid) with a fixed environment, no descriptor of ours, its
 * signal mask cleared, its output bounded, killed at the deadline, and reaped.
 * Must not: run anything unasked, run it as root for another user's process, take PATH or the
 * caller's environment, print, or read the perf map (perfmap.c does, through tfile.c).
 */
#ifndef DIAG_JCMD_H
#define DIAG_JCMD_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define JCMD_TIMEOUT_NS (15ull * 1000000000) /* jcmd is a JVM: seconds to start on a busy host */
#define JCMD_OUTPUT_MAX 4096                 /* bytes of its output kept for the message */

struct usyms;

/* Runs jcmd PID Compiler.perfmap for process pid, whose symbolizer us has read its mappings
 * (libjvm.so says it is a JVM and where its JDK is). Waits until deadline_ns (mono_ns()) at most.
 * 0 and *what (one line for the report: which jcmd ran, as which uid and gid) when it exited 0;
 * -1 and err otherwise: not a JVM, no trusted jcmd, a failed start, its exit status with the
 * last line of its output, or the deadline (then it is killed). */
int jcmd_perfmap(int pid, const struct usyms *us, uint64_t deadline_ns, char *what, size_t len,
		 struct diag_err *err);

#endif
