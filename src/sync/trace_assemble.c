/* trace_assemble.c - matching of messages, assembly of
 * collectives, the per-location arrays (trace_int.h) */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/timesync.h"	/* struct sh5_offset_point */
#include "sync/trace_int.h"

/* ---------------------------------------------------------- post-passes */

/* The events left in the queues of the channels (trace_int.h): no
 * partner, left out (problem recorded), channel by channel. */
static void unmatched_p2p(struct parser *p)
{
	struct sh5_trace *t = p->t;
	size_t i;

	for (i = 0; i < p->nchan; i++) {
		const struct chan *ch = &p->chans[i];
		uint32_t e = p->chq[i].head, next;

		for (; e != SH5_TRACE_NONE; e = next) {
			int send = t->ev[e].kind == SH5_EV_SEND;

			next = t->ev[e].link;
			t->ev[e].link = SH5_TRACE_NONE;
			t->ev[e].flags |= SH5_EVF_FREE;
			sh5_trace_problem_add(t, sh5_trace_line(t, e),
				"unmatched %s %s %lld %s %lld (tag %lld, "
				"comm %lld): no matching %s",
				send ? "SEND" : "RECV", send ? "from" : "at",
				(long long)t->loc_id[send ? ch->src : ch->dst],
				send ? "to" : "from",
				(long long)t->loc_id[send ? ch->dst : ch->src],
				(long long)ch->tag, (long long)ch->comm,
				send ? "RECV" : "SEND");
		}
	}
}

