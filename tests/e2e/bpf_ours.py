#!/usr/bin/env python3
"""bpf_ours.py — which BPF programs and links on this machine are a test's own (tests/e2e/lib.sh).

  bpf_ours.py names ROOT BUILD     every program name diagnose can load, as the kernel shows it
                                   (15 chars): each program of every BUILD/bpf/*.bpf.o (ELF
                                   symbols of functions outside .text, as libbpf finds programs),
                                   and the programs engine/*/*.c loads by hand ("doctor_*" in
                                   engine/cli/doctor.c)
  bpf_ours.py snapshot             the ids of every loaded program and link, as JSON
  bpf_ours.py left BEFORE NAMES TAG
                                   what this test left: one line per program or link that is new
                                   since the snapshot BEFORE, and either held by a process of this
                                   test (its environment has DIAG_E2E_RUN=TAG: every process the
                                   test starts, whatever its parent now) or named as ours (NAMES)
                                   and held by no process at all (pinned, or not yet freed)

A new program of ours held only by processes of another run (another test, another terminal, a
concurrent `make check`) is theirs, not this test's: it is left out. bpftool holds every program
while it lists them, so a process named bpftool owns nothing here.
"""
import glob
import json
import os
import re
import subprocess
import sys

KERNEL_NAME_LEN = 15  # BPF_OBJ_NAME_LEN - 1


def names(root, build):
    out = set()
    objs = sorted(glob.glob(os.path.join(root, build, "bpf", "*.bpf.o")))
    if not objs:
        sys.exit(f"bpf_ours.py: no BPF objects in {os.path.join(root, build, 'bpf')}: run make first")
    # llvm-objdump -t: "ADDR FLAGS SECTION\tSIZE NAME", FLAGS 7 columns ("g     F")
    sym = re.compile(r"^[0-9a-f]+ (.{7}) (\S+)\s+[0-9a-f]+ (\S+)$")
    for o in objs:
        text = subprocess.run(["llvm-objdump", "-t", o], capture_output=True, text=True, check=True).stdout
        found = 0
        for line in text.splitlines():
            m = sym.match(line)
            if m and "F" in m.group(1) and m.group(2) != ".text":
                out.add(m.group(3)[:KERNEL_NAME_LEN])
                found += 1
        if not found:
            sys.exit(f"bpf_ours.py: no programs found in {o}")
    # Programs the engine builds itself (doctor's feature probes): their names in its sources.
    for src in glob.glob(os.path.join(root, "engine", "*", "*.c")):
        with open(src, encoding="utf-8", errors="replace") as f:
            for n in re.findall(r'"(doctor_[A-Za-z0-9_]+)"', f.read()):
                out.add(n[:KERNEL_NAME_LEN])
    return sorted(out)


def bpftool(*args):
    r = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True)
    return json.loads(r.stdout or "[]") or []


def loaded():
    """{prog id: name}, {link id: prog id}"""
    progs = {p["id"]: p.get("name", "") for p in bpftool("prog", "show")}
    links = {l["id"]: l.get("prog_id") for l in bpftool("link", "list")}
    return progs, links


def holders():
    """{("prog"|"link", id): [(pid, comm, ours)]} for every open BPF program and link fd."""
    tag = ("DIAG_E2E_RUN=" + sys.argv[4]).encode() if len(sys.argv) > 4 else None
    held = {}
    for d in glob.glob("/proc/[0-9]*"):
        pid = int(d[6:])
        try:
            fds = os.listdir(d + "/fd")
        except OSError:
            continue
        comm = ours = None
        for fd in fds:
            try:
                target = os.readlink(f"{d}/fd/{fd}")
                if target not in ("anon_inode:bpf-prog", "anon_inode:bpf_link"):
                    continue
                with open(f"{d}/fdinfo/{fd}") as f:
                    info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
                if comm is None:
                    with open(d + "/comm") as f:
                        comm = f.read().strip()
                    with open(d + "/environ", "rb") as f:
                        ours = tag in f.read().split(b"\0")
            except OSError:  # the fd or the process went away meanwhile
                continue
            if comm == "bpftool":
                break
            kind = "link" if target.endswith("bpf_link") else "prog"
            key = (kind, int(info[kind + "_id"]))
            held.setdefault(key, []).append((pid, comm, ours))
            if kind == "link" and "prog_id" in info:  # a link holds its program
                held.setdefault(("prog", int(info["prog_id"])), []).append((pid, comm, ours))
    return held


def left(before_file, names_file):
    with open(before_file) as f:
        before = json.load(f)
    with open(names_file) as f:
        our_names = set(f.read().split())
    progs, links = loaded()
    new_progs = {i: n for i, n in progs.items() if i not in set(before["progs"])}
    new_links = {i: p for i, p in links.items() if i not in set(before["links"])}
    if not new_progs and not new_links:
        return []
    held = holders()
    out = []

    def judge(kind, i, name):
        h = held.get((kind, i), [])
        mine = sorted({f"{pid} ({comm})" for pid, comm, ours in h if ours})
        if mine:
            return f"held by {', '.join(mine)}"
        if not h and name in our_names:
            return "held by no process (pinned, or not freed yet)"
        return None  # another run's, or not ours at all

    for i, name in sorted(new_progs.items()):
        why = judge("prog", i, name)
        if why:
            out.append(f"prog {i} {name}: {why}")
    for i, p in sorted(new_links.items()):
        why = judge("link", i, progs.get(p, ""))
        if why:
            out.append(f"link {i} of prog {p} {progs.get(p, '?')}: {why}")
    return out


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "names" and len(sys.argv) == 4:
        print("\n".join(names(sys.argv[2], sys.argv[3])))
    elif cmd == "snapshot" and len(sys.argv) == 2:
        progs, links = loaded()
        print(json.dumps({"progs": sorted(progs), "links": sorted(links)}))
    elif cmd == "left" and len(sys.argv) == 5:
        for line in left(sys.argv[2], sys.argv[3]):
            print(line)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
