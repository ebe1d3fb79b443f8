/*
 * report_events.c - the application events of a step in the report.
 *
 * One pass over every task's records (SyncTimeNs when the step is
 * synchronized, else the recorded times, said so) gives:
 *  - regions: intervals from ENTER/EXIT, classed as user code, MPI, or
 *    MPI collective (an MPI region in which a CBEGIN was recorded);
 *    the timeline shows them exactly (with messages and collectives)
 *    when the step is small, else per rank and time bin the fraction of
 *    time in MPI (outermost MPI regions);
 *  - messages: SEND and RECV matched in order per (source, destination,
 *    communicator, tag);
 *  - phases (PHASE records): per rank the load (the sum of OBJECT loads
 *    when the step has OBJECT records, else the phase's time outside
 *    MPI), max/mean imbalance, and the bytes sent between ranks (nodes
 *    when there are more than RP_MATRIX ranks).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sync/evmatch.h"
#include "sync/jobevents.h"
#include "export/report_int.h"

#define RP_EXACT_TASKS 128
#define RP_EXACT_IVALS 40000
#define RP_EXACT_MSGS 5000
#define RP_EV_BINS 400		/* time bins of the binned timeline, at most */
#define RP_EV_CELLS (1u << 20)	/* and rows x bins at most (bytes) */
#define RP_MAX_PHASES 512
#define RP_MATRIX 64
#define RP_DETAIL_CELLS 300000
#define RP_DEPTH 64

enum { C_USER = 0, C_MPI = 1, C_COLL = 2 };

struct ival { uint32_t row, name, depth, cls; int64_t a, b; };
struct msg { struct sh5_evmsg k; int64_t t; uint64_t bytes; };
struct coll { uint32_t row, op; int64_t a, b; };
struct rname { char name[SH5EV_NAME_MAX + 1]; uint64_t calls; double tot;
	       int mpi; };

struct ph {	/* one phase */
	uint32_t id;
	double *dur, *mpi, *obj;	/* per row */
	int64_t *start;
	double *mat;			/* D x D bytes */
};

struct re {
	struct rp *r;
	const struct sh5_evstep *ev;
	int64_t t0;
	size_t nrows;
	int exact;
	struct ival *iv; size_t niv, civ;
	struct msg *snd, *rcv; size_t nsnd, csnd, nrcv, crcv;
	struct coll *co; size_t nco, cco;
	struct rname *rn; size_t nrn, crn;
	float *binmpi, *bincoll;	/* rows x nb, seconds */
	double binw;			/* bin width, ns */
	size_t nb;			/* bins per row */
	int64_t e0, e1;
	struct ph *ph; size_t nph;
	int have_obj;
	size_t D;			/* matrix dimension */
	int mat_nodes;
	uint64_t kinds[SH5EV_K_COUNT];
};

static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
	void *q;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 256;
	q = realloc(*p, c * sz);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static int64_t tm(const struct re *e, const struct sh5_evtask *k, size_t i)
{
	return e->ev->synced && k->sync ? k->sync[i] : k->ev[i].time_ns;
}

