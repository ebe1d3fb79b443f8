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

#include <hdf5_hl.h>
#include "common/checksum.h"
#include "common/outfile.h"
#include "profile/reader.h"
#include "common/timeconv.h"

static const unsigned char h5_signature[8] = { 0x89, 'H', 'D', 'F',
					       '\r', '\n', 0x1a, '\n' };

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
		      const char *name, struct sh5_series *s, uint64_t nrows,
		      hid_t d)
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
	v->dset = d;
	snprintf(v->parent, sizeof(v->parent), "%s", parent);
	if (parent[0])
		snprintf(v->path, sizeof(v->path), "%s/%s", parent, name);
	else
		snprintf(v->path, sizeof(v->path), "%s", name);
	ns->nseries++;
	return 0;
}

static herr_t attr_sane_cb(hid_t obj, const char *name,
			   const H5A_info_t *ai, void *data)
{
	hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
	int ok = a >= 0 && sh5_attr_sane(a);

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
		      void *data);

/* Keep path as an "other" object: 0, or -1 out of memory (w->oom). */
static herr_t walk_other(struct walk *w, const char *path)
{
	return add_other(w->ns, path) < 0 ? (w->oom = 1, -1) : 0;
}

/* /<node>/Events: each member an "other" object. */
static herr_t walk_events(struct walk *w, hid_t g, const char *name,
			  const char *path)
{
	hid_t sg = H5Gopen2(g, name, H5P_DEFAULT);
	herr_t rc;

	if (sg < 0)
		return walk_other(w, path);
	w->ns->has_events = 1;
	rc = H5Literate(sg, H5_INDEX_NAME, H5_ITER_INC, NULL, events_cb, w);
	H5Gclose(sg);
	return w->oom ? -1 : rc < 0 ? 0 : 0;
}

/* A series group under the node group (Tasks, ...): its members. */
static herr_t walk_group(struct walk *w, hid_t g, const char *name,
			 const char *path)
{
	struct walk sub = { w->ns, name, w->errp, 0 };
	hid_t sg = H5Gopen2(g, name, H5P_DEFAULT);
	herr_t rc;

	if (sg < 0)
		return walk_other(w, path);
	rc = H5Literate(sg, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_cb, &sub);
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

/* The series of dataset d if its type and attributes are sane, else
 * NULL. */
static struct sh5_series *sane_series(struct walk *w, hid_t d,
				      const char *name)
{
	hid_t t = H5Dget_type(d);
	int sane = sh5_type_sane(t);

	if (t >= 0)
		H5Tclose(t);
	/* Attributes read by the series factory too. */
	if (sane) {
		hsize_t idx = 0;

		sane = H5Aiterate2(d, H5_INDEX_NAME, H5_ITER_INC, &idx,
				   attr_sane_cb, NULL) >= 0;
	}
	return sane ? sh5_series_from_dataset(w->parent, name, d, NULL) :
		      NULL;
}

/* A dataset: a series, else an "other" object. */
static herr_t walk_dataset(struct walk *w, hid_t g, const char *name,
			   const char *path)
{
	hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
	struct sh5_series *s = d >= 0 ? sane_series(w, d, name) : NULL;

	if (s) {
		uint64_t n = sh5_dset_rows(d);

		/* Kept open for the merge's checks (reader.h). */
		if (!w->ns->file_image) {
			H5Dclose(d);
			d = -1;
		}
		if (add_series(w->ns, w->parent, name, s, n, d) < 0) {
			if (d >= 0)
				H5Dclose(d);
			sh5_series_destroy(s);
			w->oom = 1;
			return -1;
		}
		return 0;
	}
	if (d >= 0)
		H5Dclose(d);
	return walk_other(w, path);
}

static herr_t walk_cb(hid_t g, const char *name, const H5L_info_t *info,
		      void *data)
{
	struct walk *w = data;
	H5O_info_t oi;
	char path[2 * SH5_NAME_MAX + 2];
	int top;

	(void)info;
	if (w->parent[0])
		snprintf(path, sizeof(path), "%s/%s", w->parent, name);
	else
		snprintf(path, sizeof(path), "%s", name);
	if (strlen(name) >= SH5_NAME_MAX ||
	    H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
		/* Unreadable object header: keep it as "other" so the
		 * caller reports it when copying fails. */
		return walk_other(w, path);
	}
	top = oi.type == H5O_TYPE_GROUP && !w->parent[0];
	/* The writer's totals (see writer.c): not a series group. */
	if (top && w->ns->kind == SH5_NODESTEP_OURS &&
	    !strcmp(name, "Totals")) {
		w->ns->has_totals = 1;
		return 0;
	}
	/* Application events (events/evstore.h): not series; each of
	 * their datasets is an "other" object, copied by value. */
	if (top && w->ns->kind == SH5_NODESTEP_OURS &&
	    !strcmp(name, "Events"))
		return walk_events(w, g, name, path);
	if (top)
		return walk_group(w, g, name, path);
	if (oi.type == H5O_TYPE_DATASET)
		return walk_dataset(w, g, name, path);
	return walk_other(w, path);
}

/* ------------------------------------------------------------------ */
/* Open. */

/* in_memory: the whole file read at the open (HDF5's core driver, no
 * backing store), not piece by piece. */
static hid_t open_h5(const char *path, int in_memory)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f;

#ifdef HAVE_H5PSET_FILE_LOCKING
	H5Pset_file_locking(fapl, 0, 1);
#endif
	if (in_memory && H5Pset_fapl_core(fapl, 1 << 20, 0) < 0) {
		H5Pclose(fapl);
		return -1;
	}
	f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	return f;
}

