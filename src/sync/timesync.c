/* timesync.c - see timesync.h and doc/timesync.md */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sync/timesync.h"
#include "sync/trace.h"

/* Bitmaps of one bit per event. */
static inline int bit_get(const uint64_t *m, uint32_t e)
{
	return (int)(m[e >> 6] >> (e & 63)) & 1;
}

static inline void bit_set(uint64_t *m, uint32_t e)
{
	m[e >> 6] |= (uint64_t)1 << (e & 63);
}

static int64_t sat64(__int128 v)
{
	if (v > INT64_MAX)
		return INT64_MAX;
	if (v < INT64_MIN)
		return INT64_MIN;
	return (int64_t)v;
}

/* sat64((__int128)a + b) without 128-bit arithmetic. */
static inline int64_t sadd(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* ------------------------------------------------- offset interpolation */

/* Exact round-to-nearest of num/den, den > 0. */
static __int128 div_round(__int128 num, __int128 den)
{
	__int128 q = num / den, r = num % den;

	if (r < 0)
		r = -r;
	if (2 * r >= den)
		q += num < 0 ? -1 : 1;
	return q;
}

/* Map t through the segment a-b (a.local < b.local). */
static int64_t seg_map(const struct sh5_offset_point *a,
		       const struct sh5_offset_point *b, int64_t t)
{
	int64_t doff, dt, den, num, q, r, res;
	__int128 n128;

	/* 64-bit fast path when nothing overflows; exact either way. */
	if (!__builtin_sub_overflow(b->offset_ns, a->offset_ns, &doff) &&
	    !__builtin_sub_overflow(t, a->local_ns, &dt) &&
	    !__builtin_sub_overflow(b->local_ns, a->local_ns, &den) &&
	    !__builtin_mul_overflow(doff, dt, &num) && num != INT64_MIN) {
		q = num / den;
		r = num % den;
		if (r < 0)
			r = -r;
		q += (int64_t)(r >= den - r) * ((num >> 63) | 1);
		if (!__builtin_add_overflow(t, a->offset_ns, &res) &&
		    !__builtin_add_overflow(res, q, &res))
			return res;
	}
	n128 = ((__int128)b->offset_ns - a->offset_ns) *
	       ((__int128)t - a->local_ns);
	return sat64((__int128)t + a->offset_ns +
		     div_round(n128, (__int128)b->local_ns - a->local_ns));
}

/* Map t given a = index of the last point with local <= t (or -1 when t
 * is before the first point). */
static int64_t map_at(const struct sh5_offset_point *pts, size_t n,
		      ptrdiff_t a, int64_t t)
{
	size_t b;

	if (n == 0)
		return t;
	if (a < 0) {
		/* Before the first point: the first segment, from the last
		 * point of the first time. */
		a = 0;
		while ((size_t)a + 1 < n &&
		       pts[a + 1].local_ns == pts[0].local_ns)
			a++;
	}
	if ((size_t)a + 1 < n)
		return seg_map(&pts[a], &pts[a + 1], t);
	/* At or after the last point: the last segment. */
	b = n - 1;
	while (a >= 0 && pts[a].local_ns == pts[b].local_ns)
		a--;
	if (a < 0)
		return sat64((__int128)t + pts[b].offset_ns);
	return seg_map(&pts[a], &pts[b], t);
}

/* Index of the last point with local <= t, or -1. */
static ptrdiff_t find_seg(const struct sh5_offset_point *pts, size_t n,
			  int64_t t)
{
	size_t lo = 0, hi = n;	/* first local > t is in [lo, hi] */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pts[mid].local_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

int64_t sh5_timesync_offset_map(const struct sh5_offset_point *pts,
				size_t n, int64_t local_ns)
{
	if (n == 0)
		return local_ns;
	return map_at(pts, n, find_seg(pts, n, local_ns), local_ns);
}

void sh5_timesync_offset_map_array(const struct sh5_offset_point *pts,
				   size_t n, const int64_t *in, int64_t *out,
				   size_t count)
{
	ptrdiff_t a = -1;
	int64_t prev = INT64_MIN;
	size_t i;

	if (n == 0) {
		if (out != in)
			memmove(out, in, count * sizeof(*out));
		return;
	}
	for (i = 0; i < count; i++) {
		int64_t t = in[i];

		if (t < prev)
			a = find_seg(pts, n, t);
		else
			while ((size_t)(a + 1) < n && pts[a + 1].local_ns <= t)
				a++;
		prev = t;
		out[i] = map_at(pts, n, a, t);
	}
}

int sh5_timesync_offset_check(const struct sh5_offset_point *pts, size_t n,
			      struct sh5_error *errp)
{
	size_t i;

	for (i = 1; i < n; i++) {
		if (pts[i].local_ns < pts[i - 1].local_ns) {
			errno = EINVAL;
			return sh5_errprintf(errp, "offset measurement %zu "
					     "(local time %lld) is earlier "
					     "than the one before it", i,
					     (long long)pts[i].local_ns);
		}
	}
	return 0;
}

/* Per-location cursor over its offsets, for events in local order. */
struct offcur {
	const struct sh5_offset_point *pts;
	size_t n;
	ptrdiff_t a;
};

static void offcur_init(struct offcur *c, const struct sh5_trace *t,
			uint32_t loc)
{
	c->pts = t->off + t->off_first[loc];
	c->n = t->off_first[loc + 1] - t->off_first[loc];
	c->a = -1;
}

/* t must not decrease between calls (a location's times never do). */
static int64_t offcur_map(struct offcur *c, int64_t t)
{
	if (c->n == 0)
		return t;
	while ((size_t)(c->a + 1) < c->n && c->pts[c->a + 1].local_ns <= t)
		c->a++;
	return map_at(c->pts, c->n, c->a, t);
}

/*
 * A faster cursor for the same mapping: the segment in use (and where it
 * ends) is kept, with its differences worked out once, so an event costs
 * one multiplication and one division.  Same results as offcur_map().
 */
struct segcur {
	const struct sh5_offset_point *pts;
	size_t n;
	ptrdiff_t a;		/* as in offcur */
	int64_t lim;		/* a changes at this local time */
	int kind;		/* SEG_* */
	int64_t x0, off0;	/* segment start: local time, offset */
	int64_t doff, den;	/* segment: offset and local differences */
	const struct sh5_offset_point *pa, *pb;	/* SEG_GENERAL */
};

enum { SEG_IDENT, SEG_SHIFT, SEG_FAST, SEG_GENERAL };

static void segcur_use(struct segcur *c, const struct sh5_offset_point *pa,
		       const struct sh5_offset_point *pb)
{
	c->pa = pa;
	c->pb = pb;
	c->x0 = pa->local_ns;
	c->off0 = pa->offset_ns;
	c->kind = __builtin_sub_overflow(pb->offset_ns, pa->offset_ns,
					 &c->doff) ||
		  __builtin_sub_overflow(pb->local_ns, pa->local_ns,
					 &c->den) ? SEG_GENERAL : SEG_FAST;
}

/* Set up the mapping for cursor position a (the choice of map_at()). */
static void segcur_set(struct segcur *c, ptrdiff_t a)
{
	const struct sh5_offset_point *pts = c->pts;
	size_t n = c->n, b;

	c->a = a;
	if (n == 0) {
		c->kind = SEG_IDENT;
		c->lim = INT64_MAX;
		return;
	}
	c->lim = (size_t)(a + 1) < n ? pts[a + 1].local_ns : INT64_MAX;
	if (a < 0) {
		a = 0;
		while ((size_t)a + 1 < n &&
		       pts[a + 1].local_ns == pts[0].local_ns)
			a++;
	}
	if ((size_t)a + 1 < n) {
		segcur_use(c, &pts[a], &pts[a + 1]);
		return;
	}
	b = n - 1;
	while (a >= 0 && pts[a].local_ns == pts[b].local_ns)
		a--;
	if (a < 0) {
		c->kind = SEG_SHIFT;
		c->off0 = pts[b].offset_ns;
		return;
	}
	segcur_use(c, &pts[a], &pts[b]);
}

static void segcur_init(struct segcur *c, const struct sh5_trace *t,
			uint32_t loc)
{
	c->pts = t->off + t->off_first[loc];
	c->n = t->off_first[loc + 1] - t->off_first[loc];
	segcur_set(c, -1);
}

/* t must not decrease between calls. */
static inline int64_t segcur_map(struct segcur *c, int64_t t)
{
	int64_t dt, num, q, r, res;

	if (t >= c->lim) {
		ptrdiff_t a = c->a;

		while ((size_t)(a + 1) < c->n && c->pts[a + 1].local_ns <= t)
			a++;
		segcur_set(c, a);
	}
	switch (c->kind) {
	case SEG_IDENT:
		return t;
	case SEG_SHIFT:
		return sat64((__int128)t + c->off0);
	case SEG_FAST:
		/* seg_map()'s 64-bit path */
		if (!__builtin_sub_overflow(t, c->x0, &dt) &&
		    !__builtin_mul_overflow(c->doff, dt, &num) &&
		    num != INT64_MIN) {
			q = num / c->den;
			r = num % c->den;
			if (r < 0)
				r = -r;
			/* halves away from zero, without a branch: the
			 * direction is as good as random */
			q += (int64_t)(r >= c->den - r) * ((num >> 63) | 1);
			if (!__builtin_add_overflow(t, c->off0, &res) &&
			    !__builtin_add_overflow(res, q, &res))
				return res;
		}
		/* fall through */
	default:
		return seg_map(c->pa, c->pb, t);
	}
}

void sh5_timesync_offset(const struct sh5_trace *t, int64_t *out)
{
	struct segcur *cur = malloc((t->nloc + 1) * sizeof(*cur));
	size_t l, k;

	if (cur) {
		/* File order: sequential memory access. */
		for (l = 0; l < t->nloc; l++)
			segcur_init(&cur[l], t, (uint32_t)l);
		for (k = 0; k < t->nev; k++)
			out[k] = segcur_map(&cur[t->loc[k]], t->time[k]);
		free(cur);
		return;
	}
	for (l = 0; l < t->nloc; l++) {
		struct offcur c;

		offcur_init(&c, t, (uint32_t)l);
		for (k = t->loc_first[l]; k < t->loc_first[l + 1]; k++) {
			uint32_t e = t->loc_order[k];

			out[e] = offcur_map(&c, t->time[e]);
		}
	}
}

/* ---------------------------------------------------------- latencies */

static int64_t mu_of(const struct sh5_trace *t, uint32_t a, uint32_t b,
		     int64_t mu_intra, int64_t mu_inter)
{
	return t->loc_node[a] == t->loc_node[b] ? mu_intra : mu_inter;
}

int sh5_timesync_mu_estimate(const struct sh5_trace *t, const int64_t *times,
			     int64_t *mu_intra, enum sh5_mu_source *src_intra,
			     int64_t *mu_inter, enum sh5_mu_source *src_inter,
			     struct sh5_error *errp)
{
	int64_t intra = INT64_MAX, oneway = INT64_MAX, rtrip = INT64_MAX;
	uint32_t *last;
	size_t i;

	last = malloc((t->nloc + 1) * sizeof(*last));
	if (!last) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "latency estimate: %s",
				     strerror(errno));
	}
	memset(last, 0xff, (t->nloc + 1) * sizeof(*last));
	for (i = 0; i < t->nev; i++) {
		const struct sh5_trace_event *e = &t->ev[i];
		uint32_t l = t->loc[i], r1 = last[l], s1, r2;
		__int128 d, rt;

		last[l] = (uint32_t)i;
		if (e->link == SH5_TRACE_NONE || (e->flags & SH5_EVF_FREE))
			continue;
		if (e->kind == SH5_EV_RECV) {
			d = (__int128)times[i] - times[e->link];
			if (t->loc_node[t->loc[e->link]] == t->loc_node[l]) {
				if (d < intra)
					intra = sat64(d);
			} else if (d < oneway) {
				oneway = sat64(d);
			}
			continue;
		}
		/* A round trip: this SEND answers the RECV just before it
		 * (from the same, remote, location), and the answer arrives
		 * after that message left.  Each difference is read on one
		 * clock, so the clocks' offsets cancel. */
		if (e->kind != SH5_EV_SEND || r1 == SH5_TRACE_NONE ||
		    t->ev[r1].kind != SH5_EV_RECV ||
		    t->ev[r1].link == SH5_TRACE_NONE ||
		    (t->ev[r1].flags & SH5_EVF_FREE) ||
		    t->ev[r1].aux != e->aux ||
		    t->loc_node[e->aux] == t->loc_node[l])
			continue;
		s1 = t->ev[r1].link;
		r2 = e->link;
		if (r2 < s1)
			continue;	/* not after s1 at its location */
		rt = ((__int128)times[r2] - times[s1]) -
		     ((__int128)times[i] - times[r1]);
		if (rt / 2 < rtrip)
			rtrip = sat64(rt / 2);
	}
	free(last);
	if (intra == INT64_MAX) {
		*mu_intra = 0;
		*src_intra = SH5_MU_NODATA;
	} else {
		*mu_intra = intra > 0 ? intra : 0;
		*src_intra = SH5_MU_ESTIMATED;
	}
	if (rtrip != INT64_MAX) {
		*mu_inter = rtrip > 0 ? rtrip : 0;
		*src_inter = SH5_MU_ESTIMATED;
	} else if (oneway != INT64_MAX) {
		*mu_inter = oneway > 0 ? oneway : 0;
		*src_inter = SH5_MU_ESTIMATED;
	} else {
		*mu_inter = 0;
		*src_inter = SH5_MU_NODATA;
	}
	return 0;
}

