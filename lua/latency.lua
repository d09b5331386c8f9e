-- latency.lua — verdicts for recipes/latency.yaml: where do the target's threads wait when they
-- are not on a CPU, and is that waiting the problem?
--
-- Reads results.offcpu (off_cpu), results.runq (runq_latency), results.syscalls (syscall_stats,
-- timed), results.wakers (wakeups), results.lookups (name_lookups), results.context
-- (proc_context), results.peers (peer_wait: the waits on each connection's other end, through
-- lua/lib/peers.lua), run and thresholds. Any probe may be missing: the verdicts then say what could
-- not be assessed, and nothing is ruled out on its data.
--
-- How it decides. The threads' time is threads x window (context.threads, context.wall_s). Each
-- off-CPU stack is put in one class by waits.classify (lua/lib/waits.lua: runnable, resolve,
-- fault, disk, lock, work-wait, futex, peer, sleep, gil, park, latch, event-loop, other; a
-- runtime's wait function, from lua/lib/wait_table.lua, names the class through the user
-- frames, and then gives the verdict its words and next steps). One hypothesis per cause, each
-- a finding when its share of the threads' time is >= cause_pct_warn (critical at
-- cause_pct_crit; sleeping and latch waits at most warning), else ruled out with its share:
--   lock-contention, disk-io, page-faults, waiting-on-peer, slow-name-resolution, sleeping,
--   gil-wait, park-wait, latch-wait, futex-wait;
--   cpu-starved: runnable share >= runnable_pct_warn, or run-queue p99 >= 10 x runq_p99_warn_us;
--   slow-upstream: an upstream (a peer the target sends to and waits for) answering in p50 >=
--     peer_p50_warn_ms whose waits are >= cause_pct_warn of the time the target spends serving
--     requests (of its threads' time when it serves none), for event loops, whose threads park
--     in epoll_wait meanwhile; a blocking client's wait is waiting-on-peer, which then names the
--     peer, and is ruled out when every peer answers faster than peer_p50_warn_ms.
--   gc-pauses: Python's garbage collector (CPython's USDT probes, results.pygc) ran >=
--     gc_pct_warn of the window.
-- Sleeps and socket reads are placed by what the thread had open (peer_wait, lua/lib/peers.lua):
-- a sleep is `sleeping` (warning) only for its share slept inside a request of the sleeping
-- thread's own (a delay, a back-off, named with that request's peer or service); below
-- cause_pct_warn of the threads' time it is `pacing` (info: a client between its requests, a
-- loop with no request). A server's read that waited for its client's next request (nothing
-- open on a keep-alive connection) is waiting for work, not on a peer: that share of the peer
-- class moves to work-wait.
-- Findings worst first, the larger share first. With no finding: idle (info) when the threads
-- are off the CPU at least half of their time and most of it work-wait or blocked throughout
-- the window (never seen switching: threads x window - on CPU - off CPU measured) — unless the
-- thread snapshots were not taken: then `blocked-unknown` (warning: parked or stuck, which the
-- snapshots alone tell, is not known, and a deadlock looks the same); event-loop
-- (info) instead when the waiting for work is mostly an event loop parked in epoll/poll (its
-- upstreams answering fast, by the peers probe); neither when a thread was busy on CPU (the
-- process used >= half a CPU: a busy main thread among parked helpers); else ok.
-- Each verdict names the call path (root first) of its heaviest stack and the function in the
-- target's own code nearest the wait (waits.own_frame skips libc / libpthread / the vDSO).
--
-- Threads blocked since before the window (results.threads, the thread_states snapshots: a thread
-- whose switches and CPU time did not move between the window's start and end), which no off-CPU
-- stack shows, are read by lua/lib/blocked.lua (those not run for blocked_min_s at least):
--   deadlock: threads waiting for glibc mutexes in a cycle, each held by the next (critical);
--   likely-deadlock: two threads or more of a process waiting for a runtime's locks with no
--     owner recorded (a Python threading.Lock, a Java monitor) the whole window (critical);
--   held-lock: a thread waiting the whole window for a mutex whose holder does not let go (it
--     sleeps, waits on something else, or runs on), named with the holder's thread and function;
--   stuck-in-kernel: a thread uninterruptible the whole window, or in a file system request that
--     gets no answer, named with its kernel stack and the file or device (at least a warning);
--   the others (a peer, a latch...) count in their class as a stack would, for the whole window.
-- Those that only wait for work (a condition variable, epoll, accept, a sleep) are idle: their
-- time leaves the threads' time, so that the shares above are of the threads that matter, not
-- diluted by a parked pool; when they are most of the waiting, the idle verdict names what they
-- wait for.
--
-- Why one file (over 800 lines): a symptom is one recipe and one snippet (docs/adding-a-symptom.md);
-- what two snippets share is in lua/lib/ (diag, waits, wait_table, peers, blocked, heap, lang,
-- alloc_wrappers).

local T = {
  warn = diag.threshold("cause_pct_warn"),
  crit = diag.threshold("cause_pct_crit"),
  runq_warn = diag.threshold("runq_p99_warn_us"),
  runnable = diag.threshold("runnable_pct_warn"),
  top_n = diag.threshold("top_n"),
  peer_slow_ns = diag.threshold("peer_p50_warn_ms") * 1e6,
  gc_pct = diag.threshold("gc_pct_warn"),
  blocked_min = diag.threshold("blocked_min_s"),
}

local offcpu, runq, syscalls = results.offcpu, results.runq, results.syscalls
local context, wakers = results.context, results.wakers
local lookups = results.lookups -- name_lookups: getaddrinfo / gethostbyname* timed in the target's libc
local target_arg, _, pid = diag.target(run, context)
-- the collection window (the sampler's own window starts earlier: at its attach, before the
-- other probes' and the pre-flight)
local window = run.duration_s or (context and context.wall_s) or 0
local threads = (context and context.threads) or 1
local all_thread_ns = threads * window * 1e9
-- the threads blocked since before the window (nil without the thread_states probe)
local snap = blocked.read(results.threads, { window = window, min_blocked_s = T.blocked_min })
-- why the snapshots cannot tell what the threads blocked throughout wait on (nil: they can, or
-- the probe did not run)
local snap_missing = blocked.missing(results.threads, run)
local idle_threads, idle_throughout_ns = 0, 0
for _, g in ipairs(snap and snap.idle_groups or {}) do idle_threads = idle_threads + g.n end
if snap then idle_throughout_ns = math.min(snap.idle_ns, all_thread_ns) end
-- the time of the threads that matter: threads x window, less the threads idle throughout
local thread_ns = all_thread_ns - idle_throughout_ns
local user_unwind = offcpu and offcpu.user_unwind
local MIN_LOOKUPS = 20 -- fewer timed lookups make too thin a p99 to quote
local peer_list = peers.summaries(results.peers, window) -- peer_wait: each connection's other end

local function share(ns) return thread_ns > 0 and ns * 100 / thread_ns or 0 end
-- of every thread's time, idle ones included (what the idle and state figures read)
local function share_all(ns) return all_thread_ns > 0 and ns * 100 / all_thread_ns or 0 end
local function plural(n) return n == 1 and "" or "s" end
local function threads_x_window()
  if idle_threads > 0 and idle_threads < threads then
    return string.format("%d of %d threads x %.1f s; %d idle throughout left out", threads - idle_threads, threads,
      window, idle_threads)
  end
  return string.format("%d thread%s x %.1f s", threads, plural(threads), window)
end

-- ---- the off-CPU time, by class ----------------------------------------------------------------

local CLASSES = { "runnable", "disk", "fault", "lock", "peer", "resolve", "sleep", "gil", "park", "latch", "futex",
  "work-wait", "event-loop", "other" }

-- {name = {ns=, count=, stacks = heaviest first, matches = the wait table's match of each stack
-- (false: none)}} over the off-CPU stacks.
local function time_by_class()
  local class = {}
  for _, name in ipairs(CLASSES) do class[name] = { ns = 0, count = 0, stacks = {}, matches = {} } end
  for _, s in ipairs((offcpu and offcpu.stacks) or {}) do
    local name, m = waits.classify(s, user_unwind)
    local c = class[name]
    c.ns = c.ns + (s.weight or 0)
    c.count = c.count + (s.count or 0)
    c.stacks[#c.stacks + 1] = s -- stacks come heaviest first
    c.matches[#c.stacks] = m or false
  end
  return class
end

local class = time_by_class()

-- The threads blocked since before the window that no finding of their own tells (a peer, a latch,
-- a GIL...) count in their class for the whole window, as a stack of theirs would.
local function add_snapshot_others()
  for _, b in ipairs(snap and snap.others or {}) do
    local c = class[b.class] or class.other
    c.ns = c.ns + (b.t.weight or 0)
    c.snap_ns = (c.snap_ns or 0) + (b.t.weight or 0) -- blocked since before: no read of the window's
    c.count = c.count + 1
    local pairs_ = {}
    for i, st in ipairs(c.stacks) do pairs_[i] = { s = st, m = c.matches[i] } end
    pairs_[#pairs_ + 1] = { s = b.t, m = b.match or false }
    table.sort(pairs_, function(x, y) return (x.s.weight or 0) > (y.s.weight or 0) end)
    for i, pr in ipairs(pairs_) do c.stacks[i], c.matches[i] = pr.s, pr.m end
  end
end
add_snapshot_others()

-- A server's thread blocked in a read on a connection where no request of its is open waits for
-- its client's next request (a keep-alive connection between requests): waiting for work, not a
-- peer. peer_wait's reads say how much of the socket reads' time was that; it leaves the peer
-- class for work-wait (and, when the rest cannot be a finding, the class's stacks with it,
-- which are then those reads').
local function reads_for_work()
  local peer, work = class.peer, class["work-wait"]
  local move = peers.work_move(results.peers, peer)
  if not move then return 0 end
  peer.ns, work.ns = peer.ns - move.ns, work.ns + move.ns
  if share(peer.ns) < T.warn then -- what is left cannot be a finding: the stacks were the reads'
    local pairs_ = {}
    for _, c in ipairs({ work, peer }) do
      for i, st in ipairs(c.stacks) do pairs_[#pairs_ + 1] = { s = st, m = c.matches[i] } end
    end
    table.sort(pairs_, function(x, y) return (x.s.weight or 0) > (y.s.weight or 0) end)
    work.stacks, work.matches = {}, {}
    for i, pr in ipairs(pairs_) do work.stacks[i], work.matches[i] = pr.s, pr.m end
    work.count, peer.count = work.count + peer.count, 0
    peer.stacks, peer.matches = {}, {}
  else -- a finding may stand on the rest: its stacks stay, its count in proportion
    local kept = math.max(1, move.kept)
    work.count, peer.count = work.count + peer.count - kept, kept
  end
  return move.ns
end
local peer_work_ns = reads_for_work()

local off_ns = offcpu and offcpu.total_ns or 0
local cpu_pct = context and context.cpu_pct -- 100 = one CPU
local on_cpu_ns = cpu_pct and cpu_pct / 100 * window * 1e9 or nil

-- Threads that never ran in the window never switched: the probe cannot see them. Their time is
-- what is left of the threads' time; they were blocked throughout (parked, or stuck).
local snap_ns = snap and (snap.idle_ns + snap.blocked_ns) or 0
local function unseen_time()
  if not (offcpu and context and on_cpu_ns) then return 0 end
  local ns = math.max(0, all_thread_ns - on_cpu_ns - off_ns - snap_ns)
  if ns < all_thread_ns * 0.05 then return 0 end -- the two clocks' rounding
  return ns
end
local unseen_ns = unseen_time()

-- Slow name resolution: stacks that do not reach the resolver's frames (frame pointers only)
-- leave the name_lookups probe's own time as the class's.
if lookups and (lookups.count or 0) > 0 and class.resolve.ns < (lookups.total_ns or 0) * 0.5 then
  class.resolve.ns, class.resolve.count = lookups.total_ns, lookups.count
end

-- ---- where a class waits -----------------------------------------------------------------------

local function evidence_for(c, extra)
  local ev = diag.lines()
  ev:add("%s of the threads' time (%s): %s in %s interval%s", diag.fmt_pct(share(c.ns)), threads_x_window(),
    diag.fmt_ns(c.ns), diag.fmt_count(c.count), plural(c.count))
  for i = 1, math.min(3, #c.stacks) do
    local s = c.stacks[i]
    ev:add("%s (%s, %s): %s", diag.fmt_pct(share(s.weight)), diag.fmt_ns(s.weight), s.comm or "?",
      diag.user_path(s.user))
  end
  return ev:extend(extra)
end

-- The stack that names where c waits: its heaviest, unless under DWARF unwinding that one kept
-- only its frame-pointer walk (the ring buffer was full: glibc's frames hide the caller) and an
-- unwound one holds at least 5% of c's time.
local function naming_stack(c)
  local top = c.stacks[1]
  if top and user_unwind == "dwarf" and not top.user_from then
    for i, s in ipairs(c.stacks) do
      if s.user_from and (s.weight or 0) >= c.ns * 0.05 then return s, c.matches[i] or nil end
    end
  end
  return top, c.matches[1] or nil
end

-- The wait table's match for the stack naming c (a runtime's wait function), or nil.
local function runtime_wait(c)
  local _, m = naming_stack(c)
  return m
end

-- " in caller() → own()" (root first, as call paths read) for the stack naming c, and own.
local function where(c)
  local top = naming_stack(c)
  local own, caller
  if top then own, caller = waits.own_frame(top.user, top.user_from) end
  if not own then return "", nil end
  return " in " .. (caller and (diag.fn(caller) .. " → ") or "") .. diag.fn(own), own
end

-- The syscall with most time among the ones that block, for the evidence.
local function top_syscall(names)
  if not syscalls or not syscalls.timed then return nil end
  local best
  for _, sc in ipairs(syscalls.syscalls or {}) do
    for _, n in ipairs(names) do
      if sc.name == n and (not best or (sc.total_ns or 0) > (best.total_ns or 0)) then best = sc end
    end
  end
  if not best or (best.total_ns or 0) == 0 then return nil end
  return string.format("%s(): %s calls, %s in total, avg %s", best.name, diag.fmt_count(best.count),
    diag.fmt_ns(best.total_ns), diag.fmt_ns(best.total_ns / math.max(best.count, 1)))
end

-- cause{id=, class=, title = function(pct_text, at), steps = function(own), extra=, max_sev=,
-- clear=}: the finding of one class (a verdict and its share), or, its share under
-- cause_pct_warn, the ruled-out line "CLEAR: TIME (SHARE of the threads' time)". When a
-- runtime's wait function names the class's heaviest wait, `at` is " for WORDS" (the wait
-- table's words), its next steps come first, and the evidence says which entry named it.
local function cause(spec)
  local c = class[spec.class]
  local pct = share(c.ns)
  local sev = diag.severity_at(pct, T.warn, T.crit)
  if sev == "critical" and spec.max_sev == "warning" then sev = "warning" end
  if not sev or c.count == 0 then
    return diag.ruled_out(spec.id, "%s: %s, %s of the threads' time", spec.clear, diag.fmt_ns(c.ns), diag.fmt_pct(pct))
  end
  local at, own = where(c)
  local m, steps, extra = runtime_wait(c), spec.steps(own), spec.extra
  local follow = waits.follow(m)
  if m then
    at = " for " .. waits.describe(m)
    steps = diag.lines():extend(waits.steps(m, pid)):extend(steps)
    extra = diag.lines(string.format("Named by the wait table (lua/lib/wait_table.lua): %s, %s()%s", m.entry.runtime,
      m.frame, m.entry.under and (" under " .. m.at .. "()") or "")):extend(extra)
  end
  if follow then -- the runtime's own recipe says which of its requests wait, and on what
    table.insert(steps, 1, string.format("Run next: diagnose %s %s (in %s's own terms: what waits, on which lock)",
      follow, target_arg, m.entry.runtime))
  end
  local v = diag.verdict(spec.id, sev, spec.title(diag.fmt_pct(pct), at), evidence_for(c, extra), steps)
  if follow then v.next = { recipe = follow, params = {} } end
  return v, pct
end

-- ---- the hypotheses: each a finding (a verdict and its share) or a ruled-out line -------------

-- The heaviest waker path that releases a lock in the target's own process: {fn, path, ns, count,
-- comm}, or nil when the wakers probe did not run or saw no such wakeup.
local function lock_holder()
  if not wakers then return nil end
  for _, s in ipairs(wakers.stacks or {}) do -- heaviest first
    if s.tag == "same-process" and diag.any_frame(s.user, waits.UNLOCK) then
      return { fn = waits.own_frame(s.user, s.user_from), path = diag.user_path(s.user), ns = s.weight, count = s.count,
        comm = s.comm }
    end
  end
  return nil
end

local function lock_contention()
  local holder = lock_holder()
  local holder_fn = holder and holder.fn
  local extra = diag.lines(top_syscall({ "futex" }))
  if holder then
    extra:add("Released by %s: the waiters were woken %s times from %s (thread %s; %s of their waits)",
      holder_fn and diag.fn(holder_fn) or "an unnamed function", diag.fmt_count(holder.count), holder.path,
      holder.comm or "?", diag.fmt_ns(holder.ns))
  end
  return cause {
    id = "lock-contention", class = "lock", clear = "no lock contention: waiting for a lock",
    title = function(pct, at)
      if runtime_wait(class.lock) then
        return string.format("Lock wait: threads wait %s of their time%s", pct, at)
      end
      return string.format("Lock contention: threads wait %s of their time for a lock%s", pct, at) ..
        (holder_fn and (", held by " .. diag.fn(holder_fn)) or "")
    end,
    steps = function(own)
      local steps = diag.lines()
      if runtime_wait(class.lock) then
        return steps
      elseif holder_fn then
        steps:add("Shorten what %s does while it holds the lock, split the lock, or move work out of it", diag.fn(holder_fn))
      else
        steps:add("Find who holds it: the threads that wake the waiters release the lock (offwaketime -p %s)", pid)
      end
      if own and holder_fn ~= own then
        steps:add("Or take the lock less often in %s (batch, cache, a lock-free read path)", diag.fn(own))
      end
      if user_unwind ~= "dwarf" then
        steps:add("Stacks through glibc may miss the function that took the lock (glibc has no frame pointers): set the off_cpu probe's user_unwind: dwarf")
      end
      return steps
    end,
    extra = extra,
  }
end

local function disk_io()
  return cause {
    id = "disk-io", class = "disk", clear = "not the disk: blocked in I/O",
    title = function(pct, at) return string.format("Blocked on disk I/O %s of the threads' time%s", pct, at) end,
    steps = function(own)
      return { string.format("Which device and how busy: diagnose io-saturation --pid %s, or iostat -x 1", pid),
        own and string.format("Move the I/O in %s off the request path, batch it, or cache what it reads", diag.fn(own)) or
          "Move the I/O off the request path, batch it, or cache what it reads" }
    end,
    extra = diag.lines(top_syscall({ "fsync", "fdatasync", "read", "pread64", "write", "pwrite64", "sync_file_range", "openat" })),
  }
end

local function page_faults()
  return cause {
    id = "page-faults", class = "fault", clear = "no page-fault stalls: blocked in page faults",
    title = function(pct, at) return string.format("Blocked in page faults %s of the threads' time%s", pct, at) end,
    steps = function(own)
      return { "Major faults read mapped files or swap: check /proc/PID/status VmSwap and the memory pressure (diagnose memory-growth)",
        own and string.format("Pre-fault or lock the memory %s touches (madvise WILLNEED, mlock) if it is on the request path", diag.fn(own)) or
          "Pre-fault or lock memory on the request path (madvise WILLNEED, mlock)" }
    end,
  }
end

local function waiting_on_peer()
  local slow = results.peers and peers.slowest(peer_list, T.peer_slow_ns)
  local fast = results.peers and not slow and peers.busiest(peer_list)
  if fast and share(class.peer.ns) >= T.warn then
    -- the waits are round trips to a peer that answers fast: many calls, not a slow peer
    return diag.ruled_out("waiting-on-peer", "not waiting on a slow peer: %s of the threads' time on sockets, %s answers in p50 %s (%s waits/s)",
      diag.fmt_pct(share(class.peer.ns)), fast.name, diag.fmt_ns(fast.p50), diag.fmt_count(fast.rate))
  end
  local extra = diag.lines(top_syscall({ "recvfrom", "recvmsg", "read", "connect" }))
  if slow then extra:add("Waits on %s", peers.describe(slow)) end
  return cause {
    id = "waiting-on-peer", class = "peer", clear = "not waiting on a peer: blocked on sockets and pipes",
    title = function(pct, at)
      if slow then
        return string.format("Waiting on %s %s of the threads' time%s", peers.describe(slow), pct, at)
      end
      return string.format("Waiting on the network or a peer %s of the threads' time%s", pct, at)
    end,
    steps = function(own)
      return { string.format("Which connections: ss -tinp | grep 'pid=%s' (rtt, retransmits, send/receive queues)", pid),
        "Check the peer's own latency (its logs, its diagnose latency) and the network (diagnose network-errors)",
        own and string.format("Add a timeout, or make the call in %s asynchronous if it is on the request path", diag.fn(own)) or
          "Add timeouts on the blocking calls" }
    end,
    extra = extra,
  }
end

-- An event loop's requests waiting on an upstream: its threads park in epoll_wait meanwhile, so
-- the off-CPU classes call it waiting for work; the peers probe times the upstream itself. A
-- blocking client's waits are waiting-on-peer's (nil here).
local function slow_upstream()
  if not results.peers or share(class.peer.ns) >= T.warn then return nil end
  local p = peers.slowest(peer_list, T.peer_slow_ns)
  if not p then
    local b = peers.busiest(peer_list)
    return diag.ruled_out("slow-upstream", "no slow upstream: %s", b and string.format("%s answers in p50 %s", b.name, diag.fmt_ns(b.p50))
      or "no request waited on a peer")
  end
  local pct = peers.share(p, peer_list, thread_ns)
  local served = peers.served_ns(peer_list)
  local of = served and "of the time its requests take" or "of the threads' time"
  local sev = diag.severity_at(pct, T.warn, T.crit)
  if not sev then
    return diag.ruled_out("slow-upstream", "no upstream holds the requests up: %s, %s %s", peers.describe(p), diag.fmt_pct(pct), of)
  end
  local ev = diag.lines(string.format("Waits on %s", peers.describe(p)),
    string.format("%s waited on it in the window, %s %s", diag.fmt_ns(p.total_ns + p.open * p.open_oldest), diag.fmt_pct(pct), of))
  for _, q in ipairs(peer_list) do
    if q.role == "server" and q.count > 0 then
      ev:add("Serves %s: requests answered in p50 %s, p99 %s, %s/s", q.name, diag.fmt_ns(q.p50), diag.fmt_ns(q.p99), diag.fmt_count(q.rate))
    end
  end
  local loop = class["event-loop"]
  if loop.ns > 0 then
    ev:add("Meanwhile its threads park in the event loop %s of their time%s", diag.fmt_pct(share(loop.ns)), where(loop))
  end
  return diag.verdict("slow-upstream", sev,
    string.format("Requests wait on upstream %s (%s %s)", peers.describe(p), diag.fmt_pct(pct), of), ev,
    { string.format("What the upstream does meanwhile: its own logs and latency (diagnose latency on the process behind %s)", p.name),
      p.family ~= "unix" and string.format("The connections to it: ss -tinp dst %s (rtt, queues)", p.name)
        or string.format("The connections to it: ss -xp | grep '%s'", p.name),
      "Bound the wait: the client's timeouts to it, a concurrency limit, or a cache in front" }), pct
end

-- Slow name resolution: the off-CPU time under the resolver, with the lookups' own figures
-- (which names, how long) from the name_lookups probe.
local function slow_name_resolution()
  local extra = diag.lines()
  local slow_name
  if lookups then
    for i = 1, math.min(3, #(lookups.lookups or {})) do
      local l = lookups.lookups[i]
      extra:add("%s(\"%s\"): %s lookups, avg %s, longest %s%s", l["function"], l.name,
        diag.fmt_count(l.count), diag.fmt_ns(l.total_ns / math.max(l.count, 1)), diag.fmt_ns(l.max_ns),
        (l.failed or 0) > 0 and string.format(", %s failed", diag.fmt_count(l.failed)) or "")
    end
    if (lookups.count or 0) >= MIN_LOOKUPS then
      extra:add("Lookup time p50 %s, p99 %s over %s lookups", diag.fmt_ns(diag.percentile(lookups.buckets, 50)),
        diag.fmt_ns(diag.percentile(lookups.buckets, 99)), diag.fmt_count(lookups.count))
    end
    slow_name = lookups.lookups and lookups.lookups[1] and lookups.lookups[1].name
  end
  return cause {
    id = "slow-name-resolution", class = "resolve", clear = "no slow name lookups: waiting for host names",
    title = function(pct, at)
      return string.format("Slow name resolution: threads wait %s of their time for host name lookups%s", pct, at) ..
        (slow_name and (" (" .. slow_name .. ")") or "")
    end,
    steps = function(own)
      return { "Check the name servers in /etc/resolv.conf (of the process's mount namespace) in order: the first one that answers slowly, or not at all, costs every lookup its delay (dig NAME @SERVER shows each one's time)",
        own and string.format("Resolve once and cache in %s (respecting the TTL), or run a local cache (nscd, systemd-resolved, dnsmasq)", diag.fn(own))
          or "Cache lookups in the process (respecting the TTL), or run a local cache (nscd, systemd-resolved, dnsmasq)",
        "A name that is not fully qualified is tried with each search domain first (resolv.conf search/ndots): use the full name with a trailing dot" }
    end,
    extra = extra,
  }
end

local function sleeping()
  local placed = peers.sleeps_placed(results.peers) -- what the sleeping threads had open
  local where_at = ""
  local v, pct = cause {
    id = "sleeping", class = "sleep", clear = "not sleeping on purpose: in nanosleep",
    max_sev = "warning", -- a sleep may be by design
    title = function(pct, at)
      where_at = at
      if placed and placed.top then
        return string.format("Sleeping inside requests %s of the threads' time%s, with a request to %s (%s) unanswered",
          diag.fmt_pct(share(class.sleep.ns) * placed.in_frac), at, placed.top.peer, placed.top.role)
      end
      return string.format("Sleeping on purpose %s of the threads' time%s", pct, at)
    end,
    steps = function(own)
      return { own and string.format("Look at the sleep in %s: a retry backoff, a poll interval or a rate limiter on the request path shows up as latency", diag.fn(own)) or
          "Look for sleeps on the request path: retry backoffs, poll intervals, rate limiters",
        "If it is a background thread that sleeps by design, this is not the cause" }
    end,
    extra = diag.lines(top_syscall({ "clock_nanosleep", "nanosleep" })),
  }
  if not v or not v.severity then return v, pct end -- ruled out, or no off-CPU data
  if not placed then
    local sl = results.peers and results.peers.sleeps
    table.insert(v.evidence, sl and (sl.unplaced or 0) > 0
      and "Whether a request was open during the sleeps is not known: the peers probe, sampling, did not follow the sockets the sleeping threads last used"
      or "Whether a request was open during the sleeps is not known: the peers probe (peer_wait) placed none of them")
    return v, pct
  end
  local sl = placed.sleeps
  table.insert(v.evidence, string.format("While they slept: a request of the thread's open %s times (%s), none open %s times (%s)%s",
    diag.fmt_count(sl.in_request or 0), diag.fmt_ns(sl.in_request_ns or 0), diag.fmt_count(sl.between or 0),
    diag.fmt_ns(sl.between_ns or 0), (sl.unplaced or 0) > 0 and string.format(", not known %s times (a socket sampling did not follow)",
      diag.fmt_count(sl.unplaced)) or ""))
  -- the share of the threads' time slept with a request open: below cause_pct_warn, pacing
  if pct * placed.in_frac >= T.warn then return v, pct end
  v.id, v.severity = "pacing", "info"
  v.title = string.format("Pacing: the threads sleep %s of their time%s with no request of theirs open, by design%s",
    diag.fmt_pct(pct), where_at, (sl.in_request or 0) > 0 and string.format("; %s inside requests", diag.fmt_pct(pct * placed.in_frac)) or "")
  v.next_steps = { "Nothing to fix: a thread that sleeps with no request of its own open (a client pacing its requests, a periodic loop) adds no latency to a request",
    "If requests are slow even so, time them at the server: diagnose latency on the server's pid" }
  return v, pct
end

-- The runtimes' own waits the wait table names: Python's GIL, a JVM park, a PostgreSQL latch.
local function gil_wait()
  return cause {
    id = "gil-wait", class = "gil", clear = "no GIL contention: waiting for Python's GIL",
    title = function(pct, at) return string.format("GIL contention: threads wait %s of their time%s", pct, at) end,
    steps = function() return { "Only one thread runs Python code at a time: the waiters are ready to run and cannot" } end,
  }
end

local function park_wait()
  return cause {
    id = "park-wait", class = "park", clear = "no brief parks: parked in LockSupport.park, briefly",
    title = function(pct, at)
      return string.format("Parked: threads wait %s of their time, briefly and often,%s", pct, at)
    end,
    steps = function() return { "Brief, frequent parks are a contended java.util.concurrent lock, or a pool handing work back and forth" } end,
  }
end

local function latch_wait()
  return cause {
    id = "latch-wait", class = "latch", clear = "no latch waits: waiting to be signalled by another process",
    max_sev = "warning", -- what for is the caller's: a wait the table does not name further
    title = function(pct, at) return string.format("Waiting to be signalled %s of the threads' time%s", pct, at) end,
    steps = function() return { "Another process's progress holds these threads: the wait event names which" } end,
  }
end

local function futex_wait()
  return cause {
    id = "futex-wait", class = "futex", clear = "no unnamed futex waits: in futexes the stacks do not name",
    title = function(pct, at)
      return string.format("Waiting on a futex %s of the threads' time%s (lock or condition: the stacks do not say)", pct, at)
    end,
    steps = function()
      return { "The user stacks do not show pthread_mutex_lock or pthread_cond_wait: a lock or a wait for work, or a runtime's own parking (Go, Java)",
        string.format("Who wakes them: offwaketime -p %s", pid) }
    end,
  }
end

-- Waiting for a CPU must cost the threads something: a runnable share, or a run-queue p99 ten
-- times the warning (a p99 over a few dozen waits on a busy 2-CPU box is often one preemption).
local function cpu_starved()
  local wait = diag.runq(runq)
  local runnable_pct = share(class.runnable.ns)
  if not ((wait and wait.p99 >= 10 * T.runq_warn) or (runnable_pct >= T.runnable and class.runnable.count > 0)) then
    if not offcpu and not wait then return nil end
    local checked = diag.lines()
    if offcpu then checked:add("runnable %s of the threads' time", diag.fmt_pct(runnable_pct)) end
    if wait then checked:add("run-queue p99 %s over %s waits", diag.fmt_us(wait.p99), diag.fmt_count(wait.count)) end
    return diag.ruled_out("cpu-starved", "not starved of CPU: %s", table.concat(checked, ", "))
  end
  local ev = diag.lines()
  if wait then
    ev:add("Run-queue latency p99 %s, p50 %s, max %s over %s waits", diag.fmt_us(wait.p99),
      diag.fmt_us(wait.p50), diag.fmt_us(wait.max), diag.fmt_count(wait.count))
  end
  ev:add("Runnable but not running %s of the threads' time (%s)", diag.fmt_pct(runnable_pct),
    diag.fmt_ns(class.runnable.ns))
  if context and context.nonvoluntary_ctxt_switches then
    ev:add("%s involuntary context switches/s", diag.fmt_count(diag.rate(context.nonvoluntary_ctxt_switches, window)))
  end
  local psi = diag.get(context, "psi", "some_total_us")
  if psi and window > 0 then
    ev:add("CPU pressure some: stalled %s of the window", diag.fmt_pct(psi / (window * 1e6) * 100))
  end
  local sev = (runnable_pct >= T.crit or (wait and wait.p99 >= 100 * T.runq_warn)) and "critical" or "warning"
  return diag.verdict("cpu-starved", sev,
    string.format("Starved of CPU: threads wait runnable %s of their time", diag.fmt_pct(runnable_pct)), ev,
    { string.format("Diagnose the CPU first: diagnose high-cpu %s, and what else runs (top -o %%CPU)", target_arg),
      "Check the cgroup CPU quota (cpu.max / cpu.cfs_quota_us) and the thread count against the CPUs" }), runnable_pct
end

-- The class-based causes need the off-CPU stacks (slow name resolution: or the lookups probe).
local function from_offcpu(hypothesis)
  return function()
    if not offcpu then return nil end
    return hypothesis()
  end
end

-- Python's garbage collector (the usdt probe pygc: CPython's gc__start → gc__done, by
-- generation): the interpreter stops while it runs, whichever thread triggered it. A finding when
-- its pauses add up to >= gc_pct_warn of the window; ruled out with its share when CPython's
-- probes were there; nothing to say on another runtime.
local function gc_pauses()
  local g = results.pygc
  if not g or not g.available then return nil end
  local total, count, longest, worst = 0, 0, 0, nil
  for _, k in ipairs(g.keys or {}) do
    total, count = total + (k.total_ns or 0), count + (k.count or 0)
    if (k.max_ns or 0) > longest then longest, worst = k.max_ns, k end
  end
  local pct = window > 0 and total * 100 / (window * 1e9) or 0
  if pct < T.gc_pct or count == 0 then
    return diag.ruled_out("gc-pauses", "Python's garbage collector: %s collections, %s in all (%s of the window)",
      diag.fmt_count(count), diag.fmt_ns(total), diag.fmt_pct(pct))
  end
  local ev = diag.lines(string.format("%s collections in %.1f s, %s in all (%s of the window): CPython's gc__start → gc__done probes in %s",
    diag.fmt_count(count), window, diag.fmt_ns(total), diag.fmt_pct(pct), g.binary or "the interpreter"))
  for _, k in ipairs(g.keys or {}) do
    ev:add("Generation %s: %s collections, %s in all, p50 %s, p99 %s, longest %s", math.tointeger(k.key) or k.key,
      diag.fmt_count(k.count), diag.fmt_ns(k.total_ns or 0),
      diag.fmt_ns(diag.percentile_upto(k.buckets, 50, k.max_ns)),
      diag.fmt_ns(diag.percentile_upto(k.buckets, 99, k.max_ns)), diag.fmt_ns(k.max_ns or 0))
  end
  local gen = worst and (math.tointeger(worst.key) or worst.key) or "?"
  return diag.verdict("gc-pauses", diag.severity_at(pct, T.gc_pct, T.crit) or "warning",
    string.format("Python's garbage collector stops the interpreter %s of the time: %s collections, the longest %s (generation %s)",
      diag.fmt_pct(pct), diag.fmt_count(count), diag.fmt_ns(longest), gen), ev,
    { "Generation 2 collections walk every tracked object: after start-up, gc.freeze() moves what exists to a permanent generation they skip (Python 3.7+)",
      "Fewer collections: gc.set_threshold(...) higher for generation 0 (each collection then takes longer, but far fewer run)",
      "What keeps creating cycles: gc.set_debug(gc.DEBUG_SAVEALL) in a test, then the types in gc.garbage (objgraph shows them)",
      "Where the time goes inside: diagnose high-cpu " .. target_arg .. " (collections show as gc_collect_main / deduce_unreachable)" }), pct
end

-- ---- threads blocked since before the window (the snapshots: lua/lib/blocked.lua) --------------

-- The time of snapshot threads b..., and its share of the threads that matter.
local function members_share(members)
  local ns = 0
  for _, b in ipairs(members) do ns = ns + (b.t.weight or 0) end
  return share(ns), ns
end

local function addr(t) return string.format("0x%x", math.tointeger(t.futex and t.futex.addr) or 0) end

-- "run_audit() [thread 12] (state S, futex())" — and its call path, for the evidence.
local function thread_evidence(b)
  local t = b.t
  return string.format("%s (%s, state %s, %s): %s", blocked.name(b), t.comm or "?", t.state or "?",
    t.syscall and (t.syscall .. "()") or "no system call", diag.user_path(t.user))
end

local function since_note()
  return string.format("Blocked since before the run: neither switches nor CPU time moved between the snapshots at the window's start and end (thread_states, by %s%s)",
    snap.how, snap.since_clock == "run-queue" and "; how long from the run-queue clock" or "")
end

local function cycle_line(members)
  local names = {}
  for _, b in ipairs(members) do names[#names + 1] = blocked.name(b) end
  names[#names + 1] = names[1]
  return table.concat(names, " → ")
end

-- Threads waiting for glibc mutexes in a cycle, each held by the next: a deadlock.
local function deadlock()
  if not snap then return nil end
  if #snap.cycles == 0 then
    return diag.ruled_out("deadlock", "no deadlock: no thread blocked since before the run waits for a mutex held by a thread that waits in turn (%d blocked throughout)", #snap.all)
  end
  local cyc = snap.cycles[1].members
  local names = {}
  for _, b in ipairs(cyc) do names[#names + 1] = blocked.name(b) end
  local ev = diag.lines()
  for i, b in ipairs(cyc) do
    local nxt = cyc[i % #cyc + 1]
    local prev = cyc[(i - 2) % #cyc + 1]
    ev:add("%s has waited %s for the mutex at %s, held by %s; it holds the mutex at %s, which %s waits for",
      blocked.name(b), blocked.how_long(b.t, snap), addr(b.t), blocked.name(nxt), addr(prev.t),
      blocked.name(prev))
  end
  ev:add("The cycle: %s", cycle_line(cyc))
  for _, b in ipairs(cyc) do ev:add(thread_evidence(b)) end
  for k = 2, #snap.cycles do ev:add("Another deadlock: %s", cycle_line(snap.cycles[k].members)) end
  ev:add(since_note())
  ev:add("Mutex owners from each waiter's futex words: glibc's __owner (a default mutex's lock word holds 0, 1 or 2, not a thread id)")
  local members = {}
  for _, c in ipairs(snap.cycles) do for _, b in ipairs(c.members) do members[#members + 1] = b end end
  local pct = members_share(members)
  return diag.verdict("deadlock", "critical",
    string.format("Deadlock: %s wait for each other's mutex%s since before the run", table.concat(names, #names == 2 and " and " or ", "),
      #names == 2 and "" or "es in a cycle"), ev,
    { string.format("These threads never wake: take the mutexes in one order everywhere (each of %s holds one the other wants), or take the second with pthread_mutex_trylock and back off",
        table.concat(names, " and ")),
      string.format("Every thread's stack before restarting: gdb -p %s -batch -ex 'thread apply all bt' (and a core: gcore %s)", pid, pid),
      "The process does not recover by itself: restart it once the stacks are kept" }), pct
end

-- A runtime's lock waits with no owner recorded (a Python lock, a Java monitor): two threads or
-- more of a process blocked on them the whole window are likely deadlocked.
local function likely_deadlock()
  if not snap then return nil end
  local g
  for _, x in ipairs(snap.runtime_locks) do
    if #x.members >= 2 and (not g or #x.members > #g.members) then g = x end
  end
  if not g then
    return diag.ruled_out("likely-deadlock", "not likely deadlocked: fewer than two threads of a process wait for locks with no owner recorded the whole window")
  end
  local m1 = g.members[1].match
  local words = m1 and m1.entry.what or "a lock"
  local runtime = m1 and m1.entry.runtime or nil
  local ev = diag.lines(string.format("%d threads of process %d wait for locks the whole window, none of them running: %s",
    #g.members, math.tointeger(g.tgid) or g.tgid, words))
  local names = {}
  for _, b in ipairs(g.members) do
    names[#names + 1] = blocked.name(b)
    ev:add("%s, blocked %s, waits for %s: %s", blocked.name(b), blocked.how_long(b.t, snap), blocked.waits_on(b),
      diag.call_path(b.t.user, 12))
  end
  ev:add(since_note())
  ev:add("The runtime records no owner of these locks where a snapshot can read it: a cycle is likely, not proven (a thread that took a lock and exited without releasing it looks the same)")
  local steps = diag.lines()
  if m1 and #(m1.entry.steps or {}) > 0 then
    steps:extend(waits.steps(m1, pid))
  else
    steps:add("Which lock each thread holds and waits for: %s", runtime == "jvm" and string.format("jstack -l %s ('Found one Java-level deadlock')", pid)
      or string.format("gdb -p %s -batch -ex 'thread apply all bt'", pid))
  end
  steps:add("Take the locks in one order everywhere, or with a timeout (lock.acquire(timeout=...)) that backs off")
  local pct = members_share(g.members)
  return diag.verdict("likely-deadlock", "critical",
    string.format("Likely deadlocked: %s wait for %s the whole window, since before the run", table.concat(names, ", "), words),
    ev, steps), pct
end

-- A lock waited for the whole window, whose holder does not let go (or is not recorded).
local function held_lock()
  if not snap then return nil end
  local h
  for _, x in ipairs(snap.holds) do
    if not h or #x.waiters > #h.waiters then h = x end
  end
  local single
  for _, x in ipairs(snap.runtime_locks) do
    if #x.members == 1 then single = single or x.members[1] end
  end
  if not h and not single then
    return diag.ruled_out("held-lock", "no lock held since before the run: no thread waits the whole window for a mutex whose holder keeps it")
  end
  local ev, steps, title, members = diag.lines(), diag.lines(), nil, nil
  if h then
    members = h.waiters
    local w = h.waiters[1]
    title = string.format("Lock held since before the run: %s has waited %s for the mutex at %s, held by %s",
      blocked.name(w), blocked.how_long(w.t, snap), addr(w.t), blocked.holder_doing(h, snap))
    for _, b in ipairs(h.waiters) do ev:add("Waiter: " .. thread_evidence(b)) end
    if h.holder then
      local ht = h.holder.t
      ev:add("Holder: %s%s", thread_evidence(h.holder),
        ht.kernel and #ht.kernel > 0 and (" — kernel: " .. diag.call_path(ht.kernel, 6)) or "")
      local own = waits.own_frame(ht.user, ht.user_from)
      if h.holder.blocked and h.holder.class == "sleep" then
        steps:add("%s sleeps holding the mutex: release it before sleeping, or hold it only for the update", own and diag.fn(own) or "The holder")
      elseif h.holder.blocked then
        steps:add("%s waits for %s holding the mutex: release it before waiting, or fix what it waits for", own and diag.fn(own) or "The holder",
          blocked.waits_on(h.holder))
      else
        steps:add("What %s does holding the mutex: diagnose high-cpu --pid %s (it ran in the window)", own and diag.fn(own) or "the holder", pid)
      end
    else
      steps:add("The holder, thread %s, is gone: a thread that exits holding a mutex leaves it locked for ever (robust mutexes, PTHREAD_MUTEX_ROBUST, report it)",
        math.tointeger(h.holder_tid) or h.holder_tid)
    end
    ev:add("Owner from the waiter's futex words: glibc's __owner")
  else
    members = { single }
    local words = single.match and waits.describe(single.match) or "a lock"
    title = string.format("Lock held since before the run: %s has waited %s for %s (its holder is not recorded)",
      blocked.name(single), blocked.how_long(single.t, snap), words)
    ev:add("%s: %s", blocked.name(single), diag.call_path(single.t.user, 12))
    if single.match then steps:extend(waits.steps(single.match, pid)) end
  end
  ev:add(since_note())
  steps:add("Every thread's stack: gdb -p %s -batch -ex 'thread apply all bt'", pid)
  local pct = members_share(members)
  local sev = diag.severity_at(pct, T.warn, T.crit) or "warning"
  -- a runtime's own recipe says which of its requests wait, and on what (PostgreSQL's locks)
  local m = members[1].match
  local follow = waits.follow(m)
  if follow then
    table.insert(steps, 1, string.format("Run next: diagnose %s %s (in %s's own terms: what waits, on which lock)",
      follow, target_arg, m.entry.runtime))
  end
  local v = diag.verdict("held-lock", sev, title, ev, steps)
  if follow then v.next = { recipe = follow, params = {} } end
  return v, pct
end

-- Threads uninterruptible the whole window, or in a file system request that gets no answer.
local function stuck_in_kernel()
  if not snap then return nil end
  if #snap.stuck == 0 then
    return blocked.not_stuck_in_kernel()
  end
  local b = snap.stuck[1]
  local t = b.t
  local file = blocked.file_of(t)
  local call = t.syscall and (t.syscall .. "()") or "the kernel"
  local more = #snap.stuck > 1 and string.format(" (and %d more thread%s)", #snap.stuck - 1, plural(#snap.stuck - 1)) or ""
  local function leaf_first(frames, n)
    local out = {}
    for i = 1, math.min(n, #frames) do out[i] = frames[i] end
    return table.concat(out, " ← ")
  end
  local title = string.format("Stuck in the kernel: %s has waited %s in %s%s%s%s: %s", blocked.name(b), blocked.how_long(t, snap), call,
    file and (" on " .. file) or "", t.state == "D" and ", uninterruptible" or "", more, leaf_first(t.kernel or {}, 3))
  local ev = diag.lines()
  for _, x in ipairs(snap.stuck) do
    local xf = blocked.file_of(x.t)
    ev:add("%s, state %s, in %s%s, blocked %s; kernel: %s", blocked.name(x), x.t.state or "?", x.t.syscall and (x.t.syscall .. "()") or "?",
      xf and (" on " .. xf) or "", blocked.how_long(x.t, snap), leaf_first(x.t.kernel or {}, 8))
    ev:add("  user: %s", diag.user_path(x.t.user))
  end
  ev:add(since_note())
  local steps = diag.lines()
  local fs = t.fd and t.fd.fs or ""
  local kernel = t.kernel or {}
  if fs:find("^fuse") or diag.any_frame(kernel, { "^fuse_", "^request_wait_answer" }) then
    steps:add("A FUSE file system's server does not answer%s: look at the process serving it (its logs, its own stacks); writing 1 to /sys/fs/fuse/connections/ID/abort ends the waits (ID: stat -c %%d %s)",
      t.fd and t.fd.mount and (" (" .. t.fd.mount .. ")") or "", t.fd and t.fd.mount or "the mount point")
  elseif fs:find("^nfs") or diag.any_frame(kernel, { "^nfs", "^rpc_", "^__rpc_" }) then
    steps:add("The NFS server does not answer: dmesg | grep -i 'not responding'; a hard mount waits for ever (soft,timeo= bound it)")
  elseif diag.any_frame(kernel, waits.KERNEL.disk) then
    steps:add("The device does not complete its requests: dmesg (I/O errors, resets), /sys/block/DEV/inflight; diagnose io-saturation")
  end
  steps:add("Whether it moves at all: cat /proc/%s/task/%s/stack a few times; dmesg for 'blocked for more than' (the kernel's hung task warnings)",
    math.tointeger(t.tgid) or t.tgid, math.tointeger(t.tid) or t.tid)
  steps:add("Until the file system or device answers, the thread cannot be killed (uninterruptible) or holds whatever it took before the call")
  local pct = members_share(snap.stuck)
  return diag.verdict("stuck-in-kernel", diag.severity_at(pct, T.warn, T.crit) or "warning", title, ev, steps), pct
end

local HYPOTHESES = {
  deadlock, likely_deadlock, held_lock, stuck_in_kernel,
  from_offcpu(lock_contention), from_offcpu(disk_io), from_offcpu(page_faults), from_offcpu(waiting_on_peer),
  function() if offcpu or lookups then return slow_name_resolution() end end,
  from_offcpu(sleeping), from_offcpu(gil_wait), from_offcpu(park_wait), from_offcpu(latch_wait),
  from_offcpu(futex_wait), cpu_starved, from_offcpu(slow_upstream), gc_pauses,
}

-- ---- nothing found: idle, or ok ----------------------------------------------------------------

-- Idle means the threads mostly wait: at least half of their time off the CPU.
-- An event loop parked in epoll/poll: idle, or waiting on peers with requests outstanding; the
-- off-CPU stacks cannot tell which.
local function event_loop_verdict()
  local loop = class["event-loop"]
  local m = runtime_wait(loop)
  local at = m and (" for " .. waits.describe(m)) or where(loop)
  local fast = peers.busiest(peer_list)
  local meanwhile = not results.peers and "whether requests wait on a peer meanwhile needs the peers probe (peer_wait)"
    or fast and string.format("waiting for work: its upstreams answer fast (%s in p50 %s)", fast.name, diag.fmt_ns(fast.p50))
    or "waiting for work: no request waited on an upstream"
  return diag.verdict("event-loop", "info",
    string.format("Event loop parked: the threads wait %s of their time%s; %s", diag.fmt_pct(share_all(loop.ns)), at, meanwhile),
    evidence_for(loop, { "An event loop waits in epoll_wait both when it has no work and when its requests wait on upstreams: the stacks alone cannot tell" }),
    diag.lines():extend(waits.steps(m, pid)):extend({
      string.format("Which peers it talks to: ss -tinp | grep 'pid=%s' (rtt, send/receive queues)", pid),
      "If requests are slow, time the upstreams (their own latency, diagnose latency on them)" }))
end

-- Most of the waiting is threads waiting for work since before the window: what they wait for.
local function snapshot_idle_verdict()
  local g = snap.idle_groups[1]
  local groups = #snap.idle_groups
  local ev = diag.lines()
  for i = 1, math.min(4, groups) do
    local x = snap.idle_groups[i]
    ev:add("%d thread%s wait%s for %s, blocked %s: %s", x.n, plural(x.n), x.n == 1 and "s" or "", x.words,
      blocked.how_long(x.first.t, snap), diag.user_path(x.first.t.user))
  end
  if groups > 4 then ev:add("... and %d more kinds of wait", groups - 4) end
  ev:add("On CPU %s, off CPU and seen %s, idle throughout %s of the threads' time (%d thread%s x %.1f s)",
    diag.fmt_pct(share_all(on_cpu_ns or 0)), diag.fmt_pct(share_all(off_ns)), diag.fmt_pct(share_all(snap.idle_ns)),
    threads, plural(threads), window)
  ev:add(since_note())
  local who = idle_threads >= threads and (threads == 1 and "its thread" or string.format("all %d threads", threads))
    or string.format("%d of %d threads", idle_threads, threads)
  return diag.verdict("idle", "info",
    string.format("Idle: %s waited for work the whole window, since before the run (%s%s); nothing ran slowly",
      who, g.words, groups > 1 and string.format(", and %d other wait%s", groups - 1, plural(groups - 1)) or ""),
    ev,
    diag.lines():extend(waits.steps(g.first.match, pid)):extend({
      "If requests are slow while the process is idle, the time is spent before they reach it: the load balancer, the network, a queue upstream",
      "Compare with the request rate it should see: ss -tn state established '( sport = :PORT )', its access logs" }))
end

local function quiet_verdict()
  -- a thread busy on CPU among parked ones (a single-threaded server's main thread) is not idle
  local busy = cpu_pct and cpu_pct >= 50
  local waiting = not busy and off_ns + unseen_ns + snap_ns >= all_thread_ns / 2
  local work, loop = class["work-wait"], class["event-loop"]
  if waiting and snap and snap.idle_ns > 0 and snap.idle_ns >= (off_ns + unseen_ns + snap_ns) / 2 then
    return snapshot_idle_verdict()
  end
  if waiting and off_ns > 0 and loop.ns > 0 and loop.ns >= work.ns and work.ns + loop.ns >= off_ns / 2 and
    not (unseen_ns > 0 and unseen_ns >= (off_ns + unseen_ns) / 2) then
    return event_loop_verdict()
  end
  if waiting and unseen_ns > 0 and unseen_ns >= (off_ns + unseen_ns) / 2 and snap_missing then
    -- parked or stuck: without the snapshot neither can be said, and a deadlock looks like this
    return diag.verdict("blocked-unknown", "warning",
      string.format("Threads blocked throughout the window %s of their time, on what is not known: the thread snapshot was not taken (%s)",
        diag.fmt_pct(share_all(unseen_ns)), snap_missing),
      { string.format("%s of the threads' time (%s) was neither on a CPU nor seen leaving one: blocked since before the run",
          diag.fmt_pct(share_all(unseen_ns)), threads_x_window()),
        string.format("On CPU %s, off CPU and seen %s", diag.fmt_pct(share_all(on_cpu_ns or 0)), diag.fmt_pct(share_all(off_ns))),
        "A parked pool and a deadlock or a hung mount look the same without the snapshot: not called idle" },
      { string.format("Where they wait: cat /proc/%s/task/*/stack (kernel) and /proc/%s/task/*/wchan; gdb -p %s -batch -ex 'thread apply all bt' for the user stacks", pid, pid, pid),
        "Run it again: diagnose latency " .. target_arg .. " (the snapshot is read at the window's edges)" })
  end
  if waiting and unseen_ns > 0 and unseen_ns >= (off_ns + unseen_ns) / 2 then
    return diag.verdict("idle", "info",
      string.format("Idle: threads were blocked throughout the window %s of their time; nothing ran slowly", diag.fmt_pct(share_all(unseen_ns))),
      { string.format("%s of the threads' time (%s) was neither on a CPU nor seen leaving one: those threads slept the whole window",
          diag.fmt_pct(share_all(unseen_ns)), threads_x_window()),
        string.format("On CPU %s, off CPU and seen %s", diag.fmt_pct(share_all(on_cpu_ns or 0)), diag.fmt_pct(share_all(off_ns))) },
      { string.format("Where they sleep: cat /proc/%s/task/*/stack (kernel) and /proc/%s/task/*/wchan; a parked pool waits in futex_wait, epoll_wait or accept", pid, pid),
        "If requests are slow while the process is idle, the time is spent before they reach it: the load balancer, the network, a queue upstream",
        "Threads stuck on a lock for the whole window (a deadlock) look the same here: if the service does not answer at all, check their stacks" })
  elseif waiting and off_ns > 0 and work.ns >= off_ns / 2 then
    local m = runtime_wait(work)
    local title = m and string.format("Idle: the threads wait %s of their time for %s; nothing slows them down",
        diag.fmt_pct(share_all(work.ns)), waits.describe(m))
      or string.format("Idle: the threads wait for work %s of their time%s; nothing slows them down", diag.fmt_pct(share_all(work.ns)), where(work))
    return diag.verdict("idle", "info", title,
      evidence_for(work, diag.lines("Waiting for work: epoll_wait, poll, accept or a condition variable (a parked thread pool), not a lock, the disk or a peer",
        peer_work_ns > 0 and string.format("%s of it in reads on connections with no request open: a server waiting for its clients' next request (the peers probe's reads)",
          diag.fmt_ns(peer_work_ns)) or nil)),
      diag.lines():extend(waits.steps(m, pid)):extend({
        "If requests are slow while the process is idle, the time is spent before they reach it: the load balancer, the network, a queue upstream",
        "Compare with the request rate it should see: ss -tn state established '( sport = :PORT )', its access logs" }))
  end
  return diag.verdict("ok", "ok",
    string.format("No waiting cause stands out: on CPU %s, off CPU %s of the threads' time",
      cpu_pct and diag.fmt_pct(cpu_pct / threads) or "?", diag.fmt_pct(share_all(off_ns))),
    { string.format("No cause reached %s of the threads' time", diag.fmt_pct(T.warn)) },
    busy and { string.format("A thread is busy on CPU (%s of one CPU): what it runs, diagnose high-cpu %s", diag.fmt_pct(cpu_pct), target_arg),
        "Measure longer, or when the latency is high: diagnose latency --duration 30" }
      or { "Measure longer, or when the latency is high: diagnose latency --duration 30" })
end

-- ---- incomplete data ---------------------------------------------------------------------------

local function incomplete_data()
  local partial = diag.partial()
  local note = partial.note
  if not offcpu then note("offcpu missing", "offcpu: no results: where the threads wait was not measured", "warning") end
  if not runq then note("runq missing", "runq: no results: CPU starvation was assessed from off-CPU time only") end
  if not context then note("context missing", "context: no results: thread count unknown, shares are per one thread") end
  if offcpu and (offcpu.dropped or 0) > 0 then
    note(string.format("offcpu: %s dropped", diag.fmt_count(offcpu.dropped)),
      string.format("offcpu: %s interval(s) not recorded (a map was full)", diag.fmt_count(offcpu.dropped)))
  end
  if offcpu and offcpu.sampled_1_in then
    note(string.format("sampled 1 in %d", offcpu.sampled_1_in),
      string.format("offcpu: 1 interval in %d recorded (budget): times are estimates", offcpu.sampled_1_in))
  end
  partial.stop(run.stop_reason, window, false)
  return partial.verdict({ "Verdicts may be partial; re-run once the cause is fixed" })
end

-- ---- report sections ---------------------------------------------------------------------------

local function state_table()
  local rows = diag.lines()
  if on_cpu_ns then rows:add({ "on CPU", diag.fmt_ns(on_cpu_ns), diag.fmt_pct(share_all(on_cpu_ns)) }) end
  for _, name in ipairs(CLASSES) do
    local c = class[name]
    if c.ns > 0 then rows:add({ name, diag.fmt_ns(c.ns), diag.fmt_pct(share_all(c.ns)) }) end
  end
  -- the snapshots' threads the classes above do not hold (the others were added to them)
  if snap then
    if snap.idle_ns > 0 then
      rows:add({ "idle throughout (since before the run)", diag.fmt_ns(snap.idle_ns), diag.fmt_pct(share_all(snap.idle_ns)) })
    end
    local told = {}
    for _, b in ipairs(snap.others) do told[b] = true end
    local by = {}
    for _, b in ipairs(snap.all) do
      if not b.idle and not told[b] then
        local label = b.class == "stuck" and "stuck in the kernel" or b.in_cycle and "deadlocked" or b.class
        by[label] = (by[label] or 0) + (b.t.weight or 0)
      end
    end
    for _, label in ipairs({ "deadlocked", "lock", "sleep", "stuck in the kernel" }) do
      if by[label] then
        rows:add({ label .. " (since before the run)", diag.fmt_ns(by[label]), diag.fmt_pct(share_all(by[label])) })
      end
    end
  end
  if unseen_ns > 0 then
    rows:add({ "blocked throughout", diag.fmt_ns(unseen_ns), diag.fmt_pct(share_all(unseen_ns)) })
  end
  return diag.table(string.format("Thread time by state (%d thread%s x %.1f s)", threads, plural(threads), window),
    { "state", "time", "share" }, rows)
end

-- The threads blocked since before the window, most blocked first.
local function blocked_table()
  if not snap or #snap.all == 0 then return nil end
  local rows = diag.lines()
  for i = 1, math.min(T.top_n * 2, #snap.all) do
    local b = snap.all[i]
    rows:add({ math.tointeger(b.t.tid) or b.t.tid, b.t.comm or "?", b.t.state or "?", blocked.how_long(b.t, snap),
      b.in_cycle and "deadlock" or b.idle and ("idle: " .. b.class) or b.class, blocked.waits_on(b), diag.user_path(b.t.user) })
  end
  return diag.table(string.format("Threads blocked since before the run (%d; %s)", #snap.all, snap.how),
    { "thread", "name", "state", "blocked", "why", "waits on", "call path" }, rows)
end

local function heaviest_waits_table()
  local rows = diag.lines()
  for i = 1, math.min(T.top_n, #(offcpu.stacks or {})) do
    local s = offcpu.stacks[i]
    rows:add({ diag.fmt_ns(s.weight), waits.classify(s, user_unwind), s.comm or "?", diag.user_path(s.user) })
  end
  if #rows == 0 then return nil end
  return diag.table("Where the threads wait (heaviest first)", { "time", "why", "thread", "call path" }, rows)
end

-- ---- main: the hypotheses in order, findings worst first ---------------------------------------

local answer = diag.answer()
local findings = {}
for _, hypothesis in ipairs(HYPOTHESES) do
  local item, pct = hypothesis()
  if item and item.severity then
    findings[#findings + 1] = { v = item, pct = pct }
  else
    answer.add(item)
  end
end
table.sort(findings, function(a, b)
  if a.v.severity ~= b.v.severity then return diag.SEVERITY_RANK[a.v.severity] > diag.SEVERITY_RANK[b.v.severity] end
  return a.pct > b.pct
end)
for _, f in ipairs(findings) do answer.add(f.v) end
if #findings == 0 and offcpu then answer.add(quiet_verdict()) end
answer.add(incomplete_data())

if offcpu then
  answer.section(state_table())
  answer.section(heaviest_waits_table())
end
answer.section(blocked_table())
if diag.runq(runq) then answer.section(diag.histogram("Run-queue latency", "us", runq.buckets)) end
answer.section(peers.table(peer_list, T.top_n))

-- the key figures `diagnose watch` exports (nil: not measured): the threads' time by wait class
local WAIT_METRICS = { runnable = "waiting for a CPU", disk = "in the block layer or a journal",
  lock = "on a lock", futex = "in futex() without a named lock", peer = "on a socket or pipe peer",
  resolve = "on name lookups", sleep = "sleeping" }
for _, name in ipairs({ "runnable", "disk", "lock", "futex", "peer", "resolve", "sleep" }) do
  answer.metric("wait_" .. name .. "_ratio", offcpu and class[name] and share(class[name].ns) / 100 or nil,
    "Share of the target's threads' time " .. WAIT_METRICS[name])
end
local runq_wait = diag.runq(runq)
answer.metric("runq_latency_p99_seconds", runq_wait and runq_wait.p99 / 1e6,
  "99th percentile of the time the target's threads waited in the run queue")

return answer.result()
