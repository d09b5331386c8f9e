# bash completion (completion/diagnose.bash), run as bash runs it: commands and recipe names
# (from `diagnose list` with the --recipes on the line), flags, --param and --threshold names of
# the recipe on the line and replay's --threshold names of its report's recipe (from `diagnose
# show`), the options of replay, diff and test, test's recipe names.
. "$(dirname "$0")/lib.sh"
complete_line() { # complete_line WORD...: COMPREPLY for the last word, space-separated, sorted
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _diagnose
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$ROOT/completion/diagnose.bash" "$@"
}
R="$ROOT/recipes"
got=$(complete_line "$DIAG" --recipes "$R" hi)
[ "$got" = "high-cpu " ] || fail "recipe name: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" "")
echo "$got" | grep -q 'latency' && echo "$got" | grep -q 'replay' || fail "commands and recipes: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" high-cpu --param "")
[ "$got" = "hz= jvm_perfmap= unwind= " ] || fail "--param names: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" replay --th)
[ "$got" = "--threshold " ] || fail "replay options: got '$got'"
printf '{\n  "tool": "diagnose",\n  "version": "0.1.0",\n  "recipe": {\n    "name": "latency",\n    "path": "x"\n  }\n}\n' > "$TMP/r.json"
got=$(complete_line "$DIAG" --recipes "$R" replay "$TMP/r.json" --threshold cause)
[ "$got" = "cause_pct_crit= cause_pct_warn= " ] || fail "replay --threshold names: got '$got'"
got=$(complete_line "$DIAG" diff a.json b.json --f)
[ "$got" = "--flamegraph --force " ] || fail "diff options: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" latency --dry)
[ "$got" = "--dry-run " ] || fail "run flags: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" te)
[ "$got" = "test " ] || fail "test command: got '$got'"
got=$(complete_line "$DIAG" test --d)
[ "$got" = "--dir " ] || fail "test options: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" test --dir /tmp lat)
[ "$got" = "latency " ] || fail "test recipe names: got '$got'"
exit 0
