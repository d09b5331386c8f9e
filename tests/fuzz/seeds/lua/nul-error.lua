-- An error message that starts with NUL (found by fuzz_verdict): it must not come out empty.
error(setmetatable({}, { __tostring = function() return "\0\15custom\nerror" end }))
