#!/bin/bash
# sanitizer_run.sh - the library, sh5merge and the event readers built
# with -fsanitize=address,undefined in a second build directory, and the
# unit and sh5merge tool tests run there with halt_on_error.  Any
# sanitizer report (in any process, children included) fails the test.
#
# The build is cached under /var/cache/sh5/asan-KEY (KEY: a hash of the
# sources and build files and of the clone's path, so a change rebuilds
# in a fresh directory and a clone never uses another clone's build);
# SH5_ASAN_DIR overrides the directory, SH5_ASAN_TESTS the list of
# tests.  SH5_NO_SANITIZER=1 skips (exit 77).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
# Never inside the sanitizer build itself (make passes TESTS down).
case $(cd "$top_builddir" && pwd) in /var/cache/sh5/asan-*|*/san-*) exit 77 ;; esac
[ -n "${SH5_IN_SANITIZER_RUN:-}" ] && exit 77
[ "${SH5_NO_SANITIZER:-0}" = 1 ] && { echo "skipped by SH5_NO_SANITIZER"; exit 77; }
top=$(cd "$top_srcdir" && pwd)
echo 'int main(void){return 0;}' > /tmp/sh5-asan-probe.$$.c
if ! cc -fsanitize=address,undefined /tmp/sh5-asan-probe.$$.c \
	-o /tmp/sh5-asan-probe.$$ 2>/dev/null; then
	rm -f /tmp/sh5-asan-probe.$$*
	echo "the compiler cannot build with -fsanitize=address,undefined"
	exit 77
fi
rm -f /tmp/sh5-asan-probe.$$*

# The build directory is bound to the clone that configured it (its
# Makefiles and dependency files name that source tree): the clone's path
# is part of the key, so that a clone removed since (an earlier CI run's)
# never leaves a cache entry another clone of the same sources uses.
key=$( (cd "$top" && find src sh5merge tests/unit tests/tools bench mk \
	configure.ac Makefile.am -type f \( -name '*.[ch]' -o -name '*.am' \
	-o -name '*.ac' \) -print0 | sort -z | xargs -0 cat; echo "$top") |
	md5sum | cut -c1-12)
cache=${SH5_ASAN_CACHE:-/var/cache/sh5}
dir=${SH5_ASAN_DIR:-$cache/asan-$key}
mkdir -p "$dir" || exit 1
# One run at a time builds and tests in a cache directory (a second clone
# of the same tree waits for the first).  Older keys of this source tree
# are stale: keep the three newest, and remove an older one only while no
# run holds it.
exec 8>"$dir/.lock"
flock -w 1200 8 || echo "note: $dir still held by another run after 20 min: going on"
for old in $(ls -dt "$cache"/asan-* 2>/dev/null | tail -n +4); do
	[ "$old" = "$dir" ] && continue
	( flock -n 9 && rm -rf "$old" ) 9>>"$old/.lock" 2>/dev/null
done

# The makes below must not inherit the outer make's TESTS (which names
# this test: a recursion); a nested run also stops at the guard above.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
export SH5_IN_SANITIZER_RUN=1
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer \
-fno-sanitize-recover=undefined"
cd "$dir" || exit 1
if [ ! -f Makefile ]; then
	"$top/configure" -q --with-slurm-source="${SH5_SLURM_SRC:-}" \
		CFLAGS="-g -O1 $SAN" LDFLAGS="$SAN" >configure.out 2>&1 ||
		{ cat configure.out; echo "FAIL: configure"; exit 1; }
fi
t0=$(date +%s)
# -O1 brings truncation warnings that -O2 does not: no -Werror here.
W="WARN_CFLAGS=-Wall -Wextra"
make -s -j"$(nproc)" "$W" >make.out 2>&1 ||
	{ tail -30 make.out; echo "FAIL: sanitizer build"; exit 1; }
echo "sanitizer build: $(( $(date +%s) - t0 )) s ($dir)"

TESTS_DEFAULT="tests/unit/common/test_outfile \
tests/unit/common/test_runstats tests/unit/common/test_csvfmt tests/unit/profile/test_series \
tests/unit/profile/test_writer_threads tests/unit/common/test_dwrite \
tests/unit/events/test_evabsorb tests/unit/merge/test_merge_ready \
tests/unit/events/test_evspill tests/unit/events/test_evstore tests/unit/sync/test_jobevents \
tests/unit/export/test_evlb tests/unit/export/test_lbdata tests/unit/sync/test_trace \
tests/unit/sync/test_timesync tests/unit/sync/test_mergesync \
tests/tools/harden_sweep.sh tests/tools/merge_faults.sh tests/tools/merge_changed.sh \
tests/tools/merge_planted.sh \
tests/tools/merge_values.sh tests/tools/extract_parallel.sh \
tests/tools/exports_counters.sh tests/tools/exports_lbdata.sh \
tests/tools/exports_events.sh tests/tools/events_merge.sh \
tests/tools/sync_errors.sh tests/tools/sync_clc.sh \
tests/tools/sh5ev_dump.sh"
tests=${SH5_ASAN_TESTS:-$TESTS_DEFAULT}
logs="$dir/san-logs"
rm -rf "$logs"
mkdir -p "$logs"
# log_path: a report of any process (a forked child too) leaves a file.
# handle_segv=0: a crash is a crash signal, as without ASan (merge tells
# a child killed by libhdf5 on a damaged file from one that failed).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$logs/asan:allocator_may_return_null=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:suppressions=$top/tests/tools/asan.supp"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
export LSAN_OPTIONS="suppressions=$top/tests/tools/lsan.supp:print_suppressions=0"
# Check's per-test timeouts are for an optimized build.
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-4}
t0=$(date +%s)
make -s -j"$(nproc)" "$W" check TESTS= >>make.out 2>&1 ||
	{ tail -30 make.out; echo "FAIL: sanitizer build of the tests"; exit 1; }
make -s -j1 "$W" check TESTS="$tests" >check.out 2>&1
rc=$?
echo "sanitizer tests: $(( $(date +%s) - t0 )) s"
grep -E '^(PASS|FAIL|ERROR|SKIP|XPASS):' check.out
# Reports that reached a test's log instead (a child's stderr).
grep -lE 'runtime error:|ERROR: (Address|Leak)Sanitizer' \
	$(find . -name '*.log' -newer make.out ! -name test-suite.log) \
	2>/dev/null |
	while read -r l; do cp "$l" "$logs/in-$(basename "$l")"; done
reports=$(ls "$logs" 2>/dev/null | wc -l)
if [ "$reports" -gt 0 ]; then
	for f in "$logs"/*; do
		echo "=== $f"
		head -40 "$f"
	done
	echo "FAIL: $reports sanitizer report(s)"
	exit 1
fi
[ $rc -eq 0 ] || {
	for l in $(grep -lE '^:test-result: (FAIL|ERROR)' $(find . -name '*.trs'))
	do echo "=== ${l%.trs}.log"; tail -30 "${l%.trs}.log"; done
	echo "FAIL: a test failed under the sanitizers"; exit 1; }
echo "ok: no sanitizer report"
