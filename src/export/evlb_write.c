/* evlb_write.c - writing a rank's phase from the event model (see
 * evlb.h, sh5_evlb_write_phase()). */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "export/evlb.h"
#include "lbdata.h"

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

static int write_objects(const struct sh5_evlb *m,
			 const struct sh5_evlb_rank *r, int64_t k,
			 struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_task *tmpl,
			 struct sh5_error *errp)
{
	struct sh5_lbdata_kv user[2];
	struct sh5_lbdata_task t;
	size_t lo = 0, hi = m->nobjects, mid, nu;

	while (lo < hi) {	/* first object >= (task, k, 0) */
		mid = lo + (hi - lo) / 2;
		if (obj_before(&m->objects[mid], r->task, k))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < m->nobjects && m->objects[lo].task == r->task &&
	       m->objects[lo].phase == k; lo++) {
		const struct sh5_evlb_object *o = &m->objects[lo];

		memset(&t, 0, sizeof(t));
		t.entity = tmpl->entity;
		t.entity.seq_id = sh5_evlb_object_seq(o->task, o->id);
		t.entity.home = r->node;
		t.node = r->node;
		t.resource = tmpl->resource;
		t.time = o->load > 0 ? o->load : 0.0;
		nu = 0;
		kv_i(user, &nu, "object_id", (int64_t)o->id);
		kv_i(user, &nu, "rank", o->task);
		t.user = user;
		t.nuser = nu;
		if (sh5_lbdata_file_task(f, &t, errp) < 0)
			return -1;
	}
	return 0;
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

