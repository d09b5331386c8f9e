-- triage.lua — verdicts for recipes/triage.yaml: which symptom recipe to run next, and why.
--
-- Reads results.profile (cpu_profile), results.offcpu (off_cpu), results.runq (runq_latency),
-- results.context (proc_context: cpu, memory, io, net), run and thresholds. Every figure is a
-- delta over the window (never a pressure avg10 or a rolling average). Any probe may be missing.
--
-- How it decides. With --pid the threads' time (threads x window) is split: on the CPU
-- (context.cpu_pct), and off it by the off-CPU stacks, each put in one class by its state, its
-- kernel frames (how it waited) and the leaf of its frame-pointer user stack (on what):
--   runnable   preempted, waiting for a CPU
--   disk       uninterruptible in the block layer, writeback, a journal, a page fault (other
--              uninterruptible waits, a kernel mutex or a parked kernel thread, are "other")
--   lock       a futex under a lock wrapper (__lll_lock_wait, pthread_mutex_*, rwlock, sem_*)
--   futex      a futex the user leaf does not name, waited on briefly (a parked thread waits longer)
--   peer       a blocking socket or pipe read, connect
--   sleep      nanosleep / clock_nanosleep
--   work-wait  a condition variable, epoll_wait, poll, select, accept, or a long futex: idle
--   other
-- Threads never seen switching were blocked all window: idle too.
-- Each symptom recipe gets at most one verdict, with `next` = { recipe, params } (what --follow
-- runs) and the exact command first in next_steps:
--   high-cpu       the target uses >= busy_cpu_pct of a CPU (cpu-bound), or its threads wait
--                  for a CPU (runnable share, run-queue p99, host CPU pressure: cpu-starved)
--   latency        lock + futex + peer + sleep waits >= share_pct_warn of the threads' time;
--                  sleeps and peer waits only when they happen >= active_waits_per_s (one long
--                  sleep is an idle process); sleeps alone are at most a warning, ranked after
--                  every other warning
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

local function th(name, default) return diag.number(thresholds, name, default) end

local T = {
  busy = th("busy_cpu_pct", 50),
  idle = th("idle_cpu_pct", 5),
  warn = th("share_pct_warn", 10),
  crit = th("share_pct_crit", 40),
  active = th("active_waits_per_s", 20),
  runq_warn = th("runq_p99_warn_us", 50000),
  psi = th("psi_pct_warn", 20),
  rss_min = th("rss_growth_min_kib", 1024) * 1024,
  rss_slope = th("rss_slope_warn_kib_per_s", 256) * 1024,
  rss_crit = th("rss_growth_crit_pct", 10),
  retrans = th("retrans_pct_warn", 1),
  retrans_min = th("retrans_min_segs", 200),
  net_min = th("net_errors_min", 20),
  host_busy = th("host_busy_pct", 70),
}
local PARKED_NS = 50e6 -- an unnamed futex waited on this long per interval: a parked thread
local MIN_WAITS = 20   -- fewer run-queue waits make too thin a p99 to judge by

local P, O, R, C = results.profile, results.offcpu, results.runq, results.context
local pid = diag.get(run, "target", "pid")
-- a set of processes (--comm, --cgroup, --unit, --container): figures are the set's sums
local set = diag.get(run, "target", "selection")
local target_arg, pids = diag.target(run, C)
local host = pid == nil and set == nil
-- Recipes whose target is one process (target: pid or optional-pid): a set does not follow
-- into them; its verdict names the command for one of its processes instead.
local ONE_PROCESS = { ["memory-growth"] = true }
local window = run.duration_s or (C and C.wall_s) or 0
local ncpus = run.ncpus or (C and C.ncpus) or 1
local threads = (C and C.threads) or 1
local thread_ns = threads * window * 1e9
local verdicts, report = {}, {}

