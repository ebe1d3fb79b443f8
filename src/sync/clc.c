/* clc.c - the controlled logical clock (timesync.h, doc/timesync.md):
 * the forward pass (backward amortization: clc_backward.c). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sync/timesync.h"
#include "sync/clc_int.h"
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

/* ------------------------------------------------------------------ CLC */

void sh5_clc_params_init(struct sh5_clc_params *p)
{
	memset(p, 0, sizeof(*p));
	p->gamma = 0.99;
	p->rate = 0.01;
	p->delta = -1;
}

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

/* The bound of end i of SCAN/EXSCAN instance k from the begins of ranks
 * 0 .. p-1: max of LC'(begin j) + mu(j, i).  With mu_intra <= mu_inter
 * from the prefix's largest begin and the largest on another node than
 * its (x->emin[k], kept as the prefix grows: linear in the size); else
 * over the prefix. */
static int64_t scan_bound(struct clc *x, uint32_t k, const uint32_t *bl,
			  uint32_t p, uint32_t i)
{
	const struct sh5_trace *t = x->t;
	const struct endmin *m = &x->emin[k];
	int64_t mu_a = x->p->mu_intra, mu_e = x->p->mu_inter, v, b;
	uint32_t j;

	if (mu_a <= mu_e) {
		/* the largest on i's node plus mu_a is at most the largest
		 * plus mu_e unless that largest is on i's node */
		if (m->n1 != t->loc_node[t->loc[bl[i]]])
			return add_mu(m->m1, mu_e);
		v = add_mu(m->m1, mu_a);
		b = add_mu(m->m2, mu_e);
		return v > b ? v : b;
	}
	for (b = INT64_MIN, j = 0; j < p; j++) {
		v = add_mu(x->lcp[bl[j]], mu_of(t, t->loc[bl[j]], t->loc[bl[i]],
						mu_a, mu_e));
		if (v > b)
			b = v;
	}
	return b;
}

/* SCAN or EXSCAN instance k (begins bl): the prefix of begins processed
 * grows; each new end that depends on it alone gets its bound. */
static void scan_done(struct clc *x, uint32_t k,
		      const struct sh5_trace_inst *in, const uint32_t *bl)
{
	const struct sh5_trace *t = x->t;
	struct endmin *m = &x->emin[k];

	while (x->prefix[k] < in->size &&
	       bit_get(x->bdone, bl[x->prefix[k]])) {
		uint32_t j = x->prefix[k]++, p = j + 1, i, nd;
		int64_t v = x->lcp[bl[j]];

		/* the largest begin, its node, the largest elsewhere */
		if (j == 0) {
			m->m1 = m->m2 = INT64_MIN;
			m->n1 = SH5_TRACE_NONE;
		}
		nd = t->loc_node[t->loc[bl[j]]];
		if (v > m->m1) {
			if (nd != m->n1)
				m->m2 = m->m1;
			m->m1 = v;
			m->n1 = nd;
		} else if (nd != m->n1 && v > m->m2) {
			m->m2 = v;
		}
		/* SCAN: end p-1 depends on begins 0..p-1;
		 * EXSCAN: end p depends on begins 0..p-1. */
		i = in->cls == SH5_COLL_SCAN ? p - 1 : p;
		if (i < in->size)
			set_bound(x, t->ev[bl[i]].link,
				  scan_bound(x, k, bl, p, i));
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
		sh5_ts_inst_bounds(t, in, x->lcp, mu_a, mu_e, &x->ns, x->bound);
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
		scan_done(x, k, in, bl);
		return;
	}
}

