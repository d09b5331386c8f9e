-- blocked.lua — the threads a snapshot saw blocked since before the window (the thread_states
-- probe kind: engine/probes/thread_states.c), which no context switch shows: what each waits on,
-- in waits.lua's classes and the wait table's words, and what they make together. Loaded as
-- global `blocked`, for latency and triage.
--
-- Owns: reading the results (blocked.read; blocked.missing: a snapshot not taken), the class of a
-- snapshot thread (blocked.classify: a thread uninterruptible for the whole window, or in a file
-- system's request to a server that does not answer, is stuck in the kernel; a read on a server's
-- socket, a pipe or a terminal waits for input; the rest as waits.classify has it), which classes
-- are idle (waiting for work, or by design), the owner of a glibc mutex from its futex's words
-- (blocked.mutex_owner), the search for cycles of waiters and owners (deadlocks), the holders that
-- keep a lock for the whole window, a runtime's lock waits with no owner recorded (likely
-- deadlocked when two threads or more of a process wait so), and the words that name a thread and
-- its wait.
-- Must not: know a recipe's thresholds (the caller passes them) or make its verdicts; hold
-- runtime function names (lua/lib/wait_table.lua does).

local blocked = {}

-- Kernel frames of a file system's request waiting for its server's answer (FUSE, NFS and SunRPC,
-- SMB, Ceph, 9p, AFS): a thread there for the whole window waits on a server that does not answer.
blocked.FS_WAIT = { "^request_wait_answer", "^fuse_", "^__fuse_", "^nfs", "^__nfs", "^rpc_", "^__rpc_",
  "^cifs", "^smb2_", "^wait_for_response", "^ceph", "^p9_", "^v9fs_", "^afs_" }

-- The user frames of a thread waiting for a glibc mutex (its futex's words are the mutex's).
blocked.MUTEX_WAIT = { "pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
  "__lll_lock_wait", "lll_lock", "std::mutex::lock" }

