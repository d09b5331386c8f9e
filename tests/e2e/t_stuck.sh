# t_stuck.sh — latency and triage on threads blocked since before the run (issue 45), each case a
# workload started, left a few seconds until its threads block, and only then diagnosed: the
# threads make no context switch in the window, only thread_states' snapshots see them.
# (a) two threads deadlocked on two glibc mutexes (stuck_threads deadlock) → latency's first
#     verdict is `deadlock`, critical, naming both threads, both functions (transfer_funds,
#     run_audit) and each mutex's owner (the other thread); triage says `deadlock` → latency; the
#     same through the procfs variant (a copy of the recipe with `attach: [procfs]`: the fallback
#     of kernels without the iterator's helpers) and its raw results (the futex words' owners);
#     control: a pool idle on its condition variable (idle_pool) → `idle` (info), no warning, and
#     triage idle;
# (b) a worker waiting for a mutex held by a thread that sleeps holding it (stuck_threads holder)
#     → `held-lock` naming append_record(), the holder's thread id and rotate_logs(), never idle;
#     triage's `waiting` names the holder → latency;
# (c) a process stuck reading a file of a FUSE file system that stopped answering
#     (tests/workloads/stallfs.c, fs_reader) → latency and triage `stuck-in-kernel` naming the file
#     and the file system, within a bounded time (the snapshot reads nothing of the stalled file);
#     control: a reader blocked on an empty pipe since before the run → idle, no warning;
# (d) Python threads deadlocked on two threading.Locks (py_locks.py deadlock, Debian's python3.11)
#     → `likely-deadlock`, critical, with each thread's Python frames; control: a
#     ThreadPoolExecutor and a queue consumer with no work (py_locks.py idle) → idle, no warning;
# (e) nginx (a master and a worker) and Redis left idle for 10 s before the run (what proves
#     "since before the run" against blocked_min_s: 2 and a 2 s window; a minute proves no more) →
#     latency and triage exit 0, no warning, on the nginx worker, its master and redis-server.
# (f) a PostgreSQL 15 backend whose UPDATE has waited for a row lock since before the run (no
#     lock_timeout: the case of issue 45) → latency's `held-lock` in the wait table's words (a
#     heavyweight lock, XactLockTableWait), `postgres-slow` as the follow-up; never idle.
# Nothing stays attached after any run.
. "$(dirname "$0")/lib.sh"

[ -x "$WL/stuck_threads" ] && [ -x "$WL/fs_reader" ] && [ -x "$WL/stallfs" ] || fail "workloads missing: run make"
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]' 2>/dev/null; }
# run NAME RECIPE PID: diagnose RECIPE --pid PID --duration ${DURATION:-2} --json into $TMP/NAME.json,
# killed after 40 s (a hang); $rc its exit code; nothing left attached
run() {
	local name=$1 recipe=$2 pid=$3
	timeout -s KILL 40 "$DIAG" "$recipe" --pid "$pid" --duration "${DURATION:-2}" --json > "$TMP/$name.json" 2> "$TMP/$name.err"
	rc=$?
	[ "$rc" != 137 ] || fail "$name: still running after 40 s (hung): $(tail -3 "$TMP/$name.err")"
	assert_released "$name"
}
# quiet NAME: the run exited 0 (or only the machine's own CPU starvation), no warning
quiet() { control_quiet "$TMP/$1.json" "$rc" || fail "$1: exit $rc, want 0: $(verdicts "$TMP/$1.json") $(tail -3 "$TMP/$1.err")"; }
stop() { [ $# -gt 0 ] || return 0; { kill -9 "$@"; wait "$@"; } 2>/dev/null; }
# tid_in PID NR: the thread of PID in system call NR (/proc/PID/task/TID/syscall)
tid_in() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)" = "$2" ] && { basename "$t"; return; }
	done
}

