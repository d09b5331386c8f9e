# Fleet runs through Ansible (contrib/ansible/diagnose.yml) and `diagnose merge`, on an inventory
# of local "hosts" (ansible_connection=local), each with its own workload: two with lock
# contention (lock_contention 4; one of them selected by name, --comm), one healthy (lock_contention 1), one whose target does not
# exist. The playbook runs the latency recipe on each, one host at a time, keeps each report,
# keeps the failed host apart with its reason, and merges what it collected: lock-contention on
# exactly the two contended hosts, the healthy one without it; the run fails because one host
# did not run. Nothing stays attached.
. "$(dirname "$0")/lib.sh"
command -v ansible-playbook >/dev/null || skip "ansible-playbook missing (Debian package ansible; make deps installs it as root)"
start "$WL/lock_contention" 4
A=$PID
cp "$WL/lock_contention" "$TMP/lockd_fleet" # web2 names its service, not a pid
start "$TMP/lockd_fleet" 4
B=$PID
start "$WL/lock_contention" 1
C=$PID
cat > "$TMP/inventory" <<INV
[web]
web1 diagnose_target="--pid $A"
web2 diagnose_target="--comm lockd_fleet"
web3 diagnose_target="--pid $C"
web4 diagnose_target="--pid 999999999"

[web:vars]
ansible_connection=local
ansible_python_interpreter=$(command -v python3)
INV
OUT="$TMP/reports"
ANSIBLE_LOCAL_TEMP="$TMP/ansible" ANSIBLE_HOME="$TMP/ansible" ANSIBLE_NOCOLOR=1 \
	ansible-playbook -i "$TMP/inventory" "$ROOT/contrib/ansible/diagnose.yml" \
	-e diagnose_hosts=web -e diagnose_recipe=latency -e diagnose_duration=2 -e diagnose_serial=1 \
	-e diagnose_mode=development -e "diagnose_recipes_dir=$ROOT/recipes" -e "diagnose_bin=$DIAG" \
	-e "diagnose_merge_bin=$DIAG" -e "diagnose_reports=$OUT" > "$TMP/play.out" 2>&1; rc=$?
[ "$rc" != 0 ] || fail "the playbook succeeded with a host that could not run: $(tail -20 "$TMP/play.out")"
for h in web1 web2 web3; do
	[ -s "$OUT/hosts/$h.json" ] || fail "no report for $h: $(tail -30 "$TMP/play.out")"
done
[ -e "$OUT/hosts/web4.json" ] && fail "web4 has a report"
grep -q "no process with pid 999999999" "$OUT/failed/web4.txt" || fail "web4's reason: $(cat "$OUT/failed/web4.txt" 2>&1)"
grep -q "FAILED web4" "$TMP/play.out" || fail "the fleet view does not list web4 as failed"
[ "$(json "$OUT/merged.json" '{h["file"].split("/")[-1]: "lock-contention" in h["verdicts"] for h in r["hosts"]} == {"web1.json": True, "web2.json": True, "web3.json": False}')" = True ] ||
	fail "merged: $(json "$OUT/merged.json" '[(h["file"], h["verdicts"]) for h in r["hosts"]]')"
[ "$(json "$OUT/merged.json" '[g["count"] for g in r["verdicts"] if g["id"] == "lock-contention"] == [2]')" = True ] ||
	fail "merged lock-contention count: $(json "$OUT/merged.json" 'r["verdicts"]')"
[ "$(json "$OUT/hosts/web2.json" "[p['pid'] for p in r['target']['processes']] == [$B]")" = True ] ||
	fail "web2 (--comm lockd_fleet) did not cover exactly its process"
grep -q 'latency/lock-contention' "$OUT/merged.txt" || fail "merged text"
assert_released "a fleet run"
exit 0
