-- lang.lua — frames in the language the service is written in; loaded after diag.lua as global
-- `lang`, for every snippet that reads stacks (high-cpu, latency, triage, memory-growth).
--
-- Owns: reading the interpreter frames a stack probe put in place of the evaluation loop's native
-- frames (CPython: user_from "python", named "qualname (file.py:line)"): the innermost one of a
-- stack (the code the interpreter was running, whatever C helper the sample landed in), a
-- frame's function apart from its line, and a profile's time by Python function and line.
-- Must not: know any recipe's thresholds or verdicts.

local lang = {}

-- "checksum (app.py:12)" -> "checksum (app.py)", "checksum", "app.py", 12; a name that is not a
-- Python frame's -> the name itself, and nil.
function lang.split(name)
  local fn, file, line = tostring(name):match("^(%S+) %((.*):(%d+)%)$")
  if fn then return string.format("%s (%s)", fn, file), fn, file, tonumber(line) end
  fn, file = tostring(name):match("^(%S+) %((.*)%)$")
  if fn then return name, fn, file, nil end
  return name, nil
end

-- The index and name of the innermost Python frame of a stack (s.user, leaf first, with
-- s.user_from), or nil when it has none.
function lang.python_leaf(s)
  local from = s.user_from
  if not from then return nil end
  for i, f in ipairs(s.user or {}) do
    if from[i] == "python" then return i, f end
  end
  return nil
end

-- Whether any stack of stacks carries Python frames.
function lang.has_python(stacks)
  for _, s in ipairs(stacks or {}) do
    if lang.python_leaf(s) then return true end
  end
  return false
end

-- A profile's time by innermost Python function (line apart) and by line: { samples = the
-- count of the stacks with Python frames, total = all stacks' count, by_fn = {name -> count},
-- by_line = {name with line -> count}, by_fn_native = {name -> {native leaf -> count}} }; only
-- stacks want(s) is true for (nil: all).
function lang.python_profile(stacks, want)
  local p = { samples = 0, total = 0, by_fn = {}, by_line = {}, native = {} }
  for _, s in ipairs(stacks or {}) do
    if not want or want(s) then
      local n = s.count or 0
      p.total = p.total + n
      local i, name = lang.python_leaf(s)
      if i then
        p.samples = p.samples + n
        local fn = lang.split(name)
        diag.add(p.by_fn, fn, n)
        diag.add(p.by_line, name, n)
        if i > 1 then -- the sample landed in the interpreter's own C code under that frame
          p.native[fn] = p.native[fn] or {}
          diag.add(p.native[fn], s.user[1], n)
        end
      end
    end
  end
  return p
end

-- The hottest lines of Python function fn (its name without line) in p, as "file:line NN%"
-- strings of at most n, shares of total.
function lang.lines_of(p, fn, total, n)
  local out = {}
  for _, l in ipairs(diag.ranked(p.by_line, 1e9)) do
    if lang.split(l.name) == fn then
      local _, _, file, line = lang.split(l.name)
      out[#out + 1] = string.format("%s:%s %s", file, line or "?", diag.fmt_pct(diag.pct(l.count, total)))
      if #out >= n then break end
    end
  end
  return out
end

-- The frame of a stack a verdict names as the target's own code: the innermost Python frame
-- when the stack has one (the interpreter's C frames below it are not the service's code), else
-- nil (the caller keeps its own rule).
function lang.own_frame(s)
  local _, name = lang.python_leaf(s)
  return name
end

return lang
