/* jobevents_read.c - see jobevents.h: reading a step's events; the checks
 * that tie them together (world ranks, communicators, ids) are in
 * jobevents_ids.c, the HDF5 helpers in jobevents_h5.c (jobevents_int.h).
 *
 * Everything read here was written from data a task produced: every
 * dataset's type, shape and size is checked before it is read, and every
 * id a record uses must have its definition.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sync/jobevents.h"
#include "sync/jobevents_int.h"
#include "sync/clockpoints.h"	/* sh5_clock_points_read() */
#include "profile/reader.h"	/* sh5_attr_get_int(), sh5_attr_get_str() */
#include "common/sort.h"

/* Reading state beyond the step itself. */
struct rd {
	struct sh5_evstep *s;
	size_t capt, capn;
	struct sh5_evstore_member *mem;	/* all CommMembers rows */
	size_t nmem;
	char (*mempath)[200];		/* dataset of the first rows */
	size_t nmempath;
};

static struct sh5_evtask *task_new(struct rd *r)
{
	struct sh5_evstep *s = r->s;

	if (s->ntasks == r->capt) {
		size_t c = r->capt ? r->capt * 2 : 16;
		struct sh5_evtask *v = realloc(s->tasks, c * sizeof(*v));

		if (!v)
			return NULL;
		s->tasks = v;
		r->capt = c;
	}
	memset(&s->tasks[s->ntasks], 0, sizeof(s->tasks[0]));
	return &s->tasks[s->ntasks++];
}

/* One task dataset Events/<name> of node index ni. */
static int read_task(struct rd *r, hid_t ev, const char *name, uint32_t id,
		     const char *evpath, uint32_t ni, struct sh5_error *errp)
{
	struct sh5_evtask *t;
	const struct sh5_evstore_field *m;
	size_t nm, n;
	long long v;
	hid_t d;

	if (!(t = task_new(r))) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "%s: out of memory", evpath);
	}
	t->task = id;
	t->node = ni;
	t->world_rank = -1;
	sh5_jev_join(t->path, sizeof(t->path), evpath, name, NULL);
	m = sh5_evstore_rec_fields(&nm);
	t->ev = sh5_jev_read_compound(ev, name, t->path, sizeof(struct sh5ev_rec), m,
			      nm, MAX_RECS, &n, errp);
	if (n == (size_t)-1)
		return -1;
	t->nev = n;
	r->s->nev += n;
	if ((d = H5Dopen2(ev, name, H5P_DEFAULT)) >= 0) {
		if (sh5_attr_get_int(d, "Task", &v) == 0 && v != (long long)id)
			sh5_jev_warnf(r->s, "%s: attribute Task is %lld", t->path, v);
		H5Dclose(d);
	}
	return 0;
}

static int task_cmp(const void *pa, const void *pb)
{
	const struct sh5_evtask *a = pa, *b = pb;

	return a->task < b->task ? -1 : a->task > b->task;
}

static struct sh5_evtask *task_find(struct sh5_evstep *s, size_t from,
				    uint32_t id)
{
	size_t i;

	for (i = from; i < s->ntasks; i++)
		if (s->tasks[i].task == id)
			return &s->tasks[i];
	return NULL;
}

/* Rows `name` of ev (Regions or Comms, fields m, rows of size bytes):
 * NULL with *n 0 when absent, *n (size_t)-1 with errp set on error. */
static void *read_rows(hid_t ev, const char *evpath, const char *name,
		       size_t size, const struct sh5_evstore_field *m,
		       size_t nm, size_t *n, struct sh5_error *errp)
{
	char path[320];

	*n = 0;
	if (H5Lexists(ev, name, H5P_DEFAULT) <= 0)
		return NULL;
	sh5_jev_join(path, sizeof(path), evpath, name, NULL);
	return sh5_jev_read_compound(ev, name, path, size, m, nm, MAX_ROWS, n,
				     errp);
}

