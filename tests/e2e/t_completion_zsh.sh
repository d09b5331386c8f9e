# zsh completion (completion/_diagnose), the cases t_completion.sh checks for bash: commands and
# recipe names (from `diagnose list` with the --recipes on the line), flags, --param names of the
# recipe on the line and replay's --threshold names of its report's recipe (from `diagnose
# show`), the options of replay, diff and test, and what is left to zsh's own completers (pids, files,
# directories). zsh's completion widgets need a terminal, so the file runs in a plain `zsh -f`
# with compadd, _files, _directories and _pids replaced by functions that print what they were
# given — compadd keeping, as zsh does, only the candidates that start with the word typed.
. "$(dirname "$0")/lib.sh"
command -v zsh >/dev/null || skip "zsh is not installed (scripts/install-deps.sh installs it as root)"
complete_line() { # complete_line WORD...: the candidates for the last word, space-separated, sorted
	zsh -f -c '
		file=$1; shift
		compadd() {
			local nospace=
			while [[ $1 == -* && $1 != -- ]]; do
				[[ $1 == -S ]] && { nospace=1; shift; }
				shift
			done
			[[ $1 == -- ]] && shift
			local c
			for c in "$@"; do
				[[ ${c[1,${#PREFIX}]} == "$PREFIX" ]] && print -r -- "$c${nospace:+(nospace)}"
			done
		}
		_files() { print -r -- "_files${*:+ $*}"; }
		_directories() { print -r -- "_directories"; }
		_pids() { print -r -- "_pids"; }
		words=("$@"); CURRENT=$#words; PREFIX=${words[CURRENT]}
		source "$file" | sort | tr "\n" " "' _ "$ROOT/completion/_diagnose" "$@"
}
zsh -n "$ROOT/completion/_diagnose" || fail "completion/_diagnose: zsh syntax error"
R="$ROOT/recipes"
got=$(complete_line "$DIAG" --recipes "$R" hi)
[ "$got" = "high-cpu " ] || fail "recipe name: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" "")
echo "$got" | grep -q 'latency' && echo "$got" | grep -q 'replay' && echo "$got" | grep -q 'network-errors' ||
	fail "commands and recipes: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" high-cpu --param "")
[ "$got" = "hz=(nospace) jvm_perfmap=(nospace) unwind=(nospace) " ] || fail "--param names: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" replay --th)
[ "$got" = "--threshold " ] || fail "replay options: got '$got'"
printf '{\n  "tool": "diagnose",\n  "version": "0.1.0",\n  "recipe": {\n    "name": "latency",\n    "path": "x"\n  }\n}\n' > "$TMP/r.json"
got=$(complete_line "$DIAG" --recipes "$R" replay "$TMP/r.json" --threshold cause)
[ "$got" = "cause_pct_crit=(nospace) cause_pct_warn=(nospace) " ] || fail "replay --threshold names: got '$got'"
got=$(complete_line "$DIAG" diff a.json b.json --f)
[ "$got" = "--flamegraph --force " ] || fail "diff options: got '$got'"
got=$(complete_line "$DIAG" diff a.json "")
[ "$got" = "_files -g *.json " ] || fail "diff reports: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" latency --dry)
[ "$got" = "--dry-run " ] || fail "run flags: got '$got'"
got=$(complete_line "$DIAG" latency --pid "")
[ "$got" = "_pids " ] || fail "--pid: got '$got'"
got=$(complete_line "$DIAG" high-cpu --flamegraph "")
[ "$got" = "_files " ] || fail "--flamegraph: got '$got'"
got=$(complete_line "$DIAG" --recipes "")
[ "$got" = "_directories " ] || fail "--recipes: got '$got'"
got=$(complete_line "$DIAG" test --dir "")
[ "$got" = "_directories " ] || fail "test --dir: got '$got'"
got=$(complete_line "$DIAG" --recipes "$R" show "")
echo "$got" | grep -q 'memory-growth' || fail "show: got '$got'"
# the same candidates as bash for the same lines (the two files must not drift apart)
bash_line() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _diagnose
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$ROOT/completion/diagnose.bash" "$@"
}
for line in "--recipes $R ''" "--recipes $R latency --" "--recipes $R replay --" "diff x.json --" "merge --" \
	"test --" "--recipes $R test --dir /tmp ''"; do
	eval "set -- $line"
	z=$(complete_line "$DIAG" "$@" | sed 's/(nospace)//g')
	b=$(bash_line "$DIAG" "$@")
	[ "$z" = "$b" ] || fail "zsh and bash differ for '$line': zsh '$z', bash '$b'"
done
exit 0