/* ------------------------------------------------ collective relations */

/* Scratch for per-node maxima (reset after each use). */
struct nodescratch {
	int64_t *max;		/* [nnode], INT64_MIN when untouched */
	uint32_t *touched;
	size_t ntouched;
};

static int nodescratch_init(struct nodescratch *s, size_t nnode)
{
	size_t i;

	s->max = malloc((nnode + 1) * sizeof(*s->max));
	s->touched = malloc((nnode + 1) * sizeof(*s->touched));
	s->ntouched = 0;
	if (!s->max || !s->touched) {
		free(s->max);
		free(s->touched);
		return -1;
	}
	for (i = 0; i <= nnode; i++)
		s->max[i] = INT64_MIN;
	return 0;
}

static void nodescratch_reset(struct nodescratch *s)
{
	size_t i;

	for (i = 0; i < s->ntouched; i++)
		s->max[s->touched[i]] = INT64_MIN;
	s->ntouched = 0;
}

static void nodescratch_free(struct nodescratch *s)
{
	free(s->max);
	free(s->touched);
}

/* Largest value per node, plus the best two nodes (values only grow). */
struct top2 {
	int64_t v1, v2;		/* v2: best over nodes other than n1 */
	uint32_t n1;
};

static void top2_init(struct top2 *tp)
{
	tp->v1 = tp->v2 = INT64_MIN;
	tp->n1 = SH5_TRACE_NONE;
}

