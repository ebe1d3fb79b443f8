/* evlb.c - see evlb.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/evlb.h"
#include "export/evstack.h"
#include "sync/evmatch.h"
#include "sync/trace.h"	/* sh5_trace_op_class(): rooted operations */
#include "common/sort.h"

struct msg {			/* a SEND or a RECV */
	struct sh5_evmsg k;	/* seq: record index on its task */
	int64_t phase;
	uint64_t bytes;
};

struct coll {			/* a CBEGIN */
	uint64_t comm;
	uint32_t task;
	size_t seq;		/* record index, then instance number */
	int op;
	int64_t root;		/* task, -1 unrooted or unknown */
	int64_t phase;
	uint64_t bytes;
};

struct vec {
	void *p;
	size_t n, cap, size;
};

struct build {
	const struct sh5_evstep *s;
	const struct sh5_evlb_windows *w;
	struct sh5_evlb *m;
	struct vec sends, recvs, colls, objs, edges;
	struct sh5_evstack st;
	struct wr *wr;		/* world rank -> task, by world rank */
	size_t nwr;
};

struct wr {
	int32_t rank;
	uint32_t task;
};

static int cmp_wr(const void *a, const void *b)
{
	const struct wr *x = a, *y = b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* sh5_evstep_loc() in O(log n): the task of world rank r, the task of
 * the same number when no RANK record names r, -1 for r < 0. */
static int64_t loc(const struct build *b, int32_t r)
{
	struct wr key = { r, 0 }, *w;

	if (r < 0)
		return -1;
	w = b->nwr ? bsearch(&key, b->wr, b->nwr, sizeof(key), cmp_wr) :
		     NULL;
	return w ? (int64_t)w->task : (int64_t)r;
}

static int map_ranks(struct build *b)
{
	size_t i;

	b->wr = malloc((b->s->ntasks + 1) * sizeof(*b->wr));
	if (!b->wr)
		return -1;
	for (i = 0; i < b->s->ntasks; i++)
		if (b->s->tasks[i].world_rank >= 0) {
			b->wr[b->nwr].rank = b->s->tasks[i].world_rank;
			b->wr[b->nwr++].task = b->s->tasks[i].task;
		}
	sh5_qsort(b->wr, b->nwr, sizeof(*b->wr), cmp_wr);
	return 0;
}

static void *vec_add(struct vec *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		void *np = realloc(v->p, cap * v->size);

		if (!np)
			return NULL;
		v->p = np;
		v->cap = cap;
	}
	return (char *)v->p + v->size * v->n++;
}

static int nomem(struct sh5_error *errp)
{
	errno = ENOMEM;
	return sh5_errprintf(errp, "events: out of memory");
}

static int64_t rec_time(const struct sh5_evtask *t, size_t i)
{
	return t->sync ? t->sync[i] : t->ev[i].time_ns;
}

int sh5_evlb_has_marks(const struct sh5_evstep *s)
{
	size_t i, k;

	for (i = 0; i < s->ntasks; i++)
		for (k = 0; k < s->tasks[i].nev; k++)
			if (s->tasks[i].ev[k].kind == SH5EV_K_PHASE)
				return 1;
	return 0;
}

int sh5_evlb_span(const struct sh5_evstep *s, int64_t *t0, int64_t *t1)
{
	const struct sh5_evtask *t;
	int have = 0;
	size_t i, k;
	int64_t v;

	*t0 = *t1 = 0;
	for (i = 0; i < s->ntasks; i++) {
		t = &s->tasks[i];
		for (k = 0; k < t->nev; k++) {
			v = rec_time(t, k);
			if (!have || v < *t0)
				*t0 = v;
			if (!have || v > *t1)
				*t1 = v;
			have = 1;
		}
	}
	return have;
}

/* Phases in marks mode: the highest mark or object phase, + 1. */
static int count_phases(struct build *b, int64_t max_phases,
			struct sh5_error *errp)
{
	const struct sh5_evstep *s = b->s;
	const struct sh5_evtask *t;
	uint64_t hi = 0;
	size_t i, k;

