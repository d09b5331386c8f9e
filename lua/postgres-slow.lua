-- postgres-slow.lua — verdicts for recipes/postgres-slow.yaml: which of a PostgreSQL server's
-- statements are slow over the window, and why, in PostgreSQL's own terms.
--
-- Reads results.pg (pg_statements: statements by normalized text with their time split, lock
-- waits by lock, LWLock waits by tranche, checkpoints, buffers, sorts), results.context
-- (proc_context), run and thresholds.
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
-- ok: statements finished and none is slow. idle: none finished (nothing ran, or the target is
-- not a PostgreSQL backend doing work). incomplete-data: the ring filled, texts over the limit,
-- an early stop.

local T = {
  slow_ns = diag.threshold("slow_statement_ms") * 1e6,
  share = diag.threshold("wait_share_pct"),
  failed_crit = diag.threshold("failed_pct_crit"),
  slow_crit = diag.threshold("slow_factor_crit"),
  hit_warn = diag.threshold("hit_ratio_warn_pct"),
  min_accesses = diag.threshold("min_buffer_accesses"),
  top_n = diag.threshold("top_n"),
}
local MAX_SLOW_VERDICTS = 3

local pg, context = results.pg, results.context
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
    p.note("pg missing", "pg: no results (the probe failed): nothing about the statements", "warning")
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
  p.stop(run.stop_reason, window, context and context.exited)
  return p.verdict()
end

-- ---- main --------------------------------------------------------------------------------------

local answer = diag.answer()
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
  if #slow == 0 then
    local n = pg.statements_finished or 0
    if n == 0 then
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

-- the key figures `diagnose watch` exports (nil: not measured)
local buf = pg and pg.buffers
local looked = buf and (buf.hits or 0) + (buf.misses or 0) or 0
answer.metric("pg_statements_per_second", pg and window > 0 and (pg.statements_finished or 0) / window or nil,
  "Statements the server finished per second over the window")
answer.metric("pg_buffer_miss_ratio", buf and buf.hits_counted and looked > 0 and (buf.misses or 0) / looked or nil,
  "Shared-buffer lookups that missed (read from the kernel) over all lookups")

return answer.result()
