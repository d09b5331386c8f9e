-- test fixture: line 3 has a syntax error
local x = 1
local y = = 2
return { verdicts = {} }
