-- diag.lua — helpers shared by every recipe snippet; loaded before the snippet as global `diag`.
--
-- Owns: totals and percentiles of log2 histograms, top-N, shares and rates, human formatting,
-- call paths from stacks, the verdict constructor, and the three report section shapes the
-- report writer knows: table, histogram, text.
-- Must not: know any recipe's thresholds or verdicts.
--
-- Results arrive as read-only tables: read them with `.`, `#`, ipairs and pairs (not next, which
-- sees an empty proxy); copy before sorting. A missing value is nil: guard with `diag.get` or `or`.

local diag = {}

local SEVERITIES = { ok = true, info = true, warning = true, critical = true }

-- ---- lookups -----------------------------------------------------------------------------

-- diag.number(t, name, default): t[name] when it is a number, else default (a threshold the
-- recipe may leave out or mistype).
function diag.number(t, name, default)
  local v = t and t[name]
  if type(v) == "number" then return v end
  return default
end

-- diag.stop_note(stop_reason, window_s, exited): why a run ended early, for an incomplete-data
-- verdict: a short tag, a line of evidence and a severity ("warning" or "info"); nil when the
-- window ran out.
function diag.stop_note(stop, window, exited)
  if stop == "target-exited" or exited then
    return "target exited", string.format("The target exited during the window; data covers %.1f s", window), "warning"
  elseif stop == "signal" then
    return "interrupted", string.format("Interrupted by a signal after %.1f s", window), "info"
  elseif stop == "over-budget" then
    return "stopped over budget",
      string.format("Stopped early after %.1f s: the overhead budget was exceeded", window), "warning"
  end
  return nil
end

