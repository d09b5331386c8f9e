# diagnose watch as a team runs it beside a service, on the real kernel:
# (a) a CPU burner that starts burning while watch looks: triage every 4 s; the first runs see it
#     idle; the first triage that sees it cpu-bound has its follow-up (high-cpu) run right after
#     it, before the next scheduled run, and that report names compute_checksum; later cpu-bound
#     runs do not follow up again (--follow-every): counted as rate_limited; the recipes' key
#     figures are exported (high-cpu's hottest function share, triage's CPU use). A real Prometheus
#     (Debian's package) scrapes the endpoint meanwhile and its query API returns the verdict
#     gauge; node_exporter's textfile collector reads the --textfile; `diagnose diff` reads two
#     reports of the history.
# (b) the healthy control: the same process idle all along: no warning, no follow-up; --keep 2
#     keeps the last two runs of three, and the index says so.
# (c) the budget: --max-cpu-pct 0.5 over a 60 s window (0.3 s), 16 runs of ~0.05-0.3 s of CPU each
#     (at 2%, 1.2 s, all 16 fitted once runs got cheaper): runs are skipped before the budget is spent, and the CPU measured from outside (watch and its runs, user + system, by GNU time,
#     plus the BPF time their reports measured) stays within it.
# (d) SIGTERM while a run collects: watch stops it (its report kept, stop_reason signal), exits 0,
#     and nothing stays attached.
# (e) usage: bad intervals, a state directory others may write to, watch's flags on a single run.
# (f) a leak that starts later: mem_leaker churns (a 1 ms paced loop: sleeps by design) and begins
#     losing 2 MiB/s after 7 s; the first triage finds it quiet (its sleeps are info, no follow-up),
#     the first that sees RSS grow has memory-growth run right after it, and that report calls it
#     a leak in remember_request.
# (g) its control: the same churn, no leak: no warning, no follow-up; every 10 minutes, and each
#     SIGHUP runs the next run now.
# (h) production: nothing approved, watch's first run is refused (exit 3, audited) before anything
#     loads; with the chain approved, the follow-up runs and every run is audited.
# (i) a target whose comm is not UTF-8, with quotes, a backslash and a carriage return: the scrape
#     (taken by the real Prometheus), the textfile (read by node_exporter) and watch's log are
#     valid UTF-8 without controls, the bytes shown as "\xNN".
# (j) a dozen idle connections to the endpoint, more than its slots: watch does not spin (its CPU
#     stays near zero), a scrape behind them is answered, the endpoint's CPU is counted apart.
# (k) the port taken first by nobody: watch exits 1 naming uid 65534; socket activation (descriptor
#     3, LISTEN_PID, LISTEN_FDS, as systemd passes them) serves the scrape.
# (l) SIGTERM while the run's process is SIGSTOPped (it cannot act on the SIGTERM watch passes on):
#     watch SIGKILLs it after its grace period and exits 0, nothing attached.
. "$(dirname "$0")/lib.sh"
command -v prometheus > /dev/null || skip "prometheus (Debian's package) is not installed: make deps"
command -v prometheus-node-exporter > /dev/null || skip "prometheus-node-exporter is not installed: make deps"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_get() { python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }
# http_bytes URL: the body as it came, byte for byte
http_bytes() { python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=5).read())' "$1"; }
index() { json "$1/index.json" "$2"; }
# quiet_history LABEL: every run kept in $S is a control's (control_quiet: exit 0, or only
# cpu-starved on this shared machine), and none was followed up
quiet_history() {
	local run rc_run summary
	summary=$(index "$S" '[(x["seq"], x["recipe"], x.get("worst"), x.get("followed")) for x in r["runs"]]')
	for run in $(index "$S" '" ".join(x["dir"] for x in r["runs"])'); do
		rc_run=$(json "$S/$run/summary.json" 'r["exit_code"]')
		control_quiet "$S/$run/report.json" "$rc_run" ||
			fail "$1: $run: $(json "$S/$run/report.json" '[(v["id"], v["severity"]) for v in r["verdicts"]]')"
	done
	index "$S" 'all(x["recipe"] == "triage" and not x.get("followed") for x in r["runs"])' | grep -q True ||
		grep -q 'cpu-starved' "$W/log" || fail "$1: a follow-up ran: $summary"
}