local function push(t, x) t[#t + 1] = x end
local function sub(fmt, ...) return string.format(fmt, ...) end
local function share(ns) return thread_ns > 0 and ns * 100 / thread_ns or 0 end
local function pctf(x) return diag.fmt_pct(x) end

-- ---- classifying an off-CPU stack --------------------------------------------------------------

local any_frame = diag.any_frame

local K = diag.KERNEL_WAITS
-- The user leaf of a frame-pointer stack is the wrapper that made the futex call.
local U = diag.USER_WAITS

local function classify(s)
  if s.tag == "runnable" then return "runnable" end
  local k, u = s.kernel or {}, s.user or {}
  if s.tag == "uninterruptible" and (any_frame(k, K.disk) or any_frame(k, K.fault)) then return "disk" end
  if any_frame(k, K.futex) then
    if any_frame(u, U.lock) then return "lock" end
    if any_frame(u, U.cond) then return "work-wait" end
    if (s.count or 0) > 0 and (s.weight or 0) / s.count >= PARKED_NS then return "work-wait" end
    return "futex"
  end
  if any_frame(k, K.poll) then return "work-wait" end
  if any_frame(k, K.peer) then return "peer" end
  if any_frame(k, K.sleep) then return "sleep" end
  if any_frame(k, K.disk) or any_frame(k, K.fault) then return "disk" end
  return "other"
end

local classes = { "runnable", "disk", "lock", "futex", "peer", "sleep", "work-wait", "other" }
local class = {}
for _, c in ipairs(classes) do class[c] = { ns = 0, count = 0, top = nil } end
for _, s in ipairs((O and O.stacks) or {}) do
  local c = class[classify(s)]
  c.ns = c.ns + (s.weight or 0)
  c.count = c.count + (s.count or 0)
  if not c.top then c.top = s end -- stacks come heaviest first
end
local function rate(c) return window > 0 and class[c].count / window or 0 end

-- The first named user frame of a stack that is not a libc wrapper, for the evidence.
local function own_fn(s)
  for _, f in ipairs((s and s.user) or {}) do
    if diag.symbolized(f) and not f:find("^_") and not f:find("^pthread_") and not f:find("^sem_")
        and not f:find("nanosleep$") and not f:find("^clone") and not f:find("^start_thread$") then
      return f
    end
  end
  return nil
end

-- ---- the verdicts: one per recipe named ---------------------------------------------------------

local candidates = {}
local SEV_RANK = { ok = 0, info = 1, warning = 2, critical = 3 }

local function command(recipe, with_target)
  if with_target and pid then return sub("diagnose %s --pid %d", recipe, pid) end
  if with_target and set then return sub("diagnose %s %s", recipe, target_arg) end
  return "diagnose " .. recipe
end

-- recipe: what to run; needs_pid: the recipe requires --pid (host-wide: named, not followed).
local function candidate(id, recipe, needs_pid, severity, score, title, evidence, steps)
  local runnable
  if set then runnable = not ONE_PROCESS[recipe] else runnable = pid ~= nil or not needs_pid end
  local first
  if runnable then
    first = "Run next: " .. command(recipe, not host)
  elseif set then
    first = sub("Run next, on one of its processes (%s): diagnose %s --pid PID", pids, recipe)
  else
    first = sub("Run next, on the process to look at: diagnose %s --pid PID", recipe)
  end
  local ns = { first }
  for _, x in ipairs(steps or {}) do push(ns, x) end
  local v = diag.verdict(id, severity, title .. " → " .. recipe, evidence, ns)
  if runnable then v.next = { recipe = recipe, params = {} } end
  push(candidates, { v = v, rank = SEV_RANK[severity], score = score })
end

local function sev_of(pct) return pct >= T.crit and "critical" or "warning" end

-- CPU: busy, or waiting for a CPU ----------------------------------------------------------------
local cpu_pct = C and C.cpu_pct
local samples = (P and P.samples) or 0
local kernel_pct = diag.pct((P and P.kernel_samples) or 0, samples)

local function hottest(n)
  local by = {}
  for _, s in ipairs((P and P.stacks) or {}) do
    local leaf = (s.user and s.user[1]) or (s.kernel and s.kernel[1] and (s.kernel[1] .. " [k]")) or "[unknown]"
    diag.add(by, leaf, s.weight or 0)
  end
  local out = {}
  for _, e in ipairs(diag.ranked(by, n)) do
    push(out, sub("%s %s", diag.fn(e.name), pctf(diag.pct(e.count, samples))))
  end
  return out
end

local function busiest_comms(n)
  local by = {}
  for _, s in ipairs((P and P.stacks) or {}) do diag.add(by, s.comm or "?", s.weight or 0) end
  local out = {}
  for _, e in ipairs(diag.ranked(by, n)) do
    push(out, sub("%s %s", e.name, pctf(diag.pct(e.count, samples))))
  end
  return out
end

-- The threads' demand for CPU: on it, or runnable waiting for it (on a loaded machine a
-- CPU-bound thread gets only part of a CPU: it is no less CPU-bound).
local runnable_share = share(class.runnable.ns)
if not host and cpu_pct and (cpu_pct >= T.busy or cpu_pct / threads + runnable_share >= T.busy) then
  local on_share = cpu_pct / threads
  local want = on_share + runnable_share
  local ev = { sub("CPU use %s of one CPU over %.1f s (%s): on the CPU %s of the threads' time (%d threads)",
    pctf(cpu_pct), window, diag.cpu_time(C), pctf(on_share), threads) }
  if runnable_share >= 1 then
    push(ev, sub("Runnable, waiting for a CPU, %s more of their time: the machine's CPUs are contended", pctf(runnable_share)))
  end
  if samples > 0 then
    push(ev, sub("On-CPU samples: %s, %s in the kernel; hottest: %s", diag.fmt_count(samples),
      pctf(kernel_pct), table.concat(hottest(3), ", ")))
  end
  candidate("cpu-bound", "high-cpu", true, sev_of(want), want,
    sub("CPU-bound: on a CPU or waiting for one %s of the threads' time", pctf(want)), ev,
    { "high-cpu profiles which functions burn it, user vs kernel time, hot syscalls, starvation" })
