/* reader.c - see reader.h */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlfcn.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/checksum.h"
#include "profile/reader.h"
#include "common/timeconv.h"

static const unsigned char h5_signature[8] = { 0x89, 'H', 'D', 'F',
					       '\r', '\n', 0x1a, '\n' };

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
static int attr_sane(hid_t a)
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

int sh5_attr_get_int(hid_t obj, const char *name, long long *out)
{
	hid_t a, sp;
	long long v[1] = { 0 };
	hssize_t n;
	int rc = -1;

	if (H5Aexists(obj, name) <= 0)
		return -1;
	if ((a = H5Aopen(obj, name, H5P_DEFAULT)) < 0)
		return -1;
	if (!attr_sane(a)) {
		H5Aclose(a);
		return -1;
	}
	sp = H5Aget_space(a);
	n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
	if (n == 1 && H5Aread(a, H5T_NATIVE_LLONG, v) >= 0) {
		*out = v[0];
		rc = 0;
	}
	if (sp >= 0)
		H5Sclose(sp);
	H5Aclose(a);
	return rc;
}

int sh5_attr_get_str(hid_t obj, const char *name, char *buf, size_t len)
{
	hid_t a = -1, ft = -1, mt = -1, sp = -1;
	int rc = -1;

	if (!len)
		return -1;
	buf[0] = '\0';
	if (H5Aexists(obj, name) <= 0)
		return -1;
	if ((a = H5Aopen(obj, name, H5P_DEFAULT)) < 0 || !attr_sane(a) ||
	    (ft = H5Aget_type(a)) < 0 || H5Tget_class(ft) != H5T_STRING ||
	    (sp = H5Aget_space(a)) < 0 ||
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
	if (a >= 0)
		H5Aclose(a);
	return rc;
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

/* ------------------------------------------------------------------ */
/* Salvage of files shorter than their superblock says. */

static uint64_t get_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = (v << 8) | p[n];
	return v;
}

/* End-of-file address the superblock records (base address added), or 0
 * if the superblock cannot be parsed. */
static uint64_t superblock_eoa(int fd)
{
	unsigned char b[96];
	unsigned ver, osz, off;
	uint64_t base, eoa;

	if (pread(fd, b, sizeof(b), 0) < 64 || memcmp(b, h5_signature, 8))
		return 0;
	ver = b[8];
	if (ver == 0 || ver == 1) {
		osz = b[13];
		off = ver == 0 ? 24 : 28;
	} else if (ver == 2 || ver == 3) {
		osz = b[9];
		off = 12;
	} else {
		return 0;
	}
	if (osz != 4 && osz != 8)
		return 0;
	if (off + 3 * osz > sizeof(b))
		return 0;
	base = get_le(b + off, osz);
	eoa = get_le(b + off + (ver >= 2 ? 2 : 2) * osz, osz);
	if (eoa == (osz == 8 ? UINT64_MAX : UINT32_MAX))
		return 0;
	return base + eoa;
}

/* Copy fd into a new sparse temporary file of length len.  Returns the
 * malloc'd path or NULL. */
static char *sparse_copy(int fd, uint64_t size, uint64_t len)
{
	const char *tmpdir = getenv("TMPDIR");
	char *path;
	char buf[1 << 16];
	int out;
	uint64_t done = 0;
	size_t plen;

	if (!tmpdir || !tmpdir[0])
		tmpdir = "/tmp";
	plen = strlen(tmpdir) + 40;
	if (!(path = malloc(plen)))
		return NULL;
	snprintf(path, plen, "%s/sh5merge-salvage-XXXXXX", tmpdir);
	if ((out = mkstemp(path)) < 0) {
		free(path);
		return NULL;
	}
	while (done < size) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)done);

		if (n <= 0 || write(out, buf, (size_t)n) != n)
			goto error;
		done += (uint64_t)n;
	}
	if (ftruncate(out, (off_t)len) < 0)
		goto error;
	close(out);
	return path;
error:
	close(out);
	unlink(path);
	free(path);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Enumeration. */

struct walk {
	struct sh5_nodestep *ns;
	const char *parent; /* "" or the group name */
	struct sh5_error *errp;
	int oom;
};

static int add_other(struct sh5_nodestep *ns, const char *path)
{
	char **v = realloc(ns->other, (ns->nother + 1) * sizeof(*v));

	if (!v)
		return -1;
	ns->other = v;
	if (!(v[ns->nother] = strdup(path)))
		return -1;
	ns->nother++;
	return 0;
}

static int add_series(struct sh5_nodestep *ns, const char *parent,
		      const char *name, struct sh5_series *s, uint64_t nrows)
{
	struct sh5_ns_series *v =
		realloc(ns->series, (ns->nseries + 1) * sizeof(*v));

	if (!v)
		return -1;
	ns->series = v;
	v += ns->nseries;
	memset(v, 0, sizeof(*v));
	v->series = s;
	v->nrows = nrows;
	snprintf(v->parent, sizeof(v->parent), "%s", parent);
	if (parent[0])
		snprintf(v->path, sizeof(v->path), "%s/%s", parent, name);
	else
		snprintf(v->path, sizeof(v->path), "%s", name);
	ns->nseries++;
	return 0;
}

