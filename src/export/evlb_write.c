/* evlb_write.c - writing a rank's phase from the event model (see
 * evlb_write.h). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/evlb_write.h"

/* The file that writes an edge (as evlb.c sorts them). */
static uint32_t holder(const struct sh5_evlb_edge *e)
{
	return e->kind == SH5_EVLB_BROADCAST ? e->to : e->from;
}

/* Objects are sorted by (task, phase, id). */
static int obj_before(const struct sh5_evlb_object *o, uint32_t task,
		      int64_t k)
{
	return o->task < task || (o->task == task && o->phase < k);
}

static void rank_entity(const struct sh5_evlb *m, uint32_t task,
			const struct sh5_lbdata_task *tmpl,
			struct sh5_lbdata_entity *e)
{
	const struct sh5_evlb_rank *r = sh5_evlb_rank(m, task);

	*e = tmpl->entity;
	e->seq_id = task;
	if (r)
		e->home = r->node;
}

static void kv_d(struct sh5_lbdata_kv *kv, size_t *n, const char *key,
		 double d)
{
	kv[*n].key = key;
	kv[*n].kind = SH5_LBDATA_KV_DOUBLE;
	kv[(*n)++].d = d;
}

static void kv_i(struct sh5_lbdata_kv *kv, size_t *n, const char *key,
		 int64_t i)
{
	kv[*n].key = key;
	kv[*n].kind = SH5_LBDATA_KV_INT;
	kv[(*n)++].i = i;
}

#define MAX_USER 32

static int write_rank_task(const struct sh5_evlb_rank *r, int64_t k,
			   struct sh5_lbdata_file *f,
			   const struct sh5_lbdata_task *tmpl,
			   struct sh5_error *errp)
{
	const struct sh5_evlb_cell *c = &r->cell[k];
	struct sh5_lbdata_kv user[MAX_USER];
	struct sh5_lbdata_task t = *tmpl;
	size_t n = tmpl->nuser < MAX_USER - 8 ? tmpl->nuser : MAX_USER - 8;
	double outside = c->wall - c->mpi;

	if (outside < 0)
		outside = 0;
	memcpy(user, tmpl->user, n * sizeof(*user));
	kv_d(user, &n, "wall_time", c->wall);
	kv_d(user, &n, "mpi_time", c->mpi);
	kv_d(user, &n, "outside_mpi_time", outside);
	kv_d(user, &n, "objects_load", c->objects);
	kv_i(user, &n, "messages_sent", c->sent_msgs);
	kv_d(user, &n, "bytes_sent", c->sent_bytes);
	kv_i(user, &n, "collective_calls", c->coll_calls);
	kv_d(user, &n, "collective_bytes", c->coll_bytes);
	t.user = user;
	t.nuser = n;
	t.time = outside - c->objects > 0 ? outside - c->objects : 0.0;
	t.node = r->node;
	t.entity.home = r->node;
	return sh5_lbdata_file_task(f, &t, errp);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* First object >= (task, k, 0) in m->objects. */
static size_t first_object(const struct sh5_evlb *m, uint32_t task, int64_t k)
{
	size_t lo = 0, hi = m->nobjects, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (obj_before(&m->objects[mid], task, k))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The objects of r in phase k: every object the rank declared in phase k
 * or before, with its load of phase k (0 when it declared none there).
 * An entity of one phase stays in the next ones: LBAF carries the
 * objects of a phase over to the next and fails on one that vanished.
 */
static int write_objects(const struct sh5_evlb *m,
			 const struct sh5_evlb_rank *r, int64_t k,
			 struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_task *tmpl,
			 struct sh5_error *errp)
{
	struct sh5_lbdata_kv user[2];
	struct sh5_lbdata_task t;
	size_t first = first_object(m, r->task, 0), here, end, n = 0, i, j;
	uint64_t *ids;
	int rc = 0;

	end = first_object(m, r->task, k + 1);
	if (end == first)
		return 0;
	ids = malloc((end - first) * sizeof(*ids));
	if (!ids) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "out of memory");
	}
	for (i = first; i < end; i++)
		ids[n++] = m->objects[i].id;
	qsort(ids, n, sizeof(*ids), cmp_u64);
	here = first_object(m, r->task, k);
	for (i = 0, j = here; i < n && rc == 0; i++) {
		double load = 0.0;
		size_t nu = 0;

		if (i && ids[i] == ids[i - 1])
			continue;
		while (j < end && m->objects[j].id < ids[i])
			j++;
		if (j < end && m->objects[j].id == ids[i])
			load = m->objects[j].load > 0 ? m->objects[j].load : 0.0;
		memset(&t, 0, sizeof(t));
		t.entity = tmpl->entity;
		t.entity.seq_id = sh5_evlb_object_seq(r->task, ids[i]);
		t.entity.home = r->node;
		t.node = r->node;
		t.resource = tmpl->resource;
		t.time = load;
		kv_i(user, &nu, "object_id", (int64_t)ids[i]);
		kv_i(user, &nu, "rank", r->task);
		t.user = user;
		t.nuser = nu;
		rc = sh5_lbdata_file_task(f, &t, errp);
	}
	free(ids);
	return rc;
}

static const char *const kind_name[] = {
	[SH5_EVLB_SENDRECV] = "SendRecv",
	[SH5_EVLB_BROADCAST] = "Broadcast",
	[SH5_EVLB_TONODE] = "CollectionToNode",
};

static int write_edges(const struct sh5_evlb *m, uint32_t task, int64_t k,
		       struct sh5_lbdata_file *f,
		       const struct sh5_lbdata_task *tmpl,
		       struct sh5_error *errp)
{
	struct sh5_lbdata_comm c;
	size_t lo = 0, hi = m->nedges, mid;
	const struct sh5_evlb_edge *e;

	while (lo < hi) {	/* first edge held by task in phase >= k */
		mid = lo + (hi - lo) / 2;
		e = &m->edges[mid];
		if (holder(e) < task || (holder(e) == task && e->phase < k))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < m->nedges; lo++) {
		e = &m->edges[lo];
		if (holder(e) != task || e->phase != k)
			break;
		memset(&c, 0, sizeof(c));
		c.type = kind_name[e->kind];
		rank_entity(m, e->from, tmpl, &c.from);
		if (e->kind == SH5_EVLB_TONODE) {
			c.to.type = "node";
			c.to.id = e->to;
			c.to.seq_id = c.to.collection_id = c.to.home = -1;
			c.to.migratable = -1;
		} else {
			rank_entity(m, e->to, tmpl, &c.to);
		}
		c.messages = e->messages;
		c.bytes = e->bytes;
		if (sh5_lbdata_file_comm(f, &c, errp) < 0)
			return -1;
	}
	return 0;
}

int sh5_evlb_write_phase(const struct sh5_evlb *m, int64_t task, int64_t k,
			 struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_task *tmpl,
			 struct sh5_error *errp)
{
	const struct sh5_evlb_rank *r = sh5_evlb_rank(m, task);

	if (!r || !r->cell) {
		if (m->marks && k > 0)
			return 0;
		return sh5_lbdata_file_task(f, tmpl, errp);
	}
	if (r->cell[k].present && write_rank_task(r, k, f, tmpl, errp) < 0)
		return -1;
	if (write_objects(m, r, k, f, tmpl, errp) < 0)
		return -1;
	return write_edges(m, r->task, k, f, tmpl, errp);
}

