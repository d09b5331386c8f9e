# The stack outputs, each opened by the tool its readers use:
# (a) --flamegraph on a CPU burner: the SVG parses as XML (python3), holds compute_checksum with
#     most of the samples, says "on-CPU samples" in its title;
# (b) headless Chromium renders it: the screenshot is not blank (several colours, the warm colour
#     of user frames among them), and in the DOM after the page's script ran the frame's label is
#     there, a search (FILE.svg#s=compute_checksum) reports its matched share, and a zoom
#     (FILE.svg#z=compute_checksum) scales the frame and what is above it to the full width;
# (c) --pprof: `go tool pprof -top` lists compute_checksum with the samples;
# (d) off-CPU: latency on a contended lock: the SVG's unit is off-CPU time, pprof's type is time;
# (e) output files are never written through a symlink and belong to the sudo caller; nothing
#     stays attached;
# (f) `diff --flamegraph`: the CPU burner of (a) against the same burner "fixed" (its checksum made
#     64 times cheaper): compute_checksum's frame is blue (share shrank), parse_headers' red
#     (grew), the widths AFTER's; Chromium renders it with both hues, the labels and a search in
#     the DOM; a probe missing from BEFORE, a unit that differs, --stacks-probe without
#     --flamegraph are refused (exit 2) and leave no file.
. "$(dirname "$0")/lib.sh"
command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh installs it as root)"
command -v go >/dev/null || skip "go (golang-go) is not installed (scripts/install-deps.sh installs it as root)"
# go and chromium want a home and caches of their own: none of the caller's.
export HOME="$TMP/home" GOCACHE="$TMP/home/gocache" GOFLAGS=-mod=mod XDG_CONFIG_HOME="$TMP/home/.config"
mkdir -p "$HOME"

# shot SVG PNG: renders the SVG in headless Chromium to a PNG.
shot() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$TMP/home/chromium" --screenshot="$2" --window-size=1200,800 \
		"file://$1" >/dev/null 2>&1
	[ -s "$2" ] || fail "chromium wrote no screenshot of $1"
}
# dom URL: the DOM after the page's script ran.
dom() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$TMP/home/chromium" \
		--dump-dom "$1" 2>/dev/null
}
# png_colours PNG: "DISTINCT WARM" — distinct colours, and pixels of the user frames' warm hues
# (red high, blue low). The PNG is decoded here with zlib: no imaging library needed.
png_colours() {
	python3 - "$1" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, rows, i = bytearray(stride), [], 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
colours, warm = set(), 0
for line in rows:
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        colours.add((r, g, b))
        warm += r > 200 and b < 90 and 60 < g < 200
print(len(colours), warm)
EOF
}

# (a) on-CPU
start "$WL/cpu_burner"
"$DIAG" high-cpu --pid "$PID" --duration 2 --json --flamegraph "$TMP/cpu.svg" --pprof "$TMP/cpu.pb.gz" \
	> "$TMP/cpu.json" 2> "$TMP/cpu.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "high-cpu: exit $rc: $(cat "$TMP/cpu.err")"
assert_released "high-cpu with --flamegraph and --pprof"
[ "$(json "$TMP/cpu.json" 'r["results"]["profile"]["samples"] > 0')" = True ] || fail "no samples"
python3 - "$TMP/cpu.svg" <<'EOF' || fail "the SVG: see above"
import sys, xml.etree.ElementTree as ET
ns = {'s': 'http://www.w3.org/2000/svg'}
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == '{http://www.w3.org/2000/svg}svg', root.tag
title = root.find(".//s:text[@id='title']", ns).text
assert 'on-CPU samples' in title and 'high-cpu' in title, title
frames = root.findall(".//s:g[@class='f u']", ns)
total = float(root.get('data-total'))
hot = [g for g in frames if g.find('s:title', ns).text.split('\n')[0] == 'compute_checksum']
assert hot, 'no compute_checksum frame in the SVG'
share = sum(float(g.get('data-w')) for g in hot) / total
assert share >= 0.5, 'compute_checksum has %.0f%% of the samples' % (100 * share)
# widths follow weights: the root spans the drawing, compute_checksum its share of it
allw = float(root.find(".//s:g[@class='f r']/s:rect", ns).get('width'))
hotw = sum(float(g.find('s:rect', ns).get('width')) for g in hot)
assert abs(hotw - share * allw) < 0.1 * len(hot) + 0.05, (hotw, share, allw)
EOF
[ "$(stat -c %a "$TMP/cpu.svg")" = 644 ] || fail "SVG mode $(stat -c %a "$TMP/cpu.svg")"

