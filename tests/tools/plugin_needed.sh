#!/bin/bash
# The plugin's shared libraries (readelf -d NEEDED): HDF5, libcurl, zlib,
# libc and libm only.  libyajl is opened at run time by the JSON writer
# (src/common/yajl.c) and libbrotlienc belongs to sh5merge's exports:
# neither is mapped into a slurmstepd that does not stream JSON (each
# page of them resident in every step).
set -u
. "$top_srcdir/tests/lib/common.sh"

need_cmd readelf
so=$top_builddir/plugins/.libs/acct_gather_profile_sh5.so
[ -f "$so" ] || fail "$so not built"
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || fail "$so: no NEEDED entries read"
for lib in $needed; do
	case $lib in
	libhdf5*.so.* | libcurl*.so.* | libz.so.* | libm.so.* | libc.so.*) ;;
	*) fail "$so needs $lib" ;;
	esac
done
echo "plugin needs: $(echo $needed)"
