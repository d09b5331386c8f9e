#!/usr/bin/env python3
"""bench.py — `make bench`: diagnose side by side with its peers, in one run, on this machine.

1. Cost of a 1 s collection on a CPU-bound process: wall time beyond the collection window and
   peak RSS, for `diagnose high-cpu`, bpftrace's profile one-liner, libbpf-tools' runqlat (and
   perf record when present).
2. Cost per traced event: a loop of syscall(SYS_getppid), timed untraced, under an empty BPF
   program on raw_tp/sys_enter (the floor), under the high-cpu recipe's syscall probe alone,
   under libbpf-tools' syscount, and under bpftrace's `@[comm] = count()`; nanoseconds added per
   call and the ratio to the floor.
3. Cost of unwinding user stacks: `diagnose high-cpu --duration 2 --json` on the
   -fomit-frame-pointer fixture nofp_main (tests/unit/unwind.mk) with frame pointers and no leaf
   fixup, frame pointers with leaf fixup (the default), and DWARF, at 99 and 999 Hz: the BPF CPU
   share the report measures, diagnose's own user + sys CPU time (wait4) in all, per sample and
   per extra sample from 99 to 999 Hz,
   wall time beyond the window, peak RSS, and the share of user stacks that reach main; and
   perf record --call-graph dwarf at the same frequency, with the perf report that unwinds it.
4. Symbolization: the engine's symbols code (tests/bench/symbench.c) naming 10,000 unique
   addresses spread over the executable mappings of a live Python process (tests/bench/pyload.py
   on Debian's stripped interpreter: thousands of functions), and naming the unique addresses of
   a `perf record -g` of it (~10,000 samples), against `perf report --stdio` on that recording.

5. Cost per context switch of the off-CPU probes: a pipe ping-pong between two threads
   (tests/workloads/switch_storm.c: each round trip is two switch-outs, two wakeups), timed
   untraced, under the latency recipe's off_cpu probe alone with frame-pointer stacks and with
   DWARF unwinding (2 KiB copied at each switch-out), under off_cpu + wakeups as the recipe runs
   them, and under libbpf-tools' offcputime -p PID; nanoseconds added per round trip and the
   ratio to offcputime.
6. Cost per block I/O: 4 KiB O_DIRECT reads (dd) from a loop device over a file in /dev/shm,
   untraced, under the io-saturation recipe's block probe alone (host-wide), and under
   libbpf-tools' biolatency: wall time per I/O, and the BPF run time of the tool's programs per
   I/O (run-time statistics on for this part), with its ratio to biolatency's.

7. Network errors: on a private network (two namespaces and a veth pair, segmentation offloads
   off) a TCP stream paced at 20 MB/s loses 3% of its segments to an nftables numgen rule; the
   BPF run time per event of `diagnose network-errors`'s programs (tcp:tcp_retransmit_skb,
   skb:kfree_skb; kernel stacks as the recipe has them, none, and for every drop), and of
   bpftrace's `tracepoint:skb:kfree_skb { @[args->reason] = count(); }`, from the kernel's BPF
   run-time statistics over 3 s of each tool's run. These programs run per retransmit or drop,
   not per packet: a clean stream costs nothing per packet.

8. Cost per malloc/free pair of allocation tracing: tests/workloads/malloc_loop making
   BENCH_PAIRS malloc(64) + free pairs (its own CPU time, user + system: uprobe traps are charged
   to it), untraced, under an empty-program floor on the three traps the allocations probe needs
   (uprobe and uretprobe on malloc, uprobe on free: bpftrace -p PID with empty actions), under
   memory-growth's allocations probe alone (every call recorded, and 1 in 64), and under bpftrace's
   `uprobe:LIBC:malloc { @[ustack] = sum(arg0); }` (one trap per pair); microseconds added per pair
   and the ratios to the floor and to bpftrace.

9. Cost per socket round trip of the peers probe (peer_wait): a loopback TCP ping-pong (64 bytes
   each way, one blocking client process and one echo server process, BENCH_ROUND_TRIPS round
   trips), the client the target; the BPF run time of each configuration's programs (run-time
   statistics on for this part) per round trip: latency's peer_wait alone, and the cheapest
   bpftrace one-liner timing the same process's syscalls (raw_syscalls sys_enter/sys_exit with a
   pid filter, a per-tid start map and a histogram per syscall).

10. USDT (part A): the BPF run time per hit of a usdt probe counting app:tick of the fixture
    usdt_app (tests/unit/usdt.mk) against bpftrace's `usdt:LIB:app:tick { @ = count(); }`; and
    postgres-slow's cost on pgbench (a temporary PostgreSQL 15 cluster, scale 2, 2 clients,
    select-only and TPC-B-like): transactions per second without it, with it, and with
    buffer_hits=false.

11. Python frames (part B): the BPF run time per sample of high-cpu's on-CPU program at 999 Hz on
    Debian's python3.11 running tests/workloads/py_service.py --hot (a stack of about 5 Python
    frames), with python_frames on (the recipe's default) and off (a copy of the recipe), on the
    C fixture cpu_burner (no Python: the map lookup that says so), and bpftrace's
    `profile:hz:999 /pid == PID/ { @[ustack] = count(); }` on the same Python process.

12. Per event, every probe kind with a peer here, from the kernel's BPF run-time statistics of
    each tool's programs over the same loop (the loop holds its exit until it is read: diagnose
    stops when its target exits): the high-cpu recipe's syscall counter and the latency recipe's
    syscall table against syscount and syscount -L (getppid loop), the latency recipe's off_cpu
    + wakeups (dwarf, 2 KiB copies) against offcputime and runq_latency against runqlat (pipe
    ping-pong); the other kinds' per-event figures are in parts 6-11.

13. Cost as the work grows: a --comm set of 1, 100 and 1,000 idle processes (high-cpu); a target
    with 10, 1,000 and 10,000 threads (latency); 1k and 100k paced calls a second (high-cpu); 10k
    and 100k unique addresses to symbolize (the symbols code): wall beyond the window, CPU, peak
    RSS, BPF CPU, and whether the run stayed within its budgets (the limits it met, quoted).

E. What a run costs a real server (tests/bench/servers.py, also `make bench-servers`): PostgreSQL,
   Redis, nginx and a Python HTTP service from Debian's packages under their own load generators,
   each recipe's run alternated with none; and `diagnose watch` over a longer span. It takes about
   80 minutes at its defaults: not in the default selection.


14. Thread snapshots (part F): the thread_states probe alone (latency's and triage's snapshots
    of every thread at the window's start and end) on a target of 1,000 and 10,000 idle
    threads, through the task iterator and through /proc, and through the iterator for a
    3-thread --comm set on a host with 10,000 threads more (every task walked): the time of each
    read (start, end, the reported threads' details), the bytes it wrote, the results' time
    (unwinding and naming the 256 threads reported) and the peak RSS against the same recipe
    with proc_context alone.

BENCH_PARTS selects parts by number, A for 10, B for 11, C for 12, D for 13, E for the servers,
F for 14 (default 123456789ABCDF: all but E;
BENCH_PARTS=3 runs part 3 only).

Every figure is the median of RUNS runs; the machine is noisy, so only the ratios taken in one
run mean anything. Results are printed and written to BUILD/bench/results.md. No assertions:
this is a measurement, not a test.

Why one file (~1,700 lines): each part is one function (partN_*) with its own set-up, and the
parts share one harness (run_timed, the BPF statistics, the recipes bench_recipe writes); the
servers' part, with servers of its own to start, is servers.py.
"""
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
DIAG = os.path.join(BUILD, "diagnose")
WL = os.path.join(BUILD, "workloads")
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
LOOP_CALLS = int(os.environ.get("BENCH_CALLS", "2000000"))
SYM_ADDRS = 10000


GNU_TIME = "/usr/bin/time"


def run_measured(argv, window_s):
    """Runs argv to completion; returns (seconds beyond window_s, peak RSS in MiB, exit code).

    The peak RSS is the tool's own, from GNU time (%M): os.wait4 on a child Python forked
    reports at least Python's RSS, because the high-water mark survives exec. The wall time is
    measured around GNU time, whose own cost (a fork and an exec, ~1 ms) is the same for every
    tool."""
    with tempfile.NamedTemporaryFile("r", prefix="diagnose-bench-rss.") as rss_file:
        start = time.monotonic()
        proc = subprocess.run([GNU_TIME, "-f", "%M", "-o", rss_file.name] + argv,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - start
        text = rss_file.read().strip().splitlines()
    rss_kib = int(text[-1]) if text and text[-1].isdigit() else 0
    return wall - window_s, rss_kib / 1024.0, proc.returncode


def run_timed(argv, window_s, stdout_path=None):
    """Runs argv to completion under GNU time; returns a dict: wall beyond window_s (s), user and
    sys CPU (s), peak RSS (MiB), exit code, and its stderr. stdout goes to stdout_path (else
    nowhere).

    CPU times come from wait4() on GNU time, whose rusage includes the tool it waited for, in
    microseconds (GNU time's %U and %S have 10 ms steps, too coarse for a 2 s run); GNU time's
    own share is about a millisecond, the same for every tool. Peak RSS is GNU time's %M (see
    run_measured). Children a tool does not wait for are not counted."""
    with tempfile.NamedTemporaryFile("r", prefix="diagnose-bench-time.") as tf, \
            tempfile.TemporaryFile("w+", prefix="diagnose-bench-err.") as err:
        out = open(stdout_path, "w") if stdout_path else subprocess.DEVNULL
        try:
            start = time.monotonic()
            proc = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", tf.name] + argv,
                                    stdout=out, stderr=err)
            _, status, ru = os.wait4(proc.pid, 0)
            wall = time.monotonic() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
        finally:
            if stdout_path:
                out.close()
        text = (tf.read().strip().splitlines() or [""])[-1]
        err.seek(0)
        stderr = err.read()
    rss_kib = int(text) if text.isdigit() else 0
    return {"wall": wall - window_s, "user": ru.ru_utime, "sys": ru.ru_stime,
            "rss": rss_kib / 1024.0, "rc": proc.returncode, "stderr": stderr}


def bpf_objects():
    """(links, programs) loaded on the machine right now."""
    counts = []
    for what in (["link", "list"], ["prog", "show"]):
        out = subprocess.run(["bpftool", "-j", *what], capture_output=True, text=True).stdout
        try:
            counts.append(len(json.loads(out) or []))
        except json.JSONDecodeError:
            counts.append(0)
    return tuple(counts)


