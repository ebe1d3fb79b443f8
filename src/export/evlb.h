/*
 * evlb.h - the load-balancing model of a step's application events:
 * what `sh5merge lbdata` writes into the LBDatafile when the exported
 * step has events (doc/exports.md, "LBDatafile from events").
 *
 * Built in memory from a struct sh5_evstep (sync/jobevents.h):
 *
 *  - phases: from phase marks (PHASE records) when any task has one:
 *    phase 0 before a task's first mark, mark k starts phase k (by
 *    record order); ids 0..max over all tasks (and OBJECT phases).
 *    Without marks, fixed windows given by the caller (the Task-sample
 *    windows of lbdata), a record belonging to the window of its time.
 *  - per task and phase: wall time between the phase's bounds on that
 *    task, time inside MPI regions (DEFREGION flag SH5EV_F_MPI,
 *    ENTER/EXIT on a per-task stack, nested regions counted once),
 *    matched messages and bytes sent, collective calls and bytes, and the
 *    declared objects (OBJECT: phase = id, object = bytes, load = value).
 *  - edges: SEND/RECV matched per (source, dest, comm, tag) in order
 *    (MPI's non-overtaking rule) -> SendRecv from sender to receiver in
 *    the sender's phase at the send; rooted 1-to-N collectives (Bcast,
 *    Scatter) -> Broadcast from the root to each other member (one per
 *    recipient, its bytes, the root's phase of the same instance); rooted
 *    N-to-1 collectives (Gather, Reduce) -> CollectionToNode from each
 *    other member to the root rank as a node endpoint; unrooted
 *    collectives give no edge.  Edges are aggregated per (phase, kind,
 *    from, to): messages = count, bytes = sum.
 *
 * Times are SyncTimeNs when the step has them, else TimeNs.
 */
#ifndef SH5_EXPORT_EVLB_H
#define SH5_EXPORT_EVLB_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sync/jobevents.h"

enum sh5_evlb_kind {
	SH5_EVLB_SENDRECV = 0,
	SH5_EVLB_BROADCAST = 1,
	SH5_EVLB_TONODE = 2,	/* CollectionToNode: to = a rank (node) */
};

struct sh5_evlb_edge {
	int64_t phase;
	int kind;		/* enum sh5_evlb_kind */
	uint32_t from, to;	/* task ids */
	int64_t messages;
	double bytes;
};

struct sh5_evlb_object {
	uint32_t task;
	int64_t phase;
	uint64_t id;		/* the application's object id */
	double load;		/* seconds, summed over declarations */
};

/* Per task and phase. */
struct sh5_evlb_cell {
	double wall, mpi;	/* seconds */
	double objects;		/* declared object load in the phase, s */
	int64_t sent_msgs;	/* matched point-to-point messages sent */
	double sent_bytes;
	int64_t coll_calls;
	double coll_bytes;	/* the task's own bytes of its collectives */
	int present;		/* reached, or holds objects, or an edge
				 * endpoint, in this or an earlier phase:
				 * its entity is written */
};

struct sh5_evlb_rank {
	uint32_t task;
	uint32_t node;		/* "Node Index" of its node */
	int64_t nreached;	/* phases 0..nreached-1 reached */
	int64_t t_first, t_last;	/* first and last event time, ns */
	struct sh5_evlb_cell *cell;	/* nphases */
	int64_t *bound;		/* nphases + 1 phase starts (ns) for
				 * spreading samples: phase k is
				 * (bound[k], bound[k + 1]]; INT64_MIN first,
				 * INT64_MAX past the last reached phase */
};

/* Task-phase cells at most (phases x tasks with events): bounds the
 * memory a phase id written by a task can make the export allocate
 * (about 70 bytes a cell). */
#define SH5_EVLB_MAX_CELLS (UINT64_C(1) << 24)

struct sh5_evlb_windows {
	int64_t t0, lns;	/* window k: (t0 + k lns, t0 + (k+1) lns] */
	int64_t n;		/* windows */
};

struct sh5_evlb {
	int marks;		/* phases from marks (else windows) */
	int64_t nphases;
	size_t nranks;
	struct sh5_evlb_rank *ranks;	/* ascending task id */
	size_t nedges;
	struct sh5_evlb_edge *edges;	/* aggregated; sorted by holder
					 * (the file that writes it), then
					 * phase, kind, from, to */
	size_t nobjects;
	struct sh5_evlb_object *objects; /* sorted by task, phase, id */
	uint64_t p2p_matched;		/* messages */
	uint64_t unmatched_sends, unmatched_recvs;
	uint64_t unknown_peers;		/* peer or root with no task */
	uint64_t coll_mismatch;		/* root's instance not found */
	uint64_t objects_dropped;	/* object id >= 2^32 (see seq_id) or
					 * a load that is not finite */
	uint32_t max_task;
};

/*
 * Read the events of step `step` of the job file at path (a step
 * without events gives ntasks 0).  Returns the step (free with
 * sh5_evstep_free()) or NULL with errno and errp set.
 */
struct sh5_evstep *sh5_evlb_read_step(const char *path, const char *step,
				      struct sh5_error *errp);

/* Load of rank task in phase k: its time outside MPI (its entity's time
 * plus its objects'), or fallback when the task has no events. */
double sh5_evlb_rank_load(const struct sh5_evlb *m, int64_t task, int64_t k,
			  double fallback);

/* 1 when any task of s has a PHASE record. */
int sh5_evlb_has_marks(const struct sh5_evstep *s);

/* First and last event time of the step (ns); 0 when it has none. */
int sh5_evlb_span(const struct sh5_evstep *s, int64_t *t0, int64_t *t1);

/*
 * Build the model of s.  With marks (sh5_evlb_has_marks()) w is ignored
 * and may be NULL; without, w gives the phases.  Phases past
 * max_phases fail with EINVAL.  Returns the model (free with
 * sh5_evlb_free()) or NULL with errno and errp set.
 */
struct sh5_evlb *sh5_evlb_build(const struct sh5_evstep *s,
				const struct sh5_evlb_windows *w,
				int64_t max_phases, struct sh5_error *errp);

void sh5_evlb_free(struct sh5_evlb *m);

/* The rank of task id, or NULL. */
const struct sh5_evlb_rank *sh5_evlb_rank(const struct sh5_evlb *m,
					  int64_t task);

/* Phase of time t on rank r by its bounds (marks mode); 0 for NULL. */
int64_t sh5_evlb_phase_at(const struct sh5_evlb *m,
			  const struct sh5_evlb_rank *r, int64_t t);

/* seq_id of a declared object: (task + 1) * 2^32 + object id (ids are
 * below 2^32; rank entities are task ids, below 2^32: no collision). */
int64_t sh5_evlb_object_seq(uint32_t task, uint64_t id);

#endif /* SH5_EXPORT_EVLB_H */
