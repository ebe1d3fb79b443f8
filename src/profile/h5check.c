/* h5check.c - see h5check.h */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/h5check.h"

/* ------------------------------------------------------------------ */
/* Datatype sanity. */

static int type_sane(hid_t t, int depth)
{
	size_t size = H5Tget_size(t), i;
	H5T_class_t c = H5Tget_class(t);
	int ok = 1;

	if (depth > 8 || !size || size > (1u << 20))
		return 0;
	switch (c) {
	case H5T_INTEGER:
	case H5T_BITFIELD:
	case H5T_FLOAT: {
		size_t prec = H5Tget_precision(t);
		int off = H5Tget_offset(t);

		if (size > 16 || !prec || off < 0 ||
		    (size_t)off + prec > size * 8)
			return 0;
		if (c == H5T_FLOAT) {
			size_t spos, epos, esize, mpos, msize;

			if (H5Tget_fields(t, &spos, &epos, &esize, &mpos,
					  &msize) < 0 ||
			    spos >= prec || epos + esize > prec ||
			    mpos + msize > prec || !esize || !msize ||
			    esize > 32)
				return 0;
		}
		return 1;
	}
	case H5T_STRING:
		return H5Tis_variable_str(t) >= 0;
	case H5T_COMPOUND: {
		int n = H5Tget_nmembers(t);

		if (n < 0 || n > 10000)
			return 0;
		for (i = 0; ok && i < (size_t)n; i++) {
			hid_t mt = H5Tget_member_type(t, (unsigned)i);
			size_t off = H5Tget_member_offset(t, (unsigned)i);

			ok = mt >= 0 && off + H5Tget_size(mt) <= size &&
			     type_sane(mt, depth + 1);
			if (mt >= 0)
				H5Tclose(mt);
		}
		return ok;
	}
	case H5T_ARRAY:
	case H5T_VLEN:
	case H5T_ENUM: {
		hid_t b = H5Tget_super(t);

		ok = b >= 0 && type_sane(b, depth + 1);
		if (b >= 0)
			H5Tclose(b);
		if (ok && c == H5T_ARRAY) {
			int nd = H5Tget_array_ndims(t);
			hsize_t dims[H5S_MAX_RANK], total = 1;
			int k;

			if (nd < 1 || nd > H5S_MAX_RANK ||
			    H5Tget_array_dims2(t, dims) < 0)
				return 0;
			for (k = 0; k < nd; k++)
				total *= dims[k] ? dims[k] : 1;
			ok = total <= (1u << 20);
		}
		return ok;
	}
	case H5T_OPAQUE:
	case H5T_REFERENCE:
	case H5T_TIME:
		return 1;
	default:
		return 0;
	}
}

int sh5_type_sane(hid_t t)
{
	return t >= 0 && type_sane(t, 0);
}

