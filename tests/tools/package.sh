#!/bin/bash
# The Debian package (debian/, doc/package.md): built with
# dpkg-buildpackage from a copy of this tree against the configured Slurm
# tree, installed with dpkg -i; a private one-node cluster with Slurm's
# default PluginDir only (no build-tree directory) loads the installed
# acct_gather_profile/sh5; a profiled srun of a program compiled against
# the installed sh5ev.h and libsh5ev writes a node-step file with its
# events; the installed /usr/bin/sh5merge merges it; dpkg --purge leaves
# none of the package's files.  The EXIT trap stops the cluster and purges
# the package whatever happened, so the machine is as before.
#
# Root only.  Skips (77) without root, the Debian tools, the build
# dependencies, a Slurm tree, git, or when the package (or a file it
# would install) is already on the machine.
set -u
. "$top_srcdir/tests/lib/common.sh"
. "$top_srcdir/tests/lib/cluster.sh"

PKG=sh5
JOBUSER=${SH5_TEST_USER:-nobody}
DEFAULT_PLUGINDIR=${CLUSTER_SLURM_PLUGINDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}
PLUGIN=$DEFAULT_PLUGINDIR/acct_gather_profile_sh5.so

need_root
need_cmd dpkg-buildpackage dpkg-checkbuilddeps dh fakeroot git cc
[ -n "${SH5_SLURM_SRC:-}" ] && [ -f "$SH5_SLURM_SRC/config.h" ] ||
	skip "no configured Slurm tree (configure --with-slurm-source)"
git -C "$top_srcdir" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
	skip "$top_srcdir is not a git work tree (the copy is made from git ls-files)"
# pkg_status: dpkg's state of the package (empty when dpkg knows nothing).
pkg_status() {
	dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null
}
st=$(pkg_status)
if [ -n "$st" ] && [ "$st" != not-installed ]; then
	skip "package $PKG is installed on this machine: remove it (dpkg --purge $PKG) to run this test"
fi

WORK=$(mktemp -d /tmp/sh5-package.XXXXXX) || fail "mktemp"
chmod 755 "$WORK"
installed=0

cleanup() {
	local rc=$?
	set +e
	# Daemons first (slurmd has the plugin mapped), then the package.
	(exit "$rc")
	cluster_cleanup
	if [ "$installed" = 1 ]; then
		dpkg --purge "$PKG" >>"$WORK/purge.log" 2>&1 ||
			{ echo "# package.sh: dpkg --purge $PKG failed:" >&2
			  cat "$WORK/purge.log" >&2; rc=1; }
	fi
	if [ "$rc" -eq 0 ]; then
		rm -rf "$WORK"
	else
		rm -rf "$WORK/src"
		echo "# package.sh: kept $WORK" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
# A killed test (make check interrupted, a timeout) still cleans up.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------ build
# The copy holds the files git knows (tracked and untracked, not ignored),
# so no build directory or in-tree configure output comes along.
mkdir -p "$WORK/src/$PKG"
(cd "$top_srcdir" && git ls-files -z -co --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar -cf - --null -T -) | tar -xf - -C "$WORK/src/$PKG" ||
	fail "copying the tree"
cd "$WORK/src/$PKG" || fail "cd"
dpkg-checkbuilddeps >"$WORK/builddeps.log" 2>&1 ||
	skip "build dependencies missing: $(cat "$WORK/builddeps.log") (scripts/install-deps.sh)"
note "building the package against $SH5_SLURM_SRC"
SH5_SLURM_SRC=$SH5_SLURM_SRC DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" \
	dpkg-buildpackage -b -us -uc >"$WORK/build.log" 2>&1 ||
	{ tail -n 40 "$WORK/build.log" >&2; fail "dpkg-buildpackage failed (log: $WORK/build.log)"; }
cd / || fail "cd /"
debs=("$WORK"/src/${PKG}_*.deb)
[ "${#debs[@]}" = 1 ] && [ -f "${debs[0]}" ] ||
	fail "expected one ${PKG}_*.deb, got: ${debs[*]}"
DEB=${debs[0]}

# The dependency on the exact Slurm release the plugin was built for.
slurm_ver=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"$/\1/p' "$SH5_SLURM_SRC/config.h")
depends=$(dpkg-deb -f "$DEB" Depends)
version=$(dpkg-deb -f "$DEB" Version)
assert_match "\+slurm$slurm_ver\$" "$version" "package version"
if [ "$(dpkg-parsechangelog -l "$SH5_SLURM_SRC/debian/changelog" -S Source 2>/dev/null)" = slurm-wlm ]; then
	want="slurmd (= $(dpkg-parsechangelog -l "$SH5_SLURM_SRC/debian/changelog" -S Version))"
else
	want="slurmd (>= $slurm_ver), slurmd (<< $slurm_ver.~)"
fi
case ", $depends," in
*", $want,"*) ;;
*) fail "Depends lacks '$want': $depends" ;;
esac
note "$(basename "$DEB"): Depends on $want"

