-- wait_table.lua — the wait functions of the runtimes people run, as data: which user frame of
-- an off-CPU stack says what a thread waits for, in the runtime's own words. Loaded as global
-- `wait_table`; waits.classify (lua/lib/waits.lua) reads it, and with it every global
-- `wait_table_NAME` that a file lua/lib/wait_table_NAME.lua returns (a recipe author's own
-- entries, matched before these).
--
-- Owns: the entries (runtime, function names, callers, class, words, next steps), each checked
-- against the real binaries of Debian 12 where they are named there (see docs/symptoms/latency.md).
-- Must not: hold code, thresholds or verdicts; name the C library's own wrappers (pthread_*,
-- sem_*: waits.USER, the fallback when no entry here names the wait).
--
-- An entry:
--   runtime  who owns the function ("postgresql", "jvm", ...): shown in the evidence
--   fn       the frame names of the wait; a name matches a frame equal to it, a demangled C++
--            frame with its parameters ("Parker::park" matches "Parker::park(bool, long)"), or,
--            ending in "*", any frame it begins ("LWLockAcquire*")
--   under    optional: one of these names must be a caller of the fn frame (a frame further from
--            the leaf), within `within` frames of it when given
--   class    lock | latch | condition | event-loop | idle | gil | park | peer | sleep
--              lock       waits for a lock another thread or process holds
--              latch      waits to be signalled by another process (what for: the caller says)
--              condition  waits on a condition (Object.wait, a queue): for work, as a rule
--              event-loop an event loop parked in epoll/poll: idle, or waiting on peers
--              idle       waits for work (a client's next command, a background loop's timer)
--              gil        waits for Python's global interpreter lock
--              park       a parked thread (LockSupport.park): a lock if brief, idle if long
--              peer       waits for another process or host to answer
--              sleep      sleeps on purpose (a cost delay, a pacing loop)
--   what     the words: "waits for WHAT in FRAME ← CALLER"
--   detail_by_caller  optional: {CALLER = words} added as "WHAT (WORDS)" when the named frame's
--            caller is CALLER
--   parked_is_idle  optional: waits averaging waits.PARKED_NS or more are idle (a parked pool)
--   python_under  optional: the innermost Python frame above the fn frame (CPython stacks read
--            with their Python frames) must be one of these names
--   python   optional: true, the stack must have a Python frame above the fn frame (what the
--            Python code waits on is then its own, e.g. a lock it takes)
--   fallback optional: matched only when no other entry matches any frame (a generic wait
--            whose callers say more)
--   steps    next steps, "{pid}" replaced by the target's pid
--   follow   optional: the recipe that diagnoses this wait in the runtime's own terms (latency
--            and triage name it as their verdict's follow-up, `next`, for --follow)
-- Entries are tried frame by frame from the leaf (the innermost frame that an entry names wins),
-- and in this order at one frame: a specific entry before a general one.

local PG_ACTIVITY = "SELECT pid, pg_blocking_pids(pid), wait_event_type, wait_event, state, query FROM pg_stat_activity WHERE cardinality(pg_blocking_pids(pid)) > 0;"
local PG_LOCKS = "SELECT l.locktype, l.relation::regclass, l.mode, l.granted, l.pid, a.state, a.xact_start, a.query FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.pid IN (SELECT unnest(pg_blocking_pids(pid)) FROM pg_stat_activity) OR NOT l.granted;"
local PG_WAIT_EVENT = "SELECT pid, backend_type, wait_event_type, wait_event, state, query FROM pg_stat_activity WHERE wait_event IS NOT NULL;"
local PG_IDLE_IN_XACT = "SELECT pid, state, now() - xact_start AS in_transaction, query FROM pg_stat_activity WHERE state LIKE 'idle in transaction%';"
local PG_WAIT = { "WaitLatch", "WaitLatchOrSocket", "WaitEventSetWait" }

