/* runtime_stacks.h — synthetic off-CPU stacks of real servers, for the Lua verdict tests
 * (test_latency_lua.c, test_triage_lua.c): each shaped as the off_cpu probe reports it (leaf
 * first, DWARF-unwound user frames), with the function names of Debian 12's binaries and the call
 * chains of their sources — PostgreSQL 15 (.dynsym only: static functions such as WaitOnLock and
 * pq_recvbuf show as postgres+0x..., LockAcquire tail-calls LockAcquireExtended, ReadCommand and
 * SocketBackend are inlined into PostgresMain, WaitEventSetWaitBlock into WaitEventSetWait),
 * nginx, the JVM (libjvm.so, demangled with parameters) and CPython 3.11 (take_gil static: its
 * pthread_cond_timedwait under PyEval_RestoreThread) — and a recorded fixture's off-CPU stacks
 * replaced by them.
 * Must not: know any recipe's verdicts (the tests do).
 */
#ifndef DIAG_TEST_RUNTIME_STACKS_H
#define DIAG_TEST_RUNTIME_STACKS_H

#include "common/json_parse.h"
#include "recorded_verdicts.h"

#define K_EPOLL                                                                                    \
	"[\"__schedule\",\"schedule\",\"schedule_hrtimeout_range\",\"ep_poll\",\"do_epoll_wait\","  \
	"\"__x64_sys_epoll_wait\",\"do_syscall_64\",\"entry_SYSCALL_64_after_hwframe\"]"
#define K_FUTEX                                                                                    \
	"[\"__schedule\",\"schedule\",\"futex_do_wait\",\"__futex_wait\",\"futex_wait\",\"do_futex\"," \
	"\"__x64_sys_futex\",\"do_syscall_64\",\"entry_SYSCALL_64_after_hwframe\"]"

/* One stack: comm, kernel frames (K_*), user frames (a JSON array), count and weight (ns). */
#define STACK(comm, kernel, user, count, weight)                                                   \
	"{\"tag\":\"sleeping\",\"comm\":\"" comm "\",\"in_kernel\":true,\"kernel\":" kernel           \
	",\"user\":" user ",\"count\":" #count ",\"weight\":" #weight ",\"user_from\":[\"dwarf\"]}"

/* XactLockTableWait → LockAcquireExtended → WaitOnLock → ProcSleep → WaitLatch →
 * WaitEventSetWait → epoll_wait: an UPDATE waiting for the transaction that holds the row. */
#define PG_ROW_LOCK                                                                                \
	"[\"epoll_wait\",\"WaitEventSetWait\",\"WaitLatch\",\"ProcSleep\",\"postgres+0x45d8a0\","       \
	"\"LockAcquireExtended\",\"XactLockTableWait\",\"heap_update\",\"postgres+0x1a2b30\","          \
	"\"postgres+0x31c4d0\",\"standard_ExecutorRun\",\"postgres+0x47a2f0\",\"PortalRun\","           \
	"\"PostgresMain\",\"postgres+0x3ee180\",\"PostmasterMain\",\"main\"]"
/* PostgresMain → pq_getbyte → pq_recvbuf → secure_read → WaitEventSetWait → epoll_wait: a
 * backend idle between its client's commands (Debian's build: ReadCommand inlined) */
#define PG_CLIENT_READ                                                                             \
	"[\"epoll_wait\",\"WaitEventSetWait\",\"secure_read\",\"postgres+0x34b3c0\",\"pq_getbyte\","    \
	"\"PostgresMain\",\"postgres+0x3ee180\",\"PostmasterMain\",\"main\"]"
/* the same, from a build that keeps ReadCommand and SocketBackend */
#define PG_CLIENT_READ_FULL                                                                        \
	"[\"epoll_wait\",\"WaitEventSetWait\",\"secure_read\",\"pq_recvbuf\",\"pq_getbyte\","           \
	"\"SocketBackend\",\"ReadCommand\",\"PostgresMain\",\"main\"]"
/* LWLockAcquire → PGSemaphoreLock → sem_wait: an LWLock, inside ProcSleep's own LWLockAcquire */
#define PG_LWLOCK_IN_PROCSLEEP                                                                     \
	"[\"libc.so.6+0x90a10\",\"sem_wait\",\"PGSemaphoreLock\",\"LWLockAcquire\",\"ProcSleep\","      \
	"\"postgres+0x45d8a0\",\"LockAcquireExtended\",\"XactLockTableWait\",\"PostgresMain\"]"
/* the background writer between rounds */
#define PG_BGWRITER                                                                                \
	"[\"epoll_wait\",\"WaitEventSetWait\",\"WaitLatch\",\"BackgroundWriterMain\","                  \
	"\"postgres+0x3e4a10\",\"postgres+0x3ed0c0\",\"PostmasterMain\",\"main\"]"
/* an nginx worker in its event loop (ngx_epoll_process_events static) */
#define NGINX_WORKER                                                                               \
	"[\"epoll_wait\",\"nginx+0x5a3e0\",\"ngx_process_events_and_timers\",\"nginx+0x5c1f0\","        \
	"\"ngx_spawn_process\",\"nginx+0x5b8a0\",\"ngx_master_process_cycle\",\"main\"]"
/* a Java thread in LockSupport.park (JIT frames unnamed without a perf map) */
#define JVM_PARK                                                                                   \
	"[\"__futex_abstimed_wait_common\",\"pthread_cond_wait\",\"Parker::park(bool, long)\","         \
	"\"Unsafe_Park\",\"[unknown]\",\"[unknown]\",\"[unknown]\"]"
/* a CPython 3.11 thread taking the GIL back after a C call (take_gil static) */
#define PY_GIL                                                                                     \
	"[\"__futex_abstimed_wait_common\",\"pthread_cond_timedwait\",\"python3.11+0xf92c0\","          \
	"\"PyEval_RestoreThread\",\"python3.11+0x1c2a40\",\"_PyEval_EvalFrameDefault\","                \
	"\"python3.11+0x1b8e70\",\"_PyEval_EvalFrameDefault\"]"
/* a CPython worker waiting on its queue (Queue.get → Condition.wait → lock.acquire) */
#define PY_QUEUE_WAIT                                                                              \
	"[\"__futex_abstimed_wait_common\",\"sem_clockwait\",\"PyThread_acquire_lock_timed\","          \
	"\"python3.11+0x2a1b40\",\"python3.11+0x1d0e20\",\"_PyEval_EvalFrameDefault\"]"

/* The trimmed incident RECIPE/NAME with `threads` threads, every process alive, and its
 * off-CPU stacks replaced by stacks_json (an array of STACK(...)). */
static inline struct value *incident_with_stacks(const char *recipe, const char *name, int threads,
						const char *stacks_json)
{
	struct value *fx = trimmed_incident(recipe, name);
	struct value *res = (struct value *)value_get(fx, "results");
	struct value *offcpu = (struct value *)value_get(res, "offcpu");
	struct value *ctx = (struct value *)value_get(res, "context");
	struct diag_err err;
	struct value *stacks = json_parse(stacks_json, strlen(stacks_json), NULL, &err);
	if (!stacks)
		fail_msg("stacks: %s", err.msg);
	double total = 0;
	for (size_t i = 0; i < stacks->arr.len; i++)
		total += value_get_num(stacks->arr.items[i], "weight", 0);
	value_obj_set(offcpu, "stacks", stacks);
	value_set_int(offcpu, "total_ns", (int64_t)total);
	value_set_int(ctx, "threads", threads);
	return fx;
}

#endif
