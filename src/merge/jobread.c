/* jobread.c - see jobread.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "merge/jobread.h"
#include "merge/jobread_int.h"
#include "common/outfile.h"
#include "common/sort.h"

void jr_namelist_free(struct namelist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

int jr_namelist_add(struct namelist *l, const char *s)
{
	char **nv;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;

		nv = realloc(l->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n] = strdup(s);
	if (!l->v[l->n])
		return -1;
	l->n++;
	return 0;
}

/* Parse a whole string as a non-negative decimal integer. */
int jr_parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Numeric names first (numerically), then the rest by strcmp. */
int jr_cmp_names(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int64_t ix, iy;
	int nx = jr_parse_int(x, &ix) == 0, ny = jr_parse_int(y, &iy) == 0;

	if (nx && ny)
		return ix < iy ? -1 : ix > iy;
	if (nx != ny)
		return nx ? -1 : 1;
	return strcmp(x, y);
}

struct list_ctx {
	struct namelist *l;
	H5O_type_t want;	/* H5O_TYPE_GROUP / DATASET, or UNKNOWN: any */
	int failed;
};

static herr_t list_cb(hid_t g, const char *name, const H5L_info_t *info,
		      void *data)
{
	struct list_ctx *c = data;
	H5I_type_t it;
	hid_t o;

	if (info->type != H5L_TYPE_HARD)
		return 0;
	if (c->want != H5O_TYPE_UNKNOWN) {
		/* H5Iget_type works alike on HDF5 1.10 and 1.12+ */
		o = H5Oopen(g, name, H5P_DEFAULT);
		if (o < 0)
			return -1;
		it = H5Iget_type(o);
		H5Oclose(o);
		if ((c->want == H5O_TYPE_GROUP && it != H5I_GROUP) ||
		    (c->want == H5O_TYPE_DATASET && it != H5I_DATASET))
			return 0;
	}
	if (jr_namelist_add(c->l, name) < 0) {
		c->failed = 1;
		return -1;
	}
	return 0;
}

/* List the members of group g of the given object type, sorted. */
int jr_list_members(hid_t g, H5O_type_t want, struct namelist *l)
{
	struct list_ctx c = { l, want, 0 };
	hsize_t idx = 0;

	if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, list_cb, &c) < 0)
		return -1;
	if (l->n > 1)
		sh5_qsort(l->v, l->n, sizeof(*l->v), jr_cmp_names);
	return 0;
}

/* Read attribute name of obj as text (string or integer; of an array,
 * the first element).  Returns 0 if found and readable. */
int jr_attr_text(hid_t obj, const char *name, char *buf, size_t size)
{
	hid_t a = -1, t = -1, mt = -1, sp = -1;
	hssize_t np;
	void *mem = NULL;
	int rc = -1;

	if (H5Aexists(obj, name) <= 0)
		return -1;
	a = H5Aopen(obj, name, H5P_DEFAULT);
	if (a < 0)
		goto out;
	t = H5Aget_type(a);
	sp = H5Aget_space(a);
	if (t < 0 || sp < 0)
		goto out;
	np = H5Sget_simple_extent_npoints(sp);
	if (np < 1)
		goto out;
	if (H5Tget_class(t) == H5T_STRING) {
		mt = H5Tcopy(H5T_C_S1);
		H5Tset_cset(mt, H5Tget_cset(t));
		if (H5Tis_variable_str(t) > 0) {
			char **s = calloc((size_t)np, sizeof(char *));

			if (!s)
				goto out;
			mem = s;
			H5Tset_size(mt, H5T_VARIABLE);
			if (H5Aread(a, mt, s) < 0)
				goto out;
			snprintf(buf, size, "%s", s[0] ? s[0] : "");
			H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, s);
		} else {
			size_t n = H5Tget_size(t) + 1;
			char *s = calloc((size_t)np, n);

			if (!s)
				goto out;
			mem = s;
			H5Tset_size(mt, n);
			H5Tset_strpad(mt, H5T_STR_NULLTERM);
			if (H5Aread(a, mt, s) < 0)
				goto out;
			snprintf(buf, size, "%s", s);
		}
		rc = 0;
	} else if (H5Tget_class(t) == H5T_INTEGER) {
		long long *v = calloc((size_t)np, sizeof(long long));

		if (!v)
			goto out;
		mem = v;
		if (H5Aread(a, H5T_NATIVE_LLONG, v) < 0)
			goto out;
		snprintf(buf, size, "%lld", v[0]);
		rc = 0;
	}
out:
	free(mem);
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (t >= 0)
		H5Tclose(t);
	if (a >= 0)
		H5Aclose(a);
	return rc;
}

struct sh5_jobread *sh5_jobread_open(const char *path, struct sh5_error *errp)
{
	struct sh5_jobread *jr = calloc(1, sizeof(*jr));
	hid_t fapl = -1;

	if (!jr) {
		sh5_errprintf(errp, "%s: out of memory", path);
		return NULL;
	}
	jr->file = -1;
	jr->path = strdup(path);
	if (!jr->path) {
		sh5_errprintf(errp, "%s: out of memory", path);
		goto error;
	}
	sh5_error_h5_silence();
	if (sh5_infile_check(path, errp) < 0)
		goto error;
	fapl = H5Pcreate(H5P_FILE_ACCESS);
#ifdef HAVE_H5PSET_FILE_LOCKING
	if (fapl >= 0)
		H5Pset_file_locking(fapl, 0, 1);
#endif
	jr->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	if (jr->file < 0) {
		sh5_errprintf_h5(errp, "%s: cannot open", path);
		goto error;
	}
	H5Pclose(fapl);
	fapl = -1;
	if (H5Lexists(jr->file, "Steps", H5P_DEFAULT) <= 0) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: no /Steps group: not a job file",
			      path);
		goto error;
	}
	if (jr_attr_text(jr->file, "Job ID", jr->job_id,
			 sizeof(jr->job_id)) < 0)
		jr->job_id[0] = '\0';
	return jr;
error:
	if (fapl >= 0)
		H5Pclose(fapl);
	sh5_jobread_close(jr);
	return NULL;
}

long long sh5_jobread_file(const struct sh5_jobread *jr)
{
	return jr->file;
}

void sh5_jobread_close(struct sh5_jobread *jr)
{
	if (!jr)
		return;
	if (jr->file >= 0)
		H5Fclose(jr->file);
	jr_namelist_free(&jr->steps);
	free(jr->path);
	free(jr);
}

const char *sh5_jobread_job_id(const struct sh5_jobread *jr)
{
	return jr->job_id;
}

int sh5_jobread_steps(struct sh5_jobread *jr, const char *const **names,
		      size_t *n, struct sh5_error *errp)
{
	hid_t g;

	if (!jr->steps_listed) {
		g = H5Gopen2(jr->file, "Steps", H5P_DEFAULT);
		if (g < 0)
			return sh5_errprintf_h5(errp, "%s: /Steps", jr->path);
		if (jr_list_members(g, H5O_TYPE_GROUP, &jr->steps) < 0) {
			sh5_errprintf_h5(errp, "%s: cannot list /Steps",
					 jr->path);
			H5Gclose(g);
			jr_namelist_free(&jr->steps);
			return -1;
		}
		H5Gclose(g);
		jr->steps_listed = 1;
	}
	*names = (const char *const *)jr->steps.v;
	*n = jr->steps.n;
	return 0;
}
