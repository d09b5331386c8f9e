#!/bin/bash
# format-check.sh — which C files differ from the style of .clang-format (clang-format 14).
#
#   scripts/format-check.sh            every tracked C file of engine/ and tests/
#   scripts/format-check.sh FILE...    those files
#   scripts/format-check.sh -d ...     also show how each would change (a diff)
#
# Reports; never rewrites a file (to apply it to one file: clang-format-14 -i FILE). Opt-in, not
# part of `make check`: the tree predates .clang-format and most files would change. Exit 0 when
# every file matches, 1 when some differ, 2 when clang-format 14 is missing.
# Skipped: generated headers (engine/abi/vmlinux.h).
set -u
cd "$(dirname "$0")/.." || exit 2

show_diff=0
if [ "${1:-}" = -d ]; then
	show_diff=1
	shift
fi

fmt=
for c in clang-format-14 clang-format; do
	if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then
		fmt=$c
		break
	fi
done
if [ -z "$fmt" ]; then
	echo "format-check: clang-format 14 not found (apt-get install clang-format-14)" >&2
	exit 2
fi

if [ $# -gt 0 ]; then
	files=("$@")
else
	mapfile -t files < <(git ls-files 'engine/*.c' 'engine/*.h' 'tests/*.c' 'tests/*.h' |
			     grep -v '/vmlinux\.h$')
fi

differ=0
for f in "${files[@]}"; do
	if ! out=$("$fmt" --style=file "$f"); then
		echo "format-check: $f: clang-format failed" >&2
		exit 2
	fi
	if ! printf '%s\n' "$out" | cmp -s - "$f"; then
		differ=$((differ + 1))
		lines=$(printf '%s\n' "$out" | diff "$f" - | grep -c '^>')
		echo "$f: $lines lines would change"
		[ "$show_diff" = 1 ] && printf '%s\n' "$out" | diff -u "$f" - --label "$f" --label "$f (formatted)"
	fi
done
echo "format-check: ${#files[@]} files, $differ differ from .clang-format"
[ "$differ" = 0 ]
