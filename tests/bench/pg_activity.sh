# pg_activity.sh — what postgres-slow's pg_activity probe costs a busy PostgreSQL server and
# diagnose: pgbench -S (select-only, 2 clients, 5 s) on a temporary PostgreSQL 15 cluster (Debian's
# postgresql-15, shared_buffers 128MB, scale 2) without and with a run of pg_activity alone at 20
# and at 100 Hz on the postmaster, alternated, ROUNDS times (3); prints the transactions per second
# (median) and, per sample, the probe's own figures (results.activity.cost) and diagnose's whole CPU
# time (its helpers included: /usr/bin/time's user + system) over the samples taken.
#   sudo BUILD=build bash tests/bench/pg_activity.sh
# Owns: the measurement. Must not: leave the cluster running (lib.sh's pg_cluster removes it).
. "$(dirname "$0")/../e2e/lib.sh"
ROUNDS=${ROUNDS:-3}
[ -x /usr/bin/time ] || skip "GNU time missing (apt-get install time)"
pg_cluster 128MB
as_pg "$PGBIN/pgbench" -h "$PGDIR/sock" -U postgres -i -s 2 postgres > /dev/null 2>&1 || fail "pgbench -i"
PM=$(head -1 "$PGDIR/data/postmaster.pid")
tps() { as_pg "$PGBIN/pgbench" -h "$PGDIR/sock" -U postgres -n -S -c 2 -j 2 -T 5 postgres 2>/dev/null |
	sed -n 's/^tps = \([0-9.]*\) (without initial.*/\1/p'; }
for hz in 20 100; do
	R=$(test_recipe "bench-pgact-$hz" <<EOF
  - id: act
    kind: pg_activity
    filters: {pid: target}
    options: {hz: $hz}
EOF
)
	sed -i 's/^  max_duration_s: .*/  max_duration_s: 60/' "$R"
	echo "$R" > "$TMP/recipe-$hz"
done
: > "$TMP/rows"
for round in $(seq 1 "$ROUNDS"); do
	echo "without $(tps)" >> "$TMP/rows"
	for hz in 20 100; do
		/usr/bin/time -f "%U %S" -o "$TMP/time" "$DIAG" "$(cat "$TMP/recipe-$hz")" --pid "$PM" --duration 8 --json > "$TMP/act.json" 2> /dev/null &
		tool=$!
		sleep 1.5
		t=$(tps)
		wait "$tool"
		echo "with$hz $t $(cat "$TMP/time") $(json "$TMP/act.json" '" ".join(str(x) for x in (r["results"]["act"]["samples"], r["results"]["act"]["cost"]["cpu_us_per_sample"], r["results"]["act"]["cost"]["wall_us_per_sample"], r["results"]["act"]["cost"]["reads_per_sample"], r["results"]["act"]["cost"]["bytes_per_sample"], r["results"]["act"]["slots_torn"], r["results"]["act"]["backend_samples"]))')" >> "$TMP/rows"
	done
done
python3 - "$TMP/rows" <<'EOP'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
base = statistics.median(float(r[1]) for r in rows if r[0] == "without")
print("pgbench -S, 2 clients, 5 s; median of %d rounds" % sum(1 for r in rows if r[0] == "without"))
print("| configuration | tps | ratio | samples | probe CPU us/sample | wall us/sample | reads/sample | KB/sample | diagnose CPU (all) ms/s of window | torn slots |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
print("| without | %.0f | 1.00 | | | | | | | |" % base)
for hz in ("20", "100"):
    rs = [r for r in rows if r[0] == "with" + hz]
    m = lambda i: statistics.median(float(r[i]) for r in rs)
    print("| pg_activity at %s Hz | %.0f | %.2f | %.0f | %.0f | %.0f | %.1f | %.0f | %.1f | %.0f |" % (
        hz, m(1), m(1) / base, m(4), m(5), m(6), m(7), m(8) / 1024, (m(2) + m(3)) * 1000 / 8, m(9)))
EOP
exit 0