# (a) the fault starts while watch looks
start "$WL/cpu_burner" 0 64 7
W="$TMP/a"
mkdir -m 700 "$W"
mkdir -m 755 "$TMP/textfile"
MPORT=$(free_port)
"$DIAG" watch --pid "$PID" --recipe triage --duration 2 --every 4s --runs 5 --follow-every 10m \
	--max-cpu-pct 50 --budget-window 60s --state-dir "$W/state" --listen "127.0.0.1:$MPORT" \
	--textfile "$TMP/textfile/diagnose.prom" 2> "$W/log" &
WPID=$!
PIDS="$PIDS $WPID"
# a real Prometheus scraping it every second
PPORT=$(free_port)
cat > "$TMP/prometheus.yml" <<EOC
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: diagnose
    static_configs: [ { targets: ['127.0.0.1:$MPORT'] } ]
EOC
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom-data" \
	--web.listen-address="127.0.0.1:$PPORT" > "$TMP/prometheus.log" 2>&1 &
PROM=$!
PIDS="$PIDS $PROM"
# cpu-bound, or cpu-starved when this shared machine's other jobs make the burner wait for a CPU
# (t_triage.sh): either names high-cpu
q='diagnose_verdict%7Bverdict%3D~%22cpu-bound%7Ccpu-starved%22%2Crecipe%3D%22triage%22%7D'
seen=""
for i in $(seq 120); do
	kill -0 "$WPID" 2> /dev/null || break
	if http_get "http://127.0.0.1:$PPORT/api/v1/query?query=$q" 2> /dev/null > "$TMP/q.json" &&
		[ "$(json "$TMP/q.json" 'len(r["data"]["result"])')" -ge 1 ]; then
		seen=yes
		break
	fi
	sleep 0.5
done
http_get "http://127.0.0.1:$MPORT/metrics" > "$TMP/scrape.txt" 2> /dev/null
wait "$WPID"
rc=$?
[ "$rc" = 0 ] || fail "watch (a): exit $rc: $(cat "$W/log")"
[ -n "$seen" ] || fail "Prometheus's query API never returned the cpu-bound (or cpu-starved) verdict gauge: $(cat "$TMP/q.json" 2>/dev/null); watch: $(cat "$W/log"); prometheus: $(tail -5 "$TMP/prometheus.log")"
grep -q '^diagnose_watch_runs_total{recipe="triage",outcome="warning"}' "$TMP/scrape.txt" ||
	fail "the endpoint lacks the runs counter: $(head -20 "$TMP/scrape.txt")"
kill "$PROM" 2> /dev/null
S="$W/state"
summary=$(index "$S" '[(x["seq"], x["recipe"], x.get("worst", {}).get("id"), x.get("followed", {}).get("verdict")) for x in r["runs"]]')
# the first run saw an idle process
index "$S" 'r["runs"][0]["recipe"] == "triage" and r["runs"][0].get("worst", {}).get("severity") in (None, "ok", "info")' | grep -q True ||
	fail "the first run (the burner still idle) did not find it quiet: $summary"
# exactly one follow-up, high-cpu on cpu-bound (or cpu-starved), right after its triage
follows=$(index "$S" '[x for x in r["runs"] if x.get("followed")]')
[ "$(index "$S" 'len([x for x in r["runs"] if x.get("followed")])')" = 1 ] || fail "want one follow-up: $summary"
fseq=$(index "$S" '[x for x in r["runs"] if x.get("followed")][0]["seq"]')
check_follow=$(index "$S" "[(f['recipe'], f['followed']['verdict'] in ('cpu-bound', 'cpu-starved'), f['followed']['seq'] == f['seq'] - 1, f['time'] - t['time'] <= 8) for f in r['runs'] for t in r['runs'] if f['seq'] == $fseq and t['seq'] == f['followed']['seq']]")
[ "$check_follow" = "[('high-cpu', True, True, True)]" ] ||
	fail "the follow-up is not high-cpu on cpu-bound right after its triage: $check_follow; $summary"
fdir="$S/$(index "$S" "[x['dir'] for x in r['runs'] if x['seq'] == $fseq][0]")"
json "$fdir/report.json" '" ".join(v["title"] + " " + " ".join(v["evidence"]) for v in r["verdicts"])' | grep -q compute_checksum ||
	fail "the follow-up's verdicts do not name compute_checksum: $(json "$fdir/report.json" '[v["title"] for v in r["verdicts"]]')"
[ -s "$fdir/report.txt" ] && [ -s "$fdir/stacks.folded" ] && gzip -t "$fdir/profile.pb.gz" ||
	fail "the follow-up's text report, folded stacks or pprof profile is missing: $(ls "$fdir")"