static void top2_add(struct nodescratch *s, struct top2 *tp, uint32_t node,
		     int64_t v)
{
	if (s->max[node] == INT64_MIN)
		s->touched[s->ntouched++] = node;
	if (v <= s->max[node])
		return;
	s->max[node] = v;
	if (node == tp->n1) {
		tp->v1 = v;
	} else if (v > tp->v1) {
		tp->v2 = tp->v1;
		tp->n1 = node;
		tp->v1 = v;
	} else if (v > tp->v2) {
		tp->v2 = v;
	}
}

static int64_t add_mu(int64_t v, int64_t mu)
{
	return v == INT64_MIN ? INT64_MIN : sadd(v, mu);
}

/* Bound from the begins seen so far for an end at node `node`. */
static int64_t top2_bound(const struct nodescratch *s, const struct top2 *tp,
			  uint32_t node, int64_t mu_intra, int64_t mu_inter)
{
	int64_t same = add_mu(s->max[node], mu_intra);
	int64_t other = add_mu(node == tp->n1 ? tp->v2 : tp->v1, mu_inter);

	return same > other ? same : other;
}

/* Does the end of rank r of instance in need a bound? */
static int end_constrained(const struct sh5_trace_inst *in, uint32_t r)
{
	switch (in->cls) {
	case SH5_COLL_1TON:
		return r != in->root_rank;
	case SH5_COLL_NTO1:
		return r == in->root_rank;
	case SH5_COLL_EXSCAN:
		return r > 0;
	default:
		return 1;
	}
}

/*
 * For every rank r of instance in, bound[r] = the earliest time its end
 * may have: the largest begin time (vals[begin]) it depends on plus the
 * mu of the link, or INT64_MIN when unconstrained.  O(size).
 */
static void inst_bounds(const struct sh5_trace *t,
			const struct sh5_trace_inst *in, const int64_t *vals,
			int64_t mu_intra, int64_t mu_inter,
			struct nodescratch *s, int64_t *bound)
{
	const uint32_t *b = t->inst_begin + in->first;
	uint32_t r, n = in->size;
	struct top2 tp;

	top2_init(&tp);
	switch (in->cls) {
	case SH5_COLL_NTON:
		for (r = 0; r < n; r++)
			top2_add(s, &tp, t->loc_node[t->loc[b[r]]],
				 vals[b[r]]);
		for (r = 0; r < n; r++)
			bound[r] = top2_bound(s, &tp,
					      t->loc_node[t->loc[b[r]]],
					      mu_intra, mu_inter);
		break;
	case SH5_COLL_1TON: {
		uint32_t rl = t->loc[b[in->root_rank]];

		for (r = 0; r < n; r++)
			bound[r] = r == in->root_rank ? INT64_MIN :
				   add_mu(vals[b[in->root_rank]],
					  mu_of(t, rl, t->loc[b[r]],
						mu_intra, mu_inter));
		break;
	}
	case SH5_COLL_NTO1: {
		uint32_t rl = t->loc[b[in->root_rank]];
		int64_t m = INT64_MIN;

		for (r = 0; r < n; r++) {
			int64_t v = add_mu(vals[b[r]],
					   mu_of(t, t->loc[b[r]], rl,
						 mu_intra, mu_inter));
			if (v > m)
				m = v;
		}
		for (r = 0; r < n; r++)
			bound[r] = r == in->root_rank ? m : INT64_MIN;
		break;
	}
	case SH5_COLL_SCAN:
	case SH5_COLL_EXSCAN:
		for (r = 0; r < n; r++) {
			uint32_t node = t->loc_node[t->loc[b[r]]];

			if (in->cls == SH5_COLL_SCAN)
				top2_add(s, &tp, node, vals[b[r]]);
			bound[r] = r == 0 && in->cls == SH5_COLL_EXSCAN ?
				   INT64_MIN :
				   top2_bound(s, &tp, node, mu_intra,
					      mu_inter);
			if (in->cls == SH5_COLL_EXSCAN)
				top2_add(s, &tp, node, vals[b[r]]);
		}
		break;
	}
	nodescratch_reset(s);
}

