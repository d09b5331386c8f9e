-- memory-growth.lua — verdicts for recipes/memory-growth.yaml: is the target's memory growth a
-- leak, where is it allocated, and how long until its memory cgroup's limit?
--
-- Reads results.allocs (allocations), results.maps (mappings), results.faults (page_faults), results.ooms (tracepoint_count
-- of oom:mark_victim, machine-wide), results.context (proc_context, memory section), results.kmem
-- (kernel_memory: slab caches, page cache; host-wide runs only), results.kallocs (kernel_allocs:
-- slab allocations by call site; host-wide runs only), run and thresholds. With --pid
-- the target's memory; without it (run.target null) the host's: the recipe then runs neither
-- allocs nor faults (`when: target`). Any probe may be missing: the verdicts then
-- say what could not be assessed.
--
-- How it decides. Every figure is over the window (deltas, least-squares slopes of the readings
-- in it), never a rolling average.
--   A function (heap.by_function: stacks grouped by the frame past the allocator's wrappers,
--   lua/lib/alloc_wrappers.lua) keeps memory when it still holds >= leak_kept_pct of the blocks it
--   allocated in the window's first half (at most what it holds from then plus all it freed), at
--   least leak_min_old_bytes in leak_min_old_count blocks, or grows a buffer by realloc (grew its
--   blocks by >= leak_min_old_bytes and holds half of it). What it keeps is then:
--   leak            >= leak_lost_pct of its checked blocks whose fate the scan could place are
--                   lost: reached from no root and no unsampled heap memory in the allocations
--                   probe's two scans (no word points to them, or only words of lost blocks;
--                   allocs.reach complete), still held after. A block reached only through heap
--                   memory the probe did not record (heap_only_count: an unsampled block, itself
--                   perhaps lost) counts neither way. At least leak_min_lost_seen lost blocks found
--                   (as recorded: one sampled block stands for hundreds). Warning, critical only
--                   when the memory limit is near.
--   heap-growth     its blocks are reachable (or the scan could not tell): a working set that
--                   grows, "held by F and G" with shares, ages, the time to the limit (cgroup, else
--                   the machine's MemAvailable); warning while RSS grows at
--                   growth_min_bytes_per_s (the held heap when RSS is not known), else info:
--                   with RSS flat the blocks held replaced older ones freed in the window.
--   heap-spread     RSS grows, the heap holds what explains it, and no function keeps it by the
--                   rules above (many paths each keeping a little): warning.
--   Each of these says how much of the RSS growth the traced heap explains and what else grew
--   (results.maps: the allocator's arenas and extents, the program's own mmap, brk; file-backed
--   and shared memory).
--   growth-outside-heap  RSS grows >= growth_min_bytes_per_s while the outstanding heap explains
--                   < heap_explains_pct of it: says whether file mappings / page cache, shared
--                   memory, or anonymous memory grew — mapped by the program itself, or grown by
--                   the allocator without more blocks held (fragmentation: most page faults
--                   inside malloc) — and where the new pages are first touched (page faults).
--   near-limit      the memory cgroup has a limit and its usage grows: time to reach it at the
--                   usage's least-squares slope, with the slope's R² and the window it rests on;
--                   critical under limit_crit_s, warning under limit_warn_s, info beyond.
--   oom-kill        OOM kills during the window: in the target's memory cgroup, or on the machine
--                   (oom:mark_victim) — critical when the cgroup's or when the target itself
--                   triggered the killer (the target is then usually the victim: the run ends
--                   with it), a warning for kills elsewhere on the machine.
--   ok              heavy malloc/free with nothing kept and flat RSS (bounded churn), or nothing
--                   growing: no alarm.
--   kernel-slab-growth  host-wide (no --pid: results.kmem, kernel_memory; results.kallocs,
--                   kernel_allocs, names the call sites that allocated what the cache still holds
--                   — by cache name, kmalloc caches by size class — and the title the function when
--                   its held bytes are at least a quarter of the growth): a slab cache of
--                   /proc/slabinfo that grew >= slab_growth_min_bytes over the window at
--                   >= slab_growth_min_bytes_per_s (start→end), named with its objects and whether the
--                   kernel may reclaim it: warning (at most three caches); info when the kernel
--                   reclaims it (reclaim_account) and MemAvailable is >= reclaimable_spare_pct of
--                   MemTotal (a big directory walk fills dentries and inodes, and gives them back).
--   working-set     host-wide: page-cache refaults (workingset_refault_file + _anon: pages read
--                   back soon after their eviction) >= refault_warn_per_s over the window: the
--                   working set no longer fits — in the machine's memory, or, when the machine
--                   still has most of its memory available, in a memory cgroup's limit: the cgroup
--                   whose refaults grew most is named (kmem.refault_cgroups). warning; critical at
--                   ten times the threshold.
--   incomplete-data probes missing, allocations sampled or untracked (map full), stacks dropped,
--                   page-fault stacks that stop in the allocator, an early stop; host-wide: slabinfo
--                   unreadable, malformed slabinfo lines skipped.
--
-- Why one file (over 800 lines): a symptom is one recipe and one snippet (docs/adding-a-symptom.md);
-- what two snippets share is in lua/lib/ (diag, waits, wait_table, peers, blocked, heap, lang,
-- alloc_wrappers).

local T = {
  kept = diag.threshold("leak_kept_pct"),
  lost = diag.threshold("leak_lost_pct"),
  min_old_bytes = diag.threshold("leak_min_old_bytes"),
  min_old_count = diag.threshold("leak_min_old_count"),
  min_lost_seen = diag.threshold("leak_min_lost_seen"),
  growth = diag.threshold("growth_min_bytes_per_s"),
  explains = diag.threshold("heap_explains_pct"),
  limit_crit = diag.threshold("limit_crit_s"),
  limit_warn = diag.threshold("limit_warn_s"),
  top_n = diag.threshold("top_n"),
  slab_min = diag.threshold("slab_growth_min_bytes"),
  slab_rate = diag.threshold("slab_growth_min_bytes_per_s"),
  refault = diag.threshold("refault_warn_per_s"),
  spare = diag.threshold("reclaimable_spare_pct"),
}

local allocs, faults, context, ooms, kmem, kallocs = results.allocs, results.faults, results.context, results.ooms, results.kmem, results.kallocs
local maps = results.maps
local host = diag.get(run, "target", "pid") == nil
local memory = context and context.memory
local cgroup = memory and memory.cgroup
local pid = diag.get(run, "target", "pid") or (context and context.pid) or "PID"
local window = (allocs and allocs.window_s) or (context and context.wall_s) or run.duration_s or 0
local ctx_window = (context and context.wall_s) or window
-- ---- call paths ---------------------------------------------------------------------------

-- The allocator's own frames and its wrappers (lua/lib/alloc_wrappers.lua, extended by
-- alloc_wrappers_NAME.lua): heap.own_frame names the program's function above them.
local is_allocator, own_of = heap.is_allocator, heap.own_frame

local function path_of_stack(s) return diag.user_path(s.user) end

-- ---- the window's memory figures ------------------------------------------------------------

local rss_delta = memory and memory.rss_delta_bytes
local rss_rate = (rss_delta and ctx_window > 0) and rss_delta / ctx_window or nil
local heap_rate = (allocs and window > 0) and (allocs.outstanding_bytes or 0) / window or nil

