/*
 * syncrun.h - the synchronization pipeline of an event trace, as
 * `sh5merge sync` runs it and `sh5merge merge --sync clc` runs it on the
 * events of each step: offset pre-synchronization (the OFFSET lines),
 * the minimum latencies (options, then #mu directives, then estimated
 * from the messages), then the controlled logical clock with forward
 * and backward amortization.  One function, so that both give the same
 * times for the same trace.
 */
#ifndef SH5_SYNCRUN_H
#define SH5_SYNCRUN_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sync/timesync.h"
#include "sync/trace.h"

struct sh5_syncrun_opts {
	int clc;		/* 1 (default): offset then CLC; 0: offset */
	int64_t mu_ns;		/* every link class, -1: not given */
	int64_t mu_intra_ns;	/* within a node, -1: not given */
	double gamma;		/* forward amortization, default 0.99 */
	int allow_partial;	/* left-out constraints are not errors */
	int stats;		/* fill st[] (keeps the input times) */
	/* Called after each phase ("offset", "mu", "stats", "clc"); may
	 * be NULL. */
	void (*phase)(void *arg, const char *name);
	void *phase_arg;
};

/* The defaults of `sh5merge sync`. */
void sh5_syncrun_opts_init(struct sh5_syncrun_opts *o);

struct sh5_syncrun_result {
	int64_t *times;		/* corrected, file order, t->nev of them
				 * (malloc'd: the caller frees) */
	int64_t mu_intra, mu_inter;
	enum sh5_mu_source src_intra, src_inter;
	int nst;		/* stages in st: 0, or with stats 2
				 * (input, offset) or 3 (+ clc) */
	struct sh5_sync_stage st[3];
	struct sh5_clc_result cr;	/* with clc */
};

/*
 * Synchronize trace t (read by sh5_trace_read*, problems left out as
 * --allow-partial does; a caller that refuses problems checks
 * t->nproblems first).  Without o->stats the CLC works in t->time (the
 * input times are gone afterwards).  Returns 0 with r filled, or -1 with
 * errno and errp set (r->times NULL).
 */
int sh5_syncrun(struct sh5_trace *t, const struct sh5_syncrun_opts *o,
		struct sh5_syncrun_result *r, struct sh5_error *errp);

/* "given", "directive", "estimated", "no messages: 0". */
const char *sh5_syncrun_mu_source(enum sh5_mu_source s);

#endif /* SH5_SYNCRUN_H */
