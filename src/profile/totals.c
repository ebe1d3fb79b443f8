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

/* 64 bits little-endian at p. */
static unsigned char *put_le64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		*p++ = (unsigned char)(v >> (8 * i));
	return p;
}

static unsigned char *put_f64(unsigned char *p, double d)
{
	uint64_t v;

	memcpy(&v, &d, 8);
	return put_le64(p, v);
}

size_t sh5_total_pack(const struct sh5_series *s, const void *total,
		      unsigned char *out)
{
	const struct sh5_total_head *h = total;
	size_t i, n = 24;
	unsigned char *p = out;

	for (i = 0; i < s->nfields; i++)
		n += (s->fields[i].kind == SH5_FK_DELTA ? 4 : 3) * 8;
	if (!out)
		return n;
	p = put_le64(p, h->samples);
	p = put_le64(p, (uint64_t)h->first_ns);
	p = put_le64(p, (uint64_t)h->last_ns);
	for (i = 0; i < s->nfields; i++) {
		const struct sh5_total_field *f =
			sh5_total_field((void *)total, i);

		p = put_f64(p, f->min);
		p = put_f64(p, f->max);
		p = put_f64(p, f->mean);
		if (s->fields[i].kind == SH5_FK_DELTA)
			p = put_f64(p, f->sum);
	}
	return n;
}

int sh5_total_out_init(struct sh5_total_out *o)
{
	hsize_t dim[1] = { 1 };

	o->space = H5Screate_simple(1, dim, NULL);
	o->scalar = H5Screate(H5S_SCALAR);
	o->lcpl = H5Pcreate(H5P_LINK_CREATE);
	o->dcpl = H5Pcreate(H5P_DATASET_CREATE);
	o->series_type = -1;
	o->series_name = NULL;
	/* One small record: kept in the object header (no data block);
	 * compact data is limited to 64 KiB, so a total above 16 KiB is
	 * contiguous. */
	if (o->space < 0 || o->scalar < 0 || o->lcpl < 0 || o->dcpl < 0 ||
	    H5Pset_create_intermediate_group(o->lcpl, 1) < 0 ||
	    H5Pset_layout(o->dcpl, H5D_COMPACT) < 0 ||
	    /* No modification time: nothing reads it, and it is one
	     * message less to append to each header. */
	    H5Pset_obj_track_times(o->dcpl, 0) < 0) {
		sh5_total_out_fini(o);
		return -1;
	}
	return 0;
}

void sh5_total_out_fini(struct sh5_total_out *o)
{
	if (o->space >= 0)
		H5Sclose(o->space);
	if (o->scalar >= 0)
		H5Sclose(o->scalar);
	if (o->lcpl >= 0)
		H5Pclose(o->lcpl);
	if (o->dcpl >= 0)
		H5Pclose(o->dcpl);
	if (o->series_type >= 0)
		H5Tclose(o->series_type);
	o->space = o->scalar = o->lcpl = o->dcpl = o->series_type = -1;
}

/* The "Series" attribute of a total of s: its string type kept for the
 * next total of the same ops. */
static int put_series_attr(struct sh5_total_out *o, hid_t d,
			   const struct sh5_series *s)
{
	const char *name = s->ops->name;

	if (o->series_name != name) {
		if (o->series_type >= 0)
			H5Tclose(o->series_type);
		o->series_name = NULL;
		if ((o->series_type = sh5_h5attr_str_type(name)) < 0)
			return -1;
		o->series_name = name;
	}
	return sh5_h5attr_add(d, "Series", o->series_type, o->series_type,
			      name, o->scalar);
}

int sh5_total_put(struct sh5_total_out *o, hid_t loc, const char *path,
		  const struct sh5_series *s, const void *total, size_t count,
		  uint64_t rows, hid_t ftype)
{
	/* A committed type is used as it is (a copy would be transient). */
	hid_t ft = ftype >= 0 ? ftype : s->ops->total_file_type(s);
	hid_t d = -1;
	size_t fsize = sh5_total_pack(s, total, NULL);
	unsigned char *rec = malloc(fsize);
	int cnt = (int)count, rc = -1;

	if (!rec || ft < 0 || H5Tget_size(ft) != fsize)
		goto out;
	/* Packed in the file's layout and written with the file type: no
	 * conversion (converting a compound of ~30 members cost more than
	 * creating the dataset). */
	sh5_total_pack(s, total, rec);
	d = H5Dcreate2(loc, path, ft, o->space, o->lcpl,
		       fsize <= 16384 ? o->dcpl : H5P_DEFAULT, H5P_DEFAULT);
	if (d < 0 || H5Dwrite(d, ft, H5S_ALL, H5S_ALL, H5P_DEFAULT, rec) < 0)
		goto out;
	if (put_series_attr(o, d, s) < 0 ||
	    sh5_h5attr_add(d, "Series Count", H5T_STD_I32LE, H5T_NATIVE_INT,
			   &cnt, o->scalar) < 0 ||
	    (rows != UINT64_MAX &&
	     sh5_h5attr_add(d, "Rows", H5T_STD_U64LE, H5T_NATIVE_UINT64,
			    &rows, o->scalar) < 0))
		goto out;
	rc = 0;
out:
	free(rec);
	if (d >= 0)
		H5Dclose(d);
	if (ft >= 0 && ft != ftype)
		H5Tclose(ft);
	return rc;
}

int sh5_total_write(hid_t loc, const char *path, const struct sh5_series *s,
		    const void *total, size_t count, uint64_t rows,
		    hid_t ftype)
{
	struct sh5_total_out o;
	int rc;

	if (sh5_total_out_init(&o) < 0)
		return -1;
	rc = sh5_total_put(&o, loc, path, s, total, count, rows, ftype);
	sh5_total_out_fini(&o);
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
