/* jobevents_h5.c - the HDF5 side of jobevents_read.c (jobevents_int.h):
 * memory types built by member name (HDF5 converts compounds by name, so
 * reading does not depend on the writer's code), checked reads of
 * compound tables, link listing; and the cheap step listing and counting
 * of jobevents.h. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sync/jobevents.h"
#include "sync/jobevents_int.h"
#include "merge/merge.h"	/* sh5_step_cmp() */
#include "common/sort.h"

/* ------------------------------------------------------------------ */
/* Memory types, by member name. */

/*
 * Read the 1-D compound dataset name of g (HDF5 path shown as path) into
 * a new array of *n records of size bytes, after checking that the file
 * type has every member with its class and that there are at most max
 * rows.  Returns the array (NULL with *n 0 for an empty dataset), or
 * NULL with errp set and *n == (size_t)-1.
 */
void *sh5_jev_read_compound(hid_t g, const char *name, const char *path,
			   size_t size, const struct sh5_evstore_field *m, size_t nm,
			   uint64_t max, size_t *n, struct sh5_error *errp)
{
	hid_t d = -1, ft = -1, sp = -1, mt = -1;
	hsize_t dims[1] = { 0 };
	void *buf = NULL;
	size_t i;

	*n = (size_t)-1;
	if ((d = H5Dopen2(g, name, H5P_DEFAULT)) < 0) {
		sh5_errprintf_h5(errp, "%s: not a readable dataset", path);
		goto error;
	}
	if ((ft = H5Dget_type(d)) < 0 || H5Tget_class(ft) != H5T_COMPOUND) {
		sh5_errprintf(errp, "%s: wrong type (not a compound)", path);
		goto error;
	}
	for (i = 0; i < nm; i++) {
		int k = H5Tget_member_index(ft, m[i].name);

		if (k < 0 || H5Tget_member_class(ft, (unsigned)k) != m[i].cls) {
			sh5_errprintf(errp, "%s: wrong type (member %s %s)",
				      path, m[i].name,
				      k < 0 ? "missing" : "of the wrong class");
			goto error;
		}
	}
	if ((sp = H5Dget_space(d)) < 0 ||
	    H5Sget_simple_extent_ndims(sp) != 1 ||
	    H5Sget_simple_extent_dims(sp, dims, NULL) != 1) {
		sh5_errprintf(errp, "%s: wrong shape (not one-dimensional)",
			      path);
		goto error;
	}
	if (dims[0] > max) {
		sh5_errprintf(errp, "%s: claims %llu rows, more than the "
			      "%llu accepted", path,
			      (unsigned long long)dims[0],
			      (unsigned long long)max);
		goto error;
	}
	if (dims[0] == 0) {
		*n = 0;
		goto out;
	}
	if (!(buf = calloc((size_t)dims[0], size))) {
		sh5_errprintf(errp, "%s: out of memory for %llu rows", path,
			      (unsigned long long)dims[0]);
		goto error;
	}
	if ((mt = sh5_evstore_compound(size, m, nm, 0)) < 0 ||
	    H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
		sh5_errprintf_h5(errp, "%s: unreadable", path);
		goto error;
	}
	*n = (size_t)dims[0];
	goto out;
error:
	free(buf);
	buf = NULL;
	if (!errno)
		errno = EINVAL;
out:
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (d >= 0)
		H5Dclose(d);
	return buf;
}

/* dst = a "/" b [ "/" c ], cut to len (paths in messages only). */
void sh5_jev_join(char *dst, size_t len, const char *a, const char *b,
		 const char *c)
{
	const char *p[3] = { a, b, c };
	size_t i, n = 0;

	for (i = 0; i < 3 && p[i] && len; i++) {
		size_t l = strlen(p[i]);

		if (i && n + 1 < len)
			dst[n++] = '/';
		if (l > len - 1 - n)
			l = len - 1 - n;
		memcpy(dst + n, p[i], l);
		n += l;
	}
	if (len)
		dst[n < len ? n : len - 1] = '\0';
}

/* ------------------------------------------------------------------ */


static herr_t name_cb(hid_t g, const char *name, const H5L_info_t *info,
		      void *arg)
{
	struct sh5_jev_names *nm = arg;
	char *s;

	(void)g;
	(void)info;
	if (nm->n >= MAX_LINKS) {
		nm->over = 1;
		return 1;
	}
	if (nm->n == nm->cap) {
		size_t c = nm->cap ? nm->cap * 2 : 16;
		char **v = realloc(nm->v, c * sizeof(*v));

		if (!v)
			return -1;
		nm->v = v;
		nm->cap = c;
	}
	if (!(s = strdup(name)))
		return -1;
	nm->v[nm->n++] = s;
	return 0;
}

void sh5_jev_names_free(struct sh5_jev_names *nm)
{
	size_t i;

	for (i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	memset(nm, 0, sizeof(*nm));
}

int sh5_jev_names_list(hid_t g, const char *path, struct sh5_jev_names *nm,
		      struct sh5_error *errp)
{
	hsize_t idx = 0;

	memset(nm, 0, sizeof(*nm));
	if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, name_cb, nm) <
	    0) {
		sh5_jev_names_free(nm);
		errno = errno ? errno : EIO;
		return sh5_errprintf_h5(errp, "%s: cannot list its members",
					path);
	}
	if (nm->over) {
		sh5_jev_names_free(nm);
		errno = EFBIG;
		return sh5_errprintf(errp, "%s: more than %d members", path,
				     MAX_LINKS);
	}
	return 0;
}