/* Count the rows of each of s->tasks[from..]: rows of tasks not on this
 * node are warned about (and left out by the caller). */
static void count_defs(struct sh5_evstep *s, size_t from, const char *evpath,
		       struct sh5_evstore_region *reg, size_t nreg,
		       const struct sh5_evstore_comm *com, size_t ncom)
{
	size_t i;

	for (i = 0; i < nreg; i++) {
		struct sh5_evtask *t = task_find(s, from, reg[i].task);

		reg[i].name[SH5EV_NAME_MAX] = '\0';
		if (t)
			t->nregions++;
		else
			sh5_jev_warnf(s, "%s/Regions: row %zu names task %" PRIu32
			      " without events on this node", evpath, i,
			      reg[i].task);
	}
	for (i = 0; i < ncom; i++) {
		struct sh5_evtask *t = task_find(s, from, com[i].task);

		if (t)
			t->ncomms++;
		else
			sh5_jev_warnf(s, "%s/Comms: row %zu names task %" PRIu32
			      " without events on this node", evpath, i,
			      com[i].task);
	}
}

/* Allocate the counted rows of s->tasks[from..] (counts back to 0). */
static int alloc_defs(struct sh5_evstep *s, size_t from, const char *evpath,
		      struct sh5_error *errp)
{
	size_t i;

	for (i = from; i < s->ntasks; i++) {
		struct sh5_evtask *t = &s->tasks[i];

		if ((t->nregions && !(t->regions = calloc(t->nregions,
						sizeof(*t->regions)))) ||
		    (t->ncomms && !(t->comms = calloc(t->ncomms,
						      sizeof(*t->comms))))) {
			errno = ENOMEM;
			sh5_errprintf(errp, "%s: out of memory", evpath);
			return -1;
		}
		t->nregions = t->ncomms = 0;
	}
	return 0;
}

/* Regions and Comms rows of node's tasks (s->tasks[from..]). */
static int assign_defs(struct rd *r, size_t from, hid_t ev,
		       const char *evpath, struct sh5_error *errp)
{
	struct sh5_evstep *s = r->s;
	const struct sh5_evstore_field *m;
	struct sh5_evstore_region *reg = NULL;
	struct sh5_evstore_comm *com = NULL;
	size_t nm, nreg = 0, ncom = 0, i;
	int rc = -1;

	m = sh5_evstore_region_fields(&nm);
	reg = read_rows(ev, evpath, "Regions", sizeof(*reg), m, nm, &nreg,
			errp);
	if (nreg == (size_t)-1)
		goto out;
	m = sh5_evstore_comm_fields(&nm);
	com = read_rows(ev, evpath, "Comms", sizeof(*com), m, nm, &ncom, errp);
	if (ncom == (size_t)-1)
		goto out;
	/* Count, allocate, fill: rows of tasks not on this node are
	 * warned about and left out. */
	count_defs(s, from, evpath, reg, nreg, com, ncom);
	if (alloc_defs(s, from, evpath, errp) < 0)
		goto out;
	for (i = 0; i < nreg; i++) {
		struct sh5_evtask *t = task_find(s, from, reg[i].task);

		if (t)
			t->regions[t->nregions++] = reg[i];
	}
	for (i = 0; i < ncom; i++) {
		struct sh5_evtask *t = task_find(s, from, com[i].task);

		if (!t)
			continue;
		if (com[i].size < 1 || com[i].rank < 0 ||
		    com[i].rank >= com[i].size) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s/Comms: row %zu: rank %" PRId32
				      " of size %" PRId32, evpath, i,
				      com[i].rank, com[i].size);
			goto out;
		}
		t->comms[t->ncomms++] = com[i];
	}
	rc = 0;
out:
	free(reg);
	free(com);
	return rc;
}

/* Size of communicator g as the Comms rows of s->tasks[from..] say; -1
 * when none does. */