return {
  -- ---- PostgreSQL 15 (postgres: .dynsym only; static functions such as WaitOnLock, pq_recvbuf,
  -- AutoVacLauncherMain show as postgres+0x...) -------------------------------------------------
  { runtime = "postgresql", fn = { "LWLockAcquire", "LWLockWaitForVar", "LWLockAcquireOrWait" }, class = "lock",
    follow = "postgres-slow",
    what = "an LWLock (a shared-memory lock: buffer mapping, WAL insertion, a lock-manager partition)",
    steps = { "Which LWLock: " .. PG_WAIT_EVENT .. " (wait_event_type = 'LWLock' names it)",
      "Many backends on one LWLock is contention inside PostgreSQL: fewer active connections (a pooler), larger shared_buffers or wal_buffers, depending on the lock" } },
  { runtime = "postgresql", fn = { "ProcSleep" }, under = { "LockAcquireExtended" }, class = "lock",
    follow = "postgres-slow",
    what = "a heavyweight lock",
    detail_by_caller = { XactLockTableWait = "row or transaction", ConditionalXactLockTableWait = "row or transaction",
      LockTuple = "tuple", LockRelationOid = "relation", LockRelation = "relation", LockRelationForExtension = "relation extension",
      LockPage = "page", LockDatabaseObject = "object", LockSharedObject = "shared object",
      SpeculativeInsertionWait = "speculative insertion", pg_advisory_lock_int8 = "advisory",
      pg_advisory_xact_lock_int8 = "advisory" },
    steps = { "Who blocks whom: " .. PG_ACTIVITY, "What they hold: " .. PG_LOCKS,
      "A blocker 'idle in transaction' holds its locks until its client commits: " .. PG_IDLE_IN_XACT .. " (idle_in_transaction_session_timeout, lock_timeout bound it)" } },
  { runtime = "postgresql", fn = { "ProcWaitForSignal" }, under = { "LockBufferForCleanup" }, class = "lock",
    what = "a buffer pin (VACUUM waits for other backends to release a page)",
    steps = { "Which backends: " .. PG_WAIT_EVENT .. " (wait_event BufferPin)", "Long-running queries or open cursors keep the page pinned" } },
  { runtime = "postgresql", fn = { "SyncRepWaitForLSN" }, class = "peer",
    what = "a synchronous standby to confirm the commit (synchronous_commit)",
    steps = { "The standbys' lag: SELECT application_name, state, sync_state, write_lag, flush_lag, replay_lag FROM pg_stat_replication;",
      "A slow or unreachable synchronous standby holds every commit: check synchronous_standby_names and the standby's own latency" } },
  { runtime = "postgresql", fn = { "pg_usleep" }, under = { "vacuum_delay_point" }, class = "sleep",
    what = "the cost-based vacuum delay (vacuum_cost_delay, autovacuum_vacuum_cost_delay)",
    steps = { "By design: VACUUM paces its I/O; raise the cost limit if it falls behind (pg_stat_progress_vacuum)" } },
  { runtime = "postgresql", fn = { "pg_usleep" }, class = "sleep", what = "pg_usleep (a retry delay)",
    steps = { "What it sleeps for: " .. PG_WAIT_EVENT } },
  { runtime = "postgresql", fn = { "ConditionVariableSleep", "ConditionVariableTimedSleep" }, class = "latch",
    what = "a condition variable (another process's progress: a checkpoint, a parallel worker, a replication slot)",
    steps = { "What for: " .. PG_WAIT_EVENT } },
  { runtime = "postgresql", fn = PG_WAIT, under = { "CheckpointWriteDelay" }, class = "sleep",
    what = "the checkpoint's write pacing (checkpoint_completion_target)",
    steps = { "By design: the checkpointer spreads its writes over the checkpoint interval" } },
  { runtime = "postgresql", fn = PG_WAIT, under = { "secure_read", "pq_getbyte", "pq_getbyte_if_available", "ReadCommand", "SocketBackend" },
    class = "idle", what = "the client's next command (the backend is idle in its session)",
    steps = { "If clients are slow while backends wait for them, the time is in the clients or the network",
      "A session 'idle in transaction' holds its locks meanwhile: " .. PG_IDLE_IN_XACT } },
  { runtime = "postgresql", fn = PG_WAIT, under = { "BackgroundWriterMain", "CheckpointerMain", "WalWriterMain", "PgArchiverMain",
      "StartAutoVacLauncher", "AutoVacLauncherMain", "ApplyLauncherMain", "SysLogger_Start", "SysLoggerMain",
      "exec_replication_command", "WalSndLoop" },
    class = "idle", what = "work (a background process's main loop: its timer or a signal)",
    steps = { "By design: background processes sleep between rounds" } },
  { runtime = "postgresql", fn = PG_WAIT, class = "latch", fallback = true,
    what = "its latch (a signal from another process, or a timeout)",
    steps = { "What it waits for: " .. PG_WAIT_EVENT } },

  -- ---- nginx (nginx: .dynsym only; ngx_epoll_process_events is static) ------------------------
  { runtime = "nginx", fn = { "ngx_epoll_process_events", "ngx_process_events_and_timers" }, class = "event-loop",
    what = "events (the worker's event loop)",
    steps = { "Whether requests are outstanding meanwhile: the upstream response times ($upstream_response_time in the access log)" } },
  { runtime = "nginx", fn = { "ngx_thread_cond_wait" }, class = "idle", what = "a task (nginx's thread pool)",
    steps = { "By design: the thread pool waits for blocking file operations to do" } },
  { runtime = "nginx", fn = { "ngx_master_process_cycle" }, class = "idle", what = "signals (the master process)",
    steps = { "By design: the master only manages its workers" } },

  -- ---- Redis 7.0 (redis-check-rdb, which redis-server links to: .dynsym only) ------------------
  { runtime = "redis", fn = { "aeApiPoll", "aeProcessEvents" }, class = "event-loop",
    what = "events (Redis's event loop)",
    steps = { "Slow commands meanwhile: redis-cli SLOWLOG GET 10; redis-cli --latency" } },
  { runtime = "redis", fn = { "pthread_cond_wait" }, under = { "bioProcessBackgroundJobs" }, within = 2, class = "idle",
    what = "background jobs (a bio thread: lazy free, AOF fsync, close)", steps = { "By design" } },
  { runtime = "redis", fn = { "pthread_mutex_lock" }, under = { "IOThreadMain" }, within = 2, class = "idle",
    what = "the main thread to hand it work (io-threads park on their mutex)", steps = { "By design" } },

  -- ---- the JVM (libjvm.so: .symtab, demangled with parameters) --------------------------------
  { runtime = "jvm", fn = { "LinuxWaitBarrier::wait" }, class = "lock",
    what = "a safepoint (the JVM stopped the Java threads: a GC pause or another VM operation)",
    steps = { "The pauses: run with -Xlog:safepoint,gc; jcmd {pid} GC.heap_info" } },
  { runtime = "jvm", fn = { "ObjectMonitor::EnterI", "ObjectMonitor::enter", "ObjectMonitor::ReenterI", "ObjectSynchronizer::enter" },
    class = "lock", what = "a Java monitor (synchronized)",
    steps = { "Which monitor and who holds it: jstack -l {pid} ('waiting to lock <0x…>' and the thread with '- locked <0x…>')" } },
  { runtime = "jvm", fn = { "ObjectMonitor::wait", "ObjectSynchronizer::wait", "JVM_MonitorWait" }, class = "condition",
    what = "Object.wait()", steps = { "What for: jstack -l {pid} ('in Object.wait()', the monitor it waits on)" } },
  { runtime = "jvm", fn = { "Unsafe_Park", "Parker::park" }, class = "park", parked_is_idle = true,
    what = "LockSupport.park (a java.util.concurrent lock or condition)",
    steps = { "Which lock: jstack -l {pid} ('parking to wait for <0x…> (a …ReentrantLock…)'; 'Locked ownable synchronizers' names the holder)" } },
  { runtime = "jvm", fn = { "JVM_Sleep", "JavaThread::sleep" }, class = "sleep", what = "Thread.sleep()",
    steps = { "Which thread sleeps: jstack {pid}" } },
  -- HotSpot's own semaphores (a Java Semaphore parks, as above): the GC's worker gangs
  -- (GangWorker::loop in 17, WorkerThread::run in 21) and concurrent threads wait on them for work
  { runtime = "jvm", fn = { "PosixSemaphore::wait", "Semaphore::wait" }, class = "idle",
    what = "work (a JVM thread: a GC worker or concurrent GC thread)", steps = { "By design" } },
  { runtime = "jvm", fn = { "Monitor::wait", "Monitor::wait_without_safepoint_check", "os::PlatformMonitor::wait" },
    class = "idle", what = "work (a JVM thread: the VM thread, a compiler, GC or service thread)", steps = { "By design" } },

  -- ---- CPython 3.11 (python3.11: .dynsym only; take_gil is static, and the one caller of
  -- pthread_cond_timedwait; drop_gil's forced switch waits in pthread_cond_wait) ----------------
  { runtime = "cpython", fn = { "take_gil" }, class = "gil", what = "the GIL (take_gil)",
    steps = { "Threads that run Python code share one GIL: move CPU-bound work to processes (multiprocessing, concurrent.futures.ProcessPoolExecutor) or to C code that releases it",
      "Which threads hold it: py-spy dump --pid {pid}" } },
  { runtime = "cpython", fn = { "pthread_cond_timedwait" }, within = 2,
    under = { "PyEval_RestoreThread", "PyEval_AcquireThread", "PyEval_AcquireLock", "_PyEval_EvalFrameDefault", "_Py_read", "_Py_write" },
    class = "gil", what = "the GIL (take_gil)",
    steps = { "Threads that run Python code share one GIL: move CPU-bound work to processes (multiprocessing, concurrent.futures.ProcessPoolExecutor) or to C code that releases it",
      "Which threads hold it: py-spy dump --pid {pid}" } },
  { runtime = "cpython", fn = { "pthread_cond_wait" }, under = { "PyEval_SaveThread", "drop_gil" }, within = 1, class = "gil",
    what = "another thread to take the GIL (drop_gil's forced switch)", steps = { "Which threads hold it: py-spy dump --pid {pid}" } },
  -- PyThread_acquire_lock_timed is every blocking acquire of a Python lock; the Python frame that
  -- called it says what for: threading's own waits for work (a Condition, Event, Queue, join, a
  -- futures worker's empty queue), else a lock the code takes (with lock:, lock.acquire())
  { runtime = "cpython", fn = { "PyThread_acquire_lock_timed" }, class = "condition", parked_is_idle = true,
    python_under = { "Condition.wait (*", "Condition.wait_for (*", "Event.wait (*", "Thread._wait_for_tstate_lock (*",
      "Thread.join (*", "Semaphore.acquire (*", "BoundedSemaphore.acquire (*", "Barrier.wait (*", "Barrier._wait (*",
      "Queue.get (*", "Queue.put (*", "SimpleQueue.get (*", "_worker (*/concurrent/futures/thread.py*",
      "_worker (*/concurrent/futures/process.py*", "Timer.run (*" },
    what = "work (threading: a Condition, Event or Queue wait, a join)",
    steps = { "What it waits for: py-spy dump --pid {pid}" } },
  { runtime = "cpython", fn = { "PyThread_acquire_lock_timed" }, python = true, class = "lock",
    what = "a Python lock (threading.Lock or RLock)",
    steps = { "Which lock and who holds it: py-spy dump --pid {pid} --locals (the lock objects each frame holds)" } },
  { runtime = "cpython", fn = { "PyThread_acquire_lock_timed" }, class = "condition", parked_is_idle = true,
    what = "a Python lock (threading.Lock, or a Condition or Queue wait)",
    steps = { "Which lock and who holds it: py-spy dump --pid {pid}" } },

  -- ---- libuv / Node.js (node: .symtab) --------------------------------------------------------
  { runtime = "libuv", fn = { "uv__io_poll" }, class = "event-loop", what = "events (libuv's event loop)",
    steps = { "Whether requests wait on peers meanwhile: the application's own timings (node --cpu-prof shows only CPU)" } },
  { runtime = "libuv", fn = { "uv_cond_wait", "uv_cond_timedwait" }, class = "condition",
    what = "work (libuv's thread pool or a Node platform worker)", steps = { "By design" } },

  -- ---- Go's runtime (a Go binary's .symtab: an M, the OS thread, parks in the scheduler; a
  -- goroutine's own wait, runtime.gopark, is not on any thread's stack) -------------------------
  { runtime = "go", fn = { "runtime.netpoll" }, class = "event-loop", what = "network events (Go's netpoller)",
    steps = { "Which goroutines wait, and on what: curl localhost:PORT/debug/pprof/goroutine?debug=1 (net/http/pprof)" } },
  { runtime = "go", fn = { "runtime.futexsleep", "runtime.notesleep", "runtime.notetsleep", "runtime.notetsleepg" },
    under = { "runtime.stopm", "runtime.findRunnable", "runtime.findrunnable", "runtime.schedule", "runtime.sysmon", "runtime.templateThread" },
    class = "idle", what = "goroutines to run (an idle M parked by the scheduler)",
    steps = { "Goroutine waits are not thread waits: curl localhost:PORT/debug/pprof/goroutine?debug=1, or go tool trace" } },
  { runtime = "go", fn = { "runtime.usleep" }, class = "sleep", what = "runtime.usleep (the scheduler's own pacing)", steps = { "By design" } },
}
