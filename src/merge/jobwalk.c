/* jobwalk.c - walk the series of a job file's step (see jobread.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "merge/jobread.h"
#include "merge/jobread_int.h"
#include "common/sort.h"

/* ------------------------------------------------------------ series */

enum { TIME_EPOCH = 0, TIME_EPOCHNS = 1, TIME_SYNC = 2 };

static int is_time_member(const char *name)
{
	return !strcmp(name, "ElapsedTime") || !strcmp(name, "EpochTime") ||
	       !strcmp(name, "EpochTimeNs") || !strcmp(name, "SyncTimeNs");
}

struct series_state {
	struct sh5_jobread_series s;
	struct namelist fields;
	hid_t memtype;		/* row: int64 time, then doubles */
	hid_t timetype;		/* row: int64 time only */
	size_t rowsize;
};

static void series_state_free(struct series_state *st)
{
	jr_namelist_free(&st->fields);
	if (st->memtype >= 0)
		H5Tclose(st->memtype);
	if (st->timetype >= 0)
		H5Tclose(st->timetype);
	st->memtype = st->timetype = -1;
}

/* Inspect the file type of d; build the memory types. */
/*
 * A dataset's claimed rows must be stored: a damaged or hostile file may
 * claim 10^9 rows over no chunk at all, and reading them would take
 * hours (HDF5 fills every missing chunk).  Chunked: the chunks stored
 * must cover the rows; contiguous: the storage must hold them.  0, or -1
 * with errno EINVAL and errp naming the dataset.
 */
static int stored_rows_check(hid_t d, hid_t sp, hid_t ft, hsize_t rows,
			     const char *where, struct sh5_error *errp)
{
	hid_t dcpl = H5Dget_create_plist(d);
	hsize_t chunk[1] = { 0 }, nchunks = 0, stored = 0;
	size_t esz = H5Tget_size(ft);
	int rc = 0;

	if (dcpl < 0 || !rows || !esz)
		goto out;
	if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
		if (H5Pget_chunk(dcpl, 1, chunk) != 1 || !chunk[0] ||
		    H5Dget_num_chunks(d, sp, &nchunks) < 0)
			goto out;
		stored = nchunks > rows / chunk[0] + 1 ? rows :
			 nchunks * chunk[0];
	} else if (H5Pget_layout(dcpl) == H5D_CONTIGUOUS) {
		stored = H5Dget_storage_size(d) / esz;
	} else {
		goto out;	/* compact: in the header, all there */
	}
	if (stored < rows) {
		errno = EINVAL;
		rc = sh5_errprintf(errp, "%s: claims %llu rows but stores "
				   "%llu (damaged)", where,
				   (unsigned long long)rows,
				   (unsigned long long)stored);
	}
out:
	if (dcpl >= 0)
		H5Pclose(dcpl);
	return rc;
}

/* Time members found by scan_members(). */
#define HAS_EPOCH 1
#define HAS_NS    2
#define HAS_SYNC  4

/* The numeric members of ft (not times) into st->fields; the time
 * members found (HAS_ flags), or -1 (errp set, or out of HDF5 names). */
static int scan_members(hid_t ft, struct series_state *st, const char *where,
			struct sh5_error *errp)
{
	int nm = H5Tget_nmembers(ft), i, has = 0;

	for (i = 0; i < nm; i++) {
		char *mn = H5Tget_member_name(ft, (unsigned)i);
		H5T_class_t mc = H5Tget_member_class(ft, (unsigned)i);

		if (!mn)
			return -1;
		if (!strcmp(mn, "EpochTime"))
			has |= HAS_EPOCH;
		else if (!strcmp(mn, "EpochTimeNs"))
			has |= HAS_NS;
		else if (!strcmp(mn, "SyncTimeNs"))
			has |= HAS_SYNC;
		if (!is_time_member(mn) &&
		    (mc == H5T_INTEGER || mc == H5T_FLOAT)) {
			if (jr_namelist_add(&st->fields, mn) < 0) {
				H5free_memory(mn);
				sh5_errprintf(errp, "%s: out of memory", where);
				return -1;
			}
		}
		H5free_memory(mn);
	}
	return has;
}

