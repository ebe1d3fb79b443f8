/* clc_backward.c - the backward amortization of the controlled logical
 * clock (clc_int.h, doc/timesync.md). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sync/clc_int.h"

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

/* The events of jump j's amortization interval (LC' after t0), latest
 * first, into *evs.  Returns how many, or -1 without memory. */
static long interval_events(struct clc *x, const struct jump *j, int64_t t0,
			    uint32_t **evs, size_t *ecap)
{
	struct sh5_trace *t = x->t;
	uint32_t first = t->loc_first[t->loc[j->ev]], q;
	size_t ne = 0;

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
	return (long)ne;
}

/* Lower convex hull of (t0,0), the sending events' limits below the ramp
 * and (tr,D), x increasing, into H (room for ne + 2).  Returns its size. */
static size_t build_hull(struct clc *x, const uint32_t *evs, size_t ne,
			 int64_t t0, int64_t tr, int64_t D, int64_t LA,
			 struct hpt *H)
{
	struct hpt pt;
	size_t nh = 0, i;

	H[nh++] = (struct hpt){ t0, 0 };
	for (i = ne + 1; i-- > 0;) {
		if (i == 0) {
			pt.x = tr;
			pt.y = D;
		} else {
			int64_t room = send_room(x, evs[i - 1]);

			if (room == INT64_MAX)
				continue;
			pt.x = x->lcp[evs[i - 1]];
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
	return nh;
}

/* The hull's value at te on its segment from a to b (a->x < b->x),
 * rounded down: in 64 bits when the product fits (nearly always), else
 * in 128. */
static inline int64_t hull_at(const struct hpt *a, const struct hpt *b,
			      int64_t te)
{
	int64_t dy, dx, den, n, q;
	__int128 num, qq;

	if (!__builtin_sub_overflow(b->y, a->y, &dy) &&
	    !__builtin_sub_overflow(te, a->x, &dx) &&
	    !__builtin_sub_overflow(b->x, a->x, &den) &&
	    !__builtin_mul_overflow(dy, dx, &n)) {
		q = n / den;
		if (n % den != 0 && n < 0)
			q--;	/* floor */
		return sat64((__int128)a->y + q);
	}
	num = ((__int128)b->y - a->y) * ((__int128)te - a->x);
	qq = num / ((__int128)b->x - a->x);
	if (num % ((__int128)b->x - a->x) != 0 && num < 0)
		qq--;	/* floor */
	return sat64(a->y + qq);
}

/* Shift the events (earliest first) under the hull H[0..nh-1]: out[e]
 * gets LC' + the hull's value where that is larger. */
static void shift_under_hull(struct clc *x, const uint32_t *evs, size_t ne,
			     const struct hpt *H, size_t nh, int64_t *out)
{
	size_t h = 0, i;

	for (i = ne; i-- > 0;) {
		uint32_t e = evs[i];
		int64_t te = x->lcp[e], f;

		while (h + 1 < nh && H[h + 1].x < te)
			h++;
		if (h + 1 >= nh)
			break;
		f = hull_at(&H[h], &H[h + 1], te);
		if (f > 0 && sadd(te, f) > out[e]) {
			if (out[e] == te)
				x->res->amortized++;
			out[e] = sadd(te, f);
		}
	}
}

/* The hull of the interval evs[0 .. ne) reads nothing that is not done
 * yet: the receivers of its SENDs, the ends of its collectives. */
static int interval_ready(struct clc *x, const uint32_t *evs, size_t ne)
{
	const struct sh5_trace *t = x->t;
	size_t i;

	for (i = 0; i < ne; i++) {
		const struct sh5_trace_event *ev = &t->ev[evs[i]];

		if (ev->flags & SH5_EVF_FREE)
			continue;
		if (ev->kind == SH5_EV_SEND) {
			if (ev->link != SH5_TRACE_NONE &&
			    !(t->ev[ev->link].flags & SH5_EVF_FREE) &&
			    !((x->bdone[ev->link >> 6] >> (ev->link & 63)) & 1))
				return 0;
		} else if (ev->kind == SH5_EV_CBEGIN &&
			   ev->ref != SH5_TRACE_NONE &&
			   x->ne_done[ev->ref] != t->inst[ev->ref].size) {
			return 0;
		}
	}
	return 1;
}

/* Backward amortization of one jump: the events in the amortization
 * interval before it get the largest shift under the lower convex hull of
 * the ideal ramp's end points and the sending events' limits; the shift
 * of each event is the maximum over all jumps.  x->out holds the forward
 * pass's times (LC') of the events done and gets LC' + shift.  With
 * check: nothing done (1) while the hull would read an event not done. */
int sh5_clc_backward_one(struct clc *x, const struct jump *j, int check)
{
	uint32_t r = j->ev;
	int64_t tr = x->lcp[r], D = j->amount, LA, t0;
	size_t ne, nh;
	long n;
	double la = (double)D / x->p->rate;

	/* LA = jump / rate, to the nearest ns */
	LA = la > 4.0e18 ? (int64_t)4e18 : llround(la);
	if (LA < 1)
		LA = 1;
	t0 = sat64((__int128)tr - LA);
	/* Events of the interval, latest first. */
	if ((n = interval_events(x, j, t0, &x->evs, &x->ecap)) < 0)
		return -1;
	ne = (size_t)n;
	if (!ne)
		return 0;
	if (check && !interval_ready(x, x->evs, ne))
		return 1;
	if (x->hcap < ne + 2) {
		struct hpt *n2 = realloc(x->hull, (ne + 2) * sizeof(*n2));

		if (!n2)
			return -1;
		x->hull = n2;
		x->hcap = ne + 2;
	}
	nh = build_hull(x, x->evs, ne, t0, tr, D, LA, x->hull);
	shift_under_hull(x, x->evs, ne, x->hull, nh, x->out);
	return 0;
}