static uint64_t dset_rows(hid_t d)
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

static herr_t attr_sane_cb(hid_t obj, const char *name,
			   const H5A_info_t *ai, void *data)
{
	hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
	int ok = a >= 0 && attr_sane(a);

	(void)ai;
	(void)data;
	if (a >= 0)
		H5Aclose(a);
	return ok ? 0 : -1;
}

/* A member of /<node>/Events: "Events/<name>" as an other object. */
static herr_t events_cb(hid_t g, const char *name, const H5L_info_t *info,
			void *data)
{
	struct walk *w = data;
	char path[SH5_NAME_MAX + 8];

	(void)g;
	(void)info;
	if (strlen(name) >= SH5_NAME_MAX)
		return 0;
	snprintf(path, sizeof(path), "Events/%s", name);
	if (add_other(w->ns, path) < 0) {
		w->oom = 1;
		return -1;
	}
	return 0;
}

static herr_t walk_cb(hid_t g, const char *name, const H5L_info_t *info,
		      void *data)
{
	struct walk *w = data;
	H5O_info_t oi;
	char path[2 * SH5_NAME_MAX + 2];

	(void)info;
	if (w->parent[0])
		snprintf(path, sizeof(path), "%s/%s", w->parent, name);
	else
		snprintf(path, sizeof(path), "%s", name);
	if (strlen(name) >= SH5_NAME_MAX ||
	    H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
		/* Unreadable object header: keep it as "other" so the
		 * caller reports it when copying fails. */
		return add_other(w->ns, path) < 0 ? (w->oom = 1, -1) : 0;
	}
	/* The writer's totals (see writer.c): not a series group. */
	if (oi.type == H5O_TYPE_GROUP && !w->parent[0] &&
	    w->ns->kind == SH5_NODESTEP_OURS && !strcmp(name, "Totals")) {
		w->ns->has_totals = 1;
		return 0;
	}
	/* Application events (events/evstore.h): not series; each of
	 * their datasets is an "other" object, copied by value. */
	if (oi.type == H5O_TYPE_GROUP && !w->parent[0] &&
	    w->ns->kind == SH5_NODESTEP_OURS && !strcmp(name, "Events")) {
		hid_t sg = H5Gopen2(g, name, H5P_DEFAULT);
		herr_t rc;

		if (sg < 0)
			return add_other(w->ns, path) < 0 ? (w->oom = 1, -1) : 0;
		w->ns->has_events = 1;
		rc = H5Literate(sg, H5_INDEX_NAME, H5_ITER_INC, NULL,
				events_cb, w);
		H5Gclose(sg);
		return w->oom ? -1 : rc < 0 ? 0 : 0;
	}
	if (oi.type == H5O_TYPE_GROUP && !w->parent[0]) {
		struct walk sub = { w->ns, name, w->errp, 0 };
		hid_t sg = H5Gopen2(g, name, H5P_DEFAULT);
		herr_t rc;

		if (sg < 0)
			return add_other(w->ns, path) < 0 ? (w->oom = 1, -1) : 0;
		rc = H5Literate(sg, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_cb,
				&sub);
		H5Gclose(sg);
		if (sub.oom) {
			w->oom = 1;
			return -1;
		}
		if (rc < 0 && !w->ns->damage[0])
			snprintf(w->ns->damage, sizeof(w->ns->damage),
				 "group %s: cannot list all members", name);
		return 0;
	}
	if (oi.type == H5O_TYPE_DATASET) {
		hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
		struct sh5_series *s = NULL;

		if (d >= 0) {
			hid_t t = H5Dget_type(d);
			int sane = sh5_type_sane(t);

			if (t >= 0)
				H5Tclose(t);
			/* Attributes read by the series factory too. */
			if (sane) {
				hsize_t idx = 0;

				sane = H5Aiterate2(d, H5_INDEX_NAME,
						   H5_ITER_INC, &idx,
						   attr_sane_cb, NULL) >= 0;
			}
			if (sane)
				s = sh5_series_from_dataset(w->parent, name, d,
							    NULL);
		}
		if (s) {
			uint64_t n = dset_rows(d);

			H5Dclose(d);
			if (add_series(w->ns, w->parent, name, s, n) < 0) {
				sh5_series_destroy(s);
				w->oom = 1;
				return -1;
			}
			return 0;
		}
		if (d >= 0)
			H5Dclose(d);
	}
	return add_other(w->ns, path) < 0 ? (w->oom = 1, -1) : 0;
}

/* ------------------------------------------------------------------ */
/* Open. */