elseif host and samples > 0 and P.frequency_hz and window > 0 then
  local busy = samples * 100 / (P.frequency_hz * ncpus * window)
  if busy >= T.host_busy then
    candidate("cpu-bound", "high-cpu", true, busy >= 90 and "critical" or "warning", busy,
      sub("The host's CPUs are %s busy", pctf(busy)),
      { sub("%s on-CPU samples at %d Hz on %d CPUs over %.1f s", diag.fmt_count(samples), P.frequency_hz, ncpus, window),
        "Busiest threads: " .. table.concat(busiest_comms(5), ", ") },
      { "Find the busiest process's pid: top -b -n1 -o %CPU | head -15" })
  end
end

local runq
if R and (R.count or 0) >= MIN_WAITS then
  runq = { p99 = diag.percentile(R.buckets, 99), count = R.count }
end
local runnable_pct = host and (ncpus * window > 0 and class.runnable.ns * 100 / (ncpus * window * 1e9) or 0)
  or share(class.runnable.ns)
local psi_cpu = diag.get(C, "psi", "some_pct")
-- With --pid the host's CPU pressure is evidence only: the target must itself wait to run.
local starved = runnable_pct >= T.warn or (runq and runq.p99 >= T.runq_warn) or
  (host and psi_cpu and psi_cpu >= T.psi)
if starved and not (candidates[1] and candidates[1].v.id == "cpu-bound") then
  local ev = { sub("Runnable, waiting for a CPU: %s of the %s time", pctf(runnable_pct),
    host and "CPUs'" or "threads'") }
  if runq then push(ev, sub("Run-queue latency p99 %s over %s waits", diag.fmt_us(runq.p99), diag.fmt_count(runq.count))) end
  if psi_cpu then push(ev, sub("CPU pressure: some task stalled %s of the window", pctf(psi_cpu))) end
  local level = host and math.max(runnable_pct, psi_cpu or 0) or runnable_pct
  candidate("cpu-starved", "high-cpu", true, sev_of(level), level, "Starved of CPU: threads wait to run", ev,
    { "high-cpu says who holds the CPUs, the run-queue latency and cgroup throttling" })