	for (i = 0; i < s->ntasks; i++) {
		t = &s->tasks[i];
		for (k = 0; k < t->nev; k++) {
			if (t->ev[k].kind != SH5EV_K_PHASE &&
			    t->ev[k].kind != SH5EV_K_OBJECT)
				continue;
			if (t->ev[k].id >= (uint64_t)max_phases) {
				errno = EINVAL;
				return sh5_errprintf(errp, "%s: record %zu: "
						     "phase %" PRIu32 " (at "
						     "most %" PRId64 " "
						     "phases)", t->path, k,
						     t->ev[k].id, max_phases);
			}
			if (t->ev[k].id > hi)
				hi = t->ev[k].id;
		}
	}
	b->m->nphases = (int64_t)hi + 1;
	return 0;
}

static int64_t window_of(const struct sh5_evlb_windows *w, int64_t t)
{
	int64_t off = t - w->t0, k;

	if (off <= 0)
		return 0;
	k = (off - 1) / w->lns;
	return k >= w->n ? w->n - 1 : k;
}

/* Per-task walk state. */
struct walk {
	struct sh5_evlb_rank *r;
	int64_t k, start, since;
};

/* Close phase k of the walk at time t (MPI time up to t included). */
static void close_phase(struct build *b, struct walk *w, int64_t t)
{
	struct sh5_evlb_cell *c = &w->r->cell[w->k];

	if (t > w->start)
		c->wall += (double)(t - w->start) / 1e9;
	if (b->st.nmpi && t > w->since)
		c->mpi += (double)(t - w->since) / 1e9;
	w->start = w->since = t;
}

static void enter_phase(struct build *b, struct walk *w, int64_t k,
			int64_t t)
{
	int64_t j;

	if (b->m->marks)
		for (j = w->k + 1; j <= k; j++)
			w->r->bound[j] = t;
	w->k = k;
	w->start = w->since = t;
}

static int add_msg(struct build *b, const struct sh5_evtask *t, size_t i,
		   int64_t phase)
{
	const struct sh5ev_rec *e = &t->ev[i];
	int64_t peer = loc(b, e->peer);
	struct sh5_evmsg k;
	struct msg *m;

	if (peer >= 0)
		sh5_evmsg_set(&k, t, i, t->task, (uint32_t)peer);
	if (peer < 0 || k.comm == UINT64_MAX) {
		b->m->unknown_peers++;
		return 0;
	}
	m = vec_add(e->kind == SH5EV_K_SEND ? &b->sends : &b->recvs);
	if (!m)
		return -1;
	m->k = k;
	m->phase = phase;
	m->bytes = e->bytes;
	return 0;
}

static int add_coll(struct build *b, const struct sh5_evtask *t, size_t i,
		    int64_t phase)
{
	const struct sh5ev_rec *e = &t->ev[i];
	struct coll *x;

	x = vec_add(&b->colls);
	if (!x)
		return -1;
	x->comm = sh5_evstep_comm(t, e->id);
	x->task = t->task;
	x->seq = i;
	x->op = e->op;
	x->root = e->peer >= 0 ? loc(b, e->peer) : -1;
	if (e->peer >= 0 && x->root < 0)
		b->m->unknown_peers++;
	x->phase = phase;
	x->bytes = e->bytes;
	return 0;
}

static int add_object(struct build *b, const struct sh5_evtask *t, size_t i,
		      int64_t phase)
{
	const struct sh5ev_rec *e = &t->ev[i];
	struct sh5_evlb_object *o;

	if (e->bytes >= ((uint64_t)1 << 32) || !isfinite(e->value)) {
		b->m->objects_dropped++;
		return 0;
	}
	o = vec_add(&b->objs);
	if (!o)
		return -1;
	o->task = t->task;
	o->phase = b->m->marks ? (int64_t)e->id : phase;
	o->id = e->bytes;
	o->load = e->value > 0 ? e->value : 0.0;
	return 0;
}

