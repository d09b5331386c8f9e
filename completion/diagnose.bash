# diagnose(1) bash completion — commands, flags, recipe names (from `diagnose list`, so the same
# search path as a run: --recipes DIR on the line, $DIAGNOSE_RECIPES, ./recipes), --param names
# of the recipe on the line and replay's --threshold names of the recipe its report recorded
# (from `diagnose show`), test's recipe names, pids, files.
# Installed by `make install` to PREFIX/share/bash-completion/completions/diagnose.

_diagnose_run() { # _diagnose_run ARGS...: the diagnose on the line, with its --recipes DIR
	local recipes=()
	local i
	for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
		[[ ${COMP_WORDS[i]} == --recipes ]] && recipes=(--recipes "${COMP_WORDS[i + 1]}")
	done
	"${COMP_WORDS[0]}" "$@" "${recipes[@]}" 2>/dev/null
}

_diagnose() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmds="list show lint doctor approve verify replay diff merge test watch"
	local run_flags="--pid --comm --cgroup --unit --container --duration --param --dry-run --json --output --folded --flamegraph
		--pprof --stacks-probe --folded-probe --force --follow --recipes --production --verbose --help
		--version"
	local i word cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do # the first word that is not an option or its value
		word=${COMP_WORDS[i]}
		case $word in
		--pid | --comm | --cgroup | --unit | --container | --duration | --param | --output | --folded | --folded-probe | --stacks-probe | \
			--flamegraph | --pprof | --recipes | --lock | \
			--by | --lua | --threshold | --thresholds | --dir | --usdt | --recipe | --every | --state-dir | \
			--max-cpu-pct | --budget-window | --follow-at | --follow-every | --keep | --keep-bytes | --listen | \
			--textfile | --runs) ((i++)) ;;
		-p | -d) ((i++)) ;;
		-*) ;;
		*) cmd=$word; break ;;
		esac
	done
	case $prev in
	--pid | -p)
		COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur"))
		return ;;
	--comm) # process names, as /proc/PID/comm has them
		COMPREPLY=($(compgen -W "$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u)" -- "$cur"))
		return ;;
	--cgroup)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	--duration | -d | --by | --folded-probe | --stacks-probe | --unit | --container | --every | --max-cpu-pct | \
		--budget-window | --follow-every | --keep | --keep-bytes | --listen | --runs) return ;;
	--follow-at)
		COMPREPLY=($(compgen -W "warning critical never" -- "$cur"))
		return ;;
	--recipe)
		COMPREPLY=($(compgen -W "$(_diagnose_run list | awk '/^[a-z0-9-]+ / { print $1 }')" -- "$cur"))
		return ;;
	--textfile)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--state-dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	--output | --folded | --flamegraph | --pprof | --lua | --lock | --usdt)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--recipes | --dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	--param | --threshold | --thresholds)
		[[ -n $cmd ]] || return
		local recipe=$cmd names
		if [[ $cmd == replay ]]; then # the recipe the report on the line recorded
			for ((i = 1; i < COMP_CWORD; i++)); do
				[[ ${COMP_WORDS[i]} == *.json && -r ${COMP_WORDS[i]} ]] || continue
				recipe=$(head -c 4096 "${COMP_WORDS[i]}" | tr -d '\n' |
					sed -n 's/.*"recipe": *{ *"name": *"\([a-z0-9-]*\)".*/\1/p')
				break
			done
			[[ $recipe == replay ]] && return
		fi
		if [[ $prev == --param ]]; then
			names=$(_diagnose_run show "$recipe" | awk '$1 == "param" { print $2 "=" }')
		else
			names=$(_diagnose_run show "$recipe" | awk '$1 == "thresholds:" { for (i = 2; i <= NF; i++) { sub(/=.*/, "=", $i); print $i } }')
		fi
		compopt -o nospace 2>/dev/null
		COMPREPLY=($(compgen -W "$names" -- "$cur"))
		return ;;
	esac
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$run_flags" -- "$cur"))
		else
			local recipes
			recipes=$(_diagnose_run list | awk '/^[a-z0-9-]+ / { print $1 }')
			COMPREPLY=($(compgen -W "$cmds $recipes" -- "$cur"))
		fi
		return
	fi
	case $cmd in
	show | approve)
		COMPREPLY=($(compgen -W "$(_diagnose_run list | awk '/^[a-z0-9-]+ / { print $1 }') --recipes --by --lock $([[ $cmd == show ]] && echo --usdt)" -- "$cur")) ;;
	lint) COMPREPLY=($(compgen -f -- "$cur")) ;;
	verify) COMPREPLY=($(compgen -W "--lock" -- "$cur")) ;;
	replay)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--lua --threshold --json --recipes" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
		fi ;;
	diff)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json --flamegraph --stacks-probe --force" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
		fi ;;
	merge)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
		fi ;;
	test)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--dir --recipes" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_diagnose_run list | awk '/^[a-z0-9-]+ / { print $1 }')" -- "$cur"))
		fi ;;
	watch)
		COMPREPLY=($(compgen -W "--pid --comm --cgroup --unit --container --recipe --every --duration --param --state-dir
			--max-cpu-pct --budget-window --follow-at --follow-every --keep --keep-bytes --listen --textfile --runs
			--recipes --production --verbose" -- "$cur")) ;;
	list | doctor) ;;
	*) COMPREPLY=($(compgen -W "$run_flags" -- "$cur")) ;;
	esac
}
complete -F _diagnose diagnose