-- Least-squares slope and R² of a series {t_s, bytes}.
local function fit(series)
  local n, st, sb = 0, 0, 0
  for _, p in ipairs(series or {}) do n, st, sb = n + 1, st + p.t_s, sb + p.bytes end
  if n < 3 then return nil end
  local mt, mb = st / n, sb / n
  local stt, stb, sbb = 0, 0, 0
  for _, p in ipairs(series) do
    local dt, db = p.t_s - mt, p.bytes - mb
    stt, stb, sbb = stt + dt * dt, stb + dt * db, sbb + db * db
  end
  if stt <= 0 then return nil end
  local slope = stb / stt
  local r2 = sbb > 0 and (stb * stb) / (stt * sbb) or 1
  local span = series[#series].t_s - series[1].t_s
  return { slope = slope, r2 = r2, n = n, span = span }
end

-- ---- what the heap keeps: leaks and growth ------------------------------------------------------

-- Blocks a group allocated in the window's first half: half of its allocations at a steady rate,
-- but never more than it still holds from then plus everything it freed (a path that frees
-- nothing allocated exactly what it holds; under tracing a workload's rate is not steady).
local function first_half_allocs(s)
  return math.min((s.allocs or 0) / 2, (s.old_count or 0) + (s.frees or 0))
end

local reach = allocs and allocs.reach
local reach_ok = reach and reach.complete

-- The functions that keep what they allocate (a group: heap.by_function), heaviest first, each
-- {g = the group, kept = % of its first-half blocks still held, grown = bytes its reallocs grew
-- (a buffer that only grows), lost = the share of its checked blocks nothing reaches, among those
-- a root reaches or nothing does (nil: not known)}; leak = lost blocks enough to call it one (the
-- reference scan: allocations.c, heap_refs.h).
local function find_keepers()
  local keepers = diag.lines()
  for _, g in ipairs(heap.by_function(allocs and allocs.stacks)) do
    local first_half = first_half_allocs(g)
    local kept = first_half > 0 and (g.old_count or 0) * 100 / first_half or 0
    if kept > 100 then kept = 100 end
    local grown = g.realloc_growth_bytes or 0
    local k
    if kept >= T.kept and (g.old_bytes or 0) >= T.min_old_bytes and (g.old_count or 0) >= T.min_old_count then
      k = { g = g, kept = kept }
    elseif grown >= T.min_old_bytes and (g.weight or 0) * 2 >= grown then
      k = { g = g, kept = kept, grown = grown }
    end
    if k then
      local placed = (g.checked_count or 0) - (g.heap_only_count or 0)
      if reach_ok and placed > 0 then
        k.lost = math.min(100, (g.unref_count or 0) * 100 / placed) -- (scaled per stack: rounding)
        -- what it holds from the first half, lost at the share of the placed bytes: the blocks
        -- reached only through unsampled heap memory are as likely lost as those placed (a
        -- sampled leak's head is usually unsampled, its parts sampled more often: they are bigger)
        local placed_bytes = (g.checked_bytes or 0) - (g.heap_only_bytes or 0)
        local share = placed_bytes > 0 and math.min(1, (g.unref_bytes or 0) / placed_bytes) or k.lost / 100
        k.lost_est = math.max(g.unref_bytes or 0, (g.old_bytes or 0) * share)
        k.leak = k.lost >= T.lost and k.lost_est >= T.min_old_bytes and (g.unref_count or 0) >= T.min_old_count
          and (g.unref_seen or 0) >= T.min_lost_seen
      end
      keepers:add(k)
    end
  end
  return keepers
end
local keepers = find_keepers()
local leaks, growers = diag.lines(), diag.lines()
for _, k in ipairs(keepers) do
  if k.leak then leaks:add(k) else growers:add(k) end
end

-- ---- time to the limit -------------------------------------------------------------------------

local limit
if cgroup and cgroup.limited and cgroup.max_bytes and cgroup.current_bytes then
  local f = fit(cgroup.current_series)
  local slope = cgroup.current_slope_bytes_per_s or (f and f.slope)
  local left = cgroup.max_bytes - cgroup.current_bytes
  limit = { max = cgroup.max_bytes, current = cgroup.current_bytes, left = left, slope = slope, fit = f }
  if slope and slope >= T.growth and left > 0 then limit.eta_s = left / slope end
end

local function limit_line()
  if not limit or not limit.eta_s then return nil end
  local f = limit.fit
  return string.format("At the measured slope (%s over %s, %s readings, R² %.2f) the memory cgroup reaches its limit of %s (now %s, %s left) in %s",
    diag.fmt_byte_rate(limit.slope), f and string.format("%.1f s", f.span) or string.format("%.1f s", ctx_window), f and f.n or "?",
    f and f.r2 or 0, diag.fmt_bytes(limit.max), diag.fmt_bytes(limit.current), diag.fmt_bytes(limit.left), diag.fmt_s(limit.eta_s))
end

local function limit_severity()
  if not limit or not limit.eta_s then return nil end
  if limit.eta_s < T.limit_crit then return "critical" end
  if limit.eta_s < T.limit_warn then return "warning" end
  return "info"
end

-- ---- verdicts ----------------------------------------------------------------------------------

local function rss_line()
  if not memory or not rss_delta then return nil end
  local f = fit(memory.rss_series)
  return string.format("RSS %s → %s over %.1f s (%s%s)", diag.fmt_bytes((memory.rss_bytes or 0) - rss_delta), diag.fmt_bytes(memory.rss_bytes),
    ctx_window, diag.fmt_byte_rate(rss_rate), f and string.format("; slope %s, R² %.2f over %d readings", diag.fmt_byte_rate(f.slope), f.r2, f.n) or "")
end

-- How the reference scan went, in one line ("" when there was none).
local function reach_line()
  if not reach then return nil end
  if not reach.complete then
    return string.format("Whether its blocks are still referenced is not known: %s", reach.why or "the scan of the process's memory did not complete")
  end
  return string.format("The process's writable memory was scanned for pointers to the blocks held since the window's first half (%s in %s mappings, %.0f ms)",
    diag.fmt_bytes(reach.scanned_bytes or 0), diag.fmt_count(reach.mappings or 0), (reach.elapsed_ms or 0))
end

-- A group's age line: its held blocks by age.
local function age_line(g)
  local young = (g.weight or 0) - (g.old_bytes or 0)
  return string.format("By age: %s in %s blocks older than %.1f s (allocated in the window's first half), %s younger; the oldest %.1f s old",
    diag.fmt_bytes(g.old_bytes or 0), diag.fmt_count(g.old_count or 0), window / 2, diag.fmt_bytes(young > 0 and young or 0),
    (g.oldest_age_ms or 0) / 1000)
end

local function sampled_line()
  if not allocs then return nil end
  if allocs.sample_bytes and allocs.recorded then
    return string.format("Blocks recorded about one per %s allocated (%s recorded, with their stacks unwound by CFI): figures are estimates",
      diag.fmt_bytes(allocs.sample_bytes), diag.fmt_count(allocs.recorded))
  end
  if allocs.sampled_1_in then return string.format("Allocations recorded 1 in %d (budget): figures are scaled estimates", allocs.sampled_1_in) end
  return nil
end

-- Without a memory cgroup limit, the machine's available memory at the growth rate.
local function machine_line(rate)
  if limit and limit.eta_s then return nil end
  local avail = memory and memory.machine_available_bytes
  local r = (rss_rate and rss_rate > rate) and rss_rate or rate
  if not avail or not r or r <= 0 then return nil end
  return string.format("%s: at %s the machine's available memory (%s of %s) lasts %s",
    cgroup and cgroup.limited and "The memory cgroup's usage is not growing toward its limit" or "No memory limit on its cgroup",
    diag.fmt_byte_rate(r), diag.fmt_bytes(avail), diag.fmt_bytes(memory.machine_total_bytes or 0), diag.fmt_s(avail / r))
end

-- ---- RSS accounted for ------------------------------------------------------------------------

-- Where the window's RSS growth went, per second (each source over its own window): the traced
-- heap blocks held, the address space mapped in the window by the allocator (a stack through
-- its frames: arenas, extents, brk) and by the program itself (by its function), file-backed
-- and shared memory; {rss, heap, allocator, program = {name -> bytes/s}, brk, file, shmem,
-- explained_pct}, or nil without the RSS figures.
local function rss_accounting()
  if not rss_rate or ctx_window <= 0 then return nil end
  local a = { rss = rss_rate, heap = heap_rate or 0, allocator = 0, program = {}, brk = 0 }
  a.file = (memory.rss_file_delta_bytes or 0) / ctx_window
  a.shmem = (memory.rss_shmem_delta_bytes or 0) / ctx_window
  local mwin = maps and maps.window_s or 0
  if maps and mwin > 0 then
    a.brk = ((maps.brk_growth_bytes or 0) - (maps.brk_shrink_bytes or 0)) / mwin
    for _, st in ipairs(maps.stacks or {}) do
      local by_allocator = false
      for _, f in ipairs(st.user or {}) do
        if is_allocator(f) then by_allocator = true break end
      end
      local r = (st.weight or 0) / mwin
      if by_allocator then
        a.allocator = a.allocator + r
      else
        local name = own_of(st) or (st.user or {})[1] or "?"
        a.program[name] = (a.program[name] or 0) + r
      end
    end
  end
  return a
end
local acct = rss_accounting()

-- The accounting as lines of evidence: how much of the RSS growth the traced heap explains, and
-- what else grew.
local function accounting_lines()
  if not acct or acct.rss <= 0 then return nil end
  local out = diag.lines(string.format("The traced heap blocks held explain %s of the RSS growth (%s of %s)",
    diag.fmt_pct(math.min(100, diag.pct(acct.heap, acct.rss))), diag.fmt_byte_rate(acct.heap), diag.fmt_byte_rate(acct.rss)))
  if maps then
    if acct.allocator > 0 then
      out:add("The allocator%s grew its address space by %s in the window for its arenas and extents (mmap and brk through its own frames%s)",
        allocs and allocs.allocator_family and (" (" .. allocs.allocator_family .. ")") or "", diag.fmt_byte_rate(acct.allocator),
        acct.brk > 0 and string.format("; %s of it the heap's break", diag.fmt_byte_rate(math.min(acct.brk, acct.allocator))) or "")
    elseif acct.brk > 0 then
      out:add("The heap's break (brk) grew %s", diag.fmt_byte_rate(acct.brk))
    end
    local prog = diag.ranked(acct.program, 3)
    for _, p in ipairs(prog) do
      if p.count > 0 then out:add("The program mapped %s itself in %s (anonymous mmap)", diag.fmt_byte_rate(p.count), diag.fn(p.name)) end
    end
  end
  if acct.file > 0 then out:add("File-backed pages grew %s (mapped files, page cache mapped in)", diag.fmt_byte_rate(acct.file)) end
  if acct.shmem > 0 then out:add("Shared memory grew %s", diag.fmt_byte_rate(acct.shmem)) end
  return out
end

-- The three heaviest leaking functions, each a verdict; no leak ruled out when the scan said so.
local function leak_verdicts()
  if not allocs then return nil end
  if #leaks == 0 then
    if #growers > 0 then return nil end -- the growth verdict says why it is not called a leak
    return diag.ruled_out("leak", "no leak: no function kept %s of what it allocated in the window's first half (%s allocations traced)",
      diag.fmt_pct(T.kept), diag.fmt_count(allocs.allocs or 0))
  end
  local found = diag.lines()
  for i = 1, math.min(#leaks, 3) do
    local l, g = leaks[i], leaks[i].g
    local name = diag.fn(g.name)
    local rate = window > 0 and (g.weight or 0) / window or 0
    local title = string.format("Leak: %s loses %s in %s blocks no pointer refers to (about %s of what it keeps), growing %s", name,
      diag.fmt_bytes(g.unref_bytes), diag.fmt_count(g.unref_count), diag.fmt_bytes(l.lost_est), diag.fmt_byte_rate(rate))
    local ev = diag.lines(
      string.format("%s of the %s blocks %s allocated in the window's first half and still holds are reached from nowhere in the process's memory (no pointer to them, or only in other lost blocks): lost, as valgrind calls \"definitely\" and \"indirectly lost\" (%s)%s",
        diag.fmt_count(g.unref_count), diag.fmt_count(g.checked_count), name, diag.fmt_bytes(g.unref_bytes),
        (g.heap_only_count or 0) > 0 and string.format("; %s more are reached only through heap memory the probe did not sample, which may be lost itself: counted neither way — at the share of those placed (%s lost), about %s of the %s it holds from the window's first half is lost",
          diag.fmt_count(g.heap_only_count), diag.fmt_pct(l.lost), diag.fmt_bytes(l.lost_est), diag.fmt_bytes(g.old_bytes or 0)) or ""),
      reach_line(),
      string.format("%s holds %s in %s blocks allocated during the %.1f s window: %s of its %s allocations (%s) were freed",
        name, diag.fmt_bytes(g.weight), diag.fmt_count(g.count), window, diag.fmt_count(g.frees or 0), diag.fmt_count(g.allocs or 0),
        diag.fmt_bytes(g.alloc_bytes)),
      age_line(g),
      "Call path: " .. path_of_stack(g.top))
    ev:add(rss_line())
    ev:extend(accounting_lines())
    ev:add(limit_line() or machine_line(rate))
    ev:add(sampled_line())
    local sev = limit_severity() == "critical" and "critical" or "warning"
    found:add(diag.verdict("leak", sev, title, ev,
      { string.format("Find where the blocks allocated in %s should be freed: the pointer to them is dropped (overwritten, or goes out of scope) while they are still allocated", name),
        string.format("Confirm in a test build: valgrind --leak-check=full, or -fsanitize=address (LeakSanitizer) names the same allocation"),
        string.format("Confirm over a longer window: diagnose memory-growth --pid %s --duration 60", pid) }))
  end
  return found
end

-- The functions whose held memory grows without being lost: one verdict, heaviest first.
local function growth_verdict()
  if not allocs or #growers == 0 then return nil end
  local total = 0
  for _, k in ipairs(growers) do total = total + (k.g.weight or 0) end
  local names = diag.lines()
  for i = 1, math.min(2, #growers) do
    names:add("%s (%s)", diag.fn(growers[i].g.name), diag.fmt_pct(diag.pct(growers[i].g.weight, total)))
  end
  local rate = window > 0 and total / window or 0
  local g1 = growers[1].g
  local grown = growers[1].grown
  local title = string.format("Heap grows %s, held by %s: %s kept of what was allocated in the window%s", diag.fmt_byte_rate(rate),
    table.concat(names, " and "), diag.fmt_bytes(total), (g1.frees or 0) == 0 and ", none freed" or "")
  if grown and #growers == 1 then
    title = string.format("Heap grows %s, held by %s: a buffer it grows with realloc, %s over the window", diag.fmt_byte_rate(rate),
      diag.fn(g1.name), diag.fmt_bytes(grown))
  end
  local ev = diag.lines()
  for i = 1, math.min(3, #growers) do
    local k, g = growers[i], growers[i].g
    ev:add("%s holds %s in %s blocks allocated in the window (%s of its %s allocations freed; kept %s of its first half's)%s: %s", diag.fn(g.name),
      diag.fmt_bytes(g.weight), diag.fmt_count(g.count), diag.fmt_count(g.frees or 0), diag.fmt_count(g.allocs or 0), diag.fmt_pct(k.kept),
      k.grown and string.format("; its reallocs grew blocks by %s", diag.fmt_bytes(k.grown)) or "", path_of_stack(g.top))
    ev:add(age_line(g))
    if k.lost then
      local heap_only, lost = g.heap_only_count or 0, g.unref_count or 0
      local rooted = math.max(0, (g.checked_count or 0) - heap_only - lost)
      ev:add("Of its %s blocks from the window's first half, %s are reachable from the program's roots (its stacks and globals, directly or through recorded blocks), %s only through heap memory the probe did not sample, %s lost (%s of those placed): kept on purpose, a working set that grows — a cache, a keyspace, a queue — not a leak",
        diag.fmt_count(g.checked_count), diag.fmt_count(rooted), diag.fmt_count(heap_only), diag.fmt_count(lost), diag.fmt_pct(k.lost))
    elseif reach_ok and (g.checked_count or 0) > 0 then
      ev:add("Its %s blocks from the window's first half are all reached only through heap memory the probe did not sample (its containers' own small blocks): none is lost, and whether they are kept on purpose is not known from the scan",
        diag.fmt_count(g.checked_count))
    end
  end
  ev:add(reach_line())
  if not reach then ev:add("Lost or kept on purpose is not known: the allocations probe did not scan the process's memory for references") end
  ev:add(rss_line())
  ev:extend(accounting_lines())
  ev:add(limit_line() or machine_line(rate))
  ev:add(sampled_line())
  -- With RSS flat the blocks held since the window began took the place of older ones freed
  -- in it (a working set that turns over slower than the window, the allocator reusing its free
  -- memory): what the process holds did not grow in the window. Its RSS decides when it is known.
  local sev = limit_severity()
  if sev == "critical" or sev == "warning" then
    sev = "warning"
  elseif rss_rate then
    sev = rss_rate >= T.growth and "warning" or "info"
    if sev == "info" and rate >= T.growth then
      ev:add("RSS did not grow (%s, under %s): the blocks held since the window began reuse memory the allocator got back from older blocks freed in it — a working set turning over more slowly than the window, not growth yet",
        diag.fmt_byte_rate(rss_rate), diag.fmt_byte_rate(T.growth))
      title = string.format("Heap turns over, RSS flat: %s held by %s of what was allocated in the window, in place of older blocks freed",
        diag.fmt_bytes(total), table.concat(names, " and "))
    end
  else
    sev = rate >= T.growth and "warning" or "info"
  end
  return (diag.verdict("heap-growth", sev, title, ev,
    { string.format("Is what %s keeps bounded? A cache needs a size limit or an eviction policy, keys a TTL, a queue a consumer that keeps up (Redis: maxmemory and an eviction policy; INFO keyspace)", diag.fn(g1.name)),
      string.format("Measure longer: a working set levels off when its bound is reached, a leak does not (diagnose memory-growth --pid %s --duration 120)", pid),
      reach and not reach.complete and "Lost or kept: the reference scan did not complete (see above); raise its max_scan_bytes in the recipe" or nil }))
end

local growing = rss_rate and rss_rate >= T.growth

-- RSS flat over the window: no growth to explain.
local function rss_flat()
  if not rss_rate or growing then return nil end
  return diag.ruled_out("memory-growth", "memory not growing: RSS %s over %.1f s (%s, under %s)",
    diag.fmt_bytes(rss_delta), ctx_window, diag.fmt_byte_rate(rss_rate), diag.fmt_byte_rate(T.growth))
end

-- Growth the heap does not explain.
local function growth_outside_heap()
  if not (growing and allocs and heap_rate and heap_rate * 100 < T.explains * rss_rate) then return nil end
  local ev = diag.lines(rss_line(), string.format("The heap's outstanding blocks grew at most %s (%s of the RSS growth): the allocator does not explain it",
    diag.fmt_byte_rate(heap_rate), diag.fmt_pct(diag.pct(heap_rate, rss_rate))))
  local anon, file, shmem = memory.rss_anon_delta_bytes, memory.rss_file_delta_bytes, memory.rss_shmem_delta_bytes
  -- Anonymous growth: who touches the new pages says whether the program maps memory itself or
  -- the allocator grows without holding more blocks (fragmentation, freed memory kept).
  local in_alloc = 0
  for _, st in ipairs(faults and faults.stacks or {}) do
    local leaf = (st.user or {})[1]
    if leaf and is_allocator(leaf) and (leaf:find("^_int_") or leaf:find("^sysmalloc") or leaf:find("malloc") or leaf:find("^tcache_")) then
      in_alloc = in_alloc + (st.weight or 0)
    end
  end
  local what = "anonymous memory outside malloc (mmap or brk by the program itself)"
  if faults and (faults.bytes or 0) > 0 and in_alloc * 2 >= faults.bytes then
    what = "anonymous memory the allocator grows without holding more blocks (fragmentation, freed memory not returned)"
    ev:add("%s of the page faults are inside the allocator while it holds no more blocks: its own growth", diag.fmt_pct(diag.pct(in_alloc, faults.bytes)))
  end
  if anon or file or shmem then
    ev:add("Of the RSS change: anonymous %s, file-backed %s, shared memory %s", diag.fmt_bytes(anon), diag.fmt_bytes(file), diag.fmt_bytes(shmem))
    if (file or 0) > (anon or 0) and (file or 0) >= (shmem or 0) then
      what = "file mappings or page cache mapped into the process"
    elseif (shmem or 0) > (anon or 0) then
      what = "shared memory (tmpfs, shm, memfd)"
    end
  end
  ev:extend(accounting_lines())
  -- who mapped it: the program's own mmap by function (the mappings probe), before who touched it
  local mapper = acct and diag.ranked(acct.program, 1)[1]
  if mapper and mapper.count * 4 >= rss_rate and what:find("outside malloc") then
    what = string.format("%s, mapped in %s", what, diag.fn(mapper.name))
  end
  local own
  local top = faults and (faults.stacks or {})[1]
  if top then
    own = own_of(top)
    ev:add("New pages are first touched in %s: %s of %s of page faults (%s)", diag.fn(own or (top.user or {})[1] or "?"),
      diag.fmt_bytes(top.weight), diag.fmt_bytes(faults.bytes), path_of_stack(top))
  end
  return (diag.verdict("growth-outside-heap", "warning",
    string.format("Memory grows %s outside the allocator: %s%s", diag.fmt_byte_rate(rss_rate), what, own and (", touched in " .. diag.fn(own)) or ""),
    ev,
    { string.format("Which mappings grow: compare two readings of /proc/%s/smaps (or pmap -x %s) a few seconds apart", pid, pid),
      "mmap'd files and page cache are reclaimable; anonymous mmap is not: check the code that maps it",
      "Fragmentation (freed blocks not returned): malloc_trim(0), MALLOC_ARENA_MAX, or a different allocator" }))
end

-- Growth the heap explains, but no path keeps it by the rules above.
local function heap_growth()
  if not (growing and allocs and #keepers == 0 and heap_rate and heap_rate * 100 >= T.explains * rss_rate) then return nil end
  local ev = diag.lines(rss_line(), string.format("The heap holds %s allocated during the %.1f s window (%s); no call path kept most of what it allocated in the window's first half",
    diag.fmt_bytes(allocs.outstanding_bytes), window, diag.fmt_byte_rate(heap_rate)))
  for i = 1, math.min(3, #(allocs.stacks or {})) do
    local s = allocs.stacks[i]
    ev:add("%s in %s blocks (%s allocated, %s freed): %s", diag.fmt_bytes(s.weight), diag.fmt_count(s.count),
      diag.fmt_count(s.allocs or 0), diag.fmt_count(s.frees or 0), path_of_stack(s))
  end
  return (diag.verdict("heap-spread", "warning",
    string.format("Memory grows %s in the heap, no single call path keeps it", diag.fmt_byte_rate(rss_rate)), ev,
    { string.format("A cache or queue filling, or many paths each keeping a little: measure longer (diagnose memory-growth --pid %s --duration 60) to see what is still kept", pid) }))
end

-- Without allocations, the page faults are the only call path: growth by where pages are touched.
local function growth_without_allocs()
  if not (growing and not allocs and faults and (faults.stacks or {})[1]) then return nil end
  local top = faults.stacks[1]
  local own = own_of(top)
  return (diag.verdict("growth", "warning",
    string.format("Memory grows %s; new pages are first touched in %s", diag.fmt_byte_rate(rss_rate), diag.fn(own or (top.user or {})[1] or "?")),
    { rss_line(), string.format("%s of %s of page faults on %s", diag.fmt_bytes(top.weight), diag.fmt_bytes(faults.bytes), path_of_stack(top)),
      "A page fault names the code that first touches a page, not the owner of every block on it: in a heap shared with other allocations it may be any caller of malloc" },
    { string.format("Record the allocations: diagnose memory-growth --pid %s (the allocations probe was missing here)", pid) }))
end

-- Time to the limit, on its own when no leak verdict carried it.
local function near_limit()
  if not limit then return nil end
  if not limit.eta_s then
    return diag.ruled_out("near-limit", "not heading for the memory cgroup's limit: usage %s of %s, growing %s",
      diag.fmt_bytes(limit.current), diag.fmt_bytes(limit.max), diag.fmt_byte_rate(limit.slope))
  end
  if #keepers > 0 then return nil end -- the leak or growth verdict carries it
  return (diag.verdict("near-limit", limit_severity(),
    string.format("Memory cgroup reaches its limit (%s) in %s at the measured slope", diag.fmt_bytes(limit.max), diag.fmt_s(limit.eta_s)),
    { limit_line(), rss_line() },
    { "Find what grows (the verdicts above, or a longer window), or raise the limit if the working set is legitimately larger",
      cgroup.dir and string.format("Watch it: %s (memory.usage_in_bytes / memory.current)", cgroup.dir) or "Watch the cgroup's usage" }))
end

-- OOM kills in the window: in the target's memory cgroup, or on the machine; without a kill,
-- the cgroup reaching its limit.
local function oom_kill()
  local cgroup_ooms = cgroup and diag.get(cgroup, "events", "oom_kill") or 0
  local machine_ooms = ooms and ooms.total or 0
  local by_target = 0
  for _, k in ipairs(ooms and ooms.keys or {}) do
    if k.pid == pid then by_target = by_target + (k.count or 0) end
  end
  if cgroup_ooms > 0 or machine_ooms > 0 then
    local ev = diag.lines()
    if cgroup_ooms > 0 then
      ev:add("%d OOM kill%s in the memory cgroup %s during the %.1f s window", cgroup_ooms, cgroup_ooms == 1 and "" or "s", cgroup.path or "?", ctx_window)
    end
    if machine_ooms > 0 then
      local who = diag.lines()
      for i, k in ipairs(ooms.keys or {}) do
        if i > 3 then break end
        who:add("%s (pid %d)%s", k.comm or "?", k.pid or 0, k.pid == pid and ", the target" or "")
      end
      ev:add("%d OOM kill%s on the machine during the run (oom:mark_victim), triggered by %s", machine_ooms,
        machine_ooms == 1 and "" or "s", #who > 0 and table.concat(who, ", ") or "?")
    end
    if cgroup and (cgroup.failcnt or 0) > 0 then ev:add("The cgroup hit its limit %s times (memory.failcnt)", diag.fmt_count(cgroup.failcnt)) end
    if cgroup and cgroup.max_bytes then ev:add("Limit %s, usage %s", diag.fmt_bytes(cgroup.max_bytes), diag.fmt_bytes(cgroup.current_bytes)) end
    local n = cgroup_ooms > 0 and cgroup_ooms or machine_ooms
    local mine = cgroup_ooms > 0 or by_target > 0
    return (diag.verdict("oom-kill", mine and "critical" or "warning",
      mine and string.format("OOM killer: %d process%s killed%s", n, n == 1 and "" or "es",
        cgroup_ooms > 0 and " in the target's memory cgroup" or ", the target triggering it")
        or string.format("OOM killer: %d process%s killed elsewhere on the machine", n, n == 1 and "" or "es"), ev,
      { "Which process: dmesg | grep -i 'killed process' (or journalctl -k)",
        "The verdicts above say what grows; raise the limit only if the working set is legitimately larger" }))
  end
  if cgroup and (cgroup.failcnt or 0) > 0 then
    -- reaching the limit without a kill: reclaim under the limit (page cache, swap)
    return (diag.verdict("at-limit", "warning",
      string.format("The memory cgroup hit its limit %s times in the window (reclaiming to stay under it)", diag.fmt_count(cgroup.failcnt)),
      { string.format("memory.failcnt +%s; limit %s, usage %s", diag.fmt_count(cgroup.failcnt), diag.fmt_bytes(cgroup.max_bytes), diag.fmt_bytes(cgroup.current_bytes)) },
      { "Memory pressure slows the process (reclaim, refaults): check the memory pressure and what grows" }))
  end
  if not ooms and not cgroup then return nil end
  return diag.ruled_out("oom-kill", "no OOM kill: %s in the memory cgroup, %s on the machine during the window",
    cgroup and tostring(cgroup_ooms) or "n/a", ooms and tostring(machine_ooms) or "n/a")
end

-- ---- host-wide: the kernel's slab caches and the page cache ------------------------------------

local kwin = (kmem and kmem.wall_s) or ctx_window
local slab = kmem and kmem.slab
local vmstat, meminfo = kmem and kmem.vmstat, kmem and kmem.meminfo

local function slab_rate(c) return c.bytes_per_s or ((kwin > 0) and c.delta_bytes / kwin) or 0 end

-- What usually fills a cache, by its name: where to look next.
local function slab_hint(name)
  if name:find("^dentry") or name:find("inode_cache$") or name:find("^inode") or name:find("^ext4_") or name:find("^xfs_") or name:find("^btrfs_") then
    return "Files or directories being created and kept (or looked up: dentries): find the directory that grows (df -i; du --inodes) and who writes there"
  end
  if name:find("sock") or name:find("^TCP") or name:find("^UDP") or name:find("^RAW") or name:find("^skbuff") or name:find("^request_sock") then
    return "Sockets opened and not closed: ss -s, and per process ls -l /proc/PID/fd | grep -c socket"
  end
  if name:find("^filp") or name:find("^eventpoll") or name:find("^eventfd") or name:find("^signalfd") or name:find("^anon_inode") or name:find("^pid") then
    return "Open file descriptors or processes accumulating: ls /proc/*/fd | wc -l per process, ps -e | wc -l"
  end
  if name:find("^kmalloc") or name:find("^dma%-kmalloc") then
    return string.format("A kernel allocation of that size class: by call site, bpftrace -e 'tracepoint:kmem:kmalloc /args->bytes_alloc <= %s/ { @[kstack(6)] = sum(args->bytes_alloc) }'",
      name:match("(%d+)$") or "N")
  end
  return "A driver or kernel subsystem allocating objects of that cache: kmemleak, or kmem:kmem_cache_alloc by call site"
end

-- The kernel_allocs sites that fill cache c: kmem_cache_alloc's cache by name, kmalloc's by size
-- class (kmalloc-64, kmalloc-cg-64, kmalloc-rcl-64 ...: the object size). Kernels before 6.2 name
-- no cache in kmem_cache_alloc: such a site (unnamed_cache) is matched by the cache's object size,
-- and the second value says so. Most bytes held first.
local function sites_of(c)
  local out, by_size = diag.lines(), false
  local class = c.name:find("kmalloc") and tonumber(c.name:match("(%d+)$"))
  for _, st in ipairs(kallocs and kallocs.sites or {}) do
    local named = st.cache == c.name or (not st.cache and not st.unnamed_cache and class and st.object_size == class)
    local sized = st.unnamed_cache and not class and st.object_size == c.object_size
    if (st.held_bytes or 0) > 0 and (named or sized) then
      out:add(st)
      by_size = by_size or sized
    end
  end
  return out, by_size
end
local function site_fn(st) return (st.site:gsub("%+0x%x+$", "")) end

-- Slab caches that grew over the window (at most three verdicts); host-wide only.
local function kernel_slab_growth()
  if not slab then return nil end
  local slab_grown, found = diag.lines(), diag.lines()
  for _, c in ipairs(slab and slab.grown or {}) do
    if (c.delta_bytes or 0) >= T.slab_min and slab_rate(c) >= T.slab_rate then slab_grown:add(c) end
  end
  for i = 1, math.min(#slab_grown, 3) do
    local c = slab_grown[i]
    local ev = diag.lines(
      string.format("%s: %s → %s over the %.1f s window (%s); %s objects of %s, %s%s in the window", c.name,
        diag.fmt_bytes(c.bytes - c.delta_bytes), diag.fmt_bytes(c.bytes), kwin, diag.fmt_byte_rate(slab_rate(c)),
        diag.fmt_count(c.objects), diag.fmt_bytes(c.object_size), (c.objects_delta or 0) >= 0 and "+" or "",
        diag.fmt_count(c.objects_delta or 0)))
    if c.new then ev:add("The cache appeared during the window (a module or subsystem created it)") end
    local filled, by_size = sites_of(c)
    if by_size then
      ev:add("This kernel's kmem:kmem_cache_alloc names no cache (before 6.2): its call sites below are those allocating objects of this cache's size")
    end
    for k = 1, math.min(3, #filled) do
      local st = filled[k]
      ev:add("Allocated in the window by %s: %s objects (%s) still held of %s allocated%s", st.site, diag.fmt_count(st.held),
        diag.fmt_bytes(st.held_bytes), diag.fmt_count(st.allocs), kallocs.sampled_1_in and string.format(" (1 in %d recorded, scaled)", kallocs.sampled_1_in) or "")
    end
    local by = filled[1] and filled[1].held_bytes * 4 >= c.delta_bytes and site_fn(filled[1])
    if c.reclaimable == true then
      ev:add("The kernel may reclaim this cache under memory pressure (reclaim_account): it is given back when memory runs short, but growth that does not stop means objects created and kept")
    elseif c.reclaimable == false then
      ev:add("Not reclaimable: its objects are freed only when whoever holds them releases them")
    end
    if slab.total_delta_bytes then
      ev:add("All slab caches: %s at the end, %s%s in the window", diag.fmt_bytes(slab.total_bytes),
        slab.total_delta_bytes >= 0 and "+" or "", diag.fmt_bytes(slab.total_delta_bytes))
    end
    if meminfo and meminfo.sunreclaim_bytes then
      ev:add("/proc/meminfo: SUnreclaim %s (%s), SReclaimable %s (%s), MemAvailable %s", diag.fmt_bytes(meminfo.sunreclaim_bytes),
        diag.fmt_bytes(meminfo.sunreclaim_delta_bytes), diag.fmt_bytes(meminfo.sreclaimable_bytes), diag.fmt_bytes(meminfo.sreclaimable_delta_bytes),
        diag.fmt_bytes(meminfo.mem_available_bytes))
    end
    -- A cache the kernel reclaims under pressure (dentries, inodes of a big directory walk) is no
    -- alarm while the machine has memory to spare: information.
    local spare = meminfo and meminfo.mem_total_bytes and meminfo.mem_total_bytes > 0 and meminfo.mem_available_bytes
      and meminfo.mem_available_bytes * 100 >= T.spare * meminfo.mem_total_bytes
    local sev = (c.reclaimable == true and spare) and "info" or "warning"
    if sev == "info" then
      ev:add("MemAvailable is %s of MemTotal (at least %s): the kernel gives this cache back when memory runs short, so it is no alarm yet",
        diag.fmt_pct(diag.pct(meminfo.mem_available_bytes, meminfo.mem_total_bytes)), diag.fmt_pct(T.spare))
    end
    found:add(diag.verdict("kernel-slab-growth", sev,
      string.format("Kernel slab cache %s grew %s in the window (%s)%s", c.name, diag.fmt_bytes(c.delta_bytes), diag.fmt_byte_rate(slab_rate(c)),
        by and string.format(", allocated in %s()", by) or ""), ev,
      { slab_hint(c.name),
        string.format("Watch it: slabtop -s c, or grep '^%s ' /proc/slabinfo a few seconds apart", c.name),
        "Confirm over a longer window: diagnose memory-growth --duration 60" }))
  end
  if #found > 0 then return found end
  return diag.ruled_out("kernel-slab-growth", "no kernel slab growth: no cache grew %s at %s (all caches %s%s)",
    diag.fmt_bytes(T.slab_min), diag.fmt_byte_rate(T.slab_rate), (slab.total_delta_bytes or 0) >= 0 and "+" or "",
    diag.fmt_bytes(slab.total_delta_bytes))
end

-- Refaults: pages read back soon after eviction. The working set does not fit where it runs.
local refaults = vmstat and ((vmstat.workingset_refault_file or 0) + (vmstat.workingset_refault_anon or 0)) or 0
local refault_rate = kwin > 0 and refaults / kwin or 0
local function working_set()
  if not (vmstat and (vmstat.workingset_refault_file or vmstat.workingset_refault_anon)) then return nil end
  if refault_rate < T.refault then
    return diag.ruled_out("working-set", "the working set fits: %s refaults in %.1f s (%s, under %s)", diag.fmt_count(refaults), kwin,
      diag.fmt_rate(refault_rate), diag.fmt_rate(T.refault))
  end
  local ev = diag.lines(
    string.format("%s refaults in the %.1f s window (%s): %s of file pages, %s of anonymous pages read back soon after they were evicted",
      diag.fmt_count(refaults), kwin, diag.fmt_rate(refault_rate), diag.fmt_count(vmstat.workingset_refault_file or 0),
      diag.fmt_count(vmstat.workingset_refault_anon or 0)))
  if vmstat.pgmajfault or vmstat.pgpgin then
    ev:add("Major faults %s, pages read in %s (/proc/vmstat pgmajfault, pgpgin)", diag.fmt_rate(diag.rate(vmstat.pgmajfault or 0, kwin)),
      diag.fmt_byte_rate(diag.rate((vmstat.pgpgin or 0) * 1024, kwin)))
  end
  if vmstat.pgscan or vmstat.pgsteal then
    ev:add("Reclaim scanned %s pages and reclaimed %s (kswapd and direct)%s", diag.fmt_count(vmstat.pgscan or 0),
      diag.fmt_count(vmstat.pgsteal or 0), (vmstat.allocstall or 0) > 0 and string.format("; %s allocations stalled in direct reclaim", diag.fmt_count(vmstat.allocstall)) or "")
  end
  local where = "in memory"
  -- Whose: the memory cgroups whose refaults grew (v2 counts include descendants: the most specific
  -- cgroup holding at least half of the top one's refaults is named).
  local RC, cg = kmem.refault_cgroups or {}, nil
  for _, c in ipairs(RC) do
    if c.refaults * 2 >= RC[1].refaults and (not cg or #c.path > #cg.path) then cg = c end
  end
  if #RC > 0 then
    local parts = diag.lines()
    for i = 1, math.min(3, #RC) do
      local c = RC[i]
      parts:add("%s %s%s", c.path, diag.fmt_count(c.refaults), c.limit_bytes and string.format(" (limit %s)", diag.fmt_bytes(c.limit_bytes)) or "")
    end
    ev:add("Refaults by memory cgroup (memory.stat): " .. table.concat(parts, ", "))
  end
  if meminfo and meminfo.cached_bytes then
    ev:add("Page cache %s (%s%s in the window); file LRU active %s, inactive %s", diag.fmt_bytes(meminfo.cached_bytes),
      (meminfo.cached_delta_bytes or 0) >= 0 and "+" or "", diag.fmt_bytes(meminfo.cached_delta_bytes),
      diag.fmt_bytes(meminfo.active_file_bytes), diag.fmt_bytes(meminfo.inactive_file_bytes))
  end
  if meminfo and meminfo.mem_available_bytes and meminfo.mem_total_bytes and meminfo.mem_total_bytes > 0 then
    local avail = diag.pct(meminfo.mem_available_bytes, meminfo.mem_total_bytes)
    if avail >= 25 then
      where = "in its memory cgroup's limit"
      ev:add("The machine still has %s available (%s of %s): the evictions come from a memory cgroup's limit smaller than what runs in it, not from the machine's memory",
        diag.fmt_bytes(meminfo.mem_available_bytes), diag.fmt_pct(avail), diag.fmt_bytes(meminfo.mem_total_bytes))
    else
      ev:add("The machine has %s available (%s of %s): it is short of memory", diag.fmt_bytes(meminfo.mem_available_bytes),
        diag.fmt_pct(avail), diag.fmt_bytes(meminfo.mem_total_bytes))
    end
  end
  local title
  if where ~= "in memory" and cg and cg.path ~= "/" then
    title = string.format("Working set larger than the memory limit of cgroup %s%s: %s refaults/s", cg.path,
      cg.limit_bytes and string.format(" (%s)", diag.fmt_bytes(cg.limit_bytes)) or "", diag.fmt_count(refault_rate))
  else
    title = string.format("Working set larger than %s: %s refaults/s, page cache %s", where == "in memory" and "memory" or "a memory cgroup's limit",
      diag.fmt_count(refault_rate), meminfo and diag.fmt_bytes(meminfo.cached_bytes) or "n/a")
  end
  return (diag.verdict("working-set", refault_rate >= 10 * T.refault and "critical" or "warning", title, ev,
    { where == "in memory" and "Give the machine more memory or run less on it; what holds memory: the slab caches and processes (ps -eo rss,comm --sort=-rss | head)"
        or (cg and cg.path ~= "/") and string.format("Raise the memory limit of %s%s above its working set, or make what runs there read less", cg.path,
          cg.limit_bytes and string.format(" (now %s)", diag.fmt_bytes(cg.limit_bytes)) or "")
        or "Which cgroup: grep workingset_refault /sys/fs/cgroup/*/memory.stat (v2, with descendants; v1: each cgroup's own); raise its limit or shrink its working set",
      "Which files: cachestat / fincore on the data files the service reads" }))
end

-- Nothing found: growth no rule attributes, or no alarm (host-wide, or for the process).
local function quiet_verdict()
  if growing then
    return (diag.verdict("growth", "warning", string.format("Memory grows %s; its cause is not attributed", diag.fmt_byte_rate(rss_rate)),
      { rss_line() }, { string.format("Measure longer: diagnose memory-growth --pid %s --duration 60", pid) }))
  elseif host then
    local ev = diag.lines()
    if slab then
      ev:add("Slab caches: %s at the end, %s%s over the %.1f s window; no cache grew %s or more", diag.fmt_bytes(slab.total_bytes),
        (slab.total_delta_bytes or 0) >= 0 and "+" or "", diag.fmt_bytes(slab.total_delta_bytes), kwin, diag.fmt_bytes(T.slab_min))
    end
    if vmstat then ev:add("Page-cache refaults %s (under %s)", diag.fmt_rate(refault_rate), diag.fmt_rate(T.refault)) end
    if meminfo and meminfo.mem_available_bytes then
      ev:add("MemAvailable %s of %s", diag.fmt_bytes(meminfo.mem_available_bytes), diag.fmt_bytes(meminfo.mem_total_bytes))
    end
    return (diag.verdict("ok", "ok", "No kernel slab growth and no page-cache thrashing in the window", ev,
      { "For one process's memory: diagnose memory-growth --pid PID", "If it grows over hours, measure longer: diagnose memory-growth --duration 120" }))
  else
    local ev = diag.lines()
    local rl = rss_line()
    if rl then ev:add(rl) end
    if allocs then
      ev:add("%s allocations (%s, %s) and %s frees in %.1f s; %s outstanding at the end, none kept beyond the window's first half by any call path",
        diag.fmt_count(allocs.allocs), diag.fmt_bytes(allocs.alloc_bytes), diag.fmt_rate(diag.rate(allocs.allocs, window)),
        diag.fmt_count(allocs.free_calls), window, diag.fmt_bytes(allocs.outstanding_bytes))
    end
    local busy = allocs and window > 0 and allocs.allocs / window >= 1000
    return (diag.verdict("ok", "ok",
      busy and string.format("Bounded churn: %s allocations/s, all freed, memory flat — no leak", diag.fmt_count(allocs.allocs / window))
        or "No memory growth and no leak in the window",
      ev, { string.format("If memory grows over hours, measure longer: diagnose memory-growth --pid %s --duration 120", pid) }))
  end
end

-- ---- incomplete data -------------------------------------------------------------------------

local function incomplete_data()
  local partial = diag.partial()
  local note = partial.note
  if not allocs and not host then note("allocs missing", "allocs: no results: no call path holds the heap (the page faults are the only call paths)", "warning") end
  if not faults and not host then note("faults missing", "faults: no results: where new pages are touched is unknown") end
  if host and not kmem then note("kmem missing", "kmem: no results: the kernel's slab caches and the page cache not assessed", "warning") end
  if host and not kallocs then note("kallocs missing", "kallocs: no results: the kernel code that fills a cache is not named") end
  if kallocs and kallocs.sampled_1_in then
    note(string.format("kernel allocations 1 in %d", kallocs.sampled_1_in), string.format("kallocs: 1 kernel allocation in %d recorded (the machine's allocation rate was over the budget): held objects and bytes by call site are estimates", kallocs.sampled_1_in))
  end
  if kallocs and (kallocs.untracked or 0) > 0 then
    note(string.format("kallocs: %s untracked", diag.fmt_count(kallocs.untracked)), string.format("kallocs: %s blocks not recorded (max_live %s reached): held bytes by call site are a lower bound", diag.fmt_count(kallocs.untracked), diag.fmt_count(kallocs.max_live)))
  end
  if kmem and not slab then
    note("slab caches not read", string.format("kmem: %s: slab growth not assessed (root reads /proc/slabinfo)", kmem.slab_error or "no slab results"), "warning")
  end
  if slab and (slab.malformed_lines or 0) > 0 then
    note(string.format("slabinfo: %s lines skipped", diag.fmt_count(slab.malformed_lines)), string.format("kmem: %s lines of /proc/slabinfo were not cache lines and were skipped", diag.fmt_count(slab.malformed_lines)))
  end
  if not context then note("context missing", "context: no results: RSS and the cgroup limit unknown", "warning") end
  if not ooms then note("ooms missing", "ooms: no results: OOM kills on the machine not counted") end
  if allocs and allocs.sampled_1_in then
    note(string.format("allocations 1 in %d", allocs.sampled_1_in), string.format("allocs: 1 allocation in %d recorded (the allocator's call rate was over the budget): bytes and counts are estimates", allocs.sampled_1_in))
  end
  if allocs and (allocs.untracked or 0) > 0 then
    note(string.format("allocs: %s untracked", diag.fmt_count(allocs.untracked)), string.format("allocs: %s blocks not tracked (max_outstanding %s reached): outstanding bytes are a lower bound", diag.fmt_count(allocs.untracked), diag.fmt_count(allocs.max_outstanding)), "warning")
  end
  if allocs and (allocs.dropped or 0) > 0 then
    note(string.format("allocs: %s dropped", diag.fmt_count(allocs.dropped)), string.format("allocs: %s blocks not counted by stack (a map was full)", diag.fmt_count(allocs.dropped)))
  end
  if faults and faults.sampled_1_in then
    note(string.format("faults 1 in %d", faults.sampled_1_in), string.format("faults: 1 fault in %d recorded (budget)", faults.sampled_1_in))
  end
  if faults and (faults.dropped or 0) > 0 then
    note(string.format("faults: %s dropped", diag.fmt_count(faults.dropped)), string.format("faults: %s faults not counted by stack", diag.fmt_count(faults.dropped)))
  end
  -- page-fault stacks that never leave the allocator: the caller of malloc is unknown
  if faults and (faults.faults or 0) > 0 then
    local stuck = 0
    for _, s in ipairs(faults.stacks or {}) do
      if #(s.user or {}) > 0 and not own_of(s) then stuck = stuck + (s.count or 0) end
    end
    if stuck * 2 > faults.faults then
      note("fault stacks stop in the allocator", string.format("faults: %s of page faults have no frame above the allocator (unwinding stopped in it): who called malloc is unknown there", diag.fmt_pct(diag.pct(stuck, faults.faults))))
    end
  end
  partial.stop(run.stop_reason, ctx_window, context and context.exited)
  return partial.verdict({ "Verdicts may be partial" })
end

-- ---- report sections -------------------------------------------------------------------------

-- Memory over the window, the slab caches that grew, page cache and reclaim, the heap held and
-- the page faults by call path.
local function add_sections(answer)
  if memory then
    local rows = diag.lines()
    local f = fit(memory.rss_series)
    if memory.rss_bytes then
      rows:add({ "RSS", diag.fmt_bytes(memory.rss_bytes), diag.fmt_bytes(rss_delta), diag.fmt_byte_rate(rss_rate), f and string.format("%.2f", f.r2) or "" })
    end
    if memory.rss_anon_bytes then rows:add({ "  anonymous", diag.fmt_bytes(memory.rss_anon_bytes), diag.fmt_bytes(memory.rss_anon_delta_bytes), "", "" }) end
    if memory.rss_file_bytes then rows:add({ "  file-backed", diag.fmt_bytes(memory.rss_file_bytes), diag.fmt_bytes(memory.rss_file_delta_bytes), "", "" }) end
    if memory.rss_shmem_bytes then rows:add({ "  shared memory", diag.fmt_bytes(memory.rss_shmem_bytes), diag.fmt_bytes(memory.rss_shmem_delta_bytes), "", "" }) end
    if cgroup and cgroup.current_bytes then
      local cf = fit(cgroup.current_series)
      rows:add({ "cgroup usage", diag.fmt_bytes(cgroup.current_bytes), diag.fmt_bytes(cgroup.current_delta_bytes),
        diag.fmt_byte_rate(cgroup.current_slope_bytes_per_s), cf and string.format("%.2f", cf.r2) or "" })
      rows:add({ "cgroup limit", cgroup.limited and diag.fmt_bytes(cgroup.max_bytes) or "none", "", "", "" })
    end
    if allocs then rows:add({ "heap held (allocated in the window)", diag.fmt_bytes(allocs.outstanding_bytes), "", diag.fmt_byte_rate(heap_rate), "" }) end
    if host and memory.pressure then
      rows:add({ "memory pressure, some / full (share of the window)", string.format("%s / %s", diag.fmt_pct(memory.pressure.some_pct or 0),
        diag.fmt_pct(memory.pressure.full_pct or 0)), "", "", "" })
    end
    if #rows > 0 then answer.section(diag.table(string.format("Memory over the window (%.1f s)", ctx_window), { "what", "at the end", "change", "per second", "R²" }, rows)) end
  end
  if slab then
    local rows = diag.lines()
    for i = 1, math.min(T.top_n, #(slab.grown or {})) do
      local c = slab.grown[i]
      rows:add({ c.name, diag.fmt_bytes(c.bytes), "+" .. diag.fmt_bytes(c.delta_bytes), diag.fmt_byte_rate(slab_rate(c)),
        ((c.objects_delta or 0) >= 0 and "+" or "") .. diag.fmt_count(c.objects_delta or 0), diag.fmt_bytes(c.object_size),
        c.reclaimable == true and "yes" or c.reclaimable == false and "no" or "?" })
    end
    answer.section(diag.table(string.format("Slab caches that grew over the window (%.1f s; all caches %s, %s%s)", kwin, diag.fmt_bytes(slab.total_bytes),
      (slab.total_delta_bytes or 0) >= 0 and "+" or "", diag.fmt_bytes(slab.total_delta_bytes)),
      { "cache", "at the end", "change", "per second", "objects", "object", "reclaimable" }, rows))
  end
  if vmstat and meminfo then
    local function per_s(n) return diag.fmt_rate(diag.rate(n or 0, kwin)) end
    answer.section(diag.table(string.format("Page cache and reclaim over the window (%.1f s)", kwin), { "what", "in the window", "per second / at the end" }, {
      { "refaults (file + anonymous)", diag.fmt_count(refaults), diag.fmt_rate(refault_rate) },
      { "major faults", diag.fmt_count(vmstat.pgmajfault or 0), per_s(vmstat.pgmajfault) },
      { "paged in", diag.fmt_bytes((vmstat.pgpgin or 0) * 1024), diag.fmt_byte_rate(diag.rate((vmstat.pgpgin or 0) * 1024, kwin)) },
      { "reclaim scanned / reclaimed (pages)", string.format("%s / %s", diag.fmt_count(vmstat.pgscan or 0), diag.fmt_count(vmstat.pgsteal or 0)), "" },
      { "page cache (Cached)", diag.fmt_bytes(meminfo.cached_delta_bytes), diag.fmt_bytes(meminfo.cached_bytes) },
      { "file LRU active / inactive", string.format("%s / %s", diag.fmt_bytes(meminfo.active_file_delta_bytes), diag.fmt_bytes(meminfo.inactive_file_delta_bytes)),
        string.format("%s / %s", diag.fmt_bytes(meminfo.active_file_bytes), diag.fmt_bytes(meminfo.inactive_file_bytes)) },
      { "MemAvailable", diag.fmt_bytes(meminfo.mem_available_delta_bytes), diag.fmt_bytes(meminfo.mem_available_bytes) },
    }))
  end
  if allocs then
    local rows = diag.lines()
    for i = 1, math.min(T.top_n, #(allocs.stacks or {})) do
      local s = allocs.stacks[i]
      local first_half = first_half_allocs(s)
      rows:add({ diag.fmt_bytes(s.weight), diag.fmt_count(s.count), diag.fmt_count(s.allocs), diag.fmt_count(s.frees),
        diag.fmt_pct(first_half > 0 and math.min(100, (s.old_count or 0) * 100 / first_half) or 0),
        string.format("%.1f s", (s.oldest_age_ms or 0) / 1000), path_of_stack(s) })
    end
    if #rows > 0 then
      answer.section(diag.table(string.format("Heap held at the end, by allocating call path (%s allocations/s, %s frees/s)",
        diag.fmt_count(diag.rate(allocs.alloc_calls, window) or 0), diag.fmt_count(diag.rate(allocs.free_calls, window) or 0)),
        { "held", "blocks", "allocated", "freed", "kept (1st half)", "oldest", "call path" }, rows))
    end
  end
  if faults then
    local rows = diag.lines()
    for i = 1, math.min(T.top_n, #(faults.stacks or {})) do
      local s = faults.stacks[i]
      rows:add({ diag.fmt_bytes(s.weight), diag.fmt_count(s.count), path_of_stack(s) })
    end
    if #rows > 0 then
      answer.section(diag.table(string.format("Page faults by call path (%s faults, %s)", diag.fmt_count(faults.faults), diag.fmt_bytes(faults.bytes)),
        { "touched", "faults", "call path" }, rows))
    end
  end
end

-- ---- main: the hypotheses in order, worst first -------------------------------------------------

local answer = diag.answer()
for _, hypothesis in ipairs({ leak_verdicts, growth_verdict, rss_flat, growth_outside_heap, heap_growth, growth_without_allocs,
  near_limit, oom_kill, kernel_slab_growth, working_set }) do
  answer.add(hypothesis())
end
if #answer.verdicts == 0 then answer.add(quiet_verdict()) end
answer.add(incomplete_data())
-- worst first; the order of equal ones is the order above
answer.verdicts = diag.worst_first(answer.verdicts)
add_sections(answer)

-- the key figures `diagnose watch` exports (nil: not measured)
answer.metric("rss_growth_bytes_per_second", rss_rate, "Resident memory growth over the window")
-- The heap's growth that stays: bytes allocated in the window's first half and still held at its
-- end, per second of that half. outstanding_bytes / window would count every block of a standing
-- working set replaced during the window (the free of its predecessor, allocated before the window,
-- is not matched): a cache overwritten in place would look like growth.
local kept_rate = (allocs and window > 0 and allocs.old_bytes) and allocs.old_bytes / (window / 2) or nil
answer.metric("heap_growth_bytes_per_second", kept_rate,
  "Heap allocated in the window's first half and still held at its end, per second of that half")
answer.metric("rss_bytes", memory and memory.rss_bytes, "Resident memory at the end of the window")

return answer.result()
