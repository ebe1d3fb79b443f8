#!/bin/sh
# debian/slurm-depends.sh TREE: the package's dependency on the Slurm
# release of TREE, the configured Slurm source tree the plugin is compiled
# against.  Prints "# slurm VERSION" (the upstream release, for the
# package version) and the relation, one line each.
#
# Slurm's loader accepts a plugin only when its plugin_version (the
# SLURM_VERSION_NUMBER it was compiled with) is the daemon's: the release
# must match exactly.  The plugin also compiles against Slurm's internal
# headers, so when TREE is Debian's source package slurm-wlm (its
# debian/changelog names that release) the dependency is on exactly that
# Debian version, whose patches are part of what the plugin was compiled
# against; else (an upstream tarball, which may carry SchedMD's own
# debian/ for packages named slurm-smd-*) on any Debian revision of the
# upstream release.  SH5_SLURM_DEPENDS, when set,
# replaces the relation (empty: none, for a Slurm not installed by dpkg).
set -eu
tree=${1:?usage: slurm-depends.sh SLURM_TREE}
[ -f "$tree/config.h" ] || {
	echo "slurm-depends.sh: $tree/config.h: no such file (not a configured Slurm tree)" >&2
	exit 1
}
ver=$(sed -n 's/^#define SLURM_VERSION_STRING "\([^"]*\)"$/\1/p' "$tree/config.h")
case $ver in
[0-9]*.[0-9]*.[0-9]*) ;;
*)
	echo "slurm-depends.sh: $tree/config.h: no SLURM_VERSION_STRING of the form X.Y.Z" >&2
	exit 1 ;;
esac
echo "# slurm $ver"
if [ -n "${SH5_SLURM_DEPENDS+set}" ]; then
	printf '%s\n' "$SH5_SLURM_DEPENDS"
	exit 0
fi
if [ -f "$tree/debian/changelog" ] &&
   [ "$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Source)" = slurm-wlm ]; then
	dver=$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Version)
	up=${dver#*:}
	up=${up%-*}
	if [ "$up" = "$ver" ]; then
		echo "slurmd (= $dver)"
		exit 0
	fi
	echo "slurm-depends.sh: $tree/debian/changelog is $dver, config.h $ver: using the upstream release" >&2
fi
# Every Debian revision of $ver and nothing else: 22.05.8-1 and
# 22.05.8+dfsg-2 sort below 22.05.8.~, 22.05.8.1 above.
echo "slurmd (>= $ver), slurmd (<< $ver.~)"
