#!/bin/bash
# The writer's threading (gather threads appending, a flush thread, close)
# under valgrind's helgrind: no data race may be reported.
set -u
. "$top_srcdir/tests/lib/common.sh"
need_cmd valgrind
prog=$top_builddir/tests/unit/.libs/test_writer_threads
[ -x "$prog" ] || prog=$top_builddir/tests/unit/profile/test_writer_threads
log=$(mktemp /tmp/sh5-helgrind.XXXXXX)
CK_FORK=no LD_LIBRARY_PATH=$top_builddir/src/.libs valgrind --tool=helgrind --suppressions="$top_srcdir/tests/tools/helgrind.supp" \
	--error-exitcode=9 --log-file="$log" "$prog" >/dev/null
rc=$?
if [ $rc -ne 0 ]; then
	grep -A12 "Possible data race\|lock order" "$log" | head -60
	rm -f "$log"
	fail "helgrind reported problems (exit $rc)"
fi
grep -q "ERROR SUMMARY: 0 errors" "$log" || { rm -f "$log"; fail "no clean helgrind summary"; }
rm -f "$log"
echo "helgrind: no races in the writer"
