#!/bin/sh
# run.sh — runs every tests/e2e/t_*.sh; prints one line per test and a closing count. A failing
# test's output is printed where it failed and its last lines again after the count, so that a
# log cut to its tail (a CI summary) still says why.
cd "$(dirname "$0")" || exit 1
pass=0 failed=0 skipped=0 tails=""
for t in t_*.sh; do
	start=$(date +%s)
	if out=$(bash "$t" 2>&1); then
		pass=$((pass + 1)); echo "ok    $t ($(( $(date +%s) - start ))s)"
	elif [ $? -eq 77 ]; then
		skipped=$((skipped + 1)); echo "skip  $t: $(echo "$out" | tail -1)"
	else
		failed=$((failed + 1)); echo "FAIL  $t"; echo "$out" | sed 's/^/    /'
		tails="$tails
$t, last lines:
$(echo "$out" | tail -15 | sed 's/^/    /')"
	fi
done
echo "e2e: $pass passed, $failed failed, $skipped skipped"
[ -n "$tails" ] && echo "$tails"
[ "$failed" -eq 0 ]