grep -q 'main;serve_requests;handle_request;compute_checksum' "$fdir/stacks.folded" || fail "folded stacks lack the call path"
# later cpu-bound triage runs did not follow up again
later=$(index "$S" "len([x for x in r['runs'] if x['recipe'] == 'triage' and x['seq'] > $fseq and x.get('worst', {}).get('id') == [y for y in r['runs'] if y['seq'] == $fseq][0]['followed']['verdict']])")
if [ "$later" -ge 1 ]; then
	grep -q '^diagnose_watch_runs_skipped_total{reason="rate_limited"} [1-9]' "$TMP/textfile/diagnose.prom" ||
		fail "later runs with the same verdict were not counted as rate-limited: $(grep skipped "$TMP/textfile/diagnose.prom")"
fi
# the recipes' key figures: high-cpu's hottest function holds most of the samples
python3 - "$TMP/textfile/diagnose.prom" <<'EOP' || fail "textfile: the recipes' key figures: $(grep -v '^#' "$TMP/textfile/diagnose.prom" | grep -v watch_)"
import re, sys
m = {l.split(' ')[0]: float(l.split(' ')[1]) for l in open(sys.argv[1]) if l[0] != '#'}
hot = m.get('diagnose_cpu_hottest_function_ratio{recipe="high-cpu",target="process:cpu_burner"}', 0)
cpu = m.get('diagnose_cpu_usage_ratio{recipe="triage",target="process:cpu_burner"}', 0)
sys.exit(0 if hot >= 0.5 and cpu >= 0.3 else 1)
EOP
grep -q '^diagnose_watch_follow_ups_total 1$' "$TMP/textfile/diagnose.prom" || fail "textfile: follow-ups: $(grep follow_ups "$TMP/textfile/diagnose.prom")"
# node_exporter's textfile collector reads the file
NPORT=$(free_port)
prometheus-node-exporter --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$TMP/textfile" --web.listen-address="127.0.0.1:$NPORT" > "$TMP/node.log" 2>&1 &
NODE=$!
PIDS="$PIDS $NODE"
got=""
for i in $(seq 40); do
	http_get "http://127.0.0.1:$NPORT/metrics" > "$TMP/node.txt" 2> /dev/null &&
		grep -q '^diagnose_worst_severity{recipe="high-cpu",target="process:cpu_burner"}' "$TMP/node.txt" && { got=yes; break; }
	sleep 0.25
done
[ -n "$got" ] || fail "node_exporter's textfile collector did not serve diagnose's metrics: $(grep -i -m3 'diagnose\|error' "$TMP/node.txt" "$TMP/node.log")"
grep -q 'node_textfile_scrape_error 0' "$TMP/node.txt" || fail "node_exporter could not read the textfile: $(grep textfile "$TMP/node.txt")"
kill "$NODE" 2> /dev/null
# two reports of the history, compared
first=$(index "$S" 'r["runs"][0]["dir"]')
last=$(index "$S" '[x["dir"] for x in r["runs"] if x["recipe"] == "triage"][-1]')
"$DIAG" diff "$S/$first/report.json" "$S/$last/report.json" > "$TMP/diff.txt" 2>&1 || fail "diff of two watch reports: $(cat "$TMP/diff.txt")"
assert_released "watch (a)"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (b) the healthy control: the same burner, idle for the whole watch
start "$WL/cpu_burner" 0 64 600
W="$TMP/b"
mkdir -m 700 "$W"
"$DIAG" watch --pid "$PID" --recipe triage --duration 2 --every 1s --runs 3 --keep 2 \
	--max-cpu-pct 50 --budget-window 60s --state-dir "$W/state" --listen none 2> "$W/log"
rc=$?
[ "$rc" = 0 ] || fail "watch (b): exit $rc: $(cat "$W/log")"
S="$W/state"
summary=$(index "$S" '[(x["seq"], x["recipe"], x.get("worst"), x.get("followed")) for x in r["runs"]]')
[ "$(index "$S" '[x["seq"] for x in r["runs"]]')" = "[2, 3]" ] || fail "control: --keep 2 of 3 runs: $summary"
[ "$(ls "$S/runs" | wc -l)" = 2 ] || fail "control: runs/ holds $(ls "$S/runs")"
quiet_history "control"
assert_released "watch (b)"

# (c) the budget holds, measured from outside
W="$TMP/c"
mkdir -m 700 "$W"
/usr/bin/time -f '%U %S' -o "$W/time" "$DIAG" watch --pid "$PID" --recipe high-cpu --duration 1 \
	--every 1s --runs 16 --max-cpu-pct 0.5 --budget-window 60s --state-dir "$W/state" --listen none 2> "$W/log"