static int walk_record(struct build *b, const struct sh5_evtask *t,
		       struct walk *w, size_t i, int64_t tm)
{
	const struct sh5ev_rec *e = &t->ev[i];
	struct sh5_evstack_ent ent;
	uint32_t flags = 0;

	switch (e->kind) {
	case SH5EV_K_PHASE:
		if (b->m->marks && (int64_t)e->id > w->k) {
			close_phase(b, w, tm);
			enter_phase(b, w, (int64_t)e->id, tm);
		}
		return 0;
	case SH5EV_K_ENTER:
		sh5_evstep_region(t, e->id, &flags);
		if ((flags & SH5EV_F_MPI) && b->st.nmpi == 0)
			w->since = tm;
		return sh5_evstack_push(&b->st, e->id, flags, tm, i);
	case SH5EV_K_EXIT: {
		size_t had = b->st.nmpi;

		if (sh5_evstack_pop(&b->st, e->id, &ent) && had &&
		    !b->st.nmpi && tm > w->since)
			w->r->cell[w->k].mpi += (double)(tm - w->since) / 1e9;
		return 0;
	}
	case SH5EV_K_SEND:
	case SH5EV_K_RECV:
		return add_msg(b, t, i, w->k);
	case SH5EV_K_CBEGIN:
		w->r->cell[w->k].coll_calls++;
		w->r->cell[w->k].coll_bytes += (double)e->bytes;
		return add_coll(b, t, i, w->k);
	case SH5EV_K_OBJECT:
		return add_object(b, t, i, w->k);
	default:
		return 0;
	}
}

static int walk_task(struct build *b, size_t ti, struct sh5_error *errp)
{
	const struct sh5_evtask *t = &b->s->tasks[ti];
	struct sh5_evlb *m = b->m;
	struct walk w;
	int64_t tm, k;
	size_t i;

	memset(&w, 0, sizeof(w));
	w.r = &m->ranks[ti];
	w.r->task = t->task;
	w.r->node = t->node < b->s->nnodes ?
			    (uint32_t)b->s->nodes[t->node].index : t->node;
	w.r->cell = calloc((size_t)m->nphases, sizeof(*w.r->cell));
	if (m->marks)
		w.r->bound = malloc(((size_t)m->nphases + 1) *
				    sizeof(*w.r->bound));
	if (!w.r->cell || (m->marks && !w.r->bound))
		return nomem(errp);
	if (m->marks) {
		w.r->bound[0] = INT64_MIN;
		for (k = 1; k <= m->nphases; k++)
			w.r->bound[k] = INT64_MAX;
	}
	sh5_evstack_reset(&b->st);
	for (i = 0; i < t->nev; i++) {
		tm = rec_time(t, i);
		if (i == 0) {
			w.r->t_first = tm;
			w.k = m->marks ? 0 : window_of(b->w, tm);
			w.start = w.since = tm;
		} else if (!m->marks) {
			k = window_of(b->w, tm);
			while (w.k < k) {
				int64_t end = b->w->t0 + (w.k + 1) * b->w->lns;

				close_phase(b, &w, end);
				enter_phase(b, &w, w.k + 1, end);
			}
		}
		w.r->t_last = tm;
		if (walk_record(b, t, &w, i, tm) < 0)
			return nomem(errp);
	}
	if (t->nev)
		close_phase(b, &w, w.r->t_last);
	w.r->nreached = t->nev ? w.k + 1 : 0;
	for (k = 0; k < m->nphases; k++)
		if (m->marks ? k < w.r->nreached : t->nev > 0)
			w.r->cell[k].present = 1;
	if (t->task > m->max_task)
		m->max_task = t->task;
	return 0;
}

/* ------------------------------------------------------------ matching */

static struct sh5_evlb_rank *rank_of(struct sh5_evlb *m, int64_t task)
{
	return (struct sh5_evlb_rank *)sh5_evlb_rank(m, task);
}

