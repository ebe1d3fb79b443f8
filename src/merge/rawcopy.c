/* rawcopy.c - the node group of a whole input copied without H5Ocopy
 * (see merge_int.h).  Measured slower than H5Ocopy (doc/performance.md,
 * "sh5merge merge"): used only with SH5MERGE_RAW_COPY set, for
 * comparison. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/merge_int.h"

/* The largest Totals or other dataset copied by value in one read. */
#define RAW_SMALL_MAX (16u << 20)

/* One copy: the input's node group, the output's, scratch. */
struct rc {
	struct sh5_nodestep *ns;
	const struct finfo *f;
	const unsigned char *map;   /* the input mapped, or NULL */
	hid_t out;                  /* the output's node group */
	hid_t lcpl, dapl;
	void *buf;
	size_t len;
};

/* Room for n bytes in r->buf.  0 or -1. */
static int rc_room(struct rc *r, size_t n)
{
	void *b;

	if (n <= r->len)
		return 0;
	if (!(b = realloc(r->buf, n)))
		return -1;
	r->buf = b;
	r->len = n;
	return 0;
}

/* A new dataset at path in r->out like din (type, extent, creation
 * properties, attributes).  Its id, or -1. */
static hid_t rc_create(struct rc *r, hid_t din, const char *path)
{
	hid_t t = H5Dget_type(din), ft = t >= 0 ? H5Tcopy(t) : -1;
	hid_t sp = H5Dget_space(din), dcpl = H5Dget_create_plist(din);
	hid_t d = -1;

	if (ft >= 0 && sp >= 0 && dcpl >= 0)
		d = H5Dcreate2(r->out, path, ft, sp, r->lcpl, dcpl, r->dapl);
	if (d >= 0)
		mg_copy_attrs(din, d);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (t >= 0)
		H5Tclose(t);
	return d;
}

/* A series dataset (checked by whole_ok(): chunked, every stored chunk
 * passed its Fletcher-32): its stored chunks written as they are.  0 or
 * -1. */
static int rc_series(struct rc *r, const struct whole_ent *w)
{
	hid_t din = H5Dopen2(r->ns->node, w->path, H5P_DEFAULT);
	hid_t dout = din >= 0 ? rc_create(r, din, w->path) : -1;
	hid_t dcpl = din >= 0 ? H5Dget_create_plist(din) : -1;
	hsize_t off[1], cr = 0;
	int rc = -1;

	if (dout < 0 || dcpl < 0 || H5Pget_chunk(dcpl, 1, &cr) != 1 || !cr)
		goto out;
	for (off[0] = 0; off[0] < w->rows; off[0] += cr) {
		hsize_t size = 0;
		haddr_t addr = HADDR_UNDEF;
		unsigned fmask = 0;
		uint32_t filters = 0;
		const void *p;

		if (H5Dget_chunk_info_by_coord(din, off, &fmask, &addr,
					       &size) < 0 || !size ||
		    addr == HADDR_UNDEF || rc_room(r, (size_t)size) < 0)
			goto out;
		if (r->map && addr + size <= r->f->size) {
			p = r->map + addr;
			filters = fmask;
		} else if (H5Dread_chunk(din, H5P_DEFAULT, off, &filters,
					 r->buf) >= 0) {
			p = r->buf;
		} else {
			goto out;
		}
		if (H5Dwrite_chunk(dout, H5P_DEFAULT, filters, off,
				   (size_t)size, p) < 0)
			goto out;
	}
	rc = 0;
out:
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (dout >= 0)
		H5Dclose(dout);
	if (din >= 0)
		H5Dclose(din);
	return rc;
}

/* A dataset that is not a series (a stored total, ClockOffsets, ...),
 * read whole and written alike.  0 or -1. */
static int rc_plain(struct rc *r, const char *path)
{
	hid_t din = H5Dopen2(r->ns->node, path, H5P_DEFAULT);
	hid_t dout = din >= 0 ? rc_create(r, din, path) : -1;
	hid_t t = din >= 0 ? H5Dget_type(din) : -1;
	hssize_t pts = -1;
	hid_t sp = din >= 0 ? H5Dget_space(din) : -1;
	size_t esz = t >= 0 ? H5Tget_size(t) : 0;
	int rc = -1;

	if (sp >= 0)
		pts = H5Sget_select_npoints(sp);
	if (dout < 0 || pts < 0 || !esz || (uint64_t)pts * esz >
	    RAW_SMALL_MAX || H5Tdetect_class(t, H5T_VLEN) != 0 ||
	    (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) != 0) ||
	    rc_room(r, (size_t)pts * esz + 1) < 0)
		goto out;
	if (pts && (H5Dread(din, t, H5S_ALL, H5S_ALL, H5P_DEFAULT,
			    r->buf) < 0 ||
		    H5Dwrite(dout, t, H5S_ALL, H5S_ALL, H5P_DEFAULT,
			     r->buf) < 0))
		goto out;
	rc = 0;
out:
	if (sp >= 0)
		H5Sclose(sp);
	if (t >= 0)
		H5Tclose(t);
	if (dout >= 0)
		H5Dclose(dout);
	if (din >= 0)
		H5Dclose(din);
	return rc;
}

/* The groups holding path's members get the input's attributes (created
 * on the way by the datasets; none in our writer's files). */
