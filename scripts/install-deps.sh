#!/bin/sh
# Install every Debian package sh5 needs to build and test (run as root).
# Idempotent: packages already installed are skipped by apt.
set -eu
PKGS="build-essential autoconf automake libtool pkg-config
 libhdf5-dev hdf5-tools libcurl4-openssl-dev check libbrotli-dev libyajl-dev
 slurmctld slurmd slurm-client libslurm-dev munge libmunge-dev slurm-wlm-hdf5-plugin
 influxdb chrony faketime python3-h5py python3-numpy
 openmpi-bin libopenmpi-dev python3-schema
 libotf2-trace-dev otf2-tools python3-otf2 chromium-headless-shell
 iproute2 valgrind dpkg-dev debhelper fakeroot git curl openssl groff-base
 clang libclang-rt-14-dev
 libdeflate0"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# Do not let package scripts start daemons: tests start their own.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
	rm -f /usr/sbin/policy-rc.d
fi
