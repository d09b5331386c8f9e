#!/bin/sh
# ci-recipes.sh — the recipe checks a pull request must pass, for any forge's CI (plain POSIX sh).
#
#   scripts/ci-recipes.sh [DIAGNOSE]      DIAGNOSE: the binary to use (default: build/diagnose,
#                                          built with `make` when missing)
#
# 1. `diagnose lint` on every recipe and its Lua: a recipe that does not load, plan or compile
#    fails the job.
# 2. `diagnose verify`: every recipe in recipes/approved.lock still has the hashes it was approved
#    with — a pull request that changes an approved recipe, its Lua, a shared Lua library or a BPF
#    program must run `diagnose approve NAME` and commit the lock in the same pull request, so that
#    reviewers see the recipe and its approval together.
# 3. The recorded incidents (`diagnose test`, tests/fixtures/reports/RECIPE/NAME.json with the
#    expectations beside it, NAME.expect): every one replayed with this tree's recipes and Lua
#    must give the exit code, verdicts (ids, severities, order) and the optional ruled_out and
#    evidence lines its .expect states — a Lua change that alters a verdict on a recorded
#    incident fails. And `diagnose test` itself must fail on a deliberately wrong expectation.
# 4. The documentation (scripts/check-docs.sh): README.md at most 250 lines, no relative link
#    in README.md or docs/ to a missing file or heading, every probe kind of the catalog in
#    docs/recipes.md's table, schemas/recipe.md and tests/e2e/t_shapes.sh, every recipe with its
#    page in docs/symptoms/ and a line in README.md.
#
# Exit status: 0 all good, 1 a check failed. No root and no BPF needed: nothing is loaded.
set -eu
cd "$(dirname "$0")/.."
DIAG=${1:-build/diagnose}
if [ ! -x "$DIAG" ]; then
	make "$DIAG"
fi
export DIAGNOSE_RECIPES="$PWD/recipes"
LOCK=recipes/approved.lock
status=0

echo "== lint"
"$DIAG" lint recipes || status=1

echo "== verify $LOCK"
if [ -f "$LOCK" ]; then
	"$DIAG" verify --lock "$LOCK" || {
		echo "ci-recipes: $LOCK does not match the recipes, Lua files or BPF programs." >&2
		echo "ci-recipes: if the change is intended, run 'diagnose approve NAME' and commit the" >&2
		echo "ci-recipes: updated $LOCK in this pull request for review." >&2
		status=1
	}
else
	echo "no $LOCK: no recipe is approved for production mode"
fi

echo "== diagnose test: the recorded incidents (tests/fixtures/reports)"
"$DIAG" test --dir tests/fixtures/reports || {
	echo "ci-recipes: a recorded incident's verdicts changed. If that is intended, re-record it" >&2
	echo "ci-recipes: (sudo tests/fixtures/record.sh RECIPE/NAME) and say why." >&2
	status=1
}

echo "== diagnose test fails on a wrong expectation"
WRONG=$(mktemp -d /tmp/diagnose-wrong.XXXXXX)
mkdir "$WRONG/latency"
cp tests/fixtures/reports/latency/lock.json "$WRONG/latency/"
sed 's/^verdict lock-contention warning$/verdict lock-contention critical/' \
	tests/fixtures/reports/latency/lock.expect > "$WRONG/latency/lock.expect"
if "$DIAG" test --dir "$WRONG" latency > "$WRONG/out" 2>&1; then
	echo "ci-recipes: diagnose test passed an expectation that does not hold:" >&2
	cat "$WRONG/out" >&2
	status=1
elif ! grep -q '^FAIL  latency/lock$' "$WRONG/out" || ! grep -q -- '- verdict lock-contention critical' "$WRONG/out"; then
	echo "ci-recipes: diagnose test failed a wrong expectation without saying what differed:" >&2
	cat "$WRONG/out" >&2
	status=1
else
	echo "ok: a wrong expectation fails, naming the verdict"
fi
rm -rf "$WRONG"

echo "== documentation (scripts/check-docs.sh)"
scripts/check-docs.sh "$DIAG" || {
	echo "ci-recipes: the documentation is missing what the lines above name." >&2
	status=1
}
exit "$status"
