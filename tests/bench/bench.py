#!/usr/bin/env python3
"""bench.py — `make bench`: diagnose side by side with its peers, in one run, on this machine.

1. Cost of a 1 s collection on a CPU-bound process: wall time beyond the collection window and
   peak RSS, for `diagnose high-cpu`, bpftrace's profile one-liner, libbpf-tools' runqlat (and
   perf record when present).
2. Cost per traced event: a loop of syscall(SYS_getppid), timed untraced, under an empty BPF
   program on raw_tp/sys_enter (the floor), under the high-cpu recipe's syscall probe alone,
   under libbpf-tools' syscount, and under bpftrace's `@[comm] = count()`; nanoseconds added per
   call and the ratio to the floor.

Every figure is the median of RUNS runs; the machine is noisy, so only the ratios taken in one
run mean anything. Results are printed and written to BUILD/bench/results.md. No assertions:
this is a measurement, not a test.
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
    rfd, wfd = os.pipe()
    loop = subprocess.Popen([os.path.join(WL, "getppid_loop"), str(LOOP_CALLS), str(rfd)],
                            stdout=subprocess.PIPE, text=True, pass_fds=(rfd,))
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


def syscall_only_recipe(tmp):
    """The high-cpu recipe's syscall probe alone, with its thresholds and Lua."""
    src = open(os.path.join(ROOT, "recipes", "high-cpu.yaml")).read()
    thresholds = src[src.index("\nthresholds:"):]
    os.makedirs(os.path.join(tmp, "recipes"))
    os.symlink(os.path.join(ROOT, "lua"), os.path.join(tmp, "lua"))
    with open(os.path.join(tmp, "recipes", "bench-syscalls.yaml"), "w") as f:
        f.write("""name: bench-syscalls
symptom: benchmark
summary: the high-cpu recipe's syscall probe alone
lua: high-cpu.lua
target: pid
duration_s: 60
budgets:
  max_duration_s: 60
  max_sample_hz: 999
  max_events_per_s: 100000000
  max_cpu_pct: 100
  max_map_bytes: 67108864
probes:
  - id: syscalls
    kind: syscall_stats
    filters:
      pid: target
""" + thresholds)
    return os.path.join(tmp, "recipes")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


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

    parts = os.environ.get("BENCH_PARTS", "12")
    # --- 1. one-second collection on a busy process ---
    burner = subprocess.Popen([os.path.join(WL, "cpu_burner")], stdout=subprocess.DEVNULL)
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
    if "1" not in parts:
        tools = []
    say("\n## 1 s collection: wall time beyond the window, peak RSS\n")
    say("| tool | wall beyond 1 s (ms) | peak RSS (MiB) |")
    say("|---|---:|---:|")
    for name, argv in tools:
        walls, rss = [], []
        for _ in range(RUNS):
            w, r, rc = run_measured(argv, 1.0)
            walls.append(w * 1000)
            rss.append(r)
        say(f"| {name} | {median(walls):.0f} | {median(rss):.1f} |")
    burner.kill()
    burner.wait()

    # --- 2. cost per traced syscall ---
    tmp = tempfile.mkdtemp(prefix="diagnose-bench.")
    try:
        if "2" not in parts:
            raise SystemExit(0)
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

    os.makedirs(os.path.join(BUILD, "bench"), exist_ok=True)
    with open(os.path.join(BUILD, "bench", "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"\nwritten to {os.path.relpath(os.path.join(BUILD, 'bench', 'results.md'), ROOT)}")


if __name__ == "__main__":
    main()
