-- Hostile or broken snippets for test_verdict.c, one per thresholds.mode. Each must end in a
-- clean error (or, for the "survives" modes, a normal answer) without leaks.
local mode = thresholds.mode
local ok = { verdicts = {} }

if mode == "os" then os.execute("touch /tmp/diag-pwned")
elseif mode == "io" then io.open("/etc/passwd")
elseif mode == "debug" then debug.sethook()
elseif mode == "dump" then load(string.dump(function() return 1 end))
elseif mode == "load" then load("return 1")
elseif mode == "dofile" then dofile("/etc/passwd")
elseif mode == "require" then require("os")
elseif mode == "collectgarbage" then collectgarbage("stop")
elseif mode == "loop" then while true do end
elseif mode == "pcall_loop" then
  while true do pcall(function() while true do end end) end
elseif mode == "membomb" then
  local t = {} for i = 1, 1e9 do t[i] = ("x"):rep(1000) .. i end
elseif mode == "bigrep" then local s = ("x"):rep(1e9)
elseif mode == "write_top" then results.profile = nil
elseif mode == "write_nested" then results.profile.samples = 1
elseif mode == "write_array" then results.profile.stacks[1] = 0
elseif mode == "rawset" then rawset(results, "profile", {})
elseif mode == "setmetatable" then setmetatable(results, {})
elseif mode == "table_insert" then table.insert(results.profile.stacks, {})
elseif mode == "error_table" then error({})
elseif mode == "getmetatable" then
  return { verdicts = { { id = "mt", severity = "info", title = tostring(getmetatable(results)),
    evidence = {}, next_steps = {} } } }
elseif mode == "gc_loop" then
  setmetatable({}, { __gc = function() while true do end end })
elseif mode == "gc_late" then -- __gc added after setmetatable is never called by Lua
  local mt = {}
  setmetatable({}, mt)
  mt.__gc = function() while true do end end
  return ok
elseif mode == "empty_rep" then
  local s = (""):rep(1 << 50) .. ("x"):rep(0)
  return ok
end
return ok
