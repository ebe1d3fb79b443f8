/*
 * timesync.h - timestamp synchronization: offset interpolation (the
 * pre-synchronization) and the controlled logical clock (CLC) of Becker,
 * Rabenseifner and Wolf, extended to collective operations.
 * The method, its equations and error bounds: doc/timesync.md.
 *
 * All times are signed 64-bit integer nanoseconds; nothing here goes
 * through a double except a product by gamma of one local interval.
 */
#ifndef SH5_TIMESYNC_H
#define SH5_TIMESYNC_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct sh5_trace;

/* One clock-offset measurement: at local time local_ns, the reference
 * clock read local_ns + offset_ns. */
struct sh5_offset_point {
	int64_t local_ns;
	int64_t offset_ns;
};

/* ------------------------------------------------- offset interpolation
 *
 * The reusable mapping from a clock's local time to the reference clock,
 * given that clock's offset measurements (also used by
 * `sh5merge merge --sync offset` for HDF5 samples):
 *
 *   n == 0   identity (the clock already is the reference)
 *   n == 1   constant shift: local + offset
 *   n >= 2   piecewise linear through the points (local_i, offset_i);
 *            before the first and after the last point the first and
 *            last segments are extended (their slopes kept).
 *
 * pts must be sorted by local_ns, non-decreasing.  When several points
 * share one local time, the last of them holds from that time on.  The
 * result is rounded to the nearest nanosecond (halves away from zero);
 * the arithmetic is exact (128-bit intermediate), saturating at the int64
 * range.  Never fails.
 */
int64_t sh5_timesync_offset_map(const struct sh5_offset_point *pts,
				size_t n, int64_t local_ns);

/*
 * The same mapping for count times at once: out[i] = map(in[i]).  in and
 * out may be the same array.  O(n + count) when in is sorted
 * (non-decreasing), O(count log n) otherwise.
 */
void sh5_timesync_offset_map_array(const struct sh5_offset_point *pts,
				   size_t n, const int64_t *in, int64_t *out,
				   size_t count);

/*
 * 0 when pts is usable by the functions above (sorted by local_ns);
 * otherwise -1 with errno EINVAL and errp naming the first point out of
 * order (by index).
 */
int sh5_timesync_offset_check(const struct sh5_offset_point *pts, size_t n,
			      struct sh5_error *errp);

/* ------------------------------------------------------- event traces */

/*
 * Offset pre-synchronization of a trace: out[i] (file order, trace->nev
 * entries) = the event's time mapped through its location's OFFSET
 * measurements.  Never fails.
 */
void sh5_timesync_offset(const struct sh5_trace *t, int64_t *out);

/* Where a minimum latency came from. */
enum sh5_mu_source {
	SH5_MU_GIVEN,		/* command line */
	SH5_MU_DIRECTIVE,	/* #mu / #mu-intra */
	SH5_MU_ESTIMATED,	/* from the messages, see below */
	SH5_MU_NODATA,		/* no message of that class: 0 */
};

/*
 * Estimate the minimum message latency per link class from matched
 * point-to-point messages, with times already pre-synchronized
 * (file order):
 *   intra-node: the smallest observed latency recv - send between two
 *     locations of one node (one clock, so no clock error), at least 0;
 *   inter-node: from round trips, where a location receives from A and
 *     its very next event sends back to A: half of (A's round trip minus
 *     the answering location's turnaround), each difference read on one
 *     clock, so clock offsets cancel; the smallest over all round trips,
 *     at least 0.  This is the mean of two latencies, so it may exceed
 *     the minimum by the jitter of the fastest round trip.  Without any
 *     round trip: the smallest one-way latency, at least 0.
 * A class without any message gets 0 and SH5_MU_NODATA.
 * Returns 0 (the error argument is for future use: never fails now).
 */
int sh5_timesync_mu_estimate(const struct sh5_trace *t, const int64_t *times,
			     int64_t *mu_intra, enum sh5_mu_source *src_intra,
			     int64_t *mu_inter, enum sh5_mu_source *src_inter,
			     struct sh5_error *errp);