int sh5_timesync_violations(const struct sh5_trace *t, const int64_t *times,
			    int64_t mu_intra, int64_t mu_inter,
			    uint64_t *p2p, uint64_t *coll)
{
	struct nodescratch s;
	int64_t *bound = NULL;
	size_t i, maxsize = 1;
	uint32_t r;

	*p2p = *coll = 0;
	for (i = 0; i < t->nev; i++) {
		const struct sh5_trace_event *e = &t->ev[i];

		if (e->kind != SH5_EV_RECV || e->link == SH5_TRACE_NONE ||
		    (e->flags & SH5_EVF_FREE))
			continue;
		if ((__int128)times[i] < (__int128)times[e->link] +
		    mu_of(t, t->loc[e->link], t->loc[i], mu_intra, mu_inter))
			(*p2p)++;
	}
	for (i = 0; i < t->ninst; i++)
		if (t->inst[i].size > maxsize)
			maxsize = t->inst[i].size;
	if (nodescratch_init(&s, t->nnode) < 0)
		return -1;
	bound = malloc(maxsize * sizeof(*bound));
	if (!bound) {
		nodescratch_free(&s);
		return -1;
	}
	for (i = 0; i < t->ninst; i++) {
		const struct sh5_trace_inst *in = &t->inst[i];

		if (in->free)
			continue;
		inst_bounds(t, in, times, mu_intra, mu_inter, &s, bound);
		for (r = 0; r < in->size; r++) {
			uint32_t e = t->ev[t->inst_begin[in->first + r]].link;

			if (bound[r] != INT64_MIN && times[e] < bound[r])
				(*coll)++;
		}
	}
	free(bound);
	nodescratch_free(&s);
	return 0;
}

int sh5_timesync_stage_stats(const struct sh5_trace *t, const int64_t *cur,
			     const int64_t *prev, int64_t mu_intra,
			     int64_t mu_inter, struct sh5_sync_stage *st)
{
	struct locst {
		struct offcur c;
		int64_t raw, cur;
		int has;
	} *ls;
	size_t l, i;

	memset(st, 0, sizeof(*st));
	if (sh5_timesync_violations(t, cur, mu_intra, mu_inter, &st->viol_p2p,
				    &st->viol_coll) < 0)
		return -1;
	ls = calloc(t->nloc + 1, sizeof(*ls));
	if (!ls)
		return -1;
	for (l = 0; l < t->nloc; l++)
		offcur_init(&ls[l].c, t, (uint32_t)l);
	for (i = 0; i < t->nev; i++) {
		struct locst *x = &ls[t->loc[i]];
		int64_t p = prev ? prev[i] : offcur_map(&x->c, t->time[i]);
		__int128 d = (__int128)cur[i] - p;

		if (d) {
			st->moved++;
			if (d < 0)
				d = -d;
			if (d > st->max_corr)
				st->max_corr = sat64(d);
		}
		if (x->has) {
			__int128 i0 = (__int128)t->time[i] - x->raw;
			__int128 ch = ((__int128)cur[i] - x->cur) - i0;
			int bk;

			if (ch < 0)
				ch = -ch;
			if (ch == 0)
				bk = 0;
			else if (i0 <= 0)
				bk = 6;
			else if (ch * 10000 <= i0)
				bk = 1;
			else if (ch * 1000 <= i0)
				bk = 2;
			else if (ch * 100 <= i0)
				bk = 3;
			else if (ch * 10 <= i0)
				bk = 4;
			else if (ch <= i0)
				bk = 5;
			else
				bk = 6;
			st->bucket[bk]++;
			st->nintervals++;
		}
		x->raw = t->time[i];
		x->cur = cur[i];
		x->has = 1;
	}
	free(ls);
	return 0;
}

/* ------------------------------------------------------------------ CLC */

void sh5_clc_params_init(struct sh5_clc_params *p)
{
	memset(p, 0, sizeof(*p));
	p->gamma = 0.99;
	p->rate = 0.01;
	p->delta = -1;
}

struct jump {
	uint32_t pos;		/* index into loc_order */
	uint32_t ev;		/* the event (loc_order[pos]) */
	int64_t amount;
};

/* Forward pass state of one location. */
struct locst {
	int64_t plc;		/* LC of the previous event */
	int64_t pc;		/* its pre-synchronized time */
	uint32_t cur;		/* loc_order position of the next event */
	uint32_t wait;		/* the event it waits at for its bound, or
				 * NONE */
	uint32_t has_prev;
};

struct clc {
	struct sh5_trace *t;
	const struct sh5_clc_params *p;
	int64_t *c;		/* pre-synchronized times (input) */
	int64_t *lcp;		/* LC': incoming bound, then forward LC */
	struct locst *ls;	/* per location */
	uint64_t *bset;		/* bitmap: incoming bound stored in lcp[] */
	uint64_t *bdone;	/* bitmap: processed by the forward pass */
	uint32_t *stack;	/* locations woken, to run */
	size_t nstack;
	uint32_t *nb_done;	/* per instance: begins processed */
	uint32_t *prefix;	/* per instance (SCAN): ranks 0..prefix-1
				 * of begins processed */
	int64_t *bound;		/* scratch, max instance size */
	struct nodescratch ns;
	struct jump *jumps;
	size_t njumps, jcap;
	size_t left;		/* events not processed yet */
	struct endmin {
		int64_t m1, m2;
		uint32_t n1;
		uint8_t ok;
	} *emin;		/* per instance, for backward amortization */
	struct sh5_clc_result *res;
};

