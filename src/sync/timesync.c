/* timesync.c - see timesync.h and doc/timesync.md: offset interpolation,
 * latencies, collective relations and stats (the CLC: clc.c) */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sync/timesync.h"
#include "sync/timesync_int.h"
#include "sync/trace.h"

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

int sh5_ts_nodescratch_init(struct nodescratch *s, size_t nnode)
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

void sh5_ts_nodescratch_free(struct nodescratch *s)
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

/* Bound from the begins seen so far for an end at node `node`. */
static int64_t top2_bound(const struct nodescratch *s, const struct top2 *tp,
			  uint32_t node, int64_t mu_intra, int64_t mu_inter)
{
	int64_t same = add_mu(s->max[node], mu_intra);
	int64_t other = add_mu(node == tp->n1 ? tp->v2 : tp->v1, mu_inter);

	return same > other ? same : other;
}

/*
 * For every rank r of instance in, bound[r] = the earliest time its end
 * may have: the largest begin time (vals[begin]) it depends on plus the
 * mu of the link, or INT64_MIN when unconstrained.  O(size).
 */
void sh5_ts_inst_bounds(const struct sh5_trace *t,
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
	if (sh5_ts_nodescratch_init(&s, t->nnode) < 0)
		return -1;
	bound = malloc(maxsize * sizeof(*bound));
	if (!bound) {
		sh5_ts_nodescratch_free(&s);
		return -1;
	}
	for (i = 0; i < t->ninst; i++) {
		const struct sh5_trace_inst *in = &t->inst[i];

		if (in->free)
			continue;
		sh5_ts_inst_bounds(t, in, times, mu_intra, mu_inter, &s, bound);
		for (r = 0; r < in->size; r++) {
			uint32_t e = t->ev[t->inst_begin[in->first + r]].link;

			if (bound[r] != INT64_MIN && times[e] < bound[r])
				(*coll)++;
		}
	}
	free(bound);
	sh5_ts_nodescratch_free(&s);
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
