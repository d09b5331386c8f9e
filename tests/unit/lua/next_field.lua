-- Verdicts with a `next` follow-up, right and wrong, for test_triage_lua.c, per thresholds.mode.
local mode = thresholds.mode
local function v(id, next) return { id = id, severity = "warning", title = "t " .. id, evidence = {}, next_steps = {}, next = next } end

if mode == "ok" then
  return { verdicts = {
    v("a", { recipe = "func-latency", params = { ["function"] = "/usr/bin/x:handle", hz = 99 } }),
    v("b", { recipe = "latency", params = {} }),
    v("c", nil),
  } }
elseif mode == "path" then return { verdicts = { v("a", { recipe = "../etc/x" }) } }
elseif mode == "not_table" then return { verdicts = { v("a", "latency") } }
elseif mode == "unknown_key" then return { verdicts = { v("a", { recipe = "latency", pid = 1 }) } }
elseif mode == "param_float" then return { verdicts = { v("a", { recipe = "high-cpu", params = { hz = 9.5 } }) } }
elseif mode == "param_name" then return { verdicts = { v("a", { recipe = "high-cpu", params = { ["Bad Name"] = "x" } }) } }
end
error("unknown mode " .. tostring(mode))
