/*
 * jobread.h - stream the series of an sh5merge job file, chunk by chunk.
 *
 * The exports (lbdata, counters) read a job file written by `sh5merge
 * merge` (or by Slurm's stock sh5util, which has the same /Steps/...
 * shape without our extra members):
 *
 *   /                                 attrs "sh5 Format Version", "Job ID"
 *   /Steps/<step>/Nodes/<node>/       attrs "Node Index", "Node Name", ...
 *       Tasks/<global task id>        Task series datasets
 *       Energy, Filesystem, ...       node-level series datasets
 *       Totals/..., ClockOffsets      skipped (summaries, not series)
 *
 * A series dataset is 1-D compound: ElapsedTime, EpochTime (uint64 s),
 * numeric fields (any integer or float type), EpochTimeNs (int64 ns,
 * optional), SyncTimeNs (int64 ns, optional).  The walker reads each in
 * chunks of at most SH5_JOBREAD_CHUNK rows, hands the time of every
 * sample in ns (SyncTimeNs when present, else EpochTimeNs, else
 * EpochTime * 1e9) and every numeric field converted to double, so
 * memory stays bounded whatever the size of the file.
 *
 * Order: steps with numeric names first (numerically), then the others
 * by name; nodes by "Node Index" (then name); within a node the Task
 * series by task id, then the node-level series by name.
 */
#ifndef SH5_JOBREAD_H
#define SH5_JOBREAD_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define SH5_JOBREAD_CHUNK 4096

struct sh5_jobread;

struct sh5_jobread_step {
	const char *name;	/* group name under /Steps */
	const char *job_id;	/* root "Job ID" attribute as text ("" if none) */
	size_t nnodes;		/* node groups in the step */
};

struct sh5_jobread_node {
	const char *group;	/* group name under Nodes */
	const char *name;	/* "Node Name" attribute, else the group name */
	int64_t index;		/* "Node Index" attribute, else position */
	size_t position;	/* 0-based position in walk order */
	size_t ntasks;		/* Task datasets under Tasks/ */
	const int64_t *tasks;	/* their global ids, ascending */
};

struct sh5_jobread_series {
	const struct sh5_jobread_step *step;
	const struct sh5_jobread_node *node;
	const char *name;	/* "Task" for Tasks/<id>, else dataset name */
	int64_t task;		/* global task id, -1 for node-level series */
	size_t local_rank;	/* position of the task on its node (0 if none) */
	size_t nfields;
	const char *const *fields; /* numeric field names, file order */
	uint64_t nsamples;
	int64_t t_first_ns;	/* time of the first and last samples */
	int64_t t_last_ns;	/* (0 when nsamples is 0) */
	int time_source;	/* 2 SyncTimeNs, 1 EpochTimeNs, 0 EpochTime */
};

struct sh5_jobread_chunk {
	size_t n;		/* rows in this chunk */
	uint64_t first;		/* index of the first row in the series */
	const int64_t *time_ns;	/* n times */
	const double *values;	/* n * nfields, row-major */
};

/*
 * Callbacks of sh5_jobread_walk(); any may be NULL.  Each returns 0 to
 * go on, -1 to stop the walk (with errp filled); the *_begin callbacks may
 * return 1 to skip that step, node or series (for series: skip reading
 * its samples; series_end is not called then).
 */
struct sh5_jobread_ops {
	int (*step_begin)(void *arg, const struct sh5_jobread_step *st,
			  struct sh5_error *errp);
	int (*step_end)(void *arg, const struct sh5_jobread_step *st,
			struct sh5_error *errp);
	int (*node_begin)(void *arg, const struct sh5_jobread_step *st,
			  const struct sh5_jobread_node *nd,
			  struct sh5_error *errp);
	int (*node_end)(void *arg, const struct sh5_jobread_step *st,
			const struct sh5_jobread_node *nd,
			struct sh5_error *errp);
	int (*series_begin)(void *arg, const struct sh5_jobread_series *s,
			    struct sh5_error *errp);
	int (*chunk)(void *arg, const struct sh5_jobread_series *s,
		     const struct sh5_jobread_chunk *c,
		     struct sh5_error *errp);
	int (*series_end)(void *arg, const struct sh5_jobread_series *s,
			  struct sh5_error *errp);
};

/*
 * Open path read-only.  Returns a handle (free with sh5_jobread_close())
 * or NULL with errno set and errp filled (not an HDF5 file, no /Steps).
 */
struct sh5_jobread *sh5_jobread_open(const char *path,
				     struct sh5_error *errp);

/* Close the file and free the handle (NULL-safe). */
void sh5_jobread_close(struct sh5_jobread *jr);

/* The open HDF5 file (owned by jr: do not close). */
long long sh5_jobread_file(const struct sh5_jobread *jr);

/* Root "Job ID" as text ("" when absent); owned by jr. */
const char *sh5_jobread_job_id(const struct sh5_jobread *jr);

/*
 * Step names in walk order: *names receives an array of *n strings owned
 * by jr (valid until sh5_jobread_close()).  Returns 0 or -1.
 */
int sh5_jobread_steps(struct sh5_jobread *jr, const char *const **names,
		      size_t *n, struct sh5_error *errp);

/*
 * Walk the steps (only the step named `step` when not NULL; error ENOENT
 * when it does not exist), their nodes and series, calling ops with arg.
 * Returns 0, or -1 with errp filled (by the walker or by a callback).
 */
int sh5_jobread_walk(struct sh5_jobread *jr, const char *step,
		     const struct sh5_jobread_ops *ops, void *arg,
		     struct sh5_error *errp);

/* Index of field name in s->fields, or -1. */
int sh5_jobread_field(const struct sh5_jobread_series *s, const char *name);

#endif /* SH5_JOBREAD_H */
