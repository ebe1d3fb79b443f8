#!/bin/bash
# slurm_releases.sh: the plugin compiles with -Werror against every Slurm
# release Debian's source registry serves here -- the installed slurmd's
# (bookworm, 22.05) and trixie's (24.11, its upstream tarball) -- and
# against a Slurm tree configured without HDF5.  Each object defines every
# symbol the release's loader looks up (plugin_* and the syms[] list of
# the release's acct_gather_profile interface).
#
# Trees are fetched and configured once by scripts/slurm-source.sh into
# /var/cache/sh5 (SH5_CACHE_DIR), keyed by version; later runs take
# seconds.  Skips (77) when the registry cannot serve a tree.
. "$top_srcdir/tests/lib/common.sh"

need_cmd nm gcc make
work=$(mktemp -d "${TMPDIR:-/tmp}/sh5-releases.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
plugins=("$top_srcdir"/plugins/*.c)
# A make of its own: under `make -jN check` the inherited MAKEFLAGS turn
# on directory messages and jobserver warnings that would mix with the flags.
read -r -a cc <<<"$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	make -s --no-print-directory -C "$top_builddir" print-plugin-compile)"
[ ${#cc[@]} -gt 0 ] || fail "make print-plugin-compile printed nothing"
printf '%s\n' "${cc[@]}" | grep -qx -- -Werror || fail "plugin flags lack -Werror: ${cc[*]}"

# tree ARGS...: a configured tree from slurm-source.sh; skip when the
# registry cannot serve it (exit 3).
tree() {
	local t rc=0
	t=$("$top_srcdir/scripts/slurm-source.sh" "$@" 2>"$work/source.err") || rc=$?
	if [ "$rc" -eq 3 ]; then
		skip "Debian's source registry cannot serve the Slurm source" \
			"(slurm-source.sh $*): $(tail -n1 "$work/source.err")"
	fi
	[ "$rc" -eq 0 ] && [ -f "$t/config.h" ] ||
		fail "slurm-source.sh $* (exit $rc): $(cat "$work/source.err")"
	echo "$t"
}

release() {
	sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$1/config.h"
}

# The symbols the release's loader resolves in an acct_gather_profile
# plugin (plugin_context_create fails on any missing one).
interface_syms() {
	local f=$1/src/interfaces/acct_gather_profile.c
	[ -f "$f" ] || f=$1/src/common/slurm_acct_gather_profile.c
	[ -f "$f" ] || return 1
	sed -n '/^static const char \*syms\[\] = {/,/^};/p' "$f" |
		grep -o '"acct_gather_profile_p_[a-z_]*"' | tr -d '"'
}

# compile NAME TREE [CPPFLAGS...]: the plugin's objects against TREE.
compile() {
	local name=$1 tree=$2 s n=0 src o
	shift 2
	: >"$work/$name.syms"
	for src in "${plugins[@]}"; do
		o=$work/$name.$(basename "$src" .c).o
		"${cc[@]}" -DHAVE_CONFIG_H "$@" -I"$tree" -I"$top_srcdir/src" \
			-DPLUGIN_PACKAGE_VERSION='"check"' -c "$src" \
			-o "$o" 2>"$work/$name.err" ||
			fail "$name: ${src##*/} does not compile against $tree:" \
				"$(grep -m5 -E 'error' "$work/$name.err")"
		nm --defined-only "$o" | awk '{ print $3 }' >>"$work/$name.syms"
	done
	for s in plugin_name plugin_type plugin_version init fini \
		$(interface_syms "$tree"); do
		grep -qx -- "$s" "$work/$name.syms" ||
			fail "$name: $s is not defined (the loader of $(release "$tree") needs it)"
		n=$((n + 1))
	done
	assert_ge 15 "$n" "$name: symbols checked"
	note "$name: built against Slurm $(release "$tree") ($tree), $n symbols"
}

t_inst=$(tree) || exit $?
t_trixie=$(tree --suite trixie) || exit $?
assert_match '^24\.11\.' "$(release "$t_trixie")" "trixie's Slurm release"
assert_match '^[0-9]+\.[0-9]+\.' "$(release "$t_inst")" "installed Slurm release"

compile installed "$t_inst"
compile trixie "$t_trixie"

# A tree configured without HDF5: Slurm's config.h defines
# H5_NO_DEPRECATED_SYMBOLS and no H5_USE_18_API.  Made from trixie's tree
# by shadowing its config.h (found first on the include path).
mkdir "$work/nohdf5"
sed -e 's|^/\* #undef H5_NO_DEPRECATED_SYMBOLS \*/|#define H5_NO_DEPRECATED_SYMBOLS 1|' \
	-e '/H5_USE_18_API/d' -e '/HAVE_HDF5/d' \
	"$t_trixie/config.h" >"$work/nohdf5/config.h"
grep -q '^#define H5_NO_DEPRECATED_SYMBOLS 1' "$work/nohdf5/config.h" ||
	fail "could not make a config.h without HDF5 from $t_trixie/config.h"
# Control: with that config.h, hdf5.h itself refuses.
printf '#include "config.h"\n#include <hdf5.h>\nint x;\n' >"$work/control.c"
if "${cc[@]}" -I"$work/nohdf5" -c "$work/control.c" -o "$work/control.o" \
	2>"$work/control.err"; then
	fail "control: hdf5.h accepted H5_NO_DEPRECATED_SYMBOLS (the check below proves nothing)"
fi
grep -q 'deprecated APIs are disabled' "$work/control.err" ||
	fail "control failed for another reason: $(head -n3 "$work/control.err")"
compile trixie-nohdf5 "$t_trixie" -I"$work/nohdf5"
exit 0
