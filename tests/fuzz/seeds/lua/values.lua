-- Scalars at the edges: integers, floats, inf, nan, strings with NUL and odd bytes.
return { verdicts = { { id = "x\0y", severity = "info", title = "\255\254", evidence = { "a\nb" },
  next_steps = {} } },
  report = { { kind = "v", min = math.mininteger, max = math.maxinteger, inf = 1 / 0, nan = 0 / 0,
    tiny = 5e-324, big = 1e308, neg0 = -0.0, s = ("x"):rep(100) .. "\0" .. "z", t = true, f = false,
    empty = {}, nested = { { { {} } } } } } }