# --- (a) a deadlock, and an idle pool ------------------------------------------------------------
start "$WL/stuck_threads" deadlock
sleep 3
TIDS=$(for t in /proc/"$PID"/task/*; do [ "$(cut -d' ' -f1 "$t/syscall")" = 202 ] && basename "$t"; done | tr '\n' ' ')
set -- $TIDS
[ $# = 2 ] || fail "deadlock: two threads in futex() expected, found: $TIDS"
TA=$1 TB=$2
run deadlock latency "$PID"
[ "$rc" = 5 ] || fail "deadlock: exit $rc, want 5: $(verdicts "$TMP/deadlock.json") $(tail -3 "$TMP/deadlock.err")"
CHECK_LET='v = r["verdicts"][0]; ev = " ".join(v["evidence"])'
check "$TMP/deadlock.json" "v['id'] == 'deadlock' and v['severity'] == 'critical'" "deadlock: first verdict $(verdicts "$TMP/deadlock.json")"
check "$TMP/deadlock.json" "'transfer_funds()' in v['title'] and 'run_audit()' in v['title'] and '[thread $TA]' in v['title'] and '[thread $TB]' in v['title']" \
	"deadlock: the title does not name both threads and functions: $(verdicts "$TMP/deadlock.json")"
check "$TMP/deadlock.json" "'held by transfer_funds() [thread' in ev and 'held by run_audit() [thread' in ev" \
	"deadlock: each mutex's owner is not named: $(json "$TMP/deadlock.json" 'r["verdicts"][0]["evidence"]')"
check "$TMP/deadlock.json" "res['threads']['how'] == 'iterator' and res['threads']['threads_blocked'] == 3" "deadlock: the snapshot did not see 3 threads blocked"
run deadlock-triage triage "$PID"
CHECK_LET='v = r["verdicts"][0]'
check "$TMP/deadlock-triage.json" "v['id'] == 'deadlock' and v['severity'] == 'critical' and v['next']['recipe'] == 'latency' and 'transfer_funds()' in v['title'] and 'run_audit()' in v['title']" \
	"deadlock: triage: $(verdicts "$TMP/deadlock-triage.json")"
# the fallback of kernels without the iterator's helpers: /proc, through the same Lua
mkdir -p "$TMP/pf/recipes"
cp -r "$ROOT/lua" "$TMP/pf/"
sed 's/^name: latency$/name: latency-procfs/; s/^    attach: \[iterator, procfs\]$/    attach: [procfs]/' \
	"$ROOT/recipes/latency.yaml" > "$TMP/pf/recipes/latency-procfs.yaml"
grep -q '^    attach: \[procfs\]$' "$TMP/pf/recipes/latency-procfs.yaml" || fail "procfs: the recipe copy has no procfs attach"
# /proc says nothing of since when: the window itself must pass blocked_min_s (2 s)
DURATION=3 run deadlock-procfs "$TMP/pf/recipes/latency-procfs.yaml" "$PID"
[ "$rc" = 5 ] || fail "deadlock (procfs): exit $rc: $(verdicts "$TMP/deadlock-procfs.json") $(tail -3 "$TMP/deadlock-procfs.err")"
CHECK_LET='v = r["verdicts"][0]; th = {t["tid"]: t for t in res["threads"]["threads"]}'
check "$TMP/deadlock-procfs.json" "res['threads']['how'] == 'procfs' and v['id'] == 'deadlock' and 'transfer_funds()' in v['title'] and 'run_audit()' in v['title']" \
	"deadlock (procfs): $(verdicts "$TMP/deadlock-procfs.json")"
check "$TMP/deadlock-procfs.json" "th[$TA]['futex']['words'][2] == $TB and th[$TB]['futex']['words'][2] == $TA and not th[$TA]['ran']" \
	"deadlock (procfs): the futex words do not name each other's owner"
stop "$PID"

start "$WL/idle_pool" 4
sleep 3
run idle latency "$PID"
quiet idle
CHECK_LET=''
check "$TMP/idle.json" "[x['id'] for x in r['verdicts']] == ['idle'] and r['verdicts'][0]['severity'] == 'info' and 'wait_for_job()' in r['verdicts'][0]['title']" \
	"idle pool: $(verdicts "$TMP/idle.json")"
run idle-triage triage "$PID"
quiet idle-triage
check "$TMP/idle-triage.json" "r['verdicts'][0]['id'] == 'idle'" "idle pool: triage: $(verdicts "$TMP/idle-triage.json")"
stop "$PID"

# --- (b) a mutex held by a thread that sleeps ----------------------------------------------------
start "$WL/stuck_threads" holder
sleep 3
HOLDER=$(tid_in "$PID" 230) # clock_nanosleep
WAITER=$(tid_in "$PID" 202)
[ -n "$HOLDER" ] && [ -n "$WAITER" ] || fail "holder: no sleeping holder or no waiter"
run holder latency "$PID"
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "holder: exit $rc: $(verdicts "$TMP/holder.json") $(tail -3 "$TMP/holder.err")"
CHECK_LET='v = r["verdicts"][0]'
check "$TMP/holder.json" "v['id'] == 'held-lock' and 'append_record() [thread $WAITER]' in v['title'] and 'rotate_logs() [thread $HOLDER]' in v['title'] and 'sleeps' in v['title']" \
	"holder: $(verdicts "$TMP/holder.json")"
check "$TMP/holder.json" "'idle' not in [x['id'] for x in r['verdicts']]" "holder: called idle"
run holder-triage triage "$PID"
check "$TMP/holder-triage.json" "v['id'] == 'waiting' and v['next']['recipe'] == 'latency' and 'rotate_logs() [thread $HOLDER]' in v['title']" \
	"holder: triage: $(verdicts "$TMP/holder-triage.json")"
stop "$PID"

# --- (c) a read on a FUSE file system that stopped answering, and a reader on an empty pipe -------
[ -c /dev/fuse ] || fail "/dev/fuse is missing: the FUSE case needs it"
FS="$TMP/fs"
mkdir -p "$FS/mnt"
FS_PID=""
trap '[ -z "$FS_PID" ] || stop $FS_PID; umount -l "$FS/mnt" 2>/dev/null; keep_reports; for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
"$WL/stallfs" "$FS/mnt" "$WL/cpu_burner" "$FS/stall" data/app.conf > /dev/null 2>&1 &
FS_PID=$!
for i in $(seq 50); do [ -f "$FS/mnt/data/app.conf" ] && break; sleep 0.1; done
[ -f "$FS/mnt/data/app.conf" ] || fail "fuse: stallfs did not mount"
start "$WL/fs_reader" "$FS/mnt/data/app.conf" "$FS/go"
touch "$FS/stall" "$FS/go" # from now on the file system answers nothing: the read waits for ever
sleep 3
grep -q '^0 ' "/proc/$PID/syscall" || fail "fuse: the reader is not in read(): $(cat "/proc/$PID/syscall")"
t0=$(date +%s)
run fuse latency "$PID"
took=$(($(date +%s) - t0))
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "fuse: exit $rc: $(verdicts "$TMP/fuse.json") $(tail -3 "$TMP/fuse.err")"
[ "$took" -le 20 ] || fail "fuse: the run took $took s (a read of the stalled file held it?)"
check "$TMP/fuse.json" "v['id'] == 'stuck-in-kernel' and '$FS/mnt/data/app.conf' in v['title'] and 'fuse' in v['title'] and 'load_config()' in v['title']" \
	"fuse: $(verdicts "$TMP/fuse.json")"
run fuse-triage triage "$PID"
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "fuse: triage: exit $rc: $(verdicts "$TMP/fuse-triage.json")"
check "$TMP/fuse-triage.json" "v['id'] == 'stuck-in-kernel' and v['next']['recipe'] == 'latency' and '$FS/mnt/data/app.conf' in v['title']" \
	"fuse: triage: $(verdicts "$TMP/fuse-triage.json")"
stop "$PID" "$FS_PID"
umount -l "$FS/mnt" 2>/dev/null
FS_PID=""

mkfifo "$TMP/input"
sleep 600 > "$TMP/input" & # a writer that never writes
PIDS="$PIDS $!"
start cat "$TMP/input"
sleep 3
run pipe latency "$PID"
quiet pipe
check "$TMP/pipe.json" "r['verdicts'][0]['id'] == 'idle'" "pipe reader: $(verdicts "$TMP/pipe.json")"
stop "$PID"

# --- (d) Python threads deadlocked on threading.Lock, and an idle Python pool --------------------
PY=/usr/bin/python3.11
if [ -x "$PY" ]; then
	$PY "$ROOT/tests/workloads/py_locks.py" deadlock > "$TMP/py.out" 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	for i in $(seq 50); do grep -q ready "$TMP/py.out" && break; sleep 0.1; done
	grep -q ready "$TMP/py.out" || fail "py_locks.py deadlock did not start: $(cat "$TMP/py.out")"
	sleep 3
	run py-deadlock latency "$PID"
	[ "$rc" = 5 ] || fail "python deadlock: exit $rc: $(verdicts "$TMP/py-deadlock.json") $(tail -3 "$TMP/py-deadlock.err")"
	CHECK_LET='v = r["verdicts"][0]; ev = " ".join(v["evidence"])'
	check "$TMP/py-deadlock.json" "v['id'] == 'likely-deadlock' and v['severity'] == 'critical' and 'transfer (' in v['title'] and 'audit_books (' in v['title'] and 'py_locks.py:' in ev" \
		"python deadlock: $(verdicts "$TMP/py-deadlock.json")"
	stop "$PID"
	$PY "$ROOT/tests/workloads/py_locks.py" idle > "$TMP/py.out" 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	for i in $(seq 50); do grep -q ready "$TMP/py.out" && break; sleep 0.1; done
	sleep 3
	run py-idle latency "$PID"
	quiet py-idle
	CHECK_LET=''
	check "$TMP/py-idle.json" "r['verdicts'][0]['id'] == 'idle'" "python idle pool: $(verdicts "$TMP/py-idle.json")"
	stop "$PID"
else
	[ "${REQUIRE_E2E:-0}" = 1 ] && fail "REQUIRE_E2E=1 and $PY is missing (make deps)"
	echo "note: $PY missing: the Python cases were not run" >&2
fi

# --- (e) nginx and Redis idle since 10 s before the run ------------------------------------------
NGINX=/usr/sbin/nginx
if [ -x "$NGINX" ] && id www-data >/dev/null 2>&1; then
	NG="$TMP/nginx"
	mkdir -p "$NG/logs" "$NG/temp"
	for t in client_body proxy fastcgi uwsgi scgi; do mkdir -p "$NG/temp/$t"; done
	chown -R www-data: "$NG/temp"
	chmod 711 "$TMP" "$NG"
	NGPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat > "$NG/nginx.conf" <<EOF
user www-data;
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/logs/error.log;
events { worker_connections 256; }
http {
	access_log $NG/logs/access.log;
	client_body_temp_path $NG/temp/client_body;
	proxy_temp_path $NG/temp/proxy;
	fastcgi_temp_path $NG/temp/fastcgi;
	uwsgi_temp_path $NG/temp/uwsgi;
	scgi_temp_path $NG/temp/scgi;
	server { listen 127.0.0.1:$NGPORT; location / { return 200 "ok\n"; } }
}
EOF
	"$NGINX" -p "$NG" -e "$NG/logs/error.log" -c "$NG/nginx.conf" -g 'daemon off;' > "$NG/stdout" 2>&1 &
	MASTER=$!
	PIDS="$PIDS $MASTER"
	WORKER=""
	for _ in $(seq 50); do
		WORKER=$(pgrep -P "$MASTER" -x nginx | head -1)
		[ -n "$WORKER" ] && break
		sleep 0.1
	done
	[ -n "$WORKER" ] || fail "nginx: no worker: $(tail -3 "$NG/logs/error.log" 2>/dev/null)"
	PIDS="$PIDS $WORKER"
fi
if [ -x /usr/bin/redis-server ] && command -v redis-cli >/dev/null; then
	redis_server redis
fi
sleep 10
if [ -n "${WORKER:-}" ]; then
	run nginx-worker latency "$WORKER"
	quiet nginx-worker
	run nginx-master latency "$MASTER"
	quiet nginx-master
	run nginx-triage triage "$WORKER"
	quiet nginx-triage
	for n in nginx-worker nginx-master; do
		check "$TMP/$n.json" "r['verdicts'][0]['id'] in ('idle', 'event-loop') and r['verdicts'][0]['severity'] == 'info'" "$n: $(verdicts "$TMP/$n.json")"
	done
else
	[ "${REQUIRE_E2E:-0}" = 1 ] && fail "REQUIRE_E2E=1 and nginx is missing (make deps)"
	echo "note: nginx missing: its idle case was not run" >&2
fi
if [ -n "${SERVER:-}" ]; then
	run redis latency "$SERVER"
	quiet redis
	check "$TMP/redis.json" "r['verdicts'][0]['id'] in ('idle', 'event-loop', 'ok') and r['verdicts'][0]['severity'] in ('info', 'ok')" "redis: $(verdicts "$TMP/redis.json")"
	run redis-triage triage "$SERVER"
	quiet redis-triage
else
	[ "${REQUIRE_E2E:-0}" = 1 ] && fail "REQUIRE_E2E=1 and redis-server is missing (make deps)"
	echo "note: redis-server missing: its idle case was not run" >&2
fi

# --- (f) a PostgreSQL backend waiting for a row lock since before the run -------------------------
if [ -x /usr/lib/postgresql/15/bin/postgres ] && command -v psql >/dev/null && id postgres >/dev/null 2>&1; then
	pg_cluster 32MB # (its EXIT trap replaces ours: no FUSE mount is left by now)
	sql -c "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint); INSERT INTO accounts VALUES (1, 0);" ||
		fail "postgres: cannot create the table"
	echo "BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = 1; SELECT pg_sleep(120);" | session &
	PIDS="$PIDS $!"
	[ -n "$(backend_where "query LIKE '%pg_sleep(120)%'")" ] || fail "postgres: the holder's session did not start"
	echo "UPDATE accounts SET balance = balance - 1 WHERE id = 1;" | session &
	PIDS="$PIDS $!"
	WAITER=$(backend_where "wait_event_type = 'Lock'")
	[ -n "$WAITER" ] || fail "postgres: no backend waits for the row lock"
	sleep 3
	run pg latency "$WAITER"
	[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "postgres: exit $rc: $(verdicts "$TMP/pg.json") $(tail -3 "$TMP/pg.err")"
	CHECK_LET='v = r["verdicts"][0]'
	check "$TMP/pg.json" "v['id'] == 'held-lock' and 'heavyweight lock' in v['title'] and 'XactLockTableWait' in v['title'] and v['next']['recipe'] == 'postgres-slow'" \
		"postgres: $(verdicts "$TMP/pg.json")"
	check "$TMP/pg.json" "'idle' not in [x['id'] for x in r['verdicts']]" "postgres: called idle"
else
	[ "${REQUIRE_E2E:-0}" = 1 ] && fail "REQUIRE_E2E=1 and postgresql-15 is missing (make deps)"
	echo "note: postgresql-15 missing: its case was not run" >&2
fi
exit 0
