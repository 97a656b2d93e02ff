#!/usr/bin/env bash
# report_render.sh - the HTML report of `bench --diagnose --report`: writes a
# typical and an edge-case page with tests/test_report, checks them as text
# (the three chart ids, nothing fetched or run, strings escaped, empty data
# said so), then renders the typical one in headless Chromium and checks the
# screenshot shows the charts (decoded with python3's zlib, no PIL).
# Usage (meson does this): report_render.sh PATH_TO_test_report
# Exit 0 pass, 1 fail, 77 skip (no Chromium or python3 for the render).
set -euo pipefail
bin=${1:?usage: report_render.sh PATH_TO_test_report}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-report-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

main=$tmp/main.html edge=$tmp/edge.html
"$bin" "$main" "$edge" || fail "test_report exited with $?"

# each page and the charts it has: a section with nothing to show is left
# out (the edge case has no batches and no trials; "many" and "zeros" only
# waits; tune's page no waits)
tune=$main.tune.html
charts() {
	case $1 in
	"$main") echo chart-stages chart-waits chart-tune ;;
	"$edge") echo chart-stages ;;
	"$tune") echo chart-stages chart-tune ;;
	*) echo chart-waits ;;
	esac
}
for f in "$main" "$edge" "$edge.many.html" "$edge.zeros.html" "$tune"; do
	[ -s "$f" ] || fail "$f not written"
	want=$(charts "$f")
	for id in chart-stages chart-waits chart-tune; do
		if [[ " $want " == *" $id "* ]]; then
			grep -q "<svg id=\"$id\"" "$f" || fail "$(basename "$f"): no <svg id=\"$id\">"
		else
			! grep -q "<svg id=\"$id\"" "$f" || fail "$(basename "$f"): an empty $id is drawn"
		fi
	done
	! grep -qi '<script' "$f" || fail "$(basename "$f"): has a <script"
	! grep -qiE 'https?://' "$f" || fail "$(basename "$f"): refers to http(s)://: $(grep -oiE 'https?://[^" ]*' "$f" | head -1)"
	! grep -qiE '<(link|img|iframe|object|embed)\b|@import|url\(' "$f" || fail "$(basename "$f"): fetches something"
	[ "$(grep -c '</svg>' "$f")" -eq "$(wc -w <<<"$want")" ] || fail "$(basename "$f"): not $(wc -w <<<"$want") closed svgs"
	! grep -qE 'nan|inf' <(grep -oE '(x|y|width|height|cx|cy|x1|x2|y1|y2|points)="[^"]*"' "$f") ||
		fail "$(basename "$f"): NaN or inf in a coordinate"
done

# the edge case: escaped, and its empty charts say so
grep -q '&lt;&amp;&gt;&quot;' "$edge" || fail "edge title not escaped as &lt;&amp;&gt;&quot;"
grep -q '&lt;b&gt;not bold&lt;/b&gt; &amp; not a tag' "$edge" || fail "edge explanation not escaped"
grep -q 'fetch &lt;raw&gt; &amp; &quot;quoted&quot;' "$edge" || fail "edge stage name not escaped"
! grep -q 'Tuning trials' "$edge" || fail "edge: an empty \"Tuning trials\" section"
! grep -q 'Consumer wait' "$edge" || fail "edge: an empty \"Consumer wait\" section"
grep -q '>n/a<' "$edge" || fail "edge: a NaN stage is not labelled n/a"