# Every file the package installs, and where.
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { p = $6; sub(/^\./, "", p); print p }' \
	>"$WORK/files"
for f in /usr/bin/sh5merge "$PLUGIN" /usr/include/sh5ev.h \
	/usr/lib/x86_64-linux-gnu/libsh5ev.so.0 \
	/usr/lib/x86_64-linux-gnu/sh5/libsh5mpi.so \
	/usr/share/man/man1/sh5merge.1.gz /usr/share/man/man3/sh5ev.3.gz \
	/usr/share/man/man5/acct_gather_profile_sh5.5.gz \
	/usr/share/doc/sh5/examples/acct_gather.conf.example \
	/usr/share/doc/sh5/examples/slurm.conf.example; do
	grep -qxF "$f" "$WORK/files" || fail "package lacks $f"
done
grep -q '\.la$' "$WORK/files" && fail "package ships libtool archives"
# Nothing it would install may exist yet: dpkg would overwrite a file
# installed by hand, and the purge would remove it.
while IFS= read -r f; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	skip "$f exists and is not from package $PKG (make install?): not overwriting it"
done <"$WORK/files"

# ------------------------------------------------------------ install
installed=1
dpkg -i "$DEB" >"$WORK/install.log" 2>&1 ||
	fail "dpkg -i failed: $(cat "$WORK/install.log")"
assert_eq "install ok installed" "$(dpkg-query -W -f='${Status}' "$PKG")" \
	"package status"
assert_file "$PLUGIN" "installed plugin"
assert_eq /usr/bin/sh5merge "$(command -v sh5merge)" "sh5merge on PATH"
sh5merge --version >/dev/null || fail "sh5merge --version"
nm -D --defined-only /usr/lib/x86_64-linux-gnu/sh5/libsh5mpi.so |
	grep -qw MPI_Init || fail "libsh5mpi.so does not define MPI_Init"

# A program built against the installed header and library only.
SCRATCH=$WORK/scratch
mkdir -p "$SCRATCH" && chmod 1777 "$SCRATCH"
cat >"$SCRATCH/evtask.c" <<'EOF'
#include <sh5ev.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	int r = sh5_ev_region("pkg_region");

	sh5_ev_phase();
	sh5_ev_enter(r);
	sleep(3);	/* a few task samples (JobAcctGatherFrequency=task=1) */
	sh5_ev_exit(r);
	sh5_ev_object(7, 3.0);
	printf("region %d\n", r);
	return 0;
}
EOF
cc -Wall -Werror -o "$SCRATCH/evtask" "$SCRATCH/evtask.c" -lsh5ev ||
	fail "cannot build a program with the installed sh5ev.h and -lsh5ev"
ldd "$SCRATCH/evtask" | grep -Eq 'libsh5ev\.so\.0 => (/usr)?/lib/x86_64-linux-gnu/libsh5ev\.so\.0 ' ||
	fail "evtask does not use the installed libsh5ev: $(ldd "$SCRATCH/evtask")"

# ------------------------------------------------------------ cluster
# No CLUSTER_PLUGIN_DIR: PluginDir is Slurm's default directory alone.
unset CLUSTER_PLUGIN_DIR
CLUSTER_DIR=$WORK/cluster
PROFDIR=$CLUSTER_DIR/profile
CLUSTER_EXTRA_CONF="AcctGatherProfileType=acct_gather_profile/sh5
JobAcctGatherFrequency=task=1"
CLUSTER_ACCT_GATHER_CONF="ProfileSH5Dir=$PROFDIR
ProfileSH5FlushInterval=1"
export CLUSTER_DIR CLUSTER_EXTRA_CONF CLUSTER_ACCT_GATHER_CONF
cluster_start || fail "cluster did not start: $(cluster_log_tail 20 2>&1)"
assert_eq "PluginDir=$DEFAULT_PLUGINDIR" "$(grep '^PluginDir=' "$SLURM_CONF")" \
	"slurm.conf PluginDir"