/* The memory types of st: the time (member tname) then the fields as
 * doubles; the time alone.  0, or -1 (errp set). */
static int build_memtypes(struct series_state *st, const char *tname,
			  const char *where, struct sh5_error *errp)
{
	size_t k;

	st->rowsize = sizeof(int64_t) + st->fields.n * sizeof(double);
	st->memtype = H5Tcreate(H5T_COMPOUND, st->rowsize);
	st->timetype = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
	if (st->memtype < 0 || st->timetype < 0 ||
	    H5Tinsert(st->memtype, tname, 0, H5T_NATIVE_INT64) < 0 ||
	    H5Tinsert(st->timetype, tname, 0, H5T_NATIVE_INT64) < 0)
		return sh5_errprintf_h5(errp, "%s: cannot build memory type",
					where);
	for (k = 0; k < st->fields.n; k++) {
		if (H5Tinsert(st->memtype, st->fields.v[k],
			      sizeof(int64_t) + k * sizeof(double),
			      H5T_NATIVE_DOUBLE) < 0)
			return sh5_errprintf_h5(errp, "%s: cannot build "
						"memory type", where);
	}
	st->s.nfields = st->fields.n;
	st->s.fields = (const char *const *)st->fields.v;
	return 0;
}

static int series_prepare(hid_t d, const char *where, struct series_state *st,
			  struct sh5_error *errp)
{
	hid_t ft = -1, sp = -1;
	const char *tname;
	int has;
	hsize_t dims[1];
	int rc = -1;

	ft = H5Dget_type(d);
	sp = H5Dget_space(d);
	if (ft < 0 || sp < 0) {
		sh5_errprintf_h5(errp, "%s: cannot read type", where);
		goto out;
	}
	if (H5Tget_class(ft) != H5T_COMPOUND ||
	    H5Sget_simple_extent_ndims(sp) != 1) {
		errno = EINVAL;
		rc = 1;		/* not a series: skip */
		goto out;
	}
	H5Sget_simple_extent_dims(sp, dims, NULL);
	st->s.nsamples = dims[0];
	if (stored_rows_check(d, sp, ft, dims[0], where, errp) < 0 ||
	    (has = scan_members(ft, st, where, errp)) < 0)
		goto out;
	if (has & HAS_SYNC) {
		st->s.time_source = TIME_SYNC;
		tname = "SyncTimeNs";
	} else if (has & HAS_NS) {
		st->s.time_source = TIME_EPOCHNS;
		tname = "EpochTimeNs";
	} else if (has & HAS_EPOCH) {
		st->s.time_source = TIME_EPOCH;
		tname = "EpochTime";
	} else {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: series has no EpochTime member",
			      where);
		goto out;
	}
	if (build_memtypes(st, tname, where, errp) < 0)
		goto out;
	rc = 0;
out:
	if (ft >= 0)
		H5Tclose(ft);
	if (sp >= 0)
		H5Sclose(sp);
	return rc;
}

/* t (seconds or ns, per the series) in ns; -1 if it does not fit. */
static int to_ns(const struct series_state *st, int64_t t, int64_t *ns)
{
	if (st->s.time_source != TIME_EPOCH) {
		*ns = t;
		return 0;
	}
	return __builtin_mul_overflow(t, (int64_t)1000000000, ns) ? -1 : 0;
}

/* Read rows [first, first + n) with memory type mt into buf. */
static int read_rows(hid_t d, hid_t mt, hsize_t first, hsize_t n, void *buf)
{
	hid_t fs = H5Dget_space(d), ms = -1, ft = -1, dxpl = -1;
	int rc = -1;

	if (fs < 0)
		return -1;
	if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, &first, NULL, &n,
				NULL) < 0)
		goto out;
	ms = H5Screate_simple(1, &n, NULL);
	if (ms < 0)
		goto out;
	/* HDF5's conversion and background buffers are 1 MiB (the second
	 * zeroed) per read unless told: a read of a few rows of each of
	 * thousands of series spent minutes in memset.  Size them to the
	 * read. */
	if ((ft = H5Dget_type(d)) >= 0 &&
	    (dxpl = H5Pcreate(H5P_DATASET_XFER)) >= 0) {
		size_t esz = H5Tget_size(ft) > H5Tget_size(mt) ?
			     H5Tget_size(ft) : H5Tget_size(mt);

		if (esz && H5Pset_buffer(dxpl, esz * (size_t)n, NULL,
					 NULL) < 0) {
			H5Pclose(dxpl);
			dxpl = -1;
		}
	}
	if (H5Dread(d, mt, ms, fs, dxpl >= 0 ? dxpl : H5P_DEFAULT, buf) < 0)
		goto out;
	rc = 0;
