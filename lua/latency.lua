-- latency.lua — verdicts for recipes/latency.yaml: where do the target's threads wait when they
-- are not on a CPU, and is that waiting the problem?
--
-- Reads results.offcpu (off_cpu), results.runq (runq_latency), results.syscalls (syscall_stats,
-- timed), results.context (proc_context), run and thresholds. Any probe may be missing: the
-- verdicts then say what could not be assessed.
--
-- How it decides. The threads' time is threads x window (context.threads, context.wall_s). Each
-- off-CPU stack is put in one class by its kernel frames (how it waited) and its user frames (on
-- what), first match wins:
--   runnable      the state was runnable: preempted, waiting for a CPU
--   disk          uninterruptible in the block layer, page cache writeback or a journal
--   fault         uninterruptible in a page fault (reading a mapped file, swap)
--   lock          a futex wait under pthread_mutex_lock / rwlock / sem_wait (the user frames say so)
--   work-wait     waiting for work: a futex under pthread_cond_wait, epoll_wait, poll, select,
--                 accept — a parked thread pool; never a finding by itself
--   peer          a blocking read of a socket or pipe (recv, read on a socket), connect
--   sleep         nanosleep / clock_nanosleep: sleeping on purpose
--   futex         a futex whose user frames do not say lock or condition, waited on briefly
--                 (under PARKED_NS per interval: a parked thread waits longer, it is work-wait)
--   other
-- A cause is a finding when its share of the threads' time is >= cause_pct_warn (critical at
-- cause_pct_crit; sleeping at most warning: it may be by design): lock-contention, disk-io,
-- page-faults, waiting-on-peer, sleeping, futex-wait.
-- cpu-starved: runnable share >= runnable_pct_warn, or run-queue p99 >= 10 x runq_p99_warn_us.
-- idle (info): no finding, the threads off the CPU at least half of their time, and most of it
-- work-wait or threads blocked
-- throughout the window (never seen switching: threads x window - on CPU - off CPU measured);
-- ok: nothing stands out.
-- Each verdict names the call path (root first) of its heaviest stack and the function in the
-- target's own code nearest the wait (frames of libc / libpthread / the vDSO are skipped).

local function th(name, default) return diag.number(thresholds, name, default) end

local T = {
  warn = th("cause_pct_warn", 10),
  crit = th("cause_pct_crit", 40),
  runq_warn = th("runq_p99_warn_us", 5000),
  runnable = th("runnable_pct_warn", 10),
  top_n = th("top_n", 8),
}
local MIN_WAITS = 20 -- fewer run-queue waits make too thin a p99 to judge by
local PARKED_NS = 50e6 -- an unnamed futex waited on this long per interval: a parked thread