static int add_edge(struct build *b, int64_t phase, int kind, uint32_t from,
		    uint32_t to, double bytes)
{
	struct sh5_evlb_edge *e = vec_add(&b->edges);

	if (!e)
		return -1;
	e->phase = phase;
	e->kind = kind;
	e->from = from;
	e->to = to;
	e->messages = 1;
	e->bytes = bytes;
	return 0;
}

/* A matched pair: its edge and the sender's counts. */
static int on_pair(void *arg, void *send, void *recv)
{
	struct build *b = arg;
	const struct msg *s = send;
	struct sh5_evlb_rank *rk;

	(void)recv;
	if (add_edge(b, s->phase, SH5_EVLB_SENDRECV, s->k.src, s->k.dst,
		     (double)s->bytes) < 0)
		return -1;
	rk = rank_of(b->m, s->k.src);
	if (rk) {
		rk->cell[s->phase].sent_msgs++;
		rk->cell[s->phase].sent_bytes += (double)s->bytes;
	}
	b->m->p2p_matched++;
	return 0;
}

/* Pair the sends and receives of each key in order. */
static int match_p2p(struct build *b)
{
	return sh5_evmatch(b->sends.p, b->sends.n, b->recvs.p, b->recvs.n,
			   sizeof(struct msg), on_pair, b,
			   &b->m->unmatched_sends, &b->m->unmatched_recvs);
}