# (b) rendered by Chromium
shot "$TMP/cpu.svg" "$TMP/cpu.png"
read -r ncol warm <<EOF
$(png_colours "$TMP/cpu.png")
EOF
[ "${ncol:-0}" -ge 5 ] || fail "the screenshot is blank: $ncol colours"
[ "${warm:-0}" -ge 500 ] || fail "the screenshot shows no user frames: $warm warm pixels of $ncol colours"
dom "file://$TMP/cpu.svg#s=compute_checksum" > "$TMP/cpu.dom"
grep -q '>compute_checksum</text>' "$TMP/cpu.dom" || fail "the frame's label is not in the DOM: $(grep -c '<g class' "$TMP/cpu.dom") frames"
grep -Eq 'id="matched"[^>]*>Matched: [0-9.]+% \([0-9,]+ samples\)' "$TMP/cpu.dom" ||
	fail "the search did not run in the page: $(grep -o '<text id="matched"[^<]*' "$TMP/cpu.dom")"
grep -q '<g class="f u hit"' "$TMP/cpu.dom" || fail "no frame highlighted by the search"
# click-to-zoom, as the page does it (FILE.svg#z=NAME): the frame spans the drawing, what is above
# it is scaled to it, its callers are marked, the reset button shows
dom "file://$TMP/cpu.svg#z=compute_checksum" > "$TMP/zoom.dom"
python3 - "$TMP/zoom.dom" <<'EOF' || fail "zoom in the page: see above"
import re, sys
doc = open(sys.argv[1]).read()
frames = re.findall(r'<g class="f ([^"]*)" data-x="([^"]*)" data-w="([^"]*)" data-d="([^"]*)"(?: style="([^"]*)")?><title>([^\n<]*)\n[^<]*</title><rect x="([^"]*)" y="[^"]*" width="([^"]*)"', doc)
assert frames, 'no frames in the DOM'
z = [f for f in frames if f[5] == 'compute_checksum' and 'above' not in f[0]]
assert z, 'compute_checksum not in the zoomed view'
zx, zw, zd = float(z[0][1]), float(z[0][2]), int(z[0][3])
assert abs(float(z[0][7]) - 1180) < 0.02, 'zoomed frame width %s' % z[0][7]
for cls, x, w, d, style, name, rx, rw in frames:
    x, w, d = float(x), float(w), int(d)
    hidden = 'display: none' in (style or '')
    if d < zd and not hidden:
        assert 'above' in cls and abs(float(rw) - 1180) < 0.02, (name, cls, rw)
    elif d > zd and zx <= x and x + w <= zx + zw:
        assert not hidden and abs(float(rw) - w / zw * 1180) < 0.02, (name, rw, w, zw)
assert re.search(r'id="reset"[^>]*style=""', doc), 'reset is not shown'
EOF

# (c) go tool pprof
top=$(cd "$TMP" && go tool pprof -top cpu.pb.gz 2>&1) || fail "go tool pprof: $top"
echo "$top" | grep -q 'Type: samples' || fail "pprof type: $top"
echo "$top" | grep -Eq '^ +[0-9]+ +[0-9.]+% .* compute_checksum$' || fail "pprof -top lacks compute_checksum: $top"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# (d) off-CPU: the unit is time
start "$WL/lock_contention" 4
"$DIAG" latency --pid "$PID" --duration 2 --json --flamegraph "$TMP/off.svg" --pprof "$TMP/off.pb.gz" \
	> "$TMP/off.json" 2> "$TMP/off.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "latency: exit $rc: $(cat "$TMP/off.err")"
