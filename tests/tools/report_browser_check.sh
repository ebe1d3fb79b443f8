#!/bin/bash
# report_browser_check.sh REPORT.html WORKDIR KIND... - open a report of
# `sh5merge report` in Debian's chromium-headless-shell from file:// and
# check: no console message at all (errors, warnings, logs), no network
# request (the browser's own net log lists every URL it asked for), the
# script finished (body data-ready="1"), and the rendered DOM holds at
# least one <figure data-kind="KIND"> per KIND given ("!KIND": none).
# TEXT=... in the environment: the DOM must also contain that text.
# Prints ok/FAIL lines; exit 1 on any failure, 77 without the browser.
set -u
html=$1 W=$2
shift 2
CHROME=$(command -v chromium-headless-shell || command -v chromium || true)
[ -n "$CHROME" ] || { echo "no chromium-headless-shell"; exit 77; }
mkdir -p "$W"
udd=$(mktemp -d "$W/udd.XXXXXX")
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
url="file://$(cd "$(dirname "$html")" && pwd)/$(basename "$html")"
timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic \
	--no-first-run --disable-background-networking \
	--disable-component-update --disable-sync --user-data-dir="$udd" \
	--enable-logging=stderr --v=0 --log-net-log="$W/net.json" \
	--virtual-time-budget=10000 --dump-dom "$url" \
	>"$W/dom.html" 2>"$W/chrome.log"
rc=$?
rm -rf "$udd"
[ $rc = 0 ] && [ -s "$W/dom.html" ] && ok "chromium loaded $url" ||
	{ tail -5 "$W/chrome.log"; bad "chromium exit $rc"; }
if grep -q ':CONSOLE' "$W/chrome.log"; then
	grep ':CONSOLE' "$W/chrome.log" | head -5
	bad "console messages"
else ok "no console messages"; fi
urls=$(/usr/bin/python3 - "$W/net.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
u = {e["params"]["url"] for e in d.get("events", [])
     if "url" in e.get("params", {})}
print(" ".join(sorted(x for x in u if not x.startswith(("file:", "data:")))))
PY
)
[ -z "$urls" ] && ok "no network requests" || bad "network requests: $urls"
grep -q '<body[^>]*data-ready="1"' "$W/dom.html" &&
	ok "report script finished" || bad "report script did not finish"
for k in "$@"; do
	case $k in
	!*)	n=$(grep -o "data-kind=\"${k#!}\"" "$W/dom.html" | wc -l)
		[ "$n" = 0 ] && ok "no ${k#!} figure" ||
			bad "$n ${k#!} figures, want none";;
	*)	n=$(grep -o "data-kind=\"$k\"" "$W/dom.html" | wc -l)
		[ "$n" -gt 0 ] && ok "$n $k figure(s)" || bad "no $k figure";;
	esac
done
if [ -n "${TEXT:-}" ]; then
	grep -qF -- "$TEXT" "$W/dom.html" && ok "DOM says: $TEXT" ||
		bad "DOM lacks: $TEXT"
fi
[ $fails = 0 ]