end

-- Waiting: locks, futexes, peers, sleeps ---------------------------------------------------------
if not host then
  local parts, total, hard = {}, 0, 0
  local function part(name, label, active_only)
    local pct = share(class[name].ns)
    if pct <= 0 then return end
    if active_only and rate(name) < T.active then return end
    total = total + pct
    if name ~= "sleep" then hard = hard + pct end
    local where = own_fn(class[name].top)
    push(parts, { pct = pct, label = label, text = sub("%s %s (%s waits/s%s)", label, pctf(pct),
      diag.fmt_count(rate(name)), where and (", in " .. diag.fn(where)) or "") })
  end
  part("lock", "locks", false)
  part("futex", "futexes", false)
  part("peer", "peers (sockets, pipes)", true)
  part("sleep", "sleeps", true)
  if total >= T.warn then
    table.sort(parts, function(a, b) return a.pct > b.pct end)
    local ev = { sub("Blocked %s of the threads' time (%d threads, %.1f s)", pctf(total), threads, window) }
    for _, p in ipairs(parts) do push(ev, "  " .. p.text) end
    local sev = sev_of(hard >= T.warn and total or 0)
    -- Sleeping may be by design (a paced loop): mostly sleeps is at most a warning, ranked after
    -- every other warning (score 0): a leak or retransmits beside it are the finding.
    local score = total
    if hard < T.warn then sev, score = "warning", 0 end
    candidate("waiting", "latency", true, sev, score,
      "Threads wait on " .. parts[1].label, ev,
      { "latency names the lock and its holder, the peer, or the sleep, with the call path" })
  end
end

-- Disk: uninterruptible waits in the block layer, io pressure -----------------------------------
-- Host-wide the io pressure decides: summed over every task, uninterruptible time counts kernel
-- threads parked in D state (TASK_IDLE), which wait on nothing; it is evidence only.
local disk_pct = host and 0 or share(class.disk.ns)
local psi_io = diag.get(C, "io", "pressure", "some_pct")
if disk_pct >= T.warn or (psi_io and psi_io >= T.psi) then
  local ev = {}
  if not host and disk_pct > 0 then
    local where = own_fn(class.disk.top)
    push(ev, sub("Blocked uninterruptible on I/O %s of the %s time (%s waits/s)%s", pctf(disk_pct),
      host and "CPUs'" or "threads'", diag.fmt_count(rate("disk")), where and (", in " .. diag.fn(where)) or ""))
  end
  if psi_io then push(ev, sub("I/O pressure on the host: some task stalled %s of the window", pctf(psi_io))) end
  for _, d in ipairs(diag.get(C, "io", "disks") or {}) do
    if (d.util_pct or 0) >= 10 then
      push(ev, sub("Disk %s: %s busy, %.0f r/s, %.0f w/s, await r %.1f ms w %.1f ms", d.name, pctf(d.util_pct),
        d.r_s or 0, d.w_s or 0, d.r_await_ms or 0, d.w_await_ms or 0))
    end
  end
  local own = disk_pct >= T.warn
  if own then
    candidate("io-wait", "io-saturation", false, sev_of(math.max(disk_pct, psi_io or 0)), disk_pct,
      "Threads wait on the disk", ev, { "io-saturation names the device, who loads it, and fsync-bound callers" })
  else
    -- The host stalls on I/O but the target does not wait on it: look host-wide.
    local v = diag.verdict("host-io-pressure", host and sev_of(psi_io) or "info",
      "The host stalls on I/O → io-saturation", ev, { "Run next: diagnose io-saturation",
        "io-saturation without --pid looks at every disk and who loads it" })
    v.next = { recipe = "io-saturation", params = {} }
    push(candidates, { v = v, rank = SEV_RANK[v.severity], score = psi_io })
  end
end