assert_released "latency with --flamegraph and --pprof"
python3 - "$TMP/off.svg" <<'EOF' || fail "the off-CPU SVG: see above"
import sys, xml.etree.ElementTree as ET
ns = {'s': 'http://www.w3.org/2000/svg'}
root = ET.parse(sys.argv[1]).getroot()
assert root.get('data-unit') == 'ns', root.get('data-unit')
title = root.find(".//s:text[@id='title']", ns).text
assert 'off-CPU time' in title and 'latency' in title, title
names = [g.find('s:title', ns).text for g in root.findall(".//s:g", ns) if g.find('s:title', ns) is not None]
assert any(n.startswith('handle_request\n') for n in names), 'no handle_request frame'
assert any(' ms ' in n or ' s ' in n or ' \u00b5s ' in n for n in names), 'no human time unit in the details'
EOF
top=$(cd "$TMP" && go tool pprof -top off.pb.gz 2>&1) || fail "go tool pprof (off-CPU): $top"
echo "$top" | grep -q 'Type: time' || fail "off-CPU pprof type: $top"
echo "$top" | grep -q 'handle_request' || fail "off-CPU pprof -top lacks handle_request: $top"
top=$(cd "$TMP" && go tool pprof -top -sample_index=events off.pb.gz 2>&1) || fail "pprof events: $top"
echo "$top" | grep -q 'Type: events' || fail "off-CPU pprof has no events sample type: $top"

# (f) the differential flame graph: (a)'s run against the burner with a cheap checksum
LOCK_PID=$PID # (d)'s, for (e)
start "$WL/cpu_burner" 0 1
"$DIAG" high-cpu --pid "$PID" --duration 2 --json > "$TMP/fixed.json" 2> "$TMP/fixed.err"; rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "high-cpu (fixed): exit $rc: $(cat "$TMP/fixed.err")"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
PID=$LOCK_PID
assert_released "high-cpu on the fixed burner"
"$DIAG" diff "$TMP/cpu.json" "$TMP/fixed.json" --flamegraph "$TMP/diff.svg" > "$TMP/diff.txt" 2>&1; rc=$?
[ "$rc" = 0 ] || fail "diff --flamegraph: exit $rc: $(cat "$TMP/diff.txt")"
grep -q 'compute_checksum' "$TMP/diff.txt" || fail "diff text lacks compute_checksum: $(cat "$TMP/diff.txt")"
python3 - "$TMP/diff.svg" "$TMP/cpu.json" "$TMP/fixed.json" <<'PY' || fail "the differential SVG: see above"
import json, re, sys, xml.etree.ElementTree as ET
ns = {'s': 'http://www.w3.org/2000/svg'}
root = ET.parse(sys.argv[1]).getroot()
title = root.find(".//s:text[@id='title']", ns).text
assert title.startswith('Differential flame graph: on-CPU samples') and 'profile' in title, title
weights = []
for path in sys.argv[2:]:
    st = json.load(open(path))['results']['profile']['stacks']
    weights.append(sum(s['weight'] for s in st if s['weight'] > 0))
assert float(root.get('data-total')) == weights[1], (root.get('data-total'), weights)
assert float(root.get('data-total-before')) == weights[0], (root.get('data-total-before'), weights)
def frame(name):
    for g in root.findall(".//s:g", ns):
        t = g.find('s:title', ns)
        if t is not None and t.text.split('\n')[0] == name and g.get('class') == 'f u':
            return g, t.text
    raise AssertionError('no frame ' + name)
def rgb(g):
    m = re.match(r'rgb\((\d+),(\d+),(\d+)\)', g.find('s:rect', ns).get('fill'))
    return tuple(int(x) for x in m.groups())
g, text = frame('compute_checksum')
d = float(g.get('data-delta'))
assert d <= -20, 'compute_checksum moved %.1f points' % d
r, gr, b = rgb(g)
assert b > r + 60 and b > gr + 60, ('compute_checksum is not blue', r, gr, b)
assert 'before ' in text and 'after ' in text and ' points' in text, text
g, text = frame('parse_headers')
d = float(g.get('data-delta'))
assert d >= 20, 'parse_headers moved %.1f points' % d
r, gr, b = rgb(g)
assert r > b + 60 and r > gr + 60, ('parse_headers is not red', r, gr, b)
# widths: AFTER's share of the drawing
w = float(g.get('data-w'))
allw = float(root.find(".//s:g[@class='f r']/s:rect", ns).get('width'))
assert abs(float(g.find('s:rect', ns).get('width')) - w / weights[1] * allw) < 0.05
PY
shot "$TMP/diff.svg" "$TMP/diff.png"
python3 - "$TMP/diff.png" <<'PY' || fail "the differential screenshot: see above"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, i, red, blue = bytearray(stride), 0, 0, 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        red += r > 200 and g < 150 and b < 150
        blue += b > 200 and r < 150 and g < 150
