-- heap.lua — the call paths of heap memory in the program's own terms; loaded after diag.lua and
-- lang.lua as global `heap`, for the snippets that read allocation stacks (memory-growth).
--
-- Owns: matching frames against the allocator-wrapper table (alloc_wrappers.lua and every
-- alloc_wrappers_NAME.lua), the frame that names an allocation (the innermost Python frame, else
-- the first symbolized frame that is neither a wrapper nor a helper), and grouping a probe's
-- stacks by that frame (what each function holds, allocated, freed; its heaviest path).
-- Must not: know any recipe's thresholds or verdicts.

local heap = {}

-- A table name's glob ("zmalloc*", "std::vector<*>::push_back*") as an anchored Lua pattern.
local function glob(name)
  return "^" .. name:gsub("[%^%$%(%)%%%.%[%]%+%-%?]", "%%%0"):gsub("%*", ".*") .. "$"
end

-- Whether frame is the table's name: equal, a glob match, or a demangled C++ frame with its
-- parameters ("operator new(unsigned long)" for "operator new").
function heap.frame_is(frame, name)
  if frame == name then return true end
  if name:find("*", 1, true) then return frame:find(glob(name)) ~= nil end
  return frame:sub(1, #name + 1) == name .. "("
end

-- An entry as a one-line error naming its file ("alloc_wrappers_x entry 2: ...").
local function check_entry(e, bad)
  if type(e) ~= "table" then bad("not a table") end
  if type(e.fn) ~= "table" or #e.fn == 0 then bad("fn: a list of function names is required") end
  for _, n in ipairs(e.fn) do
    if type(n) ~= "string" or n == "" then bad("fn: names are non-empty strings") end
  end
  if e.kind ~= "wrapper" and e.kind ~= "helper" then
    bad(string.format("kind %q is not one of wrapper, helper", tostring(e.kind)))
  end
end

-- The entries, once: the authors' (every global alloc_wrappers_NAME, by name) before the table's.
local entries
function heap.entries()
  entries = entries or diag.authored("alloc_wrappers", check_entry)
  return entries
end

-- "wrapper", "helper" or nil: what the table says frame is (memoized: stacks repeat frames).
local kind_of = {}
function heap.kind(frame)
  local k = kind_of[frame]
  if k ~= nil then return k or nil end
  k = false
  -- a template function's demangled name begins with its return type ("void std::vector<...>::
  -- _M_realloc_insert<...>(...)"): the name after it is matched too
  local bare = frame:match("^[%w_:]+[%*&]* (std::.+)$")
  for _, e in ipairs(heap.entries()) do
    for _, n in ipairs(e.fn) do
      if heap.frame_is(frame, n) or (bare and heap.frame_is(bare, n)) then k = e.kind break end
    end
    if k then break end
  end
  kind_of[frame] = k
  return k or nil
end

-- Whether a frame has a name: diag.symbolized's, or a demangled C++ function with its parameters
-- ("SessionStore::remember(Request const&)": spaces, which diag.symbolized takes for a
-- placeholder's).
local function named(f)
  if diag.symbolized(f) then return true end
  return type(f) == "string" and f:find("%(") ~= nil and not f:find("^[%[%(]") and not f:find("%+0x%x+$")
end
heap.named = named

-- The frame that names where a stack's memory was allocated: its innermost Python frame when it
-- has one, else the first symbolized frame (leaf first) the table does not skip; nil when the
-- stack has none (it stops in the allocator, or its frames are unnamed).
function heap.own_frame(s)
  local py = lang.own_frame(s)
  if py then return py end
  for _, f in ipairs(s.user or {}) do
    if named(f) and not heap.kind(f) then return f end
  end
  return nil
end

-- Whether a frame is the allocator's or a wrapper's (not a helper's): page faults inside it are
-- the allocator's own growth.
function heap.is_allocator(frame) return heap.kind(frame) == "wrapper" end

-- The stacks grouped by own frame, heaviest held first: {name, weight, count, allocs,
-- alloc_bytes, frees, free_bytes, old_count, old_bytes, oldest_age_ms, realloc_growth_bytes,
-- unref_count, unref_bytes, checked_count, heap_only_count, checked_bytes, heap_only_bytes, unref_seen, stacks = its stacks heaviest first, top = the heaviest}.
-- Stacks without an own frame group under their leaf (or "?").
local SUMS = { "weight", "count", "allocs", "alloc_bytes", "frees", "free_bytes", "old_count", "old_bytes",
  "realloc_growth_bytes", "unref_count", "unref_bytes", "checked_count", "heap_only_count", "checked_bytes",
  "heap_only_bytes", "unref_seen" }
function heap.by_function(stacks)
  local groups, order = {}, {}
  for _, s in ipairs(stacks or {}) do
    local name = heap.own_frame(s) or (s.user or {})[1] or "?"
    local g = groups[name]
    if not g then
      g = { name = name, stacks = {}, oldest_age_ms = 0 }
      for _, k in ipairs(SUMS) do g[k] = 0 end
      groups[name] = g
      order[#order + 1] = g
    end
    for _, k in ipairs(SUMS) do g[k] = g[k] + (s[k] or 0) end
    if (s.oldest_age_ms or 0) > g.oldest_age_ms then g.oldest_age_ms = s.oldest_age_ms end
    g.stacks[#g.stacks + 1] = s
  end
  for _, g in ipairs(order) do
    table.sort(g.stacks, function(a, b) return (a.weight or 0) > (b.weight or 0) end)
    g.top = g.stacks[1]
  end
  table.sort(order, function(a, b)
    if a.weight ~= b.weight then return a.weight > b.weight end
    return a.name < b.name
  end)
  return order
end

return heap
