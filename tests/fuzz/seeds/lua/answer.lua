-- A well-formed answer: verdicts of every severity, the three report section shapes.
local v = {}
for i, sev in ipairs({ "ok", "info", "warning", "critical" }) do
  v[i] = { id = "v" .. i, severity = sev, title = "title " .. i,
           evidence = { "e" .. i, tostring(results.profile.samples) }, next_steps = { "step" } }
end
return { verdicts = v, report = {
  { kind = "table", title = "t", columns = { "a", "b" }, rows = { { "x", 1 }, { "y", 2.5 } } },
  { kind = "histogram", title = "h", unit = "us", buckets = { { lo = 0, hi = 1, count = 3 } } },
  { kind = "text", title = "x", lines = { "one", "two" } },
} }