void sh5_nodestep_close(struct sh5_nodestep *ns)
{
	size_t i;

	if (!ns)
		return;
	for (i = 0; i < ns->nseries; i++) {
		if (ns->series[i].dset >= 0)
			H5Dclose(ns->series[i].dset);
		sh5_series_destroy(ns->series[i].series);
	}
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

/* Open path (fd, a regular file: st its fstat) as HDF5, through a sparse
 * copy when it is shorter than its superblock says.  0, or -1 with errp
 * set. */
static int open_file(struct sh5_nodestep *ns, int fd, const struct stat *st,
		     const char *path, uint64_t mem_max,
		     struct sh5_error *errp)
{
	struct sh5_error h5err = { "" };
	unsigned char sig[8];
	char fdname[40];
	const char *h5name;
	uint64_t eoa;

	/* HDF5 opens by name: the name of fd, so that it reads the file
	 * checked here even if another has been renamed over the path. */
	h5name = sh5_fd_name(fd, fdname, sizeof(fdname));
	ns->size = ns->real_eof = (uint64_t)st->st_size;
	if (st->st_size == 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: empty file (the writer never "
				     "flushed it: no samples to salvage)",
				     path);
	}
	if (pread(fd, sig, sizeof(sig), 0) != (ssize_t)sizeof(sig) ||
	    memcmp(sig, h5_signature, sizeof(sig))) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: not an HDF5 file", path);
	}
	if ((ns->file = open_h5(h5name ? h5name : path,
				 ns->size <= mem_max)) >= 0)
		return 0;
	sh5_errprintf_h5(&h5err, "cannot open");
	eoa = superblock_eoa(fd);
	if (eoa <= ns->size) {
		errno = EIO;
		return sh5_errprintf(errp, "%s: corrupt HDF5 file (%s)", path,
				     h5err.text);
	}
	ns->tmp_copy = sparse_copy(fd, ns->size, eoa);
	if (ns->tmp_copy)
		ns->file = open_h5(ns->tmp_copy, 0);
	if (ns->file < 0) {
		errno = EIO;
		return sh5_errprintf(errp, "%s: truncated (%" PRIu64 " of %"
				     PRIu64 " bytes) and its structure is "
				     "lost: nothing to salvage", path,
				     ns->size, eoa);
	}
	ns->salvaged = 1;
	snprintf(ns->damage, sizeof(ns->damage), "truncated: %" PRIu64
		 " of %" PRIu64 " bytes", ns->size, eoa);
	return 0;
}

/* The node group: the one named node, else the only group at the root.
 * 0, or -1 with errp set. */