/* Parameters of the controlled logical clock. */
struct sh5_clc_params {
	double gamma;		/* forward amortization: a corrected clock
				 * runs at least gamma times its local speed
				 * (0 < gamma <= 1; default 0.99) */
	double rate;		/* backward amortization: jump / interval
				 * (default 1 - gamma; <= 0: no backward
				 * amortization) */
	int64_t delta;		/* minimum spacing of local events; < 0
				 * (default): 1 ns, or 0 where the local
				 * interval is 0 (equal times stay equal) */
	int64_t mu_intra;	/* minimum latency within a node, >= 0 */
	int64_t mu_inter;	/* minimum latency between nodes, >= 0 */
	int allow_partial;	/* break dependency cycles instead of
				 * failing (each recorded as a problem) */
	int64_t *work;		/* optional: a caller's array of nev
				 * entries the CLC may use as its working
				 * memory (contents destroyed), e.g. the
				 * trace's input times when no longer
				 * needed; NULL: allocated and freed */
};

/* Defaults: gamma 0.99, rate 0.01, delta automatic, mu 0. */
void sh5_clc_params_init(struct sh5_clc_params *p);

struct sh5_clc_result {
	uint64_t jumps;		/* receiving events put forward */
	int64_t max_jump;	/* largest such jump, ns */
	uint64_t amortized;	/* events moved by backward amortization */
	uint64_t released;	/* constraints dropped to break cycles */
};

/*
 * Run the controlled logical clock on trace t: times (file order) holds
 * the pre-synchronized times on entry and the corrected ones on return.
 * Events flagged SH5_EVF_FREE carry no constraint.  Local order is kept,
 * no event moves backwards, and afterwards no clock-condition violation
 * remains among the constrained events (doc/timesync.md).
 *
 * Returns 0, or -1 with errno set and errp filled (times[] then holds
 * some corrected and some input times): ENOMEM, or EDEADLK
 * when the trace's messages form a cycle (a receive that must come after
 * its send, which comes after the receive); the cycle is also recorded as
 * a problem in t.  With p->allow_partial a cycle is broken by dropping the
 * waiting constraint (recorded as a problem) and the run goes on.
 * Uses about 8 bytes per event of working memory (none with p->work),
 * plus two bits per event and 16 bytes per jump not amortized yet (the
 * backward amortization runs inside the forward pass).
 */
int sh5_timesync_clc(struct sh5_trace *t, const struct sh5_clc_params *p,
		     int64_t *times, struct sh5_clc_result *res,
		     struct sh5_error *errp);

/* ------------------------------------------------------------- stats */

/* Buckets of relative change of a local interval: 0, <=0.01%, <=0.1%,
 * <=1%, <=10%, <=100%, >100%. */
#define SH5_SYNC_NBUCKET 7

struct sh5_sync_stage {
	uint64_t viol_p2p;	/* messages with recv < send + mu */
	uint64_t viol_coll;	/* collective ends earlier than a begin
				 * they depend on, plus mu */
	uint64_t moved;		/* events whose time changed against the
				 * previous stage */
	int64_t max_corr;	/* largest |change| against it, ns */
	uint64_t bucket[SH5_SYNC_NBUCKET]; /* local intervals by relative
					    * change against the input */
	uint64_t nintervals;
};

/*
 * Count clock-condition violations of times (file order) under the given
 * minimum latencies; constrained events only (SH5_EVF_FREE ones are
 * ignored).  Returns 0, or -1 (ENOMEM).
 */
int sh5_timesync_violations(const struct sh5_trace *t, const int64_t *times,
			    int64_t mu_intra, int64_t mu_inter,
			    uint64_t *p2p, uint64_t *coll);

/*
 * Fill st for one stage: violations of cur; events moved and largest
 * correction against prev (prev NULL: against the offset
 * pre-synchronization of t's input times, computed on the fly); interval
 * changes against t's input times.  Returns 0, or -1 (ENOMEM).
 */
int sh5_timesync_stage_stats(const struct sh5_trace *t, const int64_t *cur,
			     const int64_t *prev, int64_t mu_intra,
			     int64_t mu_inter, struct sh5_sync_stage *st);

#endif /* SH5_TIMESYNC_H */
