#!/bin/sh
# check.sh — what `make check` runs: the build on every CPU, then its stages one at a time (the
# e2e tests measure CPU shares), each timed. The times are printed at the end, whatever failed;
# with CHECK_TIMES=FILE they are also appended there ("LABEL STAGE SECONDS [FAILED]"), for
# .ci/run to print both passes'.
#   scripts/check.sh LABEL NPROC STAGE...   (called by the Makefile: MAKE is the make to run)
set -u
label=$1 nproc=$2
shift 2
times="" rc=0
run_stage() { # run_stage NAME MAKE-ARGS...
	name=$1
	shift
	start=$(date +%s)
	echo "== make check${label:+ $label}: $name"
	st=0
	${MAKE:-make} --no-print-directory "$@" || st=$?
	line=$(printf '%-8s %-12s %5d%s' "${label:--}" "$name" $(($(date +%s) - start)) \
		"$([ "$st" = 0 ] || echo '  FAILED')")
	times="$times$line
"
	[ -z "${CHECK_TIMES:-}" ] || echo "$line" >> "$CHECK_TIMES"
	return "$st"
}
run_stage build -j"$nproc" check-build || rc=$?
for s in "$@"; do
	[ "$rc" = 0 ] || break
	run_stage "$s" -j1 "$s" || rc=$?
done
printf '\nmake check%s stage times (s):\n%s' "${label:+ $label}" "$times"
exit "$rc"