static hid_t open_h5(const char *path)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f;

#ifdef HAVE_H5PSET_FILE_LOCKING
	H5Pset_file_locking(fapl, 0, 1);
#endif
	f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	return f;
}

void sh5_nodestep_close(struct sh5_nodestep *ns)
{
	size_t i;

	if (!ns)
		return;
	for (i = 0; i < ns->nseries; i++)
		sh5_series_destroy(ns->series[i].series);
	free(ns->series);
	for (i = 0; i < ns->nother; i++)
		free(ns->other[i]);
	free(ns->other);
	if (ns->node >= 0)
		H5Gclose(ns->node);
	if (ns->file >= 0)
		H5Fclose(ns->file);
	if (ns->tmp_copy) {
		unlink(ns->tmp_copy);
		free(ns->tmp_copy);
	}
	free(ns->path);
	free(ns);
}

/* A count or index attribute of the node group: min .. SH5_COUNT_MAX
 * (Slurm's node and task counts fit far below), else noted as damage
 * naming the attribute and the attribute is ignored.  0 ok, -1 not. */
#define SH5_COUNT_MAX 10000000LL
static int count_attr(struct sh5_nodestep *ns, const char *name,
		      long long v, long long min)
{
	if (v >= min && v <= SH5_COUNT_MAX)
		return 0;
	if (!ns->damage[0])
		snprintf(ns->damage, sizeof(ns->damage), "/%s: attribute "
			 "'%s' = %lld out of range (%lld..%lld), ignored",
			 ns->node_name, name, v, min, SH5_COUNT_MAX);
	return -1;
}

struct sh5_nodestep *sh5_nodestep_open(const char *path, const char *node,
				       uint32_t job_id, const char *step,
				       struct sh5_error *errp)
{
	struct sh5_nodestep *ns = calloc(1, sizeof(*ns));
	struct sh5_error h5err = { "" };
	struct walk w;
	struct stat st;
	unsigned char sig[8];
	long long v;
	int fd = -1;
	herr_t rc;

