# tests/lib/common.sh - tiny assertion helpers for shell tests.
#
# Source it from a test script:
#   . "$top_srcdir/tests/lib/common.sh"
# Every failing assertion prints "FAIL: <test>: <message>" on stderr and
# exits 1 (the automake convention: 0 pass, 77 skip, 99 hard error, else
# fail).  The exit runs the caller's EXIT trap, so a cluster started with
# tests/lib/cluster.sh is still stopped.

# Name used in messages: the script's base name.
TEST_NAME=${TEST_NAME:-$(basename "${0:-test}")}

# fail MESSAGE...: print the message and exit 1.
fail() {
	echo "FAIL: $TEST_NAME: $*" >&2
	exit 1
}

# skip MESSAGE...: print the reason and exit 77 (automake "SKIP").
skip() {
	echo "SKIP: $TEST_NAME: $*" >&2
	exit 77
}

# note MESSAGE...: progress line on stderr (lands in the test's .log).
note() {
	echo "# $TEST_NAME: $*" >&2
}

# assert_eq EXPECTED ACTUAL [WHAT]: string equality.
assert_eq() {
	[ "$1" = "$2" ] ||
		fail "${3:-value}: expected '$1', got '$2'"
}

# assert_ne UNEXPECTED ACTUAL [WHAT]: string inequality.
assert_ne() {
	[ "$1" != "$2" ] ||
		fail "${3:-value}: did not expect '$1'"
}

# assert_ge MIN ACTUAL [WHAT]: integer ACTUAL >= MIN.
assert_ge() {
	[ "$2" -ge "$1" ] 2>/dev/null ||
		fail "${3:-value}: expected >= $1, got '$2'"
}

# assert_file PATH [WHAT]: PATH exists and is a regular file.
assert_file() {
	[ -f "$1" ] || fail "${2:-file}: '$1' does not exist or is not a regular file"
}

# assert_no_file PATH [WHAT]: nothing (not even a dangling link) at PATH.
assert_no_file() {
	[ ! -e "$1" ] && [ ! -L "$1" ] ||
		fail "${2:-path}: '$1' should not exist"
}

# assert_match REGEX STRING [WHAT]: STRING matches the extended regex.
assert_match() {
	printf '%s\n' "$2" | grep -Eq -- "$1" ||
		fail "${3:-value}: '$2' does not match /$1/"
}

# assert_cmd COMMAND...: run the command, fail (with its status) if it
# does not exit 0.
assert_cmd() {
	local rc=0
	"$@" || rc=$?
	[ "$rc" -eq 0 ] || fail "command failed (exit $rc): $*"
}

# need_root: skip unless running as root (real daemons need it).
need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
}

# need_cmd NAME...: skip unless every command is on PATH.
need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "needs '$c'"
	done
}

# PYTHON: the interpreter that sees python3-h5py and python3-numpy.
PYTHON=${PYTHON:-/usr/bin/python3}
