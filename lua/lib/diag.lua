-- diag.lua — helpers shared by every recipe snippet; loaded before the snippet as global `diag`.
--
-- Owns: the recipe's thresholds (diag.threshold: the YAML holds every one, there is no default
-- here or in a snippet), totals and percentiles of log2 histograms, top-N, shares and rates, the
-- one set of human formats (counts, rates, bytes, durations, percentages), call paths from
-- stacks, severities, the verdict and ruled-out constructors, the answer a snippet returns
-- (verdicts, ruled_out, report), and the three report section shapes the report writer knows:
-- table, histogram, text.
-- Must not: know any recipe's thresholds or verdicts, or what a wait in a stack means (waits.lua).
--
-- Results arrive as read-only tables: read them with `.`, `#`, ipairs and pairs (not next, which
-- sees an empty proxy); copy before sorting. A missing value is nil: guard with `diag.get` or `or`.

local diag = {}

-- ---- lookups -----------------------------------------------------------------------------

-- diag.threshold(name): the recipe's threshold `name` (recipes/RECIPE.yaml, `thresholds:`), as
-- the run was given it (a --param may have set it). A threshold the recipe does not declare, or
-- that is not a number, is an error naming it: the snippet and its YAML disagree.
function diag.threshold(name)
  local v = thresholds[name]
  local recipe = (run and run.recipe) or "RECIPE"
  if v == nil then
    error(string.format("threshold %q is missing: declare it under thresholds: in recipes/%s.yaml",
      tostring(name), recipe), 2)
  end
  if type(v) ~= "number" then
    error(string.format("threshold %q is %q, not a number (recipes/%s.yaml)", tostring(name),
      tostring(v), recipe), 2)
  end
  return v
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

-- A word for a shell command line a reader may paste: as it is when it holds nothing the shell
-- reads, else in single quotes (target-named paths and names can hold anything).
function diag.sh_quote(s)
  s = tostring(s)
  if s ~= "" and not s:find("[^%w%./_+:,=@%%-]") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- diag.stopped_probes(window_s): the probes whose stacks the governor dropped over the budget