static long comm_size_on(const struct sh5_evstep *s, size_t from, uint64_t g)
{
	size_t i, k;

	for (i = from; i < s->ntasks; i++)
		for (k = 0; k < s->tasks[i].ncomms; k++)
			if (s->tasks[i].comms[k].global == g)
				return s->tasks[i].comms[k].size;
	return -1;
}

static int read_members(struct rd *r, size_t from, hid_t ev,
			const char *evpath, struct sh5_error *errp)
{
	char path[320];
	const struct sh5_evstore_field *m;
	struct sh5_evstore_member *mem, *v;
	size_t nm, n, i, k;

	if (H5Lexists(ev, "CommMembers", H5P_DEFAULT) <= 0)
		return 0;
	sh5_jev_join(path, sizeof(path), evpath, "CommMembers", NULL);
	m = sh5_evstore_member_fields(&nm);
	mem = sh5_jev_read_compound(ev, "CommMembers", path, sizeof(*mem), m, nm,
			    MAX_ROWS, &n, errp);
	if (n == (size_t)-1)
		return -1;
	if (!n)
		return 0;
	/* Each dataset on its own: one row per member of each of its
	 * communicators, which this node's Comms rows define. */
	sh5_qsort(mem, n, sizeof(*mem), sh5_jev_mem_cmp);
	for (i = 0; i < n; i = k) {
		long size = comm_size_on(r->s, from, mem[i].global);

		for (k = i; k < n && mem[k].global == mem[i].global; k++)
			;
		if (size < 0 || (size_t)size != k - i) {
			uint64_t g = mem[i].global;

			free(mem);
			errno = EINVAL;
			if (size < 0)
				return sh5_errprintf(errp, "%s: rows for "
					"communicator %" PRIu64 ", which no "
					"Comms row of this node defines",
					path, g);
			return sh5_errprintf(errp, "%s: communicator %" PRIu64
				" has %zu member rows, its size is %ld",
				path, g, k - i, size);
		}
	}
	if (!(v = realloc(r->mem, (r->nmem + n) * sizeof(*v)))) {
		free(mem);
		errno = ENOMEM;
		return sh5_errprintf(errp, "%s: out of memory", path);
	}
	r->mem = v;
	memcpy(r->mem + r->nmem, mem, n * sizeof(*mem));
	r->nmem += n;
	free(mem);
	return 0;
}

/* Events/SyncTimeNs/<task> of the node's tasks, when present. */
static int read_sync(struct rd *r, size_t from, hid_t ev, const char *evpath,
		     struct sh5_error *errp)
{
	struct sh5_evstep *s = r->s;
	hid_t g, d = -1, sp = -1, ft = -1;
	size_t i;
	int rc = -1;

	if (H5Lexists(ev, SH5_EVSTORE_SYNC, H5P_DEFAULT) <= 0)
		return 0;
	if ((g = H5Gopen2(ev, SH5_EVSTORE_SYNC, H5P_DEFAULT)) < 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s/%s: not a group", evpath,
				     SH5_EVSTORE_SYNC);
	}
	for (i = from; i < s->ntasks; i++) {
		struct sh5_evtask *t = &s->tasks[i];
		char name[16], path[320];
		hsize_t dims[1] = { 0 };

		snprintf(name, sizeof(name), "%" PRIu32, t->task);
		sh5_jev_join(path, sizeof(path), evpath, SH5_EVSTORE_SYNC, name);
		if (H5Lexists(g, name, H5P_DEFAULT) <= 0)
			continue;
		if ((d = H5Dopen2(g, name, H5P_DEFAULT)) < 0 ||
		    (ft = H5Dget_type(d)) < 0 ||
		    H5Tget_class(ft) != H5T_INTEGER ||
		    (sp = H5Dget_space(d)) < 0 ||
		    H5Sget_simple_extent_ndims(sp) != 1 ||
		    H5Sget_simple_extent_dims(sp, dims, NULL) != 1) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s: wrong type or shape (want "
				      "one int64 per record)", path);
			goto out;
		}
		if (dims[0] != (hsize_t)t->nev) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s: %llu times for %zu records",
				      path, (unsigned long long)dims[0],
				      t->nev);
			goto out;
		}
		if (!(t->sync = malloc((t->nev ? t->nev : 1) *
				       sizeof(*t->sync)))) {
			errno = ENOMEM;
			sh5_errprintf(errp, "%s: out of memory", path);
			goto out;
		}
		if (t->nev && H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL,
				      H5P_DEFAULT, t->sync) < 0) {
			sh5_errprintf_h5(errp, "%s: unreadable", path);
			goto out;
		}
		H5Sclose(sp);
		H5Tclose(ft);
		H5Dclose(d);
		sp = ft = d = -1;
	}
	rc = 0;
