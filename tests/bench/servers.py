#!/usr/bin/env python3
"""servers.py — `make bench-servers` (also `make bench` part E, BENCH_PARTS=E): what a diagnose run
costs a real server, in the server's own throughput and latency.

The question a production owner asks: how much slower does my server get while diagnose runs?
Each server is a Debian package's binary started privately by this script (a temporary directory,
its own config, loopback ports of its own), loaded by the package's own load generator, and
stopped at the end:

  postgres  PostgreSQL 15 (tests/bench/bench.py's PgCluster: scale 2, shared_buffers 128MB, no TCP
            listener), pgbench with 2 clients: select-only (-S) and the default TPC-B-like script.
            Targeted as on-call would: --comm postgres (memory-growth takes one pid: the postmaster's).
  redis     redis-server 7.0 (no persistence), redis-benchmark with 16 clients, random keys out of
            100,000 (filled first): GET and SET, one request at a time and pipelined (-P 16).
            Targeted with --pid of redis-server.
  nginx     nginx 1.22, one worker: a static 1 KiB file, and the same file through a proxy_pass to
            a second nginx (keep-alive upstream connections); wrk, 1 thread, 16 connections.
            Targeted with --comm nginx (both instances); memory-growth with --pid of the front
            instance's worker.
  python    tests/workloads/slow_upstream.py answering at once (python3's http.server,
            ThreadingHTTPServer); wrk as above. Targeted with --pid.

For each server × load × recipe that can target it (high-cpu, latency, memory-growth,
io-saturation, network-errors, triage; postgres-slow on PostgreSQL), BENCH_SERVER_ALTS alternations
(default 3) of: the recipe started with its default window and the load run once its probes are
attached, for the window less a second (pgbench and wrk take whole seconds; redis-benchmark takes a
request count, sized from its last rate under the same condition, the first run with a recipe a
fifth below the rate without: a run that outlasted the window is run again, at most twice, sized
for half its rate); and the same load without diagnose. The order flips every alternation (without/with, then
with/without). Recorded per run: throughput (pgbench tps, redis-benchmark and wrk requests/s),
p50/p99 latency (pgbench's --log of every transaction, redis-benchmark's --csv, wrk --latency),
and from the run's --json report overhead.bpf_cpu_pct, bpf_cpu_s, events, its stop reason, and
diagnose's own CPU (user + system, wait4). Reported: medians, the with/without ratio of each
alternation's pair (median and min–max).

watch: `diagnose watch --comm postgres` at its default schedule (triage every 60 s, follow-ups
when a verdict asks) while pgbench -S runs for BENCH_WATCH_S seconds (default 600), bracketed by
two runs of BENCH_WATCH_S/2 without it; throughput and latency (1% of transactions logged), and
what watch says it cost (its --textfile's diagnose_watch_cpu_seconds_total) and its runs.

Selection: BENCH_SERVERS (default postgres,redis,nginx,python,watch), BENCH_RECIPES (default all),
BENCH_SERVER_ALTS, BENCH_WATCH_S. A full run at the defaults takes about 80 minutes (55-60 of
alternations, 20 of watch); BENCH_SERVER_ALTS=2 BENCH_WATCH_S=120 about 45 (2026-12-07: 38
minutes of alternations at 2). It prints its estimate when it starts.

Output: a markdown table on stdout and in BUILD/bench/servers.md. Every process it starts is in a
process group of its own, stopped on the way out (normal end, an error, SIGINT, SIGTERM, SIGHUP);
PostgreSQL is stopped with pg_ctl; the temporary directory is removed. No assertions: this is a
measurement, not a test.
"""
import glob
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (run as bench.py's part E, bench.py has put itself there already)

ROOT, BUILD, DIAG = B.ROOT, B.BUILD, B.DIAG
RECIPES = os.path.join(ROOT, "recipes")
ALTS = int(os.environ.get("BENCH_SERVER_ALTS", "3"))
WATCH_S = int(os.environ.get("BENCH_WATCH_S", "600"))
ALL_SERVERS = ["postgres", "redis", "nginx", "python", "watch"]
ALL_RECIPES = ["high-cpu", "latency", "memory-growth", "io-saturation", "network-errors",
               "postgres-slow", "triage"]
NGINX = "/usr/sbin/nginx"
REDIS_SERVER = "/usr/bin/redis-server"
REDIS_BENCH = "/usr/bin/redis-benchmark"
WRK = "/usr/bin/wrk"
PY = "/usr/bin/python3"
UPSTREAM_PY = os.path.join(ROOT, "tests", "workloads", "slow_upstream.py")

# every process started here, its own process group: stopped whatever happens
LIVE = []
GROUPS = set()


def spawn(argv, **kw):
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    LIVE.append(p)
    GROUPS.add(p.pid)
    return p


def stop(p, sig=signal.SIGTERM, grace=10.0):
    """Stops p's process group: sig, then SIGKILL after grace seconds; reaps p."""
    if p is None:
        return
    if p.poll() is None:
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)  # what is left of its group (nginx's workers, a Lua child)
    except (ProcessLookupError, PermissionError):
        pass
    if p.poll() is None:
        p.wait()
    if p in LIVE:
        LIVE.remove(p)


