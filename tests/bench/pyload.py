"""pyload.py — part 4 of bench.py: a CPU-bound Python process whose samples fall in thousands of
different places (the interpreter, libc, libm, zlib, the _json, _decimal, _sha2 modules...), so
that a profile of it has thousands of unique stacks to symbolize. Runs until killed."""
import collections
import decimal
import fractions
import hashlib
import json
import random
import re
import zlib

rnd = random.Random(1)
while True:
    d = {str(i): [rnd.random(), str(i) * 3, {"k": i}] for i in range(200)}
    s = json.dumps(d)
    json.loads(s)
    re.findall(r"\d+\.\d+", s)
    collections.Counter(s).most_common(5)
    sorted(d.items(), key=lambda kv: kv[1][0])
    sum(decimal.Decimal(i) / 7 for i in range(50))
    sum(fractions.Fraction(i, 7) for i in range(50))
    hashlib.sha256(s.encode()).hexdigest()
    zlib.compress(s.encode())
    "".join(reversed(s)).upper().split("E")