-- Memory: RSS growth over the window, memory pressure --------------------------------------------
local M = C and C.memory
if not host and M and M.rss_delta_bytes then
  local delta, slope, rss = M.rss_delta_bytes, M.rss_slope_bytes_per_s or 0, M.rss_bytes or 0
  local before = rss - delta
  local grew_pct = before > 0 and delta * 100 / before or 100
  if delta >= T.rss_min and slope >= T.rss_slope then
    local ev = { sub("RSS grew by %.1f MiB in %.1f s (%s/s by its slope), to %s: %s of its size", delta / 1048576, window, sub("%.0f KiB", slope / 1024),
      sub("%.1f MiB", rss / 1048576), pctf(grew_pct)) }
    if M.rss_anon_delta_bytes then
      push(ev, sub("Anonymous (heap) memory %+.1f MiB, file-backed %+.1f MiB", M.rss_anon_delta_bytes / 1048576,
        (M.rss_file_delta_bytes or 0) / 1048576))
    end
    local lim = diag.get(M, "cgroup", "max_bytes")
    if lim and lim > rss and slope > 0 then
      push(ev, sub("At this rate the cgroup limit (%.0f MiB) is reached in %.0f s", lim / 1048576,
        (lim - (diag.get(M, "cgroup", "current_bytes") or rss)) / slope))
    end
    candidate("memory-growing", "memory-growth", true, grew_pct >= T.rss_crit and "critical" or "warning",
      math.min(grew_pct, 100), "Memory keeps growing", ev,
      { "memory-growth says whether it is a leak and which call path allocates it" })
  end
end
local psi_mem = diag.get(M, "pressure", "some_pct")
if psi_mem and psi_mem >= T.psi then
  -- with --pid the host's pressure is context (info), host-wide a finding
  candidate("memory-pressure", "memory-growth", true, host and "warning" or "info", psi_mem, "The host is short of memory",
    { sub("Memory pressure: some task stalled %s of the window (reclaim, swap-in, refaults)", pctf(psi_mem)) },
    { "memory-growth on the process that grows says why; free -m and /proc/meminfo say how short" })
end

-- Network: error counters over the window ---------------------------------------------------------
local N = C and C.net
if N and N.counters then
  local function ctr(g, n) return diag.get(N, "counters", g, n) or 0 end
  local errors, ev = 0, {}
  local out_segs, retr = ctr("Tcp", "OutSegs"), ctr("Tcp", "RetransSegs")
  local retr_pct = out_segs > 0 and retr * 100 / out_segs or 0
  local listed = {
    { "Tcp", "InErrs" }, { "Tcp", "InCsumErrors" }, { "Tcp", "AttemptFails" }, { "Tcp", "EstabResets" },
    { "TcpExt", "ListenOverflows" }, { "TcpExt", "ListenDrops" }, { "TcpExt", "TCPBacklogDrop" },
    { "TcpExt", "TCPRcvQDrop" }, { "TcpExt", "TCPTimeouts" }, { "Udp", "InErrors" }, { "Udp", "RcvbufErrors" },
    { "Ip", "InDiscards" }, { "Ip", "OutDiscards" }, { "Ip", "InHdrErrors" },
  }
  local seen = {}
  for _, c in ipairs(listed) do
    local n = ctr(c[1], c[2])
    if n > 0 then
      errors = errors + n
      push(seen, sub("%s %s", c[2], diag.fmt_count(n)))
    end
  end
  local drops = diag.get(N, "softnet", "dropped") or 0
  if drops > 0 then errors = errors + drops; push(seen, sub("softnet dropped %s", diag.fmt_count(drops))) end
  for _, i in ipairs(N.interfaces or {}) do
    local n = (i.rx_drop or 0) + (i.tx_drop or 0) + (i.rx_errs or 0) + (i.tx_errs or 0)
    if n > 0 then errors = errors + n; push(seen, sub("%s drops/errors %s", i.name, diag.fmt_count(n))) end
  end
  local bad_retr = out_segs >= T.retrans_min and retr_pct >= T.retrans
  if bad_retr or errors >= T.net_min then
    if out_segs > 0 then
      push(ev, sub("TCP retransmits: %s of %s segments sent (%s)", diag.fmt_count(retr), diag.fmt_count(out_segs), pctf(retr_pct)))
    end
    if #seen > 0 then push(ev, "Error and drop counters over the window: " .. table.concat(seen, ", ")) end
    push(ev, "Counters of the target's network namespace (the host's without --pid), not only the target's sockets")
    candidate("network-errors", "network-errors", false, retr_pct >= 5 and bad_retr and "critical" or "warning",
      math.max(retr_pct, 1), "The network shows errors", ev,
      { "network-errors names the peers, drop reasons and ports behind the counters" })
  end