def stop_all():
    """Stops every process started here; then any process still in one of their groups (a child
    that outlived its parent) is killed and named: nothing of the bench's is left running."""
    for p in reversed(list(LIVE)):
        stop(p, grace=5.0)
    left = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            s = open(stat).read()
        except OSError:
            continue
        fields = s[s.rindex(")") + 2:].split()
        if int(fields[2]) in GROUPS and fields[0] != "Z":
            left.append(f"{stat.split('/')[2]} ({s[s.index('(') + 1:s.rindex(')')]})")
            try:
                os.kill(int(stat.split("/")[2]), signal.SIGKILL)
            except ProcessLookupError:
                pass
    if left:
        print(f"bench-servers: killed what outlived its group's leader: {', '.join(left)}",
              file=sys.stderr)


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds through every finally: servers stopped, tmp removed


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def children(pid):
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            s = open(stat).read()
        except OSError:
            continue
        if int(s[s.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(stat.split("/")[2]))
    return out


def window_of(recipe):
    m = re.search(r"^duration_s:\s*(\d+)", open(os.path.join(RECIPES, recipe + ".yaml")).read(), re.M)
    return int(m.group(1))


def pct(xs, q):
    """Nearest-rank percentile of a sorted list."""
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, int(round(q / 100.0 * len(xs) + 0.5)) - 1))]


# --- load generators: each returns {"tput", "p50", "p99" (ms), "elapsed" (s)} ----------------------

def pgbench_load(pg, tmp, select_only, sampling=None):
    def run(seconds):
        prefix = os.path.join(tmp, "pgbench-log")
        for f in glob.glob(prefix + "*"):
            os.unlink(f)
        argv = ["-n", "-c", "2", "-j", "2", "-T", str(int(seconds)), "--log", "--log-prefix", prefix]
        if sampling:
            argv += ["--sampling-rate", str(sampling)]
        if select_only:
            argv.append("-S")
        start = time.monotonic()
        p = spawn(pg.pgbench_argv(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=seconds + 120)
        finally:
            stop(p)
        elapsed = time.monotonic() - start
        m = re.search(r"tps = ([0-9.]+) \(without initial", out)
        if not m:
            raise RuntimeError(f"pgbench gave no tps: {(err or out).strip()[-300:]}")
        lat = []
        for f in glob.glob(prefix + "*"):
            with open(f) as fh:
                for line in fh:
                    parts = line.split()
                    if len(parts) >= 3:
                        lat.append(int(parts[2]) / 1000.0)  # µs -> ms
            os.unlink(f)
        lat.sort()
        return {"tput": float(m.group(1)), "p50": pct(lat, 50), "p99": pct(lat, 99), "elapsed": elapsed}
    return run


class RedisLoad:
    """redis-benchmark takes a request count, not a time: each run is sized from the last rate
    measured under the same condition (with this recipe, or without), so that it lasts about the
    time asked."""

    def __init__(self, port, test, pipeline):
        self.port, self.test, self.pipeline = port, test, pipeline
        self.rate = {}

    def __call__(self, seconds, cond="without"):
        rate = self.rate.get(cond)
        if not rate:  # the first run with a recipe: sized for a fifth less than the rate without
            rate = 0.8 * (self.rate.get("without") or (200000 if self.pipeline > 1 else 20000))
        n = max(2000, int(rate * seconds))
        argv = [REDIS_BENCH, "-h", "127.0.0.1", "-p", str(self.port), "-c", "16", "-n", str(n),
                "-r", "100000", "-t", self.test, "--csv"]
        if self.pipeline > 1:
            argv += ["-P", str(self.pipeline)]
        start = time.monotonic()
        p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=seconds * 20 + 60)
        finally:
            stop(p)
        elapsed = time.monotonic() - start
        row = None
        for line in out.splitlines():
            f = [x.strip('"') for x in line.split(",")]
            if f and f[0].upper() == self.test.upper():
                row = f
        if not row:
            raise RuntimeError(f"redis-benchmark gave no figures: {(err or out).strip()[-300:]}")
        res = {"tput": float(row[1]), "p50": float(row[4]), "p99": float(row[6]), "elapsed": elapsed}
        self.rate[cond] = res["tput"]
        return res