static long row_of(const struct sh5_evstep *ev, int32_t world)
{
	int64_t loc = sh5_evstep_loc(ev, world);
	size_t lo = 0, hi = ev->ntasks, m;

	if (loc < 0)
		return -1;
	while (lo < hi) {
		m = (lo + hi) / 2;
		if (ev->tasks[m].task < (uint64_t)loc)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < ev->ntasks && ev->tasks[lo].task == (uint64_t)loc ?
		       (long)lo : -1;
}

static long name_index(struct re *e, const char *name, int mpi)
{
	size_t i;

	for (i = 0; i < e->nrn; i++)
		if (!strcmp(e->rn[i].name, name))
			return (long)i;
	if (grow((void **)&e->rn, &e->crn, e->nrn, sizeof(*e->rn)) < 0)
		return -1;
	memset(&e->rn[e->nrn], 0, sizeof(*e->rn));
	snprintf(e->rn[e->nrn].name, sizeof(e->rn->name), "%s", name);
	e->rn[e->nrn].mpi = mpi;
	return (long)e->nrn++;
}

static struct ph *phase(struct re *e, uint32_t id)
{
	size_t i, n = e->nrows, D = e->D;
	struct ph *p;

	for (i = 0; i < e->nph; i++)
		if (e->ph[i].id == id)
			return &e->ph[i];
	if (e->nph >= RP_MAX_PHASES)
		return NULL;
	p = &e->ph[e->nph];
	p->dur = calloc(n, sizeof(double));
	p->mpi = calloc(n, sizeof(double));
	p->obj = calloc(n, sizeof(double));
	p->start = calloc(n, sizeof(int64_t));
	p->mat = calloc(D * D, sizeof(double));
	if (!p->dur || !p->mpi || !p->obj || !p->start || !p->mat)
		return NULL;
	p->id = id;
	e->nph++;
	return p;
}

static size_t mrow(const struct re *e, size_t row)
{
	if (!e->mat_nodes)
		return row;
	return e->ev->tasks[row].node * e->D /
	       (e->ev->nnodes ? e->ev->nnodes : 1);
}

static void bin_add(struct re *e, float *bins, size_t row, int64_t a,
		    int64_t b)
{
	int64_t end;
	double x;
	size_t i;

	while (a < b) {
		x = (double)(a - e->e0) / e->binw;
		i = x < 0 ? 0 : (size_t)x;
		if (i >= e->nb)
			i = e->nb - 1;
		end = e->e0 + (int64_t)((double)(i + 1) * e->binw);

		if (end > b || i == e->nb - 1)
			end = b;
		if (end <= a)
			end = b;
		bins[row * e->nb + i] += (float)((double)(end - a) / 1e9);
		a = end;
	}
}

struct frame { uint32_t name; int64_t a; int cls; };

/* The state of one task's pass. */
struct tp {
	size_t row;
	const struct sh5_evtask *k;
	struct frame st[RP_DEPTH];
	struct { int64_t a; uint32_t op; } cst[RP_DEPTH];
	size_t depth, cdepth, mpi_depth;
	int64_t mpi_a;
	struct ph *cur;
};

static int on_enter(struct re *e, struct tp *p, const struct sh5ev_rec *x,
		    int64_t t)
{
	uint32_t fl = 0;
	const char *n = sh5_evstep_region(p->k, x->id, &fl);
	long nm = name_index(e, n, (fl & SH5EV_F_MPI) != 0);

	if (nm < 0)
		return -1;
	if (p->depth < RP_DEPTH) {
		p->st[p->depth].name = (uint32_t)nm;
		p->st[p->depth].a = t;
		p->st[p->depth].cls = fl & SH5EV_F_MPI ? C_MPI : C_USER;
	}
	if ((fl & SH5EV_F_MPI) && !p->mpi_depth++)
		p->mpi_a = t;
	p->depth++;
	return 0;
}

static int on_leave(struct re *e, struct tp *p, int64_t t)
{
	struct frame *f;

	if (!p->depth)
		return 0;
	p->depth--;
	if (p->depth >= RP_DEPTH)
		return 0;
	f = &p->st[p->depth];
	e->rn[f->name].calls++;
	e->rn[f->name].tot += (double)(t - f->a) / 1e9;
	if (f->cls != C_USER && p->mpi_depth && !--p->mpi_depth) {
		bin_add(e, f->cls == C_COLL ? e->bincoll : e->binmpi, p->row,
			p->mpi_a, t);
		if (p->cur)
			p->cur->mpi[p->row] += (double)(t - p->mpi_a) / 1e9;
	}
	if (!e->exact)
		return 0;
	if (grow((void **)&e->iv, &e->civ, e->niv, sizeof(*e->iv)) < 0)
		return -1;
	e->iv[e->niv++] = (struct ival){ (uint32_t)p->row, f->name,
					 (uint32_t)p->depth, (uint32_t)f->cls,
					 f->a, t };
	return 0;
}

static int on_msg(struct re *e, struct tp *p, const struct sh5ev_rec *x,
		  int64_t t)
{
	int snd = x->kind == SH5EV_K_SEND;
	long peer = row_of(e->ev, x->peer);
	uint32_t row = (uint32_t)p->row;
	struct msg m;

	if (peer < 0)
		return 0;
	sh5_evmsg_set(&m.k, p->k, (size_t)(x - p->k->ev), row,
		      (uint32_t)peer);
	m.t = t;
	m.bytes = x->bytes;
	if (!snd) {
		if (grow((void **)&e->rcv, &e->crcv, e->nrcv, sizeof(m)) < 0)
			return -1;
		m.k.seq = e->nrcv;
		e->rcv[e->nrcv++] = m;
		return 0;
	}
	if (grow((void **)&e->snd, &e->csnd, e->nsnd, sizeof(m)) < 0)
		return -1;
	m.k.seq = e->nsnd;
	e->snd[e->nsnd++] = m;
	if (p->cur)
		p->cur->mat[mrow(e, p->row) * e->D + mrow(e, (size_t)peer)] +=
			(double)x->bytes;
	return 0;
}

static int on_coll(struct re *e, struct tp *p, const struct sh5ev_rec *x,
		   int64_t t)
{
	if (x->kind == SH5EV_K_CBEGIN) {
		if (p->depth && p->depth <= RP_DEPTH &&
		    p->st[p->depth - 1].cls == C_MPI)
			p->st[p->depth - 1].cls = C_COLL;
		if (p->cdepth < RP_DEPTH) {
			p->cst[p->cdepth].a = t;
			p->cst[p->cdepth].op = x->op;
		}
		p->cdepth++;
		return 0;
	}
	if (!p->cdepth)
		return 0;
	p->cdepth--;
	if (!e->exact || p->cdepth >= RP_DEPTH)
		return 0;
	if (grow((void **)&e->co, &e->cco, e->nco, sizeof(*e->co)) < 0)
		return -1;
	e->co[e->nco++] = (struct coll){ (uint32_t)p->row,
					 p->cst[p->cdepth].op,
					 p->cst[p->cdepth].a, t };
	return 0;
}

static int task_pass(struct re *e, size_t row)
{
	struct tp p;
	int64_t last = 0;
	size_t i;
	int rc = 0;

	memset(&p, 0, sizeof(p));
	p.row = row;
	p.k = &e->ev->tasks[row];
	for (i = 0; i < p.k->nev && rc == 0; i++) {
		const struct sh5ev_rec *x = &p.k->ev[i];
		int64_t t = tm(e, p.k, i);

		last = t;
		if (x->kind < SH5EV_K_COUNT)
			e->kinds[x->kind]++;
		switch (x->kind) {
		case SH5EV_K_ENTER:
			rc = on_enter(e, &p, x, t);
			break;
		case SH5EV_K_EXIT:
			rc = on_leave(e, &p, t);
			break;
		case SH5EV_K_PHASE:
			if (p.cur)
				p.cur->dur[row] +=
					(double)(t - p.cur->start[row]) / 1e9;
			p.cur = phase(e, x->id);
			if (p.cur)
				p.cur->start[row] = t;
			break;
		case SH5EV_K_OBJECT:
			if (isfinite(x->value)) {
				struct ph *q = phase(e, x->id);

				e->have_obj = 1;
				if (q)
					q->obj[row] += x->value;
			}
			break;
		case SH5EV_K_SEND:
		case SH5EV_K_RECV:
			rc = on_msg(e, &p, x, t);
			break;
		case SH5EV_K_CBEGIN:
		case SH5EV_K_CEND:
			rc = on_coll(e, &p, x, t);
			break;
		default:
			break;
		}
	}
	if (p.cur)
		p.cur->dur[row] += (double)(last - p.cur->start[row]) / 1e9;
	return rc;
}

static double rel(const struct re *e, int64_t t)
{
	return (double)(t - e->t0) / 1e9;
}

struct msgw {	/* write_msgs() */
	struct re *e;
	size_t out;
	uint64_t matched;
};

/* A matched pair: counted, written while the timeline is exact. */
static int on_pair(void *arg, void *send, void *recv)
{
	struct msgw *w = arg;
	struct re *e = w->e;
	struct sh5_json *j = e->r->j;
	const struct msg *s = send, *r = recv;

	w->matched++;
	if (e->exact && w->out++ < RP_EXACT_MSGS) {
		sh5_json_uint(j, s->k.src);
		rp_num(j, rel(e, s->t));
		sh5_json_uint(j, r->k.dst);
		rp_num(j, rel(e, r->t));
		sh5_json_uint(j, s->bytes);
	}
	return 0;
}

/* Match and write messages; returns matched count. */
static uint64_t write_msgs(struct re *e)
{
	struct sh5_json *j = e->r->j;
	struct msgw w = { e, 0, 0 };

	sh5_json_key(j, "msgs");
	sh5_json_array_open(j);
	sh5_evmatch(e->snd, e->nsnd, e->rcv, e->nrcv, sizeof(struct msg),
		    on_pair, &w, NULL, NULL);
	sh5_json_array_close(j);
	return w.matched;
}

static void write_phases(struct re *e)
{
	struct sh5_json *j = e->r->j;
	size_t i, r, n = e->nrows, detail;

	detail = RP_DETAIL_CELLS / (n + e->D * e->D + 1);
	if (detail < 1)
		detail = 1;
	sh5_json_kv_string(j, "load", e->have_obj ? "object loads (OBJECT)" :
				      "time outside MPI in the phase");
	sh5_json_kv_string(j, "matrix", e->mat_nodes ? "node" : "rank");
	sh5_json_kv_uint(j, "D", e->D);
	sh5_json_key(j, "phases");
	sh5_json_array_open(j);
	for (i = 0; i < e->nph; i++) {
		struct ph *p = &e->ph[i];
		double mx = 0, sum = 0, mn = INFINITY;
		size_t arg = 0;

		sh5_json_object_open(j);
		sh5_json_kv_uint(j, "id", p->id);
		for (r = 0; r < n; r++) {
			double l = e->have_obj ? p->obj[r] :
						 p->dur[r] - p->mpi[r];

			p->dur[r] = l;
			sum += l;
			if (l > mx) {
				mx = l;
				arg = r;
			}
			if (l < mn)
				mn = l;
		}
		sh5_json_key(j, "max");
		rp_num(j, mx);
		sh5_json_key(j, "mean");
		rp_num(j, sum / (double)n);
		sh5_json_key(j, "min");
		rp_num(j, mn);
		sh5_json_key(j, "imb");
		rp_num(j, sum > 0 ? mx / (sum / (double)n) : NAN);
		sh5_json_kv_uint(j, "argmax", arg);
		if (i < detail) {
			sh5_json_key(j, "loads");
			sh5_json_array_open(j);
			for (r = 0; r < n; r++)
				rp_num(j, p->dur[r]);
			sh5_json_array_close(j);
			sh5_json_key(j, "mat");
			sh5_json_array_open(j);
			for (r = 0; r < e->D * e->D; r++)
				rp_num(j, p->mat[r]);
			sh5_json_array_close(j);
		}
		sh5_json_object_close(j);
	}
	sh5_json_array_close(j);
}

static void write_bins(struct re *e)
{
	struct sh5_json *j = e->r->j;
	size_t n = e->nrows * e->nb, i;
	unsigned char *q = malloc(n + 1);
	double w = e->binw / 1e9;

	if (!q)
		return;
	/* 0..100: fraction of the bin in MPI; +128 when collectives lead */
	for (i = 0; i < n; i++) {
		double f = (e->binmpi[i] + e->bincoll[i]) / w;

		q[i] = (unsigned char)lrint((f > 1 ? 1 : f) * 100) |
		       (e->bincoll[i] > e->binmpi[i] ? 128 : 0);
	}
	sh5_json_key(j, "bins");
	sh5_json_object_open(j);
	sh5_json_kv_uint(j, "n", e->nb);
	sh5_json_key(j, "q");
	rp_base64(j, q, n);
	sh5_json_object_close(j);
	free(q);
}

static void re_free(struct re *e)
{
	size_t i;

	for (i = 0; i < e->nph; i++) {
		free(e->ph[i].dur);
		free(e->ph[i].mpi);
		free(e->ph[i].obj);
		free(e->ph[i].start);
		free(e->ph[i].mat);
	}
	free(e->ph);
	free(e->iv);
	free(e->snd);
	free(e->rcv);
	free(e->co);
	free(e->rn);
	free(e->binmpi);
	free(e->bincoll);
}

static const char *op_names[] = { "", "Barrier", "Bcast", "Scatter",
				  "Gather", "Reduce", "Allreduce",
				  "Allgather", "Alltoall", "Reduce_scatter",
				  "Scan", "Exscan" };

/* Set up e for step ev: sizes, time span, bins, phases. */
static int re_init(struct re *e, struct rp *r, const struct sh5_evstep *ev)
{
	size_t i, k;

	memset(e, 0, sizeof(*e));
	e->r = r;
	e->ev = ev;
	e->nrows = ev->ntasks;
	e->exact = ev->ntasks <= RP_EXACT_TASKS &&
		   ev->nev <= 4 * RP_EXACT_IVALS;
	e->mat_nodes = ev->ntasks > RP_MATRIX;
	e->D = e->mat_nodes ? (ev->nnodes < RP_MATRIX ? ev->nnodes :
						       RP_MATRIX) :
			      ev->ntasks;
	if (!e->D)
		e->D = 1;
	e->e0 = INT64_MAX;
	e->e1 = INT64_MIN;
	for (i = 0; i < ev->ntasks; i++)
		for (k = 0; k < ev->tasks[i].nev; k++) {
			int64_t t = tm(e, &ev->tasks[i], k);

			if (t < e->e0)
				e->e0 = t;
			if (t > e->e1)
				e->e1 = t;
		}
	if (e->e0 == INT64_MAX)
		e->e0 = e->e1 = 0;
	e->t0 = r->t0 || r->t1 ? r->t0 : e->e0;
	e->nb = RP_EV_CELLS / (e->nrows ? e->nrows : 1);
	if (e->nb > RP_EV_BINS)
		e->nb = RP_EV_BINS;
	if (e->nb < 16)
		e->nb = 16;
	e->binw = ((double)(e->e1 - e->e0) + 1.0) / (double)e->nb;
	e->binmpi = calloc(e->nrows * e->nb, sizeof(float));
	e->bincoll = calloc(e->nrows * e->nb, sizeof(float));
	e->ph = calloc(RP_MAX_PHASES, sizeof(*e->ph));
	return e->binmpi && e->bincoll && e->ph ? 0 : -1;
}

/* Ranks, nodes, counts per kind, warnings, regions. */
static void write_head(struct re *e)
{
	static const char *kn[] = { "", "enter", "exit", "phase", "send",
				    "recv", "cbegin", "cend", "object",
				    "rank", "lost" };
	const struct sh5_evstep *ev = e->ev;
	struct sh5_json *j = e->r->j;
	size_t i;

	sh5_json_kv_bool(j, "synced", ev->synced);
	sh5_json_kv_uint(j, "nev", ev->nev);
	sh5_json_key(j, "e0");
	rp_num(j, rel(e, e->e0));
	sh5_json_key(j, "e1");
	rp_num(j, rel(e, e->e1));
	sh5_json_key(j, "ranks");	/* [task, world rank, node] */
	sh5_json_array_open(j);
	for (i = 0; i < ev->ntasks; i++) {
		sh5_json_uint(j, ev->tasks[i].task);
		sh5_json_int(j, ev->tasks[i].world_rank);
		sh5_json_uint(j, ev->tasks[i].node);
	}
	sh5_json_array_close(j);
	sh5_json_key(j, "evnodes");
	sh5_json_array_open(j);
	for (i = 0; i < ev->nnodes; i++)
		sh5_json_string(j, ev->nodes[i].name);
	sh5_json_array_close(j);
	sh5_json_key(j, "kinds");
	sh5_json_object_open(j);
	for (i = 1; i <= SH5EV_K_LOST; i++)
		sh5_json_kv_uint(j, kn[i], e->kinds[i]);
	sh5_json_object_close(j);
	sh5_json_key(j, "warnings");
	sh5_json_array_open(j);
	for (i = 0; i < ev->nwarnings && i < 8; i++)
		sh5_json_string(j, ev->warning[i]);
	sh5_json_array_close(j);
	sh5_json_key(j, "regions");	/* [name, mpi, calls, seconds] */
	sh5_json_array_open(j);
	for (i = 0; i < e->nrn; i++) {
		sh5_json_string(j, e->rn[i].name);
		sh5_json_uint(j, e->rn[i].mpi);
		sh5_json_uint(j, e->rn[i].calls);
		rp_num(j, e->rn[i].tot);
	}
	sh5_json_array_close(j);
}

/* The exact timeline (intervals, collectives) or the binned one. */
static void write_timeline(struct re *e)
{
	struct sh5_json *j = e->r->j;
	size_t i;

	sh5_json_kv_bool(j, "exact", e->exact);
	if (!e->exact) {
		write_bins(e);
		return;
	}
	sh5_json_key(j, "iv");	/* row, name, depth, cls, a, b */
	sh5_json_array_open(j);
	for (i = 0; i < e->niv; i++) {
		sh5_json_uint(j, e->iv[i].row);
		sh5_json_uint(j, e->iv[i].name);
		sh5_json_uint(j, e->iv[i].depth);
		sh5_json_uint(j, e->iv[i].cls);
		rp_num(j, rel(e, e->iv[i].a));
		rp_num(j, rel(e, e->iv[i].b));
	}
	sh5_json_array_close(j);
	sh5_json_key(j, "colls");	/* row, op, a, b */
	sh5_json_array_open(j);
	for (i = 0; i < e->nco; i++) {
		sh5_json_uint(j, e->co[i].row);
		sh5_json_string(j, e->co[i].op < SH5EV_OP_COUNT ?
					   op_names[e->co[i].op] : "?");
		rp_num(j, rel(e, e->co[i].a));
		rp_num(j, rel(e, e->co[i].b));
	}
	sh5_json_array_close(j);
}

int rp_events(struct rp *r, const struct sh5_evstep *ev,
	      struct sh5_error *errp)
{
	struct sh5_json *j = r->j;
	struct re e;
	size_t i;
	int rc = -1;

	sh5_json_key(j, "events");
	if (!ev || !ev->ntasks) {
		rp_missing(r, "step %s: no application events", r->step);
		return sh5_json_null(j);
	}
	if (re_init(&e, r, ev) < 0) {
		sh5_errprintf(errp, "out of memory");
		goto out;
	}
	for (i = 0; i < ev->ntasks; i++) {
		if (task_pass(&e, i) < 0) {
			sh5_errprintf(errp, "out of memory");
			goto out;
		}
		if (r->o.progress && !(i % 64))
			r->o.progress(r->o.progress_arg, "events", i,
				      ev->ntasks);
	}
	if (e.exact && e.niv > RP_EXACT_IVALS)
		e.exact = 0;
	r->res->events += ev->nev;
	sh5_json_object_open(j);
	write_head(&e);
	write_timeline(&e);
	sh5_json_kv_uint(j, "sends", e.nsnd);
	sh5_json_kv_uint(j, "recvs", e.nrcv);
	sh5_json_kv_uint(j, "matched", write_msgs(&e));
	write_phases(&e);
	if (!e.nph)
		rp_missing(r, "step %s: events without phases (PHASE)",
			   r->step);
	rc = sh5_json_object_close(j);
out:
	re_free(&e);
	return rc;
}