/* Link name as a task id: decimal, no sign, fits uint32. */
int sh5_jev_task_name(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int sh5_jev_obj_type(hid_t g, const char *name)
{
	H5O_info_t oi;

	if (H5Lexists(g, name, H5P_DEFAULT) <= 0)
		return -2;
	if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) <
	    0)
		return -1;
	return (int)oi.type;
}

void sh5_jev_warnf(struct sh5_evstep *s, const char *fmt, ...)
{
	va_list ap;

	if (s->nwarnings < sizeof(s->warning) / sizeof(s->warning[0])) {
		va_start(ap, fmt);
		vsnprintf(s->warning[s->nwarnings], sizeof(s->warning[0]), fmt,
			  ap);
		va_end(ap);
	}
	s->nwarnings++;
}

void sh5_evstep_count(hid_t step, size_t *tasks, uint64_t *events,
		      int *synced)
{
	struct sh5_jev_names nd = { 0 }, ev = { 0 };
	size_t i, k;
	uint32_t id;

	*tasks = 0;
	*events = 0;
	*synced = 1;
	if (H5Lexists(step, "Nodes", H5P_DEFAULT) <= 0)
		goto out;
	{
		hid_t g = H5Gopen2(step, "Nodes", H5P_DEFAULT);

		if (g < 0)
			goto out;
		if (sh5_jev_names_list(g, "Nodes", &nd, NULL) < 0) {
			H5Gclose(g);
			goto out;
		}
		for (i = 0; i < nd.n; i++) {
			char p[300];
			hid_t e;

			sh5_jev_join(p, sizeof(p), nd.v[i], SH5_EVSTORE_GROUP, NULL);
			if (H5Lexists(g, nd.v[i], H5P_DEFAULT) <= 0 ||
			    H5Lexists(g, p, H5P_DEFAULT) <= 0 ||
			    sh5_jev_obj_type(g, p) != H5O_TYPE_GROUP ||
			    (e = H5Gopen2(g, p, H5P_DEFAULT)) < 0)
				continue;
			if (sh5_jev_names_list(e, p, &ev, NULL) == 0) {
				for (k = 0; k < ev.n; k++) {
					char sp[64];
					hid_t d, s;
					hsize_t dims[1] = { 0 };

					if (sh5_jev_task_name(ev.v[k], &id) < 0 ||
					    (d = H5Dopen2(e, ev.v[k],
							  H5P_DEFAULT)) < 0)
						continue;
					s = H5Dget_space(d);
					if (s >= 0 &&
					    H5Sget_simple_extent_ndims(s) == 1 &&
					    H5Sget_simple_extent_dims(s, dims,
								      NULL) == 1) {
						(*tasks)++;
						*events += dims[0];
					}
					if (s >= 0)
						H5Sclose(s);
					H5Dclose(d);
					snprintf(sp, sizeof(sp), "%s/%s",
						 SH5_EVSTORE_SYNC, ev.v[k]);
					if (H5Lexists(e, SH5_EVSTORE_SYNC,
						      H5P_DEFAULT) <= 0 ||
					    H5Lexists(e, sp, H5P_DEFAULT) <= 0)
						*synced = 0;
				}
				sh5_jev_names_free(&ev);
			}
			H5Gclose(e);
		}
		sh5_jev_names_free(&nd);
		H5Gclose(g);
	}
out:
	if (!*tasks)
		*synced = 0;
}

static int step_cmp(const void *pa, const void *pb)
{
	return sh5_step_cmp(*(char *const *)pa, *(char *const *)pb);
}

int sh5_evjob_steps(hid_t file, char ***names, size_t *n,
		    struct sh5_error *errp)
{
	struct sh5_jev_names st = { 0 }, nd = { 0 };
	size_t i, k, j = 0;
	hid_t steps;

	*names = NULL;
	*n = 0;
	if (H5Lexists(file, "Steps", H5P_DEFAULT) <= 0)
		return 0;
	if ((steps = H5Gopen2(file, "Steps", H5P_DEFAULT)) < 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "/Steps: not a group");
	}
	if (sh5_jev_names_list(steps, "/Steps", &st, errp) < 0) {
		H5Gclose(steps);
		return -1;
	}
	for (i = 0; i < st.n; i++) {
		char path[300];
		hid_t g;
		int any = 0;

		sh5_jev_join(path, sizeof(path), st.v[i], "Nodes", NULL);
		if (H5Lexists(steps, st.v[i], H5P_DEFAULT) <= 0 ||
		    H5Lexists(steps, path, H5P_DEFAULT) <= 0 ||
		    (g = H5Gopen2(steps, path, H5P_DEFAULT)) < 0) {
			free(st.v[i]);
			st.v[i] = NULL;
			continue;
		}
		if (sh5_jev_names_list(g, path, &nd, errp) == 0) {
			for (k = 0; k < nd.n && !any; k++) {
				hid_t ng = H5Gopen2(g, nd.v[k], H5P_DEFAULT);

				if (ng < 0)
					continue;
				any = H5Lexists(ng, SH5_EVSTORE_GROUP,
						H5P_DEFAULT) > 0;
				H5Gclose(ng);
			}
			sh5_jev_names_free(&nd);
		}
		H5Gclose(g);
		if (any) {
			char *keep = st.v[i];

			st.v[i] = NULL;
			st.v[j++] = keep;
		} else {
			free(st.v[i]);
			st.v[i] = NULL;
		}
	}
	H5Gclose(steps);
	sh5_qsort(st.v, j, sizeof(*st.v), step_cmp);
	*names = st.v;
	*n = j;
	if (!j) {
		free(st.v);
		*names = NULL;
	}
	return 0;
}

void sh5_evjob_steps_free(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