assert red >= 500 and blue >= 500, 'red %d, blue %d pixels' % (red, blue)
PY
dom "file://$TMP/diff.svg#s=parse_headers" > "$TMP/diff.dom"
grep -q '>compute_checksum</text>' "$TMP/diff.dom" || fail "compute_checksum's label is not in the rendered DOM"
grep -Eq 'id="matched"[^>]*>Matched: [0-9.]+% \([0-9,]+ samples\)' "$TMP/diff.dom" ||
	fail "the search did not run in the differential graph"
# refusals: a probe BEFORE lacks, a unit that differs, --stacks-probe alone; no file left
"$DIAG" diff "$TMP/cpu.json" "$TMP/off.json" --flamegraph "$TMP/bad.svg" > /dev/null 2> "$TMP/bad.err"; rc=$?
[ "$rc" = 2 ] || fail "diff of high-cpu and latency with --flamegraph: exit $rc, want 2"
grep -q 'no stacks of probe' "$TMP/bad.err" || fail "missing-probe message: $(cat "$TMP/bad.err")"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r["results"]["profile"]["stack_unit"] = "ns"; json.dump(r, open(sys.argv[2], "w"))' \
	"$TMP/fixed.json" "$TMP/ns.json"
"$DIAG" diff "$TMP/cpu.json" "$TMP/ns.json" --flamegraph "$TMP/bad.svg" > /dev/null 2> "$TMP/bad.err"; rc=$?
[ "$rc" = 2 ] || fail "diff across units: exit $rc, want 2"
grep -q 'needs one unit' "$TMP/bad.err" || fail "unit message: $(cat "$TMP/bad.err")"
"$DIAG" diff "$TMP/cpu.json" "$TMP/fixed.json" --stacks-probe profile > /dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "diff --stacks-probe without --flamegraph: exit $rc, want 2"
[ ! -e "$TMP/bad.svg" ] || fail "a refused diff left its SVG behind"

# (e) a symlink at an output path is refused, its target left alone; --stacks-probe is checked
ln -s "$TMP/victim" "$TMP/link.svg"
echo keep > "$TMP/victim"
"$DIAG" latency --pid "$PID" --duration 1 --flamegraph "$TMP/link.svg" > /dev/null 2> "$TMP/link.err"; rc=$?
[ "$rc" = 2 ] || fail "--flamegraph through a symlink: exit $rc, want 2: $(cat "$TMP/link.err")"
[ "$(cat "$TMP/victim")" = keep ] || fail "the symlink's target was written"
"$DIAG" latency --pid "$PID" --duration 1 --pprof "$TMP/x.pb.gz" --stacks-probe nope > /dev/null 2> "$TMP/sp.err"; rc=$?
[ "$rc" = 2 ] || fail "--stacks-probe nope: exit $rc, want 2"
grep -q 'has no probe nope' "$TMP/sp.err" || fail "--stacks-probe message: $(cat "$TMP/sp.err")"
[ ! -e "$TMP/x.pb.gz" ] || fail "a refused run left its --pprof file behind"
assert_released "refused runs"
# under sudo, the files belong to the caller (here: nobody, in a directory of theirs)
mkdir -p "$TMP/nobody" && chown 65534:65534 "$TMP/nobody" && chmod 755 "$TMP" "$TMP/nobody"
SUDO_UID=65534 SUDO_GID=65534 "$DIAG" latency --pid "$PID" --duration 1 \
	--flamegraph "$TMP/nobody/f.svg" --pprof "$TMP/nobody/p.pb.gz" > /dev/null 2> "$TMP/sudo.err"; rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "run as a sudo caller: exit $rc: $(cat "$TMP/sudo.err")"
for f in "$TMP/nobody/f.svg" "$TMP/nobody/p.pb.gz"; do
	[ "$(stat -c %u:%g:%a "$f")" = 65534:65534:644 ] || fail "$f: $(stat -c %u:%g:%a "$f"), want 65534:65534:644"
done
assert_released "a sudo caller's run"
exit 0