# the typical page: charts with content
count() { grep -o "$1" "$main" | wc -l; }
[ "$(count '<rect')" -ge 250 ] || fail "main: only $(count '<rect') <rect (300 wait bars + 4 stage bars expected)"
[ "$(count '<circle')" -ge 16 ] || fail "main: only $(count '<circle') <circle (8 trials x 2 panels expected)"
[ "$(count '<polyline')" -ge 2 ] || fail "main: no best-per-value lines in chart-tune"
grep -q 'stroke-dasharray' "$main" || fail "main: no dashed step line in chart-waits"
grep -q '>step 12.0 ms<' "$main" || fail "main: step line not labelled"
grep -q '>18,450<' "$main" || fail "main: stage value label 18,450 missing"
grep -q '>wait (ms)<' "$main" || fail "main: wait axis title missing"
grep -q 'class="warning">the machine is busy' "$main" || fail "main: the busy warning is missing"
grep -q '<h2>Reads, and the cost to the trainer</h2>' "$main" || fail "main: the findings section is missing"
grep -q 'class="finding">Cost to the trainer: a CPU-bound step' "$main" || fail "main: a finding is missing"
# tune's page: its own title, whiskers with the runs' range, no waits section
grep -q '<h2>Finalists, repeated: samples/s</h2>' "$tune" || fail "tune: not titled as finalists"
! grep -q 'Throughput by stage' "$tune" || fail "tune: reuses \"Throughput by stage\""
! grep -q 'Consumer wait' "$tune" || fail "tune: an empty \"Consumer wait\" section"
grep -q '(869&#8211;1,261)' "$tune" || fail "tune: the spread 869-1,261 is not shown"
[ "$(grep -c '<path d="M' "$tune")" -eq 3 ] || fail "tune: not 3 whiskers"
grep -q 'mean of a bucket' "$edge.many.html" ||
	fail "many batches: not bucketed"
echo "text checks: ok ($(wc -c <"$main") bytes, $(count '<rect') rects, $(count '<circle') circles)"

# the render
chrome=
for c in chromium chromium-browser google-chrome; do
	if command -v "$c" >/dev/null 2>&1; then chrome=$(command -v "$c"); break; fi
done
if [ -z "$chrome" ]; then
	echo "SKIP: no chromium or chromium-browser on PATH (scripts/deps.sh installs chromium); text checks passed"
	exit 77
fi
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
if [ -z "$py" ]; then
	echo "SKIP: no python3 to decode the screenshot; text checks passed"
	exit 77
fi
png=$tmp/main.png
if ! timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--disable-dev-shm-usage --user-data-dir="$tmp/profile" \
	--screenshot="$png" --window-size=1200,1600 "file://$main" >"$tmp/chrome.log" 2>&1; then
	tail -20 "$tmp/chrome.log" >&2
	fail "$chrome did not render the page"
fi
[ -s "$png" ] || { tail -20 "$tmp/chrome.log" >&2; fail "no screenshot written"; }
[ -n "${RF_REPORT_PNG:-}" ] && cp "$png" "$RF_REPORT_PNG"

"$py" - "$png" <<'EOF'
# Decodes the PNG (8-bit gray/RGB/RGBA, not interlaced) and checks it shows
# a page with charts: many colours, not mostly blank, the bar colour and the
# verdict colour present over real areas.
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
if data[:8] != b'\x89PNG\r\n\x1a\n':
    sys.exit('FAIL: not a PNG')
pos, idat, hdr = 8, [], None
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        hdr = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT':
        idat.append(body)
    elif kind == b'IEND':
        break
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = hdr
chans = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
if depth != 8 or chans is None or interlace:
    sys.exit('FAIL: unsupported PNG (depth %d, colour type %d, interlace %d)' % (depth, ctype, interlace))
raw = zlib.decompress(b''.join(idat))
stride = w * chans
prev = bytearray(stride)
colours, nonwhite, bar, verdict = {}, 0, 0, 0
for y in range(h):
    f = raw[y * (stride + 1)]
    row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if f == 1:
        for i in range(chans, stride):
            row[i] = (row[i] + row[i - chans]) & 255
    elif f == 2:
        row = bytearray((a + b) & 255 for a, b in zip(row, prev))
    elif f == 3:
        for i in range(stride):
            left = row[i - chans] if i >= chans else 0
            row[i] = (row[i] + ((left + prev[i]) >> 1)) & 255
    elif f == 4:
        for i in range(stride):
            a = row[i - chans] if i >= chans else 0
            b = prev[i]
            c = prev[i - chans] if i >= chans else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    elif f != 0:
        sys.exit('FAIL: bad PNG filter %d' % f)
    prev = row
    for x in range(0, stride, chans):
        px = bytes(row[x:x + min(chans, 3)])
        colours[px] = colours.get(px, 0) + 1
for px, n in colours.items():
    if px not in (b'\xff\xff\xff', b'\xff'):
        nonwhite += n
total = w * h
bar = colours.get(bytes((0x4c, 0x78, 0xa8)), 0)
verdict = colours.get(bytes((0x8e, 0x44, 0xad)), 0)
print('screenshot: %dx%d, %d distinct colours, %.1f%% not white, %d bar-colour px, %d verdict-colour px'
      % (w, h, len(colours), 100.0 * nonwhite / total, bar, verdict))
if len(colours) < 50:
    sys.exit('FAIL: only %d distinct colours: blank or failed render' % len(colours))
if nonwhite < total * 0.03:
    sys.exit('FAIL: the screenshot is almost all white')
if bar < 5000:
    sys.exit('FAIL: bars (#4c78a8) cover only %d px: charts not drawn' % bar)
if verdict < 200:
    sys.exit('FAIL: the verdict colour (#8e44ad) covers only %d px' % verdict)
EOF
echo "render: ok"