-- System calls that wait by design, where the kernel frames do not say so (their wait's class).
local WAIT_CALLS = { pause = "work-wait", rt_sigsuspend = "work-wait", rt_sigtimedwait = "work-wait",
  wait4 = "work-wait", waitid = "work-wait", epoll_wait = "work-wait", epoll_pwait = "work-wait",
  epoll_pwait2 = "work-wait", poll = "work-wait", ppoll = "work-wait", select = "work-wait",
  pselect6 = "work-wait", accept = "work-wait", accept4 = "work-wait", nanosleep = "sleep",
  clock_nanosleep = "sleep" }

-- Classes in which a thread waits for work, or by design (a timer's sleep): idle.
blocked.IDLE = { ["work-wait"] = true, ["event-loop"] = true, sleep = true }

-- blocked.classify(t): the class of snapshot thread t (an item of results.threads.threads: it reads
-- like an off-CPU stack, with its system call and descriptor besides), and the wait table's match.
--   stuck      uninterruptible the whole window, or in a file system request that got no answer
--   runnable   runnable the whole window without getting a CPU
--   the classes of waits.classify otherwise (lock, work-wait, event-loop, peer, sleep, ...), where
--   a blocking read of a server's socket, a pipe, a FIFO or a terminal waits for input
--   (work-wait; a client's socket waits on its peer, and so does a write to a pipe nobody reads),
--   and a system call that waits by design names its class when the kernel frames do not
function blocked.classify(t)
  if t.tag == "runnable" then return "runnable" end
  local k = t.kernel or {}
  if t.tag == "uninterruptible" or diag.any_frame(k, blocked.FS_WAIT) then return "stuck" end
  local cls, m = waits.classify(t, "dwarf")
  if cls == "disk" or cls == "fault" then return "stuck", m end
  local fd = t.fd
  local reading = t.syscall == "read" or t.syscall == "readv" or t.syscall == "recvfrom" or t.syscall == "recvmsg"
  if cls == "peer" and fd and reading and ((fd.kind == "socket" and fd.role == "server") or fd.kind ~= "socket") then
    return "work-wait", m -- a server's client, a pipe or a FIFO, a terminal: input to come
  end
  if (cls == "other" or cls == "futex") and t.syscall and WAIT_CALLS[t.syscall] then return WAIT_CALLS[t.syscall], m end
  return cls, m
end

-- blocked.mutex_owner(t): the thread id holding the glibc mutex thread t waits for, from the words
-- at its futex's address (glibc's struct __pthread_mutex_s on x86-64: __lock, __count, __owner,
-- __nusers, __kind): __owner for the default (PTHREAD_MUTEX_NORMAL), error-checking and recursive
-- kinds, whose __lock holds 0, 1 or 2; for the robust and priority-inheritance kinds (__kind bits
-- 16 and 32, FUTEX_LOCK_PI) the lock word's low 30 bits (FUTEX_TID_MASK). nil when t does not wait
-- in pthread_mutex_lock, or the mutex looks unlocked (it was released as the snapshot read it).
function blocked.mutex_owner(t)
  local f = t.futex
  local w = f and f.words
  if not w or #w < 5 or not diag.any_frame(t.user, blocked.MUTEX_WAIT) then return nil end
  local lock, owner, kind = math.tointeger(w[1]) or 0, math.tointeger(w[3]) or 0, math.tointeger(w[5]) or 0
  local cmd = (math.tointeger(f.op) or 0) & 0x7f -- FUTEX_CMD_MASK: the private and clock bits off
  if cmd == 6 or cmd == 13 or (kind & 0x30) ~= 0 then -- FUTEX_LOCK_PI(2), robust, PI
    local tid = lock & 0x3fffffff
    return tid ~= 0 and tid or nil
  end
  if lock == 0 or owner <= 0 then return nil end
  return owner
end

-- How a snapshot thread b ({t=, match=}) is named: "transfer_funds() [thread 1234]", its own
-- frame (waits.own_frame: the innermost Python frame for a Python thread) — or, when that frame is
-- the runtime's own wait function the wait table names (PostgreSQL's WaitEventSetWait under
-- ProcSleep), the frame that called the wait ("XactLockTableWait()") —, else its thread name.
function blocked.name(b)
  local t, m = b.t, b.match
  local own = t.user and waits.own_frame(t.user, t.user_from)
  if own and m then
    local own_i, fn_i
    for i, f in ipairs(t.user) do
      if not own_i and f == own then own_i = i end
      if not fn_i and f == m.frame then fn_i = i end
    end
    if own_i and fn_i and own_i <= fn_i then own = m.caller end
  end
  return string.format("%s [thread %s]", own and diag.fn(own) or (t.comm or "?"), math.tointeger(t.tid) or t.tid)
end

-- How long it has been blocked: "6.7 s" (measured), or "the whole window (5.0 s)".
function blocked.how_long(t, snap)
  if t.blocked_ns and snap.since_clock == "run-queue" then return diag.fmt_ns(t.blocked_ns) end
  return string.format("at least the whole window (%.1f s)", snap.window)
end

-- What a thread waits on, in words: the wait table's, or its class's with the system call, the
-- descriptor or path, and the futex.
function blocked.waits_on(b)
  local t = b.t
  if b.match then return waits.describe(b.match) end
  local call = t.syscall and (t.syscall .. "()") or "the kernel"
  local what = (t.fd and t.fd.what) or t.path
  if b.class == "lock" and t.futex then
    return string.format("a mutex at 0x%x", math.tointeger(t.futex.addr) or 0)
  end
  return what and string.format("%s on %s", call, what) or call
end

-- The file or device a stuck thread waits on, in words: "/mnt/data/app.conf (fuse.stallfs at /mnt)".
function blocked.file_of(t)
  local fd = t.fd
  if fd and (fd.kind == "file" or fd.kind == "device") then
    return string.format("%s%s", fd.what, fd.fs and string.format(" (%s at %s)", fd.fs, fd.mount or "?") or "")
  end
  if t.path then return t.path end
  if fd then return fd.what end
  return nil
end

-- blocked.missing(res, run): why the snapshots cannot tell the threads blocked since before the
-- window (a string: the probe ran but its snapshot at one edge was not taken: a read past its
-- deadline), or nil when both were taken, the probe did not run, or the target exited (nothing
-- left to be stuck: run.stop_reason). Without them a thread that made no switch in the window
-- may be parked or stuck: neither can be said.
function blocked.missing(res, run_info)
  if not res or res.how == "none" or not res.not_taken then return nil end
  if run_info and run_info.stop_reason == "target-exited" then return nil end
  return res.not_taken
end

-- blocked.read(res, opts): the snapshot's findings, or nil without a snapshot (res: the
-- thread_states results; opts.window: the window in seconds; opts.min_blocked_s: a thread not run
-- for less than this is not taken as blocked since before the run). A table of
--   window, since_clock, how
--   all        every thread blocked throughout: {t=, class=, match=, owner=, idle=}, most blocked first
--   by_tid     every reported thread (blocked throughout or named by a futex word) by thread id
--   idle_ns    the time (ns) of the threads idle throughout (waiting for work, parked, sleeping)
--   blocked_ns the time of the others (their classes in ns_by_class)
--   ns_by_class {class = ns} of the threads not idle
--   idle_groups the idle threads grouped by what they wait on: {words=, n=, ns=, first=}, largest first
--   cycles     deadlocks: {members = {b...}} each a thread waiting for a mutex the next one holds,
--              the last's held by the first
--   holds      lock waits on a holder outside any cycle: {holder_tid=, holder = b or nil (not a
--              thread at the end), holder_ran, waiters = {b...}}
--   runtime_locks  lock waits without a known owner, by process: {tgid=, members = {b...}}
--   stuck      the threads stuck in the kernel: {b...}
--   others     the other threads blocked (peer, futex, latch, gil, runnable, other): {b...}
function blocked.read(res, opts)
  if not res or res.how == "none" or not res.threads then return nil end
  local window = opts.window or 0
  local min_ns = (opts.min_blocked_s or 0) * 1e9
  local snap = { window = window, since_clock = res.since_clock, how = res.how, all = {}, by_tid = {},
    idle_ns = 0, blocked_ns = 0, ns_by_class = {}, idle_groups = {}, cycles = {}, holds = {},
    runtime_locks = {}, stuck = {}, others = {} }
  for _, t in ipairs(res.threads) do
    snap.by_tid[math.tointeger(t.tid) or t.tid] = { t = t }
  end
  -- the threads blocked throughout, long enough to be blocked rather than between two events
  for _, t in ipairs(res.threads) do
    local measured = t.blocked_ns and res.since_clock == "run-queue"
    local long = measured and t.blocked_ns >= min_ns or not measured and window * 1e9 >= min_ns
    if t.blocked_throughout and long then
      local b = snap.by_tid[math.tointeger(t.tid) or t.tid]
      b.class, b.match = blocked.classify(t)
      b.blocked = true
      if b.class == "lock" then b.owner = blocked.mutex_owner(t) end
      snap.all[#snap.all + 1] = b
    end
  end
  -- a holder's wait is part of the story, whatever its class: not idle
  for _, b in ipairs(snap.all) do
    local h = b.owner and snap.by_tid[b.owner]
    if h then h.holds = true end
  end
  local idle_by = {}
  for _, b in ipairs(snap.all) do
    local ns = b.t.weight or 0
    b.idle = blocked.IDLE[b.class] and not b.holds
    if b.idle then
      snap.idle_ns = snap.idle_ns + ns
      local words = blocked.idle_words(b)
      local g = idle_by[words]
      if not g then
        g = { words = words, n = 0, ns = 0, first = b }
        idle_by[words] = g
        snap.idle_groups[#snap.idle_groups + 1] = g
      end
      g.n, g.ns = g.n + 1, g.ns + ns
    else
      snap.blocked_ns = snap.blocked_ns + ns
      snap.ns_by_class[b.class] = (snap.ns_by_class[b.class] or 0) + ns
    end
  end
  table.sort(snap.idle_groups, function(x, y)
    if x.n ~= y.n then return x.n > y.n end
    return x.words < y.words
  end)
  blocked.find_cycles(snap)
  for _, b in ipairs(snap.all) do
    if not b.idle and not b.in_cycle then
      if b.class == "stuck" then
        snap.stuck[#snap.stuck + 1] = b
      elseif b.class == "lock" and b.owner then
        blocked.add_hold(snap, b)
      elseif b.class == "lock" then
        local g
        for _, x in ipairs(snap.runtime_locks) do
          if x.tgid == b.t.tgid then g = x end
        end
        if not g then
          g = { tgid = b.t.tgid, members = {} }
          snap.runtime_locks[#snap.runtime_locks + 1] = g
        end
        g.members[#g.members + 1] = b
      elseif not b.holds or b.class ~= "sleep" then
        snap.others[#snap.others + 1] = b
      end
    end
  end
  return snap
end

-- The words of an idle thread's wait, for grouping: "a condition variable in wait_for_job()".
function blocked.idle_words(b)
  local t = b.t
  if b.match then return waits.describe(b.match) end
  local own = waits.own_frame(t.user, t.user_from)
  local what = diag.any_frame(t.user, waits.USER.cond) and "a condition variable"
    or t.syscall and (t.syscall .. "()") or b.class
  return own and string.format("%s in %s", what, diag.fn(own)) or what
end

-- Cycles of waiters and owners among the threads blocked throughout (each waits for a mutex the
-- next one holds): snap.cycles, each member marked in_cycle.
function blocked.find_cycles(snap)
  for _, start in ipairs(snap.all) do
    if start.owner and not start.in_cycle then
      local path, at, cur = {}, {}, start
      while cur and cur.blocked and cur.owner and not at[cur] and not cur.in_cycle do
        at[cur] = #path + 1
        path[#path + 1] = cur
        cur = snap.by_tid[cur.owner]
      end
      if cur and at[cur] then
        local members = {}
        for i = at[cur], #path do
          members[#members + 1] = path[i]
          path[i].in_cycle = true
        end
        snap.cycles[#snap.cycles + 1] = { members = members }
      end
    end
  end
end

-- A lock wait outside a cycle, grouped by its holder.
function blocked.add_hold(snap, b)
  for _, h in ipairs(snap.holds) do
    if h.holder_tid == b.owner then
      h.waiters[#h.waiters + 1] = b
      return
    end
  end
  local holder = snap.by_tid[b.owner]
  snap.holds[#snap.holds + 1] = { holder_tid = b.owner, holder = holder, waiters = { b },
    holder_ran = holder and holder.t.ran or false }
end

-- What a holder is doing, in words: "which sleeps in clock_nanosleep() since before the run
-- (6.7 s)", "which ran in the window", "which is not among its threads at the end".
function blocked.holder_doing(h, snap)
  local hb = h.holder
  if not hb then
    return string.format("thread %s, which is not among the process's threads at the end (it may have exited holding the lock)",
      math.tointeger(h.holder_tid) or h.holder_tid)
  end
  local name = blocked.name(hb)
  if not hb.blocked then
    return string.format("%s, which ran in the window (state %s) and still holds it", name, hb.t.state or "?")
  end
  local words = blocked.waits_on(hb)
  if hb.class == "sleep" then
    return string.format("%s, which sleeps (%s) since before the run (%s)", name, hb.t.syscall or "a sleep",
      blocked.how_long(hb.t, snap))
  end
  return string.format("%s, which itself waits for %s since before the run (%s)", name, words, blocked.how_long(hb.t, snap))
end

-- The ruled-out line of stuck-in-kernel when no thread is (latency's and triage's alike).
function blocked.not_stuck_in_kernel()
  return diag.ruled_out("stuck-in-kernel", "nothing stuck in the kernel: no thread uninterruptible, or waiting on a file system's server, the whole window")
end

return blocked
