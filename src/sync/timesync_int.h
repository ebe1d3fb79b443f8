/* timesync_int.h - what timesync.c (offset interpolation, relations,
 * stats) and clc.c (the controlled logical clock) share. */
#ifndef SH5_TIMESYNC_INT_H
#define SH5_TIMESYNC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sync/trace.h"

static inline int64_t sat64(__int128 v)
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

static inline int64_t mu_of(const struct sh5_trace *t, uint32_t a, uint32_t b,
			    int64_t mu_intra, int64_t mu_inter)
{
	return t->loc_node[a] == t->loc_node[b] ? mu_intra : mu_inter;
}

/* Scratch for per-node maxima (reset after each use). */
struct nodescratch {
	int64_t *max;		/* [nnode], INT64_MIN when untouched */
	uint32_t *touched;
	size_t ntouched;
};

static inline int64_t add_mu(int64_t v, int64_t mu)
{
	return v == INT64_MIN ? INT64_MIN : sadd(v, mu);
}

/* Does the end of rank r of instance in need a bound? */
static inline int end_constrained(const struct sh5_trace_inst *in, uint32_t r)
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

int sh5_ts_nodescratch_init(struct nodescratch *s, size_t nnode);
void sh5_ts_nodescratch_free(struct nodescratch *s);

/*
 * For every rank r of instance in, bound[r] = the earliest time its end
 * may have (see timesync.c).  s: scratch of t->nnode nodes.
 */
void sh5_ts_inst_bounds(const struct sh5_trace *t,
			const struct sh5_trace_inst *in, const int64_t *vals,
			int64_t mu_intra, int64_t mu_inter,
			struct nodescratch *s, int64_t *bound);

#endif /* SH5_TIMESYNC_INT_H */