out:
	if (dxpl >= 0)
		H5Pclose(dxpl);
	if (ft >= 0)
		H5Tclose(ft);
	if (ms >= 0)
		H5Sclose(ms);
	H5Sclose(fs);
	return rc;
}

struct walk {
	struct sh5_jobread *jr;
	const struct sh5_jobread_ops *ops;
	void *arg;
	struct sh5_error *errp;
	char *rowbuf;		/* SH5_JOBREAD_CHUNK rows */
	size_t rowcap;		/* bytes */
	int64_t *times;
	double *values;
	size_t valcap;		/* doubles */
};

/* A time out of range (of the series at where). */
static int range_err(struct walk *w, const char *where, int64_t t)
{
	errno = ERANGE;
	return sh5_errprintf(w->errp, "%s: time %" PRId64 " s out of range",
			     where, t);
}

/* The row and value buffers of w large enough for st.  0, or -1. */
static int walk_buffers(struct walk *w, const struct series_state *st,
			const char *where)
{
	size_t need = SH5_JOBREAD_CHUNK * st->rowsize;

	if (need > w->rowcap) {
		char *nb = realloc(w->rowbuf, need);

		if (!nb)
			return sh5_errprintf(w->errp, "%s: out of memory",
					     where);
		w->rowbuf = nb;
		w->rowcap = need;
	}
	need = SH5_JOBREAD_CHUNK * (st->s.nfields ? st->s.nfields : 1);
	if (need > w->valcap) {
		double *nv = realloc(w->values, need * sizeof(double));

		if (!nv)
			return sh5_errprintf(w->errp, "%s: out of memory",
					     where);
		w->values = nv;
		w->valcap = need;
	}
	return 0;
}

/* Every row of d, chunk by chunk, to the chunk callback.  0, or -1. */
static int walk_rows(struct walk *w, hid_t d, struct series_state *st,
		     const char *where)
{
	uint64_t pos;
	size_t n, i, k;
	int64_t t;

	for (pos = 0; pos < st->s.nsamples; pos += n) {
		struct sh5_jobread_chunk c;

		n = st->s.nsamples - pos > SH5_JOBREAD_CHUNK ?
			    SH5_JOBREAD_CHUNK :
			    (size_t)(st->s.nsamples - pos);
		if (read_rows(d, st->memtype, pos, n, w->rowbuf) < 0)
			return sh5_errprintf_h5(w->errp, "%s: cannot read",
						where);
		for (i = 0; i < n; i++) {
			const char *row = w->rowbuf + i * st->rowsize;

			memcpy(&t, row, sizeof(t));
			if (to_ns(st, t, &w->times[i]) < 0)
				return range_err(w, where, t);
			for (k = 0; k < st->s.nfields; k++)
				memcpy(&w->values[i * st->s.nfields + k],
				       row + sizeof(int64_t) +
					       k * sizeof(double),
				       sizeof(double));
		}
		c.n = n;
		c.first = pos;
		c.time_ns = w->times;
		c.values = w->values;
		if (w->ops->chunk && w->ops->chunk(w->arg, &st->s, &c,
						   w->errp) < 0)
			return -1;
	}
	return 0;
}