-- (run.stacks_dropped), then those it stopped while the run went on (run.stopped), by id, each
-- {tag=, line=} for a partial-data note.
function diag.stopped_probes(window)
  local out = {}
  local function sorted_ids(t)
    local ids = {}
    for id in pairs(t or {}) do ids[#ids + 1] = id end
    table.sort(ids)
    return ids
  end
  local dropped = run and run.stacks_dropped or {}
  for _, id in ipairs(sorted_ids(dropped)) do
    local d = dropped[id]
    out[#out + 1] = { tag = string.format("%s stacks dropped at %.1f s (budget)", id, d.at_s),
      line = string.format("%s: stacks dropped %.1f s into the %.1f s window, over max_cpu_pct: its events after that are counted without call paths",
        id, d.at_s, window or 0) }
  end
  local stopped = run and run.stopped or {}
  for _, id in ipairs(sorted_ids(stopped)) do
    local st = stopped[id]
    out[#out + 1] = { tag = string.format("%s stopped at %.1f s (budget)", id, st.at_s),
      line = string.format("%s: stopped %.1f s into the %.1f s window, over max_cpu_pct: %s", id, st.at_s,
        window or 0, st.scaled and "its figures are scaled from that time to the window (estimates)"
          or "its figures cover that time only") }
  end
  return out
end

-- diag.why_missing(id): why probe `id` has no results, as words for evidence: it did not load on
-- this kernel or machine (run.load_errors), the target lacks what it needs (run.not_applicable),
-- or it failed ("the probe failed": its error is above the report).
function diag.why_missing(id)
  local unloaded = run and run.load_errors and run.load_errors[id]
  if unloaded then return "did not load here: " .. unloaded end
  local na = run and run.not_applicable and run.not_applicable[id]
  if na then return "not applicable: " .. na end
  return "the probe failed"
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
    for _, n in ipairs(diag.stopped_probes(window)) do p.note(n.tag, n.line) end
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

-- ---- frames ------------------------------------------------------------------------------

-- diag.any_frame(frames, patterns): whether a frame (a name) matches one of the Lua patterns.
function diag.any_frame(frames, patterns)
  for _, f in ipairs(frames or {}) do
    for _, p in ipairs(patterns) do
      if f:find(p) then return true end
    end
  end
  return false
end

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

-- diag.percentile_upto(buckets, p, max): the percentile, never past max (the longest measured):
-- log2 slots are a factor of 2 wide, and the interpolation may land past the largest value; 0 for
-- an empty histogram.
function diag.percentile_upto(buckets, p, max)
  return math.min(diag.percentile(buckets, p) or 0, max or math.huge)
end

-- Fewer run-queue waits than this make too thin a p99 to judge by.
diag.MIN_RUNQ_WAITS = 20

-- The run-queue latency (runq_latency results, microseconds) summarised: {p50=, p99=, max=,
-- total=, count=}, or nil without results or with fewer than MIN_RUNQ_WAITS waits.
function diag.runq(runq_results)
  local r = runq_results
  if not r or (r.count or 0) < diag.MIN_RUNQ_WAITS then return nil end
  return { p50 = diag.percentile(r.buckets, 50), p99 = diag.percentile(r.buckets, 99), count = r.count,
    max = r.max_us, total = r.total_us }
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
-- diag.cpu_demand(context, profile, window, steal_warn): how much CPU the target wanted, 100 = one
-- CPU. The kernel charges no task for the time the hypervisor takes its vCPU away (steal), while
-- the profile's clock samples run on through it: when the machine's steal over the window
-- (context.steal_pct) is >= steal_warn and the samples say more than the kernel charged, they are
-- the figure. Returns cpu (nil without context.cpu_pct), charged (the kernel's figure when the
-- samples replaced it, else nil), steal (nil when not read) and stolen (steal >= steal_warn).
function diag.cpu_demand(context, profile, window, steal_warn)
  local cpu = context and context.cpu_pct
  local steal = context and context.steal_pct
  local stolen = steal ~= nil and steal >= steal_warn
  if stolen and cpu and profile and profile.frequency_hz and window > 0 then
    local sampled = diag.pct(profile.samples or 0, profile.frequency_hz * window)
    if sampled > cpu then return sampled, cpu, steal, stolen end
  end
  return cpu, nil, steal, stolen
end

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

-- Bytes, in binary units: 512 → "512 B", 1536 → "1.5 KiB", 3.2e6 → "3.1 MiB", 5e9 → "4.7 GiB".
function diag.fmt_bytes(b)
  if b == nil then return "n/a" end
  if math.abs(b) < 1024 then return string.format("%.0f B", b) end
  local v, unit = b, "B"
  for _, name in ipairs({ "KiB", "MiB", "GiB", "TiB" }) do
    if math.abs(v) < 1024 then break end
    v, unit = v / 1024, name
  end
  return short(v) .. " " .. unit
end

-- A byte rate: "1.5 MiB/s"; "n/a" when unknown.
function diag.fmt_byte_rate(per_s)
  if per_s == nil then return "n/a" end
  return diag.fmt_bytes(per_s) .. "/s"
end

-- A long span in seconds (a time left, an age): 90 → "90 s", 1500 → "25.0 min", 9000 → "2.5 h".
function diag.fmt_s(s)
  if s == nil then return "n/a" end
  if s < 120 then return string.format("%.0f s", s) end
  if s < 7200 then return string.format("%.1f min", s / 60) end
  return string.format("%.1f h", s / 3600)
end

-- ---- stacks ------------------------------------------------------------------------------

-- diag.name_set(names): a set (name -> true) of an array of names; empty for nil. For a stack
-- probe's `jit_frames` (the frames a process's perf map named).
function diag.name_set(names)
  local set = {}
  for _, n in ipairs(names or {}) do set[n] = true end
  return set
end

-- A resolved function name, as opposed to "[unknown]", "libfoo.so+0x1a2b" or a decorated
-- name such as "bpf_prog_1234_handler [bpf]". jit (optional): a diag.name_set of the probe's
-- jit_frames: a name a perf map gave is a named function, whatever it holds ("JS:*f app.js:3:1",
-- "long Hot.sum(int)").
function diag.symbolized(name, jit)
  if type(name) ~= "string" then return false end
  if type(jit) == "table" and jit[name] then return true end
  return name ~= "" and not name:find("[%s%[]") and not name:find("%+0x%x+$")
