/* h5attr.c - see h5attr.h */
#include "config.h"

#include <string.h>

#include "common/h5attr.h"

int sh5_h5attr_add(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
		   const void *val, hid_t scalar)
{
	hid_t sp = scalar >= 0 ? scalar : H5Screate(H5S_SCALAR), a = -1;
	int rc = -1;

	if (sp < 0)
		return -1;
	a = H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
	if (a >= 0 && H5Awrite(a, mtype, val) >= 0)
		rc = 0;
	if (a >= 0)
		H5Aclose(a);
	if (sp != scalar)
		H5Sclose(sp);
	return rc;
}

int sh5_h5attr_put(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
		   const void *val)
{
	if (H5Aexists(obj, name) > 0)
		H5Adelete(obj, name);
	return sh5_h5attr_add(obj, name, ftype, mtype, val, -1);
}

hid_t sh5_h5attr_str_type(const char *val)
{
	hid_t st = H5Tcopy(H5T_C_S1);

	if (st >= 0 && (H5Tset_size(st, strlen(val) + 1) < 0 ||
			H5Tset_strpad(st, H5T_STR_NULLTERM) < 0)) {
		H5Tclose(st);
		return -1;
	}
	return st;
}

int sh5_h5attr_put_str(hid_t obj, const char *name, const char *val)
{
	hid_t st = sh5_h5attr_str_type(val);
	int rc;

	if (st < 0)
		return -1;
	rc = sh5_h5attr_put(obj, name, st, st, val);
	H5Tclose(st);
	return rc;
}

int sh5_h5attr_put_int(hid_t obj, const char *name, int val)
{
	return sh5_h5attr_put(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT, &val);
}

int sh5_h5attr_put_u32(hid_t obj, const char *name, uint32_t val)
{
	return sh5_h5attr_put(obj, name, H5T_STD_U32LE, H5T_NATIVE_UINT32,
			      &val);
}

int sh5_h5attr_put_i64(hid_t obj, const char *name, int64_t val)
{
	return sh5_h5attr_put(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64,
			      &val);
}

int sh5_h5attr_put_u64(hid_t obj, const char *name, uint64_t val)
{
	return sh5_h5attr_put(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64,
			      &val);
}

int sh5_h5attr_put_f64(hid_t obj, const char *name, double val)
{
	return sh5_h5attr_put(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
			      &val);
}