/* The first and last sample times of d into st.  0, or -1. */
static int walk_span(struct walk *w, hid_t d, struct series_state *st,
		     const char *where)
{
	int64_t t;

	if (!st->s.nsamples)
		return 0;
	if (read_rows(d, st->timetype, 0, 1, &t) < 0)
		return sh5_errprintf_h5(w->errp, "%s: cannot read", where);
	if (to_ns(st, t, &st->s.t_first_ns) < 0)
		return range_err(w, where, t);
	if (read_rows(d, st->timetype, st->s.nsamples - 1, 1, &t) < 0)
		return sh5_errprintf_h5(w->errp, "%s: cannot read", where);
	if (to_ns(st, t, &st->s.t_last_ns) < 0)
		return range_err(w, where, t);
	return 0;
}

static int walk_series(struct walk *w, hid_t parent, const char *dname,
		       const char *where, struct series_state *st)
{
	hid_t d = -1;
	int rc = -1, r;

	d = H5Dopen2(parent, dname, H5P_DEFAULT);
	if (d < 0)
		return sh5_errprintf_h5(w->errp, "%s: cannot open", where);
	r = series_prepare(d, where, st, w->errp);
	if (r != 0) {
		rc = r > 0 ? 0 : -1;
		goto out;
	}
	if (walk_span(w, d, st, where) < 0)
		goto out;
	if (w->ops->series_begin) {
		r = w->ops->series_begin(w->arg, &st->s, w->errp);
		if (r != 0) {
			rc = r > 0 ? 0 : -1;
			goto out;
		}
	}
	if (walk_buffers(w, st, where) < 0 || walk_rows(w, d, st, where) < 0)
		goto out;
	if (w->ops->series_end && w->ops->series_end(w->arg, &st->s,
						     w->errp) < 0)
		goto out;
	rc = 0;
out:
	H5Dclose(d);
	return rc;
}

struct node_info {
	char *group;
	char name[128];
	int64_t index;
	int has_index;
	struct namelist tasks;
	int64_t *task_ids;
};

static int cmp_nodes(const void *a, const void *b)
{
	const struct node_info *x = a, *y = b;

	if (x->has_index != y->has_index)
		return x->has_index ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return jr_cmp_names(&x->group, &y->group);
}

/* Series dname of parent (name, task id, local rank) walked. */
static int walk_one(struct walk *w, const struct sh5_jobread_step *st,
		    const struct sh5_jobread_node *nd, hid_t parent,
		    const char *dname, const char *name, int64_t task,
		    size_t rank, const char *where)
{
	struct series_state ss;
	int r;

	memset(&ss, 0, sizeof(ss));
	ss.memtype = ss.timetype = -1;
	ss.s.step = st;
	ss.s.node = nd;
	ss.s.name = name;
	ss.s.task = task;
	ss.s.local_rank = rank;
	r = walk_series(w, parent, dname, where, &ss);
	series_state_free(&ss);
	return r;
}

static int walk_node(struct walk *w, const struct sh5_jobread_step *st,
		     hid_t nodes, struct node_info *ni, size_t position)
{
	struct sh5_jobread_node nd;
	struct namelist others = { 0 };
	char where[512];
	hid_t ng = -1, tg = -1;
	size_t i;
	int r, rc = -1;

	memset(&nd, 0, sizeof(nd));
	nd.group = ni->group;
	nd.name = ni->name;
	nd.index = ni->index;
	nd.position = position;
	nd.ntasks = ni->tasks.n;
	nd.tasks = ni->task_ids;
	if (w->ops->node_begin) {
		r = w->ops->node_begin(w->arg, st, &nd, w->errp);
		if (r != 0)
			return r > 0 ? 0 : -1;
	}
	ng = H5Gopen2(nodes, ni->group, H5P_DEFAULT);
	if (ng < 0) {
		sh5_errprintf_h5(w->errp, "%s: /Steps/%s/Nodes/%s",
				 w->jr->path, st->name, ni->group);
		goto out;
	}
	if (ni->tasks.n) {
		tg = H5Gopen2(ng, "Tasks", H5P_DEFAULT);
		if (tg < 0) {
			sh5_errprintf_h5(w->errp, "%s: /Steps/%s/Nodes/%s/"
					 "Tasks", w->jr->path, st->name,
					 ni->group);
			goto out;
		}
	}
	for (i = 0; i < ni->tasks.n; i++) {
		snprintf(where, sizeof(where), "%s: /Steps/%s/Nodes/%s/Tasks/"
			 "%s", w->jr->path, st->name, ni->group,
			 ni->tasks.v[i]);
		if (walk_one(w, st, &nd, tg, ni->tasks.v[i], "Task",
			     ni->task_ids[i], i, where) < 0)
			goto out;
	}
	if (jr_list_members(ng, H5O_TYPE_DATASET, &others) < 0) {
		sh5_errprintf_h5(w->errp, "%s: cannot list /Steps/%s/Nodes/%s",
				 w->jr->path, st->name, ni->group);
		goto out;
	}
	for (i = 0; i < others.n; i++) {
		if (!strcmp(others.v[i], "ClockOffsets"))
			continue;
		snprintf(where, sizeof(where), "%s: /Steps/%s/Nodes/%s/%s",
			 w->jr->path, st->name, ni->group, others.v[i]);
		if (walk_one(w, st, &nd, ng, others.v[i], others.v[i], -1, 0,
			     where) < 0)
			goto out;
	}
	if (w->ops->node_end && w->ops->node_end(w->arg, st, &nd, w->errp) < 0)
		goto out;
	rc = 0;
out:
	jr_namelist_free(&others);
	if (tg >= 0)
		H5Gclose(tg);
	if (ng >= 0)
		H5Gclose(ng);
	return rc;
}