static void set_bound(struct clc *x, uint32_t e, int64_t v)
{
	uint32_t l;

	if ((x->t->ev[e].flags & SH5_EVF_FREE) || bit_get(x->bdone, e))
		return;	/* released to break a cycle */
	x->lcp[e] = v;
	bit_set(x->bset, e);
	l = x->t->loc[e];
	if (x->ls[l].wait == e) {
		x->ls[l].wait = SH5_TRACE_NONE;
		x->stack[x->nstack++] = l;
	}
}

/* Needs an incoming bound before it can be processed? */
/* sh5_trace_op_class() without the call (ops are < SH5_OP_COUNT) */
static inline enum sh5_coll_class op_class(unsigned op)
{
	static const uint8_t cls[SH5_OP_COUNT] = {
		[SH5_OP_BCAST] = SH5_COLL_1TON,
		[SH5_OP_SCATTER] = SH5_COLL_1TON,
		[SH5_OP_GATHER] = SH5_COLL_NTO1,
		[SH5_OP_REDUCE] = SH5_COLL_NTO1,
		[SH5_OP_SCAN] = SH5_COLL_SCAN,
		[SH5_OP_EXSCAN] = SH5_COLL_EXSCAN,
	};

	return op < SH5_OP_COUNT ? (enum sh5_coll_class)cls[op] :
	       SH5_COLL_NTON;
}

static inline int needs_bound(const struct sh5_trace *t, uint32_t e)
{
	const struct sh5_trace_event *ev = &t->ev[e];

	if (ev->flags & SH5_EVF_FREE)
		return 0;
	if (ev->kind == SH5_EV_RECV)
		return ev->link != SH5_TRACE_NONE;
	if (ev->kind != SH5_EV_CEND || ev->ref == SH5_TRACE_NONE)
		return 0;
	/* the instance's class is its operation's (one operation per
	 * instance) */
	switch (op_class(ev->op)) {
	case SH5_COLL_1TON:
		return t->loc[e] != ev->aux;
	case SH5_COLL_NTO1:
		return t->loc[e] == ev->aux;
	case SH5_COLL_EXSCAN:
		return t->inst_begin[t->inst[ev->ref].first] != ev->link;
	default:
		return 1;
	}
}

/* Begin b of instance k was processed: hand bounds to the ends that can
 * now be computed. */
static void begin_done(struct clc *x, uint32_t b)
{
	struct sh5_trace *t = x->t;
	uint32_t k = t->ev[b].ref, r;
	const struct sh5_trace_inst *in = &t->inst[k];
	const uint32_t *bl = t->inst_begin + in->first;
	int64_t mu_a = x->p->mu_intra, mu_e = x->p->mu_inter;

	x->nb_done[k]++;
	switch (in->cls) {
	case SH5_COLL_NTON:
	case SH5_COLL_NTO1:
		if (x->nb_done[k] != in->size)
			return;
		inst_bounds(t, in, x->lcp, mu_a, mu_e, &x->ns, x->bound);
		for (r = 0; r < in->size; r++)
			if (end_constrained(in, r))
				set_bound(x, t->ev[bl[r]].link, x->bound[r]);
		return;
	case SH5_COLL_1TON:
		if (bl[in->root_rank] != b)
			return;
		for (r = 0; r < in->size; r++)
			if (r != in->root_rank)
				set_bound(x, t->ev[bl[r]].link,
					  add_mu(x->lcp[b],
						 mu_of(t, t->loc[b],
						       t->loc[bl[r]], mu_a,
						       mu_e)));
		return;
	case SH5_COLL_SCAN:
	case SH5_COLL_EXSCAN:
		while (x->prefix[k] < in->size &&
		       bit_get(x->bdone, bl[x->prefix[k]])) {
			uint32_t p = ++x->prefix[k], j, i;
			int64_t m = INT64_MIN;

			/* SCAN: end p-1 depends on begins 0..p-1;
			 * EXSCAN: end p depends on begins 0..p-1. */
			i = in->cls == SH5_COLL_SCAN ? p - 1 : p;
			if (i >= in->size)
				continue;
			for (j = 0; j < p; j++) {
				int64_t v = add_mu(x->lcp[bl[j]],
						   mu_of(t, t->loc[bl[j]],
							 t->loc[bl[i]],
							 mu_a, mu_e));
				if (v > m)
					m = v;
			}
			set_bound(x, t->ev[bl[i]].link, m);
		}
		return;
	}
}

static int add_jump(struct clc *x, uint32_t pos, uint32_t e, int64_t amount)
{
	if (x->njumps == x->jcap) {
		size_t nc = x->jcap ? x->jcap * 2 : 1024;
		struct jump *nj = realloc(x->jumps, nc * sizeof(*nj));

		if (!nj)
			return -1;
		x->jumps = nj;
		x->jcap = nc;
	}
	x->jumps[x->njumps].pos = pos;
	x->jumps[x->njumps].ev = e;
	x->jumps[x->njumps].amount = amount;
	x->njumps++;
	x->res->jumps++;
	if (amount > x->res->max_jump)
		x->res->max_jump = amount;
	return 0;
}

/* llround(v) for |v| < 2^62 without a library call: truncation, then
 * the exact fractional part decides (halves away from zero). */
static inline int64_t round_near(double v)
{
	int64_t i;
	double f;

	if (!(v > -0x1p62 && v < 0x1p62))
		return llround(v);
	i = (int64_t)v;
	f = v - (double)i;
	/* no branch: the direction is as good as random */
	return i + (int64_t)(f >= 0.5) - (int64_t)(f <= -0.5);
}

/* Process event e, the next one of location loc (state L).  Returns 1
 * when done, 0 when it has to wait for its incoming bound, -1 on memory
 * error. */