end

-- ---- ordering, idle, report ---------------------------------------------------------------------

table.sort(candidates, function(a, b)
  if a.rank ~= b.rank then return a.rank > b.rank end
  return (a.score or 0) > (b.score or 0)
end)

local stop_tag, stop_line = diag.stop_note(run.stop_reason, window, C and C.exited)
local judged = 0
for _, c in ipairs(candidates) do if c.rank >= SEV_RANK.warning then judged = judged + 1 end end
if judged == 0 then
  local ev = {}
  -- how busy: the target's CPU use (% of one CPU), host-wide the CPUs' (% of all of them)
  local busy = cpu_pct
  if cpu_pct then push(ev, sub("CPU use %s of one CPU over %.1f s, %d threads", pctf(cpu_pct), window, threads)) end
  if host and P and P.frequency_hz and window > 0 then
    busy = samples * 100 / (P.frequency_hz * ncpus * window)
    push(ev, sub("The host's CPUs %s busy", pctf(busy)))
  end
  local blocked = 0
  for _, c in ipairs({ "lock", "futex", "peer", "sleep", "disk" }) do blocked = blocked + class[c].ns end
  if not host then push(ev, sub("Blocked (locks, peers, sleeps, disk) %s of the threads' time", pctf(share(blocked)))) end
  local who = host and "The host" or "The target"
  if (busy or 0) < T.idle then
    push(verdicts, diag.verdict("idle", "info", "Idle: nothing to chase", ev,
      { who .. " is not busy and does not wait on anything over the window; if it is slow, the cause is elsewhere (its peers, its callers)" }))
  else
    push(verdicts, diag.verdict("ok", "ok", "Nothing stands out", ev,
      { who .. " is busy but under every threshold; if it is still slow, run " .. (host and "diagnose latency --pid PID" or command("latency", true)) .. " for a closer look at the waits" }))
  end
end
-- the target's own verdict (idle, ok) first, then the host's context (info) and any finding
for _, c in ipairs(candidates) do push(verdicts, c.v) end
if stop_tag then
  push(verdicts, diag.verdict("incomplete", "info", "Data incomplete: " .. stop_tag, { stop_line }, {}))
end

-- The thread-state breakdown and the recipes named.
if not host then
  local on_ns = ((cpu_pct or 0) / 100) * window * 1e9
  local off = 0
  for _, c in ipairs(classes) do off = off + class[c].ns end
  local unseen = math.max(thread_ns - on_ns - off, 0)
  local rows = { { "on the CPU", pctf(share(on_ns)), diag.fmt_ns(on_ns), "" } }
  for _, c in ipairs(classes) do
    if class[c].ns > 0 then
      push(rows, { c, pctf(share(class[c].ns)), diag.fmt_ns(class[c].ns), diag.fmt_rate(rate(c)) })
    end
  end
  if unseen > 0 then push(rows, { "blocked all window", pctf(share(unseen)), diag.fmt_ns(unseen), "" }) end
  push(report, diag.table(sub("Where the threads' time went (%d threads x %.1f s)", threads, window),
    { "state", "share", "time", "waits/s" }, rows))
end
local rows = {}
for _, c in ipairs(candidates) do
  push(rows, { c.v.severity, c.v.id, c.v.next and c.v.next.recipe or "(needs a pid)", c.v.next_steps[1] })
end
if #rows > 0 then push(report, diag.table("Symptoms, worst first", { "severity", "verdict", "recipe", "command" }, rows)) end

return { verdicts = verdicts, report = report }
