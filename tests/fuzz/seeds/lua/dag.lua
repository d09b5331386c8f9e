-- Shared subtables: expanded at every reference, so counted as expanded.
local a = { "leaf" }
for i = 1, 10 do a = { a, a, x = nil } end
return { verdicts = {}, report = { { kind = "text", dag = a } } }