/* The attribute's type and space are sane. */
int sh5_attr_sane(hid_t a)
{
	hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
	hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
	int ok = sh5_type_sane(t) && n >= 0 && n <= (1 << 24);

	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Attributes. */

/* Open attribute a as one integer: 0 or -1. */
static int attr_int(hid_t a, long long *out)
{
	hid_t sp;
	long long v[1] = { 0 };
	hssize_t n;
	int rc = -1;

	if (!sh5_attr_sane(a))
		return -1;
	sp = H5Aget_space(a);
	n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
	if (n == 1 && H5Aread(a, H5T_NATIVE_LLONG, v) >= 0) {
		*out = v[0];
		rc = 0;
	}
	if (sp >= 0)
		H5Sclose(sp);
	return rc;
}

/* Open attribute a as one string into buf (len > 0): 0 or -1. */
static int attr_str(hid_t a, char *buf, size_t len)
{
	hid_t ft = -1, mt = -1, sp = -1;
	int rc = -1;

	buf[0] = '\0';
	if (!sh5_attr_sane(a) || (ft = H5Aget_type(a)) < 0 ||
	    H5Tget_class(ft) != H5T_STRING || (sp = H5Aget_space(a)) < 0 ||
	    H5Sget_simple_extent_npoints(sp) != 1)
		goto out;
	if (H5Tis_variable_str(ft) > 0) {
		char *v = NULL;

		mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		H5Tset_cset(mt, H5Tget_cset(ft));
		if (H5Aread(a, mt, &v) < 0)
			goto out;
		snprintf(buf, len, "%s", v ? v : "");
		H5free_memory(v);
	} else {
		size_t sz = H5Tget_size(ft);
		char *tmp = calloc(1, sz + 1);

		if (!tmp)
			goto out;
		mt = H5Tcopy(ft);
		if (H5Aread(a, mt, tmp) < 0) {
			free(tmp);
			goto out;
		}
		tmp[sz] = '\0';
		snprintf(buf, len, "%s", tmp);
		free(tmp);
	}
	rc = 0;
out:
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	return rc;
}

int sh5_attr_get_int(hid_t obj, const char *name, long long *out)
{
	hid_t a;
	int rc;

	if (H5Aexists(obj, name) <= 0 ||
	    (a = H5Aopen(obj, name, H5P_DEFAULT)) < 0)
		return -1;
	rc = attr_int(a, out);
	H5Aclose(a);
	return rc;
}

int sh5_attr_get_str(hid_t obj, const char *name, char *buf, size_t len)
{
	hid_t a;
	int rc;

	if (!len)
		return -1;
	buf[0] = '\0';
	if (H5Aexists(obj, name) <= 0 ||
	    (a = H5Aopen(obj, name, H5P_DEFAULT)) < 0)
		return -1;
	rc = attr_str(a, buf, len);
	H5Aclose(a);
	return rc;
}

/* Open attribute a of sane type ft, of a class read as it is stored
 * (numbers, fixed-size strings: no conversion, nothing read elsewhere in
 * the file), read into a buffer of ai's data size.  1 read, 0 unreadable,
 * -1 not such a class (read it converted). */
static int read_plain(hid_t a, hid_t ft, const H5A_info_t *ai)
{
	H5T_class_t c = H5Tget_class(ft);
	void *buf;
	int ok;

	if (!(c == H5T_INTEGER || c == H5T_FLOAT ||
	      (c == H5T_STRING && H5Tis_variable_str(ft) == 0)) ||
	    !ai || ai->data_size > (64u << 20))
		return -1;
	if (!(buf = malloc(ai->data_size ? ai->data_size : 1)))
		return -1;
	ok = H5Aread(a, ft, buf) >= 0;
	free(buf);
	return ok;
}

/* Open attribute a read whole (what a copy of it reads): 1, or 0 when it
 * cannot be. */
static int read_whole(hid_t a, const H5A_info_t *ai)
{
	hid_t ft = -1, mt = -1, sp = -1;
	hssize_t n = -1;
	void *buf = NULL;
	int ok = 0, r;

	if ((ft = H5Aget_type(a)) >= 0 && sh5_type_sane(ft) &&
	    (r = read_plain(a, ft, ai)) >= 0) {
		ok = r;
	} else if (ft >= 0 && sh5_type_sane(ft) &&
	    (sp = H5Aget_space(a)) >= 0 &&
	    (mt = H5Tget_native_type(ft, H5T_DIR_ASCEND)) >= 0 &&
	    (n = H5Sget_select_npoints(sp)) >= 0 &&
	    (buf = calloc((size_t)(n ? n : 1), H5Tget_size(mt))) &&
	    H5Aread(a, mt, buf) >= 0) {
		ok = 1;
		if (H5Tdetect_class(mt, H5T_VLEN) > 0 ||
		    (H5Tget_class(mt) == H5T_STRING &&
		     H5Tis_variable_str(mt) > 0))
			H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
	}
	free(buf);
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	return ok;
}

struct read_state {
	struct sh5_attr_want *want;
	size_t nwant;
	unsigned bad;
};

static herr_t read_cb(hid_t obj, const char *name, const H5A_info_t *ai,
		      void *data)
{
	struct read_state *st = data;
	hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
	int read = 0;
	size_t i;

	if (a < 0) {
		st->bad++;
		return 0;
	}
	for (i = 0; i < st->nwant; i++) {
		struct sh5_attr_want *w = &st->want[i];

		if (strcmp(w->name, name))
			continue;
		/* Read as what it is wanted as: its one value, whole. */
		if (w->sv ? attr_str(a, w->sv, w->svlen) == 0 :
			    attr_int(a, w->iv) == 0)
			w->found = read = 1;
		break;
	}
	if (!read && !read_whole(a, ai))
		st->bad++;
	H5Aclose(a);
	return 0;
}

unsigned sh5_attrs_read(hid_t obj, struct sh5_attr_want *want, size_t nwant)
{
	struct read_state st = { want, nwant, 0 };
	hsize_t idx = 0;
	size_t i;

	for (i = 0; i < nwant; i++) {
		want[i].found = 0;
		if (want[i].sv && want[i].svlen)
			want[i].sv[0] = '\0';
	}
	if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, read_cb,
			&st) < 0)
		st.bad++;
	return st.bad;
}

const char *sh5_step_name(const char *id, char *buf, size_t len)
{
	static const struct {
		const char *num, *name;
	} special[] = {
		{ "4294967290", "interactive" },
		{ "4294967291", "batch" },
		{ "4294967292", "extern" },
		{ "4294967293", "pending" },
	};
	size_t i;

	for (i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		if (!strcmp(id, special[i].num)) {
			snprintf(buf, len, "%s", special[i].name);
			return buf;
		}
	snprintf(buf, len, "%s", id);
	return buf;
}

uint64_t sh5_dset_rows(hid_t d)
{
	hid_t sp = H5Dget_space(d);
	hsize_t dims[1] = { 0 };
	uint64_t n = 0;

	if (sp < 0)
		return 0;
	if (H5Sget_simple_extent_ndims(sp) == 1 &&
	    H5Sget_simple_extent_dims(sp, dims, NULL) == 1)
		n = dims[0];
	H5Sclose(sp);
	return n;
}