def wrk_load(url):
    def run(seconds):
        start = time.monotonic()
        p = spawn([WRK, "-t1", "-c16", f"-d{int(seconds)}s", "--latency", "--timeout", "5s", url],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=seconds + 60)
        finally:
            stop(p)
        elapsed = time.monotonic() - start
        m = re.search(r"Requests/sec:\s*([0-9.]+)", out)
        if not m:
            raise RuntimeError(f"wrk gave no rate: {(err or out).strip()[-300:]}")
        lat = {}
        for q, v, unit in re.findall(r"^\s*(50|99)%\s+([0-9.]+)(us|ms|s)\s*$", out, re.M):
            lat[q] = float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
        res = {"tput": float(m.group(1)), "p50": lat.get("50", float("nan")),
               "p99": lat.get("99", float("nan")), "elapsed": elapsed}
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if bad:
            res["errors"] = int(bad.group(1))
        return res
    return run


# --- servers: context managers; .loads: [(label, unit, load)], .target(recipe) -> (argv, label) ----

class Postgres:
    name = "PostgreSQL 15"

    def __init__(self, tmp):
        self.tmp = tmp
        self.pg = B.PgCluster(tmp)

    def __enter__(self):
        self.pg.__enter__()
        self.loads = [("pgbench -S", "tps", pgbench_load(self.pg, self.tmp, True)),
                      ("pgbench TPC-B-like", "tps", pgbench_load(self.pg, self.tmp, False))]
        return self

    def __exit__(self, *exc):
        return self.pg.__exit__(*exc)

    def target(self, recipe):
        if recipe == "memory-growth":  # one pid only: the server's main process
            return ["--pid", str(self.pg.pid())], "--pid postmaster"
        return ["--comm", "postgres"], "--comm postgres"


