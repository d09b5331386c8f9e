#!/usr/bin/env python3
"""check-floors.py — the engine's folders are floors: a file includes the headers of its own
folder and of folders on lower floors, never one of a higher floor or of another folder on its
own, and no files include each other in a circle.

The floors are written once: the table of docs/architecture.md between the lines
`<!-- floors: read by scripts/check-floors.py -->` and `<!-- /floors -->`, a row per floor, its
number first (1: the ground), then its folders (`common/`, `abi/`, ...). Every engine folder is
on it, and every folder on it exists.

Read are engine/*/*.c and engine/*/*.h, the BPF programs (NAME.bpf.c) too. Each #include "..."
of theirs must
  - name its folder ("common/value.h", "abi/diag_bpf.h"): an engine header included by its bare
    name fails, so that the line says where the file comes from; the headers the build generates
    (NAME.skel.h, catalog_list.h, syscall_names.h, NAME.pb-c.h) are bare names, and pass;
  - stay in its own folder or go down: a folder on a higher floor (a climb) or another folder of
    the same floor (sideways) fails.
A circle fails too: files that include each other, directly or through others (X.c and X.h count
as one file, X; NAME.bpf.c is one of its own), each circle named with its files.

  scripts/check-floors.py [--selftest]

--selftest plants, in copies of real files, an include that climbs (common/util.c including
run/run.h), one sideways, an engine header by its bare name, and a circle (a header of common/
including another that includes it), and checks that each is caught. Part of `make lint`.
Exit 0: the floors hold; 1: they do not (each failure one line: FILE:LINE: what).
"""
import os
import re
import sys

TABLE_START = "<!-- floors: read by scripts/check-floors.py -->"
TABLE_END = "<!-- /floors -->"
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
GENERATED_RE = re.compile(r"^(?:[A-Za-z0-9_]+\.skel\.h|catalog_list\.h|syscall_names\.h|[A-Za-z0-9_]+\.pb-c\.h)$")
ROW_RE = re.compile(r"^\|\s*(\d+)\s*\|([^|]*)\|")
FOLDER_RE = re.compile(r"`([a-z_]+)/`")


def read_floors(doc):
    """{folder: floor} from the table of doc."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    if TABLE_START not in text or TABLE_END not in text:
        sys.exit(f"check-floors: {doc}: no floors table ({TABLE_START} ... {TABLE_END})")
    table = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0]
    floors = {}
    for line in table.splitlines():
        m = ROW_RE.match(line.strip())
        if not m:
            continue
        for folder in FOLDER_RE.findall(m.group(2)):
            if folder in floors:
                sys.exit(f"check-floors: {doc}: folder {folder}/ is on two floors")
            floors[folder] = int(m.group(1))
    if not floors:
        sys.exit(f"check-floors: {doc}: the floors table has no rows")
    return floors


def engine_files(root):
    """The engine's C files and headers, as paths relative to root."""
    out = []
    engine = os.path.join(root, "engine")
    for d in sorted(os.listdir(engine)):
        if os.path.isdir(os.path.join(engine, d)):
            out += [f"engine/{d}/{f}" for f in sorted(os.listdir(os.path.join(engine, d)))
                    if f.endswith((".c", ".h"))]
    return out


def unit_of(path):
    """X.c and X.h are one file, X; NAME.bpf.c is NAME.bpf."""
    return path[:-2] if path.endswith((".c", ".h")) else path


def circles(edges):
    """The strongly connected components of more than one unit (Tarjan's, iteratively)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def check(root, floors, planted=None):
    """Failures, one line each. planted: {path: text} read instead of the file (the selftest)."""
    planted = planted or {}
    files = sorted(set(engine_files(root)) | set(planted))
    bad = []
    folders = {p.split("/")[1] for p in files}
    for folder in sorted(folders - set(floors)):
        bad.append(f"engine/{folder}/: on no floor of docs/architecture.md's table")
    for folder in sorted(set(floors) - folders):
        bad.append(f"docs/architecture.md: floor of {folder}/, which is no folder of engine/")
    edges = {}
    for path in files:
        if path in planted:
            text = planted[path]
        else:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                text = f.read()
        here = path.split("/")[1]
        for ln, line in enumerate(text.splitlines(), 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            inc = m.group(1)
            where = f"{path}:{ln}: #include \"{inc}\""
            if "/" not in inc:
                if GENERATED_RE.match(inc):
                    continue
                owner = [p for p in files if p.endswith("/" + inc)]
                bad.append(f"{where}: " + (f"say its folder (\"{owner[0][len('engine/'):]}\")" if owner
                                            else "neither an engine header nor one the build generates"))
                continue
            target = "engine/" + inc
            if target not in files:
                bad.append(f"{where}: no such engine header")
                continue
            there = inc.split("/")[0]
            if there == here or here not in floors or there not in floors:
                pass
            elif floors[there] > floors[here]:
                bad.append(f"{where}: climbs from {here}/ (floor {floors[here]}) to {there}/ "
                           f"(floor {floors[there]})")
            elif floors[there] == floors[here]:
                bad.append(f"{where}: sideways, from {here}/ to {there}/, both on floor {floors[here]}")
            if unit_of(target) != unit_of(path):
                edges.setdefault(unit_of(path), set()).add(unit_of(target))
    for comp in circles(edges):
        bad.append("a circle of files that include each other: " +
                   " -> ".join(c[len("engine/"):] for c in comp + comp[:1]))
    return bad


def selftest(root, floors):
    """Each kind of violation planted in a copy of a real file, and caught."""
    def text_of(path):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            return f.read()
    util = text_of("engine/common/util.c")
    plants = {
        "climbs": ({"engine/common/util.c": util.replace('#include "common/util.h"',
                                                          '#include "common/util.h"\n#include "run/run.h"', 1)},
                   "climbs from common/ (floor"),
        "sideways": ({"engine/common/util.c": util.replace('#include "common/util.h"',
                                                            '#include "common/util.h"\n#include "abi/diag_bpf.h"', 1)},
                     "sideways, from common/ to abi/"),
        "bare": ({"engine/common/util.c": util.replace('#include "common/util.h"', '#include "util.h"', 1)},
                 "say its folder (\"common/util.h\")"),
        "circle": ({"engine/common/hash.h": text_of("engine/common/hash.h").replace(
                        "#define DIAG_HASH_H", '#define DIAG_HASH_H\n#include "common/selftest_b.h"', 1),
                    "engine/common/selftest_b.h": '#include "common/hash.h"\n'},
                   "a circle of files that include each other: common/hash -> common/selftest_b -> common/hash"),
    }
    for name, (planted, want) in plants.items():
        if any(text_of(p) == t for p, t in planted.items() if os.path.exists(os.path.join(root, p))):
            sys.exit(f"check-floors: selftest: the plant site of '{name}' is gone: update the selftest")
        bad = check(root, floors, planted)
        if not any(want in b for b in bad):
            sys.exit(f"check-floors: selftest: a planted {name} include was not caught: " + "; ".join(bad))
    print(f"check-floors: selftest ok (a planted climb, sideways include, bare include and circle are caught)")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    floors = read_floors(os.path.join(root, "docs", "architecture.md"))
    if sys.argv[1:] == ["--selftest"]:
        selftest(root, floors)
        return 0
    if sys.argv[1:]:
        sys.exit(__doc__)
    bad = check(root, floors)
    for b in bad:
        print("check-floors: " + b, file=sys.stderr)
    if bad:
        return 1
    print(f"check-floors: ok ({len(floors)} folders on {len(set(floors.values()))} floors: no include "
          f"climbs or goes sideways, none without its folder, no circle of files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
