#!/usr/bin/env python3
# pg-wait-names.py — writes engine/probes/pg_wait_names.c: PostgreSQL's wait event names
# (pg_stat_activity.wait_event) by wait_event_info, its LWLock tranche names by tranche id and
# its lock tag types, for each major version, from each version's own sources.
#
# Owns: reading the names from a PostgreSQL source tree (the case labels of the pgstat_get_wait_*
# functions, the BuiltinTrancheNames initializer, lwlocknames.txt / lwlocklist.h, LockTagType)
# and their numeric values, which it gets by compiling a small program against that tree's
# headers (the compiler says what each enum member is: nothing is counted by hand).
# Must not: copy PostgreSQL's code into this repository: only the names and numbers land there.
#
# Usage: scripts/pg-wait-names.py OUT.c MAJOR=SRCDIR=LABEL [MAJOR=SRCDIR=LABEL ...]
#   e.g. 15=/src/postgresql-15.15=15.15 (LABEL: the release the tree is, named in OUT.c)
#   SRCDIR: a PostgreSQL source tree of that major version (src/include, src/backend); the
#   headers its build generates are made here (perl). CFG: a directory with a pg_config.h of this
#   platform (postgresql-server-dev-NN's include/server), whose PG_VERSION_NUM is overridden.
import os, re, subprocess, sys, tempfile

CFG = os.environ.get("CFG", "/usr/include/postgresql/15/server")
LOCKTAG_NAMES = {  # LockTagType member -> pg_locks.locktype (lockfuncs.c's LockTagTypeNames)
    "LOCKTAG_RELATION": "relation", "LOCKTAG_RELATION_EXTEND": "extend",
    "LOCKTAG_DATABASE_FROZEN_IDS": "frozenid", "LOCKTAG_PAGE": "page", "LOCKTAG_TUPLE": "tuple",
    "LOCKTAG_TRANSACTION": "transactionid", "LOCKTAG_VIRTUALTRANSACTION": "virtualxid",
    "LOCKTAG_SPECULATIVE_TOKEN": "spectoken", "LOCKTAG_OBJECT": "object",
    "LOCKTAG_USERLOCK": "userlock", "LOCKTAG_ADVISORY": "advisory",
    "LOCKTAG_APPLY_TRANSACTION": "applytransaction",
}

def read(p):
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.read()

