#!/bin/bash
# fuzz_run.sh - the libFuzzer targets (scripts/fuzz) in the test suite,
# bounded: each replays its seed corpus (tests/fuzz/corpus/TARGET, crash
# inputs of fixed bugs included), then fuzzes for SH5_FUZZ_SECONDS
# (default 5) with a fixed seed.  Any crash, sanitizer report or leak
# fails.  Skips (77) without clang's libFuzzer.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
# Never inside the sanitizer build itself (make passes TESTS down).
case $(cd "$top_builddir" && pwd) in /var/cache/sh5/asan-*|*/san-*) exit 77 ;; esac
[ -n "${SH5_IN_SANITIZER_RUN:-}" ] && exit 77
top=$(cd "$top_srcdir" && pwd)
secs=${SH5_FUZZ_SECONDS:-5}
export SH5_BUILD_DIR=$(cd "$top_builddir" && pwd)
command -v clang >/dev/null || { echo "no clang"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){return 0;}' \
	> /tmp/fuzz_probe.$$.c
if ! clang -fsanitize=fuzzer /tmp/fuzz_probe.$$.c -o /tmp/fuzz_probe.$$ \
	2>/dev/null; then
	rm -f /tmp/fuzz_probe.$$*
	echo "no libFuzzer (apt-get install libclang-rt-14-dev)"; exit 77
fi
rm -f /tmp/fuzz_probe.$$*
"$top/scripts/fuzz" --build >/dev/null || { echo "FAIL: fuzz build"; exit 1; }
fails=0
for t in $("$top/scripts/fuzz" --list); do
	n=$(ls "$top/tests/fuzz/corpus/$t" | wc -l)
	[ "$n" -gt 0 ] || { echo "FAIL: $t: no seed corpus"; fails=$((fails + 1)); }
	if timeout -k 5 $((secs + 60)) "$top/scripts/fuzz" "$t" "$secs" \
		-seed=1 >"/tmp/fuzz_run.$$.$t" 2>&1; then
		echo "ok: $t: $n seeds, $(sed -n 's/^stat::number_of_executed_units: *//p' /tmp/fuzz_run.$$.$t) runs"
	else
		grep -A30 -E 'ERROR|runtime error|SUMMARY|Test unit written' \
			"/tmp/fuzz_run.$$.$t" | head -60
		echo "FAIL: $t"
		fails=$((fails + 1))
	fi
	rm -f "/tmp/fuzz_run.$$.$t"
done
[ $fails -eq 0 ]