static int cmp_loc_id(const void *a, const void *b, void *arg)
{
	const int64_t *ids = arg;
	int64_t x = ids[*(const uint32_t *)a], y = ids[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

static void free_flag_coll(struct sh5_trace *t, uint32_t b)
{
	t->ev[b].flags |= SH5_EVF_FREE;
	t->ev[b].ref = SH5_TRACE_NONE;
	if (t->ev[b].link != SH5_TRACE_NONE) {
		t->ev[t->ev[b].link].flags |= SH5_EVF_FREE;
		t->ev[t->ev[b].link].ref = SH5_TRACE_NONE;
	}
}

/* "OP" or "OP root N" */
static void op_desc(const struct sh5_trace *t, const struct sh5_trace_event *e,
		    char *buf, size_t len)
{
	if (e->aux == SH5_TRACE_NONE)
		snprintf(buf, len, "%s", trace_op_names[e->op]);
	else
		snprintf(buf, len, "%s root %lld", trace_op_names[e->op],
			 (long long)t->loc_id[e->aux]);
}

/* Rank of a location in the communicator it used last (assemble_colls()
 * without the dense table). */
struct rank_cache {
	uint32_t comm, rank;
};

/* What the steps of assemble_colls() share. */
struct coll_asm {
	struct parser *p;
	struct sh5_trace *t;
	uint32_t *rtab;		/* rank by communicator and location, or
				 * NULL: the map */
	struct rank_cache *lc;	/* per location */
	uint32_t *cnt;		/* CBEGINs per slot (communicator member) */
	uint32_t *rk;		/* slot of each CBEGIN of p->cbl, or NONE */
	uint32_t *cur;		/* instances filled per slot */
	uint32_t *slotcomm;	/* communicator of each slot */
	size_t *moff;		/* first inst_begin of each communicator */
};

/* Communicator 0 by default: every location with a line, ascending.
 * 0, or -1 on memory error. */
static int default_comm0(struct parser *p)
{
	struct sh5_trace *t = p->t;
	uint32_t *m;
	size_t i, n0 = 0, cap = p->cmemcap;

	/* comm 0 was added last among declared ones only if no other
	 * undeclared... its member range must be at the end. */
	for (i = 0; i < t->nloc; i++)
		n0 += p->ls[i].has_line;
	m = grow(t->comm_members, &cap, p->ncmem + n0 + 1, sizeof(*m));
	if (!m)
		return -1;
	t->comm_members = m;
	p->cmemcap = cap;
	/* comm 0 was created after all #comm lines: it is the last
	 * communicator, so its members go at the end. */
	for (i = 0; i < t->nloc; i++)
		if (p->ls[i].has_line)
			m[p->ncmem++] = (uint32_t)i;
	qsort_r(m + t->comm_first[p->comm0], n0, sizeof(*m), cmp_loc_id,
		t->loc_id);
	t->comm_first[p->comm0 + 1] = (uint32_t)p->ncmem;
	for (i = t->comm_first[p->comm0]; i < p->ncmem; i++)
		if (trace_hmap_get(&p->rankmap, (uint64_t)p->comm0, m[i], 0,
				   (uint32_t)(i - t->comm_first[p->comm0])) ==
		    HMAP_NOMEM)
			return -1;
	return 0;
}

/* Ranks: a dense table (communicator x location) in *rtabp when small,
 * else NULL there (the map).  0, or -1 on memory error. */
static int rank_table(const struct sh5_trace *t, uint32_t **rtabp)
{
	uint32_t *rtab;
	size_t c, i;

	*rtabp = NULL;
	if (!(t->ncomm && t->nloc && t->ncomm <= (4u << 20) / t->nloc))
		return 0;
	rtab = malloc(t->ncomm * t->nloc * sizeof(*rtab));
	if (!rtab)
		return -1;
	memset(rtab, 0xff, t->ncomm * t->nloc * sizeof(*rtab));
	for (c = 0; c < t->ncomm; c++)
		for (i = t->comm_first[c]; i < t->comm_first[c + 1]; i++)
			rtab[c * t->nloc + t->comm_members[i]] =
				(uint32_t)(i - t->comm_first[c]);
	*rtabp = rtab;
	return 0;
}

/* Rank of location l in communicator c, or NONE. */
static inline uint32_t rank_of(const struct coll_asm *a, size_t c,
			       uint32_t l)
{
	return a->rtab ? a->rtab[c * a->t->nloc + l] :
	       trace_hmap_get(&a->p->rankmap, c, l, 0, SH5_TRACE_NONE);
}

/* Check CBEGIN p->cbl[j] (its CEND, its location's membership, its
 * root) and give it its slot in a->rk[j] (NONE: left out). */
static void assign_slot(struct coll_asm *a, size_t j)
{
	struct sh5_trace *t = a->t;
	size_t i = a->p->cbl[j];
	struct sh5_trace_event *e = &t->ev[i];
	struct rank_cache *lc = a->lc;
	uint32_t rank;

	a->rk[j] = SH5_TRACE_NONE;
	if (e->flags & SH5_EVF_FREE) {
		free_flag_coll(t, (uint32_t)i);
		return;
	}
	if (e->link == SH5_TRACE_NONE) {
		sh5_trace_problem_add(t, sh5_trace_line(t, i),
				      "CBEGIN without a CEND at location %lld",
				      (long long)t->loc_id[t->loc[i]]);
		free_flag_coll(t, (uint32_t)i);
		return;
	}
	/* per location: the rank in the communicator it used last */
	if (a->rtab) {
		rank = rank_of(a, e->ref, t->loc[i]);
	} else if (lc[t->loc[i]].comm == e->ref) {
		rank = lc[t->loc[i]].rank;
	} else {
		rank = rank_of(a, e->ref, t->loc[i]);
		lc[t->loc[i]].comm = e->ref;
		lc[t->loc[i]].rank = rank;
	}
	if (rank == SH5_TRACE_NONE) {
		sh5_trace_problem_add(t, sh5_trace_line(t, i),
			"location %lld is not a member of communicator %lld",
			(long long)t->loc_id[t->loc[i]],
			(long long)t->comm_id[e->ref]);
		free_flag_coll(t, (uint32_t)i);
		return;
	}
	if (op_rooted(e->op) && !(lc[e->aux].comm == e->ref &&
				  lc[e->aux].rank != SH5_TRACE_NONE) &&
	    rank_of(a, e->ref, e->aux) == SH5_TRACE_NONE) {
		sh5_trace_problem_add(t, sh5_trace_line(t, i),
			"root %lld of %s is not a member of communicator %lld",
			(long long)t->loc_id[e->aux], trace_op_names[e->op],
			(long long)t->comm_id[e->ref]);
		free_flag_coll(t, (uint32_t)i);
		return;
	}
	a->rk[j] = t->comm_first[e->ref] + rank;
	a->cnt[a->rk[j]]++;
}

/* Instance k of communicator c (size members) gets the members' begins
 * at inst_begin[moff[c] + k * size + rank], in one pass in file order.
 * 0, or -1 on memory error. */
static int layout_instances(struct coll_asm *a, size_t nslot)
{
	struct sh5_trace *t = a->t;
	struct parser *p = a->p;
	size_t c, r, j, ninst = 0, nmem = 0;

	a->moff = malloc((t->ncomm + 1) * sizeof(*a->moff));
	a->cur = calloc(nslot + 1, sizeof(*a->cur));
	a->slotcomm = malloc((nslot + 1) * sizeof(*a->slotcomm));
	if (!a->moff || !a->cur || !a->slotcomm)
		return -1;
	for (c = 0; c < t->ncomm; c++) {
		size_t f = t->comm_first[c], l = t->comm_first[c + 1], mx = 0;

		for (r = f; r < l; r++) {
			a->slotcomm[r] = (uint32_t)c;
			if (a->cnt[r] > mx)
				mx = a->cnt[r];
		}
		a->moff[c] = nmem;
		ninst += mx;
		nmem += mx * (l - f);
	}
	t->inst = calloc(ninst + 1, sizeof(*t->inst));
	t->inst_begin = malloc((nmem + 1) * sizeof(*t->inst_begin));
	if (!t->inst || !t->inst_begin)
		return -1;
	memset(t->inst_begin, 0xff, nmem * sizeof(*t->inst_begin));
	for (j = 0; j < p->ncb; j++) {
		uint32_t sl = a->rk[j];

		if (sl == SH5_TRACE_NONE)
			continue;
		c = a->slotcomm[sl];
		t->inst_begin[a->moff[c] + (size_t)a->cur[sl]++ *
			      (t->comm_first[c + 1] - t->comm_first[c]) +
			      (sl - t->comm_first[c])] = p->cbl[j];
	}
	return 0;
}

/* Instance k of communicator c, its members' begins b[0 .. size): 1 when
 * every member calls it with the same operation and root (*fip: the
 * first member's CBEGIN), 0 when not (problem recorded). */
static int check_instance(const struct coll_asm *a, size_t c, size_t k,
			  const uint32_t *b, size_t size, uint32_t *fip)
{
	struct sh5_trace *t = a->t;
	const struct sh5_trace_event *fe = NULL;
	uint32_t fi = 0;
	size_t r;
	int ok = 1;

	for (r = 0; r < size; r++) {
		if (b[r] == SH5_TRACE_NONE) {
			ok = 0;
			continue;
		}
		if (!fe)
			fe = &t->ev[fi = b[r]];
	}
	if (!ok) {
		for (r = 0; r < size; r++)
			if (b[r] == SH5_TRACE_NONE)
				break;
		sh5_trace_problem_add(t, sh5_trace_line(t, fi),
			"collective #%zu (%s) on communicator %lld: member "
			"%lld never calls it", k + 1, trace_op_names[fe->op],
			(long long)t->comm_id[c],
			(long long)t->loc_id[
				t->comm_members[t->comm_first[c] + r]]);
		return 0;
	}
	for (r = 0; r < size; r++) {
		const struct sh5_trace_event *e = &t->ev[b[r]];
		char x1[64], x2[64];

		if (e->op == fe->op && e->aux == fe->aux)
			continue;
		op_desc(t, e, x1, sizeof(x1));
		op_desc(t, fe, x2, sizeof(x2));
		sh5_trace_problem_add(t, sh5_trace_line(t, b[r]),
			"collective #%zu on communicator %lld: %s here but "
			"%s at line %u", k + 1, (long long)t->comm_id[c], x1,
			x2, sh5_trace_line(t, fi));
		return 0;
	}
	*fip = fi;
	return 1;
}

/* Record the instance of communicator c whose members' begins are
 * b[0 .. size) (fi: the first one), its begins moved to
 * inst_begin[*nmem ..). */
static void add_instance(struct coll_asm *a, size_t c, const uint32_t *b,
			 size_t size, uint32_t fi, size_t *nmem)
{
	struct sh5_trace *t = a->t;
	const struct sh5_trace_event *fe = &t->ev[fi];
	struct sh5_trace_inst *in = &t->inst[t->ninst];
	size_t r;

	in->first = (uint32_t)*nmem;
	in->size = (uint32_t)size;
	in->comm = (uint32_t)c;
	in->op = fe->op;
	in->cls = (uint8_t)sh5_trace_op_class(fe->op);
	in->root_rank = op_rooted(fe->op) ? rank_of(a, c, fe->aux) :
			SH5_TRACE_NONE;
	for (r = 0; r < size; r++) {
		uint32_t bi = b[r];

		/* never ahead of b: *nmem <= b's offset */
		t->inst_begin[(*nmem)++] = bi;
		t->ev[bi].ref = (uint32_t)t->ninst;
		t->ev[t->ev[bi].link].ref = (uint32_t)t->ninst;
	}
	t->ninst++;
}

/* The instances of communicator c: the complete and consistent ones
 * recorded, the members of the others left out. */
static void assemble_comm(struct coll_asm *a, size_t c, size_t *nmem)
{
	struct sh5_trace *t = a->t;
	size_t f = t->comm_first[c], l = t->comm_first[c + 1];
	size_t size = l - f, mx = 0, k, r;
	uint32_t fi;

	for (r = f; r < l; r++)
		if (a->cnt[r] > mx)
			mx = a->cnt[r];
	for (k = 0; k < mx; k++) {
		uint32_t *b = t->inst_begin + a->moff[c] + k * size;

		/* the next instance's begins (not moved yet) */
		for (r = 0; k + 1 < mx && r < size; r++)
			if (b[size + r] != SH5_TRACE_NONE)
				__builtin_prefetch(&t->ev[b[size + r]]);
		if (check_instance(a, c, k, b, size, &fi)) {
			add_instance(a, c, b, size, fi, nmem);
			continue;
		}
		for (r = 0; r < size; r++)
			if (b[r] != SH5_TRACE_NONE)
				free_flag_coll(t, b[r]);
	}
}

static int assemble_colls(struct parser *p)
{
	struct sh5_trace *t = p->t;
	struct coll_asm a;
	size_t nslot, j, c, nmem = 0;
	int rc = -1;

	if (p->comm0 >= 0 && !p->comm0_declared && default_comm0(p) < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.p = p;
	a.t = t;
	if (rank_table(t, &a.rtab) < 0)
		goto out;
	/* Check every member and root; assign slots. */
	nslot = p->ncmem;
	a.cnt = calloc(nslot + 1, sizeof(*a.cnt));
	a.rk = malloc((p->ncb + 1) * sizeof(*a.rk));
	a.lc = malloc((t->nloc + 1) * sizeof(*a.lc));
	if (!a.cnt || !a.rk || !a.lc)
		goto out;
	memset(a.lc, 0xff, (t->nloc + 1) * sizeof(*a.lc));
	for (j = 0; j < p->ncb; j++) {
		if (j + 32 < p->ncb)
			__builtin_prefetch(&t->ev[p->cbl[j + 32]]);
		assign_slot(&a, j);
	}
	/* Instances in place; those found incomplete or inconsistent are
	 * then squeezed out. */
	if (layout_instances(&a, nslot) < 0)
		goto out;
	for (c = 0; c < t->ncomm; c++)
		assemble_comm(&a, c, &nmem);
	/* (every collective event left out was marked by free_flag_coll) */
	rc = 0;
out:
	free(a.cnt);
	free(a.cur);
	free(a.rk);
	free(a.lc);
	free(a.moff);
	free(a.slotcomm);
	free(a.rtab);
	return rc;
}

int trace_finish(struct parser *p)
{
	struct sh5_trace *t = p->t;
	size_t i, nextnode;

	/* Open collectives at the end of the file. */
	for (i = 0; i < t->nloc; i++) {
		if (p->ls[i].open != SH5_TRACE_NONE) {
			struct sh5_trace_event *e = &t->ev[p->ls[i].open];

			sh5_trace_problem_add(t,
				sh5_trace_line(t, p->ls[i].open),
				"CBEGIN without a CEND at location %lld",
				(long long)t->loc_id[i]);
			e->flags |= SH5_EVF_FREE;
		}
	}
	unmatched_p2p(p);
	if (assemble_colls(p) < 0)
		return -1;

	/* Nodes. */
	t->loc_node = malloc((t->nloc + 1) * sizeof(*t->loc_node));
	if (!t->loc_node)
		return -1;
	nextnode = p->nnode_named;
	for (i = 0; i < t->nloc; i++)
		t->loc_node[i] = p->loc_node_named[i] != SH5_TRACE_NONE ?
				 p->loc_node_named[i] : (uint32_t)nextnode++;
	t->nnode = nextnode;

	/* Events by location. */
	t->loc_first = calloc(t->nloc + 2, sizeof(*t->loc_first));
	t->loc_order = malloc((t->nev + 1) * sizeof(*t->loc_order));
	if (!t->loc_first || !t->loc_order)
		return -1;
	for (i = 0; i < t->nloc; i++)
		t->loc_first[i + 2] = p->ls[i].count;
	for (i = 0; i < t->nloc; i++)
		t->loc_first[i + 2] += t->loc_first[i + 1];
	for (i = 0; i < t->nev; i++)
		t->loc_order[t->loc_first[t->loc[i] + 1]++] = (uint32_t)i;

	/* Offsets by location. */
	t->off_first = calloc(t->nloc + 2, sizeof(*t->off_first));
	t->off = malloc((t->noff + 1) * sizeof(*t->off));
	if (!t->off_first || !t->off)
		return -1;
	for (i = 0; i < t->noff; i++)
		t->off_first[p->offs[i].loc + 2]++;
	for (i = 0; i < t->nloc; i++)
		t->off_first[i + 2] += t->off_first[i + 1];
	for (i = 0; i < t->noff; i++) {
		uint32_t k = t->off_first[p->offs[i].loc + 1]++;

		t->off[k].local_ns = p->offs[i].local;
		t->off[k].offset_ns = p->offs[i].offset;
	}
	if (!t->comm_first) {
		t->comm_first = calloc(1, sizeof(*t->comm_first));
		if (!t->comm_first)
			return -1;
	}
	return 0;
}
