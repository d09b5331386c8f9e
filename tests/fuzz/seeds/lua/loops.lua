-- Work inside C calls, kept short by the harness's prelude; the instruction limit ends the rest.
local s = ("ab"):rep(30)
local r = { s:find("b", 1, true), s:match("(a)b"), s:gsub("a", "c"), table.unpack({ 1, 2, 3 }) }
local ok, e = pcall(string.rep, "x", 1 << 40)
while true do r[#r + 1] = #r end
