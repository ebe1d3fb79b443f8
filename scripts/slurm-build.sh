#!/bin/sh
# Build and install a Slurm release from its upstream tarball into a
# private prefix, once, in a cache outside the project tree; for
# end-to-end tests against a release that is not installed.  Prints the
# prefix on stdout.
#
#   scripts/slurm-build.sh VERSION [CACHE_DIR]
#
#   VERSION    upstream release, e.g. 24.11.5; the tarball
#              CACHE_DIR/slurm-VERSION/slurm-wlm_VERSION.orig.tar.gz must
#              be there (scripts/slurm-source.sh --suite SUITE fetches it)
#   CACHE_DIR  default $SH5_CACHE_DIR or /var/cache/sh5
#
# Layout: CACHE_DIR/slurm-VERSION-install/src (the tree, configured with
# the prefix: the value for --with-slurm-source), .../prefix (bin, sbin,
# lib/slurm).  A finished build is marked .../.sh5-built; a second run
# costs nothing.  The cold build (make -j$SH5_BUILD_JOBS, default 2) takes
# about 9 minutes on 2 shared cores (24.11.5: 509 s); its log is .../build.log.
# Exit 0 with the prefix; 3 when the tarball is missing; 1 otherwise.
set -eu
me=slurm-build.sh
[ $# -ge 1 ] && [ -n "$1" ] || {
	echo "usage: $me VERSION [CACHE_DIR]" >&2
	exit 1
}
ver=$1
case $ver in
*[!0-9.]*) echo "$me: bad version '$ver' (want e.g. 24.11.5)" >&2; exit 1 ;;
esac
cache=${2:-${SH5_CACHE_DIR:-/var/cache/sh5}}
jobs=${SH5_BUILD_JOBS:-2}
tarball=$cache/slurm-$ver/slurm-wlm_$ver.orig.tar.gz
inst=$cache/slurm-$ver-install
prefix=$inst/prefix

if [ -f "$inst/.sh5-built" ]; then
	echo "$prefix"
	exit 0
fi
[ -f "$tarball" ] || {
	echo "$me: no tarball $tarball" \
		"(scripts/slurm-source.sh --suite SUITE fetches it)" >&2
	exit 3
}
mkdir -p "$inst"
# One build at a time per version (parallel test runs, several clones).
if command -v flock >/dev/null 2>&1; then
	exec 9>"$inst/.lock"
	flock 9
	if [ -f "$inst/.sh5-built" ]; then
		echo "$prefix"
		exit 0
	fi
fi
log=$inst/build.log
start=$(date +%s)
rm -rf "$inst/src" "$inst/extract" "$prefix"
mkdir "$inst/extract"
tar -xzf "$tarball" -C "$inst/extract"
top=$(find "$inst/extract" -mindepth 1 -maxdepth 1 -type d | head -n1)
[ -n "$top" ] && [ -f "$top/configure" ] || {
	echo "$me: $tarball holds no Slurm source tree" >&2
	exit 1
}
mv "$top" "$inst/src"
rm -rf "$inst/extract"
echo "$me: building Slurm $ver into $prefix (log $log)" >&2
# Only what a one-node test cluster needs: no GUI, REST daemon or HDF5
# profile plugin.
(cd "$inst/src" &&
	./configure -q --prefix="$prefix" --sysconfdir="$prefix/etc" \
		--disable-debug --disable-sview --disable-slurmrestd \
		--disable-x11 --without-hdf5 &&
	make -j"$jobs" &&
	make install) >"$log" 2>&1 || {
	echo "$me: build failed, see $log" >&2
	tail -n 20 "$log" >&2
	exit 1
}
[ -x "$prefix/sbin/slurmd" ] && [ -x "$prefix/sbin/slurmctld" ] &&
	[ -x "$prefix/bin/srun" ] || {
	echo "$me: install produced no slurmd/slurmctld/srun under $prefix" >&2
	exit 1
}
end=$(date +%s)
echo "built in $((end - start)) s with make -j$jobs" >"$inst/build-time"
touch "$inst/.sh5-built"
echo "$me: Slurm $ver built in $((end - start)) s" >&2
echo "$prefix"
