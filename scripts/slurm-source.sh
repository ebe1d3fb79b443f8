#!/bin/sh
# Fetch and configure the Slurm source tree that matches the installed
# slurmd, once, in a cache outside the project tree.  Prints the path of
# the configured tree on stdout (the value for --with-slurm-source).
#
#   scripts/slurm-source.sh [CACHE_DIR]      default: /var/cache/sh5
#
# Adds a deb-src entry for the suites of the existing Debian entry when
# none is present.  Needs root for that and for apt-get update.
set -eu
cache=${1:-${SH5_CACHE_DIR:-/var/cache/sh5}}
ver=$(dpkg-query -W -f='${Version}' slurmd 2>/dev/null) || {
	echo "slurm-source.sh: slurmd is not installed (run scripts/install-deps.sh)" >&2
	exit 1
}
upver=${ver%-*}             # 22.05.8-4+deb12u3 -> 22.05.8
dir="$cache/slurm-$ver"
tree="$dir/slurm-wlm-$upver"
if [ -f "$tree/.sh5-configured" ]; then
	echo "$tree"
	exit 0
fi
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ &&
   ! grep -qs '^deb-src' /etc/apt/sources.list; then
	src=/etc/apt/sources.list.d/sh5-debian-src.sources
	echo "slurm-source.sh: adding $src" >&2
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		# First stanza of debian.sources, with Types: deb-src.
		awk 'BEGIN{RS="";ORS="\n\n"} NR==1{sub(/Types: deb/,"Types: deb-src"); print}' \
			/etc/apt/sources.list.d/debian.sources >"$src"
	else
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$src"
	fi
	apt-get update -qq >&2
fi
mkdir -p "$dir"
cd "$dir"
if [ ! -d "$tree" ]; then
	apt-get source -qq "slurm-wlm=$ver" >&2 || apt-get source -qq slurm-wlm >&2
fi
[ -d "$tree" ] || tree=$(find "$dir" -maxdepth 1 -type d -name 'slurm-wlm-*' | head -n1)
[ -n "$tree" ] && [ -d "$tree" ] || {
	echo "slurm-source.sh: apt-get source slurm-wlm produced no tree in $dir" >&2
	exit 1
}
cd "$tree"
if [ ! -f config.h ]; then
	./configure -q --prefix=/usr --sysconfdir=/etc/slurm \
		--libdir=/usr/lib/x86_64-linux-gnu >"$dir/configure.log" 2>&1 || {
		echo "slurm-source.sh: configure failed, see $dir/configure.log" >&2
		exit 1
	}
fi
touch .sh5-configured
echo "$tree"
