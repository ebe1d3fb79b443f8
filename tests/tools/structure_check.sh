#!/bin/bash
# structure_check.sh: the source tree keeps the shape doc/hacking.md
# promises (areas used downwards only, no circles, file and function
# sizes): tests/tools/structure_check.py on the tree, which must report
# no violation.
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
out=$(/usr/bin/python3 "$src/tests/tools/structure_check.py" "$src") 
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: structure_check: see the violations above" >&2; exit 1; }
# The check must have read the tree: every area and the three programs.
n=$(echo "$out" | sed -n 's/^structure: \([0-9]*\) files, 0 violations$/\1/p')
[ -n "$n" ] && [ "$n" -gt 150 ] || { echo "FAIL: structure_check read ${n:-no} files" >&2; exit 1; }
# And it sees a violation: a tiny tree where common calls up into profile
# and a function is too long.
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/src/common" "$t/src/profile"
printf '#include "profile/b.h"\nint a(void)\n{\n\treturn b();\n}\n' >"$t/src/common/a.c"
printf 'int b(void);\n' >"$t/src/profile/b.h"
{ printf '#include "common/a.h"\nint b(void)\n{\n'
  for i in $(seq 1 90); do printf '\t(void)0;\n'; done
  printf '\treturn a();\n}\n'; } >"$t/src/profile/b.c"
printf 'int a(void);\n' >"$t/src/common/a.h"
bad=$(/usr/bin/python3 "$src/tests/tools/structure_check.py" "$t") &&
	{ echo "FAIL: a bad tree passed" >&2; exit 1; }
for want in 'common may not use profile' 'circle between' 'b() is 94 lines'; do
	echo "$bad" | grep -q "$want" ||
		{ echo "FAIL: not reported: $want" >&2; echo "$bad" >&2; exit 1; }
done
echo "structure ok: $n files"
