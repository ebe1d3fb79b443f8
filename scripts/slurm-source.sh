#!/bin/sh
# Fetch and configure a Slurm source tree from Debian's source registry,
# once, in a cache outside the project tree.  Prints the path of the
# configured tree on stdout (the value for --with-slurm-source).
#
#   scripts/slurm-source.sh [--suite SUITE | --git GITDIR TAG] [CACHE_DIR]
#
#   (default)      the release of the installed slurmd (its Debian source
#                  package); cache CACHE_DIR/slurm-VERSION/
#   --suite SUITE  the release Debian SUITE (e.g. trixie) ships, from its
#                  upstream tarball (the .orig.tar.gz); for compile checks
#                  against a release that is not installed; cache
#                  CACHE_DIR/slurm-UPSTREAMVERSION/
#   --git GITDIR TAG  release TAG (e.g. slurm-26-05-3-1) of a clone of
#                  SchedMD/slurm (any git dir with its tags), by git
#                  archive; for checks by hand, no network; cache
#                  CACHE_DIR/upstream/TAG/
#   CACHE_DIR      default $SH5_CACHE_DIR or /var/cache/sh5
#
# When the registry does not list the source, adds a deb-src entry derived
# from the machine's own Debian apt entry (same URIs and keys; the suite
# replaced for --suite) and runs apt-get update.  Needs root for that.
# Exit 0 with the path; 3 when the registry cannot serve the source (no
# apt entry to derive from, not listed, download failed); 1 otherwise.
set -eu
suite=
gitdir=
tag=
while [ $# -gt 0 ]; do
	case $1 in
	--suite) [ $# -ge 2 ] || { echo "slurm-source.sh: --suite needs a suite name" >&2; exit 1; }
		suite=$2; shift 2 ;;
	--suite=*) suite=${1#--suite=}; shift ;;
	--git) [ $# -ge 3 ] || { echo "slurm-source.sh: --git needs GITDIR and TAG" >&2; exit 1; }
		gitdir=$2; tag=$3; shift 3 ;;
	-*) echo "slurm-source.sh: unknown option $1" >&2; exit 1 ;;
	*) break ;;
	esac
done
cache=${1:-${SH5_CACHE_DIR:-/var/cache/sh5}}
me=slurm-source.sh

# The deb-src entry for SUITE (empty: the entry's own suites), derived
# from the first Debian entry of this machine.  Never a host name of ours.
add_src() {
	sfx=${1:+-$1}
	[ -w /etc/apt/sources.list.d ] || {
		echo "$me: the source registry does not list slurm-wlm${1:+/$1}, and adding a deb-src entry needs root" >&2
		return 3
	}
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		out=/etc/apt/sources.list.d/sh5-debian-src$sfx.sources
		awk -v suite="$1" 'BEGIN { RS = ""; ORS = "\n\n" }
			/(^|\n)Types:[^\n]*deb/ && !done {
				sub(/Types:[^\n]*/, "Types: deb-src")
				if (suite != "")
					sub(/Suites:[^\n]*/, "Suites: " suite)
				print; done = 1
			}' /etc/apt/sources.list.d/debian.sources >"$out.tmp"
	elif grep -qs '^deb ' /etc/apt/sources.list; then
		out=/etc/apt/sources.list.d/sh5-debian-src$sfx.list
		# deb [opts] URI SUITE COMPONENTS...
		awk -v suite="$1" '$1 == "deb" && !done {
				$1 = "deb-src"; i = 2
				if ($2 ~ /^\[/) while ($i !~ /\]$/) i++
				if ($2 ~ /^\[/) i++
				if (suite != "") $(i + 1) = suite
				print; done = 1
			}' /etc/apt/sources.list >"$out.tmp"
	else
		echo "$me: no Debian apt entry (debian.sources or sources.list) to derive a deb-src entry from" >&2
		return 3
	fi
	[ -s "$out.tmp" ] || {
		rm -f "$out.tmp"
		echo "$me: no 'deb' entry found to derive a deb-src entry from" >&2
		return 3
	}
	mv "$out.tmp" "$out"
	echo "$me: added $out" >&2
	apt-get update -qq >&2 || {
		# A suite the registry does not have: leave apt as it was.
		rm -f "$out"
		echo "$me: apt-get update failed with $out; removed it" >&2
		return 3
	}
}

# apt-get source --print-uris for $1, adding a deb-src entry once if the
# registry does not list it; prints the URI lines.
uris() {
	apt-get source --print-uris -qq "$1" 2>/dev/null && return 0
	add_src "$suite" || return 3
	apt-get source --print-uris -qq "$1" 2>/dev/null || {
		echo "$me: Debian's source registry does not list $1" >&2
		return 3
	}
}