	if (!ns) {
		sh5_errprintf(errp, "%s: out of memory", path);
		return NULL;
	}
	ns->file = ns->node = -1;
	ns->node_index = ns->ntasks = ns->nnodes = ns->step_tasks = -1;
	if (!(ns->path = strdup(path))) {
		sh5_errprintf(errp, "%s: out of memory", path);
		goto error;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		sh5_errprintf(errp, "%s: %s", path, strerror(errno));
		goto error;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: not a regular file", path);
		goto error;
	}
	ns->size = ns->real_eof = (uint64_t)st.st_size;
	if (st.st_size == 0) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: empty file (the writer never "
			      "flushed it: no samples to salvage)", path);
		goto error;
	}
	if (pread(fd, sig, sizeof(sig), 0) != (ssize_t)sizeof(sig) ||
	    memcmp(sig, h5_signature, sizeof(sig))) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: not an HDF5 file", path);
		goto error;
	}
	ns->file = open_h5(path);
	if (ns->file < 0) {
		uint64_t eoa;

		sh5_errprintf_h5(&h5err, "cannot open");
		eoa = superblock_eoa(fd);
		if (eoa > ns->size) {
			ns->tmp_copy = sparse_copy(fd, ns->size, eoa);
			if (ns->tmp_copy)
				ns->file = open_h5(ns->tmp_copy);
			if (ns->file < 0) {
				errno = EIO;
				sh5_errprintf(errp, "%s: truncated (%" PRIu64
					      " of %" PRIu64 " bytes) and its "
					      "structure is lost: nothing to "
					      "salvage", path, ns->size, eoa);
				goto error;
			}
			ns->salvaged = 1;
			snprintf(ns->damage, sizeof(ns->damage),
				 "truncated: %" PRIu64 " of %" PRIu64
				 " bytes", ns->size, eoa);
		} else {
			errno = EIO;
			sh5_errprintf(errp, "%s: corrupt HDF5 file (%s)", path,
				      h5err.text);
			goto error;
		}
	}
	close(fd);
	fd = -1;

	ns->kind = H5Aexists(ns->file, "sh5 Format Version") > 0 ?
			   SH5_NODESTEP_OURS : SH5_NODESTEP_STOCK;
	/* The node group: the one named by the file name, else the only
	 * group at the root. */
	if (node) {
		snprintf(ns->node_name, sizeof(ns->node_name), "%s", node);
		if (H5Lexists(ns->file, node, H5P_DEFAULT) <= 0) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s: not a node-step file of node "
				      "%s (no group /%s)", path, node, node);
			goto error;
		}
	} else {
		H5G_info_t gi;
		char name[SH5_NAME_MAX];

		if (H5Gget_info(ns->file, &gi) < 0 || gi.nlinks != 1 ||
		    H5Lget_name_by_idx(ns->file, ".", H5_INDEX_NAME,
				       H5_ITER_INC, 0, name, sizeof(name),
				       H5P_DEFAULT) <= 0) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s: not a node-step file (the "
				      "root holds no single node group)", path);
			goto error;
		}
		snprintf(ns->node_name, sizeof(ns->node_name), "%s", name);
	}
	if ((ns->node = H5Gopen2(ns->file, ns->node_name, H5P_DEFAULT)) < 0) {
		errno = EINVAL;
		sh5_errprintf_h5(errp, "%s: /%s is not a readable group", path,
				 ns->node_name);
		goto error;
	}
	if (ns->kind == SH5_NODESTEP_OURS) {
		if (sh5_attr_get_int(ns->node, "Job ID", &v) == 0) {
			ns->has_job_id = 1;
			ns->job_id = (uint32_t)v;
		}
		sh5_attr_get_str(ns->node, "Step ID", ns->step,
				 sizeof(ns->step));
		/* 0: not known (Slurm's batch step has no node or task
		 * count); kept as -1 like a missing attribute. */
		if (sh5_attr_get_int(ns->node, "Number of Nodes", &v) == 0 &&
		    count_attr(ns, "Number of Nodes", v, 0) == 0 && v > 0)
			ns->nnodes = (int)v;
		if (sh5_attr_get_int(ns->node, "Step Tasks", &v) == 0 &&
		    count_attr(ns, "Step Tasks", v, 0) == 0 && v > 0)
			ns->step_tasks = (int)v;
	}
	if (sh5_attr_get_int(ns->node, "Node Index", &v) == 0 &&
	    count_attr(ns, "Node Index", v, 0) == 0)
		ns->node_index = (int)v;
	if (sh5_attr_get_int(ns->node, "Number of Tasks", &v) == 0 &&
	    count_attr(ns, "Number of Tasks", v, 0) == 0)
		ns->ntasks = (int)v;
	if (ns->has_job_id && ns->job_id != job_id) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: belongs to job %" PRIu32 ", not %"
			      PRIu32, path, ns->job_id, job_id);
		goto error;
	}
	if (step && ns->step[0]) {
		char a[32], b[32];

		if (strcmp(sh5_step_name(ns->step, a, sizeof(a)),
			   sh5_step_name(step, b, sizeof(b)))) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s: holds step %s, its name says "
				      "%s", path, ns->step, step);
			goto error;
		}
	}

	memset(&w, 0, sizeof(w));
	w.ns = ns;
	w.parent = "";
	w.errp = errp;
	rc = H5Literate(ns->node, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_cb,
			&w);
	if (w.oom) {
		sh5_errprintf(errp, "%s: out of memory", path);
		goto error;
	}
	if (rc < 0 && !ns->damage[0])
		snprintf(ns->damage, sizeof(ns->damage),
			 "node group /%s: cannot list all members",
			 ns->node_name);
	if (!ns->nseries && ns->kind == SH5_NODESTEP_STOCK &&
	    ns->node_index < 0) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: not a node-step file (/%s holds no "
			      "series and no node attributes)", path,
			      ns->node_name);
		goto error;
	}
	return ns;
error:
	if (fd >= 0)
		close(fd);
	sh5_nodestep_close(ns);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Record maps. */

struct sh5_recmap {
	size_t src_size, dst_size, n;
	size_t *src_off, *dst_off;
	/* The 8-byte slots of dst no member fills, zeroed per record
	 * (cheaper than clearing whole records); nzero == SIZE_MAX: dst is
	 * not made of 8-byte slots, clear it all. */
	size_t nzero, *zero_off;
};

void sh5_recmap_free(struct sh5_recmap *m)
{
	if (!m)
		return;
	free(m->src_off);
	free(m->dst_off);
	free(m->zero_off);
	free(m);
}

/* Fill m->zero_off with the slots of dst no member of the map fills.
 * 0, or -1 out of memory. */
static int recmap_holes(struct sh5_recmap *m)
{
	size_t slots = m->dst_size / 8, i, k;

	m->nzero = 0;
	if (m->dst_size % 8) {
		m->nzero = SIZE_MAX;
		return 0;
	}
	if (!(m->zero_off = calloc(slots ? slots : 1, sizeof(size_t))))
		return -1;
	for (i = 0; i < slots; i++) {
		for (k = 0; k < m->n; k++)
			if (m->dst_off[k] == i * 8)
				break;
		if (k == m->n)
			m->zero_off[m->nzero++] = i * 8;
	}
	return 0;
}

struct sh5_recmap *sh5_recmap_build(hid_t src, hid_t dst)
{
	struct sh5_recmap *m = calloc(1, sizeof(*m));
	int ns = H5Tget_nmembers(src), i;