class Redis:
    name = "Redis 7.0"

    def __init__(self, tmp):
        self.tmp = os.path.join(tmp, "redis")
        self.proc = None

    def __enter__(self):
        os.makedirs(self.tmp)
        self.port = free_port()
        self.proc = spawn([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                           "--appendonly", "no", "--dir", self.tmp, "--daemonize", "no",
                           "--logfile", os.path.join(self.tmp, "log")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(self.port, self.proc, "redis-server")
            fill = RedisLoad(self.port, "set", 16)
            fill.rate["without"] = 200000
            fill(1.0)  # 200k SETs of random keys: the GETs find them
        except BaseException:
            stop(self.proc)
            raise
        self.loads = [("redis-benchmark GET", "req/s", RedisLoad(self.port, "get", 1)),
                      ("redis-benchmark SET", "req/s", RedisLoad(self.port, "set", 1)),
                      ("redis-benchmark GET -P 16", "req/s", RedisLoad(self.port, "get", 16)),
                      ("redis-benchmark SET -P 16", "req/s", RedisLoad(self.port, "set", 16))]
        return self

    def __exit__(self, *exc):
        stop(self.proc)
        return False

    def target(self, recipe):
        return ["--pid", str(self.proc.pid)], "--pid"


NGINX_CONF = """user www-data;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 1024; }}
http {{
	access_log off;
	client_body_temp_path {dir}/temp/client_body;
	proxy_temp_path {dir}/temp/proxy;
	fastcgi_temp_path {dir}/temp/fastcgi;
	uwsgi_temp_path {dir}/temp/uwsgi;
	scgi_temp_path {dir}/temp/scgi;
{servers}
}}
"""


class Nginx:
    name = "nginx 1.22"

    def __init__(self, tmp):
        self.tmp = os.path.join(tmp, "nginx")
        self.masters = []

    def _start(self, label, servers):
        d = os.path.join(self.tmp, label)
        for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(d, "temp", t))
        subprocess.run(["chown", "-R", "www-data:", os.path.join(d, "temp")], check=True)
        os.chmod(d, 0o755)
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(dir=d, servers=servers))
        err = os.path.join(d, "error.log")
        t = subprocess.run([NGINX, "-t", "-q", "-p", d, "-e", err, "-c", conf], capture_output=True, text=True)
        if t.returncode:
            raise RuntimeError(f"nginx -t: {t.stderr.strip()}")
        m = spawn([NGINX, "-p", d, "-e", err, "-c", conf, "-g", "daemon off;"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.masters.append(m)
        return m

    def __enter__(self):
        www = os.path.join(self.tmp, "www")
        os.makedirs(www)
        for d in (os.path.dirname(self.tmp), self.tmp, www):
            os.chmod(d, 0o755)
        with open(os.path.join(www, "index.html"), "w") as f:
            f.write(("<p>" + "x" * 60 + "</p>\n") * 16)  # 1 KiB
        try:
            up, static, proxy = free_port(), free_port(), free_port()
            m_up = self._start("upstream", f"\tserver {{ listen 127.0.0.1:{up}; root {www}; }}")
            front = self._start("front", f"""\tupstream backend {{ server 127.0.0.1:{up}; keepalive 16; }}
	server {{ listen 127.0.0.1:{static}; root {www}; }}
	server {{
		listen 127.0.0.1:{proxy};
		location / {{ proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; }}
	}}""")
            for port, m in ((up, m_up), (static, front), (proxy, front)):
                wait_port(port, m, "nginx")
            self.worker = None
            for _ in range(50):
                kids = children(front.pid)
                if kids:
                    self.worker = kids[0]
                    break
                time.sleep(0.1)
            if not self.worker:
                raise RuntimeError("nginx: no worker process")
        except BaseException:
            self.__exit__()
            raise
        self.loads = [("wrk static 1 KiB", "req/s", wrk_load(f"http://127.0.0.1:{static}/index.html")),
                      ("wrk via proxy_pass", "req/s", wrk_load(f"http://127.0.0.1:{proxy}/index.html"))]
        return self

    def __exit__(self, *exc):
        for m in self.masters:
            stop(m, signal.SIGTERM)
        self.masters = []
        return False

    def target(self, recipe):
        if recipe == "memory-growth":
            return ["--pid", str(self.worker)], "--pid worker"
        return ["--comm", "nginx"], "--comm nginx"


class PyHttp:
    name = "python3 http.server"

    def __init__(self, tmp):
        self.tmp = tmp
        self.proc = None

    def __enter__(self):
        out = os.path.join(self.tmp, "py-http.port")
        with open(out, "w") as f:
            self.proc = spawn([PY, UPSTREAM_PY, "--port", "0", "--delay-ms", "0"], stdout=f,
                              stderr=subprocess.DEVNULL)
        try:
            port = None
            for _ in range(300):
                txt = open(out).read().strip()
                if txt.isdigit():
                    port = int(txt)
                    break
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
            if not port:
                raise RuntimeError("the python3 HTTP service did not start")
            wait_port(port, self.proc, "python3 http.server")
        except BaseException:
            stop(self.proc)
            raise
        self.loads = [("wrk GET", "req/s", wrk_load(f"http://127.0.0.1:{port}/"))]
        return self

    def __exit__(self, *exc):
        stop(self.proc)
        return False

    def target(self, recipe):
        return ["--pid", str(self.proc.pid)], "--pid"


SERVERS = {"postgres": Postgres, "redis": Redis, "nginx": Nginx, "python": PyHttp}


# --- one run with the recipe -------------------------------------------------------------------

def run_with(recipe, target_argv, load, load_s, window, tmp, redis=False):
    """The recipe on its default window; the load once its probes are attached. Returns
    (load result or None, report facts)."""
    rep = os.path.join(tmp, "report.json")
    errf = os.path.join(tmp, "diag.err")
    before = B.bpf_objects()
    with open(rep, "w") as out, open(errf, "w") as err:
        p = spawn([DIAG, recipe, "--recipes", RECIPES, *target_argv, "--json"], stdout=out, stderr=err)
    res = None
    facts = {}
    try:
        try:
            B.wait_attached(before, p)
        except RuntimeError:
            pass
        attached = time.monotonic()
        if p.poll() is None:
            res = load(load_s, "with:" + recipe) if redis else load(load_s)
            # a sized load that outlasted the window measured partly without the probes
            res["outlasted"] = time.monotonic() > attached + window
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        facts["cpu_s"] = ru.ru_utime + ru.ru_stime
    finally:
        stop(p, signal.SIGINT, grace=30.0)
    facts["rc"] = p.returncode
    try:
        r = json.load(open(rep))
    except (OSError, ValueError):
        r = {}
    o = r.get("overhead") or {}
    facts.update(bpf_pct=o.get("bpf_cpu_pct"), bpf_s=o.get("bpf_cpu_s"), events=o.get("events"),
                 server_pct=(o.get("server") or {}).get("server_cpu_pct"),
                 window_s=(o.get("phases_s") or {}).get("window"), stop=r.get("stop_reason"))
    if res is None:
        lines = [ln for ln in open(errf).read().splitlines() if ln.strip()]
        facts["error"] = lines[-1] if lines else f"exit {p.returncode} before attaching"
    return res, facts


def median(xs):
    xs = [x for x in xs if isinstance(x, (int, float)) and x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt(x, spec):
    return format(x, spec) if isinstance(x, (int, float)) and x == x else "—"


def lat_pair(without, with_, key):
    a = median([r[key] for r in without])
    b = median([r[key] for r in with_])
    if a != a or b != b:
        return "—"
    digits = ".2f" if max(a, b) < 10 else ".1f" if max(a, b) < 100 else ".0f"
    return f"{a:{digits}} → {b:{digits}}"


def measure_row(server, label, unit, load, recipe, tmp, say_progress, ratios_of):
    """One row of the table; the row's ratios are added to ratios_of[recipe] (the summary)."""
    target_argv, target_label = server.target(recipe)
    window = window_of(recipe)
    load_s = max(1, window - 1)
    redis = isinstance(load, RedisLoad)
    without, with_, facts, ratios, notes = [], [], [], [], []
    for alt in range(ALTS):
        pair = {}
        for with_diag in ((False, True) if alt % 2 == 0 else (True, False)):
            if not with_diag:
                pair["without"] = load(load_s, "without") if redis else load(load_s)
                continue
            res, f = run_with(recipe, target_argv, load, load_s, window, tmp, redis)
            for _ in range(2):
                if not (res is not None and res.get("outlasted") and redis):
                    break
                # its rate was partly measured after the window, without the probes: half of it
                notes.append("resized after a run that outlasted the window")
                load.rate["with:" + recipe] *= 0.5
                res, f = run_with(recipe, target_argv, load, load_s, window, tmp, redis)
            facts.append(f)
            if res is None:
                notes.append(f"no load run: {f.get('error', '')[:160]}")
                break
            if res.get("outlasted"):
                notes.append("the load outlasted the window: the loss is understated")
            pair["with"] = res
        if "with" not in pair:
            break
        without.append(pair["without"])
        with_.append(pair["with"])
        ratios.append(pair["with"]["tput"] / pair["without"]["tput"])
        say_progress(f"  {label} / {recipe}: {pair['without']['tput']:.0f} → {pair['with']['tput']:.0f} {unit} "
                     f"({ratios[-1]:.2f}), report: BPF {fmt(facts[-1].get('bpf_pct'), '.2f')}% "
                     f"exit {facts[-1].get('rc')} {facts[-1].get('stop') or ''}")
    for f in facts:
        if f.get("stop") not in (None, "duration"):
            notes.append(f"stopped: {f['stop']}")
        if f.get("rc") not in (0, 4, 5, None):
            notes.append(f"exit {f['rc']}")
    if any(r.get("errors") for r in without + with_):
        notes.append("non-2xx answers")
    events = median([f["events"] / f["window_s"] for f in facts
                     if isinstance(f.get("events"), (int, float)) and f.get("window_s")])
    rng = f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "—"
    # what the report says the server paid (% of the CPUs), against what the load lost (%): on a
    # server that keeps every CPU busy the two are the same figure
    server_pct = median([f.get("server_pct") for f in facts])
    loss_pct = (1 - median(ratios)) * 100 if ratios else float("nan")
    agree = server_pct / loss_pct if loss_pct == loss_pct and loss_pct >= 1 and server_pct == server_pct else float("nan")
    if ratios:
        ratios_of.setdefault(recipe, []).append((median(ratios), median([f.get("bpf_pct") for f in facts]),
                                                server_pct))
    return (f"| {server.name} | {label} ({unit}) | {recipe} `{target_label}` | "
            f"{fmt(median([r['tput'] for r in without]), ',.0f')} | {fmt(median([r['tput'] for r in with_]), ',.0f')} | "
            f"{fmt(median(ratios), '.2f')} [{rng}] | {lat_pair(without, with_, 'p50')} | "
            f"{lat_pair(without, with_, 'p99')} | {fmt(median([f.get('bpf_pct') for f in facts]), '.2f')} | "
            f"{fmt(server_pct, '.2f')} | {fmt(agree, '.2f')} | "
            f"{fmt(events, ',.0f')} | {fmt(median([f.get('cpu_s') for f in facts]), '.2f')} | "
            f"{'; '.join(sorted(set(notes)))} |")


def summary(ratios_of, say):
    """Per recipe, over the loads it ran under: the rows' median ratios, and the report's BPF CPU."""
    say("\n### Per recipe, over every server and load above\n")
    say("| recipe | loads | throughput ratio: median of the rows [lowest–highest row] | "
        "BPF CPU % the reports gave [lowest–highest] | server cost % the reports gave [lowest–highest] |")
    say("|---|---:|---:|---:|---:|")
    for recipe in ALL_RECIPES:
        rows = ratios_of.get(recipe)
        if not rows:
            continue
        r = [x for x, _, _ in rows]
        b = [y for _, y, _ in rows if isinstance(y, (int, float)) and y == y]
        c = [z for _, _, z in rows if isinstance(z, (int, float)) and z == z]
        brange = f" [{min(b):.2f}–{max(b):.2f}]" if b else ""
        crange = f" [{min(c):.2f}–{max(c):.2f}]" if c else ""
        say(f"| {recipe} | {len(rows)} | {median(r):.2f} [{min(r):.2f}–{max(r):.2f}] | "
            f"{fmt(median(b), '.2f')}{brange} | {fmt(median(c), '.2f')}{crange} |")


def watch_part(tmp, say, progress):
    """diagnose watch --comm postgres at its default schedule under pgbench -S."""
    with B.PgCluster(tmp) as pg:
        load = pgbench_load(pg, tmp, True, sampling=0.01)
        half = max(1, WATCH_S // 2)
        progress(f"watch: pgbench -S {half} s without, {WATCH_S} s with watch, {half} s without")
        w1 = load(half)
        state, textfile = os.path.join(tmp, "watch-state"), os.path.join(tmp, "watch.prom")
        errf = open(os.path.join(tmp, "watch.err"), "w")
        w = spawn([DIAG, "watch", "--comm", "postgres", "--recipes", RECIPES, "--state-dir", state,
                   "--listen", "none", "--textfile", textfile], stdout=subprocess.DEVNULL, stderr=errf)
        try:
            with_ = load(WATCH_S)
            w.send_signal(signal.SIGTERM)
            _, status, ru = os.wait4(w.pid, 0)
            w.returncode = os.waitstatus_to_exitcode(status)
        finally:
            stop(w, signal.SIGTERM, grace=30.0)
            errf.close()
        w2 = load(half)
    runs = []
    try:
        runs = json.load(open(os.path.join(state, "index.json"))).get("runs", [])
    except (OSError, ValueError):
        pass
    cpu = {}
    try:
        for kind, v in re.findall(r'^diagnose_watch_cpu_seconds_total\{kind="(\w+)"\}\s+([0-9.eE+-]+)',
                                  open(textfile).read(), re.M):
            cpu[kind] = float(v)
    except OSError:
        pass
    recipes = {}
    for r in runs:
        recipes[r.get("recipe")] = recipes.get(r.get("recipe"), 0) + 1
    base = (w1["tput"] + w2["tput"]) / 2
    say(f"\n### diagnose watch at its default schedule ({WATCH_S} s)\n")
    say("`diagnose watch --comm postgres` (triage every 60 s, follow-ups when a verdict asks) while "
        f"pgbench -S (2 clients) ran {WATCH_S} s; without it: {half} s before and {half} s after "
        "(their mean). Latency from 1% of transactions (--sampling-rate 0.01).\n")
    say("| load (tps) | without (before, after) | with watch | ratio | p50 ms without → with | "
        "p99 ms without → with | watch's runs | watch's CPU (its metrics: user space + BPF) | "
        "watch + runs CPU (wait4) |")
    say("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    runs_txt = ", ".join(f"{n} {k}" for k, n in sorted(recipes.items())) or "none read"
    cpu_txt = (f"{cpu.get('user_space', float('nan')):.2f} + {cpu.get('bpf', float('nan')):.2f} s "
               f"({100 * (cpu.get('user_space', 0) + cpu.get('bpf', 0)) / WATCH_S:.2f}% of a CPU)")
    p50 = f"{(w1['p50'] + w2['p50']) / 2:.2f} → {with_['p50']:.2f}"
    p99 = f"{(w1['p99'] + w2['p99']) / 2:.2f} → {with_['p99']:.2f}"
    say(f"| pgbench -S | {base:,.0f} ({w1['tput']:,.0f}, {w2['tput']:,.0f}) | {with_['tput']:,.0f} | "
        f"{with_['tput'] / base:.2f} | {p50} | {p99} | {runs_txt} (exit {w.returncode}) | {cpu_txt} | "
        f"{ru.ru_utime + ru.ru_stime:.2f} s |")


def check_machine(servers):
    """Fails with what is missing, as Debian packages, before anything starts."""
    if os.geteuid() != 0:
        sys.exit("bench-servers: run as root (it loads BPF programs and starts servers as their users)")
    if not os.access(DIAG, os.X_OK):
        sys.exit(f"bench-servers: {DIAG} missing: run make first")
    need = [("bpftool", shutil.which("bpftool"), "bpftool")]
    if "postgres" in servers or "watch" in servers:
        need += [(p, None, p) for p in B.PgCluster.missing()]
    if "redis" in servers:
        need += [(REDIS_SERVER, REDIS_SERVER, "redis-server"), (REDIS_BENCH, REDIS_BENCH, "redis-tools")]
    if "nginx" in servers:
        need += [(NGINX, NGINX, "nginx")]
    if "nginx" in servers or "python" in servers:
        need += [(WRK, WRK, "wrk"), (PY, PY, "python3")]
    missing = sorted({pkg for _, path, pkg in need if not (path and os.access(path, os.X_OK))})
    if missing:
        sys.exit(f"bench-servers: missing Debian packages: {' '.join(missing)} "
                 f"(make deps installs them; or apt-get install {' '.join(missing)})")
    if "nginx" in servers:
        try:
            import pwd
            pwd.getpwnam("www-data")
        except KeyError:
            sys.exit("bench-servers: no www-data user for nginx's worker (Debian's base-passwd has one)")


def selection():
    servers = [s.strip() for s in os.environ.get("BENCH_SERVERS", ",".join(ALL_SERVERS)).split(",") if s.strip()]
    recipes = [r.strip() for r in os.environ.get("BENCH_RECIPES", ",".join(ALL_RECIPES)).split(",") if r.strip()]
    for s in servers:
        if s not in ALL_SERVERS:
            sys.exit(f"bench-servers: BENCH_SERVERS: unknown {s!r} (of {','.join(ALL_SERVERS)})")
    for r in recipes:
        if r not in ALL_RECIPES:
            sys.exit(f"bench-servers: BENCH_RECIPES: unknown {r!r} (of {','.join(ALL_RECIPES)})")
    if WATCH_S <= 0 and "watch" in servers:
        servers.remove("watch")
    return servers, recipes


def estimate_s(servers, recipes):
    loads = {"postgres": 2, "redis": 4, "nginx": 2, "python": 1}
    total = 0
    for s in servers:
        for r in recipes:
            if r == "postgres-slow" and s != "postgres":
                continue
            # per alternation: the window with diagnose, the window less a second without, and the
            # runs' start, attach, detach and report (seconds for uprobes: measured 2026-12-07)
            total += loads.get(s, 0) * ALTS * (2 * window_of(r) + 7)
    return total + (2 * WATCH_S + 30 if "watch" in servers else 0)


def part_servers(say):
    """Runs the selected servers and recipes; writes BUILD/bench/servers.md too."""
    servers, recipes = selection()
    check_machine(servers)
    lines = []

    def out(s=""):
        say(s)
        lines.append(s)

    def progress(s):
        print(s, file=sys.stderr, flush=True)

    cpu = "?"
    for ln in open("/proc/cpuinfo"):
        if ln.startswith("model name"):
            cpu = ln.split(":", 1)[1].strip()
            break
    out(f"\n## What a run costs a server — {time.strftime('%Y-%m-%d %H:%M')}, kernel {platform.release()}, "
        f"{os.cpu_count()} CPUs ({cpu}), load average {os.getloadavg()[0]:.2f} at the start\n")
    out(f"Settings: BENCH_SERVER_ALTS={ALTS}, BENCH_WATCH_S={WATCH_S}, BENCH_SERVERS={','.join(servers)}, "
        f"BENCH_RECIPES={','.join(recipes)}.")
    progress(f"bench-servers: about {estimate_s(servers, recipes) / 60:.0f} minutes")
    out("Each recipe ran with its default window; the load ran once its probes were attached, for the "
        "window less a second, alternated with the same load without diagnose. Ratio: with/without "
        "of each alternation's pair, median [min–max]. BPF CPU: the report's overhead.bpf_cpu_pct "
        "(% of all CPUs over its window); server cost: its overhead.server.server_cpu_pct (BPF, the "
        "hits' traps and slow paths, diagnose's own CPU); ÷ loss: that cost over the throughput lost "
        "(%), where the loss is 1% or more (1: the report says what the server lost); events/s: its "
        "overhead.events over the window; diagnose CPU: its process's user + system seconds (wait4).\n")
    out("| server | load | recipe `target` | without | with | ratio [min–max] | p50 ms without → with | "
        "p99 ms without → with | BPF CPU % (report) | server cost % (report) | ÷ loss | events/s | "
        "diagnose CPU s | notes |")
    out("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    started = time.monotonic()
    ratios_of = {}
    tmp = tempfile.mkdtemp(prefix="diagnose-bench-servers.")
    os.chmod(tmp, 0o755)
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        for name in servers:
            if name == "watch":
                continue
            sub = os.path.join(tmp, name)
            os.makedirs(sub)
            os.chmod(sub, 0o755)
            progress(f"{name}: starting")
            with SERVERS[name](sub) as server:
                for label, unit, load in server.loads:
                    for recipe in recipes:
                        if recipe == "postgres-slow" and name != "postgres":
                            continue
                        out(measure_row(server, label, unit, load, recipe, sub, progress, ratios_of))
        if ratios_of:
            summary(ratios_of, out)
        if "watch" in servers:
            sub = os.path.join(tmp, "watch")
            os.makedirs(sub)
            os.chmod(sub, 0o755)
            watch_part(sub, out, progress)
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
        for s, h in old.items():
            signal.signal(s, h)
    out(f"\n(bench-servers took {(time.monotonic() - started) / 60:.1f} minutes.)")
    os.makedirs(os.path.join(BUILD, "bench"), exist_ok=True)
    path = os.path.join(BUILD, "bench", "servers.md")
    with open(path, "w") as f:
        f.write("\n".join(lines).lstrip("\n") + "\n")
    progress(f"written to {os.path.relpath(path, ROOT)}")


def main():
    part_servers(lambda s="": print(s, flush=True))


if __name__ == "__main__":
    main()
