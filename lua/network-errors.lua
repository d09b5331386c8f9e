-- network-errors.lua — verdicts for recipes/network-errors.yaml: which flows retransmit, where
-- packets are dropped and why, who refuses or resets whom, which listen queues overflow, and
-- whether interfaces or the softnet backlog drop packets.
--
-- Reads results.tcp (tcp_events), results.drops (skb_drops), results.context (proc_context, net
-- section), run and thresholds. Every figure is a delta over the window. Any probe may be
-- missing: the verdicts then say what could not be assessed.
--
-- How it decides:
--   retransmits        per peer address:port, the flows' data retransmits (SYNs excluded) as a
--                      share of the segments they sent (the sockets' own counters) >= retrans_pct_warn
--                      (critical at retrans_pct_crit), with at least min_retransmits; without
--                      per-flow shares, the namespace's RetransSegs / OutSegs. Loss recovery
--                      after a timeout (RTO) vs fast retransmit is said.
--   connection-refused per peer: connects answered by a reset (ECONNREFUSED): nothing listens.
--   connect-timeout    per peer: connects whose SYNs went unanswered (retransmitted SYNs, failed
--                      connects without a reset, ETIMEDOUT).
--   connection-reset   per peer: established connections reset (ECONNRESET, resets received
--                      outside a connect).
--   resets-sent        per local port: resets this host sent (to packets no socket wanted).
--   packet-drops       per drop reason with >= drops_warn drops (critical at 100 x), what the
--                      reason means and what to check; reasons that only follow other trouble
--                      (duplicate or old TCP data, ...) are listed in the report, not judged.
--   listen-overflow    ListenOverflows / ListenDrops >= listen_drops_warn, naming the listening
--                      ports with connections still waiting to be accepted at the end.
--   interface-drops    per interface rx/tx drops and errors, and softnet backlog drops, >= if_drops_warn.
--   ok                 none of the above; says how much TCP traffic flowed.

local T = {
  retrans_warn = diag.threshold("retrans_pct_warn"),
  retrans_crit = diag.threshold("retrans_pct_crit"),
  min_retrans = diag.threshold("min_retransmits"),
  drops_warn = diag.threshold("drops_warn"),
  conn_warn = diag.threshold("conn_errors_warn"),
  listen_warn = diag.threshold("listen_drops_warn"),
  if_warn = diag.threshold("if_drops_warn"),
  top_n = diag.threshold("top_n"),
}

local tcp, drops, context = results.tcp, results.drops, results.context
local net = context and context.net
local counters = net and net.counters or {}
-- The target: --pid, or a set of processes (--comm, --cgroup, ...): `pid` stands for "there is
-- one"; the set's network namespace is its first process's.
local target = run.target
local procs = target and target.processes
local pid = diag.get(run, "target", "pid") or (procs and procs[1] and procs[1].pid)
local target_arg = diag.target(run, context)
local window = (context and context.wall_s) or run.duration_s or 0
local function counter(group, name) return diag.get(counters, group, name) end
local function endpoint(addr, port)
  if addr and addr:find(":", 1, true) then return string.format("[%s]:%s", addr, tostring(port)) end
  return string.format("%s:%s", tostring(addr), tostring(port))
end
local namespace = pid and "the target's network namespace" or "the host's namespace"
local whose = (target and target.pid and string.format("process %s's sockets", tostring(target.pid)))
  or (procs and string.format("the sockets of the %d process%s of --%s %s", #procs, #procs == 1 and "" or "es",
    target.selection or "?", target.name or "?"))
  or "this host"

-- ---- flows grouped by peer -------------------------------------------------------------------

-- The flows by peer address:port: peers[key] = {name=, remote=, port=, flows=, counts...}, and
-- the keys in the order the flows came (most events first).
local function group_by_peer()
  local peers, peer_order = {}, diag.lines()
  for _, f in ipairs(tcp and tcp.flows or {}) do
    local key = endpoint(f.remote, f.remote_port)
    local p = peers[key]
    if not p then
      p = { name = key, remote = f.remote, port = f.remote_port, flows = diag.lines(), retrans = 0, data_retrans = 0,
        loss = 0, syn = 0, segs = 0, retrans_segs = 0, refused = 0, connect_fail = 0, rst_recv = 0,
        rst_recv_syn = 0, timedout = 0, reset = 0, rst_sent = 0, basis = nil }
      peers[key] = p
      peer_order:add(key)
    end
    p.flows:add(f)
    p.retrans = p.retrans + f.retransmits
    p.data_retrans = p.data_retrans + f.retransmits - f.retrans_syn
    p.loss = p.loss + f.retrans_loss
    p.syn = p.syn + f.retrans_syn
    p.refused = p.refused + f.refused
    p.connect_fail = p.connect_fail + f.connect_fail
    p.rst_recv = p.rst_recv + f.rst_recv
    p.rst_recv_syn = p.rst_recv_syn + f.rst_recv_syn
    p.timedout = p.timedout + f.timedout
    p.reset = p.reset + f.reset
    p.rst_sent = p.rst_sent + f.rst_sent
    -- only flows that carried data give a share of segments
    if f.retrans_pct and f.segs_out and f.segs_out >= 100 and f.retransmits > f.retrans_syn then
      p.segs = p.segs + f.segs_out
      p.retrans_segs = p.retrans_segs + (f.retrans_segs or 0)
      if f.retrans_pct_basis == "window" or not p.basis then p.basis = f.retrans_pct_basis end
    end
  end
  return peers, peer_order
end
local peers, peer_order = group_by_peer()

local function flow_line(f)
  return string.format("%s → %s", endpoint(f["local"], f.local_port), endpoint(f.remote, f.remote_port))
end

-- ---- retransmits -----------------------------------------------------------------------------

-- Per peer, the share of the segments sent that were retransmitted; without per-flow shares the
-- namespace's counters.
local function retransmits()
  if not tcp and not net then return nil end
  local found = diag.lines()

  for _, key in ipairs(peer_order) do
    local p = peers[key]
    local pct = diag.pct(p.retrans_segs, p.segs)
    if p.data_retrans >= T.min_retrans and p.segs > 0 and pct >= T.retrans_warn then
      local sev = pct >= T.retrans_crit and "critical" or "warning"
      local kind = p.loss > p.data_retrans / 2 and "mostly after retransmission timeouts (RTO): whole windows lost"
        or "mostly fast retransmits: single segments lost, the flow recovers without stalling"
      local ev = diag.lines(
        string.format("%s of the segments sent to %s were retransmitted (%s of %s, %s)", diag.fmt_pct(pct), key,
          diag.fmt_count(p.retrans_segs), diag.fmt_count(p.segs),
          p.basis == "window" and "over the window" or "over the sockets' lives"),
        string.format("%s retransmit event%s, %s", diag.fmt_count(p.data_retrans), p.data_retrans == 1 and "" or "s", kind))
      local top = diag.top_n(p.flows, 3, "retransmits")
      for _, f in ipairs(top) do
        ev:add("flow %s: %s retransmits%s", flow_line(f), diag.fmt_count(f.retransmits),
          f.retrans_pct and string.format(", %s of its segments", diag.fmt_pct(f.retrans_pct)) or "")
      end
      local tcp_pct = net and net.tcp_retrans_pct
      if tcp_pct and (counter("Tcp", "OutSegs") or 0) > 0 then
        ev:add("Counters of %s: RetransSegs / OutSegs = %s (all its flows)",
          namespace, diag.fmt_pct(tcp_pct))
      end
      found:add(diag.verdict("retransmits", sev,
        string.format("Retransmits to %s: %s of segments sent", key, diag.fmt_pct(pct)), ev,
        { string.format("Packets to or from %s are lost on the path: check drops at each hop (this report's drops, `ip -s link`, `nstat -az TcpExtTCPLostRetransmit`), then the switches and links between", key),
          "Look for a firewall or rate limiter dropping a share of packets (nft list ruleset, tc -s qdisc), and for a congested link (interface drops)",
          string.format("Watch the flow: ss -tin dst %s (retrans, rtt, cwnd)", p.remote or "PEER") }))
    end
  end
    -- No per-flow share (no flow carried enough data): the namespace's counters.
  if #found == 0 and net and net.tcp_retrans_pct and net.tcp_retrans_pct >= T.retrans_warn and
      (counter("Tcp", "RetransSegs") or 0) >= T.min_retrans then
    local sev = net.tcp_retrans_pct >= T.retrans_crit and "critical" or "warning"
    found:add(diag.verdict("retransmits", sev,
      string.format("Retransmits: %s of TCP segments sent", diag.fmt_pct(net.tcp_retrans_pct)),
      { string.format("RetransSegs %s of OutSegs %s in the window (%s)", diag.fmt_count(counter("Tcp", "RetransSegs")),
          diag.fmt_count(counter("Tcp", "OutSegs") or 0), namespace),
        "No single flow stood out (the flows seen sent too little to give a share)" },
      { "Find the flows: ss -ti | grep -B1 retrans, then check drops on their path" }))
  end
  if #found > 0 then return found end
  local out, retr = counter("Tcp", "OutSegs"), counter("Tcp", "RetransSegs")
  if out and out > 0 then
    return diag.ruled_out("retransmits", "no loss: %s of %s TCP segments retransmitted (%s) in %s", diag.fmt_count(retr or 0),
      diag.fmt_count(out), diag.fmt_pct(net.tcp_retrans_pct or 0), namespace)
  end
  if not tcp then return nil end
  return diag.ruled_out("retransmits", "no loss: no flow retransmitted %s of its segments", diag.fmt_pct(T.retrans_warn))
end

-- ---- connections refused, timed out, reset ---------------------------------------------------

-- Per peer: connects refused, connects unanswered, connections reset by the peer.
local function connection_errors()
  if not tcp then return nil end
  local found = diag.lines()

  for _, key in ipairs(peer_order) do
    local p = peers[key]
    local refused = math.max(p.refused, p.rst_recv_syn)
    if refused >= T.conn_warn then
      found:add(diag.verdict("connection-refused", "warning",
        string.format("Connections to %s refused: %s in %.1f s", key, diag.fmt_count(refused), window),
        { string.format("%s connect%s to %s answered by a reset (resets in answer to a SYN %s, ECONNREFUSED reported %s, failed connects %s)",
            diag.fmt_count(refused), refused == 1 and "" or "s", key, diag.fmt_count(p.rst_recv_syn),
            diag.fmt_count(p.refused), diag.fmt_count(p.connect_fail)),
          string.format("Nothing listens on port %s at %s, or a firewall there rejects with a reset", tostring(p.port), tostring(p.remote)) },
        { string.format("On %s: ss -ltn 'sport = :%s' — is the service up, listening on that address and port?", tostring(p.remote), tostring(p.port)),
          "Check the client's configuration: the port or address it connects to may be wrong (a stale DNS entry, a moved service)" }))
    end
    local unanswered = math.max(0, p.connect_fail - p.rst_recv_syn)
    local timeouts = math.max(p.timedout, unanswered)
    if p.refused == 0 and (timeouts >= T.conn_warn or p.syn >= T.min_retrans) then
      found:add(diag.verdict("connect-timeout", "warning",
        string.format("Connects to %s go unanswered: %s SYN retransmit%s, %s failed", key, diag.fmt_count(p.syn),
          p.syn == 1 and "" or "s", diag.fmt_count(timeouts)),
        { string.format("%s SYN%s to %s retransmitted: the peer did not answer in time", diag.fmt_count(p.syn), p.syn == 1 and "" or "s", key),
          string.format("%s connect%s failed without a reset, %s reported ETIMEDOUT", diag.fmt_count(unanswered),
            unanswered == 1 and "" or "s", diag.fmt_count(p.timedout)),
          "A listener whose accept queue is full drops SYNs silently; so does a firewall that drops instead of rejecting" },
        { string.format("On %s: ss -ltn 'sport = :%s' (Recv-Q at Send-Q: the accept queue is full) and nstat -az TcpExtListenOverflows", tostring(p.remote), tostring(p.port)),
          "Check the path: a firewall dropping SYNs, a route to nowhere (ip route get ADDRESS)" }))
    end
    local est_rst = math.max(0, p.rst_recv - p.rst_recv_syn)
    local resets = math.max(p.reset, est_rst)
    if resets >= T.conn_warn then
      found:add(diag.verdict("connection-reset", "warning",
        string.format("Connections reset by %s: %s", key, diag.fmt_count(resets)),
        { string.format("%s reset%s received from %s on open connections, %s ECONNRESET/EPIPE reported", diag.fmt_count(est_rst),
            est_rst == 1 and "" or "s", key, diag.fmt_count(p.reset)) },
        { string.format("On %s: why does it close connections abruptly (crash, restart, idle timeout, a proxy or load balancer in between)?", tostring(p.remote)),
          "Resets after idle periods point at a middlebox's connection timeout: compare with keepalive settings" }))
    end
  end
  if #found > 0 then return found end
  return diag.ruled_out("connection-errors", "no connection refused, unanswered or reset %s times by one peer (%s peers)",
    diag.fmt_count(T.conn_warn), diag.fmt_count(#peer_order))
end

-- Resets this host sent, per local port.
local function resets_sent()
  if not tcp then return nil end
  local found = diag.lines()
  local by_port, order = {}, diag.lines()
  for _, f in ipairs(tcp and tcp.flows or {}) do
    if f.rst_sent > 0 then
      local key = endpoint(f["local"], f.local_port)
      if not by_port[key] then
        by_port[key] = { n = 0, peers = {}, port = f.local_port }
        order:add(key)
      end
      by_port[key].n = by_port[key].n + f.rst_sent
      diag.add(by_port[key].peers, f.remote, f.rst_sent)
    end
  end
  for _, key in ipairs(order) do
    local b = by_port[key]
    if b.n >= T.conn_warn then
      local top = diag.ranked(b.peers, 3)
      local names = diag.lines()
      for _, x in ipairs(top) do names:add("%s (%s)", x.name, diag.fmt_count(x.count)) end
      found:add(diag.verdict("resets-sent", "warning",
        string.format("Resets sent from %s: %s", key, diag.fmt_count(b.n)),
        { string.format("%s reset%s sent from %s to %s", diag.fmt_count(b.n), b.n == 1 and "" or "s", key, table.concat(names, ", ")),
          "A reset answers a packet no socket wanted: a connect to a port nothing listens on, or data for a connection already gone" },
        { string.format("ss -ltn 'sport = :%s' — should something listen there? If so it is down or bound elsewhere", tostring(b.port)),
          "If clients keep connecting to it, find and fix their configuration" }))
    end
  end
  if #found > 0 then return found end
  return diag.ruled_out("resets-sent", "no port sent %s resets or more", diag.fmt_count(T.conn_warn))
end

-- ---- drops by reason -------------------------------------------------------------------------

-- Reasons that follow other trouble (duplicates after a retransmit, stale packets, multicast
-- nobody wants): listed, not judged.
local FOLLOWERS = { TCP_OLD_DATA = true, TCP_OLD_SEQUENCE = true, TCP_OFOMERGE = true, TCP_OLD_ACK = true,
  TCP_OFO_DROP = true, DUP_FRAG = true, OTHERHOST = true, NOT_SPECIFIED = true, IPV6_NDISC_NS_OTHERHOST = true,
  TCP_FLAGS = true, UNHANDLED_PROTO = true, SKB_CONSUMED = true }

local ADVICE = {
  { "NETFILTER", "a firewall rule (nftables / iptables) dropped them",
    "List the rules and their counters: nft list ruleset (or iptables-save -c); find the rule that matches this traffic" },
  { "NO_SOCKET", "no socket wanted them: nothing listens on the port, or the connection is gone",
    "ss -ltn / ss -lun: should something listen there? Clients still sending to a closed port need fixing" },
  { "CPU_BACKLOG", "a CPU's input backlog was full (net.core.netdev_max_backlog)",
    "cat /proc/net/softnet_stat; spread the load (RPS/RSS) or raise net.core.netdev_max_backlog" },
  { "LISTEN_OVERFLOW", "a listening socket's accept queue was full", "The application does not accept fast enough: raise its backlog (and net.core.somaxconn) or accept faster" },
  { "BACKLOG", "a socket's backlog was full while it was busy", "The application does not keep up with its sockets: more threads, or less work per packet" },
  { "RCVBUF", "a socket's receive buffer was full", "The application reads too slowly: check what it waits on (diagnose latency with its --pid or --comm), or raise net.core.rmem_max / SO_RCVBUF" },
  { "PROTO_MEM", "TCP/UDP memory was at its limit (net.ipv4.tcp_mem / udp_mem)", "cat /proc/net/sockstat; find the sockets holding memory (ss -tm)" },
  { "CSUM", "checksums were wrong: corruption on the wire or a NIC offload bug", "ethtool -S IFACE for errors; try ethtool -K IFACE rx off; check cables and the NIC" },
  { "QDISC", "a queueing discipline dropped them (a queue limit or a shaper)", "tc -s qdisc show: which qdisc drops, and its limit" },
  { "TC_", "a tc filter or action dropped them", "tc -s filter show dev IFACE ingress / egress" },
  { "ROUTE", "there was no route, or the route was refused", "ip route get DEST; check rp_filter (sysctl net.ipv4.conf.*.rp_filter)" },
  { "RPFILTER", "reverse-path filtering rejected them (asymmetric routing)", "sysctl net.ipv4.conf.*.rp_filter; ip route get SOURCE from DEST" },
  { "NEIGH", "the neighbour (ARP/NDP) could not be resolved", "ip neigh show; is the next hop up?" },
  { "XDP", "an XDP program dropped them", "bpftool net show: which XDP program is attached" },
  { "TCP_", "TCP refused them (a protocol check)", "nstat -az 'TcpExt*': which TcpExt counter moves with them" },
}
local function advice(reason)
  for _, a in ipairs(ADVICE) do
    if reason:find(a[1], 1, true) then return a[2], a[3] end
  end
  return "see SKB_DROP_REASON_" .. reason .. " in the kernel's include/net/dropreason-core.h",
    "Find where: the kernel stacks and locations in this report"
end

local function drop_rows(reason)
  local rows = diag.lines()
  for _, d in ipairs(drops and drops.drops or {}) do
    if d.reason == reason then rows:add(d) end
  end
  return rows
end

local function stack_of(reason)
  for _, s in ipairs(drops and drops.stacks or {}) do
    if s.tag == reason and #(s.kernel or {}) > 0 then return s end
  end
  return nil
end

-- Per drop reason (but the ones that only follow other trouble): what it means, where.
local function packet_drops()
  if not drops then return nil end
  local found = diag.lines()
  for _, r in ipairs(drops and drops.reasons or {}) do
    if not FOLLOWERS[r.reason] and r.count >= T.drops_warn then
      local meaning, check = advice(r.reason)
      local sev = r.count >= 100 * T.drops_warn and "critical" or "warning"
      local rows = drop_rows(r.reason)
      local ev = diag.lines(string.format("%s packet%s dropped with reason %s (%s/s): %s", diag.fmt_count(r.count), r.count == 1 and "" or "s",
        r.reason, diag.fmt_count(r.count / math.max(window, 0.001)), meaning))
      local ports = diag.lines()
      for i = 1, math.min(3, #rows) do
        local d = rows[i]
        ev:add("%s %s, %s at %s", diag.fmt_count(d.count), d.protocol,
          d.port > 0 and string.format("local port %d", d.port) or "no socket", d.location)
        if d.port > 0 then ports:add(tostring(d.port)) end
      end
      local s = stack_of(r.reason)
      if s then ev:add("Kernel path: " .. diag.call_path(s.kernel, 8)) end
      found:add(diag.verdict("packet-drops", sev,
        string.format("Packets dropped: %s × %s%s", diag.fmt_count(r.count), r.reason,
          #ports > 0 and string.format(" (port %s)", ports[1]) or ""),
        ev, { check, "Compare with the flows above: drops on a port that retransmits are its loss" }))
    end
  end
  if #found > 0 then return found end
  return diag.ruled_out("packet-drops", "no drop reason reached %s drops: %s kernel drop%s in all", diag.fmt_count(T.drops_warn),
    diag.fmt_count(drops.total or 0), (drops.total or 0) == 1 and "" or "s")
end

-- ---- listen queue overflows -------------------------------------------------------------------

-- ListenOverflows / ListenDrops, naming the listeners with connections still waiting.
local function listen_overflow()
  local over, drops_counter = counter("TcpExt", "ListenOverflows"), counter("TcpExt", "ListenDrops")
  local n = math.max(over or 0, drops_counter or 0)
  if n < T.listen_warn then
    if over == nil and drops_counter == nil then return nil end
    return diag.ruled_out("listen-overflow", "no listen queue overflow: ListenOverflows %s, ListenDrops %s",
      diag.fmt_count(over or 0), diag.fmt_count(drops_counter or 0))
  end
  -- the listeners with connections still waiting at the end: the ones not keeping up
  local full, names = diag.lines(), diag.lines()
  for _, l in ipairs(diag.top_n(tcp and tcp.listeners or {}, 3, "accept_queue")) do
    if l.accept_queue > 0 then full:add(l) end
  end
  for _, l in ipairs(full) do names:add(tostring(l.local_port)) end
  local where = #full > 0 and string.format(" on port %s", table.concat(names, ", ")) or ""
  local ev = diag.lines(string.format("ListenOverflows %s, ListenDrops %s in the window (%s): connections dropped because an accept queue was full",
    diag.fmt_count(over or 0), diag.fmt_count(drops_counter or 0), namespace))
  for _, l in ipairs(full) do
    ev:add("%s: %d connection%s waiting to be accepted at the end of the window", endpoint(l["local"], l.local_port),
      l.accept_queue, l.accept_queue == 1 and "" or "s")
  end
  if #full == 0 then ev:add("No listener had connections waiting at the end of the window") end
  local q = counter("TcpExt", "TCPReqQFullDrop")
  if q and q > 0 then ev:add("TCPReqQFullDrop %s: the SYN queue was full too (a SYN flood, or syncookies off)", diag.fmt_count(q)) end
  return diag.verdict("listen-overflow", "warning",
    string.format("Listen queue overflows%s: %s connection%s dropped", where, diag.fmt_count(n), n == 1 and "" or "s"), ev,
    { string.format("The application does not accept() fast enough: is it busy or blocked (diagnose latency %s)?", target_arg),
      string.format("Raise its listen() backlog and net.core.somaxconn; ss -ltn%s shows Recv-Q (waiting) against Send-Q (backlog)",
        #full > 0 and string.format(" 'sport = :%s'", names[1]) or "") })
end

-- ---- interfaces and softnet -------------------------------------------------------------------

-- Per interface rx/tx drops and errors, and the softnet backlog's drops.
local function interface_drops()
  if not net then return nil end
  local found = diag.lines()
  for _, i in ipairs(net and net.interfaces or {}) do
    local n = i.rx_drop + i.tx_drop + i.rx_errs + i.tx_errs + i.rx_fifo + i.tx_fifo
    if n >= T.if_warn then
      found:add(diag.verdict("interface-drops", "warning",
        string.format("Interface %s drops or errors: %s in %.1f s", i.name, diag.fmt_count(n), window),
        { string.format("%s: rx drop %s, rx errors %s, rx fifo %s; tx drop %s, tx errors %s, tx fifo %s (of %s received, %s sent)",
            i.name, diag.fmt_count(i.rx_drop), diag.fmt_count(i.rx_errs), diag.fmt_count(i.rx_fifo),
            diag.fmt_count(i.tx_drop), diag.fmt_count(i.tx_errs), diag.fmt_count(i.tx_fifo),
            diag.fmt_count(i.rx_packets), diag.fmt_count(i.tx_packets)) },
        { string.format("ethtool -S %s: which counter (ring full, missed, CRC)?; ip -s link show %s", i.name, i.name),
          "rx drops with no errors: the host does not drain the ring fast enough (ethtool -g/-G, IRQ affinity)" }))
    end
  end
  local sn = net and net.softnet
  if sn and sn.dropped >= T.if_warn then
    found:add(diag.verdict("interface-drops", "warning",
      string.format("Softnet backlog drops: %s packets", diag.fmt_count(sn.dropped)),
      { string.format("/proc/net/softnet_stat: %s dropped, %s time squeezes, %s processed (all CPUs)", diag.fmt_count(sn.dropped),
          diag.fmt_count(sn.time_squeeze), diag.fmt_count(sn.processed)) },
      { "A CPU's input queue was full: raise net.core.netdev_max_backlog, spread receive work (RPS/RSS)" }))
  end
  if #found > 0 then return found end
  local n = 0
  for _, i in ipairs(net.interfaces or {}) do n = n + i.rx_drop + i.tx_drop + i.rx_errs + i.tx_errs + i.rx_fifo + i.tx_fifo end
  return diag.ruled_out("interface-drops", "no interface or backlog drops: %s interface drops and errors, %s softnet drops",
    diag.fmt_count(n), diag.fmt_count(diag.get(net, "softnet", "dropped") or 0))
end

-- ---- all well ----------------------------------------------------------------------------------

-- Nothing found: how much TCP traffic flowed, with no error.
local function quiet_verdict()
  local out, retr = counter("Tcp", "OutSegs"), counter("Tcp", "RetransSegs")
  local ev = diag.lines()
  if out then
    ev:add("%s TCP segments sent, %s retransmitted (%s) in %s", diag.fmt_count(out), diag.fmt_count(retr or 0),
      diag.fmt_pct(net.tcp_retrans_pct or 0), namespace)
  end
  ev:add("%s flow%s with a TCP event, %s kernel drop%s", diag.fmt_count(#(tcp and tcp.flows or {})),
    #(tcp and tcp.flows or {}) == 1 and "" or "s", diag.fmt_count(drops and drops.total or 0), (drops and drops.total or 0) == 1 and "" or "s")
  local title = (out and out > 0) and string.format("No network errors: %s TCP segments sent, %s retransmitted", diag.fmt_count(out), diag.fmt_pct(net.tcp_retrans_pct or 0))
    or "No network errors seen"
  if not out or out == 0 then ev:add("No TCP traffic in the namespace read: errors could only show in the flows above") end
  return diag.verdict("ok", "ok", title, ev,
    { "If the symptom persists, measure while it happens: diagnose network-errors --duration 30",
      pid and "Timeouts with a clean network: the peer is slow to answer (diagnose latency --pid on the peer)" or
        "Narrow to one service: diagnose network-errors --pid PID" })
end

-- ---- incomplete data ---------------------------------------------------------------------------

local function incomplete_data()
  local partial = diag.partial()
  local note = partial.note
  if not tcp then note("tcp missing", "tcp: no results: retransmits, resets and connects were not measured", "warning") end
  if not drops then note("drops missing", "drops: no results: kernel drops were not measured", "warning") end
  if not context then note("context missing", "context: no results: counters, listen queues and interfaces were not read") end
  if tcp and tcp.dropped > 0 then
    note(string.format("tcp: %s dropped", diag.fmt_count(tcp.dropped)), string.format("tcp: %s event(s) not counted (more flows than max_flows)", diag.fmt_count(tcp.dropped)))
  end
  if drops and drops.dropped > 0 then
    note(string.format("drops: %s dropped", diag.fmt_count(drops.dropped)), string.format("drops: %s drop(s) or stacks not kept (a map was full)", diag.fmt_count(drops.dropped)))
  end
  if drops and drops.sampled_1_in then
    note(string.format("drops sampled 1 in %d", drops.sampled_1_in), string.format("drops: 1 in %d counted (budget): counts are estimates", drops.sampled_1_in))
  end
  if drops and not drops.reasons_known and (drops.total or 0) > 0 then
    note("no drop reasons", "drops: this kernel does not name its drop reasons: all are \"unknown\"")
  end
  partial.stop(run.stop_reason, window, context and context.exited)
  return partial.verdict({ "Verdicts may be partial" })
end

-- ---- report sections ---------------------------------------------------------------------------

local function flows_table()
  local rows = diag.lines()
  for i = 1, math.min(T.top_n, #tcp.flows) do
    local f = tcp.flows[i]
    -- a share of a handful of segments (a connect's SYNs) says nothing
    local pct = f.retrans_pct and (f.segs_out or 0) >= 100 and diag.fmt_pct(f.retrans_pct) or ""
    rows:add({ flow_line(f), diag.fmt_count(f.retransmits), pct,
      diag.fmt_count(f.rst_sent + f.rst_recv), diag.fmt_count(f.connect_fail), diag.fmt_count(f.refused + f.timedout + f.reset + f.other_errors) })
  end
  if #rows == 0 then return nil end
  return diag.table(string.format("TCP flows with events (%s; most first)", whose),
      { "flow (local → peer)", "retransmits", "of segments", "resets", "failed connects", "errors" }, rows)
end

local function drops_table()
  local rows = diag.lines()
  for i = 1, math.min(T.top_n, #drops.drops) do
    local d = drops.drops[i]
    rows:add({ d.reason, d.protocol, d.port > 0 and tostring(d.port) or "-", d.location, diag.fmt_count(d.count) })
  end
  return diag.table("Kernel drops (reason, protocol, local port, where)", { "reason", "protocol", "port", "where", "drops" }, rows)
end

local function counters_table()
  local rows = diag.lines()
  for _, g in ipairs({ "Tcp", "TcpExt", "Ip", "IpExt", "Udp" }) do
    local names = diag.lines()
    for name, v in pairs(counters[g] or {}) do
      if v > 0 then names:add(name) end
    end
    table.sort(names)
    for _, name in ipairs(names) do rows:add({ g .. ":" .. name, diag.fmt_count(counters[g][name]) }) end
  end
  if #rows == 0 then return nil end
  return diag.table("TCP/IP counters that moved (deltas over the window)", { "counter", "delta" }, rows)
end

-- ---- main: the hypotheses in order, ok when none is a warning ----------------------------------

local answer = diag.answer()
for _, hypothesis in ipairs({ retransmits, connection_errors, resets_sent, packet_drops, listen_overflow, interface_drops }) do
  answer.add(hypothesis())
end
local worst = false
for _, v in ipairs(answer.verdicts) do
  if v.severity == "warning" or v.severity == "critical" then worst = true end
end
if not worst then answer.add(quiet_verdict()) end
answer.add(incomplete_data())

if tcp then answer.section(flows_table()) end
if drops and #(drops.drops or {}) > 0 then answer.section(drops_table()) end
if net then answer.section(counters_table()) end

-- the key figures `diagnose watch` exports (nil: not measured)
answer.metric("tcp_retransmit_ratio", net and net.tcp_retrans_pct and net.tcp_retrans_pct / 100,
  "TCP segments retransmitted over segments sent over the window, in the namespace watched")

return answer.result()