	if (!m || ns <= 0 || H5Tget_class(src) != H5T_COMPOUND ||
	    H5Tget_class(dst) != H5T_COMPOUND)
		goto fail;
	m->src_size = H5Tget_size(src);
	m->dst_size = H5Tget_size(dst);
	if (!(m->src_off = calloc((size_t)ns, sizeof(size_t))) ||
	    !(m->dst_off = calloc((size_t)ns, sizeof(size_t))))
		goto fail;
	for (i = 0; i < ns; i++) {
		char *name = H5Tget_member_name(src, (unsigned)i);
		int j = name ? H5Tget_member_index(dst, name) : -1;
		hid_t a = -1, b = -1;
		int ok;

		H5free_memory(name);
		if (j < 0)
			continue;
		a = H5Tget_member_type(src, (unsigned)i);
		b = H5Tget_member_type(dst, (unsigned)j);
		ok = a >= 0 && b >= 0 && H5Tget_size(a) == 8 &&
		     H5Tget_size(b) == 8 &&
		     H5Tget_class(a) == H5Tget_class(b) &&
		     (H5Tget_class(a) == H5T_INTEGER ||
		      H5Tget_class(a) == H5T_FLOAT) &&
		     H5Tget_order(a) == H5Tget_order(b) &&
		     H5Tget_order(a) == H5Tget_order(H5T_NATIVE_UINT64);
		if (ok && H5Tget_class(a) == H5T_FLOAT)
			ok = H5Tequal(a, b) > 0;
		if (a >= 0)
			H5Tclose(a);
		if (b >= 0)
			H5Tclose(b);
		if (!ok)
			goto fail;
		m->src_off[m->n] = H5Tget_member_offset(src, (unsigned)i);
		m->dst_off[m->n] = H5Tget_member_offset(dst, (unsigned)j);
		m->n++;
	}
	if (recmap_holes(m) < 0)
		goto fail;
	return m;
fail:
	sh5_recmap_free(m);
	return NULL;
}

void sh5_recmap_apply(const struct sh5_recmap *m, const void *src, void *dst,
		      size_t n)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	size_t r, k;

	if (m->nzero == SIZE_MAX)
		memset(dst, 0, n * m->dst_size);
	for (r = 0; r < n; r++, s += m->src_size, d += m->dst_size) {
		for (k = 0; m->nzero != SIZE_MAX && k < m->nzero; k++)
			memset(d + m->zero_off[k], 0, 8);
		for (k = 0; k < m->n; k++)
			memcpy(d + m->dst_off[k], s + m->src_off[k], 8);
	}
}

/* ------------------------------------------------------------------ */
/* Cursors. */

struct sh5_series *sh5_reader_series(hid_t dset, const char *parent,
				     const char *name, struct sh5_error *errp)
{
	return sh5_series_from_dataset(parent, name, dset, errp);
}

static void cursor_damage(struct sh5_cursor *c, uint64_t at,
			  const char *fmt, const char *what)
{
	if (at < c->good_rows)
		c->good_rows = at;
	if (!c->damaged) {
		c->damaged = 1;
		snprintf(c->reason, sizeof(c->reason), fmt, what);
	}
}

/* Check the chunks of rows [from, nrows): each must be allocated and lie
 * inside real_eof (when set).  Sets good_rows at the first bad one. */
static void check_chunks(struct sh5_cursor *c)
{
	hsize_t off[1];
	uint64_t r;

	for (r = 0; r < c->nrows; r += c->chunk_rows) {
		unsigned mask = 0;
		haddr_t addr = HADDR_UNDEF;
		hsize_t size = 0;

		off[0] = r;
		if (H5Dget_chunk_info_by_coord(c->dset, off, &mask, &addr,
					       &size) < 0) {
			cursor_damage(c, r, "%s", "chunk index unreadable");
			return;
		}
		if (addr == HADDR_UNDEF) {
			cursor_damage(c, r, "%s", "chunk never written "
				      "(writer stopped before flushing)");
			return;
		}
		if (c->real_eof && addr + size > c->real_eof) {
			cursor_damage(c, r, "%s", "chunk beyond the end of "
				      "the truncated file");
			return;
		}
	}
}

/* Filters we decode ourselves, in this order, each optional: shuffle,
 * deflate, fletcher32 (as our writer stores them). */
static int pipeline_ok(struct sh5_cursor *c, hid_t dcpl)
{
	int nf = H5Pget_nfilters(dcpl), i, next = 0;

	if (nf < 0 || nf > 3)
		return 0;
	for (i = 0; i < nf; i++) {
		unsigned flags, cd[8];
		size_t ncd = 8;
		char name[64];
		H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags,
						 &ncd, cd, sizeof(name), name,
						 NULL);

		if (id == H5Z_FILTER_SHUFFLE && next <= 0) {
			c->f_shuffle = i;
			next = 1;
		} else if (id == H5Z_FILTER_DEFLATE && next <= 1) {
			c->f_deflate = i;
			next = 2;
		} else if (id == H5Z_FILTER_FLETCHER32 && next <= 2) {
			c->f_fletcher = i;
			next = 3;
		} else {
			return 0;
		}
	}
	return 1;
}