out:
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (d >= 0)
		H5Dclose(d);
	H5Gclose(g);
	return rc;
}

/* A new entry in s->nodes for node group g (link name, HDF5 path npath):
 * its index, name and clock-offset measurements; *ni its index in
 * s->nodes.  0, or -1 with errno and errp set. */
static int node_add(struct rd *r, hid_t g, const char *name,
		    const char *npath, uint32_t *ni, struct sh5_error *errp)
{
	struct sh5_evstep *s = r->s;
	struct sh5_clock_points cp;
	struct sh5_evnode *node;
	char why[128] = "";
	long long v;

	if (s->nnodes == r->capn) {
		size_t c = r->capn ? r->capn * 2 : 8;
		struct sh5_evnode *nv = realloc(s->nodes, c * sizeof(*nv));

		if (!nv) {
			errno = ENOMEM;
			sh5_errprintf(errp, "%s: out of memory", npath);
			return -1;
		}
		s->nodes = nv;
		r->capn = c;
	}
	*ni = (uint32_t)s->nnodes;
	node = &s->nodes[s->nnodes++];
	memset(node, 0, sizeof(*node));
	node->index = sh5_attr_get_int(g, "Node Index", &v) == 0 &&
		      v >= 0 && v <= INT32_MAX ? (int32_t)v : (int32_t)*ni;
	if (sh5_attr_get_str(g, "Node Name", node->name,
			     sizeof(node->name)) < 0)
		snprintf(node->name, sizeof(node->name), "%s", name);
	if (sh5_clock_points_read(g, &cp, why, sizeof(why)) < 0) {
		sh5_jev_warnf(s, "%s: %s: no OFFSET lines for its tasks", npath, why);
	} else {
		node->noff = cp.n;
		node->off = cp.pts;
		node->off_rtt = cp.rtt;
	}
	return 0;
}

/* Node group `name` of Nodes/: its Events, when it has some. */
static int read_node(struct rd *r, hid_t nodes, const char *nodes_path,
		     const char *name, struct sh5_error *errp)
{
	struct sh5_evstep *s = r->s;
	char npath[256], evpath[300];
	struct sh5_jev_names nm = { 0 };
	hid_t g = -1, ev = -1;
	size_t from = s->ntasks, i;
	long long v;
	uint32_t ni, id;
	int rc = -1, ty;

	sh5_jev_join(npath, sizeof(npath), nodes_path, name, NULL);
	sh5_jev_join(evpath, sizeof(evpath), npath, SH5_EVSTORE_GROUP, NULL);
	if ((g = H5Gopen2(nodes, name, H5P_DEFAULT)) < 0)
		return 0;	/* not a group: not a node */
	ty = sh5_jev_obj_type(g, SH5_EVSTORE_GROUP);
	if (ty == -2) {
		rc = 0;
		goto out;
	}
	if (ty != H5O_TYPE_GROUP ||
	    (ev = H5Gopen2(g, SH5_EVSTORE_GROUP, H5P_DEFAULT)) < 0) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: not a group", evpath);
		goto out;
	}
	if (sh5_attr_get_int(ev, "Events Format Version", &v) == 0 && v != 1) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: Events Format Version %lld (this "
			      "sh5merge reads 1)", evpath, v);
		goto out;
	}
	if (node_add(r, g, name, npath, &ni, errp) < 0)
		goto out;
	if (sh5_jev_names_list(ev, evpath, &nm, errp) < 0)
		goto out;
	for (i = 0; i < nm.n; i++) {
		const char *n = nm.v[i];

		if (sh5_jev_task_name(n, &id) < 0) {
			if (strcmp(n, "Regions") && strcmp(n, "Comms") &&
			    strcmp(n, "CommMembers") &&
			    strcmp(n, SH5_EVSTORE_SYNC))
				sh5_jev_warnf(s, "%s/%s: not an events dataset; left "
				      "out", evpath, n);
			continue;
		}
		if (read_task(r, ev, n, id, evpath, ni, errp) < 0)
			goto out;
	}
	if (assign_defs(r, from, ev, evpath, errp) < 0 ||
	    read_members(r, from, ev, evpath, errp) < 0 ||
	    read_sync(r, from, ev, evpath, errp) < 0)
		goto out;
	rc = 0;