rc=$?
[ "$rc" = 0 ] || fail "watch (c): exit $rc: $(cat "$W/log")"
S="$W/state"
ran=$(index "$S" 'len(r["runs"])')
skipped=$(grep -c 'skipped: over the CPU budget' "$W/log")
[ "$ran" -ge 1 ] && [ "$skipped" -ge 1 ] && [ $((ran + skipped)) = 16 ] || fail "budget: $ran ran, $skipped skipped of 16: $(cat "$W/log")"
bpf=$(python3 -c 'import json, sys; print(sum(json.load(open(f))["overhead"].get("bpf_cpu_s") or 0 for f in sys.argv[1:]))' "$S"/runs/*/report.json)
total=$(python3 -c 'import sys; u, s = open(sys.argv[1]).read().split()[-2:]; print(float(u) + float(s) + float(sys.argv[2]))' "$W/time" "$bpf")
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 0.3 else 1)' "$total" ||
	fail "budget: watch and its runs used $total s of CPU (BPF $bpf s), over its 0.3 s: $(cat "$W/log")"
echo "note: budget 0.3 s: $ran run(s), $skipped skipped, $total s of CPU measured" >&2
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (d) SIGTERM while a run collects
start "$WL/cpu_burner"
W="$TMP/d"
mkdir -m 700 "$W"
"$DIAG" watch --pid "$PID" --recipe high-cpu --duration 30 --every 60s --max-cpu-pct 50 \
	--state-dir "$W/state" --listen none 2> "$W/log" &
WPID=$!
PIDS="$PIDS $WPID"
for i in $(seq 100); do [ "$(our_links)" -gt 0 ] && break; sleep 0.1; done
[ "$(our_links)" -gt 0 ] || fail "watch (d): its run never attached: $(cat "$W/log")"
sleep 1
kill -TERM "$WPID"
wait "$WPID"
rc=$?
[ "$rc" = 0 ] || fail "watch (d): SIGTERM: exit $rc: $(cat "$W/log")"
S="$W/state"
rep="$S/$(index "$S" 'r["runs"][-1]["dir"]')/report.json"
[ "$(json "$rep" 'r["stop_reason"]')" = signal ] || fail "watch (d): the run stopped by SIGTERM: stop_reason $(json "$rep" 'r["stop_reason"]')"
[ "$(json "$rep" 'r["results"]["profile"]["samples"] > 0')" = True ] || fail "watch (d): no partial results"
assert_released "watch (d): SIGTERM"

# (e) usage
"$DIAG" watch --every 0 --state-dir "$TMP/e" 2> "$TMP/e.err"; rc=$?
[ "$rc" = 2 ] && grep -q -- '--every' "$TMP/e.err" || fail "--every 0: exit $rc: $(cat "$TMP/e.err")"
"$DIAG" watch --listen 'localhost:9464' --state-dir "$TMP/e" 2> "$TMP/e.err"; rc=$?
[ "$rc" = 2 ] && grep -q 'no names are looked up' "$TMP/e.err" || fail "--listen localhost: exit $rc: $(cat "$TMP/e.err")"
mkdir -m 777 "$TMP/open"
"$DIAG" watch --state-dir "$TMP/open" --listen none 2> "$TMP/e.err"; rc=$?
[ "$rc" = 2 ] && grep -q 'others may write' "$TMP/e.err" || fail "a world-writable state dir: exit $rc: $(cat "$TMP/e.err")"
"$DIAG" high-cpu --pid "$PID" --every 5s 2> "$TMP/e.err"; rc=$?
[ "$rc" = 2 ] && grep -q 'an option of watch' "$TMP/e.err" || fail "--every on a run: exit $rc: $(cat "$TMP/e.err")"
# (f) a leak that starts while watch looks
start "$WL/mem_leaker" leak 2048 7
W="$TMP/f"
mkdir -m 700 "$W"
"$DIAG" watch --pid "$PID" --recipe triage --duration 2 --every 4s --runs 4 --follow-every 10m \
	--max-cpu-pct 50 --budget-window 60s --state-dir "$W/state" --listen none 2> "$W/log"
rc=$?
[ "$rc" = 0 ] || fail "watch (f): exit $rc: $(cat "$W/log")"
S="$W/state"
summary=$(index "$S" '[(x["seq"], x["recipe"], x.get("worst", {}).get("id"), x.get("followed", {}).get("verdict")) for x in r["runs"]]')
index "$S" 'r["runs"][0]["recipe"] == "triage" and r["runs"][0].get("worst", {}).get("severity") in (None, "ok", "info")' | grep -q True ||
	fail "leak: the first run (before the leak) was not quiet: $summary"
[ "$(index "$S" 'len([x for x in r["runs"] if x.get("followed")])')" = 1 ] || fail "leak: want one follow-up: $summary"
check_follow=$(index "$S" "[(f['recipe'], f['followed']['verdict'], f['followed']['seq'] == f['seq'] - 1) for f in r['runs'] if f.get('followed')]")
[ "$check_follow" = "[('memory-growth', 'memory-growing', True)]" ] ||
	fail "leak: the follow-up is not memory-growth on memory-growing right after its triage: $check_follow; $summary"
fdir="$S/$(index "$S" "[x['dir'] for x in r['runs'] if x.get('followed')][0]")"
json "$fdir/report.json" '[v["id"] for v in r["verdicts"] if v["id"] == "leak" and "remember_request()" in v["title"]]' | grep -q leak ||
	fail "leak: the follow-up does not call it a leak in remember_request: $(json "$fdir/report.json" '[(v["id"], v["title"]) for v in r["verdicts"]]')"
assert_released "watch (f)"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (g) its control: the same churn, no leak
start "$WL/mem_leaker" churn
W="$TMP/g"
mkdir -m 700 "$W"
# every 10 minutes: each run after the first comes of a SIGHUP (run now), sent once the run
# before it is indexed
"$DIAG" watch --pid "$PID" --recipe triage --duration 2 --every 10m --runs 3 --follow-every 10m \
	--max-cpu-pct 50 --budget-window 60s --state-dir "$W/state" --listen none 2> "$W/log" &
WPID=$!
PIDS="$PIDS $WPID"
S="$W/state"
for n in 1 2; do
	for i in $(seq 150); do
		[ -s "$S/index.json" ] && [ "$(index "$S" 'len(r["runs"])')" -ge "$n" ] && break
		sleep 0.1
	done
	kill -HUP "$WPID" 2> /dev/null
done
for i in $(seq 300); do kill -0 "$WPID" 2> /dev/null || break; sleep 0.1; done
kill -0 "$WPID" 2> /dev/null && fail "watch (g): SIGHUP did not run the next run now: $(cat "$W/log")"
wait "$WPID"
rc=$?
[ "$rc" = 0 ] || fail "watch (g): exit $rc: $(cat "$W/log")"
[ "$(index "$S" 'len(r["runs"])')" = 3 ] || fail "watch (g): want 3 runs: $(cat "$W/log")"
quiet_history "churn control"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (h) production: approved recipes only, every run audited
start "$WL/cpu_burner" 60
trust_root "$TMP/h"
printf 'mode: production\naudit_file: %s\n' "$DIAGNOSE_AUDIT_FILE" > "$TMP/policy.yaml"
W="$TMP/hw"
mkdir -m 700 "$W"
DIAGNOSE_POLICY="$TMP/policy.yaml" "$PDIAG" watch --pid "$PID" --recipes "$P/recipes" --recipe triage \
	--duration 2 --every 2s --runs 2 --max-cpu-pct 50 --state-dir "$W/s1" --listen none 2> "$W/log1"
rc=$?
[ "$rc" = 3 ] && grep -q 'triage #1: diagnose: production mode refuses every recipe: .*no approvals lock' "$W/log1" ||
	fail "production, nothing approved: exit $rc, want 3 and the reason in watch's log: $(cat "$W/log1")"
last=$(python3 -c 'import json, sys; r = json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(r["action"], r["recipe"]["symptom"])' "$DIAGNOSE_AUDIT_FILE")
[ "$last" = "refused triage" ] || fail "production: the refusal is not audited: $last"
[ "$(our_links)" = 0 ] || fail "production: a refused run attached probes"
"$PDIAG" approve triage high-cpu latency memory-growth io-saturation network-errors postgres-slow \
	--recipes "$P/recipes" --by e2e > /dev/null || fail "approve the chain"
lines=$(wc -l < "$DIAGNOSE_AUDIT_FILE")
DIAGNOSE_POLICY="$TMP/policy.yaml" "$PDIAG" watch --pid "$PID" --recipes "$P/recipes" --recipe triage \
	--duration 2 --every 2s --runs 1 --max-cpu-pct 50 --state-dir "$W/s2" --listen none 2> "$W/log2"
rc=$?
[ "$rc" = 0 ] || fail "production, approved: exit $rc: $(cat "$W/log2")"
runs=$(tail -n +$((lines + 1)) "$DIAGNOSE_AUDIT_FILE" | python3 -c 'import json, sys; print(" ".join("%s:%s" % (json.loads(l)["action"], json.loads(l)["recipe"]["symptom"]) for l in sys.stdin))')
# cpu-bound or cpu-starved: either follows up with high-cpu
[ "$runs" = "start:triage run:triage start:high-cpu run:high-cpu" ] || fail "production: audited runs: $runs (want triage, then its follow-up high-cpu): $(cat "$W/log2")"
assert_released "watch (h)"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (i) a target whose comm is not UTF-8 (prctl PR_SET_NAME takes any 15 bytes): quotes, a
#     backslash, \xff\xfe, a carriage return. The target label, the scrape, the textfile and
#     watch's log are valid UTF-8 without a control (the bytes as "\xNN", as the text report shows
#     them); the real Prometheus takes the scrape (it refuses one with an invalid UTF-8 label value)
#     and returns the label as that text; node_exporter's textfile collector reads the file.
cat > "$TMP/comm.py" <<'EOP'
import ctypes, time
ctypes.CDLL(None).prctl(15, b'x"}\xff\xfe\r{a="\\', 0, 0, 0)
time.sleep(600)
EOP
python3 "$TMP/comm.py" &
PID=$!
PIDS="$PIDS $PID"
for i in $(seq 50); do grep -q '^x"}' "/proc/$PID/comm" 2> /dev/null && break; sleep 0.1; done
W="$TMP/i"
mkdir -m 700 "$W" "$W/textfile"
chmod 755 "$W/textfile"
MPORT=$(free_port)
"$DIAG" watch --pid "$PID" --recipe triage --duration 1 --every 10m --runs 2 --max-cpu-pct 50 \
	--budget-window 60s --state-dir "$W/state" --listen "127.0.0.1:$MPORT" \
	--textfile "$W/textfile/diagnose.prom" 2> "$W/log" &
WPID=$!
PIDS="$PIDS $WPID"
PPORT=$(free_port)
cat > "$W/prometheus.yml" <<EOC
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: diagnose
    static_configs: [ { targets: ['127.0.0.1:$MPORT'] } ]
EOC
prometheus --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/prom-data" \
	--web.listen-address="127.0.0.1:$PPORT" > "$W/prometheus.log" 2>&1 &
PROM=$!
PIDS="$PIDS $PROM"
NPORT=$(free_port)
prometheus-node-exporter --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$W/textfile" --web.listen-address="127.0.0.1:$NPORT" > "$W/node.log" 2>&1 &
NODE=$!
PIDS="$PIDS $NODE"
want='process:x"}\xff\xfe\x0d{a="\'
q='diagnose_worst_severity%7Brecipe%3D%22triage%22%7D'
got=""
for i in $(seq 120); do
	kill -0 "$WPID" 2> /dev/null || break
	if http_get "http://127.0.0.1:$PPORT/api/v1/query?query=$q" 2> /dev/null > "$W/q.json" &&
		[ "$(json "$W/q.json" 'len(r["data"]["result"])')" -ge 1 ]; then
		got=$(json "$W/q.json" 'r["data"]["result"][0]["metric"]["target"]')
		break
	fi
	sleep 0.5
done
http_get "http://127.0.0.1:$PPORT/api/v1/targets" > "$W/targets.json" 2> /dev/null
[ "$got" = "$want" ] || fail "comm not UTF-8: Prometheus's target label is '$got', want '$want'; its scrape: $(json "$W/targets.json" '[t.get("lastError") for t in r["data"]["activeTargets"]]' 2> /dev/null); watch: $(head -c 600 "$W/log")"
http_bytes "http://127.0.0.1:$MPORT/metrics" > "$W/scrape.txt" || fail "comm not UTF-8: no scrape"
node=""
for i in $(seq 40); do
	http_bytes "http://127.0.0.1:$NPORT/metrics" > "$W/node.txt" 2> /dev/null &&
		grep -q '^diagnose_worst_severity{' "$W/node.txt" && { node=yes; break; }
	sleep 0.25
done
[ -n "$node" ] && grep -q 'node_textfile_scrape_error 0' "$W/node.txt" ||
	fail "comm not UTF-8: node_exporter could not read the textfile: $(grep -i -m3 'textfile\|error' "$W/node.txt" "$W/node.log")"
kill -TERM "$WPID"
wait "$WPID"
rc=$?
[ "$rc" = 0 ] || fail "watch (i): exit $rc: $(head -c 600 "$W/log")"
kill "$PROM" "$NODE" 2> /dev/null
# every output byte-wise: valid UTF-8 (iconv), no control but the line ends, the target's bytes as
# "\xNN"; the exposition's label value parses back to that text
for f in "$W/scrape.txt" "$W/textfile/diagnose.prom" "$W/log"; do
	iconv -f UTF-8 -t UTF-8 "$f" > /dev/null 2>&1 || fail "comm not UTF-8: $f is not valid UTF-8: $(grep -a -m2 'x"}' "$f" | od -c | head -5)"
	LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$f" && fail "comm not UTF-8: $f holds a control byte: $(LC_ALL=C grep -a -m2 $'[\x01-\x09\x0b-\x1f\x7f]' "$f" | od -c | head -5)"
done
grep -qF 'on process:x"}\xff\xfe\x0d{a="\;' "$W/log" || fail "comm not UTF-8: watch's log does not name the target as text: $(head -1 "$W/log")"
python3 - "$W/scrape.txt" "$want" <<'EOP' || fail "comm not UTF-8: the scrape's target label does not parse back: $(grep -a -m1 '^diagnose_worst_severity{' "$W/scrape.txt")"
import re, sys
line = [l for l in open(sys.argv[1], encoding='utf-8') if l.startswith('diagnose_worst_severity{')][0]
m = re.fullmatch(r'diagnose_worst_severity\{recipe="triage",target="((?:[^"\\\n]|\\[\\"n])*)"\} [0-3]\n', line)
value = re.sub(r'\\(.)', lambda x: {'n': '\n'}.get(x.group(1), x.group(1)), m.group(1))
sys.exit(0 if value == sys.argv[2] else 1)
EOP
assert_released "watch (i)"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (j) a dozen idle connections to the endpoint (more than its 8 slots; any local user can open
#     them): watch does not spin — its CPU, from /proc/PID/stat, stays near zero over 3 s — a
#     scrape made behind them is answered, and the endpoint's CPU is counted apart from the budget.
start "$WL/cpu_burner" 0 64 600
W="$TMP/j"
mkdir -m 700 "$W"
MPORT=$(free_port)
"$DIAG" watch --pid "$PID" --recipe triage --duration 1 --every 10m --runs 2 --max-cpu-pct 50 \
	--budget-window 60s --state-dir "$W/state" --listen "127.0.0.1:$MPORT" 2> "$W/log" &
WPID=$!
PIDS="$PIDS $WPID"
for i in $(seq 150); do [ -s "$W/state/index.json" ] && break; sleep 0.1; done
[ -s "$W/state/index.json" ] || fail "watch (j): its first run did not end: $(cat "$W/log")"
python3 - "$WPID" "$MPORT" > "$W/flood.txt" 2>&1 <<'EOP' || fail "watch (j): idle connections: $(cat "$W/flood.txt"); watch: $(cat "$W/log")"
import os, socket, sys, time, urllib.request
pid, port = sys.argv[1], int(sys.argv[2])
def cpu():  # watch's own user + system time, its children's not included
    f = open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')
idle = [socket.create_connection(('127.0.0.1', port)) for _ in range(12)]
c0 = cpu()
time.sleep(3)
spent = cpu() - c0
body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=5).read().decode()
print('CPU %.2f s in 3 s with 12 idle connections' % spent)
assert spent < 0.5, 'watch spun'
assert 'diagnose_watch_cpu_seconds_total{kind="endpoint"}' in body, body
EOP
echo "note: $(head -1 "$W/flood.txt")" >&2
kill -TERM "$WPID"
wait "$WPID"
rc=$?
[ "$rc" = 0 ] || fail "watch (j): exit $rc: $(cat "$W/log")"
grep -q 'the metrics endpoint [0-9.]* s more, outside the budget' "$W/log" || fail "watch (j): its last line does not give the endpoint's CPU: $(tail -1 "$W/log")"
assert_released "watch (j)"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (k) the port taken first: nobody (any local user) listens on the endpoint's port before watch
#     starts — watch exits 1 naming the uid of the socket that holds it; then the way to have the
#     port first, systemd's socket activation: a listening socket on descriptor 3 with LISTEN_PID
#     and LISTEN_FDS (as systemd passes it; here python3 binds it and execs watch, the pid staying
#     the same) is served, and --listen's own address is not bound.
# a python3 nobody can run (the one on PATH may be in root's home)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(readlink -f "$(command -v python3)")
SPORT=$(free_port)
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4)
print("up", flush=True); time.sleep(120)' "$SPORT" > "$TMP/squat.out" 2>&1 &
SQUAT=$!
PIDS="$PIDS $SQUAT"
for i in $(seq 50); do grep -q up "$TMP/squat.out" && break; sleep 0.1; done
grep -q up "$TMP/squat.out" || fail "watch (k): nobody's listener did not start: $(cat "$TMP/squat.out")"
W="$TMP/k"
mkdir -m 700 "$W"
"$DIAG" watch --recipe triage --every 10m --runs 1 --state-dir "$W/s1" --listen "127.0.0.1:$SPORT" 2> "$W/squat.log"
rc=$?
[ "$rc" = 1 ] && grep -q "127.0.0.1:$SPORT is taken by a socket of uid 65534: another user may be serving metrics in diagnose's place; see docs/watch.md (socket activation)" "$W/squat.log" ||
	fail "watch (k): a port nobody took first: exit $rc, want 1 and nobody's uid named: $(cat "$W/squat.log")"
kill "$SQUAT" 2> /dev/null
start "$WL/cpu_burner" 0 64 600
APORT=$(free_port)
OPORT=$(free_port)
cat > "$W/activate.py" <<'EOP'
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(('127.0.0.1', int(sys.argv[1])))
s.listen(16)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS='1', LISTEN_FDNAMES='diagnose-watch.socket')
os.execve(sys.argv[2], sys.argv[2:], env)
EOP
python3 "$W/activate.py" "$APORT" "$DIAG" watch --pid "$PID" --recipe triage --duration 1 --every 10m \
	--runs 2 --max-cpu-pct 50 --budget-window 60s --state-dir "$W/s2" --listen "127.0.0.1:$OPORT" 2> "$W/log" &
WPID=$!
PIDS="$PIDS $WPID"
for i in $(seq 150); do [ -s "$W/s2/index.json" ] && break; sleep 0.1; done
http_bytes "http://127.0.0.1:$APORT/metrics" > "$W/scrape.txt" 2> "$W/scrape.err"
grep -q '^diagnose_watch_runs_total{recipe="triage",outcome="ok"} 1$' "$W/scrape.txt" ||
	fail "watch (k): socket activation: the scrape of the socket passed: $(head -c 300 "$W/scrape.txt" "$W/scrape.err"); watch: $(cat "$W/log")"
grep -q "metrics on http://127.0.0.1:$APORT/metrics (socket from systemd)" "$W/log" ||
	fail "watch (k): socket activation: the log does not say so: $(head -1 "$W/log")"
python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)' "$OPORT" 2> /dev/null &&
	fail "watch (k): socket activation: watch also listens on --listen's 127.0.0.1:$OPORT"
kill -TERM "$WPID"
wait "$WPID"
rc=$?
[ "$rc" = 0 ] || fail "watch (k): exit $rc: $(cat "$W/log")"
assert_released "watch (k)"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

# (l) stopping with a run that does not end: the run's process SIGSTOPped, so that it does not act
#     on watch's SIGTERM (as a run stuck in the kernel would not): watch SIGKILLs it once its grace
#     period is over, reaps it and exits 0; nothing stays attached.
start "$WL/cpu_burner"
W="$TMP/l"
mkdir -m 700 "$W"
"$DIAG" watch --pid "$PID" --recipe high-cpu --duration 60 --every 10m --max-cpu-pct 50 \
	--state-dir "$W/state" --listen none 2> "$W/log" &
WPID=$!
PIDS="$PIDS $WPID"
for i in $(seq 100); do [ "$(our_links)" -gt 0 ] && break; sleep 0.1; done
[ "$(our_links)" -gt 0 ] || fail "watch (l): its run never attached: $(cat "$W/log")"
RUN=""
read -r RUN _ < "/proc/$WPID/task/$WPID/children"
[ -n "$RUN" ] || fail "watch (l): no run process"
kill -STOP "$RUN"
kill -TERM "$WPID"
for i in $(seq 400); do kill -0 "$WPID" 2> /dev/null || break; sleep 0.1; done
if kill -0 "$WPID" 2> /dev/null; then
	kill -CONT "$RUN"
	fail "watch (l): still running 40 s after SIGTERM, its run stopped: $(cat "$W/log")"
fi
wait "$WPID"
rc=$?
[ "$rc" = 0 ] || fail "watch (l): exit $rc: $(cat "$W/log")"
grep -q "high-cpu #1 (pid $RUN) has not ended [0-9]* s after SIGTERM: SIGKILL" "$W/log" ||
	fail "watch (l): the SIGKILL is not in its log: $(cat "$W/log")"
kill -0 "$RUN" 2> /dev/null && fail "watch (l): its run $RUN is still there"
assert_released "watch (l)"
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null

exit 0