int sh5_cursor_open(struct sh5_cursor *c, hid_t dset,
		    const struct sh5_series *s, uint64_t real_eof,
		    struct sh5_error *errp)
{
	hid_t dcpl;
	hsize_t cdims[1];

	memset(c, 0, sizeof(*c));
	c->dset = dset;
	c->s = s;
	c->real_eof = real_eof;
	c->fspace = -1;
	c->rtype = -1;
	if ((c->mtype = s->ops->mem_type(s)) < 0)
		return sh5_errprintf_h5(errp, "%s: cannot build the memory "
					"type", s->name);
	if ((c->fspace = H5Dget_space(dset)) < 0) {
		sh5_errprintf_h5(errp, "%s: cannot read the dataspace",
				 s->name);
		goto error;
	}
	c->nrows = dset_rows(dset);
	c->good_rows = c->nrows;
	{
		hid_t ft = H5Dget_type(dset);

		if (ft >= 0) {
			c->rtype = H5Tget_native_type(ft, H5T_DIR_ASCEND);
			H5Tclose(ft);
		}
		if (c->rtype >= 0 &&
		    !(c->map = sh5_recmap_build(c->rtype, c->mtype))) {
			H5Tclose(c->rtype);
			c->rtype = -1;
		}
	}
	dcpl = H5Dget_create_plist(dset);
	if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
	    H5Pget_chunk(dcpl, 1, cdims) == 1 && cdims[0] > 0)
		c->chunk_rows = cdims[0];
	c->f_shuffle = c->f_deflate = c->f_fletcher = -1;
	if (dcpl >= 0 && c->chunk_rows && c->map && pipeline_ok(c, dcpl)) {
		hid_t ft = H5Dget_type(dset);

		c->direct = ft >= 0 && H5Tequal(ft, c->rtype) > 0 &&
			    H5Tget_size(ft) == H5Tget_size(c->rtype);
		if (ft >= 0)
			H5Tclose(ft);
	}
	if (dcpl >= 0)
		H5Pclose(dcpl);
	/* Chunk addresses are checked only for files cut short: a lookup
	 * walks the chunk index, too slow for every chunk of every file.
	 * Chunks of intact files that were never written read as zeros and
	 * are caught by sh5_cursor_read(). */
	if (c->chunk_rows && c->nrows && c->real_eof)
		check_chunks(c);
	return 0;
error:
	sh5_cursor_close(c);
	return -1;
}

/* Direct chunk reads: the stock plugin's chunks hold 10 records, and
 * HDF5's per-chunk selection work dominates a normal read of them.
 * Unfiltered chunks whose records are already in the native layout are
 * read as they are and copied into the ops' layout. */
static int grow(void **p, size_t *len, size_t want)
{
	void *n;

	if (*len >= want)
		return 0;
	if (!(n = realloc(*p, want)))
		return -1;
	*p = n;
	*len = want;
	return 0;
}

/* libdeflate decompresses zlib streams two to three times faster than
 * zlib; used when the shared library is installed (looked up at run time,
 * no build dependency), else zlib. */
struct libdeflate_decompressor;
static struct {
	int tried;
	struct libdeflate_decompressor *d;
	int (*zlib_decompress)(struct libdeflate_decompressor *, const void *,
			       size_t, void *, size_t, size_t *);
} ldf;

static void ldf_init(void)
{
	void *h;
	struct libdeflate_decompressor *(*alloc)(void);

	ldf.tried = 1;
	if (getenv("SH5_NO_LIBDEFLATE") ||
	    !(h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL)))
		return;
	*(void **)&alloc = dlsym(h, "libdeflate_alloc_decompressor");
	*(void **)&ldf.zlib_decompress = dlsym(h, "libdeflate_zlib_decompress");
	if (!alloc || !ldf.zlib_decompress || !(ldf.d = alloc())) {
		ldf.zlib_decompress = NULL;
		dlclose(h);
	}
}

static int inflate_to(void *dst, size_t bytes, const void *src, size_t len)
{
	uLongf got = bytes;

	if (!ldf.tried)
		ldf_init();
	if (ldf.zlib_decompress) {
		size_t out = 0;

		return ldf.zlib_decompress(ldf.d, src, len, dst, bytes,
					   &out) == 0 && out == bytes ? 0 : -1;
	}
	return uncompress(dst, &got, src, len) == Z_OK && got == bytes ? 0 : -1;
}

/* Undo HDF5's byte shuffle: byte j of element i is at src[j * n + i].
 * Blocks of 8 elements x 8 bytes are transposed in SSE2 registers (a
 * byte-by-byte loop costs as much as inflating the chunk); the edges
 * byte by byte. */
