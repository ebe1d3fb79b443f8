/* series_h5.c - series descriptions from and to HDF5 datasets (series.h) */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/series.h"
#include "profile/series_int.h"

/* Read a 1-D string array attribute into a calloc'd vector of n
 * malloc'd strings; returns n or -1.  Reads both fixed-length arrays (what
 * sh5_series_write_attrs writes) and variable-length ones (files of
 * earlier builds). */
static int read_str_array(hid_t obj, const char *attr, char ***out)
{
	hid_t a = -1, sp = -1, ft = -1, mt = -1;
	hssize_t n = 0;
	char **v = NULL, **vl = NULL, *buf = NULL;
	size_t len, i;
	int rc = -1;

	*out = NULL;
	if (H5Aexists(obj, attr) <= 0)
		return -1;
	if ((a = H5Aopen(obj, attr, H5P_DEFAULT)) < 0 ||
	    (sp = H5Aget_space(a)) < 0 ||
	    (n = H5Sget_simple_extent_npoints(sp)) <= 0 ||
	    (ft = H5Aget_type(a)) < 0 || H5Tget_class(ft) != H5T_STRING ||
	    (mt = H5Tcopy(H5T_C_S1)) < 0 ||
	    !(v = calloc((size_t)n, sizeof(*v))))
		goto out;
	if (H5Tis_variable_str(ft) > 0) {
		H5Tset_size(mt, H5T_VARIABLE);
		if (!(vl = calloc((size_t)n, sizeof(*vl))))
			goto out;
		if (H5Aread(a, mt, vl) < 0) {
			free(vl);
			vl = NULL;
			goto out;
		}
		for (i = 0; i < (size_t)n; i++)
			v[i] = strdup(vl[i] ? vl[i] : "");
		H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, vl);
		free(vl);
	} else {
		len = H5Tget_size(ft);
		H5Tset_size(mt, len + 1); /* NUL-terminated in memory */
		if (!(buf = calloc((size_t)n, len + 1)) ||
		    H5Aread(a, mt, buf) < 0)
			goto out;
		for (i = 0; i < (size_t)n; i++)
			v[i] = strndup(buf + i * (len + 1), len);
	}
	for (i = 0; i < (size_t)n; i++)
		if (!v[i])
			goto out;
	*out = v;
	v = NULL;
	rc = (int)n;
out:
	if (v)
		for (i = 0; i < (size_t)n; i++)
			free(v[i]);
	free(v);
	free(buf);
	if (mt >= 0)
		H5Tclose(mt);
	if (ft >= 0)
		H5Tclose(ft);
	if (sp >= 0)
		H5Sclose(sp);
	if (a >= 0)
		H5Aclose(a);
	return rc;
}

