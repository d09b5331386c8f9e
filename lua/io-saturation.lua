-- io-saturation.lua — verdicts for recipes/io-saturation.yaml: which device is saturated or
-- slow, who loads it, and whether the process (with --pid) or anyone (without) waits on storage.
--
-- Reads results.blk (block_io: per disk and per submitter, every disk of the host),
-- results.files (file_io: the storage syscalls of the target, or of every process without
-- --pid), results.context (proc_context io: /proc/diskstats as iostat -x, the target's cgroup
-- I/O figures and limits, io pressure), run and thresholds. Any probe may be missing: the
-- verdicts then say what could not be assessed. Every figure is a delta over the window.
--
-- Rules, each verdict saying which one fired ("rule: ..." in its evidence):
--   device-saturated  busy >= util_warn_pct and (aqu-sz >= depth_warn or await >= queue_ratio_warn
--                     x service time); or an I/O load (aqu-sz, read + write time per second)
--                     >= io_load_warn; or a mean await >= await_warn_ms. Critical at twice the
--                     load or the await.
--   device-slow       service time p99 >= slow_service_p99_ms while the mean depth (at entry
--                     with block_io's queue_depth, else aqu-sz) is <= slow_max_depth (the device
--                     itself is slow, not queueing), over >= min_ios
--   sync-bound        one process spends >= sync_pct_warn (critical: sync_pct_crit) of the window
--                     in fsync-class calls on one file, at >= sync_min_per_s calls per second
--   small-random-io   a disk busy >= small_io_busy_pct with requests of <= small_io_kb on average,
--                     >= small_io_min_iops, at most small_io_seq_max_pct sequential (not when the
--                     sync-bound process is what submits them: that verdict says it already)
--   cgroup-throttled  with --pid: the target's cgroup has an I/O limit on a device (io.max,
--                     blkio.throttle.*) and its rate there reached >= throttle_pct of it
--   held-above-device a process's reads or writes on a device average >= 10 x the device's await
--                     and >= 1 ms, >= sync_pct_warn of the window, at >= 4 KiB per call and
--                     >= held_min_kb_per_s, the device busy < util_warn_pct:
--                     the time goes above the block layer (a cgroup limit seen host-wide, a lock)
--   ok                none of these: I/O is light or keeps up
-- With --pid, device verdicts are warnings only when the target waits on storage for at least
-- target_wait_pct of the window (or submits requests to that device); else they are info.

local T = {
  util = diag.threshold("util_warn_pct"),
  depth = diag.threshold("depth_warn"),
  queue_ratio = diag.threshold("queue_ratio_warn"),
  io_load = diag.threshold("io_load_warn"),
  await_ms = diag.threshold("await_warn_ms"),
  slow_p99_ms = diag.threshold("slow_service_p99_ms"),
  slow_depth = diag.threshold("slow_max_depth"),
  min_ios = diag.threshold("min_ios"),
  sync_warn = diag.threshold("sync_pct_warn"),
  sync_crit = diag.threshold("sync_pct_crit"),
  sync_min = diag.threshold("sync_min_per_s"),
  small_kb = diag.threshold("small_io_kb"),
  small_iops = diag.threshold("small_io_min_iops"),
  small_seq = diag.threshold("small_io_seq_max_pct"),
  small_busy = diag.threshold("small_io_busy_pct"),
  throttle = diag.threshold("throttle_pct"),
  target_wait = diag.threshold("target_wait_pct"),
  held_min_kbps = diag.threshold("held_min_kb_per_s"),
  top_n = diag.threshold("top_n"),
}

local blk, files, context = results.blk, results.files, results.context
local target = run.target
-- The processes the run covered: --pid's, or a set's (--comm, --cgroup, --unit, --container);
-- nil host-wide. `pid` stands for "there is a target" and names one process in commands;
-- `covered_name` names them all in evidence.
local covered, pid, covered_name
if target and target.pid then
  covered, pid, covered_name = { [target.pid] = true }, target.pid, string.format("Process %d", target.pid)
elseif target and target.processes and #target.processes > 0 then
  covered, pid = {}, target.processes[1].pid
  for _, p in ipairs(target.processes) do covered[p.pid] = true end
  covered_name = string.format("The %d process%s of --%s %s", #target.processes, #target.processes == 1 and "" or "es",
    target.selection or "?", target.name or "?")
end
local target_arg = diag.target(run, context)
local window = (blk and blk.wall_s) or (context and context.wall_s) or run.duration_s or 0
local function window_pct(us) return window > 0 and us * 100 / (window * 1e6) or 0 end

local SYNC = { fsync = true, fdatasync = true, sync_file_range = true, msync = true, syncfs = true,
  sync = true }

-- ---- devices ---------------------------------------------------------------------------------