static int add_jump(struct clc *x, uint32_t pos, uint32_t e, int64_t amount)
{
	/* the done ones out of the queue when they are half of it */
	if (x->njumps == x->jcap && x->jdone && x->jdone * 2 >= x->njumps) {
		memmove(x->jumps, x->jumps + x->jdone,
			(x->njumps - x->jdone) * sizeof(*x->jumps));
		x->njumps -= x->jdone;
		x->jdone = 0;
	}
	if (x->njumps == x->jcap) {
		size_t nc = x->jcap ? x->jcap * 2 : 1024;
		struct jump *nj = realloc(x->jumps, nc * sizeof(*nj));

		if (!nj)
			return -1;
		x->jumps = nj;
		x->jcap = nc;
	}
	/* the interval's first step, when the jump runs */
	__builtin_prefetch(&x->t->loc_order[pos ? pos - 1 : 0]);
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
	x->out[e] = lc;	/* (over x->c[e], not read again) */
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
	} else if (ev->kind == SH5_EV_CEND && ev->ref != SH5_TRACE_NONE) {
		x->ne_done[ev->ref]++;
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

/* The backward amortization of the pending jumps, in the order they
 * were found, while their data is still in the cache: those of events
 * JUMP_DELAY or more before file index i, up to the first that is not
 * ready (reads an event not done yet); every one when i is UINT32_MAX.
 * 0, or -1 on memory error. */
#define JUMP_DELAY 1024
static int run_jumps(struct clc *x, uint32_t i)
{
	int r;

	while (x->jdone < x->njumps) {
		const struct jump *j = &x->jumps[x->jdone];

		if (i != UINT32_MAX && (uint64_t)j->ev + JUMP_DELAY > i)
			return 0;
		r = sh5_clc_backward_one(x, j, i != UINT32_MAX);
		if (r < 0)
			return -1;
		if (r > 0)
			return 0;
		x->jdone++;
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
		if (!(i & 63) && x->p->rate > 0 &&
		    run_jumps(x, (uint32_t)i) < 0)
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

/* Allocate x's arrays for trace t (x->t, x->p set) and start every
 * location at its first event.  Returns 0, or -1 (ENOMEM) with errp
 * filled. */
static int clc_alloc(struct clc *x, struct sh5_error *errp)
{
	struct sh5_trace *t = x->t;
	const struct sh5_clc_params *p = x->p;
	size_t i, maxsize = 1;

	for (i = 0; i < t->ninst; i++)
		if (t->inst[i].size > maxsize)
			maxsize = t->inst[i].size;
	x->lcp = p->work ? p->work : malloc((t->nev + 1) * sizeof(*x->lcp));
	x->ls = malloc((t->nloc + 1) * sizeof(*x->ls));
	x->bset = calloc(t->nev / 64 + 1, sizeof(*x->bset));
	x->bdone = calloc(t->nev / 64 + 1, sizeof(*x->bdone));
	x->stack = malloc((t->nloc + 1) * sizeof(*x->stack));
	x->nb_done = calloc(t->ninst + 1, sizeof(*x->nb_done));
	x->ne_done = calloc(t->ninst + 1, sizeof(*x->ne_done));
	x->prefix = calloc(t->ninst + 1, sizeof(*x->prefix));
	x->emin = calloc(t->ninst + 1, sizeof(*x->emin));
	x->bound = malloc(maxsize * sizeof(*x->bound));
	if (!x->lcp || !x->ls || !x->bset || !x->bdone || !x->stack ||
	    !x->nb_done || !x->ne_done || !x->prefix || !x->bound || !x->emin ||
	    sh5_ts_nodescratch_init(&x->ns, t->nnode) < 0) {
		x->ns.max = NULL;
		x->ns.touched = NULL;
		errno = ENOMEM;
		sh5_errprintf(errp, "controlled logical clock: %s",
			      strerror(errno));
		return -1;
	}
	for (i = 0; i < t->nloc; i++) {
		x->ls[i].cur = t->loc_first[i];
		x->ls[i].wait = SH5_TRACE_NONE;
		x->ls[i].has_prev = 0;
		x->ls[i].plc = x->ls[i].pc = 0;
	}
	return 0;
}

/* Free what clc_alloc(), forward() and sh5_clc_backward() allocated. */
static void clc_free(struct clc *x)
{
	if (x->lcp != x->p->work)
		free(x->lcp);
	free(x->ls);
	free(x->bset);
	free(x->bdone);
	free(x->stack);
	free(x->nb_done);
	free(x->ne_done);
	free(x->hull);
	free(x->evs);
	free(x->prefix);
	free(x->bound);
	free(x->jumps);
	free(x->emin);
	sh5_ts_nodescratch_free(&x->ns);
}

int sh5_timesync_clc(struct sh5_trace *t, const struct sh5_clc_params *p,
		     int64_t *times, struct sh5_clc_result *res,
		     struct sh5_error *errp)
{
	struct clc x;
	struct sh5_clc_result dummy;
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
	/* each event's LC' over its input once done, then the backward
	 * shifts (the amortization of a jump runs when the events its
	 * hull reads are done) */
	x.out = times;
	x.res = res;
	if (clc_alloc(&x, errp) < 0 || forward(&x, errp) < 0)
		goto out;
	if (p->rate > 0 && run_jumps(&x, UINT32_MAX) < 0) {
		errno = ENOMEM;
		sh5_errprintf(errp, "controlled logical clock: %s",
			      strerror(errno));
		goto out;
	}
	rc = 0;
out:
	clc_free(&x);
	return rc;
}