def wait_attached(before, proc, timeout=30.0):
    """Waits until the tool has a new BPF link, or (tools that attach tracepoints the legacy way,
    like bpftrace) a new program plus a second to attach it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before attaching")
        links, progs = bpf_objects()
        if links > before[0]:
            time.sleep(0.5)  # let every link of a multi-program tool come up
            return
        if progs > before[1]:
            time.sleep(1.5)
            return
        time.sleep(0.05)
    raise RuntimeError(f"{proc.args[0]} did not attach within {timeout} s")


def getppid_loop(tracer_argv=None, needs_pid=False, ready_line=None):
    """ns per getppid() call, with an optional tracer running while the loop runs."""
    return timed_loop([os.path.join(WL, "getppid_loop"), str(LOOP_CALLS)], tracer_argv, ready_line)


def timed_loop(loop_argv, tracer_argv=None, ready_line=None, settle=0.0):
    """Runs loop_argv + [WAIT_FD] (it waits for a byte on WAIT_FD, loops, prints ns per turn) with
    an optional tracer attached to it ({PID} in tracer_argv) before the loop starts; settle:
    seconds more for a tracer whose attachment takes a while (one uprobe after another)."""
    rfd, wfd = os.pipe()
    loop = subprocess.Popen(loop_argv + [str(rfd)], stdout=subprocess.PIPE, text=True, pass_fds=(rfd,))
    os.close(rfd)
    tracer = None
    try:
        if tracer_argv:
            argv = [a.replace("{PID}", str(loop.pid)) for a in tracer_argv]
            before = bpf_objects()
            tracer = subprocess.Popen(argv, stdin=subprocess.PIPE, text=True,
                                      stdout=subprocess.PIPE if ready_line else subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            if ready_line:  # our floor loader says when it is attached
                line = tracer.stdout.readline()
                if not line.startswith(ready_line):
                    raise RuntimeError(f"{argv[0]} did not get ready: {line!r}")
            else:
                wait_attached(before, tracer)
            time.sleep(settle)
        os.write(wfd, b"x")
        out, _ = loop.communicate(timeout=120)
        return float(out.strip())
    finally:
        os.close(wfd)
        if tracer:
            tracer.send_signal(signal.SIGINT)
            try:
                tracer.stdin.close()
            except OSError:
                pass
            try:
                tracer.wait(timeout=20)
            except subprocess.TimeoutExpired:
                tracer.kill()
                tracer.wait()


def recipes_dir(tmp, sub="recipes", lua=None):
    """A directory of bench recipes under tmp and the `lua` directory beside it that the engine
    resolves their snippets from: the shipped lua/ (a link), or, with lua=NAME, a directory of one
    snippet NAME that gives no verdict (a probe's cost, not a symptom's judgement)."""
    d = os.path.join(tmp, sub)
    os.makedirs(d, exist_ok=True)
    link = os.path.join(os.path.dirname(d), "lua")
    if lua is None:
        if not os.path.lexists(link):
            os.symlink(os.path.join(ROOT, "lua"), link)
    else:
        if os.path.islink(link):
            raise RuntimeError(f"{link}: the shipped lua/ is linked here: an own snippet would go into it")
        os.makedirs(os.path.join(link, "lib"), exist_ok=True)
        with open(os.path.join(link, lua), "w") as f:
            f.write("return { verdicts = {}, report = {} }\n")
    return d


# Budgets out of the way: what the probes cost, not the pre-flight's or the governor's decisions.
OPEN_BUDGETS = {"max_duration_s": 60, "max_sample_hz": 999, "max_events_per_s": 100000000,
                "max_cpu_pct": 100, "max_map_bytes": 268435456}


def bench_recipe(tmp, name, probes, lua, target="pid", summary="probes alone, for their cost",
                 thresholds="", sub="recipes", duration_s=60, budgets=None, own_lua=False):
    """Writes recipe NAME of the given probes (YAML text, indented as under `probes:`) into
    recipes_dir(tmp, sub); thresholds: a `thresholds:` block its Lua reads (thresholds_block);
    budgets: OPEN_BUDGETS's keys overridden or added (a None value leaves one out); own_lua: lua
    names an empty snippet written for it. Returns the directory."""
    d = recipes_dir(tmp, sub, lua if own_lua else None)
    b = dict(OPEN_BUDGETS, **(budgets or {}))
    budget_lines = "".join(f"  {k}: {v}\n" for k, v in b.items() if v is not None)
    with open(os.path.join(d, name + ".yaml"), "w") as f:
        f.write(f"name: {name}\nsymptom: benchmark\nsummary: {summary}\nlua: {lua}\n"
                f"target: {target}\nduration_s: {duration_s}\nbudgets:\n{budget_lines}"
                f"probes:\n{probes}{thresholds}")
    return d


def shipped_variant(tmp, recipe, edit, sub="recipes", name=None):
    """A copy of a shipped recipe (recipes/RECIPE.yaml) through edit(text) -> text, as NAME (the
    recipe's own name by default) in recipes_dir(tmp, sub). Returns the directory."""
    src = edit(open(os.path.join(ROOT, "recipes", recipe + ".yaml")).read())
    if name:
        src = src.replace(f"name: {recipe}\n", f"name: {name}\n", 1)
    d = recipes_dir(tmp, sub)
    with open(os.path.join(d, (name or recipe) + ".yaml"), "w") as f:
        f.write(src)
    return d


def thresholds_block(recipe):
    """A shipped recipe's `thresholds:` block alone, up to the next top-level key (a `next:`
    copied along would need chain budgets)."""
    src = open(os.path.join(ROOT, "recipes", recipe)).read()
    block = src[src.index("\nthresholds:"):]
    end = re.search(r"\n[A-Za-z_]", block[1:])
    return block[:end.start() + 1] if end else block


def syscall_only_recipe(tmp):
    """The high-cpu recipe's syscall probe alone, with its thresholds and Lua."""
    return bench_recipe(tmp, "bench-syscalls", """  - id: syscalls
    kind: syscall_stats
    filters:
      pid: target
""", "high-cpu.lua", summary="the high-cpu recipe's syscall probe alone",
                        thresholds=thresholds_block("high-cpu.yaml"))


def median(xs):
    xs = [x for x in xs if x == x]  # NaN: a run that gave no figure
    return statistics.median(xs) if xs else float("nan")


def part1_collection(say):
    """1. One-second collection on a busy process."""
    burner = subprocess.Popen([os.path.join(WL, "cpu_burner")], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        P = str(burner.pid)
        tools = [("diagnose high-cpu --duration 1", [DIAG, "high-cpu", "--pid", P, "--duration", "1",
                                                      "--recipes", os.path.join(ROOT, "recipes")])]
        if shutil.which("bpftrace"):
            tools.append(("bpftrace profile:hz:99 @[ustack]=count()",
                          ["bpftrace", "-e", f"profile:hz:99 /pid == {P}/ {{ @[ustack] = count(); }} "
                                             "interval:s:1 { exit(); }"]))
        if shutil.which("runqlat"):
            tools.append(("libbpf-tools runqlat 1 1", ["runqlat", "1", "1"]))
        if shutil.which("perf"):
            tools.append(("perf record -F 99 -g -p P -- sleep 1",
                          ["perf", "record", "-q", "-F", "99", "-g", "-o", "/dev/null", "-p", P,
                           "--", "sleep", "1"]))
        say("\n## 1 s collection: wall time beyond the window, peak RSS\n")
        say(f"(round-robin: run i of every tool, then run i+1, so that a drift of the machine lands on "
            f"all alike; medians of {RUNS}, first and third quartiles in brackets)\n")
        say("| tool | wall beyond 1 s (ms) | peak RSS (MiB) |")
        say("|---|---:|---:|")
        walls = {name: [] for name, _ in tools}
        rss = {name: [] for name, _ in tools}
        for _ in range(RUNS):
            for name, argv in tools:
                w, r, rc = run_measured(argv, 1.0)
                walls[name].append(w * 1000)
                rss[name].append(r)

        def spread(xs, fmt):
            q = sorted(xs)
            lo, hi = q[len(q) // 4], q[(3 * len(q)) // 4]
            return f"{median(xs):{fmt}} [{lo:{fmt}}–{hi:{fmt}}]"
        for name, _ in tools:
            say(f"| {name} | {spread(walls[name], '.0f')} | {spread(rss[name], '.1f')} |")
    finally:
        burner.kill()
        burner.wait()


def part2_per_event(say):
    """2. Cost per traced syscall."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    try:
        recipes = syscall_only_recipe(tmp)
        configs = [
            ("untraced", None, None),
            ("floor: empty raw_tp/sys_enter", [os.path.join(BUILD, "bench", "floor"),
                                               os.path.join(BUILD, "bench", "floor.bpf.o")], "ready"),
            ("diagnose syscall_stats (pid filter)", [DIAG, "bench-syscalls", "--recipes", recipes,
                                                     "--pid", "{PID}", "--duration", "60"], None),
        ]
        if shutil.which("syscount"):
            configs.append(("libbpf-tools syscount -p PID", ["syscount", "-p", "{PID}"], None))
        if shutil.which("bpftrace"):
            configs.append(("bpftrace sys_enter @[comm] = count()",
                            ["bpftrace", "-e", "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }"],
                            None))
        per_call = {}
        for _ in range(RUNS):  # interleaved, so drift hits every config alike
            for name, argv, ready in configs:
                per_call.setdefault(name, []).append(getppid_loop(argv, ready_line=ready))
        base = median(per_call["untraced"])
        floor = median(per_call["floor: empty raw_tp/sys_enter"]) - base
        say(f"\n## Cost per traced event: getppid() loop, {LOOP_CALLS} calls\n")
        say("| configuration | ns per call | added ns | × floor |")
        say("|---|---:|---:|---:|")
        for name, _, _ in configs:
            m = median(per_call[name])
            added = m - base
            ratio = "" if name == "untraced" else f"{added / floor:.2f}" if floor > 0 else "n/a"
            say(f"| {name} | {m:.1f} | {added:+.1f} | {ratio} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


OFFCPU_HOPS = int(os.environ.get("BENCH_HOPS", "200000"))


def offcpu_recipe(tmp, name, unwind, wakers):
    """The latency recipe's off_cpu probe (and its wakeups probe) alone, without budgets in the
    way: the cost of the probes, not of the pre-flight's sampling."""
    probe = """  - id: {id}
    kind: {kind}
    filters:
      pid: target
    attach: [tp_btf, raw_tp]
    options:
      min_block_us: 10
      user_unwind: {unwind}
"""
    probes = probe.format(id="offcpu", kind="off_cpu", unwind=unwind)
    if wakers:
        probes += probe.format(id="wakers", kind="wakeups", unwind=unwind)
    return bench_recipe(tmp, name, probes, "latency.lua",
                        summary="the latency recipe's off-CPU probes alone")


def part5_offcpu(say):
    """5. Cost per context switch of off_cpu (and wakeups) against offcputime."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    try:
        configs = [("untraced", None)]
        for name, unwind, wakers in (("offcpu-fp", "fp", False), ("offcpu-dwarf", "dwarf", False),
                                     ("offcpu-wakers-dwarf", "dwarf", True)):
            recipes = offcpu_recipe(tmp, name, unwind, wakers)
            label = {"offcpu-fp": "diagnose off_cpu, fp stacks",
                     "offcpu-dwarf": "diagnose off_cpu, dwarf (2 KiB copies)",
                     "offcpu-wakers-dwarf": "diagnose off_cpu + wakeups, dwarf (the latency recipe's)"}[name]
            configs.append((label, [DIAG, name, "--recipes", recipes, "--pid", "{PID}", "--duration", "60"]))
        if shutil.which("offcputime"):
            configs.append(("libbpf-tools offcputime -p PID", ["offcputime", "-p", "{PID}"]))
        per_trip = {}
        loop = [os.path.join(WL, "switch_storm"), str(OFFCPU_HOPS)]
        for _ in range(RUNS):  # interleaved, so drift hits every config alike
            for name, argv in configs:
                per_trip.setdefault(name, []).append(timed_loop(loop, argv))
        base = median(per_trip["untraced"])
        peer = median(per_trip.get("libbpf-tools offcputime -p PID", [float("nan")])) - base
        say(f"\n## Cost per context switch: pipe ping-pong, {OFFCPU_HOPS} round trips "
            "(2 switch-outs and 2 wakeups each)\n")
        say("| configuration | ns per round trip | added ns | × offcputime |")
        say("|---|---:|---:|---:|")
        for name, _ in configs:
            m = median(per_trip[name])
            added = m - base
            ratio = "" if name == "untraced" else f"{added / peer:.2f}" if peer > 0 else "n/a"
            say(f"| {name} | {m:.0f} | {added:+.0f} | {ratio} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def noleaf_recipe(tmp):
    """high-cpu with cpu_profile's leaf_fixup off (no recipe parameter turns it off)."""
    line = "      user_unwind: ${unwind}\n"

    def edit(src):
        if line not in src:
            raise RuntimeError("recipes/high-cpu.yaml: no `user_unwind: ${unwind}` line to add leaf_fixup to")
        return src.replace(line, line + "      leaf_fixup: false\n", 1)
    return shipped_variant(tmp, "high-cpu", edit, name="high-cpu-noleaf")


def part3_unwinding(say):
    """3. Cost of unwinding user stacks, per mode and frequency."""
    fixture = os.path.join(BUILD, "fixtures", "nofp_main")
    if not os.access(fixture, os.X_OK):
        say(f"\n## Stack unwinding: skipped ({os.path.relpath(fixture, ROOT)} not built: make bench builds it)")
        return
    window = 2.0
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    wl = subprocess.Popen([fixture], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        P = str(wl.pid)
        noleaf = noleaf_recipe(tmp)
        base = ["--pid", P, "--duration", f"{window:g}", "--json"]
        modes = [
            ("fp, leaf_fixup: false", [DIAG, "high-cpu-noleaf", "--recipes", noleaf] + base),
            ("fp + leaf fixup (default)", [DIAG, "high-cpu", "--recipes", os.path.join(ROOT, "recipes")]
             + base + ["--param", "unwind=fp"]),
            ("dwarf (8 KiB copies)", [DIAG, "high-cpu", "--recipes", os.path.join(ROOT, "recipes")]
             + base + ["--param", "unwind=dwarf"]),
        ]
        perf = shutil.which("perf")
        rows = {}  # (mode, hz) -> list of per-run dicts
        out = os.path.join(tmp, "report.json")
        pdata = os.path.join(tmp, "perf.data")
        for _ in range(RUNS):  # interleaved, so drift hits every mode alike
            for hz in (99, 999):
                for name, argv in modes:
                    m = run_timed(argv + ["--param", f"hz={hz}"], window, out)
                    try:
                        rep = json.load(open(out))
                    except (OSError, json.JSONDecodeError):
                        rep = {}
                    prof = rep.get("results", {}).get("profile", {})
                    user = [st for st in prof.get("stacks", []) if not st.get("in_kernel")]
                    n_user = sum(st["count"] for st in user)
                    m["samples"] = prof.get("samples", 0)
                    m["bpf_pct"] = (rep.get("overhead") or {}).get("bpf_cpu_pct")
                    m["main_pct"] = (100.0 * sum(st["count"] for st in user if "main" in st.get("user", []))
                                     / n_user if n_user else float("nan"))
                    m["ring_full"] = (prof.get("unwind") or {}).get("ring_full", 0)
                    m["stop"] = rep.get("stop_reason", f"exit {m['rc']}")
                    rows.setdefault((name, hz), []).append(m)
                if perf:
                    m = run_timed([perf, "record", "--call-graph", "dwarf", "-F", str(hz), "-o", pdata,
                                   "-p", P, "--", "sleep", f"{window:g}"], window)
                    got = re.search(r"\((\d+) samples\)", m["stderr"])
                    m["samples"] = int(got.group(1)) if got else 0
                    rows.setdefault(("perf record --call-graph dwarf", hz), []).append(m)
                    r = run_timed([perf, "report", "-i", pdata, "--stdio"], 0.0)
                    r["samples"] = m["samples"]
                    rows.setdefault(("perf report --stdio of it (the unwinding)", hz), []).append(r)
    finally:
        wl.kill()
        wl.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    say(f"\n## Stack unwinding: `diagnose high-cpu --duration {window:g} --json` on nofp_main "
        "(gcc -O2 -fomit-frame-pointer)\n")
    say("BPF CPU: the report's overhead.bpf_cpu_pct (all four probes of the recipe, over wall × "
        "CPUs). CPU per sample: the process's user + sys CPU over its samples, start-up included; "
        "marginal: the CPU the 999 Hz runs took beyond the 99 Hz runs of the same mode, over the "
        "extra samples (start-up cancels out; the noise of a few ms between runs does not). Main: "
        "user-mode samples whose user stack reaches main.\n")
    say("| mode | Hz | samples | BPF CPU % | user+sys (ms) | wall beyond window (ms) | peak RSS (MiB) "
        "| CPU per sample (µs) | marginal per sample (µs) | stacks reaching main |")
    say("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    notes = []

    def cpu_samples(name, hz):
        ms = rows.get((name, hz), [])
        return median([m["user"] + m["sys"] for m in ms]), median([m["samples"] for m in ms])

    for hz in (99, 999):
        for (name, h), ms in rows.items():
            if h != hz:
                continue
            cpu, samples = cpu_samples(name, hz)
            is_diag = "bpf_pct" in ms[0]
            per = f"{cpu / samples * 1e6:.0f}" if samples else "—"
            lo_cpu, lo_samples = cpu_samples(name, 99)
            added = (f"{(cpu - lo_cpu) / (samples - lo_samples) * 1e6:.0f}"
                     if hz == 999 and samples > lo_samples else "—")
            bpf = median([m["bpf_pct"] for m in ms if m["bpf_pct"] is not None]) if is_diag else float("nan")
            main_pct = median([m["main_pct"] for m in ms]) if is_diag else float("nan")
            wall = f"{median([m['wall'] for m in ms]) * 1000:.0f}"
            say(f"| {name} | {hz} | {samples:.0f} | {'—' if bpf != bpf else f'{bpf:.2f}'} | "
                f"{cpu * 1000:.0f} | {wall} | {median([m['rss'] for m in ms]):.1f} | {per} | {added} | "
                f"{'—' if main_pct != main_pct else f'{main_pct:.0f}%'} |")
            for m in ms:
                if is_diag and (m["stop"] not in ("duration", "complete") or m["ring_full"]):
                    notes.append(f"{name} at {hz} Hz: stop {m['stop']}, ring_full {m['ring_full']}")
    if perf:
        say("\nperf rows: perf record only copies the stacks (8 KiB each, as dwarf mode here); "
            "perf report unwinds and symbolizes them, so its CPU is the part to set against "
            "diagnose's unwinding; its wall column is its whole run. perf has no BPF CPU and no count of stacks reaching main "
            "here.")
    for n in sorted(set(notes)):
        say(f"- {n}")


def part4_symbolization(say):
    """4. Symbolization: diagnose's symbols code against perf report, on one live process."""
    symbench = os.path.join(BUILD, "bench", "symbench")
    if not os.access(symbench, os.X_OK):
        say(f"\n## Symbolization: skipped ({os.path.relpath(symbench, ROOT)} not built: make bench builds it)")
        return
    # Debian's interpreter (stripped, .eh_frame only), not a pyenv build, when there is one
    py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    wl = subprocess.Popen([py, os.path.join(ROOT, "tests", "bench", "pyload.py")],
                          stdout=subprocess.DEVNULL)
    rows, info = {}, {}
    spread = f"{SYM_ADDRS} addresses spread over the executable mappings"
    same = "the perf recording's unique addresses"
    try:
        time.sleep(1.0)  # imports done, the loop running
        P = str(wl.pid)
        perf = shutil.which("perf")
        addr_file = os.path.join(tmp, "addrs.txt")
        if perf:
            pdata = os.path.join(tmp, "perf.data")
            seconds = 10  # one busy thread at 999 Hz: ~10k samples
            subprocess.run([perf, "record", "-q", "-g", "-F", "999", "-o", pdata, "-p", P, "--",
                            "sleep", str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # the raw call chains (perf script prints map-relative addresses): perf report -D
            dump = subprocess.run([perf, "report", "-D", "-i", pdata], capture_output=True,
                                  text=True).stdout
            stacks = []
            for block in dump.split("chain: nr:")[1:]:
                chain = re.findall(r"^\.{5}\s+\d+: ([0-9a-f]+)$", block, re.M)
                stacks.append(tuple(a for a in map(lambda x: int(x, 16), chain)
                                    if a < 0xfffffffffffff000))  # not PERF_CONTEXT_* markers
            addrs = sorted(set(a for b in stacks for a in b))
            info.update(samples=len(stacks), unique=len(set(stacks)), addrs=len(addrs))
            with open(addr_file, "w") as f:
                f.write("".join(f"{a:x}\n" for a in addrs))
        configs = [(spread, [symbench, P, str(SYM_ADDRS)])]
        if perf:
            configs.append((same, [symbench, P, addr_file]))
            configs.append(("perf report", [perf, "report", "-i", pdata, "--stdio"]))
        out = os.path.join(tmp, "out.txt")
        for _ in range(RUNS):  # interleaved, so drift hits every config alike
            for name, argv in configs:
                m = run_timed(argv, 0.0, out)
                if argv[0] == symbench:
                    try:
                        m.update(json.load(open(out)))
                    except (OSError, json.JSONDecodeError):
                        continue
                rows.setdefault(name, []).append(m)
    finally:
        wl.kill()
        wl.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    say(f"\n## Symbolization: a live Python process ({py} tests/bench/pyload.py)\n")
    say("symbench (tests/bench/symbench.c) links the engine's symbols code as diagnose does and "
        "times: loading /proc/kallsyms; usyms_new + usyms_snapshot (reads the maps and loads every "
        "mapped ELF file: symbols, debug files, demangling, .eh_frame function ranges); the "
        "lookups (user addresses as return addresses, kernel ones in kallsyms); the same lookups "
        "again. Whole process: its user + sys CPU, wall and peak RSS, start-up included.\n")
    if info:
        say(f"perf recording: `perf record -g -F 999 -p PID -- sleep 10`: {info['samples']} samples, "
            f"{info['unique']} unique stacks, {info['addrs']} unique addresses (user and kernel).\n")
    say("| what | addresses | named (symbol / FDE entry) | kallsyms (ms) | snapshot (ms) | lookups (ms) "
        "| again (ms) | whole: user+sys (ms) | whole: wall (ms) | peak RSS (MiB) |")
    say("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, ms in rows.items():
        cpu = median([(m["user"] + m["sys"]) * 1000 for m in ms])
        wall = median([m["wall"] * 1000 for m in ms])
        rss = median([m["rss"] for m in ms])
        if "addresses" in ms[0]:
            m0 = ms[0]
            n = f"{m0['addresses']}" + (f" + {m0['kernel_addresses']} kernel" if m0["kernel_addresses"] else "")
            named = f"{m0['named']} / {m0['fde']}" + (f" + {m0['kernel_named']} kernel" if m0["kernel_addresses"] else "")
            steps = " | ".join(f"{median([m[k] for m in ms]):.2f}" for k in
                               ("ksyms_ms", "snapshot_ms", "lookup_ms", "lookup_warm_ms"))
            say(f"| diagnose symbols: {name} | {n} | {named} | {steps} | {cpu:.0f} | {wall:.0f} | {rss:.1f} |")
        else:
            say(f"| `perf report --stdio` of that recording | {info.get('addrs', '?')} | — | — | — | — | — "
                f"| {cpu:.0f} | {wall:.0f} | {rss:.1f} |")
    if "perf report" in rows:
        say("\nperf report does more than symbolize: it reads and sorts the samples, builds and "
            "prints the call graphs; symbench only names the addresses. Same process, same files, "
            "same unique addresses in the second and third rows; the whole-process columns are the "
            "ones to compare.")


def block_only_recipe(tmp):
    """The io-saturation recipe's block probe alone (every disk, no filter)."""
    return bench_recipe(tmp, "bench-block", """  - id: blk
    kind: block_io
""", "io-saturation.lua", target="optional-pid",
                        summary="the io-saturation recipe's block probe alone")


def bpf_enable_stats():
    """BPF run-time statistics on while the returned fd is open (bpf(BPF_ENABLE_STATS), counted:
    never the kernel.bpf_stats_enabled sysctl, whose single switch another tool may hold)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(128)  # union bpf_attr: enable_stats.type = 0 (RUN_TIME)
    nr_bpf = {"x86_64": 321, "aarch64": 280}[platform.machine()]
    fd = libc.syscall(nr_bpf, 32, attr, ctypes.sizeof(attr))  # 32: BPF_ENABLE_STATS
    if fd < 0:
        raise OSError(ctypes.get_errno(), "bpf(BPF_ENABLE_STATS)")
    return fd


def prog_run_times(names=None):
    """{program id: run_time_ns} of every BPF program loaded now (run-time statistics on); with a
    dict `names`, each program's name is put in it by id."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    try:
        progs = json.loads(out) or []
    except json.JSONDecodeError:
        return {}
    if names is not None:
        names.update({p["id"]: p.get("name", "?") for p in progs})
    return {p["id"]: p.get("run_time_ns") or 0 for p in progs}


def dd_direct_reads(dev, count, tracer_argv=None, per_prog=None):
    """(ns per 4 KiB O_DIRECT read of dev by dd, BPF run time per read of the tracer's programs:
    those loaded since it started) with an optional tracer attached meanwhile; with a dict
    `per_prog`, each of those programs' run time per read is added to it by name."""
    tracer = None
    try:
        before_ids = set(prog_run_times())
        if tracer_argv:
            before = bpf_objects()
            tracer = subprocess.Popen(tracer_argv, stdin=subprocess.PIPE, text=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_attached(before, tracer)
        names = {}
        start = {i: t for i, t in prog_run_times(names).items() if i not in before_ids}
        t0 = time.monotonic()
        subprocess.run(["dd", f"if={dev}", "of=/dev/null", "bs=4k", f"count={count}",
                        "iflag=direct", "status=none"], check=True)
        wall = (time.monotonic() - t0) * 1e9 / count
        end = prog_run_times()
        bpf = sum(end.get(i, t) - t for i, t in start.items()) / count
        if per_prog is not None:
            for i, t in start.items():
                if end.get(i, t) > t:
                    per_prog.setdefault(names.get(i, "?"), []).append((end[i] - t) / count)
        return wall, bpf
    finally:
        if tracer:
            tracer.send_signal(signal.SIGINT)
            try:
                tracer.wait(timeout=20)
            except subprocess.TimeoutExpired:
                tracer.kill()
                tracer.wait()


def part6_block(say):
    """6. Cost per block I/O."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    img = os.path.join("/dev/shm", f"diagnose-bench-blk.{os.getpid()}")
    loop = None
    try:
        with open(img, "wb") as f:
            f.truncate(256 << 20)
        loop = subprocess.run(["losetup", "--find", "--show", img], capture_output=True, text=True,
                              check=True).stdout.strip()
        recipes = block_only_recipe(tmp)
        count = int(os.environ.get("BENCH_IOS", "100000"))
        configs = [("untraced", None),
                   ("diagnose block_io (every disk)", [DIAG, "bench-block", "--recipes", recipes,
                                                       "--duration", "60"])]
        if shutil.which("biolatency"):
            configs.append(("libbpf-tools biolatency", ["biolatency"]))
            # -Q times from insert as well (queue + service): the peer that, like block_io,
            # runs a program where a request enters the block layer
            configs.append(("libbpf-tools biolatency -Q", ["biolatency", "-Q"]))
        per_io, bpf_ns, progs = {}, {}, {}
        # BPF run-time statistics on for this part only (they cost ~100 ns per program run,
        # alike for every tool): the programs' own time per I/O is the figure that the loop
        # device's scheduling noise does not drown.
        stats_fd = bpf_enable_stats()
        try:
            for _ in range(RUNS):  # interleaved
                for name, argv in configs:
                    wall, bpf = dd_direct_reads(loop, count, argv, progs.setdefault(name, {}))
                    per_io.setdefault(name, []).append(wall)
                    bpf_ns.setdefault(name, []).append(bpf)
        finally:
            os.close(stats_fd)
        base = median(per_io["untraced"])
        ref = median(bpf_ns.get("libbpf-tools biolatency", [float("nan")]))
        ref_q = median(bpf_ns.get("libbpf-tools biolatency -Q", [float("nan")]))
        say(f"\n## Cost per block I/O: {count} O_DIRECT 4 KiB reads of a loop device (dd)\n")
        say("| configuration | ns per I/O (wall) | added ns (wall) | BPF run time per I/O (ns) | × biolatency | × biolatency -Q |")
        say("|---|---:|---:|---:|---:|---:|")
        for name, _ in configs:
            m = median(per_io[name])
            b = median(bpf_ns[name])
            ratio = "" if name == "untraced" else f"{b / ref:.2f}" if ref > 0 else "n/a"
            ratio_q = "" if name == "untraced" else f"{b / ref_q:.2f}" if ref_q > 0 else "n/a"
            say(f"| {name} | {m:.0f} | {m - base:+.0f} | {'' if name == 'untraced' else f'{b:.0f}'} | {ratio} | {ratio_q} |")
        say("\nPer program (BPF run time per I/O, median of the runs; a program that ran for no I/O "
            "is not listed):\n")
        say("| configuration | program | ns per I/O |")
        say("|---|---|---:|")
        for name, _ in configs:
            for prog, values in sorted(progs.get(name, {}).items()):
                say(f"| {name} | {prog} | {median(values):.0f} |")
    finally:
        if loop:
            subprocess.run(["losetup", "-d", loop])
        if os.path.exists(img):
            os.unlink(img)
NET_NS = ("dgbench_a", "dgbench_b")
NET_VETH = ("dgbench_va", "dgbench_vb")


def net_lab_down():
    for ns in NET_NS:
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def net_lab_up():
    """The lossy private network of tests/e2e/t_network.sh: 10.232.0.1 (sender) and .2."""
    a, b = NET_NS
    va, vb = NET_VETH
    cmds = [["ip", "netns", "add", a], ["ip", "netns", "add", b],
            ["ip", "link", "add", va, "type", "veth", "peer", "name", vb],
            ["ip", "link", "set", va, "netns", a], ["ip", "link", "set", vb, "netns", b],
            ["ip", "-n", a, "addr", "add", "10.232.0.1/24", "dev", va],
            ["ip", "-n", b, "addr", "add", "10.232.0.2/24", "dev", vb],
            ["ip", "-n", a, "link", "set", va, "up"], ["ip", "-n", b, "link", "set", vb, "up"],
            ["ip", "netns", "exec", a, "ethtool", "-K", va, "tso", "off", "gso", "off"],
            ["ip", "netns", "exec", b, "ethtool", "-K", vb, "gro", "off"]]
    for c in cmds:
        subprocess.run(c, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rule = ("table inet dgbench { chain in { type filter hook input priority 0; "
            "tcp dport 5101 numgen random mod 100 < 3 drop; }; }")
    subprocess.run(["ip", "netns", "exec", b, "nft", "-f", "-"], input=rule, text=True, check=True)


def prog_stats():
    """{prog id: (name, run_cnt, run_time_ns)} of every loaded program."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    try:
        progs = json.loads(out) or []
    except json.JSONDecodeError:
        progs = []
    return {p["id"]: (p.get("name", ""), p.get("run_cnt", 0), p.get("run_time_ns", 0)) for p in progs}


def network_recipe(tmp, stack_first, stack_every):
    def edit(src):
        src = re.sub(r"stack_first: \d+", f"stack_first: {stack_first}", src)
        src = re.sub(r"stack_every: \d+", f"stack_every: {stack_every}", src)
        return src.replace("max_cpu_pct: 5", "max_cpu_pct: 50")
    return shipped_variant(os.path.join(tmp, f"stacks{stack_first}-{stack_every}"), "network-errors", edit)


def part7_network(say):
    """7. Network errors: BPF time per retransmit and per drop under a lossy stream."""
    missing = [t for t in ("ip", "nft", "ethtool") if not shutil.which(t)]
    if missing:
        say(f"\n## Network errors: skipped ({', '.join(missing)} missing: scripts/install-deps.sh)")
        return
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    procs = []
    stats_was = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    try:
        net_lab_down()
        net_lab_up()
        peer = os.path.join(WL, "net_peer")
        a, b = NET_NS
        procs.append(subprocess.Popen(["ip", "netns", "exec", b, peer, "recv", "10.232.0.2", "5101"]))
        time.sleep(0.3)
        procs.append(subprocess.Popen(["ip", "netns", "exec", a, peer, "send", "10.232.0.2", "5101", "20000"]))
        time.sleep(1)
        # Statistics on for the peer tools too (diagnose turns them on itself); restored below.
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        configs = [
            ("diagnose network-errors (the recipe: stacks for 16 drops per reason, then 1 in 256)",
             [DIAG, "network-errors", "--recipes", network_recipe(tmp, 16, 256), "--duration", "8"]),
            ("diagnose network-errors (no stacks)",
             [DIAG, "network-errors", "--recipes", network_recipe(tmp, 0, 0), "--duration", "8"]),
            ("diagnose network-errors (a stack for every drop)",
             [DIAG, "network-errors", "--recipes", network_recipe(tmp, 0, 1), "--duration", "8"]),
        ]
        if shutil.which("bpftrace"):
            configs.append(("bpftrace kfree_skb @[args->reason] = count()",
                            ["bpftrace", "-e", "tracepoint:skb:kfree_skb { @[args->reason] = count(); }"]))
        rows = {}
        for _ in range(RUNS):
            for name, argv in configs:
                before_ids = set(prog_stats())
                tool = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                try:
                    time.sleep(2.5)  # loaded, attached, past the pre-flight
                    s0 = prog_stats()
                    time.sleep(3)
                    s1 = prog_stats()
                finally:
                    if name.startswith("bpftrace"):
                        tool.send_signal(signal.SIGINT)
                    try:
                        tool.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        tool.kill()
                        tool.wait()
                for pid_, (pname, cnt, ns) in s1.items():
                    if pid_ in before_ids or pid_ not in s0:
                        continue
                    dc, dn = cnt - s0[pid_][1], ns - s0[pid_][2]
                    if dc > 0 and (pname.startswith(("tcpe_", "skbd_")) or "kfree_skb" in pname):
                        rows.setdefault((name, pname), []).append((dc / 3.0, dn / dc))
        say("\n## Network errors: BPF time per event, a 20 MB/s stream losing 3% of its segments\n")
        say("| tool | program | events/s | ns per event |")
        say("|---|---|---:|---:|")
        for (name, pname), xs in rows.items():
            say(f"| {name} | {pname} | {median([x[0] for x in xs]):.0f} | {median([x[1] for x in xs]):.0f} |")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        net_lab_down()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_was)
        shutil.rmtree(tmp, ignore_errors=True)


ALLOC_PAIRS = int(os.environ.get("BENCH_PAIRS", "100000"))


def allocations_recipe(tmp, name, sample_every, unwind="fp"):
    """memory-growth's allocations probe alone, its options as the recipe has them, budgets out of
    the way (no pre-flight sampling: the cost of the probe itself)."""
    return bench_recipe(tmp, name, f"""  - id: allocs
    kind: allocations
    filters:
      pid: target
    options:
      max_outstanding: 262144
      max_sites: 8192
      max_stacks: 8192
      sample_every: {sample_every}
      user_unwind: {unwind}
      reach_scan: false
""", "memory-growth.lua", summary="memory-growth's allocations probe alone",
                        thresholds=thresholds_block("memory-growth.yaml"),
                        budgets={"max_events_per_s": 1000000000, "preflight_ms": 100})


def libc_of(exe):
    """The C library the binary loads (ldd), where malloc and free are probed."""
    out = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.search(r"libc\.so\.6 => (\S+)", line)
        if m:
            return os.path.realpath(m.group(1))
    raise RuntimeError(f"no libc.so.6 in ldd {exe}")


JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def part8_allocations(say):
    """8. Cost per malloc/free pair of the allocations probe against an empty floor and bpftrace,
    on glibc and on jemalloc (preloaded: its own malloc/free probed), in each of the probe's
    modes: fp (every block, the kernel's frame-pointer walk) and dwarf (the default: a block
    recorded per ~16 KiB allocated, its stack copied and unwound in user space)."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    try:
        loop0 = [os.path.join(WL, "malloc_loop"), str(ALLOC_PAIRS)]
        have_bpftrace = shutil.which("bpftrace") is not None
        allocators = [("glibc", [], libc_of(loop0[0]))]
        if os.path.exists(JEMALLOC):
            allocators.append(("jemalloc", ["env", "LD_PRELOAD=" + JEMALLOC], JEMALLOC))
        configs = []  # (allocator, name, loop argv, tracer argv)
        for alloc, pre, lib in allocators:
            loop = pre + loop0
            configs.append((alloc, "untraced", loop, None))
            if have_bpftrace and alloc == "glibc":
                configs.append((alloc, "floor: empty uprobe + uretprobe on malloc, uprobe on free", loop,
                                ["bpftrace", "-p", "{PID}", "-e",
                                 f"uprobe:{lib}:malloc {{ }} uretprobe:{lib}:malloc {{ }} uprobe:{lib}:free {{ }}"]))
            for name, every, unwind, label in (("bench-allocs", 1, "fp", "diagnose allocations, fp (every call)"),
                                                ("bench-allocs-sampled", 64, "fp", "diagnose allocations, fp (1 in 64 recorded)"),
                                                ("bench-allocs-dwarf", 1, "dwarf", "diagnose allocations, dwarf (default: ~1 block per 16 KiB)")):
                recipes = allocations_recipe(tmp, name, every, unwind)
                configs.append((alloc, label, loop, [DIAG, name, "--recipes", recipes, "--pid", "{PID}", "--duration", "60"]))
            if have_bpftrace:
                configs.append((alloc, "bpftrace uprobe:malloc @[ustack] = sum(arg0)", loop,
                                ["bpftrace", "-p", "{PID}", "-e", f"uprobe:{lib}:malloc {{ @[ustack] = sum(arg0); }}"]))
        per_pair = {}
        for _ in range(RUNS):  # interleaved, so drift hits every config alike
            for alloc, name, loop, argv in configs:
                try:
                    per_pair.setdefault((alloc, name), []).append(timed_loop(loop, argv, settle=1.5))
                except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                    say(f"(part 8: {alloc}, {name}: {e})")
                    per_pair.setdefault((alloc, name), []).append(float("nan"))
        say(f"\n## Cost per malloc/free pair: malloc_loop, {ALLOC_PAIRS} pairs of malloc(64) + free "
            "(the process's own CPU time), glibc and jemalloc\n")
        say("| allocator | configuration | ns per pair | added µs | × bpftrace ustack |")
        say("|---|---|---:|---:|---:|")
        for alloc, _, _ in allocators:
            base = median(per_pair[(alloc, "untraced")])
            bt = median(per_pair.get((alloc, "bpftrace uprobe:malloc @[ustack] = sum(arg0)"), [float("nan")])) - base
            for a2, name, _, _ in configs:
                if a2 != alloc:
                    continue
                m = median(per_pair[(alloc, name)])
                added = m - base
                rb = "" if name == "untraced" else f"{added / bt:.2f}" if bt > 0 else "n/a"
                say(f"| {alloc} | {name} | {m:.0f} | {added / 1000:+.2f} | {rb} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


ROUND_TRIPS = int(os.environ.get("BENCH_ROUND_TRIPS", "20000"))


def stop_tool(tool):
    """Ends a tool started for a measurement as an operator would (SIGINT), then for good."""
    if not tool:
        return
    tool.send_signal(signal.SIGINT)
    try:
        tool.wait(timeout=20)
    except subprocess.TimeoutExpired:
        tool.kill()


def tool_delta(before, mid, after):
    """(BPF run time in ns, runs) of the programs a tool loaded (in `after`, not in `before`: the
    prog_stats() of before it started) between `mid` and `after`."""
    ns = runs = 0
    for pid_, (name, cnt, rt) in after.items():
        if pid_ in before:
            continue  # not this tool's
        c0, r0 = mid.get(pid_, (name, 0, 0))[1:]
        ns += rt - r0
        runs += cnt - c0
    return ns, runs

PINGPONG = r"""
import socket, sys, os
role, port = sys.argv[1], int(sys.argv[2])
if role == "server":
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port)); l.listen(1); print(l.getsockname()[1], flush=True)
    c, _ = l.accept()
    while True:
        d = c.recv(64)
        if not d: break
        c.sendall(d)
else:
    n = int(sys.argv[3])
    s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(n):
        s.sendall(b"x" * 64); s.recv(64)
    print("done", flush=True)
"""


def peer_recipe(tmp):
    """latency's peers probe alone on the target, latency's thresholds (its Lua reads them)."""
    return bench_recipe(tmp, "bench-peers", """  - id: peers
    kind: peer_wait
    filters:
      pid: target
""", "latency.lua", target="processes", summary="latency's peers probe alone",
                        thresholds=thresholds_block("latency.yaml"))


def pingpong_once(argv_of_pid):
    """One ping-pong of ROUND_TRIPS under the tool argv_of_pid(pid) gives (None: untraced):
    (BPF run time of the programs that appeared, ns; their runs)."""
    srv = subprocess.Popen([sys.executable, "-c", PINGPONG, "server", "0"], stdout=subprocess.PIPE, text=True)
    port = int(srv.stdout.readline())
    cli = subprocess.Popen([sys.executable, "-c", PINGPONG, "client", str(port), str(ROUND_TRIPS)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tool = None
    try:
        assert cli.stdout.readline().strip() == "ready"
        before = prog_stats()
        if argv_of_pid:
            tool = subprocess.Popen(argv_of_pid(cli.pid), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(2.5)  # loaded, attached, past the pre-flight
        mid = prog_stats()
        cli.stdin.write("go\n")
        cli.stdin.flush()
        assert cli.stdout.readline().strip() == "done"
        return tool_delta(before, mid, prog_stats())
    finally:
        stop_tool(tool)
        cli.kill()
        srv.kill()
        cli.wait()
        srv.wait()


def part9_peer_wait(say):
    """9. Cost per socket round trip of peer_wait against a bpftrace one-liner."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    try:
        recipes = peer_recipe(tmp)
        configs = [("diagnose peer_wait (latency's peers probe)",
                    lambda pid: [DIAG, "bench-peers", "--recipes", recipes, "--pid", str(pid), "--duration", "60"])]
        bt_name = "bpftrace raw_syscalls enter/exit, pid filter, @start[tid], hist per syscall"
        if shutil.which("bpftrace"):
            configs.append((bt_name, lambda pid: [
                "bpftrace", "-e",
                f"tracepoint:raw_syscalls:sys_enter /pid == {pid}/ {{ @s[tid] = nsecs; }} "
                f"tracepoint:raw_syscalls:sys_exit /@s[tid]/ {{ @h[args->id] = hist(nsecs - @s[tid]); delete(@s[tid]); }}"]))
        per_rt, runs_rt = {}, {}
        stats_fd = bpf_enable_stats()
        try:
            for _ in range(RUNS):  # interleaved
                for name, argv in configs:
                    try:
                        ns, runs = pingpong_once(argv)
                    except (AssertionError, OSError, ValueError) as e:
                        say(f"(part 9: {name}: {e})")
                        ns, runs = float("nan"), float("nan")
                    per_rt.setdefault(name, []).append(ns / ROUND_TRIPS)
                    runs_rt.setdefault(name, []).append(runs / ROUND_TRIPS)
        finally:
            os.close(stats_fd)
        ref = median(per_rt.get(bt_name, [float("nan")]))
        say(f"\n## Cost per socket round trip: loopback TCP ping-pong, {ROUND_TRIPS} round trips of 64 bytes "
            "(BPF run time of each tool's programs, run-time statistics on)\n")
        say("| configuration | BPF run time per round trip (ns) | program runs per round trip | × bpftrace |")
        say("|---|---:|---:|---:|")
        for name, _ in configs:
            m = median(per_rt[name])
            ratio = f"{m / ref:.2f}" if ref == ref and ref > 0 else "n/a"
            say(f"| {name} | {m:.0f} | {median(runs_rt[name]):.1f} | {ratio} |")
        say("\nEvery syscall on the host runs both tools' programs (their pid tests); the figures are "
            "the time of all their runs during the ping-pong, divided by its round trips.")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

FIXTURES = os.path.join(BUILD, "fixtures")
PGBIN = "/usr/lib/postgresql/15/bin"


def usdt_recipe(tmp, binary):
    """A recipe of one usdt probe counting app:tick of the fixture's library."""
    return bench_recipe(tmp, "bench-usdt", f"""  - id: tick
    kind: usdt
    filters: {{pid: target}}
    options: {{binary: "{binary}", probe: "app:tick"}}
""", "bench-usdt.lua", summary="one usdt probe counted", thresholds="thresholds:\n  unused: 1\n",
                        sub="usdt-recipes", own_lua=True)


def usdt_hits(argv_of_pid, seconds, pause_us):
    """(BPF ns per hit, hits) of app:tick in usdt_app with 0 ms requests and pause_us between
    them, under argv_of_pid(pid)."""
    app = subprocess.Popen([os.path.join(FIXTURES, "usdt_app"), "0", str(pause_us)], stdout=subprocess.DEVNULL)
    tool = None
    try:
        time.sleep(0.3)
        before = prog_stats()
        tool = subprocess.Popen(argv_of_pid(app.pid), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2.0)  # loaded, attached, past the pre-flight
        mid = prog_stats()
        time.sleep(seconds)
        ns, runs = tool_delta(before, mid, prog_stats())
        return (ns / runs if runs else float("nan")), runs
    finally:
        stop_tool(tool)
        app.kill()
        app.wait()


class PgCluster:
    """A temporary PostgreSQL 15 cluster from Debian's binaries, for as long as a `with` lasts:
    initdb in its own directory under tmp (owned by postgres, trust authentication), started by
    pg_ctl with no TCP listener (its socket in tmp/pgcluster/sock), pgbench's tables at `scale`; stopped
    (immediate) and its directory removed on the way out, whatever happened. Used by part 10
    and by tests/bench/servers.py.

    sock: the socket directory pgbench and psql connect through (-h), as user postgres;
    pid(): the postmaster's pid (its postmaster.pid)."""

    def __init__(self, tmp, scale=2, shared_buffers="128MB"):
        self.base = os.path.join(tmp, "pgcluster")  # postgres's: the data, the socket, the log
        self.data = os.path.join(self.base, "data")
        self.sock = os.path.join(self.base, "sock")
        self.scale = scale
        self.shared_buffers = shared_buffers
        self.started = False

    @staticmethod
    def missing():
        """What this machine lacks to run one, as Debian packages (empty: nothing)."""
        need = [(os.path.join(PGBIN, "postgres"), "postgresql-15"),
                (os.path.join(PGBIN, "pgbench"), "postgresql-client-15")]
        return [pkg for path, pkg in need if not os.access(path, os.X_OK)]

    def _pg(self, *argv):
        subprocess.run(["runuser", "-u", "postgres", "--"] + list(argv), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self):
        os.makedirs(self.sock)
        for d in (os.path.dirname(self.base), self.base, self.sock):
            os.chmod(d, 0o755)  # pgbench, as root, reaches the socket; the server reads nothing of ours
        subprocess.run(["chown", "-R", "postgres:", self.base], check=True)
        try:
            self._pg(os.path.join(PGBIN, "initdb"), "-D", self.data, "-A", "trust", "-U", "postgres")
            self.started = True  # pg_ctl may have started it even when it fails to say so
            self._pg(os.path.join(PGBIN, "pg_ctl"), "-D", self.data, "-l",
                     os.path.join(self.base, "log"), "-w", "-o",
                     f"-c listen_addresses='' -k {self.sock} -c shared_buffers={self.shared_buffers}",
                     "start")
            subprocess.run(self.pgbench_argv("-i", "-s", str(self.scale)), check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.started:
            subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(PGBIN, "pg_ctl"), "-D",
                            self.data, "-m", "immediate", "-w", "stop"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started = False
        shutil.rmtree(self.base, ignore_errors=True)
        return False

    def pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def pgbench_argv(self, *args):
        """pgbench run as this process's user (root connects as postgres: trust), so that a
        timeout or an interrupt that kills it kills pgbench itself, not a runuser in front."""
        return [os.path.join(PGBIN, "pgbench"), "-h", self.sock, "-U", "postgres"] + list(args) + \
            ["postgres"]


def pgbench_tps(pg, seconds, select_only):
    out = subprocess.run(pg.pgbench_argv("-n", "-c", "2", "-j", "2", "-T", str(seconds),
                                         *(["-S"] if select_only else [])),
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.search(r"tps = ([0-9.]+) \(without initial", out)
    return float(m.group(1)) if m else float("nan")


def part10_usdt(say):
    """10. USDT: BPF cost per hit against bpftrace's usdt: probe; postgres-slow on pgbench."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    os.chmod(tmp, 0o755)
    try:
        lib = os.path.join(FIXTURES, "libusdtapp.so")
        if not os.path.exists(lib):
            say("\n## USDT: skipped (build/fixtures/usdt_app missing: make check-build)")
            return
        recipes = usdt_recipe(tmp, lib)
        configs = [("diagnose usdt (count)", lambda pid: [DIAG, "bench-usdt", "--recipes", recipes, "--pid", str(pid), "--duration", "60"])]
        bt = "bpftrace usdt:LIB:app:tick { @ = count(); }"
        if shutil.which("bpftrace"):
            configs.append((bt, lambda pid: ["bpftrace", "-p", str(pid), "-e", f"usdt:{lib}:app:tick {{ @ = count(); }}"]))
        stats_fd = bpf_enable_stats()
        try:
            for pause_us, what in ((1000, "~1000 hits/s, 1 ms apart: each hit on cold caches"),
                                   (0, "a hot loop: hits back to back")):
                per, rate = {}, {}
                for _ in range(RUNS):
                    for name, argv in configs:
                        ns, hits = usdt_hits(argv, 3, pause_us)
                        per.setdefault(name, []).append(ns)
                        rate.setdefault(name, []).append(hits / 3)
                ref = median(per.get(bt, [float("nan")]))
                say(f"\n## USDT: BPF run time per hit (usdt_app's app:tick, {what}; run-time statistics on)\n")
                say("| configuration | hits/s | BPF ns per hit | × bpftrace |")
                say("|---|---:|---:|---:|")
                for name, _ in configs:
                    m = median(per[name])
                    ratio = f"{m / ref:.2f}" if ref == ref else "n/a"
                    say(f"| {name} | {median(rate[name]):.0f} | {m:.0f} | {ratio} |")
        finally:
            os.close(stats_fd)
        say("\nThe uprobe trap itself (entering the kernel at the site's int3) is not BPF run time: "
            "both tools pay it alike.")

        if PgCluster.missing():
            say(f"\n## postgres-slow on pgbench: skipped (missing: {' '.join(PgCluster.missing())})")
            return
        with PgCluster(tmp) as pg:
            rows = []
            for select_only, label in ((True, "select-only (-S)"), (False, "TPC-B-like (default)")):
                base, with_all, with_nobuf = [], [], []
                for _ in range(RUNS):
                    base.append(pgbench_tps(pg, 5, select_only))
                    for params, acc in ((["--param", "buffer_hits=true"], with_all),
                                        (["--param", "buffer_hits=false"], with_nobuf)):
                        tool = subprocess.Popen([DIAG, "postgres-slow", "--recipes", os.path.join(ROOT, "recipes"),
                                                 "--comm", "postgres", "--duration", "30"] + params,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        try:
                            time.sleep(2.5)
                            acc.append(pgbench_tps(pg, 5, select_only))
                        finally:
                            stop_tool(tool)
                b = median(base)
                rows.append((label, b, median(with_all), median(with_nobuf)))
            say("\n## postgres-slow: cost on a pgbench load (scale 2, 2 clients, 5 s each; transactions per second)\n")
            say("| load | without | with postgres-slow | ratio | with buffer_hits=false | ratio |")
            say("|---|---:|---:|---:|---:|---:|")
            for label, b, a, n in rows:
                say(f"| {label} | {b:.0f} | {a:.0f} | {a / b:.2f} | {n:.0f} | {n / b:.2f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prog_delta_named(before, mid, after, names):
    """(BPF run time in ns, runs) between mid and after of the programs loaded since before whose
    names start with one of names (None: any)."""
    ns = runs = 0
    for pid_, (name, cnt, rt) in after.items():
        if pid_ in before or (names and not any(name.startswith(n) for n in names)):
            continue
        c0, r0 = mid.get(pid_, (name, 0, 0))[1:]
        ns += rt - r0
        runs += cnt - c0
    return ns, runs


def per_sample_ns(target_argv, tool_argv_of_pid, names, seconds=3.0):
    """BPF ns per run of the tool's programs named names while target_argv runs."""
    target = subprocess.Popen(target_argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tool = None
    try:
        time.sleep(0.5)
        before = prog_stats()
        tool = subprocess.Popen(tool_argv_of_pid(target.pid), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(2.0)  # loaded, attached, past the pre-flight
        mid = prog_stats()
        time.sleep(seconds)
        ns, runs = prog_delta_named(before, mid, prog_stats(), names)
        return (ns / runs if runs else float("nan")), runs
    finally:
        stop_tool(tool)
        target.kill()
        target.wait()


def part11_python(say):
    """11. Python frames: BPF cost per on-CPU sample with and without the frame walk."""
    py = "/usr/bin/python3.11"
    if not os.access(py, os.X_OK):
        say("\n## 11. Python frames: skipped (no /usr/bin/python3.11)")
        return
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    os.chmod(tmp, 0o755)
    try:
        d = shipped_variant(tmp, "high-cpu", lambda src: src.replace("python_frames: true", "python_frames: false"))
        svc = [py, os.path.join(ROOT, "tests", "workloads", "py_service.py"), "--hot"]
        burner = [os.path.join(WL, "cpu_burner")]
        ours = os.path.join(ROOT, "recipes")
        diag = lambda extra: (lambda pid: [DIAG, "high-cpu", "--pid", str(pid), "--duration", "8",
                                           "--param", "hz=999", "--json"] + extra)
        fd = bpf_enable_stats()
        rows = []
        try:
            for label, target, argv in (
                    ("diagnose, python_frames on (python3.11)", svc, diag(["--recipes", ours])),
                    ("diagnose, python_frames off (python3.11)", svc, diag(["--recipes", d])),
                    ("diagnose on a C program (cpu_burner)", burner, diag(["--recipes", ours])),
                    ("bpftrace profile:hz:999 @[ustack] (python3.11)", svc,
                     lambda pid: ["bpftrace", "-e", f"profile:hz:999 /pid == {pid}/ {{ @[ustack] = count(); }}"])):
                names = None if label.startswith("bpftrace") else ["on_cpu_sample"]
                vals = [per_sample_ns(target, argv, names) for _ in range(min(RUNS, 3))]
                rows.append((label, median([v[0] for v in vals]), median([v[1] for v in vals])))
        finally:
            os.close(fd)
        say("\n## 11. Python frames: BPF run time per on-CPU sample (999 Hz, 3 s, run-time statistics)")
        say("| configuration | ns per sample | samples |")
        say("|---|---:|---:|")
        for label, ns, runs in rows:
            say(f"| {label} | {ns:.0f} | {runs:.0f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def probe_recipe(tmp, name, lua, probes, target="pid"):
    """A recipe of the given probes (YAML text) with no budget in the way: the probes' cost, not the
    pre-flight's or the governor's decisions."""
    return bench_recipe(tmp, name, probes, lua, target=target,
                        summary="probes alone, for their cost per event")


def loop_bpf_ns(loop_argv, tracer_argv, events):
    """BPF run time per event of the programs tracer_argv loads ({PID}: the loop's pid) while
    loop_argv (it waits for a byte on the fd given last, then runs) makes `events` events; the
    tracer attaches, settles past any pre-flight, and only the loop's turn is counted. Run-time
    statistics must be on."""
    rfd, wfd = os.pipe()
    # hold: the loop prints when done, then waits for the pipe's end: diagnose, which stops when
    # its target exits, is still attached when its programs are read
    loop = subprocess.Popen(loop_argv + [str(rfd), "hold"], stdout=subprocess.PIPE, text=True,
                            pass_fds=(rfd,))
    os.close(rfd)
    tracer = None
    try:
        before = prog_stats()
        objs = bpf_objects()
        tracer = subprocess.Popen([a.replace("{PID}", str(loop.pid)) for a in tracer_argv],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, text=True)
        wait_attached(objs, tracer)
        time.sleep(1.5)  # past diagnose's pre-flight: full mode from here
        mid = prog_stats()
        os.write(wfd, b"x")
        loop.stdout.readline()  # done
        ns, _ = tool_delta(before, mid, prog_stats())
        return ns / events
    finally:
        os.close(wfd)
        loop.stdout.close()
        stop_tool(tracer)
        if loop.poll() is None:
            loop.kill()
            loop.wait()


def part12_per_event_table(say):
    """C. Every probe kind with a peer here: BPF run time per event, the same loop, one run."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    calls = LOOP_CALLS
    hops = OFFCPU_HOPS
    getppid = [os.path.join(WL, "getppid_loop"), str(calls)]
    switch = [os.path.join(WL, "switch_storm"), str(hops)]

    def diag(name, lua, probes):
        return [DIAG, name, "--recipes", probe_recipe(tmp, name, lua, probes), "--pid", "{PID}",
                "--duration", "60"]

    pid_probe = "  - id: {id}\n    kind: {kind}\n    filters: {{pid: target}}\n    options: {{{opts}}}\n"
    rows = [
        # (probe kind, as which recipe runs it, peer, loop, events, unit, ours argv, peer argv)
        ("syscall_stats", "high-cpu (counts)", "libbpf-tools syscount -p PID", getppid, calls, "syscall",
         diag("c-sys", "high-cpu.lua", pid_probe.format(id="syscalls", kind="syscall_stats", opts="")),
         ["syscount", "-p", "{PID}"] if shutil.which("syscount") else None),
        ("syscall_stats timing", "latency (times, errors)", "libbpf-tools syscount -L -p PID", getppid, calls, "syscall",
         diag("c-syst", "latency.lua", pid_probe.format(id="syscalls", kind="syscall_stats", opts="timing: true")),
         ["syscount", "-L", "-p", "{PID}"] if shutil.which("syscount") else None),
        ("off_cpu + wakeups", "latency (dwarf: 2 KiB copies)", "libbpf-tools offcputime -p PID", switch, 2 * hops,
         "switch-out",
         diag("c-off", "latency.lua",
              pid_probe.format(id="offcpu", kind="off_cpu", opts="min_block_us: 10, user_unwind: dwarf, "
                               "stack_bytes: 2048, ring_buffer_kib: 4096") +
              pid_probe.format(id="wakers", kind="wakeups", opts="min_block_us: 10, user_unwind: dwarf, "
                               "stack_bytes: 2048")),
         ["offcputime", "-p", "{PID}"] if shutil.which("offcputime") else None),
        ("runq_latency", "high-cpu, latency", "libbpf-tools runqlat -p PID", switch, 2 * hops, "wakeup",
         diag("c-runq", "high-cpu.lua", pid_probe.format(id="runq", kind="runq_latency", opts="")),
         ["runqlat", "-p", "{PID}"] if shutil.which("runqlat") else None),
    ]
    say("\n## Per event, every probe kind with a peer here: BPF run time (run-time statistics), "
        "one run, the same loop\n")
    say(f"getppid() loop of {calls} calls; pipe ping-pong of {hops} round trips (2 switch-outs and "
        "2 wakeups each). Block I/O: part 6; network events: part 7; allocations: part 8; "
        "peer waits: part 9; USDT: part 10; on-CPU samples: part 11.\n")
    say("| probe kind | as run by | ns per event | peer | peer ns per event | × peer |")
    say("|---|---|---:|---|---:|---:|")
    stats_fd = bpf_enable_stats()
    try:
        for kind, recipe, peer, loop, events, unit, ours, theirs in rows:
            a = [loop_bpf_ns(loop, ours, events) for _ in range(RUNS)]
            b = [loop_bpf_ns(loop, theirs, events) for _ in range(RUNS)] if theirs else []
            ma, mb = median(a), median(b) if b else float("nan")
            ratio = f"{ma / mb:.2f}" if mb == mb and mb > 0 else "n/a"
            say(f"| {kind} | {recipe} | {ma:.0f} per {unit} | {peer if theirs else peer + ' (absent)'} "
                f"| {mb:.0f} | {ratio} |")
    finally:
        os.close(stats_fd)
        shutil.rmtree(tmp, ignore_errors=True)


def spawn_named(exe, name, args, n, tmp):
    """n processes of exe running under the name `name` (a link: their comm), with args."""
    link = os.path.join(tmp, name)
    if not os.path.exists(link):
        os.symlink(exe, link)
    return [subprocess.Popen([link] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(n)]


def stop_all(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def diag_scaled_run(argv, window_s, tmp):
    """One diagnose run under GNU time, its JSON report read: the row of the scaling table."""
    out = os.path.join(tmp, "scale.json")
    m = run_timed(argv + ["--json"], window_s, out)
    try:
        r = json.load(open(out))
    except (OSError, json.JSONDecodeError):
        r = {}
    o = r.get("overhead") or {}
    limits = [n for n in r.get("notes", []) if any(w in n for w in ("beyond", "limit", "stopped", "full",
                                                                     "over max", "not names"))]
    ok = m["rc"] != 3 and r.get("stop_reason") == "duration" and not any("stopped" in n for n in limits)
    return {"wall": m["wall"] * 1000, "cpu": (m["user"] + m["sys"]) * 1000, "rss": m["rss"],
            "bpf": o.get("bpf_cpu_pct"), "ok": ok, "limits": limits, "stop": r.get("stop_reason"),
            "rc": m["rc"]}


def part13_scaling(say):
    """D. Cost as the work grows: sets, threads, stacks to symbolize, events per second."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    recipes = os.path.join(ROOT, "recipes")
    window = 2.0
    rows = []

    def row(what, size, recipe, m):
        bpf = f"{m['bpf']:.2f}" if isinstance(m.get("bpf"), (int, float)) else "—"
        within = "yes" if m["ok"] else f"no ({m['stop']}, exit {m['rc']})"
        if m["limits"]:
            within += "; " + "; ".join(x[:140] for x in m["limits"])
        rows.append(f"| {what} | {size} | {recipe} | {m['wall']:.0f} | {m['cpu']:.0f} | {m['rss']:.1f} | "
                    f"{bpf} | {within} |")

    idle = os.path.join(WL, "idle_pool")
    try:
        # a --comm set of N idle processes (2 threads each)
        for n in (1, 100, 1000):
            procs = spawn_named(idle, "dgscale", ["1"], n, tmp)
            try:
                time.sleep(0.5 + n / 500)
                row("`--comm` set", f"{n} processes", "high-cpu",
                    diag_scaled_run([DIAG, "high-cpu", "--recipes", recipes, "--comm", "dgscale",
                                     "--duration", str(window)], window, tmp))
            finally:
                stop_all(procs)
        # one target with N threads
        for n in (10, 1000, 10000):
            procs = [subprocess.Popen([idle, str(n)], stdout=subprocess.DEVNULL)]
            try:
                time.sleep(0.5 + n / 5000)
                row("threads of the target", f"{n}", "latency",
                    diag_scaled_run([DIAG, "latency", "--recipes", recipes, "--pid", str(procs[0].pid),
                                     "--duration", str(window)], window, tmp))
            finally:
                stop_all(procs)
        # events per second: paced calls (a UDP datagram each: sendto and a softirq)
        for rate in (1000, 100000):
            status = os.path.join(tmp, "paced.status")
            procs = [subprocess.Popen([os.path.join(WL, "paced_calls"), str(rate), status],
                                      stdout=subprocess.DEVNULL)]
            try:
                time.sleep(1.0)
                m = diag_scaled_run([DIAG, "high-cpu", "--recipes", recipes, "--pid", str(procs[0].pid),
                                     "--duration", str(window)], window, tmp)
                try:
                    calls, secs = open(status).read().split()[:2]
                    got = f"{float(calls) / float(secs):,.0f}/s reached"
                except (OSError, ValueError):
                    got = "rate not read"
                row("events per second", f"{rate:,}/s asked, {got}", "high-cpu", m)
            finally:
                stop_all(procs)
        # unique addresses to symbolize (the symbols code alone, on a live Python process)
        symbench = os.path.join(BUILD, "bench", "symbench")
        py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
        if os.access(symbench, os.X_OK):
            wl = subprocess.Popen([py, os.path.join(ROOT, "tests", "bench", "pyload.py")],
                                  stdout=subprocess.DEVNULL)
            try:
                time.sleep(1.0)
                for n in (10000, 100000):
                    m = run_timed([symbench, str(wl.pid), str(n)], 0.0, os.path.join(tmp, "sym.json"))
                    ok = "yes" if m["rc"] == 0 else f"exit {m['rc']}"
                    rows.append(f"| unique addresses to symbolize | {n:,} | (symbols code, part 4) | "
                                f"{m['wall'] * 1000:.0f} (all of it) | {(m['user'] + m['sys']) * 1000:.0f} | "
                                f"{m['rss']:.1f} | — | {ok} |")
            finally:
                wl.kill()
                wl.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"\n## Cost as the work grows ({window:.0f} s windows, one run each)\n")
    say("Wall beyond the window and diagnose's CPU (user + sys) are the whole process's; BPF CPU is "
        "the report's (% of all CPUs, the governor's windows). Within budgets: the run went to its "
        "duration, nothing refused or stopped; the notes that name a limit are quoted.\n")
    say("| what grows | size | recipe | wall beyond (ms) | CPU (ms) | peak RSS (MiB) | BPF CPU (%) | within budgets |")
    say("|---|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        say(r)


def part_e_servers(say):
    """E. What a run costs a real server: tests/bench/servers.py (its own settings: BENCH_SERVERS,
    BENCH_RECIPES, BENCH_SERVER_ALTS, BENCH_WATCH_S); it writes BUILD/bench/servers.md too."""
    sys.modules.setdefault("bench", sys.modules[__name__])  # servers.py uses this module's helpers
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import servers
    servers.part_servers(say)


def snapshot_recipe(tmp, variant):
    """A recipe with the thread_states probe alone (variant: iterator or procfs), or none (the
    baseline: proc_context alone); its directory."""
    probe = f"""  - id: threads
    kind: thread_states
    filters:
      pid: target
    attach: [{variant}]
    options:
      max_threads: 16384
""" if variant else """  - id: context
    kind: proc_context
    filters:
      pid: target
"""
    return bench_recipe(tmp, "bench-threads", probe, "bench.lua", target="processes",
                        summary="thread snapshots alone", sub="recipes-" + (variant or "base"),
                        duration_s=2, budgets={"max_duration_s": 10, "max_events_per_s": None},
                        own_lua=True)


def part14_snapshots(say):
    """E. Thread snapshots: their reads, bytes and memory by thread count."""
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    idle = os.path.join(WL, "idle_pool")
    rows = []

    def measure(label, variant, target_argv):
        out = os.path.join(tmp, "snap.json")
        m = run_timed([DIAG, "bench-threads", "--recipes", snapshot_recipe(tmp, variant)] + target_argv +
                      ["--json"], 2.0, out)
        base = run_timed([DIAG, "bench-threads", "--recipes", snapshot_recipe(tmp, None)] + target_argv,
                         2.0)
        try:
            r = json.load(open(out))
            t, ph = r["results"]["threads"], r["overhead"]["phases_s"]
            sn = t["snapshots"]
            rows.append(f"| {label} | {t['how']} | {t['threads_seen']:,} | {sn['start']['took_ms']:.1f} / "
                        f"{sn['start']['bytes'] / 1e6:.2f} | {sn['end']['took_ms']:.1f} / {sn['end']['bytes'] / 1e6:.2f} | "
                        f"{sn['details']['took_ms']:.1f} ({sn['details']['threads']}) | {ph['results'] * 1000:.0f} | "
                        f"{m['rss'] - base['rss']:+.1f} |")
        except (OSError, ValueError, KeyError) as e:
            rows.append(f"| {label} | {variant} | no report ({e}, exit {m['rc']}) | | | | | |")

    try:
        for n in (1000, 10000):
            pool = subprocess.Popen([idle, str(n)], stdout=subprocess.DEVNULL)
            try:
                time.sleep(1.0 + n / 5000)
                for variant in ("iterator", "procfs") if n == 1000 else ("iterator",):
                    measure(f"{n:,} threads, --pid", variant, ["--pid", str(pool.pid)])
                if n == 10000:
                    small = spawn_named(idle, "dgsnap", ["2"], 1, tmp)
                    try:
                        time.sleep(0.5)
                        measure("3 threads, --comm, 10,000 more on the host", "iterator", ["--comm", "dgsnap"])
                    finally:
                        stop_all(small)
            finally:
                pool.kill()
                pool.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say("\n## Thread snapshots (one run each, 2 s windows)\n")
    say("Each read's time (ms) and the bytes it wrote (MB); details: the reported threads (at most "
        "256 blocked, most blocked first) read again with their kernel stacks and 4 KiB stack tops; "
        "results: unwinding and naming them; peak RSS against the same run with proc_context alone.\n")
    say("| target | how | threads | start ms / MB | end ms / MB | details ms (threads) | results ms | peak RSS (MiB) |")
    say("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        say(r)


def main():
    if os.geteuid() != 0:
        sys.exit("bench: run as root (it loads BPF programs)")
    if not os.access(GNU_TIME, os.X_OK):
        sys.exit(f"bench: {GNU_TIME} missing (Debian package `time`; make deps installs it)")
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    cpu = "?"
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            cpu = l.split(":", 1)[1].strip()
            break
    say(f"# diagnose benchmark — {time.strftime('%Y-%m-%d')}, kernel {platform.release()}, "
        f"{os.cpu_count()} CPUs ({cpu}), median of {RUNS} runs")

    parts = os.environ.get("BENCH_PARTS", "123456789ABCDF")
    for n, part in (("1", part1_collection), ("2", part2_per_event), ("3", part3_unwinding),
                    ("4", part4_symbolization), ("5", part5_offcpu), ("6", part6_block),
                    ("7", part7_network), ("8", part8_allocations),
                    ("9", part9_peer_wait), ("A", part10_usdt), ("B", part11_python),
                    ("C", part12_per_event_table), ("D", part13_scaling), ("E", part_e_servers),
                    ("F", part14_snapshots)):
        if n in parts:
            part(say)

    os.makedirs(os.path.join(BUILD, "bench"), exist_ok=True)
    with open(os.path.join(BUILD, "bench", "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"\nwritten to {os.path.relpath(os.path.join(BUILD, 'bench', 'results.md'), ROOT)}")


if __name__ == "__main__":
    main()