end

-- diag.jit_frame(name): a perf map's name in its language's terms, or nil when it is none that
-- is known: {lang = "JS", fn = "checksumRows", where = "/srv/app.js:12:3" or nil, tier =
-- "optimized" | "baseline" | "interpreted" | nil} for V8's (Node --perf-basic-prof: "JS:*f
-- FILE:LINE:COL", older "LazyCompile:~f FILE"), {lang = "Java", fn = "pkg.Class.method(int)"} for
-- a JVM's (jcmd Compiler.perfmap: "RETURN-TYPE pkg.Class.method(ARGS)").
local V8_KINDS = { JS = true, LazyCompile = true, Function = true, Script = true }
local V8_TIERS = { ["*"] = "optimized", ["^"] = "baseline", ["+"] = "optimized", ["~"] = "interpreted" }
function diag.jit_frame(name)
  if type(name) ~= "string" then return nil end
  local kind, mark, rest = name:match("^(%a+):([%*~%^%+]?)(.*)$")
  if kind and V8_KINDS[kind] then
    local fn, where = rest:match("^(%S*) (.+)$")
    fn = fn or rest
    return { lang = "JS", fn = fn ~= "" and fn or "(anonymous)", where = where, tier = V8_TIERS[mark] }
  end
  local method, args = name:match("^[%w%.%$_%[%]<>]+ ([%w%.%$_<>]+)%((.*)%)$")
  if method and method:find("%.") then
    return { lang = "Java", fn = method .. "(" .. args .. ")" }
  end
  return nil
end

-- A stripped frame "libfoo.so.1+0x1a2b" split: the file's base name and the offset (a number);
-- nil for any other frame.
function diag.stripped_frame(name)
  if type(name) ~= "string" then return nil end
  local file, off = name:match("^(.-)%+0x(%x+)$")
  if not file or file == "" or file:find("[%s%[]") then return nil end
  return file, tonumber(off, 16)
end

-- The debug hint (a stack probe's debug_hints[], see diag.stripped_frame) of the file a stripped
-- frame points into, or nil.
function diag.debug_hint(res, name)
  local file = diag.stripped_frame(name)
  if not file or not res then return nil end
  for _, h in ipairs(res.debug_hints or {}) do
    if h.file == file then return h end
  end
  return nil
end

-- What names a stripped file's code, as a next step: the -dbgsym package of its owner (apt, from
-- the debug archive) and the build-id path it installs, the build-id to fetch when no installed
-- package owns the file, or the generic advice without either. h: diag.debug_hint's (may be nil).
function diag.debug_symbols_step(h, file)
  local what = (h and h.path) or file or "that binary or library"
  if h and h.dbgsym_package then
    return string.format("Install the debug symbols of %s (package %s%s): apt install %s%s, from Debian's debug archive (deb http://deb.debian.org/debian-debug/ SUITE-debug main in the apt sources; Ubuntu: ddebs.ubuntu.com)%s; then run this again: the debug file is read by build-id",
      what, h.package, h.package_version and (" " .. h.package_version) or "", h.dbgsym_package,
      h.package_version and ("=" .. h.package_version) or "",
      h.debug_path and (", which installs " .. h.debug_path) or "")
  elseif h and h.build_id then
    return string.format("Install the debug file of %s (build-id %s; no installed package owns it here): from its vendor's debug package, or debuginfod-find debuginfo %s, placed at %s; then run this again: the debug file is read by build-id",
      what, h.build_id, h.build_id, h.debug_path or "/usr/lib/debug/.build-id/")
  end
  return string.format("Install debug symbols for %s (the -dbgsym / -debuginfo package) or build with -g: stripped code shows up as file+0xOFFSET", what)
end

-- "burn_hot()" for a symbol; a JIT frame a perf map named (jit: as for diag.symbolized) in its
-- language's terms ("JS function checksumRows() at /srv/app.js:12:3", "Java method
-- Hot.sum(int)"), else as the map wrote it; an unresolved frame is shown as it is.
function diag.fn(name, jit)
  if type(jit) ~= "table" then jit = nil end
  if jit and type(name) == "string" and jit[name] then
    local j = diag.jit_frame(name)
    if j and j.lang == "JS" then
      return string.format("JS function %s()%s", j.fn, j.where and (" at " .. j.where) or "")
    elseif j then
      return string.format("%s method %s", j.lang, j.fn)
    end
    return name
  end
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

