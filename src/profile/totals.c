/* totals.c - see totals.h */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/h5attr.h"
#include "profile/totals.h"

/* A transfer list with a conversion buffer for one record: HDF5's
 * default callocs 1 MiB (and as much background) for every converting
 * read or write, the main cost of a one-record total. */
static hid_t small_dxpl(hid_t mt)
{
	hid_t p = H5Pcreate(H5P_DATASET_XFER);
	size_t n = H5Tget_size(mt);

	if (p >= 0 && H5Pset_buffer(p, n < 4096 ? 4096 : n, NULL, NULL) < 0) {
		H5Pclose(p);
		p = -1;
	}
	return p;
}

int sh5_total_write(hid_t loc, const char *path, const struct sh5_series *s,
		    const void *total, size_t count, uint64_t rows,
		    hid_t ftype)
{
	hsize_t dim[1] = { 1 };
	/* A committed type is used as it is (a copy would be transient). */
	hid_t ft = ftype >= 0 ? ftype : s->ops->total_file_type(s);
	hid_t mt = s->ops->total_mem_type(s);
	hid_t sp = H5Screate_simple(1, dim, NULL);
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hid_t d = -1, dxpl = -1;
	int rc = -1;

	if (ft < 0 || mt < 0 || sp < 0 || lcpl < 0 || dcpl < 0 ||
	    (dxpl = small_dxpl(mt)) < 0 ||
	    H5Pset_create_intermediate_group(lcpl, 1) < 0 ||
	    /* One small record: kept in the object header (no data
	     * block); compact data is limited to 64 KiB. */
	    (H5Tget_size(ft) <= 16384 &&
	     H5Pset_layout(dcpl, H5D_COMPACT) < 0))
		goto out;
	d = H5Dcreate2(loc, path, ft, sp, lcpl, dcpl, H5P_DEFAULT);
	if (d < 0 || H5Dwrite(d, mt, H5S_ALL, H5S_ALL, dxpl, total) < 0)
		goto out;
	if (sh5_h5attr_put_str(d, "Series", s->ops->name) < 0 ||
	    sh5_h5attr_put_int(d, "Series Count", (int)count) < 0 ||
	    (rows != UINT64_MAX &&
	     sh5_h5attr_put(d, "Rows", H5T_STD_U64LE, H5T_NATIVE_UINT64,
			    &rows) < 0))
		goto out;
	rc = 0;
out:
	if (d >= 0)
		H5Dclose(d);
	if (dxpl >= 0)
		H5Pclose(dxpl);
	if (sp >= 0)
		H5Sclose(sp);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (ft >= 0 && ft != ftype)
		H5Tclose(ft);
	if (mt >= 0)
		H5Tclose(mt);
	return rc;
}

int sh5_total_read_as(hid_t loc, const char *path, hid_t mt, hid_t dxpl,
		      void *total)
{
	hid_t d = H5Dopen2(loc, path, H5P_DEFAULT);
	hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
	int rc = -1;

	if (sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1 &&
	    H5Dread(d, mt, H5S_ALL, H5S_ALL, dxpl, total) >= 0)
		rc = 0;
	if (sp >= 0)
		H5Sclose(sp);
	if (d >= 0)
		H5Dclose(d);
	return rc;
}

int sh5_total_read(hid_t loc, const char *path, const struct sh5_series *s,
		   void *total)
{
	hid_t mt = s->ops->total_mem_type(s);
	hid_t dxpl = mt >= 0 ? small_dxpl(mt) : -1;
	int rc = -1;

	if (dxpl >= 0)
		rc = sh5_total_read_as(loc, path, mt, dxpl, total);
	if (dxpl >= 0)
		H5Pclose(dxpl);
	if (mt >= 0)
		H5Tclose(mt);
	return rc;
}

int sh5_series_same_fields(const struct sh5_series *a,
			   const struct sh5_series *b)
{
	size_t i;

	if (a->nfields != b->nfields || a->ops != b->ops)
		return 0;
	for (i = 0; i < a->nfields; i++)
		if (strcmp(a->fields[i].name, b->fields[i].name) ||
		    a->fields[i].type != b->fields[i].type ||
		    a->fields[i].kind != b->fields[i].kind)
			return 0;
	return 1;
}

/* A copy of s owning its fields array (all an accumulator needs). */
static struct sh5_series *series_dup(const struct sh5_series *s)
{
	struct sh5_series *d = malloc(sizeof(*d));

	if (!d)
		return NULL;
	*d = *s;
	d->fields = NULL;
	if (s->nfields &&
	    !(d->fields = malloc(s->nfields * sizeof(*s->fields)))) {
		free(d);
		return NULL;
	}
	if (s->nfields)
		memcpy(d->fields, s->fields, s->nfields * sizeof(*s->fields));
	return d;
}

void sh5_totacc_free(struct sh5_totacc *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++) {
		sh5_series_destroy(v[i].s);
		free(v[i].total);
	}
	free(v);
}

int sh5_totacc_fold(struct sh5_totacc **v, size_t *n, const char *key,
		    const struct sh5_series *s, const void *total)
{
	size_t i;
	struct sh5_totacc *a, *nv;

	for (i = 0; i < *n; i++)
		if (!strcmp((*v)[i].key, key))
			break;
	if (i == *n) {
		if (!(nv = realloc(*v, (*n + 1) * sizeof(*nv))))
			return -1;
		*v = nv;
		a = nv + *n;
		memset(a, 0, sizeof(*a));
		snprintf(a->key, sizeof(a->key), "%s", key);
		if (!(a->s = series_dup(s)) ||
		    !(a->total = malloc(s->ops->total_size(s)))) {
			sh5_series_destroy(a->s);
			return -1;
		}
		s->ops->total_init(a->s, a->total);
		(*n)++;
	}
	a = *v + i;
	if (!sh5_series_same_fields(a->s, s))
		return 1;
	a->s->ops->total_merge(a->s, a->total, total);
	a->count++;
	return 0;
}
