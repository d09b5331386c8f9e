-- Exercises lua/lib/diag.lua and the read-only proxies; test_verdict.c checks the numbers.
local one = { { lo = 4, hi = 7, count = 100 } }
local split = { { lo = 0, hi = 1, count = 50 }, { lo = 2, hi = 3, count = 50 } }
local hist = results.hist.buckets -- read-only, from C

local keys = {}
for k in pairs(results.obj) do keys[#keys + 1] = k end
local sum = 0
for _, x in ipairs(results.arr) do sum = sum + x end

local items = { { id = "a", count = 5 }, { id = "b", count = 9 }, { id = "c", count = 5 }, { id = "d", count = 1 } }
local top = {}
for _, x in ipairs(diag.top_n(items, 3)) do top[#top + 1] = x.id end

return { verdicts = {}, report = { {
  kind = "values",
  p0_one = diag.percentile(one, 0), p50_one = diag.percentile(one, 50),
  p99_one = diag.percentile(one, 99), p100_one = diag.percentile(one, 100),
  p50_split = diag.percentile(split, 50), p75_split = diag.percentile(split, 75),
  p99_split = diag.percentile(split, 99),
  p50_hist = diag.percentile(hist, 50), p99_hist = diag.percentile(hist, 99),
  total_hist = diag.total(hist), empty_is_nil = diag.percentile({}, 50) == nil,
  fmt = { diag.fmt_count(950), diag.fmt_count(12345), diag.fmt_count(2100000),
    diag.fmt_count(999999), diag.fmt_count(2.5), diag.fmt_count(914600), diag.fmt_ns(317800000), diag.fmt_ns(512), diag.fmt_ns(1500),
    diag.fmt_ns(80200000), diag.fmt_ns(2.5e9), diag.fmt_us(87381.33), diag.fmt_pct(72.4),
    diag.fmt_pct(3.42), diag.fmt_pct(0.01), diag.fmt_pct(0), diag.fmt_rate(2000000),
    diag.fmt_rate(nil), diag.fn("burn_hot"), diag.fn("libc.so.6+0x1a2b"), diag.fn("bpf_prog_1_x [bpf]") },
  top = table.concat(top, ","),
  path = diag.call_path({ "leaf", "mid", "main" }),
  long_path = diag.call_path({ "f1", "f2", "f3", "f4", "f5" }, 3),
  pct = diag.pct(1, 4), pct_zero = diag.pct(1, 0), rate = diag.rate(10, 4),
  keys = table.concat(keys, ","), len = #results.arr, sum = sum,
  same = results.obj == results.obj, concat = table.concat(results.strs, "+"),
  cpu_one = diag.cpu_time({ utime_s = 1.2, stime_s = 0.3 }),
  cpu_set = diag.cpu_time({ utime_s = 0, stime_s = 0.05, unscanned_cpu_s = 2.72, unscanned_processes = 147 }),
  th_int = thresholds.n_int, th_float = thresholds.n_float, th_str = thresholds.s,
} } }
