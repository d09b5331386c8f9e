#!/usr/bin/env python3
"""check-target-paths.py — every call of the engine that takes a path is one a reviewer has
placed: a path a target names (its maps, its files, its /proc links' text) is opened only by
engine/target/tfile.c, and every other call is listed in tests/target-paths.allow with why its
path is not the target's (a kernel file, an operator's or root's path, a fixed one).

The engine's C files are read (engine/*/*.c); each call of open, openat, fopen, opendir, stat,
lstat, fstatat, statx, access, faccessat, realpath, readlink, readlinkat, read_file, execve,
execveat, mount, rename, unlink, mkdir, chmod, chown or truncate is attributed to the function it
is in. The allowlist's lines are `FILE FUNCTION CALL[,CALL...]  # why` (FUNCTION `*`: every
function of the file). A call the list does not cover fails the check, naming the file, line and
function; a line of the list that covers nothing fails too (so the list stays true).

  scripts/check-target-paths.py [--selftest]

--selftest plants a new stat() of a path in a copy of a file and checks that it is caught.
Part of `make lint` (scripts/ci-recipes.sh). Exit 0: every call placed; 1: not.
"""
import os
import re
import sys
import tempfile

CALLS = ("open openat fopen opendir stat lstat fstatat statx access faccessat realpath readlink "
         "readlinkat read_file execve execveat mount rename unlink mkdir chmod chown truncate").split()
CALL_RE = re.compile(r"\b(" + "|".join(CALLS) + r")\s*\(")
# a function definition's first line, at file level: its name is the word before the first "("
FUNC_RE = re.compile(r"^[A-Za-z_][^(;=]*?(\w+)\s*\(")
STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')
CHAR_RE = re.compile(r"'(?:\\.|[^'\\])'")


def calls_of(path):
    """(line number, function, call) for every listed call in a C file."""
    out, func, depth, in_comment = [], None, 0, False
    with open(path, encoding="utf-8", errors="replace") as f:
        for ln, line in enumerate(f, 1):
            code = STRING_RE.sub('""', CHAR_RE.sub("''", line))
            # comments: /* ... */ spanning lines, and // to the end
            kept, i = [], 0
            while i < len(code):
                if in_comment:
                    end = code.find("*/", i)
                    if end < 0:
                        i = len(code)
                    else:
                        in_comment, i = False, end + 2
                elif code.startswith("/*", i):
                    in_comment, i = True, i + 2
                elif code.startswith("//", i):
                    break
                else:
                    kept.append(code[i])
                    i += 1
            code = "".join(kept)
            if depth == 0 and not code.startswith((" ", "\t", "#")) and not code.rstrip().endswith(";"):
                m = FUNC_RE.match(code)
                if m and m.group(1) not in ("if", "while", "for", "switch", "return", "sizeof"):
                    func = m.group(1)
            if depth > 0 or "(" in code:
                for c in CALL_RE.finditer(code):
                    before = code[: c.start()].rstrip()
                    if before.endswith(("->", ".")) or re.search(r"\b(?:int|void|char|bool|FILE|DIR|ssize_t)\s*\**$", before):
                        continue  # a member, or a declaration of a function of that name
                    if depth == 0 and func is None:
                        continue
                    out.append((ln, func, c.group(1)))
            depth += code.count("{") - code.count("}")
    return out


def load_allow(path):
    rules = []
    with open(path, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split()
            if len(parts) != 3 or "#" not in line:
                sys.exit(f"{path}:{ln}: expected `FILE FUNCTION CALL[,CALL...]  # why`")
            calls = set(parts[2].split(","))
            bad = calls - set(CALLS)
            if bad:
                sys.exit(f"{path}:{ln}: not a call this check knows: {', '.join(sorted(bad))}")
            rules.append({"line": ln, "file": parts[0], "func": parts[1], "calls": calls, "used": False})
    return rules


def check(root, allow_path, files=None):
    rules = load_allow(allow_path)
    bad = []
    if files is None:
        files = sorted(os.path.join("engine", d, f) for d in os.listdir(os.path.join(root, "engine"))
                       if os.path.isdir(os.path.join(root, "engine", d))
                       for f in os.listdir(os.path.join(root, "engine", d)) if f.endswith(".c"))
    for rel in files:
        for ln, func, call in calls_of(os.path.join(root, rel)):
            hit = [r for r in rules if r["file"] == rel and r["func"] in ("*", func) and call in r["calls"]]
            for r in hit:
                r["used"] = True
            if not hit:
                bad.append(f"{rel}:{ln}: {call}() in {func}(): a path this check cannot place: "
                           f"read what a target names through tfile.c, or list it in "
                           f"{os.path.relpath(allow_path, root)} with why it is not the target's")
    for r in rules:
        if not r["used"] and (files is None or r["file"] in files):
            bad.append(f"{os.path.relpath(allow_path, root)}:{r['line']}: {r['file']} {r['func']} "
                       f"{','.join(sorted(r['calls']))}: no such call any more")
    return bad


def selftest(root, allow_path):
    """A stat() of a target-named path planted in a function the list knows for other calls."""
    victim = "engine/target/target.c"
    with open(os.path.join(root, victim), encoding="utf-8") as f:
        text = f.read()
    planted = text.replace("static void read_comm(int pid, char *comm, size_t len)\n{",
                           "static void read_comm(int pid, char *comm, size_t len)\n{\n"
                           "\tstruct stat st;\n\tstat(comm, &st);", 1)
    if planted == text:
        sys.exit("selftest: the plant site in target.c is gone: update the selftest")
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "engine", "target"))
        with open(os.path.join(tmp, victim), "w", encoding="utf-8") as f:
            f.write(planted)
        bad = check(tmp, allow_path, [victim])
    if not any("stat() in read_comm()" in b for b in bad):
        sys.exit("selftest: a planted stat() was not caught: " + "; ".join(bad))
    print("check-target-paths: selftest ok (a planted stat() is caught)")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    allow_path = os.path.join(root, "tests", "target-paths.allow")
    if sys.argv[1:] == ["--selftest"]:
        selftest(root, allow_path)
        return 0
    bad = check(root, allow_path)
    for b in bad:
        print("check-target-paths: " + b, file=sys.stderr)
    if bad:
        return 1
    print("check-target-paths: ok (every path the engine opens, stats or resolves is placed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