-- diag.target(run, context): how next steps name the run's target again: the diagnose flag
-- ("--pid 1234", or for a set of processes "--comm nginx", "--cgroup PATH", "--unit NAME",
-- "--container ID"), the pids as perf -p takes them ("1234" or "1234,1240"), and one pid for
-- /proc paths; "--pid PID", "PID", "PID" when the report has none. Fourth, what perf record
-- covers: "-p PIDS", or "-a" when the set's members fork short-lived children (perf -p follows
-- no process started after it), then the report is to be read for the set's processes.
function diag.target(run, context)
  local t = run and run.target
  local procs = t and t.processes
  if t and t.selection and procs and #procs > 0 then
    local pids, first = {}, nil
    for _, p in ipairs(procs) do
      if p.alive ~= false or #pids == 0 then
        pids[#pids + 1] = tostring(math.tointeger(p.pid) or p.pid)
        first = first or pids[#pids]
      end
    end
    local name = t.name or "?"
    if name:find("[%s'\"$`\\;|&<>()]") then name = "'" .. name:gsub("'", "'\\''") .. "'" end
    local joined = (t.processes_joined_at_fork or 0) > 0
    return string.format("--%s %s", t.selection, name), table.concat(pids, ","), first,
      joined and "-a" or ("-p " .. table.concat(pids, ","))
  end
  local pid = (t and t.pid) or (context and context.pid)
  if pid then
    pid = tostring(math.tointeger(pid) or pid)
    return "--pid " .. pid, pid, pid, "-p " .. pid
  end
  return "--pid PID", "PID", "PID", "-p PID"
end

-- diag.partial(): what makes a run's data incomplete, gathered while a snippet checks its
-- probes. p.note(tag, line, severity) adds one thing (a short tag for the title, a line of
-- evidence; severity "warning" raises the verdict from info); p.stop(stop_reason, window_s,
-- exited) adds the early stop, if any (diag.stop_note); p.verdict(next_steps) is the
-- `incomplete-data` verdict, "Partial data: TAG, TAG", or nil when nothing was noted.
function diag.partial()
  local tags, ev, sev = {}, {}, "info"
  local p = {}
  function p.note(tag, line, severity)
    tags[#tags + 1] = tag
    ev[#ev + 1] = line
    if severity == "warning" then sev = "warning" end
  end
  function p.stop(stop, window, exited)
    local tag, line, severity = diag.stop_note(stop, window, exited)
    if tag then p.note(tag, line, severity) end
  end
  function p.verdict(next_steps)
    if #tags == 0 then return nil end
    return diag.verdict("incomplete-data", sev, "Partial data: " .. table.concat(tags, ", "), ev,
      next_steps or { "Verdicts may be partial; re-run once the cause is fixed" })
  end
  return p
end

-- diag.get(t, "a", "b") is t.a.b, or nil as soon as one level is missing.
function diag.get(t, ...)
  for i = 1, select("#", ...) do
    if type(t) ~= "table" then return nil end
    t = t[select(i, ...)]
  end
  return t
end

-- ---- off-CPU stacks: what a thread waits on, read from its frames ----------------------------

-- diag.any_frame(frames, patterns): whether a frame (a name) matches one of the Lua patterns.
function diag.any_frame(frames, patterns)
  for _, f in ipairs(frames or {}) do
    for _, p in ipairs(patterns) do
      if f:find(p) then return true end
    end
  end
  return false
end

-- diag.KERNEL_WAITS: kernel frames, by what a blocked thread waits on: disk (the block layer,
-- writeback, a journal), fault (a page fault reading a page in), futex, poll (waiting for work:
-- epoll, poll, select, accept, pause, sigtimedwait), peer (a socket or pipe's data), sleep.
diag.KERNEL_WAITS = {
  disk = { "^io_schedule", "^blk_", "^bio_", "^submit_bio_wait", "^folio_wait", "^wait_on_page",
    "^__filemap_fdatawait", "^filemap_write_and_wait", "^file_write_and_wait", "^jbd2", "^ext4_sync",
    "^xfs_file_fsync", "^xfs_log_force", "^blkdev_", "^__blockdev_direct_IO", "^iomap_dio" },
  fault = { "^handle_mm_fault", "^exc_page_fault", "^do_user_addr_fault", "^filemap_fault",
    "^do_swap_page", "^__do_fault" },
  futex = { "^futex_wait", "^__futex_wait", "^futex_q_lock" },
  poll = { "^ep_poll", "^do_epoll_wait", "^do_sys_poll", "^do_select", "^core_sys_select",
    "^inet_csk_accept", "^inet_csk_wait_for_connect", "^unix_wait_for_peer_accept", "^__do_sys_pause",
    "^do_sigtimedwait", "^sys_pause" },
  peer = { "^sk_wait_data", "^tcp_recvmsg", "^unix_stream_read_generic", "^unix_stream_data_wait",
    "^inet_wait_for_connect", "^__skb_wait_for_more_packets", "^pipe_read", "^wait_woken" },
  sleep = { "^do_nanosleep", "^hrtimer_nanosleep", "^common_nsleep", "^clock_nanosleep" },
}

-- diag.USER_WAITS: the user frames of the wrapper that made a futex call: a lock (mutex,
-- rwlock, semaphore, spin lock) or a condition (a condition variable: waiting for work).
diag.USER_WAITS = {
  lock = { "pthread_mutex_lock", "pthread_mutex_timedlock", "lll_lock", "pthread_rwlock_",
    "sem_wait", "sem_timedwait", "pthread_spin_lock", "std::mutex::lock" },
  cond = { "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
    "__pthread_cond_wait", "std::condition_variable", "futex_abstimed_wait" },
}

-- ---- histograms --------------------------------------------------------------------------
-- A histogram is an array of buckets {lo=, hi=, count=} in ascending order, lo and hi inclusive
-- (log2 buckets: {0,1}, {2,3}, {4,7}, ...). Empty buckets may be left out.

function diag.total(buckets)
  local n = 0
  for _, b in ipairs(buckets or {}) do n = n + b.count end
  return n
end

-- The p-th percentile, p in 0..100, or nil for an empty histogram.
-- Convention: the rank is r = p/100 * total; in the bucket where the running count reaches r the
-- samples are taken as spread evenly from lo to hi, so the answer is
--     lo + (hi - lo) * (r - count_before) / count
-- It always lies inside that bucket: p0 is the lo of the first non-empty bucket, p100 the hi of
-- the last. With log2 buckets the answer is only as exact as the bucket (within a factor of 2).
function diag.percentile(buckets, p)
  local total = diag.total(buckets)
  if total <= 0 then return nil end
  local r = math.max(0, math.min(100, p)) / 100 * total
  local before = 0
  for _, b in ipairs(buckets) do
    if b.count > 0 and before + b.count >= r then
      return b.lo + (b.hi - b.lo) * (r - before) / b.count
    end
    before = before + b.count
  end
  return buckets[#buckets].hi -- only reached through rounding at p100
end

-- ---- ranking -----------------------------------------------------------------------------

-- The n items of array with the largest key, largest first; ties keep array order. keyfn is a
-- function of the item, or a field name (default "count"). Returns a new, plain array.
function diag.top_n(array, n, keyfn)
  keyfn = keyfn or "count"
  if type(keyfn) == "string" then
    local field = keyfn
    keyfn = function(x) return x[field] end
  end
  local tmp = {}
  for i, x in ipairs(array or {}) do tmp[i] = { x = x, k = keyfn(x) or 0, i = i } end
  table.sort(tmp, function(a, b)
    if a.k ~= b.k then return a.k > b.k end
    return a.i < b.i
  end)
  local out = {}
  for i = 1, math.min(n or #tmp, #tmp) do out[i] = tmp[i].x end
  return out
end

-- Adds n to counts[key] (a plain table used as a counter).
function diag.add(counts, key, n)
  counts[key] = (counts[key] or 0) + (n or 1)
end

-- A counter table {name = count} as an array {name=, count=}, largest first, then by name, so
-- the answer does not depend on Lua's table order. At most n entries when n is given.
function diag.ranked(counts, n)
  local out = {}
  for name, count in pairs(counts) do out[#out + 1] = { name = name, count = count } end
  table.sort(out, function(a, b)
    if a.count ~= b.count then return a.count > b.count end
    return a.name < b.name
  end)
  if n then for i = #out, n + 1, -1 do out[i] = nil end end
  return out
end

-- ---- arithmetic --------------------------------------------------------------------------

-- part as a percentage of whole (0 when whole is 0 or missing).
function diag.pct(part, whole)
  if not part or not whole or whole <= 0 then return 0 end
  return part * 100 / whole
end

-- count per second over seconds, or nil when the window is unknown.
function diag.rate(count, seconds)
  if not count or not seconds or seconds <= 0 then return nil end
  return count / seconds
end

-- ---- formatting --------------------------------------------------------------------------

-- Where proc_context's CPU time (results.context) went: "user 1.20 s, system 0.30 s", and on a
-- set of processes the time of those too short-lived for any /proc reading (counted at exit, or
-- when a --comm set's child leaves it at exec).
function diag.cpu_time(context)
  local s = string.format("user %.2f s, system %.2f s", context.utime_s or 0, context.stime_s or 0)
  if (context.unscanned_cpu_s or 0) > 0 then
    s = s .. string.format(", and %.2f s in %s short-lived processes (forked by the set, exited or exec'd away before a /proc reading)",
      context.unscanned_cpu_s, diag.fmt_count(context.unscanned_processes or 0))
  end
  return s
end

-- Three significant digits at most: 2.1, 12.3, 915; a trailing ".0" is dropped.
local function short(x)
  if math.abs(x) >= 99.95 then return string.format("%.0f", x) end
  return (string.format("%.1f", x):gsub("%.0$", ""))
end

-- 950 → "950", 12345 → "12.3k", 914500 → "914k", 2100000 → "2.1M", 3.5e9 → "3.5G".
function diag.fmt_count(n)
  if n == nil then return "n/a" end
  local a = math.abs(n)
  if a < 999.5 then
    return math.type(n) == "integer" and tostring(n) or short(n)
  end
  for _, u in ipairs({ { 1e3, "k" }, { 1e6, "M" }, { 1e9, "G" } }) do
    if a / u[1] < 999.5 then return short(n / u[1]) .. u[2] end
  end
  return short(n / 1e12) .. "T"
end

-- A rate: "2.1M/s"; "n/a" when unknown.
function diag.fmt_rate(per_s)
  if per_s == nil then return "n/a" end
  return diag.fmt_count(per_s) .. "/s"
end

-- Durations: 512 → "512 ns", 1500 → "1.5 us", 80200000 → "80.2 ms", 2.5e9 → "2.50 s".
function diag.fmt_ns(ns)
  if ns == nil then return "n/a" end
  local a = math.abs(ns)
  if a < 999.5 then return string.format("%.0f ns", ns) end
  if a < 999500 then return short(ns / 1e3) .. " us" end
  if a < 999500000 then return short(ns / 1e6) .. " ms" end
  return string.format("%.2f s", ns / 1e9)
end

function diag.fmt_us(us)
  if us == nil then return "n/a" end
  return diag.fmt_ns(us * 1000)
end

-- Percentages: 72.4 → "72%", 3.42 → "3.4%", 0.01 → "<0.1%", 0 → "0%".
function diag.fmt_pct(x)
  if x == nil then return "n/a" end
  if x == 0 or x >= 9.95 then return string.format("%.0f%%", x) end
  if x < 0.05 then return "<0.1%" end
  return string.format("%.1f%%", x)
end

-- ---- stacks ------------------------------------------------------------------------------

-- A resolved function name, as opposed to "[unknown]", "libfoo.so+0x1a2b" or a decorated
-- name such as "bpf_prog_1234_handler [bpf]".
function diag.symbolized(name)
  return type(name) == "string" and name ~= "" and not name:find("[%s%[]") and
      not name:find("%+0x%x+$")
end

-- "burn_hot()" for a symbol; an unresolved frame is shown as it is.
function diag.fn(name)
  if diag.symbolized(name) then return name .. "()" end
  return name or "[unknown]"
end

-- Frames are leaf first; the path reads root first: "main → run_loop → burn_hot". Longer
-- stacks keep the root and the max-1 frames nearest the leaf.
function diag.call_path(frames, max)
  max = max or 8
  local n = #frames
  local parts = {}
  if n > max then
    parts[1] = frames[n]
    parts[2] = "…"
    for i = max - 1, 1, -1 do parts[#parts + 1] = frames[i] end
  else
    for i = n, 1, -1 do parts[#parts + 1] = frames[i] end
  end
  return table.concat(parts, " → ")
end

-- ---- verdicts and report sections ----------------------------------------------------------

-- diag.verdict(id, severity, title, evidence, next_steps): checks the severity here, so a typo
-- is reported at the snippet's line rather than after the run.
function diag.verdict(id, severity, title, evidence, next_steps)
  if not SEVERITIES[severity] then
    error(string.format("diag.verdict(%q): severity %q is not ok|info|warning|critical",
      tostring(id), tostring(severity)), 2)
  end
  return { id = id, severity = severity, title = title, evidence = evidence or {},
    next_steps = next_steps or {} }
end

-- Report sections: these three shapes are the contract with the report writer.
-- rows: array of rows, each an array of cells (strings or numbers) in column order.
function diag.table(title, columns, rows)
  return { kind = "table", title = title, columns = columns, rows = rows or {} }
end

-- buckets: {lo=, hi=, count=} as above (copied, so a read-only result can be passed).
function diag.histogram(title, unit, buckets)
  local copy = {}
  for i, b in ipairs(buckets or {}) do copy[i] = { lo = b.lo, hi = b.hi, count = b.count } end
  return { kind = "histogram", title = title, unit = unit, buckets = copy }
end

function diag.text(title, lines)
  return { kind = "text", title = title, lines = lines or {} }
end

return diag