static inline __attribute__((always_inline)) int
step(struct clc *x, struct locst *L, uint32_t loc, uint32_t e)
{
	struct sh5_trace *t = x->t;
	const struct sh5_clc_params *p = x->p;
	const struct sh5_trace_event *ev = &t->ev[e];
	int64_t c = x->c[e], lc = c, base, dc;
	int need = needs_bound(t, e);

	if (need && !bit_get(x->bset, e)) {
		L->wait = e;
		return 0;
	}
	/* Equation (4): local constraints.  delta: given, or 1 ns unless
	 * the local interval is 0. */
	if (L->has_prev) {
		int64_t d = p->delta >= 0 ? p->delta : (c > L->pc ? 1 : 0);
		int64_t v = sadd(L->plc, d);
		double g;

		if (v > lc)
			lc = v;
		/* the interval to double: exact either way */
		g = __builtin_sub_overflow(c, L->pc, &dc) ?
		    (double)((__int128)c - L->pc) : (double)dc;
		v = sadd(L->plc, round_near(p->gamma * g));
		if (v > lc)
			lc = v;
	}
	base = lc;
	/* Equation (3)/(3'): the incoming bound. */
	if (need && x->lcp[e] > lc)
		lc = x->lcp[e];
	if (lc > base) {
		int64_t jump;

		/* lc may be saturated and base far below: the jump too. */
		if (__builtin_sub_overflow(lc, base, &jump))
			jump = INT64_MAX;
		if (add_jump(x, L->cur, e, jump) < 0)
			return -1;
	}
	x->lcp[e] = lc;
	bit_set(x->bdone, e);
	L->plc = lc;
	L->pc = c;
	L->has_prev = 1;
	L->cur++;
	x->left--;
	if (ev->flags & SH5_EVF_FREE)
		return 1;
	if (ev->kind == SH5_EV_SEND) {
		if (ev->link != SH5_TRACE_NONE &&
		    !(t->ev[ev->link].flags & SH5_EVF_FREE))
			set_bound(x, ev->link,
				  add_mu(lc, mu_of(t, loc, t->loc[ev->link],
						   p->mu_intra,
						   p->mu_inter)));
	} else if (ev->kind == SH5_EV_CBEGIN && ev->ref != SH5_TRACE_NONE) {
		begin_done(x, e);
	}
	return 1;
}

/* Run the locations on the stack as far as they can go, but not past
 * file index `limit` (keeps the memory access nearly sequential). */
static int drain(struct clc *x, uint32_t limit)
{
	struct sh5_trace *t = x->t;

	while (x->nstack) {
		uint32_t loc = x->stack[--x->nstack];
		struct locst *L = &x->ls[loc];
		uint32_t end = t->loc_first[loc + 1];
		int r;

		while (L->cur < end) {
			uint32_t e = t->loc_order[L->cur];

			if (e > limit)
				break;
			r = step(x, L, loc, e);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
		}
	}
	return 0;
}

/* Forward amortization over every location, in an order that respects
 * all happened-before relations: file order, except that a location
 * waiting for a bound pauses until the bound is known (and then catches
 * up to the current file position). */
static int forward(struct clc *x, struct sh5_error *errp)
{
	struct sh5_trace *t = x->t;
	const struct sh5_clc_params *p = x->p;
	size_t l, i;
	int rc = -1, r;

	x->left = t->nev;
	for (i = 0; i < t->nev; i++) {
		uint32_t lo = t->loc[i];
		struct locst *L = &x->ls[lo];

		/* Not waiting: every earlier event of lo is done, so i is
		 * its next one. */
		if (L->wait != SH5_TRACE_NONE)
			continue;
		r = step(x, L, lo, (uint32_t)i);
		if (r < 0)
			goto nomem;
		if (x->nstack && drain(x, (uint32_t)i) < 0)
			goto nomem;
	}
	while (x->left) {
		/* Stuck: the waits form a cycle. */
		for (l = 0; l < t->nloc; l++) {
			uint32_t e = x->ls[l].wait, s;

			if (e == SH5_TRACE_NONE)
				continue;
			s = t->ev[e].kind == SH5_EV_RECV ? t->ev[e].link :
			    SH5_TRACE_NONE;
			if (s != SH5_TRACE_NONE)
				sh5_trace_problem_add(t, sh5_trace_line(t, e),
					"cyclic dependency: this RECV waits "
					"for its SEND (line %u), which "
					"depends on it", sh5_trace_line(t, s));
			else
				sh5_trace_problem_add(t, sh5_trace_line(t, e),
					"cyclic dependency: this CEND waits "
					"for begins that depend on it");
			if (!p->allow_partial) {
				errno = EDEADLK;
				sh5_errprintf(errp, "line %u: cyclic "
					      "dependency between messages",
					      sh5_trace_line(t, e));
				goto out;
			}
			/* Drop the constraint and go on. */
			t->ev[e].flags |= SH5_EVF_FREE;
			if (s != SH5_TRACE_NONE)
				t->ev[s].flags |= SH5_EVF_FREE;
			x->res->released++;
			x->ls[l].wait = SH5_TRACE_NONE;
			x->stack[x->nstack++] = (uint32_t)l;
			break;
		}
		if (l == t->nloc) {
			errno = EINVAL;	/* cannot happen */
			sh5_errprintf(errp, "controlled logical clock: "
				      "internal error: stuck");
			goto out;
		}
		if (drain(x, UINT32_MAX) < 0)
			goto nomem;
	}
	rc = 0;
	goto out;
nomem:
	errno = ENOMEM;
	sh5_errprintf(errp, "controlled logical clock: %s", strerror(errno));
out:
	return rc;
}

/* The latest time a begin at location loc may have, by the constrained
 * ends of N-to-N or 1-to-N instance k: min over them of LC'(end) - mu.
 * Cached per instance as the smallest end over all nodes and over the
 * nodes other than that one; exact when mu_intra <= mu_inter, else a
 * lower (safe) value. */
