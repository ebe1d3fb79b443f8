/*
 * otf2.c - the application events of a step as an OTF2 archive (see
 * otf2.h for the mapping).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

#include "sync/jobevents.h"
#include "export/otf2.h"

struct ow {
	const struct sh5_evstep *s;
	int raw;
	int by_node;		/* a location group per node */
	OTF2_Archive *ar;
	OTF2_GlobalDefWriter *gd;
	uint32_t nstr;
	/* unified regions */
	size_t nreg, creg;
	struct { char name[SH5EV_NAME_MAX + 1]; int mpi; } *reg;
	/* locations group: world-rank order; pos[row] = index in it */
	size_t *order;		/* index -> row */
	uint32_t *pos;		/* row -> index */
	uint32_t phase_param;
	uint32_t *cref;		/* comm index -> OTF2 comm ref (0: world) */
	struct sh5_otf2_result *res;
};

static OTF2_FlushType pre_flush(void *u, OTF2_FileType ft,
				OTF2_LocationRef loc, void *cb, bool final)
{
	(void)u;
	(void)ft;
	(void)loc;
	(void)cb;
	(void)final;
	return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *u, OTF2_FileType ft,
				 OTF2_LocationRef loc)
{
	(void)u;
	(void)ft;
	(void)loc;
	return 0;
}

static OTF2_FlushCallbacks flush_cbs = { .otf2_pre_flush = pre_flush,
					 .otf2_post_flush = post_flush };

static int fail(struct sh5_error *errp, const char *what, OTF2_ErrorCode e)
{
	errno = EIO;
	return sh5_errprintf(errp, "OTF2: %s: %s", what,
			     OTF2_Error_GetDescription(e));
}

static uint32_t str(struct ow *w, const char *s)
{
	OTF2_GlobalDefWriter_WriteString(w->gd, w->nstr, s);
	return w->nstr++;
}

static long region_of(struct ow *w, const char *name, int mpi)
{
	size_t i;
	void *p;

	for (i = 0; i < w->nreg; i++)
		if (w->reg[i].mpi == mpi && !strcmp(w->reg[i].name, name))
			return (long)i;
	if (w->nreg == w->creg) {
		w->creg = w->creg ? 2 * w->creg : 64;
		p = realloc(w->reg, w->creg * sizeof(*w->reg));
		if (!p)
			return -1;
		w->reg = p;
	}
	snprintf(w->reg[w->nreg].name, sizeof(w->reg->name), "%s", name);
	w->reg[w->nreg].mpi = mpi;
	return (long)w->nreg++;
}

static int row_cmp_arg_sort(const void *a, const void *b, void *arg)
{
	const struct sh5_evstep *s = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int32_t wx = s->tasks[x].world_rank, wy = s->tasks[y].world_rank;

	/* ranks in world order, tasks without a RANK record last */
	if ((wx < 0) != (wy < 0))
		return wx < 0 ? 1 : -1;
	if (wx != wy)
		return wx < wy ? -1 : 1;
	return x < y ? -1 : x > y;
}