static int cmp_coll(const void *a, const void *b)
{
	const struct coll *x = a, *y = b;

	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Collective instances: the n-th collective of a task on a communicator
 * is instance n (every member calls them in the same order). */
static int attribute_colls(struct build *b)
{
	struct coll *c = b->colls.p, key, *root;
	size_t i, n = b->colls.n, inst = 0;
	enum sh5_coll_class cls;
	int64_t phase;

	sh5_qsort(c, n, sizeof(*c), cmp_coll);
	for (i = 0; i < n; i++) {
		if (i && c[i].comm == c[i - 1].comm &&
		    c[i].task == c[i - 1].task)
			inst++;
		else
			inst = 0;
		c[i].seq = inst;
	}
	for (i = 0; i < n; i++) {
		if (c[i].root < 0 || c[i].root == c[i].task ||
		    c[i].comm == UINT64_MAX)
			continue;
		cls = sh5_trace_op_class((unsigned)c[i].op);
		if (cls == SH5_COLL_NTO1) {
			if (add_edge(b, c[i].phase, SH5_EVLB_TONODE,
				     c[i].task, (uint32_t)c[i].root,
				     (double)c[i].bytes) < 0)
				return -1;
			continue;
		}
		if (cls != SH5_COLL_1TON)
			continue;
		key = c[i];
		key.task = (uint32_t)c[i].root;
		root = bsearch(&key, c, n, sizeof(*c), cmp_coll);
		phase = c[i].phase;
		if (root && root->op == c[i].op)
			phase = root->phase;
		else
			b->m->coll_mismatch++;
		if (add_edge(b, phase, SH5_EVLB_BROADCAST, (uint32_t)c[i].root,
			     c[i].task, (double)c[i].bytes) < 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ edges */

static uint32_t holder(const struct sh5_evlb_edge *e)
{
	return e->kind == SH5_EVLB_BROADCAST ? e->to : e->from;
}

static int cmp_edge(const void *a, const void *b)
{
	const struct sh5_evlb_edge *x = a, *y = b;

	if (holder(x) != holder(y))
		return holder(x) < holder(y) ? -1 : 1;
	if (x->phase != y->phase)
		return x->phase < y->phase ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

static void aggregate_edges(struct build *b)
{
	struct sh5_evlb_edge *e = b->edges.p;
	struct sh5_evlb_rank *r;
	size_t i, n = 0;

	sh5_qsort(e, b->edges.n, sizeof(*e), cmp_edge);
	for (i = 0; i < b->edges.n; i++) {
		if (n && cmp_edge(&e[n - 1], &e[i]) == 0) {
			e[n - 1].messages += e[i].messages;
			e[n - 1].bytes += e[i].bytes;
		} else {
			e[n++] = e[i];
		}
	}
	b->edges.n = n;
	for (i = 0; i < n; i++) {
		r = rank_of(b->m, e[i].from);
		if (r)
			r->cell[e[i].phase].present = 1;
		r = e[i].kind == SH5_EVLB_TONODE ? NULL : rank_of(b->m, e[i].to);
		if (r)
			r->cell[e[i].phase].present = 1;
	}
}

static int cmp_obj(const void *a, const void *b)
{
	const struct sh5_evlb_object *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	if (x->phase != y->phase)
		return x->phase < y->phase ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void aggregate_objects(struct build *b)
{
	struct sh5_evlb_object *o = b->objs.p;
	struct sh5_evlb_rank *r;
	size_t i, n = 0;

	sh5_qsort(o, b->objs.n, sizeof(*o), cmp_obj);
	for (i = 0; i < b->objs.n; i++) {
		if (n && cmp_obj(&o[n - 1], &o[i]) == 0)
			o[n - 1].load += o[i].load;
		else
			o[n++] = o[i];
	}
	b->objs.n = n;
	for (i = 0; i < n; i++) {
		r = rank_of(b->m, o[i].task);
		r->cell[o[i].phase].objects += o[i].load;
		r->cell[o[i].phase].present = 1;
	}
}

/* A rank's entity, once in a phase, stays in every later one (LBAF
 * carries a phase's objects over to the next and fails on one that
 * vanished): time 0 where the rank has nothing. */
static void carry_presence(struct sh5_evlb *m)
{
	size_t i;
	int64_t k;

	for (i = 0; i < m->nranks; i++) {
		struct sh5_evlb_rank *r = &m->ranks[i];
		int on = 0;

		if (!r->cell)
			continue;
		for (k = 0; k < m->nphases; k++) {
			on |= r->cell[k].present;
			r->cell[k].present = on;
		}
	}
}

struct sh5_evlb *sh5_evlb_build(const struct sh5_evstep *s,
				const struct sh5_evlb_windows *w,
				int64_t max_phases, struct sh5_error *errp)
{
	struct build b;
	size_t i;

	memset(&b, 0, sizeof(b));
	b.s = s;
	b.w = w;
	b.sends.size = b.recvs.size = sizeof(struct msg);
	b.colls.size = sizeof(struct coll);
	b.objs.size = sizeof(struct sh5_evlb_object);
	b.edges.size = sizeof(struct sh5_evlb_edge);
	b.m = calloc(1, sizeof(*b.m));
	if (!b.m) {
		nomem(errp);
		return NULL;
	}
	b.m->marks = sh5_evlb_has_marks(s);
	if (b.m->marks) {
		if (count_phases(&b, max_phases, errp) < 0)
			goto error;
	} else if (!w || w->n < 1 || w->lns < 1) {
		errno = EINVAL;
		sh5_errprintf(errp, "step %s: events without phase marks "
			      "need phase windows", s->step);
		goto error;
	} else {
		b.m->nphases = w->n;
	}
	if (s->ntasks && (uint64_t)b.m->nphases * s->ntasks > SH5_EVLB_MAX_CELLS) {
		errno = EINVAL;
		sh5_errprintf(errp, "step %s: %" PRId64 " phases on %zu tasks "
			      "(at most %llu task-phases)", s->step,
			      b.m->nphases, s->ntasks,
			      (unsigned long long)SH5_EVLB_MAX_CELLS);
		goto error;
	}
	b.m->ranks = calloc(s->ntasks ? s->ntasks : 1, sizeof(*b.m->ranks));
	if (!b.m->ranks) {
		nomem(errp);
		goto error;
	}
	b.m->nranks = s->ntasks;
	if (map_ranks(&b) < 0) {
		nomem(errp);
		goto error;
	}
	for (i = 0; i < s->ntasks; i++)
		if (walk_task(&b, i, errp) < 0)
			goto error;
	if (match_p2p(&b) < 0 || attribute_colls(&b) < 0) {
		nomem(errp);
		goto error;
	}
	aggregate_edges(&b);
	aggregate_objects(&b);
	carry_presence(b.m);
	b.m->edges = b.edges.p;
	b.m->nedges = b.edges.n;
	b.m->objects = b.objs.p;
	b.m->nobjects = b.objs.n;
	free(b.sends.p);
	free(b.recvs.p);
	free(b.colls.p);
	free(b.wr);
	sh5_evstack_free(&b.st);
	return b.m;
error:
	free(b.sends.p);
	free(b.recvs.p);
	free(b.colls.p);
	free(b.objs.p);
	free(b.edges.p);
	free(b.wr);
	sh5_evstack_free(&b.st);
	sh5_evlb_free(b.m);
	return NULL;
}

void sh5_evlb_free(struct sh5_evlb *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nranks; i++) {
		free(m->ranks[i].cell);
		free(m->ranks[i].bound);
	}
	free(m->ranks);
	free(m->edges);
	free(m->objects);
	free(m);
}

static int cmp_rank(const void *key, const void *elem)
{
	int64_t t = *(const int64_t *)key;
	const struct sh5_evlb_rank *r = elem;

	return t < (int64_t)r->task ? -1 : t > (int64_t)r->task;
}

const struct sh5_evlb_rank *sh5_evlb_rank(const struct sh5_evlb *m,
					  int64_t task)
{
	if (!m || !m->nranks)
		return NULL;
	return bsearch(&task, m->ranks, m->nranks, sizeof(*m->ranks),
		       cmp_rank);
}

int64_t sh5_evlb_phase_at(const struct sh5_evlb *m,
			  const struct sh5_evlb_rank *r, int64_t t)
{
	int64_t lo = 0, hi, mid;

	if (!r || !r->bound)
		return 0;
	/* the last k with bound[k] < t (phase k is (bound[k], bound[k+1]]) */
	hi = m->nphases - 1;
	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (r->bound[mid] < t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

int64_t sh5_evlb_object_seq(uint32_t task, uint64_t id)
{
	return (int64_t)(((uint64_t)task + 1) << 32 | (id & 0xffffffffu));
}

double sh5_evlb_rank_load(const struct sh5_evlb *m, int64_t task, int64_t k,
			  double fallback)
{
	const struct sh5_evlb_rank *r = sh5_evlb_rank(m, task);
	const struct sh5_evlb_cell *c;
	double v;

	if (!r || !r->cell || k < 0 || k >= m->nphases)
		return fallback;
	c = &r->cell[k];
	v = c->wall - c->mpi;
	return v > 0 ? v : 0.0;
}

struct sh5_evstep *sh5_evlb_read_step(const char *path, const char *step,
				      struct sh5_error *errp)
{
	struct sh5_evstep *s = NULL;
	hid_t f, g = H5I_INVALID_HID, fapl;
	char name[320];

	/* as jobread.c (the same file is open there) */
	fapl = H5Pcreate(H5P_FILE_ACCESS);
#ifdef HAVE_H5PSET_FILE_LOCKING
	if (fapl >= 0)
		H5Pset_file_locking(fapl, 0, 1);
#endif
	f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	if (fapl >= 0)
		H5Pclose(fapl);
	if (f < 0) {
		errno = EIO;
		sh5_errprintf_h5(errp, "%s: cannot open", path);
		return NULL;
	}
	snprintf(name, sizeof(name), "/Steps/%s", step);
	g = H5Gopen2(f, name, H5P_DEFAULT);
	if (g < 0) {
		errno = ENOENT;
		sh5_errprintf_h5(errp, "%s: no step %s", path, step);
		goto out;
	}
	s = sh5_evstep_read(g, step, errp);
	if (!s) {
		char text[sizeof(errp->text)];

		if (errp) {
			snprintf(text, sizeof(text), "%s", errp->text);
			sh5_errprintf(errp, "%s: %s", path, text);
		}
	}
out:
	if (g >= 0)
		H5Gclose(g);
	H5Fclose(f);
	return s;
}
