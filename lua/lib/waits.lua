-- waits.lua — what a blocked thread waits on, read from an off-CPU stack; loaded after diag.lua
-- as global `waits`, for every snippet that reads off_cpu stacks (latency, triage) or lock
-- wrappers in on-CPU stacks (high-cpu).
--
-- Owns: the frame lists of kernel waits and of the C library's wait and lock wrappers, the one
-- classification of an off-CPU stack (waits.classify: the kernel's frames, then the runtimes'
-- wait functions of lua/lib/wait_table.lua matched through the user frames, then the C
-- library's wrappers), the words of a runtime's wait (waits.describe), and the one list of
-- frames that are not the target's own code (libc / libpthread / vDSO wrappers: waits.own_frame
-- skips them).
-- Must not: know any recipe's thresholds or verdicts, or how a snippet groups the classes; hold
-- runtime function names (wait_table.lua holds them, as data).

local waits = {}

-- waits.KERNEL: kernel frames, by what a blocked thread waits on: disk (the block layer,
-- writeback, a journal), fault (a page fault reading a page in), futex, poll (waiting for work:
-- epoll, poll, select, accept, pause, sigtimedwait), peer (a socket or pipe's data), sleep.
waits.KERNEL = {
  disk = { "^io_schedule", "^blk_", "^bio_", "^submit_bio_wait", "^folio_wait", "^wait_on_page",
    "^__filemap_fdatawait", "^filemap_write_and_wait", "^file_write_and_wait", "^jbd2", "^ext4_sync",
    "^xfs_file_fsync", "^xfs_log_force", "^blkdev_", "^__blockdev_direct_IO", "^iomap_dio" },
  fault = { "^handle_mm_fault", "^exc_page_fault", "^do_user_addr_fault", "^filemap_fault",
    "^do_swap_page", "^__do_fault" },
  futex = { "^futex_wait", "^__futex_wait", "^futex_q_lock" },
  poll = { "^ep_poll", "^do_epoll_wait", "^do_sys_poll", "^do_select", "^core_sys_select",
    "^inet_csk_accept", "^inet_csk_wait_for_connect", "^unix_wait_for_peer_accept", "^__do_sys_pause",
    "^do_sigtimedwait", "^sys_pause", "_sys_pause$", "_sys_rt_sigsuspend$", "^do_wait$" },
  peer = { "^sk_wait_data", "^tcp_recvmsg", "^unix_stream_read_generic", "^unix_stream_data_wait",
    "^inet_wait_for_connect", "^__skb_wait_for_more_packets", "^pipe_read", "pipe_read$", "^pipe_write",
    "pipe_write$", "^wait_woken" },
  sleep = { "^do_nanosleep", "^hrtimer_nanosleep", "^common_nsleep", "^clock_nanosleep" },
}

-- waits.USER: the user frames of the wrapper that made a futex call: a lock (mutex, rwlock,
-- semaphore, spin lock) or a condition (a condition variable: waiting for work).
waits.USER = {
  lock = { "pthread_mutex_lock", "pthread_mutex_timedlock", "lll_lock", "pthread_rwlock_",
    "sem_wait", "sem_timedwait", "pthread_spin_lock", "std::mutex::lock" },
  cond = { "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
    "__pthread_cond_wait", "std::condition_variable", "futex_abstimed_wait" },
}

-- Host name lookups: whatever the resolver waits on (a socket to the DNS server, a lock), the
-- caller waits for the name.
waits.RESOLVE = { "^getaddrinfo$", "^gethostbyname", "^__libc_res_n", "^__res_n", "^res_n",
  "^__nss_hosts", "^_nss_dns_" }

-- A lock is released, and its waiters woken, from these user frames (kernel: futex_wake).
waits.UNLOCK = { "pthread_mutex_unlock", "__lll_unlock_wake", "lll_unlock", "pthread_rwlock_unlock",
  "sem_post", "std::mutex::unlock" }

-- An unnamed futex waited on this long per interval (ns) is a parked thread: it waits for work;
-- a contended lock is waited for briefly and often.
waits.PARKED_NS = 50e6

local any_frame = diag.any_frame

-- ---- the runtimes' wait functions (lua/lib/wait_table.lua, and wait_table_NAME.lua) ------------

-- What a table class is among waits.classify's classes.
local CLASS_OF = { lock = "lock", latch = "latch", condition = "work-wait", ["event-loop"] = "event-loop",
  idle = "work-wait", gil = "gil", park = "park", peer = "peer", sleep = "sleep" }

-- Whether frame is the function name: equal, a demangled C++ frame with its parameters
-- ("Parker::park(bool, long)"), or any frame it begins when the name ends in "*"; a "*" before
-- the end stands for any text ("_worker (*/concurrent/futures/thread.py:*").
local function glob(name)
  return "^" .. name:gsub("[%^%$%(%)%%%.%[%]%+%-%?]", "%%%0"):gsub("%*", ".*") .. "$"
end
function waits.frame_is(frame, name)
  if frame == name then return true end
  local star = name:find("*", 1, true)
  if star == #name then return frame:sub(1, #name - 1) == name:sub(1, -2) end
  if star then return frame:find(glob(name)) ~= nil end
  return frame:sub(1, #name + 1) == name .. "("
end

local function frame_in(frame, names)
  for _, n in ipairs(names) do
    if waits.frame_is(frame, n) then return true end
  end
  return false
end

-- A table entry as a one-line error ("wait_table_x entry 3: ..."): the author's file is named.
local function check_entry(e, bad)
  if type(e) ~= "table" then bad("not a table") end
  if type(e.fn) ~= "table" or #e.fn == 0 then bad("fn: a list of function names is required") end
  if not CLASS_OF[e.class] then bad(string.format("class %q is not one of lock, latch, condition, event-loop, idle, gil, park, peer, sleep", tostring(e.class))) end
  if type(e.what) ~= "string" or e.what == "" then bad("what: the words are required") end
  if e.under ~= nil and (type(e.under) ~= "table" or #e.under == 0) then bad("under: a list of caller names") end
  if e.within ~= nil and (math.type(e.within) ~= "integer" or e.within < 1) then bad("within: a whole number of frames >= 1") end
  if e.steps ~= nil and type(e.steps) ~= "table" then bad("steps: a list of lines") end
  if e.follow ~= nil and (type(e.follow) ~= "string" or not e.follow:find("^[a-z0-9][a-z0-9-]*$")) then
    bad("follow: a recipe name (lowercase letters, digits and -)")
  end
  if e.python_under ~= nil and (type(e.python_under) ~= "table" or #e.python_under == 0) then
    bad("python_under: a list of Python frame names")
  end
  if e.python ~= nil and type(e.python) ~= "boolean" then bad("python: true or false") end
end

-- The entries, once: the authors' (every global wait_table_NAME, by name) before wait_table's.
-- Built on first use, when every library has been loaded whatever its name.
local entries
function waits.entries()
  entries = entries or diag.authored("wait_table", check_entry)
  return entries
end

-- The index of a caller of frames[i] named in e.under (within e.within frames), or nil; i
-- itself when e has no under.
local function under_at(e, frames, i)
  if not e.under then return i end
  local last = e.within and math.min(#frames, i + e.within) or #frames
  for j = i + 1, last do
    if frame_in(frames[j], e.under) then return j end
  end
  return nil
end

-- The first symbolized frame after index i (the caller that names the wait), or nil.
local function named_caller(frames, i)
  for j = i + 1, #frames do
    if diag.symbolized(frames[j]) then return frames[j] end
  end
  return nil
end

-- The index of the innermost Python frame above frames[i] (from: the stack's user_from), or nil.
local function python_above(frames, from, i)
  for j = i + 1, #frames do
    if from and from[j] == "python" then return j end
  end
  return nil
end

-- Whether entry e's Python conditions hold for the fn frame at i: python_under, the innermost
-- Python frame above it is one of these; python, there is a Python frame above it. The index of
-- the frame naming the wait (that Python frame), or i.
local function python_at(e, frames, from, i)
  if not e.python_under and not e.python then return i end
  local j = python_above(frames, from, i)
  if not j then return nil end
  if e.python_under and not frame_in(frames[j], e.python_under) then return nil end
  return j
end

-- waits.match(user, from): the table entry naming the wait of these user frames (leaf first;
-- from: their user_from, which entries with Python conditions read): the innermost frame an
-- entry names wins, the earlier entry at one frame; fallback entries only when no other
-- matches. {entry=, frame= the fn frame, at= the frame naming it (the under frame, the Python
-- frame, or fn's), caller= at's caller}, or nil.
function waits.match(user, from)
  local frames = user or {}
  for _, fallback in ipairs({ false, true }) do
    for i, f in ipairs(frames) do
      for _, e in ipairs(waits.entries()) do
        if (e.fallback == true) == fallback and frame_in(f, e.fn) then
          local j = under_at(e, frames, i)
          local p = j and python_at(e, frames, from, i)
          if p then
            if e.python_under or e.python then -- the Python frame, called by the next Python frame
              return { entry = e, frame = f, at = frames[p], caller = frames[python_above(frames, from, p) or 0] }
            end
            return { entry = e, frame = f, at = frames[j], caller = named_caller(frames, j) }
          end
        end
      end
    end
  end
  return nil
end

-- The name of a frame as the words show it: a demangled C++ frame without its parameters (a
-- Python frame, "qualname (file.py:line)", keeps its place).
local function short_name(f)
  if f:find("^%S+ %(.*%)$") then return f end
  return (f:gsub("%b()$", ""))
end

-- waits.describe(m): a match's words, "a heavyweight lock (row or transaction) in
-- LockAcquireExtended ← XactLockTableWait".
function waits.describe(m)
  local e = m.entry
  local detail = m.caller and e.detail_by_caller and e.detail_by_caller[short_name(m.caller)]
  local what = e.what .. (detail and (" (" .. detail .. ")") or "")
  return string.format("%s in %s%s", what, short_name(m.at), m.caller and (" ← " .. short_name(m.caller)) or "")
end

-- waits.follow(m): the recipe its wait table entry names to follow this wait with, or nil.
function waits.follow(m)
  return m and m.entry.follow or nil
end

-- waits.steps(m, pid): a match's next steps, "{pid}" replaced.
function waits.steps(m, pid)
  local out = {}
  for i, line in ipairs((m and m.entry.steps) or {}) do out[i] = (line:gsub("{pid}", tostring(pid or "PID"))) end
  return out
end

-- waits.classify(stack, user_unwind): the class of one off-CPU stack ({tag=, kernel=, user=,
-- count=, weight=, user_from=}), and the wait table's match when an entry named it
-- (waits.match); user_unwind is the off_cpu results' (nil, "fp" or "dwarf"). First match wins:
--   runnable   the state was runnable: preempted, waiting for a CPU
--   resolve    a host name lookup (getaddrinfo, gethostbyname, the resolver) in the user frames
--   fault      uninterruptible in a page fault (reading a mapped file, swap)
--   disk       uninterruptible in the block layer, page cache writeback or a journal
--   a runtime's wait, named by the wait table through the user frames (whatever the kernel
--   frame: epoll_wait, futex, select): its class as CLASS_OF maps it — lock, latch, gil, park
--   (work-wait when the entry is parked_is_idle and its waits average >= PARKED_NS),
--   event-loop, peer, sleep, or work-wait (idle, condition)
--   lock       a futex under pthread_mutex_lock / rwlock / sem_wait (the user frames say so)
--   work-wait  waiting for work: a futex under pthread_cond_wait, a futex the user frames do not
--              name waited on >= PARKED_NS per interval (a parked thread), epoll_wait, poll,
--              select, accept
--   other      a futex whose user frames were not unwound under DWARF (the ring buffer refused
--              the copy; its frame-pointer stack, cut to one frame by glibc's futex wrappers,
--              cannot tell a lock from a condition), or nothing below
--   futex      a futex whose user frames do not say lock or condition, waited on briefly
--   peer       a blocking read of a socket or pipe (recv, read on a socket), connect
--   sleep      nanosleep / clock_nanosleep: sleeping on purpose
--   disk, fault  the same frames in an interruptible wait
local function parked(s) return (s.count or 0) > 0 and (s.weight or 0) / s.count >= waits.PARKED_NS end

local function runtime_class(s)
  local m = waits.match(s.user, s.user_from)
  if not m then return nil end
  if m.entry.parked_is_idle and parked(s) then return "work-wait", m end
  return CLASS_OF[m.entry.class], m
end

function waits.classify(s, user_unwind)
  if s.tag == "runnable" then return "runnable" end
  local k, u = s.kernel or {}, s.user or {}
  if any_frame(u, waits.RESOLVE) then return "resolve" end
  if s.tag == "uninterruptible" then
    if any_frame(k, waits.KERNEL.fault) then return "fault" end
    if any_frame(k, waits.KERNEL.disk) then return "disk" end
  end
  local runtime, m = runtime_class(s)
  if runtime then return runtime, m end
  if any_frame(k, waits.KERNEL.futex) then
    if any_frame(u, waits.USER.lock) then return "lock" end
    if any_frame(u, waits.USER.cond) then return "work-wait" end
    if user_unwind == "dwarf" and not s.user_from then return "other" end
    if parked(s) then return "work-wait" end
    return "futex"
  end
  if any_frame(k, waits.KERNEL.poll) then return "work-wait" end
  if any_frame(k, waits.KERNEL.peer) then return "peer" end
  if any_frame(k, waits.KERNEL.sleep) then return "sleep" end
  if any_frame(k, waits.KERNEL.disk) then return "disk" end
  if any_frame(k, waits.KERNEL.fault) then return "fault" end
  return "other"
end

-- User frames that are the C library's, not the target's own code: its internals (a leading
-- underscore), the pthread, semaphore and futex wrappers, and the wrappers of the calls that
-- block (sleeps, polls, reads, syncs), the clock, and the thread start.
local NOT_OWN = { "^_", "^pthread_", "^sem_", "^futex", "^syscall$", "nanosleep$", "^epoll_",
  "^poll$", "^select$", "^accept", "^recv", "^read$", "^pread", "^fsync$", "^fdatasync$",
  "^usleep$", "^sleep$", "^clock_gettime", "^start_thread$", "^clone", "^pause$", "^sigsuspend$",
  "^sigwait", "^sigtimedwait$", "^wait$", "^waitpid$", "^wait4$", "^waitid$" }

-- A named frame of the target's own code.
function waits.is_own(f)
  if not diag.symbolized(f) then return false end
  for _, p in ipairs(NOT_OWN) do
    if f:find(p) then return false end
  end
  return true
end

-- waits.own_frame(user, from): the first frame of the target's own code (user frames, leaf first) and
-- the own frame that called it (not main), or nil. With the stack's user_from (from, may be nil)
-- and Python frames in it: the innermost Python frame and the Python frame that called it (the
-- interpreter's C frames below are not the service's code: lang.lua).
function waits.own_frame(user, from)
  local frames = user or {}
  local i, py = lang.python_leaf({ user = frames, user_from = from })
  if i then
    local caller
    for k = i + 1, #frames do
      if from[k] == "python" then caller = frames[k] break end
    end
    return py, caller
  end
  for i, f in ipairs(frames) do
    if waits.is_own(f) then
      local caller = frames[i + 1]
      return f, caller and waits.is_own(caller) and caller ~= "main" and caller or nil
    end
  end
  return nil
end

return waits
