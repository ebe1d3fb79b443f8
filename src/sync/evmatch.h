/*
 * evmatch.h - point-to-point message matching over the event records of
 * a job file (jobevents.h).
 *
 * A SEND or RECV record becomes a message keyed by (source, destination,
 * communicator, tag), numbered as the caller likes (task ids, rows); the
 * messages of one key pair in order, the n-th SEND with the n-th RECV
 * (MPI's non-overtaking rule).  Used by the load-balancing model
 * (export/evlb.c) and the report (export/report_events.c).
 */
#ifndef SH5_EVENTS_EVMATCH_H
#define SH5_EVENTS_EVMATCH_H

#include <stddef.h>
#include <stdint.h>

#include "sync/jobevents.h"

/* The key and order of a message; the first member of the caller's
 * message type. */
struct sh5_evmsg {
	uint32_t src, dst;	/* the caller's numbering */
	uint64_t comm;		/* sh5_evstep_comm() */
	int32_t tag;
	size_t seq;		/* order within its key (unique there) */
};

/*
 * The message of SEND or RECV record i of task t, whose own number is
 * self and its peer's peer: src/dst by the record's kind, comm and tag
 * from the record; seq is set to i (the caller may renumber).
 */
void sh5_evmsg_set(struct sh5_evmsg *m, const struct sh5_evtask *t,
		   size_t i, uint32_t self, uint32_t peer);

/* Called for every matched pair, in key order; return -1 to stop. */
typedef int (*sh5_evmatch_fn)(void *arg, void *send, void *recv);

/*
 * Sort sends[ns] and recvs[nr] (elements of size bytes, each beginning
 * with a struct sh5_evmsg) by key and seq, then pair them per key in
 * order, calling fn for each pair.  *unmatched_sends and
 * *unmatched_recvs (either may be NULL) are increased by the messages
 * without a partner.  Returns 0, or -1 when fn did.
 */
int sh5_evmatch(void *sends, size_t ns, void *recvs, size_t nr, size_t size,
		sh5_evmatch_fn fn, void *arg, uint64_t *unmatched_sends,
		uint64_t *unmatched_recvs);

#endif /* SH5_EVENTS_EVMATCH_H */
