/* clc_int.h - the state of the controlled logical clock, shared by its
 * forward pass (clc.c) and its backward amortization (clc_backward.c). */
#ifndef SH5_CLC_INT_H
#define SH5_CLC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sync/timesync.h"
#include "sync/timesync_int.h"
#include "sync/trace.h"

struct hpt {
	int64_t x, y;
};

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
	struct jump *jumps;	/* pending: jumps[jdone .. njumps) */
	size_t njumps, jcap, jdone;
	int64_t *out;		/* LC' as each event is done, then plus
				 * the backward shifts (the caller's
				 * times[], over the inputs used) */
	uint32_t *ne_done;	/* per instance: ends processed */
	struct hpt *hull;	/* the backward amortization's scratch */
	size_t hcap;
	uint32_t *evs;
	size_t ecap;
	size_t left;		/* events not processed yet */
	struct endmin {
		int64_t m1, m2;
		uint32_t n1;
		uint8_t ok;
	} *emin;		/* per instance: SCAN prefixes in the
				 * forward pass (largest begin m1 on node
				 * n1, largest elsewhere m2), then the
				 * backward amortization's end minima */
	struct sh5_clc_result *res;
};

/* The backward amortization of jump j into x->out (holding LC' of the
 * events done): the events of its interval get LC' plus the largest
 * shift under the hull.  With check, nothing is done while an event the
 * hull reads (the receivers of its sends, the ends of its collectives)
 * is not done yet.  Returns 0 (done), 1 (not ready), -1 (ENOMEM). */
int sh5_clc_backward_one(struct clc *x, const struct jump *j, int check);

#endif /* SH5_CLC_INT_H */