static void free_str_array(char **v, int n)
{
	int i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Our own attributes override the built-in knowledge of s: Field Kinds
 * and Field Units of dset, one entry per member of its file type ft (nm
 * members). */
static void read_field_attrs(struct sh5_series *s, hid_t dset, hid_t ft,
			     int nm)
{
	char **kinds = NULL, **units = NULL;
	int nk, nu, i;

	nk = read_str_array(dset, "Field Kinds", &kinds);
	nu = read_str_array(dset, "Field Units", &units);
	if (nk == nm || nu == nm) {
		for (i = 0; i < nm; i++) {
			char *mn = H5Tget_member_name(ft, (unsigned)i);
			int fi = mn ? sh5_series_field_index(s, mn) : -1;

			if (fi >= 0 && nk == nm && kinds[i])
				sh5_fkind_from_name(kinds[i],
						    &s->fields[fi].kind);
			if (fi >= 0 && nu == nm && units[i])
				snprintf(s->fields[fi].unit,
					 sizeof(s->fields[fi].unit), "%s",
					 units[i]);
			H5free_memory(mn);
		}
	}
	free_str_array(kinds, nk);
	free_str_array(units, nu);
}

struct sh5_series *sh5_series_from_dataset(const char *parent,
					   const char *name, hid_t dset,
					   struct sh5_error *errp)
{
	struct sh5_series *s;
	hid_t ft;

	if ((ft = H5Dget_type(dset)) < 0) {
		sh5_errprintf_h5(errp, "%s: cannot read the datatype", name);
		return NULL;
	}
	s = sh5_series_from_type(parent, name, dset, ft, 1, errp);
	H5Tclose(ft);
	return s;
}

struct sh5_series *sh5_series_from_type(const char *parent, const char *name,
					hid_t dset, hid_t ft, int attrs,
					struct sh5_error *errp)
{
	struct sh5_series *s = NULL;
	int nm, i, have_elapsed = 0, have_epoch = 0;
	size_t nf = 0;

	if (H5Tget_class(ft) != H5T_COMPOUND ||
	    (nm = H5Tget_nmembers(ft)) < 2) {
		sh5_errprintf(errp, "%s: not a series (no compound type)",
			      name);
		goto einval;
	}
	for (i = 0; i < nm; i++) {
		char *mn = H5Tget_member_name(ft, (unsigned)i);

		if (!mn)
			continue;
		if (!strcmp(mn, "ElapsedTime"))
			have_elapsed = 1;
		else if (!strcmp(mn, "EpochTime"))
			have_epoch = 1;
		else if (!sh5_series_reserved_name(mn))
			nf++;
		H5free_memory(mn);
	}
	if (!have_elapsed || !have_epoch) {
		sh5_errprintf(errp, "%s: not a series (no ElapsedTime and "
			      "EpochTime members)", name);
		goto einval;
	}
	if (!(s = sh5_series_alloc(parent, name, nf, errp)))
		goto error;
	s->has_time_ns = H5Tget_member_index(ft, "EpochTimeNs") >= 0;
	s->has_sync_ns = H5Tget_member_index(ft, "SyncTimeNs") >= 0;
	nf = 0;
	for (i = 0; i < nm; i++) {
		char *mn = H5Tget_member_name(ft, (unsigned)i);
		H5T_class_t c = H5Tget_member_class(ft, (unsigned)i);

		if (!mn)
			continue;
		if (strcmp(mn, "ElapsedTime") && strcmp(mn, "EpochTime") &&
		    !sh5_series_reserved_name(mn)) {
			if (c != H5T_INTEGER && c != H5T_FLOAT) {
				sh5_errprintf(errp, "%s: member %s is neither "
					      "integer nor float", name, mn);
				H5free_memory(mn);
				goto einval;
			}
			snprintf(s->fields[nf].name, SH5_NAME_MAX, "%s", mn);
			s->fields[nf].type = c == H5T_FLOAT ? SH5_FT_DOUBLE :
							      SH5_FT_U64;
			nf++;
		}
		H5free_memory(mn);
	}
	sh5_series_apply_known(s);
	if (attrs)
		read_field_attrs(s, dset, ft, nm);
	return s;
einval:
	errno = EINVAL;
error:
	sh5_series_destroy(s);
	return NULL;
}

/*
 * A 1-D array of fixed-length strings (padded with NULs to the longest).
 * Not variable-length: those go to a global heap, whose first collection
 * alone takes 4 KiB of every file (see doc/format.md, "Storage").
 */
static int write_str_array(hid_t obj, const char *attr,
			   const char *const *v, size_t n,
			   struct sh5_error *errp)
{
	hsize_t dim = n;
	hid_t st = H5Tcopy(H5T_C_S1), sp = -1, a = -1;
	size_t len = 1, i;
	char *buf = NULL;
	int rc = -1;

	for (i = 0; i < n; i++)
		if (strlen(v[i]) > len)
			len = strlen(v[i]);
	if (!(buf = calloc(n ? n : 1, len))) {
		sh5_errprintf(errp, "cannot write attribute %s: out of memory",
			      attr);
		goto out;
	}
	for (i = 0; i < n; i++)
		memcpy(buf + i * len, v[i], strlen(v[i]));
	H5Tset_size(st, len);
	H5Tset_strpad(st, H5T_STR_NULLPAD);
	if ((sp = H5Screate_simple(1, &dim, NULL)) < 0 ||
	    (a = H5Acreate2(obj, attr, st, sp, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
	    H5Awrite(a, st, buf) < 0) {
		sh5_errprintf_h5(errp, "cannot write attribute %s", attr);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	if (a >= 0)
		H5Aclose(a);
	if (sp >= 0)
		H5Sclose(sp);
	H5Tclose(st);
	return rc;
}

int sh5_series_write_attrs(const struct sh5_series *s, hid_t dset,
			   struct sh5_error *errp)
{
	size_t n = 2 + s->nfields + (s->has_time_ns ? 1 : 0) +
		   (s->has_sync_ns ? 1 : 0);
	const char **kinds = calloc(n, sizeof(*kinds));
	const char **units = calloc(n, sizeof(*units));
	const char *sname = s->ops->known || s->ops->group ? s->ops->name :
							    s->name;
	hid_t st = -1, sp = -1, a = -1;
	size_t i, k = 0;
	int rc = -1;

	if (!kinds || !units) {
		sh5_errprintf(errp, "%s: out of memory", s->name);
		goto out;
	}
	kinds[k] = "time", units[k++] = "s";
	kinds[k] = "time", units[k++] = "s";
	for (i = 0; i < s->nfields; i++, k++) {
		kinds[k] = sh5_fkind_name(s->fields[i].kind);
		units[k] = s->fields[i].unit;
	}
	if (s->has_time_ns)
		kinds[k] = "time", units[k++] = "ns";
	if (s->has_sync_ns)
		kinds[k] = "time", units[k++] = "ns";
	if (write_str_array(dset, "Field Kinds", kinds, n, errp) < 0 ||
	    write_str_array(dset, "Field Units", units, n, errp) < 0)
		goto out;
	st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, strlen(sname) + 1);
	if ((sp = H5Screate(H5S_SCALAR)) < 0 ||
	    (a = H5Acreate2(dset, "Series", st, sp, H5P_DEFAULT,
			    H5P_DEFAULT)) < 0 ||
	    H5Awrite(a, st, sname) < 0) {
		sh5_errprintf_h5(errp, "%s: cannot write attribute Series",
				 s->name);
		goto out;
	}
	rc = 0;
out:
	if (a >= 0)
		H5Aclose(a);
	if (sp >= 0)
		H5Sclose(sp);
	if (st >= 0)
		H5Tclose(st);
	free(kinds);
	free(units);
	return rc;
}
