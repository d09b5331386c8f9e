-- Wrong shapes: the conversion must refuse them cleanly.
local t = { kind = "text" }
t.self = t
local mixed = { 1, 2, x = 3 }
if thresholds.mode == "values" then
  return { verdicts = { { id = "a", severity = "fatal" } }, report = { t, mixed, print, coroutine } }
end
error(setmetatable({}, { __tostring = function() return "custom\nerror" end }))