out:
	sh5_jev_names_free(&nm);
	if (ev >= 0)
		H5Gclose(ev);
	H5Gclose(g);
	return rc;
}

struct sh5_evstep *sh5_evstep_read(hid_t step, const char *step_name,
				   struct sh5_error *errp)
{
	struct sh5_evstep *s;
	struct rd r = { 0 };
	struct sh5_jev_names nm = { 0 };
	char path[128];
	hid_t nodes = -1;
	size_t i;

	if (!(s = calloc(1, sizeof(*s)))) {
		errno = ENOMEM;
		sh5_errprintf(errp, "out of memory");
		return NULL;
	}
	r.s = s;
	snprintf(s->step, sizeof(s->step), "%s", step_name);
	sh5_jev_join(path, sizeof(path), "/Steps", step_name, "Nodes");
	if (H5Lexists(step, "Nodes", H5P_DEFAULT) <= 0)
		return s;
	if ((nodes = H5Gopen2(step, "Nodes", H5P_DEFAULT)) < 0) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: not a group", path);
		goto error;
	}
	if (sh5_jev_names_list(nodes, path, &nm, errp) < 0)
		goto error;
	for (i = 0; i < nm.n; i++)
		if (read_node(&r, nodes, path, nm.v[i], errp) < 0)
			goto error;
	sh5_qsort(s->tasks, s->ntasks, sizeof(*s->tasks), task_cmp);
	if (sh5_jev_set_ranks(s, errp) < 0 ||
	    sh5_jev_build_comms(s, r.mem, &r.nmem, errp) < 0 ||
	    sh5_jev_check_records(s, errp) < 0)
		goto error;
	s->synced = s->ntasks > 0;
	for (i = 0; i < s->ntasks; i++)
		if (!s->tasks[i].sync)
			s->synced = 0;
	sh5_jev_names_free(&nm);
	free(r.mem);
	H5Gclose(nodes);
	return s;
error:
	sh5_jev_names_free(&nm);
	free(r.mem);
	if (nodes >= 0)
		H5Gclose(nodes);
	sh5_evstep_free(s);
	if (!errno)
		errno = EINVAL;
	return NULL;
}

void sh5_evstep_free(struct sh5_evstep *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->ntasks; i++) {
		free(s->tasks[i].ev);
		free(s->tasks[i].sync);
		free(s->tasks[i].regions);
		free(s->tasks[i].comms);
	}
	for (i = 0; i < s->nnodes; i++) {
		free(s->nodes[i].off);
		free(s->nodes[i].off_rtt);
	}
	for (i = 0; i < s->ncomms; i++)
		free(s->comms[i].tasks);
	free(s->tasks);
	free(s->nodes);
	free(s->comms);
	free(s->rank_loc);
	free(s);
}