static void nodes_free(struct node_info *nv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(nv[i].group);
		jr_namelist_free(&nv[i].tasks);
		free(nv[i].task_ids);
	}
	free(nv);
}

/* Node group ni->group of a step: its name, index and tasks.  0, or -1
 * (errp set). */
static int load_node(struct walk *w, const char *step, hid_t nodes,
		     struct node_info *ni)
{
	char buf[128];
	hid_t ng, tg;
	int64_t id;
	size_t k;

	ng = H5Gopen2(nodes, ni->group, H5P_DEFAULT);
	if (ng < 0)
		return sh5_errprintf_h5(w->errp, "%s: /Steps/%s/Nodes/%s",
					w->jr->path, step, ni->group);
	if (jr_attr_text(ng, "Node Name", ni->name, sizeof(ni->name)) < 0 ||
	    !ni->name[0])
		snprintf(ni->name, sizeof(ni->name), "%s", ni->group);
	if (jr_attr_text(ng, "Node Index", buf, sizeof(buf)) == 0 &&
	    jr_parse_int(buf, &id) == 0) {
		ni->index = id;
		ni->has_index = 1;
	}
	if (H5Lexists(ng, "Tasks", H5P_DEFAULT) > 0) {
		tg = H5Gopen2(ng, "Tasks", H5P_DEFAULT);
		if (tg < 0 || jr_list_members(tg, H5O_TYPE_DATASET,
					      &ni->tasks) < 0) {
			sh5_errprintf_h5(w->errp, "%s: /Steps/%s/Nodes/%s/"
					 "Tasks", w->jr->path, step, ni->group);
			if (tg >= 0)
				H5Gclose(tg);
			H5Gclose(ng);
			return -1;
		}
		H5Gclose(tg);
	}
	H5Gclose(ng);
	ni->task_ids = calloc(ni->tasks.n ? ni->tasks.n : 1, sizeof(int64_t));
	if (!ni->task_ids) {
		errno = ENOMEM;
		return sh5_errprintf(w->errp, "%s: out of memory",
				     w->jr->path);
	}
	for (k = 0; k < ni->tasks.n; k++) {
		if (jr_parse_int(ni->tasks.v[k], &ni->task_ids[k]) < 0) {
			errno = EINVAL;
			return sh5_errprintf(w->errp, "%s: /Steps/%s/Nodes/%s/"
					     "Tasks/%s: task name is not a "
					     "task id", w->jr->path, step,
					     ni->group, ni->tasks.v[k]);
		}
	}
	return 0;
}

/* Gather the node groups of a step with their attributes and tasks. */
static int load_nodes(struct walk *w, const char *step, hid_t nodes,
		      struct node_info **out, size_t *nout)
{
	struct namelist names = { 0 };
	struct node_info *nv = NULL;
	size_t i;

