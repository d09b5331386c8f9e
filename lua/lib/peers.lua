-- peers.lua — the target's waits on the other ends of its connections, from peer_wait results
-- (engine/probes/peer_wait.c); loaded as global `peers`, for latency and triage.
--
-- Owns: summarising each peer (p50 / p99 from the log-linear buckets, rate, waits still open at
-- the window's end), the slowest upstream by the recipe's limits, how much of the target's time
-- a peer's waits stand for, and the one wording of a peer ("127.0.0.1:8081: p50 48 ms, p99 61
-- ms, 120 waits/s"); what the target's threads had open when they read and when they slept.
-- Must not: know any recipe's threshold names or verdicts (the limits are arguments).

local peers = {}

-- Fewer waits than this (ended, or still open) make too thin a p50 to judge by.
peers.MIN_WAITS = 10

-- {name, role, family, count, total_ns, p50, p99, max, rate, open, open_oldest} for each entry
-- of r.peers (nil r: {}), in the probe's order (most time waited first). An open wait counts
-- with its age so far: a request not yet answered at the end is the slowest of all.
function peers.summaries(r, window)
  local out = {}
  for _, e in ipairs((r and r.peers) or {}) do
    local open, oldest = e.open or 0, e.open_oldest_ns or 0
    out[#out + 1] = {
      name = e.peer, role = e.role, family = e.family, count = e.count or 0,
      total_ns = (e.total_ns or 0), p50 = diag.percentile(e.buckets or {}, 50) or oldest,
      p99 = diag.percentile(e.buckets or {}, 99) or oldest, max = math.max(e.max_ns or 0, oldest),
      rate = window > 0 and (e.count or 0) / window or 0, open = open, open_oldest = oldest,
    }
  end
  return out
end

-- The time the target spends serving requests (server role), summed: nil when it serves none.
function peers.served_ns(list)
  local ns, any = 0, false
  for _, p in ipairs(list) do
    if p.role == "server" and p.count > 0 then ns, any = ns + p.total_ns, true end
  end
  return any and ns or nil
end

-- The upstream (client role) the target waits on longest whose p50 is at least slow_ns, with
-- at least MIN_WAITS answered waits; nil when none is. Waits that were never answered do not
-- make a peer slow by themselves: a one-way stream (a sender that never reads) opens one wait
-- at its first write and keeps it open.
function peers.slowest(list, slow_ns)
  local best
  for _, p in ipairs(list) do
    if p.role == "client" and p.name ~= "(unnamed)" and p.count >= peers.MIN_WAITS and p.p50 >= slow_ns and
      (not best or p.total_ns + p.open * p.open_oldest > best.total_ns + best.open * best.open_oldest) then
      best = p
    end
  end
  return best
end

-- The fastest-answering busiest upstream: the client-role peer with most waits, for "answers in".
function peers.busiest(list)
  local best
  for _, p in ipairs(list) do
    if p.role == "client" and p.name ~= "(unnamed)" and p.count >= peers.MIN_WAITS and (not best or p.count > best.count) then
      best = p
    end
  end
  return best
end

-- How much of the target's time a peer's waits stand for, in percent (at most 100): of the time
-- it spends serving requests when it serves any (an event loop waits for many requests at
-- once), else of its threads' time (thread_ns; a blocking client waits in one thread).
function peers.share(p, list, thread_ns)
  local served = peers.served_ns(list)
  local base = served and served > 0 and served or thread_ns
  if not base or base <= 0 then return 0 end
  return math.min(100, (p.total_ns + p.open * p.open_oldest) * 100 / base)
end

-- "127.0.0.1:8081: p50 48 ms, p99 61 ms, 120 waits/s" (and ", 3 unanswered at the end, the
-- oldest 2.1 s" when one still open had waited longer than the p99 of those answered: requests
-- in flight at the end are normal, a request stuck is not).
function peers.describe(p)
  local s = string.format("%s: p50 %s, p99 %s, %s waits/s", p.name, diag.fmt_ns(p.p50), diag.fmt_ns(p.p99),
    diag.fmt_count(p.rate))
  if p.open > 0 and (p.count == 0 or p.open_oldest > p.p99) then
    s = s .. string.format(", %s unanswered at the end, the oldest %s", diag.fmt_count(p.open), diag.fmt_ns(p.open_oldest))
  end
  return s
end

-- The target's time (ns) in socket reads that was a server waiting for its clients' next
-- request: reads that brought a new request while none was open (a keep-alive connection between
-- requests), by r.reads; 0 when the probe timed none. Waiting for work, not on a peer: latency
-- and triage move that much of their peer class to work-wait (no more than the class's time
-- seen in the window: a read still blocked at the end, on a hung upstream, is in no figure).
function peers.work_read_ns(r)
  return (r and r.reads and r.reads.for_work_ns) or 0
end

-- What leaves a peer class ({ns, count, snap_ns}) for work-wait: {ns = the reads' time, no more
-- than the class's own seen in the window (snap_ns: threads blocked since before it), kept = the
-- class's count in proportion to what stays}; nil when nothing moves.
function peers.work_move(r, peer)
  local moved = math.min(peers.work_read_ns(r), peer.ns - (peer.snap_ns or 0))
  if moved <= 0 then return nil end
  return { ns = moved, kept = math.floor(peer.count * (peer.ns - moved) / peer.ns + 0.5) }
end

-- What the target's threads had open when they slept, by r.sleeps: {in_frac (0..1: the share
-- of the placed sleep time with a request of the sleeping thread's own open), sleeps (r.sleeps),
-- top (the peer or service of r.peers whose requests held the most sleep time, or nil)}; nil
-- when the probe placed no sleep, or placed less than it could not (sockets sampling left out).
function peers.sleeps_placed(r)
  local sl = r and r.sleeps
  if not sl then return nil end
  local placed = (sl.in_request_ns or 0) + (sl.between_ns or 0)
  -- mostly unplaced (sampling left the sockets out): the few placed ones do not say
  if placed <= 0 or (sl.unplaced_ns or 0) > placed then return nil end
  local top
  for _, p in ipairs(r.peers or {}) do
    if (p.sleep_ns or 0) > 0 and (not top or p.sleep_ns > top.sleep_ns) then top = p end
  end
  return { in_frac = (sl.in_request_ns or 0) / placed, sleeps = sl, top = top }
end

-- The report's table of peers and services, or nil when there are none.
function peers.table(list, top_n)
  local rows = diag.lines()
  for i = 1, math.min(top_n, #list) do
    local p = list[i]
    rows:add({ p.role == "server" and "serves" or "waits on", p.name, diag.fmt_count(p.count), diag.fmt_ns(p.p50),
      diag.fmt_ns(p.p99), diag.fmt_ns(p.max), diag.fmt_count(p.open) })
  end
  if #rows == 0 then return nil end
  return diag.table("Connections: time to the other end's answer (client) or to the target's own (server)",
    { "role", "peer", "waits", "p50", "p99", "max", "open" }, rows)
end

return peers