static void unshuffle_bytes(unsigned char *out, const unsigned char *src,
			    size_t n, size_t esz)
{
	size_t i = 0, j, k;

#ifdef __SSE2__
	for (; i + 8 <= n; i += 8) {
		for (j = 0; j + 8 <= esz; j += 8) {
			const unsigned char *p = src + j * n + i;
			unsigned char *o = out + i * esz + j;
			__m128i r[8], a[4], b[4], c[4];
			int t;

			for (t = 0; t < 8; t++)
				r[t] = _mm_loadl_epi64((const __m128i *)
						       (const void *)(p + t * n));
			for (t = 0; t < 4; t++)
				a[t] = _mm_unpacklo_epi8(r[2 * t], r[2 * t + 1]);
			b[0] = _mm_unpacklo_epi16(a[0], a[1]);
			b[1] = _mm_unpackhi_epi16(a[0], a[1]);
			b[2] = _mm_unpacklo_epi16(a[2], a[3]);
			b[3] = _mm_unpackhi_epi16(a[2], a[3]);
			c[0] = _mm_unpacklo_epi32(b[0], b[2]);
			c[1] = _mm_unpackhi_epi32(b[0], b[2]);
			c[2] = _mm_unpacklo_epi32(b[1], b[3]);
			c[3] = _mm_unpackhi_epi32(b[1], b[3]);
			for (t = 0; t < 4; t++) {
				_mm_storel_epi64((__m128i *)(void *)
						 (o + 2 * t * esz), c[t]);
				_mm_storel_epi64((__m128i *)(void *)
						 (o + (2 * t + 1) * esz),
						 _mm_unpackhi_epi64(c[t], c[t]));
			}
		}
		for (; j < esz; j++)
			for (k = i; k < i + 8; k++)
				out[k * esz + j] = src[j * n + k];
	}
#endif
	for (j = 0; j < esz; j++)
		for (k = i; k < n; k++)
			out[k * esz + j] = src[j * n + k];
}

/* Decode one stored chunk (bytes in c->zbuf, filter mask) into out, which
 * holds bytes of records: inflate (zlib, as HDF5's deflate filter
 * writes it), then undo the byte shuffle.  0 or -1. */
static int decode_chunk(struct sh5_cursor *c, size_t stored, uint32_t mask,
			unsigned char *out, size_t bytes, size_t esz)
{
	int inflate_it = c->f_deflate >= 0 && !(mask & (1u << c->f_deflate));
	int unshuffle = c->f_shuffle >= 0 && !(mask & (1u << c->f_shuffle)) &&
			esz > 1;
	unsigned char *src = c->zbuf;
	size_t n = bytes / esz;

	if (c->f_fletcher >= 0 && !(mask & (1u << c->f_fletcher))) {
		if (!sh5_fletcher32_ok(src, stored))
			return -1;
		stored -= 4;
	}

	if (inflate_it) {
		unsigned char *dst;

		if (unshuffle && grow(&c->tbuf, &c->tlen, bytes) < 0)
			return -1;
		dst = unshuffle ? c->tbuf : out;
		if (inflate_to(dst, bytes, src, stored) < 0)
			return -1;
		src = dst;
	} else if (stored != bytes) {
		return -1;
	} else if (!unshuffle) {
		memcpy(out, src, bytes);
		return 0;
	}
	if (unshuffle)
		unshuffle_bytes(out, src, n, esz);
	return 0;
}

/* Direct chunk reads: the stock plugin's chunks hold 10 records, and
 * HDF5's per-chunk selection work dominates a normal read of them; our
 * compressed chunks go faster decoded here than through HDF5's filter
 * pipeline.  Chunks whose records are already in the native layout are
 * read as stored, decoded, and copied into the ops' layout. */
static int read_direct(struct sh5_cursor *c, void *buf, uint64_t at,
		       size_t n)
{
	size_t rsz = H5Tget_size(c->rtype), cr = (size_t)c->chunk_rows;
	uint64_t first = at - at % cr, end = at + n, off;
	size_t need = (size_t)((end - first + cr - 1) / cr) * cr;
	unsigned char *p;
	int filtered = c->f_deflate >= 0 || c->f_shuffle >= 0 ||
		       c->f_fletcher >= 0;

	if (c->raw_rows < need) {
		void *nr = realloc(c->raw, need * rsz);

		if (!nr)
			return -1;
		c->raw = nr;
		c->raw_rows = need;
	}
	for (off = first, p = c->raw; off < end; off += cr, p += cr * rsz) {
		hsize_t o[1] = { off }, stored = 0;
		uint32_t filters = 0;

		if (!filtered) {
			/* Unfiltered: a chunk is exactly cr records; one
			 * never written fails here and the normal read
			 * handles it. */
			if (H5Dread_chunk(c->dset, H5P_DEFAULT, o, &filters,
					  p) < 0 || filters)
				return -1;
			continue;
		}
		if (H5Dget_chunk_storage_size(c->dset, o, &stored) < 0 ||
		    !stored || stored > (hsize_t)cr * rsz * 2 + 1024 ||
		    grow(&c->zbuf, &c->zlen, (size_t)stored) < 0 ||
		    H5Dread_chunk(c->dset, H5P_DEFAULT, o, &filters,
				  c->zbuf) < 0 ||
		    decode_chunk(c, (size_t)stored, filters, p, cr * rsz,
				 rsz) < 0)
			return -1;
	}
	sh5_recmap_apply(c->map, (unsigned char *)c->raw +
			 (size_t)(at - first) * rsz, buf, n);
	return 0;
}