	if (jr_list_members(nodes, H5O_TYPE_GROUP, &names) < 0) {
		sh5_errprintf_h5(w->errp, "%s: cannot list /Steps/%s/Nodes",
				 w->jr->path, step);
		goto error;
	}
	nv = calloc(names.n ? names.n : 1, sizeof(*nv));
	if (!nv) {
		errno = ENOMEM;
		sh5_errprintf(w->errp, "%s: out of memory", w->jr->path);
		goto error;
	}
	for (i = 0; i < names.n; i++) {
		nv[i].group = names.v[i];
		names.v[i] = NULL;
		nv[i].index = (int64_t)i;
		if (load_node(w, step, nodes, &nv[i]) < 0)
			goto error;
	}
	if (names.n > 1)
		sh5_qsort(nv, names.n, sizeof(*nv), cmp_nodes);
	*out = nv;
	*nout = names.n;
	jr_namelist_free(&names);
	return 0;
error:
	if (nv)
		nodes_free(nv, names.n);
	jr_namelist_free(&names);
	return -1;
}

static int walk_step(struct walk *w, const char *name)
{
	struct sh5_jobread_step st;
	struct node_info *nv = NULL;
	size_t nn = 0, i;
	char path[300];
	hid_t nodes = -1;
	int r, rc = -1;

	snprintf(path, sizeof(path), "Steps/%s/Nodes", name);
	if (H5Lexists(w->jr->file, path, H5P_DEFAULT) <= 0) {
		/* a step without nodes has nothing to export */
		memset(&st, 0, sizeof(st));
		st.name = name;
		st.job_id = w->jr->job_id;
		if (w->ops->step_begin &&
		    (r = w->ops->step_begin(w->arg, &st, w->errp)) != 0)
			return r > 0 ? 0 : -1;
		if (w->ops->step_end)
			return w->ops->step_end(w->arg, &st, w->errp);
		return 0;
	}
	nodes = H5Gopen2(w->jr->file, path, H5P_DEFAULT);
	if (nodes < 0)
		return sh5_errprintf_h5(w->errp, "%s: /%s", w->jr->path, path);
	if (load_nodes(w, name, nodes, &nv, &nn) < 0)
		goto out;
	st.name = name;
	st.job_id = w->jr->job_id;
	st.nnodes = nn;
	if (w->ops->step_begin) {
		r = w->ops->step_begin(w->arg, &st, w->errp);
		if (r != 0) {
			rc = r > 0 ? 0 : -1;
			goto out;
		}
	}
	for (i = 0; i < nn; i++)
		if (walk_node(w, &st, nodes, &nv[i], i) < 0)
			goto out;
	if (w->ops->step_end && w->ops->step_end(w->arg, &st, w->errp) < 0)
		goto out;
	rc = 0;
out:
	if (nv)
		nodes_free(nv, nn);
	H5Gclose(nodes);
	return rc;
}

int sh5_jobread_walk(struct sh5_jobread *jr, const char *step,
		     const struct sh5_jobread_ops *ops, void *arg,
		     struct sh5_error *errp)
{
	struct walk w;
	const char *const *names;
	size_t n, i;
	int rc = -1, found = 0;

	memset(&w, 0, sizeof(w));
	w.jr = jr;
	w.ops = ops;
	w.arg = arg;
	w.errp = errp;
	w.times = malloc(SH5_JOBREAD_CHUNK * sizeof(*w.times));
	if (!w.times) {
		sh5_errprintf(errp, "%s: out of memory", jr->path);
		return -1;
	}
	if (sh5_jobread_steps(jr, &names, &n, errp) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (step && strcmp(step, names[i]))
			continue;
		found = 1;
		if (walk_step(&w, names[i]) < 0)
			goto out;
	}
	if (step && !found) {
		errno = ENOENT;
		sh5_errprintf(errp, "%s: no step %s", jr->path, step);
		goto out;
	}
	rc = 0;
out:
	free(w.times);
	free(w.rowbuf);
	free(w.values);
	return rc;
}

int sh5_jobread_field(const struct sh5_jobread_series *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nfields; i++)
		if (!strcmp(s->fields[i], name))
			return (int)i;
	return -1;
}
