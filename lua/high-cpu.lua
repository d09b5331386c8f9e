-- high-cpu.lua — verdicts for recipes/high-cpu.yaml: where does the target's CPU time go, and is
-- it also starved of CPU?
--
-- Reads results.profile (cpu_profile), results.runq (runq_latency), results.syscalls
-- (syscall_stats), results.context (proc_context), run and thresholds. Any probe may be missing:
-- the verdicts then say what could not be assessed instead of guessing.
--
-- How it decides (cpu = context.cpu_pct, 100 = one full CPU; shares are of profile samples):
--   cpu < idle_cpu_pct (and the samples agree)   not-busy (info); never names a function
--   fewer than MIN_SAMPLES samples               busy (info): too few samples to attribute
--   lock share >= LOCK_SHARE_PCT and futex() hot  futex-contention: lock hand-offs burn the CPU
--                                                (samples inside the lock and condition wrappers,
--                                                user and kernel, while futex() is called at
--                                                >= SYSCALL_HOT_PER_S or holds >= FUTEX_SAMPLES_PCT
--                                                of samples); names the function taking the lock
--                                                and follows into latency (next), which times it
--   kernel share >= kernel_share_pct             cpu-bound-kernel
--   user share >= USER_SHARE_PCT                 cpu-bound-user
--   neither                                      busy (info), both sides named
--   cpu-bound-* severity: critical when cpu >= SATURATED_PCT (one CPU's worth: a single-threaded
--   loop is then saturated) and the share >= DOMINANT_PCT; warning when cpu >= busy_cpu_pct;
--   below busy_cpu_pct the verdict is busy (info) instead.
--   cpu-starved: run-queue p99 >= runq_p99_warn_us (critical >= runq_p99_crit_us; at least
--   diag.MIN_RUNQ_WAITS waits), involuntary
--   switches/s >= nonvoluntary_per_s_warn, CPU pressure "some" over the window (the delta of
--   /proc/pressure/cpu total=, not avg10, which describes the 10 s before) >= psi_some_pct_warn, or cgroup
--   throttling in >= THROTTLED_PCT of periods, or the hypervisor's steal (the machine's, from
--   /proc/stat) >= steal_pct_warn of all CPUs' time; under steal, cpu is the on-CPU samples' share
--   (the kernel does not charge stolen time to the task that wanted the CPU).
--   missing-frame-pointers: >= shallow_stack_pct % of user-mode samples with at most
--   shallow_stack_frames user frames (and at least MIN_SAMPLES of them); with
--   profile.user_unwind == "dwarf" it says the stacks are truncated even so (no CFI), and stops
--   suggesting --param unwind=dwarf.
--   incomplete-data: a probe missing, lost/dropped data, or an early stop.
--   JIT code: frames a perf map named (profile.jit_frames) are named functions, shown in their
--   language's terms (diag.fn); an unnamed hot frame in a Node or JVM target (profile.runtime,
--   else V8's Builtins_ frames) gets the runtime's way to a perf map (node --perf-basic-prof...,
--   jcmd Compiler.perfmap or --param jvm_perfmap=yes, -XX:+PreserveFramePointer), never debug
--   symbols; profile.jvm_perfmap (what running jcmd gave) is evidence.
--
-- Why one file (over 800 lines): a symptom is one recipe and one snippet (docs/adding-a-symptom.md);
-- what two snippets share is in lua/lib/ (diag, waits, wait_table, peers, blocked, heap, lang,
-- alloc_wrappers).

local USER_SHARE_PCT = 70
local DOMINANT_PCT = 80
local SATURATED_PCT = 90
local MIN_SAMPLES = 20
local THROTTLED_PCT = 10
local SYSCALL_HOT_PER_S = 10000 -- a syscall rate worth naming as the cause
local LOCK_SHARE_PCT = 40 -- of samples inside lock / condition wrappers: the CPU goes to locking
local FUTEX_SAMPLES_PCT = 5 -- of samples inside futex(): the locks are contended, not just taken

local T = {
  busy = diag.threshold("busy_cpu_pct"),
  idle = diag.threshold("idle_cpu_pct"),
  kernel_share = diag.threshold("kernel_share_pct"),
  runq_warn = diag.threshold("runq_p99_warn_us"),
  runq_crit = diag.threshold("runq_p99_crit_us"),
  nonvol = diag.threshold("nonvoluntary_per_s_warn"),
  psi = diag.threshold("psi_some_pct_warn"),
  steal = diag.threshold("steal_pct_warn"),
  shallow_frames = diag.threshold("shallow_stack_frames"),
  shallow_pct = diag.threshold("shallow_stack_pct"),
  top_n = diag.threshold("top_n"),
}

local profile, runq, syscalls, context = results.profile, results.runq, results.syscalls, results.context
local target_arg, pids, pid, perf_procs = diag.target(run, context)
local window = (context and context.wall_s) or run.duration_s or 0
local ncpus = (context and context.ncpus) or run.ncpus

-- ---- the profile, summarised once ---------------------------------------------------------

local prof
if profile then
  prof = {
    samples = profile.samples or 0, user = profile.user_samples or 0, kernel = profile.kernel_samples or 0,
    hz = profile.frequency_hz or 99,
    self_user = {}, self_kernel = {}, self_all = {}, incl_user = {},
    user_mode = 0, shallow = 0, in_bpf = 0,
  }
  for _, s in ipairs(profile.stacks or {}) do
    local n, user = s.count, s.user or {}
    if s.in_kernel then
      local kernel = s.kernel or {}
      local leaf = kernel[1] or "[unknown]"
      diag.add(prof.self_kernel, leaf, n)
      diag.add(prof.self_all, leaf .. " [k]", n)
      for _, f in ipairs(kernel) do -- our own tracing, seen from inside
        if f:find("^bpf_trace_run") or f:find(" %[bpf%]$") then
          prof.in_bpf = prof.in_bpf + n
          break
        end
      end
    else
      local leaf = user[1] or "[unknown]"
      prof.user_mode = prof.user_mode + n
      if #user <= T.shallow_frames then prof.shallow = prof.shallow + n end
      diag.add(prof.self_user, leaf, n)
      diag.add(prof.self_all, leaf, n)
    end
    local seen, incl = {}, prof.incl_user -- the hot loop: 16k stacks x 100+ frames
    for _, f in ipairs(user) do
      if not seen[f] then
        seen[f] = true
        incl[f] = (incl[f] or 0) + n
      end
    end
  end
  prof.user_share = diag.pct(prof.user, prof.samples)
  prof.kernel_share = diag.pct(prof.kernel, prof.samples)
end

-- ---- JIT code: names from a perf map, the runtime that made it ------------------------------

-- Frames a perf map named are named functions (JS, Java). The runtime is the engine's reading of
-- the target's mapped files (--pid); for a set, V8's builtins among the frames say Node.
local jit = diag.name_set(profile and profile.jit_frames)
local runtime = profile and profile.runtime
if prof and not runtime then
  for f in pairs(prof.incl_user) do
    if f:find("^Builtins_") or f:find("^v8::internal::") then
      runtime = "node"
      break
    end
  end