static int read_rows(struct sh5_cursor *c, void *buf, uint64_t at,
		     size_t n)
{
	hsize_t start[1] = { at }, count[1] = { n };
	hid_t ms;
	herr_t rc;

	if (c->direct && read_direct(c, buf, at, n) == 0)
		return 0;
	if ((ms = H5Screate_simple(1, count, NULL)) < 0)
		return -1;
	rc = H5Sselect_hyperslab(c->fspace, H5S_SELECT_SET, start, NULL,
				 count, NULL);
	if (rc >= 0 && c->map && c->raw_rows < n) {
		void *nr = realloc(c->raw, n * H5Tget_size(c->rtype));

		if (nr) {
			c->raw = nr;
			c->raw_rows = n;
		}
	}
	if (rc >= 0 && c->map && c->raw_rows >= n) {
		/* Fast path: the file's records as they are, then a copy
		 * into the ops' layout. */
		rc = H5Dread(c->dset, c->rtype, ms, c->fspace, H5P_DEFAULT,
			     c->raw);
		if (rc >= 0)
			sh5_recmap_apply(c->map, c->raw, buf, n);
	} else if (rc >= 0) {
		/* Slots the file does not carry keep the buffer's values
		 * through HDF5's conversion: start from zeros. */
		memset(buf, 0, n * c->s->ops->record_size(c->s));
		rc = H5Dread(c->dset, c->mtype, ms, c->fspace, H5P_DEFAULT,
			     buf);
	}
	H5Sclose(ms);
	return rc < 0 ? -1 : 0;
}

size_t sh5_cursor_read(struct sh5_cursor *c, void *buf, size_t max)
{
	const struct sh5_series *s = c->s;
	size_t n, r, slots = sh5_record_slots(s);
	union sh5_value *v;

	if (c->pos >= c->good_rows || !max)
		return 0;
	n = c->good_rows - c->pos < max ? (size_t)(c->good_rows - c->pos) :
					   max;
	if (read_rows(c, buf, c->pos, n) < 0) {
		/* Find the first unreadable chunk; keep what precedes. */
		size_t step = c->chunk_rows ? (size_t)c->chunk_rows : 1, got = 0;
		uint64_t at = c->pos;

		if (at % step)
			step = (size_t)(step - at % step);
		while (got < n) {
			size_t k = n - got < step ? n - got : step;

			if (read_rows(c, (union sh5_value *)buf + got * slots,
				      at, k) < 0)
				break;
			got += k;
			at += k;
			step = c->chunk_rows ? (size_t)c->chunk_rows : 1;
		}
		cursor_damage(c, at, "%s", "unreadable chunk (corrupt data)");
		n = got;
	}
	/* A zero EpochTime is no sample: the fill value of a chunk that was
	 * never written.  The series ends there. */
	for (r = 0, v = buf; r < n; r++, v += slots) {
		if (!v[1].u && !v[0].u) {
			cursor_damage(c, c->pos + r, "%s", "zero-filled records "
				      "(chunk never written: the writer "
				      "stopped before flushing it)");
			n = r;
			break;
		}
		/* A time in ns must fit int64 (until 2262). */
		if (!s->has_time_ns && v[1].u > SH5_EPOCH_S_MAX) {
			cursor_damage(c, c->pos + r, "%s", "EpochTime out of "
				      "range (after the year 2262)");
			n = r;
			break;
		}
		if (!s->has_time_ns)
			v[2].i = sh5_epoch_to_ns(v[1].u);
	}
	c->pos += n;
	return n;
}

uint64_t sh5_cursor_lost(const struct sh5_cursor *c)
{
	return c->nrows - c->good_rows;
}

void sh5_cursor_close(struct sh5_cursor *c)
{
	if (c->mtype > 0)
		H5Tclose(c->mtype);
	if (c->fspace >= 0)
		H5Sclose(c->fspace);
	if (c->rtype >= 0)
		H5Tclose(c->rtype);
	sh5_recmap_free(c->map);
	free(c->raw);
	free(c->zbuf);
	free(c->tbuf);
	c->zbuf = c->tbuf = NULL;
	c->zlen = c->tlen = 0;
	c->map = NULL;
	c->raw = NULL;
	c->raw_rows = 0;
	c->rtype = -1;
	c->mtype = -1;
	c->fspace = -1;
}