local O, R, S, C, W = results.offcpu, results.runq, results.syscalls, results.context, results.wakers
local L = results.lookups -- name_lookups: getaddrinfo / gethostbyname* timed in the target's libc
local target_arg, pids, pid = diag.target(run, C)
-- the collection window (the sampler's own window starts earlier: at its attach, before the
-- other probes' and the pre-flight)
local window = run.duration_s or (C and C.wall_s) or 0
local threads = (C and C.threads) or 1
local thread_ns = threads * window * 1e9
local verdicts, report = {}, {}

local function push(t, x) t[#t + 1] = x end
local function sub(fmt, ...) return string.format(fmt, ...) end
local function share(ns) return thread_ns > 0 and ns * 100 / thread_ns or 0 end

-- ---- classifying a stack ---------------------------------------------------------------------

local any_frame = diag.any_frame

local K = diag.KERNEL_WAITS
local U = diag.USER_WAITS

-- Host name lookups: whatever the resolver waits on (a socket to the DNS server, a lock), the
-- caller waits for the name.
local RESOLVE = { "^getaddrinfo$", "^gethostbyname", "^__libc_res_n", "^__res_n", "^res_n",
  "^__nss_hosts", "^_nss_dns_" }

local function classify(s)
  if s.tag == "runnable" then return "runnable" end
  local k, u = s.kernel or {}, s.user or {}
  if any_frame(u, RESOLVE) then return "resolve" end
  if s.tag == "uninterruptible" then
    if any_frame(k, K.fault) then return "fault" end
    if any_frame(k, K.disk) then return "disk" end
  end
  if any_frame(k, K.futex) then
    if any_frame(u, U.lock) then return "lock" end
    if any_frame(u, U.cond) then return "work-wait" end
    -- Under DWARF unwinding, a stack without user_from is one whose copy the ring buffer refused
    -- (counted with its frame-pointer stack, which glibc's futex wrappers cut to one frame): it
    -- cannot tell a lock from a condition, and must not be called an unnamed futex.
    if O and O.user_unwind == "dwarf" and not s.user_from then return "other" end
    return "futex"
  end
  if any_frame(k, K.poll) then return "work-wait" end
  if any_frame(k, K.peer) then return "peer" end
  if any_frame(k, K.sleep) then return "sleep" end
  if any_frame(k, K.disk) then return "disk" end
  if any_frame(k, K.fault) then return "fault" end
  return "other"
end

-- The target's own function nearest the wait: the first user frame (leaf first) that is named and
-- is not a libc/pthread/vDSO internal.
local function is_own(f)
  return diag.symbolized(f) and not f:find("^_") and not f:find("^pthread_") and
    not f:find("^sem_") and not f:find("^futex") and not f:find("^syscall$") and
    not f:find("nanosleep$") and not f:find("^epoll_") and not f:find("^poll$") and
    not f:find("^select$") and not f:find("^accept") and not f:find("^recv") and
    not f:find("^read$") and not f:find("^pread") and not f:find("^fsync$") and
    not f:find("^fdatasync$") and not f:find("^usleep$") and not f:find("^sleep$") and
    not f:find("^clock_gettime") and not f:find("^start_thread$") and not f:find("^clone")
end

-- The first frame of the target's own code (leaf first), and the own frame that called it.
local function own_frame(user)
  local frames = user or {}
  for i, f in ipairs(frames) do
    if is_own(f) then
      local caller = frames[i + 1]
      return f, caller and is_own(caller) and caller ~= "main" and caller or nil
    end
  end
  return nil
end

-- ---- who releases the lock: the wakers of the target's threads --------------------------------

local function path_of_user(frames)
  local p = diag.call_path(frames or {}, 8)
  return p ~= "" and p or "(no user stack)"
end

-- A lock is released, and its waiters woken, from these user frames (kernel: futex_wake).
local UNLOCK = { "pthread_mutex_unlock", "__lll_unlock_wake", "lll_unlock", "pthread_rwlock_unlock",
  "sem_post", "std::mutex::unlock" }

-- The heaviest waker path that releases a lock in the target's own process: {fn, path, ns, count,
-- comm}, or nil when the wakers probe did not run or saw no such wakeup.
local function lock_holder()
  if not W then return nil end
  for _, s in ipairs(W.stacks or {}) do -- heaviest first
    if s.tag == "same-process" and any_frame(s.user, UNLOCK) then
      return { fn = own_frame(s.user), path = path_of_user(s.user), ns = s.weight, count = s.count,
        comm = s.comm }
    end
  end
  return nil
end

-- ---- the off-CPU time, by class ----------------------------------------------------------------

local class = {}
local classes = { "runnable", "disk", "fault", "lock", "peer", "resolve", "sleep", "futex", "work-wait", "other" }
for _, c in ipairs(classes) do class[c] = { ns = 0, count = 0, stacks = {} } end
if O then
  for _, s in ipairs(O.stacks or {}) do
    local name = classify(s)
    -- A futex the user frames do not name: a thread parked for long stretches (or the whole
    -- window) waits for work; contended locks are waited for briefly and often.
    if name == "futex" and (s.count or 0) > 0 and (s.weight or 0) / s.count >= PARKED_NS then
      name = "work-wait"
    end
    local c = class[name]
    c.ns = c.ns + (s.weight or 0)
    c.count = c.count + (s.count or 0)
    push(c.stacks, s) -- stacks come heaviest first
  end
end
local off_ns = O and O.total_ns or 0
local cpu_pct = C and C.cpu_pct -- 100 = one CPU
local on_cpu_ns = cpu_pct and cpu_pct / 100 * window * 1e9 or nil
-- Threads that never ran in the window never switched: the probe cannot see them. Their time is
-- what is left of the threads' time; they were blocked throughout (parked, or stuck).
local unseen_ns = 0
if O and C and on_cpu_ns then
  unseen_ns = math.max(0, thread_ns - on_cpu_ns - off_ns)
  if unseen_ns < thread_ns * 0.05 then unseen_ns = 0 end -- the two clocks' rounding
end

local function path_of(s)
  local p = diag.call_path(s.user or {}, 8)
  if p == "" then p = "(no user stack)" end
  return p
end

local function evidence_for(name, c, extra)
  local ev = {}
  push(ev, sub("%s of the threads' time (%d thread%s x %.1f s): %s in %s interval%s",
    diag.fmt_pct(share(c.ns)), threads, threads == 1 and "" or "s", window, diag.fmt_ns(c.ns),
    diag.fmt_count(c.count), c.count == 1 and "" or "s"))
  for i = 1, math.min(3, #c.stacks) do
    local s = c.stacks[i]
    push(ev, sub("%s (%s, %s): %s", diag.fmt_pct(share(s.weight)), diag.fmt_ns(s.weight), s.comm or "?",
      path_of(s)))
  end
  for _, x in ipairs(extra or {}) do push(ev, x) end
  return ev
end

local function severity(pct)
  if pct >= T.crit then return "critical" end
  if pct >= T.warn then return "warning" end
  return nil
end

-- The stack that names where c waits: its heaviest, unless under DWARF unwinding that one kept
-- only its frame-pointer walk (the ring buffer was full: glibc's frames hide the caller) and an
-- unwound one holds at least 5% of c's time.
local function naming_stack(c)
  local top = c.stacks[1]
  if top and O and O.user_unwind == "dwarf" and not top.user_from then
    for _, s in ipairs(c.stacks) do
      if s.user_from and (s.weight or 0) >= c.ns * 0.05 then return s end
    end
  end
  return top
end

-- " in caller() → own()" (root first, as call paths read) for the stack naming c, and own.
local function where(c)
  local top = naming_stack(c)
  local own, caller
  if top then own, caller = own_frame(top.user) end
  if not own then return "", nil end
  return " in " .. (caller and (diag.fn(caller) .. " → ") or "") .. diag.fn(own), own
end

-- The syscall with most time among the ones that block, for the evidence.
local function top_syscall(names)
  if not S or not S.timed then return nil end
  local best
  for _, sc in ipairs(S.syscalls or {}) do
    for _, n in ipairs(names) do
      if sc.name == n and (not best or (sc.total_ns or 0) > (best.total_ns or 0)) then best = sc end
    end
  end
  if not best or (best.total_ns or 0) == 0 then return nil end
  return sub("%s(): %s calls, %s in total, avg %s", best.name, diag.fmt_count(best.count),
    diag.fmt_ns(best.total_ns), diag.fmt_ns(best.total_ns / math.max(best.count, 1)))
end

local findings = {}
local function finding(id, name, c, title_fmt, steps, extra, max_sev)
  local pct = share(c.ns)
  local sev = severity(pct)
  if sev == "critical" and max_sev == "warning" then sev = "warning" end
  if not sev or c.count == 0 then return end
  local at, own = where(c)
  push(findings, { pct = pct, v = diag.verdict(id, sev, sub(title_fmt, diag.fmt_pct(pct), at),
    evidence_for(name, c, extra), steps(own)) })
end

local holder = lock_holder()
local lock_extra = { top_syscall({ "futex" }) }
if holder then
  push(lock_extra, sub("Released by %s: the waiters were woken %s times from %s (thread %s; %s of their waits)",
    holder.fn and diag.fn(holder.fn) or "an unnamed function", diag.fmt_count(holder.count), holder.path,
    holder.comm or "?", diag.fmt_ns(holder.ns)))
end
finding("lock-contention", "lock", class.lock,
  "Lock contention: threads wait %s of their time for a lock%s" ..
    (holder and holder.fn and (", held by " .. diag.fn(holder.fn):gsub("%%", "%%%%")) or ""),
  function(own)
    local steps = {}
    if holder and holder.fn then
      push(steps, sub("Shorten what %s does while it holds the lock, split the lock, or move work out of it", diag.fn(holder.fn)))
    else
      push(steps, sub("Find who holds it: the threads that wake the waiters release the lock (offwaketime -p %s)", pid))
    end
    if own and not (holder and holder.fn == own) then
      push(steps, sub("Or take the lock less often in %s (batch, cache, a lock-free read path)", diag.fn(own)))
    end
    if O and O.user_unwind ~= "dwarf" then
      push(steps, "Stacks through glibc may miss the function that took the lock (glibc has no frame pointers): set the off_cpu probe's user_unwind: dwarf")
    end
    return steps
  end, lock_extra)
finding("disk-io", "disk", class.disk,
  "Blocked on disk I/O %s of the threads' time%s",
  function(own)
    return { sub("Which device and how busy: diagnose io-saturation --pid %s, or iostat -x 1", pid),
      own and sub("Move the I/O in %s off the request path, batch it, or cache what it reads", diag.fn(own)) or
        "Move the I/O off the request path, batch it, or cache what it reads" }
  end, { top_syscall({ "fsync", "fdatasync", "read", "pread64", "write", "pwrite64", "sync_file_range", "openat" }) })
finding("page-faults", "fault", class.fault,
  "Blocked in page faults %s of the threads' time%s",
  function(own)
    return { "Major faults read mapped files or swap: check /proc/PID/status VmSwap and the memory pressure (diagnose memory-growth)",
      own and sub("Pre-fault or lock the memory %s touches (madvise WILLNEED, mlock) if it is on the request path", diag.fn(own)) or
        "Pre-fault or lock memory on the request path (madvise WILLNEED, mlock)" }
  end)
finding("waiting-on-peer", "peer", class.peer,
  "Waiting on the network or a peer %s of the threads' time%s",
  function(own)
    return { sub("Which connections: ss -tinp | grep 'pid=%s' (rtt, retransmits, send/receive queues)", pid),
      "Check the peer's own latency (its logs, its diagnose latency) and the network (diagnose network-errors)",
      own and sub("Add a timeout, or make the call in %s asynchronous if it is on the request path", diag.fn(own)) or
        "Add timeouts on the blocking calls" }
  end, { top_syscall({ "recvfrom", "recvmsg", "read", "connect" }) })
-- Slow name resolution: the off-CPU time under the resolver, with the lookups' own figures
-- (which names, how long) from the name_lookups probe.
if L and (L.count or 0) > 0 and class.resolve.ns < (L.total_ns or 0) * 0.5 then
  -- stacks that do not reach the resolver's frames (frame pointers only): the probe's own time
  class.resolve.ns, class.resolve.count = L.total_ns, L.count
end
local lookup_extra = {}
if L then
  for i = 1, math.min(3, #(L.lookups or {})) do
    local l = L.lookups[i]
    push(lookup_extra, sub("%s(\"%s\"): %s lookups, avg %s, longest %s%s", l["function"], l.name,
      diag.fmt_count(l.count), diag.fmt_ns(l.total_ns / math.max(l.count, 1)), diag.fmt_ns(l.max_ns),
      (l.failed or 0) > 0 and sub(", %s failed", diag.fmt_count(l.failed)) or ""))
  end
  if (L.count or 0) >= MIN_WAITS then
    push(lookup_extra, sub("Lookup time p50 %s, p99 %s over %s lookups", diag.fmt_ns(diag.percentile(L.buckets, 50)),
      diag.fmt_ns(diag.percentile(L.buckets, 99)), diag.fmt_count(L.count)))
  end
end
local slow_name = L and L.lookups and L.lookups[1] and L.lookups[1].name
finding("slow-name-resolution", "resolve", class.resolve,
  "Slow name resolution: threads wait %s of their time for host name lookups%s" ..
    (slow_name and (" (" .. slow_name:gsub("%%", "%%%%") .. ")") or ""),
  function(own)
    return { "Check the name servers in /etc/resolv.conf (of the process's mount namespace) in order: the first one that answers slowly, or not at all, costs every lookup its delay (dig NAME @SERVER shows each one's time)",
      own and sub("Resolve once and cache in %s (respecting the TTL), or run a local cache (nscd, systemd-resolved, dnsmasq)", diag.fn(own))
        or "Cache lookups in the process (respecting the TTL), or run a local cache (nscd, systemd-resolved, dnsmasq)",
      "A name that is not fully qualified is tried with each search domain first (resolv.conf search/ndots): use the full name with a trailing dot" }
  end, lookup_extra)
finding("sleeping", "sleep", class.sleep,
  "Sleeping on purpose %s of the threads' time%s",
  function(own)
    return { own and sub("Look at the sleep in %s: a retry backoff, a poll interval or a rate limiter on the request path shows up as latency", diag.fn(own)) or
        "Look for sleeps on the request path: retry backoffs, poll intervals, rate limiters",
      "If it is a background thread that sleeps by design, this is not the cause" }
  end, { top_syscall({ "clock_nanosleep", "nanosleep" }) }, "warning") -- a sleep may be by design
finding("futex-wait", "futex", class.futex,
  "Waiting on a futex %s of the threads' time%s (lock or condition: the stacks do not say)",
  function(own)
    return { "The user stacks do not show pthread_mutex_lock or pthread_cond_wait: a lock or a wait for work, or a runtime's own parking (Go, Java)",
      sub("Who wakes them: offwaketime -p %s", pid) }
  end)

-- ---- CPU starvation --------------------------------------------------------------------------

local runq
if R and (R.count or 0) >= MIN_WAITS then
  runq = { p50 = diag.percentile(R.buckets, 50), p99 = diag.percentile(R.buckets, 99), count = R.count,
    max = R.max_us }
end
local runnable_pct = share(class.runnable.ns)
-- Waiting for a CPU must cost the threads something: a runnable share, or a run-queue p99 ten
-- times the warning (a p99 over a few dozen waits on a busy 2-CPU box is often one preemption).
if (runq and runq.p99 >= 10 * T.runq_warn) or (runnable_pct >= T.runnable and class.runnable.count > 0) then
  local ev = {}
  if runq then
    push(ev, sub("Run-queue latency p99 %s, p50 %s, max %s over %s waits", diag.fmt_us(runq.p99),
      diag.fmt_us(runq.p50), diag.fmt_us(runq.max), diag.fmt_count(runq.count)))
  end
  push(ev, sub("Runnable but not running %s of the threads' time (%s)", diag.fmt_pct(runnable_pct),
    diag.fmt_ns(class.runnable.ns)))
  if C and C.nonvoluntary_ctxt_switches then
    push(ev, sub("%s involuntary context switches/s", diag.fmt_count(diag.rate(C.nonvoluntary_ctxt_switches, window))))
  end
  local psi = diag.get(C, "psi", "some_total_us")
  if psi and window > 0 then
    push(ev, sub("CPU pressure some: stalled %s of the window", diag.fmt_pct(psi / (window * 1e6) * 100)))
  end
  local sev = (runnable_pct >= T.crit or (runq and runq.p99 >= 100 * T.runq_warn)) and "critical" or "warning"
  push(findings, { pct = runnable_pct, v = diag.verdict("cpu-starved", sev,
    sub("Starved of CPU: threads wait runnable %s of their time", diag.fmt_pct(runnable_pct)), ev,
    { sub("Diagnose the CPU first: diagnose high-cpu %s, and what else runs (top -o %%CPU)", target_arg),
      "Check the cgroup CPU quota (cpu.max / cpu.cfs_quota_us) and the thread count against the CPUs" }) })
end

table.sort(findings, function(a, b)
  local rank = { warning = 1, critical = 2 }
  if rank[a.v.severity] ~= rank[b.v.severity] then return rank[a.v.severity] > rank[b.v.severity] end
  return a.pct > b.pct
end)
for _, f in ipairs(findings) do push(verdicts, f.v) end

-- ---- nothing found: idle, or ok -------------------------------------------------------------

-- Idle means the threads mostly wait: at least half of their time off the CPU.
local waiting = off_ns + unseen_ns >= thread_ns / 2
if #findings == 0 and O then
  local work = class["work-wait"]
  if waiting and unseen_ns > 0 and unseen_ns >= (off_ns + unseen_ns) / 2 then
    push(verdicts, diag.verdict("idle", "info",
      sub("Idle: threads were blocked throughout the window %s of their time; nothing ran slowly", diag.fmt_pct(share(unseen_ns))),
      { sub("%s of the threads' time (%d thread%s x %.1f s) was neither on a CPU nor seen leaving one: those threads slept the whole window",
          diag.fmt_pct(share(unseen_ns)), threads, threads == 1 and "" or "s", window),
        sub("On CPU %s, off CPU and seen %s", diag.fmt_pct(share(on_cpu_ns or 0)), diag.fmt_pct(share(off_ns))) },
      { sub("Where they sleep: cat /proc/%s/task/*/stack (kernel) and /proc/%s/task/*/wchan; a parked pool waits in futex_wait, epoll_wait or accept", pid, pid),
        "If requests are slow while the process is idle, the time is spent before they reach it: the load balancer, the network, a queue upstream",
        "Threads stuck on a lock for the whole window (a deadlock) look the same here: if the service does not answer at all, check their stacks" }))
  elseif waiting and off_ns > 0 and work.ns >= off_ns / 2 then
    local at = where(work)
    push(verdicts, diag.verdict("idle", "info",
      sub("Idle: the threads wait for work %s of their time%s; nothing slows them down", diag.fmt_pct(share(work.ns)), at),
      evidence_for("work-wait", work, { "Waiting for work: epoll_wait, poll, accept or a condition variable (a parked thread pool), not a lock, the disk or a peer" }),
      { "If requests are slow while the process is idle, the time is spent before they reach it: the load balancer, the network, a queue upstream",
        sub("Compare with the request rate it should see: ss -tn state established '( sport = :PORT )', its access logs") }))
  else
    push(verdicts, diag.verdict("ok", "ok",
      sub("No waiting cause stands out: on CPU %s, off CPU %s of the threads' time",
        cpu_pct and diag.fmt_pct(cpu_pct / threads) or "?", diag.fmt_pct(share(off_ns))),
      { sub("No cause reached %s of the threads' time", diag.fmt_pct(T.warn)) },
      { "Measure longer, or when the latency is high: diagnose latency --duration 30" }))
  end
end

-- ---- incomplete data -------------------------------------------------------------------------

do
  local partial = diag.partial()
  local note = partial.note
  if not O then note("offcpu missing", "offcpu: no results: where the threads wait was not measured", "warning") end
  if not R then note("runq missing", "runq: no results: CPU starvation was assessed from off-CPU time only") end
  if not C then note("context missing", "context: no results: thread count unknown, shares are per one thread") end
  if O and (O.dropped or 0) > 0 then
    note(sub("offcpu: %s dropped", diag.fmt_count(O.dropped)), sub("offcpu: %s interval(s) not recorded (a map was full)", diag.fmt_count(O.dropped)))
  end
  if O and O.sampled_1_in then
    note(sub("sampled 1 in %d", O.sampled_1_in), sub("offcpu: 1 interval in %d recorded (budget): times are estimates", O.sampled_1_in))
  end
  partial.stop(run.stop_reason, window, false)
  push(verdicts, partial.verdict({ "Verdicts may be partial; re-run once the cause is fixed" }))
end

-- ---- report sections -------------------------------------------------------------------------

if O then
  local rows = {}
  if on_cpu_ns then push(rows, { "on CPU", diag.fmt_ns(on_cpu_ns), diag.fmt_pct(share(on_cpu_ns)) }) end
  for _, name in ipairs(classes) do
    local c = class[name]
    if c.ns > 0 then push(rows, { name, diag.fmt_ns(c.ns), diag.fmt_pct(share(c.ns)) }) end
  end
  if unseen_ns > 0 then
    push(rows, { "blocked throughout", diag.fmt_ns(unseen_ns), diag.fmt_pct(share(unseen_ns)) })
  end
  push(report, diag.table(sub("Thread time by state (%d thread%s x %.1f s)", threads, threads == 1 and "" or "s", window),
    { "state", "time", "share" }, rows))
  local top = {}
  for i = 1, math.min(T.top_n, #(O.stacks or {})) do
    local s = O.stacks[i]
    push(top, { diag.fmt_ns(s.weight), classify(s), s.comm or "?", path_of(s) })
  end
  if #top > 0 then
    push(report, diag.table("Where the threads wait (heaviest first)", { "time", "why", "thread", "call path" }, top))
  end
end
if runq then
  push(report, diag.histogram("Run-queue latency", "us", R.buckets))
end

return { verdicts = verdicts, report = report }
