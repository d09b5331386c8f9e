-- memory-growth.lua — verdicts for recipes/memory-growth.yaml: is the target's memory growth a
-- leak, where is it allocated, and how long until its memory cgroup's limit?
--
-- Reads results.allocs (allocations), results.faults (page_faults), results.ooms (tracepoint_count
-- of oom:mark_victim, machine-wide), results.context (proc_context, memory section), results.kmem
-- (kernel_memory: slab caches, page cache; host-wide runs only), results.kallocs (kernel_allocs:
-- slab allocations by call site; host-wide runs only), run and thresholds. With --pid
-- the target's memory; without it (run.target null) the host's: the recipe then runs neither
-- allocs nor faults (`when: target`). Any probe may be missing: the verdicts then
-- say what could not be assessed.
--
-- How it decides. Every figure is over the window (deltas, least-squares slopes of the readings
-- in it), never a rolling average.
--   leak            a call path that still holds >= leak_kept_pct of the blocks it allocated in
--                   the window's first half (a churning path frees nearly all of them), at least
--                   leak_min_old_bytes in leak_min_old_count blocks. The first half's allocations:
--                   the path's allocations / 2 (a steady rate), at most what it still holds from
--                   then plus all it freed. Named by the first frame of the
--                   target's own code above the allocator, with bytes, blocks, rate and age.
--                   warning; critical when the memory limit is near (below). Also a leak: a path
--                   whose reallocs grew its blocks by >= leak_min_old_bytes in the window and that
--                   still holds at least half of that growth (a buffer that only grows: its block is
--                   always young, each realloc moves it).
--   heap-growth     RSS grows, the heap holds what explains it, and no path is a leak by the rules
--                   above (a cache filling, many paths each keeping a little): warning, with the
--                   paths that hold the most.
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

local function th(name, default) return diag.number(thresholds, name, default) end

local T = {
  kept = th("leak_kept_pct", 50),
  min_old_bytes = th("leak_min_old_bytes", 65536),
  min_old_count = th("leak_min_old_count", 16),
  growth = th("growth_min_bytes_per_s", 65536),
  explains = th("heap_explains_pct", 25),
  limit_crit = th("limit_crit_s", 300),
  limit_warn = th("limit_warn_s", 3600),
  top_n = th("top_n", 8),
  slab_min = th("slab_growth_min_bytes", 16777216),
  slab_rate = th("slab_growth_min_bytes_per_s", 1048576),
  refault = th("refault_warn_per_s", 1000),
  spare = th("reclaimable_spare_pct", 10),
}

local A, F, C, OO, K, KA = results.allocs, results.faults, results.context, results.ooms, results.kmem, results.kallocs
local host = diag.get(run, "target", "pid") == nil
local M = C and C.memory
local CG = M and M.cgroup
local pid = diag.get(run, "target", "pid") or (C and C.pid) or "PID"
local window = (A and A.window_s) or (C and C.wall_s) or run.duration_s or 0
local ctx_window = (C and C.wall_s) or window
local verdicts, report = {}, {}

