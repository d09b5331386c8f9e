-- Answers of the wrong shape (and a few right ones) for test_verdict.c, per thresholds.mode.
local mode = thresholds.mode
local function v(id, sev) return { id = id, severity = sev, title = "t " .. id, evidence = {}, next_steps = {} } end

if mode == "not_table" then return 42
elseif mode == "no_verdicts" then return { report = {} }
elseif mode == "verdicts_object" then return { verdicts = { a = v("a", "ok") } }
elseif mode == "no_severity" then
  return { verdicts = { v("a", "ok"), { id = "b", title = "t", evidence = {}, next_steps = {} } } }
elseif mode == "bad_severity" then return { verdicts = { v("a", "fatal") } }
elseif mode == "evidence_number" then
  local b = v("b", "info")
  b.evidence = { "fine", 42 }
  return { verdicts = { v("a", "ok"), b } }
elseif mode == "no_next_steps" then
  local a = v("a", "info")
  a.next_steps = nil
  return { verdicts = { a } }
elseif mode == "report_function" then
  return { verdicts = {}, report = { { kind = "text", f = function() end } } }
elseif mode == "report_cycle" then
  local t = { kind = "text" }
  t.self = t
  return { verdicts = {}, report = { t } }
elseif mode == "report_mixed" then
  return { verdicts = {}, report = { { kind = "table", rows = { 1, 2, x = 3 } } } }
elseif mode == "report_no_kind" then
  return { verdicts = {}, report = { { title = "x" } } }
elseif mode == "sort" then
  return { verdicts = { v("a", "info"), v("b", "critical"), v("c", "warning"), v("d", "critical"),
    v("e", "ok") } }
elseif mode == "values" then
  local row = { kind = "values", int = 42, float = 1.5, whole_float = 2.0, neg = -3, flag = false,
    nested = { { 1, 2 }, { 3 } }, empty = {}, zeta = "z", raw = results.profile }
  return { verdicts = { v("a", "info") }, report = { row }, ignored = function() end }
end
error("unknown mode " .. tostring(mode))
