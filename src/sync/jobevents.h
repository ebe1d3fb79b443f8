/*
 * jobevents.h - the events of one step, read from a job file (or from
 * one node-step file), in memory, and their event-trace CSV.
 *
 * Locations are Slurm global task ids.  Peers and roots are recorded as
 * MPI_COMM_WORLD ranks; they are mapped to task ids through the RANK
 * records (world rank -> task); a world rank without one maps to the
 * task of the same number (srun's numbering), with a warning.
 * Communicators are identified by their global ids; the members come
 * from the CommMembers rows (world ranks -> tasks); MPI_COMM_WORLD's are
 * all tasks with a RANK record, in world-rank order.
 */
#ifndef SH5_JOBEVENTS_H
#define SH5_JOBEVENTS_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "events/evformat.h"
#include "events/evstore.h"
#include "sync/timesync.h"	/* struct sh5_offset_point */

struct sh5_evtask {
	uint32_t task;		/* location */
	int32_t world_rank;	/* -1: no RANK record */
	uint32_t node;		/* index into sh5_evstep.nodes */
	size_t nev;
	struct sh5ev_rec *ev;	/* records, file order */
	int64_t *sync;		/* SyncTimeNs per record, or NULL */
	size_t nregions;
	struct sh5_evstore_region *regions;	/* this task's */
	size_t ncomms;
	struct sh5_evstore_comm *comms;		/* this task's local ids */
	char path[256];		/* HDF5 path of the dataset */
};

struct sh5_evcomm {
	uint64_t global;
	size_t size;
	uint32_t *tasks;	/* members as locations, comm rank order;
				 * NULL when no member list was recorded */
};

struct sh5_evnode {
	int32_t index;		/* "Node Index" */
	char name[64];
	size_t noff;		/* usable clock-offset measurements (the
				 * same filter as merge --sync offset) */
	struct sh5_offset_point *off;
	int64_t *off_rtt;	/* round trip of each, ns */
};

struct sh5_evstep {
	char step[64];
	size_t nnodes;
	struct sh5_evnode *nodes;
	size_t ntasks;
	struct sh5_evtask *tasks;	/* ascending task id */
	size_t ncomms;
	struct sh5_evcomm *comms;	/* ascending global id */
	uint64_t nev;			/* all tasks' records */
	int synced;			/* every task has SyncTimeNs */
	size_t nwarnings;
	char warning[8][200];		/* the first few */
	int64_t *rank_loc;		/* internal: world rank -> location,
					 * -1 none; NULL: search tasks */
	size_t nrank_loc;
};

/*
 * Read the events of step group `step` of a job file (/Steps/<step>,
 * node groups under Nodes/) into a new sh5_evstep; a step without
 * events gives ntasks == 0.  Malformed content (a dataset of the wrong
 * type, an id without definition, a member list of the wrong size)
 * fails with errp naming the dataset.  Returns the step (free with
 * sh5_evstep_free()) or NULL with errno and errp set.
 */
struct sh5_evstep *sh5_evstep_read(hid_t step, const char *step_name,
				   struct sh5_error *errp);

void sh5_evstep_free(struct sh5_evstep *s);

/*
 * The steps of job file `file` (/Steps/<step>) one of whose node groups
 * has an Events member, in the job file's order (sh5_step_cmp): *names
 * gets a malloc'd array of *n malloc'd names (free with
 * sh5_evjob_steps_free()).  Returns 0, or -1 with errno and errp set.
 */
int sh5_evjob_steps(hid_t file, char ***names, size_t *n,
		    struct sh5_error *errp);
void sh5_evjob_steps_free(char **names, size_t n);

/*
 * Count the events of step group `step` of a job file without reading
 * them: *tasks task datasets, *events records (their sizes), *synced 1
 * when each has its SyncTimeNs.  Unreadable parts are not counted.
 */
void sh5_evstep_count(hid_t step, size_t *tasks, uint64_t *events,
		      int *synced);

/* Location (task id) of world rank r; -1 when unknown. */
int64_t sh5_evstep_loc(const struct sh5_evstep *s, int32_t r);

/* Name of region id of task t ("?" when undefined), and its flags. */
const char *sh5_evstep_region(const struct sh5_evtask *t, uint32_t id,
			      uint32_t *flags);

/* Global id of local communicator id of task t; UINT64_MAX unknown. */
uint64_t sh5_evstep_comm(const struct sh5_evtask *t, uint32_t local);

/*
 * Write the step's events as event-trace CSV version 1
 * (../shared/notes/event-trace-csv.md, doc/timesync.md): "#sh5-trace 1",
 * "#comm" for every communicator used, "#node" per node, then per
 * location (ascending) its events with the node's OFFSET lines merged in
 * by local time.  Times: the raw TimeNs (use_sync 0) or SyncTimeNs
 * (use_sync 1, EINVAL when the step has none).  With use_sync the
 * OFFSET lines are written exactly as in the raw form (they are not
 * events), so the two files differ in event times only.
 * Returns 0, or -1 with errno and errp set (write errors name `name`).
 */
int sh5_evstep_write_csv(const struct sh5_evstep *s, FILE *f,
			 const char *name, int use_sync,
			 struct sh5_error *errp);

#endif /* SH5_JOBEVENTS_H */