static int64_t ends_room(struct clc *x, uint32_t k, uint32_t loc)
{
	struct sh5_trace *t = x->t;
	struct endmin *m = &x->emin[k];
	uint32_t n = t->loc_node[loc];
	int64_t mu_a = x->p->mu_intra, mu_e = x->p->mu_inter, a, b;

	if (!m->ok) {
		const struct sh5_trace_inst *in = &t->inst[k];
		const uint32_t *bl = t->inst_begin + in->first;
		uint32_t r;

		m->m1 = m->m2 = INT64_MAX;
		m->n1 = SH5_TRACE_NONE;
		for (r = 0; r < in->size; r++) {
			uint32_t end = t->ev[bl[r]].link, nd;
			int64_t v;

			if (!end_constrained(in, r) ||
			    (t->ev[end].flags & SH5_EVF_FREE))
				continue;
			v = x->lcp[end];
			nd = t->loc_node[t->loc[end]];
			if (v < m->m1) {
				if (nd != m->n1)
					m->m2 = m->m1;
				m->m1 = v;
				m->n1 = nd;
			} else if (nd != m->n1 && v < m->m2) {
				m->m2 = v;
			}
		}
		m->ok = 1;
	}
	if (m->m1 == INT64_MAX)
		return INT64_MAX;
	if (mu_a > mu_e)
		return sat64((__int128)m->m1 - mu_a);
	a = n == m->n1 ? sat64((__int128)m->m1 - mu_a) : INT64_MAX;
	b = n == m->n1 ? m->m2 : m->m1;
	b = b == INT64_MAX ? INT64_MAX : sat64((__int128)b - mu_e);
	return a < b ? a : b;
}

/* Upper bound on moving sending event e forward (from LC' values): how
 * far it may move; INT64_MAX when unconstrained. */
static int64_t send_room(struct clc *x, uint32_t e)
{
	struct sh5_trace *t = x->t;
	const struct sh5_trace_event *ev = &t->ev[e];
	int64_t mu_a = x->p->mu_intra, mu_e = x->p->mu_inter;
	int64_t room = INT64_MAX;

	if (ev->flags & SH5_EVF_FREE)
		return INT64_MAX;
	if (ev->kind == SH5_EV_SEND) {
		if (ev->link == SH5_TRACE_NONE ||
		    (t->ev[ev->link].flags & SH5_EVF_FREE))
			return INT64_MAX;
		room = sat64((__int128)x->lcp[ev->link] -
			     mu_of(t, t->loc[e], t->loc[ev->link], mu_a,
				   mu_e) - x->lcp[e]);
	} else if (ev->kind == SH5_EV_CBEGIN && ev->ref != SH5_TRACE_NONE) {
		const struct sh5_trace_inst *in = &t->inst[ev->ref];
		const uint32_t *bl = t->inst_begin + in->first;
		uint32_t r, me = 0, lo = 0, hi = in->size;

		switch (in->cls) {
		case SH5_COLL_1TON:
			if (t->loc[e] != ev->aux)
				return INT64_MAX;	/* not the root */
			/* fall through */
		case SH5_COLL_NTON:
			room = ends_room(x, ev->ref, t->loc[e]);
			room = sat64((__int128)room - x->lcp[e]);
			return room < 0 ? 0 : room;
		case SH5_COLL_NTO1:
			lo = in->root_rank;
			hi = lo + 1;
			break;
		case SH5_COLL_SCAN:
		case SH5_COLL_EXSCAN:
			for (r = 0; r < in->size; r++)
				if (bl[r] == e)
					me = r;
			lo = in->cls == SH5_COLL_SCAN ? me : me + 1;
			break;
		}
		for (r = lo; r < hi; r++) {
			uint32_t end = t->ev[bl[r]].link;
			int64_t v;

			if (!end_constrained(in, r) ||
			    (t->ev[end].flags & SH5_EVF_FREE))
				continue;
			v = sat64((__int128)x->lcp[end] -
				  mu_of(t, t->loc[e], t->loc[end], mu_a,
					mu_e) - x->lcp[e]);
			if (v < room)
				room = v;
		}
	} else {
		return INT64_MAX;
	}
	return room < 0 ? 0 : room;
}

struct hpt {
	int64_t x, y;
};

/* Backward amortization of one jump: the events in the amortization
 * interval before it get the largest shift under the lower convex hull of
 * the ideal ramp's end points and the sending events' limits; the shift
 * of each event is the maximum over all jumps.  out[] starts as the
 * forward pass's times (LC') and gets LC' + shift. */
static int backward_one(struct clc *x, const struct jump *j, int64_t *out,
			struct hpt **hull, size_t *hcap, uint32_t **evs,
			size_t *ecap)
{
	struct sh5_trace *t = x->t;
	uint32_t r = j->ev;
	uint32_t first = t->loc_first[t->loc[r]], q;
	int64_t tr = x->lcp[r], D = j->amount, LA, t0;
	size_t ne = 0, nh = 0, i, h;
	double la = (double)D / x->p->rate;

	/* LA = jump / rate, to the nearest ns */
	LA = la > 4.0e18 ? (int64_t)4e18 : llround(la);
	if (LA < 1)
		LA = 1;
	t0 = sat64((__int128)tr - LA);
	/* Events of the interval, latest first. */
	for (q = j->pos; q > first; q--) {
		uint32_t e = t->loc_order[q - 1];

		if (x->lcp[e] <= t0)
			break;
		if (ne == *ecap) {
			size_t nc = *ecap ? *ecap * 2 : 256;
			uint32_t *n2 = realloc(*evs, nc * sizeof(*n2));

			if (!n2)
				return -1;
			*evs = n2;
			*ecap = nc;
		}
		(*evs)[ne++] = e;
	}
	if (!ne)
		return 0;
	if (*hcap < ne + 2) {
		struct hpt *n2 = realloc(*hull, (ne + 2) * sizeof(*n2));

		if (!n2)
			return -1;
		*hull = n2;
		*hcap = ne + 2;
	}
	/* Lower convex hull of (t0,0), the limits, (tr,D); x increasing. */
	{
		struct hpt *H = *hull;
		struct hpt pt;

		H[nh++] = (struct hpt){ t0, 0 };
		for (i = ne + 1; i-- > 0;) {
			if (i == 0) {
				pt.x = tr;
				pt.y = D;
			} else {
				int64_t room = send_room(x, (*evs)[i - 1]);

				if (room == INT64_MAX)
					continue;
				pt.x = x->lcp[(*evs)[i - 1]];
				pt.y = room;
				/* Above the ramp: cannot bind. */
				if ((__int128)pt.y * LA >=
				    (__int128)D * ((__int128)pt.x - t0))
					continue;
			}
			if (H[nh - 1].x == pt.x) {
				if (pt.y < H[nh - 1].y)
					H[nh - 1].y = pt.y;
				else
					continue;
				/* re-check convexity below */
				pt = H[--nh];
			}
			while (nh >= 2) {
				struct hpt *o = &H[nh - 2], *a = &H[nh - 1];
				__int128 cr = ((__int128)a->x - o->x) *
					      ((__int128)pt.y - o->y) -
					      ((__int128)a->y - o->y) *
					      ((__int128)pt.x - o->x);
				if (cr > 0)
					break;
				nh--;
			}
			H[nh++] = pt;
		}
		/* Shift the events (earliest first) under the hull. */
		h = 0;
		for (i = ne; i-- > 0;) {
			uint32_t e = (*evs)[i];
			int64_t te = x->lcp[e], f;
			__int128 num;

			while (h + 1 < nh && H[h + 1].x < te)
				h++;
			if (h + 1 >= nh)
				break;
			num = ((__int128)H[h + 1].y - H[h].y) *
			      ((__int128)te - H[h].x);
			{
				__int128 den = (__int128)H[h + 1].x - H[h].x;
				__int128 qq = num / den;

				if (num % den != 0 && num < 0)
					qq--;	/* floor */
				f = sat64(H[h].y + qq);
			}
			if (f > 0 && sadd(te, f) > out[e]) {
				if (out[e] == te)
					x->res->amortized++;
				out[e] = sadd(te, f);
			}
		}
	}
	return 0;
}