local function push(t, x) t[#t + 1] = x end
local function sub(fmt, ...) return string.format(fmt, ...) end

-- 512 → "512 B", 1536 → "1.5 KiB", 3.2e6 → "3.1 MiB".
local function fmt_bytes(b)
  if b == nil then return "n/a" end
  local a, units = math.abs(b), { "KiB", "MiB", "GiB", "TiB" }
  if a < 1024 then return string.format("%.0f B", b) end
  local v, u = b, "B"
  for _, name in ipairs(units) do
    if math.abs(v) < 1024 then break end
    v, u = v / 1024, name
  end
  if math.abs(v) >= 99.95 then return string.format("%.0f %s", v, u) end
  return (string.format("%.1f", v):gsub("%.0$", "")) .. " " .. u
end
local function fmt_rate_b(bps) return bps and (fmt_bytes(bps) .. "/s") or "n/a" end
local function fmt_dur(s)
  if s == nil then return "n/a" end
  if s < 120 then return sub("%.0f s", s) end
  if s < 7200 then return sub("%.1f min", s / 60) end
  return sub("%.1f h", s / 3600)
end

-- ---- call paths ---------------------------------------------------------------------------

-- Frames of the allocator and of the C library's copying/initialising routines: the target's own
-- code is the first frame above them.
local ALLOCATOR = { "^_int_", "^__libc_", "^malloc", "^calloc$", "^realloc", "^free$", "^cfree$",
  "^posix_memalign$", "^aligned_alloc$", "^memalign$", "^valloc$", "^pvalloc$", "^_mid_memalign$",
  "^sysmalloc$", "^tcache_", "^arena_", "^__GI_", "^__memset", "^__memcpy", "^__memmove",
  "^memset$", "^memcpy$", "^memmove$", "^__strdup$", "^strdup$", "^strndup$", "^__strndup$",
  "^operator new", "^operator delete", "^je_", "^tc_", "^__default_morecore", "^_dl_",
  "^alloc_perturb$", "^__posix_memalign" }

local function is_allocator(f)
  for _, p in ipairs(ALLOCATOR) do
    if f:find(p) then return true end
  end
  return false
end

-- The target's own function nearest the allocation: the first named frame (leaf first) that is
-- not the allocator's. nil when the stack has none (it stops in the allocator).
local function own_frame(user)
  for _, f in ipairs(user or {}) do
    if diag.symbolized(f) and not is_allocator(f) then return f end
  end
  return nil
end

local function path_of(s)
  local p = diag.call_path(s.user or {}, 8)
  if p == "" then p = "(no user stack)" end
  return p
end

-- ---- the window's memory figures ------------------------------------------------------------

local rss_delta = M and M.rss_delta_bytes
local rss_rate = (rss_delta and ctx_window > 0) and rss_delta / ctx_window or nil
local heap_rate = (A and window > 0) and (A.outstanding_bytes or 0) / window or nil

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

-- ---- leaks -----------------------------------------------------------------------------------

-- Blocks a path allocated in the window's first half: half of its allocations at a steady rate,
-- but never more than it still holds from then plus everything it freed (a leaking path that
-- frees nothing allocated exactly what it holds; under tracing a workload's rate is not steady).
local function first_half_allocs(s)
  return math.min((s.allocs or 0) / 2, (s.old_count or 0) + (s.frees or 0))
end

local leaks = {}
local churn = { allocs = 0, bytes = 0 }
if A then
  for _, s in ipairs(A.stacks or {}) do
    local first_half = first_half_allocs(s)
    local kept = first_half > 0 and (s.old_count or 0) * 100 / first_half or 0
    if kept > 100 then kept = 100 end
    local grown = s.realloc_growth_bytes or 0
    if kept >= T.kept and (s.old_bytes or 0) >= T.min_old_bytes and (s.old_count or 0) >= T.min_old_count then
      push(leaks, { s = s, kept = kept })
    elseif grown >= T.min_old_bytes and (s.weight or 0) * 2 >= grown then
      push(leaks, { s = s, kept = kept, grown = grown })
    else
      churn.allocs = churn.allocs + (s.allocs or 0)
      churn.bytes = churn.bytes + (s.alloc_bytes or 0)
    end
  end
  table.sort(leaks, function(a, b)
    if a.s.weight ~= b.s.weight then return a.s.weight > b.s.weight end
    return path_of(a.s) < path_of(b.s)
  end)
end

-- ---- time to the limit -------------------------------------------------------------------------

local limit
if CG and CG.limited and CG.max_bytes and CG.current_bytes then
  local f = fit(CG.current_series)
  local slope = CG.current_slope_bytes_per_s or (f and f.slope)
  local left = CG.max_bytes - CG.current_bytes
  limit = { max = CG.max_bytes, current = CG.current_bytes, left = left, slope = slope, fit = f }
  if slope and slope >= T.growth and left > 0 then limit.eta_s = left / slope end
end

local function limit_line()
  if not limit or not limit.eta_s then return nil end
  local f = limit.fit
  return sub("At the measured slope (%s over %s, %s readings, R² %.2f) the memory cgroup reaches its limit of %s (now %s, %s left) in %s",
    fmt_rate_b(limit.slope), f and sub("%.1f s", f.span) or sub("%.1f s", ctx_window), f and f.n or "?",
    f and f.r2 or 0, fmt_bytes(limit.max), fmt_bytes(limit.current), fmt_bytes(limit.left), fmt_dur(limit.eta_s))
end

local function limit_severity()
  if not limit or not limit.eta_s then return nil end
  if limit.eta_s < T.limit_crit then return "critical" end
  if limit.eta_s < T.limit_warn then return "warning" end
  return "info"
end

-- ---- verdicts ----------------------------------------------------------------------------------

local function rss_line()
  if not M or not rss_delta then return nil end
  local f = fit(M.rss_series)
  return sub("RSS %s → %s over %.1f s (%s%s)", fmt_bytes((M.rss_bytes or 0) - rss_delta), fmt_bytes(M.rss_bytes),
    ctx_window, fmt_rate_b(rss_rate), f and sub("; slope %s, R² %.2f over %d readings", fmt_rate_b(f.slope), f.r2, f.n) or "")
end

for i = 1, math.min(#leaks, 3) do
  local l, s = leaks[i], leaks[i].s
  local own = own_frame(s.user)
  local name = diag.fn(own or (s.user or {})[1] or "?")
  local ev, title, rate
  if l.grown then
    rate = window > 0 and l.grown / window or 0
    title = sub("Leak: %s grows a buffer with realloc, %s over the window (%s), now %s in %s block%s", name,
      fmt_bytes(l.grown), fmt_rate_b(rate), fmt_bytes(s.weight), diag.fmt_count(s.count), s.count == 1 and "" or "s")
    ev = {
      sub("%s's reallocs grew its blocks by %s during the %.1f s window (%s calls) and it still holds %s: a buffer that only grows (each realloc moves it, so its block is always young)",
        name, fmt_bytes(l.grown), window, diag.fmt_count(s.allocs or 0), fmt_bytes(s.weight)),
      "Call path: " .. path_of(s),
    }
  else
    rate = window > 0 and s.weight / window or 0
    local recent = window > 0 and (s.weight - (s.old_bytes or 0)) / (window / 2) or 0
    title = sub("Leak: %s keeps %s (%s blocks), growing %s", name, fmt_bytes(s.weight), diag.fmt_count(s.count), fmt_rate_b(rate))
    ev = {
      sub("%s holds %s in %s blocks allocated during the %.1f s window and not freed: %s of its %s allocations (%s) were freed",
        name, fmt_bytes(s.weight), diag.fmt_count(s.count), window,
        diag.fmt_count(s.frees or 0), diag.fmt_count(s.allocs or 0), fmt_bytes(s.alloc_bytes)),
      sub("It kept %s of what it allocated in the window's first half: %s in %s blocks older than %.1f s; the oldest %.1f s old",
        diag.fmt_pct(l.kept), fmt_bytes(s.old_bytes), diag.fmt_count(s.old_count), window / 2, (s.oldest_age_ms or 0) / 1000),
      sub("Growing %s over the window, %s in its second half", fmt_rate_b(rate), fmt_rate_b(recent)),
      "Call path: " .. path_of(s),
    }
  end
  local rl = rss_line()
  if rl then push(ev, rl) end
  local ll = limit_line()
  if ll then push(ev, ll) end
  if A.sampled_1_in then push(ev, sub("Allocations recorded 1 in %d (budget): figures are scaled estimates", A.sampled_1_in)) end
  local sev = limit_severity() == "critical" and "critical" or "warning"
  push(verdicts, diag.verdict("leak", sev, title, ev,
    { own and (l.grown and sub("Bound the buffer %s grows (rotate, flush or cap it), or free it when done", diag.fn(own))
        or sub("Find where the blocks allocated in %s should be freed (its callers, the structure they are stored in), or bound that structure", diag.fn(own)))
        or "Find where the blocks allocated on this path should be freed",
      sub("Confirm over a longer window: diagnose memory-growth --pid %s --duration 60 (a cache filling to a bound stops being kept)", pid) }))
end

-- Growth the heap does not explain.
local growing = rss_rate and rss_rate >= T.growth
if growing and A and heap_rate and heap_rate * 100 < T.explains * rss_rate then
  local ev = { rss_line(), sub("The heap's outstanding blocks grew at most %s (%s of the RSS growth): the allocator does not explain it",
    fmt_rate_b(heap_rate), diag.fmt_pct(diag.pct(heap_rate, rss_rate))) }
  local anon, file, shmem = M.rss_anon_delta_bytes, M.rss_file_delta_bytes, M.rss_shmem_delta_bytes
  -- Anonymous growth: who touches the new pages says whether the program maps memory itself or
  -- the allocator grows without holding more blocks (fragmentation, freed memory kept).
  local in_alloc = 0
  for _, st in ipairs(F and F.stacks or {}) do
    local leaf = (st.user or {})[1]
    if leaf and is_allocator(leaf) and (leaf:find("^_int_") or leaf:find("^sysmalloc") or leaf:find("malloc") or leaf:find("^tcache_")) then
      in_alloc = in_alloc + (st.weight or 0)
    end
  end
  local what = "anonymous memory outside malloc (mmap or brk by the program itself)"
  if F and (F.bytes or 0) > 0 and in_alloc * 2 >= F.bytes then
    what = "anonymous memory the allocator grows without holding more blocks (fragmentation, freed memory not returned)"
    push(ev, sub("%s of the page faults are inside the allocator while it holds no more blocks: its own growth", diag.fmt_pct(diag.pct(in_alloc, F.bytes))))
  end
  if anon or file or shmem then
    push(ev, sub("Of the RSS change: anonymous %s, file-backed %s, shared memory %s", fmt_bytes(anon), fmt_bytes(file), fmt_bytes(shmem)))
    if (file or 0) > (anon or 0) and (file or 0) >= (shmem or 0) then
      what = "file mappings or page cache mapped into the process"
    elseif (shmem or 0) > (anon or 0) then
      what = "shared memory (tmpfs, shm, memfd)"
    end
  end
  local own
  local top = F and (F.stacks or {})[1]
  if top then
    own = own_frame(top.user)
    push(ev, sub("New pages are first touched in %s: %s of %s of page faults (%s)", diag.fn(own or (top.user or {})[1] or "?"),
      fmt_bytes(top.weight), fmt_bytes(F.bytes), path_of(top)))
  end
  push(verdicts, diag.verdict("growth-outside-heap", "warning",
    sub("Memory grows %s outside the allocator: %s%s", fmt_rate_b(rss_rate), what, own and (", touched in " .. diag.fn(own)) or ""),
    ev,
    { sub("Which mappings grow: compare two readings of /proc/%s/smaps (or pmap -x %s) a few seconds apart", pid, pid),
      "mmap'd files and page cache are reclaimable; anonymous mmap is not: check the code that maps it",
      "Fragmentation (freed blocks not returned): malloc_trim(0), MALLOC_ARENA_MAX, or a different allocator" }))
end

-- Growth the heap explains, but no path keeps it by the rules above.
if growing and A and #leaks == 0 and heap_rate and heap_rate * 100 >= T.explains * rss_rate then
  local ev = { rss_line(), sub("The heap holds %s allocated during the %.1f s window (%s); no call path kept most of what it allocated in the window's first half",
    fmt_bytes(A.outstanding_bytes), window, fmt_rate_b(heap_rate)) }
  for i = 1, math.min(3, #(A.stacks or {})) do
    local s = A.stacks[i]
    push(ev, sub("%s in %s blocks (%s allocated, %s freed): %s", fmt_bytes(s.weight), diag.fmt_count(s.count),
      diag.fmt_count(s.allocs or 0), diag.fmt_count(s.frees or 0), path_of(s)))
  end
  push(verdicts, diag.verdict("heap-growth", "warning",
    sub("Memory grows %s in the heap, no single call path keeps it", fmt_rate_b(rss_rate)), ev,
    { sub("A cache or queue filling, or many paths each keeping a little: measure longer (diagnose memory-growth --pid %s --duration 60) to see what is still kept", pid) }))
end

-- Without allocations, the page faults are the only call path: growth by where pages are touched.
if growing and not A and F and (F.stacks or {})[1] then
  local top = F.stacks[1]
  local own = own_frame(top.user)
  push(verdicts, diag.verdict("growth", "warning",
    sub("Memory grows %s; new pages are first touched in %s", fmt_rate_b(rss_rate), diag.fn(own or (top.user or {})[1] or "?")),
    { rss_line(), sub("%s of %s of page faults on %s", fmt_bytes(top.weight), fmt_bytes(F.bytes), path_of(top)),
      "A page fault names the code that first touches a page, not the owner of every block on it: in a heap shared with other allocations it may be any caller of malloc" },
    { sub("Record the allocations: diagnose memory-growth --pid %s (the allocations probe was missing here)", pid) }))
end

-- Time to the limit, on its own when no leak verdict carried it.
if limit and limit.eta_s and #leaks == 0 then
  push(verdicts, diag.verdict("near-limit", limit_severity(),
    sub("Memory cgroup reaches its limit (%s) in %s at the measured slope", fmt_bytes(limit.max), fmt_dur(limit.eta_s)),
    { limit_line(), rss_line() },
    { "Find what grows (the verdicts above, or a longer window), or raise the limit if the working set is legitimately larger",
      CG.dir and sub("Watch it: %s (memory.usage_in_bytes / memory.current)", CG.dir) or "Watch the cgroup's usage" }))
end

-- OOM kills in the window.
local ooms = CG and diag.get(CG, "events", "oom_kill") or 0
local machine_ooms = OO and OO.total or 0
local by_target = 0
for _, k in ipairs(OO and OO.keys or {}) do
  if k.pid == pid then by_target = by_target + (k.count or 0) end
end
if ooms > 0 or machine_ooms > 0 then
  local ev = {}
  if ooms > 0 then
    push(ev, sub("%d OOM kill%s in the memory cgroup %s during the %.1f s window", ooms, ooms == 1 and "" or "s", CG.path or "?", ctx_window))
  end
  if machine_ooms > 0 then
    local who = {}
    for i, k in ipairs(OO.keys or {}) do
      if i > 3 then break end
      push(who, sub("%s (pid %d)%s", k.comm or "?", k.pid or 0, k.pid == pid and ", the target" or ""))
    end
    push(ev, sub("%d OOM kill%s on the machine during the run (oom:mark_victim), triggered by %s", machine_ooms,
      machine_ooms == 1 and "" or "s", #who > 0 and table.concat(who, ", ") or "?"))
  end
  if CG and (CG.failcnt or 0) > 0 then push(ev, sub("The cgroup hit its limit %s times (memory.failcnt)", diag.fmt_count(CG.failcnt))) end
  if CG and CG.max_bytes then push(ev, sub("Limit %s, usage %s", fmt_bytes(CG.max_bytes), fmt_bytes(CG.current_bytes))) end
  local n = ooms > 0 and ooms or machine_ooms
  local mine = ooms > 0 or by_target > 0
  push(verdicts, diag.verdict("oom-kill", mine and "critical" or "warning",
    mine and sub("OOM killer: %d process%s killed%s", n, n == 1 and "" or "es",
      ooms > 0 and " in the target's memory cgroup" or ", the target triggering it")
      or sub("OOM killer: %d process%s killed elsewhere on the machine", n, n == 1 and "" or "es"), ev,
    { "Which process: dmesg | grep -i 'killed process' (or journalctl -k)",
      "The verdicts above say what grows; raise the limit only if the working set is legitimately larger" }))
elseif CG and (CG.failcnt or 0) > 0 then
  -- reaching the limit without a kill: reclaim under the limit (page cache, swap)
  push(verdicts, diag.verdict("at-limit", "warning",
    sub("The memory cgroup hit its limit %s times in the window (reclaiming to stay under it)", diag.fmt_count(CG.failcnt)),
    { sub("memory.failcnt +%s; limit %s, usage %s", diag.fmt_count(CG.failcnt), fmt_bytes(CG.max_bytes), fmt_bytes(CG.current_bytes)) },
    { "Memory pressure slows the process (reclaim, refaults): check the memory pressure and what grows" }))
end

-- ---- host-wide: the kernel's slab caches and the page cache ------------------------------------

local kwin = (K and K.wall_s) or ctx_window
local S = K and K.slab
local VM, MI = K and K.vmstat, K and K.meminfo

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
    return sub("A kernel allocation of that size class: by call site, bpftrace -e 'tracepoint:kmem:kmalloc /args->bytes_alloc <= %s/ { @[kstack(6)] = sum(args->bytes_alloc) }'",
      name:match("(%d+)$") or "N")
  end
  return "A driver or kernel subsystem allocating objects of that cache: kmemleak, or kmem:kmem_cache_alloc by call site"
end

-- The kernel_allocs sites that fill cache c: kmem_cache_alloc's cache by name, kmalloc's by size
-- class (kmalloc-64, kmalloc-cg-64, kmalloc-rcl-64 ...: the object size). Kernels before 6.2 name
-- no cache in kmem_cache_alloc: such a site (unnamed_cache) is matched by the cache's object size,
-- and the second value says so. Most bytes held first.
local function sites_of(c)
  local out, by_size = {}, false
  local class = c.name:find("kmalloc") and tonumber(c.name:match("(%d+)$"))
  for _, st in ipairs(KA and KA.sites or {}) do
    local named = st.cache == c.name or (not st.cache and not st.unnamed_cache and class and st.object_size == class)
    local sized = st.unnamed_cache and not class and st.object_size == c.object_size
    if (st.held_bytes or 0) > 0 and (named or sized) then
      push(out, st)
      by_size = by_size or sized
    end
  end
  return out, by_size
end
local function site_fn(st) return (st.site:gsub("%+0x%x+$", "")) end

local slab_grown = {}
for _, c in ipairs(S and S.grown or {}) do
  if (c.delta_bytes or 0) >= T.slab_min and slab_rate(c) >= T.slab_rate then push(slab_grown, c) end
end
for i = 1, math.min(#slab_grown, 3) do
  local c = slab_grown[i]
  local ev = {
    sub("%s: %s → %s over the %.1f s window (%s); %s objects of %s, %s%s in the window", c.name,
      fmt_bytes(c.bytes - c.delta_bytes), fmt_bytes(c.bytes), kwin, fmt_rate_b(slab_rate(c)),
      diag.fmt_count(c.objects), fmt_bytes(c.object_size), (c.objects_delta or 0) >= 0 and "+" or "",
      diag.fmt_count(c.objects_delta or 0)),
  }
  if c.new then push(ev, "The cache appeared during the window (a module or subsystem created it)") end
  local filled, by_size = sites_of(c)
  if by_size then
    push(ev, "This kernel's kmem:kmem_cache_alloc names no cache (before 6.2): its call sites below are those allocating objects of this cache's size")
  end
  for k = 1, math.min(3, #filled) do
    local st = filled[k]
    push(ev, sub("Allocated in the window by %s: %s objects (%s) still held of %s allocated%s", st.site, diag.fmt_count(st.held),
      fmt_bytes(st.held_bytes), diag.fmt_count(st.allocs), KA.sampled_1_in and sub(" (1 in %d recorded, scaled)", KA.sampled_1_in) or ""))
  end
  local by = filled[1] and filled[1].held_bytes * 4 >= c.delta_bytes and site_fn(filled[1])
  if c.reclaimable == true then
    push(ev, "The kernel may reclaim this cache under memory pressure (reclaim_account): it is given back when memory runs short, but growth that does not stop means objects created and kept")
  elseif c.reclaimable == false then
    push(ev, "Not reclaimable: its objects are freed only when whoever holds them releases them")
  end
  if S.total_delta_bytes then
    push(ev, sub("All slab caches: %s at the end, %s%s in the window", fmt_bytes(S.total_bytes),
      S.total_delta_bytes >= 0 and "+" or "", fmt_bytes(S.total_delta_bytes)))
  end
  if MI and MI.sunreclaim_bytes then
    push(ev, sub("/proc/meminfo: SUnreclaim %s (%s), SReclaimable %s (%s), MemAvailable %s", fmt_bytes(MI.sunreclaim_bytes),
      fmt_bytes(MI.sunreclaim_delta_bytes), fmt_bytes(MI.sreclaimable_bytes), fmt_bytes(MI.sreclaimable_delta_bytes),
      fmt_bytes(MI.mem_available_bytes)))
  end
  -- A cache the kernel reclaims under pressure (dentries, inodes of a big directory walk) is no
  -- alarm while the machine has memory to spare: information.
  local spare = MI and MI.mem_total_bytes and MI.mem_total_bytes > 0 and MI.mem_available_bytes
    and MI.mem_available_bytes * 100 >= T.spare * MI.mem_total_bytes
  local sev = (c.reclaimable == true and spare) and "info" or "warning"
  if sev == "info" then
    push(ev, sub("MemAvailable is %s of MemTotal (at least %s): the kernel gives this cache back when memory runs short, so it is no alarm yet",
      diag.fmt_pct(diag.pct(MI.mem_available_bytes, MI.mem_total_bytes)), diag.fmt_pct(T.spare)))
  end
  push(verdicts, diag.verdict("kernel-slab-growth", sev,
    sub("Kernel slab cache %s grew %s in the window (%s)%s", c.name, fmt_bytes(c.delta_bytes), fmt_rate_b(slab_rate(c)),
      by and sub(", allocated in %s()", by) or ""), ev,
    { slab_hint(c.name),
      sub("Watch it: slabtop -s c, or grep '^%s ' /proc/slabinfo a few seconds apart", c.name),
      "Confirm over a longer window: diagnose memory-growth --duration 60" }))
end

-- Refaults: pages read back soon after eviction. The working set does not fit where it runs.
local refaults = VM and ((VM.workingset_refault_file or 0) + (VM.workingset_refault_anon or 0)) or 0
local refault_rate = kwin > 0 and refaults / kwin or 0
if VM and (VM.workingset_refault_file or VM.workingset_refault_anon) and refault_rate >= T.refault then
  local ev = {
    sub("%s refaults in the %.1f s window (%s): %s of file pages, %s of anonymous pages read back soon after they were evicted",
      diag.fmt_count(refaults), kwin, diag.fmt_rate(refault_rate), diag.fmt_count(VM.workingset_refault_file or 0),
      diag.fmt_count(VM.workingset_refault_anon or 0)),
  }
  if VM.pgmajfault or VM.pgpgin then
    push(ev, sub("Major faults %s, pages read in %s (/proc/vmstat pgmajfault, pgpgin)", diag.fmt_rate(diag.rate(VM.pgmajfault or 0, kwin)),
      fmt_rate_b(diag.rate((VM.pgpgin or 0) * 1024, kwin))))
  end
  if VM.pgscan or VM.pgsteal then
    push(ev, sub("Reclaim scanned %s pages and reclaimed %s (kswapd and direct)%s", diag.fmt_count(VM.pgscan or 0),
      diag.fmt_count(VM.pgsteal or 0), (VM.allocstall or 0) > 0 and sub("; %s allocations stalled in direct reclaim", diag.fmt_count(VM.allocstall)) or ""))
  end
  local where = "in memory"
  -- Whose: the memory cgroups whose refaults grew (v2 counts include descendants: the most specific
  -- cgroup holding at least half of the top one's refaults is named).
  local RC, cg = K.refault_cgroups or {}, nil
  for _, c in ipairs(RC) do
    if c.refaults * 2 >= RC[1].refaults and (not cg or #c.path > #cg.path) then cg = c end
  end
  if #RC > 0 then
    local parts = {}
    for i = 1, math.min(3, #RC) do
      local c = RC[i]
      push(parts, sub("%s %s%s", c.path, diag.fmt_count(c.refaults), c.limit_bytes and sub(" (limit %s)", fmt_bytes(c.limit_bytes)) or ""))
    end
    push(ev, "Refaults by memory cgroup (memory.stat): " .. table.concat(parts, ", "))
  end
  if MI and MI.cached_bytes then
    push(ev, sub("Page cache %s (%s%s in the window); file LRU active %s, inactive %s", fmt_bytes(MI.cached_bytes),
      (MI.cached_delta_bytes or 0) >= 0 and "+" or "", fmt_bytes(MI.cached_delta_bytes),
      fmt_bytes(MI.active_file_bytes), fmt_bytes(MI.inactive_file_bytes)))
  end
  if MI and MI.mem_available_bytes and MI.mem_total_bytes and MI.mem_total_bytes > 0 then
    local avail = diag.pct(MI.mem_available_bytes, MI.mem_total_bytes)
    if avail >= 25 then
      where = "in its memory cgroup's limit"
      push(ev, sub("The machine still has %s available (%s of %s): the evictions come from a memory cgroup's limit smaller than what runs in it, not from the machine's memory",
        fmt_bytes(MI.mem_available_bytes), diag.fmt_pct(avail), fmt_bytes(MI.mem_total_bytes)))
    else
      push(ev, sub("The machine has %s available (%s of %s): it is short of memory", fmt_bytes(MI.mem_available_bytes),
        diag.fmt_pct(avail), fmt_bytes(MI.mem_total_bytes)))
    end
  end
  local title
  if where ~= "in memory" and cg and cg.path ~= "/" then
    title = sub("Working set larger than the memory limit of cgroup %s%s: %s refaults/s", cg.path,
      cg.limit_bytes and sub(" (%s)", fmt_bytes(cg.limit_bytes)) or "", diag.fmt_count(refault_rate))
  else
    title = sub("Working set larger than %s: %s refaults/s, page cache %s", where == "in memory" and "memory" or "a memory cgroup's limit",
      diag.fmt_count(refault_rate), MI and fmt_bytes(MI.cached_bytes) or "n/a")
  end
  push(verdicts, diag.verdict("working-set", refault_rate >= 10 * T.refault and "critical" or "warning", title, ev,
    { where == "in memory" and "Give the machine more memory or run less on it; what holds memory: the slab caches and processes (ps -eo rss,comm --sort=-rss | head)"
        or (cg and cg.path ~= "/") and sub("Raise the memory limit of %s%s above its working set, or make what runs there read less", cg.path,
          cg.limit_bytes and sub(" (now %s)", fmt_bytes(cg.limit_bytes)) or "")
        or "Which cgroup: grep workingset_refault /sys/fs/cgroup/*/memory.stat (v2, with descendants; v1: each cgroup's own); raise its limit or shrink its working set",
      "Which files: cachestat / fincore on the data files the service reads" }))
end

-- Nothing found.
local findings = #verdicts
if findings == 0 and growing then
  push(verdicts, diag.verdict("growth", "warning", sub("Memory grows %s; its cause is not attributed", fmt_rate_b(rss_rate)),
    { rss_line() }, { sub("Measure longer: diagnose memory-growth --pid %s --duration 60", pid) }))
elseif findings == 0 and host then
  local ev = {}
  if S then
    push(ev, sub("Slab caches: %s at the end, %s%s over the %.1f s window; no cache grew %s or more", fmt_bytes(S.total_bytes),
      (S.total_delta_bytes or 0) >= 0 and "+" or "", fmt_bytes(S.total_delta_bytes), kwin, fmt_bytes(T.slab_min)))
  end
  if VM then push(ev, sub("Page-cache refaults %s (under %s)", diag.fmt_rate(refault_rate), diag.fmt_rate(T.refault))) end
  if MI and MI.mem_available_bytes then
    push(ev, sub("MemAvailable %s of %s", fmt_bytes(MI.mem_available_bytes), fmt_bytes(MI.mem_total_bytes)))
  end
  push(verdicts, diag.verdict("ok", "ok", "No kernel slab growth and no page-cache thrashing in the window", ev,
    { "For one process's memory: diagnose memory-growth --pid PID", "If it grows over hours, measure longer: diagnose memory-growth --duration 120" }))
elseif findings == 0 then
  local ev = {}
  local rl = rss_line()
  if rl then push(ev, rl) end
  if A then
    push(ev, sub("%s allocations (%s, %s) and %s frees in %.1f s; %s outstanding at the end, none kept beyond the window's first half by any call path",
      diag.fmt_count(A.allocs), fmt_bytes(A.alloc_bytes), diag.fmt_rate(diag.rate(A.allocs, window)),
      diag.fmt_count(A.free_calls), window, fmt_bytes(A.outstanding_bytes)))
  end
  local busy = A and window > 0 and A.allocs / window >= 1000
  push(verdicts, diag.verdict("ok", "ok",
    busy and sub("Bounded churn: %s allocations/s, all freed, memory flat — no leak", diag.fmt_count(A.allocs / window))
      or "No memory growth and no leak in the window",
    ev, { sub("If memory grows over hours, measure longer: diagnose memory-growth --pid %s --duration 120", pid) }))
end

-- ---- incomplete data -------------------------------------------------------------------------

do
  local partial = diag.partial()
  local note = partial.note
  if not A and not host then note("allocs missing", "allocs: no results: no call path holds the heap (the page faults are the only call paths)", "warning") end
  if not F and not host then note("faults missing", "faults: no results: where new pages are touched is unknown") end
  if host and not K then note("kmem missing", "kmem: no results: the kernel's slab caches and the page cache not assessed", "warning") end
  if host and not KA then note("kallocs missing", "kallocs: no results: the kernel code that fills a cache is not named") end
  if KA and KA.sampled_1_in then
    note(sub("kernel allocations 1 in %d", KA.sampled_1_in), sub("kallocs: 1 kernel allocation in %d recorded (the machine's allocation rate was over the budget): held objects and bytes by call site are estimates", KA.sampled_1_in))
  end
  if KA and (KA.untracked or 0) > 0 then
    note(sub("kallocs: %s untracked", diag.fmt_count(KA.untracked)), sub("kallocs: %s blocks not recorded (max_live %s reached): held bytes by call site are a lower bound", diag.fmt_count(KA.untracked), diag.fmt_count(KA.max_live)))
  end
  if K and not S then
    note("slab caches not read", sub("kmem: %s: slab growth not assessed (root reads /proc/slabinfo)", K.slab_error or "no slab results"), "warning")
  end
  if S and (S.malformed_lines or 0) > 0 then
    note(sub("slabinfo: %s lines skipped", diag.fmt_count(S.malformed_lines)), sub("kmem: %s lines of /proc/slabinfo were not cache lines and were skipped", diag.fmt_count(S.malformed_lines)))
  end
  if not C then note("context missing", "context: no results: RSS and the cgroup limit unknown", "warning") end
  if not OO then note("ooms missing", "ooms: no results: OOM kills on the machine not counted") end
  if A and A.sampled_1_in then
    note(sub("allocations 1 in %d", A.sampled_1_in), sub("allocs: 1 allocation in %d recorded (the allocator's call rate was over the budget): bytes and counts are estimates", A.sampled_1_in))
  end
  if A and (A.untracked or 0) > 0 then
    note(sub("allocs: %s untracked", diag.fmt_count(A.untracked)), sub("allocs: %s blocks not tracked (max_outstanding %s reached): outstanding bytes are a lower bound", diag.fmt_count(A.untracked), diag.fmt_count(A.max_outstanding)), "warning")
  end
  if A and (A.dropped or 0) > 0 then
    note(sub("allocs: %s dropped", diag.fmt_count(A.dropped)), sub("allocs: %s blocks not counted by stack (a map was full)", diag.fmt_count(A.dropped)))
  end
  if F and F.sampled_1_in then
    note(sub("faults 1 in %d", F.sampled_1_in), sub("faults: 1 fault in %d recorded (budget)", F.sampled_1_in))
  end
  if F and (F.dropped or 0) > 0 then
    note(sub("faults: %s dropped", diag.fmt_count(F.dropped)), sub("faults: %s faults not counted by stack", diag.fmt_count(F.dropped)))
  end
  -- page-fault stacks that never leave the allocator: the caller of malloc is unknown
  if F and (F.faults or 0) > 0 then
    local stuck = 0
    for _, s in ipairs(F.stacks or {}) do
      if #(s.user or {}) > 0 and not own_frame(s.user) then stuck = stuck + (s.count or 0) end
    end
    if stuck * 2 > F.faults then
      note("fault stacks stop in the allocator", sub("faults: %s of page faults have no frame above the allocator (unwinding stopped in it): who called malloc is unknown there", diag.fmt_pct(diag.pct(stuck, F.faults))))
    end
  end
  partial.stop(run.stop_reason, ctx_window, C and C.exited)
  push(verdicts, partial.verdict({ "Verdicts may be partial" }))
end

-- Worst first; the order of equal ones is the order above.
do
  local rank = { critical = 4, warning = 3, info = 2, ok = 1 }
  local tmp = {}
  for i, v in ipairs(verdicts) do tmp[i] = { v = v, i = i } end
  table.sort(tmp, function(a, b)
    if rank[a.v.severity] ~= rank[b.v.severity] then return rank[a.v.severity] > rank[b.v.severity] end
    return a.i < b.i
  end)
  verdicts = {}
  for i, x in ipairs(tmp) do verdicts[i] = x.v end
end

-- ---- report sections -------------------------------------------------------------------------

if M then
  local rows = {}
  local f = fit(M.rss_series)
  if M.rss_bytes then
    push(rows, { "RSS", fmt_bytes(M.rss_bytes), fmt_bytes(rss_delta), fmt_rate_b(rss_rate), f and sub("%.2f", f.r2) or "" })
  end
  if M.rss_anon_bytes then push(rows, { "  anonymous", fmt_bytes(M.rss_anon_bytes), fmt_bytes(M.rss_anon_delta_bytes), "", "" }) end
  if M.rss_file_bytes then push(rows, { "  file-backed", fmt_bytes(M.rss_file_bytes), fmt_bytes(M.rss_file_delta_bytes), "", "" }) end
  if M.rss_shmem_bytes then push(rows, { "  shared memory", fmt_bytes(M.rss_shmem_bytes), fmt_bytes(M.rss_shmem_delta_bytes), "", "" }) end
  if CG and CG.current_bytes then
    local cf = fit(CG.current_series)
    push(rows, { "cgroup usage", fmt_bytes(CG.current_bytes), fmt_bytes(CG.current_delta_bytes),
      fmt_rate_b(CG.current_slope_bytes_per_s), cf and sub("%.2f", cf.r2) or "" })
    push(rows, { "cgroup limit", CG.limited and fmt_bytes(CG.max_bytes) or "none", "", "", "" })
  end
  if A then push(rows, { "heap held (allocated in the window)", fmt_bytes(A.outstanding_bytes), "", fmt_rate_b(heap_rate), "" }) end
  if host and M.pressure then
    push(rows, { "memory pressure, some / full (share of the window)", sub("%s / %s", diag.fmt_pct(M.pressure.some_pct or 0),
      diag.fmt_pct(M.pressure.full_pct or 0)), "", "", "" })
  end
  if #rows > 0 then push(report, diag.table(sub("Memory over the window (%.1f s)", ctx_window), { "what", "at the end", "change", "per second", "R²" }, rows)) end
end
if S then
  local rows = {}
  for i = 1, math.min(T.top_n, #(S.grown or {})) do
    local c = S.grown[i]
    push(rows, { c.name, fmt_bytes(c.bytes), "+" .. fmt_bytes(c.delta_bytes), fmt_rate_b(slab_rate(c)),
      ((c.objects_delta or 0) >= 0 and "+" or "") .. diag.fmt_count(c.objects_delta or 0), fmt_bytes(c.object_size),
      c.reclaimable == true and "yes" or c.reclaimable == false and "no" or "?" })
  end
  push(report, diag.table(sub("Slab caches that grew over the window (%.1f s; all caches %s, %s%s)", kwin, fmt_bytes(S.total_bytes),
    (S.total_delta_bytes or 0) >= 0 and "+" or "", fmt_bytes(S.total_delta_bytes)),
    { "cache", "at the end", "change", "per second", "objects", "object", "reclaimable" }, rows))
end
if VM and MI then
  local function per_s(n) return diag.fmt_rate(diag.rate(n or 0, kwin)) end
  push(report, diag.table(sub("Page cache and reclaim over the window (%.1f s)", kwin), { "what", "in the window", "per second / at the end" }, {
    { "refaults (file + anonymous)", diag.fmt_count(refaults), diag.fmt_rate(refault_rate) },
    { "major faults", diag.fmt_count(VM.pgmajfault or 0), per_s(VM.pgmajfault) },
    { "paged in", fmt_bytes((VM.pgpgin or 0) * 1024), fmt_rate_b(diag.rate((VM.pgpgin or 0) * 1024, kwin)) },
    { "reclaim scanned / reclaimed (pages)", sub("%s / %s", diag.fmt_count(VM.pgscan or 0), diag.fmt_count(VM.pgsteal or 0)), "" },
    { "page cache (Cached)", fmt_bytes(MI.cached_delta_bytes), fmt_bytes(MI.cached_bytes) },
    { "file LRU active / inactive", sub("%s / %s", fmt_bytes(MI.active_file_delta_bytes), fmt_bytes(MI.inactive_file_delta_bytes)),
      sub("%s / %s", fmt_bytes(MI.active_file_bytes), fmt_bytes(MI.inactive_file_bytes)) },
    { "MemAvailable", fmt_bytes(MI.mem_available_delta_bytes), fmt_bytes(MI.mem_available_bytes) },
  }))
end
if A then
  local rows = {}
  for i = 1, math.min(T.top_n, #(A.stacks or {})) do
    local s = A.stacks[i]
    local first_half = first_half_allocs(s)
    push(rows, { fmt_bytes(s.weight), diag.fmt_count(s.count), diag.fmt_count(s.allocs), diag.fmt_count(s.frees),
      diag.fmt_pct(first_half > 0 and math.min(100, (s.old_count or 0) * 100 / first_half) or 0),
      sub("%.1f s", (s.oldest_age_ms or 0) / 1000), path_of(s) })
  end
  if #rows > 0 then
    push(report, diag.table(sub("Heap held at the end, by allocating call path (%s allocations/s, %s frees/s)",
      diag.fmt_count(diag.rate(A.alloc_calls, window) or 0), diag.fmt_count(diag.rate(A.free_calls, window) or 0)),
      { "held", "blocks", "allocated", "freed", "kept (1st half)", "oldest", "call path" }, rows))
  end
end
if F then
  local rows = {}
  for i = 1, math.min(T.top_n, #(F.stacks or {})) do
    local s = F.stacks[i]
    push(rows, { fmt_bytes(s.weight), diag.fmt_count(s.count), path_of(s) })
  end
  if #rows > 0 then
    push(report, diag.table(sub("Page faults by call path (%s faults, %s)", diag.fmt_count(F.faults), fmt_bytes(F.bytes)),
      { "touched", "faults", "call path" }, rows))
  end
end

return { verdicts = verdicts, report = report }
