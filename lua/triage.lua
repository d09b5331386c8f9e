-- triage.lua — verdicts for recipes/triage.yaml: which symptom recipe to run next, and why.
--
-- Reads results.profile (cpu_profile), results.offcpu (off_cpu), results.runq (runq_latency),
-- results.context (proc_context: cpu, memory, io, net), results.peers (peer_wait, through
-- lua/lib/peers.lua), run and thresholds. Every figure is a
-- delta over the window (never a pressure avg10 or a rolling average). Any probe may be missing:
-- nothing is then ruled out on its data.
--
-- How it decides. With --pid the threads' time (threads x window) is split: on the CPU
-- (context.cpu_pct), and off it by the off-CPU stacks, each classified by waits.classify
-- (lua/lib/waits.lua, the classes latency uses) and folded into triage's coarser ones:
--   runnable   preempted, waiting for a CPU
--   disk       uninterruptible in the block layer, writeback, a journal, a page fault (other
--              uninterruptible waits, a kernel mutex or a parked kernel thread, are "other")
--   lock       a futex under a lock wrapper (__lll_lock_wait, pthread_mutex_*, rwlock, sem_*)
--   futex      a futex the user frames do not name, waited on briefly (a parked thread waits longer)
--   peer       a blocking socket or pipe read, connect; a host name lookup (it waits on the
--              name server)
--   sleep      nanosleep / clock_nanosleep
--   work-wait  a condition variable, epoll_wait, poll, select, accept, or a long futex: idle;
--              an event loop parked in epoll/poll
--   other
-- (a runtime's wait function, from lua/lib/wait_table.lua, names the class through the user
-- frames: a PostgreSQL lock or Python's GIL is a lock, a JVM park or a latch a futex, a
-- backend waiting for its client's next command work-wait; the waiting verdict then names it
-- in the runtime's words)
-- Threads never seen switching were blocked all window: idle too — unless the thread_states
-- snapshots (results.threads, read by lua/lib/blocked.lua) say what they wait on: those waiting for
-- work throughout are idle and leave the threads' time (the shares are of the threads that
-- matter); the others count in their class for the whole window (stuck: in the kernel, a file
-- system or device that does not answer), and
--   deadlock       threads waiting for each other's glibc mutexes, or two threads or more of a
--                  process waiting for a runtime's locks with no owner recorded, the whole window
--                  (critical) → latency
--   stuck-in-kernel a thread uninterruptible, or in a file system request that gets no answer, the
--                  whole window (warning, critical at share_pct_crit) → latency
--   blocked-unknown threads blocked throughout most of the window while a snapshot was not taken
--                  (warning: parked or stuck is not known; neither deadlock nor idle is said)
--                  → latency
-- a lock held since before the run is a lock wait of `waiting`, its holder named.
-- One hypothesis per symptom recipe, each at most one verdict, with `next` = { recipe, params }
-- (what --follow runs) and the exact command first in next_steps, or a ruled-out line:
--   high-cpu       the target uses >= busy_cpu_pct of a CPU (cpu-bound), or its threads wait
--                  for a CPU (runnable share, run-queue p99, host CPU pressure: cpu-starved)
--   latency        lock + futex + peer + sleep waits >= share_pct_warn of the threads' time,
--                  or an upstream answering in p50 >= peer_p50_warn_ms whose waits are >=
--                  share_pct_warn of the time the target's requests take (an event loop);
--                  sleeps and peer waits only when they happen >= active_waits_per_s (one long
--                  sleep is an idle process), peer waits at any rate when the peers probe finds
--                  the peer slow; sleeps alone are info (by design, most often),
--                  ranked last, unless slept inside a request of the sleeping thread's own
--                  (peer_wait's sleeps: that share counts as a hard wait); a server's reads
--                  for its clients' next request are waiting for work, not peer waits
--                  (peer_wait's reads); the heaviest wait named by a wait table entry with a
--                  recipe of its own (`follow`: PostgreSQL's locks → postgres-slow) names that
--                  recipe instead
--   memory-growth  RSS grew >= rss_growth_min_kib and its slope >= rss_slope_warn_kib_per_s
--                  (critical: >= rss_growth_crit_pct of its size in the window); memory pressure
--   io-saturation  disk waits >= share_pct_warn of the threads' time; io pressure on the host
--                  (with --pid and no disk wait of the target's own: info)
--   network-errors TCP retransmits >= retrans_pct_warn, or error and drop counters >=
--                  net_errors_min over the window (of the target's network namespace)
-- Severity: critical at share_pct_crit, else warning. Worst first; within a severity the larger
-- share first. idle (info): nothing stands out and the target used < idle_cpu_pct of a CPU
-- (host-wide: the CPUs were < idle_cpu_pct busy); ok: nothing stands out. Host-wide (no --pid)
-- the recipes that need a pid are named with the busiest thread names and carry no `next`.

local T = {
  busy = diag.threshold("busy_cpu_pct"),
  idle = diag.threshold("idle_cpu_pct"),
  warn = diag.threshold("share_pct_warn"),
  crit = diag.threshold("share_pct_crit"),
  active = diag.threshold("active_waits_per_s"),
  runq_warn = diag.threshold("runq_p99_warn_us"),
  psi = diag.threshold("psi_pct_warn"),
  rss_min = diag.threshold("rss_growth_min_kib") * 1024,
  rss_slope = diag.threshold("rss_slope_warn_kib_per_s") * 1024,
  rss_crit = diag.threshold("rss_growth_crit_pct"),
  retrans = diag.threshold("retrans_pct_warn"),
  retrans_min = diag.threshold("retrans_min_segs"),
  net_min = diag.threshold("net_errors_min"),
  host_busy = diag.threshold("host_busy_pct"),
  peer_slow_ns = diag.threshold("peer_p50_warn_ms") * 1e6,
  steal = diag.threshold("steal_pct_warn"),
  blocked_min = diag.threshold("blocked_min_s"),
}

local profile, offcpu, runq, context = results.profile, results.offcpu, results.runq, results.context
local pid = diag.get(run, "target", "pid")
-- a set of processes (--comm, --cgroup, --unit, --container): figures are the set's sums
local set = diag.get(run, "target", "selection")
local target_arg, pids = diag.target(run, context)
local host = pid == nil and set == nil
-- Recipes whose target is one process (target: pid or optional-pid): a set does not follow
-- into them; its verdict names the command for one of its processes instead.
local ONE_PROCESS = { ["memory-growth"] = true }
local window = run.duration_s or (context and context.wall_s) or 0
local ncpus = run.ncpus or (context and context.ncpus) or 1
local threads = (context and context.threads) or 1
local all_thread_ns = threads * window * 1e9
-- the threads blocked since before the window (nil without the thread_states probe, host-wide)
local snap = blocked.read(results.threads, { window = window, min_blocked_s = T.blocked_min })
-- why the snapshots cannot tell what threads blocked throughout wait on (nil: they can, or the
-- probe did not run): then neither a deadlock nor idleness is said of them
local snap_missing = not host and blocked.missing(results.threads, run)
local idle_threads = 0
for _, g in ipairs(snap and snap.idle_groups or {}) do idle_threads = idle_threads + g.n end
-- the time of the threads that matter: threads x window, less the threads idle throughout
local thread_ns = all_thread_ns - (snap and math.min(snap.idle_ns, all_thread_ns) or 0)
local samples = (profile and profile.samples) or 0
-- Under the hypervisor's steal the on-CPU samples say what the target wanted (diag.cpu_demand).
local cpu_pct, cpu_charged, steal, stolen = diag.cpu_demand(context, profile, window, T.steal)

local function share(ns) return thread_ns > 0 and ns * 100 / thread_ns or 0 end
local pct = diag.fmt_pct

-- ---- the off-CPU time, by class ----------------------------------------------------------------

local CLASSES = { "runnable", "disk", "stuck", "deadlocked", "lock", "futex", "peer", "sleep", "work-wait", "other" }
-- waits.classify's classes that triage folds into another
local FOLDED = { fault = "disk", resolve = "peer", gil = "lock", park = "futex", latch = "futex",
  ["event-loop"] = "work-wait" }

-- {name = {ns=, count=, top = the heaviest stack, match = the wait table's match of top}}.
local function time_by_class()
  local class = {}
  for _, name in ipairs(CLASSES) do class[name] = { ns = 0, count = 0, top = nil } end
  for _, s in ipairs((offcpu and offcpu.stacks) or {}) do
    local name, m = waits.classify(s, offcpu.user_unwind)
    local c = class[FOLDED[name] or name]
    c.ns = c.ns + (s.weight or 0)
    c.count = c.count + (s.count or 0)
    if not c.top then c.top, c.match = s, m end -- stacks come heaviest first
  end
  -- intervals under min_block_us, counted by the state the thread left in but not recorded (no
  -- stacks): a thread doing thousands of short fsyncs a second on a fast disk spends most of its
  -- time there, which would otherwise look "blocked all window"
  for st, into in pairs({ runnable = "runnable", uninterruptible = "disk", sleeping = "other", other = "other" }) do
    local ns = diag.get(offcpu, "states", st, "short_ns") or 0
    class[into].ns = class[into].ns + ns
    class[into].short_ns = (class[into].short_ns or 0) + ns
  end
  -- the threads blocked since before the window, not idle: their class for the whole window
  -- (snap_ns apart: a rate does not apply to them)
  local likely = {}
  for _, g in ipairs(snap and snap.runtime_locks or {}) do
    if #g.members >= 2 then for _, b in ipairs(g.members) do likely[b] = true end end
  end
  for _, b in ipairs(snap and snap.all or {}) do
    if not b.idle then
      local into = (b.in_cycle or likely[b]) and "deadlocked" or FOLDED[b.class] or b.class
      local c = class[into] or class.other
      local ns = b.t.weight or 0
      c.ns, c.snap_ns = c.ns + ns, (c.snap_ns or 0) + ns
      c.count = c.count + 1
      if not c.top or (c.top.weight or 0) < ns then c.top, c.match = b.t, b.match end
    end
  end
  return class
end

local class = time_by_class()
-- a server's threads blocked in reads for their clients' next request wait for work, not on a
-- peer (peer_wait's reads; latency moves the same time: peers.work_move)
do
  local peer, work = class.peer, class["work-wait"]
  local move = peers.work_move(results.peers, peer)
  if move then
    peer.ns, work.ns = peer.ns - move.ns, work.ns + move.ns
    local kept = move.kept
    if peer.ns < move.ns then -- most of it: the heaviest stack was a read's
      if peer.top and (not work.top or (peer.top.weight or 0) > (work.top.weight or 0)) then
        work.top, work.match = peer.top, peer.match
      end
      if kept == 0 then peer.top, peer.match = nil, nil end
    else
      kept = math.max(1, kept)
    end
    work.count, peer.count = work.count + peer.count - kept, kept
  end
end
local function rate(name) return window > 0 and class[name].count / window or 0 end

-- ", in own()" for the class's heaviest stack, or "" — or, a runtime's wait function naming
-- it, ": WORDS" (the wait table's).
local function in_own(name)
  if class[name].match then return ": " .. waits.describe(class[name].match) end
  local top = class[name].top
  local own = waits.own_frame(top and top.user, top and top.user_from)
  return own and (", in " .. diag.fn(own)) or ""
end

-- The host's CPUs busy, % of all of them, from the profile's samples (nil without).
local function host_busy_pct()
  if not (profile and profile.frequency_hz and window > 0) then return nil end
  return samples * 100 / (profile.frequency_hz * ncpus * window)
end

-- ---- a recipe to run next ------------------------------------------------------------------------

local function command(recipe, with_target)
  if with_target and pid then return string.format("diagnose %s --pid %d", recipe, pid) end
  if with_target and set then return string.format("diagnose %s %s", recipe, target_arg) end
  return "diagnose " .. recipe
end

-- A finding naming the recipe to run: {v = the verdict, rank, score}. needs_pid: the recipe
-- requires --pid (host-wide: named, not followed).
local function candidate(id, recipe, needs_pid, severity, score, title, evidence, steps)
  local runnable
  if set then runnable = not ONE_PROCESS[recipe] else runnable = pid ~= nil or not needs_pid end
  local first
  if runnable then
    first = "Run next: " .. command(recipe, not host)
  elseif set then
    first = string.format("Run next, on one of its processes (%s): diagnose %s --pid PID", pids, recipe)
  else
    first = string.format("Run next, on the process to look at: diagnose %s --pid PID", recipe)
  end
  local v = diag.verdict(id, severity, title .. " → " .. recipe, evidence, diag.lines(first):extend(steps))
  if runnable then v.next = { recipe = recipe, params = {} } end
  return { v = v, rank = diag.SEVERITY_RANK[severity], score = score }
end

local function sev_of(x) return x >= T.crit and "critical" or "warning" end

-- The threads' time neither on a CPU, nor seen off it, nor idle by the snapshots: blocked
-- throughout the window. on_ns, off, idle_ns, unseen.
local function time_split()
  local on_ns = ((cpu_pct or 0) / 100) * window * 1e9
  local off = 0
  for _, c in ipairs(CLASSES) do off = off + class[c].ns end
  local idle_ns = snap and snap.idle_ns or 0
  return on_ns, off, idle_ns, math.max(all_thread_ns - on_ns - off - idle_ns, 0)
end

-- ---- the hypotheses: each a candidate or a ruled-out line -----------------------------------------

local function hottest(n)
  local by = {}
  for _, s in ipairs((profile and profile.stacks) or {}) do
    local leaf = (s.user and s.user[1]) or (s.kernel and s.kernel[1] and (s.kernel[1] .. " [k]")) or "[unknown]"
    diag.add(by, leaf, s.weight or 0)
  end
  local out = diag.lines()
  for _, e in ipairs(diag.ranked(by, n)) do out:add("%s %s", diag.fn(e.name), pct(diag.pct(e.count, samples))) end
  return out
end

local function busiest_comms(n)
  local by = {}
  for _, s in ipairs((profile and profile.stacks) or {}) do diag.add(by, s.comm or "?", s.weight or 0) end
  local out = diag.lines()
  for _, e in ipairs(diag.ranked(by, n)) do out:add("%s %s", e.name, pct(diag.pct(e.count, samples))) end
  return out
end

-- The threads' demand for CPU: on it, or runnable waiting for it (on a loaded machine a
-- CPU-bound thread gets only part of a CPU: it is no less CPU-bound). Host-wide: the CPUs busy.
local function cpu_bound()
  local runnable_share = share(class.runnable.ns)
  if not host and cpu_pct then
    local on_share = cpu_pct / threads
    local want = on_share + runnable_share
    if not (cpu_pct >= T.busy or want >= T.busy) then
      return diag.ruled_out("cpu-bound", "not CPU-bound: CPU use %s of one CPU, on a CPU or waiting for one %s of the threads' time",
        pct(cpu_pct), pct(want))
    end
    local ev = diag.lines(string.format("CPU use %s of one CPU over %.1f s (%s): on the CPU %s of the threads' time (%d threads)",
      pct(cpu_pct), window, cpu_charged and string.format("by on-CPU samples; the kernel charged %s", pct(cpu_charged))
      or diag.cpu_time(context), pct(on_share), threads))
    if stolen then
      ev:add("The hypervisor stole %s of the machine's CPU time (/proc/stat steal): the VM itself is short of CPU", pct(steal))
    end
    if runnable_share >= 1 then
      ev:add("Runnable, waiting for a CPU, %s more of their time: the machine's CPUs are contended", pct(runnable_share))
    end
    if samples > 0 then
      ev:add("On-CPU samples: %s, %s in the kernel; hottest: %s", diag.fmt_count(samples),
        pct(diag.pct((profile and profile.kernel_samples) or 0, samples)), table.concat(hottest(3), ", "))
    end
    return candidate("cpu-bound", "high-cpu", true, sev_of(want), want,
      string.format("CPU-bound: on a CPU or waiting for one %s of the threads' time", pct(want)), ev,
      { "high-cpu profiles which functions burn it, user vs kernel time, hot syscalls, starvation" })
  end
  local busy = host and samples > 0 and host_busy_pct()
  if not busy then return nil end
  if busy < T.host_busy then
    return diag.ruled_out("cpu-bound", "the host's CPUs are not saturated: %s busy", pct(busy))
  end
  return candidate("cpu-bound", "high-cpu", true, busy >= 90 and "critical" or "warning", busy,
    string.format("The host's CPUs are %s busy", pct(busy)),
    { string.format("%s on-CPU samples at %d Hz on %d CPUs over %.1f s", diag.fmt_count(samples), profile.frequency_hz, ncpus, window),
      "Busiest threads: " .. table.concat(busiest_comms(5), ", ") },
    { "Find the busiest process's pid: top -b -n1 -o %CPU | head -15" })
end

-- cpu_bound_found: the CPU-bound verdict already names high-cpu, which measures starvation too.
local function cpu_starved(cpu_bound_found)
  local wait = diag.runq(runq)
  local runnable_pct = host and (ncpus * window > 0 and class.runnable.ns * 100 / (ncpus * window * 1e9) or 0)
    or share(class.runnable.ns)
  local psi_cpu = diag.get(context, "psi", "some_pct")
  -- With --pid the host's CPU pressure is evidence only: the target must itself wait to run.
  local starved = runnable_pct >= T.warn or (wait and wait.p99 >= T.runq_warn) or
    (host and psi_cpu and psi_cpu >= T.psi)
  if not starved then
    local checked = diag.lines()
    if offcpu then checked:add("runnable %s of the %s time", pct(runnable_pct), host and "CPUs'" or "threads'") end
    if wait then checked:add("run-queue p99 %s over %s waits", diag.fmt_us(wait.p99), diag.fmt_count(wait.count)) end
    if host and psi_cpu then checked:add("CPU pressure %s of the window", pct(psi_cpu)) end
    if #checked == 0 then return nil end
    return diag.ruled_out("cpu-starved", "not starved of CPU: %s", table.concat(checked, ", "))
  end
  if cpu_bound_found then return nil end
  local ev = diag.lines(string.format("Runnable, waiting for a CPU: %s of the %s time", pct(runnable_pct),
    host and "CPUs'" or "threads'"))
  if wait then ev:add("Run-queue latency p99 %s over %s waits", diag.fmt_us(wait.p99), diag.fmt_count(wait.count)) end
  if psi_cpu then ev:add("CPU pressure: some task stalled %s of the window", pct(psi_cpu)) end
  local level = host and math.max(runnable_pct, psi_cpu or 0) or runnable_pct
  return candidate("cpu-starved", "high-cpu", true, sev_of(level), level, "Starved of CPU: threads wait to run", ev,
    { "high-cpu says who holds the CPUs, the run-queue latency and cgroup throttling" })
end

-- Waiting: locks, futexes, peers, sleeps.
local function waiting()
  if host then return nil end
  local placed = peers.sleeps_placed(results.peers)
  local sleep_in_request = placed and placed.in_frac or 0
  local parts, total, hard = {}, 0, 0
  local function part(name, label, active_only)
    local p = share(class[name].ns)
    -- a rate tells waits of a busy thread from one long sleep: blocked since before the run,
    -- a thread counts whatever its rate
    if active_only and rate(name) < T.active then p = share(class[name].snap_ns or 0) end
    if p <= 0 then return end
    total = total + p
    -- sleeps count as hard waits for the share slept inside a request of the sleeping thread's
    -- own (peer_wait's sleeps: a delay or back-off), not for pacing between requests
    if name ~= "sleep" then hard = hard + p else hard = hard + p * sleep_in_request end
    parts[#parts + 1] = { pct = p, name = name, label = label, text = string.format("%s %s (%s waits/s%s)", label, pct(p),
      diag.fmt_count(rate(name)), in_own(name)) }
  end
  part("lock", "locks", false)
  part("futex", "futexes", false)
  -- a peer the peers probe finds slow counts however rarely it is waited on (one slow call a
  -- second is a slow peer, not an idle process)
  local peer_list = peers.summaries(results.peers, window)
  local up = peers.slowest(peer_list, T.peer_slow_ns)
  part("peer", "peers (sockets, pipes)", not up)
  part("sleep", "sleeps", true)
  -- an event loop's requests waiting on an upstream: its threads park (work-wait) meanwhile
  local up_pct = up and peers.share(up, peer_list, thread_ns) or 0
  if up and share(class.peer.ns) < T.warn and up_pct >= T.warn then
    total, hard = total + up_pct, hard + up_pct
    parts[#parts + 1] = { pct = up_pct, name = "upstream", label = "upstream " .. up.name,
      text = string.format("upstream %s (%s of the time its requests take)", peers.describe(up), pct(up_pct)) }
  end
  if total < T.warn then
    if not offcpu then return nil end
    return diag.ruled_out("waiting", "not blocked: locks, futexes, active peer and sleep waits %s of the threads' time", pct(total))
  end
  table.sort(parts, function(a, b) return a.pct > b.pct end)
  local ev = diag.lines(string.format("Blocked %s of the threads' time (%d threads, %.1f s)", pct(total), threads, window))
  for _, p in ipairs(parts) do ev:add("  " .. p.text) end
  local sev = sev_of(hard >= T.warn and total or 0)
  -- Sleeping is most often by design (a paced loop, a poll interval, a backoff): sleeps alone are
  -- info, not a warning (a scheduler such as `diagnose watch` would otherwise follow every paced
  -- service up), ranked last (score 0); the verdict still says where they sleep and how to look.
  local score = total
  if hard < T.warn then sev, score = "info", 0 end
  local named = class[parts[1].name] and class[parts[1].name].match
  local title = named and string.format("Threads wait on %s: %s", parts[1].label, waits.describe(named))
    or ("Threads wait on " .. parts[1].label)
  local held = parts[1].name == "lock" and snap and snap.holds[1]
  if held then
    title = string.format("Threads wait on locks: %s has waited %s for a mutex held by %s", blocked.name(held.waiters[1]),
      blocked.how_long(held.waiters[1].t, snap), blocked.holder_doing(held, snap))
  end
  if parts[1].name == "upstream" then title = "Requests wait on upstream " .. peers.describe(up) end
  if parts[1].name == "peer" and up then title = title .. ": " .. peers.describe(up) end
  -- a runtime's wait the wait table names with its own recipe (PostgreSQL's locks: postgres-slow)
  local follow = waits.follow(named)
  if follow then
    return candidate("waiting", follow, true, sev, score, title, ev,
      { string.format("%s says which of %s's requests wait and on what, in its own terms; latency shows the call paths",
        follow, named.entry.runtime) })
  end
  return candidate("waiting", "latency", true, sev, score, title, ev,
    { "latency names the lock and its holder, the peer, or the sleep, with the call path" })
end

-- Threads blocked since before the window in a deadlock: glibc mutexes in a cycle, or a runtime's
-- locks with no owner recorded (lua/lib/blocked.lua).
local function deadlock()
  if not snap or snap_missing then return nil end
  local members, what = nil, nil
  if #snap.cycles > 0 then
    members, what = snap.cycles[1].members, "each other's mutex"
  else
    for _, g in ipairs(snap.runtime_locks) do
      if #g.members >= 2 and (not members or #g.members > #members) then
        members = g.members
        what = (g.members[1].match and g.members[1].match.entry.what or "locks") .. " with no owner recorded (likely deadlocked)"
      end
    end
  end
  if not members then
    return diag.ruled_out("deadlock", "no deadlock: no threads blocked since before the run wait for each other's locks (%d blocked throughout)", #snap.all)
  end
  local names, ev, ns = {}, diag.lines(), 0
  for _, b in ipairs(members) do
    names[#names + 1] = blocked.name(b)
    ns = ns + (b.t.weight or 0)
    ev:add("%s, blocked %s, waits for %s%s: %s", blocked.name(b), blocked.how_long(b.t, snap), blocked.waits_on(b),
      b.owner and string.format(" held by thread %d", b.owner) or "", diag.user_path(b.t.user))
  end
  ev:add("Blocked since before the run: neither switches nor CPU time moved between the snapshots at the window's start and end")
  return candidate("deadlock", "latency", true, "critical", math.max(share(ns), 100),
    string.format("Deadlock: %s wait for %s since before the run", table.concat(names, " and "), what), ev,
    { "latency names each thread's lock and its holder with their call paths; the process does not recover by itself" })
end

-- Threads stuck in the kernel since before the window: uninterruptible, or in a file system
-- request that gets no answer.
local function stuck_in_kernel()
  if not snap or snap_missing then return nil end
  if #snap.stuck == 0 then
    return blocked.not_stuck_in_kernel()
  end
  local ev, ns = diag.lines(), 0
  for _, b in ipairs(snap.stuck) do
    ns = ns + (b.t.weight or 0)
    local f = blocked.file_of(b.t)
    ev:add("%s, state %s, in %s%s, blocked %s; kernel: %s", blocked.name(b), b.t.state or "?",
      b.t.syscall and (b.t.syscall .. "()") or "?", f and (" on " .. f) or "", blocked.how_long(b.t, snap),
      table.concat(b.t.kernel or {}, " ← ", 1, math.min(6, #(b.t.kernel or {}))))
  end
  local t = snap.stuck[1].t
  local f = blocked.file_of(t)
  local p = share(ns)
  return candidate("stuck-in-kernel", "latency", true, p >= T.crit and "critical" or "warning", math.max(p, T.warn),
    string.format("Stuck in the kernel: %s has waited %s in %s%s", blocked.name(snap.stuck[1]), blocked.how_long(t, snap),
      t.syscall and (t.syscall .. "()") or "the kernel", f and (" on " .. f) or ""), ev,
    { "latency names the file system or device and what to do; the thread cannot be killed until it answers" })
end

-- Threads blocked throughout the window when the snapshots that tell parked from stuck were not
-- taken: most of the threads' time so → latency (warning: a deadlock looks the same).
local function blocked_unknown()
  if not snap_missing then return nil end
  local _, _, _, unseen = time_split()
  local p = all_thread_ns > 0 and unseen * 100 / all_thread_ns or 0
  if p < 50 then return nil end
  return candidate("blocked-unknown", "latency", true, "warning", p,
    string.format("Threads blocked throughout the window %s of their time, on what is not known: the thread snapshot was not taken (%s)",
      pct(p), snap_missing),
    { string.format("%s of the threads' time (%d thread%s x %.1f s) was neither on a CPU nor seen leaving one: blocked since before the run",
        pct(p), threads, threads == 1 and "" or "s", window),
      "A parked pool and a deadlock or a hung mount look the same without the snapshot: not called idle" },
    { "latency takes the snapshots again and names what each thread waits on" })
end

-- Disk: uninterruptible waits in the block layer, io pressure. Host-wide the io pressure
-- decides: summed over every task, uninterruptible time counts kernel threads parked in D state
-- (TASK_IDLE), which wait on nothing; it is evidence only.
local function disk_wait()
  local disk_pct = host and 0 or share(class.disk.ns)
  local psi_io = diag.get(context, "io", "pressure", "some_pct")
  if not (disk_pct >= T.warn or (psi_io and psi_io >= T.psi)) then
    local checked = diag.lines()
    if not host and offcpu then checked:add("blocked on I/O %s of the threads' time", pct(disk_pct)) end
    if psi_io then checked:add("I/O pressure %s of the window", pct(psi_io)) end
    if #checked == 0 then return nil end
    return diag.ruled_out("io-wait", "not the disk: %s", table.concat(checked, ", "))
  end
  local ev = diag.lines()
  if not host and disk_pct > 0 then
    ev:add("Blocked uninterruptible on I/O %s of the %s time (%s waits/s)%s", pct(disk_pct),
      host and "CPUs'" or "threads'", diag.fmt_count(rate("disk")), in_own("disk"))
    if (class.disk.short_ns or 0) > 0 then
      ev:add("%s of the threads' time in waits shorter than %s µs each (counted, not recorded one by one: a fast disk answering many small syncs)",
        pct(share(class.disk.short_ns)), diag.fmt_count(offcpu.min_block_us or 0))
    end
  end
  if psi_io then ev:add("I/O pressure on the host: some task stalled %s of the window", pct(psi_io)) end
  for _, d in ipairs(diag.get(context, "io", "disks") or {}) do
    if (d.util_pct or 0) >= 10 then
      ev:add("Disk %s: %s busy, %.0f r/s, %.0f w/s, await r %.1f ms w %.1f ms", d.name, pct(d.util_pct),
        d.r_s or 0, d.w_s or 0, d.r_await_ms or 0, d.w_await_ms or 0)
    end
  end
  if disk_pct >= T.warn then
    return candidate("io-wait", "io-saturation", false, sev_of(math.max(disk_pct, psi_io or 0)), disk_pct,
      "Threads wait on the disk", ev, { "io-saturation names the device, who loads it, and fsync-bound callers" })
  end
  -- The host stalls on I/O but the target does not wait on it: look host-wide.
  local v = diag.verdict("host-io-pressure", host and sev_of(psi_io) or "info",
    "The host stalls on I/O → io-saturation", ev, { "Run next: diagnose io-saturation",
      "io-saturation without --pid looks at every disk and who loads it" })
  v.next = { recipe = "io-saturation", params = {} }
  return { v = v, rank = diag.SEVERITY_RANK[v.severity], score = psi_io }
end

-- Memory: RSS growth over the window.
local function memory_growing()
  local memory = context and context.memory
  if host or not (memory and memory.rss_delta_bytes) then return nil end
  local delta, slope, rss = memory.rss_delta_bytes, memory.rss_slope_bytes_per_s or 0, memory.rss_bytes or 0
  local before = rss - delta
  local grew_pct = before > 0 and delta * 100 / before or 100
  if not (delta >= T.rss_min and slope >= T.rss_slope) then
    return diag.ruled_out("memory-growing", "memory not growing: RSS %+.1f MiB in %.1f s (%.0f KiB/s by its slope)",
      delta / 1048576, window, slope / 1024)
  end
  local ev = diag.lines(string.format("RSS grew by %.1f MiB in %.1f s (%.0f KiB/s by its slope), to %.1f MiB: %s of its size",
    delta / 1048576, window, slope / 1024, rss / 1048576, pct(grew_pct)))
  if memory.rss_anon_delta_bytes then
    ev:add("Anonymous (heap) memory %+.1f MiB, file-backed %+.1f MiB", memory.rss_anon_delta_bytes / 1048576,
      (memory.rss_file_delta_bytes or 0) / 1048576)
  end
  local lim = diag.get(memory, "cgroup", "max_bytes")
  if lim and lim > rss and slope > 0 then
    ev:add("At this rate the cgroup limit (%.0f MiB) is reached in %.0f s", lim / 1048576,
      (lim - (diag.get(memory, "cgroup", "current_bytes") or rss)) / slope)
  end
  return candidate("memory-growing", "memory-growth", true, grew_pct >= T.rss_crit and "critical" or "warning",
    math.min(grew_pct, 100), "Memory keeps growing", ev,
    { "memory-growth says whether it is a leak and which call path allocates it" })
end

-- Memory pressure: with --pid the host's pressure is context (info), host-wide a finding.
local function memory_pressure()
  local psi_mem = diag.get(context, "memory", "pressure", "some_pct")
  if not psi_mem then return nil end
  if psi_mem < T.psi then
    return diag.ruled_out("memory-pressure", "no memory pressure: some task stalled %s of the window", pct(psi_mem))
  end
  return candidate("memory-pressure", "memory-growth", true, host and "warning" or "info", psi_mem, "The host is short of memory",
    { string.format("Memory pressure: some task stalled %s of the window (reclaim, swap-in, refaults)", pct(psi_mem)) },
    { "memory-growth on the process that grows says why; free -m and /proc/meminfo say how short" })
end

local NET_ERROR_COUNTERS = {
  { "Tcp", "InErrs" }, { "Tcp", "InCsumErrors" }, { "Tcp", "AttemptFails" }, { "Tcp", "EstabResets" },
  { "TcpExt", "ListenOverflows" }, { "TcpExt", "ListenDrops" }, { "TcpExt", "TCPBacklogDrop" },
  { "TcpExt", "TCPRcvQDrop" }, { "TcpExt", "TCPTimeouts" }, { "Udp", "InErrors" }, { "Udp", "RcvbufErrors" },
  { "Ip", "InDiscards" }, { "Ip", "OutDiscards" }, { "Ip", "InHdrErrors" },
}

-- Network: error counters over the window.
local function network_errors()
  local net = context and context.net
  if not (net and net.counters) then return nil end
  local function ctr(g, n) return diag.get(net, "counters", g, n) or 0 end
  local errors, seen = 0, diag.lines()
  local out_segs, retr = ctr("Tcp", "OutSegs"), ctr("Tcp", "RetransSegs")
  local retr_pct = out_segs > 0 and retr * 100 / out_segs or 0
  for _, c in ipairs(NET_ERROR_COUNTERS) do
    local n = ctr(c[1], c[2])
    if n > 0 then
      errors = errors + n
      seen:add("%s %s", c[2], diag.fmt_count(n))
    end
  end
  local drops = diag.get(net, "softnet", "dropped") or 0
  if drops > 0 then
    errors = errors + drops
    seen:add("softnet dropped %s", diag.fmt_count(drops))
  end
  for _, i in ipairs(net.interfaces or {}) do
    local n = (i.rx_drop or 0) + (i.tx_drop or 0) + (i.rx_errs or 0) + (i.tx_errs or 0)
    if n > 0 then
      errors = errors + n
      seen:add("%s drops/errors %s", i.name, diag.fmt_count(n))
    end
  end
  local bad_retr = out_segs >= T.retrans_min and retr_pct >= T.retrans
  if not (bad_retr or errors >= T.net_min) then
    return diag.ruled_out("network-errors", "no network errors: %s of %s TCP segments retransmitted, %s errors and drops",
      pct(retr_pct), diag.fmt_count(out_segs), diag.fmt_count(errors))
  end
  local ev = diag.lines()
  if out_segs > 0 then
    ev:add("TCP retransmits: %s of %s segments sent (%s)", diag.fmt_count(retr), diag.fmt_count(out_segs), pct(retr_pct))
  end
  if #seen > 0 then ev:add("Error and drop counters over the window: " .. table.concat(seen, ", ")) end
  ev:add("Counters of the target's network namespace (the host's without --pid), not only the target's sockets")
  return candidate("network-errors", "network-errors", false, retr_pct >= 5 and bad_retr and "critical" or "warning",
    math.max(retr_pct, 1), "The network shows errors", ev,
    { "network-errors names the peers, drop reasons and ports behind the counters" })
end

-- ---- nothing found: idle, or ok --------------------------------------------------------------------

local function quiet_verdict()
  local ev = diag.lines()
  -- how busy: the target's CPU use (% of one CPU), host-wide the CPUs' (% of all of them)
  local busy = cpu_pct
  if cpu_pct then ev:add("CPU use %s of one CPU over %.1f s, %d threads", pct(cpu_pct), window, threads) end
  if host and host_busy_pct() then
    busy = host_busy_pct()
    ev:add("The host's CPUs %s busy", pct(busy))
  end
  local held = 0
  for _, c in ipairs({ "lock", "futex", "peer", "sleep", "disk" }) do held = held + class[c].ns end
  if not host then ev:add("Blocked (locks, peers, sleeps, disk) %s of the threads' time", pct(share(held))) end
  for i = 1, math.min(3, snap and #snap.idle_groups or 0) do
    local g = snap.idle_groups[i]
    ev:add("%d thread%s waited the whole window, since before the run, for %s", g.n, g.n == 1 and "" or "s", g.words)
  end
  local who = host and "The host" or "The target"
  if (busy or 0) < T.idle then
    return diag.verdict("idle", "info", "Idle: nothing to chase", ev,
      { who .. " is not busy and does not wait on anything over the window; if it is slow, the cause is elsewhere (its peers, its callers)" })
  end
  return diag.verdict("ok", "ok", "Nothing stands out", ev,
    { who .. " is busy but under every threshold; if it is still slow, run " .. (host and "diagnose latency --pid PID" or command("latency", true)) .. " for a closer look at the waits" })
end

-- ---- report sections ---------------------------------------------------------------------------------

local function time_table()
  local on_ns, off, idle_ns, unseen = time_split()
  local function of_all(ns) return pct(all_thread_ns > 0 and ns * 100 / all_thread_ns or 0) end
  local rows = diag.lines({ "on the CPU", of_all(on_ns), diag.fmt_ns(on_ns), "" })
  for _, c in ipairs(CLASSES) do
    if class[c].ns > 0 then rows:add({ c, of_all(class[c].ns), diag.fmt_ns(class[c].ns), diag.fmt_rate(rate(c)) }) end
  end
  if idle_ns > 0 then rows:add({ "idle all window (since before the run)", of_all(idle_ns), diag.fmt_ns(idle_ns), "" }) end
  if unseen > 0 then rows:add({ "blocked all window", of_all(unseen), diag.fmt_ns(unseen), "" }) end
  return diag.table(string.format("Where the threads' time went (%d threads x %.1f s)", threads, window),
    { "state", "share", "time", "waits/s" }, rows)
end

local function symptoms_table(candidates)
  local rows = diag.lines()
  for _, c in ipairs(candidates) do
    rows:add({ c.v.severity, c.v.id, c.v.next and c.v.next.recipe or "(needs a pid)", c.v.next_steps[1] })
  end
  if #rows == 0 then return nil end
  return diag.table("Symptoms, worst first", { "severity", "verdict", "recipe", "command" }, rows)
end

-- ---- main: the hypotheses in order, the recipes to run worst first ------------------------------------

local answer = diag.answer()
local candidates = {}
local function consider(item)
  if item and item.v then candidates[#candidates + 1] = item else answer.add(item) end
end
consider(deadlock())
consider(stuck_in_kernel())
consider(blocked_unknown())
local bound = cpu_bound()
consider(bound)
consider(cpu_starved(bound ~= nil and bound.v ~= nil))
consider(waiting())
consider(disk_wait())
consider(memory_growing())
consider(memory_pressure())
consider(network_errors())

table.sort(candidates, function(a, b)
  if a.rank ~= b.rank then return a.rank > b.rank end
  return (a.score or 0) > (b.score or 0)
end)
local judged = 0
for _, c in ipairs(candidates) do if c.rank >= diag.SEVERITY_RANK.warning then judged = judged + 1 end end
-- the target's own verdict (idle, ok) first, then the host's context (info) and any finding
if judged == 0 then answer.add(quiet_verdict()) end
for _, c in ipairs(candidates) do answer.add(c.v) end
local stop_tag, stop_line = diag.stop_note(run.stop_reason, window, context and context.exited)
local gaps, gap_lines = { stop_tag }, { stop_line }
for _, n in ipairs(diag.stopped_probes(window)) do
  gaps[#gaps + 1] = n.tag
  gap_lines[#gap_lines + 1] = n.line
end
if #gaps > 0 then
  answer.add(diag.verdict("incomplete", "info", "Data incomplete: " .. table.concat(gaps, ", "), gap_lines, {}))
end

if not host then answer.section(time_table()) end
answer.section(symptoms_table(candidates))

-- the key figures `diagnose watch` exports (nil: not measured)
local runq_wait = diag.runq(runq)
local net_out = diag.get(context, "net", "counters", "Tcp", "OutSegs")
local net_retr = diag.get(context, "net", "counters", "Tcp", "RetransSegs")
answer.metric("cpu_usage_ratio", cpu_pct and cpu_pct / 100,
  "CPU the target used over the window, in CPUs (1: one CPU busy all the time)")
answer.metric("runq_latency_p99_seconds", runq_wait and runq_wait.p99 / 1e6,
  "99th percentile of the time the target's threads waited in the run queue")
answer.metric("rss_growth_bytes_per_second", diag.get(context, "memory", "rss_slope_bytes_per_s"),
  "Resident memory growth over the window, by its slope")
answer.metric("tcp_retransmit_ratio", net_out and net_out > 0 and (net_retr or 0) / net_out or nil,
  "TCP segments retransmitted over segments sent, in the target's network namespace")

return answer.result()
