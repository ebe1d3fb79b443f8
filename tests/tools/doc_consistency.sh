#!/bin/bash
# doc_consistency.sh - the man pages render cleanly and match the code.
#
# 1. groff renders doc/sh5merge.1 and doc/acct_gather_profile_sh5.5 with
#    every warning on (-ww), for ps and for a terminal, without a message.
# 2. Every option that `sh5merge [CMD] --help` prints is documented in
#    doc/sh5merge.1, in the section of its command (short and long form
#    together, "-j, --jobs", as the help shows them); so is every long
#    option of the getopt tables in sh5merge/ (options the help may not
#    show); and every long option the man page names exists.
# 3. Every ProfileSH5* key the plugin declares is in
#    doc/acct_gather_profile_sh5.5 and as a KEY= line (commented or not)
#    in conf/acct_gather.conf.example, and those two name no other key.
# Exit 0 pass, 1 fail, 77 when groff is missing.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
S=$top_srcdir
SH5MERGE=$top_builddir/sh5merge/sh5merge
MAN1=$S/doc/sh5merge.1
MAN5=$S/doc/acct_gather_profile_sh5.5
CONF=$S/conf/acct_gather.conf.example
PLUGIN=$S/plugins/sh5_options.c
COMMANDS="merge extract list sync events lbdata counters report otf2"
# Options of other programs the man page may name.
FOREIGN="--profile --data-binary"

if ! command -v groff >/dev/null; then
	echo "SKIP: groff not installed (scripts/install-deps.sh: groff-base)"
	exit 77
fi
[ -x "$SH5MERGE" ] || { echo "FAIL: $SH5MERGE not built"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Plain text of a page: no hyphenation, no line breaks within paragraphs
# (a huge line length), no overstriking.
render() {
	groff -man -Tascii -rLL=5000n -P-cbou "$1" 2>/dev/null
}

# ---------------------------------------------------------------- 1
for page in "$MAN1" "$MAN5"; do
	for dev in ps utf8; do
		groff -man -T$dev -ww -z "$page" >"$tmp/warn" 2>&1
		if [ -s "$tmp/warn" ]; then
			fail "groff -T$dev -ww warns on ${page#$S/}:"
			sed 's/^/  /' "$tmp/warn"
		fi
	done
	if [ "$(render "$page" | wc -l)" -lt 20 ]; then
		fail "${page#$S/} renders to almost nothing"
	fi
done
render "$MAN1" >"$tmp/man1.txt"
render "$MAN5" >"$tmp/man5.txt"
echo "ok: groff -ww renders both pages without warnings"

# ---------------------------------------------------------------- 2
# The text of section NAME (a heading at column 0) of the sh5merge page.
section() {
	awk -v want="$1" '/^[A-Z]/ { on = ($0 == want); next } on' \
		"$tmp/man1.txt"
}

# check_opts SECTION HELPFILE: each option line of the help is in SECTION.
check_opts() {
	local sect=$1 help=$2 text=$tmp/sect.txt n=0 spec
	section "$sect" >"$text"
	if [ ! -s "$text" ]; then
		fail "doc/sh5merge.1 has no section $sect"
		return
	fi
	# "  -j, --jobs LIST  ..." and "      --sync METHOD ...": the option
	# words at the start of a line of the help's option list.
	while read -r spec; do
		n=$((n + 1))
		grep -qF -- "$spec" "$text" ||
			fail "$sect: '$spec' (from --help) is not in doc/sh5merge.1"
	done < <(sed -nE 's/^ +(-[A-Za-z], --[a-z][a-z0-9-]*|--[a-z][a-z0-9-]*).*/\1/p' \
		"$help")
	[ "$n" -ge 2 ] || fail "$sect: only $n options parsed from --help"
	echo "ok: $sect: $n options of --help documented"
}

"$SH5MERGE" --help >"$tmp/help.main" 2>&1 ||
	fail "sh5merge --help exits non-zero"
check_opts OPTIONS "$tmp/help.main"
for cmd in $COMMANDS; do
	if ! "$SH5MERGE" "$cmd" --help >"$tmp/help.$cmd" 2>&1; then
		fail "sh5merge $cmd --help exits non-zero"
		continue
	fi
	check_opts "${cmd^^}" "$tmp/help.$cmd"
	section SYNOPSIS | grep -qE "^ *sh5merge( \[-q\])? $cmd( |\$)" ||
		fail "SYNOPSIS does not show $cmd"
done

# Long options of the code's getopt tables (struct option lines), by the
# command whose file holds them: cmd_<cmd>.c, merge_integ.h for merge.
code_longs() {
	sed -nE 's/.*\{ *"([a-z][a-z0-9-]*)", *(no|required|optional)_argument.*/\1/p' "$@"
}
for cmd in $COMMANDS; do
	files=$S/sh5merge/cmd_$cmd.c
	[ "$cmd" = merge ] && files="$files $S/sh5merge/merge_integ.h"
	# shellcheck disable=SC2086
	longs=$(code_longs $files)
	[ -n "$longs" ] || { fail "no getopt table found for $cmd"; continue; }
	section "${cmd^^}" >"$tmp/sect.txt"
	for o in $longs; do
		grep -qE -- "--$o([^a-z0-9-]|\$)" "$tmp/sect.txt" ||
			fail "${cmd^^}: --$o (accepted by the code) is not documented"
		grep -qE -- "--$o([^a-z0-9-]|\$)" "$tmp/help.$cmd" ||
			echo "note: $cmd --help does not show --$o"
	done
done
echo "ok: every long option of the getopt tables is documented"

# Every --option the page names exists somewhere.
cat "$tmp"/help.* >"$tmp/help.all"
for o in $(grep -oE -- '--[a-z][a-z0-9-]*' "$tmp/man1.txt" | sort -u); do
	case " $FOREIGN " in *" $o "*) continue ;; esac
	grep -qE -- "$o([^a-z0-9-]|\$)" "$tmp/help.all" ||
		fail "doc/sh5merge.1 names $o, which no --help shows"
done
echo "ok: every long option doc/sh5merge.1 names exists"

# ---------------------------------------------------------------- 3
keys=$(sed -nE 's/.*\.key *= *"(ProfileSH5[A-Za-z0-9]*)".*/\1/p' "$PLUGIN" |
	sort -u)
nkeys=$(echo "$keys" | wc -w)
[ "$nkeys" -ge 5 ] || fail "only $nkeys ProfileSH5 keys found in the plugin"
for k in $keys; do
	grep -qw -- "$k" "$tmp/man5.txt" ||
		fail "$k is not in doc/acct_gather_profile_sh5.5"
	grep -qE "^[[:space:]]*#?[[:space:]]*$k[[:space:]]*=" "$CONF" ||
		fail "$k has no line in conf/acct_gather.conf.example"
done
for f in man5.txt:doc/acct_gather_profile_sh5.5 \
	 man1.txt:doc/sh5merge.1 conf:conf/acct_gather.conf.example; do
	src=$tmp/${f%%:*}
	[ "${f%%:*}" = conf ] && src=$CONF
	for k in $(grep -oE 'ProfileSH5[A-Za-z0-9]+' "$src" | sort -u); do
		echo "$keys" | grep -qx -- "$k" ||
			fail "${f#*:} names $k, which the plugin does not declare"
	done
done
echo "ok: $nkeys ProfileSH5 keys in the man page and the example"

if [ "$fails" -gt 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "PASS"
exit 0