# configure_tree TREE LOG: configure TREE once; print its path.
configure_tree() {
	tree=$1
	log=$2
	if [ ! -f "$tree/config.h" ]; then
		(cd "$tree" && ./configure -q --prefix=/usr --sysconfdir=/etc/slurm \
			--libdir=/usr/lib/x86_64-linux-gnu) >"$log" 2>&1 || {
			echo "$me: configure failed, see $log" >&2
			exit 1
		}
	fi
	touch "$tree/.sh5-configured"
	echo "$tree"
}

mkdir -p "$cache"
# One fetch or configure at a time (parallel builds, several clones).
if command -v flock >/dev/null 2>&1; then
	exec 9>"$cache/.lock"
	flock 9
fi

if [ -n "$gitdir" ]; then
	tree="$cache/upstream/$tag"
	if [ ! -f "$tree/.sh5-configured" ]; then
		git --git-dir="$gitdir" rev-parse -q --verify "refs/tags/$tag" >/dev/null || {
			echo "$me: $gitdir has no tag $tag" >&2
			exit 1
		}
		rm -rf "$tree"
		mkdir -p "$tree"
		git --git-dir="$gitdir" archive --format=tar "refs/tags/$tag" |
			tar -x -C "$tree"
		[ -f "$tree/configure" ] || {
			echo "$me: $tag of $gitdir holds no Slurm source tree" >&2
			exit 1
		}
	fi
	configure_tree "$tree" "$cache/upstream/$tag.configure.log"
	exit 0
fi

if [ -z "$suite" ]; then
	ver=$(dpkg-query -W -f='${Version}' slurmd 2>/dev/null) || {
		echo "$me: slurmd is not installed (run scripts/install-deps.sh)" >&2
		exit 1
	}
	upver=${ver%-*}             # 22.05.8-4+deb12u3 -> 22.05.8
	dir="$cache/slurm-$ver"
	tree="$dir/slurm-wlm-$upver"
	if [ -f "$tree/.sh5-configured" ]; then
		echo "$tree"
		exit 0
	fi
	uris "slurm-wlm=$ver" >/dev/null || exit 3
	mkdir -p "$dir"
	if [ ! -d "$tree" ]; then
		(cd "$dir" && apt-get source -qq "slurm-wlm=$ver") >&2 || {
			echo "$me: apt-get source slurm-wlm=$ver failed" >&2
			exit 3
		}
	fi
	[ -d "$tree" ] || {
		echo "$me: apt-get source slurm-wlm produced no tree $tree" >&2
		exit 1
	}
	configure_tree "$tree" "$dir/configure.log"
	exit 0
fi

# --suite: the upstream tarball that suite's source package is built from.
link="$cache/slurm-suite-$suite"
if ! list=$(uris "slurm-wlm/$suite"); then
	# Offline: the tree configured last time for this suite.
	if [ -f "$link/.sh5-configured" ]; then
		readlink -f "$link"
		exit 0
	fi
	exit 3
fi
dsc=$(printf '%s\n' "$list" | awk '$2 ~ /\.dsc$/ { print $2 }')
ver=${dsc#slurm-wlm_}
ver=${ver%.dsc}
upver=${ver%-*}             # 24.11.5-4+deb13u1 -> 24.11.5
[ -n "$dsc" ] && [ -n "$upver" ] || {
	echo "$me: cannot tell the version of slurm-wlm/$suite" >&2
	exit 1
}
dir="$cache/slurm-$upver"
tree="$dir/slurm-$upver"
orig="slurm-wlm_$upver.orig.tar.gz"
if [ ! -f "$tree/.sh5-configured" ]; then
	mkdir -p "$dir"
	if [ ! -d "$tree" ]; then
		if [ ! -f "$dir/$orig" ]; then
			# The Debian packaging files of a suite may not be served
			# (404) while the upstream tarball is: only the tarball
			# matters, and apt checks it against the registry's hash.
			(cd "$dir" && apt-get source --download-only -qq \
				"slurm-wlm/$suite") >&2 2>"$dir/download.log" || :
		fi
		[ -f "$dir/$orig" ] || {
			echo "$me: Debian's source registry did not serve $orig (see $dir/download.log)" >&2
			exit 3
		}
		rm -rf "$dir/extract"
		mkdir "$dir/extract"
		tar -xzf "$dir/$orig" -C "$dir/extract"
		top=$(find "$dir/extract" -mindepth 1 -maxdepth 1 -type d | head -n1)
		[ -n "$top" ] && [ -f "$top/configure" ] || {
			echo "$me: $orig holds no Slurm source tree" >&2
			exit 1
		}
		mv "$top" "$tree"
		rm -rf "$dir/extract"
	fi
	configure_tree "$tree" "$dir/configure.log" >/dev/null
fi
ln -sfn "slurm-$upver/slurm-$upver" "$link"
echo "$tree"
