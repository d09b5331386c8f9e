/* jcmd.h — asking a JVM to write its perf map: `jcmd PID Compiler.perfmap` (JDK 17+ writes
 * /tmp/perf-PID.map in the JVM's own /tmp), run as the JVM's own user, on the operator's request
 * only (high-cpu's --param jvm_perfmap=yes).
 *
 * Owns: choosing the jcmd binary (the JVM's own JDK's bin/jcmd, found by looking for the JDK
 * home under a few install roots whose lib/server/libjvm.so is the very file the process maps:
 * every directory from "/" and the file itself root's and writable by root only, no symlink
 * followed, no path the process names ever looked at; none: refused), running it as the owner of
 * /proc/PID (refused when that is not the effective uid and gid the process runs as: a process
 * that is not dumpable has a /proc of root's) in the process's own cgroups (its groups reduced to
 * that gid, then setgid, setuid) with a fixed environment, no descriptor of ours, the default
 * descriptor limit, its signal mask cleared, its output bounded, killed at the deadline, at the
 * run's stop signal or when stopped, and reaped.
 * Must not: run anything unasked, run it as root for another user's process, stat, open or
 * resolve a path the process names, take PATH or the caller's environment, print, or read the
 * perf map (perfmap.c does, through tfile.c).
 */
#ifndef DIAG_JCMD_H
#define DIAG_JCMD_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define JCMD_TIMEOUT_NS (15ull * 1000000000) /* jcmd is a JVM: seconds to start on a busy host */
#define JCMD_OUTPUT_MAX 4096                 /* bytes of its output kept for the message */

struct usyms;
struct tfile_reader;

/* Runs jcmd PID Compiler.perfmap for process pid, whose symbolizer us has read its mappings
 * (the libjvm.so mapped says it is a JVM, and which file it is). The process's /proc files are
 * read through files; waits until deadline_ns (mono_ns()) or the reader's deadline at most, and
 * not past a signal on the reader's stop descriptor. 0 and *what (one line for the report: which
 * jcmd ran, as which uid and gid) when it exited 0; -1 and err otherwise: not a JVM, no trusted
 * jcmd, a failed start, its exit status with the last line of its output, the deadline, a stop,
 * or the child stopped by a signal (then it is killed). */
int jcmd_perfmap(int pid, const struct usyms *us, struct tfile_reader *files, uint64_t deadline_ns,
		 char *what, size_t len, struct diag_err *err);

#endif
