-- Read-only results handed back, iterated, measured.
local t, n = {}, 0
for k, v in pairs(results) do n = n + 1 end
for i, s in ipairs(results.profile.stacks) do t[i] = s end
t[#t + 1] = results
t[#t + 1] = results.profile
t[#t + 1] = #results.profile.stacks
t[#t + 1] = thresholds.n + thresholds.x
t[#t + 1] = run.stop_reason
return { verdicts = {}, report = { { kind = "raw", items = t, n = n, same = results.profile == results.profile } } }