def generate(major, src, work):
    inc = os.path.join(src, "src/include")
    gen = os.path.join(work, "gen%d" % major)
    os.makedirs(os.path.join(gen, "storage"), exist_ok=True)
    os.makedirs(os.path.join(gen, "utils"), exist_ok=True)
    lm = os.path.join(src, "src/backend/storage/lmgr")
    act = os.path.join(src, "src/backend/utils/activity")
    names_txt = os.path.join(act, "wait_event_names.txt")
    if os.path.exists(os.path.join(inc, "storage/lwlocklist.h")):  # 17
        subprocess.run(["perl", os.path.join(lm, "generate-lwlocknames.pl"), "--outdir", ".",
                        os.path.join(inc, "storage/lwlocklist.h"), names_txt],
                       cwd=os.path.join(gen, "storage"), check=True, capture_output=True)
    else:
        subprocess.run(["perl", os.path.join(lm, "generate-lwlocknames.pl"),
                        os.path.join(lm, "lwlocknames.txt")],
                       cwd=os.path.join(gen, "storage"), check=True, capture_output=True)
    if os.path.exists(names_txt):  # 17: the wait events are generated
        subprocess.run(["perl", os.path.join(act, "generate-wait_event_types.pl"), "--code",
                        "--outdir", ".", names_txt],
                       cwd=os.path.join(gen, "utils"), check=True, capture_output=True)
        wait_c = read(os.path.join(gen, "utils/pgstat_wait_event.c"))
        wait_h = '#include "utils/wait_event_types.h"\n'
    elif os.path.exists(os.path.join(act, "wait_event.c")):  # 14-16
        wait_c = read(os.path.join(act, "wait_event.c"))
        wait_h = '#include "utils/wait_event.h"\n'
    else:  # 13
        wait_c = read(os.path.join(src, "src/backend/postmaster/pgstat.c"))
        wait_h = '#include "pgstat.h"\n'
    cfg = os.path.join(work, "cfg%d" % major)
    os.makedirs(cfg, exist_ok=True)
    for f in ("pg_config.h", "pg_config_ext.h", "pg_config_os.h", "pg_config_manual.h"):
        text = read(os.path.join(CFG, f))
        if f == "pg_config.h":
            text = re.sub(r"#define PG_VERSION_NUM .*", "#define PG_VERSION_NUM %d0000" % major, text)
        with open(os.path.join(cfg, f), "w") as o:
            o.write(text)
    events = re.findall(r'case\s+(WAIT_EVENT_\w+)\s*:\s*event_name\s*=\s*"([^"]+)"', wait_c)
    lwc = read(os.path.join(lm, "lwlock.c"))
    m = re.search(r"BuiltinTrancheNames\[\]\s*=\s*\{(.*?)\n\};", lwc, re.S)
    builtin = m.group(1)
    ltt = re.search(r"typedef enum LockTagType\s*\{(.*?)\}", read(os.path.join(inc, "storage/lock.h")), re.S).group(1)
    tags = re.findall(r"^\s*(LOCKTAG_\w+)", ltt, re.M)
    prog = ['#include "postgres.h"', '#include "storage/lwlock.h"', '#include "storage/lock.h"',
            wait_h, "#include <stdio.h>", "#undef printf"]
    if major < 17:
        prog.append('#include "storage/lwlocknames.c"')  # IndividualLWLockNames
    prog.append("static const char *const builtin[] = {%s\n};" % builtin)
    prog.append("int main(void) {")
    for e, n in events:
        prog.append('printf("E %%u %%s\\n", (unsigned)%s, "%s");' % (e, n))
    if major < 17:
        prog.append('for (int i = 0; i < NUM_INDIVIDUAL_LWLOCKS; i++) printf("L %d %s\\n", i, IndividualLWLockNames[i] ? IndividualLWLockNames[i] : "");')
        prog.append('for (int i = 0; i < (int)lengthof(builtin); i++) printf("L %d %s\\n", i + NUM_INDIVIDUAL_LWLOCKS, builtin[i] ? builtin[i] : "");')
    else:
        prog.append('for (int i = 0; i < (int)lengthof(builtin); i++) printf("L %d %s\\n", i, builtin[i] ? builtin[i] : "");')
    prog.append('printf("F %d\\n", (int)LWTRANCHE_FIRST_USER_DEFINED);')
    for t in tags:
        prog.append('printf("T %%d %%s\\n", (int)%s, "%s");' % (t, LOCKTAG_NAMES.get(t, t[8:].lower())))
    prog.append("return 0; }")
    c = os.path.join(work, "names%d.c" % major)
    with open(c, "w") as o:
        o.write("\n".join(prog) + "\n")
    exe = c[:-2]
    fb = os.path.join(work, "fb")  # the catalog's generated headers some includes want
    os.makedirs(os.path.join(fb, "catalog"), exist_ok=True)
    for f in os.listdir(os.path.join(CFG, "catalog")):
        if f.endswith("_d.h"):
            with open(os.path.join(fb, "catalog", f), "w") as o:
                o.write(read(os.path.join(CFG, "catalog", f)))
    subprocess.run(["cc", "-DACCEPT_TYPE_ARG3=socklen_t", "-I" + cfg, "-I" + gen, "-I" + os.path.join(gen, "storage"),
                    "-I" + inc, "-I" + fb, "-I" + os.path.join(CFG), c, "-o", exe], check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    ev, lw, tg, first = [], [], [], 0
    for line in out.splitlines():
        k, rest = line.split(" ", 1)
        if k == "E":
            v, n = rest.split(" ", 1)
            ev.append((int(v), n))
        elif k == "L":
            v, _, n = rest.partition(" ")
            lw.append((int(v), n))
        elif k == "T":
            v, n = rest.split(" ", 1)
            tg.append((int(v), n))
        elif k == "F":
            first = int(rest)
    ev.sort()
    return ev, lw, tg, first

def main():
    out = sys.argv[1]
    work = tempfile.mkdtemp(prefix="pgnames")
    versions = []
    for arg in sys.argv[2:]:
        major, src, label = arg.split("=", 2)
        versions.append((int(major), label) + generate(int(major), src, work))
    w = []
    w.append("/* pg_wait_names.c — PostgreSQL's wait event names (pg_stat_activity.wait_event) by\n"
             " * wait_event_info, LWLock tranche names by tranche id, and lock tag types, per major version.\n"
             " *\n * Owns: the tables, generated by scripts/pg-wait-names.py from each version's sources\n"
             " * (the pgstat_get_wait_* functions' names, BuiltinTrancheNames, the individual LWLocks,\n"
             " * LockTagType: their values as that version's headers compile them). Regenerate, never edit.\n"
             " * Sources: " + ", ".join("%d: PostgreSQL %s" % (v[0], v[1]) for v in versions) + " (their source trees)\n"
             " * Must not: decode anything (pg_activity.c does), or hold state.\n */\n")
    w.append('#include "pg_wait_names.h"\n')
    for major, src, ev, lw, tg, first in versions:
        w.append("static const struct pg_wait_name events_%d[] = {" % major)
        for v, n in ev:
            w.append('\t{ 0x%08x, "%s" },' % (v, n))
        w.append("};")
        top = max(i for i, _ in lw) + 1
        names = [""] * top
        for i, n in lw:
            names[i] = n
        w.append("static const char *const tranches_%d[] = {" % major)
        for i, n in enumerate(names):
            w.append('\t"%s", /* %d */' % (n if n and not n.startswith("<unassigned") else "", i))
        w.append("};")
        w.append("static const char *const locktags_%d[] = {" % major)
        for i, n in sorted(tg):
            w.append('\t"%s",' % n)
        w.append("};")
    w.append("\nstatic const struct pg_wait_table tables[] = {")
    for major, src, ev, lw, tg, first in versions:
        w.append("\t{ %d, events_%d, ARRAY_LEN(events_%d), tranches_%d, ARRAY_LEN(tranches_%d), %d, "
                 "locktags_%d, ARRAY_LEN(locktags_%d) }," % (major, major, major, major, major, first, major, major))
    w.append("};\n")
    w.append("const struct pg_wait_table *pg_wait_table(int major)\n{\n"
             "\tfor (size_t i = 0; i < ARRAY_LEN(tables); i++)\n\t\tif (tables[i].major == major)\n"
             "\t\t\treturn &tables[i];\n\treturn NULL;\n}")
    with open(out, "w") as o:
        o.write("\n".join(w) + "\n")

main()
