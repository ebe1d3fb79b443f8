# tests/e2e/mpi_events_lib.sh - shared part of the MPI events end-to-end
# tests: a private cluster loading acct_gather_profile/sh5, an unmodified
# MPI program (tests/tools/sh5_mpitest) run under `srun --mpi=pmix` with
# and without the preload library libsh5mpi.so, the merge and the exports.
# Sourced after tests/lib/common.sh and tests/lib/cluster.sh.
#
# Everything the job's user (nobody) runs or loads is copied to
# $CLUSTER_DIR/bin first: the build tree may be under a directory that
# user cannot enter (a clone in /root).

PY=/usr/bin/python3
SH5MERGE=$top_builddir/sh5merge/sh5merge
MPITEST=$top_builddir/tests/tools/sh5_mpitest
MPILIB=$top_builddir/mpi/.libs/libsh5mpi.so
CHECK="$PY $top_srcdir/tests/tools/mpi_events_check.py"
SYNCCHECK="$PY $top_srcdir/tests/tools/sync_check.py"
JOBUSER=${SH5_TEST_USER:-nobody}

mpi_events_need() {
	need_root
	need_cmd munged slurmctld slurmd srun runuser
	[ -f "$top_builddir/plugins/.libs/acct_gather_profile_sh5.so" ] ||
		skip "plugin not built (configure --with-slurm-source)"
	[ -x "$MPITEST" ] && [ -f "$MPILIB" ] ||
		skip "MPI library or test program not built (libopenmpi-dev)"
	[ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] ||
		skip "Slurm's mpi/pmix plugin is missing"
	[ -x "$SH5MERGE" ] || fail "sh5merge not built"
	$PY -c 'import h5py, numpy' 2>/dev/null || skip "needs python3-h5py and numpy"
}

# mpi_events_bin: copy the program and the library where the job's user
# can read them.
mpi_events_bin() {
	BIN=$CLUSTER_DIR/bin
	mkdir -p "$BIN" && chmod 755 "$BIN" || fail "mkdir $BIN"
	cp "$MPITEST" "$MPILIB" "$BIN/" || fail "copy the MPI test program"
	chmod 755 "$BIN"/*
	OUT=$CLUSTER_DIR/out
	mkdir -p "$OUT" && chmod 1777 "$OUT"
}

# as_user CMD...: run a client command as the job user, from a directory
# that user can enter (srun hands its working directory to the tasks).
as_user() {
	(cd "$OUT" && runuser -u "$JOBUSER" -- env SLURM_CONF="$SLURM_CONF" "$@")
}

last_job_id() {
	scontrol show jobs -o 2>/dev/null | sed -n 's/^JobId=\([0-9]*\).*/\1/p' |
		sort -n | tail -n 1
}
