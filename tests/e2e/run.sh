#!/bin/sh
# run.sh — runs every tests/e2e/t_*.sh, or only those E2E_TESTS names ("t_replay t_unwind.sh"; a
# name that is not a test here is an error, so a typo cannot shrink a list unseen); prints one
# line per test and a closing count. A failing test's output is printed where it failed and its
# last lines again after the count, so that a log cut to its tail (a CI summary) still says why.
# REQUIRE_E2E=1 (CI): a test that would skip for a missing requirement fails instead (lib.sh).
cd "$(dirname "$0")" || exit 1
if [ -n "${E2E_TESTS:-}" ]; then
	tests=""
	for n in $E2E_TESTS; do
		n=${n%.sh}.sh
		[ -f "$n" ] || { echo "e2e: E2E_TESTS names $n: no such test in tests/e2e"; exit 1; }
		tests="$tests $n"
	done
else
	tests=$(echo t_*.sh)
fi
pass=0 failed=0 skipped=0 tails="" begin=$(date +%s)
for t in $tests; do
	start=$(date +%s)
	if out=$(bash "$t" 2>&1); then
		pass=$((pass + 1)); echo "ok    $t ($(( $(date +%s) - start ))s)"
	elif [ $? -eq 77 ]; then
		skipped=$((skipped + 1)); echo "skip  $t: $(echo "$out" | tail -1)"
	else
		failed=$((failed + 1)); echo "FAIL  $t ($(( $(date +%s) - start ))s)"; echo "$out" | sed 's/^/    /'
		tails="$tails
$t, last lines:
$(echo "$out" | tail -15 | sed 's/^/    /')"
		# why, in one line cut to 300 bytes, for the very end of a CI log (.ci/run)
		[ -z "${E2E_FAILURES:-}" ] || echo "$t: $(echo "$out" | grep -m1 '^FAIL: ' | cut -c1-300)" >> "$E2E_FAILURES"
	fi
done
echo "e2e: $pass passed, $failed failed, $skipped skipped ($(( $(date +%s) - begin ))s)"
[ -n "$tails" ] && echo "$tails"
[ "$failed" -eq 0 ]