static long row_of_loc(const struct sh5_evstep *s, int64_t loc)
{
	size_t lo = 0, hi = s->ntasks, m;

	while (lo < hi) {
		m = (lo + hi) / 2;
		if ((int64_t)s->tasks[m].task < loc)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < s->ntasks && (int64_t)s->tasks[lo].task == loc ?
		       (long)lo : -1;
}

/* Index of the communicator with global id g in s->comms, or -1. */
static long comm_index(const struct sh5_evstep *s, uint64_t g)
{
	size_t lo = 0, hi = s->ncomms, m;

	while (lo < hi) {
		m = (lo + hi) / 2;
		if (s->comms[m].global < g)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < s->ncomms && s->comms[lo].global == g ? (long)lo : -1;
}

/* OTF2 comm ref of a task's local comm id, and the rank of world rank
 * `world` in it (UNDEFINED when unknown). */
static uint32_t comm_rank(const struct ow *w, const struct sh5_evtask *t,
			  uint32_t local, int32_t world, uint32_t *ref)
{
	const struct sh5_evstep *s = w->s;
	long ci = comm_index(s, sh5_evstep_comm(t, local));
	int64_t loc;
	long row;
	size_t i;

	if (world < 0)
		goto world_comm;
	loc = sh5_evstep_loc(s, world);
	if (ci >= 0 && w->cref[ci]) {
		*ref = w->cref[ci];
		for (i = 0; i < s->comms[ci].size; i++)
			if ((int64_t)s->comms[ci].tasks[i] == loc)
				return (uint32_t)i;
		return OTF2_UNDEFINED_UINT32;
	}
world_comm:
	*ref = 0;
	if (world < 0)
		return OTF2_UNDEFINED_UINT32;
	row = row_of_loc(s, sh5_evstep_loc(s, world));
	return row < 0 ? OTF2_UNDEFINED_UINT32 : w->pos[row];
}

static OTF2_CollectiveOp coll_op(uint8_t op)
{
	switch (op) {
	case SH5EV_OP_BARRIER: return OTF2_COLLECTIVE_OP_BARRIER;
	case SH5EV_OP_BCAST: return OTF2_COLLECTIVE_OP_BCAST;
	case SH5EV_OP_SCATTER: return OTF2_COLLECTIVE_OP_SCATTER;
	case SH5EV_OP_GATHER: return OTF2_COLLECTIVE_OP_GATHER;
	case SH5EV_OP_REDUCE: return OTF2_COLLECTIVE_OP_REDUCE;
	case SH5EV_OP_ALLREDUCE: return OTF2_COLLECTIVE_OP_ALLREDUCE;
	case SH5EV_OP_ALLGATHER: return OTF2_COLLECTIVE_OP_ALLGATHER;
	case SH5EV_OP_ALLTOALL: return OTF2_COLLECTIVE_OP_ALLTOALL;
	case SH5EV_OP_REDUCE_SCATTER: return OTF2_COLLECTIVE_OP_REDUCE_SCATTER;
	case SH5EV_OP_SCAN: return OTF2_COLLECTIVE_OP_SCAN;
	case SH5EV_OP_EXSCAN: return OTF2_COLLECTIVE_OP_EXSCAN;
	default: return OTF2_COLLECTIVE_OP_BARRIER;
	}
}

static int64_t ev_time(const struct ow *w, const struct sh5_evtask *t,
		       size_t i)
{
	return !w->raw && t->sync ? t->sync[i] : t->ev[i].time_ns;
}

/* The MPI event of record x (SEND, RECV, CBEGIN, CEND) at ts. */
static OTF2_ErrorCode write_mpi(struct ow *w, const struct sh5_evtask *t,
				OTF2_EvtWriter *ew, const struct sh5ev_rec *x,
				OTF2_TimeStamp ts)
{
	struct sh5_otf2_result *r = w->res;
	uint32_t ref, rk;

	switch (x->kind) {
	case SH5EV_K_SEND:
		rk = comm_rank(w, t, x->id, x->peer, &ref);
		r->send++;
		return OTF2_EvtWriter_MpiSend(ew, NULL, ts, rk, ref,
					      (uint32_t)x->tag, x->bytes);
	case SH5EV_K_RECV:
		rk = comm_rank(w, t, x->id, x->peer, &ref);
		r->recv++;
		return OTF2_EvtWriter_MpiRecv(ew, NULL, ts, rk, ref,
					      (uint32_t)x->tag, x->bytes);
	case SH5EV_K_CBEGIN:
		r->cbegin++;
		return OTF2_EvtWriter_MpiCollectiveBegin(ew, NULL, ts);
	default:	/* SH5EV_K_CEND */
		rk = comm_rank(w, t, x->id, x->peer, &ref);
		r->cend++;
		return OTF2_EvtWriter_MpiCollectiveEnd(ew, NULL, ts,
						       coll_op(x->op), ref,
						       rk, x->bytes, x->bytes);
	}
}

/*
 * The OTF2 event of record x at ts into *e.  Returns 1 when there is one,
 * 0 when the record has none (counted as skipped), -1 out of memory.
 */
static int write_event(struct ow *w, const struct sh5_evtask *t,
		       OTF2_EvtWriter *ew, const struct sh5ev_rec *x,
		       OTF2_TimeStamp ts, OTF2_ErrorCode *e)
{
	struct sh5_otf2_result *r = w->res;
	const char *n;
	uint32_t fl;
	long g;

	switch (x->kind) {
	case SH5EV_K_ENTER:
	case SH5EV_K_EXIT:
		n = sh5_evstep_region(t, x->id, &fl);
		g = region_of(w, n, (fl & SH5EV_F_MPI) != 0);
		if (g < 0)
			return -1;
		if (x->kind == SH5EV_K_ENTER) {
			*e = OTF2_EvtWriter_Enter(ew, NULL, ts, (uint32_t)g);
			r->enter++;
		} else {
			*e = OTF2_EvtWriter_Leave(ew, NULL, ts, (uint32_t)g);
			r->leave++;
		}
		return 1;
	case SH5EV_K_SEND:
	case SH5EV_K_RECV:
	case SH5EV_K_CBEGIN:
	case SH5EV_K_CEND:
		*e = write_mpi(w, t, ew, x, ts);
		return 1;
	case SH5EV_K_PHASE:
		*e = OTF2_EvtWriter_ParameterInt(ew, NULL, ts, w->phase_param,
						 (int64_t)x->id);
		r->phase++;
		return 1;
	default:
		r->skipped++;
		return 0;
	}
}

/* Events of one rank; *nev receives the number written. */
static int write_rank(struct ow *w, size_t row, uint64_t *nev,
		      struct sh5_error *errp)
{
	const struct sh5_evtask *t = &w->s->tasks[row];
	OTF2_EvtWriter *ew = OTF2_Archive_GetEvtWriter(w->ar, t->task);
	struct sh5_otf2_result *r = w->res;
	int64_t prev = INT64_MIN;
	OTF2_ErrorCode e = OTF2_SUCCESS;
	size_t i;
	int rc;

	if (!ew)
		return fail(errp, "event writer", OTF2_ERROR_MEM_FAULT);
	*nev = 0;
	for (i = 0; i < t->nev && e == OTF2_SUCCESS; i++) {
		int64_t tt = ev_time(w, t, i);

		if (tt < prev)
			tt = prev;	/* never backwards on a location */
		prev = tt;
		rc = write_event(w, t, ew, &t->ev[i], (OTF2_TimeStamp)tt, &e);
		if (rc < 0)
			return sh5_errprintf(errp, "out of memory");
		if (rc == 0)
			continue;
		(*nev)++;
		if (tt < r->t0)
			r->t0 = tt;
		if (tt > r->t1)
			r->t1 = tt;
	}
	if (e != OTF2_SUCCESS)
		return fail(errp, "writing events", e);
	e = OTF2_Archive_CloseEvtWriter(w->ar, ew);
	if (e != OTF2_SUCCESS)
		return fail(errp, "closing an event writer", e);
	return 0;
}

/* System tree (machine, nodes), a process per rank, a location each. */
static void write_tree(struct ow *w, const char *machine, const uint64_t *nev)
{
	const struct sh5_evstep *s = w->s;
	OTF2_GlobalDefWriter *gd = w->gd;
	uint32_t cls_machine = str(w, "machine"), cls_node = str(w, "node");
	size_t i, k;
	char b[160];

	OTF2_GlobalDefWriter_WriteSystemTreeNode(gd, 0, str(w, machine),
						 cls_machine,
						 OTF2_UNDEFINED_SYSTEM_TREE_NODE);
	for (i = 0; i < s->nnodes; i++)
		OTF2_GlobalDefWriter_WriteSystemTreeNode(
			gd, (uint32_t)i + 1, str(w, s->nodes[i].name),
			cls_node, 0);
	if (w->by_node)
		for (i = 0; i < s->nnodes; i++)
			OTF2_GlobalDefWriter_WriteLocationGroup(
				gd, (uint32_t)i, str(w, s->nodes[i].name),
				OTF2_LOCATION_GROUP_TYPE_PROCESS,
				(uint32_t)i + 1,
				OTF2_UNDEFINED_LOCATION_GROUP);
	for (k = 0; k < s->ntasks; k++) {
		const struct sh5_evtask *t = &s->tasks[w->order[k]];

		if (w->by_node)
			goto location;
		if (t->world_rank >= 0)
			snprintf(b, sizeof(b), "MPI rank %d", t->world_rank);
		else
			snprintf(b, sizeof(b), "task %u", t->task);
		OTF2_GlobalDefWriter_WriteLocationGroup(
			gd, (uint32_t)k, str(w, b),
			OTF2_LOCATION_GROUP_TYPE_PROCESS, t->node + 1,
			OTF2_UNDEFINED_LOCATION_GROUP);
location:
		snprintf(b, sizeof(b), "task %u", t->task);
		OTF2_GlobalDefWriter_WriteLocation(
			gd, t->task, str(w, b), OTF2_LOCATION_TYPE_CPU_THREAD,
			nev[w->order[k]], w->by_node ? t->node : (uint32_t)k);
	}
}

/* Group 0: all locations (world order); comm 0 MPI_COMM_WORLD over
 * group 1; then a group and a comm per communicator with members. */
static int write_comms(struct ow *w, uint32_t empty, struct sh5_error *errp)
{
	const struct sh5_evstep *s = w->s;
	OTF2_GlobalDefWriter *gd = w->gd;
	uint64_t *mem = malloc((s->ntasks + 1) * sizeof(uint64_t));
	size_t i, k;
	char b[160];

	if (!mem)
		return sh5_errprintf(errp, "out of memory");
	for (k = 0; k < s->ntasks; k++)
		mem[k] = s->tasks[w->order[k]].task;
	OTF2_GlobalDefWriter_WriteGroup(gd, 0, str(w, "MPI"),
					OTF2_GROUP_TYPE_COMM_LOCATIONS,
					OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
					(uint32_t)s->ntasks, mem);
	for (k = 0; k < s->ntasks; k++)
		mem[k] = k;
	OTF2_GlobalDefWriter_WriteGroup(gd, 1, empty, OTF2_GROUP_TYPE_COMM_GROUP,
					OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
					(uint32_t)s->ntasks, mem);
	OTF2_GlobalDefWriter_WriteComm(gd, 0, str(w, "MPI_COMM_WORLD"), 1,
				       OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
	w->res->comms = 1;
	for (i = 0; i < s->ncomms; i++) {
		const struct sh5_evcomm *c = &s->comms[i];
		size_t n = 0;

		if (!w->cref[i])
			continue;
		free(mem);
		mem = malloc((c->size + 1) * sizeof(uint64_t));
		if (!mem)
			return sh5_errprintf(errp, "out of memory");
		for (k = 0; k < c->size; k++) {
			long row = row_of_loc(s, c->tasks[k]);

			if (row >= 0)
				mem[n++] = w->pos[row];
		}
		OTF2_GlobalDefWriter_WriteGroup(
			gd, w->cref[i] + 1, empty, OTF2_GROUP_TYPE_COMM_GROUP,
			OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, (uint32_t)n,
			mem);
		snprintf(b, sizeof(b), "comm %#llx",
			 (unsigned long long)c->global);
		OTF2_GlobalDefWriter_WriteComm(gd, w->cref[i], str(w, b),
					       w->cref[i] + 1,
					       OTF2_UNDEFINED_COMM,
					       OTF2_COMM_FLAG_NONE);
		w->res->comms++;
	}
	free(mem);
	return 0;
}

static int write_defs(struct ow *w, const char *machine, uint64_t *nev,
		      struct sh5_error *errp)
{
	OTF2_GlobalDefWriter *gd = w->gd;
	uint32_t empty = str(w, "");
	OTF2_ErrorCode e;
	size_t i;

	e = OTF2_GlobalDefWriter_WriteClockProperties(
		gd, 1000000000ull, (uint64_t)w->res->t0,
		(uint64_t)(w->res->t1 - w->res->t0) + 1,
		(uint64_t)w->res->t0);
	if (e != OTF2_SUCCESS)
		return fail(errp, "clock properties", e);
	write_tree(w, machine, nev);
	for (i = 0; i < w->nreg; i++)
		OTF2_GlobalDefWriter_WriteRegion(
			gd, (uint32_t)i, str(w, w->reg[i].name),
			str(w, w->reg[i].name), empty,
			w->reg[i].mpi ? OTF2_REGION_ROLE_FUNCTION :
					OTF2_REGION_ROLE_CODE,
			w->reg[i].mpi ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_USER,
			OTF2_REGION_FLAG_NONE, empty, 0, 0);
	OTF2_GlobalDefWriter_WriteParameter(gd, w->phase_param, str(w, "phase"),
					    OTF2_PARAMETER_TYPE_INT64);
	return write_comms(w, empty, errp);
}

int sh5_otf2_write(const struct sh5_evstep *s, const char *dir,
		   const char *machine, int raw, struct sh5_otf2_result *res,
		   struct sh5_error *errp)
{
	return sh5_otf2_write_flags(s, dir, machine, raw ? SH5_OTF2_RAW : 0,
				    res, errp);
}

/* The rank order (world rank) and the comm refs of w, and *nev. */
static int alloc_maps(struct ow *w, uint64_t **nev, struct sh5_error *errp)
{
	const struct sh5_evstep *s = w->s;
	uint32_t next = 1;
	size_t i;

	w->cref = calloc(s->ncomms + 1, sizeof(uint32_t));
	w->order = malloc(s->ntasks * sizeof(size_t));
	w->pos = malloc(s->ntasks * sizeof(uint32_t));
	*nev = calloc(s->ntasks, sizeof(uint64_t));
	if (!w->cref || !w->order || !w->pos || !*nev)
		return sh5_errprintf(errp, "out of memory");
	for (i = 0; i < s->ntasks; i++)
		w->order[i] = i;
	qsort_r(w->order, s->ntasks, sizeof(size_t), row_cmp_arg_sort,
		(void *)s);
	for (i = 0; i < s->ntasks; i++)
		w->pos[w->order[i]] = (uint32_t)i;
	w->phase_param = 0;
	/* comm refs in definition order: 0 world, then those with members */
	for (i = 0; i < s->ncomms; i++)
		if (s->comms[i].tasks && s->comms[i].global)
			w->cref[i] = next++;
	return 0;
}

/* Create the archive in dir (w->ar). */
static int open_archive(struct ow *w, const char *dir, const char *machine,
			struct sh5_error *errp)
{
	w->ar = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE,
				  1024 * 1024, 4 * 1024 * 1024,
				  OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (!w->ar) {
		errno = EIO;
		return sh5_errprintf(errp, "%s: cannot create an OTF2 archive",
				     dir);
	}
	OTF2_Archive_SetFlushCallbacks(w->ar, &flush_cbs, NULL);
	OTF2_Archive_SetSerialCollectiveCallbacks(w->ar);
	OTF2_Archive_SetCreator(w->ar, "sh5merge otf2 " PACKAGE_VERSION);
	OTF2_Archive_SetDescription(w->ar, "sh5 application events");
	OTF2_Archive_SetMachineName(w->ar, machine);
	return 0;
}

/* The events of every rank (nev[row] receives their numbers), then an
 * empty local definition file per location. */
static int write_events(struct ow *w, uint64_t *nev, struct sh5_error *errp)
{
	const struct sh5_evstep *s = w->s;
	OTF2_ErrorCode e;
	size_t i;

	e = OTF2_Archive_OpenEvtFiles(w->ar);
	if (e != OTF2_SUCCESS)
		return fail(errp, "opening event files", e);
	for (i = 0; i < s->ntasks; i++)
		if (write_rank(w, i, &nev[i], errp) < 0)
			return -1;
	OTF2_Archive_CloseEvtFiles(w->ar);
	if (w->res->t0 == INT64_MAX)
		w->res->t0 = w->res->t1 = 0;
	OTF2_Archive_OpenDefFiles(w->ar);
	for (i = 0; i < s->ntasks; i++) {
		OTF2_DefWriter *dw =
			OTF2_Archive_GetDefWriter(w->ar, s->tasks[i].task);

		if (dw)
			OTF2_Archive_CloseDefWriter(w->ar, dw);
	}
	OTF2_Archive_CloseDefFiles(w->ar);
	return 0;
}

int sh5_otf2_write_flags(const struct sh5_evstep *s, const char *dir,
			 const char *machine, int flags,
			 struct sh5_otf2_result *res, struct sh5_error *errp)
{
	int raw = (flags & SH5_OTF2_RAW) != 0;
	struct sh5_otf2_result dummy;
	struct ow w;
	uint64_t *nev = NULL;
	OTF2_ErrorCode e;
	int rc = -1;

	memset(&w, 0, sizeof(w));
	w.res = res ? res : &dummy;
	memset(w.res, 0, sizeof(*w.res));
	w.res->t0 = INT64_MAX;
	w.res->t1 = INT64_MIN;
	w.s = s;
	w.raw = raw;
	w.by_node = (flags & SH5_OTF2_GROUP_NODE) != 0;
	if (!s->ntasks) {
		errno = ENOENT;
		return sh5_errprintf(errp, "step %s has no events", s->step);
	}
	if (!raw && !s->synced) {
		errno = EINVAL;
		return sh5_errprintf(errp, "step %s: events not synchronized "
				     "(no SyncTimeNs): merge with --sync clc,"
				     " or use --raw", s->step);
	}
	if (alloc_maps(&w, &nev, errp) < 0 ||
	    open_archive(&w, dir, machine, errp) < 0 ||
	    write_events(&w, nev, errp) < 0)
		goto out;
	w.gd = OTF2_Archive_GetGlobalDefWriter(w.ar);
	if (!w.gd) {
		fail(errp, "global definition writer", OTF2_ERROR_MEM_FAULT);
		goto out;
	}
	if (write_defs(&w, machine, nev, errp) < 0)
		goto out;
	w.res->locations = s->ntasks;
	w.res->regions = w.nreg;
	e = OTF2_Archive_Close(w.ar);
	w.ar = NULL;
	if (e != OTF2_SUCCESS) {
		fail(errp, "closing the archive", e);
		goto out;
	}
	rc = 0;
out:
	if (w.ar)
		OTF2_Archive_Close(w.ar);
	free(w.reg);
	free(w.cref);
	free(w.order);
	free(w.pos);
	free(nev);
	return rc;
}