local function iostat_of(name)
  for _, d in ipairs(diag.get(context, "io", "disks") or {}) do
    if d.name == name then return d end
  end
  return nil
end

-- A file's device ("vda1", "loop0") is on disk `disk` ("vda", "loop0").
local function on_disk(dev, disk)
  return dev ~= nil and disk ~= nil and (dev == disk or dev:sub(1, #disk) == disk)
end

local function submitters(dname)
  local out = diag.lines()
  for _, o in ipairs((blk and blk.owners) or {}) do
    if o.device == dname then out:add(o) end
  end
  return out
end

local function submitter(o)
  if o.tgid == 0 then return "[unknown submitter]" end
  return string.format("%s (pid %d)", o.comm, o.tgid)
end

local function submitter_line(d, n)
  local parts = diag.lines()
  for i, o in ipairs(submitters(d.name)) do
    if i > (n or 3) then break end
    parts:add("%s %s", submitter(o), diag.fmt_pct(diag.pct(o.ios, d.ios)))
  end
  if #parts == 0 then return nil end
  return string.format("Submitters on %s (share of its requests): %s", d.name, table.concat(parts, ", "))
end

-- Utilisation: /proc/diskstats' (iostat's util, the figure HUATUO's 90% anchor is in) when the
-- sampler read it; else the probe's own busy time with its queue_depth option (which a request
-- that ends without a completion event inflates until its address is reused: see block_io's
-- `vanished`); else not known (0: the rules on the I/O load and await still apply).
-- Who dirtied page cache on a disk: writeback's requests are submitted by kworker threads, the
-- data is theirs.
local function dirtier_line(dname)
  local parts = diag.lines()
  for _, o in ipairs((blk and blk.dirtiers) or {}) do
    if on_disk(o.device, dname) and #parts < 3 and o.tgid ~= 0 then
      parts:add("%s %s", submitter(o), diag.fmt_byte_rate(o.bytes_per_s))
    end
  end
  if #parts == 0 then return nil end
  return string.format("Buffered writes (page cache dirtied on %s, written back later by kworker threads): %s",
    dname, table.concat(parts, ", "))
end

local devs = diag.lines()
for _, d in ipairs((blk and blk.devices) or {}) do
  local rw = (d.reads or 0) + (d.writes or 0)
  local io = iostat_of(d.name)
  devs:add({
    d = d,
    name = d.name,
    iops = d.iops or 0,
    busy = io and io.util_pct or d.busy_pct or 0,
    aqu = d.avg_in_queue_and_service or 0,
    await_us = d.await_avg_us or 0,
    svc_avg = diag.get(d, "service", "avg_us") or 0,
    svc_p99 = diag.percentile(diag.get(d, "service", "buckets"), 99),
    q_p99 = diag.percentile(diag.get(d, "queue", "buckets"), 99),
    -- the depth requests find at entry (block_io's queue_depth), else the mean over time (aqu-sz)
    depth_avg = diag.get(d, "depth", "avg_at_entry") or d.avg_in_queue_and_service or 0,
    depth_max = diag.get(d, "depth", "max"),
    rw_size = rw > 0 and ((d.read_bytes or 0) + (d.write_bytes or 0)) / rw or 0,
    rw_iops = window > 0 and rw / window or 0,
    iostat = io,
  })
end

-- ---- the storage syscalls --------------------------------------------------------------------

local calls = (files and files.calls) or {}
local storage_us, target_devs = 0, {}
for _, c in ipairs(calls) do
  if c.device or (c.file and c.file:sub(1, 1) == "/") or SYNC[c.syscall] then
    storage_us = storage_us + c.total_us
    if c.device then target_devs[c.device] = true end
  end
end
local target_wait_pct = window_pct(storage_us)

local function syscall_stats(name)
  for _, s in ipairs((files and files.syscalls) or {}) do
    if s.name == name then return s end
  end
  return nil
end

-- The call path of the heaviest stack of that syscall and thread name; without --pid frames are
-- not symbolized (the symbolizer follows the target), and the path says so.
local function path_for(syscall, comm)
  for _, s in ipairs((files and files.stacks) or {}) do
    if s.tag == syscall and s.comm == comm and #(s.user or {}) > 0 then
      for _, f in ipairs(s.user) do
        if diag.symbolized(f) and not f:find("^0x%x+$") then return diag.call_path(s.user, 8) end
      end
      return nil
    end
  end
  return nil
end

-- With --pid: does the target use / wait on this disk?
local function target_on(dname)
  if not pid then return true end
  for dev in pairs(target_devs) do
    if on_disk(dev, dname) then return true end
  end
  for _, o in ipairs(submitters(dname)) do
    if covered[o.tgid] then return true end
  end
  return false
end

local function device_severity(dname, sev)
  if not pid then return sev end
  if target_on(dname) and target_wait_pct >= T.target_wait then return sev end
  return "info"
end

local function device_evidence(x, rule)
  local d, ev = x.d, diag.lines(rule)
  ev:add("%s: %s IOPS (%s reads, %s writes, %s flushes), %s, mean request %s",
    x.name, diag.fmt_count(x.iops), diag.fmt_count(d.reads), diag.fmt_count(d.writes),
    diag.fmt_count(d.flushes), diag.fmt_byte_rate(d.bytes_per_s), diag.fmt_bytes(d.avg_size_bytes))
  local busy_src = "not measured: no diskstats"
  if x.iostat and d.busy_pct then
    busy_src = string.format("diskstats; traced requests: %s", diag.fmt_pct(d.busy_pct))
  elseif x.iostat then
    busy_src = "diskstats"
  elseif d.busy_pct then
    busy_src = "traced requests"
  end
  ev:add("Busy %s of the window (%s); requests queued or in service on average (aqu-sz) %.1f%s",
    diag.fmt_pct(x.busy), busy_src, x.aqu,
    x.depth_max and string.format(", depth at entry mean %.1f, max %d", x.depth_avg, x.depth_max) or "")
  ev:add("Await (queue + service) mean %s; service mean %s, p99 %s; queue p99 %s",
    diag.fmt_us(x.await_us), diag.fmt_us(x.svc_avg), diag.fmt_us(x.svc_p99), diag.fmt_us(x.q_p99))
  if x.iostat then
    ev:add("iostat -x over the window: util %s, aqu-sz %.2f, r_await %.2f ms, w_await %.2f ms",
      diag.fmt_pct(x.iostat.util_pct), x.iostat.aqu_sz, x.iostat.r_await_ms, x.iostat.w_await_ms)
  end
  local line = submitter_line(d, 3)
  if line then ev:add(line) end
  local wb = dirtier_line(x.name)
  if wb then ev:add(wb) end
  if pid then
    ev:add("%s wait%s on storage %s of the window (storage syscalls, summed over threads)%s",
      covered_name, target.pid and "s" or "", diag.fmt_pct(target_wait_pct), target_on(x.name) and "" or string.format("; no I/O on %s", x.name))
  end
  local p = diag.get(context, "io", "pressure")
  if p then ev:add("io pressure over the window: some %s, full %s", diag.fmt_pct(p.some_pct), diag.fmt_pct(p.full_pct)) end
  return ev
end

-- ---- sync-bound --------------------------------------------------------------------------------

-- One process spending a share of the window in fsync-class calls on one file: the verdict and
-- that call's row, or a ruled-out line.
local function sync_bound()
  local best, best_pct, most_pct = nil, 0, 0
  for _, c in ipairs(calls) do
    local pct = window_pct(c.total_us)
    if SYNC[c.syscall] and pct > most_pct then most_pct = pct end
    if SYNC[c.syscall] and c.per_s >= T.sync_min and pct >= T.sync_warn and pct > best_pct then
      best, best_pct = c, pct
    end
  end
  if not best then
    if not files then return nil end
    return diag.ruled_out("sync-bound", "no process sync-bound: at most %s of the window in fsync-class calls on one file (%s needed)",
      diag.fmt_pct(most_pct), diag.fmt_pct(T.sync_warn))
  end
  local s = syscall_stats(best.syscall)
  local p99 = s and diag.percentile(s.buckets, 99)
  local file = best.file or string.format("fd %d", best.fd)
  local dev = best.device or "an unknown device"
  local ev = diag.lines(
    string.format("rule: %s spends >= %s of the window in %s on one file at >= %s calls/s (sync_pct_warn, sync_min_per_s)",
      submitter(best), diag.fmt_pct(T.sync_warn), best.syscall, diag.fmt_count(T.sync_min)),
    string.format("%s: %s calls (%s), %s of the window in them; mean %s, slowest %s, p99 of all %s calls %s",
      best.syscall, diag.fmt_count(best.count), diag.fmt_rate(best.per_s), diag.fmt_pct(best_pct),
      diag.fmt_us(best.avg_us), diag.fmt_us(best.max_us), best.syscall, diag.fmt_us(p99)),
    string.format("File: %s on %s", file, dev))
  for _, c in ipairs(calls) do
    if c.tgid == best.tgid and c.fd == best.fd and (c.syscall == "write" or c.syscall == "pwrite64" or c.syscall == "writev") and c.count > 0 then
      ev:add("Between them: %s %s calls on the same file, %s each on average: one %s per %.1f writes",
        diag.fmt_count(c.count), c.syscall, diag.fmt_bytes(c.bytes / c.count), best.syscall, c.count / math.max(best.count, 1))
    end
  end
  local path = path_for(best.syscall, best.comm)
  if path then
    ev:add("Call path: " .. path)
  elseif not pid then
    ev:add("Call path: run with --pid %d to name the functions (frames are symbolized for the target only)", best.tgid)
  end
  for _, x in ipairs(devs) do
    if on_disk(best.device, x.name) then
      ev:add("%s: %s flushes/s, %s writes/s, mean write %s, service mean %s",
        x.name, diag.fmt_count(x.d.flushes / math.max(window, 1e-9)), diag.fmt_count(x.d.writes / math.max(window, 1e-9)),
        diag.fmt_bytes(x.d.writes > 0 and x.d.write_bytes / x.d.writes or 0), diag.fmt_us(x.svc_avg))
    end
  end
  return diag.verdict("sync-bound", best_pct >= T.sync_crit and "critical" or "warning",
    string.format("%s is sync-bound: %s in %s on %s (%s), %s calls/s, p99 %s",
      submitter(best), best_pct <= 100 and diag.fmt_pct(best_pct) .. " of its time"
        or diag.fmt_pct(best_pct) .. " of the window summed over its threads",
      best.syscall, file, dev, diag.fmt_count(best.per_s), diag.fmt_us(p99)),
    ev,
    { string.format("Batch the commits: one %s per group of records (group commit), or per time interval, instead of one per write", best.syscall),
      "If durability per record is required, fdatasync avoids the metadata flush; O_DSYNC on a preallocated file avoids the separate call",
      string.format("Each %s waits for a device cache flush: put the file on a device with a power-safe write cache, or a separate log device", best.syscall) }), best
end

-- ---- device saturated / slow -------------------------------------------------------------------

-- Per device: saturated (busy with a queue, or loaded, or a long await), else slow (a long
-- service time at a low depth). The verdicts, or a ruled-out line; and the names of the
-- saturated devices.
local function device_load()
  local found, saturated = diag.lines(), {}
  for _, x in ipairs(devs) do
    local total = x.d.ios or 0
    local rule
    if total >= T.min_ios then
      if x.busy >= T.util and x.aqu >= T.depth then
        rule = string.format("rule: busy %s >= %s and aqu-sz %.1f >= %s (util_warn_pct, depth_warn)", diag.fmt_pct(x.busy), diag.fmt_pct(T.util), x.aqu, T.depth)
      elseif x.busy >= T.util and x.svc_avg > 0 and x.await_us >= T.queue_ratio * x.svc_avg then
        rule = string.format("rule: busy %s >= %s and await %s >= %s x service %s (util_warn_pct, queue_ratio_warn)",
          diag.fmt_pct(x.busy), diag.fmt_pct(T.util), diag.fmt_us(x.await_us), T.queue_ratio, diag.fmt_us(x.svc_avg))
      elseif x.aqu >= T.io_load then
        rule = string.format("rule: I/O load %.1f s/s >= %s (io_load_warn: read + write time per second)", x.aqu, T.io_load)
      elseif x.await_us >= T.await_ms * 1000 then
        rule = string.format("rule: mean await %s >= %s ms (await_warn_ms)", diag.fmt_us(x.await_us), T.await_ms)
      end
    end
    if rule then
      saturated[x.name] = true
      local crit = x.aqu >= 2 * T.io_load or x.await_us >= 2 * T.await_ms * 1000
      local sev = device_severity(x.name, crit and "critical" or "warning")
      local top = submitters(x.name)[1]
      found:add(diag.verdict("device-saturated", sev,
        string.format("%s is saturated: busy %s, %.1f requests queued or in service, await %s vs service %s%s",
          x.name, diag.fmt_pct(x.busy), x.aqu, diag.fmt_us(x.await_us), diag.fmt_us(x.svc_avg),
          top and string.format("; %s submits %s of its requests", submitter(top), diag.fmt_pct(diag.pct(top.ios, x.d.ios))) or ""),
        device_evidence(x, rule),
        { top and string.format("Reduce or spread the load of %s: fewer parallel requests, larger ones, caching, or another device", submitter(top))
            or "Find the load: biotop-style, the submitters above; writeback shows as kworker",
          string.format("Per-process view: diagnose io-saturation --pid PID; live: iostat -x 1 %s", x.name),
          "A device at its limit needs more throughput (a faster volume, more IOPS provisioned, striping), not more queue depth" }))
    elseif total >= T.min_ios and x.svc_p99 and x.svc_p99 >= T.slow_p99_ms * 1000 and x.depth_avg <= T.slow_depth then
      found:add(diag.verdict("device-slow", device_severity(x.name, "warning"),
        string.format("%s is slow: service time p99 %s at a mean depth of %.1f (not queueing: the device itself)",
          x.name, diag.fmt_us(x.svc_p99), x.depth_avg),
        device_evidence(x, string.format("rule: service p99 %s >= %s ms at mean depth %.1f <= %s (slow_service_p99_ms, slow_max_depth)",
          diag.fmt_us(x.svc_p99), T.slow_p99_ms, x.depth_avg, T.slow_depth)),
        { string.format("Check the device's health and its backend: smartctl -a /dev/%s, the hypervisor's or cloud volume's latency metrics", x.name),
          "A network or cloud volume throttled by its provider shows high service times at low depth: check its burst credits and IOPS limit",
          "Flushes (fsync) on a device without a power-safe cache are slow by nature: see the flush count above" }))
    end
  end
  if #found > 0 or not blk then return found, saturated end
  local busiest = devs[1]
  if not busiest then return diag.ruled_out("device-saturated", "no device loaded: no block requests completed"), saturated end
  return diag.ruled_out("device-saturated", "no device saturated or slow: busiest %s busy %s, aqu-sz %.1f, await %s, service p99 %s",
    busiest.name, diag.fmt_pct(busiest.busy), busiest.aqu, diag.fmt_us(busiest.await_us), diag.fmt_us(busiest.svc_p99)), saturated
end

-- ---- small random I/O --------------------------------------------------------------------------

-- A busy disk served small requests, mostly not sequential (not when the sync-bound process
-- submits them: sync_row, that verdict says it already). saturated: device_load's.
local function small_random_io(sync_row, saturated)
  local found = diag.lines()
  for _, x in ipairs(devs) do
    local d = x.d
    local top = submitters(x.name)[1]
    local by_sync = sync_row and top and top.tgid == sync_row.tgid
    if not by_sync and x.rw_iops >= T.small_iops and x.rw_size > 0 and x.rw_size <= T.small_kb * 1024 and
        (d.sequential_pct or 0) <= T.small_seq and x.busy >= T.small_busy then
      local ev = diag.lines(
        string.format("rule: mean request %s <= %d KiB, %s read/write IOPS >= %s, %s sequential <= %s, busy %s >= %s (small_io_kb, small_io_min_iops, small_io_seq_max_pct, small_io_busy_pct)",
          diag.fmt_bytes(x.rw_size), T.small_kb, diag.fmt_count(x.rw_iops), diag.fmt_count(T.small_iops),
          diag.fmt_pct(d.sequential_pct or 0), diag.fmt_pct(T.small_seq), diag.fmt_pct(x.busy), diag.fmt_pct(T.small_busy)),
        string.format("%s: %s reads, %s writes, %s; the device is IOPS-bound, not bandwidth-bound",
          x.name, diag.fmt_count(d.reads), diag.fmt_count(d.writes), diag.fmt_byte_rate(d.bytes_per_s)))
      local line = submitter_line(d, 3)
      if line then ev:add(line) end
      found:add(diag.verdict("small-random-io", saturated[x.name] and device_severity(x.name, "warning") or "info",
        string.format("Small random I/O on %s: %s requests of %s on average, %s sequential%s",
          x.name, diag.fmt_rate(x.rw_iops), diag.fmt_bytes(x.rw_size), diag.fmt_pct(d.sequential_pct or 0),
          top and string.format(", mostly %s", submitter(top)) or ""),
        ev,
        { "Read or write in larger units (readahead, batching, a larger page or block size), or keep the hot set in memory",
          "Random reads by many threads at once are what an SSD handles well and a disk or a throttled volume does not: check the device's IOPS limit" }))
    end
  end
  if #found > 0 or not blk then return found end
  return diag.ruled_out("small-random-io", "no small random I/O: no disk busy %s with requests of %d KiB or less at %s IOPS",
    diag.fmt_pct(T.small_busy), T.small_kb, diag.fmt_count(T.small_iops))
end

-- ---- throttled by its cgroup -------------------------------------------------------------------

-- With --pid: the target's cgroup has an I/O limit on a device and its rate there reached a
-- share of it. nil without the cgroup's figures.
local function cgroup_throttled()
  local cg = diag.get(context, "io", "cgroup")
  if not cg then return nil end
  local found, most = diag.lines(), 0
  if cg.limited and window > 0 then
    for _, dv in ipairs(cg.devices or {}) do
      local checks = {
        { "rbps_max", (dv.rbytes or 0) / window, "read bytes/s", diag.fmt_byte_rate, cg.version == 1 and "blkio.throttle.read_bps_device" or "io.max rbps" },
        { "wbps_max", (dv.wbytes or 0) / window, "write bytes/s", diag.fmt_byte_rate, cg.version == 1 and "blkio.throttle.write_bps_device" or "io.max wbps" },
        { "riops_max", (dv.rios or 0) / window, "read IOPS", diag.fmt_rate, cg.version == 1 and "blkio.throttle.read_iops_device" or "io.max riops" },
        { "wiops_max", (dv.wios or 0) / window, "write IOPS", diag.fmt_rate, cg.version == 1 and "blkio.throttle.write_iops_device" or "io.max wiops" },
      }
      for _, ck in ipairs(checks) do
        local limit = dv[ck[1]]
        if limit and limit > 0 then most = math.max(most, ck[2] * 100 / limit) end
        if limit and limit > 0 and ck[2] * 100 / limit >= T.throttle then
          local name = dv.name or dv.dev
          local ev = diag.lines(
            string.format("rule: the cgroup's %s on %s reached %s of its limit >= %s (throttle_pct)", ck[3], name,
              diag.fmt_pct(ck[2] * 100 / limit), diag.fmt_pct(T.throttle)),
            string.format("Limit: %s = %s on %s (%s); achieved %s over the window", ck[5], ck[4](limit), name, dv.dev, ck[4](ck[2])),
            string.format("cgroup v%d %s (%s)", cg.version, cg.path, cg.dir))
          local slow
          for _, c in ipairs(calls) do
            if (c.syscall:find("read") or c.syscall:find("write")) and c.device and on_disk(c.device, name) then
              slow = slow or c
            end
          end
          if slow then
            ev:add("Its %s calls on %s: %s, mean %s, slowest %s, %s of the window",
              slow.syscall, slow.file or "?", diag.fmt_rate(slow.per_s), diag.fmt_us(slow.avg_us), diag.fmt_us(slow.max_us),
              diag.fmt_pct(window_pct(slow.total_us)))
          end
          for _, x in ipairs(devs) do
            if x.name == name then
              ev:add("%s itself: busy %s, service mean %s: the device has room, the limit holds the process back",
                name, diag.fmt_pct(x.busy), diag.fmt_us(x.svc_avg))
            end
          end
          local p = diag.get(context, "io", "pressure")
          if p then ev:add("io pressure over the window (host): some %s", diag.fmt_pct(p.some_pct)) end
          found:add(diag.verdict("cgroup-throttled", "warning",
            string.format("Throttled by its cgroup: %s at %s on %s, %s of the %s limit", ck[3], ck[4](ck[2]), name,
              diag.fmt_pct(ck[2] * 100 / limit), ck[5]),
            ev,
            { string.format("Raise or remove the limit if the service needs the throughput: %s in %s", ck[5], cg.dir),
              "Or reduce what it reads/writes (caching, compression), or spread it over time" }))
        end
      end
    end
  end
  if #found > 0 then return found end
  if not cg.limited then return diag.ruled_out("cgroup-throttled", "no cgroup I/O limit: %s has none", cg.path or "its cgroup") end
  return diag.ruled_out("cgroup-throttled", "not throttled by its cgroup: at most %s of an I/O limit reached (%s needed)",
    diag.fmt_pct(most), diag.fmt_pct(T.throttle))
end

-- ---- waiting above the device -----------------------------------------------------------------
-- Reads or writes that take far longer than the device takes to serve a request, on a device
-- that is not busy: the time goes above the block layer — a cgroup I/O limit (blk-throttle holds
-- bios before they become requests), or a lock. With --pid the cgroup rule above says which
-- limit; this one stands in when it cannot (host-wide, or no limit found).

local function held_above_device()
  local found = diag.lines()
  for _, c in ipairs(calls) do
    local pct = window_pct(c.total_us)
    local per_call = c.count > 0 and c.bytes / c.count or 0
    local bps = window > 0 and c.bytes / window or 0
    -- data moving through the calls (a process reading a few bytes slowly is starved of CPU or
    -- blocked on something else, not held back on its way to the disk)
    if not SYNC[c.syscall] and c.device and c.count >= T.min_ios and pct >= T.sync_warn and
        per_call >= 4096 and bps >= T.held_min_kbps * 1024 then
      for _, x in ipairs(devs) do
        if on_disk(c.device, x.name) and x.svc_avg > 0 and c.avg_us >= 10 * x.await_us and c.avg_us >= 1000 and
            x.busy < T.util then
          found:add(diag.verdict("held-above-device", "warning",
            string.format("%s waits in %s on %s %s per call while %s serves requests in %s: held back above the device (a cgroup I/O limit?)",
              submitter(c), c.syscall, c.file or string.format("fd %d", c.fd), diag.fmt_us(c.avg_us), x.name, diag.fmt_us(x.await_us)),
            { string.format("rule: %s calls average %s >= 10 x the device's await %s and >= 1 ms, %s of the window >= %s, moving %s >= %d KiB/s, on a device busy %s < %s (sync_pct_warn, held_min_kb_per_s, util_warn_pct)",
                c.syscall, diag.fmt_us(c.avg_us), diag.fmt_us(x.await_us), diag.fmt_pct(pct), diag.fmt_pct(T.sync_warn),
                diag.fmt_byte_rate(bps), T.held_min_kbps, diag.fmt_pct(x.busy), diag.fmt_pct(T.util)),
              string.format("%s: %s calls (%s), %s, mean %s, slowest %s", c.syscall, diag.fmt_count(c.count), diag.fmt_rate(c.per_s),
                diag.fmt_byte_rate(c.bytes / math.max(window, 1e-9)), diag.fmt_us(c.avg_us), diag.fmt_us(c.max_us)),
              string.format("%s: %s IOPS, busy %s, service mean %s", x.name, diag.fmt_count(x.iops), diag.fmt_pct(x.busy), diag.fmt_us(x.svc_avg)) },
            { pid and "Its cgroup shows no I/O limit reached: look for a lock or a throttle above the block layer (filesystem, FUSE, network storage)"
                or string.format("Run with --pid %d: the verdict then reads its cgroup's I/O limits (blkio.throttle.*, io.max)", c.tgid),
              string.format("cat /proc/%d/cgroup; then blkio.throttle.*_device (v1) or io.max (v2) in that cgroup", c.tgid) }))
          break
        end
      end
    end
  end
  if #found > 0 or not (files and blk) then return found end
  return diag.ruled_out("held-above-device", "no I/O held above the device: no read or write took 10 x its device's await")
end

-- ---- ok ----------------------------------------------------------------------------------------

local function quiet_verdict()
  local busiest = devs[1]
  local ev = diag.lines("rule: no device saturated or slow, no process sync-bound, no small random I/O load, no cgroup limit reached")
  if busiest then
    ev:add("Busiest disk %s: %s IOPS, %s, busy %s, await mean %s",
      busiest.name, diag.fmt_count(busiest.iops), diag.fmt_byte_rate(busiest.d.bytes_per_s), diag.fmt_pct(busiest.busy), diag.fmt_us(busiest.await_us))
  else
    ev:add("No block requests completed in the window")
  end
  if pid then
    ev:add("%s spent %s of the window in storage syscalls", covered_name, diag.fmt_pct(target_wait_pct))
  end
  return diag.verdict("ok", "ok",
    busiest and string.format("I/O is light or keeps up: busiest disk %s at %s IOPS, busy %s", busiest.name, diag.fmt_count(busiest.iops), diag.fmt_pct(busiest.busy))
      or "I/O is light: no block requests in the window",
    ev,
    { string.format("If the service is slow anyway, its waiting is elsewhere: diagnose latency %s", target_arg) })
end

-- ---- incomplete data ---------------------------------------------------------------------------

local function incomplete_data()
  local partial = diag.partial()
  local note = partial.note
  if not blk then note("blk missing", "blk: no results: devices were not measured", "warning") end
  if not files then note("files missing", "files: no results: storage syscalls were not measured", "warning") end
  if not context then note("context missing", "context: no results: no iostat cross-check, cgroup limits or io pressure") end
  if blk and (blk.dropped or 0) > 0 then
    note(string.format("blk: %s dropped", diag.fmt_count(blk.dropped)), string.format("blk: %s request(s) not counted (a map was full)", diag.fmt_count(blk.dropped)))
  end
  if files and (files.dropped or 0) > 0 then
    note(string.format("files: %s dropped", diag.fmt_count(files.dropped)), string.format("files: %s call(s) not counted (a map was full)", diag.fmt_count(files.dropped)))
  end
  if blk and blk.sampled_1_in then
    note(string.format("blk sampled 1 in %d", blk.sampled_1_in), string.format("blk: 1 request in %d timed (budget): counts are estimates; depth and busy time describe the sampled requests only", blk.sampled_1_in))
  end
  if files and files.sampled_1_in then
    note(string.format("files sampled 1 in %d", files.sampled_1_in), string.format("files: 1 call in %d timed (budget): counts and shares are estimates", files.sampled_1_in))
  end
  partial.stop(run.stop_reason, window, context and context.exited)
  return partial.verdict({ "Verdicts may be partial; re-run once the cause is fixed" })
end

-- ---- report sections ---------------------------------------------------------------------------

-- A file on storage (a path, or a device), as opposed to a pipe, socket or anonymous inode.
local function on_storage(c)
  return c.device ~= nil or (c.file ~= nil and c.file:sub(1, 1) == "/")
end

-- The file column: what the fd named when it was read; a sync call on what is not a file means
-- the number was reused for something else before the tick read it.
local function file_cell(c)
  if not c.file then return string.format("fd %d", c.fd) end
  if SYNC[c.syscall] and not on_storage(c) then return string.format("fd %d (reused: %s)", c.fd, c.file) end
  return c.file
end

-- The disks, submitters, dirtiers and storage syscalls; the sync-bound call's latency.
local function add_sections(answer, sync_row)
  if #devs > 0 then
    local rows = diag.lines()
    for i, x in ipairs(devs) do
      if i > T.top_n then break end
      rows:add({ x.name, diag.fmt_count(x.iops), diag.fmt_byte_rate(x.d.bytes_per_s), diag.fmt_bytes(x.d.avg_size_bytes),
        diag.fmt_pct(x.busy), string.format("%.2f", x.aqu), diag.fmt_us(x.await_us), diag.fmt_us(x.svc_avg), diag.fmt_us(x.svc_p99),
        diag.fmt_pct(x.d.busy_pct or 0) })
    end
    answer.section(diag.table(string.format("Disks over %.1f s (busiest first)", window),
      { "disk", "IOPS", "throughput", "mean size", "util", "aqu-sz", "await", "service", "service p99", "traced busy" }, rows))
    answer.section(diag.histogram(string.format("Service time on %s", devs[1].name), "us", diag.get(devs[1].d, "service", "buckets")))
  end
  if blk and #(blk.owners or {}) > 0 then
    local rows = diag.lines()
    for i, o in ipairs(blk.owners) do
      if i > T.top_n then break end
      rows:add({ o.tgid, o.comm, o.device, diag.fmt_count(o.ios), diag.fmt_bytes(o.bytes), diag.fmt_count(o.reads),
        diag.fmt_count(o.writes), diag.fmt_count(o.flushes), diag.fmt_us(o.ios > 0 and o.service_us / o.ios or 0) })
    end
    answer.section(diag.table("Who submits the requests (most first)",
      { "pid", "comm", "disk", "requests", "bytes", "reads", "writes", "flushes", "service mean" }, rows))
  end
  if blk and #(blk.dirtiers or {}) > 0 then
    local rows = diag.lines()
    for i, o in ipairs(blk.dirtiers) do
      if i > T.top_n then break end
      rows:add({ o.tgid, o.comm, o.device, diag.fmt_bytes(o.bytes), diag.fmt_byte_rate(o.bytes_per_s) })
    end
    answer.section(diag.table("Who dirties page cache (buffered writes, written back later)",
      { "pid", "comm", "device", "dirtied", "rate" }, rows))
  end
  if #calls > 0 then
    local rows, others = diag.lines(), 0
    for _, c in ipairs(calls) do
      if on_storage(c) or SYNC[c.syscall] then
        if #rows < T.top_n then
          rows:add({ c.tgid, c.comm, c.syscall, file_cell(c), c.device or "-", diag.fmt_rate(c.per_s),
            diag.fmt_us(c.avg_us), diag.fmt_us(c.max_us), diag.fmt_pct(window_pct(c.total_us)) })
        end
      else
        others = others + 1
      end
    end
    answer.section(diag.table(string.format("Storage syscalls (most time first%s)",
        others > 0 and string.format("; %d row%s on pipes, sockets and other non-files left out", others, others == 1 and "" or "s") or ""),
      { "pid", "comm", "syscall", "file", "device", "rate", "mean", "slowest", "of window" }, rows))
    local s = sync_row and syscall_stats(sync_row.syscall)
    if s then answer.section(diag.histogram(string.format("%s latency", s.name), "us", s.buckets)) end
  end
end

-- ---- main: the hypotheses in order, ok when none fired -----------------------------------------

local answer = diag.answer()
local findings = 0
local function consider(items)
  if items and items.severity then findings = findings + 1 end
  for _, x in ipairs(items or {}) do
    if x.severity then findings = findings + 1 end
  end
  answer.add(items)
end
local sync_verdict, sync_row = sync_bound()
consider(sync_verdict)
local device_items, saturated = device_load()
consider(device_items)
consider(small_random_io(sync_row, saturated))
local throttled = cgroup_throttled()
consider(throttled)
if not (throttled and #throttled > 0) then consider(held_above_device()) end
if findings == 0 and (blk or files) then answer.add(quiet_verdict()) end
answer.add(incomplete_data())
add_sections(answer, sync_row)

-- the key figures `diagnose watch` exports (nil: not measured): the busiest device's
local busiest
for _, d in ipairs(devs) do
  if not busiest or d.busy > busiest.busy then busiest = d end
end
answer.metric("disk_busy_ratio", busiest and busiest.busy / 100,
  "Share of the window the busiest device had I/O in flight")
answer.metric("disk_await_seconds", busiest and busiest.await_us / 1e6,
  "The busiest device's mean time per I/O, queue and service")
answer.metric("storage_wait_ratio", files and target_wait_pct and target_wait_pct / 100 or nil,
  "Share of the window the target spent in storage syscalls")

return answer.result()
