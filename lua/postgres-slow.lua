-- postgres-slow.lua — verdicts for recipes/postgres-slow.yaml: which of a PostgreSQL server's
-- statements are slow over the window, and why, in PostgreSQL's own terms.
--
-- Reads results.pg (pg_statements: statements by normalized text with their time split, lock
-- waits by lock, LWLock waits by tranche, checkpoints, buffers, sorts), results.activity
-- (pg_activity: the backends sampled in the server's shared memory, and what is in flight at the
-- window's end), results.context (proc_context), run and thresholds.
--
-- How it decides. A statement is slow when its executions in the window average at least
-- slow_statement_ms; the slow ones are taken by total time, heaviest first (at most 3 verdicts).
-- Each is named by the largest share of its time, when that share is wait_share_pct or more:
--   lock-wait     heavyweight locks: the lock of its longest wait (a row's transaction, a
--                 relation, a tuple) and its mode; critical when failed_pct_crit % of its
--                 executions ended in an error during a lock wait (lock_timeout, deadlock)
--   lwlock-wait   LWLocks: the tranches the server waited on most
--   read-wait     reading blocks from the kernel (shared-buffer misses)
--   slow-statement  none of those: it executes (plans, scans, sorts, computes); its sorts that
--                 spilled to disk are named
--   critical as well when it averages slow_factor_crit x slow_statement_ms.
-- cache-misses: the server's shared-buffer hit ratio under hit_ratio_warn_pct over at least
-- min_buffer_accesses (buffer_hits on), whatever the statements' times.
-- checkpoints: a checkpoint that finished in the window is evidence (info), a warning when slow
-- statements wait on the WAL or buffer LWLocks meanwhile (the checkpoint's writes stall them).
-- in-flight: a client backend's statement still running at the window's end that started
-- in_flight_warn_s or more before it (critical from in_flight_crit_s), however long it has run:
-- it need not finish in the window to be seen. Named with what it waits on (the lock, in
-- pg_locks' words, and the pids holding it, with what they are doing; an LWLock tranche; I/O; a
-- sleep) or that it runs; lock waits first, sleeps (pg_sleep) last, each the longest first, at
-- most 3 verdicts.
-- Sampled: when pg saw no statement finish (its uprobes stopped or not run over the budget, no
-- results, or statements longer than the window) and nothing is stuck, the statements the
-- backends' samples show running, sampled_busy_backends or more of them on average, heaviest
-- first (at most 3): lock-wait, lwlock-wait, read-wait, io-wait (warnings) by the largest kind of
-- wait in their samples when it is wait_share_pct or more, else busy-statement (info).
-- ok: statements finished, none is slow and nothing is stuck. idle: none finished, none runs in
-- the samples and nothing is in flight past the threshold (nothing ran, or the target is not a
-- PostgreSQL server doing work). incomplete-data: the ring filled, texts over the limit, an early stop, the server's
-- shared memory unreadable (pg_activity).

local T = {
  slow_ns = diag.threshold("slow_statement_ms") * 1e6,
  share = diag.threshold("wait_share_pct"),
  failed_crit = diag.threshold("failed_pct_crit"),
  slow_crit = diag.threshold("slow_factor_crit"),
  hit_warn = diag.threshold("hit_ratio_warn_pct"),
  min_accesses = diag.threshold("min_buffer_accesses"),
  top_n = diag.threshold("top_n"),
  flight_warn = diag.threshold("in_flight_warn_s"),
  flight_crit = diag.threshold("in_flight_crit_s"),
  busy_backends = diag.threshold("sampled_busy_backends"),
}
local MAX_SLOW_VERDICTS = 3
local MAX_FLIGHT_VERDICTS = 3

local pg, context = results.pg, results.context
-- pg_activity's results when it could read the server (absent in reports recorded before it)
local activity = results.activity
local act = activity and activity.available and activity or nil
local target_arg = diag.target(run, context)
-- the probes' window (proc_context's first reading may come before the USDT sites are attached)
local window = run.duration_s or (context and context.wall_s) or 0

local PG_BLOCKERS = "SELECT pid, pg_blocking_pids(pid) AS blocked_by, wait_event_type, wait_event, state, now() - xact_start AS in_xact, query FROM pg_stat_activity WHERE cardinality(pg_blocking_pids(pid)) > 0;"
local PG_LONG_XACTS = "SELECT pid, state, now() - xact_start AS in_xact, query FROM pg_stat_activity WHERE xact_start IS NOT NULL ORDER BY xact_start LIMIT 5;"
local PG_STATEMENTS = "SELECT calls, mean_exec_time, total_exec_time, shared_blks_hit, shared_blks_read, query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 10; (CREATE EXTENSION pg_stat_statements; needs shared_preload_libraries)"
local PG_WAITS = "SELECT wait_event_type, wait_event, count(*) FROM pg_stat_activity WHERE wait_event IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC;"
local WAL_TRANCHES = { WALWrite = true, WALInsert = true, WALBufMapping = true, BufferContent = true,
  BufferIO = true, BufferMapping = true, CheckpointerComm = true }

local function mean(s) return s.count > 0 and s.total_ns / s.count or 0 end
local function pctl(s, p) return diag.percentile_upto(s.buckets, p, s.max_ns) end
local function pct(x) return diag.fmt_pct(x) end

-- The statement's text for a title: one line, at most 120 characters.
local function short_query(q)
  q = (q or "?"):gsub("%s+", " ")
  if #q > 120 then q = q:sub(1, 117) .. "..." end
  return q
end

-- The lock, as a person reads pg_locks: "transactionid 787 (ShareLock)".
local function lock_words(l)
  if not l then return "a lock" end
  local t = l.locktype
  local what
  if t == "transactionid" then
    what = string.format("transaction %s (a row another transaction changed and has not committed)", math.tointeger(l.transactionid) or l.transactionid)
  elseif t == "tuple" then
    what = string.format("a row of relation %s (page %s, tuple %s)", math.tointeger(l.relation) or l.relation,
      math.tointeger(l.page) or l.page, math.tointeger(l.tuple) or l.tuple)
  elseif t == "relation" or t == "extend" or t == "page" then
    what = string.format("%s%s %s", t == "relation" and "relation" or t, t == "relation" and "" or " of relation",
      math.tointeger(l.relation) or l.relation)
  elseif t == "virtualxid" then
    what = string.format("virtual transaction %s (waiting for another transaction to end: CREATE INDEX CONCURRENTLY, a snapshot)", l.virtualxid)
  else
    what = t or "a lock"
  end
  return string.format("%s, %s", what, l.mode or "?")
end

local function lock_steps(l)
  local steps = diag.lines("Who blocks whom, and since when: " .. PG_BLOCKERS)
  if l and l.relation then
    steps:add("Which relation: SELECT %s::regclass; (in database OID %s: SELECT datname FROM pg_database WHERE oid = %s;)",
      math.tointeger(l.relation) or l.relation, math.tointeger(l.database) or l.database, math.tointeger(l.database) or l.database)
  end
  steps:add("The oldest open transactions (a blocker idle in transaction holds its locks until its client commits): " .. PG_LONG_XACTS)
  steps:add("Bound the damage: lock_timeout for the waiters, idle_in_transaction_session_timeout for forgotten transactions; shorten the transactions that hold the lock (commit sooner, update rows in a consistent order)")
  return steps
end

local function time_split(s)
  local rest = math.max(0, s.total_ns - s.lock_ns - s.lwlock_ns - s.read_ns)
  return string.format("Time split: lock waits %s, LWLock waits %s, reads from the kernel %s, the rest (executing: CPU, planning, client I/O inside the statement) %s",
    pct(diag.pct(s.lock_ns, s.total_ns)), pct(diag.pct(s.lwlock_ns, s.total_ns)), pct(diag.pct(s.read_ns, s.total_ns)),
    pct(diag.pct(rest, s.total_ns)))
end

local function statement_evidence(s)
  local ev = diag.lines(string.format("%s execution%s finished in the %.1f s window, %s in all: mean %s, p50 %s, p99 %s, longest %s",
    diag.fmt_count(s.count), s.count == 1 and "" or "s", window, diag.fmt_ns(s.total_ns), diag.fmt_ns(mean(s)),
    diag.fmt_ns(pctl(s, 50)), diag.fmt_ns(pctl(s, 99)), diag.fmt_ns(s.max_ns)))
  ev:add(time_split(s))
  if (s.errors or 0) > 0 then
    ev:add("%s of them ended in an error (a timeout, a cancel, a deadlock, a constraint): their time runs to it", diag.fmt_count(s.errors))
  end
  if (s.buffer_hits or 0) + (s.buffer_misses or 0) > 0 then
    ev:add("Shared buffers: %s hits, %s misses, %s blocks read from the kernel", diag.fmt_count(s.buffer_hits),
      diag.fmt_count(s.buffer_misses), diag.fmt_count(s.reads))
  end
  if (s.sorts or 0) > 0 then
    ev:add("Sorts: %s, %s spilled to disk", diag.fmt_count(s.sorts), diag.fmt_count(s.sorts_disk))
  end
  if s.text_cut then ev:add("The statement's text was longer than the 511 bytes read") end
  return ev
end

local function explain_step(s)
  return string.format("Its plan, with buffers: EXPLAIN (ANALYZE, BUFFERS) %s (replace each ? with a real value; in a transaction you roll back if it writes)",
    short_query(s.query))
end

-- ---- one verdict per slow statement --------------------------------------------------------

local function severity_of(s, failed_share)
  if mean(s) >= T.slow_crit * T.slow_ns or (failed_share and failed_share >= T.failed_crit) then
    return "critical"
  end
  return "warning"
end

local function tranches_line()
  local parts = {}
  for i, t in ipairs((pg and pg.lwlock_waits) or {}) do
    if i > 3 then break end
    parts[#parts + 1] = string.format("%s %s (%s waits)", t.tranche, diag.fmt_ns(t.total_ns), diag.fmt_count(t.count))
  end
  return #parts > 0 and table.concat(parts, ", ") or nil
end

local function slow_verdict(s)
  local q = short_query(s.query)
  local lock, lw, rd = diag.pct(s.lock_ns, s.total_ns), diag.pct(s.lwlock_ns, s.total_ns), diag.pct(s.read_ns, s.total_ns)
  local ev = statement_evidence(s)
  local biggest = math.max(lock, lw, rd)
  if biggest >= T.share and lock == biggest then
    local l = s.worst_lock
    local failed = diag.pct(s.lock_waits_failed or 0, s.count)
    ev:add("%s lock wait%s, %s ended by an error (lock_timeout, deadlock, cancel); the longest, %s, on %s",
      diag.fmt_count(s.lock_waits), s.lock_waits == 1 and "" or "s", diag.fmt_count(s.lock_waits_failed or 0),
      diag.fmt_ns(l and l.wait_ns or 0), lock_words(l))
    local steps = lock_steps(l)
    return diag.verdict("lock-wait", severity_of(s, failed),
      string.format("%s is slow: it waits for a lock %s of its time, on %s", q, pct(lock), lock_words(l)), ev, steps)
  elseif biggest >= T.share and lw == biggest then
    local tl = tranches_line()
    if tl then ev:add("LWLock waits of the server by tranche: %s", tl) end
    return diag.verdict("lwlock-wait", severity_of(s),
      string.format("%s is slow: it waits for LWLocks %s of its time%s", q, pct(lw),
        tl and (" (" .. ((pg.lwlock_waits[1] or {}).tranche or "?") .. " most)") or ""), ev,
      { "Which LWLocks, live: " .. PG_WAITS,
        "WALWrite/WALInsert: commits wait on the WAL (synchronous_commit, wal_buffers, the WAL disk); BufferMapping/BufferContent: many backends on the same pages (hot rows, too small shared_buffers); lock_manager: too many locks per transaction or partitions",
        "Fewer active connections (a pooler such as PgBouncer) relieves every LWLock" })
  elseif biggest >= T.share and rd == biggest then
    return diag.verdict("read-wait", severity_of(s),
      string.format("%s is slow: it reads blocks from the kernel %s of its time (%s blocks: shared buffers miss them)",
        q, pct(rd), diag.fmt_count(s.reads)), ev,
      { explain_step(s),
        "Reads a statement should not need: a missing index (a sequential scan in the plan), then CREATE INDEX CONCURRENTLY",
        "Reads it needs: shared_buffers (and the page cache: effective_cache_size) smaller than the working set; pg_statio_user_tables shows which tables miss",
        "Check the disk too: diagnose io-saturation " .. target_arg })
  end
  local steps = diag.lines(explain_step(s), "Across the server, what costs most: " .. PG_STATEMENTS)
  if (s.sorts_disk or 0) > 0 then
    steps:add("%s of its sorts spilled to disk: raise work_mem for it (SET work_mem = '64MB' in its session), or an index that returns rows in order", diag.fmt_count(s.sorts_disk))
  end
  steps:add("It waits for nothing: its plan does the work (scans, joins, sorts, functions); an index, a rewrite, or less data per call")
  return diag.verdict("slow-statement", severity_of(s),
    string.format("%s is slow: %s on average over %s executions, %s of it executing (no lock, LWLock or read waits to speak of)%s",
      q, diag.fmt_ns(mean(s)), diag.fmt_count(s.count),
      pct(100 - lock - lw - rd), (s.sorts_disk or 0) > 0 and "; its sorts spill to disk" or ""), ev, steps)
end

-- ---- statements in flight at the window's end (pg_activity) -------------------------------

local function secs(x) return x and string.format("%.1f s", x) or "?" end

local function by_pid(list)
  local m = {}
  for _, f in ipairs(list or {}) do m[f.pid] = f end
  return m
end

-- What a backend waits on, in words: "a lock: transaction 725 (...), ShareLock", "the LWLock
-- WALWrite", "I/O (DataFileRead)"; nil when it has no wait event (it runs).
local function wait_words(f)
  local t, e = f.wait_event_type, f.wait_event
  if not t then return nil end
  if t == "Lock" then return "a lock: " .. lock_words(f.lock or { locktype = e }) end
  if t == "LWLock" then return string.format("the LWLock %s", e) end
  if t == "IO" then return string.format("I/O (%s)", e) end
  if t == "Timeout" and e == "PgSleep" then return "pg_sleep()" end
  if t == "Client" then return string.format("its client (%s)", e) end
  return string.format("%s (%s)", e, t)
end

-- "pid 123 (idle in transaction for 40.2 s, its transaction open 41.0 s; last statement: ...)"
local function holder_words(pid, flights)
  local h = flights[pid]
  if not h then return string.format("pid %s", math.tointeger(pid) or pid) end
  return string.format("pid %s (%s for %s, its transaction open %s; %s: %s)", math.tointeger(pid) or pid, h.state,
    secs(h.state_elapsed_s), secs(h.xact_elapsed_s), h.state == "active" and "running" or "last statement",
    short_query(h.query))
end

local function stuck_statements()
  local stuck = {}
  for _, f in ipairs((act and act.in_flight) or {}) do
    if f.backend_type == "client backend" and (f.state == "active" or f.state == "fastpath function call")
      and (f.query_elapsed_s or 0) >= T.flight_warn then
      stuck[#stuck + 1] = f
    end
  end
  -- lock waits first (the story on-call needs: who blocks whom), statements asleep on purpose
  -- (pg_sleep: Timeout:PgSleep) last, each group the longest first
  local function rank(f)
    if f.wait_event_type == "Lock" then return 0 end
    if f.wait_event == "PgSleep" then return 2 end
    return 1
  end
  table.sort(stuck, function(a, b)
    local ra, rb = rank(a), rank(b)
    if ra ~= rb then return ra < rb end
    return (a.query_elapsed_s or 0) > (b.query_elapsed_s or 0)
  end)
  return stuck
end

-- The share of the window's samples the statement spent in each wait (pg_activity's statements).
-- "running 77%, IO:DataFileRead 14%, IPC:ExecuteGather 9%": its three largest.
local function wait_parts(s)
  local parts = {}
  for i, w in ipairs(s.waits or {}) do
    if i > 3 then break end
    parts[#parts + 1] = string.format("%s %s", w.wait_event and (w.wait_event_type .. ":" .. w.wait_event) or "running",
      pct(diag.pct(w.samples, s.samples)))
  end
  return table.concat(parts, ", ")
end

local function sampled_waits(q)
  for _, s in ipairs((act and act.statements) or {}) do
    if s.query == q and (s.samples or 0) > 0 then
      return string.format("Sampled at %s Hz over the window: %s backend-samples, %s", math.tointeger(act.hz) or act.hz,
        diag.fmt_count(s.samples), wait_parts(s))
    end
  end
  return nil
end

local function flight_verdict(f, flights, at_start)
  local q = short_query(f.query)
  local ww = wait_words(f)
  local holders = {}
  for _, pid in ipairs(f.blocked_by or {}) do holders[#holders + 1] = holder_words(pid, flights) end
  local title = string.format("%s has been running for %s%s", q, secs(f.query_elapsed_s),
    ww and (", waiting for " .. ww) or ", and runs (no wait event: on a CPU, or in code without one)")
  if #(f.blocked_by or {}) > 0 then
    local pids = {}
    for _, pid in ipairs(f.blocked_by) do pids[#pids + 1] = tostring(math.tointeger(pid) or pid) end
    title = title .. " held by pid " .. table.concat(pids, ", ")
  end
  local ev = diag.lines(string.format("pid %s (%s), %s: its statement started %s before the window's end, its transaction %s",
    math.tointeger(f.pid) or f.pid, f.backend_type, f.state, secs(f.query_elapsed_s), secs(f.xact_elapsed_s)))
  if ww then ev:add("It waits for %s (%s:%s) since %s", ww, f.wait_event_type, f.wait_event, secs(f.state_elapsed_s)) end
  for _, h in ipairs(holders) do ev:add("Held by %s", h) end
  if f.blocked_by_unknown then ev:add("Who holds the lock could not be read (it changed while read): " .. PG_BLOCKERS) end
  local s = at_start[f.pid]
  if s and s.query == f.query then
    ev:add("Already in flight when the window opened (%s then): it has not finished in the %.1f s window", secs(s.query_elapsed_s), window)
  end
  local sw = sampled_waits(f.query)
  if sw then ev:add(sw) end
  if f.text_cut then ev:add("Its text was longer than what was read") end
  local steps = diag.lines()
  if f.wait_event_type == "Lock" then
    steps:extend(lock_steps(f.lock))
    for _, pid in ipairs(f.blocked_by or {}) do
      local h = flights[pid]
      if h and h.state:find("^idle in transaction") then
        steps:add("Its blocker pid %s is idle in transaction: its client holds the locks without working; end it (SELECT pg_terminate_backend(%s);) or fix the client that leaves transactions open",
          math.tointeger(pid) or pid, math.tointeger(pid) or pid)
      end
    end
  else
    steps:add(explain_step(f))
    if f.wait_event_type == "LWLock" then steps:add("Which LWLocks, live: " .. PG_WAITS) end
    if f.wait_event_type == "IO" then steps:add("The disk it reads or writes: diagnose io-saturation " .. target_arg) end
  end
  steps:add("Cancel it if it must not go on: SELECT pg_cancel_backend(%s); bound the next ones: statement_timeout, lock_timeout",
    math.tointeger(f.pid) or f.pid)
  local sev = (f.query_elapsed_s or 0) >= T.flight_crit and "critical" or "warning"
  return diag.verdict("in-flight", sev, title, ev, steps)
end

-- ---- statements the uprobes could not time, sampled (pg_activity) -----------------------------

-- A statement's backend-samples by kind of wait: lock (heavyweight), lwlock, read (IO reads of
-- data), io (other I/O: the WAL, flushes), run (no wait event) and other (IPC, timeouts...).
local function sample_split(s)
  local k = { lock = 0, lwlock = 0, read = 0, io = 0, run = 0, other = 0 }
  local read_events = {}
  for _, w in ipairs(s.waits or {}) do
    local t, e, n = w.wait_event_type, w.wait_event or "", w.samples or 0
    if not t then k.run = k.run + n
    elseif t == "Lock" then k.lock = k.lock + n
    elseif t == "LWLock" then k.lwlock = k.lwlock + n
    elseif t == "IO" and e:find("Read") then
      k.read = k.read + n
      read_events[#read_events + 1] = e
    elseif t == "IO" then k.io = k.io + n
    else k.other = k.other + n end
  end
  return k, read_events
end

-- pg saw no statement finish (or has no results) while the backends' samples show statements
-- running: the uprobes were stopped or not run over the budget, or the statements outlast the
-- window. The heaviest running statements by samples, named by their largest kind of wait when it
-- is wait_share_pct or more (a warning: the wait is measured, even if the statements' times are
-- not); otherwise busy-statement (info). Only statements that kept sampled_busy_backends or more
-- busy on average; none: nil (idle stands).
local function sampled_verdicts()
  local out = {}
  if not act or (act.samples or 0) == 0 then return out end
  local stop = run.stopped and run.stopped.pg
  local why
  if not pg then
    why = "pg has no results: the statements' times are not known"
  elseif stop and stop.at_s < window then
    why = string.format("pg's uprobes were %s over max_cpu_pct (their traps cost the server more than the budget): the statements' counts and times are not known",
      stop.at_s <= 0.01 and "not run" or string.format("stopped %.1f s into the window", stop.at_s))
  else
    why = "pg saw none of them finish in the window: they run longer than it, or finished before it opened"
  end
  for _, s in ipairs(act.statements or {}) do
    if #out >= MAX_SLOW_VERDICTS then break end
    if (s.avg_backends or 0) >= T.busy_backends and (s.samples or 0) > 0 then
      local k, read_events = sample_split(s)
      local n = s.samples
      local q = short_query(s.query)
      local ev = diag.lines(sampled_waits(s.query) or "", why)
      local biggest = math.max(k.lock, k.lwlock, k.read, k.io)
      local share = diag.pct(biggest, n)
      local busy = string.format("%.1f backend%s busy with it on average", s.avg_backends, s.avg_backends == 1 and "" or "s")
      if share >= T.share and biggest == k.lock then
        out[#out + 1] = diag.verdict("lock-wait", "warning",
          string.format("%s waits for a lock %s of its sampled time (%s)", q, pct(share), busy), ev, lock_steps(nil))
      elseif share >= T.share and biggest == k.lwlock then
        out[#out + 1] = diag.verdict("lwlock-wait", "warning",
          string.format("%s waits for LWLocks %s of its sampled time (%s)", q, pct(share), busy), ev,
          { "Which LWLocks, live: " .. PG_WAITS, "Fewer active connections (a pooler such as PgBouncer) relieves every LWLock" })
      elseif share >= T.share and biggest == k.read then
        out[#out + 1] = diag.verdict("read-wait", "warning",
          string.format("%s reads blocks from the kernel %s of its sampled time (%s; %s)", q, pct(share), table.concat(read_events, ", "), busy), ev,
          { explain_step(s), "Which tables miss: SELECT relname, heap_blks_read, heap_blks_hit FROM pg_statio_user_tables ORDER BY heap_blks_read DESC LIMIT 10;",
            "Check the disk too: diagnose io-saturation " .. target_arg })
      elseif share >= T.share then
        out[#out + 1] = diag.verdict("io-wait", "warning",
          string.format("%s waits for I/O other than reads %s of its sampled time (%s)", q, pct(share), busy), ev,
          { "Which waits, live: " .. PG_WAITS, "The disk the data and WAL live on: diagnose io-saturation " .. target_arg })
      else
        out[#out + 1] = diag.verdict("busy-statement", "info",
          string.format("%s keeps %s (sampled: %s)", q, busy, wait_parts(s)), ev,
          diag.lines(explain_step(s), "Across the server, what costs most: " .. PG_STATEMENTS))
      end
    end
  end
  return out
end

-- ---- the server ---------------------------------------------------------------------------

local function cache_misses()
  local b = pg.buffers
  if not b or not b.hits_counted then return nil end
  local accesses = (b.hits or 0) + (b.misses or 0)
  local ratio = diag.pct(b.hits or 0, accesses)
  if accesses < T.min_accesses then return nil end
  if ratio >= T.hit_warn then
    return diag.ruled_out("cache-misses", "shared buffers hit %s of %s accesses (warning under %s)", pct(ratio),
      diag.fmt_count(accesses), pct(T.hit_warn))
  end
  return diag.verdict("cache-misses", "warning",
    string.format("Reads miss the buffer cache: shared buffers hit only %s of %s accesses", pct(ratio), diag.fmt_count(accesses)),
    { string.format("%s misses, %s blocks read from the kernel in %s (%s per read)", diag.fmt_count(b.misses), diag.fmt_count(b.reads),
      diag.fmt_ns(b.read_ns), diag.fmt_ns((b.reads or 0) > 0 and b.read_ns / b.reads or 0)) },
    { "Which tables miss: SELECT relname, heap_blks_read, heap_blks_hit, idx_blks_read, idx_blks_hit FROM pg_statio_user_tables ORDER BY heap_blks_read + idx_blks_read DESC LIMIT 10;",
      "shared_buffers (SHOW shared_buffers) against the working set; a new sequential scan (a missing index) reads a whole table",
      "The statements that read: " .. PG_STATEMENTS })
end

local function checkpoints(slow)
  local c = pg.checkpoints
  if not c or (c.count or 0) == 0 then return nil end
  local line = string.format("%s checkpoint%s finished in the window: %s in all, the longest %s, %s buffers written",
    diag.fmt_count(c.count), c.count == 1 and "" or "s", diag.fmt_ns(c.total_ns), diag.fmt_ns(c.max_ns), diag.fmt_count(c.buffers_written))
  local wal_ns = 0
  for _, t in ipairs(pg.lwlock_waits or {}) do
    if WAL_TRANCHES[t.tranche] then wal_ns = wal_ns + (t.total_ns or 0) end
  end
  local stalled = false
  for _, s in ipairs(slow) do
    if diag.pct(s.lwlock_ns, s.total_ns) >= T.share then stalled = true end
  end
  if stalled and wal_ns > 0 then
    return diag.verdict("checkpoint-stall", "warning",
      "Checkpoints stall writes: slow statements wait on WAL and buffer LWLocks while a checkpoint writes",
      { line, string.format("WAL and buffer LWLock waits in the window: %s", diag.fmt_ns(wal_ns)) },
      { "Spread checkpoints: checkpoint_completion_target = 0.9, a larger max_wal_size (fewer checkpoints forced by WAL volume: SELECT * FROM pg_stat_bgwriter, checkpoints_req against checkpoints_timed)",
        "The disk the data and WAL live on: diagnose io-saturation " .. target_arg })
  end
  return diag.verdict("checkpoint", "info", line, { line }, { "Checkpoints are routine; they matter when statements wait on them (WAL and buffer LWLocks)" })
end

local function incomplete()
  local p = diag.partial()
  if not pg then
    p.note("pg missing", "pg: no results (" .. diag.why_missing("pg") .. "): nothing about the statements", "warning")
  else
    if (pg.ring_full or 0) > 0 then
      p.note("ring full", string.format("%s finished statements were not read (the ring was full): the figures undercount; raise ring_kib", diag.fmt_count(pg.ring_full)), "warning")
    end
    if (pg.statements_over_limit or 0) > 0 then
      p.note("texts over the limit", string.format("%s statements of texts beyond max_statements are counted, not listed", diag.fmt_count(pg.statements_over_limit)))
    end
    if (pg.map_full or 0) > 0 then
      p.note("map full", string.format("%s backends, locks or tranches were not kept (a map was full)", diag.fmt_count(pg.map_full)))
    end
    if (pg.sites_unreadable or 0) > 0 then
      p.note("unreadable sites", string.format("%s probe sites have arguments that cannot be fetched (diagnose show --usdt %s)", diag.fmt_count(pg.sites_unreadable), pg.binary or "BINARY"))
    end
  end
  if activity and not activity.available then
    p.note("activity unavailable", string.format("activity: the server's shared memory was not read (%s): statements in flight are not seen", activity.unavailable or "?"))
  elseif act and (act.samples_failed or 0) > 0 and (act.samples or 0) == 0 then
    p.note("activity unread", string.format("activity: no sample could be read (%s)", act.last_error or "?"), "warning")
  end
  p.stop(run.stop_reason, window, context and context.exited)
  return p.verdict()
end

-- ---- main --------------------------------------------------------------------------------------

local answer = diag.answer()
local stuck = stuck_statements()
do
  local flights, at_start = by_pid(act and act.in_flight), by_pid(act and act.in_flight_at_start)
  local last
  for i, f in ipairs(stuck) do
    if i > MAX_FLIGHT_VERDICTS then break end
    last = flight_verdict(f, flights, at_start)
    answer.add(last)
  end
  if #stuck > MAX_FLIGHT_VERDICTS then -- the rest, said in the last one's evidence
    local more = {}
    for i = MAX_FLIGHT_VERDICTS + 1, #stuck do
      local f = stuck[i]
      more[#more + 1] = string.format("pid %s %s (%s)", math.tointeger(f.pid) or f.pid, short_query(f.query or "?"), secs(f.query_elapsed_s))
    end
    table.insert(last.evidence, string.format("%d more statement%s in flight for %s or more: %s", #more, #more == 1 and "" or "s",
      diag.fmt_s(T.flight_warn), table.concat(more, "; ")))
  end
  if act and act.in_flight and #stuck == 0 then
    local longest = 0
    for _, f in ipairs(act.in_flight) do
      if f.backend_type == "client backend" and (f.state == "active" or f.state == "fastpath function call") then
        longest = math.max(longest, f.query_elapsed_s or 0)
      end
    end
    answer.add(diag.ruled_out("in-flight", "no statement in flight at the window's end has run %s or more (the longest: %s)",
      diag.fmt_s(T.flight_warn), secs(longest)))
  end
end
if pg then
  local all = {}
  for _, s in ipairs(pg.statements or {}) do all[#all + 1] = s end -- by total time already
  local slow = {}
  for _, s in ipairs(all) do
    if mean(s) >= T.slow_ns then slow[#slow + 1] = s end
  end
  for i, s in ipairs(slow) do
    if i > MAX_SLOW_VERDICTS then break end
    answer.add(slow_verdict(s))
  end
  answer.add(cache_misses())
  answer.add(checkpoints(slow))
  if (pg.deadlocks or 0) > 0 then
    answer.add(diag.verdict("deadlocks", "warning", string.format("%s deadlock%s in the window", diag.fmt_count(pg.deadlocks), pg.deadlocks == 1 and "" or "s"),
      { "PostgreSQL aborted a transaction to break each (deadlock__found); the server log has the statements of both" },
      { "Take locks in one order in every transaction (update rows sorted by key), and keep transactions short" }))
  end
  if #slow == 0 and #stuck == 0 then
    local n = pg.statements_finished or 0
    local sampled = n == 0 and sampled_verdicts() or {}
    for _, v in ipairs(sampled) do answer.add(v) end
    if #sampled > 0 then
      -- named from the samples above
    elseif n == 0 then
      answer.add(diag.verdict("idle", "info", "No statement finished in the window",
        { string.format("pg_statements saw no query__done in %.1f s on %s", window, target_arg) },
        { "An idle server, or the target is not a backend running statements: diagnose postgres-slow --comm postgres covers every backend",
          "A statement running longer than the window finishes after it: a longer --duration, or " .. PG_LONG_XACTS }))
    else
      local top = all[1]
      answer.add(diag.verdict("ok", "ok",
        string.format("Statements are fast: %s finished in %.1f s (%s text%s), none averages %s or more",
          diag.fmt_count(n), window, diag.fmt_count(pg.distinct_statements or #all),
          (pg.distinct_statements or #all) == 1 and "" or "s", diag.fmt_ns(T.slow_ns)),
        { top and string.format("The heaviest: %s — %s executions, mean %s", short_query(top.query), diag.fmt_count(top.count), diag.fmt_ns(mean(top))) or "" },
        { "If clients still see slowness, it is outside these statements: the connection pool, the network, the client's own time (diagnose latency on the client)" }))
    end
  end
  local named_lock = false
  for _, v in ipairs(answer.verdicts) do named_lock = named_lock or v.id == "lock-wait" end
  if not named_lock and (pg.statements_finished or 0) > 0 then
    local lock_ns = 0
    for _, s in ipairs(all) do lock_ns = lock_ns + (s.lock_ns or 0) end
    answer.add(diag.ruled_out("lock-wait", "no slow statement waits for locks: lock waits of the statements %s in all",
      diag.fmt_ns(lock_ns)))
  end
elseif #stuck == 0 then
  for _, v in ipairs(sampled_verdicts()) do answer.add(v) end
end
answer.add(incomplete())

-- ---- report sections -----------------------------------------------------------------------

if pg then
  local rows = diag.lines()
  for i, s in ipairs(pg.statements or {}) do
    if i > T.top_n then break end
    rows:add({ short_query(s.query), s.count, diag.fmt_ns(s.total_ns), diag.fmt_ns(mean(s)),
      diag.fmt_ns(pctl(s, 99)), pct(diag.pct(s.lock_ns, s.total_ns)),
      pct(diag.pct(s.lwlock_ns, s.total_ns)), pct(diag.pct(s.read_ns, s.total_ns)), s.errors or 0 })
  end
  answer.section(diag.table("Statements by total time", { "statement", "count", "total", "mean", "p99", "lock", "LWLock", "read", "errors" }, rows))
  -- the statements whose longest wait was on this lock (and mode)
  local function same_lock(a, b)
    if not a or not b then return false end
    for _, k in ipairs({ "locktype", "mode", "database", "relation", "page", "tuple", "transactionid", "virtualxid", "objid" }) do
      if a[k] ~= b[k] then return false end
    end
    return true
  end
  local locks = diag.lines()
  for i, l in ipairs(pg.lock_waits or {}) do
    if i > T.top_n then break end
    local waiting = {}
    for _, s in ipairs(pg.statements or {}) do
      if same_lock(s.worst_lock, l) and #waiting < 2 then waiting[#waiting + 1] = short_query(s.query) end
    end
    locks:add({ lock_words(l), l.count, diag.fmt_ns(l.total_ns), diag.fmt_ns(l.max_ns),
      #waiting > 0 and table.concat(waiting, " | ") or "-" })
  end
  if #locks > 0 then
    answer.section(diag.table("Locks waited for", { "lock, mode", "waits", "total", "longest", "waiting statements" }, locks))
  end
  local lw = diag.lines()
  for _, t in ipairs(pg.lwlock_waits or {}) do lw:add({ t.tranche, t.count, diag.fmt_ns(t.total_ns), diag.fmt_ns(t.max_ns) }) end
  if #lw > 0 then answer.section(diag.table("LWLock waits by tranche", { "tranche", "waits", "total", "longest" }, lw)) end
  local b, so, c = pg.buffers or {}, pg.sorts or {}, pg.checkpoints or {}
  answer.section(diag.text("Server", {
    string.format("Statements finished: %s (%s ended by an error), %s distinct texts", diag.fmt_count(pg.statements_finished or 0),
      diag.fmt_count(pg.statements_failed or 0), diag.fmt_count(pg.distinct_statements or 0)),
    b.hits_counted and string.format("Shared buffers: %s hits, %s misses (%s hit)", diag.fmt_count(b.hits), diag.fmt_count(b.misses),
      pct(diag.pct(b.hits or 0, (b.hits or 0) + (b.misses or 0)))) or "Shared buffers: hits not counted (buffer_hits=false)",
    string.format("Blocks read from the kernel: %s in %s", diag.fmt_count(b.reads or 0), diag.fmt_ns(b.read_ns or 0)),
    string.format("Sorts: %s, %s spilled to disk (%s KiB)", diag.fmt_count(so.count or 0), diag.fmt_count(so.disk or 0), diag.fmt_count(so.disk_kb or 0)),
    string.format("Checkpoints finished: %s (%s, %s buffers written)", diag.fmt_count(c.count or 0), diag.fmt_ns(c.total_ns or 0), diag.fmt_count(c.buffers_written or 0)),
  }))
end

if act and act.in_flight then
  local rows = diag.lines()
  for i, f in ipairs(act.in_flight) do
    if i > T.top_n * 2 then break end
    local pids = {}
    for _, pid in ipairs(f.blocked_by or {}) do pids[#pids + 1] = tostring(math.tointeger(pid) or pid) end
    rows:add({ math.tointeger(f.pid) or f.pid, f.state, f.wait_event and (f.wait_event_type .. ":" .. f.wait_event) or "-",
      secs(f.query_elapsed_s), secs(f.xact_elapsed_s), #pids > 0 and table.concat(pids, " ") or "-", short_query(f.query) })
  end
  if #rows > 0 then
    answer.section(diag.table("In flight at the window's end (pg_activity)", { "pid", "state", "wait", "statement for", "transaction for", "blocked by", "statement" }, rows))
  end
  local waits = diag.lines()
  for i, a in ipairs(act.activity or {}) do
    if i > T.top_n then break end
    waits:add({ a.backend_type, a.state ~= "" and a.state or "-", a.wait_event and (a.wait_event_type .. ":" .. a.wait_event) or "-",
      string.format("%.2f", a.avg_backends or 0), pct(a.share_pct or 0) })
  end
  if #waits > 0 then
    answer.section(diag.table(string.format("Backends by state and wait event, sampled at %s Hz (pg_activity)", math.tointeger(act.hz) or act.hz),
      { "backend type", "state", "wait", "backends on average", "share" }, waits))
  end
end

-- the key figures `diagnose watch` exports (nil: not measured)
local buf = pg and pg.buffers
local looked = buf and (buf.hits or 0) + (buf.misses or 0) or 0
answer.metric("pg_statements_per_second", pg and window > 0 and (pg.statements_finished or 0) / window or nil,
  "Statements the server finished per second over the window")
local longest_flight
for _, f in ipairs((act and act.in_flight) or {}) do
  if f.backend_type == "client backend" and f.state == "active" then longest_flight = math.max(longest_flight or 0, f.query_elapsed_s or 0) end
end
answer.metric("pg_in_flight_longest_seconds", act and (longest_flight or 0) or nil,
  "The longest-running statement of a client backend still running at the window's end")
answer.metric("pg_buffer_miss_ratio", buf and buf.hits_counted and looked > 0 and (buf.misses or 0) / looked or nil,
  "Shared-buffer lookups that missed (read from the kernel) over all lookups")

return answer.result()
