#!/bin/bash
# debian/slurm-depends.sh: the package's dependency on the Slurm release
# of the tree it is built against, on made-up trees (no build, no root):
# Debian's slurm-wlm source -> exactly its version; an upstream tree, with
# or without SchedMD's debian/ -> every Debian revision of the upstream
# release, and the range's bounds checked with dpkg --compare-versions;
# SH5_SLURM_DEPENDS replaces the relation; bad trees are errors naming
# the file.  Also: debian/rules refuses to configure without SH5_SLURM_SRC.
set -u
. "$top_srcdir/tests/lib/common.sh"

need_cmd dpkg-parsechangelog dpkg make
DEP=$top_srcdir/debian/slurm-depends.sh
T=$(mktemp -d /tmp/sh5-pkgdep.XXXXXX) || fail "mktemp"
trap 'rm -rf "$T"' EXIT

# mktree DIR VERSION [SOURCE DEBVERSION]: config.h, and a debian/changelog
# of source package SOURCE when given.
mktree() {
	mkdir -p "$1"
	printf '#define SLURM_VERSION_STRING "%s"\n' "$2" >"$1/config.h"
	[ $# -ge 4 ] || return 0
	mkdir -p "$1/debian"
	cat >"$1/debian/changelog" <<EOF
$3 ($4) unstable; urgency=medium

  * Test.

 -- Someone <someone@example.org>  Mon, 01 Jan 2024 00:00:00 +0000
EOF
}

mktree "$T/deb" 22.05.8 slurm-wlm 22.05.8-4+deb12u3
mktree "$T/up" 24.11.5
mktree "$T/smd" 24.11.5 slurm-smd 24.11.5-1
mktree "$T/mismatch" 22.05.9 slurm-wlm 22.05.8-4
mktree "$T/bad" unknown

assert_eq "# slurm 22.05.8
slurmd (= 22.05.8-4+deb12u3)" "$(sh "$DEP" "$T/deb")" "Debian slurm-wlm tree"
assert_eq "# slurm 24.11.5
slurmd (>= 24.11.5), slurmd (<< 24.11.5.~)" "$(sh "$DEP" "$T/up")" "upstream tree"
assert_eq "# slurm 24.11.5
slurmd (>= 24.11.5), slurmd (<< 24.11.5.~)" "$(sh "$DEP" "$T/smd")" \
	"upstream tree with SchedMD's debian/"
assert_eq "# slurm 22.05.9
slurmd (>= 22.05.9), slurmd (<< 22.05.9.~)" "$(sh "$DEP" "$T/mismatch" 2>/dev/null)" \
	"changelog of another release"
assert_eq "# slurm 22.05.8
slurm-smd-slurmd (= 22.05.8-1)" \
	"$(SH5_SLURM_DEPENDS='slurm-smd-slurmd (= 22.05.8-1)' sh "$DEP" "$T/deb")" \
	"SH5_SLURM_DEPENDS"
assert_eq "# slurm 22.05.8" "$(SH5_SLURM_DEPENDS= sh "$DEP" "$T/deb")" \
	"empty SH5_SLURM_DEPENDS"

# The range holds every Debian revision of 24.11.5 and nothing else.
for v in 24.11.5 24.11.5-1 24.11.5-4+deb13u1 24.11.5+dfsg-2; do
	dpkg --compare-versions "$v" ge 24.11.5 &&
		dpkg --compare-versions "$v" lt 24.11.5.~ ||
		fail "$v is outside the range of 24.11.5"
done
for v in 24.11.4-1 24.11.5~rc1-1 24.11.5.1-1 24.11.6-1 25.05.0-1; do
	dpkg --compare-versions "$v" ge 24.11.5 &&
		dpkg --compare-versions "$v" lt 24.11.5.~ &&
		fail "$v is inside the range of 24.11.5"
done

# Errors name the file.
err=$(sh "$DEP" "$T/bad" 2>&1 >/dev/null) && fail "a bad version was accepted"
assert_match "$T/bad/config.h: no SLURM_VERSION_STRING" "$err" "bad version message"
err=$(sh "$DEP" "$T/none" 2>&1 >/dev/null) && fail "a missing tree was accepted"
assert_match "$T/none/config.h: no such file" "$err" "missing tree message"

# debian/rules without SH5_SLURM_SRC: a clear error before anything runs.
if [ -f /usr/share/dpkg/pkg-info.mk ]; then
	err=$(cd "$top_srcdir" && env -u SH5_SLURM_SRC \
		make -s -f debian/rules override_dh_auto_configure 2>&1) &&
		fail "debian/rules configured without SH5_SLURM_SRC"
	assert_match "SH5_SLURM_SRC is not set" "$err" "debian/rules message"
fi
echo "slurm-depends ok"
