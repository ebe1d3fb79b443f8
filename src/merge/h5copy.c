/* h5copy.c - small HDF5 helpers of the merge: errors, groups,
 * attributes, datasets copied by value (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/merge_int.h"

/* Like sh5_errprintf_h5(), but a system error inside HDF5 (a full disk,
 * a file size limit) is reported as strerror() instead of HDF5's
 * multi-line description. */
int mg_h5err(struct sh5_error *errp, const char *fmt, ...)
{
	struct sh5_error tmp = { "" };
	char prefix[200], *p;
	const char *e;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	sh5_errprintf_h5(&tmp, "%s", prefix);
	if ((e = strstr(tmp.text, "errno = "))) {
		long n = strtol(e + 8, NULL, 10);

		if (n > 0) {
			errno = (int)n;
			return sh5_errprintf(errp, "%s: %s", prefix,
					     strerror((int)n));
		}
	}
	for (p = tmp.text; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return sh5_errprintf(errp, "%s", tmp.text);
}



static herr_t copy_attr_cb(hid_t src, const char *name,
			   const H5A_info_t *info, void *data)
{
	hid_t dst = *(hid_t *)data;
	hid_t a = -1, ft = -1, mt = -1, sp = -1, na = -1;
	hssize_t n;
	void *buf = NULL;
	int vlen;

	(void)info;
	if ((a = H5Aopen(src, name, H5P_DEFAULT)) < 0 ||
	    (ft = H5Aget_type(a)) < 0 || !sh5_type_sane(ft) ||
	    (sp = H5Aget_space(a)) < 0 ||
	    (mt = H5Tget_native_type(ft, H5T_DIR_ASCEND)) < 0)
		goto out;
	n = H5Sget_select_npoints(sp);
	if (n < 0 || !(buf = calloc((size_t)(n ? n : 1), H5Tget_size(mt))))
		goto out;
	vlen = H5Tdetect_class(mt, H5T_VLEN) > 0 ||
	       (H5Tget_class(mt) == H5T_STRING && H5Tis_variable_str(mt) > 0);
	if (H5Aread(a, mt, buf) < 0)
		goto out;
	if ((na = H5Acreate2(dst, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0)
		H5Awrite(na, mt, buf);
	if (vlen)
		H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
out:
	free(buf);
	if (na >= 0)
		H5Aclose(na);
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (a >= 0)
		H5Aclose(a);
	return 0; /* an unreadable attribute does not stop the others */
}

void mg_copy_attrs(hid_t src, hid_t dst)
{
	hsize_t idx = 0;

	H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_INC, &idx, copy_attr_cb, &dst);
}

hid_t mg_lcpl_intermediate(void)
{
	hid_t p = H5Pcreate(H5P_LINK_CREATE);

	if (p >= 0)
		H5Pset_create_intermediate_group(p, 1);
	return p;
}

hid_t mg_make_group(hid_t loc, const char *name)
{
	hid_t lcpl, g;

	if (H5Lexists(loc, name, H5P_DEFAULT) > 0)
		return H5Gopen2(loc, name, H5P_DEFAULT);
	lcpl = mg_lcpl_intermediate();
	g = H5Gcreate2(loc, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	H5Pclose(lcpl);
	return g;
}

/* A dataset that is not 1-D (scalars and the like: small by nature),
 * read whole (d: its type ft, native nt, space sp) and written to
 * dst/path unless dst < 0.  0, or -1 with err set. */
static int copy_small(hid_t d, hid_t ft, hid_t nt, hid_t sp, hid_t lcpl,
		      const char *path, hid_t dst, int vlen, hid_t *od,
		      struct sh5_error *err)
{
	size_t esz = H5Tget_size(nt);
	hssize_t n = H5Sget_select_npoints(sp);
	void *buf = NULL;

	if (n < 0 || (size_t)n * esz > SH5_MERGE_BUFFER * 16)
		return sh5_errprintf(err, "not a 1-D dataset and too large");
	if (!(buf = calloc((size_t)(n ? n : 1), esz)) ||
	    H5Dread(d, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ||
	    (dst >= 0 &&
	     ((*od = H5Dcreate2(dst, path, ft, sp, lcpl, H5P_DEFAULT,
				H5P_DEFAULT)) < 0 ||
	      H5Dwrite(*od, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))) {
		free(buf);
		return sh5_errprintf_h5(err, "cannot copy");
	}
	if (vlen)
		H5Dvlen_reclaim(nt, sp, H5P_DEFAULT, buf);
	free(buf);
	return 0;
}

/* A 1-D dataset copied (dst >= 0) or only read in blocks of rows.  0, or
 * -1 with err set. */
static int copy_rows(hid_t d, hid_t ft, hid_t nt, hid_t sp, hid_t lcpl,
		     const char *path, hid_t dst, int vlen, hid_t *od,
		     struct sh5_error *err)
{
	hid_t dcpl = -1, osp = -1, ms = -1;
	hsize_t dims[1], maxd[1] = { H5S_UNLIMITED }, chunk[1], start[1],
		cnt[1];
	size_t esz = H5Tget_size(nt), rows;
	void *buf = NULL;
	int rc = -1;

	H5Sget_simple_extent_dims(sp, dims, NULL);
	/* A claimed size far beyond what is stored (a task's data is
	 * untrusted: a sparse dataset of 2^40 rows) would be read as fill
	 * values for ever: refused. */
	if ((double)dims[0] * (double)esz > 64.0 * 1024 * 1024 &&
	    (double)dims[0] * (double)esz / 1024.0 >
		    (double)H5Dget_storage_size(d))
		return sh5_errprintf(err, "claims %llu rows of %zu bytes but "
				     "stores %llu bytes",
				     (unsigned long long)dims[0], esz,
				     (unsigned long long)
				     H5Dget_storage_size(d));
	rows = SH5_MERGE_BUFFER / (esz ? esz : 1);
	if (!rows)
		rows = 1;
	chunk[0] = dims[0] ? (dims[0] < rows ? dims[0] : rows) : 1;
	if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
	    H5Pset_chunk(dcpl, 1, chunk) < 0 ||
	    (osp = H5Screate_simple(1, dims, maxd)) < 0 ||
	    (dst >= 0 &&
	     (*od = H5Dcreate2(dst, path, ft, osp, lcpl, dcpl,
			       H5P_DEFAULT)) < 0) ||
	    !(buf = malloc(rows * esz))) {
		sh5_errprintf_h5(err, "cannot create the copy");
		goto out;
	}
	for (start[0] = 0; start[0] < dims[0]; start[0] += cnt[0]) {
		cnt[0] = dims[0] - start[0] < rows ? dims[0] - start[0] : rows;
		if ((ms = H5Screate_simple(1, cnt, NULL)) < 0 ||
		    H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, cnt,
					NULL) < 0 ||
		    H5Sselect_hyperslab(osp, H5S_SELECT_SET, start, NULL, cnt,
					NULL) < 0 ||
		    H5Dread(d, nt, ms, sp, H5P_DEFAULT, buf) < 0 ||
		    (*od >= 0 &&
		     H5Dwrite(*od, nt, ms, osp, H5P_DEFAULT, buf) < 0)) {
			sh5_errprintf_h5(err, "unreadable rows from %llu",
					 (unsigned long long)start[0]);
			goto out;
		}
		if (vlen)
			H5Dvlen_reclaim(nt, ms, H5P_DEFAULT, buf);
		H5Sclose(ms);
		ms = -1;
	}
	rc = 0;
out:
	free(buf);
	if (ms >= 0)
		H5Sclose(ms);
	if (osp >= 0)
		H5Sclose(osp);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	return rc;
}

/* Copy a dataset that is not a series (ClockOffsets, ...) by reading and
 * writing it in blocks: H5Ocopy() crashes on some damaged objects.
 * dst < 0: only read it (the first pass).  0, or -1 with err set. */
int mg_copy_dataset(hid_t src, const char *path, hid_t dst,
		    struct sh5_error *err)
{
	hid_t d = -1, ft = -1, nt = -1, sp = -1, od = -1, lcpl = -1;
	int nd, vlen, r, rc = -1;

	if ((d = H5Dopen2(src, path, H5P_DEFAULT)) < 0 ||
	    (ft = H5Dget_type(d)) < 0 || !sh5_type_sane(ft) ||
	    (nt = H5Tget_native_type(ft, H5T_DIR_ASCEND)) < 0 ||
	    (sp = H5Dget_space(d)) < 0 ||
	    (nd = H5Sget_simple_extent_ndims(sp)) < 0) {
		sh5_errprintf_h5(err, "unreadable");
		goto out;
	}
	vlen = H5Tdetect_class(nt, H5T_VLEN) > 0 ||
	       (H5Tget_class(nt) == H5T_STRING && H5Tis_variable_str(nt) > 0);
	lcpl = mg_lcpl_intermediate();
	if (nd != 1)
		r = copy_small(d, ft, nt, sp, lcpl, path, dst, vlen, &od, err);
	else
		r = copy_rows(d, ft, nt, sp, lcpl, path, dst, vlen, &od, err);
	if (r < 0)
		goto out;
	if (od >= 0)
		mg_copy_attrs(d, od);
	else
		sh5_attrs_read(d, NULL, 0);
	rc = 0;
out:
	if (od >= 0)
		H5Dclose(od);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (sp >= 0)
		H5Sclose(sp);
	if (nt >= 0)
		H5Tclose(nt);
	if (ft >= 0)
		H5Tclose(ft);
	if (d >= 0)
		H5Dclose(d);
	return rc;
}