NODE=$CLUSTER_NODE_NAMES

as_user() {
	runuser -u "$JOBUSER" -- env SLURM_CONF="$SLURM_CONF" "$@"
}
out=$(cd "$SCRATCH" && as_user srun -n1 --profile=task "$SCRATCH/evtask") ||
	fail "profiled srun failed: $out $(cluster_log_tail 20 2>&1)"
assert_match '^region [0-9]+$' "$out" "the task's output (events recorded)"
job=$(scontrol show jobs -o 2>/dev/null | sed -n 's/^JobId=\([0-9]*\).*/\1/p' |
	sort -n | tail -n 1)
[ -n "$job" ] || fail "no job id"
# slurmstepd absorbs the events and closes the file after the task ended.
for i in $(seq 1 100); do
	busy=0
	for p in $(cluster_stepd_pids_all); do
		grep -qF "[$job.0]" "/proc/$p/cmdline" 2>/dev/null && busy=1
	done
	[ "$busy" = 0 ] && break
	sleep 0.2
done
[ "$busy" = 0 ] || fail "slurmstepd of $job.0 still running"
F=$PROFDIR/$JOBUSER/${job}_0_$NODE.h5
assert_file "$F" "node-step file of the installed plugin"

# The installed sh5merge, as the job user, with its defaults.
J=$SCRATCH/job_$job.h5
(cd "$SCRATCH" && as_user sh5merge -q merge -j "$job") ||
	fail "sh5merge merge -j $job as $JOBUSER"
assert_file "$J" "merged job file"
sh5merge list -i "$J" >"$WORK/list.txt" || fail "sh5merge list"
grep -q "step 0: 1 node" "$WORK/list.txt" ||
	fail "job file lacks step 0: $(cat "$WORK/list.txt")"
# The task's four events (phase, enter, exit, object) and its region.
grep -q "events: 1 task, 4 events" "$WORK/list.txt" ||
	fail "job file lacks the task's 4 events: $(cat "$WORK/list.txt")"
"$PYTHON" -c '
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    names = [r["Name"].decode() for r in f[sys.argv[2] + "/Events/Regions"][()]]
sys.exit(0 if names == ["pkg_region"] else "regions: %r" % names)
' "$F" "$NODE" || fail "node-step file: region pkg_region not recorded"
sh5merge events -r -i "$J" -o "$WORK/trace.csv" || fail "sh5merge events"
assert_eq 4 "$(grep -c '^0,[0-9]*,INT,' "$WORK/trace.csv")" \
	"task 0's events in the trace"

# ------------------------------------------------------------ remove
cluster_stop
dpkg -L "$PKG" >"$WORK/dpkg-L.txt" 2>&1 || fail "dpkg -L $PKG"
dpkg --purge "$PKG" >"$WORK/purge.log" 2>&1 ||
	fail "dpkg --purge failed: $(cat "$WORK/purge.log")"
installed=0
dpkg -L "$PKG" >/dev/null 2>&1 && fail "dpkg -L $PKG still lists files after the purge"
st=$(pkg_status)
[ -z "$st" ] || [ "$st" = not-installed ] ||
	fail "package $PKG is '$st' after the purge"
assert_no_file "$PLUGIN" "plugin after the purge"
left=0
while IFS= read -r f; do
	[ -d "$f" ] && continue
	if [ -e "$f" ] || [ -L "$f" ]; then
		echo "# left after the purge: $f" >&2
		left=$((left + 1))
	fi
done <"$WORK/dpkg-L.txt"
assert_eq 0 "$left" "files of the package left after the purge"
[ ! -d /usr/lib/x86_64-linux-gnu/sh5 ] || fail "/usr/lib/x86_64-linux-gnu/sh5 left"
[ ! -d /usr/share/doc/sh5 ] || fail "/usr/share/doc/sh5 left"
ldconfig -p | grep -qF /usr/lib/x86_64-linux-gnu/libsh5ev &&
	fail "the ldconfig cache still lists the package's libsh5ev"
echo "package ok: $(basename "$DEB") built, installed, job $job profiled and merged, purged"