static int open_node(struct sh5_nodestep *ns, const char *node,
		     const char *path, struct sh5_error *errp)
{
	if (node) {
		snprintf(ns->node_name, sizeof(ns->node_name), "%s", node);
		if (H5Lexists(ns->file, node, H5P_DEFAULT) <= 0) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: not a node-step file "
					     "of node %s (no group /%s)", path,
					     node, node);
		}
	} else {
		H5G_info_t gi;
		char name[SH5_NAME_MAX];

		if (H5Gget_info(ns->file, &gi) < 0 || gi.nlinks != 1 ||
		    H5Lget_name_by_idx(ns->file, ".", H5_INDEX_NAME,
				       H5_ITER_INC, 0, name, sizeof(name),
				       H5P_DEFAULT) <= 0) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: not a node-step file "
					     "(the root holds no single node "
					     "group)", path);
		}
		snprintf(ns->node_name, sizeof(ns->node_name), "%s", name);
	}
	if ((ns->node = H5Gopen2(ns->file, ns->node_name, H5P_DEFAULT)) < 0) {
		errno = EINVAL;
		return sh5_errprintf_h5(errp, "%s: /%s is not a readable group",
					path, ns->node_name);
	}
	return 0;
}

/* The node group's attributes, every one read in one pass (those that
 * cannot be counted, those out of range noted as damage). */
static void read_node_attrs(struct sh5_nodestep *ns)
{
	enum { JOB, STEP, NNODES, STASKS, INDEX, NTASKS, START, USER,
	       CLUSTER, NWANT };
	long long v[NWANT] = { 0 };
	struct sh5_attr_want w[NWANT] = {
		[JOB] = { "Job ID", &v[JOB], NULL, 0, 0 },
		[STEP] = { "Step ID", NULL, ns->step, sizeof(ns->step), 0 },
		[NNODES] = { "Number of Nodes", &v[NNODES], NULL, 0, 0 },
		[STASKS] = { "Step Tasks", &v[STASKS], NULL, 0, 0 },
		[INDEX] = { "Node Index", &v[INDEX], NULL, 0, 0 },
		[NTASKS] = { "Number of Tasks", &v[NTASKS], NULL, 0, 0 },
		[START] = { "Start Time ns", &v[START], NULL, 0, 0 },
		[USER] = { "User", NULL, ns->user, sizeof(ns->user), 0 },
		[CLUSTER] = { "Cluster", NULL, ns->cluster,
			      sizeof(ns->cluster), 0 },
	};
	int ours = ns->kind == SH5_NODESTEP_OURS;

	ns->bad_attrs = sh5_attrs_read(ns->node, w, NWANT);
	if (!ours) {
		/* Ours only: a stock file's are not read as ours. */
		ns->step[0] = ns->user[0] = ns->cluster[0] = '\0';
	} else {
		if (w[JOB].found) {
			ns->has_job_id = 1;
			ns->job_id = (uint32_t)v[JOB];
		}
		/* 0: not known (Slurm's batch step has no node or task
		 * count); kept as -1 like a missing attribute. */
		if (w[NNODES].found &&
		    count_attr(ns, "Number of Nodes", v[NNODES], 0) == 0 &&
		    v[NNODES] > 0)
			ns->nnodes = (int)v[NNODES];
		if (w[STASKS].found &&
		    count_attr(ns, "Step Tasks", v[STASKS], 0) == 0 &&
		    v[STASKS] > 0)
			ns->step_tasks = (int)v[STASKS];
	}
	if (w[INDEX].found &&
	    count_attr(ns, "Node Index", v[INDEX], 0) == 0)
		ns->node_index = (int)v[INDEX];
	if (w[NTASKS].found &&
	    count_attr(ns, "Number of Tasks", v[NTASKS], 0) == 0)
		ns->ntasks = (int)v[NTASKS];
	if (w[START].found) {
		ns->has_start = 1;
		ns->start_ns = v[START];
	}
}

/* The file is of job job_id and step step (NULL: any).  0, or -1 with
 * errp set. */
static int check_owner(const struct sh5_nodestep *ns, uint32_t job_id,
		       const char *step, const char *path,
		       struct sh5_error *errp)
{
	char a[32], b[32];

	if (ns->has_job_id && ns->job_id != job_id) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: belongs to job %" PRIu32
				     ", not %" PRIu32, path, ns->job_id,
				     job_id);
	}
	if (step && ns->step[0] &&
	    strcmp(sh5_step_name(ns->step, a, sizeof(a)),
		   sh5_step_name(step, b, sizeof(b)))) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: holds step %s, its name says "
				     "%s", path, ns->step, step);
	}
	return 0;
}