-- The call path of a stack's user frames, or "(no user stack)".
function diag.user_path(frames)
  local p = diag.call_path(frames or {}, 8)
  return p ~= "" and p or "(no user stack)"
end

-- diag.authored(prefix, check): the entries of a data table and of its authors' extensions — the
-- entries of every global PREFIX_NAME table (a recipe author's lua/lib/PREFIX_NAME.lua), by name,
-- then those of the global PREFIX —, each passed to check(entry, bad) first: bad(what) raises the
-- one-line error "PREFIX_NAME entry N: what", naming the author's file and entry. For wait_table
-- and alloc_wrappers.
function diag.authored(prefix, check)
  local sources = {}
  for name, t in pairs(_G) do
    if type(name) == "string" and name:sub(1, #prefix + 1) == prefix .. "_" and type(t) == "table" then
      sources[#sources + 1] = name
    end
  end
  table.sort(sources)
  sources[#sources + 1] = prefix
  local list = {}
  for _, name in ipairs(sources) do
    for i, e in ipairs(_G[name] or {}) do
      check(e, function(what) error(string.format("%s entry %d: %s", name, i, what), 0) end)
      list[#list + 1] = e
    end
  end
  return list
end

-- ---- lines of evidence and steps ---------------------------------------------------------

-- diag.lines(a, b, ...): an array of lines (nil arguments left out) that grows with
-- lines:add(text) — taken as it is — or lines:add(fmt, ...) — string.format'ed; add(nil) adds
-- nothing. Evidence, next steps, report rows and parts of a sentence are built with it.
local Lines = {}
Lines.__index = Lines

function Lines:add(x, ...)
  if x == nil then return self end
  if select("#", ...) > 0 then x = string.format(x, ...) end
  self[#self + 1] = x
  return self
end

-- Adds every item of an array.
function Lines:extend(items)
  for _, x in ipairs(items or {}) do self[#self + 1] = x end
  return self
end

function diag.lines(...)
  local l = setmetatable({}, Lines)
  for i = 1, select("#", ...) do
    local x = select(i, ...)
    if x ~= nil then l[#l + 1] = x end
  end
  return l
end

-- ---- severities --------------------------------------------------------------------------

diag.SEVERITY_RANK = { ok = 0, info = 1, warning = 2, critical = 3 }

-- "critical" when value >= crit, "warning" when >= warn, else nil.
function diag.severity_at(value, warn, crit)
  if crit and value >= crit then return "critical" end
  if value >= warn then return "warning" end
  return nil
end

-- The worse of two severities (either may be nil).
function diag.worse(a, b)
  if not a then return b end
  if not b then return a end
  return diag.SEVERITY_RANK[b] > diag.SEVERITY_RANK[a] and b or a
end

-- The verdicts worst first; verdicts of one severity keep their order. A new array.
function diag.worst_first(verdicts)
  local tmp = {}
  for i, v in ipairs(verdicts) do tmp[i] = { v = v, i = i } end
  table.sort(tmp, function(a, b)
    local ra, rb = diag.SEVERITY_RANK[a.v.severity], diag.SEVERITY_RANK[b.v.severity]
    if ra ~= rb then return ra > rb end
    return a.i < b.i
  end)
  local out = {}
  for i, x in ipairs(tmp) do out[i] = x.v end
  return out
end

-- ---- verdicts and report sections ----------------------------------------------------------

local function plain(list)
  local out = {}
  for i, x in ipairs(list or {}) do out[i] = x end
  return out
end

-- diag.verdict(id, severity, title, evidence, next_steps): checks the severity here, so a typo
-- is reported at the snippet's line rather than after the run. evidence and next_steps are
-- arrays of lines (diag.lines or plain).
function diag.verdict(id, severity, title, evidence, next_steps)
  if not diag.SEVERITY_RANK[severity] then
    error(string.format("diag.verdict(%q): severity %q is not ok|info|warning|critical",
      tostring(id), tostring(severity)), 2)
  end
  return { id = id, severity = severity, title = title, evidence = plain(evidence),
    next_steps = plain(next_steps) }
end

-- diag.ruled_out(id, fmt, ...): a hypothesis checked on collected data and found fine — id a
-- kebab-case hypothesis id ("cpu-throttling"), the text one line saying what was checked, with
-- its figure ("not throttled: 0 ms of 5.0 s"). Only for data that was collected: a probe that
-- is missing rules nothing out.
function diag.ruled_out(id, fmt, ...)
  if type(id) ~= "string" or not id:find("^[a-z0-9]+[a-z0-9%-]*$") or id:find("%-%-") or id:find("%-$") then
    error(string.format("diag.ruled_out(%q): the id is not a kebab-case hypothesis id", tostring(id)), 2)
  end
  local text = select("#", ...) > 0 and string.format(fmt, ...) or fmt
  if type(text) ~= "string" or text == "" then
    error(string.format("diag.ruled_out(%q): no text", id), 2)
  end
  return { id = id, text = text }
end

-- diag.answer(): what a snippet returns, assembled as its hypotheses are checked.
--   a.add(x)       x a verdict (diag.verdict), a ruled-out item (diag.ruled_out), an array of
--                  those, or nil (nothing to say)
--   a.section(s)   a report section (diag.table, diag.histogram, diag.text); nil is ignored
--   a.metric(name, value, help)
--                  a key figure of the run, which `diagnose watch` exports as the Prometheus
--                  gauge diagnose_NAME{recipe, target}: name [a-z][a-z0-9_]* ending in its unit
--                  (_seconds, _bytes, _ratio, _per_second, _total), in base units (seconds, not
--                  µs; a ratio 0..1, not a percentage); value a finite number, or nil or false
--                  when it was not measured (`x and y / n` gives false: nothing is exported);
--                  help one line saying what it is
--   a.verdicts     the verdicts so far (an array: a snippet may reorder it)
--   a.result()     { verdicts = {...}, report = {...}, ruled_out = { {id=, text=}, ... },
--                    metrics = { {name=, value=, help=}, ... } }
function diag.answer()
  local a = { verdicts = {}, ruled_out = {}, report = {}, metrics = {} }
  function a.add(x)
    if x == nil then return end
    if x.severity then
      a.verdicts[#a.verdicts + 1] = x
    elseif x.text and x.id then
      a.ruled_out[#a.ruled_out + 1] = x
    else
      for _, y in ipairs(x) do a.add(y) end
    end
  end
  function a.section(s)
    if s then a.report[#a.report + 1] = s end
  end
  function a.metric(name, value, help)
    if type(name) ~= "string" or not name:find("^[a-z][a-z0-9_]*$") or not (name:find("_seconds$") or
        name:find("_bytes$") or name:find("_ratio$") or name:find("_per_second$") or name:find("_total$")) then
      error(string.format("a.metric(%q): not a metric name ending in its unit", tostring(name)), 2)
    end
    if value == nil or value == false then return end
    if type(value) ~= "number" or value ~= value or value == math.huge or value == -math.huge then
      error(string.format("a.metric(%q): the value is not a finite number", name), 2)
    end
    a.metrics[#a.metrics + 1] = { name = name, value = value, help = help }
  end
  function a.result()
    return { verdicts = a.verdicts, report = a.report, ruled_out = a.ruled_out, metrics = a.metrics }
  end
  return a
end

-- Report sections: these three shapes are the contract with the report writer.
-- rows: array of rows, each an array of cells (strings or numbers) in column order.
function diag.table(title, columns, rows)
  return { kind = "table", title = title, columns = plain(columns), rows = plain(rows) }
end

-- buckets: {lo=, hi=, count=} as above (copied, so a read-only result can be passed).
function diag.histogram(title, unit, buckets)
  local copy = {}
  for i, b in ipairs(buckets or {}) do copy[i] = { lo = b.lo, hi = b.hi, count = b.count } end
  return { kind = "histogram", title = title, unit = unit, buckets = copy }
end

function diag.text(title, lines)
  return { kind = "text", title = title, lines = plain(lines) }
end

return diag