static int rc_group_attrs(struct rc *r, const char *group)
{
	hid_t gi = H5Gopen2(r->ns->node, group, H5P_DEFAULT);
	hid_t go = gi >= 0 ? H5Gopen2(r->out, group, H5P_DEFAULT) : -1;
	int rc = go >= 0 ? 0 : -1;

	if (go >= 0)
		mg_copy_attrs(gi, go);
	if (go >= 0)
		H5Gclose(go);
	if (gi >= 0)
		H5Gclose(gi);
	return rc;
}

/* The links of the input's group path (which has no attributes), or
 * -1. */
static long rc_links(struct rc *r, const char *path)
{
	H5G_info_t gi;
	H5O_info_t oi;
	hid_t g = H5Gopen2(r->ns->node, path, H5P_DEFAULT);

	if (g < 0 || H5Gget_info(g, &gi) < 0 ||
	    H5Oget_info2(g, &oi, H5O_INFO_NUM_ATTRS) < 0 || oi.num_attrs) {
		if (g >= 0)
			H5Gclose(g);
		return -1;
	}
	H5Gclose(g);
	return (long)gi.nlinks;
}

/* The parent group of path ("" for none) in p. */
static void rc_parent(const char *path, char *p, size_t n)
{
	const char *s = strrchr(path, '/');

	snprintf(p, n, "%.*s", s ? (int)(s - path) : 0, path);
}

/* Is parent p (of ents[i]) the first of its name among ents[0..i]? */
static int rc_first(const struct finfo *f, size_t i, const char *p)
{
	char q[SH5_NAME_MAX * 2];
	size_t k;

	for (k = 0; k < i; k++) {
		rc_parent(f->ents[k].path, q, sizeof(q));
		if (!strcmp(p, q))
			return 0;
	}
	return 1;
}

/* The writer's Totals hold exactly the totals whole_ok() checked (one
 * per series, AllTasks with tasks) in groups without attributes: else
 * the copy would miss something (H5Ocopy copies it all).  1 or 0. */
static int rc_totals_exact(struct rc *r)
{
	const struct finfo *f = r->f;
	long want, have = rc_links(r, "Totals"), n;
	char p[SH5_NAME_MAX * 2], tp[SH5_NAME_MAX * 2 + 8];
	size_t i;
	int tasks = 0;

	want = (long)f->nents;
	for (i = 0; i < f->nents && have >= 0; i++) {
		tasks |= f->ents[i].task;
		rc_parent(f->ents[i].path, p, sizeof(p));
		if (!p[0] || !rc_first(f, i, p))
			continue;
		want++;
		snprintf(tp, sizeof(tp), "Totals/%s", p);
		if ((n = rc_links(r, tp)) < 0)
			return 0;
		have += n;
	}
	return have >= 0 && have == want + tasks;
}

/* Everything of r's node group but the group itself and its attributes.
 * 0 or -1. */
static int rc_members(struct rc *r)
{
	const struct finfo *f = r->f;
	char p[SH5_NAME_MAX * 2], tp[sizeof(f->ents[0].path) + 8];
	size_t i;
	int tasks = 0;

	for (i = 0; i < f->nents; i++) {
		snprintf(tp, sizeof(tp), "Totals/%s", f->ents[i].path);
		tasks |= f->ents[i].task;
		if (rc_series(r, &f->ents[i]) < 0 || rc_plain(r, tp) < 0)
			return -1;
		rc_parent(f->ents[i].path, p, sizeof(p));
		if (p[0] && rc_first(f, i, p) && rc_group_attrs(r, p) < 0)
			return -1;
	}
	if (tasks && rc_plain(r, "Totals/AllTasks") < 0)
		return -1;
	for (i = 0; i < r->ns->nother; i++)
		if (rc_plain(r, r->ns->other[i]) < 0)
			return -1;
	if (r->ns->has_events && rc_group_attrs(r, "Events") < 0)
		return -1;
	return 0;
}

int mg_raw_copy(struct sh5_nodestep *ns, const struct finfo *f,
		const unsigned char *map, hid_t nodes)
{
	struct rc r;
	int rc = 1;

	if (!getenv("SH5MERGE_RAW_COPY") || f->nents != ns->nseries)
		return 1;
	memset(&r, 0, sizeof(r));
	r.ns = ns;
	r.f = f;
	r.map = map;
	r.out = -1;
	if (!rc_totals_exact(&r))
		return 1;
	r.lcpl = mg_lcpl_intermediate();
	/* No chunk cache: whole chunks go straight to the file. */
	if ((r.dapl = H5Pcreate(H5P_DATASET_ACCESS)) < 0 ||
	    H5Pset_chunk_cache(r.dapl, 0, 0, 1.0) < 0 || r.lcpl < 0)
		goto out;
	if ((r.out = H5Gcreate2(nodes, ns->node_name, H5P_DEFAULT,
				H5P_DEFAULT, H5P_DEFAULT)) < 0)
		goto out;
	mg_copy_attrs(ns->node, r.out);
	if (rc_members(&r) < 0) {
		H5Gclose(r.out);
		r.out = -1;
		H5Ldelete(nodes, ns->node_name, H5P_DEFAULT);
		rc = -1;
		goto out;
	}
	rc = 0;
out:
	if (r.out >= 0)
		H5Gclose(r.out);
	if (r.dapl > 0)
		H5Pclose(r.dapl);
	if (r.lcpl > 0)
		H5Pclose(r.lcpl);
	free(r.buf);
	return rc;
}