/* List the node group's series and other objects.  0, or -1 with errp
 * set. */
static int list_members(struct sh5_nodestep *ns, const char *path,
			struct sh5_error *errp)
{
	struct walk w;
	herr_t rc;

	memset(&w, 0, sizeof(w));
	w.ns = ns;
	w.parent = "";
	w.errp = errp;
	rc = H5Literate(ns->node, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_cb,
			&w);
	if (w.oom)
		return sh5_errprintf(errp, "%s: out of memory", path);
	if (rc < 0 && !ns->damage[0])
		snprintf(ns->damage, sizeof(ns->damage),
			 "node group /%s: cannot list all members",
			 ns->node_name);
	if (!ns->nseries && ns->kind == SH5_NODESTEP_STOCK &&
	    ns->node_index < 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: not a node-step file (/%s "
				     "holds no series and no node "
				     "attributes)", path, ns->node_name);
	}
	return 0;
}

struct sh5_nodestep *sh5_nodestep_open(const char *path, const char *node,
				       uint32_t job_id, const char *step,
				       struct sh5_error *errp)
{
	return sh5_nodestep_open_mem(path, node, job_id, step, 0, errp);
}

/* The file's image (len bytes at img) opened by HDF5 where it is (the
 * core driver, neither copied nor released).  A handle, or -1 (not an
 * HDF5 file, or one HDF5 cannot open whole: the caller opens the file by
 * its path, which tells why and salvages what it can). */
static hid_t open_image(struct sh5_nodestep *ns, const void *img, size_t len)
{
	hid_t f;

	if (len < sizeof(h5_signature) ||
	    memcmp(img, h5_signature, sizeof(h5_signature)))
		return -1;
	H5E_BEGIN_TRY
	{
		f = H5LTopen_file_image((void *)img, len,
					H5LT_FILE_IMAGE_DONT_COPY |
					H5LT_FILE_IMAGE_DONT_RELEASE);
	}
	H5E_END_TRY;
	if (f >= 0) {
		ns->size = ns->real_eof = (uint64_t)len;
		ns->file_image = 1;
	}
	return f;
}

static struct sh5_nodestep *open_any(const char *path, const char *node,
				     uint32_t job_id, const char *step,
				     uint64_t mem_max, const void *img,
				     size_t len, struct sh5_error *errp)
{
	struct sh5_nodestep *ns = calloc(1, sizeof(*ns));
	int fd = -1;

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
	if (!img || (ns->file = open_image(ns, img, len)) < 0) {
		struct stat st;

		/* A path from a directory listing: the entry itself, a
		 * regular file (a symlink, a FIFO planted by a task: an
		 * error, not a hang or another file read as root). */
		if ((fd = sh5_infile_open_entry(path, &st, errp)) < 0)
			goto error;
		if (open_file(ns, fd, &st, path, mem_max, errp) < 0)
			goto error;
		close(fd);
		fd = -1;
	}
	ns->kind = H5Aexists(ns->file, "sh5 Format Version") > 0 ?
			   SH5_NODESTEP_OURS : SH5_NODESTEP_STOCK;
	if (open_node(ns, node, path, errp) < 0)
		goto error;
	read_node_attrs(ns);
	if (check_owner(ns, job_id, step, path, errp) < 0 ||
	    list_members(ns, path, errp) < 0)
		goto error;
	return ns;
error:
	if (fd >= 0)
		close(fd);
	sh5_nodestep_close(ns);
	return NULL;
}

struct sh5_nodestep *sh5_nodestep_open_mem(const char *path,
					   const char *node, uint32_t job_id,
					   const char *step, uint64_t mem_max,
					   struct sh5_error *errp)
{
	return open_any(path, node, job_id, step, mem_max, NULL, 0, errp);
}

struct sh5_nodestep *sh5_nodestep_open_image(const char *path,
					     const char *node,
					     uint32_t job_id, const char *step,
					     const void *img, size_t len,
					     struct sh5_error *errp)
{
	return open_any(path, node, job_id, step, 0, img, len, errp);
}