int sh5_timesync_clc(struct sh5_trace *t, const struct sh5_clc_params *p,
		     int64_t *times, struct sh5_clc_result *res,
		     struct sh5_error *errp)
{
	struct clc x;
	struct sh5_clc_result dummy;
	struct hpt *hull = NULL;
	uint32_t *evs = NULL;
	size_t hcap = 0, ecap = 0, i, maxsize = 1;
	int rc = -1;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	memset(&x, 0, sizeof(x));
	if (!(p->gamma > 0 && p->gamma <= 1) || p->mu_intra < 0 ||
	    p->mu_inter < 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "controlled logical clock: gamma "
				     "must be in (0,1] and mu >= 0");
	}
	x.t = t;
	x.p = p;
	x.c = times;
	x.res = res;
	for (i = 0; i < t->ninst; i++)
		if (t->inst[i].size > maxsize)
			maxsize = t->inst[i].size;
	x.lcp = p->work ? p->work : malloc((t->nev + 1) * sizeof(*x.lcp));
	x.ls = malloc((t->nloc + 1) * sizeof(*x.ls));
	x.bset = calloc(t->nev / 64 + 1, sizeof(*x.bset));
	x.bdone = calloc(t->nev / 64 + 1, sizeof(*x.bdone));
	x.stack = malloc((t->nloc + 1) * sizeof(*x.stack));
	x.nb_done = calloc(t->ninst + 1, sizeof(*x.nb_done));
	x.prefix = calloc(t->ninst + 1, sizeof(*x.prefix));
	x.bound = malloc(maxsize * sizeof(*x.bound));
	if (!x.lcp || !x.ls || !x.bset || !x.bdone || !x.stack || !x.nb_done ||
	    !x.prefix || !x.bound || nodescratch_init(&x.ns, t->nnode) < 0) {
		x.ns.max = NULL;
		x.ns.touched = NULL;
		errno = ENOMEM;
		sh5_errprintf(errp, "controlled logical clock: %s",
			      strerror(errno));
		goto out;
	}
	for (i = 0; i < t->nloc; i++) {
		x.ls[i].cur = t->loc_first[i];
		x.ls[i].wait = SH5_TRACE_NONE;
		x.ls[i].has_prev = 0;
		x.ls[i].plc = x.ls[i].pc = 0;
	}
	if (forward(&x, errp) < 0)
		goto out;
	/* times[] is free now: it gets LC', then LC' plus the backward
	 * shift where there is one. */
	memcpy(times, x.lcp, t->nev * sizeof(*times));
	if (p->rate > 0 && x.njumps) {
		x.emin = calloc(t->ninst + 1, sizeof(*x.emin));
		if (!x.emin) {
			errno = ENOMEM;
			sh5_errprintf(errp, "controlled logical clock: %s",
				      strerror(errno));
			goto out;
		}
		for (i = 0; i < x.njumps; i++) {
			/* Prefetch ahead: the positions before a later jump,
			 * and the events before a nearer one. */
			if (i + 16 < x.njumps)
				__builtin_prefetch(&t->loc_order[
					x.jumps[i + 16].pos - 1]);
			if (i + 8 < x.njumps) {
				const struct jump *jn = &x.jumps[i + 8];
				uint32_t q = jn->pos, f = t->loc_first[
					t->loc[jn->ev]];

				__builtin_prefetch(&x.lcp[jn->ev]);
				if (q > f) {
					uint32_t e = t->loc_order[q - 1];

					__builtin_prefetch(&x.lcp[e]);
					__builtin_prefetch(&t->ev[e]);
					__builtin_prefetch(&times[e], 1);
				}
			}
			if (backward_one(&x, &x.jumps[i], times, &hull, &hcap,
					 &evs, &ecap) < 0) {
				errno = ENOMEM;
				sh5_errprintf(errp, "controlled logical clock: "
					      "%s", strerror(errno));
				goto out;
			}
		}
	}
	rc = 0;
out:
	if (x.lcp != p->work)
		free(x.lcp);
	free(x.ls);
	free(x.bset);
	free(x.bdone);
	free(x.stack);
	free(x.nb_done);
	free(x.prefix);
	free(x.bound);
	free(x.jumps);
	free(x.emin);
	free(hull);
	free(evs);
	nodescratch_free(&x.ns);
	return rc;
}