end
local function named(name) return diag.symbolized(name, jit) end
local function fn(name) return diag.fn(name, jit) end

-- What running jcmd gave (--param jvm_perfmap=yes), as a line of evidence; nil when not asked.
local function jvm_perfmap_line()
  local r = profile and profile.jvm_perfmap
  if not r then return nil end
  if r:find("^ran: ") then
    return string.format("At the end of the window diagnose ran %s (--param jvm_perfmap=yes); the perf map read after it has %s entries",
      r:sub(6), diag.fmt_count(profile.perf_map_entries or 0))
  end
  return "--param jvm_perfmap=yes: jcmd Compiler.perfmap " .. r
end

-- Unnamed code in a JIT runtime's process (name: the hot frame): {what = a title phrase, ev =
-- lines, steps = lines} saying how that runtime names its JIT code; nil when the runtime is not
-- known (the code is then taken for a native binary's, whose names come with debug symbols).
local function unnamed_jit(name)
  if runtime == "node" then
    return { what = string.format("JIT-compiled JavaScript without a perf map (%s)", name),
      ev = { "The process runs V8 (Node.js): its JIT-compiled JavaScript lives in anonymous memory that no file or debug package describes; V8 names it only in a perf map (/tmp/perf-PID.map), written when node runs with --perf-basic-prof" },
      steps = {
        string.format("Restart node with --perf-basic-prof-only-functions (or --perf-basic-prof) so that V8 writes /tmp/perf-%s.map, then re-run diagnose high-cpu %s: JS functions are then named (debug symbols cannot name JIT code)", pid, target_arg),
        "Add --interpreted-frames-native-stack to name JS functions not yet optimized too (they run inside Builtins_InterpreterEntryTrampoline)",
        "Meanwhile, from inside the process: node --cpu-prof (a .cpuprofile for Chrome DevTools) or the inspector's profiler" } }
  elseif runtime == "jvm" then
    local ev = diag.lines("The process is a JVM: its JIT-compiled methods live in the code cache, anonymous memory that no file or debug package describes; the JVM names them in a perf map (/tmp/perf-PID.map) when asked",
      jvm_perfmap_line())
    local steps = diag.lines()
    local r = profile.jvm_perfmap
    if (profile.perf_map_entries or 0) > 0 and r and r:find("^ran: ") then
      steps:add("The perf map jcmd wrote does not cover this code (compiled after it, or not a method: a stub, the interpreter's code): re-run; jcmd PID Compiler.perfmap writes the code cache as it is then")
    elseif (profile.perf_map_entries or 0) > 0 then
      steps:add("The perf map /tmp/perf-%s.map does not cover this code (written before it was compiled): re-run with --param jvm_perfmap=yes, so that it is written as the window ends", pid)
    else
      steps:add("Have the JVM write its perf map: jcmd %s Compiler.perfmap (JDK 17+, as the JVM's user), then re-run; or let diagnose run it as the window ends: diagnose high-cpu %s --param jvm_perfmap=yes (it runs jcmd as the JVM's user and says so)", pid, target_arg)
    end
    if r and not r:find("^ran: ") then
      steps:add("jcmd did not write the map (see the evidence): run jcmd %s Compiler.perfmap by hand as the JVM's user (JDK 17+; older JDKs: the perf-map-agent)", pid)
    end
    steps:add("For the callers of JIT-compiled methods: start the JVM with -XX:+PreserveFramePointer (frames keep frame pointers; a few %% of CPU), or profile inside it with async-profiler or JFR (jcmd %s JFR.start duration=30s filename=cpu.jfr)", pid)
    return { what = string.format("JIT-compiled Java without a perf map (%s)", name), ev = ev, steps = steps }
  end
  return nil
end

-- Line-level detail for a named hot function: perf annotate for native code; the runtime's own
-- profiler for JIT code a perf map named.
local function line_level_step(name)
  local j = jit[name] and diag.jit_frame(name)
  if j and j.lang == "JS" then
    return "Line-level detail: node --cpu-prof (a .cpuprofile for Chrome DevTools, with line ticks), or the inspector's profiler"
  elseif j and j.lang == "Java" then
    return string.format("Line-level and inlining detail: async-profiler (asprof -e cpu -d 30 %s) or JFR (jcmd %s JFR.start duration=30s filename=cpu.jfr)", pid, pid)
  end
  local record = string.format("perf record -F 999 -g %s -- sleep 10", perf_procs)
  if named(name) and not jit[name] then
    return string.format("Line-level detail: %s, then perf annotate %s", record, diag.sh_quote(name))
  end
  local file, off = diag.stripped_frame(name)
  if not file then
    return string.format("Line-level detail: %s, then perf report --sort dso,sym for the unnamed code", record)
  end
  local h = diag.debug_hint(profile, name)
  local path = (h and h.path) or file
  local addr = off + ((h and h.vaddr_bias) or 0)
  return string.format("Line-level detail: %s, then perf annotate --stdio --dsos %s (named once its debug symbols are installed); now: objdump -d --start-address=0x%x --stop-address=0x%x %s (%s)",
    record, diag.sh_quote(file), addr, addr + 0x400, diag.sh_quote(path), name)
end

-- The most frequent path among stacks matching want(stack), as {path=, count=}.
local function hottest_path(want, frames_of)
  local paths = {}
  for _, s in ipairs(profile.stacks or {}) do
    if want(s) then
      local frames = frames_of(s) or {}
      if #frames > 0 then diag.add(paths, diag.call_path(frames), s.count) end
    end
  end
  local top = diag.ranked(paths, 1)[1]
  return top and { path = top.name, count = top.count }
end

local function share_list(ranked, n)
  local parts = diag.lines()
  for i = 1, math.min(n, #ranked) do
    parts:add("%s %s", fn(ranked[i].name), diag.fmt_pct(diag.pct(ranked[i].count, prof.samples)))
  end
  return table.concat(parts, ", ")
end

-- ---- CPU use -------------------------------------------------------------------------------

local sample_cpu = prof and window > 0 and diag.pct(prof.samples, prof.hz * window)
-- Under the hypervisor's steal the on-CPU samples say what the target wanted (diag.cpu_demand).
local cpu, cpu_charged, steal, stolen = diag.cpu_demand(context, profile, window, T.steal)
local cpu_source = cpu and "measured"
if not cpu and sample_cpu then
  cpu, cpu_source = sample_cpu, "estimated from samples"
end

local function cpu_line()
  local s = string.format("CPU use %s of one CPU over %.1f s", diag.fmt_pct(cpu), window)
  if cpu_charged then
    s = s .. string.format(" by on-CPU samples; the kernel charged %s (%s): the hypervisor stole %s of the machine's CPU time",
      diag.fmt_pct(cpu_charged), diag.cpu_time(context), diag.fmt_pct(steal))
  elseif context then
    s = s .. string.format(" (%s)", diag.cpu_time(context))
  else
    s = s .. " (" .. cpu_source .. ")"
  end
  if context then
    s = s .. string.format("; %d thread%s", context.threads or 0, context.threads == 1 and "" or "s")
  end
  if ncpus then s = s .. string.format(", %d CPUs", ncpus) end
  return s
end

local function split_line()
  return string.format("%d samples at %d Hz: %s in user code, %s in the kernel", prof.samples, prof.hz,
    diag.fmt_pct(prof.user_share), diag.fmt_pct(prof.kernel_share))
end

-- ---- starved of CPU: four checks, one verdict -------------------------------------------------

local runq_wait = diag.runq(runq)
local nonvol_rate = context and diag.rate(context.nonvoluntary_ctxt_switches, window)
-- Share of the window in which some task waited for a CPU: the stall counter's delta.
local psi_total = diag.get(context, "psi", "some_total_us")
local psi_pct = psi_total and window and window > 0 and psi_total / (window * 1e6) * 100 or nil
local cgroup = context and context.cgroup
local throttled_pct = cgroup and diag.pct(cgroup.nr_throttled or 0, cgroup.nr_periods or 0) or 0
local runq_line = runq_wait and string.format("Run-queue latency p99 %s, p50 %s, max %s over %s wake-ups",
  diag.fmt_us(runq_wait.p99), diag.fmt_us(runq_wait.p50), diag.fmt_us(runq_wait.max), diag.fmt_count(runq_wait.count))

-- Each check: {sev=, title=, line=} when it fires, a ruled-out line when its data says fine, or
-- nil without data.
local function run_queue_check()
  if not runq_wait then return nil end
  if runq_wait.p99 >= T.runq_crit then
    return { sev = "critical", line = runq_line, title = string.format("Starved of CPU: run-queue p99 %s (critical above %s)",
      diag.fmt_us(runq_wait.p99), diag.fmt_us(T.runq_crit)) }
  elseif runq_wait.p99 >= T.runq_warn then
    return { sev = "warning", line = runq_line, title = string.format("Waiting for CPU: run-queue p99 %s (warning above %s)",
      diag.fmt_us(runq_wait.p99), diag.fmt_us(T.runq_warn)) }
  end
  -- Below the warning, not "no wait": the host may still be short of CPU by its pressure.
  return diag.ruled_out("run-queue-wait", "run-queue wait below its warning: p99 %s over %s wake-ups (warning at %s)",
    diag.fmt_us(runq_wait.p99), diag.fmt_count(runq_wait.count), diag.fmt_us(T.runq_warn))
end

local function preemption_check()
  if not nonvol_rate then return nil end
  if nonvol_rate < T.nonvol then
    return diag.ruled_out("preemption", "not preempted: %s involuntary context switches/s", diag.fmt_count(nonvol_rate))
  end
  return { sev = "warning",
    title = string.format("Waiting for CPU: %s involuntary context switches/s", diag.fmt_count(nonvol_rate)),
    line = string.format("%s involuntary context switches/s (threshold %s): it is preempted while runnable",
      diag.fmt_count(nonvol_rate), diag.fmt_count(T.nonvol)) }
end

local function cpu_pressure_check()
  if not psi_pct then return nil end
  if psi_pct < T.psi then
    return diag.ruled_out("cpu-pressure", "no CPU pressure on the host: tasks waited for a CPU %s of the window", diag.fmt_pct(psi_pct))
  end
  return { sev = "warning",
    title = string.format("The machine is short of CPU: tasks waited for a CPU %s of the window", diag.fmt_pct(psi_pct)),
    line = string.format("CPU pressure (/proc/pressure/cpu) some: stalled %s of the %.1f s window (threshold %s): tasks on this host wait for CPU",
      diag.fmt_pct(psi_pct), window, diag.fmt_pct(T.psi)) }
end

local function steal_check()
  if not steal then return nil end
  if not stolen then
    return diag.ruled_out("cpu-steal", "no CPU time stolen by a hypervisor to speak of: %s of the machine's CPU time (warning at %s)",
      diag.fmt_pct(steal), diag.fmt_pct(T.steal))
  end
  return { sev = "warning", steal = true,
    title = string.format("The hypervisor took %s of this machine's CPU time (steal)", diag.fmt_pct(steal)),
    line = string.format("CPU steal (/proc/stat) %s of all %s CPUs' time over the %.1f s window (threshold %s): this VM's vCPUs wanted to run while the hypervisor ran something else",
      diag.fmt_pct(steal), ncpus and tostring(ncpus) or "the", window, diag.fmt_pct(T.steal)) }
end

local function throttling_check()
  if not cgroup then return nil end
  if throttled_pct < THROTTLED_PCT then
    return diag.ruled_out("cpu-throttling", "not throttled: %s in %d of %d periods (%s) during %.1f s",
      diag.fmt_us(cgroup.throttled_us or 0), cgroup.nr_throttled or 0, cgroup.nr_periods or 0, diag.fmt_pct(throttled_pct), window)
  end
  return { sev = "warning",
    title = string.format("Throttled by its cgroup CPU quota in %s of periods", diag.fmt_pct(throttled_pct)),
    line = string.format("cgroup %s: cpu.max %s, throttled in %d of %d periods (%s), %s throttled",
      cgroup.path or "?", cgroup.cpu_max or "?", cgroup.nr_throttled or 0, cgroup.nr_periods or 0,
      diag.fmt_pct(throttled_pct), diag.fmt_us(cgroup.throttled_us or 0)) }
end

local function starved_steps(throttled, stolen_cpu)
  local steps = diag.lines()
  if stolen_cpu then
    steps:add("Steal is the hypervisor giving this VM's CPUs to other guests, or a burstable instance out of CPU credits: check the provider's CPU credit balance (AWS T-family: CPUCreditBalance), move to a dedicated or non-burstable instance type, or migrate the VM; watch the st column of vmstat 1 or %%st in top")
  end
  if throttled then
    -- cgroup v2 has cpu.max; v1 (hybrid hosts) cpu.cfs_quota_us and cpu.cfs_period_us.
    local quota = cgroup.version == 1 and "cpu.cfs_quota_us/cpu.cfs_period_us" or "cpu.max"
    steps:add("The cgroup quota caps it (%s %s): raise the container's CPU limit or cut the work; watch nr_throttled and the throttled time in %s/cpu.stat",
      quota, cgroup.cpu_max or "?", cgroup.dir or "its cgroup")
  else
    steps:add("Check CPU quota throttling: cat /proc/%s/cgroup, then cpu.max and cpu.stat (nr_throttled, throttled_usec) in that cgroup", pid)
  end
  steps:add("Look for noisy neighbours: top -o %%CPU or pidstat -u 1 5; compare runnable tasks (vmstat 1, column r) with the CPU count (%s)",
    ncpus and tostring(ncpus) or "nproc")
  steps:add("Check CPU affinity: taskset -cp %s (pinned to fewer CPUs than it has busy threads?)", pid)
  steps:add("If the host is simply saturated: move load off it, add CPUs, or lower batch work's priority (nice, cgroup cpu.weight)")
  return steps
end

-- cpu-starved: the worst of the checks that fire, titled by the first; the checks whose data
-- says fine are ruled out. Returns the verdict (or nil) and the ruled-out lines.
local function cpu_starved()
  local sev, title, throttled, stolen_cpu = nil, nil, false, false
  local ev, clear = diag.lines(), {}
  for _, check in ipairs({ steal_check, run_queue_check, preemption_check, cpu_pressure_check, throttling_check }) do
    local r = check()
    if r and r.sev then
      sev, title = diag.worse(sev, r.sev), title or r.title
      ev:add(r.line)
      throttled = throttled or check == throttling_check
      stolen_cpu = stolen_cpu or r.steal
    elseif r then
      clear[#clear + 1] = r
    end
  end
  if not sev then return nil, clear end
  if runq_wait and runq_wait.total and window > 0 then
    ev:add("Waited %s in total for a CPU during the %.1f s window", diag.fmt_us(runq_wait.total), window)
  end
  if context and ncpus then
    ev:add("%d thread%s, %d CPUs", context.threads or 0, context.threads == 1 and "" or "s", ncpus)
  end
  return diag.verdict("cpu-starved", sev, title, ev, starved_steps(throttled, stolen_cpu)), clear
end

-- ---- where the CPU goes --------------------------------------------------------------------

local busy_sev = cpu and cpu >= T.busy and "warning" or "info"
local function bound_sev(share)
  if cpu and cpu >= SATURATED_PCT and share >= DOMINANT_PCT then return "critical" end
  return busy_sev
end

local fp_missing = prof and prof.user_mode >= MIN_SAMPLES and
    diag.pct(prof.shallow, prof.user_mode) >= T.shallow_pct

local function cpu_user_verdict()
  local top = diag.ranked(prof.self_user, 5)
  local hot = top[1]
  local share = diag.pct(hot.count, prof.samples)
  local unnamed = not named(hot.name) and unnamed_jit(hot.name)
  local title
  if named(hot.name) then
    title = string.format("CPU-bound in user code: %s of samples in %s", diag.fmt_pct(share), fn(hot.name))
  elseif unnamed then
    title = string.format("CPU-bound in user code: %s of samples in %s", diag.fmt_pct(share), unnamed.what)
  else
    title = string.format("CPU-bound in user code: %s of samples in an unsymbolized function (%s)",
      diag.fmt_pct(share), hot.name)
  end
  local ev = diag.lines(cpu_line(), split_line(), "Top functions by self time: " .. share_list(top, 5))
  local path = not fp_missing and
      hottest_path(function(s) return not s.in_kernel and (s.user or {})[1] == hot.name end,
        function(s) return s.user end)
  if path then
    ev:add("Hottest call path into %s (%s of samples): %s", fn(hot.name),
      diag.fmt_pct(diag.pct(path.count, prof.samples)), path.path)
  end
  if fp_missing then
    ev:add("Callers are unreliable: most user stacks are truncated (see missing-frame-pointers); self time is still right")
  end
  if unnamed then
    ev:extend(unnamed.ev)
  elseif runtime == "jvm" then
    ev:add(jvm_perfmap_line())
  end
  local steps = diag.lines(
    string.format("Read %s and its callers for the hot loop: work repeated per request or per item, an accidentally quadratic algorithm, a spin or busy-wait, a cache that stopped hitting",
      fn(hot.name)),
    line_level_step(hot.name),
    string.format("Flame graph: diagnose high-cpu %s --folded cpu.folded, then flamegraph.pl cpu.folded > cpu.svg", target_arg),
    "If the work is legitimate (load went up), compare the request rate with its baseline and scale out; if not, check what changed: deploy, config, input size")
  if unnamed then -- nothing to read or annotate before the code has a name
    local all = diag.lines()
    all:extend(unnamed.steps)
    all:add(steps[3])
    all:add(steps[4])
    steps = all
  elseif path and path.path:find("Builtins_InterpreterEntryTrampoline", 1, true) then
    steps:add("Callers shown as Builtins_InterpreterEntryTrampoline are JS functions V8 still interprets: add --interpreted-frames-native-stack to node's flags (with --perf-basic-prof) to name them")
  elseif not named(hot.name) then
    table.insert(steps, 1, diag.debug_symbols_step(diag.debug_hint(profile, hot.name), diag.stripped_frame(hot.name)))
  end
  return diag.verdict("cpu-bound-user", bound_sev(prof.user_share), title, ev, steps)
end

-- cpu-bound-user for a Python service: the innermost Python function of the samples (CPython
-- frames read in BPF, lang.lua), its hottest lines, the interpreter's C code under it; nil when
-- under half of the user-mode samples carry Python frames.
local function cpu_python_verdict()
  local py = lang.python_profile(profile.stacks, function(s) return not s.in_kernel end)
  if py.samples == 0 or diag.pct(py.samples, math.max(prof.user_mode, 1)) < 50 then return nil end
  local top = diag.ranked(py.by_fn, 5)
  local hot = top[1]
  local share = diag.pct(hot.count, prof.samples)
  local _, fn, file = lang.split(hot.name)
  local lines = lang.lines_of(py, hot.name, prof.samples, 3)
  local title = string.format("CPU-bound in Python code: %s of samples in %s (%s)%s", diag.fmt_pct(share), fn,
    file, lines[1] and (", hottest line " .. lines[1]:match(":(%S+)") .. " " .. lines[1]:match("%S+$")) or "")
  local runtime = profile.unwind and profile.unwind.python_runtime or "CPython"
  local ev = diag.lines(cpu_line(), split_line())
  local parts = diag.lines()
  for _, f in ipairs(top) do parts:add("%s %s", f.name, diag.fmt_pct(diag.pct(f.count, prof.samples))) end
  ev:add("%s frames read in %s of samples; innermost Python functions: %s", runtime,
    diag.fmt_pct(diag.pct(py.samples, prof.samples)), table.concat(parts, ", "))
  if #lines > 0 then ev:add("Hottest lines of %s: %s", fn, table.concat(lines, ", ")) end
  local native = diag.ranked(py.native[hot.name] or {}, 3)
  if native[1] then
    ev:add("Of that, in the interpreter's own C code: %s", share_list(native, 3))
  end
  local path = hottest_path(function(s) return not s.in_kernel and select(2, lang.python_leaf(s)) and
      lang.split(select(2, lang.python_leaf(s))) == hot.name end,
    function(s)
      local frames = {}
      for i, f in ipairs(s.user or {}) do
        if s.user_from and s.user_from[i] == "python" then frames[#frames + 1] = f end
      end
      return frames
    end)
  if path then
    ev:add("Hottest Python call path into %s (%s of samples): %s", fn,
      diag.fmt_pct(diag.pct(path.count, prof.samples)), path.path)
  end
  local steps = {
    string.format("Read %s in %s%s and its callers for the hot loop: work repeated per request or per item, an accidentally quadratic algorithm, a busy-wait, a cache that stopped hitting",
      fn, file, lines[1] and (" (line " .. lines[1]:match(":(%d+)") .. ")") or ""),
    string.format("A longer look at the live process, with the same Python frames: diagnose high-cpu %s --duration 30 --folded cpu.folded, then flamegraph.pl cpu.folded > cpu.svg", target_arg),
    "If the work is legitimate (load went up), compare the request rate with its baseline and scale out (more worker processes: one CPython process runs Python code on one CPU at a time); if not, check what changed: deploy, config, input size",
  }
  return diag.verdict("cpu-bound-user", bound_sev(prof.user_share), title, ev, steps)
end

local SYSCALL_ADVICE = {
  { "^write", "Batch writes: buffer in user space (bigger buffers, setvbuf), use writev, or sendmmsg for datagrams" },
  { "^send", "Batch sends: coalesce small messages, use sendmmsg or writev, consider TCP_CORK / MSG_MORE" },
  { "^read", "Read in larger chunks (bigger buffers) and check for tiny reads in a loop" },
  { "^recv", "Receive in batches (recvmmsg) and with larger buffers" },
  { "poll$", "Polling: check for an event loop spinning with a zero timeout or on a descriptor that is always ready" },
  { "^epoll", "Polling: check for an event loop spinning with a zero timeout or on a descriptor that is always ready" },
  { "^select", "Polling: check for an event loop spinning with a zero timeout or on a descriptor that is always ready" },
  { "^sched_yield", "Spinning: a lock or queue spins with sched_yield; use a blocking primitive (futex/condition variable)" },
  { "^futex", "Lock contention: find the contended lock (off-CPU / lock runbooks) and shorten or split the critical section" },
  { "nanosleep$", "Very short sleeps in a loop: wait on an event instead of polling with sleeps" },
  { "^clock_gettime", "Time calls should stay in the vDSO; if they reach the kernel the clocksource is not vDSO-capable (check /sys/devices/system/clocksource)" },
  { "^gettimeofday", "Time calls should stay in the vDSO; if they reach the kernel the clocksource is not vDSO-capable (check /sys/devices/system/clocksource)" },
  { "^get[pug]", "The answer does not change: call it once and cache the value" },
  { "^mmap", "Memory churn: the allocator maps and unmaps memory; reuse buffers or tune the allocator (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_, jemalloc)" },
  { "^munmap", "Memory churn: the allocator maps and unmaps memory; reuse buffers or tune the allocator (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_, jemalloc)" },
  { "^brk", "Memory churn: the heap grows and shrinks; reuse buffers or tune the allocator (MALLOC_TRIM_THRESHOLD_)" },
  { "^madvise", "Memory churn: the allocator returns memory and takes it back; tune its decay/trim settings" },
}

local function syscall_advice(name)
  for _, a in ipairs(SYSCALL_ADVICE) do
    if name:find(a[1]) then return a[2] end
  end
  return string.format("Find why %s() is called so often and batch or avoid the calls", name)
end

local function top_syscalls(n)
  if not syscalls then return {} end
  return diag.top_n(syscalls.syscalls or {}, n, "count")
end

-- On-CPU samples per syscall, from the syscall entry frame in each kernel stack
-- (__x64_sys_write, __arm64_sys_write, ...): the CPU time a syscall costs, measured by the
-- profile rather than by timing every call.
local syscall_samples = {}
if profile then
  for _, st in ipairs(profile.stacks or {}) do
    for _, f in ipairs(st.kernel or {}) do
      local name = f:match("^__x64_sys_(.+)$") or f:match("^__arm64_sys_(.+)$")
        or f:match("^__ia32_sys_(.+)$") or f:match("^__se_sys_(.+)$") or f:match("^__do_sys_(.+)$")
        or f:match("^ksys_(.+)$")
      if name then
        syscall_samples[name] = (syscall_samples[name] or 0) + st.count
        break
      end
    end
  end
end

local function syscall_cpu_share(name)
  local n = syscall_samples[name]
  if not n or not profile or (profile.samples or 0) == 0 then return nil end
  return diag.pct(n, profile.samples)
end

local function syscall_line(sc)
  local parts = diag.lines(diag.fmt_rate(diag.rate(sc.count, window)))
  if sc.total_ns then
    parts:add("avg %s, %s total", diag.fmt_ns(sc.count > 0 and sc.total_ns / sc.count or 0),
      diag.fmt_ns(sc.total_ns))
  end
  local share = syscall_cpu_share(sc.name)
  if share then parts:add("%s of CPU samples", diag.fmt_pct(share)) end
  if (sc.errors or 0) > 0 then
    parts:add("%s failing", diag.fmt_pct(diag.pct(sc.errors, sc.count)))
  end
  return string.format("%s() %s calls (%s)", sc.name, diag.fmt_count(sc.count), table.concat(parts, ", "))
end

-- Samples taken inside the lock and condition wrappers (pthread_mutex_lock / unlock,
-- pthread_cond_wait / signal, ... and the kernel's futex() under them), those inside futex()
-- itself, and who made the calls: the user function past the wrappers in each stack, with its
-- kind (a lock or a condition).
local LOCK_CALLS = { "pthread_mutex_unlock", "lll_unlock", "pthread_rwlock_unlock", "sem_post",
  "pthread_spin_unlock", "std::mutex::unlock" }
local COND_CALLS = { "pthread_cond_signal", "pthread_cond_broadcast" }
local WRAPPER_DEPTH = 6 -- the wrappers sit next to the leaf (they make the futex call)
local wrapper_memo = {}
local function wrapper_kind(f)
  local k = wrapper_memo[f]
  if k == nil then
    k = ((diag.any_frame({ f }, waits.USER.lock) or diag.any_frame({ f }, LOCK_CALLS)) and "lock")
      or ((diag.any_frame({ f }, waits.USER.cond) or diag.any_frame({ f }, COND_CALLS)) and "cond")
      or false
    wrapper_memo[f] = k
  end
  return k or nil
end
local locking
if profile then
  -- samples inside futex(): syscall_samples has them, by the syscall's entry frame
  locking = { n = 0, futex = syscall_samples.futex or 0, by = {}, kind_of = {} }
  for _, s in ipairs(profile.stacks or {}) do
    local user = s.user or {}
    for i = 1, math.min(#user, WRAPPER_DEPTH) do
      local kind = wrapper_kind(user[i])
      if kind then
        locking.n = locking.n + s.count
        local j = i + 1
        while user[j] and wrapper_kind(user[j]) do j = j + 1 end
        if user[j] then
          diag.add(locking.by, user[j], s.count)
          locking.kind_of[user[j]] = locking.kind_of[user[j]] or kind
        end
        break
      end
    end
  end
  locking.callers = diag.ranked(locking.by, 3)
end

local function futex_verdict(rate)
  local callers, kind_of = locking.callers, locking.kind_of
  local top = callers[1]
  local lock_pct = diag.pct(locking.n, prof.samples)
  local what = top and (kind_of[top.name] == "cond" and "a condition variable" or "a lock") or "locks"
  local title = string.format("CPU burnt handing %s over: %s of samples in locking%s", what, diag.fmt_pct(lock_pct),
    top and (" from " .. diag.fn(top.name)) or "")
  local ev = diag.lines(cpu_line(), split_line(),
    string.format("%s of samples inside the lock and condition wrappers (user and kernel), %s inside futex()%s: the threads contend, and each hand-off is a syscall, a wake-up and a context switch",
      diag.fmt_pct(lock_pct), diag.fmt_pct(diag.pct(locking.futex, prof.samples)),
      rate and string.format(", called %s", diag.fmt_rate(rate)) or ""))
  if #callers > 0 then
    local parts = diag.lines()
    for _, c in ipairs(callers) do
      parts:add("%s %s (%s)", diag.fn(c.name), diag.fmt_pct(diag.pct(c.count, prof.samples)),
        kind_of[c.name] == "cond" and "condition wait" or "lock")
    end
    ev:add("Taking the lock (past the wrappers in those stacks): " .. table.concat(parts, ", "))
  else
    ev:add("The user stacks do not reach past the lock wrappers: the caller is unknown")
  end
  local scs = top_syscalls(3)
  if #scs > 0 then
    local lines = diag.lines()
    for _, sc in ipairs(scs) do lines:add(syscall_line(sc)) end
    ev:add("Top syscalls: " .. table.concat(lines, "; "))
  end
  local steps = diag.lines(string.format("Run next: diagnose latency %s: it times the waits on the lock, names the holder and the waiters' call paths", target_arg))
  if top then
    steps:add("Shorten or split the critical section in %s (less work under the lock, per-thread or sharded state, a lock-free counter)", diag.fn(top.name))
  end
  steps:add("Every futex() caller meanwhile: perf record -e syscalls:sys_enter_futex -g %s -- sleep 5; perf report --no-children", perf_procs)
  local v = diag.verdict("futex-contention", bound_sev(lock_pct), title, ev, steps)
  v.next = { recipe = "latency", params = {} }
  return v
end

-- futex() calls per second (the syscalls probe), or nil without it.
local function futex_rate()
  for _, sc in ipairs((syscalls and syscalls.syscalls) or {}) do
    if sc.name == "futex" then return diag.rate(sc.count, window) end
  end
  return nil
end

-- The CPU goes to locking, and the locks are contended (futex() is hot), not merely taken.
local function futex_hot()
  if not locking or diag.pct(locking.n, prof.samples) < LOCK_SHARE_PCT then return false end
  local rate = futex_rate()
  return (rate and rate >= SYSCALL_HOT_PER_S) or diag.pct(locking.futex, prof.samples) >= FUTEX_SAMPLES_PCT
end

local function cpu_kernel_verdict()
  local ktop = diag.ranked(prof.self_kernel, 5)
  local scs = top_syscalls(3)
  local hot_sc = scs[1]
  local hot_rate = hot_sc and diag.rate(hot_sc.count, window)
  local title
  if hot_sc and hot_rate and hot_rate >= SYSCALL_HOT_PER_S then
    title = string.format("CPU-bound in the kernel: %s of samples, mostly %s() at %s",
      diag.fmt_pct(prof.kernel_share), hot_sc.name, diag.fmt_rate(hot_rate))
  elseif ktop[1] then
    title = string.format("CPU-bound in the kernel: %s of samples, hottest in %s",
      diag.fmt_pct(prof.kernel_share), ktop[1].name)
  else
    title = string.format("CPU-bound in the kernel: %s of samples", diag.fmt_pct(prof.kernel_share))
  end
  local ev = diag.lines(cpu_line(), split_line())
  if #scs > 0 then
    local lines = diag.lines()
    for _, sc in ipairs(scs) do lines:add(syscall_line(sc)) end
    ev:add("Top syscalls: " .. table.concat(lines, "; "))
  elseif not syscalls then
    ev:add("Syscall counts are missing: kernel time cannot be tied to syscalls")
  end
  if ktop[1] then ev:add("Hottest kernel functions (self): " .. share_list(ktop, 5)) end
  local kpath = hottest_path(function(s) return s.in_kernel end, function(s) return s.kernel end)
  if kpath then
    ev:add("Hottest kernel path (%s of samples): %s",
      diag.fmt_pct(diag.pct(kpath.count, prof.samples)), kpath.path)
  end
  local bpf_share = diag.pct(prof.in_bpf, prof.samples)
  if bpf_share >= 5 then
    ev:add("%s of samples are inside the BPF tracing itself (this tool's syscall probe): at this call rate the measurement inflates kernel time; the untraced cost is lower",
      diag.fmt_pct(bpf_share))
  end
  local caller = hottest_path(function(s) return s.in_kernel end, function(s) return s.user end)
  if caller then
    ev:add("Entered from user code (%s of samples): %s",
      diag.fmt_pct(diag.pct(caller.count, prof.samples)), caller.path)
  end

  local steps = diag.lines()
  if hot_sc and hot_rate and hot_rate >= SYSCALL_HOT_PER_S then
    steps:add("%s() at %s is a tight loop. %s", hot_sc.name, diag.fmt_rate(hot_rate),
      syscall_advice(hot_sc.name))
    if (hot_sc.errors or 0) * 2 >= hot_sc.count and hot_sc.count > 0 then
      steps:add("Most %s() calls fail: look for a retry loop (EAGAIN/EINTR busy-polling)", hot_sc.name)
    end
  end
  local faults = kpath and (kpath.path:find("page_fault") or kpath.path:find("handle_mm_fault"))
  if faults then
    steps:add("The kernel time is page faults: perf stat -e page-faults,major-faults -p %s; reuse memory instead of touching fresh pages, check transparent huge pages (/sys/kernel/mm/transparent_hugepage)", pids)
  end
  steps:add("Per-syscall cost and callers: perf trace -s -p %s (strace -c -f -p %s only briefly: it slows the target a lot)", pids, pid)
  steps:add("Kernel flame graph: perf record -F 999 -g %s -- sleep 10; perf report --no-children", perf_procs)
  return diag.verdict("cpu-bound-kernel", bound_sev(prof.kernel_share), title, ev, steps)
end

local function busy_verdict(reason)
  local ev = diag.lines(cpu_line())
  local title, unnamed
  if prof and prof.samples > 0 then
    ev:add(split_line())
  end
  if reason == "few-samples" then
    title = string.format("CPU use %s of one CPU, but too few samples (%d) to say where", diag.fmt_pct(cpu), prof.samples)
  elseif reason == "no-profile" then
    title = string.format("CPU use %s of one CPU, but no profile to say where", diag.fmt_pct(cpu))
  else
    local utop = diag.ranked(prof.self_user, 3)
    local ktop = diag.ranked(prof.self_kernel, 3)
    if utop[1] then ev:add("Top user functions (self): " .. share_list(utop, 3)) end
    if ktop[1] then ev:add("Top kernel functions (self): " .. share_list(ktop, 3)) end
    local scs = top_syscalls(1)
    if scs[1] then ev:add("Top syscall: " .. syscall_line(scs[1])) end
    local mode = prof.user_share >= USER_SHARE_PCT and "mostly in user code"
        or prof.kernel_share >= T.kernel_share and "mostly in the kernel"
        or string.format("split %s user / %s kernel", diag.fmt_pct(prof.user_share), diag.fmt_pct(prof.kernel_share))
    title = string.format("%s CPU use: %s of one CPU, %s", cpu >= T.busy and "High" or "Moderate",
      diag.fmt_pct(cpu), mode)
    local hot = diag.ranked(prof.self_all, 1)[1]
    if hot then
      local leaf = hot.name:gsub(" %[k%]$", "")
      title = title .. string.format("; top %s", fn(leaf))
      unnamed = leaf == hot.name and not named(leaf) and unnamed_jit(leaf)
      if unnamed then
        ev:extend(unnamed.ev)
      elseif runtime == "jvm" then
        ev:add(jvm_perfmap_line())
      end
    end
  end
  local steps
  if reason == "no-profile" then
    steps = { "The profile probe " .. diag.why_missing("profile") .. "; fix that and re-run",
      string.format("Meanwhile: perf record -F 99 -g %s -- sleep 10; perf report --no-children", perf_procs) }
  elseif reason == "few-samples" then
    steps = { string.format("Re-run with a longer window: diagnose high-cpu %s --duration 30", target_arg) }
  else
    steps = diag.lines()
    if unnamed then steps:extend(unnamed.steps) end
    steps:add("Flame graph of where it goes: diagnose high-cpu %s --duration 30 --folded cpu.folded, then flamegraph.pl cpu.folded > cpu.svg", target_arg)
    if cpu < T.busy then
      steps:add("Compare with its usual CPU use: this level may be normal for the service")
    else
      steps:add("Neither side dominates: look at the top user function and the top syscall together (a syscall-heavy loop in user code)")
    end
  end
  return diag.verdict("busy", reason and cpu and cpu >= T.busy and "warning" or "info", title, ev, steps)
end

local function not_busy_verdict(starved)
  local ev = diag.lines(cpu_line())
  if prof then
    ev:add("%d CPU sample%s at %d Hz (a thread busy the whole window would give about %d)",
      prof.samples, prof.samples == 1 and "" or "s", prof.hz, math.floor(prof.hz * window + 0.5))
  end
  local vol = context and diag.rate(context.voluntary_ctxt_switches, window)
  if vol and vol >= 1 then
    ev:add("%s voluntary context switches/s: it sleeps or blocks rather than computes", diag.fmt_count(vol))
  elseif vol then
    ev:add("It hardly woke up during the window (under one context switch per second)")
  end
  ev:add(runq_line)
  local steps = diag.lines()
  if starved then
    steps:add("It is runnable but waits for a CPU: see cpu-starved")
  end
  steps:add("The time goes off-CPU: blocked on locks, disk, network or waiting for work; run an off-CPU or latency runbook on pid %s (diagnose list shows them)", pid)
  steps:add("Check whether the CPU is burnt elsewhere (another process or thread pool: top -H -o %CPU) or the spike was transient: re-run while the symptom is present")
  return diag.verdict("not-busy", "info",
    string.format("Not CPU-bound: the process used %s of one CPU during the %.1f s window", diag.fmt_pct(cpu), window),
    ev, steps)
end

local function frame_pointer_verdict()
  local pct = diag.pct(prof.shallow, prof.user_mode)
  local exe = diag.get(run, "target", "exe") or (context and context.exe) or "the binary"
  local dwarf = diag.get(profile, "user_unwind") == "dwarf"
  local ev = diag.lines(string.format("%s of %s user-mode samples have at most %d user frames", diag.fmt_count(prof.shallow),
      diag.fmt_count(prof.user_mode), T.shallow_frames))
  if dwarf then
    ev:add("Unwound with DWARF: %s stacks truncated, %s not unwound (no CFI for the code: JIT, stripped .eh_frame?)",
      diag.fmt_count(diag.get(profile, "unwind", "dwarf_truncated") or 0), diag.fmt_count(diag.get(profile, "unwind", "dwarf_failed") or 0))
  else
    ev:add("Without frame pointers the kernel cannot walk %s's stack: the flame graph is flat and call paths are lost; self time per function is still right", exe)
  end
  local steps = diag.lines()
  if runtime == "jvm" then
    steps:add("A JVM: start it with -XX:+PreserveFramePointer so that JIT-compiled methods keep frame pointers and their callers appear (a few % of CPU)")
  elseif runtime == "node" then
    steps:add("Node.js: V8's JIT code keeps frame pointers; with --perf-basic-prof (and --interpreted-frames-native-stack) its frames are named too")
  end
  steps:extend({ "Rebuild with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer (C/C++); Rust: RUSTFLAGS=\"-C force-frame-pointers=yes\"; Go keeps frame pointers",
      "For libraries, use a distribution built with frame pointers (Fedora 38+, Ubuntu 24.04+) or rebuild the hot ones",
      "JIT runtimes: Java -XX:+PreserveFramePointer, Node.js --perf-basic-prof" })
  if not dwarf then
    steps:add("Meanwhile: diagnose high-cpu %s --param unwind=dwarf unwinds without frame pointers (copies 8 KiB of stack per sample)", target_arg)
  end
  steps:add("Or: perf record --call-graph dwarf %s -- sleep 10", perf_procs)
  return diag.verdict("missing-frame-pointers", "warning",
    string.format("User stacks are truncated: %s of user-mode samples have %d frame%s or fewer (%s)",
      diag.fmt_pct(pct), T.shallow_frames, T.shallow_frames == 1 and "" or "s",
      dwarf and "even with DWARF unwinding" or "missing frame pointers?"),
    ev, steps)
end

local function incomplete_verdict()
  local partial = diag.partial()
  local note = partial.note
  if not profile then
    note("profile missing", "profile: no results (" .. diag.why_missing("profile") .. "): CPU time cannot be attributed to functions", "warning")
  end
  if not runq then note("runq missing", "runq: no results: CPU starvation was not assessed") end
  if not syscalls then note("syscalls missing", "syscalls: no results: kernel time cannot be tied to syscalls") end
  if not context then note("context missing", "context: no results: CPU use is estimated from samples, no PSI or cgroup data") end
  if profile and (profile.lost_stacks or 0) > 0 then
    local pct = diag.pct(profile.lost_stacks, profile.samples)
    note(string.format("%s stacks lost", diag.fmt_count(profile.lost_stacks)),
      string.format("profile: %s stack(s) could not be read (%s of %s samples)", diag.fmt_count(profile.lost_stacks),
        diag.fmt_pct(pct), diag.fmt_count(profile.samples)), pct >= 10 and "warning" or "info")
  end
  for _, x in ipairs({ { "profile", profile }, { "runq", runq }, { "syscalls", syscalls } }) do
    if x[2] and (x[2].dropped or 0) > 0 then
      note(string.format("%s: %s dropped", x[1], diag.fmt_count(x[2].dropped)),
        string.format("%s: %s event(s) dropped (a map was full)", x[1], diag.fmt_count(x[2].dropped)))
    end
  end
  partial.stop(run.stop_reason, window, (context and context.exited))
  return partial.verdict({ "Verdicts may be partial or marked inconclusive; re-run once the cause is fixed",
    "Missing probes: the reasons are in the evidence and the report's notes (permissions, kernel features); lost or dropped data: a shorter --duration or a lower sampling rate" })
end

-- ---- the hypotheses ------------------------------------------------------------------------

local idle = cpu and cpu < T.idle and (not sample_cpu or sample_cpu < 2 * T.idle)

-- Where the CPU goes: one verdict (not-busy, busy, futex-contention, cpu-bound-kernel,
-- cpu-bound-user), and lock hand-offs ruled out when the profile could show them; nil without
-- CPU data. starved: the cpu-starved verdict was given.
local function where_cpu_goes(starved)
  if idle then return not_busy_verdict(starved) end
  if not cpu then return nil end
  if not prof then return busy_verdict("no-profile") end
  if prof.samples < MIN_SAMPLES then return busy_verdict("few-samples") end
  if cpu >= T.busy and futex_hot() then return futex_verdict(futex_rate()) end
  local handoffs = cpu >= T.busy and diag.ruled_out("futex-contention",
    "not lock hand-offs: %s of samples in the lock and condition wrappers, %s inside futex()",
    diag.fmt_pct(diag.pct(locking.n, prof.samples)), diag.fmt_pct(diag.pct(locking.futex, prof.samples))) or nil
  if cpu >= T.busy and prof.kernel_share >= T.kernel_share then return { cpu_kernel_verdict(), handoffs } end
  if cpu >= T.busy and prof.user_share >= USER_SHARE_PCT then return { cpu_python_verdict() or cpu_user_verdict(), handoffs } end
  return { busy_verdict(nil), handoffs }
end

-- Frame pointers: judged on enough user-mode samples (not when the process is idle).
local function frame_pointers()
  if idle or not prof or prof.user_mode < MIN_SAMPLES then return nil end
  if fp_missing then return frame_pointer_verdict() end
  return diag.ruled_out("missing-frame-pointers", "user stacks are deep: %s of %s user-mode samples have at most %d user frames",
    diag.fmt_pct(diag.pct(prof.shallow, prof.user_mode)), diag.fmt_count(prof.user_mode), T.shallow_frames)
end

local function inconclusive()
  if cpu then return nil end
  return diag.verdict("inconclusive", "info", "Inconclusive: no CPU data was collected",
    { "Neither the profile nor the process context produced results" },
    { "Check the errors above this report, then re-run" })
end

-- ---- report sections -----------------------------------------------------------------------

local function function_tables()
  local self_rows, incl_rows = diag.lines(), diag.lines()
  for _, f in ipairs(diag.ranked(prof.self_all, T.top_n)) do
    self_rows:add({ f.name, f.count, diag.fmt_pct(diag.pct(f.count, prof.samples)) })
  end
  for _, f in ipairs(diag.ranked(prof.incl_user, T.top_n)) do
    incl_rows:add({ f.name, f.count, diag.fmt_pct(diag.pct(f.count, prof.samples)) })
  end
  return diag.table("Top functions (self)", { "function", "samples", "%" }, self_rows),
    diag.table("Top user functions (inclusive)", { "function", "samples", "%" }, incl_rows)
end

local function split_text()
  local lines = diag.lines()
  if cpu then lines:add(cpu_line()) end
  if prof then
    lines:add("user: %s (%d samples)", diag.fmt_pct(prof.user_share), prof.user)
    lines:add("kernel: %s (%d samples)", diag.fmt_pct(prof.kernel_share), prof.kernel)
  end
  if context then
    lines:add("context switches/s: %s voluntary, %s involuntary",
      diag.fmt_count(diag.rate(context.voluntary_ctxt_switches, window)), diag.fmt_count(nonvol_rate))
  end
  if psi_pct then lines:add("CPU pressure some over the window: %s", diag.fmt_pct(psi_pct)) end
  return diag.text("User / kernel split", lines)
end

local function syscall_table()
  local rows = diag.lines()
  for _, sc in ipairs(top_syscalls(T.top_n)) do
    local share = syscall_cpu_share(sc.name)
    local row = diag.lines(sc.name, sc.count, diag.fmt_rate(diag.rate(sc.count, window)),
      share and diag.fmt_pct(share) or "-")
    if syscalls.timed then
      row:add(diag.fmt_ns(sc.total_ns or 0))
      row:add(diag.fmt_ns(sc.count > 0 and (sc.total_ns or 0) / sc.count or 0))
      row:add(sc.errors or 0)
    end
    rows:add(row)
  end
  local columns = diag.lines("syscall", "count", "rate/s", "CPU samples")
  if syscalls.timed then columns:extend({ "total time", "avg", "errors" }) end
  return diag.table("Syscalls", columns, rows)
end

-- ---- main: the verdicts, primary first ---------------------------------------------------------

local answer = diag.answer()
local starved, starvation_ruled_out = cpu_starved()
answer.add(where_cpu_goes(starved ~= nil))
answer.add(starved)
answer.add(frame_pointers())
answer.add(inconclusive())
answer.add(incomplete_verdict())
answer.add(starvation_ruled_out)

if prof and prof.samples > 0 then
  local self_table, incl_table = function_tables()
  answer.section(self_table)
  answer.section(incl_table)
end
answer.section(split_text())
if runq then answer.section(diag.histogram("Run-queue latency", runq.unit or "us", runq.buckets)) end
if syscalls then answer.section(syscall_table()) end

-- the key figures `diagnose watch` exports (nil: not measured)
local hottest = prof and prof.samples > 0 and diag.ranked(prof.self_all, 1)[1]
local runq_wait = diag.runq(runq)
answer.metric("cpu_usage_ratio", cpu and cpu / 100,
  "CPU the target used over the window, in CPUs (1: one CPU busy all the time)")
answer.metric("cpu_hottest_function_ratio", hottest and hottest.count / prof.samples,
  "Share of the CPU samples in the hottest function (self time)")
answer.metric("cpu_user_ratio", prof and prof.samples > 0 and prof.user_share / 100 or nil,
  "Share of the CPU samples in user mode")
answer.metric("runq_latency_p99_seconds", runq_wait and runq_wait.p99 / 1e6,
  "99th percentile of the time the target's threads waited in the run queue")

return answer.result()
